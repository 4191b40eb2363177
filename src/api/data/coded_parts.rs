//! Reading only the parts of a stored chunk that a sparse request needs: the codec says which
//! byte ranges of the stored chunk decoding the request's runs reads (for blosc: its header,
//! block starts and the blocks that hold the runs), and only those are read from the store,
//! into a buffer as long as the stored chunk. A time series through large blosc chunks then
//! reads a few blocks of each chunk instead of the whole of it.
//!
//! Owns this read protocol: a first look at the chunk's head, at most one more look at a longer
//! head and one at its tail (a Zarr v3 shard's index), then the parts in one read, checked
//! against the bytes they were planned from. Which
//! ranges a codec needs is the codec's; decoding and copying are the caller's.

use super::split::slice_disjoint;
use super::worker_buffers::set_len_sparse;
use crate::chunk::runs::Run;
use crate::codec::{Chain, EncodedParts};
use crate::error::Result;
use crate::zmap::{Store, StoreKey};
use std::ops::Range;

/// Bytes looked at first: a blosc header and the starts of up to 1020 blocks.
const FIRST_HEAD: usize = 4096;

/// What [`fetch`] read.
pub(super) enum Fetched {
    /// There is no chunk.
    Absent,
    /// The parts are in the buffer it was given.
    Parts,
    /// The whole stored chunk is in the buffer: the codec needs all of it, or the chunk
    /// changed between reads.
    Whole,
}

/// Reads the parts of the stored chunk at `key` that decoding the `wanted` byte ranges of the
/// decoded chunk (`decoded_len` bytes) needs into `stored`, which becomes as long as the
/// stored chunk; bytes outside the parts keep whatever they held. When the parts will not
/// do, `stored` gets the whole chunk.
pub(super) fn fetch(
    store: &dyn Store,
    chain: &Chain,
    key: &StoreKey,
    decoded_len: usize,
    wanted: &[Range<usize>],
    stored: &mut Vec<u8>,
) -> Result<Fetched> {
    let whole = |stored: &mut Vec<u8>| {
        Ok(match store.get_into(key, stored)? {
            true => Fetched::Whole,
            false => Fetched::Absent,
        })
    };
    let mut head = vec![0u8; FIRST_HEAD];
    let Some(len) = store.get_runs_into(key, &mut [(0, &mut head[..])])? else {
        return Ok(Fetched::Absent);
    };
    // A stored chunk far longer than any coding of its bytes is damaged or hostile: read
    // whole, where the store's object limit refuses it (not into a buffer of its length).
    let bound = super::largest_coding(decoded_len);
    let Some(len) = usize::try_from(len).ok().filter(|&l| l as u64 <= bound) else {
        return whole(stored);
    };
    head.truncate(len.min(FIRST_HEAD));
    let mut tail = Vec::new();
    let (mut looked_again, mut looked_at_tail) = (false, false);
    let ranges = loop {
        match chain.encoded_parts(&head, &tail, len, decoded_len, wanted) {
            EncodedParts::Ranges(ranges) => break ranges,
            EncodedParts::Head(n) if !looked_again && n > head.len() && n <= len => {
                head.resize(n, 0);
                if store.get_runs_into(key, &mut [(0, &mut head[..])])? != Some(len as u64) {
                    return whole(stored);
                }
                looked_again = true;
            }
            EncodedParts::Tail(n) if !looked_at_tail && n > tail.len() && n <= len => {
                tail.resize(n, 0);
                let at = (len - n) as u64;
                if store.get_runs_into(key, &mut [(at, &mut tail[..])])? != Some(len as u64) {
                    return whole(stored);
                }
                looked_at_tail = true;
            }
            _ => return whole(stored),
        }
    };
    // Every range within the chunk (overlaps are refused when slicing), and some of the bytes
    // looked at among them, to check the parts against.
    let tail_at = len - tail.len();
    let looked_at =
        |r: &Range<usize>| r.start < head.len() || (!tail.is_empty() && r.end > tail_at);
    let fits =
        ranges.iter().all(|r| r.start <= r.end && r.end <= len) && ranges.iter().any(looked_at);
    if !fits {
        return whole(stored);
    }
    set_len_sparse(stored, len);
    let mut parts: Vec<(Run, usize)> = ranges
        .iter()
        .map(|r| {
            let run = Run {
                chunk: r.start,
                mem: r.start,
                len: r.len(),
            };
            (run, 0)
        })
        .collect();
    let Some(mut runs) = slice_disjoint(stored, &mut parts, 1).and_then(|mut s| s.pop()) else {
        return whole(stored);
    };
    let read = store.get_runs_into(key, &mut runs)?;
    // The bytes the parts were planned from must be the bytes read with them: a chunk
    // replaced in between is read whole.
    let same = ranges.iter().all(|r| {
        let in_head = r.start.min(head.len())..r.end.min(head.len());
        let in_tail = r.start.max(tail_at)..r.end.max(tail_at);
        stored[in_head.clone()] == head[in_head]
            && stored[in_tail.clone()] == tail[in_tail.start - tail_at..in_tail.end - tail_at]
    });
    if read != Some(len as u64) || !same {
        return whole(stored);
    }
    Ok(Fetched::Parts)
}

