//! When and how a dataset reads ahead of a variable read chunk after chunk: how many chunks
//! (by store, codec, chunk size and cache), what reading one ahead means (fetching it from the
//! store and decoding it), and moving what was read ahead into and out of the chunk cache.
//!
//! The sequence detection and the background work are [`read_ahead`]'s; this module is the
//! bridge between them and the dataset's requests, store and cache. It does not copy values to
//! the caller (the read path does, from the cache).

use super::read_ahead;
use super::{BATCH_BYTES, Dataset, Geometry};
use crate::chunk::cache::ChunkIndex;
use crate::chunk::projection::{ChunkPiece, covers_chunk_in};
use crate::error::{Error, Result};
use crate::model::GroupId;
use crate::zmap::{Store, StoreKey};
use std::sync::{Arc, Mutex, PoisonError};

/// Bytes of small chunks decoded ahead of a variable read in sequence from a local store (see
/// [`Dataset::read_ahead_depth`]).
const READ_AHEAD_BYTES: usize = 8 << 20;

impl Dataset {
    /// How many chunks to read ahead of a variable read in sequence; none unless the dataset
    /// is read-only (what is decoded ahead can never be stale), its chunks are small enough to
    /// cache and the caller is not a pool thread.
    ///
    /// From a store with latency, every chunk (coded or not) is fetched ahead, [`BATCH_BYTES`]
    /// of them as a whole read has in flight, as many as half the cache holds, whatever the
    /// request wants of them: otherwise a loop over chunks waits for one round trip per
    /// request (on a loopback S3 server, a loop over 1024 1 MiB chunks took 7-13 times a whole
    /// read, one over 64 16 MiB chunks 2-2.7 times).
    ///
    /// From a local store: [`READ_AHEAD_BYTES`] of them, when that is at least two per thread
    /// and the chunk cache holds twice as many; none unless its chunks are coded (uncompressed
    /// chunks are read straight into the caller's buffer at the speed of a copy) and the pool
    /// has threads to spare. Larger chunks are decoded ahead one per thread (as many threads
    /// as the cache holds twice over, at least two) when decoding them costs much more than
    /// copying them out of the cache (zlib, zstd: a loop over 16 MiB zstd chunks took 30% less
    /// time; not once those decoded ahead were found stored nearly raw: a loop over 16 MiB
    /// zstd chunks of noise took 30% longer decoded ahead than on one thread) and the request
    /// wants whole chunks (`pieces`; the part inside the variable of an edge chunk): a loop of
    /// single points would wait for whole chunks where it decodes a few blocks of each. Others
    /// are decoded straight into the caller's buffer (16 MiB blosc-lz4 chunks decoded ahead
    /// and copied out took 20% longer).
    pub(super) fn read_ahead_depth(
        &self,
        g: GroupId,
        v: usize,
        geo: &Geometry,
        pieces: &[ChunkPiece],
    ) -> usize {
        if self.writable || !geo.cacheable || rayon::current_thread_index().is_some() {
            return 0;
        }
        let chunk = geo.chunk_bytes.max(1);
        let cached = (geo.cache_bytes / 2 / chunk).min(self.tree.group(g).vars[v].cache.nelems / 2);
        if !self.store.is_local() {
            return (BATCH_BYTES / chunk).min(cached);
        }
        let threads = rayon::current_num_threads();
        if geo.chain.is_empty() || threads < 2 {
            return 0;
        }
        let depth = (READ_AHEAD_BYTES / chunk).min(cached);
        if depth >= 2 * threads {
            depth
        } else if !geo.chain.decodes_at_copy_speed()
            && !self
                .read_ahead
                .get(&(g.0, v))
                .is_some_and(read_ahead::ReadAhead::stored_nearly_raw)
            && cached >= 2
            && pieces
                .iter()
                .all(|p| covers_chunk_in(p, &geo.chunks, &geo.shape))
        {
            threads.min(cached)
        } else {
            0
        }
    }

