//! Unit tests for `api::convert`: a model of the netCDF rules checked over every pair of
//! the eleven non-string types, hand-checked corner cases, and the buffer rules.
//!
//! What libnetcdf 4.9.0 (Debian, gcc, x86-64) does in the corner cases, as recorded by
//! `c_tests/convert_oracle.c` (the full matrix is checked line by line in
//! `tests/convert_oracle.rs`):
//! - byte -1 read as ubyte/ushort/uint/uint64 gives 255/65535/2^32-1/2^64-1 and NC_ERANGE;
//!   ubyte 255 read as byte gives -1 and NC_ERANGE. In a classic-model file both directions
//!   (get and put) return NC_NOERR with the same values.
//! - NaN read as any integer type is never NC_ERANGE; it gives 0 for byte, short, ubyte,
//!   ushort and uint, INT_MIN for int, INT64_MIN for int64 and 2^63 for uint64.
//! - float 300 -> byte gives 44, 255.5 -> byte gives -1 (both NC_ERANGE); 1e10 -> short
//!   gives 0, -> int INT_MIN, -> uint 1410065408 (all NC_ERANGE).
//! - -0.5 -> ubyte gives 0 with NC_ERANGE; 255.5 -> ubyte gives 255 with NC_ERANGE.
//! - float 2^31 -> int is NC_ERANGE (INT_MIN), float 2^32 -> uint is not (0), float or
//!   double 2^63 -> int64 is not (INT64_MIN), 2^64 -> uint64 is not (2^63).
//! - double -> float: inf and 3.4028235e38 (just above FLT_MAX, rounds to it) are NC_ERANGE,
//!   FLT_MAX itself and NaN are not; 3.4028235677973366e38 becomes inf.

use super::*;

/// A value of any numeric type, held exactly.
#[derive(Debug, Clone, Copy)]
enum V {
    I(i128),
    F(f64),
}

const NUMERIC: [NcType; 10] = [
    NcType::Byte,
    NcType::Short,
    NcType::Int,
    NcType::Float,
    NcType::Double,
    NcType::UByte,
    NcType::UShort,
    NcType::UInt,
    NcType::Int64,
    NcType::UInt64,
];

/// Inclusive limits of an integer type.
fn limits(ty: NcType) -> (i128, i128) {
    match ty {
        NcType::Byte => (i8::MIN.into(), i8::MAX.into()),
        NcType::UByte => (0, u8::MAX.into()),
        NcType::Short => (i16::MIN.into(), i16::MAX.into()),
        NcType::UShort => (0, u16::MAX.into()),
        NcType::Int => (i32::MIN.into(), i32::MAX.into()),
        NcType::UInt => (0, u32::MAX.into()),
        NcType::Int64 => (i64::MIN.into(), i64::MAX.into()),
        NcType::UInt64 => (0, u64::MAX.into()),
        _ => panic!("not an integer type: {ty:?}"),
    }
}

/// Native-endian bytes of `v` as a `ty` value; integers are wrapped to the type's width.
fn encode(ty: NcType, v: V) -> Vec<u8> {
    match (ty, v) {
        (NcType::Float, V::F(x)) => (x as f32).to_ne_bytes().to_vec(),
        (NcType::Float, V::I(i)) => (i as f32).to_ne_bytes().to_vec(),
        (NcType::Double, V::F(x)) => x.to_ne_bytes().to_vec(),
        (NcType::Double, V::I(i)) => (i as f64).to_ne_bytes().to_vec(),
        (_, V::I(i)) => {
            let bits = 8 * ty.size() as u32;
            let wrapped = (i as u128) & (u128::MAX >> (128 - bits));
            let signed = limits(ty).0 < 0 && wrapped >> (bits - 1) == 1;
            let v = if signed {
                wrapped as i128 - (1i128 << bits)
            } else {
                wrapped as i128
            };
            match ty {
                NcType::Byte => (v as i8).to_ne_bytes().to_vec(),
                NcType::UByte => (v as u8).to_ne_bytes().to_vec(),
                NcType::Short => (v as i16).to_ne_bytes().to_vec(),
                NcType::UShort => (v as u16).to_ne_bytes().to_vec(),
                NcType::Int => (v as i32).to_ne_bytes().to_vec(),
                NcType::UInt => (v as u32).to_ne_bytes().to_vec(),
                NcType::Int64 => (v as i64).to_ne_bytes().to_vec(),
                _ => (v as u64).to_ne_bytes().to_vec(),
            }
        }
        _ => panic!("cannot encode {v:?} as {ty:?}"),
    }
}

