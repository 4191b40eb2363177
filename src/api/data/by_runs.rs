//! Reading uncompressed chunks in parts: only the bytes a request needs, run by run straight
//! from the store into the caller's buffer (no chunk buffer, no second copy), or row span by
//! row span for strided requests on local stores.
//!
//! Owns the choice of which pieces go this way; the run arithmetic is `chunk::runs`, the
//! splitting of the caller's buffer `split`, the reading the store's `get_runs_many` (in place
//! on local stores, one ranged request per chunk on remote ones). It must not know how a store
//! reads.

use super::split::{PIECES_PER_BATCH, Target, in_batches, slice_disjoint};
use super::{Geometry, finish_error};
use crate::api::convert;
use crate::chunk::copy::{copy_elements, fill_pattern};
use crate::chunk::projection::ChunkPiece;
use crate::chunk::runs::{self, Rows, RunShape};
use crate::error::{Error, Result};
use crate::zmap::{Store, StoreKey};
use rayon::prelude::*;

/// Runs at least this long are worth a read of their own.
const MIN_RUN_BYTES: usize = 256;
/// A piece of this many runs or fewer is read run by run whatever their length (a time
/// series touches one element per chunk).
const FEW_RUNS: usize = 16;
/// On a remote store, a piece whose span is this much smaller than its chunk is read in part.
const SPAN_FRACTION: usize = 4;
/// Scratch bytes for row spans read together (reused batch after batch).
const SCRATCH_BYTES: usize = 8 << 20;

/// How a piece of an uncompressed chunk is best read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Route {
    /// Run by run, straight into the caller's buffer.
    Runs,
    /// Row spans into a scratch buffer, then the strided elements out of it: the rows the
    /// request skips (every 4th row, say) are never read.
    Rows,
    /// The whole chunk, then a copy.
    Whole,
}

/// How `piece` is best read (see [`Route`]) from a local store, where every read costs what
/// its bytes cost, or from a remote one, where every read is a round trip: there a piece is
/// read in parts (one ranged request for the span of its runs) only when that span is a small
/// part of the chunk.
pub(super) fn route(
    geo: &Geometry,
    out_len: usize,
    strides: &[i64],
    piece: &ChunkPiece,
    local: bool,
) -> Result<Route> {
    let Some(shape) = runs::run_shape(&geo.chunks, out_len, strides, piece, geo.esize)? else {
        return Ok(Route::Whole);
    };
    let RunShape {
        runs,
        run_len,
        rows,
        row_span,
        span,
    } = shape;
    if !local {
        return Ok(if span.saturating_mul(SPAN_FRACTION) <= geo.chunk_bytes {
            Route::Runs
        } else {
            Route::Whole
        });
    }
    if runs <= FEW_RUNS || run_len >= MIN_RUN_BYTES {
        return Ok(Route::Runs);
    }
    let row_bytes = rows.saturating_mul(row_span);
    if row_bytes.saturating_mul(2) <= geo.chunk_bytes
        && (rows <= FEW_RUNS || row_span >= MIN_RUN_BYTES)
    {
        return Ok(Route::Rows);
    }
    Ok(Route::Whole)
}

/// Checks the length a store reported for an uncompressed chunk and makes the bytes read
/// native: `None` (absent) is `Ok(false)`, and the caller fills.
fn finish(
    geo: &Geometry,
    key: &StoreKey,
    len: Option<u64>,
    parts: &mut [(u64, &mut [u8])],
) -> Result<bool> {
    match len {
        None => Ok(false),
        Some(n) if n != geo.chunk_bytes as u64 => Err(finish_error(geo, key, n)),
        Some(_) => {
            if geo.swap {
                parts
                    .iter_mut()
                    .for_each(|(_, o)| convert::swap_bytes_in_place(o, geo.esize));
            }
            Ok(true)
        }
    }
}

/// Reads the `wanted` pieces run by run into `out`, in parallel across chunks. Returns the
/// pieces it left for the caller to copy: those whose runs overlap in `out` (an `imap` that
/// maps several elements to one place), which cannot be split into disjoint buffers.
pub(super) fn read(
    store: &dyn Store,
    target: Target<'_, '_>,
    wanted: &[usize],
) -> Result<Vec<usize>> {
    let (geo, pieces) = (target.geo, target.pieces);
    in_batches(target, wanted, PIECES_PER_BATCH, |batch, mut per_piece| {
        let keys: Vec<StoreKey> = batch
            .iter()
            .map(|&i| geo.key(&pieces[i].chunk))
            .collect::<Result<_>>()?;
        let lens = store.get_runs_many(&keys, &mut per_piece)?;
        per_piece
            .par_iter_mut()
            .zip(lens)
            .zip(&keys)
            .try_for_each(|((runs, len), key)| {
                if !finish(geo, key, len, runs)? {
                    runs.iter_mut()
                        .for_each(|(_, o)| fill_pattern(o, &geo.fill));
                }
                Ok(())
            })
    })
}

