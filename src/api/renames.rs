//! The stored objects of renamed groups and variables: copied to their new paths before the
//! metadata naming those paths is written, and deleted from the old ones only after it is.
//!
//! So a rename that fails part way (or a process that dies in it) leaves the dataset as its
//! stored metadata describes it: the old objects are still there until metadata naming the new
//! ones is (copies no metadata names may be left behind with NCZarr metadata; pure Zarr has
//! them deleted). Names exchanged in one define session (`a` -> `b` while `b` -> `a`) cannot be
//! copied in place; those moves go through temporary keys instead, with no such guarantee.
//! This module knows store keys and tree paths, not what the objects hold.

use super::dataset::Dataset;
use crate::error::Result;
use crate::format;
use crate::zmap::{StoreKey, StorePrefix};
use std::collections::HashSet;

/// Objects at most copied by one read and one write.
const COPY_BATCH: usize = 256;

/// Where the temporary copies of an exchange of names go: no netCDF name starts with a dot.
const EXCHANGE_PREFIX: &str = ".nczarr-rs-renaming";

/// The objects renames copied, to delete once the metadata naming the copies is stored.
#[derive(Debug, Default)]
pub(crate) struct Copied {
    /// The keys copied from.
    sources: Vec<StoreKey>,
    /// The keys copied to.
    targets: HashSet<String>,
}

impl Copied {
    /// True when nothing was copied.
    pub(crate) fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }
}

impl Dataset {
    /// Copies the objects of every group and variable renamed since it was stored to the
    /// paths their names now give (an object below several renamed nodes goes where the
    /// deepest of them now is).
    pub(crate) fn copy_renamed(&mut self) -> Result<Copied> {
        let renamed = self.renamed_paths();
        if renamed.is_empty() {
            return Ok(Copied::default());
        }
        self.allow_every_variables_chunks();
        let mut sources = Vec::new();
        let mut seen = HashSet::new();
        for (old, _) in &renamed {
            for key in self.store.list_keys(&StorePrefix::new(old)?)? {
                if seen.insert(key.as_str().to_string()) {
                    sources.push(key);
                }
            }
        }
        let mut pairs = Vec::with_capacity(sources.len());
        for key in &sources {
            pairs.push((
                key.clone(),
                StoreKey::new(&destination(&renamed, key.as_str()))?,
            ));
        }
        if pairs.iter().any(|(_, to)| seen.contains(to.as_str())) {
            self.exchange(&pairs)?;
            // The objects are where the names say now, whatever becomes of the metadata.
            self.objects_moved_in_place();
            return Ok(Copied::default());
        }
        self.copy_objects(&pairs)?;
        Ok(Copied {
            sources,
            targets: pairs
                .into_iter()
                .map(|(_, to)| to.as_str().to_string())
                .collect(),
        })
    }

    /// Deletes what renames copied from, once metadata naming the copies is stored; leaves
    /// the objects just written (a new variable may take a renamed group's old name).
    pub(crate) fn delete_copied(
        &mut self,
        copied: Copied,
        written: &HashSet<String>,
    ) -> Result<()> {
        let doomed: Vec<StoreKey> = copied
            .sources
            .into_iter()
            .filter(|k| !copied.targets.contains(k.as_str()) && !written.contains(k.as_str()))
            .collect();
        self.forget_written(&doomed);
        self.store.delete_many(&doomed)
    }

    /// Deletes the copies renames made when the metadata naming them could not be stored, in
    /// pure Zarr (where an array is found by its objects, so a copy would be a variable of its
    /// own); with NCZarr metadata, which lists arrays, part of what was written may name them,
    /// and they stay. As far as it can: the error that matters is the write's.
    pub(crate) fn drop_copies(&mut self, copied: Copied) {
        if self.layout.nczarr {
            return;
        }
        let copies: Vec<StoreKey> = copied
            .targets
            .iter()
            .filter_map(|k| StoreKey::new(k).ok())
            .collect();
        self.forget_written(&copies);
        let _ = self.store.delete_many(&copies);
    }

