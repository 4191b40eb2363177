//! `gzip` (numcodecs, and a core codec of Zarr v3): a gzip member, level 0-9. Reported to
//! netCDF as deflate of its level: the same compression, framed otherwise.

use super::{Codec, Config, bad_config, failed, params, stream};
use crate::error::Result;
use flate2::{Compression, read::MultiGzDecoder, write::GzEncoder};
use serde_json::Value;
use std::io::Write;

const ID: &str = "gzip";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gzip {
    pub level: u32,
}

impl Gzip {
    /// numcodecs default level is 1.
    pub fn from_config(cfg: &Config) -> Result<Gzip> {
        let level = params::int(cfg, ID, "level", 1, 0..=9)? as u32;
        if level > 9 {
            return Err(bad_config(ID, format!("level {level} is outside 0..=9")));
        }
        Ok(Gzip { level })
    }
}

impl Codec for Gzip {
    fn id(&self) -> &'static str {
        ID
    }

    fn config(&self) -> Config {
        params::config(ID, &[("level", Value::from(self.level))])
    }

    fn hdf5(&self) -> Option<(u32, Vec<u32>)> {
        Some((super::hdf5_id::DEFLATE, vec![self.level]))
    }

    fn encode_into(&self, raw: &[u8], out: &mut Vec<u8>) -> Result<()> {
        let mut kept = std::mem::take(out);
        kept.clear();
        kept.reserve(raw.len() / 2 + 64);
        let mut e = GzEncoder::new(kept, Compression::new(self.level));
        e.write_all(raw).map_err(|x| failed(ID, x))?;
        *out = e.finish().map_err(|x| failed(ID, x))?;
        Ok(())
    }

    fn decode(&self, encoded: &[u8], limit: usize) -> Result<Vec<u8>> {
        stream::read_bounded(ID, MultiGzDecoder::new(encoded), limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_config() {
        let data: Vec<u8> = (0..3000u32).flat_map(|i| (i / 3).to_le_bytes()).collect();
        let g = Gzip::from_config(&params::config(ID, &[("level", Value::from(6))])).unwrap();
        let enc = g.encode(&data).unwrap();
        assert_eq!(&enc[..2], &[0x1f, 0x8b]);
        assert_eq!(g.decode(&enc, data.len()).unwrap(), data);
        assert_eq!(Gzip::from_config(&g.config()).unwrap(), g);
        assert_eq!(
            Gzip::from_config(&params::config(ID, &[])).unwrap().level,
            1
        );
        assert_eq!(
            Gzip::from_config(&params::config(ID, &[("level", Value::from(-1))]))
                .unwrap_err()
                .to_string(),
            "invalid gzip configuration: level -1 is outside 0..=9"
        );
        assert_eq!(
            g.hdf5(),
            Some((super::super::hdf5_id::DEFLATE, vec![g.level]))
        );
    }
}
