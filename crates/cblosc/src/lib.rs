//! Safe one-shot calls into c-blosc 1.x (the library numcodecs and the HDF5 blosc filter use).
//!
//! Only the context-taking entry points are used (`blosc_compress_ctx`,
//! `blosc_decompress_ctx`), so calls from many threads at once never share global state.
//! Every compressed buffer is validated (`blosc_cbuffer_validate`) before decompression and
//! its declared size is checked against the caller's limit, so a corrupt or hostile buffer
//! can neither overrun memory nor make us allocate more than the caller allows.

use blosc_src as sys;
use std::ffi::{CStr, CString, c_int, c_void};
use std::ops::Range;

/// Bytes c-blosc may add to the input when compressing.
pub const MAX_OVERHEAD: usize = sys::BLOSC_MAX_OVERHEAD as usize;
/// Length of the header every blosc buffer starts with.
pub const HEADER_LEN: usize = 16;
/// The largest input c-blosc 1.x accepts.
pub const MAX_BUFFER: usize = (i32::MAX as usize) - MAX_OVERHEAD;

/// Why a call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BloscError {
    /// The compressor name is not compiled into this c-blosc.
    UnknownCompressor(String),
    /// The input is larger than c-blosc can handle.
    TooLarge(usize),
    /// The buffer is not a valid blosc buffer (truncated, corrupt, unsupported version).
    Corrupt(String),
    /// The buffer declares more decompressed bytes than the caller allows.
    ExceedsLimit { declared: usize, limit: usize },
    /// c-blosc reported an error code.
    Library(i32),
}

impl std::fmt::Display for BloscError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BloscError::UnknownCompressor(c) => write!(f, "unknown blosc compressor {c:?}"),
            BloscError::TooLarge(n) => write!(f, "{n} bytes is too large for blosc"),
            BloscError::Corrupt(why) => write!(f, "corrupt blosc buffer: {why}"),
            BloscError::ExceedsLimit { declared, limit } => write!(
                f,
                "blosc buffer declares {declared} decompressed bytes, more than the expected {limit}"
            ),
            BloscError::Library(code) => write!(f, "c-blosc error {code}"),
        }
    }
}

impl std::error::Error for BloscError {}

/// The compressors compiled into c-blosc, by numcodecs/c-blosc name, with their codes.
pub const COMPRESSORS: [(&str, u32); 5] = [
    ("blosclz", 0),
    ("lz4", 1),
    ("lz4hc", 2),
    ("zlib", 4),
    ("zstd", 5),
];

/// The c-blosc code of a compressor name (`blosc_compname_to_compcode`).
pub fn compressor_code(name: &str) -> Option<u32> {
    COMPRESSORS.iter().find(|c| c.0 == name).map(|c| c.1)
}

/// The compressor name of a c-blosc code.
pub fn compressor_name(code: u32) -> Option<&'static str> {
    COMPRESSORS.iter().find(|c| c.1 == code).map(|c| c.0)
}

/// Compresses `src`. `shuffle` is 0 (none), 1 (byte) or 2 (bit); `blocksize` 0 = automatic.
pub fn compress(
    src: &[u8],
    clevel: u8,
    shuffle: u8,
    typesize: usize,
    cname: &str,
    blocksize: usize,
) -> Result<Vec<u8>, BloscError> {
    let mut dst = Vec::new();
    compress_into(src, clevel, shuffle, typesize, cname, blocksize, &mut dst)?;
    Ok(dst)
}

