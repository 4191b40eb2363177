//! The reference document: the JSON that kerchunk, VirtualiZarr and fsspec's
//! `ReferenceFileSystem` call a reference set, parsed into keys that each hold their bytes
//! inline or name bytes of another object by URL.
//!
//! Owns the document's syntax (versions 0 and 1): inline text, `base64:` values and values
//! written as JSON objects; one-element references (a whole object) and three-element ones (a
//! byte range); version 1's `templates` and `gen`, rendered as Jinja by minijinja with a
//! bounded amount of work. It must not know where the URLs lead or how they are read.

use super::super::StoreKey;
use crate::error::{Error, Result};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use minijinja::value::{Kwargs, Value};
use serde_json::Value as Json;
use std::collections::{BTreeMap, HashMap};

/// Most keys one document's generators may make: each is a chunk reference held in memory.
pub const MOST_GENERATED_KEYS: u64 = 10_000_000;

/// Instructions one rendering of a template may take (minijinja's fuel): far more than any
/// URL or offset needs, far less than a loop that would hang the open.
const FUEL_PER_RENDERING: u64 = 100_000;

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

/// The parser's state: the document's name for messages, its templates and the targets seen.
struct Parser<'a> {
    name: &'a str,
    templates: BTreeMap<String, String>,
    jinja: Option<minijinja::Environment<'static>>,
    target_index: HashMap<String, u32>,
    doc: Document,
}

fn bad(name: &str, why: impl Into<String>) -> Error {
    Error::Metadata {
        key: name.to_string(),
        why: why.into(),
    }
}