    /// (old path, new path) of every group and variable whose stored path its name no longer
    /// gives.
    fn renamed_paths(&self) -> Vec<(String, String)> {
        let mut renamed = Vec::new();
        for g in self.tree.groups_preorder() {
            let path = self.tree.group_path(g);
            if let Some(old) = self.stored_group_path(g)
                && old != path
                && !old.is_empty()
            {
                renamed.push((old, path.clone()));
            }
            for var in &self.tree.group(g).vars {
                if let Some(old) = var.stored_path.as_ref()
                    && !format::write::is_prefixed(old, &path, &var.name)
                {
                    renamed.push((old.clone(), format::write::prefixed(&path, &var.name)));
                }
            }
        }
        renamed
    }

    /// Copies each (from, to) pair's object, in bounded batches.
    fn copy_objects(&self, pairs: &[(StoreKey, StoreKey)]) -> Result<()> {
        for batch in pairs.chunks(COPY_BATCH) {
            let from: Vec<StoreKey> = batch.iter().map(|(k, _)| k.clone()).collect();
            let mut copies = Vec::with_capacity(batch.len());
            for ((_, to), bytes) in batch.iter().zip(self.store.get_many(&from)?) {
                if let Some(bytes) = bytes {
                    copies.push((to.clone(), bytes));
                }
            }
            self.store.put_many(copies)?;
        }
        Ok(())
    }

    /// Moves objects whose new keys are other moved objects' old ones: every object to a
    /// temporary key first, then each to its new key.
    fn exchange(&mut self, pairs: &[(StoreKey, StoreKey)]) -> Result<()> {
        let mut via_temporary = Vec::with_capacity(pairs.len());
        let mut from_temporary = Vec::with_capacity(pairs.len());
        for (from, to) in pairs {
            let temporary = StoreKey::new(&format!("{EXCHANGE_PREFIX}/{}", from.as_str()))?;
            via_temporary.push((from.clone(), temporary.clone()));
            from_temporary.push((temporary, to.clone()));
        }
        self.copy_objects(&via_temporary)?;
        let sources: Vec<StoreKey> = pairs.iter().map(|(k, _)| k.clone()).collect();
        self.forget_written(&sources);
        self.store.delete_many(&sources)?;
        self.copy_objects(&from_temporary)?;
        self.store
            .delete_prefix(&StorePrefix::new(EXCHANGE_PREFIX)?)
    }
}

/// Where the object at `key` goes: below the deepest renamed path holding it, its new path.
fn destination(renamed: &[(String, String)], key: &str) -> String {
    renamed
        .iter()
        .filter(|(old, _)| {
            key.strip_prefix(old.as_str())
                .is_some_and(|r| r.starts_with('/'))
        })
        .max_by_key(|(old, _)| old.len())
        .map_or_else(
            || key.to_string(),
            |(old, new)| format!("{new}{}", &key[old.len()..]),
        )
}

#[cfg(test)]
mod tests {
    use super::destination;
    use crate::api::dataset::Dataset;
    use crate::error::{Error, Result};
    use crate::format::Layout;
    use crate::model::{NcType, Tree};
    use crate::zmap::memory::MemoryStore;
    use crate::zmap::{Store, StoreKey, StorePrefix};
    use std::sync::{Arc, Mutex};

    /// A memory store shared by several datasets, whose writes of one key (as metadata is
    /// written) can be made to fail.
    #[derive(Debug, Clone, Default)]
    struct Refusing {
        inner: Arc<MemoryStore>,
        refused: Arc<Mutex<Option<String>>>,
    }

