//! Copying the elements of one [`ChunkPiece`] between a decoded chunk and user memory.
//!
//! The chunk buffer is always the full chunk in C order. User memory is described by one
//! element stride per dimension of the request: C order over `count` for `nc_get_vara`
//! ([`c_order_strides`]), netCDF's `imap` for `nc_get_varm`. Every call checks all offsets it
//! will touch before copying, then runs a loop over contiguous runs: dimensions that are
//! contiguous on both sides are merged, so a run is as long as both layouts allow and is copied
//! with one `copy_from_slice`; only a side that is really strided falls back to an element loop.

use std::ops::Range;

use super::projection::{ChunkPiece, Span};
use crate::error::{Error, Result};

/// One loop level of a copy, in bytes; `i` is the odometer position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Axis {
    pub(super) count: usize,
    pub(super) src: isize,
    pub(super) dst: isize,
    i: usize,
}

/// A checked copy: starting byte offsets and the merged loop levels, innermost last.
#[derive(Debug)]
pub(super) struct Plan {
    pub(super) src: usize,
    pub(super) dst: usize,
    pub(super) axes: Vec<Axis>,
}

/// Which buffer is the source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dir {
    ChunkToMemory,
    MemoryToChunk,
}

fn invalid(why: String) -> Error {
    Error::Invalid(why)
}

/// Validates a piece against both buffers and builds its copy plan; `None` when it is empty.
fn plan(
    dir: Dir,
    chunk_len: usize,
    chunk_shape: &[u64],
    mem_len: usize,
    mem_strides: &[i64],
    piece: &ChunkPiece,
    esize: usize,
) -> Result<Option<Plan>> {
    let rank = chunk_shape.len();
    let (cr, rr) = (&piece.chunk_region.spans, &piece.request_region.spans);
    if mem_strides.len() != rank || cr.len() != rank || rr.len() != rank {
        return Err(invalid(format!(
            "rank mismatch: chunk shape {rank}, memory strides {}, piece {}/{}",
            mem_strides.len(),
            cr.len(),
            rr.len()
        )));
    }
    if esize == 0 {
        return Err(invalid("element size 0".into()));
    }
    let elems = chunk_shape
        .iter()
        .try_fold(1u128, |n, &c| n.checked_mul(u128::from(c)))
        .and_then(|n| n.checked_mul(esize as u128));
    if elems != Some(chunk_len as u128) {
        return Err(invalid(format!(
            "chunk buffer has {chunk_len} bytes, chunk shape {chunk_shape:?} of {esize}-byte \
             elements needs another size"
        )));
    }
    // Pass 1, in elements: every dimension against the chunk, then the memory extremes.
    let mut empty = false;
    let mut chunk_stride = chunk_len as u128 / esize as u128;
    let mut chunk_base = 0u128;
    for d in 0..rank {
        let (c, s, r) = (chunk_shape[d], cr[d], rr[d]);
        if c == 0 {
            return Err(invalid(format!("chunk length 0 in dimension {d}")));
        }
        chunk_stride /= u128::from(c);
        if s.count != r.count {
            return Err(invalid(format!("piece counts differ in dimension {d}")));
        }
        if s.count == 0 {
            empty = true;
            continue;
        }
        let last = u128::from(s.start) + u128::from(s.count - 1) * u128::from(s.step);
        if last >= u128::from(c) {
            return Err(invalid(format!(
                "piece leaves the chunk in dimension {d}: last element {last}, chunk length {c}"
            )));
        }
        chunk_base += u128::from(s.start) * chunk_stride;
    }
    if empty {
        return Ok(None);
    }
    let mem_base = mem_bounds(rr, mem_strides)
        .filter(|&(_, lo, hi)| {
            lo >= 0
                && (hi + 1)
                    .checked_mul(esize as i128)
                    .is_some_and(|end| end <= mem_len as i128)
        })
        .map(|(base, _, _)| base)
        .ok_or_else(|| {
            invalid(format!(
                "memory strides {mem_strides:?} for request region {rr:?} reach outside a \
                 buffer of {mem_len} bytes ({esize}-byte elements)"
            ))
        })?;
    // Pass 2: every value below is bounded by a buffer length, so the conversions are exact.
    let e = esize as isize;
    let mut axes: Vec<Axis> = Vec::with_capacity(rank.max(1));
    let mut chunk_stride = chunk_len as isize / e;
    for d in 0..rank {
        chunk_stride /= chunk_shape[d] as isize;
        let (s, r) = (cr[d], rr[d]);
        if s.count == 1 {
            continue;
        }
        let chunk_step = s.step as isize * chunk_stride * e;
        let mem_step = r.step as isize * mem_strides[d] as isize * e;
        let (src, dst) = match dir {
            Dir::ChunkToMemory => (chunk_step, mem_step),
            Dir::MemoryToChunk => (mem_step, chunk_step),
        };
        let axis = Axis {
            count: s.count as usize,
            src,
            dst,
            i: 0,
        };
        match axes.last_mut() {
            Some(outer)
                if (axis.count as isize).checked_mul(src) == Some(outer.src)
                    && (axis.count as isize).checked_mul(dst) == Some(outer.dst) =>
            {
                outer.count *= axis.count;
                outer.src = src;
                outer.dst = dst;
            }
            _ => axes.push(axis),
        }
    }
    if axes.is_empty() {
        axes.push(Axis {
            count: 1,
            src: e,
            dst: e,
            i: 0,
        });
    }
    let (chunk_off, mem_off) = (chunk_base as usize * esize, mem_base as usize * esize);
    let (src, dst) = match dir {
        Dir::ChunkToMemory => (chunk_off, mem_off),
        Dir::MemoryToChunk => (mem_off, chunk_off),
    };
    Ok(Some(Plan { src, dst, axes }))
}

