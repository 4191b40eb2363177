//! `fletcher32` (numcodecs) = HDF5 filter 3: the data followed by HDF5's Fletcher-32 checksum
//! (16-bit big-endian words, an odd last byte as the high byte of a word), stored
//! little-endian. Decoding verifies and strips it.

use super::{Codec, Config, bad_config, failed, hdf5_id, params, past_limit};
use crate::error::Result;

const ID: &str = "fletcher32";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fletcher32;

impl Fletcher32 {
    pub fn from_config(cfg: &Config) -> Result<Fletcher32> {
        match cfg.keys().find(|k| *k != "id") {
            Some(k) => Err(bad_config(ID, format!("unexpected parameter {k}"))),
            None => Ok(Fletcher32),
        }
    }
}

/// HDF5's Fletcher-32 (`H5_checksum_fletcher32`).
pub fn checksum(data: &[u8]) -> u32 {
    let (mut sum1, mut sum2) = (0u32, 0u32);
    let mut words = data.chunks_exact(2);
    loop {
        let block: Vec<&[u8]> = words.by_ref().take(360).collect();
        if block.is_empty() {
            break;
        }
        for w in block {
            sum1 += u32::from(w[0]) << 8 | u32::from(w[1]);
            sum2 += sum1;
        }
        sum1 = (sum1 & 0xffff) + (sum1 >> 16);
        sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    }
    if let [last] = words.remainder() {
        sum1 += u32::from(*last) << 8;
        sum2 += sum1;
        sum1 = (sum1 & 0xffff) + (sum1 >> 16);
        sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    }
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    (sum2 << 16) | sum1
}

impl Codec for Fletcher32 {
    fn id(&self) -> &'static str {
        ID
    }

    fn config(&self) -> Config {
        params::config(ID, &[])
    }

    fn hdf5(&self) -> Option<(u32, Vec<u32>)> {
        Some((hdf5_id::FLETCHER32, Vec::new()))
    }

    fn encode_into(&self, raw: &[u8], out: &mut Vec<u8>) -> Result<()> {
        out.clear();
        out.reserve(raw.len() + 4);
        out.extend_from_slice(raw);
        out.extend_from_slice(&checksum(raw).to_le_bytes());
        Ok(())
    }

    fn decode(&self, encoded: &[u8], limit: usize) -> Result<Vec<u8>> {
        let (data, sum) = encoded.split_last_chunk::<4>().ok_or_else(|| {
            failed(
                ID,
                format!("{} bytes, no room for a checksum", encoded.len()),
            )
        })?;
        if data.len() > limit {
            return Err(past_limit(
                ID,
                format!("{} bytes, more than the expected {limit}", data.len()),
            ));
        }
        let stored = u32::from_le_bytes(*sum);
        let computed = checksum(data);
        if stored != computed {
            return Err(failed(
                ID,
                format!("checksum mismatch: stored {stored:#010x}, computed {computed:#010x}"),
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
    fn known_value_round_trip_and_corruption() {
        // numcodecs 0.15: Fletcher32().encode(np.arange(5, dtype="<i2")).
        let raw: Vec<u8> = (0..5i16).flat_map(|v| v.to_le_bytes()).collect();
        let enc = Fletcher32.encode(&raw).unwrap();
        assert_eq!(&enc[10..], &[0x00, 0x0a, 0x00, 0x14]);
        assert_eq!(Fletcher32.decode(&enc, 10).unwrap(), raw);
        let odd = Fletcher32.encode(&[1, 2, 3]).unwrap();
        assert_eq!(Fletcher32.decode(&odd, 3).unwrap(), vec![1, 2, 3]);
        let mut bad = enc.clone();
        bad[0] ^= 1;
        assert_eq!(
            Fletcher32.decode(&bad, 10).unwrap_err().to_string(),
            "codec fletcher32 failed: checksum mismatch: stored 0x14000a00, computed 0x19000b00"
        );
        assert!(Fletcher32.decode(&[1, 2], 10).is_err());
        let big: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
        assert_eq!(
            Fletcher32
                .decode(&Fletcher32.encode(&big).unwrap(), big.len())
                .unwrap(),
            big
        );
        assert_eq!(
            Fletcher32::from_config(&params::config(ID, &[("x", 1.into())]))
                .unwrap_err()
                .to_string(),
            "invalid fletcher32 configuration: unexpected parameter x"
        );
    }
}
