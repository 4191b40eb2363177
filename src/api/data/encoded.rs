//! Chunks as the store keeps them, made from their values: the variable's byte order and
//! layout, then its codecs, in buffers a worker keeps from chunk to chunk (a fresh buffer per
//! chunk costs its pages' faults and zeroing every time). A chunk that needs neither codecs
//! nor reordering is stored from its values as they are: a whole chunk lying in the caller's
//! buffer as one run goes to the store without a copy.
//!
//! Owns this encoding step and its buffers; which chunks, and storing them, are the caller's.

use super::{Geometry, in_chunk};
use crate::api::convert;
use crate::chunk::transpose;
use crate::error::Result;
use crate::zmap::StoreKey;

/// The buffers a chunk is encoded with: the chunk in the variable's byte order or layout (when
/// that is not the native C order), and the two buffers the codecs' stages alternate between.
#[derive(Default)]
pub(super) struct EncodeBuffers {
    reordered: Vec<u8>,
    coded: Vec<u8>,
    spare: Vec<u8>,
}

/// A worker's buffers for writing chunks: the chunk assembled from the caller's values (when
/// it is not one run of them) and those it is encoded with.
#[derive(Default)]
pub(super) struct WriteBuffers {
    pub(super) assembled: Vec<u8>,
    pub(super) encode: EncodeBuffers,
}

/// The key and stored bytes of the chunk at `idx`, whose values (C order, native byte order)
/// are `native`: `native` itself when the variable has no codecs and is stored as it is, else
/// bytes in `buffers`; `None` when they hold no values ([`crate::codec::Chain::holds_nothing`]:
/// a shard all fill, which zarr-python too stores as no object).
pub(super) fn encode_chunk<'b>(
    geo: &Geometry,
    idx: &[u64],
    native: &'b [u8],
    buffers: &'b mut EncodeBuffers,
) -> Result<(StoreKey, Option<&'b [u8]>)> {
    let key = geo.key(idx)?;
    let EncodeBuffers {
        reordered,
        coded,
        spare,
    } = buffers;
    let ordered: &[u8] = if geo.swap || geo.fortran {
        reordered.clear();
        reordered.extend_from_slice(native);
        if geo.swap {
            convert::swap_bytes_in_place(reordered, geo.esize);
        }
        if geo.fortran {
            *reordered = transpose::c_to_f(reordered, &geo.chunks, geo.esize);
        }
        reordered
    } else {
        native
    };
    let stored = geo
        .chain
        .encode_into(ordered, coded, spare)
        .map_err(|e| in_chunk(e, &key))?;
    let stored = (!geo.chain.holds_nothing(stored)).then_some(stored);
    Ok((key, stored))
}
