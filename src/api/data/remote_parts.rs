//! Chunks read in parts from a remote store: a request that wants little of each of many
//! large chunks (a time series through blosc chunks or Zarr v3 shards) reads, for a batch of
//! chunks together, a few rounds of concurrent ranged requests ([`coded_parts`]: the heads or
//! shard indexes, then the parts) instead of every chunk whole. Chunks that are small, wanted
//! for much of their bytes, or whose parts will not do, are fetched whole.
//!
//! Owns the choice of which chunks of a remote batch are read in parts and the decoding of
//! those parts; the read protocol is `coded_parts`', where the bytes land the caller's.

use super::Geometry;
use super::by_runs;
use super::chunk_io::{self, ChunkBuffers};
use super::coded_parts::{self, Plan};
use super::split::PIECES_PER_BATCH;
use super::worker_buffers::{WorkerBuffers, set_len_sparse};
use crate::api::dataset::Dataset;
use crate::chunk::projection::ChunkPiece;
use crate::codec::PartialDecode;
use crate::error::Result;
use crate::zmap::{RANGE_GAP_MERGED, Store, StoreKey};
use rayon::prelude::*;
use std::ops::Range;
use std::sync::{Mutex, PoisonError};

/// Decoded chunks from this size on are read in parts from a remote store when a request
/// wants little of them ([`read`]); smaller ones are fetched whole in one round.
const REMOTE_PARTS_FROM: usize = 2 * RANGE_GAP_MERGED as usize;

/// True when the chunks of a variable are read in parts from `store`, a remote one: its codec
/// decodes independent blocks (blosc, Zarr v3 sharding) and its chunks are large.
pub(super) fn applies(store: &dyn Store, geo: &Geometry) -> bool {
    !store.is_local()
        && geo.partial_decode() == PartialDecode::Blocks
        && geo.chunk_bytes >= REMOTE_PARTS_FROM
}

/// True when a remote `store` fetches the chunk of `piece` whole even though the piece is a
/// small part of it: the store reads no ranges (its server refuses them), or the chunk is
/// coded and not read in parts ([`applies`]), or stored as it is and either smaller than those
/// (a ranged request costs a round trip as the whole chunk does) or wanted for much of it
/// ([`by_runs::route`]).
pub(super) fn fetched_whole(
    store: &dyn Store,
    geo: &Geometry,
    piece: &ChunkPiece,
    out_len: usize,
    strides: &[i64],
) -> Result<bool> {
    if store.is_local() {
        return Ok(false);
    }
    if !store.reads_runs_in_place(&geo.key(&piece.chunk)?) {
        return Ok(true);
    }
    Ok(if geo.stored_as_is() {
        geo.chunk_bytes < REMOTE_PARTS_FROM
            || by_runs::route(geo, out_len, strides, piece, false)? == by_runs::Route::Whole
    } else {
        !applies(store, geo)
    })
}

/// Pieces per batch of a variable whose chunks [`applies`] says are read in parts: as many as
/// a batch may list, since parts hold little memory (their rounds are bounded by
/// [`PARTS_HELD`]); otherwise `batch_len`, the caller's.
pub(super) fn pieces_per_batch(store: &dyn Store, geo: &Geometry, batch_len: usize) -> usize {
    if applies(store, geo) {
        PIECES_PER_BATCH
    } else {
        batch_len
    }
}

/// Pieces that want more than 1/`REMOTE_SPARSE` of their decoded chunk are fetched whole from
/// a remote store.
const REMOTE_SPARSE: usize = 4;

/// A worker's landing of a whole stored chunk (`None`: absent), as [`chunk_io::fetch_each`]
/// calls it.
type LandWhole<'f, T> = dyn Fn(&mut Vec<u8>, T, &StoreKey, Option<&[u8]>) -> Result<()> + Sync + 'f;

/// What [`read`] does with each item of a batch: the byte ranges of its chunk it
/// wants, how it lands them decoded into a worker's scratch buffer, and how it lands its whole
/// stored chunk.
pub(super) struct Landing<'f, T> {
    pub(super) wanted: &'f (dyn Fn(&T) -> Vec<Range<usize>> + Sync),
    pub(super) decoded: &'f (dyn Fn(&[u8], T) + Sync),
    pub(super) whole: &'f LandWhole<'f, T>,
}

/// Bytes of parts read in one round and held until they are decoded.
const PARTS_HELD: usize = 64 << 20;

