//! In-memory store (tests and diskless datasets).
//!
//! Owns a sorted map from key text to bytes behind a lock. Like an object store, a "directory"
//! exists only while some object lies below it, and a key may be both an object and the prefix
//! of other objects. It knows nothing of files, Zarr or netCDF.

use super::{Store, StoreKey, StorePrefix};
use crate::error::{Error, Result};
use std::collections::BTreeMap;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// A [`Store`] holding every object in memory; dropped with the value.
#[derive(Debug, Default)]
pub struct MemoryStore {
    objects: RwLock<BTreeMap<String, Vec<u8>>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    fn read(&self) -> Result<RwLockReadGuard<'_, BTreeMap<String, Vec<u8>>>> {
        self.objects
            .read()
            .map_err(|_| Error::Internal("memory store lock poisoned".into()))
    }

    fn write(&self) -> Result<RwLockWriteGuard<'_, BTreeMap<String, Vec<u8>>>> {
        self.objects
            .write()
            .map_err(|_| Error::Internal("memory store lock poisoned".into()))
    }
}

impl Store for MemoryStore {
    fn get(&self, key: &StoreKey) -> Result<Option<Vec<u8>>> {
        Ok(self.read()?.get(key.as_str()).cloned())
    }

    /// Memory is read in place: the chunk engine's partial-read path runs on it in tests.
    fn is_local(&self) -> bool {
        true
    }

    fn put(&self, key: &StoreKey, value: &[u8]) -> Result<()> {
        self.write()?.insert(key.to_string(), value.to_vec());
        Ok(())
    }

    fn delete(&self, key: &StoreKey) -> Result<()> {
        self.write()?.remove(key.as_str());
        Ok(())
    }

    fn delete_prefix(&self, prefix: &StorePrefix) -> Result<()> {
        let start = super::below(prefix);
        self.write()?.retain(|k, _| !k.starts_with(&start));
        Ok(())
    }

    fn list_children(&self, prefix: &StorePrefix) -> Result<Vec<String>> {
        Ok(super::children_in(&*self.read()?, prefix))
    }

    fn list_keys(&self, prefix: &StorePrefix) -> Result<Vec<StoreKey>> {
        super::keys_in(&*self.read()?, prefix)
    }

    fn describe(&self) -> String {
        "memory".to_string()
    }
}
