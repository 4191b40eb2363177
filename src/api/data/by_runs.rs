//! Reading uncompressed chunks in parts: only the bytes a request needs, run by run straight
//! from the store into the caller's buffer (no chunk buffer, no second copy), or row span by
//! row span for strided requests on local stores.
//!
//! Owns the choice of which pieces go this way; the run arithmetic is `chunk::runs`, the
//! splitting of the caller's buffer `split`, the reading the store's `get_runs_many` (in place
//! on local stores, ranged requests on remote ones). It must not know how a store
//! reads.

use super::rows;
use super::split::{PIECES_PER_BATCH, Target, in_batches};
use super::{Geometry, finish_error};
use crate::api::convert;
use crate::chunk::copy::fill_pattern;
use crate::chunk::projection::ChunkPiece;
use crate::chunk::runs::{self, Rows, RunShape};
use crate::error::Result;
use crate::zmap::{Store, StoreKey, merged_spans};
use rayon::prelude::*;

/// Runs at least this long are worth a read of their own.
const MIN_RUN_BYTES: usize = 256;
/// A piece of this many runs or fewer is read run by run whatever their length (a time
/// series touches one element per chunk).
const FEW_RUNS: usize = 16;
/// On a remote store, a piece whose ranged requests fetch this much less than its chunk is
/// read in part.
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
/// read in parts (ranged requests for its runs, near ones sharing one) only when they fetch a
/// small part of the chunk.
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
        let fetched = remote_fetched_bytes(geo, out_len, strides, piece, runs, span)?;
        return Ok(
            if fetched.saturating_mul(SPAN_FRACTION) <= geo.chunk_bytes {
                Route::Runs
            } else {
                Route::Whole
            },
        );
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

/// Most runs of one piece whose ranged requests are planned exactly; with more, the span
/// from the first to the last counts as fetched.
const RUNS_PLANNED: usize = 4096;

/// Bytes of a chunk a remote store fetches to read `piece` in parts: its runs, with the gaps
/// short enough for one ranged request to cover ([`merged_spans`]).
fn remote_fetched_bytes(
    geo: &Geometry,
    out_len: usize,
    strides: &[i64],
    piece: &ChunkPiece,
    runs: usize,
    span: usize,
) -> Result<usize> {
    if runs > RUNS_PLANNED {
        return Ok(span);
    }
    let planned = runs::runs(&geo.chunks, out_len, strides, piece, geo.esize)?;
    let wanted = planned
        .iter()
        .map(|r| r.chunk as u64..(r.chunk + r.len) as u64);
    Ok(merged_spans(wanted)
        .iter()
        .map(|s| (s.end - s.start) as usize)
        .sum())
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
/// reads run in parallel across chunks into bounded scratch, then the copies (in parallel
/// across pieces unless their rows interleave in `out`).
pub(super) fn read_rows(store: &dyn Store, target: Target<'_, '_>, wanted: &[usize]) -> Result<()> {
    let Target {
        geo,
        pieces,
        out,
        strides,
    } = target;
    let plans = rows::plans(geo, pieces, wanted, out.len(), strides)?;
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
    // Row `r` of a piece's spans starts at `r * span`.
    let from =
        |slot: usize, r: usize| present[slot].then(|| (&bufs[slot][..], r * batch[slot].1.span));
    match rows::split(batch.iter().map(|(_, r)| r), out, geo.esize)? {
        Some(per_piece) => per_piece
            .into_par_iter()
            .enumerate()
            .for_each(|(slot, dests)| {
                let rows = &batch[slot].1;
                for (r, dest) in dests {
                    let r = r as usize;
                    rows::copy_row(geo, rows, from(slot, r), dest, rows::backward_reach(rows));
                }
            }),
        None => {
            for (slot, (_, rows)) in batch.iter().enumerate() {
                for (r, &(_, mem)) in rows.starts.iter().enumerate() {
                    rows::copy_row(geo, rows, from(slot, r), out, mem);
                }
            }
        }
    }
    Ok(())
}
