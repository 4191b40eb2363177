//! Reading uncompressed chunks run by run: only the bytes a request needs, straight from the
//! store into the caller's buffer (no chunk buffer, no second copy).
//!
//! Owns the choice of which pieces go this way and the splitting of the caller's buffer into
//! disjoint runs; the run arithmetic is `chunk::runs`, the reading the store's
//! `get_runs_into`. It must not know how a store reads.

use super::{Geometry, finish_error};
use crate::api::convert;
use crate::chunk::copy::fill_pattern;
use crate::chunk::projection::ChunkPiece;
use crate::chunk::runs::{self, RunShape};
use crate::error::Result;
use crate::zmap::Store;
use rayon::prelude::*;

/// Runs at least this long are worth a read of their own.
const MIN_RUN_BYTES: usize = 256;
/// A piece of this many runs or fewer is read run by run whatever their length (a time
/// series touches one element per chunk).
const FEW_RUNS: usize = 16;
/// Pieces whose runs are listed and read together (bounds the memory of the run lists).
const PIECES_PER_BATCH: usize = 64;

/// True when `piece` of an uncompressed chunk is better read run by run than as a whole
/// chunk followed by a copy.
pub(super) fn worth_it(
    geo: &Geometry,
    out_len: usize,
    strides: &[i64],
    piece: &ChunkPiece,
) -> Result<bool> {
    Ok(
        match runs::run_shape(&geo.chunks, out_len, strides, piece, geo.esize)? {
            Some(RunShape { runs, run_len }) => runs <= FEW_RUNS || run_len >= MIN_RUN_BYTES,
            None => false,
        },
    )
}

/// Reads the `wanted` pieces run by run into `out`, in parallel across chunks. Returns the
/// pieces it left for the caller to copy: those whose runs overlap in `out` (an `imap` that
/// maps several elements to one place), which cannot be split into disjoint buffers.
pub(super) fn read(
    store: &dyn Store,
    geo: &Geometry,
    pieces: &[ChunkPiece],
    wanted: &[usize],
    out: &mut [u8],
    strides: &[i64],
) -> Result<Vec<usize>> {
    let mut left = Vec::new();
    for batch in wanted.chunks(PIECES_PER_BATCH) {
        let mut all: Vec<(runs::Run, usize)> = Vec::new();
        for (slot, &i) in batch.iter().enumerate() {
            let list = runs::runs(&geo.chunks, out.len(), strides, &pieces[i], geo.esize)?;
            all.extend(list.into_iter().map(|r| (r, slot)));
        }
        all.sort_unstable_by_key(|(r, _)| r.mem);
        if all.windows(2).any(|w| w[0].0.mem + w[0].0.len > w[1].0.mem) {
            left.extend_from_slice(batch);
            continue;
        }
        let mut per_piece: Vec<Vec<(u64, &mut [u8])>> = batch.iter().map(|_| Vec::new()).collect();
        let (mut rest, mut consumed) = (&mut *out, 0usize);
        for (r, slot) in &all {
            let (_, tail) = std::mem::take(&mut rest).split_at_mut(r.mem - consumed);
            let (mine, tail) = tail.split_at_mut(r.len);
            (rest, consumed) = (tail, r.mem + r.len);
            per_piece[*slot].push((r.chunk as u64, mine));
        }
        per_piece
            .par_iter_mut()
            .zip(batch.par_iter())
            .try_for_each(|(runs, &i)| {
                runs.sort_unstable_by_key(|(offset, _)| *offset);
                let key = geo.key(&pieces[i].chunk)?;
                match store.get_runs_into(&key, runs)? {
                    None => runs.iter_mut().for_each(|(_, o)| fill_pattern(o, &geo.fill)),
                    Some(n) if n != geo.chunk_bytes as u64 => {
                        return Err(finish_error(geo, &key, n));
                    }
                    Some(_) if geo.swap => runs
                        .iter_mut()
                        .for_each(|(_, o)| convert::swap_bytes_in_place(o, geo.esize)),
                    Some(_) => {}
                }
                Ok(())
            })?;
    }
    Ok(left)
}
