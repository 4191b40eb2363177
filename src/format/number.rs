//! One netCDF value <-> one JSON value, as Zarr writes numbers.
//!
//! Integers are exact; floats use the shortest text that reads back to the same value (a
//! `float` is shortest as a `float`, not as its widened `double`); NaN and infinities are the
//! strings `"NaN"`, `"Infinity"` and `"-Infinity"` in fill values, and bare literals in
//! attributes ([`to_attribute_json`]). Both forms are read.

use super::non_finite;
use crate::model::NcType;
use serde_json::{Number, Value};

fn float_json(x: f64, shortest: impl FnOnce() -> String) -> Value {
    if x.is_nan() {
        Value::String("NaN".into())
    } else if x.is_infinite() {
        Value::String(if x > 0.0 { "Infinity" } else { "-Infinity" }.into())
    } else {
        // Parse the shortest text of the original width back as f64: serde_json then prints
        // that f64 with its own shortest repr, which is the same text.
        let v: f64 = shortest().parse().unwrap_or(x);
        Number::from_f64(v).map_or(Value::Null, Value::Number)
    }
}

/// The JSON for the native-endian element `bytes` of numeric type `ty`.
pub fn to_json(ty: NcType, bytes: &[u8]) -> Value {
    macro_rules! int {
        ($t:ty) => {
            Value::from(<$t>::from_ne_bytes(bytes.try_into().unwrap_or_default()))
        };
    }
    match ty {
        NcType::Byte => int!(i8),
        NcType::UByte => int!(u8),
        NcType::Short => int!(i16),
        NcType::UShort => int!(u16),
        NcType::Int => int!(i32),
        NcType::UInt => int!(u32),
        NcType::Int64 => int!(i64),
        NcType::UInt64 => int!(u64),
        NcType::Float => {
            let x = f32::from_ne_bytes(bytes.try_into().unwrap_or_default());
            float_json(f64::from(x), || format!("{x:e}"))
        }
        NcType::Double => {
            let x = f64::from_ne_bytes(bytes.try_into().unwrap_or_default());
            float_json(x, || format!("{x:e}"))
        }
        NcType::Char => Value::String(String::from_utf8_lossy(bytes).into_owned()),
        NcType::String => Value::Null,
    }
}

/// [`to_json`] for an attribute value: a non-finite number is a bare literal (a marked string
/// until it is written).
pub fn to_attribute_json(ty: NcType, bytes: &[u8]) -> Value {
    let x = match ty {
        NcType::Float => f64::from(f32::from_ne_bytes(bytes.try_into().unwrap_or_default())),
        NcType::Double => f64::from_ne_bytes(bytes.try_into().unwrap_or_default()),
        _ => return to_json(ty, bytes),
    };
    if x.is_finite() {
        to_json(ty, bytes)
    } else {
        non_finite::marked(x)
    }
}

fn special_float(s: &str) -> Option<f64> {
    if let Some(x) = non_finite::number(s) {
        return Some(x);
    }
    match s {
        "NaN" | "nan" => Some(f64::NAN),
        "Infinity" | "inf" | "+Infinity" => Some(f64::INFINITY),
        "-Infinity" | "-inf" => Some(f64::NEG_INFINITY),
        other => other.trim().parse().ok(),
    }
}

/// A JSON number as the widest exact representation we have.
enum Num {
    I(i128),
    F(f64),
}

fn json_number(v: &Value) -> Option<Num> {
    match v {
        Value::Number(n) => n
            .as_i64()
            .map(|i| Num::I(i.into()))
            .or_else(|| n.as_u64().map(|u| Num::I(u.into())))
            .or_else(|| n.as_f64().map(Num::F)),
        Value::Bool(b) => Some(Num::I(i128::from(*b))),
        Value::String(s) => s
            .trim()
            .parse::<i128>()
            .ok()
            .map(Num::I)
            .or_else(|| special_float(s).map(Num::F)),
        _ => None,
    }
}

/// Native-endian bytes of `v` as numeric type `ty`; `None` when `v` is no number of that type
/// (out of range, fractional for an integer type, or not numeric at all).
pub fn from_json(ty: NcType, v: &Value) -> Option<Vec<u8>> {
    let n = json_number(v)?;
    macro_rules! int {
        ($t:ty) => {
            match n {
                Num::I(i) => <$t>::try_from(i).ok().map(|x| x.to_ne_bytes().to_vec()),
                Num::F(f) if f.fract() == 0.0 && f >= <$t>::MIN as f64 && f <= <$t>::MAX as f64 => {
                    Some((f as $t).to_ne_bytes().to_vec())
                }
                Num::F(_) => None,
            }
        };
    }
    let as_f64 = |n: Num| match n {
        Num::I(i) => i as f64,
        Num::F(f) => f,
    };
    match ty {
        NcType::Byte => int!(i8),
        NcType::UByte => int!(u8),
        NcType::Short => int!(i16),
        NcType::UShort => int!(u16),
        NcType::Int => int!(i32),
        NcType::UInt => int!(u32),
        NcType::Int64 => int!(i64),
        NcType::UInt64 => int!(u64),
        NcType::Float => Some((as_f64(n) as f32).to_ne_bytes().to_vec()),
        NcType::Double => Some(as_f64(n).to_ne_bytes().to_vec()),
        NcType::Char | NcType::String => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt(ty: NcType, bytes: Vec<u8>) {
        let j = to_json(ty, &bytes);
        let text = serde_json::to_string(&j).unwrap();
        let back: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(from_json(ty, &back).unwrap(), bytes, "{ty:?} {text}");
    }

    #[test]
    fn doubles_keep_every_digit() {
        let x = 0.1f64 + 0.2;
        assert_eq!(
            to_json(NcType::Double, &x.to_ne_bytes()).to_string(),
            "0.30000000000000004"
        );
        rt(NcType::Double, std::f64::consts::PI.to_ne_bytes().to_vec());
        rt(
            NcType::Double,
            9.969209968386869e36f64.to_ne_bytes().to_vec(),
        );
        rt(NcType::Double, (-0.0f64).to_ne_bytes().to_vec());
    }

    #[test]
    fn floats_print_as_floats() {
        assert_eq!(
            to_json(NcType::Float, &0.1f32.to_ne_bytes()).to_string(),
            "0.1"
        );
        rt(NcType::Float, 9.96921e36f32.to_ne_bytes().to_vec());
        rt(NcType::Float, f32::MIN_POSITIVE.to_ne_bytes().to_vec());
    }

    #[test]
    fn specials_and_integers() {
        assert_eq!(
            to_json(NcType::Double, &f64::NAN.to_ne_bytes()),
            Value::from("NaN")
        );
        assert_eq!(
            to_json(NcType::Float, &f32::NEG_INFINITY.to_ne_bytes()),
            Value::from("-Infinity")
        );
        rt(NcType::UInt64, u64::MAX.to_ne_bytes().to_vec());
        rt(NcType::Int64, i64::MIN.to_ne_bytes().to_vec());
        assert!(from_json(NcType::Byte, &Value::from(200)).is_none());
        assert!(from_json(NcType::Int, &Value::from(1.5)).is_none());
        assert_eq!(
            from_json(NcType::Int, &Value::from(-999.0)).unwrap(),
            (-999i32).to_ne_bytes()
        );
        assert!(from_json(NcType::Double, &Value::from("abc")).is_none());
    }
}
