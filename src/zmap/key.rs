//! Validated store keys and prefixes.
//!
//! A key is a `/`-separated path relative to the dataset root: no leading or trailing `/`,
//! no empty, `.` or `..` segments, no control characters, valid UTF-8, at most 1024 bytes.
//! Core code takes `&StoreKey`, never `&str`, so a key can never escape the dataset root.

use crate::error::{Error, Result};
use std::fmt;

/// Longest key accepted (the S3 limit).
pub const MAX_KEY_LEN: usize = 1024;

/// A key naming one object.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StoreKey(String);

/// A prefix naming a "directory": the dataset root or a key.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StorePrefix(String);

fn check_segment(key: &str, seg: &str) -> Result<()> {
    let bad = |why: &str| {
        Err(Error::BadKey {
            key: key.to_string(),
            why: why.to_string(),
        })
    };
    if seg.is_empty() {
        return bad("empty segment");
    }
    if seg == "." || seg == ".." {
        return bad("relative segment");
    }
    if seg.chars().any(|c| c.is_control() || c == '\\') {
        return bad("control character or backslash");
    }
    Ok(())
}

fn check_path(path: &str) -> Result<()> {
    if path.len() > MAX_KEY_LEN {
        return Err(Error::BadKey {
            key: path.chars().take(64).collect::<String>() + "...",
            why: format!("longer than {MAX_KEY_LEN} bytes"),
        });
    }
    path.split('/').try_for_each(|seg| check_segment(path, seg))
}

impl StoreKey {
    /// Validates `path` (e.g. `g1/v/.zarray`).
    pub fn new(path: &str) -> Result<StoreKey> {
        check_path(path)?;
        Ok(StoreKey(path.to_string()))
    }

    /// The key as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The last segment.
    pub fn name(&self) -> &str {
        self.0.rsplit('/').next().unwrap_or(&self.0)
    }

    /// The prefix holding this key.
    pub fn parent(&self) -> StorePrefix {
        match self.0.rfind('/') {
            Some(i) => StorePrefix(self.0[..i].to_string()),
            None => StorePrefix::root(),
        }
    }
}

impl StorePrefix {
    /// The dataset root.
    pub fn root() -> StorePrefix {
        StorePrefix(String::new())
    }

    /// Validates a prefix; `""` is the root.
    pub fn new(path: &str) -> Result<StorePrefix> {
        if path.is_empty() {
            return Ok(StorePrefix::root());
        }
        check_path(path)?;
        Ok(StorePrefix(path.to_string()))
    }

    /// The prefix as text (`""` for the root).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// True for the dataset root.
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    /// The key of child `name` below this prefix.
    pub fn key(&self, name: &str) -> Result<StoreKey> {
        if self.is_root() {
            StoreKey::new(name)
        } else {
            StoreKey::new(&format!("{}/{}", self.0, name))
        }
    }

    /// The prefix of child `name` below this prefix.
    pub fn child(&self, name: &str) -> Result<StorePrefix> {
        self.key(name).map(|k| StorePrefix(k.0))
    }

    /// True when `key` lies below this prefix.
    pub fn contains(&self, key: &StoreKey) -> bool {
        self.is_root()
            || (key.0.len() > self.0.len()
                && key.0.starts_with(&self.0)
                && key.0.as_bytes()[self.0.len()] == b'/')
    }
}

impl fmt::Display for StoreKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Display for StorePrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_keys_are_refused() {
        for bad in [
            "", "/a", "a/", "a//b", "..", "a/../b", "./a", "a/\u{1}", "a\\b", "a/\0",
        ] {
            assert!(StoreKey::new(bad).is_err(), "{bad:?} accepted");
        }
        assert!(StoreKey::new(&"a".repeat(MAX_KEY_LEN + 1)).is_err());
    }

    #[test]
    fn keys_and_prefixes_compose() {
        let k = StoreKey::new("g1/v/.zarray").unwrap();
        assert_eq!(k.name(), ".zarray");
        assert_eq!(k.parent().as_str(), "g1/v");
        let root = StorePrefix::root();
        assert_eq!(root.key(".zgroup").unwrap().as_str(), ".zgroup");
        let g = root.child("g1").unwrap();
        assert!(g.contains(&k));
        assert!(!g.contains(&StoreKey::new("g10/x").unwrap()));
        assert!(root.contains(&k));
        assert!(g.key("..").is_err());
    }
}
