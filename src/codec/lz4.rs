//! `lz4` (numcodecs): an LZ4 block prefixed with its decoded length (little-endian u32).
//! `acceleration` only changes compression speed; it is kept for the JSON round trip.

use super::{Codec, Config, failed, params, past_limit};
use crate::error::Result;
use serde_json::Value;

const ID: &str = "lz4";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lz4 {
    pub acceleration: i64,
}

impl Lz4 {
    pub fn from_config(cfg: &Config) -> Result<Lz4> {
        Ok(Lz4 {
            acceleration: params::int(
                cfg,
                ID,
                "acceleration",
                1,
                i32::MIN as i64..=i32::MAX as i64,
            )?,
        })
    }
}

impl Codec for Lz4 {
    fn id(&self) -> &'static str {
        ID
    }

    fn config(&self) -> Config {
        params::config(ID, &[("acceleration", Value::from(self.acceleration))])
    }

    fn hdf5(&self) -> Option<(u32, Vec<u32>)> {
        None
    }

    fn encode_into(&self, raw: &[u8], out: &mut Vec<u8>) -> Result<()> {
        if u32::try_from(raw.len()).is_err() {
            return Err(failed(ID, format!("{} bytes is too large", raw.len())));
        }
        *out = lz4_flex::block::compress_prepend_size(raw);
        Ok(())
    }

    fn decode(&self, encoded: &[u8], limit: usize) -> Result<Vec<u8>> {
        let (n, _) = declared(encoded)?;
        if n > limit {
            return Err(past_limit(
                ID,
                format!("header declares {n} bytes, more than the expected {limit}"),
            ));
        }
        let mut out = vec![0u8; n];
        self.decode_into(encoded, &mut out)?;
        Ok(out)
    }

    fn writes_in_place(&self) -> bool {
        true
    }

    fn decodes_at_copy_speed(&self) -> bool {
        true
    }

    fn decode_into(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize> {
        let (n, body) = declared(encoded)?;
        let room = out.len();
        let target = out.get_mut(..n).ok_or_else(|| {
            past_limit(
                ID,
                format!("header declares {n} bytes, more than the expected {room}"),
            )
        })?;
        let got = lz4_flex::block::decompress_into(body, target)
            .map_err(|e| failed(ID, format!("corrupt block: {e}")))?;
        if got != n {
            return Err(failed(
                ID,
                format!("block holds {got} bytes, header says {n}"),
            ));
        }
        Ok(n)
    }
}

/// The decoded size numcodecs' 4-byte little-endian header declares, and the block after it.
fn declared(encoded: &[u8]) -> Result<(usize, &[u8])> {
    let (head, body) = encoded.split_first_chunk::<4>().ok_or_else(|| {
        failed(
            ID,
            format!("{} bytes, shorter than the header", encoded.len()),
        )
    })?;
    Ok((u32::from_le_bytes(*head) as usize, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_header() {
        let data: Vec<u8> = (0..3000u32).flat_map(|i| (i / 5).to_le_bytes()).collect();
        let l = Lz4::from_config(&params::config(ID, &[])).unwrap();
        assert_eq!(l.acceleration, 1);
        let enc = l.encode(&data).unwrap();
        assert_eq!(&enc[..4], &(data.len() as u32).to_le_bytes());
        assert_eq!(l.decode(&enc, data.len()).unwrap(), data);
        assert_eq!(
            l.decode(&enc, 5).unwrap_err().to_string(),
            format!(
                "codec lz4 failed: header declares {} bytes, more than the expected 5",
                data.len()
            )
        );
        assert_eq!(Lz4::from_config(&l.config()).unwrap(), l);
    }
}
