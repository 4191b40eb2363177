//! `crc32c` (numcodecs, and the Zarr v3 codec of that name): the data with its CRC-32C
//! (Castagnoli) checksum, 4 bytes little-endian, after it (numcodecs' `location: "end"`, the
//! default and the only place Zarr v3 puts it) or before it (`location: "start"`). Decoding
//! verifies and strips it. No HDF5 equivalent.

use super::{Codec, Config, bad_config, failed, params, past_limit};
use crate::error::Result;
use crc_fast::CrcAlgorithm;
use serde_json::Value;

pub const ID: &str = "crc32c";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Crc32c {
    /// The checksum comes before the data.
    at_start: bool,
}

impl Crc32c {
    /// The checksum at the end, as Zarr v3 stores it.
    pub const AT_END: Crc32c = Crc32c { at_start: false };

    pub fn from_config(cfg: &Config) -> Result<Crc32c> {
        if let Some(k) = cfg
            .keys()
            .find(|k| !matches!(k.as_str(), "id" | "location"))
        {
            return Err(bad_config(ID, format!("unexpected parameter {k}")));
        }
        match params::text(cfg, ID, "location", "end")?.as_str() {
            "end" => Ok(Crc32c::AT_END),
            "start" => Ok(Crc32c { at_start: true }),
            other => Err(bad_config(
                ID,
                format!("location {other:?} is not start or end"),
            )),
        }
    }

    /// Strips and checks the checksum of `encoded`: the data it covers.
    pub fn verified<'e>(&self, encoded: &'e [u8]) -> Result<&'e [u8]> {
        let split = if self.at_start {
            encoded
                .split_first_chunk::<4>()
                .map(|(sum, data)| (data, sum))
        } else {
            encoded.split_last_chunk::<4>()
        };
        let (data, sum) = split.ok_or_else(|| {
            failed(
                ID,
                format!("{} bytes, no room for a checksum", encoded.len()),
            )
        })?;
        let stored = u32::from_le_bytes(*sum);
        let computed = checksum(data);
        if stored != computed {
            return Err(failed(
                ID,
                format!("checksum mismatch: stored {stored:#010x}, computed {computed:#010x}"),
            ));
        }
        Ok(data)
    }
}

/// The CRC-32C of `data`.
pub fn checksum(data: &[u8]) -> u32 {
    // CRC-32/ISCSI is CRC-32C; the value fits 32 bits.
    crc_fast::checksum(CrcAlgorithm::Crc32Iscsi, data) as u32
}

impl Codec for Crc32c {
    fn id(&self) -> &'static str {
        ID
    }

    fn config(&self) -> Config {
        let location = if self.at_start { "start" } else { "end" };
        params::config(ID, &[("location", Value::from(location))])
    }

    fn hdf5(&self) -> Option<(u32, Vec<u32>)> {
        None
    }

    fn encode_into(&self, raw: &[u8], out: &mut Vec<u8>) -> Result<()> {
        let sum = checksum(raw).to_le_bytes();
        out.clear();
        out.reserve(raw.len() + 4);
        if self.at_start {
            out.extend_from_slice(&sum);
        }
        out.extend_from_slice(raw);
        if !self.at_start {
            out.extend_from_slice(&sum);
        }
        Ok(())
    }

    fn decode(&self, encoded: &[u8], limit: usize) -> Result<Vec<u8>> {
        let data = self.verified(encoded)?;
        if data.len() > limit {
            return Err(past_limit(
                ID,
                format!("{} bytes, more than the expected {limit}", data.len()),
            ));
        }
        Ok(data.to_vec())
    }

    fn encoded_len(&self, n: usize) -> Option<usize> {
        n.checked_add(4)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_value_both_locations_and_corruption() {
        // The check value of CRC-32C: "123456789" -> 0xe3069283.
        assert_eq!(checksum(b"123456789"), 0xe306_9283);
        let end = Crc32c::AT_END.encode(b"123456789").unwrap();
        assert_eq!(&end[9..], &0xe306_9283u32.to_le_bytes());
        assert_eq!(Crc32c::AT_END.decode(&end, 9).unwrap(), b"123456789");
        let start_cfg = params::config(ID, &[("location", "start".into())]);
        let start = Crc32c::from_config(&start_cfg).unwrap();
        let enc = start.encode(b"abc").unwrap();
        assert_eq!(&enc[4..], b"abc");
        assert_eq!(start.decode(&enc, 3).unwrap(), b"abc");
        assert_eq!(start.config(), start_cfg);

        let mut bad = end.clone();
        bad[0] ^= 1;
        let err = Crc32c::AT_END.decode(&bad, 9).unwrap_err().to_string();
        assert!(err.contains("checksum mismatch"), "{err}");
        assert!(Crc32c::AT_END.decode(&[1, 2, 3], 9).is_err());
        assert!(Crc32c::AT_END.decode(&end, 8).is_err(), "past the limit");
        let odd = params::config(ID, &[("location", "middle".into())]);
        assert!(Crc32c::from_config(&odd).is_err());
        let extra = params::config(ID, &[("x", 1.into())]);
        assert!(Crc32c::from_config(&extra).is_err());
    }
}
