//! `zstd` (numcodecs) = HDF5 filter 32015: a Zstandard frame; level (0 = library default,
//! negative = fast) and an optional content checksum.

use super::{
    Codec, Config, PartialDecode, bad_config, failed, hdf5_id, params, past_limit,
    reused::with_reused,
};
use crate::error::Result;
use ::zstd::zstd_safe::{self, CCtx, CParameter, DCtx, InBuffer, OutBuffer, ResetDirective};
use serde_json::Value;
use std::cell::RefCell;
use std::ops::Range;

const ID: &str = "zstd";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Zstd {
    pub level: i32,
    pub checksum: bool,
}

impl Zstd {
    pub fn new(level: i32, checksum: bool) -> Result<Zstd> {
        let range = ::zstd::compression_level_range();
        if level != 0 && !range.contains(&level) {
            return Err(bad_config(
                ID,
                format!(
                    "level {level} is outside {}..={}",
                    range.start(),
                    range.end()
                ),
            ));
        }
        Ok(Zstd { level, checksum })
    }

    /// numcodecs default level is 0 (the library default, 3).
    pub fn from_config(cfg: &Config) -> Result<Zstd> {
        let level = params::int(cfg, ID, "level", 0, i32::MIN as i64..=i32::MAX as i64)?;
        Zstd::new(level as i32, params::flag(cfg, ID, "checksum", false)?)
    }

    /// The HDF5 parameter is the level as a C `int` stored in an `unsigned int`.
    pub fn from_hdf5(p: &[u32]) -> Result<Zstd> {
        Zstd::new(params::hdf5_one(ID, p, 3)? as i32, false)
    }
}

impl Codec for Zstd {
    fn id(&self) -> &'static str {
        ID
    }

    fn config(&self) -> Config {
        let mut entries = vec![("level", Value::from(self.level))];
        if self.checksum {
            entries.push(("checksum", Value::from(true)));
        }
        params::config(ID, &entries)
    }

    fn hdf5(&self) -> Option<(u32, Vec<u32>)> {
        Some((hdf5_id::ZSTD, vec![self.level as u32]))
    }

    /// Compresses into `out`'s memory (nothing is written to it before the compressor) with
    /// this thread's reused context (a fresh one costs its tables' allocation and first touch,
    /// chunk after chunk).
    fn encode_into(&self, raw: &[u8], out: &mut Vec<u8>) -> Result<()> {
        thread_local! {
            static CONTEXT: RefCell<Option<CCtx<'static>>> = const { RefCell::new(None) };
        }
        with_reused(ID, &CONTEXT, CCtx::try_create, |c| {
            c.set_parameter(CParameter::CompressionLevel(self.level))
                .and_then(|_| c.set_parameter(CParameter::ChecksumFlag(self.checksum)))
                .map_err(|code| corrupt("cannot set the compression parameters", code))?;
            out.clear();
            out.reserve(zstd_safe::compress_bound(raw.len()));
            c.compress2(out, raw)
                .map_err(|code| corrupt("cannot compress", code))?;
            Ok(())
        })
    }

    fn decode(&self, encoded: &[u8], limit: usize) -> Result<Vec<u8>> {
        if let Ok(Some(n)) = zstd_safe::get_frame_content_size(encoded)
            && n > limit as u64
        {
            return Err(past_limit(
                ID,
                format!("frame declares {n} bytes, more than the expected {limit}"),
            ));
        }
        ::zstd::bulk::Decompressor::new()
            .and_then(|mut d| d.decompress(encoded, limit))
            .map_err(|e| {
                let why = format!("corrupt or oversized frame: {e}");
                if e.to_string() == zstd_safe::get_error_name(DST_TOO_SMALL) {
                    past_limit(ID, why)
                } else {
                    failed(ID, why)
                }
            })
    }

    fn writes_in_place(&self) -> bool {
        true
    }

    /// Decompresses with this thread's reused context straight into `out`.
    fn decode_into(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize> {
        with_context(|d| {
            d.decompress(out, encoded).map_err(|code| {
                if code == DST_TOO_SMALL {
                    past_limit(
                        ID,
                        format!("frame decodes to more than the expected {}", out.len()),
                    )
                } else {
                    corrupt("corrupt or oversized frame", code)
                }
            })
        })
    }

    /// Streams the frame until the last byte wanted is out: only the blocks before it are
    /// decoded. Done for one whole frame that declares `out.len()` bytes and carries no
    /// checksum, when the last byte wanted comes before the end. Whatever the stream refuses
    /// (a corrupt block, a window larger than streaming allows) is left to a whole decode,
    /// which decodes or reports it.
    fn decode_parts(
        &self,
        encoded: &[u8],
        out: &mut [u8],
        wanted: &[Range<usize>],
    ) -> Result<bool> {
        let end = wanted.iter().map(|r| r.end).max().unwrap_or(0);
        let one_frame = zstd_safe::find_frame_compressed_size(encoded) == Ok(encoded.len());
        let declared = zstd_safe::get_frame_content_size(encoded);
        if end >= out.len()
            || !one_frame
            || !matches!(declared, Ok(Some(n)) if n == out.len() as u64)
            || has_checksum(encoded)
        {
            return Ok(false);
        }
        with_context(|d| {
            if d.reset(ResetDirective::SessionOnly).is_err() {
                return Ok(false);
            }
            let mut input = InBuffer::around(encoded);
            let mut output = OutBuffer::around(&mut out[..end]);
            while output.pos() < output.capacity() {
                let before = (input.pos, output.pos());
                let refused = d.decompress_stream(&mut output, &mut input).is_err();
                if refused || (input.pos, output.pos()) == before {
                    return Ok(false);
                }
            }
            Ok(true)
        })
    }

    fn partial_decode(&self) -> PartialDecode {
        PartialDecode::Prefix
    }
}

