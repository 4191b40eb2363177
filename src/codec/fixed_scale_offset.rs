//! `fixedscaleoffset` (numcodecs): each value `x` of numeric type `dtype` stored as
//! `round((x - offset) * scale)` in numeric type `astype` (commonly a narrower integer type:
//! float64 temperatures as uint16 hundredths). Decoding gives `stored / scale + offset` in
//! `dtype`. The arithmetic is numpy's: in floats when the values it starts from are floats
//! (`dtype` when encoding, `astype` when decoding; the offset and scale taken as floats too),
//! else in doubles, rounding halves to even as numpy's `around`; a value out of `astype`'s
//! range saturates (numcodecs leaves that undefined).
//!
//! The only codec here whose output has another element size than its input: codecs after
//! it in a chain see elements of `astype` ([`Codec::encoded_elem_size`]).

use super::numeric::{self, Kind, Numeric};
use super::{Codec, Config, bad_config, params};
use crate::error::Result;
use serde_json::Value;

pub const ID: &str = "fixedscaleoffset";

#[derive(Debug, Clone, PartialEq)]
pub struct FixedScaleOffset {
    offset: f64,
    scale: f64,
    /// As configured, written back unchanged.
    offset_json: Value,
    scale_json: Value,
    dtype: Numeric,
    astype: Numeric,
}

/// A number parameter, required.
fn number(cfg: &Config, key: &str) -> Result<(f64, Value)> {
    match cfg.get(key) {
        Some(v @ Value::Number(n)) => match n.as_f64() {
            Some(x) => Ok((x, v.clone())),
            None => Err(bad_config(ID, format!("{key} {n} is not a number"))),
        },
        Some(other) => Err(bad_config(ID, format!("{key} {other} is not a number"))),
        None => Err(bad_config(ID, format!("{key} is required"))),
    }
}

impl FixedScaleOffset {
    pub fn from_config(cfg: &Config) -> Result<FixedScaleOffset> {
        let (offset, offset_json) = number(cfg, "offset")?;
        let (scale, scale_json) = number(cfg, "scale")?;
        if scale == 0.0 || !scale.is_finite() || !offset.is_finite() {
            return Err(bad_config(
                ID,
                format!("scale {scale} and offset {offset} must be finite, scale not 0"),
            ));
        }
        let dtype = match cfg.get("dtype") {
            Some(Value::String(s)) => s.clone(),
            _ => return Err(bad_config(ID, "dtype is required")),
        };
        let astype = params::text(cfg, ID, "astype", &dtype)?;
        Ok(FixedScaleOffset {
            offset,
            scale,
            offset_json,
            scale_json,
            dtype: Numeric::parse(ID, &dtype)?,
            astype: Numeric::parse(ID, &astype)?,
        })
    }
}

