//! A byte-bounded least-recently-used cache of decoded chunks of one variable.
//!
//! Holds chunks in native byte order. Dirty chunks are handed back to the caller when they
//! are evicted, and lent to it to flush (marked clean once it has stored them), so the caller
//! encodes and stores them; the cache never touches a store.

use std::collections::{HashMap, HashSet};

/// How many chunks read sparsely and not kept are remembered (the record is cleared when it
/// fills up).
const SEEN_LIMIT: usize = 16 * 1024;

/// Chunk grid index.
pub type ChunkIndex = Vec<u64>;

/// Dirty chunks evicted (for the caller to store).
pub type Evicted = Vec<(ChunkIndex, Vec<u8>)>;

#[derive(Debug)]
struct Entry {
    data: Vec<u8>,
    dirty: bool,
    last_use: u64,
}

/// The cache of one variable.
#[derive(Debug, Default)]
pub struct ChunkCache {
    entries: HashMap<ChunkIndex, Entry>,
    bytes: usize,
    limit_bytes: usize,
    limit_entries: usize,
    clock: u64,
    /// Chunks read once sparsely and not kept: see [`ChunkCache::admits`].
    seen: HashSet<ChunkIndex>,
}

impl ChunkCache {
    /// An empty cache bounded by `limit_bytes` and `limit_entries`.
    pub fn new(limit_bytes: usize, limit_entries: usize) -> ChunkCache {
        ChunkCache {
            limit_bytes,
            limit_entries: limit_entries.max(1),
            ..ChunkCache::default()
        }
    }

    /// Changes the bounds; returns dirty chunks evicted to meet them.
    pub fn set_limits(
        &mut self,
        limit_bytes: usize,
        limit_entries: usize,
    ) -> Vec<(ChunkIndex, Vec<u8>)> {
        self.limit_bytes = limit_bytes;
        self.limit_entries = limit_entries.max(1);
        self.evict(None)
    }

    /// The cached chunk, marking it recently used.
    pub fn get(&mut self, idx: &[u64]) -> Option<&[u8]> {
        self.clock += 1;
        let clock = self.clock;
        self.entries.get_mut(idx).map(|e| {
            e.last_use = clock;
            e.data.as_slice()
        })
    }

    /// Admission of a chunk that a request reads only a small part of: true when it was read
    /// so before (keep it now, later requests are likely to want more of it), false the first
    /// time, which is recorded. A single pass over many chunks (a time series) then never pays
    /// for decoding and keeping whole chunks, while repeated reads of the same chunks (a loop
    /// over points) keep them from the second read on.
    pub fn admits(&mut self, idx: &[u64]) -> bool {
        if self.seen.remove(idx) {
            return true;
        }
        if self.seen.len() >= SEEN_LIMIT {
            self.seen.clear();
        }
        self.seen.insert(idx.to_vec());
        false
    }

    /// Removes and returns a chunk (to modify it and put it back).
    pub fn take(&mut self, idx: &[u64]) -> Option<(Vec<u8>, bool)> {
        let e = self.entries.remove(idx)?;
        self.bytes -= e.data.len();
        Some((e.data, e.dirty))
    }

    /// Removes a chunk and returns its buffer, unless it is absent or dirty (which stays).
    pub fn take_clean(&mut self, idx: &[u64]) -> Option<Vec<u8>> {
        if self.entries.get(idx)?.dirty {
            return None;
        }
        self.take(idx).map(|(data, _)| data)
    }

    /// Inserts a chunk; returns dirty chunks evicted to make room (possibly this one, when
    /// it alone exceeds the bound).
    pub fn insert(
        &mut self,
        idx: ChunkIndex,
        data: Vec<u8>,
        dirty: bool,
    ) -> Vec<(ChunkIndex, Vec<u8>)> {
        self.insert_keeping_buffers(idx, data, dirty).0
    }

    /// Inserts a chunk as [`ChunkCache::insert`], and also returns the buffers of the clean
    /// chunks evicted, for the caller to reuse.
    pub fn insert_keeping_buffers(
        &mut self,
        idx: ChunkIndex,
        data: Vec<u8>,
        dirty: bool,
    ) -> (Evicted, Vec<Vec<u8>>) {
        self.clock += 1;
        if let Some(old) = self.entries.remove(&idx) {
            self.bytes -= old.data.len();
        }
        self.bytes += data.len();
        self.entries.insert(
            idx.clone(),
            Entry {
                data,
                dirty,
                last_use: self.clock,
            },
        );
        let mut clean = Vec::new();
        let dirty = self.evict_all(Some(&idx), |buf| clean.push(buf));
        (dirty, clean)
    }

    fn evict(&mut self, keep: Option<&ChunkIndex>) -> Vec<(ChunkIndex, Vec<u8>)> {
        self.evict_all(keep, drop)
    }

    /// Evicts least recently used chunks until the bounds are met: returns the dirty ones and
    /// hands the buffers of the clean ones to `clean`.
    fn evict_all(
        &mut self,
        keep: Option<&ChunkIndex>,
        mut clean: impl FnMut(Vec<u8>),
    ) -> Vec<(ChunkIndex, Vec<u8>)> {
        let mut out = Vec::new();
        while self.bytes > self.limit_bytes || self.entries.len() > self.limit_entries {
            let victim = self
                .entries
                .iter()
                .filter(|(k, _)| Some(*k) != keep || self.entries.len() == 1)
                .min_by_key(|(_, e)| e.last_use)
                .map(|(k, _)| k.clone());
            let Some(v) = victim else { break };
            if let Some(e) = self.entries.remove(&v) {
                self.bytes -= e.data.len();
                if e.dirty {
                    out.push((v, e.data));
                } else {
                    clean(e.data);
                }
            }
        }
        out
    }

