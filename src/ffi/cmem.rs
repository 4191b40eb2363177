//! Moving names, strings and values across the C boundary.
//!
//! NULL out-pointers mean "not requested" and are skipped; NULL input names are NC_EINVAL.
//! Strings handed to C are allocated with `malloc` so C can `free` them.

use super::codes::NC_MAX_NAME;
use crate::error::{Error, Result};
use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_void};

/// A name from C (`NULL` -> invalid argument, non-UTF-8 -> bad name).
pub(crate) fn name<'a>(p: *const c_char) -> Result<&'a str> {
    if p.is_null() {
        return Err(Error::Invalid("NULL name".into()));
    }
    // SAFETY: netCDF passes NUL-terminated strings; non-NULL checked above.
    let bytes = unsafe { CStr::from_ptr(p) }.to_bytes();
    if bytes.len() > NC_MAX_NAME {
        return Err(Error::MaxName(String::from_utf8_lossy(bytes).into_owned()));
    }
    crate::api::names::from_bytes(bytes)
}

/// Bytes of a C string; `NULL` is the empty string.
pub(crate) fn c_bytes(p: *const c_char) -> Vec<u8> {
    if p.is_null() {
        return Vec::new();
    }
    // SAFETY: non-NULL, NUL-terminated by the C contract.
    unsafe { CStr::from_ptr(p) }.to_bytes().to_vec()
}

/// Writes `s` plus a NUL into a caller buffer of at least `NC_MAX_NAME + 1` bytes.
pub(crate) fn put_name(dst: *mut c_char, s: &str) {
    if dst.is_null() {
        return;
    }
    let b = s.as_bytes();
    let n = b.len().min(NC_MAX_NAME);
    // SAFETY: netCDF callers provide NC_MAX_NAME + 1 bytes for names.
    unsafe {
        std::ptr::copy_nonoverlapping(b.as_ptr(), dst.cast::<u8>(), n);
        *dst.add(n) = 0;
    }
}

/// Writes `s` plus a NUL into a caller buffer with no length limit (full group names,
/// whose length the caller asked for first).
pub(crate) fn put_string_unbounded(dst: *mut c_char, s: &str) {
    if dst.is_null() {
        return;
    }
    // SAFETY: caller sized the buffer from the length we reported.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr(), dst.cast::<u8>(), s.len());
        *dst.add(s.len()) = 0;
    }
}

/// Stores `v` through an optional out-pointer.
pub(crate) fn put<T>(dst: *mut T, v: T) {
    if !dst.is_null() {
        // SAFETY: non-NULL out-pointer of the right type per the dispatch signature.
        unsafe { dst.write(v) };
    }
}

/// A `malloc`ed, NUL-terminated copy of `bytes` (C frees it).
pub(crate) fn malloc_string(bytes: &[u8]) -> Result<*mut c_char> {
    // SAFETY: malloc of len+1; checked for NULL; filled before use.
    unsafe {
        let p = libc::malloc(bytes.len() + 1).cast::<u8>();
        if p.is_null() {
            return Err(Error::NoMem);
        }
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, bytes.len());
        *p.add(bytes.len()) = 0;
        Ok(p.cast())
    }
}

/// Writes `malloc`ed strings into a caller array of `char*` at element offsets `offsets`.
pub(crate) fn put_strings(
    dst: *mut c_void,
    items: &[Vec<u8>],
    offsets: impl Iterator<Item = usize>,
) -> Result<()> {
    if dst.is_null() {
        return Err(Error::Invalid("NULL data pointer".into()));
    }
    let arr = dst.cast::<*mut c_char>();
    for (s, off) in items.iter().zip(offsets) {
        let p = malloc_string(s)?;
        // SAFETY: the caller's array holds one pointer per requested element.
        unsafe { *arr.add(off) = p };
    }
    Ok(())
}

/// Reads `n` C strings from a `char**` at element offsets `offsets`.
pub(crate) fn get_strings(
    src: *const c_void,
    n: usize,
    offsets: impl Iterator<Item = usize>,
) -> Result<Vec<Vec<u8>>> {
    if src.is_null() {
        return Err(Error::Invalid("NULL data pointer".into()));
    }
    let arr = src.cast::<*const c_char>();
    // SAFETY: the caller's array holds one pointer per element.
    Ok(offsets
        .take(n)
        .map(|off| c_bytes(unsafe { *arr.add(off) }))
        .collect())
}

/// netCDF's `nc_vlen_t`: one value of a variable-length type, `len` values at `p`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct NcVlen {
    pub len: usize,
    pub p: *mut c_void,
}

/// Writes `nc_vlen_t`s into a caller array at element offsets `offsets`, each pointing to a
/// `malloc`ed copy of its item (`items`: the values' bytes, `base_size` bytes each; an empty
/// one points nowhere), which C frees (`nc_free_vlen`, `nc_reclaim_data`). When memory runs
/// out, the copies made so far are freed and the array is left as it was.
pub(crate) fn put_vlens(
    dst: *mut c_void,
    items: &[Vec<u8>],
    base_size: usize,
    offsets: impl Iterator<Item = usize>,
) -> Result<()> {
    if items.is_empty() {
        return Ok(());
    }
    if dst.is_null() {
        return Err(Error::Invalid("NULL data pointer".into()));
    }
    let mut made: Vec<(usize, NcVlen)> = Vec::with_capacity(items.len());
    for (item, off) in items.iter().zip(offsets) {
        let p = if item.is_empty() {
            std::ptr::null_mut()
        } else {
            // SAFETY: malloc of the item's length, checked for NULL, filled before use.
            let p = unsafe { libc::malloc(item.len()) };
            if p.is_null() {
                for (_, v) in &made {
                    // SAFETY: each was malloc'ed above and not handed out yet.
                    unsafe { libc::free(v.p) };
                }
                return Err(Error::NoMem);
            }
            // SAFETY: `p` holds `item.len()` bytes.
            unsafe { std::ptr::copy_nonoverlapping(item.as_ptr(), p.cast::<u8>(), item.len()) };
            p
        };
        let len = item.len() / base_size.max(1);
        made.push((off, NcVlen { len, p }));
    }
    let arr = dst.cast::<NcVlen>();
    for (off, v) in made {
        // SAFETY: the caller's array holds one `nc_vlen_t` per requested element.
        unsafe { arr.add(off).write_unaligned(v) };
    }
    Ok(())
}

