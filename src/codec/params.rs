//! Reading and checking numeric and text parameters of a numcodecs configuration.

use super::{Config, bad_config};
use crate::error::Result;
use serde_json::Value;
use std::ops::RangeInclusive;

/// An integer parameter: `default` when absent (or `null`), an error when out of `range`.
pub fn int(
    cfg: &Config,
    codec: &str,
    key: &str,
    default: i64,
    range: RangeInclusive<i64>,
) -> Result<i64> {
    let v = match cfg.get(key) {
        None | Some(Value::Null) => default,
        Some(Value::Number(n)) => match n.as_i64() {
            Some(i) => i,
            None => match n.as_f64() {
                Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => f as i64,
                _ => return Err(bad_config(codec, format!("{key} {n} is not an integer"))),
            },
        },
        Some(other) => {
            return Err(bad_config(
                codec,
                format!("{key} {other} is not an integer"),
            ));
        }
    };
    if !range.contains(&v) {
        return Err(bad_config(
            codec,
            format!("{key} {v} is outside {}..={}", range.start(), range.end()),
        ));
    }
    Ok(v)
}

/// A text parameter: `default` when absent.
pub fn text(cfg: &Config, codec: &str, key: &str, default: &str) -> Result<String> {
    match cfg.get(key) {
        None | Some(Value::Null) => Ok(default.to_string()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(bad_config(codec, format!("{key} {other} is not a string"))),
    }
}

/// A boolean parameter: `default` when absent.
pub fn flag(cfg: &Config, codec: &str, key: &str, default: bool) -> Result<bool> {
    match cfg.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(bad_config(codec, format!("{key} {other} is not a boolean"))),
    }
}

/// The single HDF5 parameter of a filter, `default` when none was given.
pub fn hdf5_one(codec: &str, params: &[u32], default: u32) -> Result<u32> {
    match params {
        [] => Ok(default),
        [p] => Ok(*p),
        _ => Err(bad_config(
            codec,
            format!("expects at most 1 HDF5 parameter, got {}", params.len()),
        )),
    }
}

/// A configuration object with the given id and entries.
pub fn config(id: &str, entries: &[(&str, Value)]) -> Config {
    let mut m = Config::new();
    m.insert("id".into(), Value::from(id));
    for (k, v) in entries {
        m.insert((*k).into(), v.clone());
    }
    m
}
