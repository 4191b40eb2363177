//! Whole chunks copied into the caller's buffer in parallel: pieces of chunks that are fetched
//! whole (coded chunks, or any chunk on a remote store) and are not kept in the cache. Each
//! worker decodes a chunk into its own scratch buffer and copies the piece's runs into their
//! disjoint places in the caller's buffer, so decoding and copying both use every core and
//! scratch memory is one chunk per worker. A chunk whose codec can decode parts is decoded
//! only as far as the piece's runs need: up to the end of the last run for a stream (a time
//! series needs the first block of each chunk), only the blocks holding runs for blosc.
//!
//! Owns this parallel decode-and-scatter step; fetching is the store's, decoding the codec
//! chain's, the run slicing `split`'s.

use super::chunk_io::{self, ChunkBuffers};
use super::coded_parts::{self, Fetched};
use super::remote_parts;
use super::rows;
use super::split::{PieceRuns, Target, batches_of, in_batches};
use super::worker_buffers::{WorkerBuffers, set_len_sparse};
use super::{Geometry, finish_error};
use crate::api::convert;
use crate::api::dataset::Dataset;
use crate::chunk::copy::fill_pattern;
use crate::chunk::projection::ChunkPiece;
use crate::chunk::runs;
use crate::codec::PartialDecode;
use crate::error::Result;
use crate::zmap::{Store, StoreKey, copy_runs};
use rayon::prelude::*;
use std::ops::Range;

/// Runs shorter than this are copied faster from a chunk kept whole (the run lists would be
/// larger than the data), unless there are only a few of them.
const MIN_RUN_BYTES: usize = 32;
const FEW_RUNS: usize = 64;

/// True when `piece` is worth copying run by run from its decoded chunk.
pub(super) fn worth_it(
    geo: &Geometry,
    out_len: usize,
    strides: &[i64],
    piece: &ChunkPiece,
) -> Result<bool> {
    Ok(
        runs::run_shape(&geo.chunks, out_len, strides, piece, geo.esize)?
            .is_some_and(|s| s.run_len >= MIN_RUN_BYTES || s.runs <= FEW_RUNS),
    )
}

/// Reads the chunks of the `wanted` pieces in batches of `batch_len` and copies the pieces
/// into `out`. Returns the pieces it left for the caller: those whose runs overlap in `out`.
pub(super) fn read(
    store: &dyn Store,
    target: Target<'_, '_>,
    wanted: &[usize],
    batch_len: usize,
) -> Result<Vec<usize>> {
    let (geo, pieces) = (target.geo, target.pieces);
    let buffers = WorkerBuffers::new();
    let in_parts = remote_parts::applies(store, geo);
    let pieces_per_batch = remote_parts::pieces_per_batch(store, geo, batch_len);
    in_batches(target, wanted, pieces_per_batch, |batch, per_piece| {
        let keys: Vec<StoreKey> = batch
            .iter()
            .map(|&i| geo.key(&pieces[i].chunk))
            .collect::<Result<_>>()?;
        if geo.partial_decode() == PartialDecode::Blocks && store.is_local() {
            return per_piece
                .into_par_iter()
                .zip(&keys)
                .try_for_each(|(runs, key)| {
                    buffers.with(|bufs| land_parts(store, geo, key, runs, bufs))
                });
        }
        let land_whole = |scratch: &mut Vec<u8>, runs, key: &StoreKey, stored: Option<&[u8]>| {
            land(geo, key, stored, runs, scratch)
        };
        if in_parts {
            let landing = remote_parts::Landing {
                wanted: &|runs: &PieceRuns<'_>| wanted_ranges(geo, runs),
                decoded: &|chunk: &[u8], mut runs: PieceRuns<'_>| copy_runs(chunk, 0, &mut runs),
                whole: &land_whole,
            };
            return remote_parts::read(store, geo, keys, per_piece, batch_len, &buffers, landing);
        }
        chunk_io::fetch_each(store, &keys, per_piece, keys.len(), &buffers, land_whole)
    })
}

