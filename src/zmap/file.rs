//! Directory-tree store: key `a/b/c` is the file `root/a/b/c`.
//!
//! Owns the mapping of keys to paths below one root directory, atomic writes of objects
//! ([`atomic_write`]), and the safety rules for creating a dataset directory. It knows nothing
//! of Zarr beyond the names of the top-level metadata objects that mark a directory as safe to
//! clobber.
//!
//! Directories exist only to hold objects: deleting the last object below a directory removes
//! the directory too (best effort), so listings agree with object stores. A path cannot be an
//! object and a directory at once; writing `a/b` when `a` is an object fails with an I/O error.
//! Directory entries that cannot be keys (non-UTF-8 names, control characters, temporary files)
//! are invisible. Symbolic links inside the tree are followed for reads and listed as children,
//! but `list_keys` does not descend into linked directories, so a link loop cannot trap it.

mod atomic_write;

use super::{ObjectLimit, Store, StoreKey, StorePrefix, ZARR_MARKERS, positional};
use crate::error::{Error, Result};
use atomic_write::{TMP_MARK, write_atomically};
use rayon::prelude::*;
use std::fs;
use std::io::{self, ErrorKind, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

/// How often `put` retries when a concurrent delete pruned its directory.
const PUT_RETRIES: usize = 8;

/// A [`Store`] over a directory tree.
#[derive(Debug)]
pub struct FileStore {
    root: PathBuf,
    /// Files larger than this are refused, not read whole.
    limit: ObjectLimit,
    /// Set once writing an object through an unnamed file failed for want of support.
    unnamed_fails: AtomicBool,
}

fn show(path: &Path) -> String {
    path.display().to_string()
}

/// Maps an I/O error on `path` to the crate error.
fn io_error(path: &Path, e: io::Error) -> Error {
    match e.kind() {
        ErrorKind::PermissionDenied => Error::Access(show(path)),
        _ => Error::io(show(path), e),
    }
}

/// True for errors that mean "nothing there" when looking up an object.
fn is_absent(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::NotFound | ErrorKind::NotADirectory | ErrorKind::IsADirectory
    )
}

/// True when a directory entry name can be a key segment.
fn visible(name: &str) -> bool {
    !name.starts_with(TMP_MARK) && StoreKey::new(name).is_ok()
}

/// Removes a directory entry, whole subtrees included (links are removed, not followed).
fn remove_entry(path: &Path) -> io::Result<()> {
    if fs::symlink_metadata(path)?.is_dir() {
        fs::remove_dir_all(path)
    } else {
        fs::remove_file(path)
    }
}

/// The regular file at `path` opened for reading, with its length; `None` when there is none.
fn open_object(path: &Path) -> Result<Option<(fs::File, u64)>> {
    match positional::open_regular(path) {
        Ok(positional::Opened::File(file, len)) => Ok(Some((file, len))),
        Ok(positional::Opened::Absent | positional::Opened::NotRegular) => Ok(None),
        Err(e) if is_absent(&e) => Ok(None),
        Err(e) => Err(io_error(path, e)),
    }
}

