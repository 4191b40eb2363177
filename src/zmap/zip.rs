//! Zip-archive store: a dataset kept in one `.zip` file.
//!
//! Owns reading objects out of an archive, staging writes, and replacing the archive atomically
//! at [`Store::flush`]. It knows nothing of Zarr beyond the names of the top-level metadata
//! objects used to recognise where the dataset starts inside an archive.
//!
//! Layouts read: netcdf-c puts every object under one top-level directory named after the
//! archive (`x.zip` holds `x/.zgroup`, ...); zarr-python's `ZipStore` and `zip -r` run inside a
//! dataset directory put the objects at the top level. A top-level Zarr marker object selects
//! the second layout, otherwise the first segment of the first entry is the dataset directory
//! (netcdf-c's rule). New archives, and archives with no entries, use netcdf-c's layout, so
//! the reference reads them.
//!
//! Reads are served from the archive's central directory, read once at open; entries are read
//! with positioned I/O, so many readers run in parallel. Writes go into a new archive beside
//! the old one ([`spool`]) as they arrive, small objects (metadata) held in memory until the
//! flush; the new archive becomes visible to other processes only when `flush` completes it
//! with the entries not rewritten and renames it over the old one; a failed flush leaves the
//! previous archive untouched. Objects are stored uncompressed, as netcdf-c and zarr-python do
//! (chunks are compressed by their codecs, not by the archive).
//! Entries whose names cannot be keys (`..`, absolute paths, control characters) are invisible.

mod spool;

