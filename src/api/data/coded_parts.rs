//! Reading only the parts of stored chunks that a sparse request needs: the codec says which
//! byte ranges of a stored chunk decoding the request's runs reads (for blosc: its header,
//! block starts and the blocks that hold the runs; for a Zarr v3 shard: its index and the
//! inner chunks that hold them), and only those are read from the store. A time series through
//! large blosc chunks then reads a few blocks of each chunk, and one through Zarr v3 shards a
//! few inner chunks of each, instead of the whole of them.
//!
//! Owns this read protocol, done for many chunks at once in rounds of concurrent ranged
//! requests on a remote store: a first look at every chunk (its head, or its tail where the
//! codec keeps its index there: [`Store::get_tails_many`]), at most one more look at a longer
//! head and one at its tail, then the parts ([`Store::get_runs_many`]), checked against the
//! bytes they were planned from. Which ranges a codec needs is the codec's; decoding and
//! copying are the caller's.

use super::worker_buffers::set_len_sparse;
use crate::codec::{Chain, EncodedParts};
use crate::error::Result;
use crate::zmap::{Runs, Store, StoreKey};
use std::ops::Range;

/// Bytes looked at first: a blosc header and the starts of up to 1020 blocks.
const FIRST_HEAD: usize = 4096;

/// What [`plan`] found for one stored chunk.
pub(super) enum Plan {
    /// There is no chunk.
    Absent,
    /// The chunk is better read whole: the codec needs all of it, it changed between looks,
    /// or it is too long to be a coding of its bytes.
    Whole,
    /// These parts of it.
    Parts(Parts),
    /// All of it, which the look already read (a chunk no longer than the look, or a server
    /// that answered the look with the whole object).
    Held(Vec<u8>),
}

/// The parts of one stored chunk to read, with the bytes looked at to plan them (the parts
/// read are checked against those).
pub(super) struct Parts {
    len: usize,
    ranges: Vec<Range<usize>>,
    head: Vec<u8>,
    tail: Vec<u8>,
}

/// Parts read from the store, one after another.
pub(super) struct PartsRead {
    parts: Parts,
    bytes: Vec<u8>,
}

impl Parts {
    /// Bytes the parts take.
    pub(super) fn bytes(&self) -> usize {
        self.ranges.iter().map(|r| r.len()).sum()
    }

    /// True when `parts` (the bytes read for each range) agree with the bytes looked at.
    fn agrees_with(&self, parts: &[&[u8]]) -> bool {
        let tail_at = self.len - self.tail.len();
        self.ranges.iter().zip(parts).all(|(r, part)| {
            // The bytes of `looked` (from `from` on) that the part also holds are the same.
            let same = |looked: &[u8], from: usize| {
                let start = r.start.max(from);
                let end = r.end.min(from + looked.len());
                start >= end
                    || part[start - r.start..end - r.start] == looked[start - from..end - from]
            };
            same(&self.head, 0) && same(&self.tail, tail_at)
        })
    }

    /// Where each range's bytes go in `buf`: at the range's own offset (`in_place`: `buf` is
    /// as long as the stored chunk), or one after another.
    fn places(&self, in_place: bool) -> impl Iterator<Item = Range<usize>> + '_ {
        let mut at = 0;
        self.ranges.iter().map(move |r| {
            let start = if in_place { r.start } else { at };
            at = start + r.len();
            start..at
        })
    }

    /// Reads the parts into their places in `buf`, as long as the stored chunk; true when the
    /// object still has the planned length and the parts agree with the looks.
    fn read_in_place(&self, store: &dyn Store, key: &StoreKey, buf: &mut [u8]) -> Result<bool> {
        let len = store.get_runs_into(key, &mut self.runs_in(buf, true))?;
        Ok(len == Some(self.len as u64) && self.agree_in(buf, true))
    }

    /// The parts' places in `buf` as runs to read into.
    fn runs_in<'b>(&self, buf: &'b mut [u8], in_place: bool) -> Runs<'b> {
        let mut rest = buf;
        let mut end = 0;
        self.ranges
            .iter()
            .zip(self.places(in_place))
            .map(|(r, place)| {
                let after_gap = std::mem::take(&mut rest).split_at_mut(place.start - end).1;
                let (part, after) = after_gap.split_at_mut(place.len());
                rest = after;
                end = place.end;
                (r.start as u64, part)
            })
            .collect()
    }

    /// [`Parts::agrees_with`] for the parts in `buf`.
    fn agree_in(&self, buf: &[u8], in_place: bool) -> bool {
        let parts: Vec<&[u8]> = self.places(in_place).map(|p| &buf[p]).collect();
        self.agrees_with(&parts)
    }
}

