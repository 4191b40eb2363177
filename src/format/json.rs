//! The JSON tree metadata is read into: read-only, and borrowing every string that holds no
//! escape from the bytes it was parsed from. Objects keep their members in order in a vector
//! (attribute order is netCDF attribute order); a key that appears twice keeps its first
//! place and its last value, as serde_json's ordered map does. Opening a dataset of a
//! thousand variables parses a few thousand small objects (or one `.zmetadata` holding them
//! all), and this tree costs a third of a `serde_json::Value` to build, look up and drop.
//!
//! Parsing is serde_json's (same grammar, numbers, depth limit); [`Json::to_value`] converts a
//! piece to a `serde_json::Value` for code that keeps it (codec configurations, attribute
//! values). Knows nothing of Zarr.

use serde::de::{Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::borrow::Cow;
use std::fmt;

/// A JSON value.
#[derive(Debug, Clone, PartialEq)]
pub enum Json<'a> {
    Null,
    Bool(bool),
    Number(Number),
    String(Cow<'a, str>),
    Array(Vec<Json<'a>>),
    Object(Object<'a>),
}

/// A JSON object: its members in document order, each key once.
///
/// Objects of more than [`SMALL`] members also keep the positions of their members sorted by
/// key, so a lookup is a binary search and folding repeated keys a sort: an object of a
/// million attributes costs what a hash map would, never a scan per member.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Object<'a> {
    members: Vec<(Cow<'a, str>, Json<'a>)>,
    /// Positions in `members` ordered by key (and by position among equal keys); empty for
    /// objects of at most [`SMALL`] members.
    by_key: Vec<usize>,
}

/// Objects up to this many members are searched member by member.
const SMALL: usize = 16;

/// Parses `bytes` (strict JSON).
pub fn parse(bytes: &[u8]) -> Result<Json<'_>, serde_json::Error> {
    Parser::default().parse(bytes)
}

/// Parses many texts that live as long as each other, reusing its scratch space: each array
/// and object of the trees it builds is allocated once, at its final size.
#[derive(Default)]
pub struct Parser<'a> {
    open: Open<'a>,
}

impl<'a> Parser<'a> {
    /// Parses `bytes` (strict JSON). The text is checked to be UTF-8 once, as a whole,
    /// rather than string by string (what serde_json does with bytes): invalid UTF-8 is an
    /// error either way, inside a string or out.
    pub fn parse(&mut self, bytes: &'a [u8]) -> Result<Json<'a>, serde_json::Error> {
        let text = std::str::from_utf8(bytes).map_err(|e| {
            serde::de::Error::custom(format_args!(
                "invalid UTF-8 at byte {} of the JSON text",
                e.valid_up_to()
            ))
        })?;
        let mut de = serde_json::Deserializer::from_str(text);
        let parsed = self.open.seed().deserialize(&mut de).and_then(|value| {
            de.end()?;
            Ok(value)
        });
        // A failed parse leaves the pieces of the values it had open.
        self.open.items.clear();
        self.open.members.clear();
        parsed
    }
}

impl<'a> Json<'a> {
    /// The member `key` of an object (`None` for anything else).
    pub fn get(&self, key: &str) -> Option<&Json<'a>> {
        self.as_object()?.get(key)
    }

    pub fn as_object(&self) -> Option<&Object<'a>> {
        match self {
            Json::Object(o) => Some(o),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Json<'a>]> {
        match self {
            Json::Array(a) => Some(a),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Json::Number(n) => n.as_u64(),
            _ => None,
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Json::Number(n) => n.as_i64(),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Json::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Json::Null)
    }

    /// The same value as a `serde_json::Value` (owned, members in the same order).
    pub fn to_value(&self) -> Value {
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => Value::Number(n.clone()),
            Json::String(s) => Value::String(s.to_string()),
            Json::Array(a) => Value::Array(a.iter().map(Json::to_value).collect()),
            Json::Object(o) => Value::Object(o.to_map()),
        }
    }

    /// The same value, owning all its strings.
    pub fn into_owned(self) -> Json<'static> {
        match self {
            Json::Null => Json::Null,
            Json::Bool(b) => Json::Bool(b),
            Json::Number(n) => Json::Number(n),
            Json::String(s) => Json::String(Cow::Owned(s.into_owned())),
            Json::Array(a) => Json::Array(a.into_iter().map(Json::into_owned).collect()),
            Json::Object(o) => Json::Object(o.into_owned()),
        }
    }
}

/// JSON text (as serde_json prints it), for messages.
impl fmt::Display for Json<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.to_value().fmt(f)
    }
}

