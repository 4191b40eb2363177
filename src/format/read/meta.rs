//! Metadata objects while a dataset is read: taken from the consolidated `.zmetadata`, or
//! fetched from the store in batches (concurrently on remote stores) and kept for the whole
//! read, so the parsed objects borrow their text.
//!
//! Owns fetching, keeping and parsing the objects; what they mean is the reader's. It must not
//! know the NCZarr or Zarr keys inside them.

use crate::error::{Error, Result};
use crate::format::json::{self, Json, Object};
use crate::format::lenient;
use crate::zmap::{Store, StoreKey, StorePrefix};
use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;
use typed_arena::Arena;

type Obj<'a> = Object<'a>;

/// Metadata objects, from `.zmetadata` or the store. Objects known to be needed soon are
/// fetched in one batch ([`Meta::prefetch`]), which a remote store serves concurrently.
/// Fetched bytes stay in an arena for the whole read, so the parsed objects borrow them.
pub(super) struct Meta<'a> {
    store: &'a dyn Store,
    /// The entries of `.zmetadata`; [`Meta::get`] takes them out (nothing is read twice but
    /// the root group, which is put back).
    consolidated: Option<RefCell<HashMap<Cow<'a, str>, Json<'a>>>>,
    /// Where fetched objects are kept.
    fetched: &'a Arena<Vec<u8>>,
    /// Objects fetched so far (in concurrent batches), so none is fetched twice.
    prefetched: RefCell<HashMap<String, Option<&'a [u8]>>>,
    /// Parses every fetched object.
    parser: RefCell<json::Parser<'a>>,
}

pub(super) fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}/{name}")
    }
}

impl<'a> Meta<'a> {
    pub(super) fn new(
        store: &'a dyn Store,
        consolidated: Option<Obj<'a>>,
        fetched: &'a Arena<Vec<u8>>,
    ) -> Meta<'a> {
        Meta {
            store,
            consolidated: consolidated.map(|c| RefCell::new(c.into_iter().collect())),
            fetched,
            prefetched: RefCell::new(HashMap::new()),
            parser: RefCell::new(json::Parser::default()),
        }
    }

    /// Parses the fetched object `key`.
    pub(super) fn parse(&self, key: &str, bytes: &'a [u8]) -> Result<Obj<'a>> {
        let parsed = lenient::parse_with(&mut self.parser.borrow_mut(), bytes);
        match parsed.map_err(|e| Error::metadata(key, e.to_string()))? {
            Json::Object(m) => Ok(m),
            _ => Err(Error::metadata(key, "not a JSON object")),
        }
    }

    pub(super) fn keep(&self, bytes: Option<Vec<u8>>) -> Option<&'a [u8]> {
        let fetched: &'a Arena<Vec<u8>> = self.fetched;
        bytes.map(|b| fetched.alloc(b).as_slice())
    }

    /// Fetches those of `keys` not fetched yet in one batch, for the next [`Meta::get`] calls
    /// (nothing to do when the metadata is consolidated). Keys that are not valid store keys
    /// are left for `get` to report.
    pub(super) fn prefetch(&self, keys: &[String]) -> Result<()> {
        if self.consolidated.is_some() {
            return Ok(());
        }
        let (missing, store_keys): (Vec<&String>, Vec<StoreKey>) = {
            let known = self.prefetched.borrow();
            keys.iter()
                .filter(|k| !known.contains_key(*k))
                .filter_map(|k| StoreKey::new(k).ok().map(|sk| (k, sk)))
                .unzip()
        };
        if missing.is_empty() {
            return Ok(());
        }
        let values = self.store.get_many(&store_keys)?;
        let kept: Vec<Option<&'a [u8]>> = values.into_iter().map(|v| self.keep(v)).collect();
        self.prefetched
            .borrow_mut()
            .extend(missing.into_iter().cloned().zip(kept));
        Ok(())
    }

    pub(super) fn get(&self, key: &str) -> Result<Option<Obj<'a>>> {
        if let Some(c) = &self.consolidated {
            return match c.borrow_mut().remove(key) {
                Some(Json::Object(m)) => Ok(Some(m)),
                Some(_) => Err(Error::metadata(key, "not a JSON object in .zmetadata")),
                None => Ok(None),
            };
        }
        self.prefetch(&[key.to_string()])?;
        let known = self.prefetched.borrow().get(key).copied();
        let bytes = match known {
            Some(b) => b,
            None => self.keep(self.store.get(&StoreKey::new(key)?)?),
        };
        match bytes {
            Some(b) => self.parse(key, b).map(Some),
            None => Ok(None),
        }
    }

    /// True when the object `key` exists (fetching it, for the [`Meta::get`] that follows).
    pub(super) fn has(&self, key: &str) -> Result<bool> {
        if let Some(c) = &self.consolidated {
            return Ok(c.borrow().contains_key(key));
        }
        self.prefetch(&[key.to_string()])?;
        Ok(matches!(self.prefetched.borrow().get(key), Some(Some(_))))
    }

    /// Makes `obj` what the next [`Meta::get`] of `key` returns (consolidated metadata only:
    /// other objects stay fetched).
    pub(super) fn put_back(&self, key: &str, obj: &Option<Obj<'a>>) {
        if let (Some(c), Some(o)) = (&self.consolidated, obj) {
            c.borrow_mut()
                .insert(Cow::Owned(key.to_string()), Json::Object(o.clone()));
        }
    }

    pub(super) fn children(&self, path: &str) -> Result<Vec<String>> {
        if let Some(c) = &self.consolidated {
            let pre = if path.is_empty() {
                String::new()
            } else {
                format!("{path}/")
            };
            let mut names: Vec<String> = c
                .borrow()
                .keys()
                .filter_map(|k| k.strip_prefix(&pre))
                .filter(|rest| !rest.is_empty())
                .map(|rest| rest.split_once('/').map_or(rest, |(a, _)| a).to_string())
                .collect();
            names.sort();
            names.dedup();
            return Ok(names);
        }
        self.store.list_children(&StorePrefix::new(path)?)
    }
}