/// Reads the strided `wanted` pieces (runs too short to list: [`worth_it`] is false) row by
/// row: each worker decodes a chunk into its scratch buffer and copies the rows of its piece
/// into their disjoint places in `out`, so decoding and the element copy both use every core.
/// Batches of `batch_len` pieces; returns the pieces of batches whose rows overlap in `out`.
pub(super) fn read_rows(
    store: &dyn Store,
    target: Target<'_, '_>,
    wanted: &[usize],
    batch_len: usize,
) -> Result<Vec<usize>> {
    let (geo, pieces) = (target.geo, target.pieces);
    let plans = rows::plans(geo, pieces, wanted, target.out.len(), target.strides)?;
    let buffers = WorkerBuffers::new();
    let in_parts = remote_parts::applies(store, geo);
    let left = batches_of(
        target.out,
        &plans,
        remote_parts::pieces_per_batch(store, geo, batch_len),
        |batch, out| rows::split(batch.iter().map(|(_, r)| r), out, geo.esize),
        |batch, per_piece| {
            let keys: Vec<StoreKey> = batch
                .iter()
                .map(|(i, _)| geo.key(&pieces[*i].chunk))
                .collect::<Result<_>>()?;
            let items: Vec<_> = per_piece.into_iter().zip(batch).collect();
            if geo.partial_decode() == PartialDecode::Blocks && store.is_local() {
                // Only the parts of each chunk its rows need are read, when that is little.
                return items.into_par_iter().zip(&keys).try_for_each(
                    |((dests, (_, rows)), key)| {
                        buffers.with(|bufs| {
                            let parts = row_spans(geo, rows);
                            let found = match read_parts(store, geo, key, &parts, bufs)? {
                                PartsRead::Decoded => {
                                    copy_rows(geo, rows, Some(&bufs.scratch), dests);
                                    return Ok(());
                                }
                                PartsRead::Stored(found) => found,
                            };
                            let ChunkBuffers { scratch, stored } = bufs;
                            let stored = found.then_some(&stored[..]);
                            land_rows(geo, key, stored, rows, &parts, dests, scratch)
                        })
                    },
                );
            }
            let land_whole = |scratch: &mut Vec<u8>,
                              (dests, (_, rows)): RowsItem<'_, '_>,
                              key: &StoreKey,
                              stored: Option<&[u8]>| {
                land_rows(
                    geo,
                    key,
                    stored,
                    rows,
                    &row_spans(geo, rows),
                    dests,
                    scratch,
                )
            };
            if in_parts {
                let landing = remote_parts::Landing {
                    wanted: &|(_, (_, rows)): &RowsItem<'_, '_>| row_spans(geo, rows),
                    decoded: &|chunk: &[u8], (dests, (_, rows)): RowsItem<'_, '_>| {
                        copy_rows(geo, rows, Some(chunk), dests)
                    },
                    whole: &land_whole,
                };
                return remote_parts::read(store, geo, keys, items, batch_len, &buffers, landing);
            }
            chunk_io::fetch_each(store, &keys, items, keys.len(), &buffers, land_whole)
        },
    )?;
    Ok(left.into_iter().map(|(i, _)| i).collect())
}

/// A piece of a strided read: its rows' places in the caller's buffer, and its index and rows.
type RowsItem<'o, 'p> = (PieceRuns<'o>, &'p (usize, runs::Rows));

/// Decodes one fetched chunk (only the `parts` its rows need when there are some and its
/// codec can; fill when absent) and copies the rows of its piece into place.
fn land_rows(
    geo: &Geometry,
    key: &StoreKey,
    stored: Option<&[u8]>,
    rows: &runs::Rows,
    parts: &[Range<usize>],
    dests: PieceRuns<'_>,
    scratch: &mut Vec<u8>,
) -> Result<()> {
    let chunk = match stored {
        Some(bytes) => {
            set_len_sparse(scratch, geo.chunk_bytes);
            if parts.is_empty()
                || !Dataset::decode_chunk_parts_into(geo, key, bytes, scratch, parts)?
            {
                Dataset::decode_chunk_into(geo, key, bytes, scratch)?;
            }
            Some(&scratch[..])
        }
        None => None,
    };
    copy_rows(geo, rows, chunk, dests);
    Ok(())
}

/// Copies the rows of a piece from its decoded chunk (fill when `None`) into place.
fn copy_rows(geo: &Geometry, rows: &runs::Rows, chunk: Option<&[u8]>, dests: PieceRuns<'_>) {
    for (r, dest) in dests {
        let from = chunk.map(|c| (c, rows.starts[r as usize].0));
        rows::copy_row(geo, rows, from, dest, rows::backward_reach(rows));
    }
}

/// What [`read_parts`] left in the worker's buffers.
enum PartsRead {
    /// The wanted parts, decoded into `scratch`.
    Decoded,
    /// The whole stored chunk in `stored` (false: there is none), to decode.
    Stored(bool),
}

/// Reads and decodes only the `wanted` parts of a chunk when there are some and the store
/// reads parts in place (see [`coded_parts`]); otherwise, or when the codec declines the
/// parts, reads the chunk whole. `bufs`: the worker's buffers.
fn read_parts(
    store: &dyn Store,
    geo: &Geometry,
    key: &StoreKey,
    wanted: &[Range<usize>],
    bufs: &mut ChunkBuffers,
) -> Result<PartsRead> {
    let ChunkBuffers { scratch, stored } = bufs;
    if wanted.is_empty() || !store.reads_runs_in_place(key) {
        return Ok(PartsRead::Stored(store.get_into(key, stored)?));
    }
    Ok(
        match coded_parts::fetch(store, &geo.chain, key, geo.chunk_bytes, wanted, stored)? {
            Fetched::Parts => {
                set_len_sparse(scratch, geo.chunk_bytes);
                if Dataset::decode_chunk_parts_into(geo, key, stored, scratch, wanted)? {
                    return Ok(PartsRead::Decoded);
                }
                // Declined on the parts: the whole chunk decodes, or reports what is wrong.
                PartsRead::Stored(store.get_into(key, stored)?)
            }
            Fetched::Whole => PartsRead::Stored(true),
            Fetched::Absent => PartsRead::Stored(false),
        },
    )
}