impl Codec for FixedScaleOffset {
    fn id(&self) -> &'static str {
        ID
    }

    fn config(&self) -> Config {
        params::config(
            ID,
            &[
                ("offset", self.offset_json.clone()),
                ("scale", self.scale_json.clone()),
                ("dtype", Value::from(self.dtype.text.as_str())),
                ("astype", Value::from(self.astype.text.as_str())),
            ],
        )
    }

    fn hdf5(&self) -> Option<(u32, Vec<u32>)> {
        None
    }

    fn encode_into(&self, raw: &[u8], out: &mut Vec<u8>) -> Result<()> {
        let types = (&self.dtype, &self.astype);
        let (offset, scale) = (self.offset, self.scale);
        if self.dtype.kind == Kind::Float && self.dtype.size == 4 {
            let (offset, scale) = (offset as f32, scale as f32);
            numeric::recode_into(ID, raw, types, out, |x| {
                f64::from(((x as f32 - offset) * scale).round_ties_even())
            })
        } else {
            numeric::recode_into(ID, raw, types, out, |x| {
                ((x - offset) * scale).round_ties_even()
            })
        }
    }

    fn decode(&self, encoded: &[u8], limit: usize) -> Result<Vec<u8>> {
        let types = (&self.astype, &self.dtype);
        let (offset, scale) = (self.offset, self.scale);
        if self.astype.kind == Kind::Float && self.astype.size == 4 {
            let (offset, scale) = (offset as f32, scale as f32);
            numeric::recoded(ID, encoded, types, limit, |x| {
                f64::from(x as f32 / scale + offset)
            })
        } else {
            numeric::recoded(ID, encoded, types, limit, |x| x / scale + offset)
        }
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

    fn codec(offset: f64, scale: f64, dtype: &str, astype: &str) -> FixedScaleOffset {
        let cfg = params::config(
            ID,
            &[
                ("offset", Value::from(offset)),
                ("scale", Value::from(scale)),
                ("dtype", Value::from(dtype)),
                ("astype", Value::from(astype)),
            ],
        );
        FixedScaleOffset::from_config(&cfg).unwrap()
    }

    #[test]
    fn stores_scaled_integers_as_numcodecs_does() {
        // numcodecs' own example: linspace(1000, 1001, 10) with offset 1000, scale 10, as u1.
        let c = codec(1000.0, 10.0, "<f8", "|u1");
        let raw: Vec<u8> = (0..10)
            .map(|i| 1000.0 + f64::from(i) / 9.0)
            .flat_map(f64::to_le_bytes)
            .collect();
        let enc = c.encode(&raw).unwrap();
        assert_eq!(enc, [0, 1, 2, 3, 4, 6, 7, 8, 9, 10]);
        let dec = c.decode(&enc, raw.len()).unwrap();
        let back: Vec<f64> = dec
            .chunks(8)
            .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
            .collect();
        assert_eq!(back[4], 1000.4);
        assert_eq!(back[5], 1000.6);
        assert!(c.decode(&enc, raw.len() - 1).is_err());
        assert_eq!(c.encoded_elem_size(), Some(1));
        assert_eq!(FixedScaleOffset::from_config(&c.config()).unwrap(), c);
    }

    #[test]
    fn halves_round_to_even_and_big_endian_types_are_read_as_such() {
        let c = codec(0.0, 1.0, ">f4", ">i2");
        let raw: Vec<u8> = [0.5f32, 1.5, 2.5, -0.5]
            .iter()
            .flat_map(|x| x.to_be_bytes())
            .collect();
        let enc = c.encode(&raw).unwrap();
        let ints: Vec<i16> = enc
            .chunks(2)
            .map(|b| i16::from_be_bytes(b.try_into().unwrap()))
            .collect();
        assert_eq!(ints, [0, 2, 2, 0]);
    }

    #[test]
    fn float32_values_are_computed_in_float32_as_numpy_does() {
        // numcodecs stores [176, 24, 4]: (17.55f - 0) * 10f lands on the half in float32.
        let c = codec(0.0, 10.0, "<f4", "<i2");
        let raw: Vec<u8> = [17.55f32, 2.45, 0.35]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        assert_eq!(c.encode(&raw).unwrap(), [176, 0, 24, 0, 4, 0]);
        // Stored float32 values are decoded in float32, then widened.
        let c = codec(0.1, 3.0, "<f8", "<f4");
        let back = c.decode(&0f32.to_le_bytes(), 8).unwrap();
        assert_eq!(
            f64::from_le_bytes(back.try_into().unwrap()),
            f64::from(0.1f32)
        );
    }

    #[test]
    fn refuses_bad_configs() {
        let mut cfg = codec(1.0, 2.0, "<f8", "<i2").config();
        cfg.insert("scale".into(), Value::from(0));
        assert!(FixedScaleOffset::from_config(&cfg).is_err());
        cfg.insert("scale".into(), Value::from("10"));
        assert!(FixedScaleOffset::from_config(&cfg).is_err());
        cfg.insert("scale".into(), Value::from(10));
        cfg.insert("astype".into(), Value::from("<U2"));
        assert!(FixedScaleOffset::from_config(&cfg).is_err());
        let c = codec(1.0, 2.0, "<f8", "<i2");
        assert!(c.decode(&[1, 2, 3], 100).is_err());
    }
}