/// Reads the chunks of `items` (at `keys`) from a remote store in parts ([`coded_parts`]: the
/// looks at every chunk of the batch in the same rounds of concurrent ranged requests, then
/// their parts, at most [`PARTS_HELD`] bytes of them a round), decodes the parts and lands
/// them; the chunks better read whole, and those whose parts the codec declines, are fetched
/// whole, at most `held` ahead of their use.
pub(super) fn read<T: Send>(
    store: &dyn Store,
    geo: &Geometry,
    keys: Vec<StoreKey>,
    items: Vec<T>,
    held: usize,
    buffers: &WorkerBuffers<ChunkBuffers>,
    landing: Landing<'_, T>,
) -> Result<()> {
    // Items that want no ranges want their chunk decoded whole, and so do those that want
    // much of it: there the rounds of looks would only add to the time. So does a store that
    // reads ranges by reading objects whole (the overlay of a diskless dataset). A request
    // that wants little but touches every block of its blosc chunks costs one round of looks
    // more than reading them whole, which only the looks can tell.
    if !keys.first().is_some_and(|k| store.reads_runs_in_place(k)) {
        return chunk_io::fetch_each(store, &keys, items, held, buffers, landing.whole);
    }
    let mut whole: Vec<(StoreKey, T)> = Vec::new();
    let (mut keys_in_parts, mut items_in_parts, mut wanted) = (Vec::new(), Vec::new(), Vec::new());
    for (key, item) in keys.into_iter().zip(items) {
        let ranges = (landing.wanted)(&item);
        let bytes: usize = ranges.iter().map(|r| r.len()).sum();
        if ranges.is_empty() || bytes > geo.chunk_bytes / REMOTE_SPARSE {
            whole.push((key, item));
        } else {
            keys_in_parts.push(key);
            items_in_parts.push(item);
            wanted.push(ranges);
        }
    }
    let (keys, items) = (keys_in_parts, items_in_parts);
    let plans = coded_parts::plan(store, &geo.chain, &keys, geo.chunk_bytes, &wanted)?;
    // Chunks the looks found absent, or read whole already.
    let mut in_hand: Vec<(StoreKey, T, Option<Vec<u8>>)> = Vec::new();
    let mut rounds: Vec<Vec<InParts<T>>> = Vec::new();
    let mut round_bytes = 0;
    for (((key, item), plan), wanted) in keys.into_iter().zip(items).zip(plans).zip(wanted) {
        let parts = match plan {
            Plan::Absent => {
                in_hand.push((key, item, None));
                continue;
            }
            Plan::Held(bytes) => {
                in_hand.push((key, item, Some(bytes)));
                continue;
            }
            Plan::Whole => {
                whole.push((key, item));
                continue;
            }
            Plan::Parts(parts) => parts,
        };
        round_bytes += parts.bytes();
        match rounds.last_mut() {
            Some(round) if round_bytes <= PARTS_HELD => round.push((key, item, wanted, parts)),
            _ => {
                round_bytes = parts.bytes();
                rounds.push(vec![(key, item, wanted, parts)]);
            }
        }
    }
    in_hand.into_par_iter().try_for_each(|(key, item, bytes)| {
        buffers.with(|b| (landing.whole)(&mut b.scratch, item, &key, bytes.as_deref()))
    })?;
    let declined = Mutex::new(Vec::new());
    for round in rounds {
        let mut keys = Vec::with_capacity(round.len());
        let mut rest = Vec::with_capacity(round.len());
        let mut parts = Vec::with_capacity(round.len());
        for (key, item, wanted, p) in round {
            keys.push(key);
            rest.push((item, wanted));
            parts.push(p);
        }
        let read = coded_parts::read(store, &keys, parts)?;
        let decline = |key: StoreKey, item: T| {
            let mut declined = declined.lock().unwrap_or_else(PoisonError::into_inner);
            declined.push((key, item));
        };
        keys.into_par_iter().zip(rest).zip(read).try_for_each(
            |((key, (item, wanted)), read)| {
                let Some(read) = read else {
                    decline(key, item);
                    return Ok(());
                };
                buffers.with(|b| {
                    read.place(&mut b.stored);
                    set_len_sparse(&mut b.scratch, geo.chunk_bytes);
                    let (stored, scratch) = (&b.stored, &mut b.scratch);
                    if Dataset::decode_chunk_parts_into(geo, &key, stored, scratch, &wanted)? {
                        (landing.decoded)(scratch, item);
                    } else {
                        decline(key, item);
                    }
                    Ok(())
                })
            },
        )?;
    }
    whole.extend(
        declined
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner),
    );
    let (keys, items): (Vec<StoreKey>, Vec<T>) = whole.into_iter().unzip();
    chunk_io::fetch_each(store, &keys, items, held, buffers, landing.whole)
}

/// A chunk to read in parts: its key, its item, the byte ranges it wants, its parts.
type InParts<T> = (StoreKey, T, Vec<Range<usize>>, coded_parts::Parts);
