//! The reference document: the JSON that kerchunk, VirtualiZarr and fsspec's
//! `ReferenceFileSystem` call a reference set, parsed into keys that each hold their bytes
//! inline or name bytes of another object by URL.
//!
//! Owns the document's syntax (versions 0 and 1): inline text, `base64:` values and values
//! written as JSON objects; one-element references (a whole object) and three-element ones (a
//! byte range); version 1's `gen` generators, expanded. How templates render is
//! [`templates`](super::templates). It must not know where the URLs lead or how they are read.

use super::super::StoreKey;
use super::templates::Templates;
use crate::error::{Error, Result};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use minijinja::value::Value;
use serde_json::Value as Json;
use std::collections::{BTreeMap, HashMap};

/// Most keys one document's generators may make, in all: each is a reference held in memory.
pub const MOST_GENERATED_KEYS: u64 = 10_000_000;

/// What one key holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reference {
    /// These bytes.
    Inline(Vec<u8>),
    /// The whole object at target URL number `target`.
    Whole { target: u32 },
    /// `len` bytes from `offset` of the object at target URL number `target`.
    Range { target: u32, offset: u64, len: u64 },
}

/// A parsed reference document.
#[derive(Debug, Default)]
pub struct Document {
    /// Every key (each a valid [`StoreKey`]), in key order.
    pub entries: BTreeMap<String, Reference>,
    /// The target URLs as written (templates rendered), each once; references name them by
    /// index.
    pub targets: Vec<String>,
}

fn bad(name: &str, why: impl Into<String>) -> Error {
    Error::Metadata {
        key: name.to_string(),
        why: why.into(),
    }
}

/// The document being built: its entries, and its targets numbered as they are first seen.
struct Builder<'a> {
    name: &'a str,
    doc: Document,
    target_index: HashMap<String, u32>,
}

/// Parses the reference document `bytes`, called `name` in messages.
pub fn parse(bytes: &[u8], name: &str) -> Result<Document> {
    let json: Json = serde_json::from_slice(bytes)
        .map_err(|e| bad(name, format!("not a JSON reference document: {e}")))?;
    let Json::Object(top) = json else {
        return Err(bad(name, "a reference document is a JSON object"));
    };
    let mut out = Builder {
        name,
        doc: Document::default(),
        target_index: HashMap::new(),
    };
    match top.get("version") {
        // As fsspec reads them: no version (or none given) is version 0, whose URLs are
        // never rendered.
        None | Some(Json::Null) => {
            for (key, value) in top.iter().filter(|(k, _)| *k != "version") {
                out.add(key, value, None)?;
            }
        }
        Some(v) if v.as_u64() == Some(1) => {
            let templates = read_templates(name, top.get("templates"))?;
            let templates = Templates::new(&templates);
            // fsspec renders references' URLs only in documents that have templates.
            let render = top
                .get("templates")
                .and_then(Json::as_object)
                .is_some_and(|t| !t.is_empty());
            match top.get("refs") {
                None | Some(Json::Null) => {}
                Some(Json::Object(refs)) => {
                    for (key, value) in refs {
                        out.add(key, value, render.then_some(&templates))?;
                    }
                }
                Some(_) => return Err(bad(name, "\"refs\" is not a JSON object")),
            }
            match top.get("gen") {
                None | Some(Json::Null) => {}
                Some(Json::Array(gens)) => {
                    // Every generator's count first: none is rendered if all make too many.
                    let mut total = 0u64;
                    for g in gens {
                        total = total.saturating_add(keys_made(name, g)?);
                    }
                    if total > MOST_GENERATED_KEYS {
                        return Err(too_many_keys(name));
                    }
                    for g in gens {
                        out.generate(g, &templates)?;
                    }
                }
                Some(_) => return Err(bad(name, "\"gen\" is not a list")),
            }
        }
        Some(v) => {
            return Err(bad(
                name,
                format!("reference document version {v} is not known (0 and 1 are)"),
            ));
        }
    }
    Ok(out.doc)
}

fn read_templates(name: &str, templates: Option<&Json>) -> Result<BTreeMap<String, String>> {
    match templates {
        None | Some(Json::Null) => Ok(BTreeMap::new()),
        Some(Json::Object(map)) => map
            .iter()
            .map(|(k, v)| match v {
                Json::String(text) => Ok((k.clone(), text.clone())),
                _ => Err(bad(name, format!("template {k:?} is not text"))),
            })
            .collect(),
        Some(_) => Err(bad(name, "\"templates\" is not a JSON object")),
    }
}

