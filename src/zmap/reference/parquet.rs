//! Reference sets stored as Parquet: the layout of fsspec's `LazyReferenceMapper`, which
//! kerchunk's `refs_to_dataframe` and VirtualiZarr's Parquet output write. A directory (or an
//! S3 or web prefix) holds `.zmetadata`, `{"metadata": {key: JSON, ...}, "record_size": N}`,
//! and for each array `field` the records `field/refs.<r>.parq`: row `i` of record `r` is the
//! reference of the array's chunk number `r * N + i`, chunks numbered in C order of the chunk
//! grid. A row's `raw` bytes are the chunk itself; otherwise `path` names its target (none: the
//! chunk was never written), the whole of it when `offset` and `size` are both 0, else `size`
//! bytes from `offset`. A record file that does not exist holds no chunk.
//!
//! Owns that layout: the metadata, each array's chunk grid, and records read when a key needs
//! them (those of one batch of keys concurrently, each record once however many readers want
//! it at the same time), decoded ([`records`]) and kept in a cache bounded in bytes, their
//! targets found through [`locate`]. It must not know how targets are read, nor what the
//! chunks mean.

mod pages;
mod records;

use super::super::positional::{Opened, not_regular, open_regular, read_whole};
use super::super::{ObjectLimit, Store, StoreKey};
use super::Entry;
use super::targets::{Base, Place, locate};
use crate::error::{Error, Result};
use bytes::Bytes;
use records::Row;
use serde_json::Value as Json;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// Most rows one record may have (its `record_size`); fsspec writes 10 000 or 100 000.
const MOST_RECORD_ROWS: u64 = 1_000_000;

/// Bytes of records kept in memory between reads; the records one batch of keys needs are held
/// while it is read, however many that is.
const MOST_CACHED_BYTES: usize = 128 << 20;

/// Target URLs kept found; past it, all are forgotten and found again as needed.
const MOST_PLACES: usize = 100_000;

/// Where a Parquet reference set's files are.
pub enum Records {
    /// This local directory.
    Local(PathBuf),
    /// Below `prefix` (ending in `/`) in this store.
    Remote {
        store: Box<dyn Store>,
        prefix: String,
    },
}

impl std::fmt::Debug for Records {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Records::Local(dir) => write!(f, "Records::Local({})", dir.display()),
            Records::Remote { store, prefix } => {
                write!(f, "Records::Remote({}, {prefix})", store.describe())
            }
        }
    }
}

impl Records {
    /// The files `names` (relative to the set's directory), read whole; `None` for one that
    /// does not exist. Local files are read one after another on this thread (never on the
    /// thread pool, whose workers may be waiting for them), remote ones concurrently.
    fn read_many(&self, names: &[String]) -> Result<Vec<Option<Vec<u8>>>> {
        let limit = ObjectLimit::default();
        match self {
            Records::Local(dir) => names
                .iter()
                .map(|name| {
                    let path = dir.join(name);
                    let shown = || path.display().to_string();
                    match open_regular(&path) {
                        Ok(Opened::File(file, len)) => {
                            limit.check(shown, len)?;
                            read_whole(file, len)
                                .map(Some)
                                .map_err(|e| Error::io(shown(), e))
                        }
                        Ok(Opened::Absent) => Ok(None),
                        Ok(Opened::NotRegular) => Err(Error::io(shown(), not_regular())),
                        Err(e) => Err(Error::io(shown(), e)),
                    }
                })
                .collect(),
            Records::Remote { store, prefix } => {
                let keys: Vec<StoreKey> = names
                    .iter()
                    .map(|n| StoreKey::new(&format!("{prefix}{n}")))
                    .collect::<Result<_>>()?;
                store.get_many(&keys)
            }
        }
    }

    fn is_local(&self) -> bool {
        matches!(self, Records::Local(_))
    }
}

/// An array's chunk grid: chunks along each dimension, how many in all, and the separator of
/// its chunk keys.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Grid {
    chunks: Vec<u64>,
    total: u64,
    separator: char,
}

