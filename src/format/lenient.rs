//! JSON as Python writes it: `NaN`, `Infinity` and `-Infinity` appear as bare literals in
//! metadata written by zarr-python and by netcdf-c 4.9.0. serde_json rejects them, so they are
//! turned into the strings Zarr uses (`"NaN"`, ...) before parsing. Text inside strings is
//! never touched.

use super::json::{self, Json};

const LITERALS: [&str; 3] = ["-Infinity", "Infinity", "NaN"];

/// Quotes bare non-finite literals outside JSON strings.
pub fn quote_nonfinite(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len() + 16);
    let mut i = 0;
    let mut last = 0;
    let mut in_string = false;
    while i < b.len() {
        let c = b[i];
        if in_string {
            match c {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        if c == b'"' {
            in_string = true;
            i += 1;
            continue;
        }
        if let Some(lit) = LITERALS.iter().find(|l| b[i..].starts_with(l.as_bytes())) {
            out.push_str(&text[last..i]);
            out.push('"');
            out.push_str(lit);
            out.push('"');
            i += lit.len();
            last = i;
            continue;
        }
        i += 1;
    }
    out.push_str(&text[last..]);
    out
}

/// Parses JSON, accepting Python's non-finite literals (the tree then owns its strings).
pub fn parse(bytes: &[u8]) -> Result<Json<'_>, serde_json::Error> {
    parse_with(&mut json::Parser::default(), bytes)
}

/// [`parse`] with a parser kept for many texts.
pub fn parse_with<'a>(
    parser: &mut json::Parser<'a>,
    bytes: &'a [u8],
) -> Result<Json<'a>, serde_json::Error> {
    match parser.parse(bytes) {
        Ok(v) => Ok(v),
        Err(e) => match std::str::from_utf8(bytes) {
            Ok(text) if LITERALS.iter().any(|l| text.contains(l)) => {
                json::parse(quote_nonfinite(text).as_bytes()).map(Json::into_owned)
            }
            _ => Err(e),
        },
    }
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
