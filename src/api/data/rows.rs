//! Strided pieces row by row: where each row of a piece lands in the caller's buffer (cut into
//! disjoint slices, one set per piece, so that pieces are copied in parallel) and the copy of
//! one row's elements. Used for the row spans read from uncompressed chunks and for whole
//! decoded chunks.
//!
//! Owns only this row geometry; the row plans are `chunk::runs`', reading and decoding the
//! callers'.

use super::Geometry;
use super::split::{PieceRuns, slice_disjoint};
use crate::chunk::copy::copy_elements;
use crate::chunk::projection::ChunkPiece;
use crate::chunk::runs::{self, Rows};
use crate::error::{Error, Result};

/// The row plans of the `wanted` pieces of a request for `out_len` bytes laid out with
/// `strides`, with their indices; an empty piece has no rows and nothing to copy, and is left
/// out.
pub(super) fn plans(
    geo: &Geometry,
    pieces: &[ChunkPiece],
    wanted: &[usize],
    out_len: usize,
    strides: &[i64],
) -> Result<Vec<(usize, Rows)>> {
    let mut plans = Vec::with_capacity(wanted.len());
    for &i in wanted {
        if let Some(r) = runs::rows(&geo.chunks, out_len, strides, &pieces[i], geo.esize)? {
            plans.push((i, r));
        }
    }
    Ok(plans)
}

/// Cuts `out` into the extents of the rows of every piece (`pieces`, in slot order), slot by
/// slot as (row index, slice from the row's lowest byte); `None` when rows overlap (an `imap`
/// that interleaves them), an error when a row reaches outside `out`.
pub(super) fn split<'a, 'r>(
    pieces: impl Iterator<Item = &'r Rows>,
    out: &'a mut [u8],
    esize: usize,
) -> Result<Option<Vec<PieceRuns<'a>>>> {
    let mut extents: Vec<(runs::Run, usize)> = Vec::new();
    let mut slots = 0;
    for (slot, rows) in pieces.enumerate() {
        slots = slot + 1;
        for (r, &(_, mem)) in rows.starts.iter().enumerate() {
            let (start, len) = row_extent(rows, mem, esize, out.len())?;
            let run = runs::Run {
                chunk: r,
                mem: start,
                len,
            };
            extents.push((run, slot));
        }
    }
    Ok(slice_disjoint(out, &mut extents, slots))
}

/// How far below its first element a row of `rows` reaches in the caller's buffer: nothing
/// when it runs forwards, the span of its elements when it runs backwards.
pub(super) fn backward_reach(rows: &Rows) -> usize {
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

/// Copies the elements of one row of `rows` into `dest`, the first at byte `first`, from
/// `from` (a buffer and the byte of the row's first element in it, elements `chunk_step`
/// apart), or the fill value when `None` (an absent chunk).
pub(super) fn copy_row(
    geo: &Geometry,
    rows: &Rows,
    from: Option<(&[u8], usize)>,
    dest: &mut [u8],
    first: usize,
) {
    // An absent chunk gives the fill value: one element, read again for every place.
    let (src, at) = match from {
        Some((s, at)) => (s, (at, rows.chunk_step as isize)),
        None => (&geo.fill[..geo.esize], (0, 0)),
    };
    copy_elements(dest, (first, rows.mem_step), src, at, rows.count, geo.esize);
}
