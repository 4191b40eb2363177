//! JSON as other writers leave it, read where strict JSON would refuse the whole object:
//! - `NaN`, `Infinity` and `-Infinity` as bare literals, in metadata written by zarr-python and
//!   by netcdf-c 4.9.0: turned into the strings Zarr uses (`"NaN"`, ...).
//! - Text that is not UTF-8, and control characters left unescaped inside strings: netcdf-c
//!   writes attribute bytes as they are (Latin-1 text from old files; for a `NIL` string,
//!   whatever memory held). Each invalid UTF-8 sequence becomes U+FFFD, as in text we write,
//!   and each control character its `\u00XX` escape.
//!
//! Only text strict parsing refused is repaired, and nothing else in it changes.

use super::json::{self, Json};
use std::borrow::Cow;
use std::fmt::Write;

const LITERALS: [&str; 3] = ["-Infinity", "Infinity", "NaN"];

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
        } else if let Some(lit) = LITERALS.iter().find(|l| rest.starts_with(*l)) {
            out.push('"');
            out.push_str(lit);
            out.push('"');
            rest = &rest[lit.len()..];
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
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
        assert_eq!(v["a"], "NaN");
        assert_eq!(v["b"][0], "-Infinity");
        assert_eq!(v["b"][1], "Infinity");
        assert_eq!(v["c"], "NaN in text");
        assert_eq!(v["d"], "x\"NaN");
        assert!(parse(b"{\"a\": Nope}").is_err());
    }

    #[test]
    fn text_that_is_not_utf8_and_raw_control_characters_are_read() {
        let v = parse(b"{\"units\": \"\xb0C\", \"nil\": \"\xb0\x04\xaa\xdc\xfe\x7f\", \"n\": NaN}")
            .unwrap()
            .to_value();
        assert_eq!(v["units"], "\u{fffd}C");
        assert_eq!(v["nil"], "\u{fffd}\u{4}\u{fffd}\u{fffd}\u{fffd}\u{7f}");
        assert_eq!(v["n"], "NaN");
        assert!(parse(b"{\"a\": 1\xb0}").is_err());
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
            [r#"{"a":1}"#, r#"{"b":["NaN",2]}"#, r#"{"c":{"d":3}}"#]
        );
    }
}
