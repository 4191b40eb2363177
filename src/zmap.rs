//! Key/value storage ("zmap"): the store trait, validated keys, and the backends.
//!
//! Owns bytes under keys and nothing else: no Zarr, no netCDF. Every backend (memory,
//! directory tree, zip archive, S3, plain HTTP, reference documents) implements [`Store`];
//! those that write pass the one conformance suite in `tests/zmap_conformance.rs`.

pub mod created;
pub mod file;
pub mod http;
pub mod key;
pub mod memory;
mod open;
pub mod overlay;
mod positional;
pub mod reference;
pub mod remote;
pub mod s3;
pub mod zip;

pub use key::{StoreKey, StorePrefix};
pub use open::{OpenHow, open_diskless, open_store};

use crate::error::{Error, Result};
use rayon::prelude::*;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

/// Top-level objects that mark a directory, archive root or key prefix as a Zarr or NCZarr
/// dataset (the only Zarr knowledge of this layer: it decides what `create` may clobber and
/// where a dataset starts inside an archive).
pub const ZARR_MARKERS: [&str; 6] = [
    ".zgroup",
    ".zarray",
    ".zattrs",
    ".zmetadata",
    ".nczarr",
    "zarr.json",
];

/// The largest object a store reads whole before the chunk engine allows more: any metadata
/// object, and the chunks of ordinary variables, are far smaller.
pub const LARGEST_OBJECT_AT_FIRST: u64 = 1 << 30;

/// The size beyond which a store refuses to read an object whole, so that a damaged or
/// hostile store (a huge file, an endless or lying response) is an error, not an allocation
/// of its size. It starts at [`LARGEST_OBJECT_AT_FIRST`] and only grows, as the chunk engine
/// allows the largest stored chunk of each variable it reads.
#[derive(Debug)]
pub struct ObjectLimit(AtomicU64);

impl Default for ObjectLimit {
    fn default() -> Self {
        ObjectLimit(AtomicU64::new(LARGEST_OBJECT_AT_FIRST))
    }
}

impl ObjectLimit {
    /// Allows objects of up to `bytes` from now on (a smaller value changes nothing).
    pub fn allow(&self, bytes: u64) {
        self.0.fetch_max(bytes, Ordering::Relaxed);
    }

    /// The largest object read whole now.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// An error when an object of `size` bytes, called `what` in messages, is over the limit.
    pub fn check(&self, what: impl FnOnce() -> String, size: u64) -> Result<()> {
        let limit = self.get();
        if size > limit {
            return Err(Error::ObjectTooLarge {
                what: what(),
                limit,
            });
        }
        Ok(())
    }
}

/// Runs of one object: each receives the object's bytes from its offset on (see
/// [`Store::get_runs_into`]).
pub type Runs<'a> = Vec<(u64, &'a mut [u8])>;

/// Fills `runs` from `value`, the object's bytes from offset `base` on; a run reaching past
/// `value` is filled as far as it goes.
pub(crate) fn copy_runs(value: &[u8], base: u64, runs: &mut [(u64, &mut [u8])]) {
    for (offset, out) in runs.iter_mut() {
        let start = offset
            .checked_sub(base)
            .and_then(|s| usize::try_from(s).ok())
            .unwrap_or(usize::MAX)
            .min(value.len());
        let n = out.len().min(value.len() - start);
        out[..n].copy_from_slice(&value[start..start + n]);
    }
}

/// The text every key below `prefix` starts with (`""` for the root).
pub(crate) fn below(prefix: &StorePrefix) -> String {
    if prefix.is_root() {
        String::new()
    } else {
        format!("{prefix}/")
    }
}