    /// Puts the chunks decoded ahead that this request wants (and those decoded with them)
    /// into the variable's chunk cache; the failure of the fetch that left one it wants
    /// unanswered is the request's (fetching the chunk again would wait on the same failure).
    pub(super) fn take_read_ahead(
        &mut self,
        g: GroupId,
        v: usize,
        geo: &Geometry,
        pieces: &[ChunkPiece],
    ) -> Result<()> {
        let wanted: Vec<ChunkIndex> = pieces.iter().map(|p| p.chunk.clone()).collect();
        let handed = self.read_ahead.entry((g.0, v)).or_default().take(&wanted);
        let mut freed = Vec::new();
        for (idx, data) in handed.chunks {
            let (dirty, clean) = self
                .cache_for(g, v)
                .insert_keeping_buffers(idx, data, false);
            freed.extend(clean);
            self.store_evicted(g, v, geo, dirty)?;
        }
        self.recycle(g, v, geo, freed);
        handed.failure.map_or(Ok(()), Err)
    }

    /// Keeps buffers the cache let go of for the chunks read ahead next to be decoded into;
    /// frees them when those chunks will not need them (objects fetched from a store with
    /// latency that are the chunks as they are become the chunks themselves).
    fn recycle(&self, g: GroupId, v: usize, geo: &Geometry, freed: Vec<Vec<u8>>) {
        let arrive_whole = !self.store.is_local() && objects_are_chunks(geo);
        if let Some(ra) = self.read_ahead.get(&(g.0, v)).filter(|_| !arrive_whole) {
            ra.recycle(freed);
        }
    }

    /// Stops decoding ahead of a variable: what was decoded, and the buffers kept for it, are
    /// let go (the chunk cache was made smaller, say). A variable whose chunks were found stored
    /// nearly raw keeps that finding, so it is not decoded ahead again.
    pub(super) fn stop_read_ahead(&mut self, g: GroupId, v: usize) {
        match self.read_ahead.get_mut(&(g.0, v)) {
            Some(ra) if ra.stored_nearly_raw() => ra.stop(),
            _ => {
                self.read_ahead.remove(&(g.0, v));
            }
        }
    }

    /// Takes out of the chunk cache the chunks decoded ahead that this request read whole and
    /// keeps their buffers for the next chunks decoded ahead: a reader going chunk after chunk
    /// does not come back to them, and keeping them put the whole cache on top of the
    /// read-ahead's own buffers (a loop over 16 MiB zlib chunks peaked at 250 MiB). A chunk read
    /// whole without read-ahead is not cached either (it is decoded into the caller's buffer).
    pub(super) fn release_read_whole(
        &mut self,
        g: GroupId,
        v: usize,
        geo: &Geometry,
        pieces: &[ChunkPiece],
    ) {
        let Some(ra) = self.read_ahead.get_mut(&(g.0, v)) else {
            return;
        };
        let read: Vec<&ChunkIndex> = pieces
            .iter()
            .filter(|p| covers_chunk_in(p, &geo.chunks, &geo.shape) && ra.read_whole(&p.chunk))
            .map(|p| &p.chunk)
            .collect();
        let cache = self.cache_for(g, v);
        let freed: Vec<Vec<u8>> = read
            .into_iter()
            .filter_map(|idx| cache.take_clean(idx))
            .collect();
        self.recycle(g, v, geo, freed);
    }

