//! Reference datasets: a Zarr dataset whose objects are bytes held in a reference set
//! (kerchunk, VirtualiZarr, fsspec's `ReferenceFileSystem`) or byte ranges of other files (the
//! chunks of netCDF-4/HDF5, netCDF-3, GRIB or TIFF files), read-only. A reference set is a JSON
//! [`document`], or a directory of [`parquet`] records.
//!
//! Owns the store over a reference set: its listing, and reading each object inline or from
//! its [`targets`] (local ranges by positional reads in parallel, remote ones as concurrent
//! ranged GETs through the target's store), with the check that a target holds every byte a
//! reference names. [`open`] reads the set from a file or directory, S3 or a web server. It
//! knows nothing of Zarr or netCDF.

mod document;
mod parquet;
mod targets;
mod templates;

use super::positional::{Opened, open_regular, read_at, read_whole};
use super::{ObjectLimit, Runs, Store, StoreKey, StorePrefix, Tail, copy_runs};
use crate::error::{Error, Result};
use crate::url::{DatasetUrl, Login, StorageKind};
use bytes::Bytes;
use document::Reference;
use rayon::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;
use targets::{Base, Place, Service, Targets};

/// What one key of a reference set holds, its target found.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    /// These bytes.
    Inline(Bytes),
    /// The whole object at this place.
    Whole(Arc<Place>),
    /// `len` bytes from `offset` of the object at `place`.
    Range {
        place: Arc<Place>,
        offset: u64,
        len: u64,
    },
}

impl Entry {
    fn place(&self) -> Option<&Place> {
        match self {
            Entry::Inline(_) => None,
            Entry::Whole(place) | Entry::Range { place, .. } => Some(place),
        }
    }
}

/// The keys of a reference set.
#[derive(Debug)]
enum Index {
    /// A JSON document's, every one in memory; whether every target is a local file.
    Document {
        entries: BTreeMap<String, Entry>,
        all_local: bool,
    },
    /// A Parquet reference set's: its metadata in memory, chunks read record by record.
    Parquet(Box<parquet::ParquetSet>),
}

/// A read-only [`Store`] serving the keys of one reference set.
#[derive(Debug)]
pub struct ReferenceStore {
    index: Index,
    targets: Targets,
    limit: ObjectLimit,
    described: String,
}

/// Opens the reference set `url` names (mode `reference`): a JSON document in a local file, an
/// S3 object or a file on a web server, or a Parquet reference set in a local directory or
/// under an S3 or web prefix, as the URL's storage says. Its targets are found and checked, but
/// not opened.
pub fn open(url: &DatasetUrl) -> Result<ReferenceStore> {
    let (found, base, endpoint, login) = read_set(url)?;
    let index = match found {
        SetFound::Document(bytes) => {
            let doc = document::parse(&bytes, &url.original)?;
            drop(bytes);
            let places: Vec<Arc<Place>> = doc
                .targets
                .iter()
                .map(|u| targets::locate(u, &base).map(Arc::new))
                .collect::<Result<_>>()?;
            let all_local = places.iter().all(|p| matches!(**p, Place::Local(_)));
            let entries = doc
                .entries
                .into_iter()
                .map(|(key, reference)| {
                    let entry = match reference {
                        Reference::Inline(bytes) => Entry::Inline(Bytes::from(bytes)),
                        Reference::Whole { target } => {
                            Entry::Whole(places[target as usize].clone())
                        }
                        Reference::Range {
                            target,
                            offset,
                            len,
                        } => Entry::Range {
                            place: places[target as usize].clone(),
                            offset,
                            len,
                        },
                    };
                    (key, entry)
                })
                .collect();
            Index::Document { entries, all_local }
        }
        SetFound::Parquet(records) => Index::Parquet(Box::new(parquet::ParquetSet::open(
            records,
            base,
            &url.original,
        )?)),
    };
    Ok(ReferenceStore {
        index,
        // The document's own server is asked with the login it was read with.
        targets: Targets::new(
            DatasetUrl {
                login,
                ..url.clone()
            },
            endpoint,
        ),
        limit: ObjectLimit::default(),
        described: url.original.clone(),
    })
}