impl PartsRead {
    /// Makes `stored` as long as the stored chunk, with the parts in their places; bytes
    /// outside them keep whatever they held.
    pub(super) fn place(&self, stored: &mut Vec<u8>) {
        set_len_sparse(stored, self.parts.len);
        for (r, from) in self.parts.ranges.iter().zip(self.parts.places(false)) {
            stored[r.clone()].copy_from_slice(&self.bytes[from]);
        }
    }
}

/// What one chunk's looks have found so far.
struct Looked {
    len: usize,
    head: Vec<u8>,
    tail: Vec<u8>,
    looked_again: bool,
    looked_at_tail: bool,
}

impl Looked {
    /// The plan for `ranges` the codec named: every range within the chunk (overlaps are
    /// refused when placing), and some of the bytes looked at among them to check the parts
    /// against.
    fn parts(self, ranges: Vec<Range<usize>>) -> Plan {
        let tail_at = self.len - self.tail.len();
        let looked_at = |r: &Range<usize>| {
            r.start < self.head.len() || (!self.tail.is_empty() && r.end > tail_at)
        };
        let sorted = ranges.windows(2).all(|w| w[0].end <= w[1].start);
        let fits = sorted
            && ranges.iter().all(|r| r.start <= r.end && r.end <= self.len)
            && ranges.iter().any(looked_at);
        if !fits {
            return Plan::Whole;
        }
        Plan::Parts(Parts {
            len: self.len,
            ranges,
            head: self.head,
            tail: self.tail,
        })
    }
}

/// One look: chunk `i`'s bytes from `at`, `len` of them (its tail, or else its head).
struct Look {
    i: usize,
    at: u64,
    len: usize,
    tail: bool,
}

impl Look {
    /// Chunk `i`'s first `len` bytes.
    fn head(i: usize, len: usize) -> Look {
        Look {
            i,
            at: 0,
            len,
            tail: false,
        }
    }
}

/// Reads every look's bytes in one round; each with the length of its object (`None`: absent).
fn look(
    store: &dyn Store,
    keys: &[StoreKey],
    looks: &[Look],
) -> Result<Vec<(Option<u64>, Vec<u8>)>> {
    let mut bufs: Vec<Vec<u8>> = looks.iter().map(|l| vec![0u8; l.len]).collect();
    let which: Vec<StoreKey> = looks.iter().map(|l| keys[l.i].clone()).collect();
    let mut runs: Vec<Runs<'_>> = looks
        .iter()
        .zip(bufs.iter_mut())
        .map(|(l, b)| vec![(l.at, &mut b[..])])
        .collect();
    let lens = store.get_runs_many(&which, &mut runs)?;
    drop(runs);
    Ok(lens.into_iter().zip(bufs).collect())
}