impl Grid {
    /// The grid `.zarray` metadata `zarray` describes (a 0-d array's is one chunk).
    fn of(zarray: &Json) -> std::result::Result<Grid, String> {
        let dims = |name: &str| -> std::result::Result<Vec<u64>, String> {
            zarray
                .get(name)
                .and_then(Json::as_array)
                .and_then(|a| a.iter().map(Json::as_u64).collect::<Option<Vec<u64>>>())
                .ok_or_else(|| format!("its .zarray has no list of whole numbers {name:?}"))
        };
        let (shape, chunk_shape) = (dims("shape")?, dims("chunks")?);
        if shape.len() != chunk_shape.len() || chunk_shape.contains(&0) {
            return Err("its .zarray's shape and chunks do not match".into());
        }
        let separator = match zarray.get("dimension_separator").and_then(Json::as_str) {
            None | Some(".") => '.',
            Some("/") => '/',
            Some(other) => return Err(format!("unknown dimension_separator {other:?}")),
        };
        let mut chunks: Vec<u64> = shape
            .iter()
            .zip(&chunk_shape)
            .map(|(s, c)| s.div_ceil(*c))
            .collect();
        if chunks.is_empty() {
            chunks.push(1);
        }
        // Every chunk's number must be a u64.
        let total = chunks
            .iter()
            .try_fold(1u64, |n, c| n.checked_mul(*c))
            .ok_or("its chunk grid has more chunks than can be numbered")?;
        Ok(Grid {
            chunks,
            total,
            separator,
        })
    }

    /// The number (in C order) of the chunk whose key ends in `indices`, if it is one of
    /// this grid's.
    fn number(&self, indices: &str) -> Option<u64> {
        let mut number = 0u64;
        let mut dims = 0;
        for (text, &count) in indices.split(self.separator).zip(&self.chunks) {
            // Plain decimal digits, as Zarr writes chunk keys.
            if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let i: u64 = text.parse().ok()?;
            if i >= count {
                return None;
            }
            number = number * count + i;
            dims += 1;
        }
        (dims == self.chunks.len() && indices.split(self.separator).count() == dims)
            .then_some(number)
    }
}

/// One record, its targets found: `None` for the whole record when its file does not exist;
/// about the bytes it takes in memory; why it cannot be read, when its file is damaged.
#[derive(Debug)]
struct Record {
    rows: Option<Vec<Option<Entry>>>,
    bytes: usize,
    broken: Option<String>,
}

impl Record {
    /// A damaged record (kept, so that it is not read again for every chunk in it).
    fn broken(why: String) -> Record {
        Record {
            rows: None,
            bytes: 64 + why.len(),
            broken: Some(why),
        }
    }

    fn new(rows: Option<Vec<Option<Entry>>>) -> Record {
        let inline: usize = rows
            .iter()
            .flatten()
            .map(|e| match e {
                Some(Entry::Inline(b)) => b.len(),
                _ => 0,
            })
            .sum();
        let slots = rows.as_ref().map_or(0, Vec::len) * std::mem::size_of::<Option<Entry>>();
        Record {
            rows,
            bytes: 64 + slots + inline,
            broken: None,
        }
    }
}

/// Which record of which array.
type RecordId = (String, u64);

/// A record being read by one reader, for the others that want it: its outcome, once known.
type Loading = Arc<OnceLock<std::result::Result<Arc<Record>, String>>>;

/// Records read, when each was last used, and those being read.
#[derive(Debug, Default)]
struct Cache {
    records: HashMap<RecordId, (Arc<Record>, u64)>,
    loading: HashMap<RecordId, Loading>,
    bytes: usize,
    clock: u64,
}

impl Cache {
    fn get(&mut self, id: &RecordId) -> Option<Arc<Record>> {
        self.clock += 1;
        let clock = self.clock;
        self.records.get_mut(id).map(|(record, used)| {
            *used = clock;
            record.clone()
        })
    }

