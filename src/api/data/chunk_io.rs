//! Scheduling chunk reads and writes across workers.
//!
//! On a local store every worker reads its own chunk and goes straight on to decoding it (or
//! encodes a chunk and stores it itself), so I/O and coding overlap across workers, no worker
//! waits for a whole batch, and scratch memory stays one chunk per worker whatever the batch
//! size. On a remote store many chunks are fetched concurrently, which is what hides latency,
//! each handed to a worker as it arrives (a bounded number fetched ahead of their use), and
//! chunks made in parallel are uploaded concurrently as they are made.
//!
//! One chunk is read or written on the calling thread: handing it to a worker costs more
//! than it could save (and leaves the idle workers spinning).
//!
//! Owns only this scheduling; which chunks, and what is done with their bytes, is the caller's.

use super::worker_buffers::WorkerBuffers;
use crate::error::{Error, Result};
use crate::zmap::{Store, StoreKey};
use rayon::prelude::*;
use std::sync::Mutex;

/// A worker's buffers for reading chunks: its scratch buffer (for the caller's use) and the
/// buffer its stored chunks are read into on a local store.
#[derive(Default)]
pub(super) struct ChunkBuffers {
    pub(super) scratch: Vec<u8>,
    pub(super) stored: Vec<u8>,
}

/// Calls `land(scratch, item, key, stored)` for every item and its chunk (`None`: absent), in
/// parallel; `scratch` is the worker's buffer from `buffers`, reused from chunk to chunk, and
/// so is the buffer a local store reads the chunk into. A remote store keeps at most `held`
/// stored chunks fetched and not yet landed.
pub(super) fn fetch_each<T: Send>(
    store: &dyn Store,
    keys: &[StoreKey],
    items: Vec<T>,
    held: usize,
    buffers: &WorkerBuffers<ChunkBuffers>,
    land: impl Fn(&mut Vec<u8>, T, &StoreKey, Option<&[u8]>) -> Result<()> + Sync,
) -> Result<()> {
    if store.is_local() {
        let one = |(item, key): (T, &StoreKey)| {
            buffers.with(|b| {
                let found = store.get_into(key, &mut b.stored)?;
                land(&mut b.scratch, item, key, found.then_some(&b.stored[..]))
            })
        };
        if items.len() == 1 {
            return items.into_iter().zip(keys).try_for_each(one);
        }
        return items.into_par_iter().zip(keys).try_for_each(one);
    }
    let items: Vec<Mutex<Option<T>>> = items.into_iter().map(|t| Mutex::new(Some(t))).collect();
    store.get_each(keys, held, &|i, stored| {
        let item = items
            .get(i)
            .and_then(|slot| slot.lock().ok()?.take())
            .ok_or_else(|| Error::Internal(format!("chunk {i} handed out twice")))?;
        buffers.with(|b| land(&mut b.scratch, item, &keys[i], stored.as_deref()))
    })
}

/// What a chunk maker hands over: a chunk's key and its stored bytes, `None` for a chunk that
/// is stored as no object (one there before is removed).
pub(super) type Put<'p> = dyn FnMut(&StoreKey, Option<&[u8]>) -> Result<()> + 'p;

/// Has `make(item, buffers, put)` make each item's chunk (in the worker's `buffers`, or from
/// the caller's values as they are) and hand its key and stored bytes to `put`, for every item
/// in parallel. On a local store `put` stores the chunk there and then; on a remote one each
/// chunk is uploaded as it is made while the next are made, at most `held` made and not yet
/// stored ([`Store::put_streamed`]), and the objects of chunks stored as none are removed
/// once the uploads are done (failed or not).
pub(super) fn store_each<T: Sync, B: Default + Send>(
    store: &dyn Store,
    items: &[T],
    held: usize,
    buffers: &WorkerBuffers<B>,
    make: impl Fn(&T, &mut B, &mut Put<'_>) -> Result<()> + Sync,
) -> Result<()> {
    if store.is_local() {
        let one = |item: &T| {
            buffers.with(|b| {
                make(item, b, &mut |key, stored| match stored {
                    Some(stored) => store.put(key, stored),
                    None => store.delete(key),
                })
            })
        };
        if items.len() == 1 {
            return items.iter().try_for_each(one);
        }
        return items.par_iter().try_for_each(one);
    }
    let removed = Mutex::new(Vec::new());
    let uploaded = store.put_streamed(held, &|put| {
        items.par_iter().try_for_each(|item| {
            buffers.with(|b| {
                make(item, b, &mut |key, stored| match stored {
                    Some(stored) => put(key, stored.to_vec()),
                    None => {
                        removed
                            .lock()
                            .map_err(|_| Error::Internal("chunk list poisoned".into()))?
                            .push(key.clone());
                        Ok(())
                    }
                })
            })
        })
    });
    // Removed even when an upload failed: a chunk that now holds only fill must not keep
    // reading as what it held (the first failure is the one reported).
    let removed = removed
        .into_inner()
        .map_err(|_| Error::Internal("chunk list poisoned".into()))?;
    let deleted = store.delete_many(&removed);
    uploaded.and(deleted)
}
