//! Response bodies as they arrive: gathered into one buffer of the object's size, or sent
//! frame by frame to a thread that copies each into the caller's buffer.
//!
//! Owns one rule: a frame is let go as soon as it is copied. A frame is a slice of its
//! connection's read buffer and keeps the whole of that buffer alive while it is held, so a
//! body whose frames are all held until its end costs about twice its size (123 MiB for the
//! 64 MiB of 64 concurrent 1 MiB GETs, measured). A body is also refused once it is, or is
//! announced to be, larger than the store allows. It knows nothing of stores or keys.

use super::Failure;
use bytes::Bytes;
use futures::TryStreamExt;
use object_store::GetResult;
use tokio::sync::mpsc::Sender;

/// The most reserved up front for a body, whatever size the server announces (a larger body
/// still arrives whole, in a buffer that grows as it comes).
const RESERVED_AT_MOST: u64 = 256 << 20;

/// Frames sent to the copying thread and not yet copied: a GET waits for room beyond this.
pub const FRAMES_QUEUED: usize = 32;

/// Part of the body of the `object`-th GET of a batch, starting `at` bytes into it.
pub struct Frame {
    pub object: usize,
    pub at: u64,
    pub bytes: Bytes,
}

/// The whole body, in one buffer reserved for the announced size. A body announced or sent
/// beyond `limit` bytes is [`Failure::Larger`], and one larger than memory allows an error,
/// not an abort of the host program (a server may send any amount).
pub async fn gather(result: GetResult, limit: u64) -> Result<Vec<u8>, Failure> {
    let mut whole = Vec::new();
    let announced = result.range.end.saturating_sub(result.range.start);
    if announced > limit {
        return Err(Failure::Larger(limit));
    }
    // Only a hint: a refused reservation leaves the buffer to grow as the frames come.
    let reserved = announced.min(RESERVED_AT_MOST);
    let _ = whole.try_reserve_exact(usize::try_from(reserved).unwrap_or(0));
    let mut frames = result.into_stream();
    while let Some(frame) = frames.try_next().await? {
        if (whole.len() + frame.len()) as u64 > limit {
            return Err(Failure::Larger(limit));
        }
        whole
            .try_reserve(frame.len())
            .map_err(|_| object_store::Error::Generic {
                store: "S3",
                source: format!(
                    "a body of over {} bytes does not fit in memory",
                    whole.len()
                )
                .into(),
            })?;
        whole.extend_from_slice(&frame);
    }
    Ok(whole)
}

/// Sends the body to `to` frame by frame as it arrives, as part of the `object`-th GET;
/// returns the body's length. Stops early, without an error, once nobody receives (the copying
/// side has given up, so nothing is waiting for these bytes); a body announced or sent beyond
/// `limit` bytes is [`Failure::Larger`].
pub async fn send(
    result: GetResult,
    object: usize,
    to: &Sender<Frame>,
    limit: u64,
) -> Result<u64, Failure> {
    if result.range.end.saturating_sub(result.range.start) > limit {
        return Err(Failure::Larger(limit));
    }
    let mut at = 0u64;
    let mut frames = result.into_stream();
    while let Some(bytes) = frames.try_next().await? {
        let len = bytes.len() as u64;
        if at + len > limit {
            return Err(Failure::Larger(limit));
        }
        if to.send(Frame { object, at, bytes }).await.is_err() {
            break;
        }
        at += len;
    }
    Ok(at)
}

/// Copies `frame` into its place in `out`, as much of it as fits.
pub fn copy(frame: &Frame, out: &mut [u8]) {
    let Ok(at) = usize::try_from(frame.at) else {
        return;
    };
    if let Some(room) = out.get_mut(at..) {
        let n = frame.bytes.len().min(room.len());
        room[..n].copy_from_slice(&frame.bytes[..n]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Frames come in any size: what fits of each lands at its place, the rest is dropped.
    #[test]
    fn frames_land_at_their_place_as_far_as_they_fit() {
        let frame = |at: u64, bytes: &[u8]| Frame {
            object: 0,
            at,
            bytes: Bytes::copy_from_slice(bytes),
        };
        let body = [
            frame(0, b"abc"),
            frame(3, b""),
            frame(3, b"defg"),
            frame(7, b"h"),
        ];
        for (room, want) in [(0, &b""[..]), (2, b"ab"), (5, b"abcde"), (8, b"abcdefgh")] {
            let mut out = vec![b'.'; room];
            for f in &body {
                copy(f, &mut out);
            }
            assert_eq!(out, want, "{room}");
        }
        let mut out = vec![b'.'; 10];
        for f in body.iter().rev() {
            copy(f, &mut out);
        }
        assert_eq!(
            &out, b"abcdefgh..",
            "frames land by place, not by order of arrival"
        );
        copy(&frame(u64::MAX, b"x"), &mut out);
        assert_eq!(&out, b"abcdefgh..");
    }
}