/// [`Store::list_children`] of a store holding its keys in a sorted map.
pub(crate) fn children_in<V>(
    map: &std::collections::BTreeMap<String, V>,
    prefix: &StorePrefix,
) -> Vec<String> {
    let start = below(prefix);
    let names: std::collections::BTreeSet<&str> = map
        .range(start.clone()..)
        .map(|(k, _)| k.as_str())
        .take_while(|k| k.starts_with(&start))
        .map(|k| k[start.len()..].split('/').next().unwrap_or_default())
        .collect();
    names.into_iter().map(str::to_string).collect()
}

/// [`Store::list_keys`] of a store holding its keys in a sorted map.
pub(crate) fn keys_in<V>(
    map: &std::collections::BTreeMap<String, V>,
    prefix: &StorePrefix,
) -> Result<Vec<StoreKey>> {
    let start = below(prefix);
    map.range(start.clone()..)
        .map(|(k, _)| k.as_str())
        .take_while(|k| k.starts_with(&start))
        .map(StoreKey::new)
        .collect()
}

/// Gap between two runs of one object up to which one ranged request of a remote store
/// fetches both (and the bytes between): a further request costs about as much as this many
/// bytes on a remote link.
pub const RANGE_GAP_MERGED: u64 = 1 << 20;

/// The spans of an object that one ranged request each fetches for the byte ranges `wanted`:
/// in offset order, ranges at most [`RANGE_GAP_MERGED`] apart sharing a span; empty ranges
/// fetch nothing. With nothing wanted, one empty span at 0 (the object's length is still
/// learnt).
pub fn merged_spans(wanted: impl Iterator<Item = Range<u64>>) -> Vec<Range<u64>> {
    let mut wanted: Vec<Range<u64>> = wanted.filter(|r| r.start < r.end).collect();
    wanted.sort_unstable_by_key(|r| r.start);
    let mut spans: Vec<Range<u64>> = Vec::new();
    for r in wanted {
        match spans.last_mut() {
            Some(last) if r.start <= last.end.saturating_add(RANGE_GAP_MERGED) => {
                last.end = last.end.max(r.end);
            }
            _ => spans.push(r),
        }
    }
    if spans.is_empty() {
        spans.push(0..0);
    }
    spans
}

/// [`Store::get_runs_into`] answered from a whole object (`None`: absent): fills `runs` and
/// returns the object's length.
pub(crate) fn runs_of_whole(value: Option<Vec<u8>>, runs: &mut [(u64, &mut [u8])]) -> Option<u64> {
    value.map(|v| {
        copy_runs(&v, 0, runs);
        v.len() as u64
    })
}

/// The last bytes of an object, and its length ([`Store::get_tails_many`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tail {
    pub len: u64,
    pub bytes: Vec<u8>,
}

impl Tail {
    /// The last `n` bytes of `whole`.
    pub fn of_whole(whole: &[u8], n: usize) -> Tail {
        Tail {
            len: whole.len() as u64,
            bytes: whole[whole.len().saturating_sub(n)..].to_vec(),
        }
    }
}

/// What [`Store::get_each`] hands every object to: the key's index and the object (`None`:
/// absent).
pub type EachObject<'a> = dyn Fn(usize, Option<Vec<u8>>) -> Result<()> + Sync + 'a;

/// What [`Store::put_streamed`] gives its producer to store an object with.
pub type PutObject<'a> = dyn Fn(&StoreKey, Vec<u8>) -> Result<()> + Sync + 'a;

/// A producer of objects for [`Store::put_streamed`].
pub type Produce<'a> = dyn Fn(&PutObject<'_>) -> Result<()> + Sync + 'a;

/// [`Store::get_each`] by batches of `held` objects fetched with [`Store::get_many`], each
/// batch handed out in parallel once it is all there.
pub fn get_each_in_batches(
    store: &(impl Store + ?Sized),
    keys: &[StoreKey],
    held: usize,
    each: &EachObject<'_>,
) -> Result<()> {
    let mut first = 0;
    for batch in keys.chunks(held.max(1)) {
        let got = store.get_many(batch)?;
        got.into_par_iter()
            .enumerate()
            .try_for_each(|(i, value)| each(first + i, value))?;
        first += batch.len();
    }
    Ok(())
}

