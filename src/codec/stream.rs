//! Bounded reading of a decompressing stream: never more than the caller's limit in memory.

use super::{failed, past_limit};
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
        return Err(past_limit(
            codec,
            format!("decompresses to more than the expected {limit} bytes"),
        ));
    }
    Ok(out)
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
}