/// The values one generator dimension takes.
enum Dimension {
    List(Vec<i64>),
    /// As Python's `range(start, stop, step)`.
    Range {
        start: i64,
        step: i64,
        len: u64,
    },
}

impl Dimension {
    fn len(&self) -> u64 {
        match self {
            Dimension::List(v) => v.len() as u64,
            Dimension::Range { len, .. } => *len,
        }
    }

    fn get(&self, i: u64) -> i64 {
        match self {
            Dimension::List(v) => v[i as usize],
            // Between start and stop, so within i64; the product may not be.
            Dimension::Range { start, step, .. } => {
                (i128::from(*start) + i128::from(*step) * i128::from(i)) as i64
            }
        }
    }
}

impl Builder<'_> {
    /// Adds the reference `value` under `key` (a later one replaces an earlier one), its URL
    /// rendered with `templates` when given.
    fn add(&mut self, key: &str, value: &Json, templates: Option<&Templates>) -> Result<()> {
        let reference = match value {
            Json::String(text) => Reference::Inline(self.inline(key, text)?),
            Json::Object(_) => Reference::Inline(value.to_string().into_bytes()),
            Json::Array(parts) => {
                let url = match parts.first() {
                    Some(Json::String(u)) => match templates {
                        Some(t) => t.url(u).map_err(|why| bad(self.name, why))?,
                        None => u.clone(),
                    },
                    Some(Json::Null) => {
                        return Err(bad(
                            self.name,
                            format!("{key:?} names no URL (a default target is not supported)"),
                        ));
                    }
                    _ => return Err(bad(self.name, format!("{key:?}: the URL is not text"))),
                };
                match parts.len() {
                    1 => Reference::Whole {
                        target: self.target(url),
                    },
                    3 => {
                        let number = |v: &Json, what: &str| {
                            v.as_u64().ok_or_else(|| {
                                bad(
                                    self.name,
                                    format!("{key:?}: the {what} {v} is not a whole number"),
                                )
                            })
                        };
                        let offset = number(&parts[1], "offset")?;
                        let len = number(&parts[2], "length")?;
                        self.range(key, url, offset, len)?
                    }
                    n => {
                        return Err(bad(
                            self.name,
                            format!("{key:?} is a list of {n}; a reference has 1 or 3 items"),
                        ));
                    }
                }
            }
            other => {
                return Err(bad(
                    self.name,
                    format!("{key:?} holds {other}, neither data nor a reference"),
                ));
            }
        };
        self.insert(key, reference)
    }

    fn insert(&mut self, key: &str, reference: Reference) -> Result<()> {
        let store_key = StoreKey::new(key.strip_prefix('/').unwrap_or(key))
            .map_err(|e| bad(self.name, e.to_string()))?;
        self.doc
            .entries
            .insert(store_key.as_str().to_string(), reference);
        Ok(())
    }

    fn range(&mut self, key: &str, url: String, offset: u64, len: u64) -> Result<Reference> {
        if offset.checked_add(len).is_none() {
            return Err(bad(
                self.name,
                format!("{key:?}: {len} bytes from {offset} lie past any object's end"),
            ));
        }
        Ok(Reference::Range {
            target: self.target(url),
            offset,
            len,
        })
    }

    fn inline(&self, key: &str, text: &str) -> Result<Vec<u8>> {
        match text.strip_prefix("base64:") {
            Some(b64) => STANDARD
                .decode(b64)
                .map_err(|e| bad(self.name, format!("{key:?}: bad base64 data: {e}"))),
            None => Ok(text.as_bytes().to_vec()),
        }
    }

    fn target(&mut self, url: String) -> u32 {
        let next = self.doc.targets.len() as u32;
        *self.target_index.entry(url).or_insert_with_key(|url| {
            self.doc.targets.push(url.clone());
            next
        })
    }

    /// Adds the references one `gen` entry makes: its key, URL, offset and length rendered
    /// for every combination of its dimensions' values.
    fn generate(&mut self, gen_entry: &Json, templates: &Templates) -> Result<()> {
        let name = self.name;
        // Text, or a number written as one.
        let field = |f: &str| -> Result<Option<String>> {
            match gen_entry.get(f) {
                None => Ok(None),
                Some(Json::String(s)) => Ok(Some(s.clone())),
                Some(Json::Number(n)) => Ok(Some(n.to_string())),
                Some(_) => Err(bad(name, format!("generator field {f:?} is not text"))),
            }
        };
        let key = field("key")?.ok_or_else(|| bad(name, "a generator has no \"key\""))?;
        let url = field("url")?.ok_or_else(|| bad(name, "a generator has no \"url\""))?;
        let span = match (field("offset")?, field("length")?) {
            (Some(o), Some(l)) => Some((o, l)),
            (None, None) => None,
            _ => {
                return Err(bad(
                    name,
                    "a generator gives an offset without a length, or a length without an offset",
                ));
            }
        };
        let dimensions = dimensions(name, gen_entry.get("dimensions"))?;
        let count = keys_made(name, gen_entry)?;
        let rendered = |e: String| bad(name, e);
        let (key_t, url_t) = (
            templates.compile(&key).map_err(rendered)?,
            templates.compile(&url).map_err(rendered)?,
        );
        let span_t = match &span {
            Some((o, l)) => Some((
                templates.compile(o).map_err(rendered)?,
                templates.compile(l).map_err(rendered)?,
            )),
            None => None,
        };
        for mut i in 0..count {
            let mut vars = BTreeMap::new();
            for (dim, values) in dimensions.iter().rev() {
                vars.insert(dim.as_str(), values.get(i % values.len()));
                i /= values.len();
            }
            let vars = Value::from(vars);
            let k = templates.run(&key_t, vars.clone()).map_err(rendered)?;
            let u = templates.run(&url_t, vars.clone()).map_err(rendered)?;
            let reference = match &span_t {
                None => Reference::Whole {
                    target: self.target(u),
                },
                Some((o, l)) => {
                    let whole = |t, what: &str| -> Result<u64> {
                        let shown = templates.run(t, vars.clone()).map_err(rendered)?;
                        shown.trim().parse().map_err(|_| {
                            bad(
                                name,
                                format!("generated {what} {shown:?} is not a whole number"),
                            )
                        })
                    };
                    let offset = whole(o, "offset")?;
                    let len = whole(l, "length")?;
                    self.range(&k, u, offset, len)?
                }
            };
            self.insert(&k, reference)?;
        }
        Ok(())
    }
}

