//! Checks `api::convert` against what libnetcdf 4.9.0 (Debian, gcc, x86-64) returns for the
//! same conversions: every line of `tests/data/convert_oracle.txt`, produced by
//! `c_tests/convert_oracle.c` (see that file to regenerate it).

use nczarr_rs::Error;
use nczarr_rs::api::convert::{convert, convert_in_model};
use nczarr_rs::model::NcType;

const ORACLE: &str = include_str!("data/convert_oracle.txt");

/// One line of the oracle: a conversion and what netcdf-c produced.
struct Case {
    line: usize,
    mode: String,
    src_ty: NcType,
    src: Vec<u8>,
    dst_ty: NcType,
    expected: Vec<u8>,
    range: bool,
}

fn type_named(name: &str) -> NcType {
    NcType::ALL
        .into_iter()
        .find(|t| t.name() == name)
        .unwrap_or_else(|| panic!("unknown type {name}"))
}

fn parse_float(text: &str) -> f64 {
    match text.trim_start_matches('-') {
        "nan" => f64::NAN,
        _ => text
            .parse()
            .unwrap_or_else(|e| panic!("bad float {text}: {e}")),
    }
}

/// The native-endian bytes of `text` as a `ty` value.
fn value_bytes(ty: NcType, text: &str) -> Vec<u8> {
    let int = || {
        text.parse::<i128>()
            .unwrap_or_else(|e| panic!("bad int {text}: {e}"))
    };
    match ty {
        NcType::Byte => i8::try_from(int()).unwrap().to_ne_bytes().to_vec(),
        NcType::UByte => u8::try_from(int()).unwrap().to_ne_bytes().to_vec(),
        NcType::Short => i16::try_from(int()).unwrap().to_ne_bytes().to_vec(),
        NcType::UShort => u16::try_from(int()).unwrap().to_ne_bytes().to_vec(),
        NcType::Int => i32::try_from(int()).unwrap().to_ne_bytes().to_vec(),
        NcType::UInt => u32::try_from(int()).unwrap().to_ne_bytes().to_vec(),
        NcType::Int64 => i64::try_from(int()).unwrap().to_ne_bytes().to_vec(),
        NcType::UInt64 => u64::try_from(int()).unwrap().to_ne_bytes().to_vec(),
        NcType::Float => (parse_float(text) as f32).to_ne_bytes().to_vec(),
        NcType::Double => parse_float(text).to_ne_bytes().to_vec(),
        NcType::Char | NcType::String => panic!("not numeric: {ty:?}"),
    }
}

/// Equal bit patterns, except that any NaN equals any NaN (C prints no NaN payload).
fn same_value(ty: NcType, a: &[u8], b: &[u8]) -> bool {
    match ty {
        NcType::Float => {
            let (x, y) = (
                f32::from_ne_bytes(a.try_into().unwrap()),
                f32::from_ne_bytes(b.try_into().unwrap()),
            );
            x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
        }
        NcType::Double => {
            let (x, y) = (
                f64::from_ne_bytes(a.try_into().unwrap()),
                f64::from_ne_bytes(b.try_into().unwrap()),
            );
            x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
        }
        _ => a == b,
    }
}

fn cases() -> Vec<Case> {
    ORACLE
        .lines()
        .enumerate()
        .map(|(i, line)| {
            let f: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(f.len(), 6, "line {}: {line}", i + 1);
            let (src_ty, dst_ty) = (type_named(f[1]), type_named(f[3]));
            Case {
                line: i + 1,
                mode: f[0].to_string(),
                src_ty,
                src: value_bytes(src_ty, f[2]),
                dst_ty,
                expected: value_bytes(dst_ty, f[4]),
                range: match f[5] {
                    "ok" => false,
                    "range" => true,
                    other => panic!("line {}: unexpected status {other}", i + 1),
                },
            }
        })
        .collect()
}

#[test]
fn every_oracle_line_matches_value_and_range_flag() {
    let cases = cases();
    let mut pairs = std::collections::HashSet::new();
    for c in &cases {
        let classic = c.mode.starts_with("classic");
        let mut dst = vec![0xA5; c.dst_ty.size()];
        let result = convert_in_model(c.src_ty, &c.src, c.dst_ty, &mut dst, classic);
        let line = ORACLE.lines().nth(c.line - 1).unwrap();
        match result {
            Ok(()) => assert!(!c.range, "line {}: {line}: no range error", c.line),
            Err(Error::Range) => {
                assert!(c.range, "line {}: {line}: unexpected range error", c.line)
            }
            Err(e) => panic!("line {}: {line}: {e}", c.line),
        }
        assert!(
            same_value(c.dst_ty, &dst, &c.expected),
            "line {}: {line}: wrote {dst:?}",
            c.line
        );
        pairs.insert((c.src_ty, c.dst_ty));
    }
    let numeric = NcType::ALL.iter().filter(|t| t.is_numeric()).count();
    assert_eq!(
        pairs.len(),
        numeric * numeric,
        "every numeric pair is covered"
    );
}

#[test]
fn whole_arrays_convert_every_value_and_flag_any_range_error() {
    let cases: Vec<Case> = cases().into_iter().filter(|c| c.mode == "get").collect();
    let mut groups: Vec<(NcType, NcType)> = cases.iter().map(|c| (c.src_ty, c.dst_ty)).collect();
    let mut seen = std::collections::HashSet::new();
    groups.retain(|g| seen.insert(*g));
    assert_eq!(groups.len(), 100);
    for (src_ty, dst_ty) in groups {
        let group: Vec<&Case> = cases
            .iter()
            .filter(|c| c.src_ty == src_ty && c.dst_ty == dst_ty)
            .collect();
        let src: Vec<u8> = group.iter().flat_map(|c| c.src.clone()).collect();
        let mut dst = vec![0; group.len() * dst_ty.size()];
        let result = convert(src_ty, &src, dst_ty, &mut dst);
        let any_range = group.iter().any(|c| c.range);
        assert_eq!(
            matches!(result, Err(Error::Range)),
            any_range,
            "{src_ty:?} -> {dst_ty:?}: {result:?}"
        );
        assert!(any_range || result.is_ok());
        for (c, got) in group.iter().zip(dst.chunks_exact(dst_ty.size())) {
            assert!(same_value(dst_ty, got, &c.expected), "line {}", c.line);
        }
    }
}
