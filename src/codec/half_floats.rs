//! Half-precision floats (numpy `f2`, Zarr v3 `float16`), which netCDF has no type for, served
//! as 32-bit floats: decoding widens each stored 16-bit float (exactly), encoding narrows each
//! 32-bit float to the nearest 16-bit one (IEEE rounding, a finite value past the largest an
//! infinity), as numpy's `astype("f2")` does; [`past_half_range`] tells the writer to report
//! those as netCDF reports values out of a type's range. The first codec of a chain (the last to decode), in no array's metadata:
//! the codecs after it see 2-byte elements. Knows nothing of variables or stores.

use super::{Codec, Config, failed, past_limit};
use crate::error::Result;
use half::f16;
use half::slice::HalfFloatSliceExt;
use serde_json::Value;

const ID: &str = "float16";

/// 16-bit floats stored in `big_endian` or little-endian order, as native 32-bit floats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HalfFloats {
    pub big_endian: bool,
}

/// Values converted per round (what fits a small stack buffer).
const ROUND: usize = 256;

impl HalfFloats {
    /// Widens the 16-bit floats of `stored` into `out` (4 bytes each, native order).
    fn widen(&self, stored: &[u8], out: &mut [u8]) {
        let mut halves = [f16::ZERO; ROUND];
        let mut singles = [0f32; ROUND];
        for (from, to) in stored.chunks(2 * ROUND).zip(out.chunks_mut(4 * ROUND)) {
            let n = from.len() / 2;
            for (h, b) in halves.iter_mut().zip(from.chunks_exact(2)) {
                let bits = [b[0], b[1]];
                *h = f16::from_bits(if self.big_endian {
                    u16::from_be_bytes(bits)
                } else {
                    u16::from_le_bytes(bits)
                });
            }
            halves[..n].convert_to_f32_slice(&mut singles[..n]);
            for (s, b) in singles[..n].iter().zip(to.chunks_exact_mut(4)) {
                b.copy_from_slice(&s.to_ne_bytes());
            }
        }
    }
}

/// True when some of `floats` (native 32-bit floats) is finite but rounds past the largest
/// 16-bit float (65504), becoming an infinity.
pub fn past_half_range(floats: &[u8]) -> bool {
    floats.chunks_exact(4).any(|b| {
        let v = f32::from_ne_bytes([b[0], b[1], b[2], b[3]]);
        v.is_finite() && f16::from_f32(v).is_infinite()
    })
}

impl Codec for HalfFloats {
    fn id(&self) -> &'static str {
        ID
    }

    fn config(&self) -> Config {
        let mut cfg = Config::new();
        cfg.insert("id".into(), Value::from(ID));
        cfg
    }

    fn hdf5(&self) -> Option<(u32, Vec<u32>)> {
        None
    }

    fn encode_into(&self, raw: &[u8], out: &mut Vec<u8>) -> Result<()> {
        if !raw.len().is_multiple_of(4) {
            return Err(failed(
                ID,
                format!("{} bytes are no whole floats", raw.len()),
            ));
        }
        out.clear();
        out.reserve(raw.len() / 2);
        let mut singles = [0f32; ROUND];
        let mut halves = [f16::ZERO; ROUND];
        for block in raw.chunks(4 * ROUND) {
            let n = block.len() / 4;
            for (s, b) in singles.iter_mut().zip(block.chunks_exact(4)) {
                *s = f32::from_ne_bytes([b[0], b[1], b[2], b[3]]);
            }
            halves[..n].convert_from_f32_slice(&singles[..n]);
            for h in &halves[..n] {
                out.extend_from_slice(&if self.big_endian {
                    h.to_bits().to_be_bytes()
                } else {
                    h.to_bits().to_le_bytes()
                });
            }
        }
        Ok(())
    }

    fn decode(&self, encoded: &[u8], limit: usize) -> Result<Vec<u8>> {
        let size = encoded.len().saturating_mul(2);
        if size > limit {
            return Err(past_limit(
                ID,
                format!("{size} bytes of floats, more than the expected {limit}"),
            ));
        }
        let mut out = vec![0u8; size];
        self.decode_into(encoded, &mut out)?;
        Ok(out)
    }

    fn decode_into(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize> {
        if !encoded.len().is_multiple_of(2) {
            return Err(failed(
                ID,
                format!("{} bytes are no whole 16-bit floats", encoded.len()),
            ));
        }
        let size = encoded.len().saturating_mul(2);
        if size > out.len() {
            return Err(past_limit(
                ID,
                format!(
                    "{size} bytes of floats, more than the expected {}",
                    out.len()
                ),
            ));
        }
        self.widen(encoded, &mut out[..size]);
        Ok(size)
    }

    fn writes_in_place(&self) -> bool {
        true
    }

    fn decodes_at_copy_speed(&self) -> bool {
        true
    }

    fn encoded_len(&self, n: usize) -> Option<usize> {
        Some(n / 2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn singles(bytes: &[u8]) -> Vec<f32> {
        bytes
            .chunks_exact(4)
            .map(|b| f32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
            .collect()
    }

    #[test]
    fn widens_exactly_and_narrows_to_the_nearest_in_either_order() {
        // 1.0, -2.5, 65504 (the largest), 2^-24 (the smallest subnormal), +inf, NaN.
        let bits: [u16; 6] = [0x3c00, 0xc100, 0x7bff, 0x0001, 0x7c00, 0x7e00];
        for big_endian in [false, true] {
            let codec = HalfFloats { big_endian };
            let stored: Vec<u8> = bits
                .iter()
                .flat_map(|b| {
                    if big_endian {
                        b.to_be_bytes()
                    } else {
                        b.to_le_bytes()
                    }
                })
                .collect();
            let wide = codec.decode(&stored, 24).unwrap();
            let values = singles(&wide);
            assert_eq!(
                values[..5],
                [1.0, -2.5, 65504.0, 2f32.powi(-24), f32::INFINITY]
            );
            assert!(values[5].is_nan());
            assert_eq!(codec.encode(&wide).unwrap(), stored, "{big_endian}");
        }
        let codec = HalfFloats { big_endian: false };
        let narrowed = codec
            .encode(
                &[1.0009766f32, 65519.0, f32::NEG_INFINITY, 0.1]
                    .map(f32::to_ne_bytes)
                    .concat(),
            )
            .unwrap();
        let back = singles(&codec.decode(&narrowed, 16).unwrap());
        assert_eq!(back, [1.0009766, 65504.0, f32::NEG_INFINITY, 0.099975586]);
        let past = [1.0f32, 65520.0].map(f32::to_ne_bytes).concat();
        assert!(past_half_range(&past));
        let inside = [65519.0f32, f32::INFINITY, f32::NAN]
            .map(f32::to_ne_bytes)
            .concat();
        assert!(!past_half_range(&inside));
        let back = singles(&codec.decode(&codec.encode(&past).unwrap(), 8).unwrap());
        assert_eq!(back, [1.0, f32::INFINITY]);
    }

    #[test]
    fn damaged_input_and_small_limits_are_errors() {
        let codec = HalfFloats { big_endian: false };
        assert!(codec.decode(&[0, 60, 0], 100).is_err());
        assert!(codec.decode(&[0, 60, 0, 60], 7).is_err());
        assert!(codec.encode(&[0, 0, 128]).is_err());
        let mut out = [0u8; 4];
        assert!(codec.decode_into(&[0, 60, 0, 60], &mut out).is_err());
    }
}