/// Parses the reference document `bytes`, called `name` in messages.
pub fn parse(bytes: &[u8], name: &str) -> Result<Document> {
    let json: Json = serde_json::from_slice(bytes)
        .map_err(|e| bad(name, format!("not a JSON reference document: {e}")))?;
    let Json::Object(top) = json else {
        return Err(bad(name, "a reference document is a JSON object"));
    };
    let mut parser = Parser {
        name,
        templates: BTreeMap::new(),
        jinja: None,
        target_index: HashMap::new(),
        doc: Document::default(),
    };
    match top.get("version") {
        None => {
            for (key, value) in &top {
                parser.add(key, value)?;
            }
        }
        Some(v) if v.as_u64() == Some(1) => {
            parser.read_templates(top.get("templates"))?;
            match top.get("refs") {
                None => {}
                Some(Json::Object(refs)) => {
                    for (key, value) in refs {
                        parser.add(key, value)?;
                    }
                }
                Some(_) => return Err(bad(name, "\"refs\" is not a JSON object")),
            }
            match top.get("gen") {
                None | Some(Json::Null) => {}
                Some(Json::Array(gens)) => {
                    for g in gens {
                        parser.generate(g)?;
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
    Ok(parser.doc)
}

impl Parser<'_> {
    fn read_templates(&mut self, templates: Option<&Json>) -> Result<()> {
        match templates {
            None | Some(Json::Null) => Ok(()),
            Some(Json::Object(map)) => {
                for (k, v) in map {
                    let Json::String(text) = v else {
                        return Err(bad(self.name, format!("template {k:?} is not text")));
                    };
                    self.templates.insert(k.clone(), text.clone());
                }
                Ok(())
            }
            Some(_) => Err(bad(self.name, "\"templates\" is not a JSON object")),
        }
    }

    /// Adds the reference `value` under `key` (a later one replaces an earlier one).
    fn add(&mut self, key: &str, value: &Json) -> Result<()> {
        let reference = match value {
            Json::String(text) => Reference::Inline(self.inline(key, text)?),
            Json::Object(_) => Reference::Inline(value.to_string().into_bytes()),
            Json::Array(parts) => {
                let url = match parts.first() {
                    Some(Json::String(u)) => self.render(u, &Value::UNDEFINED)?,
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

    /// `text` with its `{{ ... }}` rendered, the templates and `vars` in scope. A text whose
    /// every placeholder names a template without placeholders of its own is substituted
    /// directly (what nearly every document holds); anything else is rendered as Jinja.
    fn render(&mut self, text: &str, vars: &Value) -> Result<String> {
        if !text.contains("{{") {
            return Ok(text.to_string());
        }
        if vars.is_undefined()
            && let Some(done) = substituted(text, &self.templates)
        {
            return Ok(done);
        }
        let name = self.name;
        let templates = &self.templates;
        let env = self.jinja.get_or_insert_with(|| jinja(templates));
        // Templates with placeholders are functions of the environment, not values.
        let values: BTreeMap<String, String> = templates
            .iter()
            .filter(|(_, t)| !t.contains("{{"))
            .map(|(k, t)| (k.clone(), t.clone()))
            .collect();
        let context = minijinja::context! { ..vars.clone(), ..values };
        env.render_str(text, context)
            .map_err(|e| bad(name, format!("template {text:?}: {e}")))
    }

    /// Adds the references one `gen` entry makes: its key, URL, offset and length rendered
    /// for every combination of its dimensions' values.
    fn generate(&mut self, gen_entry: &Json) -> Result<()> {
        // Text, or a number written as one.
        let field = |f: &str| -> Result<Option<String>> {
            match gen_entry.get(f) {
                None => Ok(None),
                Some(Json::String(s)) => Ok(Some(s.clone())),
                Some(Json::Number(n)) => Ok(Some(n.to_string())),
                Some(_) => Err(bad(self.name, format!("generator field {f:?} is not text"))),
            }
        };
        let key = field("key")?.ok_or_else(|| bad(self.name, "a generator has no \"key\""))?;
        let url = field("url")?.ok_or_else(|| bad(self.name, "a generator has no \"url\""))?;
        let span = match (field("offset")?, field("length")?) {
            (Some(o), Some(l)) => Some((o, l)),
            (None, None) => None,
            _ => {
                return Err(bad(
                    self.name,
                    "a generator gives an offset without a length, or a length without an offset",
                ));
            }
        };
        let dimensions = self.dimensions(gen_entry.get("dimensions"))?;
        let count = dimensions
            .iter()
            .try_fold(1u64, |n, (_, values)| n.checked_mul(values.len() as u64))
            .filter(|&n| n <= MOST_GENERATED_KEYS)
            .ok_or_else(|| {
                bad(
                    self.name,
                    format!("a generator makes more than {MOST_GENERATED_KEYS} keys"),
                )
            })?;
        for mut i in 0..count {
            let mut vars = BTreeMap::new();
            for (name, values) in dimensions.iter().rev() {
                let n = values.len() as u64;
                vars.insert(name.clone(), values[(i % n) as usize]);
                i /= n;
            }
            let vars = Value::from(vars);
            let k = self.render(&key, &vars)?;
            let u = self.render(&url, &vars)?;
            let reference = match &span {
                None => Reference::Whole {
                    target: self.target(u),
                },
                Some((o, l)) => {
                    let whole = |this: &mut Self, text: &str, what: &str| -> Result<u64> {
                        let shown = this.render(text, &vars)?;
                        shown.trim().parse().map_err(|_| {
                            bad(
                                this.name,
                                format!("generated {what} {shown:?} is not a whole number"),
                            )
                        })
                    };
                    let offset = whole(self, o, "offset")?;
                    let len = whole(self, l, "length")?;
                    self.range(&k, u, offset, len)?
                }
            };
            self.insert(&k, reference)?;
        }
        Ok(())
    }

    /// A generator's dimensions: each name with its values (a list of integers, or
    /// `start`/`stop`/`step`), in the document's order.
    fn dimensions(&self, dims: Option<&Json>) -> Result<Vec<(String, Vec<i64>)>> {
        let Some(Json::Object(dims)) = dims else {
            return Err(bad(self.name, "a generator has no \"dimensions\" object"));
        };
        let mut out = Vec::new();
        for (name, spec) in dims {
            let wrong = || bad(self.name, format!("generator dimension {name:?}: {spec}"));
            let values: Vec<i64> = match spec {
                Json::Array(items) => items
                    .iter()
                    .map(|v| v.as_i64().ok_or_else(wrong))
                    .collect::<Result<_>>()?,
                Json::Object(range) => {
                    let get = |k: &str, default: Option<i64>| match range.get(k) {
                        None => default.ok_or_else(wrong),
                        Some(v) => v.as_i64().ok_or_else(wrong),
                    };
                    let (start, stop, step) = (get("start", Some(0))?, get("stop", None)?, {
                        get("step", Some(1))?
                    });
                    if step <= 0 {
                        return Err(wrong());
                    }
                    let n = u64::try_from(stop.saturating_sub(start))
                        .unwrap_or(0)
                        .div_ceil(step as u64);
                    if n > MOST_GENERATED_KEYS {
                        return Err(bad(
                            self.name,
                            format!("a generator makes more than {MOST_GENERATED_KEYS} keys"),
                        ));
                    }
                    (0..n as i64).map(|i| start + i * step).collect()
                }
                _ => return Err(wrong()),
            };
            out.push((name.clone(), values));
        }
        Ok(out)
    }
}

/// `text` with each `{{ name }}` replaced by template `name`, when every placeholder is one
/// and no template used holds a placeholder of its own; `None` otherwise.
fn substituted(text: &str, templates: &BTreeMap<String, String>) -> Option<String> {
    let mut out = String::with_capacity(text.len() + 32);
    let mut rest = text;
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let close = after.find("}}")?;
        let value = templates.get(after[..close].trim())?;
        if value.contains("{{") {
            return None;
        }
        out.push_str(value);
        rest = &after[close + 2..];
    }
    out.push_str(rest);
    Some(out)
}

/// The Jinja environment templates render in: bounded work, no autoescaping, and each
/// template that holds placeholders callable as a function of keyword arguments (as fsspec
/// makes them), rendered with those arguments.
fn jinja(templates: &BTreeMap<String, String>) -> minijinja::Environment<'static> {
    let mut env = minijinja::Environment::new();
    env.set_fuel(Some(FUEL_PER_RENDERING));
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
    for (name, text) in templates {
        if text.contains("{{") {
            let text = text.clone();
            env.add_function(name.clone(), move |kwargs: Kwargs| {
                let mut inner = minijinja::Environment::new();
                inner.set_fuel(Some(FUEL_PER_RENDERING));
                inner.render_str(&text, Value::from(kwargs))
            });
        }
    }
    env
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
            (r#"{"version": 1, "refs": {"a": ["{{u"]}}"#, "template"),
            (
                r#"{"version": 1, "refs": {"a": ["{{ nope.x }}"]}}"#,
                "template",
            ),
            (
                r#"{"version": 1, "refs": {"a": ["{{ 'x' * 10000000000 }}"]}}"#,
                "template",
            ),
            (
                r#"{"version": 1, "refs": {"a": ["{{ range(10000) | map('string') | join('x' * 100000) }}"]}}"#,
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
    fn a_later_reference_replaces_an_earlier_one_and_targets_are_shared() {
        let (got, targets) = entries(
            r#"{"version": 1, "refs": {"k": ["f.nc", 0, 1], "m": ["f.nc", 1, 1]},
                "gen": [{"key": "k", "url": "g.nc", "dimensions": {"i": [0]}}]}"#,
        );
        assert_eq!(targets, ["f.nc", "g.nc"]);
        assert_eq!(got[0], ("k".into(), Reference::Whole { target: 1 }));
    }
}