impl<'a> Object<'a> {
    pub fn get(&self, key: &str) -> Option<&Json<'a>> {
        self.position(key).map(|at| &self.members[at].1)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.position(key).is_some()
    }

    /// Sets member `key`, in its place if it exists and last otherwise.
    pub fn insert(&mut self, key: &str, value: Json<'a>) {
        match self.position(key) {
            Some(at) => self.members[at].1 = value,
            None => {
                self.members.push((Cow::Owned(key.to_string()), value));
                if self.by_key.is_empty() {
                    self.by_key = sorted_by_key(&self.members);
                } else {
                    let members = &self.members;
                    let at = self
                        .by_key
                        .partition_point(|&i| members[i].0.as_ref() < key);
                    self.by_key.insert(at, members.len() - 1);
                }
            }
        }
    }

    /// Takes member `key` out.
    pub fn remove(&mut self, key: &str) -> Option<Json<'a>> {
        let at = self.position(key)?;
        let (_, value) = self.members.remove(at);
        if self.members.len() <= SMALL {
            self.by_key.clear();
        } else {
            self.by_key.retain(|&i| i != at);
            self.by_key
                .iter_mut()
                .filter(|i| **i > at)
                .for_each(|i| *i -= 1);
        }
        Some(value)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &Json<'a>)> {
        self.members.iter().map(|(k, v)| (k.as_ref(), v))
    }

    pub fn to_map(&self) -> Map<String, Value> {
        self.members
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_value()))
            .collect()
    }

    pub fn into_owned(self) -> Object<'static> {
        Object {
            members: self
                .members
                .into_iter()
                .map(|(k, v)| (Cow::Owned(k.into_owned()), v.into_owned()))
                .collect(),
            by_key: self.by_key,
        }
    }

    /// Where member `key` is.
    fn position(&self, key: &str) -> Option<usize> {
        if self.by_key.is_empty() {
            return self.members.iter().position(|(k, _)| k == key);
        }
        let members = &self.members;
        self.by_key
            .binary_search_by(|&at| members[at].0.as_ref().cmp(key))
            .ok()
            .map(|i| self.by_key[i])
    }

    /// Members as parsed, a repeated key folded into its first place with its last value.
    fn from_members(members: Vec<(Cow<'a, str>, Json<'a>)>) -> Object<'a> {
        if members.len() <= SMALL {
            let repeated = members
                .iter()
                .enumerate()
                .any(|(i, (k, _))| members[..i].iter().any(|(p, _)| p == k));
            let mut members = members;
            if repeated {
                let mut folded: Vec<(Cow<'a, str>, Json<'a>)> = Vec::with_capacity(members.len());
                for (k, v) in members.drain(..) {
                    match folded.iter_mut().find(|(p, _)| *p == k) {
                        Some((_, old)) => *old = v,
                        None => folded.push((k, v)),
                    }
                }
                members = folded;
            }
            return Object {
                members,
                by_key: Vec::new(),
            };
        }
        let by_key = sorted_by_key(&members);
        let same = |a: &usize, b: &usize| members[*a].0 == members[*b].0;
        if !by_key.windows(2).any(|w| same(&w[0], &w[1])) {
            return Object { members, by_key };
        }
        // Each run of equal keys in `by_key` lists its positions in order: the first keeps
        // its place and takes the value of the last.
        let mut last_of: Vec<Option<usize>> = vec![None; members.len()];
        for run in by_key.chunk_by(same) {
            if let (Some(&first), Some(&last)) = (run.first(), run.last()) {
                last_of[first] = Some(last);
            }
        }
        let (keys, mut values): (Vec<_>, Vec<_>) =
            members.into_iter().map(|(k, v)| (k, Some(v))).unzip();
        let members: Vec<(Cow<'a, str>, Json<'a>)> = keys
            .into_iter()
            .zip(&last_of)
            .filter_map(|(k, last)| Some((k, values[(*last)?].take()?)))
            .collect();
        let by_key = sorted_by_key(&members);
        Object { members, by_key }
    }
}

/// The positions of `members` ordered by key, equal keys in document order (empty for small
/// objects, which are searched member by member).
fn sorted_by_key(members: &[(Cow<'_, str>, Json<'_>)]) -> Vec<usize> {
    if members.len() <= SMALL {
        return Vec::new();
    }
    let mut by_key: Vec<usize> = (0..members.len()).collect();
    by_key.sort_by(|&a, &b| members[a].0.cmp(&members[b].0));
    by_key
}