/// The memory element offsets of a non-empty request region: of its first element, and the
/// lowest and highest it reaches. `None` on arithmetic overflow.
fn mem_bounds(rr: &[Span], mem_strides: &[i64]) -> Option<(i128, i128, i128)> {
    let (mut base, mut lo, mut hi) = (0i128, 0i128, 0i128);
    for (r, &m) in rr.iter().zip(mem_strides) {
        let m = i128::from(m);
        base = base.checked_add(i128::from(r.start).checked_mul(m)?)?;
        let extent = i128::from(r.count - 1)
            .checked_mul(i128::from(r.step))?
            .checked_mul(m)?;
        if extent > 0 {
            hi = hi.checked_add(extent)?;
        } else {
            lo = lo.checked_add(extent)?;
        }
    }
    Some((base, base.checked_add(lo)?, base.checked_add(hi)?))
}

/// Runs a checked plan: the outer levels as an odometer, the innermost as one run.
fn run(plan: &mut Plan, dst: &mut [u8], src: &[u8], esize: usize) {
    let Some((inner, outer)) = plan.axes.split_last_mut() else {
        return;
    };
    let inner = *inner;
    let (mut d, mut s) = (plan.dst as isize, plan.src as isize);
    loop {
        copy_run(dst, d, src, s, inner, esize);
        let mut level = outer.len();
        loop {
            if level == 0 {
                return;
            }
            level -= 1;
            let a = &mut outer[level];
            if a.i + 1 < a.count {
                a.i += 1;
                d += a.dst;
                s += a.src;
                break;
            }
            d -= a.dst * a.i as isize;
            s -= a.src * a.i as isize;
            a.i = 0;
        }
    }
}

/// Copies `count` elements of `esize` bytes from `src` (first at byte `s`, then every `s_step`
/// bytes) to `dst` (first at `d`, then every `d_step`). The caller has checked that every
/// offset lies inside its buffer.
pub(crate) fn copy_elements(
    dst: &mut [u8],
    (d, d_step): (usize, isize),
    src: &[u8],
    (s, s_step): (usize, isize),
    count: usize,
    esize: usize,
) {
    let inner = Axis {
        count,
        src: s_step,
        dst: d_step,
        i: 0,
    };
    copy_run(dst, d as isize, src, s as isize, inner, esize);
}

/// Copies the `inner.count` elements of one run.
fn copy_run(dst: &mut [u8], d: isize, src: &[u8], s: isize, inner: Axis, esize: usize) {
    let e = esize as isize;
    if inner.src == e && inner.dst == e {
        let (d, s, n) = (d as usize, s as usize, inner.count * esize);
        dst[d..d + n].copy_from_slice(&src[s..s + n]);
        return;
    }
    match esize {
        1 => strided::<1>(dst, d, src, s, inner),
        2 => strided::<2>(dst, d, src, s, inner),
        4 => strided::<4>(dst, d, src, s, inner),
        8 => strided::<8>(dst, d, src, s, inner),
        16 => strided::<16>(dst, d, src, s, inner),
        _ => {
            let (mut d, mut s) = (d, s);
            for _ in 0..inner.count {
                let (du, su) = (d as usize, s as usize);
                dst[du..du + esize].copy_from_slice(&src[su..su + esize]);
                d = d.wrapping_add(inner.dst);
                s = s.wrapping_add(inner.src);
            }
        }
    }
}

/// Element loop for a fixed element size, so each copy is a single move. Gathering into a
/// contiguous destination (a strided read) walks both sides as slices, without an offset check
/// per element.
fn strided<const N: usize>(dst: &mut [u8], mut d: isize, src: &[u8], mut s: isize, inner: Axis) {
    if inner.dst == N as isize && inner.src >= N as isize && inner.count > 0 {
        let (d, s, step) = (d as usize, s as usize, inner.src as usize);
        let dst = &mut dst[d..d + inner.count * N];
        let src = &src[s..s + (inner.count - 1) * step + N];
        for (to, from) in dst.chunks_exact_mut(N).zip(src.chunks(step)) {
            to.copy_from_slice(&from[..N]);
        }
        return;
    }
    for _ in 0..inner.count {
        let (du, su) = (d as usize, s as usize);
        dst[du..du + N].copy_from_slice(&src[su..su + N]);
        d = d.wrapping_add(inner.dst);
        s = s.wrapping_add(inner.src);
    }
}

