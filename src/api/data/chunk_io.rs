//! Scheduling chunk reads and writes across workers.
//!
//! On a local store every worker reads its own chunk and goes straight on to decoding it (or
//! encodes a chunk and stores it itself), so I/O and coding overlap across workers, no worker
//! waits for a whole batch, and scratch memory stays one chunk per worker whatever the batch
//! size. On a remote store a whole batch is fetched (or stored) concurrently, which is what hides
//! latency, and handed out (or made) in parallel around that.
//!
//! Owns only this scheduling; which chunks, and what is done with their bytes, is the caller's.

use super::worker_buffers::WorkerBuffers;
use crate::error::Result;
use crate::zmap::{Store, StoreKey};
use rayon::prelude::*;

/// A worker's buffers for reading chunks: its scratch buffer (for the caller's use) and the
/// buffer its stored chunks are read into on a local store.
#[derive(Default)]
pub(super) struct ChunkBuffers {
    pub(super) scratch: Vec<u8>,
    pub(super) stored: Vec<u8>,
}

/// Calls `land(scratch, item, key, stored)` for every item and its chunk (`None`: absent), in
/// parallel; `scratch` is the worker's buffer from `buffers`, reused from chunk to chunk, and
/// so is the buffer a local store reads the chunk into.
pub(super) fn fetch_each<T: Send>(
    store: &dyn Store,
    keys: &[StoreKey],
    items: Vec<T>,
    buffers: &WorkerBuffers<ChunkBuffers>,
    land: impl Fn(&mut Vec<u8>, T, &StoreKey, Option<&[u8]>) -> Result<()> + Sync,
) -> Result<()> {
    if store.is_local() {
        return items.into_par_iter().zip(keys).try_for_each(|(item, key)| {
            buffers.with(|b| {
                let found = store.get_into(key, &mut b.stored)?;
                land(&mut b.scratch, item, key, found.then_some(&b.stored[..]))
            })
        });
    }
    let fetched = store.get_many(keys)?;
    items
        .into_par_iter()
        .zip(fetched)
        .zip(keys)
        .try_for_each(|((item, stored), key)| {
            buffers.with(|b| land(&mut b.scratch, item, key, stored.as_deref()))
        })
}

/// Stores the chunk `make(item, buffer)` returns (its key and stored bytes, built in the buffer
/// it was handed when it can) for every item, in parallel. Buffers are reused: by each worker
/// on a local store; through `pool`, from one call to the next, on a remote one.
pub(super) fn store_each<T: Sync>(
    store: &dyn Store,
    items: &[T],
    pool: &mut Vec<Vec<u8>>,
    make: impl Fn(&T, Vec<u8>) -> Result<(StoreKey, Vec<u8>)> + Sync,
) -> Result<()> {
    if store.is_local() {
        return items.par_iter().try_for_each_init(Vec::new, |buf, item| {
            let (key, stored) = make(item, std::mem::take(buf))?;
            store.put(&key, &stored)?;
            *buf = stored;
            Ok(())
        });
    }
    pool.resize_with(items.len(), Vec::new);
    let made: Vec<(StoreKey, Vec<u8>)> = items
        .par_iter()
        .zip(pool.par_drain(..))
        .map(|(item, buf)| make(item, buf))
        .collect::<Result<_>>()?;
    store.put_many(&made)?;
    *pool = made.into_iter().map(|(_, buf)| buf).collect();
    Ok(())
}
