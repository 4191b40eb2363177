//! Conversion between netCDF atomic types, with netCDF-4's `NC_ERANGE` rules.
//!
//! Owns what happens to each value when the memory type of a get or put differs from the
//! variable's type: the value written, and whether the call reports a range error. Works on
//! native-endian byte slices and knows nothing of variables, chunks or C; strings are not
//! converted here.
//!
//! The rules are netcdf-c's netCDF-4 layer (`nc4_convert_type`, plus the classic-model
//! byte/ubyte exemption applied by its get and put paths), checked against libnetcdf 4.9.0
//! by `c_tests/convert_oracle.c`, whose output is `tests/data/convert_oracle.txt`:
//!
//! - Every value is converted and written, in range or not; the call then fails with
//!   [`Error::Range`] if any value was out of range.
//! - Integer to integer: out of range exactly when the value is not representable in the
//!   destination (so byte -1 read as ubyte is a range error). The value written is the C
//!   cast, i.e. two's-complement wrapping (-1 -> 255).
//! - Integer to float or double: never a range error; rounds to nearest.
//! - Double to float: a range error when the value lies beyond `±FLT_MAX` (including the
//!   infinities; NaN is not); rounds to nearest, so 3.4028235e38 becomes `FLT_MAX` and still
//!   reports the error.
//! - Float or double to integer: a range error when `v > MAX || v < MIN`, compared as
//!   netcdf-c does (in double, except that a float is compared in float with the limits of
//!   ubyte, ushort, uint, int64 and uint64). NaN compares false, so it is never a range
//!   error; fractions are truncated, so -0.5 -> ubyte is a range error that writes 0, and
//!   255.5 -> ubyte is one that writes 255. Limits that round up in the comparison type let
//!   a few values through: float 2^32 -> uint, float or double 2^63 -> int64 and float or
//!   double 2^64 -> uint64 are not range errors (float 2^31 -> int is one).
//! - Float or double to integer out of range (and NaN) is undefined in C; we reproduce what
//!   netcdf-c built by gcc for x86-64 writes, on every platform: destinations up to 16 bits
//!   and int truncate to a 32-bit integer first (`cvttsd2si`, which yields `INT_MIN` when the
//!   value does not fit) and keep the low bits, so 300.0 -> byte is 44 and 1e10 -> short is 0;
//!   uint, int64 and uint64 go through a signed 64-bit integer the same way (`INT64_MIN`
//!   when it does not fit), so -1.0 -> uint is 4294967295 and NaN -> uint64 is 2^63. netcdf-c
//!   stores float and double -> uint64 through a signed 64-bit integer, so every value from
//!   2^63 up, in range or not, becomes 2^63.
//! - In a classic-model dataset byte <-> ubyte is never a range error.
//! - char converts only to char; char <-> number is [`Error::Char`] and writes nothing.

use crate::error::{Error, Result};
use crate::model::NcType;

/// Converts `src`, an array of `src_ty` values, into `dst`, an array of `dst_ty` values,
/// with the rules of a netCDF-4 (not classic-model) dataset.
///
/// Both buffers are native-endian and hold the same number of elements. Every element is
/// converted even when some are out of range; the call then returns [`Error::Range`].
/// char <-> numeric is [`Error::Char`] and leaves `dst` untouched; string types and buffers
/// whose lengths do not match are [`Error::Invalid`].
pub fn convert(src_ty: NcType, src: &[u8], dst_ty: NcType, dst: &mut [u8]) -> Result<()> {
    convert_in_model(src_ty, src, dst_ty, dst, false)
}

/// [`convert_in_model`] that reports out-of-range values as `true` rather than as an error: every
/// value is converted all the same, and the caller answers `NC_ERANGE` after finishing its work,
/// as netCDF does.
pub fn convert_flagging_range(
    src_ty: NcType,
    src: &[u8],
    dst_ty: NcType,
    dst: &mut [u8],
    classic_model: bool,
) -> Result<bool> {
    match convert_in_model(src_ty, src, dst_ty, dst, classic_model) {
        Ok(()) => Ok(false),
        Err(Error::Range) => Ok(true),
        Err(e) => Err(e),
    }
}

