//! netCDF's lossy quantization of floating-point values before storage (BitGroom,
//! Granular BitRound, BitRound), bit for bit as netcdf-c applies it when values are written.
//!
//! Values equal to the fill value, zeros and NaNs are never changed. BitGroom alternates
//! between shaving and setting the low bits by position in the written buffer, so the same
//! values written in another batching can differ in their last bits (as with netcdf-c).

use crate::error::{Error, Result};

/// A quantization algorithm with its precision parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantize {
    /// `nsd` significant decimal digits, alternately shaved and set.
    BitGroom(u32),
    /// `nsd` significant decimal digits, rounded with a per-value number of bits.
    GranularBitRound(u32),
    /// `nsb` significant bits, rounded.
    BitRound(u32),
}

const BITS_PER_DIGIT: f64 = std::f64::consts::LN_10 / std::f64::consts::LN_2;
const DIGITS_PER_BIT: f64 = std::f64::consts::LN_2 / std::f64::consts::LN_10;
const F32_EXPLICIT_BITS: i32 = 23;
const F64_EXPLICIT_BITS: i32 = 52;

impl Quantize {
    /// Checks the precision against what the element width allows (`double` = 8 bytes).
    pub fn validate(self, double: bool) -> Result<Quantize> {
        let (n, max, what) = match self {
            Quantize::BitGroom(n) | Quantize::GranularBitRound(n) => {
                (n, if double { 15 } else { 7 }, "significant digits")
            }
            Quantize::BitRound(n) => (n, if double { 52 } else { 23 }, "significant bits"),
        };
        if n == 0 || n > max {
            return Err(Error::Invalid(format!(
                "{n} {what} is outside 1..={max} for {}",
                if double { "double" } else { "float" }
            )));
        }
        Ok(self)
    }

    /// Bits to keep for the fixed-mask algorithms.
    fn fixed_bits(self) -> Option<i32> {
        match self {
            Quantize::BitGroom(nsd) => Some((f64::from(nsd) * BITS_PER_DIGIT).ceil() as i32 + 1),
            Quantize::BitRound(nsb) => Some(nsb as i32),
            Quantize::GranularBitRound(_) => None,
        }
    }
}

/// Bits Granular BitRound keeps for one value (netcdf-c's formula, including its final -1).
fn granular_bits(value: f64, nsd: u32) -> i32 {
    let (mnt, exp) = frexp(value);
    let mnt_fabs = mnt.abs();
    let mnt_log10 = mnt_fabs.log10();
    let digits = (f64::from(exp) * DIGITS_PER_BIT + mnt_log10).floor() as i32 + 1;
    let qnt_pwr = (BITS_PER_DIGIT * f64::from(digits - nsd as i32)).floor() as i32;
    let bits = if mnt_fabs == 0.0 {
        0
    } else {
        ((f64::from(exp) - BITS_PER_DIGIT * mnt_log10).floor() as i32 - qnt_pwr).unsigned_abs()
            as u16
    };
    i32::from(bits.wrapping_sub(1))
}

/// `frexp`: `value = mantissa * 2^exp` with `0.5 <= |mantissa| < 1`.
fn frexp(value: f64) -> (f64, i32) {
    if value == 0.0 || !value.is_finite() {
        return (value, 0);
    }
    let bits = value.to_bits();
    let raw_exp = ((bits >> 52) & 0x7ff) as i32;
    if raw_exp == 0 {
        let (m, e) = frexp(value * f64::from_bits(0x4350_0000_0000_0000)); // 2^54
        return (m, e - 54);
    }
    let m = f64::from_bits((bits & !(0x7ff << 52)) | (1022 << 52));
    (m, raw_exp - 1022)
}

/// Masks as netcdf-c computes them (shift counts wrap like the x86 shift instructions).
fn masks32(keep: i32) -> (u32, u32, u32) {
    let zero = u32::MAX.wrapping_shl((F32_EXPLICIT_BITS - keep) as u32);
    let one = !zero;
    (zero, one, one & (zero >> 1))
}

