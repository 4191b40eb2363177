//! Splitting the caller's buffer into the disjoint runs of several pieces, so that chunks can
//! land in it in parallel.
//!
//! Owns the disjointness check and the slicing; the run arithmetic is `chunk::runs`. It does not
//! read or decode.

use super::Geometry;
use crate::chunk::projection::ChunkPiece;
use crate::chunk::runs;
use crate::error::Result;

/// The runs of one piece: chunk byte offset and the part of the caller's buffer it fills.
pub(super) use crate::zmap::Runs as PieceRuns;

/// The runs of each of `batch`'s pieces as disjoint slices of `out`, each list in chunk order;
/// `None` when runs overlap (an `imap` that maps several elements to one place), and the
/// pieces need copying one after another.
pub(super) fn split<'a>(
    geo: &Geometry,
    pieces: &[ChunkPiece],
    batch: &[usize],
    out: &'a mut [u8],
    strides: &[i64],
) -> Result<Option<Vec<PieceRuns<'a>>>> {
    let mut all: Vec<(runs::Run, usize)> = Vec::new();
    for (slot, &i) in batch.iter().enumerate() {
        let list = runs::runs(&geo.chunks, out.len(), strides, &pieces[i], geo.esize)?;
        all.extend(list.into_iter().map(|r| (r, slot)));
    }
    Ok(
        slice_disjoint(out, &mut all, batch.len()).map(|mut per_piece| {
            for runs in &mut per_piece {
                runs.sort_unstable_by_key(|(offset, _)| *offset);
            }
            per_piece
        }),
    )
}

/// Cuts `out` into the runs `all` lists (each with the slot of the piece it belongs to, of
/// `slots`), and gathers them slot by slot as `(chunk offset, slice)` in memory order; `None`
/// when two runs overlap.
pub(super) fn slice_disjoint<'a>(
    out: &'a mut [u8],
    all: &mut [(runs::Run, usize)],
    slots: usize,
) -> Option<Vec<PieceRuns<'a>>> {
    all.sort_unstable_by_key(|(r, _)| r.mem);
    if all.windows(2).any(|w| w[0].0.mem + w[0].0.len > w[1].0.mem) {
        return None;
    }
    let mut per_piece: Vec<PieceRuns<'a>> = (0..slots).map(|_| Vec::new()).collect();
    let (mut rest, mut consumed) = (out, 0usize);
    for (r, slot) in all.iter() {
        let (_, tail) = std::mem::take(&mut rest).split_at_mut(r.mem - consumed);
        let (mine, tail) = tail.split_at_mut(r.len);
        (rest, consumed) = (tail, r.mem + r.len);
        per_piece[*slot].push((r.chunk as u64, mine));
    }
    Some(per_piece)
}

/// Pieces whose runs are listed and handled together (bounds the memory of the run lists).
pub(super) const PIECES_PER_BATCH: usize = 64;

/// What a batched read works on: the request's pieces, the caller's buffer and its layout.
pub(super) struct Target<'a, 'b> {
    pub(super) geo: &'a Geometry,
    pub(super) pieces: &'a [ChunkPiece],
    pub(super) out: &'b mut [u8],
    pub(super) strides: &'a [i64],
}

impl<'a, 'b> Target<'a, 'b> {
    pub(super) fn new(
        geo: &'a Geometry,
        pieces: &'a [ChunkPiece],
        out: &'b mut [u8],
        strides: &'a [i64],
    ) -> Target<'a, 'b> {
        Target {
            geo,
            pieces,
            out,
            strides,
        }
    }
}

/// Calls `land` with each batch of `wanted` (at most `batch_len` pieces, and at most
/// [`PIECES_PER_BATCH`]) and the batch's runs as disjoint slices of the caller's buffer.
/// Returns the pieces of batches whose runs overlap, for the caller to copy one by one.
pub(super) fn in_batches(
    target: Target<'_, '_>,
    wanted: &[usize],
    batch_len: usize,
    land: impl FnMut(&[usize], Vec<PieceRuns<'_>>) -> Result<()>,
) -> Result<Vec<usize>> {
    let Target {
        geo,
        pieces,
        out,
        strides,
    } = target;
    batches_of(
        out,
        wanted,
        batch_len,
        |batch, out| split(geo, pieces, batch, out, strides),
        land,
    )
}

/// Calls `land` with each batch of `items` (at most `batch_len`, and at most
/// [`PIECES_PER_BATCH`]) and the batch's places in `out` as `cut` slices them (one list per
/// item). Returns the items of batches `cut` could not slice into disjoint places (`None`).
pub(super) fn batches_of<I: Clone>(
    out: &mut [u8],
    items: &[I],
    batch_len: usize,
    mut cut: impl for<'o> FnMut(&[I], &'o mut [u8]) -> Result<Option<Vec<PieceRuns<'o>>>>,
    mut land: impl FnMut(&[I], Vec<PieceRuns<'_>>) -> Result<()>,
) -> Result<Vec<I>> {
    let mut left = Vec::new();
    for batch in items.chunks(batch_len.clamp(1, PIECES_PER_BATCH)) {
        match cut(batch, out)? {
            Some(per_piece) => land(batch, per_piece)?,
            None => left.extend_from_slice(batch),
        }
    }
    Ok(left)
}