/// A flat key/value store with `/`-separated keys relative to a dataset root.
///
/// Contract shared by every backend:
/// - **Absent is a value**: reading a missing key is `Ok(None)`, never an error.
/// - **Atomic puts**: `put` replaces the whole object; a concurrent reader sees the old or the
///   new bytes, never a mixture or a truncated object.
/// - **Listing** returns the names of the immediate children of a prefix (objects and
///   "directories" alike), each once, sorted by byte order.
/// - Deleting a missing key is not an error.
pub trait Store: Send + Sync + std::fmt::Debug {
    /// The whole object at `key`, or `None` when there is none.
    fn get(&self, key: &StoreKey) -> Result<Option<Vec<u8>>>;

    /// Several objects; backends with latency (S3) fetch them concurrently. The result has
    /// one entry per key, in the same order.
    fn get_many(&self, keys: &[StoreKey]) -> Result<Vec<Option<Vec<u8>>>> {
        keys.iter().map(|k| self.get(k)).collect()
    }

    /// Several objects, each handed to `each` with its key's index on a worker thread, with at
    /// most `held` of them fetched and not yet through `each` at any time. The first failure
    /// (of the store or of `each`) is the result. The default fetches them by batches of
    /// `held` ([`get_each_in_batches`]); remote backends hand each object out as it arrives,
    /// so the first are decoded while the rest are on their way.
    fn get_each(&self, keys: &[StoreKey], held: usize, each: &EachObject<'_>) -> Result<()> {
        get_each_in_batches(self, keys, held, each)
    }

    /// Several objects read straight into caller-provided buffers, one buffer per key: the chunk
    /// engine lands uncompressed chunks in the user's memory this way, without a copy. Entry
    /// `i` of the result is `None` when key `i` is absent, else the object's full length;
    /// `outs[i]` then holds its first `min(length, outs[i].len())` bytes. The default reads
    /// with [`Store::get_many`] and copies; backends that can read in place override it.
    fn get_many_into(
        &self,
        keys: &[StoreKey],
        outs: &mut [&mut [u8]],
    ) -> Result<Vec<Option<usize>>> {
        let got = self.get_many(keys)?;
        Ok(got
            .into_iter()
            .zip(outs.iter_mut())
            .map(|(value, out)| runs_of_whole(value, &mut [(0, &mut **out)]).map(|n| n as usize))
            .collect())
    }

    /// Parts of one object read straight into caller buffers: `runs[i] = (offset, buffer)`
    /// receives the object's bytes `offset..offset + buffer.len()`. `None` when the object is
    /// absent, else its full length; a run reaching past the end is left partly unwritten (the
    /// caller compares the length with the one it expects). The default reads the whole object
    /// and copies; backends that can read ranges in place override it.
    fn get_runs_into(&self, key: &StoreKey, runs: &mut [(u64, &mut [u8])]) -> Result<Option<u64>> {
        Ok(runs_of_whole(self.get(key)?, runs))
    }