/// The plan for reading, from each stored chunk at `keys[i]` (decoding to `decoded_len`
/// bytes), the parts that decoding its `wanted[i]` byte ranges needs, found in at most three
/// rounds of looks at all the chunks together: usually one (a blosc chunk's head, a shard's
/// index at its end).
pub(super) fn plan(
    store: &dyn Store,
    chain: &Chain,
    keys: &[StoreKey],
    decoded_len: usize,
    wanted: &[Vec<Range<usize>>],
) -> Result<Vec<Plan>> {
    let n = keys.len();
    let mut plans: Vec<Option<Plan>> = (0..n).map(|_| None).collect();
    let mut looked: Vec<Option<Looked>> = (0..n).map(|_| None).collect();
    // A stored chunk far longer than any coding of its bytes is damaged or hostile: read
    // whole, where the store's object limit refuses it (not into a buffer of its length).
    let bound = super::largest_coding(decoded_len, chain);
    // An index longer than that is no index of this chunk: not fetched before it is refused.
    if chain.tail_first().is_some_and(|n| n as u64 > bound) {
        return Ok((0..n).map(|_| Plan::Whole).collect());
    }
    for (i, first) in first_looks(store, chain, keys)?.into_iter().enumerate() {
        match first {
            Ok(first) if first.head.len() == first.len => plans[i] = Some(Plan::Held(first.head)),
            Ok(first) if first.tail.len() == first.len => plans[i] = Some(Plan::Held(first.tail)),
            Ok(first) if first.len as u64 <= bound => looked[i] = Some(first),
            Ok(_) => plans[i] = Some(Plan::Whole),
            Err(plan) => plans[i] = Some(plan),
        }
    }
    loop {
        // The looks may have found that the store reads no ranges: parts would be read whole.
        if !keys.first().is_some_and(|k| store.reads_runs_in_place(k)) {
            for (i, slot) in looked.iter_mut().enumerate() {
                if slot.take().is_some() {
                    plans[i] = Some(Plan::Whole);
                }
            }
            break;
        }
        let mut looks = Vec::new();
        for (i, slot) in looked.iter_mut().enumerate() {
            let Some(l) = slot else { continue };
            match chain.encoded_parts(&l.head, &l.tail, l.len, decoded_len, &wanted[i]) {
                EncodedParts::Ranges(ranges) => {
                    plans[i] = slot.take().map(|l| l.parts(ranges));
                }
                EncodedParts::Head(k) if !l.looked_again && k > l.head.len() && k <= l.len => {
                    l.looked_again = true;
                    looks.push(Look::head(i, k));
                }
                EncodedParts::Tail(k) if !l.looked_at_tail && k > l.tail.len() && k <= l.len => {
                    l.looked_at_tail = true;
                    looks.push(Look {
                        i,
                        at: (l.len - k) as u64,
                        len: k,
                        tail: true,
                    });
                }
                _ => {
                    *slot = None;
                    plans[i] = Some(Plan::Whole);
                }
            }
        }
        if looks.is_empty() {
            break;
        }
        for (seen, (len, bytes)) in looks.iter().zip(look(store, keys, &looks)?) {
            let slot = &mut looked[seen.i];
            match slot {
                // The chunk changed in between: read whole.
                Some(l) if len != Some(l.len as u64) => {
                    *slot = None;
                    plans[seen.i] = Some(Plan::Whole);
                }
                Some(l) if seen.tail => l.tail = bytes,
                Some(l) => l.head = bytes,
                None => {}
            }
        }
    }
    Ok(plans
        .into_iter()
        .map(|p| p.unwrap_or(Plan::Whole))
        .collect())
}

/// The first look at each chunk, in one round: its tail when the codec names its parts from
/// there ([`Chain::tail_first`]), else its head. `Err` with the plan for a chunk that is absent,
/// or too long to address here (read whole, where the store's object limit refuses it).
fn first_looks(
    store: &dyn Store,
    chain: &Chain,
    keys: &[StoreKey],
) -> Result<Vec<std::result::Result<Looked, Plan>>> {
    let looked = |len: Option<u64>, head: Vec<u8>, tail: Vec<u8>| {
        let len = usize::try_from(len.ok_or(Plan::Absent)?).map_err(|_| Plan::Whole)?;
        let looked_at_tail = !tail.is_empty();
        Ok(Looked {
            len,
            head,
            tail,
            looked_again: false,
            looked_at_tail,
        })
    };
    if let Some(n) = chain.tail_first() {
        let tails = store.get_tails_many(keys, n)?;
        return Ok(tails
            .into_iter()
            .map(|t| match t {
                Some(t) => looked(Some(t.len), Vec::new(), t.bytes),
                None => Err(Plan::Absent),
            })
            .collect());
    }
    let firsts: Vec<Look> = (0..keys.len()).map(|i| Look::head(i, FIRST_HEAD)).collect();
    Ok(look(store, keys, &firsts)?
        .into_iter()
        .map(|(len, mut head)| {
            head.truncate(len.map_or(0, |l| l.min(FIRST_HEAD as u64) as usize));
            looked(len, head, Vec::new())
        })
        .collect())
}

/// Reads the planned parts of the chunks at `keys` in one round. `None` for a chunk whose
/// parts do not agree with the bytes looked at, or whose length changed: it was replaced in
/// between, and parts of two versions are never decoded together (read it whole).
pub(super) fn read(
    store: &dyn Store,
    keys: &[StoreKey],
    parts: Vec<Parts>,
) -> Result<Vec<Option<PartsRead>>> {
    let mut bufs: Vec<Vec<u8>> = parts.iter().map(|p| vec![0u8; p.bytes()]).collect();
    let mut runs: Vec<Runs<'_>> = parts
        .iter()
        .zip(bufs.iter_mut())
        .map(|(p, buf)| p.runs_in(buf, false))
        .collect();
    let lens = store.get_runs_many(keys, &mut runs)?;
    drop(runs);
    Ok(parts
        .into_iter()
        .zip(bufs)
        .zip(lens)
        .map(|((parts, bytes), len)| {
            (len == Some(parts.len as u64) && parts.agree_in(&bytes, false))
                .then_some(PartsRead { parts, bytes })
        })
        .collect())
}