#[cfg(test)]
// A list of one byte range is a common argument here, not a mistaken range vector.
#[allow(clippy::single_range_in_vec_init)]
mod tests {
    use super::*;
    use crate::codec::Context;
    use crate::zmap::memory::MemoryStore;
    use crate::zmap::runs_of_whole;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A store that reads runs in place and counts what it reads; after `change_after` reads
    /// of runs, the object is replaced by `replacement`.
    #[derive(Debug)]
    struct Counting {
        inner: MemoryStore,
        bytes: AtomicUsize,
        whole: AtomicUsize,
        run_reads: AtomicUsize,
        change_after: usize,
        replacement: Vec<u8>,
    }

    impl Store for Counting {
        fn get(&self, key: &StoreKey) -> Result<Option<Vec<u8>>> {
            self.whole.fetch_add(1, Ordering::Relaxed);
            self.inner.get(key)
        }
        fn get_runs_into(
            &self,
            key: &StoreKey,
            runs: &mut [(u64, &mut [u8])],
        ) -> Result<Option<u64>> {
            if self.run_reads.fetch_add(1, Ordering::Relaxed) + 1 == self.change_after {
                self.inner.put(key, &self.replacement)?;
            }
            let n: usize = runs.iter().map(|(_, o)| o.len()).sum();
            self.bytes.fetch_add(n, Ordering::Relaxed);
            Ok(runs_of_whole(self.inner.get(key)?, runs))
        }
        fn reads_runs_in_place(&self, _key: &StoreKey) -> bool {
            true
        }
        crate::zmap::forward_writes_and_listings!(inner);
        fn describe(&self) -> String {
            "counting".into()
        }
    }

    fn chain(json: &str) -> Chain {
        let cfgs: Vec<crate::codec::Config> = serde_json::from_str(json).unwrap();
        Chain::from_configs("v", &cfgs, Context { elem_size: 4 }).unwrap()
    }

    fn store_with(stored: &[u8], change_after: usize, replacement: &[u8]) -> (Counting, StoreKey) {
        let store = Counting {
            inner: MemoryStore::new(),
            bytes: AtomicUsize::new(0),
            whole: AtomicUsize::new(0),
            run_reads: AtomicUsize::new(0),
            change_after,
            replacement: replacement.to_vec(),
        };
        let key = StoreKey::new("v/0.0").unwrap();
        store.put(&key, stored).unwrap();
        (store, key)
    }