use super::{ObjectLimit, Store, StoreKey, StorePrefix, ZARR_MARKERS, positional};
use crate::error::{Error, Result};
use rayon::prelude::*;
use spool::{Spool, Spooled};
use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{self, ErrorKind, Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use zip::{CompressionMethod, ZipArchive};

/// Largest buffer reserved up front for one entry, whatever size the archive declares.
const MAX_RESERVE: u64 = 64 << 20;
/// Objects up to this size are held in memory until the flush (metadata is rewritten several
/// times while a dataset is defined; a spooled object rewritten leaves dead bytes behind).
const HELD_MAX: usize = 64 << 10;
/// Bytes of all objects held in memory at most; beyond, small objects are spooled too.
const HELD_BUDGET: usize = 16 << 20;

/// A cheaply clonable reader over a shared file, using positioned reads.
#[derive(Debug, Clone)]
struct SharedFile {
    file: Arc<File>,
    len: u64,
    pos: u64,
}

impl Read for SharedFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read_at(buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for SharedFile {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(p) => Some(p),
            SeekFrom::End(d) => self.len.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        self.pos =
            target.ok_or_else(|| io::Error::new(ErrorKind::InvalidInput, "seek before start"))?;
        Ok(self.pos)
    }
}

/// Where the current bytes of a key are.
#[derive(Debug, Clone)]
enum Source {
    /// Entry number in the archive on disk.
    Archive(usize),
    /// An entry of the archive being written.
    Spooled(Spooled),
    /// A small object held in memory until the flush.
    Held(Arc<[u8]>),
}

#[derive(Debug, Default)]
struct State {
    archive: Option<ZipArchive<SharedFile>>,
    index: BTreeMap<String, Source>,
    /// The archive being written, from the first object spooled to the flush.
    spool: Option<Spool>,
    /// Bytes of the objects held in memory.
    held_bytes: usize,
    /// Whether `index` differs from the archive on disk.
    dirty: bool,
}

/// A [`Store`] over one zip archive.
#[derive(Debug)]
pub struct ZipStore {
    path: PathBuf,
    /// Entries larger than this are refused, not read whole.
    limit: ObjectLimit,
    /// Entry-name prefix of the dataset inside the archive (`"x/"` or `""`).
    prefix: String,
    writable: bool,
    created: bool,
    state: RwLock<State>,
}

fn show(path: &Path) -> String {
    path.display().to_string()
}

fn zip_error(path: &Path, e: zip::result::ZipError) -> Error {
    match e {
        zip::result::ZipError::Io(e) => Error::io(show(path), e),
        other => Error::NotZarr(format!(
            "{} (not a readable zip archive: {other})",
            show(path)
        )),
    }
}

fn open_archive(path: &Path) -> Result<ZipArchive<SharedFile>> {
    let file = File::open(path).map_err(|e| match e.kind() {
        ErrorKind::NotFound => Error::NotFound(show(path)),
        ErrorKind::PermissionDenied => Error::Access(show(path)),
        _ => Error::io(show(path), e),
    })?;
    archive_in(path, Arc::new(file))
}

/// The archive in `file`, open already (`path` names it in messages).
fn archive_in(path: &Path, file: Arc<File>) -> Result<ZipArchive<SharedFile>> {
    let meta = file.metadata().map_err(|e| Error::io(show(path), e))?;
    if !meta.is_file() {
        return Err(Error::NotZarr(format!("{} (not a zip file)", show(path))));
    }
    let reader = SharedFile {
        len: meta.len(),
        file,
        pos: 0,
    };
    ZipArchive::new(reader).map_err(|e| zip_error(path, e))
}

/// The dataset's entry-name prefix inside `archive` (see the module doc).
fn detect_prefix(archive: &ZipArchive<SharedFile>) -> String {
    let top_level_marker = archive
        .file_names()
        .filter_map(|n| n.ok())
        .any(|n| ZARR_MARKERS.contains(&n.as_ref()));
    if top_level_marker {
        return String::new();
    }
    let first = (0..archive.len()).find_map(|i| archive.name_for_index(i)?.ok());
    match first.as_deref().and_then(|n| n.split_once('/')) {
        Some((dir, _)) if StoreKey::new(dir).is_ok() => format!("{dir}/"),
        _ => String::new(),
    }
}

/// The key of every file entry below `prefix`; entries that cannot be keys are skipped.
fn archive_index(archive: &ZipArchive<SharedFile>, prefix: &str) -> BTreeMap<String, Source> {
    let mut index = BTreeMap::new();
    for i in 0..archive.len() {
        let Some(Ok(name)) = archive.name_for_index(i) else {
            continue;
        };
        if name.ends_with('/') {
            continue;
        }
        let Some(rel) = name.strip_prefix(prefix) else {
            continue;
        };
        if StoreKey::new(rel).is_ok() {
            // A duplicated name: the later entry wins, as in most readers.
            index.insert(rel.to_string(), Source::Archive(i));
        }
    }
    index
}

/// The default dataset directory name inside a new archive: the file name minus `.zip`.
fn default_prefix(path: &Path) -> String {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    if StoreKey::new(stem).is_ok() {
        format!("{stem}/")
    } else {
        String::new()
    }
}

/// Where an object of the archive lies.
enum Located {
    Absent,
    /// An entry stored uncompressed: `size` bytes from `start` in the archive file.
    InPlace {
        file: Arc<File>,
        start: u64,
        size: u64,
        /// The entry's CRC, for entries of the archive on disk.
        crc32: Option<u32>,
    },
    /// Compressed, or held in memory: read whole.
    Elsewhere,
}

impl ZipStore {
    /// Where the object at `key` lies: in place in the archive for entries stored uncompressed.
    fn locate(&self, key: &StoreKey) -> Result<Located> {
        let state = self.read_lock()?;
        match (state.index.get(key.as_str()), state.archive.as_ref()) {
            (None, _) => Ok(Located::Absent),
            (Some(Source::Archive(i)), Some(archive)) => {
                let mut archive = archive.clone();
                let entry = archive
                    .by_index_raw(*i)
                    .map_err(|e| zip_error(&self.path, e))?;
                let stored = entry.compression() == CompressionMethod::Stored
                    && entry.compressed_size() == entry.size();
                let at = entry
                    .data_start()
                    .filter(|_| stored)
                    .map(|s| (s, entry.size(), Some(entry.crc32())));
                drop(entry);
                Ok(match at {
                    Some((start, size, crc32)) => Located::InPlace {
                        file: archive.into_inner().file,
                        start,
                        size,
                        crc32,
                    },
                    None => Located::Elsewhere,
                })
            }
            (Some(Source::Spooled(at)), _) => Ok(Located::InPlace {
                file: Arc::clone(spool_of(&state)?.file()),
                start: at.start,
                size: at.size,
                crc32: None,
            }),
            (Some(_), _) => Ok(Located::Elsewhere),
        }
    }

    /// Opens the archive at `path` (read-only unless `writable`).
    ///
    /// Fails with [`Error::NotFound`] when there is no file and [`Error::NotZarr`] when the
    /// file is not a zip archive.
    pub fn open(path: &Path, writable: bool) -> Result<ZipStore> {
        let archive = open_archive(path)?;
        let prefix = if archive.is_empty() {
            default_prefix(path)
        } else {
            detect_prefix(&archive)
        };
        let index = archive_index(&archive, &prefix);
        Ok(ZipStore {
            path: path.to_path_buf(),
            limit: ObjectLimit::default(),
            prefix,
            writable,
            created: false,
            state: RwLock::new(State {
                archive: Some(archive),
                index,
                ..State::default()
            }),
        })
    }

    /// Starts a new dataset archive at `path`; nothing is written before the first flush.
    ///
    /// An existing file is replaced at that flush only with `clobber`; otherwise, and whenever
    /// `path` is a directory, the result is [`Error::Exists`].
    pub fn create(path: &Path, clobber: bool) -> Result<ZipStore> {
        match fs::metadata(path) {
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(show(path), e)),
            Ok(m) if m.is_dir() => {
                return Err(Error::Exists(format!("{} (a directory)", show(path))));
            }
            Ok(_) if !clobber => return Err(Error::Exists(show(path))),
            Ok(_) => {}
        }
        let parent = parent_dir(path);
        if !parent.is_dir() {
            fs::create_dir_all(&parent).map_err(|e| Error::io(show(&parent), e))?;
        }
        Ok(ZipStore {
            path: path.to_path_buf(),
            limit: ObjectLimit::default(),
            prefix: default_prefix(path),
            writable: true,
            created: true,
            state: RwLock::new(State {
                dirty: true,
                ..State::default()
            }),
        })
    }

    /// The entry-name prefix of the dataset inside the archive (`"x/"` or `""`).
    pub fn entry_prefix(&self) -> &str {
        &self.prefix
    }

    fn read_lock(&self) -> Result<std::sync::RwLockReadGuard<'_, State>> {
        self.state
            .read()
            .map_err(|_| Error::Internal("zip store lock poisoned".into()))
    }

    fn write_lock(&self) -> Result<std::sync::RwLockWriteGuard<'_, State>> {
        self.state
            .write()
            .map_err(|_| Error::Internal("zip store lock poisoned".into()))
    }

    fn check_writable(&self) -> Result<()> {
        if self.writable {
            Ok(())
        } else {
            Err(Error::ReadOnly)
        }
    }

    fn read_source(&self, state: &State, key: &StoreKey, src: &Source) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.read_source_into(state, key, src, &mut out)?;
        Ok(out)
    }

    /// Reads the object of `key` from `src` into `out`, replacing what it held and reusing its
    /// memory.
    fn read_source_into(
        &self,
        state: &State,
        key: &StoreKey,
        src: &Source,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        out.clear();
        match src {
            Source::Held(value) => {
                out.extend_from_slice(value);
                Ok(())
            }
            Source::Spooled(at) => {
                let what = || format!("{}:{key}", show(&self.path));
                let size = usize::try_from(at.size).map_err(|_| {
                    Error::io(what(), io::Error::new(ErrorKind::OutOfMemory, "entry size"))
                })?;
                out.resize(size, 0);
                // The spool is read only under the state lock, so it is not replaced meanwhile.
                spool_of(state)?
                    .file()
                    .read_exact_at(out, at.start)
                    .map_err(|e| Error::io(what(), e))
            }
            Source::Archive(i) => {
                let mut archive = state
                    .archive
                    .clone()
                    .ok_or_else(|| Error::Internal("zip entry without archive".into()))?;
                let mut entry = archive.by_index(*i).map_err(|e| zip_error(&self.path, e))?;
                let declared = entry.size();
                self.limit
                    .check(|| format!("{}:{key}", show(&self.path)), declared)?;
                // No deflate stream expands more than 1032 times: a larger declared size is a
                // damaged or hostile header, refused before anything is allocated.
                let bound = entry
                    .compressed_size()
                    .saturating_mul(1032)
                    .saturating_add(1024);
                if entry.compression() != CompressionMethod::Stored && declared > bound {
                    return Err(Error::io(
                        format!("{}:{key}", show(&self.path)),
                        io::Error::new(ErrorKind::InvalidData, "implausible uncompressed size"),
                    ));
                }
                out.reserve(declared.min(MAX_RESERVE) as usize);
                let what = || format!("{}:{key}", show(&self.path));
                (&mut entry)
                    .take(declared.saturating_add(1))
                    .read_to_end(out)
                    .map_err(|e| Error::io(what(), e))?;
                if out.len() as u64 != declared {
                    return Err(Error::io(
                        what(),
                        io::Error::new(
                            ErrorKind::InvalidData,
                            "entry size differs from its header",
                        ),
                    ));
                }
                Ok(())
            }
        }
    }

    /// Completes the archive being written with every object not yet in it, and renames it
    /// over the old one. A failure before the rename leaves the session as it was (its
    /// spooled objects readable, and written anew into a fresh spool at the next try); once
    /// renamed, the new archive is the session's, whatever fails after.
    fn rewrite(&self, state: &mut State) -> Result<()> {
        if state
            .spool
            .as_ref()
            .is_some_and(|s| s.has_dead_bytes() || s.is_broken())
        {
            self.compact(state)?;
        }
        let mut spool = match state.spool.take() {
            Some(spool) => spool,
            None => Spool::beside(&self.path)?,
        };
        let completed = self.complete(state, &mut spool);
        if let Err(e) = completed {
            state.spool = Some(spool);
            return Err(e);
        }
        let permissions = fs::metadata(&self.path).ok().map(|m| m.permissions());
        if let Err(e) = spool.become_archive(&self.path, permissions) {
            state.spool = Some(spool);
            return Err(e);
        }
        // The spool's file is the archive now: the index is rebuilt from it as it is open.
        let archive = match archive_in(&self.path, Arc::clone(spool.file())) {
            Ok(archive) => archive,
            Err(e) => {
                state.spool = Some(spool);
                return Err(e);
            }
        };
        state.index = archive_index(&archive, &self.prefix);
        state.archive = Some(archive);
        state.held_bytes = 0;
        state.dirty = false;
        // The rename itself is durable only once the directory is synced.
        let dir = parent_dir(&self.path);
        File::open(&dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| Error::io(show(&dir), e))
    }

    /// Appends to `spool` every object of the current view not in it yet (held ones, and the
    /// old archive's: stored ones copied in pieces, compressed ones as they are), then finishes
    /// it.
    fn complete(&self, state: &State, spool: &mut Spool) -> Result<()> {
        let mut buf = Vec::new();
        for (key, src) in &state.index {
            let name = self.entry_name(key);
            match src {
                Source::Spooled(_) => {}
                Source::Held(value) => {
                    spool.append(&name, value)?;
                }
                Source::Archive(i) => {
                    let mut archive = state
                        .archive
                        .clone()
                        .ok_or_else(|| Error::Internal("zip entry without archive".into()))?;
                    let entry = archive
                        .by_index_raw(*i)
                        .map_err(|e| zip_error(&self.path, e))?;
                    let stored_at = entry
                        .data_start()
                        .filter(|_| {
                            entry.compression() == CompressionMethod::Stored
                                && entry.compressed_size() == entry.size()
                        })
                        .map(|start| (start, entry.size()));
                    let crc32 = entry.crc32();
                    drop(entry);
                    let copied = match stored_at {
                        Some((start, size)) => {
                            let file = archive.clone().into_inner().file;
                            let source = spool::Source {
                                file: &file,
                                start,
                                size,
                                crc32: Some(crc32),
                            };
                            spool.append_copy(&name, source, &mut buf)?.is_some()
                        }
                        None => false,
                    };
                    // Compressed, or damaged: copied as it is stored, so that its CRC still
                    // tells.
                    if !copied {
                        let entry = archive
                            .by_index_raw(*i)
                            .map_err(|e| zip_error(&self.path, e))?;
                        spool.append_raw(&name, entry)?;
                    }
                }
            }
        }
        spool.finish()
    }

    /// Replaces the spool by one holding only its live entries, the index pointing at their
    /// new places (both left as they were when that fails).
    fn compact(&self, state: &mut State) -> Result<()> {
        let Some(old) = state.spool.take() else {
            return Ok(());
        };
        let live: Vec<(String, Spooled)> = state
            .index
            .iter()
            .filter_map(|(key, src)| match src {
                Source::Spooled(at) => Some((self.entry_name(key), *at)),
                _ => None,
            })
            .collect();
        let (fresh, places) = match old.compacted(&self.path, &live) {
            Ok(compacted) => compacted,
            Err(e) => {
                state.spool = Some(old);
                return Err(e);
            }
        };
        let mut places = places.into_iter();
        for src in state.index.values_mut() {
            if let Source::Spooled(at) = src
                && let Some(place) = places.next()
            {
                *at = place;
            }
        }
        state.spool = Some(fresh);
        Ok(())
    }

    /// The entry name of `key` in the archive.
    fn entry_name(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    /// Takes `key` out of the current view (its spooled entry left out of the archive, its
    /// held bytes released).
    fn release(&self, state: &mut State, key: &str) -> Result<()> {
        match state.index.remove(key) {
            Some(Source::Spooled(at)) => spool_mut(state)?.forget(&self.entry_name(key), at.size),
            Some(Source::Held(value)) => {
                state.held_bytes -= value.len();
                Ok(())
            }
            Some(Source::Archive(_)) | None => Ok(()),
        }
    }
}

