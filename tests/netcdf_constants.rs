//! The netCDF constants the library defines itself (`src/ffi/codes.rs`: it does not link
//! libnetcdf) must have the values the installed `netcdf.h` and `netcdf_dispatch.h` give them.

mod common;

use std::collections::BTreeMap;

/// The integer `#define`s of a C header: name -> value (`(-45)`, `0x0040`, `0L` read alike,
/// and `(NC_EDAPURL)` as the value of the name it gives).
fn defines(header: &str) -> BTreeMap<String, i64> {
    let mut text = BTreeMap::new();
    for line in header.lines() {
        let Some(rest) = line.trim_start().strip_prefix("#define") else {
            continue;
        };
        let mut words = rest.split_whitespace();
        if let (Some(name), Some(value)) = (words.next(), words.next()) {
            text.insert(name.to_string(), value.trim_matches(['(', ')']).to_string());
        }
    }
    let value_of = |name: &str| {
        let mut v = text.get(name)?;
        for _ in 0..8 {
            match integer(v) {
                Some(n) => return Some(n),
                None => v = text.get(v.as_str())?,
            }
        }
        None
    };
    text.keys()
        .filter_map(|name| Some((name.clone(), value_of(name)?)))
        .collect()
}

fn integer(text: &str) -> Option<i64> {
    let t = text.trim_matches(|c| c == '(' || c == ')');
    let t = t.trim_end_matches(['L', 'l', 'U', 'u']);
    let (negative, t) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t),
    };
    let v = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => i64::from_str_radix(hex, 16).ok()?,
        None => t.parse().ok()?,
    };
    Some(if negative { -v } else { v })
}

#[test]
fn our_constants_are_netcdf_h_values() {
    let root = common::repo_root();
    let codes = std::fs::read_to_string(root.join("src/ffi/codes.rs")).unwrap();
    let mut headers = String::new();
    for h in ["/usr/include/netcdf.h", "/usr/include/netcdf_dispatch.h"] {
        headers += &std::fs::read_to_string(h).unwrap_or_else(|e| panic!("{h}: {e}"));
    }
    let real = defines(&headers);
    let mut checked = 0;
    for line in codes.lines() {
        let Some(rest) = line.strip_prefix("pub const ") else {
            continue;
        };
        let (name, value) = rest.split_once(':').unwrap();
        let value = value
            .split_once('=')
            .unwrap()
            .1
            .trim()
            .trim_end_matches(';');
        let ours = integer(value).unwrap_or_else(|| panic!("{name}: {value}"));
        let theirs = real
            .get(name)
            .unwrap_or_else(|| panic!("{name} is not defined in netcdf.h"));
        assert_eq!(ours, *theirs, "{name}");
        checked += 1;
    }
    assert!(checked > 50, "only {checked} constants found");
}