/// Representative values of a type: min, max, 0, +-1, and for floats fractions, large
/// values, the infinities and NaN.
fn samples(ty: NcType) -> Vec<V> {
    if ty.is_float() {
        let max = if ty == NcType::Float {
            f64::from(f32::MAX)
        } else {
            f64::MAX
        };
        [
            -max, -1e10, -128.5, -1.5, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 1.5, 2.5, 127.5, 255.0,
            255.5, 300.0, 65535.5, 70000.0, 1e10, 1e20, max,
        ]
        .into_iter()
        .chain([f64::INFINITY, f64::NEG_INFINITY, f64::NAN])
        .map(|x| {
            V::F(if ty == NcType::Float {
                x as f32 as f64
            } else {
                x
            })
        })
        .collect()
    } else {
        let (lo, hi) = limits(ty);
        let mut v = vec![lo, lo + 1, 0, 1, 100, 255, 256, hi - 1, hi];
        if lo < 0 {
            v.push(-1);
        }
        v.into_iter()
            .filter(|x| (lo..=hi).contains(x))
            .map(V::I)
            .collect()
    }
}

/// What netCDF-4 writes and reports for one value, from the rules in exact arithmetic:
/// `(expected bytes, or None where the value is the platform-specific cast checked by the
/// oracle test; range error)`.
fn model(src_ty: NcType, v: V, dst_ty: NcType) -> (Option<Vec<u8>>, bool) {
    match (v, dst_ty.is_float()) {
        (V::I(i), false) => {
            let (lo, hi) = limits(dst_ty);
            (Some(encode(dst_ty, v)), i < lo || i > hi)
        }
        (V::I(_), true) => (Some(encode(dst_ty, v)), false),
        (V::F(x), true) => {
            let max = f64::from(f32::MAX);
            let range = src_ty == NcType::Double && dst_ty == NcType::Float && x.abs() > max;
            (Some(encode(dst_ty, v)), range && !x.is_nan())
        }
        (V::F(x), false) => {
            let (lo, hi) = limits(dst_ty);
            // netcdf-c compares a float against the limits of ubyte, ushort, uint, int64
            // and uint64 converted to float, which rounds 2^32-1, 2^63-1 and 2^64-1 up.
            let as_float = src_ty == NcType::Float
                && !matches!(dst_ty, NcType::Byte | NcType::Short | NcType::Int);
            let hi_cmp = if as_float {
                f64::from(hi as f32)
            } else {
                hi as f64
            };
            let range = x > hi_cmp || x < lo as f64;
            let t = x.trunc();
            let fits = t >= lo as f64 && t <= hi as f64 && t.abs() < 9.2e18;
            (fits.then(|| encode(dst_ty, V::I(t as i128))), range)
        }
    }
}

/// Runs one conversion: `(result, bytes written)`.
fn run(src_ty: NcType, v: V, dst_ty: NcType, classic: bool) -> (Result<()>, Vec<u8>) {
    let src = encode(src_ty, v);
    let mut dst = vec![0xA5; dst_ty.size()];
    let r = convert_in_model(src_ty, &src, dst_ty, &mut dst, classic);
    (r, dst)
}