    /// Keeps `record`, forgetting the least recently used records while they take more than
    /// [`MOST_CACHED_BYTES`].
    fn put(&mut self, id: RecordId, record: Arc<Record>) {
        self.clock += 1;
        self.bytes += record.bytes;
        if let Some((old, _)) = self.records.insert(id, (record, self.clock)) {
            self.bytes -= old.bytes;
        }
        while self.bytes > MOST_CACHED_BYTES && self.records.len() > 1 {
            let Some(oldest) = self
                .records
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(id, _)| id.clone())
            else {
                break;
            };
            if let Some((old, _)) = self.records.remove(&oldest) {
                self.bytes -= old.bytes;
            }
        }
    }
}

/// What a key asks for.
enum Wanted {
    Nothing,
    Metadata(Bytes),
    /// Row `row` of a record of `rows` rows.
    Chunk {
        record: RecordId,
        row: usize,
        rows: usize,
    },
}

/// An open Parquet reference set.
#[derive(Debug)]
pub struct ParquetSet {
    metadata: BTreeMap<String, Bytes>,
    /// Each array's grid, or why it has none.
    grids: HashMap<String, std::result::Result<Grid, String>>,
    record_size: u64,
    records: Records,
    base: Base,
    described: String,
    cache: Mutex<Cache>,
    /// Targets found, by URL.
    places: Mutex<HashMap<String, Arc<Place>>>,
    /// Whether a record has named a remote target.
    remote_seen: AtomicBool,
    /// Record files read, for tests.
    files_read: AtomicUsize,
}

fn bad(name: &str, why: impl Into<String>) -> Error {
    Error::Metadata {
        key: name.to_string(),
        why: why.into(),
    }
}

impl ParquetSet {
    /// Opens the set whose files `records` holds, called `described`; relative targets are
    /// found from `base`.
    pub fn open(records: Records, base: Base, described: &str) -> Result<ParquetSet> {
        let name = format!("{described} (.zmetadata)");
        let zmetadata = records
            .read_many(&[".zmetadata".to_string()])?
            .pop()
            .flatten()
            .ok_or_else(|| {
                Error::NotZarr(format!(
                    "{described}: neither a reference document nor a Parquet reference set \
                     (no .zmetadata)"
                ))
            })?;
        let json: Json =
            serde_json::from_slice(&zmetadata).map_err(|e| bad(&name, format!("not JSON: {e}")))?;
        let record_size = json
            .get("record_size")
            .and_then(Json::as_u64)
            .filter(|n| (1..=MOST_RECORD_ROWS).contains(n))
            .ok_or_else(|| {
                bad(
                    &name,
                    format!(
                        "no \"record_size\" from 1 to {MOST_RECORD_ROWS}: not a Parquet \
                         reference set"
                    ),
                )
            })?;
        let Some(Json::Object(entries)) = json.get("metadata") else {
            return Err(bad(&name, "\"metadata\" is not a JSON object"));
        };
        let mut metadata = BTreeMap::new();
        let mut grids = HashMap::new();
        for (key, value) in entries {
            let key = StoreKey::new(key.strip_prefix('/').unwrap_or(key))
                .map_err(|e| bad(&name, e.to_string()))?;
            if let Some(field) = key.as_str().strip_suffix("/.zarray") {
                grids.insert(field.to_string(), Grid::of(value));
            }
            let bytes = serde_json::to_vec(value).map_err(|e| bad(&name, e.to_string()))?;
            metadata.insert(key.as_str().to_string(), Bytes::from(bytes));
        }
        let set = ParquetSet {
            metadata,
            grids,
            record_size,
            records,
            base,
            described: described.to_string(),
            cache: Mutex::default(),
            places: Mutex::default(),
            remote_seen: AtomicBool::new(false),
            files_read: AtomicUsize::new(0),
        };
        set.look_at_first_record();
        Ok(set)
    }

    /// The metadata keys and their JSON.
    pub fn metadata(&self) -> &BTreeMap<String, Bytes> {
        &self.metadata
    }

    /// True while the set's files are local and no record read has named a remote target.
    pub fn is_local(&self) -> bool {
        self.records.is_local() && !self.remote_seen.load(Ordering::Relaxed)
    }

