//! Metadata objects while a dataset is read: taken from the consolidated `.zmetadata`, or
//! fetched from the store in batches (concurrently on remote stores), or streamed in by a
//! helper thread while the reader parses what has arrived, and kept for the whole read, so the
//! parsed objects borrow their text.
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
use std::sync::mpsc;
use std::thread::{self, Scope};
use typed_arena::Arena;

type Obj<'a> = Object<'a>;

/// Metadata objects, from `.zmetadata` or the store. Objects known to be needed soon are
/// fetched in one batch ([`Meta::prefetch`]), which a remote store serves concurrently, or
/// streamed in behind the reader ([`Meta::stream`]). Fetched bytes stay in an arena for the
/// whole read, so the parsed objects borrow them.
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
    /// Windows of objects on their way from a helper thread ([`Meta::stream`]).
    incoming: RefCell<Option<mpsc::Receiver<Window>>>,
    /// The children of each path listed so far, so that none is listed twice (the search
    /// for Zarr objects below a group and the reading of that group both list it).
    listed: RefCell<HashMap<String, Vec<String>>>,
}

/// Keys fetched together by a streaming helper, and what the store gave for them.
type Window = (Vec<String>, Result<Vec<Option<Vec<u8>>>>);

/// Keys in the first window a helper fetches: small, so that parsing starts soon.
const FIRST_WINDOW: usize = 32;
/// Keys in the largest window: later windows double up to it, so that a remote store keeps
/// many requests in flight.
const LARGEST_WINDOW: usize = 512;

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
            incoming: RefCell::new(None),
            listed: RefCell::new(HashMap::new()),
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

    /// Those of `keys` neither fetched nor valid store keys (invalid ones are left for
    /// [`Meta::get`] to report); empty when the metadata is consolidated.
    fn missing(&self, keys: &[String]) -> (Vec<String>, Vec<StoreKey>) {
        if self.consolidated.is_some() {
            return (Vec::new(), Vec::new());
        }
        let known = self.prefetched.borrow();
        keys.iter()
            .filter(|k| !known.contains_key(*k))
            .filter_map(|k| StoreKey::new(k).ok().map(|sk| (k.clone(), sk)))
            .unzip()
    }

    /// Keeps what the store gave for `names`.
    fn arrived(&self, names: Vec<String>, values: Vec<Option<Vec<u8>>>) {
        let kept: Vec<Option<&'a [u8]>> = values.into_iter().map(|v| self.keep(v)).collect();
        self.prefetched
            .borrow_mut()
            .extend(names.into_iter().zip(kept));
    }

    /// Fetches those of `keys` not fetched yet in one batch, for the next [`Meta::get`] calls
    /// (nothing to do when the metadata is consolidated).
    pub(super) fn prefetch(&self, keys: &[String]) -> Result<()> {
        let (names, store_keys) = self.missing(keys);
        if names.is_empty() {
            return Ok(());
        }
        let values = self.store.get_many(&store_keys)?;
        self.arrived(names, values);
        Ok(())
    }

    /// Fetches those of `keys` not fetched yet on a helper thread of `scope`, window after
    /// window in their order, while the caller goes on parsing: [`Meta::get`] and [`Meta::has`]
    /// wait for a key's window when it has not arrived. Few keys, or no thread to be had, are
    /// fetched at once as [`Meta::prefetch`] does. [`Meta::end_stream`] stops the helper.
    pub(super) fn stream<'scope>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        keys: &[String],
    ) -> Result<()>
    where
        'a: 'scope,
    {
        let (names, store_keys) = self.missing(keys);
        if names.len() <= FIRST_WINDOW {
            return self.prefetch(keys);
        }
        let mut windows: Vec<(Vec<String>, Vec<StoreKey>)> = Vec::new();
        let (mut names, mut store_keys) = (names.into_iter(), store_keys.into_iter());
        let mut size = FIRST_WINDOW;
        while names.len() > 0 {
            let n = size.min(names.len());
            windows.push((
                names.by_ref().take(n).collect(),
                store_keys.by_ref().take(n).collect(),
            ));
            size = (size * 2).min(LARGEST_WINDOW);
        }
        let store = self.store;
        let (tx, rx) = mpsc::channel::<Window>();
        let helper = thread::Builder::new()
            .name("nczarr-rs-meta".into())
            .spawn_scoped(scope, move || {
                for (names, keys) in windows {
                    let values = store.get_many(&keys);
                    let failed = values.is_err();
                    if tx.send((names, values)).is_err() || failed {
                        return;
                    }
                }
            });
        match helper {
            Ok(_) => {
                *self.incoming.borrow_mut() = Some(rx);
                Ok(())
            }
            Err(_) => self.prefetch(keys),
        }
    }

    /// Stops a helper started by [`Meta::stream`] (at its next window) and forgets what it has
    /// not delivered.
    pub(super) fn end_stream(&self) {
        self.incoming.borrow_mut().take();
    }

    /// Takes in streamed windows until `key` has arrived or the stream has ended; a window
    /// the store failed to fetch is the error.
    fn wait_for(&self, key: &str) -> Result<()> {
        loop {
            if self.prefetched.borrow().contains_key(key) {
                return Ok(());
            }
            let next = match self.incoming.borrow().as_ref() {
                Some(rx) => rx.recv().ok(),
                None => return Ok(()),
            };
            match next {
                Some((names, Ok(values))) => self.arrived(names, values),
                Some((_, Err(e))) => {
                    self.end_stream();
                    return Err(e);
                }
                None => self.end_stream(),
            }
        }
    }

    pub(super) fn get(&self, key: &str) -> Result<Option<Obj<'a>>> {
        if let Some(c) = &self.consolidated {
            return match c.borrow_mut().remove(key) {
                Some(Json::Object(m)) => Ok(Some(m)),
                Some(_) => Err(Error::metadata(
                    key,
                    "not a JSON object in the consolidated metadata",
                )),
                None => Ok(None),
            };
        }
        self.wait_for(key)?;
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
        self.wait_for(key)?;
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

    /// True when objects are read from consolidated metadata, not the store.
    pub(super) fn is_consolidated(&self) -> bool {
        self.consolidated.is_some()
    }

    /// True when `path` holds a `.zarray` or `.zgroup` that its listing may have left out
    /// (the store's listings hide dot-files): asked by reading both. False where listings
    /// show them (they said already).
    pub(super) fn unlisted_zarr_object(&self, path: &str) -> Result<bool> {
        if !self.hides_dot_files() {
            return Ok(false);
        }
        self.look_for_unlisted(std::slice::from_ref(&path.to_string()))?;
        Ok(self.has(&join(path, ".zarray"))? || self.has(&join(path, ".zgroup"))?)
    }

    /// Fetches, in one batch, the `.zarray` and `.zgroup` of each of `paths` that listings
    /// may have left out (nothing where listings show them), for
    /// [`Meta::unlisted_zarr_object`] to find.
    pub(super) fn look_for_unlisted(&self, paths: &[String]) -> Result<()> {
        if !self.hides_dot_files() {
            return Ok(());
        }
        let keys: Vec<String> = paths
            .iter()
            .flat_map(|p| [join(p, ".zarray"), join(p, ".zgroup")])
            .collect();
        self.prefetch(&keys)
    }

    fn hides_dot_files(&self) -> bool {
        self.consolidated.is_none() && self.store.listings_hide_dot_files()
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
        if let Some(names) = self.listed.borrow().get(path) {
            return Ok(names.clone());
        }
        let names = self.store.list_children(&StorePrefix::new(path)?)?;
        self.listed
            .borrow_mut()
            .insert(path.to_string(), names.clone());
        Ok(names)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zmap::memory::MemoryStore;
    use std::sync::Mutex;

    /// A memory store that records every key it is asked for, and fails the batch holding
    /// `fail_on`.
    #[derive(Debug, Default)]
    struct Watched {
        inner: MemoryStore,
        asked: Mutex<Vec<String>>,
        fail_on: Option<String>,
    }

    impl Store for Watched {
        fn get(&self, key: &StoreKey) -> Result<Option<Vec<u8>>> {
            self.asked.lock().unwrap().push(key.to_string());
            self.inner.get(key)
        }
        fn get_many(&self, keys: &[StoreKey]) -> Result<Vec<Option<Vec<u8>>>> {
            if keys.iter().any(|k| Some(k.to_string()) == self.fail_on) {
                return Err(Error::Invalid("store failed".into()));
            }
            keys.iter().map(|k| self.get(k)).collect()
        }
        crate::zmap::forward_writes_and_listings!(inner);
        fn describe(&self) -> String {
            "watched".into()
        }
    }

    /// A store of `n` objects `k{i}` = `{"i": i}`.
    fn store_of(n: usize, fail_on: Option<&str>) -> Watched {
        let store = Watched {
            fail_on: fail_on.map(String::from),
            ..Watched::default()
        };
        for i in 0..n {
            let key = StoreKey::new(&format!("k{i}")).unwrap();
            store
                .put(&key, format!("{{\"i\": {i}}}").as_bytes())
                .unwrap();
        }
        store
    }

    fn value_of(obj: Option<Obj<'_>>) -> Option<u64> {
        obj.and_then(|o| o.get("i").and_then(Json::as_u64))
    }

    /// Streamed objects are what the store holds, whichever order they are asked for in,
    /// absent ones included, and each is fetched once; a key the stream does not carry is
    /// fetched after it.
    #[test]
    fn streamed_objects_are_the_stored_ones_fetched_once() {
        let store = store_of(300, None);
        let fetched = Arena::new();
        let meta = Meta::new(&store, None, &fetched);
        let keys: Vec<String> = (0..310).map(|i| format!("k{i}")).collect();
        thread::scope(|scope| {
            meta.stream(scope, &keys).unwrap();
            assert_eq!(value_of(meta.get("k250").unwrap()), Some(250));
            for i in 0..300 {
                assert_eq!(
                    value_of(meta.get(&format!("k{i}")).unwrap()),
                    Some(i as u64)
                );
            }
            assert!(!meta.has("k305").unwrap());
            assert!(meta.get("k309").unwrap().is_none());
            meta.end_stream();
        });
        let mut asked = store.asked.lock().unwrap().clone();
        asked.sort();
        let mut want = keys.clone();
        want.sort();
        assert_eq!(asked, want, "every key fetched exactly once");

        let meta = Meta::new(&store, None, &fetched);
        thread::scope(|scope| {
            meta.stream(scope, &keys[..40]).unwrap();
            assert_eq!(value_of(meta.get("k299").unwrap()), Some(299));
            assert_eq!(value_of(meta.get("k39").unwrap()), Some(39));
            meta.end_stream();
        });
    }

    /// A window the store fails to fetch fails the get waiting for it, and only that one.
    #[test]
    fn a_failed_window_is_the_error_of_the_get_that_waits_for_it() {
        let store = store_of(300, Some("k200"));
        let fetched = Arena::new();
        let meta = Meta::new(&store, None, &fetched);
        let keys: Vec<String> = (0..300).map(|i| format!("k{i}")).collect();
        thread::scope(|scope| {
            meta.stream(scope, &keys).unwrap();
            assert_eq!(value_of(meta.get("k10").unwrap()), Some(10));
            let err = meta.get("k201").unwrap_err();
            assert!(err.to_string().contains("store failed"), "{err}");
            meta.end_stream();
        });
    }
}
