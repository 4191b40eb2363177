//! Fetching a batch of chunks and handing each, with the work item it belongs to, to a worker.
//!
//! On a local store every worker reads its own chunk and goes straight on to decoding it, so
//! reading and decoding overlap across workers and no worker waits for a whole batch to be
//! read; scratch memory stays one chunk per worker whatever the batch size. On a remote store
//! the whole batch is fetched concurrently first (that is what hides latency), then handed out.
//!
//! Owns only this scheduling; what is fetched is the caller's, what a worker does with a chunk
//! the caller's closure.

use crate::error::Result;
use crate::zmap::{Store, StoreKey};
use rayon::prelude::*;

/// Calls `land(scratch, item, key, stored)` for every item and its chunk (`None`: absent), in
/// parallel; `scratch` is a buffer owned by the worker, reused from chunk to chunk.
pub(super) fn each<T: Send>(
    store: &dyn Store,
    keys: &[StoreKey],
    items: Vec<T>,
    land: impl Fn(&mut Vec<u8>, T, &StoreKey, Option<Vec<u8>>) -> Result<()> + Sync,
) -> Result<()> {
    if store.is_local() {
        return items
            .into_par_iter()
            .zip(keys)
            .try_for_each_init(Vec::new, |scratch, (item, key)| {
                land(scratch, item, key, store.get(key)?)
            });
    }
    let fetched = store.get_many(keys)?;
    items
        .into_par_iter()
        .zip(fetched)
        .zip(keys)
        .try_for_each_init(Vec::new, |scratch, ((item, stored), key)| {
            land(scratch, item, key, stored)
        })
}