    /// Two elements of a Zarr v3 shard of 256 inner chunks, its index at its end: the tail,
    /// then the index and the two inner chunks are read, nothing else.
    #[test]
    fn a_few_elements_of_a_shard_read_its_index_and_their_inner_chunks() {
        let data: Vec<u8> = (0..1_048_576u32).flat_map(|i| i.to_le_bytes()).collect();
        let sharded = chain(
            r#"[{"id":"sharding_indexed","shard_shape":[1024,1024],"chunk_shape":[64,64],
                 "codecs":[{"id":"zstd","level":1}],"index_checksum":true}]"#,
        );
        let stored = sharded.encode(data.clone()).unwrap();
        let wanted = [4..8, 4 * 700_000..4 * 700_001];
        let (store, key) = store_with(&stored, usize::MAX, &[]);
        let mut buf = Vec::new();
        let got = fetch(&store, &sharded, &key, data.len(), &wanted, &mut buf).unwrap();
        assert!(matches!(got, Fetched::Parts));
        let read = store.bytes.load(Ordering::Relaxed);
        assert!(read * 20 < stored.len(), "{read} of {}", stored.len());
        assert_eq!(store.whole.load(Ordering::Relaxed), 0);
        let mut out = vec![0u8; data.len()];
        assert!(sharded.decode_parts(&buf, &mut out, &wanted).unwrap());
        for r in &wanted {
            assert_eq!(out[r.clone()], data[r.clone()]);
        }
        // The shard replaced between the look at its index and the read of the parts: read
        // whole.
        let other = sharded.encode(vec![0u8; data.len()]).unwrap();
        let (store, key) = store_with(&stored, 2, &other);
        let got = fetch(&store, &sharded, &key, data.len(), &wanted, &mut buf).unwrap();
        assert!(matches!(got, Fetched::Whole) && buf == other);
    }

    /// Two elements of a blosc chunk of 64 blocks: a few blocks are read, and decoding them
    /// gives the elements.
    #[test]
    fn a_few_elements_of_a_blosc_chunk_read_a_few_blocks() {
        let data: Vec<u8> = (0..4_000_000u32)
            .flat_map(|i| (i.wrapping_mul(2_654_435_761) >> 12).to_le_bytes())
            .collect();
        let blosc = chain(r#"[{"id":"blosc","cname":"lz4","clevel":5,"shuffle":1,"blocksize":0}]"#);
        let stored = blosc.encode(data.clone()).unwrap();
        let wanted = [4..8, 9_000_000..9_000_004];
        let (store, key) = store_with(&stored, usize::MAX, &[]);
        let mut buf = Vec::new();
        let got = fetch(&store, &blosc, &key, data.len(), &wanted, &mut buf).unwrap();
        assert!(matches!(got, Fetched::Parts));
        assert_eq!(buf.len(), stored.len());
        let read = store.bytes.load(Ordering::Relaxed);
        assert!(read * 8 < stored.len(), "{read} of {}", stored.len());
        assert_eq!(store.whole.load(Ordering::Relaxed), 0);
        let mut out = vec![0u8; data.len()];
        assert!(blosc.decode_parts(&buf, &mut out, &wanted).unwrap());
        for r in &wanted {
            assert_eq!(out[r.clone()], data[r.clone()]);
        }
        // Wanting most of the chunk, or a codec that decodes whole: the chunk is read whole.
        let most = [0..data.len() * 3 / 4];
        let got = fetch(&store, &blosc, &key, data.len(), &most, &mut buf).unwrap();
        assert!(matches!(got, Fetched::Whole) && buf == stored);
        let zstd = chain(r#"[{"id":"zstd","level":1}]"#);
        buf.clear();
        let got = fetch(&store, &zstd, &key, data.len(), &wanted, &mut buf).unwrap();
        assert!(matches!(got, Fetched::Whole) && buf == stored);
        let (empty, _) = store_with(&stored, usize::MAX, &[]);
        let absent = StoreKey::new("v/1.0").unwrap();
        let got = fetch(&empty, &blosc, &absent, data.len(), &wanted, &mut buf).unwrap();
        assert!(matches!(got, Fetched::Absent));
    }

    /// A chunk replaced between the look at its head and the read of its parts is read whole:
    /// parts of two different chunks are never decoded together.
    #[test]
    fn a_chunk_replaced_between_reads_is_read_whole() {
        let data: Vec<u8> = (0..1_000_000u32).flat_map(|i| i.to_le_bytes()).collect();
        let other: Vec<u8> = (0..1_000_000u32)
            .flat_map(|i| (i ^ 0x5555).to_le_bytes())
            .collect();
        let blosc =
            chain(r#"[{"id":"blosc","cname":"lz4","clevel":5,"shuffle":1,"blocksize":65536}]"#);
        let stored = blosc.encode(data.clone()).unwrap();
        let other = blosc.encode(other).unwrap();
        // The same length, only one block start different.
        let mut moved = stored.clone();
        moved[16 + 4 * 5] ^= 1;
        let wanted = [8..12];
        for replacement in [other, moved] {
            let (store, key) = store_with(&stored, 2, &replacement);
            let mut buf = Vec::new();
            let got = fetch(&store, &blosc, &key, data.len(), &wanted, &mut buf).unwrap();
            assert_eq!(store.run_reads.load(Ordering::Relaxed), 2);
            match got {
                Fetched::Whole => assert!(buf == replacement),
                Fetched::Parts => panic!("parts of a replaced chunk"),
                Fetched::Absent => panic!("not read"),
            }
        }
    }
}