/// Reads the parts of a chunk its runs need ([`read_parts`]), decodes them and copies the
/// runs into place; otherwise lands the whole chunk.
fn land_parts(
    store: &dyn Store,
    geo: &Geometry,
    key: &StoreKey,
    mut runs: PieceRuns<'_>,
    bufs: &mut ChunkBuffers,
) -> Result<()> {
    let found = match read_parts(store, geo, key, &wanted_ranges(geo, &runs), bufs)? {
        PartsRead::Decoded => {
            copy_runs(&bufs.scratch, 0, &mut runs);
            return Ok(());
        }
        PartsRead::Stored(found) => found,
    };
    let ChunkBuffers { scratch, stored } = bufs;
    land(geo, key, found.then_some(&stored[..]), runs, scratch)
}

/// Decodes one fetched chunk (fill when absent) and copies its runs into place.
fn land(
    geo: &Geometry,
    key: &StoreKey,
    stored: Option<&[u8]>,
    mut runs: PieceRuns<'_>,
    scratch: &mut Vec<u8>,
) -> Result<()> {
    let Some(bytes) = stored else {
        runs.iter_mut()
            .for_each(|(_, o)| fill_pattern(o, &geo.fill));
        return Ok(());
    };
    let transposed;
    let chunk: &[u8] = if geo.stored_as_is() {
        if bytes.len() != geo.chunk_bytes {
            return Err(finish_error(geo, key, bytes.len() as u64));
        }
        copy_runs(bytes, 0, &mut runs);
        if geo.swap {
            runs.iter_mut()
                .for_each(|(_, o)| convert::swap_bytes_in_place(o, geo.esize));
        }
        return Ok(());
    } else if geo.fortran {
        transposed = Dataset::decode_chunk(geo, key, bytes.to_vec())?;
        &transposed
    } else {
        set_len_sparse(scratch, geo.chunk_bytes);
        if geo.partial_decode() != PartialDecode::Whole
            && Dataset::decode_chunk_parts_into(
                geo,
                key,
                bytes,
                scratch,
                &wanted_ranges(geo, &runs),
            )?
        {
            copy_runs(scratch, 0, &mut runs);
            return Ok(());
        }
        Dataset::decode_chunk_into(geo, key, bytes, scratch)?;
        scratch
    };
    // The runs were checked against the chunk's shape, and the chunk has that shape's size.
    copy_runs(chunk, 0, &mut runs);
    Ok(())
}

/// The byte ranges of a chunk that the rows of a piece read, neighbours joined as in
/// [`wanted`], when its codec decodes parts and the rows are sparse: few ranges, under
/// 1/[`SPARSE_ROWS`] of the chunk (a column through a Zarr v3
/// shard needs a few of its inner chunks); empty when the chunk is better decoded whole.
fn row_spans(geo: &Geometry, rows: &runs::Rows) -> Vec<Range<usize>> {
    // Only codecs that decode independent blocks: a stream (zstd) decoded up to the last
    // wanted byte costs more than one call decoding it whole.
    if geo.partial_decode() != PartialDecode::Blocks {
        return Vec::new();
    }
    let elements = rows.starts.len().saturating_mul(rows.count);
    if elements.saturating_mul(geo.esize) > geo.chunk_bytes / SPARSE_ROWS {
        return Vec::new();
    }
    let gap = geo.chain.part_gap();
    let mut ranges: Vec<Range<usize>> = Vec::new();
    for &(first, _) in &rows.starts {
        for k in 0..rows.count {
            let at = first + k * rows.chunk_step;
            let full = ranges.len() == MOST_ROW_SPANS;
            match ranges.last_mut() {
                Some(last) if at >= last.start && at <= last.end.saturating_add(gap) => {
                    last.end = last.end.max(at + geo.esize);
                }
                _ if full => return Vec::new(),
                _ => ranges.push(at..at + geo.esize),
            }
        }
    }
    ranges
}

/// Rows whose elements are more than this fraction of their chunk decode it whole: a strided
/// read of every 4th element of two dimensions (1/16) wants every blosc block anyway, and
/// reading it in parts costs 5-15% more than whole.
const SPARSE_ROWS: usize = 64;

/// The most ranges [`row_spans`] lists: a request scattered wider than this decodes its
/// chunks whole.
const MOST_ROW_SPANS: usize = 1 << 16;

/// The byte ranges of the chunk that `runs` copy, in their order, neighbours closer than the
/// codec's [`crate::codec::Chain::part_gap`] joined (a piece of many short runs then makes a
/// shorter list).
fn wanted_ranges(geo: &Geometry, runs: &PieceRuns<'_>) -> Vec<Range<usize>> {
    let gap = geo.chain.part_gap();
    let mut ranges: Vec<Range<usize>> = Vec::new();
    for (at, o) in runs.iter() {
        let r = *at as usize..*at as usize + o.len();
        match ranges.last_mut() {
            Some(last) if r.start >= last.start && r.start <= last.end.saturating_add(gap) => {
                last.end = last.end.max(r.end);
            }
            _ => ranges.push(r),
        }
    }
    ranges
}
