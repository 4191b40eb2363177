//! Positional reads of local files: no shared file offset, so several threads read one file at
//! once. A read that stops at the end of the file, and the same split into parts read in
//! parallel (on a warm page cache a read is a memory copy, and one large object read alone
//! would otherwise copy on one core); and opening only regular files for reading. Knows nothing
//! of keys, stores or archives.

use rayon::prelude::*;
use std::fs::{File, OpenOptions};
use std::io::{self, ErrorKind};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

/// What is at a local path opened with [`open_regular`].
#[derive(Debug)]
pub(crate) enum Opened {
    /// A regular file, open for reading, and its length.
    File(File, u64),
    /// Nothing (or a path through something that is no directory).
    Absent,
    /// Something else: a directory, a FIFO, a device, a socket.
    NotRegular,
}

/// Opens `path` for reading when it is a regular file. A FIFO or a device is never waited on
/// (a read of one could wait forever): it is opened without waiting for a writer and looked
/// at once open, so nothing can be swapped in between the look and the read.
pub(crate) fn open_regular(path: &Path) -> io::Result<Opened> {
    let opened = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path);
    let file = match opened {
        Ok(file) => file,
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
            return Ok(Opened::Absent);
        }
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    Ok(if meta.is_file() {
        Opened::File(file, meta.len())
    } else {
        Opened::NotRegular
    })
}

/// Reads the `len` bytes a file had when opened (fewer if it shrank since, none of what it
/// grew) into `buf`, replacing its contents; memory that cannot be had is an error, not an
/// abort. A small file costs one `read`, and the buffer is not zeroed first.
pub(crate) fn read_len(file: &mut File, len: u64, buf: &mut Vec<u8>) -> io::Result<()> {
    use std::io::Read;
    buf.clear();
    buf.try_reserve_exact(usize::try_from(len).unwrap_or(usize::MAX))
        .map_err(|_| io::Error::from(ErrorKind::OutOfMemory))?;
    file.take(len).read_to_end(buf)?;
    Ok(())
}

/// [`read_len`] into a new buffer.
pub(crate) fn read_whole(mut file: File, len: u64) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    read_len(&mut file, len, &mut out)?;
    Ok(out)
}

/// The error of a path that is there but is no regular file.
pub(crate) fn not_regular() -> io::Error {
    io::Error::new(ErrorKind::InvalidInput, "not a regular file")
}

/// Bytes below which reading part of a file on another thread costs more than the copy it
/// takes over.
pub(super) const MIN_BYTES_PER_READ_THREAD: usize = 2 << 20;

/// Fills `out` from `offset` on; stops quietly at the end of the file. Returns the bytes read.
pub(super) fn read_at(file: &File, offset: u64, out: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < out.len() {
        match file.read_at(&mut out[filled..], offset.saturating_add(filled as u64)) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Reads as [`read_at`], in up to `parts` parts of at least [`MIN_BYTES_PER_READ_THREAD`]
/// bytes read in parallel. Returns the bytes read in all; fewer than `out.len()` when the file
/// ends first (which bytes of `out` were then filled is unspecified).
pub(super) fn read_at_in_parts(
    file: &File,
    offset: u64,
    out: &mut [u8],
    parts: usize,
) -> io::Result<usize> {
    let part = out
        .len()
        .div_ceil(parts.max(1))
        .max(MIN_BYTES_PER_READ_THREAD);
    if part >= out.len() {
        return read_at(file, offset, out);
    }
    out.par_chunks_mut(part)
        .enumerate()
        .map(|(i, o)| read_at(file, offset.saturating_add((i * part) as u64), o))
        .try_fold(|| 0, |sum, n| n.map(|n| sum + n))
        .try_reduce(|| 0, |a, b| Ok(a + b))
}

/// Runs `read(key, out, parts)` for every key and its buffer in parallel, `parts` being the
/// share of the workers each may read in parts with (fewer objects than workers, one chunk
/// at a time, still use every core); the answers in key order.
pub(super) fn each_in_parts<K: Sync, T: Send>(
    keys: &[K],
    outs: &mut [&mut [u8]],
    read: impl Fn(&K, &mut [u8], usize) -> crate::error::Result<T> + Sync,
) -> crate::error::Result<Vec<T>> {
    let parts = rayon::current_num_threads() / keys.len().max(1);
    keys.par_iter()
        .zip(outs.par_iter_mut())
        .map(|(key, out)| read(key, out, parts))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// Only regular files are opened; a FIFO is looked at without waiting for a writer, and a
    /// directory, or nothing, is said to be so.
    #[test]
    fn only_regular_files_are_opened() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, b"four").unwrap();
        match open_regular(&file).unwrap() {
            Opened::File(f, len) => {
                assert_eq!(len, 4);
                assert_eq!(read_whole(f, len).unwrap(), b"four");
            }
            other => panic!("{other:?}"),
        }
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo");
        assert!(matches!(open_regular(&fifo).unwrap(), Opened::NotRegular));
        assert!(matches!(
            open_regular(dir.path()).unwrap(),
            Opened::NotRegular
        ));
        let missing = [dir.path().join("none"), file.join("below")];
        for path in missing {
            assert!(
                matches!(open_regular(&path).unwrap(), Opened::Absent),
                "{path:?}"
            );
        }
    }

    /// Reads in parts give what one read gives, from any offset, and count short at the end.
    #[test]
    fn parts_read_what_one_read_reads() {
        let len = 3 * MIN_BYTES_PER_READ_THREAD + 5;
        let data: Vec<u8> = (0..len as u32).map(|i| (i % 251) as u8).collect();
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&data).unwrap();
        for (offset, parts) in [(0usize, 1usize), (0, 4), (7, 3), (7, 64)] {
            let mut out = vec![0u8; len - offset];
            assert_eq!(
                read_at_in_parts(&file, offset as u64, &mut out, parts).unwrap(),
                len - offset
            );
            assert!(out[..] == data[offset..], "{offset} {parts}");
        }
        let mut past = vec![0u8; len];
        assert_eq!(read_at_in_parts(&file, 10, &mut past, 4).unwrap(), len - 10);
        assert_eq!(read_at(&file, len as u64, &mut [0u8; 4]).unwrap(), 0);
    }
}