fn too_many_keys(name: &str) -> Error {
    bad(
        name,
        format!("its generators make more than {MOST_GENERATED_KEYS} keys"),
    )
}

/// How many keys the generator `gen_entry` makes (an error past [`MOST_GENERATED_KEYS`]).
fn keys_made(name: &str, gen_entry: &Json) -> Result<u64> {
    let dims = dimensions(name, gen_entry.get("dimensions"))?;
    if dims.iter().any(|(_, d)| d.len() == 0) {
        return Ok(0);
    }
    dims.iter()
        .try_fold(1u64, |n, (_, d)| n.checked_mul(d.len()))
        .filter(|&n| n <= MOST_GENERATED_KEYS)
        .ok_or_else(|| too_many_keys(name))
}

/// A generator's dimensions: each name with its values (a list of integers, or
/// `start`/`stop`/`step` as Python's `range`), in the document's order.
fn dimensions(name: &str, dims: Option<&Json>) -> Result<Vec<(String, Dimension)>> {
    let Some(Json::Object(dims)) = dims else {
        return Err(bad(name, "a generator has no \"dimensions\" object"));
    };
    let mut out = Vec::new();
    for (dim, spec) in dims {
        let wrong = || bad(name, format!("generator dimension {dim:?}: {spec}"));
        let values = match spec {
            Json::Array(items) => Dimension::List(
                items
                    .iter()
                    .map(|v| v.as_i64().ok_or_else(wrong))
                    .collect::<Result<_>>()?,
            ),
            Json::Object(range) => {
                let get = |k: &str, default: Option<i64>| match range.get(k) {
                    None => default.ok_or_else(wrong),
                    Some(v) => v.as_i64().ok_or_else(wrong),
                };
                let (start, stop, step) = (
                    get("start", Some(0))?,
                    get("stop", None)?,
                    get("step", Some(1))?,
                );
                let span = i128::from(stop) - i128::from(start);
                let len = match step {
                    0 => return Err(wrong()),
                    s if (s > 0) == (span > 0) && span != 0 => {
                        (span.unsigned_abs()).div_ceil(i128::from(s).unsigned_abs())
                    }
                    _ => 0,
                };
                Dimension::Range {
                    start,
                    step,
                    len: u64::try_from(len).map_err(|_| wrong())?,
                }
            }
            _ => return Err(wrong()),
        };
        out.push((dim.clone(), values));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(json: &str) -> (Vec<(String, Reference)>, Vec<String>) {
        let doc = parse(json.as_bytes(), "refs.json").unwrap_or_else(|e| panic!("{json}: {e}"));
        (doc.entries.into_iter().collect(), doc.targets)
    }

    fn refused(json: &str) -> String {
        match parse(json.as_bytes(), "refs.json") {
            Err(Error::Metadata { key, why }) if key == "refs.json" => why,
            other => panic!("{json}: {other:?}"),
        }
    }

    #[test]
    fn version_0_holds_text_json_objects_and_references() {
        let (got, targets) = entries(
            r#"{".zgroup": {"zarr_format": 2}, "a/.zattrs": "{\"u\": 1}",
                "a/0": ["s3://b/f.nc", 10, 20], "/a/1": ["s3://b/f.nc"],
                "a/2": "base64:AAEC", "a/3": "\u0000x"}"#,
        );
        assert_eq!(targets, ["s3://b/f.nc"]);
        assert_eq!(
            got,
            [
                (
                    ".zgroup".into(),
                    Reference::Inline(br#"{"zarr_format":2}"#.to_vec())
                ),
                (
                    "a/.zattrs".into(),
                    Reference::Inline(br#"{"u": 1}"#.to_vec())
                ),
                (
                    "a/0".into(),
                    Reference::Range {
                        target: 0,
                        offset: 10,
                        len: 20
                    }
                ),
                ("a/1".into(), Reference::Whole { target: 0 }),
                ("a/2".into(), Reference::Inline(vec![0, 1, 2])),
                ("a/3".into(), Reference::Inline(b"\0x".to_vec())),
            ]
        );
    }

    #[test]
    fn version_1_renders_templates_and_generators() {
        let (got, targets) = entries(
            r#"{"version": 1,
                "templates": {"u": "https://h/data", "f": "/file{{c}}.nc"},
                "refs": {"x/0": ["{{u}}/a.nc", 0, 8], "x/1": ["{{ u }}{{f(c='7')}}", 8, 8],
                         "x/2": ["plain.nc"]},
                "gen": [{"key": "y/{{i}}.{{j}}", "url": "{{u}}/p{{i}}.nc",
                         "offset": "{{(j + 1) * 1000}}", "length": 100,
                         "dimensions": {"i": {"stop": 2}, "j": [0, 5]}}]}"#,
        );
        let range = |target, offset, len| Reference::Range {
            target,
            offset,
            len,
        };
        assert_eq!(
            targets,
            [
                "https://h/data/a.nc",
                "https://h/data/file7.nc",
                "plain.nc",
                "https://h/data/p0.nc",
                "https://h/data/p1.nc"
            ]
        );
        assert_eq!(
            got,
            [
                ("x/0".into(), range(0, 0, 8)),
                ("x/1".into(), range(1, 8, 8)),
                ("x/2".into(), Reference::Whole { target: 2 }),
                ("y/0.0".into(), range(3, 1000, 100)),
                ("y/0.5".into(), range(3, 6000, 100)),
                ("y/1.0".into(), range(4, 1000, 100)),
                ("y/1.5".into(), range(4, 6000, 100)),
            ]
        );
    }

    #[test]
    fn documents_that_cannot_be_read_are_refused_with_the_reason() {
        for (json, says) in [
            ("[1]", "is a JSON object"),
            ("{\"a\": ", "not a JSON reference document"),
            (r#"{"version": 2}"#, "version 2 is not known"),
            (r#"{"version": 1, "refs": []}"#, "\"refs\" is not"),
            (r#"{"../x": "1"}"#, "relative segment"),
            (r#"{"a//b": "1"}"#, "empty segment"),
            (r#"{"a": ["f", -1, 2]}"#, "offset -1 is not a whole number"),
            (r#"{"a": ["f", 1.5, 2]}"#, "offset 1.5"),
            (
                r#"{"a": ["f", 18446744073709551615, 2]}"#,
                "past any object's end",
            ),
            (r#"{"a": ["f", 1]}"#, "list of 2"),
            (r#"{"a": [null, 1, 2]}"#, "names no URL"),
            (r#"{"a": [7]}"#, "URL is not text"),
            (r#"{"a": 7}"#, "neither data nor a reference"),
            (r#"{"a": "base64:!!"}"#, "bad base64"),
            (
                r#"{"version": 1, "templates": {"u": "x"}, "refs": {"a": ["{{u"]}}"#,
                "template",
            ),
            (
                r#"{"version": 1, "templates": {"u": "x"}, "refs": {"a": ["{{ uu }}/f.nc"]}}"#,
                "undefined",
            ),
            (
                r#"{"version": 1, "templates": {"u": "x"}, "refs": {"a": ["{{ 'x' * 10000000000 }}"]}}"#,
                "template",
            ),
            (
                r#"{"version": 1, "gen": [{"key": "k{{i}}", "url": "u",
                    "dimensions": {"i": {"stop": 100000000}}}]}"#,
                "more than 10000000 keys",
            ),
            (
                r#"{"version": 1, "gen": [{"key": "k{{i}}", "url": "u",
                    "dimensions": {"i": {"stop": 4000}, "j": {"stop": 4000}}}]}"#,
                "more than 10000000 keys",
            ),
            (
                r#"{"version": 1, "gen": [{"key": "k{{i}}", "url": "u", "dimensions":
                    {"a": {"stop": 100000000000}, "b": {"stop": 100000000000}}}]}"#,
                "more than 10000000 keys",
            ),
            (
                r#"{"version": 1, "gen": [
                    {"key": "k{{i}}", "url": "u", "dimensions": {"i": {"stop": 6000000}}},
                    {"key": "m{{i}}", "url": "u", "dimensions": {"i": {"stop": 6000000}}}]}"#,
                "more than 10000000 keys",
            ),
            (
                r#"{"version": 1, "gen": [{"key": "k", "url": "u", "offset": "1",
                    "dimensions": {"i": [1]}}]}"#,
                "offset without a length",
            ),
            (
                r#"{"version": 1, "gen": [{"key": "k", "url": "u", "offset": "x",
                    "length": "1", "dimensions": {"i": [1]}}]}"#,
                "offset \"x\" is not a whole number",
            ),
            (
                r#"{"version": 1, "gen": [{"key": "k", "url": "u",
                    "dimensions": {"i": {"stop": 3, "step": 0}}}]}"#,
                "dimension \"i\"",
            ),
        ] {
            let why = refused(json);
            assert!(why.contains(says), "{json}: {why:?} should say {says:?}");
        }
    }

    #[test]
    fn urls_are_rendered_only_where_fsspec_renders_them() {
        // Version 0, and version 1 without templates: the URL as written.
        for doc in [
            r#"{"a": ["{{u}}/f.nc", 0, 1]}"#,
            r#"{"version": null, "a": ["{{u}}/f.nc", 0, 1]}"#,
            r#"{"version": 1, "refs": {"a": ["{{u}}/f.nc", 0, 1]}}"#,
        ] {
            assert_eq!(entries(doc).1, ["{{u}}/f.nc"], "{doc}");
        }
        let (got, targets) = entries(
            r#"{"version": 1, "gen": [{"key": "k{{i}}", "url": "f{{i}}",
                "dimensions": {"i": {"start": 5, "stop": 0, "step": -2}}}]}"#,
        );
        assert_eq!(targets, ["f5", "f3", "f1"]);
        assert_eq!(got.len(), 3);
        let (got, _) = entries(
            r#"{"version": 1, "gen": [{"key": "k{{i}}", "url": "f", "dimensions":
                {"i": {"start": -9000000000000000000, "stop": 9000000000000000000,
                       "step": 1000000000000000000}}}]}"#,
        );
        assert_eq!(got.len(), 18);
        let keys: Vec<&str> = got.iter().map(|(k, _)| k.as_str()).collect();
        assert!(
            keys.contains(&"k-9000000000000000000") && keys.contains(&"k8000000000000000000"),
            "{keys:?}"
        );
        let (got, _) = entries(
            r#"{"version": 1, "gen": [{"key": "k{{i}}", "url": "f", "dimensions":
                {"a": {"stop": 100000000000}, "b": {"stop": 100000000000}, "c": []}}]}"#,
        );
        assert!(got.is_empty(), "a dimension without values makes no keys");
    }

    #[test]
    fn a_later_reference_replaces_an_earlier_one_and_targets_are_shared() {
        let (got, targets) = entries(
            r#"{"version": 1, "refs": {"k": ["f.nc", 0, 1], "m": ["f.nc", 1, 1]},
                "gen": [{"key": "k", "url": "g.nc", "dimensions": {"i": [0]}}]}"#,
        );
        assert_eq!(targets, ["f.nc", "g.nc"]);
        assert_eq!(got[0], ("k".into(), Reference::Whole { target: 1 }));
    }
}