/// What [`fetch`] read.
pub(super) enum Fetched {
    /// There is no chunk.
    Absent,
    /// The parts are in the buffer it was given.
    Parts,
    /// The whole stored chunk is in the buffer: the codec needs all of it, the chunk is no
    /// longer than a look at it, or it changed between reads.
    Whole,
}

/// Reads the parts of the one stored chunk at `key` that decoding the `wanted` byte ranges of
/// the decoded chunk (`decoded_len` bytes) needs into `stored`, which becomes as long as the
/// stored chunk ([`PartsRead::place`]). When the parts will not do, `stored` gets the whole
/// chunk.
pub(super) fn fetch(
    store: &dyn Store,
    chain: &Chain,
    key: &StoreKey,
    decoded_len: usize,
    wanted: &[Range<usize>],
    stored: &mut Vec<u8>,
) -> Result<Fetched> {
    let keys = std::slice::from_ref(key);
    match plan(store, chain, keys, decoded_len, &[wanted.to_vec()])?.pop() {
        Some(Plan::Absent) => return Ok(Fetched::Absent),
        Some(Plan::Parts(parts)) => {
            set_len_sparse(stored, parts.len);
            if parts.read_in_place(store, key, stored)? {
                return Ok(Fetched::Parts);
            }
        }
        // Read whole again, as a local store reads whole objects (a zip entry's CRC is
        // checked then, not when its runs are read).
        Some(Plan::Held(_) | Plan::Whole) | None => {}
    }
    Ok(match store.get_into(key, stored)? {
        true => Fetched::Whole,
        false => Fetched::Absent,
    })
}

