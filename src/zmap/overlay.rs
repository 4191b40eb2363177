//! Copy-on-write view of a store: reads fall through to a base store that is never modified;
//! writes and deletes live in memory and vanish with the view (netCDF's `NC_DISKLESS` open).
//!
//! Owns the merge of the in-memory layer with the base: an object written here hides the base's,
//! a deleted key hides the base's object until it is written again. It knows nothing of what the
//! objects hold.

use super::memory::MemoryStore;
use super::{Store, StoreKey, StorePrefix};
use crate::error::{Error, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// A [`Store`] layering in-memory changes over a read-only base.
#[derive(Debug)]
pub struct OverlayStore {
    base: Box<dyn Store>,
    top: MemoryStore,
    /// Base keys deleted in this view (and not written again since).
    hidden: RwLock<BTreeSet<String>>,
}

impl OverlayStore {
    /// A view over `base`, which is only ever read.
    pub fn new(base: Box<dyn Store>) -> OverlayStore {
        OverlayStore {
            base,
            top: MemoryStore::new(),
            hidden: RwLock::new(BTreeSet::new()),
        }
    }

    fn hidden(&self) -> Result<RwLockReadGuard<'_, BTreeSet<String>>> {
        self.hidden
            .read()
            .map_err(|_| Error::Internal("overlay lock poisoned".into()))
    }

    fn hidden_mut(&self) -> Result<RwLockWriteGuard<'_, BTreeSet<String>>> {
        self.hidden
            .write()
            .map_err(|_| Error::Internal("overlay lock poisoned".into()))
    }

    /// Every visible key below `prefix`: base keys not hidden, plus the in-memory ones.
    fn visible_keys(&self, prefix: &StorePrefix) -> Result<BTreeMap<String, StoreKey>> {
        let hidden = self.hidden()?;
        let mut keys: BTreeMap<String, StoreKey> = self
            .base
            .list_keys(prefix)?
            .into_iter()
            .filter(|k| !hidden.contains(k.as_str()))
            .map(|k| (k.as_str().to_string(), k))
            .collect();
        for k in self.top.list_keys(prefix)? {
            keys.insert(k.as_str().to_string(), k);
        }
        Ok(keys)
    }
}

impl Store for OverlayStore {
    fn get(&self, key: &StoreKey) -> Result<Option<Vec<u8>>> {
        if let Some(v) = self.top.get(key)? {
            return Ok(Some(v));
        }
        if self.hidden()?.contains(key.as_str()) {
            return Ok(None);
        }
        self.base.get(key)
    }

    fn put(&self, key: &StoreKey, value: &[u8]) -> Result<()> {
        self.top.put(key, value)?;
        self.hidden_mut()?.remove(key.as_str());
        Ok(())
    }

    fn delete(&self, key: &StoreKey) -> Result<()> {
        self.top.delete(key)?;
        self.hidden_mut()?.insert(key.as_str().to_string());
        Ok(())
    }

    fn delete_prefix(&self, prefix: &StorePrefix) -> Result<()> {
        self.top.delete_prefix(prefix)?;
        let below = self.base.list_keys(prefix)?;
        self.hidden_mut()?
            .extend(below.into_iter().map(|k| k.as_str().to_string()));
        Ok(())
    }

    fn list_children(&self, prefix: &StorePrefix) -> Result<Vec<String>> {
        let start = if prefix.is_root() {
            0
        } else {
            prefix.as_str().len() + 1
        };
        let names: BTreeSet<String> = self
            .visible_keys(prefix)?
            .keys()
            .map(|k| k[start..].split('/').next().unwrap_or("").to_string())
            .collect();
        Ok(names.into_iter().collect())
    }

    fn list_keys(&self, prefix: &StorePrefix) -> Result<Vec<StoreKey>> {
        Ok(self.visible_keys(prefix)?.into_values().collect())
    }

    fn discard(&self) -> Result<()> {
        self.top.delete_prefix(&StorePrefix::root())
    }

    fn allow_objects_up_to(&self, bytes: u64) {
        self.base.allow_objects_up_to(bytes);
    }

    fn listings_hide_dot_files(&self) -> bool {
        self.base.listings_hide_dot_files()
    }

    fn describe(&self) -> String {
        format!("{} (diskless)", self.base.describe())
    }
}