fn masks64(keep: i32) -> (u64, u64, u64) {
    let zero = u64::MAX.wrapping_shl((F64_EXPLICIT_BITS - keep) as u32);
    let one = !zero;
    (zero, one, one & (zero >> 1))
}

/// Quantizes native-order `f32` values in place, skipping `fill`.
pub fn apply_f32(q: Quantize, values: &mut [f32], fill: f32) {
    let skip = |v: f32| v == fill || v == 0.0 || v.is_nan();
    match q {
        Quantize::BitGroom(_) | Quantize::BitRound(_) => {
            let (zero, one, half) = masks32(q.fixed_bits().unwrap_or(0));
            for (i, v) in values.iter_mut().enumerate() {
                if skip(*v) {
                    continue;
                }
                let b = v.to_bits();
                *v = f32::from_bits(match q {
                    Quantize::BitGroom(_) if i % 2 == 0 => b & zero,
                    Quantize::BitGroom(_) => b | one,
                    _ => b.wrapping_add(half) & zero,
                });
            }
        }
        Quantize::GranularBitRound(nsd) => {
            for v in values.iter_mut() {
                let d = f64::from(*v);
                if d == f64::from(fill) || d == 0.0 || d.is_nan() {
                    continue;
                }
                let (zero, _, half) = masks32(granular_bits(d, nsd));
                *v = f32::from_bits(v.to_bits().wrapping_add(half) & zero);
            }
        }
    }
}

/// Quantizes native-order `f64` values in place, skipping `fill`.
pub fn apply_f64(q: Quantize, values: &mut [f64], fill: f64) {
    let skip = |v: f64| v == fill || v == 0.0 || v.is_nan();
    for (i, v) in values.iter_mut().enumerate() {
        if skip(*v) {
            continue;
        }
        let b = v.to_bits();
        let (zero, one, half) = match q {
            Quantize::GranularBitRound(nsd) => masks64(granular_bits(*v, nsd)),
            _ => masks64(q.fixed_bits().unwrap_or(0)),
        };
        *v = f64::from_bits(match q {
            Quantize::BitGroom(_) if i % 2 == 0 => b & zero,
            Quantize::BitGroom(_) => b | one,
            _ => b.wrapping_add(half) & zero,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frexp_matches_libm() {
        for v in [1.0, 0.75, -3.0, 1e-310, 6.02e23, f64::MIN_POSITIVE] {
            let (m, e) = frexp(v);
            assert!((0.5..1.0).contains(&m.abs()), "{v}");
            assert_eq!(m * 2f64.powi(e + 200) * 2f64.powi(-200), v);
        }
    }

    #[test]
    fn bitgroom_alternates_and_skips_fill() {
        let mut v = [std::f32::consts::PI; 4];
        v[3] = 9.96921e36;
        apply_f32(Quantize::BitGroom(3), &mut v, 9.96921e36);
        // 3 digits keep ceil(3*3.32)+1 = 11 explicit bits: shave 12, then set 12.
        assert_eq!(v[0].to_bits(), std::f32::consts::PI.to_bits() & !0xfff);
        assert_eq!(v[1].to_bits(), std::f32::consts::PI.to_bits() | 0xfff);
        assert_eq!(v[3], 9.96921e36);
        assert!((v[0] - std::f32::consts::PI).abs() < 1e-3);
    }

    #[test]
    fn bitround_rounds_to_nearest() {
        let mut v = [1.0f64 + 2f64.powi(-10), 0.0, f64::NAN];
        apply_f64(Quantize::BitRound(9), &mut v, -1.0);
        assert_eq!(v[0], 1.0 + 2f64.powi(-9));
        assert_eq!(v[1], 0.0);
        assert!(v[2].is_nan());
    }

    #[test]
    fn limits() {
        assert_eq!(
            Quantize::BitGroom(8)
                .validate(false)
                .unwrap_err()
                .to_string(),
            "invalid argument: 8 significant digits is outside 1..=7 for float"
        );
        assert!(Quantize::BitRound(52).validate(true).is_ok());
        assert!(Quantize::BitRound(0).validate(true).is_err());
    }
}
