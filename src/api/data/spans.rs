//! Reading parts of uncompressed chunks from a remote store: one ranged request per chunk for
//! the span of bytes a piece touches (a time series asks for a few bytes of each chunk, not
//! the chunks), then the piece's runs copied out of it in parallel.
//!
//! Owns the choice of which pieces go this way and the copying; fetching is the store's
//! `get_spans`, the run slicing `split`'s. Used only for chunks the cache will not keep
//! (a chunk read whole once serves later requests from the cache).

use super::split::{Target, in_batches};
use super::{Geometry, finish_error};
use crate::api::convert;
use crate::chunk::copy::fill_pattern;
use crate::chunk::projection::ChunkPiece;
use crate::chunk::runs;
use crate::error::{Error, Result};
use crate::zmap::{Store, StoreKey};
use rayon::prelude::*;
use std::ops::Range;

/// A span this much smaller than its chunk is worth a ranged request.
const SPAN_FRACTION: usize = 4;

/// True when `piece` touches a small enough part of its uncompressed chunk.
pub(super) fn worth_it(
    geo: &Geometry,
    out_len: usize,
    strides: &[i64],
    piece: &ChunkPiece,
) -> Result<bool> {
    Ok(
        runs::run_shape(&geo.chunks, out_len, strides, piece, geo.esize)?
            .is_some_and(|s| s.span.saturating_mul(SPAN_FRACTION) <= geo.chunk_bytes),
    )
}

/// Reads the `wanted` pieces span by span into `out`, `batch_len` chunks per round of
/// requests. Returns the pieces it left for the caller: those whose runs overlap in `out`.
pub(super) fn read(
    store: &dyn Store,
    target: Target<'_, '_>,
    wanted: &[usize],
    batch_len: usize,
) -> Result<Vec<usize>> {
    let (geo, pieces) = (target.geo, target.pieces);
    in_batches(target, wanted, batch_len, |batch, per_piece| {
        let requests: Vec<(StoreKey, Range<u64>)> = batch
            .iter()
            .zip(&per_piece)
            .map(|(&i, runs)| {
                let start = runs.first().map_or(0, |(o, _)| *o);
                let end = runs
                    .iter()
                    .map(|(o, b)| o + b.len() as u64)
                    .max()
                    .unwrap_or(start);
                Ok((geo.key(&pieces[i].chunk)?, start..end))
            })
            .collect::<Result<_>>()?;
        let fetched = store.get_spans(&requests)?;
        per_piece
            .into_par_iter()
            .zip(fetched)
            .zip(&requests)
            .try_for_each(|((mut runs, got), (key, span))| {
                let Some((len, bytes)) = got else {
                    runs.iter_mut()
                        .for_each(|(_, o)| fill_pattern(o, &geo.fill));
                    return Ok(());
                };
                if len != geo.chunk_bytes as u64 {
                    return Err(finish_error(geo, key, len));
                }
                for (offset, o) in runs.iter_mut() {
                    let from = usize::try_from(*offset - span.start)
                        .ok()
                        .and_then(|s| bytes.get(s..s.checked_add(o.len())?))
                        .ok_or_else(|| Error::Invalid(format!("short span read of {key}")))?;
                    o.copy_from_slice(from);
                    if geo.swap {
                        convert::swap_bytes_in_place(o, geo.esize);
                    }
                }
                Ok(())
            })
    })
}