    /// Parts of several objects, as [`Store::get_runs_into`] for each: entry `i` of the result
    /// is for `keys[i]` and `runs[i]`. The default reads them one by one, in parallel; remote
    /// backends override it with concurrent ranged requests (for each object, one per span of its
    /// runs, [`merged_spans`]).
    fn get_runs_many(&self, keys: &[StoreKey], runs: &mut [Runs<'_>]) -> Result<Vec<Option<u64>>> {
        keys.par_iter()
            .zip(runs.par_iter_mut())
            .map(|(k, r)| self.get_runs_into(k, r))
            .collect()
    }

    /// The last `n` bytes of each object (all of it when it is shorter) with its length;
    /// `None` when absent. Entry `i` of the result is for `keys[i]`. The default learns each
    /// length and then reads the tail ([`Store::get_runs_into`]: on stores that do not read
    /// runs in place, the whole object each time), in parallel; S3 overrides it with one
    /// concurrent suffix request per object.
    fn get_tails_many(&self, keys: &[StoreKey], n: usize) -> Result<Vec<Option<Tail>>> {
        keys.par_iter()
            .map(|key| {
                let Some(len) = self.get_runs_into(key, &mut [])? else {
                    return Ok(None);
                };
                let at = len.saturating_sub(n as u64);
                let mut bytes = vec![0u8; (len - at) as usize];
                match self.get_runs_into(key, &mut [(at, &mut bytes[..])])? {
                    Some(again) if again == len => Ok(Some(Tail { len, bytes })),
                    // Replaced in between: its tail as it is now.
                    _ => Ok(self.get(key)?.map(|whole| Tail::of_whole(&whole, n))),
                }
            })
            .collect()
    }

    /// Reads the whole object at `key` into `buf` (replacing its contents, reusing its
    /// capacity); false when the object is absent. The default reads a new buffer; backends
    /// that read into a caller's buffer override it.
    fn get_into(&self, key: &StoreKey, buf: &mut Vec<u8>) -> Result<bool> {
        match self.get(key)? {
            Some(value) => {
                *buf = value;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// True when [`Store::get_runs_into`] (on a remote store, [`Store::get_runs_many`]) reads
    /// the runs of the object at `key` where they lie, not the whole object: reading a few
    /// parts of it costs about what those parts cost.
    fn reads_runs_in_place(&self, _key: &StoreKey) -> bool {
        false
    }

    /// Allows whole reads of objects of up to `bytes` from now on ([`ObjectLimit`]); the
    /// chunk engine calls it with the largest a variable's stored chunk can be before reading
    /// it. Stores that hold everything in memory already have nothing to refuse.
    fn allow_objects_up_to(&self, bytes: u64) {
        let _ = bytes;
    }

    /// True when a read costs about what its bytes cost (local files, memory): the chunk
    /// engine then reads only the runs a request needs and keeps few requests in flight. False
    /// where every read is a round trip: whole chunks are fetched once, cached, and many
    /// requests are kept in flight.
    fn is_local(&self) -> bool {
        false
    }

    /// True when listings may leave out names that begin with `.` (`.zarray`, `.zgroup`):
    /// those of a web server's index pages, which servers such as nginx and Apache write
    /// without them. Whether such an object is there is then asked by reading it.
    fn listings_hide_dot_files(&self) -> bool {
        false
    }

    /// Writes the whole object at `key`, replacing any previous one atomically.
    fn put(&self, key: &StoreKey, value: &[u8]) -> Result<()>;

    /// Writes several objects; backends with latency upload them concurrently.
    fn put_many(&self, items: Vec<(StoreKey, Vec<u8>)>) -> Result<()> {
        items.iter().try_for_each(|(k, v)| self.put(k, v))
    }

    /// Runs `produce`, which stores objects through the function it is given (from any thread,
    /// several at once), and returns once every object it put is stored; the first failure is
    /// the result. Remote backends upload each object as it is put while `produce` makes the
    /// next, with at most `held` put and not yet stored (putting waits for room, and fails
    /// once an upload has failed). The default stores each object as it is put.
    fn put_streamed(&self, held: usize, produce: &Produce<'_>) -> Result<()> {
        let _ = held;
        produce(&|key, value| self.put(key, &value))
    }

    /// Removes the object at `key`; a missing key is fine.
    fn delete(&self, key: &StoreKey) -> Result<()>;

    /// Removes the objects at `keys`; missing ones are fine. Backends with latency remove them
    /// concurrently, or several in a request.
    fn delete_many(&self, keys: &[StoreKey]) -> Result<()> {
        keys.iter().try_for_each(|k| self.delete(k))
    }

    /// Removes every object whose key starts with `prefix/` (the root prefix: everything).
    fn delete_prefix(&self, prefix: &StorePrefix) -> Result<()>;

    /// Sorted, de-duplicated names of the immediate children of `prefix`.
    fn list_children(&self, prefix: &StorePrefix) -> Result<Vec<String>>;

    /// Every object key below `prefix`, recursively, sorted.
    fn list_keys(&self, prefix: &StorePrefix) -> Result<Vec<StoreKey>>;

    /// Makes all writes durable/visible (the zip backend writes its archive here).
    fn flush(&self) -> Result<()> {
        Ok(())
    }

    /// Removes the dataset this store holds (`nc_abort` of a dataset being created).
    fn discard(&self) -> Result<()> {
        self.delete_prefix(&StorePrefix::root())
    }

    /// A short description for messages ("file:///data/x.zarr").
    fn describe(&self) -> String;
}

/// In tests: the [`Store`] methods a wrapping store hands unchanged to its store in field
/// `$inner` (writes, deletes and listings), for wrappers that watch or alter reads.
#[cfg(test)]
macro_rules! forward_writes_and_listings {
    ($inner:ident) => {
        fn put(&self, key: &$crate::zmap::StoreKey, value: &[u8]) -> $crate::error::Result<()> {
            self.$inner.put(key, value)
        }
        fn delete(&self, key: &$crate::zmap::StoreKey) -> $crate::error::Result<()> {
            self.$inner.delete(key)
        }
        fn delete_prefix(&self, prefix: &$crate::zmap::StorePrefix) -> $crate::error::Result<()> {
            self.$inner.delete_prefix(prefix)
        }
        fn list_children(
            &self,
            prefix: &$crate::zmap::StorePrefix,
        ) -> $crate::error::Result<Vec<String>> {
            self.$inner.list_children(prefix)
        }
        fn list_keys(
            &self,
            prefix: &$crate::zmap::StorePrefix,
        ) -> $crate::error::Result<Vec<$crate::zmap::StoreKey>> {
            self.$inner.list_keys(prefix)
        }
    };
}
#[cfg(test)]
pub(crate) use forward_writes_and_listings;

#[cfg(test)]
// Lists of one range are what `merged_spans` gives, not mistaken range vectors.
#[allow(clippy::single_range_in_vec_init)]
mod tests {
    use super::*;

    #[test]
    fn the_object_limit_only_grows() {
        let limit = ObjectLimit::default();
        assert_eq!(limit.get(), LARGEST_OBJECT_AT_FIRST);
        limit.allow(10);
        assert_eq!(
            limit.get(),
            LARGEST_OBJECT_AT_FIRST,
            "a smaller value changes nothing"
        );
        assert!(limit.check(|| "x".into(), LARGEST_OBJECT_AT_FIRST).is_ok());
        let over = limit.check(|| "x".into(), LARGEST_OBJECT_AT_FIRST + 1);
        assert!(
            matches!(&over, Err(Error::ObjectTooLarge { what, limit }) if what == "x" && *limit == LARGEST_OBJECT_AT_FIRST),
            "{over:?}"
        );
        limit.allow(5 << 30);
        assert!(limit.check(|| "x".into(), 5 << 30).is_ok());
    }

    #[test]
    fn near_ranges_share_a_span_and_far_ones_do_not() {
        let gap = RANGE_GAP_MERGED;
        let spans = |w: Vec<Range<u64>>| merged_spans(w.into_iter());
        assert_eq!(spans(vec![]), [0..0]);
        assert_eq!(
            spans(vec![5..5, 9..9]),
            [0..0],
            "empty ranges fetch nothing"
        );
        assert_eq!(spans(vec![100..104, 0..4]), [0..104]);
        assert_eq!(
            spans(vec![0..4, 4 + gap..8 + gap, 9 + 2 * gap..10 + 2 * gap]),
            [0..8 + gap, 9 + 2 * gap..10 + 2 * gap]
        );
        assert_eq!(spans(vec![0..10, 2..4, 8..20]), [0..20], "overlaps merge");
    }
}