    /// Every dirty chunk, in place: the caller stores them and then marks them clean
    /// ([`ChunkCache::mark_clean`]), so a failed store leaves them dirty.
    pub fn dirty(&self) -> Vec<(&ChunkIndex, &[u8])> {
        self.entries
            .iter()
            .filter(|(_, e)| e.dirty)
            .map(|(k, e)| (k, e.data.as_slice()))
            .collect()
    }

    /// Marks the chunks at `stored` clean (they were stored as they are).
    pub fn mark_clean(&mut self, stored: &[ChunkIndex]) {
        for idx in stored {
            if let Some(e) = self.entries.get_mut(idx) {
                e.dirty = false;
            }
        }
    }

    /// Puts back dirty chunks that were evicted and could not be stored, without evicting
    /// anything (the cache may exceed its bounds until the next insertion evicts again), so
    /// they are stored by a later eviction or flush instead of being lost. A chunk cached again
    /// since it was evicted is newer: it stays, marked dirty.
    pub fn restore_dirty(&mut self, unsaved: Evicted) {
        for (idx, data) in unsaved {
            self.clock += 1;
            if let Some(newer) = self.entries.get_mut(&idx) {
                newer.dirty = true;
                continue;
            }
            self.bytes += data.len();
            let last_use = self.clock;
            self.entries.insert(
                idx,
                Entry {
                    data,
                    dirty: true,
                    last_use,
                },
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_least_recent_and_returns_dirty() {
        let mut c = ChunkCache::new(10, 100);
        assert!(c.insert(vec![0], vec![0; 4], true).is_empty());
        assert!(c.insert(vec![1], vec![1; 4], false).is_empty());
        c.get(&[0]);
        let ev = c.insert(vec![2], vec![2; 4], false);
        assert!(ev.is_empty(), "clean chunk 1 evicted silently");
        assert!(c.get(&[1]).is_none());
        let ev = c.insert(vec![3], vec![3; 8], false);
        assert_eq!(ev, vec![(vec![0], vec![0; 4])]);
        assert!(c.dirty().is_empty());
    }

    #[test]
    fn dirty_chunks_stay_dirty_until_marked_clean() {
        let mut c = ChunkCache::new(100, 100);
        c.insert(vec![0], vec![0; 4], true);
        c.insert(vec![1], vec![1; 4], false);
        c.insert(vec![2], vec![2; 4], true);
        let mut dirty: Vec<_> = c
            .dirty()
            .into_iter()
            .map(|(k, d)| (k.clone(), d.to_vec()))
            .collect();
        dirty.sort();
        assert_eq!(dirty, vec![(vec![0], vec![0; 4]), (vec![2], vec![2; 4])]);
        assert_eq!(c.dirty().len(), 2, "looking does not clean");
        c.mark_clean(&[vec![0], vec![7]]);
        assert_eq!(c.dirty(), vec![(&vec![2], &[2u8; 4][..])]);
    }

    #[test]
    fn restored_chunks_are_dirty_and_evicted_again_later() {
        let mut c = ChunkCache::new(8, 100);
        c.insert(vec![0], vec![0; 4], true);
        let ev = c.insert(vec![1], vec![1; 8], false);
        assert_eq!(ev, vec![(vec![0], vec![0; 4])]);
        // Storing it failed: it comes back, over the bound, and is kept dirty.
        c.restore_dirty(ev);
        assert_eq!(c.get(&[0]), Some(&[0u8; 4][..]));
        assert_eq!(c.dirty(), vec![(&vec![0], &[0u8; 4][..])]);
        // An insertion that needs its room evicts it again, for the caller to store.
        let ev = c.insert(vec![2], vec![2; 8], false);
        assert!(ev.contains(&(vec![0], vec![0; 4])), "{ev:?}");
        // A chunk cached again since it was evicted is newer: it stays, dirty.
        c.insert(vec![0], vec![5; 4], false);
        c.restore_dirty(vec![(vec![0], vec![0; 4])]);
        assert_eq!(c.get(&[0]), Some(&[5u8; 4][..]));
        assert!(c.dirty().contains(&(&vec![0], &[5u8; 4][..])));
    }

    #[test]
    fn admits_a_chunk_on_its_second_sparse_read() {
        let mut c = ChunkCache::new(10, 100);
        assert!(!c.admits(&[0, 1]));
        assert!(!c.admits(&[0, 2]));
        assert!(c.admits(&[0, 1]));
        assert!(!c.admits(&[0, 1]), "admission consumes the record");
        for i in 0..SEEN_LIMIT as u64 {
            c.admits(&[1, i]);
        }
        assert!(!c.admits(&[0, 2]), "a full record is cleared");
    }

    #[test]
    fn only_clean_chunks_are_taken_out_clean() {
        let mut c = ChunkCache::new(10, 100);
        c.insert(vec![0], vec![0; 4], true);
        c.insert(vec![1], vec![1; 4], false);
        assert_eq!(c.take_clean(&[0]), None, "a dirty chunk stays");
        assert_eq!(c.take_clean(&[1]), Some(vec![1; 4]));
        assert_eq!(c.take_clean(&[1]), None);
        assert_eq!(c.take_clean(&[7]), None);
        // Its bytes no longer count: two more chunks fit beside the dirty one.
        assert!(c.insert(vec![2], vec![2; 3], false).is_empty());
        assert!(c.insert(vec![3], vec![3; 3], false).is_empty());
        assert!(c.get(&[2]).is_some() && c.get(&[0]).is_some());
    }

    #[test]
    fn an_oversized_dirty_chunk_comes_back() {
        let mut c = ChunkCache::new(4, 100);
        let ev = c.insert(vec![0], vec![9; 16], true);
        assert_eq!(ev, vec![(vec![0], vec![9; 16])]);
    }
}