/// The S3 service (`s3` or `gs3`) and endpoint a reference set was read from.
type ReadFrom = Option<(&'static str, String)>;

/// A reference set, as found where its URL leads.
enum SetFound {
    /// A JSON document's bytes.
    Document(Vec<u8>),
    /// A directory or prefix holding a Parquet reference set.
    Parquet(parquet::Records),
}

/// The reference set `url` names, where relative targets are found from, the S3 service and
/// endpoint it was read from (if it was), and the login its web server was asked with. A local directory is a Parquet reference set;
/// so is a remote name ending in `/`, `.parq` or `.parquet`, or one that is no object or no
/// JSON object (a web server's page for a directory), as fsspec takes them.
fn read_set(url: &DatasetUrl) -> Result<(SetFound, Base, ReadFrom, Option<Login>)> {
    let limit = ObjectLimit::default();
    let too_large = || format!("reference document {}", url.original);
    let (path, a_directory) = match url.path.strip_suffix('/') {
        Some(path) => (path, true),
        None => (url.path.as_str(), false),
    };
    // Remote sets: the store of the directory holding it, and its name there.
    let in_dir = || -> Result<(DatasetUrl, StoreKey)> {
        let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
        let name = StoreKey::new(name).map_err(|e| Error::Url {
            url: url.original.clone(),
            why: format!("does not name a reference set ({e})"),
        })?;
        let mut at_dir = url.clone();
        at_dir.path = dir.to_string();
        Ok((at_dir, name))
    };
    // A remote set named `name` in `store`: a document, or the records below it.
    let remote = |store: super::remote::RemoteStore, name: StoreKey| -> Result<SetFound> {
        let parquet = |store| {
            Ok(SetFound::Parquet(parquet::Records::Remote {
                store: Box::new(store),
                prefix: format!("{name}/"),
            }))
        };
        if a_directory || name.as_str().ends_with(".parq") || name.as_str().ends_with(".parquet") {
            return parquet(store);
        }
        match store.get(&name)? {
            Some(bytes) if starts_as_json_object(&bytes) => Ok(SetFound::Document(bytes)),
            _ => parquet(store),
        }
    };
    match url.storage_kind() {
        StorageKind::File => {
            let path = Path::new(&url.path);
            let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => Error::NotFound(url.original.clone()),
                _ => Error::io(&url.path, e),
            })?;
            let parent = path.parent().unwrap_or(Path::new("/")).to_path_buf();
            if meta.is_dir() {
                let records = parquet::Records::Local(path.to_path_buf());
                return Ok((SetFound::Parquet(records), Base::Local(parent), None, None));
            }
            let not_regular = || Error::NotZarr(format!("{}: not a regular file", url.original));
            let bytes = match open_regular(path) {
                Ok(Opened::File(file, len)) => {
                    limit.check(too_large, len)?;
                    read_whole(file, len).map_err(|e| Error::io(&url.path, e))?
                }
                Ok(Opened::Absent) => return Err(Error::NotFound(url.original.clone())),
                Ok(Opened::NotRegular) => return Err(not_regular()),
                Err(e) => return Err(Error::io(&url.path, e)),
            };
            Ok((SetFound::Document(bytes), Base::Local(parent), None, None))
        }
        StorageKind::Zip => Err(Error::Url {
            url: url.original.clone(),
            why: "a reference set is read from a file or directory, S3 or a web server, \
                  not from a zip archive"
                .into(),
        }),
        StorageKind::S3 => {
            let (at_dir, name) = in_dir()?;
            let settings =
                super::s3::settings::S3Settings::resolve(&at_dir, &crate::env::of_process)?;
            let scheme = if url.scheme.as_deref() == Some("gs3") {
                "gs3"
            } else {
                "s3"
            };
            let service = Service::S3 {
                scheme,
                bucket: settings.bucket.clone(),
            };
            let dir = with_slash(&settings.root);
            let endpoint = settings.endpoint.clone().map(|e| (scheme, e));
            let found = remote(super::s3::open(settings)?, name)?;
            Ok((found, Base::Remote { service, dir }, endpoint, None))
        }
        StorageKind::Http => {
            let (at_dir, name) = in_dir()?;
            let settings = super::http::HttpSettings::resolve(&at_dir, &crate::env::of_process)?;
            let service = Service::Http {
                server: settings.server.clone(),
            };
            let dir = with_slash(&settings.root);
            let login = settings.login.clone();
            let found = remote(super::http::open(settings)?, name)?;
            Ok((found, Base::Remote { service, dir }, None, login))
        }
    }
}

