//! Bounded reading of a decompressing stream: never more than the caller's limit in memory.

use super::failed;
use crate::error::Result;
use std::io::Read;

/// Reads `reader` to its end, failing when it yields more than `limit` bytes or errors.
pub fn read_bounded(codec: &str, reader: impl Read, limit: usize) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(limit.min(64 << 20));
    let cap = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    reader
        .take(cap)
        .read_to_end(&mut out)
        .map_err(|e| failed(codec, format!("corrupt stream: {e}")))?;
    if out.len() > limit {
        return Err(failed(
            codec,
            format!("decompresses to more than the expected {limit} bytes"),
        ));
    }
    Ok(out)
}