/// Copies the elements of `piece` from the full chunk `chunk` (C order over `chunk_shape`,
/// `esize`-byte elements) into user memory `mem`, where request index `i` lives at element
/// offset `sum(i[d] * mem_strides[d])`.
///
/// A stride may be any value as long as every offset touched lies in `mem` (0 repeats one
/// element; a negative stride can only work along a dimension of count 1, since offsets are
/// counted from the start of `mem`). All offsets on both sides are checked before anything is
/// copied, and a violation is `Error::Invalid` with nothing written.
pub fn read_piece(
    chunk: &[u8],
    chunk_shape: &[u64],
    mem: &mut [u8],
    mem_strides: &[i64],
    piece: &ChunkPiece,
    esize: usize,
) -> Result<()> {
    let dir = Dir::ChunkToMemory;
    if let Some(mut p) = plan(
        dir,
        chunk.len(),
        chunk_shape,
        mem.len(),
        mem_strides,
        piece,
        esize,
    )? {
        run(&mut p, mem, chunk, esize);
    }
    Ok(())
}

/// Copies the elements of `piece` from user memory `mem` into the full chunk `chunk`; the
/// reverse of [`read_piece`], with the same layout rules and checks.
pub fn write_piece(
    chunk: &mut [u8],
    chunk_shape: &[u64],
    mem: &[u8],
    mem_strides: &[i64],
    piece: &ChunkPiece,
    esize: usize,
) -> Result<()> {
    let dir = Dir::MemoryToChunk;
    if let Some(mut p) = plan(
        dir,
        chunk.len(),
        chunk_shape,
        mem.len(),
        mem_strides,
        piece,
        esize,
    )? {
        run(&mut p, chunk, mem, esize);
    }
    Ok(())
}

/// When `piece` covers its whole chunk and lands in `mem` as one contiguous run in C order, the
/// byte range of `mem` that holds exactly the chunk's bytes: the caller can then decode the
/// chunk straight into `&mut mem[range]`. `None` when a copy is needed; errors as
/// [`read_piece`].
pub fn whole_chunk_range(
    chunk_shape: &[u64],
    mem_len: usize,
    mem_strides: &[i64],
    piece: &ChunkPiece,
    esize: usize,
) -> Result<Option<Range<usize>>> {
    if !super::projection::is_whole_chunk(piece, chunk_shape) {
        return Ok(None);
    }
    let chunk_len = chunk_len(chunk_shape, esize)?;
    let Some(p) = read_plan(chunk_shape, mem_len, mem_strides, piece, esize)? else {
        return Ok(None);
    };
    let contiguous = match p.axes.as_slice() {
        [a] => a.src == esize as isize && a.dst == esize as isize,
        _ => false,
    };
    Ok(contiguous.then(|| p.dst..p.dst + chunk_len))
}

/// The checked plan for reading `piece` from a full chunk of `chunk_shape` into memory.
pub(super) fn read_plan(
    chunk_shape: &[u64],
    mem_len: usize,
    mem_strides: &[i64],
    piece: &ChunkPiece,
    esize: usize,
) -> Result<Option<Plan>> {
    plan(
        Dir::ChunkToMemory,
        chunk_len(chunk_shape, esize)?,
        chunk_shape,
        mem_len,
        mem_strides,
        piece,
        esize,
    )
}

/// Bytes of a full chunk of `chunk_shape` with `esize`-byte elements.
pub(super) fn chunk_len(chunk_shape: &[u64], esize: usize) -> Result<usize> {
    chunk_shape
        .iter()
        .try_fold(esize, |n, &c| {
            usize::try_from(c).ok().and_then(|c| n.checked_mul(c))
        })
        .ok_or_else(|| Error::TooLarge(format!("chunk shape {chunk_shape:?}")))
}

/// Element strides of a C-order buffer over `count` (the `nc_get_vara` memory layout).
pub fn c_order_strides(count: &[u64]) -> Result<Vec<i64>> {
    let mut strides = vec![1i64; count.len()];
    let mut n = 1i64;
    for (s, &c) in strides.iter_mut().zip(count).rev() {
        *s = n;
        n = i64::try_from(c)
            .ok()
            .and_then(|c| n.checked_mul(c))
            .ok_or_else(|| Error::TooLarge(format!("request count {count:?}")))?;
    }
    Ok(strides)
}

/// Fills `buf` with repeated copies of the element `fill`; the last copy is cut short when
/// `buf.len()` is not a multiple of `fill.len()`. An empty `fill` leaves `buf` unchanged.
pub fn fill_pattern(buf: &mut [u8], fill: &[u8]) {
    let Some(&first) = fill.first() else {
        return;
    };
    if fill.iter().all(|&b| b == first) {
        buf.fill(first);
        return;
    }
    let head = fill.len().min(buf.len());
    buf[..head].copy_from_slice(&fill[..head]);
    let mut done = head;
    while done < buf.len() {
        let n = done.min(buf.len() - done);
        buf.copy_within(..n, done);
        done += n;
    }
}

#[cfg(test)]
mod tests;