    /// Records the request's chunks and, when it continues a sequence, starts decoding the
    /// next `ahead` chunks in the background ([`ReadAhead::after`]).
    pub(super) fn read_ahead_after(
        &mut self,
        g: GroupId,
        v: usize,
        geo: &Geometry,
        pieces: &[ChunkPiece],
        ahead: usize,
    ) {
        let (Some(first), Some(last)) = (
            pieces.iter().map(|p| &p.chunk).min(),
            pieces.iter().map(|p| &p.chunk).max(),
        ) else {
            return;
        };
        let grid: Vec<u64> = geo
            .shape
            .iter()
            .zip(&geo.chunks)
            .map(|(&s, &c)| s.div_ceil(c.max(1)))
            .collect();
        let store = Arc::clone(&self.store);
        let geo = geo.clone();
        let read_ahead = self.read_ahead.entry((g.0, v)).or_default();
        if !store.is_local() {
            let job = move |chunks: Vec<ChunkIndex>,
                            buffers: &read_ahead::Buffers,
                            wanted: &read_ahead::Wanted| {
                Dataset::fetch_and_decode(&*store, &geo, chunks, buffers, wanted)
            };
            read_ahead.after_fetching(first, last, &grid, ahead, job);
            return;
        }
        let decode = move |idx: &ChunkIndex, stored: &mut Vec<u8>, mut out: Vec<u8>| {
            let key = geo.key(idx).ok()?;
            if !store.get_into(&key, stored).ok()? {
                return None;
            }
            out.resize(geo.chunk_bytes, 0);
            Dataset::decode_chunk_into(&geo, &key, stored, &mut out).ok()?;
            Some(out)
        };
        read_ahead.after(first, last, &grid, ahead, decode);
    }

    /// Fetches `chunks` from a store with latency, all their requests in flight together, and
    /// decodes each into a buffer of `buffers` as it arrives: those that are present and
    /// decode. What is absent or does not decode is left to the request that wants it, which
    /// reads it itself and reports what is wrong; a failed fetch is given back with the chunks
    /// it left unanswered. Stops once the chunks are no longer `wanted`.
    fn fetch_and_decode(
        store: &dyn Store,
        geo: &Geometry,
        chunks: Vec<ChunkIndex>,
        buffers: &read_ahead::Buffers,
        wanted: &read_ahead::Wanted,
    ) -> read_ahead::Fetched {
        let (indices, keys): (Vec<ChunkIndex>, Vec<StoreKey>) = chunks
            .into_iter()
            .filter_map(|idx| geo.key(&idx).ok().map(|key| (idx, key)))
            .unzip();
        let decoded = Mutex::new(Vec::with_capacity(keys.len()));
        let answered = Mutex::new(vec![false; keys.len()]);
        let each = |i: usize, stored: Option<Vec<u8>>| {
            if !wanted.still() {
                return Err(Error::Internal(
                    "chunks fetched ahead nobody waits for".into(),
                ));
            }
            if let Some(a) = answered
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get_mut(i)
            {
                *a = true;
            }
            let (Some(stored), Some(idx), Some(key)) = (stored, indices.get(i), keys.get(i)) else {
                return Ok(());
            };
            let stored_len = stored.len();
            let data = if objects_are_chunks(geo) && stored_len == geo.chunk_bytes {
                // The object is the chunk: no copy.
                stored
            } else {
                // The object is let go once decoded: spare buffers come from the chunks read.
                let mut out = buffers.spare();
                out.resize(geo.chunk_bytes, 0);
                if Dataset::decode_chunk_into(geo, key, &stored, &mut out).is_err() {
                    return Ok(());
                }
                out
            };
            decoded
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((idx.clone(), stored_len, data));
            Ok(())
        };
        // A failed fetch ends the batch; the chunks decoded before it are still handed over.
        let failed = store.get_each(&keys, keys.len(), &each).err().map(|e| {
            let answered = answered
                .into_inner()
                .unwrap_or_else(PoisonError::into_inner);
            let unanswered = indices
                .into_iter()
                .zip(answered)
                .filter_map(|(idx, answered)| (!answered).then_some(idx))
                .collect();
            (e, unanswered)
        });
        read_ahead::Fetched {
            decoded: decoded.into_inner().unwrap_or_else(PoisonError::into_inner),
            failed,
        }
    }
}

/// True when a chunk's object is the decoded chunk byte for byte (no codecs, C order, native
/// byte order), so the object fetched can be cached as it is.
fn objects_are_chunks(geo: &Geometry) -> bool {
    geo.stored_as_is() && !geo.swap
}
