//! `bz2` (numcodecs) = HDF5 filter 307: a bzip2 stream, block size level 1-9.

use super::{Codec, Config, bad_config, failed, hdf5_id, params, stream};
use crate::error::Result;
use bzip2::{Compression, read::MultiBzDecoder, write::BzEncoder};
use serde_json::Value;
use std::io::Write;

const ID: &str = "bz2";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bz2 {
    pub level: u32,
}

impl Bz2 {
    pub fn new(level: u32) -> Result<Bz2> {
        if !(1..=9).contains(&level) {
            return Err(bad_config(ID, format!("level {level} is outside 1..=9")));
        }
        Ok(Bz2 { level })
    }

    /// numcodecs default level is 1.
    pub fn from_config(cfg: &Config) -> Result<Bz2> {
        Bz2::new(params::int(cfg, ID, "level", 1, 1..=9)? as u32)
    }

    /// The HDF5 bzip2 filter defaults to 9.
    pub fn from_hdf5(p: &[u32]) -> Result<Bz2> {
        Bz2::new(params::hdf5_one(ID, p, 9)?)
    }
}

impl Codec for Bz2 {
    fn id(&self) -> &'static str {
        ID
    }

    fn config(&self) -> Config {
        params::config(ID, &[("level", Value::from(self.level))])
    }

    fn hdf5(&self) -> Option<(u32, Vec<u32>)> {
        Some((hdf5_id::BZIP2, vec![self.level]))
    }

    fn encode_into(&self, raw: &[u8], out: &mut Vec<u8>) -> Result<()> {
        let mut kept = std::mem::take(out);
        kept.clear();
        kept.reserve(raw.len() / 2 + 64);
        let mut e = BzEncoder::new(kept, Compression::new(self.level));
        e.write_all(raw).map_err(|x| failed(ID, x))?;
        *out = e.finish().map_err(|x| failed(ID, x))?;
        Ok(())
    }

    fn decode(&self, encoded: &[u8], limit: usize) -> Result<Vec<u8>> {
        stream::read_bounded(ID, MultiBzDecoder::new(encoded), limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_config() {
        let data: Vec<u8> = (0..3000u32).flat_map(|i| (i / 5).to_le_bytes()).collect();
        let b = Bz2::new(9).unwrap();
        let enc = b.encode(&data).unwrap();
        assert_eq!(&enc[..3], b"BZh");
        assert_eq!(b.decode(&enc, data.len()).unwrap(), data);
        assert!(b.decode(&enc, 10).is_err());
        assert_eq!(Bz2::from_config(&b.config()).unwrap(), b);
        assert_eq!(Bz2::from_config(&params::config(ID, &[])).unwrap().level, 1);
        assert_eq!(
            Bz2::new(0).unwrap_err().to_string(),
            "invalid bz2 configuration: level 0 is outside 1..=9"
        );
        assert_eq!(b.hdf5(), Some((307, vec![9])));
    }
}