/// True when `bytes` start (after white space or a byte-order mark) as a JSON object.
pub fn starts_as_json_object(bytes: &[u8]) -> bool {
    let text = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    text.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
}

/// `root` as a directory prefix: empty, or ending in `/`.
fn with_slash(root: &str) -> String {
    if root.is_empty() {
        String::new()
    } else {
        format!("{root}/")
    }
}

/// Reads waiting for one remote service: the keys there, their runs, where each answer goes
/// and the byte range its reference names (`None`: the whole object).
#[derive(Default)]
struct RemoteReads<'a> {
    at: Vec<usize>,
    keys: Vec<StoreKey>,
    runs: Vec<Runs<'a>>,
    spans: Vec<Option<(u64, u64)>>,
}

/// Whole remote objects to read, by service: where each answer goes, and the object's key.
type WholeRemote<'a> = HashMap<&'a Service, (Vec<usize>, Vec<StoreKey>)>;

/// Runs waiting for one local file, and the byte range its reference names (`None`: the whole
/// file).
struct LocalReads<'a, 'p> {
    at: usize,
    path: &'p Path,
    runs: Runs<'a>,
    span: Option<(u64, u64)>,
}

/// The target's length, checked to hold the `len` bytes from `offset` a reference names.
fn holds_span(
    store: &ReferenceStore,
    key: &str,
    target: &str,
    target_len: u64,
    span: Option<(u64, u64)>,
) -> Result<()> {
    match span {
        Some((offset, len)) if target_len < offset + len => Err(store.reference_error(
            key,
            format!(
                "{target} ends at byte {target_len}, before the {len} bytes the reference \
                 names from byte {offset}"
            ),
        )),
        _ => Ok(()),
    }
}

impl ReferenceStore {
    fn reference_error(&self, key: &str, why: impl Into<String>) -> Error {
        Error::Reference {
            key: format!("{} in {}", key, self.described),
            why: why.into(),
        }
    }

    /// What `keys` hold (`None`: nothing), in order.
    fn find_many(&self, keys: &[StoreKey]) -> Result<Vec<Option<Entry>>> {
        match &self.index {
            Index::Document { entries, .. } => Ok(keys
                .iter()
                .map(|k| entries.get(k.as_str()).cloned())
                .collect()),
            Index::Parquet(set) => set.find_many(keys),
        }
    }

    /// The keys listed: every key of a document; a Parquet set's metadata keys (its chunks'
    /// keys are not listed).
    fn listed(&self) -> Listed<'_> {
        match &self.index {
            Index::Document { entries, .. } => Listed::Entries(entries),
            Index::Parquet(set) => Listed::Metadata(set.metadata()),
        }
    }

    /// The length of the whole-object reference to `place` of key `i` when it is a local
    /// file; `None` when it is remote, the key then added to `whole_remote`.
    fn whole_len<'s>(
        &self,
        place: &'s Place,
        i: usize,
        whole_remote: &mut WholeRemote<'s>,
    ) -> Result<Option<u64>> {
        match place {
            Place::Local(path) => self.file_len(path).map(Some),
            Place::Remote { service, key } => {
                let (at, keys) = whole_remote.entry(service).or_default();
                at.push(i);
                keys.push(key.clone());
                Ok(None)
            }
        }
    }

    /// What service `service` answered (`got[j]` for its object `there[j]`, asked for key
    /// `keys[at[j]]`) with where each goes; an object it does not hold is an error.
    fn present<T>(
        &self,
        keys: &[StoreKey],
        service: &Service,
        at: &[usize],
        there: &[StoreKey],
        got: Vec<Option<T>>,
    ) -> Result<Vec<(usize, T)>> {
        at.iter()
            .zip(there)
            .zip(got)
            .map(|((&i, key), value)| {
                let missing = || {
                    let name = self.describe_remote(service, key);
                    self.reference_error(keys[i].as_str(), format!("{name}: no such object"))
                };
                value.map(|v| (i, v)).ok_or_else(missing)
            })
            .collect()
    }

    /// The length of the local target at `path`.
    fn file_len(&self, path: &Path) -> Result<u64> {
        let file = self.targets.file(path)?;
        let meta = file
            .metadata()
            .map_err(|e| Error::io(path.display().to_string(), e))?;
        Ok(meta.len())
    }

    /// Reads `job`'s runs from its file; returns the object's length (the range's, or the
    /// file's). A range the file does not hold whole is an error; runs of a whole file stop
    /// at its end.
    fn read_local(&self, job: LocalReads<'_, '_>, key: &str) -> Result<u64> {
        let file = self.targets.file(job.path)?;
        let shown = || job.path.display().to_string();
        let size = file.metadata().map_err(|e| Error::io(shown(), e))?.len();
        holds_span(self, key, &shown(), size, job.span)?;
        for (offset, out) in job.runs {
            let got = read_at(&file, offset, out).map_err(|e| Error::io(shown(), e))?;
            // A whole file's runs stop at its end; anything shorter means it shrank.
            let expected = (size.saturating_sub(offset)).min(out.len() as u64);
            if (got as u64) < expected {
                return Err(self.reference_error(key, format!("{} shrank while read", shown())));
            }
        }
        Ok(job.span.map_or(size, |(_, len)| len))
    }
}

