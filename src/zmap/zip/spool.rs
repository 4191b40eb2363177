//! The archive being written: objects put since the last flush, each appended as it arrives
//! as an entry stored uncompressed at the end of a new archive file beside the old one, which
//! finishing (the central directory, a sync) makes complete. Every object is written once
//! into it; there are no staged copies to gather at the end.
//!
//! Owns the new file, where each entry's bytes lie in it (so they are read in place before the
//! flush), and the bytes of entries replaced or deleted since, which are left out of the
//! central directory and dropped by writing a compacted spool when they outweigh the live
//! entries (and always before the spool becomes the archive, so archives carry no dead
//! bytes). It must not know keys, the old archive's index, or when flushes happen.

use super::show;
use crate::error::{Error, Result};
use std::fs::{File, Permissions};
use std::io::{self, ErrorKind, Seek, SeekFrom, Write};
use std::os::unix::fs::{FileExt, PermissionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tempfile::TempPath;
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

/// Dead bytes tolerated beyond the live ones before the spool is compacted (an object
/// rewritten again and again must not grow the file without bound).
const DEAD_SLACK: u64 = 32 << 20;
/// Largest piece copied at once from one file into the spool.
const COPY_PIECE: usize = 8 << 20;

/// A failure of the zip writer: an I/O error as it is, anything else (a name written twice, say)
/// as an I/O error of the spool too, never as a damaged dataset.
fn write_error(what: &str, e: zip::result::ZipError) -> Error {
    match e {
        zip::result::ZipError::Io(e) => Error::io(what.to_string(), e),
        other => Error::io(what.to_string(), io::Error::other(other.to_string())),
    }
}

/// Bytes to copy into the spool: `size` bytes of `file` from `start` on, whose CRC should be
/// `crc32` when it is known.
pub(in crate::zmap) struct Source<'a> {
    pub file: &'a File,
    pub start: u64,
    pub size: u64,
    pub crc32: Option<u32>,
}

/// Where an entry's bytes lie in the spool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::zmap) struct Spooled {
    pub start: u64,
    pub size: u64,
}

/// The spool file as the zip writer sees it: positioned writes at a position it shares with
/// the spool, which so learns where each entry's bytes start.
#[derive(Debug)]
struct SpoolFile {
    file: Arc<File>,
    position: Arc<AtomicU64>,
}

impl Write for SpoolFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let at = self.position.load(Ordering::Relaxed);
        let n = self.file.write_at(buf, at)?;
        self.position.store(at + n as u64, Ordering::Relaxed);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Seek for SpoolFile {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let now = self.position.load(Ordering::Relaxed);
        let target = match to {
            SeekFrom::Start(p) => Some(p),
            SeekFrom::Current(d) => now.checked_add_signed(d),
            SeekFrom::End(d) => self.file.metadata()?.len().checked_add_signed(d),
        };
        let target =
            target.ok_or_else(|| io::Error::new(ErrorKind::InvalidInput, "seek before start"))?;
        self.position.store(target, Ordering::Relaxed);
        Ok(target)
    }
}

/// A new archive being written beside the old one; removed when dropped unless it became the
/// archive.
#[derive(Debug)]
pub(in crate::zmap) struct Spool {
    /// `None` once renamed to the archive's name.
    path: Option<TempPath>,
    /// The file's name for messages.
    shown: String,
    file: Arc<File>,
    position: Arc<AtomicU64>,
    /// `None` once finished, or after a write failed (the entries' places are unknown then).
    /// Boxed: a zip writer is several kilobytes.
    writer: Mutex<Option<Box<ZipWriter<SpoolFile>>>>,
    live: u64,
    dead: u64,
    /// Dead bytes below which no compaction is tried again after one failed.
    compact_from: u64,
    /// Why the spool can take no more: a write failed part way.
    failed: Option<String>,
}

