//! `delta` (numcodecs): each element replaced by its difference from the previous one, in
//! the numeric type `dtype` (wrapping for integers). An `astype` other than `dtype` (a
//! narrowing cast of the differences) is refused.

use super::numeric::{Kind, Numeric};
use super::{Codec, Config, bad_config, failed, params, past_limit};
use crate::error::Result;
use serde_json::Value;

const ID: &str = "delta";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delta {
    dtype: Numeric,
}

impl Delta {
    pub fn from_config(cfg: &Config) -> Result<Delta> {
        let dtype = match cfg.get("dtype") {
            Some(Value::String(s)) => s.clone(),
            _ => return Err(bad_config(ID, "dtype is required")),
        };
        let astype = params::text(cfg, ID, "astype", &dtype)?;
        if astype != dtype {
            return Err(bad_config(
                ID,
                format!("astype {astype} differs from dtype {dtype}"),
            ));
        }
        Ok(Delta {
            dtype: Numeric::parse(ID, &dtype)?,
        })
    }

    fn check(&self, buf: &[u8]) -> Result<()> {
        if !buf.len().is_multiple_of(self.dtype.size) {
            return Err(failed(
                ID,
                format!(
                    "{} bytes is not a whole number of {}",
                    buf.len(),
                    self.dtype.text
                ),
            ));
        }
        Ok(())
    }

    /// Combines two raw element values (`sub` = difference, else sum) in the element type.
    fn combine(&self, a: u64, b: u64, sub: bool) -> u64 {
        match (self.dtype.kind, self.dtype.size) {
            (Kind::Float, 4) => {
                let (x, y) = (f32::from_bits(a as u32), f32::from_bits(b as u32));
                u64::from((if sub { x - y } else { x + y }).to_bits())
            }
            (Kind::Float, _) => {
                let (x, y) = (f64::from_bits(a), f64::from_bits(b));
                (if sub { x - y } else { x + y }).to_bits()
            }
            _ => {
                let r = if sub {
                    a.wrapping_sub(b)
                } else {
                    a.wrapping_add(b)
                };
                if self.dtype.size == 8 {
                    r
                } else {
                    r & ((1u64 << (8 * self.dtype.size)) - 1)
                }
            }
        }
    }
}

impl Codec for Delta {
    fn id(&self) -> &'static str {
        ID
    }

    fn config(&self) -> Config {
        params::config(
            ID,
            &[
                ("dtype", Value::from(self.dtype.text.as_str())),
                ("astype", Value::from(self.dtype.text.as_str())),
            ],
        )
    }

    fn hdf5(&self) -> Option<(u32, Vec<u32>)> {
        None
    }

    fn encode_into(&self, raw: &[u8], out: &mut Vec<u8>) -> Result<()> {
        self.check(raw)?;
        out.clear();
        out.extend_from_slice(raw);
        let mut prev = 0u64;
        for (i, o) in raw
            .chunks_exact(self.dtype.size)
            .zip(out.chunks_exact_mut(self.dtype.size))
        {
            let v = self.dtype.read(i);
            self.dtype.write(self.combine(v, prev, true), o);
            prev = v;
        }
        Ok(())
    }

    fn decode(&self, encoded: &[u8], limit: usize) -> Result<Vec<u8>> {
        self.check(encoded)?;
        if encoded.len() > limit {
            return Err(past_limit(
                ID,
                format!("{} bytes, more than the expected {limit}", encoded.len()),
            ));
        }
        let mut out = encoded.to_vec();
        let mut acc = 0u64;
        for (n, o) in out.chunks_exact_mut(self.dtype.size).enumerate() {
            let d = self.dtype.read(o);
            acc = if n == 0 {
                d
            } else {
                self.combine(acc, d, false)
            };
            self.dtype.write(acc, o);
        }
        Ok(out)
    }

    fn encoded_len(&self, n: usize) -> Option<usize> {
        Some(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(dtype: &str) -> Config {
        params::config(
            ID,
            &[
                ("dtype", Value::from(dtype)),
                ("astype", Value::from(dtype)),
            ],
        )
    }

    #[test]
    fn matches_numcodecs_layout_and_round_trips() {
        let d = Delta::from_config(&cfg("<i4")).unwrap();
        let raw: Vec<u8> = [10i32, 13, 11, i32::MIN]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let enc = d.encode(&raw).unwrap();
        let diffs: Vec<i32> = enc
            .chunks(4)
            .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(diffs, vec![10, 3, -2, i32::MIN.wrapping_sub(11)]);
        assert_eq!(d.decode(&enc, raw.len()).unwrap(), raw);
        for dt in [">u2", "|u1", "<i8", "<f8", ">f4"] {
            let d = Delta::from_config(&cfg(dt)).unwrap();
            let raw: Vec<u8> = (0..64u8).map(|i| i.wrapping_mul(37)).collect();
            let back = d.decode(&d.encode(&raw).unwrap(), raw.len()).unwrap();
            if d.dtype.kind == Kind::Float {
                assert_eq!(back.len(), raw.len());
            } else {
                assert_eq!(back, raw, "{dt}");
            }
            assert_eq!(Delta::from_config(&d.config()).unwrap(), d);
        }
        let f = Delta::from_config(&cfg("<f8")).unwrap();
        let raw: Vec<u8> = [1.5f64, 2.0, -3.25]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert_eq!(f.decode(&f.encode(&raw).unwrap(), 24).unwrap(), raw);
    }

    #[test]
    fn refuses_bad_configs() {
        let mut c = cfg("<i4");
        c.insert("astype".into(), Value::from("<i2"));
        assert_eq!(
            Delta::from_config(&c).unwrap_err().to_string(),
            "invalid delta configuration: astype <i2 differs from dtype <i4"
        );
        assert_eq!(
            Delta::from_config(&cfg("<U4")).unwrap_err().to_string(),
            "invalid delta configuration: dtype <U4 is not numeric"
        );
        assert_eq!(
            Delta::from_config(&params::config(ID, &[]))
                .unwrap_err()
                .to_string(),
            "invalid delta configuration: dtype is required"
        );
        let d = Delta::from_config(&cfg("<i4")).unwrap();
        assert!(d.decode(&[1, 2, 3], 3).is_err());
    }
}
