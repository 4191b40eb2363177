//! `quantize` (numcodecs): floats of `dtype` kept to `digits` decimal digits, by rounding
//! each to a multiple of a power of two (`2^-bits`, the largest one no coarser than
//! `10^-digits`), and stored as floats of `astype`. Decoding only converts `astype` back to
//! `dtype`: the rounding is lossy and not undone. Not netCDF's own quantization
//! ([`super::quantize`]), which records its algorithm in attributes and needs no codec.

use super::numeric::{self, Kind, Numeric};
use super::{Codec, Config, bad_config, params};
use crate::error::Result;
use serde_json::Value;

pub const ID: &str = "quantize";

#[derive(Debug, Clone, PartialEq)]
pub struct NumcodecsQuantize {
    digits: i64,
    /// `2^bits`: values are rounded to multiples of its reciprocal.
    scale: f64,
    dtype: Numeric,
    astype: Numeric,
}

impl NumcodecsQuantize {
    pub fn from_config(cfg: &Config) -> Result<NumcodecsQuantize> {
        let digits = match cfg.get("digits") {
            Some(Value::Number(_)) => params::int(cfg, ID, "digits", 0, -300..=300)?,
            _ => return Err(bad_config(ID, "digits is required")),
        };
        let dtype = match cfg.get("dtype") {
            Some(Value::String(s)) => s.clone(),
            _ => return Err(bad_config(ID, "dtype is required")),
        };
        let astype = params::text(cfg, ID, "astype", &dtype)?;
        let (dtype, astype) = (Numeric::parse(ID, &dtype)?, Numeric::parse(ID, &astype)?);
        if dtype.kind != Kind::Float || astype.kind != Kind::Float {
            return Err(bad_config(
                ID,
                format!(
                    "dtype {} and astype {} must be floats",
                    dtype.text, astype.text
                ),
            ));
        }
        Ok(NumcodecsQuantize {
            digits,
            scale: scale_of(digits),
            dtype,
            astype,
        })
    }
}

/// `2^bits` for `digits` decimal digits, as numcodecs computes it: the decimal exponent of
/// `10^-digits` (rounded away from zero), then the bits that resolve it.
fn scale_of(digits: i64) -> f64 {
    let exponent = (10f64.powi(-(digits as i32))).log10();
    let exponent = if exponent < 0.0 {
        exponent.floor()
    } else {
        exponent.ceil()
    };
    let bits = (10f64.powf(-exponent)).log2().ceil();
    2f64.powf(bits)
}

impl Codec for NumcodecsQuantize {
    fn id(&self) -> &'static str {
        ID
    }

    fn config(&self) -> Config {
        params::config(
            ID,
            &[
                ("digits", Value::from(self.digits)),
                ("dtype", Value::from(self.dtype.text.as_str())),
                ("astype", Value::from(self.astype.text.as_str())),
            ],
        )
    }

    fn hdf5(&self) -> Option<(u32, Vec<u32>)> {
        None
    }

    fn encode_into(&self, raw: &[u8], out: &mut Vec<u8>) -> Result<()> {
        let scale = self.scale;
        numeric::recode_into(ID, raw, (&self.dtype, &self.astype), out, |x| {
            (scale * x).round_ties_even() / scale
        })
    }

    fn decode(&self, encoded: &[u8], limit: usize) -> Result<Vec<u8>> {
        numeric::recoded(ID, encoded, (&self.astype, &self.dtype), limit, |x| x)
    }

    fn encoded_len(&self, n: usize) -> Option<usize> {
        Some(n / self.dtype.size * self.astype.size)
    }

    fn encoded_elem_size(&self) -> Option<usize> {
        Some(self.astype.size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codec(digits: i64, dtype: &str, astype: &str) -> NumcodecsQuantize {
        let cfg = params::config(
            ID,
            &[
                ("digits", Value::from(digits)),
                ("dtype", Value::from(dtype)),
                ("astype", Value::from(astype)),
            ],
        );
        NumcodecsQuantize::from_config(&cfg).unwrap()
    }

    fn doubles(bytes: &[u8]) -> Vec<f64> {
        bytes
            .chunks(8)
            .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
            .collect()
    }

    #[test]
    fn rounds_as_numcodecs_documents() {
        // numcodecs' own examples: linspace(0, 1, 10) at 1 and 2 digits.
        let raw: Vec<u8> = (0..10)
            .map(|i| f64::from(i) / 9.0)
            .flat_map(f64::to_le_bytes)
            .collect();
        let one = codec(1, "<f8", "<f8");
        assert_eq!(
            doubles(&one.encode(&raw).unwrap()),
            [
                0.0, 0.125, 0.25, 0.3125, 0.4375, 0.5625, 0.6875, 0.75, 0.875, 1.0
            ]
        );
        let two = codec(2, "<f8", "<f8");
        let enc = two.encode(&raw).unwrap();
        assert_eq!(doubles(&enc)[1], 0.109375);
        assert_eq!(doubles(&enc)[3], 0.3359375);
        assert_eq!(two.decode(&enc, raw.len()).unwrap(), enc);
        assert_eq!(NumcodecsQuantize::from_config(&two.config()).unwrap(), two);
    }

    #[test]
    fn narrower_floats_are_stored_and_widened_back() {
        let c = codec(3, "<f8", "<f4");
        let raw: Vec<u8> = [1.0f64 / 3.0, -2.5]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let enc = c.encode(&raw).unwrap();
        assert_eq!(enc.len(), 8);
        assert_eq!(c.encoded_elem_size(), Some(4));
        let back = doubles(&c.decode(&enc, 16).unwrap());
        assert!((back[0] - 1.0 / 3.0).abs() < 1e-3, "{back:?}");
        assert_eq!(back[1], -2.5);
        assert!(c.decode(&enc, 15).is_err());
        let mut cfg = c.config();
        cfg.insert("astype".into(), Value::from("<i4"));
        assert!(NumcodecsQuantize::from_config(&cfg).is_err());
        cfg.remove("digits");
        assert!(NumcodecsQuantize::from_config(&cfg).is_err());
    }
}
