//! Attribute values <-> `.zattrs` JSON.
//!
//! Writing: numbers as a JSON scalar (one value) or array (in pure Zarr, unsigned bytes that are
//! all 0 or 1 as booleans, since booleans read as such bytes); text (NC_CHAR) always as a JSON
//! string, never re-parsed as JSON (so read-write-read returns the same text); NC_STRING as a
//! string or an array of strings. The dtype of each attribute goes into `_nczarr_attr.types`
//! in NCZarr mode.
//!
//! Reading: with a recorded dtype the value is converted to that type; without one (pure
//! Zarr) the type is inferred so that no value is lost: integers become the narrowest of
//! int/int64/uint64 holding all of them, any fraction makes the array double, strings become
//! text or NC_STRING arrays, and anything else (objects, nested arrays, mixtures) becomes
//! its JSON text as NC_CHAR.

use super::{dtype, non_finite, number};
use crate::error::{Error, Result};
use crate::model::{Endian, NcType, Values};
use serde_json::Value;

/// The JSON and the dtype string for an attribute.
pub fn to_json(values: &Values, nczarr: bool) -> (Value, String) {
    match values {
        Values::Fixed {
            ty: NcType::Char,
            bytes,
        } => {
            // C text ends at its NUL: trailing NULs (ncgen stores "" as one NUL) are not
            // written, since other readers (netcdf-c 4.10.1) do not decode `\u0000`.
            let end = bytes.iter().rposition(|b| *b != 0).map_or(0, |i| i + 1);
            (
                Value::String(String::from_utf8_lossy(&bytes[..end]).into_owned()),
                dtype::format(NcType::Char, Endian::Big, 1, true),
            )
        }
        Values::Fixed { ty, bytes } => {
            // Pure Zarr records no types and JSON booleans read as unsigned bytes 0/1: writing
            // such bytes back as booleans makes read-write-read stable.
            let booleans = !nczarr && *ty == NcType::UByte && bytes.iter().all(|b| *b <= 1);
            let mut items: Vec<Value> = bytes
                .chunks_exact(ty.size())
                .map(|b| {
                    if booleans {
                        Value::Bool(b[0] == 1)
                    } else {
                        number::to_attribute_json(*ty, b)
                    }
                })
                .collect();
            let v = if items.len() == 1 {
                items.pop().unwrap_or(Value::Null)
            } else {
                Value::Array(items)
            };
            (v, dtype::format(*ty, Endian::Little, 1, nczarr))
        }
        Values::Vlens { base, items } => {
            let sequences = items
                .iter()
                .map(|item| {
                    let values = item.chunks_exact(base.size());
                    Value::Array(
                        values
                            .map(|b| number::to_attribute_json(*base, b))
                            .collect(),
                    )
                })
                .collect();
            (
                Value::Array(sequences),
                dtype::format(*base, Endian::Little, 1, nczarr),
            )
        }
        Values::Strings(items) => {
            let width = items.iter().map(Vec::len).max().unwrap_or(1).max(1);
            let mut strs: Vec<Value> = items
                .iter()
                .map(|s| Value::String(String::from_utf8_lossy(s).into_owned()))
                .collect();
            let v = if strs.len() == 1 {
                strs.pop().unwrap_or(Value::Null)
            } else {
                Value::Array(strs)
            };
            (
                v,
                dtype::format(NcType::String, Endian::Little, width, nczarr),
            )
        }
    }
}

fn as_items(v: &Value) -> Vec<&Value> {
    match v {
        Value::Array(a) => a.iter().collect(),
        other => vec![other],
    }
}

fn text_of(v: &Value) -> Vec<u8> {
    match v {
        Value::String(s) => non_finite::text(s).as_bytes().to_vec(),
        other => non_finite::json_text(other).into_bytes(),
    }
}