/// Compresses `src` as [`compress`] into `dst`, replacing what it held and reusing its
/// allocation (nothing is written to it before c-blosc writes the compressed bytes).
pub fn compress_into(
    src: &[u8],
    clevel: u8,
    shuffle: u8,
    typesize: usize,
    cname: &str,
    blocksize: usize,
    dst: &mut Vec<u8>,
) -> Result<(), BloscError> {
    dst.clear();
    if src.len() > MAX_BUFFER {
        return Err(BloscError::TooLarge(src.len()));
    }
    compressor_code(cname).ok_or_else(|| BloscError::UnknownCompressor(cname.into()))?;
    let cname_c = CString::new(cname).map_err(|_| BloscError::UnknownCompressor(cname.into()))?;
    let room = src.len() + MAX_OVERHEAD;
    dst.reserve(room);
    // SAFETY: `src` is valid for `src.len()` bytes; `dst`'s spare capacity is valid for writes
    // of `room` bytes (reserved above) and does not overlap `src`; c-blosc never writes past
    // `destsize`; `cname_c` is NUL-terminated and outlives the call; the ctx variant keeps no
    // global state.
    let n = unsafe {
        sys::blosc_compress_ctx(
            c_int::from(clevel),
            c_int::from(shuffle),
            typesize,
            src.len(),
            src.as_ptr().cast::<c_void>(),
            dst.spare_capacity_mut().as_mut_ptr().cast::<c_void>(),
            room,
            cname_c.as_ptr(),
            blocksize,
            1,
        )
    };
    if n <= 0 {
        return Err(BloscError::Library(n));
    }
    let n = (n as usize).min(room);
    // SAFETY: c-blosc wrote the first `n` bytes of the spare capacity (it returns how many it
    // wrote, at most `room`, all of which was reserved).
    unsafe { dst.set_len(n) };
    Ok(())
}

/// The decompressed size a buffer declares, after checking that the buffer is well formed.
pub fn declared_size(src: &[u8]) -> Result<usize, BloscError> {
    if src.len() < HEADER_LEN {
        return Err(BloscError::Corrupt(format!(
            "{} bytes, shorter than the header",
            src.len()
        )));
    }
    let mut nbytes = 0usize;
    // SAFETY: `src` is valid for `src.len()` bytes, which is passed as the buffer length;
    // `nbytes` is a valid out-pointer.
    let rc = unsafe {
        sys::blosc_cbuffer_validate(src.as_ptr().cast::<c_void>(), src.len(), &mut nbytes)
    };
    if rc < 0 {
        return Err(BloscError::Corrupt(
            "header does not match the buffer".into(),
        ));
    }
    Ok(nbytes)
}

/// Decompresses `src`, refusing buffers that declare more than `limit` bytes.
pub fn decompress(src: &[u8], limit: usize) -> Result<Vec<u8>, BloscError> {
    let declared = declared_size(src)?;
    if declared > limit {
        return Err(BloscError::ExceedsLimit { declared, limit });
    }
    let mut dst = vec![0u8; declared];
    decompress_into(src, &mut dst)?;
    Ok(dst)
}

/// Decompresses `src` into the start of `dst`, refusing buffers that declare more than
/// `dst.len()` bytes; returns the number of bytes written.
pub fn decompress_into(src: &[u8], dst: &mut [u8]) -> Result<usize, BloscError> {
    let declared = declared_size(src)?;
    if declared > dst.len() {
        return Err(BloscError::ExceedsLimit {
            declared,
            limit: dst.len(),
        });
    }
    if declared == 0 {
        return Ok(0);
    }
    // SAFETY: `src` was validated above (its header's sizes agree with its length), `dst`
    // is valid for `declared <= dst.len()` bytes, which is the size passed, and c-blosc never
    // writes past `destsize`.
    let n = unsafe {
        sys::blosc_decompress_ctx(
            src.as_ptr().cast::<c_void>(),
            dst.as_mut_ptr().cast::<c_void>(),
            declared,
            1,
        )
    };
    if n < 0 || n as usize != declared {
        return Err(BloscError::Library(n));
    }
    Ok(declared)
}

/// A header flag c-blosc reserves; `blosc_decompress_ctx` refuses buffers that set it.
const RESERVED_FLAG: u8 = 0x08;
/// The header flag of a buffer that holds its bytes as they are, after the header.
const MEMCPYED_FLAG: u8 = 0x02;

/// What a buffer's header says about how it is laid out.
struct Layout {
    typesize: usize,
    /// Decompressed bytes.
    nbytes: usize,
    /// Compressed bytes, header included.
    cbytes: usize,
    blocksize: usize,
    nblocks: usize,
    memcpyed: bool,
}