impl<'a> IntoIterator for Object<'a> {
    type Item = (Cow<'a, str>, Json<'a>);
    type IntoIter = std::vec::IntoIter<(Cow<'a, str>, Json<'a>)>;
    fn into_iter(self) -> Self::IntoIter {
        self.members.into_iter()
    }
}

/// The items and members parsed so far of every array and object still open, innermost
/// last. A closing array or object moves its own (the tail) into a vector of exactly their
/// number: one allocation per array or object, none to grow it.
#[derive(Default)]
struct Open<'a> {
    items: Vec<Json<'a>>,
    members: Vec<(Cow<'a, str>, Json<'a>)>,
}

impl<'a> Open<'a> {
    fn seed(&mut self) -> Seed<'_, 'a> {
        Seed(self)
    }
}

/// Parses one value, with the pending pieces of the values around it.
struct Seed<'s, 'a>(&'s mut Open<'a>);

impl<'de> DeserializeSeed<'de> for Seed<'_, 'de> {
    type Value = Json<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Json<'de>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_, 'de> {
    type Value = Json<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }

    fn visit_bool<E>(self, b: bool) -> Result<Json<'de>, E> {
        Ok(Json::Bool(b))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Json<'de>, E> {
        Ok(Json::Number(n.into()))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Json<'de>, E> {
        Ok(Json::Number(n.into()))
    }

    fn visit_f64<E>(self, x: f64) -> Result<Json<'de>, E> {
        Ok(Number::from_f64(x).map_or(Json::Null, Json::Number))
    }

    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Borrowed(s)))
    }

    fn visit_str<E>(self, s: &str) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Owned(s.to_string())))
    }

    fn visit_string<E>(self, s: String) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Owned(s)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json<'de>, A::Error> {
        let open = self.0;
        let start = open.items.len();
        while let Some(item) = seq.next_element_seed(open.seed())? {
            open.items.push(item);
        }
        Ok(Json::Array(open.items.drain(start..).collect()))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json<'de>, A::Error> {
        let open = self.0;
        let start = open.members.len();
        while let Some(Key(k)) = map.next_key()? {
            let value = map.next_value_seed(open.seed())?;
            open.members.push((k, value));
        }
        let members = open.members.drain(start..).collect();
        Ok(Json::Object(Object::from_members(members)))
    }
}

impl<'de> Deserialize<'de> for Json<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Open::default().seed().deserialize(d)
    }
}

