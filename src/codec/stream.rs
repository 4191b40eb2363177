//! Bounded reading of a decompressing stream: never more than the caller's limit in memory.

use super::failed;
use crate::error::Result;
use std::io::Read;

/// Largest single reservation: a stream's output memory grows in steps this large at most, so
/// a stream that ends early never holds memory it did not fill.
const STEP: usize = 64 << 20;

/// Reads `reader` to its end, failing when it yields more than `limit` bytes or errors. The
/// buffer is reserved exactly, step by step, up to `limit + 1` bytes (one byte past the limit
/// proves the stream too long): memory never exceeds the limit whatever the stream holds.
pub fn read_bounded(codec: &str, reader: impl Read, limit: usize) -> Result<Vec<u8>> {
    let cap = limit.saturating_add(1);
    let mut reader = reader.take(u64::try_from(cap).unwrap_or(u64::MAX));
    let mut out = Vec::new();
    loop {
        let want = (cap - out.len()).min(STEP);
        if want == 0 {
            break;
        }
        out.reserve_exact(want);
        let n = (&mut reader)
            .take(want as u64)
            .read_to_end(&mut out)
            .map_err(|e| failed(codec, format!("corrupt stream: {e}")))?;
        if n < want {
            break;
        }
    }
    if out.len() > limit {
        return Err(failed(
            codec,
            format!("decompresses to more than the expected {limit} bytes"),
        ));
    }
    Ok(out)
}

/// Inflates one deflate stream (zlib-wrapped or raw, as `d` was made) from `encoded` into the
/// start of `out`; returns the bytes written. A stream that does not fit in `out`, or that
/// ends before its end marker, is an error; bytes after the stream are ignored.
pub fn inflate_into(
    codec: &str,
    mut d: flate2::Decompress,
    encoded: &[u8],
    out: &mut [u8],
) -> Result<usize> {
    use flate2::{FlushDecompress, Status};
    loop {
        let (read, written) = (d.total_in() as usize, d.total_out() as usize);
        let input = encoded.get(read..).unwrap_or_default();
        let mut probe = [0u8; 1];
        let target = match out.get_mut(written..) {
            Some(rest) if !rest.is_empty() => rest,
            // Full: one more byte of room tells a finished stream from a too long one.
            _ => &mut probe[..],
        };
        let status = d
            .decompress(input, target, FlushDecompress::Finish)
            .map_err(|e| failed(codec, format!("corrupt stream: {e}")))?;
        let produced = d.total_out() as usize - written;
        if written == out.len() && produced > 0 {
            return Err(failed(
                codec,
                format!("decompresses to more than the expected {} bytes", out.len()),
            ));
        }
        match status {
            Status::StreamEnd => return Ok(d.total_out() as usize),
            _ if produced == 0 && d.total_in() as usize == read => {
                return Err(failed(
                    codec,
                    "corrupt stream: it ends before its end marker",
                ));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_stays_within_the_limit() {
        let data = vec![7u8; 1000];
        let ok = read_bounded("t", &data[..], 1000).unwrap();
        assert_eq!(ok, data);
        assert!(ok.capacity() <= 1001, "capacity {}", ok.capacity());
        let short = read_bounded("t", &data[..10], 1000).unwrap();
        assert_eq!(short.len(), 10);
        assert!(short.capacity() <= 1001, "capacity {}", short.capacity());
        let err = read_bounded("t", &data[..], 999).unwrap_err();
        assert!(
            err.to_string().contains("more than the expected 999 bytes"),
            "{err}"
        );
        // An endless stream stops one byte past the limit.
        let endless = std::io::repeat(1);
        assert!(read_bounded("t", endless, 1 << 20).is_err());
    }

    #[test]
    fn inflating_in_place_checks_size_and_end() {
        use flate2::{Compression, Decompress, write::ZlibEncoder};
        use std::io::Write;
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let mut e = ZlibEncoder::new(Vec::new(), Compression::new(1));
        e.write_all(&data).unwrap();
        let enc = e.finish().unwrap();
        let mut out = vec![0u8; data.len()];
        assert_eq!(
            inflate_into("t", Decompress::new(true), &enc, &mut out).unwrap(),
            data.len()
        );
        assert_eq!(out, data);
        // Room to spare: the stream's own length is reported.
        let mut big = vec![0u8; data.len() + 10];
        assert_eq!(
            inflate_into("t", Decompress::new(true), &enc, &mut big).unwrap(),
            data.len()
        );
        // Too long for the buffer, truncated, garbage: errors.
        let mut small = vec![0u8; data.len() - 1];
        assert!(inflate_into("t", Decompress::new(true), &enc, &mut small).is_err());
        let mut out = vec![0u8; data.len()];
        assert!(inflate_into("t", Decompress::new(true), &enc[..enc.len() / 2], &mut out).is_err());
        assert!(inflate_into("t", Decompress::new(true), &[1, 2, 3, 4], &mut out).is_err());
        assert!(inflate_into("t", Decompress::new(true), &[], &mut out).is_err());
    }
}