impl Layout {
    /// The layout in a header (at least [`HEADER_LEN`] bytes), when blocks of it can be
    /// decompressed on their own: blocks of whole items, a whole number of items, no
    /// reserved flag.
    fn of(header: &[u8]) -> Option<Layout> {
        let word = |at: usize| {
            u32::from_le_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]])
                as usize
        };
        let (flags, typesize) = (header[2], usize::from(header[3]).max(1));
        let (nbytes, blocksize, cbytes) = (word(4), word(8), word(12));
        let usable = blocksize > 0
            && blocksize % typesize == 0
            && nbytes % typesize == 0
            && flags & RESERVED_FLAG == 0;
        usable.then(|| Layout {
            typesize,
            nbytes,
            cbytes,
            blocksize,
            nblocks: nbytes.div_ceil(blocksize),
            memcpyed: flags & MEMCPYED_FLAG != 0,
        })
    }

    /// Which blocks hold bytes of `wanted`; `None` when a range lies outside the buffer.
    fn touched(&self, wanted: &[Range<usize>]) -> Option<Vec<bool>> {
        let mut touched = vec![false; self.nblocks];
        for r in wanted {
            if r.start > r.end || r.end > self.nbytes {
                return None;
            }
            if !r.is_empty() {
                touched[r.start / self.blocksize..=(r.end - 1) / self.blocksize].fill(true);
            }
        }
        Some(touched)
    }

    /// The decompressed byte ranges of the runs of touched blocks.
    fn spans(&self, touched: &[bool]) -> Vec<Range<usize>> {
        let mut spans = Vec::new();
        let mut block = 0;
        while block < touched.len() {
            if !touched[block] {
                block += 1;
                continue;
            }
            let first = block;
            while block < touched.len() && touched[block] {
                block += 1;
            }
            spans.push(first * self.blocksize..(block * self.blocksize).min(self.nbytes));
        }
        spans
    }
}

/// Splits the decompressed buffer of `src` into at most `parts` ranges of whole blocks, of
/// about the same size, for [`decompress_range`] to decompress each on its own (on a thread of
/// the caller's); `None` when the buffer has fewer than two blocks, is invalid, or its blocks
/// are not whole items.
pub fn split(src: &[u8], parts: usize) -> Option<Vec<Range<usize>>> {
    declared_size(src).ok()?;
    let layout = Layout::of(src)?;
    let parts = parts.min(layout.nblocks);
    if parts < 2 {
        return None;
    }
    let per = layout.nblocks.div_ceil(parts);
    Some(
        (0..layout.nblocks)
            .step_by(per)
            .map(|b| b * layout.blocksize..((b + per) * layout.blocksize).min(layout.nbytes))
            .collect(),
    )
}

/// Decompresses the bytes `range` (one of [`split`]'s) of the decompressed buffer of `src`
/// into `dst`, which is as long as the range (`blosc_getitem`, which keeps its state on the
/// stack). `Ok(false)` when the range does not fit the buffer or c-blosc refused it: the
/// buffer should be decompressed whole (which reports what is wrong with it).
pub fn decompress_range(
    src: &[u8],
    range: Range<usize>,
    dst: &mut [u8],
) -> Result<bool, BloscError> {
    let declared = declared_size(src)?;
    let Some(layout) = Layout::of(src) else {
        return Ok(false);
    };
    if range.start > range.end
        || range.end > declared
        || range.len() != dst.len()
        || range.start % layout.typesize != 0
        || range.len() % layout.typesize != 0
    {
        return Ok(false);
    }
    get_items(src, range.start / layout.typesize, dst, layout.typesize)
}

