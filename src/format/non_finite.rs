//! NaN and the infinities as attribute values in JSON metadata.
//!
//! Strict JSON has no way to write them. zarr-python (v2 and v3), xarray and netcdf-c 4.9.0 write
//! the bare literals `NaN`, `Infinity` and `-Infinity`, and zarr-python and netcdf-c 4.9.0 and
//! 4.10.1 all read those as numbers; netcdf-c 4.10.1 writes the strings `"NaN"`, ..., which
//! zarr-python reads as text and netcdf-c 4.9.0 cannot read at all. So an attribute's
//! non-finite number is read from and written as a bare literal, while a `fill_value` keeps the
//! string form the Zarr specifications give it.
//!
//! Neither `serde_json::Value` nor our own tree can hold a non-finite number, so inside the
//! crate such a literal is a string: [`MARK`] followed by the literal. The lenient parser makes
//! them from bare literals, and [`unmarked_json`] turns them back into bare literals in the text
//! that is written. Knows nothing of netCDF.

use serde_json::Value;
use std::borrow::Cow;

/// Starts a string that stands for a bare non-finite literal. U+FDD0 is a Unicode
/// noncharacter, set aside for uses internal to a program.
pub const MARK: char = '\u{FDD0}';

/// The literals, as JSON readers that take them spell them.
pub const LITERALS: [&str; 3] = ["-Infinity", "Infinity", "NaN"];

/// The literal spelling `x`, a non-finite number.
fn literal(x: f64) -> &'static str {
    if x.is_nan() {
        "NaN"
    } else if x > 0.0 {
        "Infinity"
    } else {
        "-Infinity"
    }
}

/// The marked string standing for `x`, a non-finite number.
pub fn marked(x: f64) -> Value {
    Value::String(format!("{MARK}{}", literal(x)))
}

/// The marked string standing for bare literal `word` (one of [`LITERALS`]), as JSON text.
pub fn marked_json_text(word: &str) -> String {
    format!("\"{MARK}{word}\"")
}

/// The number a marked string stands for.
pub fn number(s: &str) -> Option<f64> {
    match s.strip_prefix(MARK)? {
        "NaN" => Some(f64::NAN),
        "Infinity" => Some(f64::INFINITY),
        "-Infinity" => Some(f64::NEG_INFINITY),
        _ => None,
    }
}

/// True when `v` is a marked string.
pub fn is_marked(v: &Value) -> bool {
    v.as_str().and_then(number).is_some()
}

/// `json` (serde_json's output) with each marked string written as its bare literal.
///
/// serde_json escapes every `"` inside a string, so a `"` followed by the mark opens a string
/// and a literal followed by a `"` closes it: a match is always one whole marked string. A
/// key (a string followed by `:`) is left a string.
pub fn unmarked_json(json: Vec<u8>) -> Vec<u8> {
    let mut mark = [0u8; 4];
    let mark = MARK.encode_utf8(&mut mark).as_bytes();
    // Most metadata holds no byte of the mark: one fast scan says so.
    if !json.contains(&mark[0]) {
        return json;
    }
    let opening: Vec<u8> = [b"\"".as_slice(), mark].concat();
    let mut out = Vec::with_capacity(json.len());
    let mut rest = json.as_slice();
    while let Some(at) = rest.windows(opening.len()).position(|w| w == opening) {
        let after = &rest[at + opening.len()..];
        // A key stays a string: JSON has no bare keys.
        let closed = LITERALS.iter().find(|l| {
            after.starts_with(l.as_bytes())
                && after.get(l.len()) == Some(&b'"')
                && after.get(l.len() + 1) != Some(&b':')
        });
        match closed {
            Some(l) => {
                out.extend_from_slice(&rest[..at]);
                out.extend_from_slice(l.as_bytes());
                rest = &after[l.len() + 1..];
            }
            None => {
                out.extend_from_slice(&rest[..at + opening.len()]);
                rest = after;
            }
        }
    }
    out.extend_from_slice(rest);
    out
}

/// `v` as compact JSON text, non-finite numbers as bare literals (as netcdf-c shows JSON it
/// reads as text).
pub fn json_text(v: &Value) -> String {
    let json = unmarked_json(v.to_string().into_bytes());
    String::from_utf8(json).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// The text of a string value: a marked string's literal, else the string itself.
pub fn text(s: &str) -> Cow<'_, str> {
    match number(s) {
        Some(_) => Cow::Borrowed(&s[MARK.len_utf8()..]),
        None => Cow::Borrowed(s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marked_strings_are_written_as_bare_literals() {
        let v = serde_json::json!({
            "n": marked(f64::NAN),
            "l": [1.5, marked(f64::INFINITY), marked(f64::NEG_INFINITY)],
            "s": "NaN",
            "quoted": format!("\"{MARK}NaN\""),
            "longer": format!("{MARK}NaNs"),
            (format!("{MARK}NaN")): 1,
        });
        let text = String::from_utf8(unmarked_json(serde_json::to_vec(&v).unwrap())).unwrap();
        assert_eq!(
            text,
            format!(
                r#"{{"n":NaN,"l":[1.5,Infinity,-Infinity],"s":"NaN","quoted":"\"{MARK}NaN\"","longer":"{MARK}NaNs","{MARK}NaN":1}}"#
            )
        );
    }

    #[test]
    fn only_marked_strings_are_numbers() {
        assert!(number(&format!("{MARK}NaN")).is_some_and(f64::is_nan));
        assert_eq!(number(&format!("{MARK}-Infinity")), Some(f64::NEG_INFINITY));
        assert_eq!(number("NaN"), None);
        assert_eq!(number(&format!("{MARK}nan")), None);
        assert_eq!(text(&format!("{MARK}Infinity")), "Infinity");
        assert_eq!(text("x"), "x");
        assert!(is_marked(&marked(f64::NAN)));
        assert!(!is_marked(&Value::from("NaN")));
    }
}