    /// Reads a local set's first record of its first array with chunks, so that whether its
    /// targets are local is known before the first read. What fails is left for that read to
    /// report.
    fn look_at_first_record(&self) {
        if !self.records.is_local() {
            return;
        }
        let first = self
            .grids
            .iter()
            .filter(|(_, grid)| grid.as_ref().is_ok_and(|g| !g.chunks.contains(&0)))
            .map(|(field, _)| field)
            .min();
        if let Some(field) = first
            && let Ok(Wanted::Chunk { record, rows, .. }) = self.wanted(&self.first_key(field))
        {
            let _ = self.load(&[(record, rows)]);
        }
    }

    /// The key of array `field`'s first chunk.
    fn first_key(&self, field: &str) -> String {
        let Some(Ok(grid)) = self.grids.get(field) else {
            return String::new();
        };
        let zeros = vec!["0"; grid.chunks.len()];
        format!("{field}/{}", zeros.join(&grid.separator.to_string()))
    }

    fn reference_error(&self, key: &str, why: impl Into<String>) -> Error {
        Error::Reference {
            key: format!("{key} in {}", self.described),
            why: why.into(),
        }
    }

    /// What `key` asks for.
    fn wanted(&self, key: &str) -> Result<Wanted> {
        if let Some(bytes) = self.metadata.get(key) {
            return Ok(Wanted::Metadata(bytes.clone()));
        }
        // The array is the longest prefix whose grid's separator splits the rest.
        let mut at = key.len();
        while let Some(slash) = key[..at].rfind('/') {
            at = slash;
            let (field, indices) = (&key[..slash], &key[slash + 1..]);
            let Some(grid) = self.grids.get(field) else {
                continue;
            };
            let grid = match grid {
                Ok(grid) => grid,
                // Only a chunk's key needs the grid.
                Err(why) if looks_like_chunk(indices) => {
                    return Err(self.reference_error(key, format!("the array {field}: {why}")));
                }
                Err(_) => continue,
            };
            if let Some(number) = grid.number(indices) {
                let record = number / self.record_size;
                let first = record * self.record_size;
                return Ok(Wanted::Chunk {
                    record: (field.to_string(), record),
                    row: (number - first) as usize,
                    rows: (grid.total - first).min(self.record_size) as usize,
                });
            }
        }
        Ok(Wanted::Nothing)
    }

    /// What `key` holds as far as the records in memory tell: `None` when its record has not
    /// been read (or the key is a chunk's that cannot be found).
    pub fn find_cached(&self, key: &StoreKey) -> Option<Option<Entry>> {
        match self.wanted(key.as_str()).ok()? {
            Wanted::Nothing => Some(None),
            Wanted::Metadata(bytes) => Some(Some(Entry::Inline(bytes))),
            Wanted::Chunk { record, row, .. } => {
                let record = self.cache.lock().ok()?.get(&record)?;
                match &record.rows {
                    None => Some(None),
                    Some(rows) => rows.get(row).cloned(),
                }
            }
        }
    }

    /// What `keys` hold, in order: the records they need read first, concurrently.
    pub fn find_many(&self, keys: &[StoreKey]) -> Result<Vec<Option<Entry>>> {
        let wanted: Vec<Wanted> = keys
            .iter()
            .map(|k| self.wanted(k.as_str()))
            .collect::<Result<_>>()?;
        let mut ids: Vec<(RecordId, usize)> = wanted
            .iter()
            .filter_map(|w| match w {
                Wanted::Chunk { record, rows, .. } => Some((record.clone(), *rows)),
                _ => None,
            })
            .collect();
        ids.sort_unstable();
        ids.dedup();
        let held = self.load(&ids)?;
        keys.iter()
            .zip(wanted)
            .map(|(key, w)| match w {
                Wanted::Nothing => Ok(None),
                Wanted::Metadata(bytes) => Ok(Some(Entry::Inline(bytes))),
                Wanted::Chunk { record, row, .. } => {
                    let record_read = &held[&record];
                    if let Some(why) = &record_read.broken {
                        return Err(self.reference_error(key.as_str(), why.clone()));
                    }
                    let Some(rows) = &record_read.rows else {
                        return Ok(None);
                    };
                    rows.get(row).cloned().ok_or_else(|| {
                        self.reference_error(
                            key.as_str(),
                            format!(
                                "{} holds {} rows, not the row {row} of this chunk",
                                record_name(&record),
                                rows.len()
                            ),
                        )
                    })
                }
            })
            .collect()
    }