#[test]
fn every_numeric_pair_follows_the_netcdf4_rules() {
    let mut checked = 0;
    for src_ty in NUMERIC {
        for dst_ty in NUMERIC {
            for v in samples(src_ty) {
                let (expected, range) = model(src_ty, v, dst_ty);
                let (r, got) = run(src_ty, v, dst_ty, false);
                let what = format!("{src_ty:?} {v:?} -> {dst_ty:?}");
                match r {
                    Ok(()) => assert!(!range, "{what}: expected range error"),
                    Err(Error::Range) => assert!(range, "{what}: unexpected range error"),
                    Err(e) => panic!("{what}: {e}"),
                }
                if let Some(expected) = expected {
                    let nan = matches!(v, V::F(x) if x.is_nan()) && dst_ty.is_float();
                    if !nan {
                        assert_eq!(got, expected, "{what}");
                    }
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 1000, "{checked}");
}

#[test]
fn char_converts_only_to_char() {
    let text = b"abc\0\xff";
    let mut out = [0u8; 5];
    convert(NcType::Char, text, NcType::Char, &mut out).unwrap();
    assert_eq!(&out, text);
    for ty in NUMERIC {
        let mut dst = vec![7u8; 3 * ty.size()];
        let r = convert(NcType::Char, b"abc", ty, &mut dst);
        assert!(matches!(r, Err(Error::Char)), "char -> {ty:?}: {r:?}");
        assert!(dst.iter().all(|&b| b == 7), "char -> {ty:?} wrote");
        let src = vec![0u8; 3 * ty.size()];
        let mut chars = [7u8; 3];
        let r = convert(ty, &src, NcType::Char, &mut chars);
        assert!(matches!(r, Err(Error::Char)), "{ty:?} -> char: {r:?}");
        assert_eq!(chars, [7; 3], "{ty:?} -> char wrote");
    }
}

#[test]
fn the_eleven_by_eleven_matrix_has_no_gaps() {
    let types: Vec<NcType> = NcType::ALL
        .into_iter()
        .filter(|&t| t != NcType::String)
        .collect();
    assert_eq!(types.len(), 11);
    for &s in &types {
        for &d in &types {
            let src = vec![1u8; 4 * s.size()];
            let mut dst = vec![0u8; 4 * d.size()];
            let r = convert(s, &src, d, &mut dst);
            let char_mix = (s == NcType::Char) != (d == NcType::Char);
            match r {
                Ok(()) => assert!(!char_mix, "{s:?} -> {d:?}"),
                Err(Error::Char) => assert!(char_mix, "{s:?} -> {d:?}"),
                Err(Error::Range) => assert!(!char_mix, "{s:?} -> {d:?}"),
                Err(e) => panic!("{s:?} -> {d:?}: {e}"),
            }
        }
    }
}

/// Hand-checked values, each confirmed against libnetcdf 4.9.0 (see the module doc).
#[test]
fn corner_cases_match_netcdf_c() {
    use NcType::*;
    let nan = f64::NAN;
    #[rustfmt::skip]
    let rows: &[(NcType, V, NcType, V, bool)] = &[
        (Byte, V::I(-1), UByte, V::I(255), true),
        (Byte, V::I(-1), UInt64, V::I(u64::MAX.into()), true),
        (Byte, V::I(-128), UShort, V::I(65408), true),
        (UByte, V::I(255), Byte, V::I(-1), true),
        (UByte, V::I(127), Byte, V::I(127), false),
        (Short, V::I(-129), Byte, V::I(127), true),
        (UShort, V::I(32768), Short, V::I(-32768), true),
        (Int, V::I(65536), UShort, V::I(0), true),
        (UInt, V::I(2147483648), Int, V::I(i32::MIN.into()), true),
        (Int64, V::I(-1), UInt64, V::I(u64::MAX.into()), true),
        (UInt64, V::I(1 << 63), Int64, V::I(i64::MIN.into()), true),
        (UInt64, V::I(u64::MAX.into()), Float, V::F(18446744073709551616.0), false),
        (Int, V::I(16777217), Float, V::F(16777216.0), false),
        (Float, V::F(300.0), Byte, V::I(44), true),
        (Float, V::F(255.5), Byte, V::I(-1), true),
        (Float, V::F(255.5), UByte, V::I(255), true),
        (Float, V::F(-0.5), UByte, V::I(0), true),
        (Float, V::F(-0.5), Byte, V::I(0), false),
        (Float, V::F(-1.0), UInt, V::I(u32::MAX.into()), true),
        (Float, V::F(1e10), Short, V::I(0), true),
        (Float, V::F(1e10), Int, V::I(i32::MIN.into()), true),
        (Float, V::F(1e10), UInt, V::I(1410065408), true),
        (Float, V::F(2147483648.0), Int, V::I(i32::MIN.into()), true),
        (Float, V::F(4294967296.0), UInt, V::I(0), false),
        (Float, V::F(9223372036854775808.0), Int64, V::I(i64::MIN.into()), false),
        (Float, V::F(18446744073709551616.0), UInt64, V::I(1 << 63), false),
        (Float, V::F(18446742974197923840.0), UInt64, V::I(1 << 63), false),
        (Float, V::F(nan), Byte, V::I(0), false),
        (Float, V::F(nan), Int, V::I(i32::MIN.into()), false),
        (Float, V::F(nan), UInt, V::I(0), false),
        (Float, V::F(nan), Int64, V::I(i64::MIN.into()), false),
        (Float, V::F(nan), UInt64, V::I(1 << 63), false),
        (Double, V::F(f64::INFINITY), UInt64, V::I(1 << 63), true),
        (Double, V::F(f64::NEG_INFINITY), Short, V::I(0), true),
        (Double, V::F(4294967295.5), UInt, V::I(u32::MAX.into()), true),
        (Double, V::F(4294967296.0), UInt, V::I(0), true),
        (Double, V::F(-2147483648.5), Int, V::I(i32::MIN.into()), true),
        (Double, V::F(9223372036854775808.0), Int64, V::I(i64::MIN.into()), false),
        (Double, V::F(-9223372036854775808.0), UInt64, V::I(1 << 63), true),
        (Double, V::F(0.1), Float, V::F(f64::from(0.1f32)), false),
        (Double, V::F(f64::from(f32::MAX)), Float, V::F(f64::from(f32::MAX)), false),
        (Double, V::F(3.4028235e38), Float, V::F(f64::from(f32::MAX)), true),
        (Double, V::F(3.4028235677973366e38), Float, V::F(f64::INFINITY), true),
        (Double, V::F(f64::INFINITY), Float, V::F(f64::INFINITY), true),
        (Double, V::F(1e-320), Float, V::F(0.0), false),
    ];
    for &(src_ty, v, dst_ty, expected, range) in rows {
        let (r, got) = run(src_ty, v, dst_ty, false);
        let what = format!("{src_ty:?} {v:?} -> {dst_ty:?}");
        assert_eq!(matches!(r, Err(Error::Range)), range, "{what}: {r:?}");
        assert!(range || r.is_ok(), "{what}: {r:?}");
        assert_eq!(got, encode(dst_ty, expected), "{what}");
    }
    let (r, got) = run(Double, V::F(nan), Float, false);
    assert!(r.is_ok());
    assert!(f32::from_ne_bytes(got.try_into().unwrap()).is_nan());
}

#[test]
fn classic_model_exempts_byte_and_ubyte_only() {
    for (s, v, d, expected) in [
        (NcType::Byte, -1, NcType::UByte, 255),
        (NcType::Byte, -128, NcType::UByte, 128),
        (NcType::UByte, 255, NcType::Byte, -1),
        (NcType::UByte, 128, NcType::Byte, -128),
    ] {
        let (r, got) = run(s, V::I(v), d, true);
        assert!(r.is_ok(), "classic {s:?} {v} -> {d:?}: {r:?}");
        assert_eq!(got, encode(d, V::I(expected)));
        let (r, got) = run(s, V::I(v), d, false);
        assert!(matches!(r, Err(Error::Range)), "{s:?} {v} -> {d:?}: {r:?}");
        assert_eq!(got, encode(d, V::I(expected)));
    }
    let (r, _) = run(NcType::Byte, V::I(-1), NcType::UShort, true);
    assert!(
        matches!(r, Err(Error::Range)),
        "byte -> ushort is not exempt"
    );
    let (r, _) = run(NcType::Short, V::I(255), NcType::Byte, true);
    assert!(
        matches!(r, Err(Error::Range)),
        "short -> byte is not exempt"
    );
}

#[test]
fn every_value_is_written_even_when_one_is_out_of_range() {
    let src: Vec<u8> = [1i32, 70000, -5, 3]
        .iter()
        .flat_map(|v| v.to_ne_bytes())
        .collect();
    let mut dst = vec![0u8; 8];
    let r = convert(NcType::Int, &src, NcType::Short, &mut dst);
    assert!(matches!(r, Err(Error::Range)));
    let got: Vec<i16> = dst
        .chunks_exact(2)
        .map(|c| i16::from_ne_bytes([c[0], c[1]]))
        .collect();
    assert_eq!(got, [1, 4464, -5, 3]);
}

#[test]
fn same_type_is_a_bit_exact_copy() {
    let nan_payload = f32::from_bits(0x7fc0_1234);
    let src: Vec<u8> = [nan_payload, -0.0, 1.5]
        .iter()
        .flat_map(|v| v.to_ne_bytes())
        .collect();
    let mut dst = vec![0u8; src.len()];
    convert(NcType::Float, &src, NcType::Float, &mut dst).unwrap();
    assert_eq!(dst, src);
}

#[test]
fn mismatched_lengths_and_strings_are_invalid() {
    let mut dst = [0u8; 8];
    let bad = [
        convert(NcType::Int, &[0; 8], NcType::Short, &mut dst[..2]),
        convert(NcType::Int, &[0; 6], NcType::Short, &mut dst[..3]),
        convert(NcType::Short, &[0; 3], NcType::Short, &mut dst[..3]),
        convert(NcType::Int, &[0; 4], NcType::Int, &mut dst),
        convert(NcType::Char, &[0; 4], NcType::Char, &mut dst[..3]),
        convert(NcType::String, &[0; 8], NcType::String, &mut dst),
        convert(NcType::String, &[0; 8], NcType::Int64, &mut dst),
        convert(NcType::Char, &[0; 8], NcType::String, &mut dst),
    ];
    for (i, r) in bad.into_iter().enumerate() {
        assert!(matches!(r, Err(Error::Invalid(_))), "case {i}: {r:?}");
    }
    assert!(convert(NcType::Double, &[], NcType::Byte, &mut []).is_ok());
}

#[test]
fn swapping_twice_restores_and_once_reverses_each_element() {
    let orig: Vec<u8> = (0..48).collect();
    for esize in [1, 2, 4, 8, 3] {
        let mut buf = orig.clone();
        swap_bytes_in_place(&mut buf, esize);
        for (a, b) in buf.chunks_exact(esize).zip(orig.chunks_exact(esize)) {
            let mut r = b.to_vec();
            r.reverse();
            assert_eq!(a, &r[..], "esize {esize}");
        }
        swap_bytes_in_place(&mut buf, esize);
        assert_eq!(buf, orig, "esize {esize}");
    }
    let mut one = 0x0102_0304u32.to_be_bytes();
    swap_bytes_in_place(&mut one, 4);
    assert_eq!(one, 0x0102_0304u32.to_le_bytes());
}