/// Reads `n` `nc_vlen_t`s from a caller array at element offsets `offsets`: each one's values'
/// bytes (`base_size` bytes a value). A count with no values behind it (`NULL`) is invalid.
pub(crate) fn get_vlens(
    src: *const c_void,
    n: usize,
    base_size: usize,
    offsets: impl Iterator<Item = usize>,
) -> Result<Vec<Vec<u8>>> {
    if n == 0 {
        return Ok(Vec::new());
    }
    if src.is_null() {
        return Err(Error::Invalid("NULL data pointer".into()));
    }
    let arr = src.cast::<NcVlen>();
    offsets
        .take(n)
        .map(|off| {
            // SAFETY: the caller's array holds one `nc_vlen_t` per element.
            let v = unsafe { arr.add(off).read_unaligned() };
            let bytes = v
                .len
                .checked_mul(base_size)
                .ok_or_else(|| Error::Invalid(format!("a sequence of {} values", v.len)))?;
            Ok(bytes_of_sequence(v.p, bytes)?.to_vec())
        })
        .collect()
}

/// The `len` bytes of a sequence's values (none: any pointer; else a `NULL` one is invalid).
fn bytes_of_sequence<'a>(p: *const c_void, len: usize) -> Result<&'a [u8]> {
    if len > 0 && p.is_null() {
        return Err(Error::Invalid("a sequence of values at NULL".into()));
    }
    bytes(p, len)
}

/// A read-only byte view of caller memory.
pub(crate) fn bytes<'a>(p: *const c_void, len: usize) -> Result<&'a [u8]> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(Error::Invalid("NULL data pointer".into()));
    }
    // SAFETY: the caller passes a buffer of at least `len` bytes per the netCDF contract.
    Ok(unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) })
}

/// A writable byte view of caller memory.
pub(crate) fn bytes_mut<'a>(p: *mut c_void, len: usize) -> Result<&'a mut [u8]> {
    if len == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(Error::Invalid("NULL data pointer".into()));
    }
    // SAFETY: the caller passes a buffer of at least `len` bytes per the netCDF contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(p.cast::<u8>(), len) })
}

/// Output buffers at least this large are advised to use transparent huge pages. glibc's
/// `malloc` maps every block this large on its own, so the advice does not reach the heap.
const HUGE_OUTPUT_BYTES: usize = 32 << 20;
const HUGE_PAGE: usize = 2 << 20;

/// A writable byte view of the caller's output buffer for `nc_get_var*`. A large buffer is
/// advised (`MADV_HUGEPAGE`, for its whole 2 MiB pages only) to be backed by huge pages where
/// it is not backed yet: a fresh buffer then costs one fault per 2 MiB instead of one per
/// 4 KiB when we fill it, which on some machines takes longer than reading the data. The advice
/// changes nothing the caller can observe; where huge pages are off or unavailable it is
/// ignored, and so is its failure.
pub(crate) fn output_bytes<'a>(p: *mut c_void, len: usize) -> Result<&'a mut [u8]> {
    let out = bytes_mut(p, len)?;
    if len >= HUGE_OUTPUT_BYTES {
        advise_huge_pages(out);
    }
    Ok(out)
}

#[cfg(target_os = "linux")]
fn advise_huge_pages(buf: &mut [u8]) {
    let start = (buf.as_mut_ptr() as usize).next_multiple_of(HUGE_PAGE);
    let end = (buf.as_mut_ptr() as usize + buf.len()) / HUGE_PAGE * HUGE_PAGE;
    if end > start {
        // SAFETY: `[start, end)` lies inside the caller's buffer; MADV_HUGEPAGE only changes
        // how its pages will be backed, never their contents.
        unsafe {
            libc::madvise(start as *mut c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_buf: &mut [u8]) {}

/// A slice of `n` values from C (`NULL` -> `None`).
pub(crate) fn slice<'a, T>(p: *const T, n: usize) -> Option<&'a [T]> {
    if p.is_null() {
        return None;
    }
    // SAFETY: the caller passes arrays of one entry per dimension.
    Some(unsafe { std::slice::from_raw_parts(p, n) })
}

/// The `n` ints of a C array that netCDF passes with its length (dimension ids, field
/// sizes): none when `n` is 0 (the pointer may then be `NULL`), else an error for a negative
/// `n` or a `NULL` array.
pub(crate) fn counted<'a>(p: *const c_int, n: c_int, what: &str) -> Result<&'a [c_int]> {
    let n = usize::try_from(n).map_err(|_| Error::Invalid(format!("{n} {what}")))?;
    if n == 0 {
        return Ok(&[]);
    }
    slice(p, n).ok_or_else(|| Error::Invalid(format!("NULL {what}")))
}

/// A writable slice of `n` values (`NULL` -> `None`).
pub(crate) fn slice_mut<'a, T>(p: *mut T, n: usize) -> Option<&'a mut [T]> {
    if p.is_null() {
        return None;
    }
    // SAFETY: the caller passes arrays large enough for the count we reported.
    Some(unsafe { std::slice::from_raw_parts_mut(p, n) })
}