impl Spool {
    /// A new, empty spool in the directory of `archive`.
    pub fn beside(archive: &Path) -> Result<Spool> {
        let name = archive.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let dir = match archive.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let temp = tempfile::Builder::new()
            .prefix(&format!(".{name}.nczarr-tmp."))
            .permissions(Permissions::from_mode(0o666))
            .tempfile_in(dir)
            .map_err(|e| Error::io(show(archive), e))?;
        let (file, path) = temp.into_parts();
        let file = Arc::new(file);
        let position = Arc::new(AtomicU64::new(0));
        let writer = Box::new(ZipWriter::new(SpoolFile {
            file: Arc::clone(&file),
            position: Arc::clone(&position),
        }));
        Ok(Spool {
            shown: show(&path),
            path: Some(path),
            file,
            position,
            writer: Mutex::new(Some(writer)),
            live: 0,
            dead: 0,
            compact_from: 0,
            failed: None,
        })
    }

    /// The spool's file, for reading entries in place.
    pub fn file(&self) -> &Arc<File> {
        &self.file
    }

    fn what(&self) -> String {
        self.shown.clone()
    }

    /// Runs `step` on the writer; a failure leaves the spool refusing everything after.
    fn with_writer<T>(
        &mut self,
        step: impl FnOnce(&mut ZipWriter<SpoolFile>) -> Result<T>,
    ) -> Result<T> {
        if let Some(why) = &self.failed {
            return Err(Error::io(
                self.what(),
                io::Error::other(format!("an earlier write failed: {why}")),
            ));
        }
        let mut guard = self
            .writer
            .lock()
            .map_err(|_| Error::Internal("zip spool lock poisoned".into()))?;
        let writer = guard
            .as_mut()
            .ok_or_else(|| Error::Internal("zip spool already finished".into()))?;
        let result = step(writer);
        if let Err(e) = &result {
            self.failed = Some(e.to_string());
            *guard = None;
        }
        result
    }

    /// Appends an entry named `name` holding `value`.
    pub fn append(&mut self, name: &str, value: &[u8]) -> Result<Spooled> {
        let spooled = self.append_with(name, value.len() as u64, |w, what| {
            w.write_all(value).map_err(|e| Error::io(what, e))
        })?;
        Ok(spooled)
    }

    /// Appends an entry named `name` holding the `size` bytes of `source.file` from
    /// `source.start` on, copied in pieces through `buf` and checked against `source.crc32`
    /// when it is known: `None` when they differ (the entry is taken back out of the spool, for the caller to
    /// copy as it is stored, so that its CRC still tells).
    pub fn append_copy(
        &mut self,
        name: &str,
        source: Source<'_>,
        buf: &mut Vec<u8>,
    ) -> Result<Option<Spooled>> {
        let Source {
            file,
            start,
            size,
            crc32,
        } = source;
        let mut matched = true;
        let spooled = self.append_with(name, size, |w, what| {
            let mut crc = crc32.map(|_| crc32fast::Hasher::new());
            let mut done = 0u64;
            while done < size {
                let n = (size - done).min(COPY_PIECE as u64) as usize;
                buf.resize(n, 0);
                file.read_exact_at(buf, start + done)
                    .and_then(|()| w.write_all(buf))
                    .map_err(|e| Error::io(what.clone(), e))?;
                if let Some(crc) = crc.as_mut() {
                    crc.update(buf);
                }
                done += n as u64;
            }
            if crc
                .zip(crc32)
                .is_some_and(|(got, want)| got.finalize() != want)
            {
                matched = false;
                w.abort_file().map_err(|e| write_error(&what, e))?;
            }
            Ok(())
        })?;
        if matched {
            Ok(Some(spooled))
        } else {
            self.live = self.live.saturating_sub(size);
            Ok(None)
        }
    }

    fn append_with(
        &mut self,
        name: &str,
        size: u64,
        write: impl FnOnce(&mut ZipWriter<SpoolFile>, String) -> Result<()>,
    ) -> Result<Spooled> {
        let options = SimpleFileOptions::default()
            .compression_method(CompressionMethod::Stored)
            .large_file(size >= u64::from(u32::MAX));
        let position = Arc::clone(&self.position);
        let what = self.what();
        let start = self.with_writer(|w| {
            w.start_file(name, options)
                .map_err(|e| write_error(&what, e))?;
            let start = position.load(Ordering::Relaxed);
            write(w, what)?;
            Ok(start)
        })?;
        self.live += size;
        Ok(Spooled { start, size })
    }