#[cfg(test)]
// A list of one byte range is a common argument here, not a mistaken range vector.
#[allow(clippy::single_range_in_vec_init)]
mod tests {
    use super::*;
    use crate::codec::Context;
    use crate::zmap::memory::MemoryStore;
    use crate::zmap::{Tail, runs_of_whole};
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
        // The shard replaced between the look at its index and the read of the parts (the
        // store's third read of runs): read whole. Replaced between learning its length and
        // reading its index (the second): its new index, which is all of it. Either way, what
        // decodes is the new shard.
        let zeros = vec![0u8; data.len()];
        let other = sharded.encode(zeros.clone()).unwrap();
        for change_after in [2, 3] {
            let (store, key) = store_with(&stored, change_after, &other);
            let got = fetch(&store, &sharded, &key, data.len(), &wanted, &mut buf).unwrap();
            let mut out = vec![1u8; data.len()];
            match got {
                // The new shard holds only its index (inner chunks of zeros, the fill value,
                // are not stored): the look at its tail read all of it.
                Fetched::Whole => assert!(buf == other),
                Fetched::Parts => {
                    assert_eq!(change_after, 2);
                    assert!(sharded.decode_parts(&buf, &mut out, &wanted).unwrap());
                    for r in &wanted {
                        assert_eq!(out[r.clone()], zeros[r.clone()]);
                    }
                }
                Fetched::Absent => panic!("not read"),
            }
        }
    }

    /// A store that counts the rounds of looks and reads a planner makes.
    #[derive(Debug)]
    struct Rounds {
        inner: MemoryStore,
        rounds: AtomicUsize,
        /// What `reads_runs_in_place` answers.
        in_place: bool,
    }

    impl Store for Rounds {
        fn get(&self, key: &StoreKey) -> Result<Option<Vec<u8>>> {
            self.inner.get(key)
        }
        fn get_runs_many(
            &self,
            keys: &[StoreKey],
            runs: &mut [Runs<'_>],
        ) -> Result<Vec<Option<u64>>> {
            self.rounds.fetch_add(1, Ordering::Relaxed);
            self.inner.get_runs_many(keys, runs)
        }
        fn get_tails_many(&self, keys: &[StoreKey], n: usize) -> Result<Vec<Option<Tail>>> {
            self.rounds.fetch_add(1, Ordering::Relaxed);
            self.inner.get_tails_many(keys, n)
        }
        fn reads_runs_in_place(&self, _key: &StoreKey) -> bool {
            self.in_place
        }
        crate::zmap::forward_writes_and_listings!(inner);
        fn describe(&self) -> String {
            "rounds".into()
        }
    }

    /// Eight shards (index at the end) and eight blosc chunks, one of each absent, planned
    /// and read together: one round of looks (the shards' indexes, the chunks' heads), one of
    /// parts, and the parts decode to the wanted bytes of each.
    #[test]
    fn many_chunks_are_planned_and_read_in_two_rounds() {
        let sharded = chain(
            r#"[{"id":"sharding_indexed","shard_shape":[512,512],"chunk_shape":[64,64],
                 "codecs":[{"id":"zstd","level":1}],"index_checksum":true}]"#,
        );
        let blosc =
            chain(r#"[{"id":"blosc","cname":"lz4","clevel":5,"shuffle":1,"blocksize":16384}]"#);
        for codec in [sharded, blosc] {
            let store = Rounds {
                inner: MemoryStore::new(),
                rounds: AtomicUsize::new(0),
                in_place: true,
            };
            let chunk = |k: u32| -> Vec<u8> {
                (0..262_144u32)
                    .flat_map(|i| (i.wrapping_mul(2_654_435_761) ^ k).to_le_bytes())
                    .collect()
            };
            let keys: Vec<StoreKey> = (0..8)
                .map(|k| StoreKey::new(&format!("v/{k}.0")).unwrap())
                .collect();
            for (k, key) in keys.iter().enumerate().skip(1) {
                store
                    .put(key, &codec.encode(chunk(k as u32)).unwrap())
                    .unwrap();
            }
            let wanted: Vec<Vec<Range<usize>>> = (0..8)
                .map(|k| vec![4 * k..4 * k + 4, 4 * (200_000 + k)..4 * (200_000 + k) + 8])
                .collect();
            let plans = plan(&store, &codec, &keys, 4 * 262_144, &wanted).unwrap();
            assert!(matches!(plans[0], Plan::Absent));
            let parts: Vec<Parts> = plans
                .into_iter()
                .skip(1)
                .map(|p| match p {
                    Plan::Parts(parts) => parts,
                    _ => panic!("not planned in parts"),
                })
                .collect();
            let read = read(&store, &keys[1..], parts).unwrap();
            assert_eq!(store.rounds.load(Ordering::Relaxed), 2, "{codec:?}");
            for (k, read) in read.into_iter().enumerate() {
                let k = k + 1;
                let mut stored = Vec::new();
                read.expect("parts agree").place(&mut stored);
                let mut out = vec![0u8; 4 * 262_144];
                assert!(codec.decode_parts(&stored, &mut out, &wanted[k]).unwrap());
                let want = chunk(k as u32);
                for r in &wanted[k] {
                    assert_eq!(out[r.clone()], want[r.clone()], "{codec:?} chunk {k}");
                }
            }
        }
    }

    /// A store that turns out, by its looks, to read no ranges in place (a web server that
    /// answers ranged requests with whole objects) gets whole reads, not parts read whole.
    #[test]
    fn a_store_that_reads_no_ranges_gets_whole_plans() {
        let blosc =
            chain(r#"[{"id":"blosc","cname":"lz4","clevel":5,"shuffle":1,"blocksize":16384}]"#);
        let store = Rounds {
            inner: MemoryStore::new(),
            rounds: AtomicUsize::new(0),
            in_place: false,
        };
        let stored: Vec<u8> = (0..262_144u32).flat_map(|i| i.to_le_bytes()).collect();
        let key = StoreKey::new("v/0.0").unwrap();
        store.put(&key, &blosc.encode(stored).unwrap()).unwrap();
        let wanted = vec![vec![0..4]];
        let plans = plan(&store, &blosc, &[key], 4 * 262_144, &wanted).unwrap();
        assert!(matches!(plans[..], [Plan::Whole]));
        assert_eq!(
            store.rounds.load(Ordering::Relaxed),
            1,
            "one round of looks only"
        );
    }

    /// A chunk no longer than the first look is held from it: one round, nothing read twice.
    #[test]
    fn a_chunk_the_look_read_whole_is_held() {
        let blosc = chain(r#"[{"id":"blosc","cname":"lz4","clevel":5,"shuffle":1,"blocksize":0}]"#);
        let data: Vec<u8> = (0..500u32).flat_map(|i| i.to_le_bytes()).collect();
        let stored = blosc.encode(data.clone()).unwrap();
        assert!(stored.len() < FIRST_HEAD);
        let store = Rounds {
            inner: MemoryStore::new(),
            rounds: AtomicUsize::new(0),
            in_place: true,
        };
        let key = StoreKey::new("v/0").unwrap();
        store.put(&key, &stored).unwrap();
        let plans = plan(&store, &blosc, &[key], data.len(), &[vec![4..8]]).unwrap();
        assert!(matches!(&plans[..], [Plan::Held(held)] if *held == stored));
        assert_eq!(store.rounds.load(Ordering::Relaxed), 1);
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