    impl Store for Refusing {
        fn get(&self, key: &StoreKey) -> Result<Option<Vec<u8>>> {
            self.inner.get(key)
        }
        /// Metadata is written by `put_many`.
        fn put_many(&self, items: Vec<(StoreKey, Vec<u8>)>) -> Result<()> {
            let refused = self.refused.lock().unwrap().clone();
            for (key, value) in items {
                if refused.as_deref() == Some(key.as_str()) {
                    return Err(Error::io(key.as_str(), std::io::Error::other("refused")));
                }
                self.inner.put(&key, &value)?;
            }
            Ok(())
        }
        crate::zmap::forward_writes_and_listings!(inner);
        fn describe(&self) -> String {
            "refusing".into()
        }
    }

    /// The names and first values of the root's variables, as the store holds them.
    fn stored(store: &Refusing) -> Vec<(String, i32)> {
        let layout = Layout {
            nczarr: true,
            xarray: false,
            consolidated: false,
            zarr_v3: false,
        };
        let mut ds = Dataset::open_over(Box::new(store.clone()), layout, false, "").unwrap();
        (0..ds.tree.group(Tree::ROOT).vars.len())
            .map(|v| {
                let name = ds.tree.group(Tree::ROOT).vars[v].name.clone();
                let mut out = [0u8; 4];
                let slab = crate::api::data::Slab {
                    start: vec![0],
                    count: vec![1],
                    stride: vec![1],
                };
                ds.get_fixed(Tree::ROOT, v, &slab, None, NcType::Int, &mut out)
                    .unwrap();
                (name, i32::from_ne_bytes(out))
            })
            .collect()
    }

    #[test]
    fn a_rename_whose_metadata_cannot_be_stored_leaves_the_stored_dataset_and_the_name() {
        let store = Refusing::default();
        let mut ds = Dataset::creating_over(Box::new(store.clone()));
        let g = Tree::ROOT;
        let x = ds.def_dim(g, "x", 2, false).unwrap().0 as i32;
        for (name, value) in [("a", 1i32), ("b", 2)] {
            let v = ds.def_var(g, name, NcType::Int, &[x]).unwrap();
            ds.enddef().unwrap();
            let bytes: Vec<u8> = [value, value]
                .iter()
                .flat_map(|n| n.to_ne_bytes())
                .collect();
            let slab = crate::api::data::Slab {
                start: vec![0],
                count: vec![2],
                stride: vec![1],
            };
            ds.put_fixed(g, v, &slab, None, NcType::Int, &bytes)
                .unwrap();
            ds.redef().unwrap();
        }
        ds.enddef().unwrap();
        let before = vec![("a".to_string(), 1), ("b".to_string(), 2)];
        assert_eq!(stored(&store), before);

        *store.refused.lock().unwrap() = Some(".zattrs".into());
        assert!(ds.rename_var(g, 0, "c").is_err());
        assert_eq!(ds.tree.group(g).vars[0].name, "a");
        assert_eq!(stored(&store), before);

        *store.refused.lock().unwrap() = None;
        ds.rename_var(g, 0, "c").unwrap();
        assert_eq!(stored(&store), [("c".to_string(), 1), ("b".to_string(), 2)]);
        assert!(
            store
                .inner
                .list_keys(&StorePrefix::new("a").unwrap())
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn an_object_goes_below_the_deepest_renamed_path_holding_it() {
        let renamed = [
            ("g".to_string(), "h".to_string()),
            ("g/c".to_string(), "h/d".to_string()),
            ("g/c/v".to_string(), "h/d/w".to_string()),
        ];
        assert_eq!(destination(&renamed, "g/.zgroup"), "h/.zgroup");
        assert_eq!(destination(&renamed, "g/c/.zattrs"), "h/d/.zattrs");
        assert_eq!(destination(&renamed, "g/c/v/0.0"), "h/d/w/0.0");
        assert_eq!(destination(&renamed, "g/c/vv/0"), "h/d/vv/0");
        assert_eq!(destination(&renamed, "g2/x/0"), "g2/x/0");
    }
}
