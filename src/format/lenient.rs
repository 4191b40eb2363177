//! JSON as other writers leave it, read where strict JSON would refuse the whole object:
//! - `NaN`, `Infinity` and `-Infinity` as bare literals, in metadata written by zarr-python and
//!   by netcdf-c 4.9.0: turned into the marked strings of [`super::non_finite`], which stand for
//!   the numbers.
//! - Other bare words: netcdf-c writes a text attribute that looks like JSON as bare JSON, and
//!   so also `0x10` or `[0.,1.]`. A word C reads as a number (`0.`, `.5`, `0x10`) becomes that
//!   number, as netcdf-c reads it back; any other word becomes its text.
//! - Text that is not UTF-8, and control characters left unescaped inside strings: netcdf-c
//!   writes attribute bytes as they are (Latin-1 text from old files; for a `NIL` string,
//!   whatever memory held). Each invalid UTF-8 sequence becomes U+FFFD, as in text we write,
//!   and each control character its `\u00XX` escape.
//!
//! Only text strict parsing refused is repaired, and nothing else in it changes.

use super::json::{self, Json};
use super::non_finite::{self, LITERALS};
use std::borrow::Cow;
use std::fmt::Write;

/// `text` with bare non-finite literals quoted and control characters inside strings escaped.
fn repaired(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut in_string = false;
    let mut escaped = false;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                c if u32::from(c) < 0x20 => {
                    let _ = write!(out, "\\u{:04x}", u32::from(c));
                    rest = &rest[1..];
                    continue;
                }
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
        } else if is_word_char(c) {
            let end = rest.find(|c| !is_word_char(c)).unwrap_or(rest.len());
            out.push_str(&bare_word(&rest[..end]));
            rest = &rest[end..];
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "+-._".contains(c)
}

/// A bare word outside strings as JSON: itself when JSON reads it, the number C reads in it,
/// or its text.
fn bare_word(word: &str) -> String {
    if LITERALS.contains(&word) {
        return non_finite::marked_json_text(word);
    }
    if ["true", "false", "null"].contains(&word)
        || serde_json::from_str::<serde_json::Number>(word).is_ok()
    {
        return word.to_string();
    }
    let (sign, digits) = match word.strip_prefix('-') {
        Some(d) => (-1.0, d),
        None => (1.0, word.strip_prefix('+').unwrap_or(word)),
    };
    let hex = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
        .filter(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit()))
        .and_then(|h| u64::from_str_radix(h, 16).ok())
        .map(|v| v as f64);
    let decimal = digits
        .starts_with(|c: char| c.is_ascii_digit() || c == '.')
        .then(|| digits.parse::<f64>().ok())
        .flatten();
    // `from_f64` takes finite numbers only.
    match hex
        .or(decimal)
        .and_then(|v| serde_json::Number::from_f64(sign * v))
    {
        Some(n) => n.to_string(),
        None => format!("\"{word}\""),
    }
}

/// Parses JSON, accepting what the module doc lists (the tree then owns its strings).
pub fn parse(bytes: &[u8]) -> Result<Json<'_>, serde_json::Error> {
    parse_with(&mut json::Parser::default(), bytes)
}

/// [`parse`] with a parser kept for many texts.
pub fn parse_with<'a>(
    parser: &mut json::Parser<'a>,
    bytes: &'a [u8],
) -> Result<Json<'a>, serde_json::Error> {
    parser.parse(bytes).or_else(|e| {
        let text = String::from_utf8_lossy(bytes);
        let fixed = repaired(&text);
        if matches!(text, Cow::Borrowed(_)) && fixed == text {
            return Err(e);
        }
        json::parse(fixed.as_bytes()).map(Json::into_owned)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_only_bare_literals() {
        let v =
            parse(br#"{"a": NaN, "b": [-Infinity, Infinity], "c": "NaN in text", "d": "x\"NaN"}"#)
                .unwrap();
        let v = v.to_value();
        let number = |v: &serde_json::Value| v.as_str().and_then(non_finite::number);
        assert!(number(&v["a"]).is_some_and(f64::is_nan));
        assert_eq!(number(&v["b"][0]), Some(f64::NEG_INFINITY));
        assert_eq!(number(&v["b"][1]), Some(f64::INFINITY));
        assert_eq!(v["c"], "NaN in text");
        assert_eq!(v["d"], "x\"NaN");
        assert!(parse(b"{\"a\": 1,}").is_err());
    }

    #[test]
    fn text_that_is_not_utf8_and_raw_control_characters_are_read() {
        let v = parse(b"{\"units\": \"\xb0C\", \"nil\": \"\xb0\x04\xaa\xdc\xfe\x7f\", \"n\": NaN}")
            .unwrap()
            .to_value();
        assert_eq!(v["units"], "\u{fffd}C");
        assert_eq!(v["nil"], "\u{fffd}\u{4}\u{fffd}\u{fffd}\u{fffd}\u{7f}");
        assert!(non_finite::is_marked(&v["n"]));
        assert!(parse(b"{\"a\": 1\xb0}").is_err());
    }

    #[test]
    fn bare_words_read_as_c_reads_them_or_as_text() {
        let v = parse(br#"{"hex": 0x10, "list": [0.,-.5,1.e2], "word": abc, "ok": [1, -2.5e3, true, null], "minus": -}"#)
            .unwrap()
            .to_value();
        assert_eq!(v["hex"], 16.0);
        assert_eq!(v["list"], serde_json::json!([0.0, -0.5, 100.0]));
        assert_eq!(v["word"], "abc");
        assert_eq!(v["ok"], serde_json::json!([1, -2500.0, true, null]));
        assert_eq!(v["minus"], "-");
        let signed_hex = parse(br#"{"a": 0x+10, "b": -0x10}"#).unwrap().to_value();
        assert_eq!(signed_hex["a"], "0x+10");
        assert_eq!(signed_hex["b"], -16.0);
        assert!(parse(br#"{"a": 1 2}"#).is_err());
    }

    #[test]
    fn a_kept_parser_reads_literals_after_strict_texts() {
        let texts: [&[u8]; 3] = [br#"{"a": 1}"#, br#"{"b": [NaN, 2]}"#, br#"{"c": {"d": 3}}"#];
        let mut parser = json::Parser::default();
        let got: Vec<String> = texts
            .iter()
            .map(|t| parse_with(&mut parser, t).unwrap().to_string())
            .collect();
        assert_eq!(
            got,
            [
                r#"{"a":1}"#.to_string(),
                format!(r#"{{"b":["{}NaN",2]}}"#, non_finite::MARK),
                r#"{"c":{"d":3}}"#.to_string()
            ]
        );
    }
}
