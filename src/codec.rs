//! Filters and compressors: a variable's numcodecs chain, applied to one chunk.
//!
//! Knows nothing of stores or netCDF; takes bytes and a codec list, returns bytes.

use crate::error::{Error, Result};
use crate::model::Filter;

fn codec_name(f: &Filter) -> String {
    f.codec
        .get("id")
        .and_then(|v| v.as_str())
        .map_or_else(|| format!("HDF5 filter {}", f.id), String::from)
}

/// Decodes a stored chunk through the chain (last codec first).
pub fn decode(var: &str, chain: &[Filter], stored: Vec<u8>) -> Result<Vec<u8>> {
    match chain.first() {
        None => Ok(stored),
        Some(f) => Err(Error::NoFilter {
            var: var.to_string(),
            codec: codec_name(f),
        }),
    }
}

/// Decodes a stored chunk straight into `out` (the caller's memory when a whole chunk is
/// read) and returns the decoded length; `out` is written only when that length equals
/// `out.len()`, so the caller can report a wrongly sized chunk. Codecs that can decompress into
/// a provided buffer do so; the others decode with [`decode`] and copy.
pub fn decode_into(var: &str, chain: &[Filter], stored: Vec<u8>, out: &mut [u8]) -> Result<usize> {
    let raw = decode(var, chain, stored)?;
    if raw.len() == out.len() {
        out.copy_from_slice(&raw);
    }
    Ok(raw.len())
}

/// Encodes a chunk through the chain (first codec first).
pub fn encode(var: &str, chain: &[Filter], raw: Vec<u8>) -> Result<Vec<u8>> {
    match chain.first() {
        None => Ok(raw),
        Some(f) => Err(Error::NoFilter {
            var: var.to_string(),
            codec: codec_name(f),
        }),
    }
}