/// Reads the `wanted` pieces row span by row span and copies their elements into `out`: the
/// reads run in parallel across chunks into bounded scratch, the copies (a fraction of the
/// bytes read) one piece after another.
pub(super) fn read_rows(store: &dyn Store, target: Target<'_, '_>, wanted: &[usize]) -> Result<()> {
    let Target {
        geo,
        pieces,
        out,
        strides,
    } = target;
    let mut plans: Vec<(usize, Rows)> = Vec::with_capacity(wanted.len());
    for &i in wanted {
        if let Some(r) = runs::rows(&geo.chunks, out.len(), strides, &pieces[i], geo.esize)? {
            plans.push((i, r));
        }
    }
    let need = |rows: &Rows| rows.starts.len() * rows.span;
    // One scratch buffer for every batch: its pages are faulted in and zeroed once, not per
    // piece.
    let largest = plans.iter().map(|(_, r)| need(r)).max().unwrap_or(0);
    let total: usize = plans.iter().map(|(_, r)| need(r)).sum();
    let mut scratch = vec![0u8; total.min(SCRATCH_BYTES).max(largest)];
    let mut rest = plans.as_slice();
    while !rest.is_empty() {
        // At least one piece, and more while they fit in the scratch buffer.
        let mut n = 0;
        let mut bytes = 0usize;
        while n < rest.len() && (n == 0 || bytes + need(&rest[n].1) <= scratch.len()) {
            bytes += need(&rest[n].1);
            n += 1;
        }
        let (batch, tail) = rest.split_at(n);
        rest = tail;
        let mut bufs: Vec<&mut [u8]> = Vec::with_capacity(n);
        let mut free = &mut scratch[..];
        for (_, rows) in batch {
            let (buf, after) = std::mem::take(&mut free).split_at_mut(need(rows));
            bufs.push(buf);
            free = after;
        }
        let present: Vec<bool> = batch
            .par_iter()
            .zip(bufs.par_iter_mut())
            .map(|((i, rows), buf)| {
                let mut parts: Vec<(u64, &mut [u8])> = rows
                    .starts
                    .iter()
                    .zip(buf.chunks_exact_mut(rows.span))
                    .map(|(&(c, _), b)| (c as u64, b))
                    .collect();
                let key = geo.key(&pieces[*i].chunk)?;
                let len = store.get_runs_into(&key, &mut parts)?;
                finish(geo, &key, len, &mut parts)
            })
            .collect::<Result<_>>()?;
        land_rows(geo, batch, &bufs, &present, out)?;
    }
    Ok(())
}

/// Copies the elements of the batch's pieces out of their row spans (`bufs`; the fill value
/// for pieces not `present`) into `out`: in parallel across pieces when every row lands in a
/// part of `out` of its own, one row after another otherwise (an `imap` that interleaves rows).
fn land_rows(
    geo: &Geometry,
    batch: &[(usize, Rows)],
    bufs: &[&mut [u8]],
    present: &[bool],
    out: &mut [u8],
) -> Result<()> {
    let mut extents: Vec<(runs::Run, usize)> = Vec::new();
    for (slot, (_, rows)) in batch.iter().enumerate() {
        for (r, &(_, mem)) in rows.starts.iter().enumerate() {
            let (start, len) = row_extent(rows, mem, geo.esize, out.len())?;
            let run = runs::Run {
                chunk: r,
                mem: start,
                len,
            };
            extents.push((run, slot));
        }
    }
    let spans = |slot: usize| present[slot].then_some(&bufs[slot][..]);
    match slice_disjoint(out, &mut extents, batch.len()) {
        Some(per_piece) => per_piece
            .into_par_iter()
            .enumerate()
            .for_each(|(slot, dests)| {
                let rows = &batch[slot].1;
                for (r, dest) in dests {
                    pick_row(
                        geo,
                        rows,
                        r as usize,
                        spans(slot),
                        dest,
                        backward_reach(rows),
                    );
                }
            }),
        None => {
            for (slot, (_, rows)) in batch.iter().enumerate() {
                for (r, &(_, mem)) in rows.starts.iter().enumerate() {
                    pick_row(geo, rows, r, spans(slot), out, mem);
                }
            }
        }
    }
    Ok(())
}

/// How far below its first element a row of `rows` reaches in the caller's buffer: nothing
/// when it runs forwards, the span of its elements when it runs backwards.
fn backward_reach(rows: &Rows) -> usize {
    if rows.mem_step < 0 {
        rows.count
            .saturating_sub(1)
            .saturating_mul(rows.mem_step.unsigned_abs())
    } else {
        0
    }
}

/// The part of a buffer of `out_len` bytes that the row starting at `mem` covers, as its first
/// byte and length; an error when any of its elements lies outside.
fn row_extent(rows: &Rows, mem: usize, e: usize, out_len: usize) -> Result<(usize, usize)> {
    let outside = || Error::Invalid("row outside the output buffer".into());
    let reach = (rows.count.saturating_sub(1) as isize)
        .checked_mul(rows.mem_step)
        .ok_or_else(outside)?;
    let (lo, hi) = if reach < 0 {
        (
            mem.checked_sub(reach.unsigned_abs()).ok_or_else(outside)?,
            mem,
        )
    } else {
        (mem, mem.checked_add(reach as usize).ok_or_else(outside)?)
    };
    let end = hi
        .checked_add(e)
        .filter(|&end| end <= out_len)
        .ok_or_else(outside)?;
    Ok((lo, end - lo))
}

/// Copies the elements of row `r` of `rows` from its span in `spans` (the fill value when the
/// chunk is absent) into `dest`, the first at byte `first`.
fn pick_row(
    geo: &Geometry,
    rows: &Rows,
    r: usize,
    spans: Option<&[u8]>,
    dest: &mut [u8],
    first: usize,
) {
    // An absent chunk gives the fill value: one element, read again for every place.
    let (src, from) = match spans {
        Some(s) => (s, (r * rows.span, rows.chunk_step as isize)),
        None => (&geo.fill[..geo.esize], (0, 0)),
    };
    copy_elements(
        dest,
        (first, rows.mem_step),
        src,
        from,
        rows.count,
        geo.esize,
    );
}