/// True when `frame` is a Zstandard frame whose header announces a content checksum.
fn has_checksum(frame: &[u8]) -> bool {
    const MAGIC: [u8; 4] = 0xFD2F_B528u32.to_le_bytes();
    const CHECKSUM_FLAG: u8 = 0x04;
    frame.len() > 4 && frame[..4] == MAGIC && frame[4] & CHECKSUM_FLAG != 0
}

/// zstd's error code for output that does not fit the buffer given (`ZSTD_error_dstSize_tooSmall`
/// = 70, returned negated, as every zstd error code is).
const DST_TOO_SMALL: usize = 0usize.wrapping_sub(70);

fn corrupt(what: &str, code: usize) -> crate::error::Error {
    failed(ID, format!("{what}: {}", zstd_safe::get_error_name(code)))
}

/// Runs `f` with this thread's decompression context, made on first use and reused after
/// (a fresh context costs more than decompressing a small chunk).
fn with_context<T>(f: impl FnOnce(&mut DCtx<'static>) -> Result<T>) -> Result<T> {
    thread_local! {
        static CONTEXT: RefCell<Option<DCtx<'static>>> = const { RefCell::new(None) };
    }
    with_reused(ID, &CONTEXT, DCtx::try_create, f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_levels_checksum_limits() {
        let data: Vec<u8> = (0..4000u32).flat_map(|i| (i % 13).to_le_bytes()).collect();
        for (level, checksum) in [(0, false), (1, true), (3, false), (19, false), (-5, true)] {
            let z = Zstd::new(level, checksum).unwrap();
            let enc = z.encode(&data).unwrap();
            assert_eq!(z.decode(&enc, data.len()).unwrap(), data);
            assert_eq!(Zstd::from_config(&z.config()).unwrap(), z);
        }
        let z = Zstd::new(3, false).unwrap();
        let enc = z.encode(&data).unwrap();
        assert_eq!(
            z.decode(&enc, 100).unwrap_err().to_string(),
            format!(
                "codec zstd failed: frame declares {} bytes, more than the expected 100",
                data.len()
            )
        );
        assert_eq!(
            Zstd::new(99, false).unwrap_err().to_string(),
            format!(
                "invalid zstd configuration: level 99 is outside {}..=22",
                ::zstd::compression_level_range().start()
            )
        );
        assert_eq!(Zstd::from_hdf5(&[7]).unwrap().level, 7);
        assert_eq!(z.hdf5(), Some((32015, vec![3])));
    }
}