/// [`convert`] for a dataset that is, or is not, in the classic model (`NC_CLASSIC_MODEL`).
///
/// The classic model differs in one rule: byte <-> ubyte never reports a range error (the
/// values are still cast, -1 <-> 255).
pub fn convert_in_model(
    src_ty: NcType,
    src: &[u8],
    dst_ty: NcType,
    dst: &mut [u8],
    classic_model: bool,
) -> Result<()> {
    if src_ty == NcType::String || dst_ty == NcType::String {
        return Err(Error::Invalid(format!(
            "no conversion {} -> {}: strings are not converted",
            src_ty.name(),
            dst_ty.name()
        )));
    }
    if (src_ty == NcType::Char) != (dst_ty == NcType::Char) {
        return Err(Error::Char);
    }
    let (ssize, dsize) = (src_ty.size(), dst_ty.size());
    if !src.len().is_multiple_of(ssize)
        || !dst.len().is_multiple_of(dsize)
        || src.len() / ssize != dst.len() / dsize
    {
        return Err(Error::Invalid(format!(
            "conversion {} -> {} of {} bytes into {} bytes: element counts differ",
            src_ty.name(),
            dst_ty.name(),
            src.len(),
            dst.len()
        )));
    }
    if src_ty == dst_ty {
        dst.copy_from_slice(src);
        return Ok(());
    }
    let out_of_range = convert_numeric(src_ty, src, dst_ty, dst).ok_or_else(|| {
        Error::Internal(format!("no numeric conversion {src_ty:?} -> {dst_ty:?}"))
    })?;
    let exempt = classic_model
        && matches!(
            (src_ty, dst_ty),
            (NcType::Byte, NcType::UByte) | (NcType::UByte, NcType::Byte)
        );
    if out_of_range && !exempt {
        Err(Error::Range)
    } else {
        Ok(())
    }
}

/// Reverses the byte order of every `esize`-byte element of `buf`, in place (big- <->
/// little-endian). A no-op for `esize` 0 or 1; any trailing partial element is left as is.
pub fn swap_bytes_in_place(buf: &mut [u8], esize: usize) {
    debug_assert!(
        esize == 0 || buf.len().is_multiple_of(esize),
        "partial element"
    );
    match esize {
        0 | 1 => {}
        2 => {
            for e in buf.chunks_exact_mut(2) {
                let v = u16::from_ne_bytes([e[0], e[1]]).swap_bytes();
                e.copy_from_slice(&v.to_ne_bytes());
            }
        }
        4 => {
            for e in buf.chunks_exact_mut(4) {
                let v = u32::from_ne_bytes([e[0], e[1], e[2], e[3]]).swap_bytes();
                e.copy_from_slice(&v.to_ne_bytes());
            }
        }
        8 => {
            for e in buf.chunks_exact_mut(8) {
                let v = u64::from_ne_bytes([e[0], e[1], e[2], e[3], e[4], e[5], e[6], e[7]])
                    .swap_bytes();
                e.copy_from_slice(&v.to_ne_bytes());
            }
        }
        _ => buf.chunks_exact_mut(esize).for_each(<[u8]>::reverse),
    }
}

/// Dispatches a pair of numeric types to the monomorphised loop for their Rust types.
/// Evaluates to `Some(out_of_range)`, or `None` if either type is not in the list.
macro_rules! numeric_matrix {
    ($sty:expr, $dty:expr, $src:expr, $dst:expr, $types:tt) => {
        numeric_matrix!(@rows $sty, $dty, $src, $dst, $types, $types)
    };
    (@rows $sty:expr, $dty:expr, $src:expr, $dst:expr,
     [$($name:ident: $t:ty),*], $types:tt) => {
        match $sty {
            $(NcType::$name => numeric_matrix!(@cols $t, $dty, $src, $dst, $types),)*
            _ => None,
        }
    };
    (@cols $s:ty, $dty:expr, $src:expr, $dst:expr, [$($name:ident: $t:ty),*]) => {
        match $dty {
            $(NcType::$name => Some(convert_slice::<$s, $t>($src, $dst)),)*
            _ => None,
        }
    };
}

/// Converts between two numeric types: `Some(out_of_range)`, or `None` for char or string.
fn convert_numeric(src_ty: NcType, src: &[u8], dst_ty: NcType, dst: &mut [u8]) -> Option<bool> {
    numeric_matrix!(
        src_ty, dst_ty, src, dst,
        [Byte: i8, Short: i16, Int: i32, Float: f32, Double: f64,
         UByte: u8, UShort: u16, UInt: u32, Int64: i64, UInt64: u64]
    )
}

/// Converts element by element; true if any value was out of range.
#[inline(always)]
fn convert_slice<S: Elem + Cast<D>, D: Elem>(src: &[u8], dst: &mut [u8]) -> bool {
    let mut out_of_range = false;
    for (s, d) in src.chunks_exact(S::SIZE).zip(dst.chunks_exact_mut(D::SIZE)) {
        let (v, bad) = S::load(s).cast();
        out_of_range |= bad;
        v.store(d);
    }
    out_of_range
}

/// A numeric type read from and written to native-endian bytes.
trait Elem: Copy {
    const SIZE: usize;
    /// Reads one value; `b` is exactly `SIZE` bytes.
    fn load(b: &[u8]) -> Self;
    /// Writes one value; `b` is exactly `SIZE` bytes.
    fn store(self, b: &mut [u8]);
}

macro_rules! impl_elem {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            #[inline(always)]
            fn load(b: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(b);
                <$t>::from_ne_bytes(a)
            }
            #[inline(always)]
            fn store(self, b: &mut [u8]) {
                b.copy_from_slice(&self.to_ne_bytes());
            }
        }
    )*};
}
impl_elem!(i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);