    /// The records `ids` (each with the rows it should have), from the cache or read: those
    /// no other reader is reading are read concurrently and decoded in parallel, then those
    /// others are reading are waited for.
    fn load(&self, ids: &[(RecordId, usize)]) -> Result<HashMap<RecordId, Arc<Record>>> {
        let poisoned = || Error::Internal("reference record cache lock poisoned".into());
        let mut held = HashMap::with_capacity(ids.len());
        let (mut mine, mut theirs) = (Vec::new(), Vec::new());
        {
            let mut cache = self.cache.lock().map_err(|_| poisoned())?;
            for (id, rows) in ids {
                if let Some(record) = cache.get(id) {
                    held.insert(id.clone(), record);
                } else if let Some(loading) = cache.loading.get(id) {
                    theirs.push((id.clone(), loading.clone()));
                } else {
                    let loading = Loading::default();
                    cache.loading.insert(id.clone(), loading.clone());
                    mine.push((id.clone(), *rows, loading));
                }
            }
        }
        if !mine.is_empty() {
            // Whatever happens, the others waiting for these records learn of it; what could
            // not be read (not what was read and found damaged) is read again when next asked.
            let read =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.read_records(&mine)))
                    .unwrap_or_else(|_| Err(Error::Internal("reading a record failed".into())));
            let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
            for (i, (id, _, loading)) in mine.iter().enumerate() {
                cache.loading.remove(id);
                match &read {
                    Ok(records) => {
                        let _ = loading.set(Ok(records[i].clone()));
                        cache.put(id.clone(), records[i].clone());
                        held.insert(id.clone(), records[i].clone());
                    }
                    Err(e) => {
                        let _ = loading.set(Err(e.to_string()));
                    }
                }
            }
            read?;
        }
        for (id, loading) in theirs {
            let record = loading.wait().clone().map_err(|why| Error::Reference {
                key: format!("{} in {}", record_name(&id), self.described),
                why,
            })?;
            held.insert(id, record);
        }
        Ok(held)
    }

    /// Reads and decodes the records `mine` (each with the rows it should have), on this
    /// thread: other readers may be waiting for them on every worker of the thread pool. A
    /// record that cannot be decoded is a broken record; a file that cannot be read, an error.
    fn read_records(&self, mine: &[(RecordId, usize, Loading)]) -> Result<Vec<Arc<Record>>> {
        let names: Vec<String> = mine.iter().map(|(id, ..)| record_name(id)).collect();
        let files = self.records.read_many(&names)?;
        self.files_read.fetch_add(names.len(), Ordering::Relaxed);
        Ok(files
            .into_iter()
            .zip(&names)
            .zip(mine)
            .map(|((file, name), (_, rows, _))| {
                let record = self
                    .decode(file, name, *rows)
                    .unwrap_or_else(|e| Record::broken(e.to_string()));
                Arc::new(record)
            })
            .collect())
    }

    /// The record in `file` (`None`: it does not exist) called `name`, of `rows` rows, its
    /// targets found.
    fn decode(&self, file: Option<Vec<u8>>, name: &str, rows: usize) -> Result<Record> {
        let Some(file) = file else {
            return Ok(Record::new(None));
        };
        let shown = format!("{name} in {}", self.described);
        let record_size = self.record_size as usize;
        let decoded =
            records::decode_record(Bytes::from(file), rows, record_size).map_err(|why| {
                Error::Reference {
                    key: shown.clone(),
                    why,
                }
            })?;
        let places: Vec<Arc<Place>> = decoded
            .urls
            .iter()
            .map(|url| self.place(url))
            .collect::<Result<_>>()
            .map_err(|e| Error::Reference {
                key: shown.clone(),
                why: e.to_string(),
            })?;
        let rows = decoded
            .rows
            .into_iter()
            .map(|row| match row {
                Row::Missing => None,
                Row::Inline(bytes) => Some(Entry::Inline(bytes)),
                Row::Whole { url } => Some(Entry::Whole(places[url as usize].clone())),
                Row::Range { url, offset, len } => Some(Entry::Range {
                    place: places[url as usize].clone(),
                    offset,
                    len,
                }),
            })
            .collect();
        Ok(Record::new(Some(rows)))
    }

    /// Where target `url` leads, found once.
    fn place(&self, url: &str) -> Result<Arc<Place>> {
        let poisoned = || Error::Internal("reference target table lock poisoned".into());
        if let Some(place) = self.places.lock().map_err(|_| poisoned())?.get(url) {
            return Ok(place.clone());
        }
        let place = Arc::new(locate(url, &self.base)?);
        if matches!(*place, Place::Remote { .. }) {
            self.remote_seen.store(true, Ordering::Relaxed);
        }
        let mut places = self.places.lock().map_err(|_| poisoned())?;
        if places.len() >= MOST_PLACES {
            places.clear();
        }
        places.insert(url.to_string(), place.clone());
        Ok(place)
    }
}

