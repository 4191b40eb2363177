//! `zstd` (numcodecs) = HDF5 filter 32015: a Zstandard frame; level (0 = library default,
//! negative = fast) and an optional content checksum.

use super::{Codec, Config, bad_config, failed, hdf5_id, params};
use crate::error::Result;
use serde_json::Value;
use std::cell::RefCell;

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

    fn encode(&self, raw: &[u8]) -> Result<Vec<u8>> {
        let mut c = ::zstd::bulk::Compressor::new(self.level).map_err(|e| failed(ID, e))?;
        c.include_checksum(self.checksum)
            .map_err(|e| failed(ID, e))?;
        c.compress(raw).map_err(|e| failed(ID, e))
    }

    fn decode(&self, encoded: &[u8], limit: usize) -> Result<Vec<u8>> {
        if let Ok(Some(n)) = ::zstd::zstd_safe::get_frame_content_size(encoded) {
            if n > limit as u64 {
                return Err(failed(
                    ID,
                    format!("frame declares {n} bytes, more than the expected {limit}"),
                ));
            }
        }
        ::zstd::bulk::Decompressor::new()
            .and_then(|mut d| d.decompress(encoded, limit))
            .map_err(|e| failed(ID, format!("corrupt or oversized frame: {e}")))
    }

    /// Decompresses with this thread's reused context straight into `out`.
    fn decode_into(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize> {
        thread_local! {
            static CONTEXT: RefCell<Option<::zstd::bulk::Decompressor<'static>>> =
                const { RefCell::new(None) };
        }
        CONTEXT.with(|cell| {
            let mut slot = cell.try_borrow_mut().map_err(|e| failed(ID, e))?;
            let d = match &mut *slot {
                Some(d) => d,
                empty => empty.insert(
                    ::zstd::bulk::Decompressor::new()
                        .map_err(|e| failed(ID, format!("no decompression context: {e}")))?,
                ),
            };
            d.decompress_to_buffer(encoded, out)
                .map_err(|e| failed(ID, format!("corrupt or oversized frame: {e}")))
        })
    }
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