/// An object key, borrowed when it holds no escape.
struct Key<'a>(Cow<'a, str>);

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Key<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Borrowed(s)))
    }

    fn visit_str<E>(self, s: &str) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Owned(s.to_string())))
    }

    fn visit_string<E>(self, s: String) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Owned(s)))
    }
}

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(KeyVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tree_is_the_value_serde_json_reads() {
        let texts = [
            r#"{"b": 1, "a": [1, -2, 2.5, 1e300, true, null, "x\"y"], "c": {"d": {}}}"#,
            r#"{"k": 1, "j": 2, "k": 3}"#,
            r#"[18446744073709551615, -9223372036854775808, 0.1, "é\u00e9\ud83d\ude00"]"#,
            r#""text""#,
            r#"{"a\nb": "c"}"#,
        ];
        for t in texts {
            let value: Value = serde_json::from_str(t).unwrap();
            let tree = parse(t.as_bytes()).unwrap();
            assert_eq!(tree.to_value(), value, "{t}");
            assert_eq!(tree.clone().into_owned().to_value(), value, "{t}");
            // Same member order as serde_json's ordered map.
            assert_eq!(tree.to_string(), value.to_string(), "{t}");
        }
    }

    /// Large objects (sorted index): repeats folded as serde_json folds them, every key found,
    /// edits keep the index right.
    #[test]
    fn large_objects_fold_repeats_and_find_every_key() {
        let text = format!(
            "{{{}}}",
            (0..3000)
                .map(|i| format!(r#""k{}": {i}"#, (i * 7) % 2500))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let value: Value = serde_json::from_str(&text).unwrap();
        let tree = parse(text.as_bytes()).unwrap();
        assert_eq!(tree.to_string(), value.to_string());
        let mut o = match tree {
            Json::Object(o) => o,
            _ => unreachable!(),
        };
        for (k, v) in value.as_object().unwrap() {
            assert_eq!(o.get(k).map(Json::to_value).as_ref(), Some(v), "{k}");
        }
        assert!(o.get("k2500").is_none() && o.get("").is_none());
        o.insert("new", Json::Bool(true));
        o.insert("k3", Json::Null);
        assert_eq!(
            o.remove("k10").and_then(|v| v.as_u64()),
            value["k10"].as_u64()
        );
        assert!(o.get("k10").is_none());
        assert_eq!(o.get("new"), Some(&Json::Bool(true)));
        assert_eq!(o.get("k3"), Some(&Json::Null));
        assert_eq!(o.iter().count(), 2500);
        assert_eq!(
            o.get("k2499").map(Json::to_value).as_ref(),
            value.get("k2499")
        );
        for (k, v) in value.as_object().unwrap() {
            let want = match k.as_str() {
                "k10" => None,
                "k3" => Some(Value::Null),
                _ => Some(v.clone()),
            };
            assert_eq!(o.get(k).map(Json::to_value), want, "{k} after edits");
        }
        let keys: Vec<String> = o.iter().map(|(k, _)| k.to_string()).collect();
        for (i, k) in keys.iter().enumerate().step_by(97) {
            o.insert(&format!("{k}+"), Json::Bool(i % 2 == 0));
        }
        for k in keys.iter().step_by(89) {
            o.remove(k);
        }
        for (i, k) in keys.iter().enumerate() {
            let removed = i % 89 == 0;
            assert_eq!(o.contains_key(k), !removed, "{k}");
            if i % 97 == 0 {
                assert_eq!(o.get(&format!("{k}+")), Some(&Json::Bool(i % 2 == 0)));
            }
        }
    }

    #[test]
    fn a_repeated_key_keeps_its_first_place_and_last_value() {
        let many: String = (0..40).map(|i| format!("\"k{i}\": {i}, ")).collect();
        for text in [
            r#"{"k": 1, "j": 2, "k": 3}"#.to_string(),
            format!(r#"{{"k": 1, {many} "k": 3}}"#),
        ] {
            let tree = parse(text.as_bytes()).unwrap();
            let o = tree.as_object().unwrap();
            assert_eq!(o.iter().next().map(|(k, _)| k), Some("k"));
            assert_eq!(o.get("k").and_then(Json::as_u64), Some(3));
            assert_eq!(o.iter().filter(|(k, _)| *k == "k").count(), 1);
        }
    }

    #[test]
    fn strings_without_escapes_borrow_the_input() {
        let tree = parse(br#"{"plain": "text", "esc\u0041": "a\tb"}"#).unwrap();
        let o = tree.as_object().unwrap();
        assert!(matches!(
            o.get("plain"),
            Some(Json::String(Cow::Borrowed("text")))
        ));
        assert!(matches!(o.get("escA"), Some(Json::String(Cow::Owned(s))) if s == "a\tb"));
    }

    #[test]
    fn bad_or_deep_json_is_an_error() {
        for t in ["{", "{\"a\" 1}", "[1,]", "nul", "{\"a\": NaN}", ""] {
            assert!(parse(t.as_bytes()).is_err(), "{t}");
        }
        let deep = "[".repeat(100_000);
        assert!(parse(deep.as_bytes()).is_err());
    }

    #[test]
    fn a_parser_kept_for_many_texts_reads_each_whole_after_a_failure() {
        let texts: [&[u8]; 5] = [
            br#"{"a": [1, {"b": [2, 3]}], "c": {"d": 4}}"#,
            br#"{"a": [1, {"b": [2, 3"#,
            br#"{"x": {"y": [5, 6], "z": "w"}, "v": [[], {}]}"#,
            b"[1, 2, 3] 4",
            br#"{"k": 1, "j": {"k": 2}, "k": 3}"#,
        ];
        let mut parser = Parser::default();
        for t in texts {
            let kept = parser.parse(t).map(|v| v.to_value()).ok();
            let fresh = serde_json::from_slice::<Value>(t).ok();
            assert_eq!(kept, fresh, "{}", String::from_utf8_lossy(t));
        }
    }

    #[test]
    fn invalid_utf8_is_an_error_inside_a_string_or_out() {
        for t in [
            &b"{\"a\": \"\xff\"}"[..],
            b"{\"\xc3\": 1}",
            b"[1, \xe2\x82]",
            b"\xef\xbb\xbf{}",
        ] {
            assert!(serde_json::from_slice::<Value>(t).is_err());
            assert!(parse(t).is_err(), "{}", String::from_utf8_lossy(t));
        }
    }

    #[test]
    fn object_edits() {
        let mut o = match parse(br#"{"a": 1, "b": 2}"#).unwrap() {
            Json::Object(o) => o,
            _ => unreachable!(),
        };
        o.insert("a", Json::Bool(true));
        o.insert("c", Json::Null);
        assert_eq!(o.remove("b").and_then(|v| v.as_u64()), Some(2));
        assert_eq!(
            Json::Object(o).to_string(),
            r#"{"a":true,"c":null}"#.to_string()
        );
    }
}