/// Decompresses only the blocks of `src` that hold the byte ranges `wanted` of its
/// decompressed buffer, each block into its place in `dst`, which is as long as the whole
/// decompressed buffer (`blosc_getitem`, which keeps its state on the stack). Bytes of `dst`
/// outside those blocks are left as they were. Only the header, the block starts and the
/// blocks themselves are read from `src` (the parts [`parts_needed`] lists).
///
/// `Ok(false)` when this cannot be done or would save nothing: `dst` is not the declared
/// length, a range lies outside it, every block is wanted, blocks are not whole items, the
/// header sets a flag c-blosc reserves, or `blosc_getitem` refused the buffer. `dst` then
/// holds nothing useful and the buffer should be decompressed whole (which reports what is
/// wrong with it).
pub fn decompress_parts(
    src: &[u8],
    dst: &mut [u8],
    wanted: &[Range<usize>],
) -> Result<bool, BloscError> {
    let declared = declared_size(src)?;
    let Some(layout) = Layout::of(src).filter(|_| dst.len() == declared) else {
        return Ok(false);
    };
    let Some(touched) = layout.touched(wanted) else {
        return Ok(false);
    };
    if touched.iter().all(|&t| t) {
        return Ok(false);
    }
    for span in layout.spans(&touched) {
        let first = span.start / layout.typesize;
        if !get_items(src, first, &mut dst[span], layout.typesize)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// What [`parts_needed`] needs to know or found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Needed {
    /// The whole buffer: its blocks cannot be read on their own, or nearly all are wanted.
    Whole,
    /// The buffer's first this many bytes, to find out.
    Head(usize),
    /// These byte ranges of the buffer (sorted, disjoint, the header first): with them in
    /// place, [`decompress_parts`] decompresses what was wanted.
    Ranges(Vec<Range<usize>>),
}

/// The byte ranges of a compressed buffer of `len` bytes (decompressing to `decoded` bytes)
/// that [`decompress_parts`] reads to decompress `wanted`, from the buffer's first bytes
/// `head`: its header, its block starts, and the blocks that hold `wanted`. So a caller can
/// read only those from storage.
pub fn parts_needed(head: &[u8], len: usize, decoded: usize, wanted: &[Range<usize>]) -> Needed {
    if head.len() < HEADER_LEN {
        return if len >= HEADER_LEN {
            Needed::Head(HEADER_LEN)
        } else {
            Needed::Whole
        };
    }
    let Some(layout) = Layout::of(head) else {
        return Needed::Whole;
    };
    // Checked first: the header's sizes bound what is allocated below.
    let sane = layout.cbytes == len
        && layout.nbytes == decoded
        && len <= decoded.saturating_add(MAX_OVERHEAD);
    if !sane {
        return Needed::Whole;
    }
    let Some(touched) = layout.touched(wanted) else {
        return Needed::Whole;
    };
    let mut ranges: Vec<Range<usize>> = Vec::new();
    if layout.memcpyed {
        ranges.push(0..HEADER_LEN);
        let plain = |r: Range<usize>| r.start + HEADER_LEN..r.end + HEADER_LEN;
        ranges.extend(layout.spans(&touched).into_iter().map(plain));
    } else {
        let starts_end = HEADER_LEN + 4 * layout.nblocks;
        if starts_end > len {
            return Needed::Whole;
        }
        if head.len() < starts_end {
            return Needed::Head(starts_end);
        }
        let starts: Vec<usize> = head[HEADER_LEN..starts_end]
            .chunks_exact(4)
            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]) as usize)
            .collect();
        if starts.iter().any(|&s| s < starts_end || s >= len) {
            return Needed::Whole;
        }
        let mut sorted = starts.clone();
        sorted.sort_unstable();
        ranges.push(0..starts_end);
        // A block runs from its start to the next block's start, whatever order the blocks
        // were written in.
        for (block, _) in touched.iter().enumerate().filter(|(_, t)| **t) {
            let start = starts[block];
            let next = sorted.partition_point(|&s| s <= start);
            ranges.push(start..sorted.get(next).copied().unwrap_or(len));
        }
    }
    ranges.sort_unstable_by_key(|r| r.start);
    let mut merged: Vec<Range<usize>> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match merged.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => merged.push(r),
        }
    }
    let bytes: usize = merged.iter().map(|r| r.len()).sum();
    if bytes > len / 2 {
        return Needed::Whole;
    }
    Needed::Ranges(merged)
}