fn spool_of(state: &State) -> Result<&Spool> {
    state
        .spool
        .as_ref()
        .ok_or_else(|| Error::Internal("zip entry without spool".into()))
}

fn spool_mut(state: &mut State) -> Result<&mut Spool> {
    state
        .spool
        .as_mut()
        .ok_or_else(|| Error::Internal("zip entry without spool".into()))
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

impl Store for ZipStore {
    fn get(&self, key: &StoreKey) -> Result<Option<Vec<u8>>> {
        let state = self.read_lock()?;
        match state.index.get(key.as_str()) {
            None => Ok(None),
            Some(src) => self.read_source(&state, key, src).map(Some),
        }
    }

    fn get_many(&self, keys: &[StoreKey]) -> Result<Vec<Option<Vec<u8>>>> {
        let state = self.read_lock()?;
        keys.par_iter()
            .map(|k| match state.index.get(k.as_str()) {
                None => Ok(None),
                Some(src) => self.read_source(&state, k, src).map(Some),
            })
            .collect()
    }

    /// Read into the caller's buffer, reusing its memory (a chunk loop reads every chunk into
    /// the same few buffers).
    fn get_into(&self, key: &StoreKey, buf: &mut Vec<u8>) -> Result<bool> {
        let state = self.read_lock()?;
        match state.index.get(key.as_str()) {
            None => Ok(false),
            Some(src) => self.read_source_into(&state, key, src, buf).map(|()| true),
        }
    }

    /// Entries stored uncompressed that fill their buffer exactly are read in place straight
    /// into it, in parallel (fewer entries than workers each in parts), and checked against
    /// their CRC; others are read whole and copied.
    fn get_many_into(
        &self,
        keys: &[StoreKey],
        outs: &mut [&mut [u8]],
    ) -> Result<Vec<Option<usize>>> {
        positional::each_in_parts(keys, outs, |key, out, parts| match self.locate(key)? {
            Located::Absent => Ok(None),
            Located::InPlace {
                file,
                start,
                size,
                crc32,
            } if size == out.len() as u64 => {
                let what = || format!("{}:{key}", show(&self.path));
                let read = positional::read_at_in_parts(&file, start, out, parts)
                    .map_err(|e| Error::io(what(), e))?;
                if read != out.len() {
                    return Err(Error::io(
                        what(),
                        io::Error::new(ErrorKind::UnexpectedEof, "archive ends in an entry"),
                    ));
                }
                if crc32.is_some_and(|crc| crc32fast::hash(out) != crc) {
                    return Err(Error::io(
                        what(),
                        io::Error::new(ErrorKind::InvalidData, "entry CRC mismatch"),
                    ));
                }
                Ok(Some(out.len()))
            }
            _ => Ok(super::runs_of_whole(self.get(key)?, &mut [(0, out)]).map(|n| n as usize)),
        })
    }

    /// Entries stored uncompressed are read in place, run by run, at their offsets in the
    /// archive (a part of an entry cannot be checked against the entry's CRC; whole reads are);
    /// compressed entries and staged objects are read whole.
    fn get_runs_into(&self, key: &StoreKey, runs: &mut [(u64, &mut [u8])]) -> Result<Option<u64>> {
        let (file, start, size) = match self.locate(key)? {
            Located::Absent => return Ok(None),
            Located::Elsewhere => return Ok(super::runs_of_whole(self.get(key)?, runs)),
            Located::InPlace {
                file, start, size, ..
            } => (file, start, size),
        };
        let what = || format!("{}:{key}", show(&self.path));
        for (offset, out) in runs.iter_mut() {
            if *offset >= size {
                continue;
            }
            let n = out.len().min((size - *offset) as usize);
            let at = start.checked_add(*offset).ok_or_else(|| {
                Error::io(
                    what(),
                    io::Error::new(ErrorKind::InvalidData, "entry offset"),
                )
            })?;
            file.read_exact_at(&mut out[..n], at)
                .map_err(|e| Error::io(what(), e))?;
        }
        Ok(Some(size))
    }

    fn allow_objects_up_to(&self, bytes: u64) {
        self.limit.allow(bytes);
    }

    fn is_local(&self) -> bool {
        true
    }

    /// Entries stored uncompressed in the archive.
    fn reads_runs_in_place(&self, key: &StoreKey) -> bool {
        matches!(self.locate(key), Ok(Located::InPlace { .. }))
    }

    /// Small objects are held in memory; others are appended to the archive being written
    /// (an earlier entry of the key left out of it).
    fn put(&self, key: &StoreKey, value: &[u8]) -> Result<()> {
        self.check_writable()?;
        let mut guard = self.write_lock()?;
        let state = &mut *guard;
        let key = key.as_str();
        let old = state.index.get(key).cloned();
        let old_held = match &old {
            Some(Source::Held(v)) => v.len(),
            _ => 0,
        };
        let held_after = state.held_bytes - old_held + value.len();
        let name = self.entry_name(key);
        // A write failed part way: the live entries go into a fresh spool first.
        if state.spool.as_ref().is_some_and(Spool::is_broken) {
            self.compact(state)?;
        }
        // An entry's name may appear once in the archive's directory: the old entry leaves it
        // (its bytes stay readable until the spool is compacted).
        if let Some(Source::Spooled(at)) = &old {
            spool_mut(state)?.forget(&name, at.size)?;
        }
        let new = if value.len() <= HELD_MAX && held_after <= HELD_BUDGET {
            Source::Held(Arc::from(value))
        } else {
            if state.spool.is_none() {
                state.spool = Some(Spool::beside(&self.path)?);
            }
            Source::Spooled(spool_mut(state)?.append(&name, value)?)
        };
        state.held_bytes -= old_held;
        if let Source::Held(v) = &new {
            state.held_bytes += v.len();
        }
        state.index.insert(key.to_string(), new);
        state.dirty = true;
        // The put is done: a compaction that fails (a full disk) is tried again once twice
        // the dead bytes are there, and at the flush.
        if state.spool.as_ref().is_some_and(Spool::wants_compacting)
            && self.compact(state).is_err()
            && let Some(spool) = state.spool.as_mut()
        {
            spool.postpone_compacting();
        }
        Ok(())
    }

    fn delete(&self, key: &StoreKey) -> Result<()> {
        self.check_writable()?;
        let mut state = self.write_lock()?;
        if state.index.contains_key(key.as_str()) {
            self.release(&mut state, key.as_str())?;
            state.dirty = true;
        }
        Ok(())
    }

    fn delete_prefix(&self, prefix: &StorePrefix) -> Result<()> {
        self.check_writable()?;
        let mut state = self.write_lock()?;
        let pre = if prefix.is_root() {
            String::new()
        } else {
            format!("{}/", prefix.as_str())
        };
        let doomed: Vec<String> = state
            .index
            .range(pre.clone()..)
            .map(|(k, _)| k)
            .take_while(|k| k.starts_with(&pre))
            .cloned()
            .collect();
        for k in &doomed {
            self.release(&mut state, k)?;
        }
        if !doomed.is_empty() {
            state.dirty = true;
        }
        Ok(())
    }

    fn list_children(&self, prefix: &StorePrefix) -> Result<Vec<String>> {
        let state = self.read_lock()?;
        let pre = if prefix.is_root() {
            String::new()
        } else {
            format!("{}/", prefix.as_str())
        };
        let mut names: Vec<String> = state
            .index
            .range(pre.clone()..)
            .map(|(k, _)| k)
            .take_while(|k| k.starts_with(&pre))
            .map(|k| {
                let rest = &k[pre.len()..];
                rest.split('/').next().unwrap_or(rest).to_string()
            })
            .collect();
        names.dedup();
        names.sort();
        names.dedup();
        Ok(names)
    }

    fn list_keys(&self, prefix: &StorePrefix) -> Result<Vec<StoreKey>> {
        let state = self.read_lock()?;
        let pre = if prefix.is_root() {
            String::new()
        } else {
            format!("{}/", prefix.as_str())
        };
        state
            .index
            .range(pre.clone()..)
            .map(|(k, _)| k)
            .take_while(|k| k.starts_with(&pre))
            .map(|k| StoreKey::new(k))
            .collect()
    }

    fn flush(&self) -> Result<()> {
        if !self.writable {
            return Ok(());
        }
        let mut state = self.write_lock()?;
        if !state.dirty {
            return Ok(());
        }
        self.rewrite(&mut state)
    }

    fn discard(&self) -> Result<()> {
        self.check_writable()?;
        let mut state = self.write_lock()?;
        state.index.clear();
        state.spool = None;
        state.held_bytes = 0;
        state.dirty = false;
        if self.created && state.archive.take().is_some() {
            fs::remove_file(&self.path).map_err(|e| Error::io(show(&self.path), e))?;
        }
        Ok(())
    }

    fn describe(&self) -> String {
        format!("file://{}#mode=zip", show(&self.path))
    }
}