/// Reads a whole file into `out`: returns the file's length, of which the first
/// `min(length, out.len())` bytes are in `out`.
fn read_into(file: &mut fs::File, out: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < out.len() {
        match file.read(&mut out[filled..]) {
            Ok(0) => return Ok(filled),
            Ok(n) => filled += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    // Full: count what is left so the caller sees the true length.
    let mut rest = 0;
    let mut probe = [0u8; 4096];
    loop {
        match file.read(&mut probe) {
            Ok(0) => return Ok(filled + rest),
            Ok(n) => rest += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Reads a file of `len` bytes (when opened) into `out` as [`read_into`] does, in `parts`
/// parts read in parallel when it fills `out` exactly ([`positional::read_at_in_parts`]). A
/// file whose length changed since it was opened is read by [`read_into`].
fn read_into_in_parts(
    file: &mut fs::File,
    len: u64,
    out: &mut [u8],
    parts: usize,
) -> io::Result<usize> {
    if len != out.len() as u64 {
        return read_into(file, out);
    }
    let filled = positional::read_at_in_parts(file, 0, out, parts)?;
    let mut probe = [0u8; 1];
    if filled == out.len() && positional::read_at(file, len, &mut probe)? == 0 {
        return Ok(filled);
    }
    file.seek(SeekFrom::Start(0))?;
    read_into(file, out)
}

/// Buffers per vectored read (Linux's `IOV_MAX`).
const MAX_IOVECS: usize = 1024;

/// Reads runs that follow each other in the file, starting at the first one's offset, with
/// vectored reads; stops quietly at the end of the file. A single run is one positional read
/// (no seek): strided requests read many rows of a chunk one by one.
fn read_group(file: &mut fs::File, group: &mut [(u64, &mut [u8])]) -> io::Result<()> {
    match group {
        [] => Ok(()),
        [(offset, out)] => positional::read_at(file, *offset, out).map(|_| ()),
        [(offset, _), ..] => {
            file.seek(SeekFrom::Start(*offset))?;
            let mut slices: Vec<io::IoSliceMut<'_>> = group
                .iter_mut()
                .map(|(_, out)| io::IoSliceMut::new(out))
                .collect();
            let mut bufs = slices.as_mut_slice();
            while !bufs.is_empty() {
                match file.read_vectored(bufs) {
                    Ok(0) => return Ok(()),
                    Ok(n) => io::IoSliceMut::advance_slices(&mut bufs, n),
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(())
        }
    }
}

/// Removes every entry of directory `dir`, keeping `dir` itself.
fn empty_dir(dir: &Path) -> Result<()> {
    for entry in fs::read_dir(dir).map_err(|e| io_error(dir, e))? {
        let path = entry.map_err(|e| io_error(dir, e))?.path();
        match remove_entry(&path) {
            Err(e) if e.kind() != ErrorKind::NotFound => return Err(io_error(&path, e)),
            _ => {}
        }
    }
    Ok(())
}

/// True when the directory `root` has a Zarr or NCZarr object at its top level.
pub fn holds_dataset(root: &Path) -> bool {
    ZARR_MARKERS.iter().any(|m| root.join(m).is_file())
}

impl FileStore {
    /// Opens the dataset directory `root`.
    ///
    /// Fails with [`Error::NotFound`] when `root` does not exist and with [`Error::NotZarr`]
    /// when it is not a directory. Whether the directory holds a dataset is for the caller to
    /// find out.
    pub fn open(root: &Path) -> Result<FileStore> {
        match fs::metadata(root) {
            Ok(m) if m.is_dir() => FileStore::at(root),
            Ok(_) => Err(Error::NotZarr(show(root))),
            Err(e) if e.kind() == ErrorKind::NotFound => Err(Error::NotFound(show(root))),
            Err(e) => Err(io_error(root, e)),
        }
    }

    /// Creates the dataset directory `root` (and its parents) for a new dataset.
    ///
    /// - `root` missing: created.
    /// - `root` a plain file: replaced by an empty directory with `clobber`, else
    ///   [`Error::Exists`].
    /// - `root` an empty directory: used as is.
    /// - `root` a non-empty directory: without `clobber`, [`Error::Exists`]. With `clobber`,
    ///   its contents are removed **only if it looks like a Zarr or NCZarr dataset**, i.e. it
    ///   has at least one of `.zgroup`, `.zarray`, `.zattrs`, `.zmetadata`, `.nczarr` or
    ///   `zarr.json` at its top level; any other directory is refused with [`Error::Exists`],
    ///   so a mistyped path can never wipe an unrelated directory tree.
    pub fn create(root: &Path, clobber: bool) -> Result<FileStore> {
        match fs::metadata(root) {
            Err(e) if e.kind() == ErrorKind::NotFound => {
                fs::create_dir_all(root).map_err(|e| io_error(root, e))?;
            }
            Err(e) => return Err(io_error(root, e)),
            Ok(m) if !m.is_dir() => {
                if !clobber {
                    return Err(Error::Exists(show(root)));
                }
                fs::remove_file(root).map_err(|e| io_error(root, e))?;
                fs::create_dir(root).map_err(|e| io_error(root, e))?;
            }
            Ok(_) => {
                let mut entries = fs::read_dir(root).map_err(|e| io_error(root, e))?;
                if entries.next().is_some() {
                    if !clobber {
                        return Err(Error::Exists(show(root)));
                    }
                    if !holds_dataset(root) {
                        return Err(Error::Exists(format!(
                            "{} (not empty and not a Zarr dataset; refusing to clobber it)",
                            show(root)
                        )));
                    }
                    empty_dir(root)?;
                }
            }
        }
        FileStore::at(root)
    }

    fn at(root: &Path) -> Result<FileStore> {
        let root = fs::canonicalize(root).map_err(|e| io_error(root, e))?;
        Ok(FileStore {
            root,
            limit: ObjectLimit::default(),
            unnamed_fails: AtomicBool::new(false),
        })
    }

    fn path_of(&self, rel: &str) -> PathBuf {
        if rel.is_empty() {
            self.root.clone()
        } else {
            self.root.join(rel)
        }
    }

    /// Removes the empty directories from `rel`'s parent up to (not including) the root.
    fn prune(&self, rel: &str) {
        let mut dir = rel;
        while let Some(i) = dir.rfind('/') {
            dir = &dir[..i];
            if fs::remove_dir(self.path_of(dir)).is_err() {
                break;
            }
        }
    }

    /// Collects the keys below directory `rel` into `out`.
    fn walk(&self, rel: &str, out: &mut Vec<StoreKey>) -> Result<()> {
        let dir = self.path_of(rel);
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if is_absent(&e) => return Ok(()),
            Err(e) => return Err(io_error(&dir, e)),
        };
        for entry in entries {
            let entry = entry.map_err(|e| io_error(&dir, e))?;
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                continue;
            };
            if !visible(&name) {
                continue;
            }
            let child = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            let kind = entry.file_type().map_err(|e| io_error(&entry.path(), e))?;
            if kind.is_dir() {
                self.walk(&child, out)?;
            } else if (kind.is_file() || (kind.is_symlink() && entry.path().is_file()))
                && let Ok(key) = StoreKey::new(&child)
            {
                out.push(key);
            }
        }
        Ok(())
    }
}

impl Store for FileStore {
    fn get(&self, key: &StoreKey) -> Result<Option<Vec<u8>>> {
        let path = self.path_of(key.as_str());
        let Some((mut file, len)) = open_object(&path)? else {
            return Ok(None);
        };
        self.limit.check(|| show(&path), len)?;
        let mut buf = Vec::new();
        positional::read_len(&mut file, len, &mut buf).map_err(|e| io_error(&path, e))?;
        Ok(Some(buf))
    }

    /// Reads into the caller's buffer: a reader of many chunks reuses one buffer's pages
    /// instead of faulting in fresh ones for every chunk.
    fn get_into(&self, key: &StoreKey, buf: &mut Vec<u8>) -> Result<bool> {
        let path = self.path_of(key.as_str());
        let Some((mut file, len)) = open_object(&path)? else {
            return Ok(false);
        };
        self.limit.check(|| show(&path), len)?;
        positional::read_len(&mut file, len, buf).map_err(|e| io_error(&path, e))?;
        Ok(true)
    }

    /// Files are read in parallel: on a warm page cache a read is a memory copy, so several
    /// cores copy faster than one.
    fn get_many(&self, keys: &[StoreKey]) -> Result<Vec<Option<Vec<u8>>>> {
        keys.par_iter().map(|k| self.get(k)).collect()
    }

    /// Files are written in parallel, each still atomically (temporary file + rename).
    /// A few objects (a define mode left after one variable was added: its objects and
    /// its group's) are written on the calling thread; more, in parallel.
    fn put_many(&self, items: Vec<(StoreKey, Vec<u8>)>) -> Result<()> {
        if items.len() <= 4 {
            return items.iter().try_for_each(|(k, v)| self.put(k, v));
        }
        items.par_iter().try_for_each(|(k, v)| self.put(k, v))
    }

    /// Fewer files than workers (one chunk at a time) are each read in parts in parallel.
    fn get_many_into(
        &self,
        keys: &[StoreKey],
        outs: &mut [&mut [u8]],
    ) -> Result<Vec<Option<usize>>> {
        positional::each_in_parts(keys, outs, |key, out, parts| {
            let path = self.path_of(key.as_str());
            match open_object(&path)? {
                None => Ok(None),
                Some((mut file, len)) => read_into_in_parts(&mut file, len, out, parts)
                    .map(Some)
                    .map_err(|e| io_error(&path, e)),
            }
        })
    }

    /// Runs with consecutive offsets are read by one vectored read each (the kernel copies
    /// from the page cache straight into the caller's buffers).
    fn get_runs_into(&self, key: &StoreKey, runs: &mut [(u64, &mut [u8])]) -> Result<Option<u64>> {
        let path = self.path_of(key.as_str());
        let Some((mut file, len)) = open_object(&path)? else {
            return Ok(None);
        };
        let mut rest = runs;
        while !rest.is_empty() {
            let mut n = 1;
            let mut end = rest[0].0.saturating_add(rest[0].1.len() as u64);
            while n < rest.len() && n < MAX_IOVECS && rest[n].0 == end {
                end = end.saturating_add(rest[n].1.len() as u64);
                n += 1;
            }
            let (group, tail) = std::mem::take(&mut rest).split_at_mut(n);
            read_group(&mut file, group).map_err(|e| io_error(&path, e))?;
            rest = tail;
        }
        Ok(Some(len))
    }

    fn is_local(&self) -> bool {
        true
    }

    fn allow_objects_up_to(&self, bytes: u64) {
        self.limit.allow(bytes);
    }

    fn reads_runs_in_place(&self, _key: &StoreKey) -> bool {
        true
    }

    fn put(&self, key: &StoreKey, value: &[u8]) -> Result<()> {
        if key.name().starts_with(TMP_MARK) {
            return Err(Error::BadKey {
                key: key.to_string(),
                why: format!("names starting with {TMP_MARK:?} are reserved"),
            });
        }
        let path = self.path_of(key.as_str());
        let dir = path.parent().unwrap_or(&self.root);
        // The directory usually exists (every chunk after a variable's first): it is made only
        // when writing into it says it is missing, again if a concurrent delete pruned it.
        let mut attempt = 0;
        loop {
            match write_atomically(dir, &path, key.name(), value, &self.unnamed_fails) {
                Ok(_) => return Ok(()),
                Err(e) if e.kind() == ErrorKind::NotFound && attempt < PUT_RETRIES => {
                    attempt += 1;
                    // A parent pruned while the directories are made: made again next time.
                    match fs::create_dir_all(dir) {
                        Err(e) if e.kind() != ErrorKind::NotFound => {
                            return Err(io_error(dir, e));
                        }
                        _ => {}
                    }
                }
                Err(e) => return Err(io_error(&path, e)),
            }
        }
    }

    fn delete(&self, key: &StoreKey) -> Result<()> {
        let path = self.path_of(key.as_str());
        match fs::remove_file(&path) {
            Ok(()) => {
                self.prune(key.as_str());
                Ok(())
            }
            Err(e) if is_absent(&e) => Ok(()),
            Err(e) => Err(io_error(&path, e)),
        }
    }

    fn delete_prefix(&self, prefix: &StorePrefix) -> Result<()> {
        if prefix.is_root() {
            return empty_dir(&self.root);
        }
        let path = self.path_of(prefix.as_str());
        let is_dir = match fs::symlink_metadata(&path) {
            Ok(m) => m.is_dir() || (m.is_symlink() && path.is_dir()),
            Err(e) if is_absent(&e) => false,
            Err(e) => return Err(io_error(&path, e)),
        };
        if is_dir {
            match remove_entry(&path) {
                Err(e) if !is_absent(&e) => return Err(io_error(&path, e)),
                _ => self.prune(prefix.as_str()),
            }
        }
        Ok(())
    }

    fn list_children(&self, prefix: &StorePrefix) -> Result<Vec<String>> {
        let dir = self.path_of(prefix.as_str());
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if is_absent(&e) => return Ok(Vec::new()),
            Err(e) => return Err(io_error(&dir, e)),
        };
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| io_error(&dir, e))?;
            if let Some(name) = entry.file_name().to_str()
                && visible(name)
            {
                names.push(name.to_string());
            }
        }
        names.sort_unstable();
        Ok(names)
    }

    fn list_keys(&self, prefix: &StorePrefix) -> Result<Vec<StoreKey>> {
        let mut keys = Vec::new();
        self.walk(prefix.as_str(), &mut keys)?;
        keys.sort_unstable();
        Ok(keys)
    }

    /// Removes every object, then the dataset's directory when nothing else is left in it.
    fn discard(&self) -> Result<()> {
        self.delete_prefix(&StorePrefix::root())?;
        // Left in place when something that is not the dataset's is in it.
        let _ = fs::remove_dir(&self.root);
        Ok(())
    }

    fn describe(&self) -> String {
        format!("file://{}", self.root.display())
    }
}