/// Decompresses the items from `first` on into all of `dst` (`dst.len()` a multiple of
/// `typesize`, the header's item size, and `src` validated by [`declared_size`], with the
/// items inside its declared size). `Ok(false)` when c-blosc refused.
fn get_items(
    src: &[u8],
    first: usize,
    dst: &mut [u8],
    typesize: usize,
) -> Result<bool, BloscError> {
    let len = dst.len();
    let too_large = |_| BloscError::TooLarge(len);
    // Declared sizes are below `i32::MAX`, so these fit.
    let start = c_int::try_from(first).map_err(too_large)?;
    let nitems = c_int::try_from(len / typesize).map_err(too_large)?;
    // SAFETY: `src` was validated (its header's sizes agree with its length) and the caller
    // keeps items `first..first + nitems` within the declared size, so c-blosc reads within
    // `src` and writes exactly `nitems * typesize == dst.len()` bytes to `dst`.
    let n = unsafe {
        sys::blosc_getitem(
            src.as_ptr().cast::<c_void>(),
            start,
            nitems,
            dst.as_mut_ptr().cast::<c_void>(),
        )
    };
    Ok(n >= 0 && n as usize == dst.len())
}

/// The c-blosc version string.
pub fn version() -> String {
    // SAFETY: returns a pointer to a static NUL-terminated string.
    let p = unsafe { sys::blosc_get_version_string() };
    if p.is_null() {
        return String::new();
    }
    // SAFETY: non-null, static, NUL-terminated (checked above).
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

#[cfg(test)]
// A list of one byte range is a common argument of `decompress_parts`, not a mistaken range
// vector.
#[allow(clippy::single_range_in_vec_init)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_every_compressor() {
        let data: Vec<u8> = (0..10_000u32).flat_map(|i| (i / 7).to_le_bytes()).collect();
        for (name, _) in COMPRESSORS {
            for shuffle in 0..=2 {
                let c = compress(&data, 5, shuffle, 4, name, 0).unwrap();
                assert_eq!(
                    decompress(&c, data.len()).unwrap(),
                    data,
                    "{name} {shuffle}"
                );
            }
        }
    }

    /// A buffer of many blocks split into ranges of whole blocks, each decompressed on its
    /// own, gives what a whole decompression gives; ranges that do not fit are refused, a
    /// block damaged inside is refused, and a buffer of one block is not split.
    #[test]
    fn ranges_of_a_split_buffer_decompress_to_the_whole() {
        let data: Vec<u8> = (0..1_000_000u32)
            .flat_map(|i| (i / 5).to_le_bytes())
            .collect();
        for (name, shuffle) in [("lz4", 1), ("blosclz", 2), ("zstd", 0)] {
            let c = compress(&data, 5, shuffle, 4, name, 64 << 10).unwrap();
            for parts in [2, 3, 7, 1000] {
                let ranges = split(&c, parts).unwrap();
                assert!(ranges.len() <= parts && ranges.len() >= 2, "{name} {parts}");
                assert_eq!(ranges[0].start, 0);
                assert_eq!(ranges.last().unwrap().end, data.len());
                let mut out = vec![0xEEu8; data.len()];
                for r in &ranges {
                    assert_eq!(r.start % (64 << 10), 0, "{name}: whole blocks");
                    let ok = decompress_range(&c, r.clone(), &mut out[r.clone()]).unwrap();
                    assert!(ok, "{name} {r:?}");
                }
                assert!(out == data, "{name} in {parts} parts");
            }
            assert!(split(&c, 1).is_none());
            let mut small = vec![0u8; 10];
            assert_eq!(decompress_range(&c, 0..11, &mut small), Ok(false));
            assert_eq!(decompress_range(&c, 1..11, &mut small), Ok(false));
            let mut past = vec![0u8; 8];
            assert_eq!(
                decompress_range(&c, data.len() - 4..data.len() + 4, &mut past),
                Ok(false)
            );
        }
        let one = compress(&data[..1000], 5, 1, 4, "lz4", 0).unwrap();
        assert!(split(&one, 4).is_none(), "one block");
        // A block damaged inside (the header and block starts intact) is refused by the
        // range that holds it.
        let c = compress(&data, 5, 1, 4, "lz4", 64 << 10).unwrap();
        let mut damaged = c.clone();
        let at = c.len() - 200;
        for b in &mut damaged[at..at + 64] {
            *b = 0xFF;
        }
        let last = split(&damaged, 8).unwrap().pop().unwrap();
        let mut out = vec![0u8; last.len()];
        assert_ne!(decompress_range(&damaged, last, &mut out), Ok(true));
    }

    /// A reused destination (longer, shorter or full of other bytes) ends up holding exactly
    /// what a fresh compression gives; a failure leaves it empty, not stale.
    #[test]
    fn compressing_into_a_reused_buffer_gives_the_fresh_result() {
        let data: Vec<u8> = (0..50_000u32).flat_map(|i| (i / 3).to_le_bytes()).collect();
        let fresh = compress(&data, 5, 1, 4, "lz4", 0).unwrap();
        for held in [vec![], vec![0xEE; 7], vec![0xEE; data.len() * 2]] {
            let mut dst = held;
            compress_into(&data, 5, 1, 4, "lz4", 0, &mut dst).unwrap();
            assert_eq!(dst, fresh);
        }
        let mut dst = vec![0xEE; 100];
        assert!(compress_into(&data, 5, 1, 4, "no-such", 0, &mut dst).is_err());
        assert!(dst.is_empty());
    }

    /// A buffer whose header was tampered with (flags, typesize) either fails or writes every
    /// byte it declares: what the destination held before never shows through.
    #[test]
    fn tampered_headers_never_leave_bytes_unwritten() {
        let data: Vec<u8> = (0..20_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut decoded = 0;
        for blocksize in [0, 999, 4097] {
            let base = compress(&data, 5, 0, 1, "lz4", blocksize).unwrap();
            for flags in 0..=u8::MAX {
                for typesize in [1u8, 2, 3, 4, 8, 255] {
                    let mut c = base.clone();
                    c[2] = flags;
                    c[3] = typesize;
                    let Ok(n) = declared_size(&c) else { continue };
                    let mut a = vec![0xAA; n];
                    let mut b = vec![0x55; n];
                    if decompress_into(&c, &mut a).is_ok() && decompress_into(&c, &mut b).is_ok() {
                        assert!(a == b, "flags {flags:#x} typesize {typesize}");
                        decoded += 1;
                    }
                }
            }
        }
        // Shuffles of every kind over sizes that do not divide the blocks were decoded.
        assert!(decoded > 50, "{decoded}");
    }

    /// Only the blocks holding the wanted bytes are written, and they hold what a whole
    /// decompression gives; whatever cannot save work (or cannot be done) declines.
    #[test]
    fn decompressing_parts_writes_the_wanted_blocks_only() {
        let data: Vec<u8> = (0..300_000u32)
            .flat_map(|i| (i / 5).to_le_bytes())
            .collect();
        for (name, _) in COMPRESSORS {
            for shuffle in 0..=2 {
                let c = compress(&data, 5, shuffle, 4, name, 65_536).unwrap();
                let blocksize = u32::from_le_bytes([c[8], c[9], c[10], c[11]]) as usize;
                assert!(data.len() / blocksize >= 4, "{name}: {blocksize}");
                let tail = data.len() - 8..data.len();
                let wanted = [0..4, blocksize * 2 + 8..blocksize * 2 + 20, tail.clone()];
                let mut dst = vec![0xA5u8; data.len()];
                assert!(decompress_parts(&c, &mut dst, &wanted).unwrap(), "{name}");
                for r in &wanted {
                    assert_eq!(dst[r.clone()], data[r.clone()], "{name} {shuffle} {r:?}");
                }
                let untouched = blocksize..blocksize * 2;
                assert!(
                    dst[untouched].iter().all(|&b| b == 0xA5),
                    "{name} {shuffle}"
                );
                let mut empty = vec![0xA5u8; data.len()];
                assert!(decompress_parts(&c, &mut empty, &[]).unwrap());
                assert!(empty.iter().all(|&b| b == 0xA5));
                let every_block: Vec<Range<usize>> = (0..data.len())
                    .step_by(blocksize)
                    .map(|s| s..s + 1)
                    .collect();
                assert!(!decompress_parts(&c, &mut dst, &every_block).unwrap());
                assert!(!decompress_parts(&c, &mut dst, &[0..data.len() + 1]).unwrap());
                assert!(!decompress_parts(&c, &mut dst[..data.len() - 4], &[0..4]).unwrap());
                let mut reserved = c.clone();
                reserved[2] |= 0x08;
                assert!(!decompress_parts(&reserved, &mut dst, &[0..4]).unwrap());
                assert!(decompress_parts(&c[..c.len() - 1], &mut dst, &[0..4]).is_err());
            }
        }
        // Level 0 stores the bytes as they are (the "memcpyed" flag): read from their place.
        let stored = compress(&data, 0, 0, 4, "lz4", 65_536).unwrap();
        assert_eq!(stored.len(), data.len() + MAX_OVERHEAD);
        let mut dst = vec![0u8; data.len()];
        assert!(decompress_parts(&stored, &mut dst, &[200_000..200_016]).unwrap());
        assert_eq!(dst[200_000..200_016], data[200_000..200_016]);
    }

    /// The parts `parts_needed` lists are all `decompress_parts` reads: with every other byte
    /// of the buffer overwritten, the wanted bytes still come out right.
    #[test]
    fn the_parts_needed_are_enough_to_decompress_the_wanted_bytes() {
        let data: Vec<u8> = (0..1_000_000u32)
            .flat_map(|i| (i / 5).to_le_bytes())
            .collect();
        let len = data.len();
        let wanted = [8..12, 2_100_000..2_100_040, len - 4..len];
        for (name, level) in [("lz4", 5), ("zstd", 3), ("blosclz", 9), ("lz4", 0)] {
            let c = compress(&data, level, 1, 4, name, 65_536).unwrap();
            let mut head_len = 0;
            let ranges = loop {
                match parts_needed(&c[..head_len], c.len(), len, &wanted) {
                    Needed::Head(n) => {
                        assert!(n > head_len && n <= c.len(), "{name}: {n}");
                        head_len = n;
                    }
                    Needed::Ranges(r) => break r,
                    Needed::Whole => panic!("{name}: whole; header {:?}", &c[..16.min(head_len)]),
                }
            };
            assert_eq!(ranges[0].start, 0, "{name}");
            assert!(ranges.windows(2).all(|w| w[0].end < w[1].start), "{name}");
            let read: usize = ranges.iter().map(|r| r.len()).sum();
            assert!(read < c.len() / 2, "{name}: {read} of {}", c.len());
            let mut sparse = vec![0xEEu8; c.len()];
            for r in &ranges {
                sparse[r.clone()].copy_from_slice(&c[r.clone()]);
            }
            let mut dst = vec![0u8; len];
            assert!(
                decompress_parts(&sparse, &mut dst, &wanted).unwrap(),
                "{name}"
            );
            for r in &wanted {
                assert_eq!(dst[r.clone()], data[r.clone()], "{name} {r:?}");
            }
            // A header claiming 4 GiB in blocks of one byte is refused before anything is
            // sized from it.
            let mut huge = c[..HEADER_LEN].to_vec();
            huge[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
            huge[8..12].copy_from_slice(&1u32.to_le_bytes());
            assert_eq!(parts_needed(&huge, c.len(), len, &wanted), Needed::Whole);
            // Sizes that do not match, or wanting most of the buffer: read it whole.
            let head = &c[..head_len];
            assert_eq!(parts_needed(head, c.len() + 1, len, &wanted), Needed::Whole);
            assert_eq!(parts_needed(head, c.len(), len + 4, &wanted), Needed::Whole);
            assert_eq!(
                parts_needed(head, c.len(), len, &[0..len - 8]),
                Needed::Whole
            );
            assert_eq!(
                parts_needed(head, c.len(), len, &[0..len + 1]),
                Needed::Whole
            );
        }
    }

    #[test]
    fn limits_and_corruption() {
        let data = vec![7u8; 4096];
        let c = compress(&data, 5, 1, 1, "lz4", 0).unwrap();
        assert_eq!(
            decompress(&c, 100),
            Err(BloscError::ExceedsLimit {
                declared: 4096,
                limit: 100
            })
        );
        assert!(decompress(&c[..10], 4096).is_err());
        assert!(decompress(&c[..c.len() - 1], 4096).is_err());
        assert_eq!(
            compress(&data, 5, 1, 1, "snappy", 0),
            Err(BloscError::UnknownCompressor("snappy".into()))
        );
        assert!(version().starts_with("1."));
    }
}