/// Values of attribute `name` from its JSON and its recorded dtype (if any).
pub fn from_json(name: &str, v: &Value, recorded: Option<&str>, key: &str) -> Result<Values> {
    let Some(dt) = recorded else {
        return Ok(infer(v));
    };
    let d = dtype::parse(dt, true)
        .or_else(|_| dtype::parse(dt, false))
        .map_err(|_| Error::metadata(key, format!("attribute {name}: unknown type {dt:?}")))?;
    match d.ty {
        NcType::Char => Ok(Values::Fixed {
            ty: NcType::Char,
            bytes: text_of(v),
        }),
        NcType::String => Ok(Values::Strings(
            as_items(v).into_iter().map(text_of).collect(),
        )),
        ty => {
            let mut bytes = Vec::new();
            for item in as_items(v) {
                bytes.extend(number::from_json(ty, item).ok_or_else(|| {
                    Error::metadata(
                        key,
                        format!("attribute {name}: {item} is not a {}", ty.name()),
                    )
                })?);
            }
            Ok(Values::Fixed { ty, bytes })
        }
    }
}

/// Values of a variable-length type of attribute `name` (NCZarr records its type): a JSON
/// array of arrays of numbers of the recorded dtype, one array a value.
pub fn vlens_from_json(name: &str, v: &Value, recorded: Option<&str>, key: &str) -> Result<Values> {
    let bad = |why: String| Error::metadata(key, format!("attribute {name}: {why}"));
    let base = recorded
        .and_then(|dt| dtype::parse(dt, true).ok())
        .map(|d| d.ty)
        .filter(|t| t.is_numeric())
        .ok_or_else(|| bad(format!("sequences of type {recorded:?}")))?;
    let Value::Array(sequences) = v else {
        return Err(bad(format!("{v} is no array of sequences")));
    };
    let items = sequences
        .iter()
        .map(|s| {
            let Value::Array(values) = s else {
                return Err(bad(format!("{s} is no sequence")));
            };
            let mut bytes = Vec::with_capacity(values.len() * base.size());
            for item in values {
                bytes.extend(
                    number::from_json(base, item)
                        .ok_or_else(|| bad(format!("{item} is not a {}", base.name())))?,
                );
            }
            Ok(bytes)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Values::Vlens { base, items })
}

/// A JSON number, or a non-finite one (a bare literal).
fn is_number(v: &Value) -> bool {
    v.is_number() || non_finite::is_marked(v)
}

/// A JSON string that is text (not a bare literal).
fn is_text(v: &Value) -> bool {
    v.is_string() && !non_finite::is_marked(v)
}

/// The type a pure-Zarr attribute value gets when nothing records it.
fn infer(v: &Value) -> Values {
    let items = as_items(v);
    let all = |f: fn(&Value) -> bool| !items.is_empty() && items.iter().all(|i| f(i));
    if let Value::String(s) = v
        && is_text(v)
    {
        return Values::text(s);
    }
    if all(is_text) {
        return Values::Strings(items.iter().map(|i| text_of(i)).collect());
    }
    if all(Value::is_boolean) {
        let bytes = items
            .iter()
            .map(|i| u8::from(i.as_bool() == Some(true)))
            .collect();
        return Values::Fixed {
            ty: NcType::UByte,
            bytes,
        };
    }
    if all(is_number) {
        let ty = if items.iter().any(|i| i.is_f64() || i.is_string()) {
            NcType::Double
        } else if items
            .iter()
            .all(|i| i.as_i64().is_some_and(|x| i32::try_from(x).is_ok()))
        {
            NcType::Int
        } else if items.iter().all(|i| i.as_i64().is_some()) {
            NcType::Int64
        } else {
            NcType::UInt64
        };
        let mut bytes = Vec::new();
        for item in &items {
            match number::from_json(ty, item) {
                Some(b) => bytes.extend(b),
                None => return Values::text(&non_finite::json_text(v)),
            }
        }
        return Values::Fixed { ty, bytes };
    }
    Values::Fixed {
        ty: NcType::Char,
        bytes: non_finite::json_text(v).into_bytes(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt(values: Values) {
        let (j, dt) = to_json(&values, true);
        let text = serde_json::to_string(&j).unwrap();
        let back: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            from_json("a", &back, Some(&dt), "k").unwrap(),
            values,
            "{text} {dt}"
        );
    }

    #[test]
    fn typed_round_trips() {
        rt(Values::text("[1, 2, 3]"));
        rt(Values::text("123"));
        rt(Values::text("0x10"));
        rt(Values::text(""));
        rt(Values::Strings(vec![b"a".to_vec(), b"bc".to_vec()]));
        rt(Values::Strings(vec![b"solo".to_vec()]));
        rt(Values::fixed(
            NcType::Double,
            [0.1f64, 3.5].iter().flat_map(|x| x.to_ne_bytes()).collect(),
        ));
        rt(Values::fixed(
            NcType::Float,
            1.2345678f32.to_ne_bytes().to_vec(),
        ));
        rt(Values::fixed(
            NcType::UInt64,
            u64::MAX.to_ne_bytes().to_vec(),
        ));
        rt(Values::fixed(NcType::Byte, vec![0x80, 0x7f]));
    }

    #[test]
    fn inference_loses_nothing() {
        let v: Value = serde_json::from_str("[1, 2.5]").unwrap();
        assert_eq!(infer(&v).ty(), NcType::Double);
        let v: Value = serde_json::from_str("[1, 3000000000]").unwrap();
        assert_eq!(infer(&v).ty(), NcType::Int64);
        let v: Value = serde_json::from_str("18446744073709551615").unwrap();
        assert_eq!(infer(&v).ty(), NcType::UInt64);
        let v: Value = serde_json::from_str(r#"{"a": [1, 2]}"#).unwrap();
        assert_eq!(infer(&v), Values::text(r#"{"a":[1,2]}"#));
        let v: Value = serde_json::from_str(r#"["x", "yz"]"#).unwrap();
        assert_eq!(infer(&v).ty(), NcType::String);
        let v: Value = serde_json::from_str("[[1, 2], [3, 4]]").unwrap();
        assert_eq!(infer(&v).ty(), NcType::Char);
    }

    #[test]
    fn bare_non_finite_literals_are_doubles_and_written_back_bare() {
        let parsed = |text: &str| {
            super::super::lenient::parse(text.as_bytes())
                .unwrap()
                .to_value()
        };
        let doubles = |xs: &[f64]| {
            Values::fixed(
                NcType::Double,
                xs.iter().flat_map(|x| x.to_ne_bytes()).collect(),
            )
        };
        let v =
            parsed(r#"{"a": [1.5, NaN, -Infinity], "b": Infinity, "c": "NaN", "d": ["x", NaN]}"#);
        let a = infer(&v["a"]);
        let Values::Fixed {
            ty: NcType::Double,
            bytes,
        } = &a
        else {
            panic!("{a:?}");
        };
        let got: Vec<f64> = bytes
            .chunks_exact(8)
            .map(|b| f64::from_ne_bytes(b.try_into().unwrap()))
            .collect();
        assert!(
            got[0] == 1.5 && got[1].is_nan() && got[2] == f64::NEG_INFINITY,
            "{got:?}"
        );
        assert_eq!(infer(&v["b"]), doubles(&[f64::INFINITY]));
        assert_eq!(infer(&v["c"]), Values::text("NaN"));
        assert_eq!(infer(&v["d"]), Values::text(r#"["x",NaN]"#));
        for nczarr in [false, true] {
            let (json, _) = to_json(&a, nczarr);
            assert_eq!(json, v["a"], "written as read");
            let text = non_finite::unmarked_json(serde_json::to_vec(&json).unwrap());
            assert_eq!(String::from_utf8(text).unwrap(), "[1.5,NaN,-Infinity]");
        }
        let typed = from_json("a", &v["a"], Some("<f4"), "k").unwrap();
        assert_eq!(typed.ty(), NcType::Float);
    }

    #[test]
    fn wrong_recorded_type_is_an_error() {
        let v: Value = serde_json::from_str("300").unwrap();
        assert!(from_json("a", &v, Some("|i1"), "k").is_err());
    }
}