/// The keys a reference set lists.
enum Listed<'a> {
    Entries(&'a BTreeMap<String, Entry>),
    Metadata(&'a BTreeMap<String, Bytes>),
}

impl Store for ReferenceStore {
    fn get(&self, key: &StoreKey) -> Result<Option<Vec<u8>>> {
        Ok(self.get_many(std::slice::from_ref(key))?.pop().flatten())
    }

    fn get_many(&self, keys: &[StoreKey]) -> Result<Vec<Option<Vec<u8>>>> {
        let found = self.find_many(keys)?;
        let mut out: Vec<Option<Vec<u8>>> = vec![None; keys.len()];
        // Objects of known length, read as one run each; whole remote objects, by service.
        let mut ranged: Vec<(usize, Vec<u8>)> = Vec::new();
        let mut whole_remote = WholeRemote::new();
        for (i, (key, entry)) in keys.iter().zip(&found).enumerate() {
            let len = match entry {
                None => continue,
                Some(Entry::Inline(bytes)) => {
                    out[i] = Some(bytes.to_vec());
                    continue;
                }
                Some(Entry::Range { place, offset, len }) => {
                    // A local file is checked before its bytes are allocated for.
                    if let Place::Local(path) = &**place {
                        let size = self.file_len(path)?;
                        let shown = path.display().to_string();
                        holds_span(self, key.as_str(), &shown, size, Some((*offset, *len)))?;
                    }
                    *len
                }
                Some(Entry::Whole(place)) => match self.whole_len(place, i, &mut whole_remote)? {
                    Some(len) => len,
                    None => continue,
                },
            };
            self.limit
                .check(|| format!("{key} in {}", self.described), len)?;
            let len = usize::try_from(len).map_err(|_| Error::TooLarge(key.to_string()))?;
            ranged.push((i, vec![0; len]));
        }
        let range_keys: Vec<StoreKey> = ranged.iter().map(|(i, _)| keys[*i].clone()).collect();
        let lens = {
            let mut runs: Vec<Runs<'_>> = ranged
                .iter_mut()
                .map(|(_, buf)| vec![(0u64, &mut buf[..])])
                .collect();
            self.get_runs_many(&range_keys, &mut runs)?
        };
        for ((i, buf), len) in ranged.into_iter().zip(lens) {
            if len != Some(buf.len() as u64) {
                return Err(self.reference_error(keys[i].as_str(), "its target changed while read"));
            }
            out[i] = Some(buf);
        }
        for (service, (at, there)) in whole_remote {
            let got = self.targets.remote(service)?.get_many(&there)?;
            for (i, value) in self.present(keys, service, &at, &there, got)? {
                out[i] = Some(value);
            }
        }
        Ok(out)
    }

    fn get_runs_into(&self, key: &StoreKey, runs: &mut [(u64, &mut [u8])]) -> Result<Option<u64>> {
        let mut one: Runs<'_> = runs.iter_mut().map(|(o, b)| (*o, &mut **b)).collect();
        Ok(self
            .get_runs_many(std::slice::from_ref(key), std::slice::from_mut(&mut one))?
            .pop()
            .flatten())
    }

    fn get_runs_many(&self, keys: &[StoreKey], runs: &mut [Runs<'_>]) -> Result<Vec<Option<u64>>> {
        let found = self.find_many(keys)?;
        let mut out: Vec<Option<u64>> = vec![None; keys.len()];
        let mut local: Vec<LocalReads<'_, '_>> = Vec::new();
        let mut remote: HashMap<&Service, RemoteReads<'_>> = HashMap::new();
        // A byte for each read that asks only a whole remote object's length.
        let mut probes = vec![[0u8; 1]; keys.len()];
        let each = found.iter().zip(runs.iter_mut()).zip(probes.iter_mut());
        for (i, ((entry, runs), probe)) in each.enumerate() {
            let (place, span) = match entry {
                None => continue,
                Some(Entry::Inline(bytes)) => {
                    copy_runs(bytes, 0, runs);
                    out[i] = Some(bytes.len() as u64);
                    continue;
                }
                Some(Entry::Range { place, offset, len }) => (place, Some((*offset, *len))),
                Some(Entry::Whole(place)) => (place, None),
            };
            // Runs in the target's offsets, each cut at the range's end.
            let offset = span.map_or(0, |(o, _)| o);
            let mut there: Runs<'_> = runs
                .iter_mut()
                .filter_map(|(at, buf)| {
                    let room = span.map_or(u64::MAX, |(_, len)| len.saturating_sub(*at));
                    let n = buf.len().min(usize::try_from(room).unwrap_or(usize::MAX));
                    (n > 0).then(|| (offset + *at, &mut buf[..n]))
                })
                .collect();
            match &**place {
                Place::Local(path) => local.push(LocalReads {
                    at: i,
                    path,
                    runs: there,
                    span,
                }),
                // A range with nothing to read asks the server nothing: its length is known.
                Place::Remote { .. } if there.is_empty() && span.is_some() => {
                    out[i] = span.map(|(_, len)| len);
                }
                Place::Remote { service, key } => {
                    if there.is_empty() {
                        // Only the whole object's length: asking its first byte tells it.
                        there.push((0, &mut probe[..]));
                    }
                    let reads = remote.entry(service).or_default();
                    reads.at.push(i);
                    reads.keys.push(key.clone());
                    reads.runs.push(there);
                    reads.spans.push(span);
                }
            }
        }
        let local_lens: Vec<(usize, u64)> = local
            .into_par_iter()
            .map(|job| {
                let at = job.at;
                self.read_local(job, keys[at].as_str()).map(|len| (at, len))
            })
            .collect::<Result<_>>()?;
        for (at, len) in local_lens {
            out[at] = Some(len);
        }
        for (service, mut reads) in remote {
            let got = self
                .targets
                .remote(service)?
                .get_runs_many(&reads.keys, &mut reads.runs)?;
            for (j, object_len) in got.into_iter().enumerate() {
                let (i, there) = (reads.at[j], &reads.keys[j]);
                let name = || self.describe_remote(service, there);
                let Some(object_len) = object_len else {
                    return Err(self
                        .reference_error(keys[i].as_str(), format!("{}: no such object", name())));
                };
                holds_span(self, keys[i].as_str(), &name(), object_len, reads.spans[j])?;
                out[i] = Some(reads.spans[j].map_or(object_len, |(_, len)| len));
            }
        }
        Ok(out)
    }

    fn get_tails_many(&self, keys: &[StoreKey], n: usize) -> Result<Vec<Option<Tail>>> {
        let found = self.find_many(keys)?;
        let mut tails: Vec<Option<Tail>> = vec![None; keys.len()];
        // Whole remote objects: a suffix request each, through their service.
        let mut whole_remote = WholeRemote::new();
        for (i, entry) in found.iter().enumerate() {
            let len = match entry {
                None => continue,
                Some(Entry::Inline(bytes)) => bytes.len() as u64,
                Some(Entry::Range { len, .. }) => *len,
                Some(Entry::Whole(place)) => match self.whole_len(place, i, &mut whole_remote)? {
                    Some(len) => len,
                    None => continue,
                },
            };
            tails[i] = Some(Tail {
                len,
                bytes: vec![0; len.min(n as u64) as usize],
            });
        }
        let known: Vec<usize> = (0..keys.len()).filter(|&i| tails[i].is_some()).collect();
        let known_keys: Vec<StoreKey> = known.iter().map(|&i| keys[i].clone()).collect();
        let lens = {
            let mut runs: Vec<Runs<'_>> = tails
                .iter_mut()
                .flatten()
                .map(|t| vec![(t.len - t.bytes.len() as u64, &mut t.bytes[..])])
                .collect();
            self.get_runs_many(&known_keys, &mut runs)?
        };
        for (&i, len) in known.iter().zip(lens) {
            if len != tails[i].as_ref().map(|t| t.len) {
                return Err(self.reference_error(keys[i].as_str(), "its target changed while read"));
            }
        }
        for (service, (at, there)) in whole_remote {
            let got = self.targets.remote(service)?.get_tails_many(&there, n)?;
            for (i, tail) in self.present(keys, service, &at, &there, got)? {
                tails[i] = Some(tail);
            }
        }
        Ok(tails)
    }

    fn reads_runs_in_place(&self, key: &StoreKey) -> bool {
        // A Parquet set's records are not read for this: one not read yet is taken to hold
        // what the records read so far hold.
        let found = match &self.index {
            Index::Document { entries, .. } => entries.get(key.as_str()).cloned(),
            Index::Parquet(set) => match set.find_cached(key) {
                Some(found) => found,
                None => return set.is_local(),
            },
        };
        match found.as_ref().and_then(Entry::place) {
            None | Some(Place::Local(_)) => true,
            Some(Place::Remote { service, key }) => self
                .targets
                .remote(service)
                .is_ok_and(|store| store.reads_runs_in_place(key)),
        }
    }

    fn allow_objects_up_to(&self, bytes: u64) {
        self.limit.allow(bytes);
        self.targets.allow_objects_up_to(bytes);
    }

    fn is_local(&self) -> bool {
        match &self.index {
            Index::Document { all_local, .. } => *all_local,
            Index::Parquet(set) => set.is_local(),
        }
    }

    fn put(&self, key: &StoreKey, _value: &[u8]) -> Result<()> {
        Err(self.read_only(key.as_str()))
    }

    fn delete(&self, key: &StoreKey) -> Result<()> {
        Err(self.read_only(key.as_str()))
    }

    fn delete_prefix(&self, prefix: &StorePrefix) -> Result<()> {
        Err(self.read_only(&prefix.to_string()))
    }

    fn list_children(&self, prefix: &StorePrefix) -> Result<Vec<String>> {
        Ok(match self.listed() {
            Listed::Entries(entries) => super::children_in(entries, prefix),
            Listed::Metadata(metadata) => super::children_in(metadata, prefix),
        })
    }

    fn list_keys(&self, prefix: &StorePrefix) -> Result<Vec<StoreKey>> {
        match self.listed() {
            Listed::Entries(entries) => super::keys_in(entries, prefix),
            Listed::Metadata(metadata) => super::keys_in(metadata, prefix),
        }
    }

    fn describe(&self) -> String {
        self.described.clone()
    }
}

impl ReferenceStore {
    fn read_only(&self, what: &str) -> Error {
        Error::ReadOnlyLayout(format!(
            "{}: {what}: a reference dataset (mode reference) is read-only",
            self.described
        ))
    }

    fn describe_remote(&self, service: &Service, key: &StoreKey) -> String {
        match service {
            Service::S3 { scheme, bucket } => format!("{scheme}://{bucket}/{key}"),
            Service::Http { server } => format!("{server}/{key}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(k: &str) -> StoreKey {
        StoreKey::new(k).unwrap()
    }

    /// A directory holding `data.bin` (bytes 0..=255) and the document `json` as `refs.json`;
    /// the store over it.
    fn store_with(json: &str) -> (tempfile::TempDir, ReferenceStore) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("data.bin"), (0..=255u8).collect::<Vec<_>>()).unwrap();
        let doc = dir.path().join("refs.json");
        std::fs::write(&doc, json).unwrap();
        let url =
            DatasetUrl::parse(&format!("file://{}#mode=zarr,reference", doc.display())).unwrap();
        let store = open(&url).unwrap();
        (dir, store)
    }

    #[test]
    fn objects_come_inline_from_ranges_and_from_whole_files() {
        let (dir, store) = store_with(
            r#"{"version": 1, "refs": {".zgroup": {"zarr_format": 2}, "a/0": ["data.bin", 16, 4],
                "a/1": ["data.bin"], "a/2": "base64:/w==", "b/c/0": ["data.bin", 250, 6]}}"#,
        );
        assert!(store.is_local());
        let got = store
            .get_many(&[key("a/0"), key("nothing"), key("a/2"), key("b/c/0")])
            .unwrap();
        assert_eq!(
            got,
            [
                Some(vec![16, 17, 18, 19]),
                None,
                Some(vec![255]),
                Some(vec![250, 251, 252, 253, 254, 255])
            ]
        );
        assert_eq!(store.get(&key("a/1")).unwrap().unwrap().len(), 256);
        assert_eq!(
            store.get(&key(".zgroup")).unwrap().unwrap(),
            br#"{"zarr_format":2}"#
        );
        // A run past a whole file's end is filled as far as the file goes (a codec's first
        // look at a chunk asks for more than a small chunk holds).
        let mut look = [7u8; 4096];
        assert_eq!(
            store
                .get_runs_into(&key("a/1"), &mut [(250, &mut look[..])])
                .unwrap(),
            Some(256)
        );
        assert_eq!((look[..6].to_vec(), look[6]), ((250..=255).collect(), 7));
        // Runs in the object's offsets; a run past the reference's end is cut there.
        let (mut x, mut y) = ([0u8; 2], [9u8; 4]);
        let len = store
            .get_runs_into(&key("a/0"), &mut [(1, &mut x[..]), (2, &mut y[..])])
            .unwrap();
        assert_eq!((len, x, y), (Some(4), [17, 18], [18, 19, 9, 9]));
        let tails = store
            .get_tails_many(&[key("a/0"), key("a/1"), key("zz")], 3)
            .unwrap();
        assert_eq!(
            tails,
            [
                Some(Tail {
                    len: 4,
                    bytes: vec![17, 18, 19]
                }),
                Some(Tail {
                    len: 256,
                    bytes: vec![253, 254, 255]
                }),
                None
            ]
        );
        assert_eq!(
            store.list_children(&StorePrefix::root()).unwrap(),
            [".zgroup", "a", "b"]
        );
        assert_eq!(
            store
                .list_children(&StorePrefix::new("b").unwrap())
                .unwrap(),
            ["c"]
        );
        assert_eq!(
            store.list_keys(&StorePrefix::new("a").unwrap()).unwrap(),
            [key("a/0"), key("a/1"), key("a/2")]
        );
        for write in [
            store.put(&key("a/9"), b"x"),
            store.delete(&key("a/0")),
            store.delete_prefix(&StorePrefix::root()),
        ] {
            assert!(matches!(write, Err(Error::ReadOnlyLayout(_))), "{write:?}");
        }
        assert_eq!(
            std::fs::read(dir.path().join("data.bin")).unwrap().len(),
            256
        );
    }

    #[test]
    fn a_target_missing_or_shorter_than_its_reference_is_an_error_naming_both() {
        let (_dir, store) = store_with(
            r#"{"past": ["data.bin", 250, 10], "gone": ["missing.bin", 0, 1],
                "device": ["/dev/zero", 0, 4],
                "huge": ["data.bin", 0, 1000000000000]}"#,
        );
        let past = store.get(&key("past"));
        assert!(
            matches!(&past, Err(Error::Reference { key, why }) if key.starts_with("past in file://")
                && why.contains("data.bin ends at byte 256")),
            "{past:?}"
        );
        // A device (or a FIFO) is never opened: reading one could wait forever.
        let device = store.get(&key("device"));
        assert!(
            matches!(&device, Err(Error::Io { path, .. }) if path == "/dev/zero"),
            "{device:?}"
        );
        let gone = store.get(&key("gone"));
        assert!(
            matches!(&gone, Err(Error::Io { path, .. }) if path.ends_with("missing.bin")),
            "{gone:?}"
        );
        // Checked against the file before any allocation.
        let huge = store.get(&key("huge"));
        assert!(
            matches!(&huge, Err(Error::Reference { why, .. })
                if why.contains("before the 1000000000000 bytes")),
            "{huge:?}"
        );
    }

    #[test]
    fn documents_that_are_not_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let at = |path: &Path, mode: &str| {
            DatasetUrl::parse(&format!("file://{}#mode=zarr,{mode}", path.display())).unwrap()
        };
        let missing = open(&at(&dir.path().join("none.json"), "reference"));
        assert!(matches!(missing, Err(Error::NotFound(_))), "{missing:?}");
        let directory = open(&at(dir.path(), "reference"));
        assert!(matches!(directory, Err(Error::NotZarr(_))), "{directory:?}");
        let device = open(&at(Path::new("/dev/zero"), "reference"));
        assert!(
            matches!(&device, Err(Error::NotZarr(why)) if why.contains("not a regular file")),
            "{device:?}"
        );
        let zip = open(&at(&dir.path().join("r.zip"), "zip,reference"));
        assert!(matches!(zip, Err(Error::Url { .. })), "{zip:?}");
    }
}