/// True when `indices` could be a chunk's key below an array: digits and separators.
fn looks_like_chunk(indices: &str) -> bool {
    !indices.is_empty()
        && indices
            .bytes()
            .all(|b| b.is_ascii_digit() || b == b'.' || b == b'/')
}

/// The file of record `r` of array `field`, relative to the set's directory.
fn record_name((field, r): &RecordId) -> String {
    format!("{field}/refs.{r}.parq")
}

#[cfg(test)]
mod tests {
    use super::records::tests::{FASTPARQUET, Values, parquet};
    use super::*;
    use serde_json::json;

    fn key(k: &str) -> StoreKey {
        StoreKey::new(k).unwrap()
    }

    /// A record of `paths`, each the whole file or (with `offsets`) a byte range of it.
    fn record(paths: &[Option<&[u8]>], offsets: &[Option<i64>], sizes: &[Option<i64>]) -> Bytes {
        let raws = vec![None; paths.len()];
        parquet(
            FASTPARQUET,
            &[&[
                Values::Bytes(paths),
                Values::Int64(offsets),
                Values::Int64(sizes),
                Values::Bytes(&raws),
            ]],
        )
    }

    #[test]
    fn chunks_are_found_in_their_records_as_they_are_needed() {
        let top = tempfile::tempdir().unwrap();
        let dir = top.path().join("refs.parq");
        std::fs::create_dir_all(dir.join("a")).unwrap();
        std::fs::create_dir_all(dir.join("g/b")).unwrap();
        let zmetadata = json!({"record_size": 2, "metadata": {
            ".zgroup": {"zarr_format": 2},
            "a/.zarray": {"shape": [4, 4], "chunks": [2, 2], "dimension_separator": "/"},
            "g/.zgroup": {"zarr_format": 2},
            "g/b/.zarray": {"shape": [7], "chunks": [1]},
            "bad/.zarray": {"shape": [7]}}});
        std::fs::write(dir.join(".zmetadata"), zmetadata.to_string()).unwrap();
        let write = |name: &str, bytes: Bytes| std::fs::write(dir.join(name), bytes).unwrap();
        write(
            "a/refs.0.parq",
            record(
                &[Some(b"x.bin"), Some(b"x.bin")],
                &[Some(0), Some(1)],
                &[Some(0), Some(2)],
            ),
        );
        // a/refs.1.parq does not exist: chunks 2 and 3 were never written.
        write(
            "g/b/refs.0.parq",
            record(
                &[None, Some(b"s3://bkt/y")],
                &[Some(0), Some(5)],
                &[Some(0), Some(6)],
            ),
        );
        write(
            "g/b/refs.1.parq",
            record(&[Some(b"x.bin")], &[Some(0)], &[Some(0)]),
        );
        write("g/b/refs.2.parq", Bytes::from_static(b"PAR1 damaged"));
        let set = ParquetSet::open(
            Records::Local(dir.clone()),
            Base::Local(top.path().to_path_buf()),
            "refs.parq",
        )
        .unwrap();
        assert!(set.is_local(), "the first record of `a` names a local file");
        let x = Arc::new(Place::Local(top.path().join("x.bin")));
        let got = set
            .find_many(&[
                key("a/0/0"),
                key("a/0/1"),
                key("a/1/0"),
                key("a/0.0"),
                key("a/2/0"),
                key("g/b/0"),
                key("g/b/1"),
                key("g/b/2"),
                key(".zgroup"),
                key("nothing"),
            ])
            .unwrap();
        let y = Arc::new(Place::Remote {
            service: super::super::targets::Service::S3 {
                scheme: "s3",
                bucket: "bkt".into(),
            },
            key: key("y"),
        });
        assert_eq!(
            got,
            [
                Some(Entry::Whole(x.clone())),
                Some(Entry::Range {
                    place: x.clone(),
                    offset: 1,
                    len: 2
                }),
                None,
                None,
                None,
                None,
                Some(Entry::Range {
                    place: y,
                    offset: 5,
                    len: 6
                }),
                Some(Entry::Whole(x)),
                Some(Entry::Inline(Bytes::from_static(br#"{"zarr_format":2}"#))),
                None,
            ]
        );
        assert!(!set.is_local(), "a remote target has been seen");
        // A record too short for its chunk, one that is damaged, an array without a grid.
        for (k, says) in [
            ("g/b/3", "holds 1 rows, not the row 1"),
            ("g/b/4", "not a readable Parquet file"),
            ("bad/0", "no list of whole numbers \"chunks\""),
        ] {
            let got = set.find_many(&[key(k)]);
            assert!(
                matches!(&got, Err(Error::Reference { why, .. }) if why.contains(says)),
                "{k}: {got:?}"
            );
        }
        // The damaged record is kept as damaged: not read again for its other chunks.
        let read = set.files_read.load(Ordering::Relaxed);
        assert!(set.find_many(&[key("g/b/5")]).is_err());
        assert_eq!(set.files_read.load(Ordering::Relaxed), read);
        assert_eq!(
            set.metadata().keys().collect::<Vec<_>>(),
            [
                ".zgroup",
                "a/.zarray",
                "bad/.zarray",
                "g/.zgroup",
                "g/b/.zarray"
            ]
        );
    }

    #[test]
    fn readers_wanting_one_record_at_once_read_it_once() {
        use rayon::prelude::*;
        let top = tempfile::tempdir().unwrap();
        let dir = top.path().join("refs.parq");
        std::fs::create_dir_all(dir.join("a")).unwrap();
        let zmetadata = json!({"record_size": 1000, "metadata": {
            "a/.zarray": {"shape": [1000], "chunks": [1]}}});
        std::fs::write(dir.join(".zmetadata"), zmetadata.to_string()).unwrap();
        let n = 1000;
        let paths = vec![Some(&b"x.bin"[..]); n];
        let offsets: Vec<Option<i64>> = (0..n as i64).map(Some).collect();
        std::fs::write(
            dir.join("a/refs.0.parq"),
            record(&paths, &offsets, &vec![Some(1); n]),
        )
        .unwrap();
        for round in 0..20 {
            let set = ParquetSet::open(
                Records::Remote {
                    store: Box::new(crate::zmap::file::FileStore::open(&dir).unwrap()),
                    prefix: String::new(),
                },
                Base::Local(top.path().to_path_buf()),
                "refs.parq",
            )
            .unwrap();
            // One key each, as the chunk engine asks on every worker.
            let found: Vec<Option<Entry>> = (0..64)
                .into_par_iter()
                .map(|i| set.find_many(&[key(&format!("a/{i}"))]).unwrap().remove(0))
                .collect();
            assert!(found.iter().enumerate().all(
                |(i, e)| matches!(e, Some(Entry::Range { offset, .. }) if *offset == i as u64)
            ));
            assert_eq!(set.files_read.load(Ordering::Relaxed), 1, "round {round}");
        }
    }

    #[test]
    fn sets_whose_metadata_cannot_be_read_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let open = |text: &str| {
            std::fs::write(dir.path().join(".zmetadata"), text).unwrap();
            ParquetSet::open(
                Records::Local(dir.path().to_path_buf()),
                Base::Local(dir.path().to_path_buf()),
                "set",
            )
        };
        for (text, says) in [
            ("{", "not JSON"),
            (r#"{"metadata": {}}"#, "record_size"),
            (r#"{"metadata": {}, "record_size": 0}"#, "record_size"),
            (
                r#"{"metadata": {}, "record_size": 100000000}"#,
                "record_size",
            ),
            (
                r#"{"metadata": [], "record_size": 10}"#,
                "not a JSON object",
            ),
            (
                r#"{"metadata": {"../x": {}}, "record_size": 10}"#,
                "relative segment",
            ),
        ] {
            let got = open(text);
            assert!(
                matches!(&got, Err(Error::Metadata { why, .. }) if why.contains(says)),
                "{text}: {got:?}"
            );
        }
    }

    #[test]
    fn grids_number_chunks_in_c_order() {
        let grid = Grid::of(&json!({"shape": [10, 7], "chunks": [4, 3]})).unwrap();
        assert_eq!(grid.chunks, [3, 3]);
        assert_eq!(grid.number("0.0"), Some(0));
        assert_eq!(grid.number("1.2"), Some(5));
        assert_eq!(grid.number("2.2"), Some(8));
        for not_a_chunk in [
            "3.0", "0.3", "0", "0.0.0", "0/0", "a.0", "-1.0", "+1.0", "", "0.",
        ] {
            assert_eq!(grid.number(not_a_chunk), None, "{not_a_chunk}");
        }
        let nested = Grid::of(&json!({"shape": [4, 4], "chunks": [2, 2],
            "dimension_separator": "/"}))
        .unwrap();
        assert_eq!(nested.number("1/1"), Some(3));
        assert_eq!(nested.number("1.1"), None);
        let scalar = Grid::of(&json!({"shape": [], "chunks": []})).unwrap();
        assert_eq!(
            (scalar.chunks.clone(), scalar.number("0")),
            (vec![1], Some(0))
        );
        let empty = Grid::of(&json!({"shape": [0, 5], "chunks": [2, 5]})).unwrap();
        assert_eq!(empty.number("0.0"), None);
        for bad in [
            json!({"shape": [4], "chunks": [0]}),
            json!({"shape": [4, 4], "chunks": [2]}),
            json!({"shape": [-4], "chunks": [2]}),
            json!({"chunks": [2]}),
            json!({"shape": [4], "chunks": [2], "dimension_separator": "_"}),
            json!({"shape": [u64::MAX, u64::MAX], "chunks": [1, 1]}),
        ] {
            assert!(Grid::of(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_cache_forgets_the_least_recently_used_records_past_its_bound() {
        let record = |bytes: usize| {
            Arc::new(Record {
                rows: None,
                bytes,
                broken: None,
            })
        };
        let id = |r: u64| ("a".to_string(), r);
        let mut cache = Cache::default();
        cache.put(id(0), record(MOST_CACHED_BYTES / 2));
        cache.put(id(1), record(MOST_CACHED_BYTES / 2));
        assert!(cache.get(&id(0)).is_some());
        cache.put(id(2), record(1));
        assert!(cache.get(&id(1)).is_none(), "the least recently used goes");
        assert!(cache.get(&id(0)).is_some() && cache.get(&id(2)).is_some());
        assert_eq!(cache.bytes, MOST_CACHED_BYTES / 2 + 1);
        cache.put(id(3), record(MOST_CACHED_BYTES * 2));
        assert_eq!(
            cache.records.len(),
            1,
            "one record past the bound is still kept"
        );
        cache.put(id(4), record(64));
        assert_eq!(cache.bytes, 64, "the big one goes once another comes");
        // A record whose file does not exist still counts.
        assert!(Record::new(None).bytes > 0);
        let inline = Record::new(Some(vec![Some(Entry::Inline(Bytes::from(vec![0; 1000])))]));
        assert!(inline.bytes > 1000);
    }
}