/// One value converted to `D`, and whether netCDF calls it out of range.
trait Cast<D> {
    fn cast(self) -> (D, bool);
}

/// Integer to integer: the C cast (two's-complement wrap); out of range when the value is
/// not representable.
macro_rules! impl_int_to_int {
    ([$($s:ty),*], $dsts:tt) => { $(impl_int_to_int!(@one $s, $dsts);)* };
    (@one $s:ty, [$($d:ty),*]) => {$(
        impl Cast<$d> for $s {
            #[inline(always)]
            fn cast(self) -> ($d, bool) {
                (self as $d, <$d>::try_from(self).is_err())
            }
        }
    )*};
}
impl_int_to_int!(
    [i8, i16, i32, i64, u8, u16, u32, u64],
    [i8, i16, i32, i64, u8, u16, u32, u64]
);

/// Integer to floating point: rounds to nearest, never out of range.
macro_rules! impl_int_to_float {
    ([$($s:ty),*], $dsts:tt) => { $(impl_int_to_float!(@one $s, $dsts);)* };
    (@one $s:ty, [$($d:ty),*]) => {$(
        impl Cast<$d> for $s {
            #[inline(always)]
            fn cast(self) -> ($d, bool) {
                (self as $d, false)
            }
        }
    )*};
}
impl_int_to_float!([i8, i16, i32, i64, u8, u16, u32, u64], [f32, f64]);

/// Floating point to integer: out of range when `v > MAX || v < MIN`, compared in type `$c`;
/// the value is the x86-64 truncation `$via` (see [`TruncX86`]) cast to the destination.
macro_rules! impl_float_to_int {
    ($s:ty as $c:ty, $via:ident, [$($d:ty),*]) => {$(
        impl Cast<$d> for $s {
            #[inline(always)]
            fn cast(self) -> ($d, bool) {
                let v = self as $c;
                let bad = v > <$d>::MAX as $c || v < <$d>::MIN as $c;
                (self.$via() as $d, bad)
            }
        }
    )*};
}
// netcdf-c compares a float against the limits of byte, short and int widened to double and
// against the others converted to float, which rounds 2^32-1, 2^63-1 and 2^64-1 up (so
// float 2^32 -> uint is in range while float 2^31 -> int is not). The limits of byte and
// short are exact in float, so comparing those in float is the same. gcc converts to types
// up to 32 bits wide, except uint, through a 32-bit integer and to the rest through a
// 64-bit one; netcdf-c stores float and double -> uint64 through a signed 64-bit integer.
impl_float_to_int!(f32 as f32, trunc_i32_x86, [i8, i16, u8, u16]);
impl_float_to_int!(f32 as f64, trunc_i32_x86, [i32]);
impl_float_to_int!(f32 as f32, trunc_i64_x86, [u32, i64, u64]);
impl_float_to_int!(f64 as f64, trunc_i32_x86, [i8, i16, i32, u8, u16]);
impl_float_to_int!(f64 as f64, trunc_i64_x86, [u32, i64, u64]);

impl Cast<f32> for f32 {
    #[inline(always)]
    fn cast(self) -> (f32, bool) {
        (self, false)
    }
}

impl Cast<f64> for f64 {
    #[inline(always)]
    fn cast(self) -> (f64, bool) {
        (self, false)
    }
}

impl Cast<f64> for f32 {
    #[inline(always)]
    fn cast(self) -> (f64, bool) {
        (f64::from(self), false)
    }
}

impl Cast<f32> for f64 {
    /// Rounds to nearest; out of range beyond `±FLT_MAX` (NaN is not).
    #[inline(always)]
    fn cast(self) -> (f32, bool) {
        let max = f64::from(f32::MAX);
        (self as f32, self > max || self < -max)
    }
}

/// Float to integer conversion as `cvttss2si`/`cvttsd2si` (what gcc emits for x86-64)
/// performs it, including where C leaves the result undefined (out of range, infinite, NaN):
/// truncation toward zero, or the integer type's minimum when that does not fit.
trait TruncX86: Copy {
    /// Truncation to a 32-bit integer, `i32::MIN` when it does not fit.
    fn trunc_i32_x86(self) -> i32;
    /// Truncation to a 64-bit integer, `i64::MIN` when it does not fit.
    fn trunc_i64_x86(self) -> i64;
}

macro_rules! impl_trunc_x86 {
    ($($f:ty),*) => {$(
        impl TruncX86 for $f {
            #[inline(always)]
            fn trunc_i32_x86(self) -> i32 {
                if (-2_147_483_648.0..2_147_483_648.0).contains(&self) {
                    self as i32
                } else {
                    i32::MIN
                }
            }
            #[inline(always)]
            fn trunc_i64_x86(self) -> i64 {
                if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&self) {
                    self as i64
                } else {
                    i64::MIN
                }
            }
        }
    )*};
}
impl_trunc_x86!(f32, f64);

#[cfg(test)]
mod tests;