    /// Copies an entry of another archive as it is stored (compressed entries stay so).
    pub fn append_raw<R: io::Read>(
        &mut self,
        name: &str,
        entry: zip::read::ZipFile<'_, R>,
    ) -> Result<()> {
        let what = self.what();
        self.with_writer(|w| {
            w.raw_copy_file_rename(entry, name)
                .map_err(|e| write_error(&what, e))
        })
    }

    /// Leaves the entry `name` (of `size` bytes, replaced or deleted) out of the archive.
    pub fn forget(&mut self, name: &str, size: u64) -> Result<()> {
        let what = self.what();
        self.with_writer(|w| w.hide_file(name).map_err(|e| write_error(&what, e)))?;
        self.live = self.live.saturating_sub(size);
        self.dead += size;
        Ok(())
    }

    /// Whether the bytes of forgotten entries outweigh the live ones by enough to write the
    /// live ones anew.
    pub fn wants_compacting(&self) -> bool {
        self.dead > self.live.saturating_add(DEAD_SLACK) && self.dead >= self.compact_from
    }

    /// After a compaction failed: the next is tried once the dead bytes have doubled.
    pub fn postpone_compacting(&mut self) {
        self.compact_from = self.dead.saturating_mul(2);
    }

    /// Whether a write failed part way: nothing more can be written into this spool, though
    /// its entries stay readable (a fresh one takes them, [`Spool::compacted`]).
    pub fn is_broken(&self) -> bool {
        self.failed.is_some() || self.writer.lock().map_or(true, |w| w.is_none())
    }

    /// Whether any entry was forgotten.
    pub fn has_dead_bytes(&self) -> bool {
        self.dead > 0
    }

    /// A new spool beside `archive` holding the `live` entries of this one (names and
    /// places), and their places in it.
    pub fn compacted(
        &self,
        archive: &Path,
        live: &[(String, Spooled)],
    ) -> Result<(Spool, Vec<Spooled>)> {
        let mut fresh = Spool::beside(archive)?;
        let mut buf = Vec::new();
        let places = live
            .iter()
            .map(|(name, at)| {
                let source = Source {
                    file: &self.file,
                    start: at.start,
                    size: at.size,
                    crc32: None,
                };
                fresh
                    .append_copy(name, source, &mut buf)?
                    .ok_or_else(|| Error::Internal("zip spool copy taken back".into()))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok((fresh, places))
    }

    /// Writes the central directory and syncs the file: the spool is a complete archive.
    pub fn finish(&mut self) -> Result<()> {
        if let Some(why) = &self.failed {
            return Err(Error::io(
                self.what(),
                io::Error::other(format!("an earlier write failed: {why}")),
            ));
        }
        let what = self.what();
        let writer = self
            .writer
            .lock()
            .map_err(|_| Error::Internal("zip spool lock poisoned".into()))?
            .take()
            .ok_or_else(|| Error::Internal("zip spool already finished".into()))?;
        let finished = writer
            .finish()
            .map_err(|e| write_error(&what, e))
            .and_then(|_| self.file.sync_all().map_err(|e| Error::io(what, e)));
        if let Err(e) = &finished {
            self.failed = Some(e.to_string());
        }
        finished
    }

    /// Renames the finished spool to `archive` with `permissions`; on failure the spool is
    /// still removed when dropped.
    pub fn become_archive(
        &mut self,
        archive: &Path,
        permissions: Option<Permissions>,
    ) -> Result<()> {
        let path = self
            .path
            .take()
            .ok_or_else(|| Error::Internal("zip spool already renamed".into()))?;
        if let Some(p) = permissions
            && let Err(e) = std::fs::set_permissions(&path, p)
        {
            self.path = Some(path);
            return Err(Error::io(self.what(), e));
        }
        path.persist(archive).map_err(|e| {
            self.path = Some(e.path);
            Error::io(show(archive), e.error)
        })
    }
}
