//! The chunk engine lets its store read whole the largest chunk a variable can be stored in,
//! before reading any of it, and before a rename moves a variable's chunks.

use super::Slab;
use crate::api::dataset::Dataset;
use crate::error::Result;
use crate::model::{NcType, Storage, Tree};
use crate::zmap::memory::MemoryStore;
use crate::zmap::{Store, StoreKey};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A memory store that records the largest object it has been allowed to read whole.
#[derive(Debug)]
struct Allowed {
    inner: MemoryStore,
    largest: Arc<AtomicU64>,
}

impl Store for Allowed {
    fn get(&self, key: &StoreKey) -> Result<Option<Vec<u8>>> {
        self.inner.get(key)
    }
    fn allow_objects_up_to(&self, bytes: u64) {
        self.largest.fetch_max(bytes, Ordering::SeqCst);
    }
    crate::zmap::forward_writes_and_listings!(inner);
    fn describe(&self) -> String {
        "allowed".into()
    }
}

/// A dataset with a float variable `v(t, y, x)` in 1 x 16384 x 16384 chunks (1 GiB each), and
/// what its store has been allowed.
fn with_gigabyte_chunks() -> (Dataset, Arc<AtomicU64>) {
    let largest = Arc::new(AtomicU64::new(0));
    let store = Allowed {
        inner: MemoryStore::new(),
        largest: Arc::clone(&largest),
    };
    let mut ds = Dataset::creating_over(Box::new(store));
    let g = Tree::ROOT;
    let dims: Vec<i32> = [("t", 2), ("y", 16384), ("x", 16384)]
        .iter()
        .map(|(name, len)| ds.def_dim(g, name, *len, false).unwrap().0 as i32)
        .collect();
    let v = ds.def_var(g, "v", NcType::Float, &dims).unwrap();
    ds.def_var_chunking(g, v, Storage::Chunked, Some(&[1, 16384, 16384]))
        .unwrap();
    ds.enddef().unwrap();
    (ds, largest)
}

const GIB: u64 = 1 << 30;

#[test]
fn reading_a_variable_allows_its_largest_stored_chunk_first() {
    let (mut ds, largest) = with_gigabyte_chunks();
    assert_eq!(largest.load(Ordering::SeqCst), 0);
    let slab = Slab {
        start: vec![1, 5, 5],
        count: vec![1, 1, 1],
        stride: vec![1, 1, 1],
    };
    let mut out = [0u8; 4];
    ds.get_fixed(Tree::ROOT, 0, &slab, None, NcType::Float, &mut out)
        .unwrap();
    assert_eq!(largest.load(Ordering::SeqCst), 2 * GIB + (1 << 20));
}

#[test]
fn renaming_allows_the_largest_stored_chunk_before_moving_objects() {
    let (mut ds, largest) = with_gigabyte_chunks();
    ds.redef().unwrap();
    ds.rename_var(Tree::ROOT, 0, "w").unwrap();
    // The objects move when the metadata naming them is stored.
    assert_eq!(largest.load(Ordering::SeqCst), 0);
    ds.enddef().unwrap();
    assert!(largest.load(Ordering::SeqCst) >= 2 * GIB, "{largest:?}");
}
