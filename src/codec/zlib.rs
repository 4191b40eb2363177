//! `zlib` (numcodecs) = HDF5 deflate (filter 1): a zlib stream, level 0-9.

use super::{Codec, Config, bad_config, failed, hdf5_id, params, stream};
use crate::error::Result;
use flate2::{Compression, Decompress, read::ZlibDecoder, write::ZlibEncoder};
use serde_json::Value;
use std::io::Write;

const ID: &str = "zlib";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Zlib {
    pub level: u32,
}

impl Zlib {
    pub fn new(level: u32) -> Result<Zlib> {
        if level > 9 {
            return Err(bad_config(ID, format!("level {level} is outside 0..=9")));
        }
        Ok(Zlib { level })
    }

    /// numcodecs default level is 1.
    pub fn from_config(cfg: &Config) -> Result<Zlib> {
        Zlib::new(params::int(cfg, ID, "level", 1, 0..=9)? as u32)
    }

    pub fn from_hdf5(p: &[u32]) -> Result<Zlib> {
        Zlib::new(params::hdf5_one(ID, p, 1)?)
    }
}

impl Codec for Zlib {
    fn id(&self) -> &'static str {
        ID
    }

    fn config(&self) -> Config {
        params::config(ID, &[("level", Value::from(self.level))])
    }

    fn hdf5(&self) -> Option<(u32, Vec<u32>)> {
        Some((hdf5_id::DEFLATE, vec![self.level]))
    }

    fn encode(&self, raw: &[u8]) -> Result<Vec<u8>> {
        let mut e = ZlibEncoder::new(
            Vec::with_capacity(raw.len() / 2 + 64),
            Compression::new(self.level),
        );
        e.write_all(raw).map_err(|x| failed(ID, x))?;
        e.finish().map_err(|x| failed(ID, x))
    }

    fn decode(&self, encoded: &[u8], limit: usize) -> Result<Vec<u8>> {
        stream::read_bounded(ID, ZlibDecoder::new(encoded), limit)
    }

    fn decode_into(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize> {
        stream::inflate_into(ID, Decompress::new(true), encoded, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_defaults_and_limits() {
        let data: Vec<u8> = (0..5000u32).flat_map(|i| (i % 97).to_le_bytes()).collect();
        for level in 0..=9 {
            let z = Zlib::new(level).unwrap();
            let enc = z.encode(&data).unwrap();
            assert_eq!(z.decode(&enc, data.len()).unwrap(), data);
        }
        assert_eq!(
            Zlib::from_config(&params::config(ID, &[])).unwrap().level,
            1
        );
        assert_eq!(Zlib::from_hdf5(&[]).unwrap().level, 1);
        let z = Zlib::new(5).unwrap();
        let enc = z.encode(&data).unwrap();
        let e = z.decode(&enc, data.len() - 1).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "codec zlib failed: decompresses to more than the expected {} bytes",
                data.len() - 1
            )
        );
        assert_eq!(
            Zlib::new(10).unwrap_err().to_string(),
            "invalid zlib configuration: level 10 is outside 0..=9"
        );
        assert_eq!(
            Zlib::from_config(&params::config(ID, &[("level", Value::from("x"))]))
                .unwrap_err()
                .to_string(),
            "invalid zlib configuration: level \"x\" is not an integer"
        );
        assert_eq!(Zlib::from_config(&z.config()).unwrap(), z);
        assert_eq!(z.hdf5(), Some((1, vec![5])));
    }
}
