//! Reading and writing variable data: hyperslab checks, chunk fetch/decode/encode, type
//! conversion, fill values and unlimited growth.
//!
//! A request is projected onto the chunks it touches; missing chunks are fetched in one
//! batch and decoded in parallel; each piece is copied with contiguous runs. When the
//! caller's type equals the variable's, pieces land straight in the caller's buffer
//! (whole chunks are decoded into it); otherwise they go through one conversion pass.

use super::convert;
use super::dataset::Dataset;
use crate::chunk::cache::{ChunkCache, ChunkIndex, Evicted};
use crate::chunk::copy::{
    c_order_strides, fill_pattern, read_piece, whole_chunk_range, write_piece,
};
use crate::chunk::projection::{ChunkPiece, Projection};
use crate::chunk::transpose;
use crate::codec::{self, PartialDecode};
use crate::error::{Error, Result};
use crate::format::ucs4;
use crate::model::{Endian, GroupId, NcType, StringStorage, Var};
use crate::zmap::StoreKey;
use chunk_io::ChunkBuffers;
use encoded::{EncodeBuffers, WriteBuffers};
use rayon::prelude::*;
use std::borrow::Cow;
use std::ops::Range;
use worker_buffers::WorkerBuffers;

/// Bytes of chunks fetched and decoded together from a store with latency: enough requests in
/// flight to hide it.
const BATCH_BYTES: usize = 64 << 20;

/// Chunks per fetch/decode batch for chunks of `chunk_bytes`. A local store (reads cost what
/// their bytes cost) needs only enough to keep every core busy, so scratch memory stays two
/// chunks per thread; a remote one gets up to [`BATCH_BYTES`] in flight.
fn batch_len(chunk_bytes: usize, local: bool) -> usize {
    let threads = rayon::current_num_threads().max(1);
    if local {
        return threads * 2;
    }
    (BATCH_BYTES / chunk_bytes.max(1)).clamp(threads * 2, 256)
}

/// Chunks per batch where each worker reads or writes its own chunk on a local store
/// ([`chunk_io`]): there memory does not grow with the batch, and a longer batch keeps
/// workers from waiting for each other at its end.
fn landing_batch_len(chunk_bytes: usize, local: bool) -> usize {
    if local {
        return split::PIECES_PER_BATCH;
    }
    batch_len(chunk_bytes, false)
}

/// Chunks per batch on a local store; on a remote one, the chunks fetched (or made) ahead of
/// their use (or upload) in one pass: a batch, and one more per worker, so that the workers
/// busy with chunks do not leave the link idle.
fn chunks_held(chunk_bytes: usize, local: bool) -> usize {
    let batch = landing_batch_len(chunk_bytes, local);
    if local {
        batch
    } else {
        batch + rayon::current_num_threads()
    }
}

mod ahead;
#[cfg(test)]
mod batch_tests;
mod by_runs;
#[cfg(test)]
mod chain_tests;
mod chunk_io;
mod coded_parts;
mod decoded;
mod encoded;
#[cfg(test)]
mod object_limit_tests;
pub(crate) mod read_ahead;
pub(super) mod records;
mod remote_parts;
mod rows;
mod split;
mod string_width;
mod worker_buffers;

/// The error for a stored uncompressed chunk of `got` bytes where the shape needs another size.
fn finish_error(geo: &Geometry, key: &StoreKey, got: u64) -> Error {
    Error::ChunkSize {
        key: key.to_string(),
        got: usize::try_from(got).unwrap_or(usize::MAX),
        expected: geo.chunk_bytes,
    }
}

/// Completes a whole chunk read in place: a missing chunk becomes fill values, a chunk of the
/// wrong size is an error, and stored byte order becomes native.
fn finish_direct(geo: &Geometry, key: &StoreKey, len: Option<usize>, out: &mut [u8]) -> Result<()> {
    match len {
        None => fill_pattern(out, &geo.fill),
        Some(n) if n != out.len() => return Err(finish_error(geo, key, n as u64)),
        Some(_) if geo.swap => convert::swap_bytes_in_place(out, geo.esize),
        Some(_) => {}
    }
    Ok(())
}

/// A hyperslab request in the variable's index space.
#[derive(Debug, Clone)]
pub struct Slab {
    pub start: Vec<u64>,
    pub count: Vec<u64>,
    pub stride: Vec<u64>,
}

/// Decoded bytes of one chunk below which sharing its decoding with another thread costs more
/// than it saves.
const MIN_BYTES_PER_DECODE_THREAD: usize = 2 << 20;

/// The most pieces (parts of chunks) of one request handled at once: the list of a request
/// through billions of chunks would take more memory than the machine has.
const MOST_PIECES_AT_ONCE: usize = 1 << 16;

/// The most bytes of chunks a write reads and decodes at once, to write parts of them.
const MOST_PARTIAL_BYTES_AT_ONCE: usize = 256 << 20;

/// The next pieces of a write: at most [`MOST_PIECES_AT_ONCE`], the chunks of those that
/// cover part of a chunk (read and decoded together) at most [`MOST_PARTIAL_BYTES_AT_ONCE`]
/// (one at least).
fn next_write_batch(all: &mut impl Iterator<Item = ChunkPiece>, geo: &Geometry) -> Vec<ChunkPiece> {
    let mut batch = Vec::new();
    let mut partial_bytes = 0usize;
    for piece in all.by_ref() {
        if !crate::chunk::projection::is_whole_chunk(&piece, &geo.chunks) {
            partial_bytes = partial_bytes.saturating_add(geo.chunk_bytes);
        }
        batch.push(piece);
        if batch.len() == MOST_PIECES_AT_ONCE || partial_bytes >= MOST_PARTIAL_BYTES_AT_ONCE {
            break;
        }
    }
    batch
}

/// Everything the data path needs to know about a variable, computed once per call (so no
/// call clones the variable and its attributes).
#[derive(Clone)]
struct Geometry {
    ty: NcType,
    scalar: bool,
    /// The variable's codecs, built once per call.
    chain: codec::Chain,
    /// Quantization applied to values before they are stored.
    quantize: Option<codec::quantize::Quantize>,
    /// The fill element in native order (`esize` bytes).
    fill: Vec<u8>,
    /// Decoded chunks this small are worth keeping in the cache.
    cacheable: bool,
    /// The byte bound of the variable's chunk cache.
    cache_bytes: usize,
    shape: Vec<u64>,
    chunks: Vec<u64>,
    esize: usize,
    chunk_bytes: usize,
    path: String,
    sep: char,
    /// Chunk keys are Zarr v3's default encoding ([`Var::v3_chunk_keys`]).
    v3_keys: bool,
    /// Indices a chunk's key holds: one per dimension but the parts of complex numbers.
    key_rank: usize,
    swap: bool,
    /// Chunks are stored in Fortran order (reordered to C order on decode, back on encode).
    fortran: bool,
}

fn product(v: &[u64]) -> Result<usize> {
    v.iter()
        .try_fold(1usize, |n, &c| {
            usize::try_from(c).ok().and_then(|c| n.checked_mul(c))
        })
        .ok_or_else(|| Error::TooLarge(format!("{v:?}")))
}

impl Geometry {
    /// True when a stored chunk is the decoded chunk up to byte order (no codecs, C order), so
    /// it can be read straight into its destination.
    fn stored_as_is(&self) -> bool {
        self.chain.is_empty() && !self.fortran
    }

    /// How much of a chunk must be decoded to get some of its bytes (all of it unless it is
    /// in C order, with one codec that can decode parts).
    fn partial_decode(&self) -> PartialDecode {
        if self.fortran {
            PartialDecode::Whole
        } else {
            self.chain.partial_decode()
        }
    }

    /// Elements in one chunk.
    fn chunk_elems(&self) -> u64 {
        (self.chunk_bytes / self.esize.max(1)) as u64
    }

    /// True when the `n` chunks of one request can all stay in the cache: otherwise keeping
    /// them would only cycle them through it, evicting what a later request could use.
    fn cache_keeps(&self, n: usize) -> bool {
        self.cacheable
            && n.checked_mul(self.chunk_bytes)
                .is_some_and(|bytes| bytes <= self.cache_bytes)
    }

    fn key(&self, idx: &[u64]) -> Result<StoreKey> {
        let idx = &idx[..idx.len().min(self.key_rank)];
        let indices = idx
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(&self.sep.to_string());
        let name = match (self.v3_keys, idx.is_empty() || self.scalar) {
            (true, true) => "c".to_string(),
            (true, false) => format!("c{}{indices}", self.sep),
            (false, true) if idx.is_empty() => "0".to_string(),
            (false, _) => indices,
        };
        StoreKey::new(&crate::format::write::prefixed(&self.path, &name))
    }
}

/// The most bytes a stored chunk of `chunk_bytes` decoded bytes can take: no codec's worst
/// case comes near twice its input (zlib, zstd, lz4 and bzip2 add about 1% at most, blosc 16
/// bytes), so a larger object is damaged or hostile. Strings, whose stored length has no such
/// bound, are left to the store's first limit ([`crate::zmap::LARGEST_OBJECT_AT_FIRST`]).
fn largest_stored_chunk(chunk_bytes: usize, ty: NcType, chain: &codec::Chain) -> u64 {
    if ty == NcType::String {
        return 0;
    }
    largest_coding(chunk_bytes, chain)
}

/// The most bytes any coding of `chunk_bytes` bytes of fixed-size values by `chain` takes (see
/// [`largest_stored_chunk`]): more for shards of many small inner chunks, each coded alone,
/// and their index, but never more than this machine's memory.
fn largest_coding(chunk_bytes: usize, chain: &codec::Chain) -> u64 {
    let coded = (chain.encoded_bound(chunk_bytes) as u64).min(crate::machine::memory_bytes());
    (chunk_bytes as u64)
        .saturating_mul(2)
        .saturating_add(1 << 20)
        .max(coded)
}

/// True when stored elements of `esize` bytes of `var` are in the other byte order.
fn swapped(var: &Var, esize: usize) -> bool {
    var.endian != Endian::native() && var.ty.is_numeric() && esize > 1
}

/// The codec chain of a variable; an unknown codec is `Error::NoFilter` naming it. Zarr v3
/// shards are told the fill element, as stored, for their inner chunks never written. An array
/// of 16-bit floats has them widened by the inner chunks of its shards, when its first codec
/// shards it (so that parts of shards are read alone), else by a first codec of its own.
pub fn codec_chain(var: &Var) -> Result<codec::Chain> {
    let mut cfgs = var.codec_configs();
    let is_sharding = |cfg: &codec::Config| {
        cfg.get("id").and_then(serde_json::Value::as_str) == Some(codec::SHARDING)
    };
    let moved_records = var.record.as_ref().filter(|r| !r.plan.is_identity());
    if moved_records.is_some() && cfgs.first().is_some_and(is_sharding) {
        // Its shards would be told a fill of compound values; the reason, not that, is news.
        return Err(Error::Unsupported {
            var: var.name.clone(),
            why: "structured records in shards are not read".into(),
        });
    }
    let big_endian = var.half_floats.map(|order| order == Endian::Big);
    let shards_widen = big_endian.is_some() && cfgs.first().is_some_and(is_sharding);
    let stored_fill = |widened_inside: bool| -> Result<serde_json::Value> {
        let mut fill = fill_element(var);
        let esize = fill.len();
        if swapped(var, esize) {
            convert::swap_bytes_in_place(&mut fill, esize);
        }
        if let Some(order) = var.half_floats.filter(|_| !widened_inside) {
            let narrowing = codec::HalfFloats {
                big_endian: order == Endian::Big,
            };
            fill = codec::Codec::encode(&narrowing, &fill)?;
        }
        Ok(serde_json::Value::from(fill))
    };
    for (i, cfg) in cfgs.iter_mut().enumerate() {
        if is_sharding(cfg) {
            let widened_inside = shards_widen && i == 0;
            cfg.insert("fill".into(), stored_fill(widened_inside)?);
            // Only this says so (never a stored configuration).
            cfg.remove("half_floats");
            if let Some(big) = big_endian.filter(|_| widened_inside) {
                cfg.insert("half_floats".into(), serde_json::Value::from(big));
            }
        }
    }
    let elem_size = if shards_widen {
        var.decoded_esize()
    } else {
        var.stored_esize()
    };
    let chain = codec::Chain::from_configs(&var.name, &cfgs, codec::Context { elem_size })?;
    let chain = match big_endian {
        Some(big) if !shards_widen => chain.storing_half_floats(big),
        _ => chain,
    };
    Ok(match moved_records {
        Some(r) => chain.storing_records(r.plan.clone()),
        None => chain,
    })
}

impl Dataset {
    /// Lets the store read whole the largest chunk any variable of the dataset can have (what
    /// [`Dataset::geometry`] allows one variable at a time), for work that moves objects of
    /// several variables at once (renames).
    pub(crate) fn allow_every_variables_chunks(&self) {
        let largest = self
            .tree
            .groups
            .iter()
            .flat_map(|g| &g.vars)
            .filter_map(|var| {
                let bytes = product(&var.chunks)
                    .ok()?
                    .checked_mul(var.decoded_esize())?;
                // A chain that cannot be built (an unknown codec) bounds as no codec does.
                let chain = codec_chain(var).unwrap_or_default();
                Some(largest_stored_chunk(bytes, var.ty, &chain))
            })
            .max()
            .unwrap_or(0);
        self.store.allow_objects_up_to(largest);
    }

    /// The facts of variable `v` its data path needs; a variable whose data cannot be served
    /// (unknown codec, unsupported feature) fails here, for every read and write alike.
    fn geometry(&self, g: GroupId, v: usize) -> Result<Geometry> {
        let var = &self.tree.group(g).vars[v];
        // An unknown codec answers NC_ENOFILTER, before any other reason.
        let chain = codec_chain(var)?;
        if let Some(why) = &var.unreadable {
            return Err(Error::Unsupported {
                var: var.name.clone(),
                why: why.clone(),
            });
        }
        let (shape, chunks) = if var.is_scalar() {
            (vec![1], vec![1])
        } else {
            (self.tree.var_shape(var), var.chunks.clone())
        };
        let esize = var.decoded_esize();
        let chunk_bytes = product(&chunks)?
            .checked_mul(esize)
            .filter(|&bytes| bytes as u64 <= crate::machine::memory_bytes())
            .ok_or_else(|| {
                Error::TooLarge(format!(
                    "variable {}: a chunk of {chunks:?} elements is larger than this machine's memory",
                    var.name
                ))
            })?;
        if var.strings == StringStorage::Objects && !string_width::slots_fit(chunk_bytes) {
            return Err(string_width::slots_too_large(
                &var.name,
                chunk_bytes / esize.max(1),
                var.maxstrlen,
            ));
        }
        self.store
            .allow_objects_up_to(largest_stored_chunk(chunk_bytes, var.ty, &chain));
        let key_rank = chunks.len().saturating_sub(usize::from(var.complex));
        Ok(Geometry {
            ty: var.ty,
            scalar: var.is_scalar(),
            chain,
            quantize: var.quantize_algorithm(),
            fill: fill_element(var),
            cacheable: chunk_bytes <= var.cache.size / 4,
            cache_bytes: var.cache.size,
            shape,
            chunks,
            esize,
            chunk_bytes,
            // Where the array is: a dataset that is one array has it at its root.
            path: var
                .stored_path
                .clone()
                .unwrap_or_else(|| crate::format::write::var_path(&self.tree, g, var)),
            sep: var.dimension_separator,
            v3_keys: var.v3_chunk_keys,
            key_rank,
            swap: swapped(var, esize),
            fortran: var.fortran_order && var.dims.len() > 1,
        })
    }
}

/// The strings as the variable stores them: numpy unicode strings as their code units (each
/// must be UTF-8), others as they are.
fn stored_strings<'a>(var: &Var, data: &'a [Vec<u8>]) -> Result<Cow<'a, [Vec<u8>]>> {
    if var.strings != StringStorage::Ucs4 {
        return Ok(Cow::Borrowed(data));
    }
    data.iter()
        .map(|s| match std::str::from_utf8(s) {
            Ok(text) => Ok(ucs4::encode(text, var.endian)),
            Err(_) => Err(Error::Invalid(format!(
                "variable {}: a string that is not UTF-8 cannot be stored as numpy unicode (<U)",
                var.name
            ))),
        })
        .collect::<Result<Vec<_>>>()
        .map(Cow::Owned)
}

/// The bytes of the slots for the `n` strings of a request, `width` bytes each: refused when
/// they would take more than a quarter of the machine's memory (slots widen with the longest
/// string a chunk holds).
fn request_slot_bytes(n: usize, width: usize) -> Result<usize> {
    n.checked_mul(width)
        .filter(|&b| b as u64 <= crate::machine::memory_bytes() / 4)
        .ok_or_else(|| {
            Error::TooLarge(format!(
                "{n} strings in slots of {width} bytes (the longest string of their chunks) \
                 take more than a quarter of this machine's memory"
            ))
        })
}

/// Zeroed slots for the `n` strings of a request ([`request_slot_bytes`]). The zeroed memory
/// is the system's, so slots never written cost no pages.
fn request_slots(n: usize, width: usize) -> Result<Vec<u8>> {
    Ok(vec![0u8; request_slot_bytes(n, width)?])
}

/// A scalar's request in the one-element index space its chunk is stored in.
fn scalar_slab(scalar: bool, slab: &Slab) -> Slab {
    if scalar {
        Slab {
            start: vec![0],
            count: vec![slab.count.first().copied().unwrap_or(1).min(1)],
            stride: vec![1],
        }
    } else {
        slab.clone()
    }
}

/// The fill element of a variable in native order (`decoded_esize` bytes): what its chunks
/// never written hold.
pub(super) fn fill_element(var: &Var) -> Vec<u8> {
    let esize = var.decoded_esize();
    if var.record.is_some() {
        // No attribute holds a compound value (a ubyte one renamed `_FillValue` included).
        let mut fill = var.stored_fill.clone().unwrap_or_default();
        fill.resize(esize, 0);
        return fill;
    }
    if var.vlen.is_some() {
        let mut slot = vec![0u8; esize];
        if !var.no_fill {
            codec::put_slot_item(&mut slot, &var.vlen_fill().unwrap_or_default());
        }
        return slot;
    }
    if var.strings == StringStorage::Objects && var.ty == NcType::String {
        let text = match var.att("_FillValue").map(|a| &a.values) {
            // Zarr v3's `fill_value` is what was never written, when a store gave one.
            Some(crate::model::Values::Strings(s))
                if !(var.zarr_v3 && var.stored_fill.is_some()) =>
            {
                s.first().cloned()
            }
            _ => None,
        };
        let mut slot = vec![0u8; esize];
        if !var.no_fill {
            let text = text.or_else(|| var.stored_fill.clone()).unwrap_or_default();
            codec::put_slot_item(&mut slot, &text);
        }
        return slot;
    }
    let mut e = match var.att("_FillValue").map(|a| &a.values) {
        _ if var.zarr_v3
            && let Some(stored) = &var.stored_fill =>
        {
            stored.clone()
        }
        Some(crate::model::Values::Fixed { ty, bytes })
            if *ty == var.ty && bytes.len() >= esize =>
        {
            bytes[..esize].to_vec()
        }
        Some(crate::model::Values::Strings(s)) if var.ty == NcType::String && !s.is_empty() => {
            match var.strings {
                StringStorage::Ucs4 => ucs4::encode(&String::from_utf8_lossy(&s[0]), var.endian),
                _ => s[0].clone(),
            }
        }
        _ if var.no_fill => vec![0; esize],
        _ => match &var.stored_fill {
            Some(b) => b.clone(),
            None => var.ty.default_fill(),
        },
    };
    e.resize(esize, 0);
    e
}

impl Dataset {
    /// Checks a request against the variable's shape. `grow` allows writes past the end of
    /// unlimited dimensions.
    pub fn check_slab(&self, g: GroupId, v: usize, slab: &Slab, grow: bool) -> Result<()> {
        let var = &self.tree.group(g).vars[v];
        let rank = var.dims.len().max(usize::from(var.is_scalar()));
        let n = if var.is_scalar() { 1 } else { rank };
        if slab.start.len() != n || slab.count.len() != n || slab.stride.len() != n {
            return Err(Error::Invalid(format!(
                "request rank does not match {}",
                var.name
            )));
        }
        if var.is_scalar() {
            if slab.start[0] != 0 {
                return Err(Error::InvalidCoords {
                    var: var.name.clone(),
                    start: slab.start[0],
                    len: 1,
                });
            }
            if slab.count[0] > 1 {
                return Err(Error::Edge {
                    var: var.name.clone(),
                });
            }
            return Ok(());
        }
        for (i, d) in var.dims.iter().enumerate() {
            let dim = self.tree.dim(*d);
            let (s, c, st) = (slab.start[i], slab.count[i], slab.stride[i]);
            if st == 0 || st > i64::MAX as u64 {
                return Err(Error::Stride(st as i64));
            }
            let unlimited_grow = grow && dim.unlimited;
            if !unlimited_grow && s > dim.len {
                return Err(Error::InvalidCoords {
                    var: var.name.clone(),
                    start: s,
                    len: dim.len,
                });
            }
            if !unlimited_grow && s == dim.len && c > 0 {
                return Err(Error::InvalidCoords {
                    var: var.name.clone(),
                    start: s,
                    len: dim.len,
                });
            }
            if c > 0 {
                let last = (c - 1)
                    .checked_mul(st)
                    .and_then(|x| x.checked_add(s))
                    .ok_or_else(|| Error::Edge {
                        var: var.name.clone(),
                    })?;
                if !unlimited_grow && last >= dim.len {
                    return Err(Error::Edge {
                        var: var.name.clone(),
                    });
                }
            }
        }
        Ok(())
    }

    fn cache_for(&mut self, g: GroupId, v: usize) -> &mut ChunkCache {
        let settings = self.tree.group(g).vars[v].cache;
        self.caches
            .entry((g.0, v))
            .or_insert_with(|| ChunkCache::new(settings.size, settings.nelems))
    }

    /// Decodes one stored chunk to native order, checking its size.
    fn decode_chunk(geo: &Geometry, key: &StoreKey, stored: Vec<u8>) -> Result<Vec<u8>> {
        let mut raw = geo
            .chain
            .decode(stored, geo.chunk_bytes)
            .map_err(|e| in_chunk(e, key))?;
        if raw.len() != geo.chunk_bytes {
            return Err(Error::ChunkSize {
                key: key.to_string(),
                got: raw.len(),
                expected: geo.chunk_bytes,
            });
        }
        if geo.swap {
            convert::swap_bytes_in_place(&mut raw, geo.esize);
        }
        if geo.fortran {
            raw = transpose::f_to_c(&raw, &geo.chunks, geo.esize);
        }
        Ok(raw)
    }

    /// Decodes a stored chunk straight into `out` (exactly `chunk_bytes` long) in native order.
    /// Fortran-order chunks need a reordering buffer: they go through [`Self::decode_chunk`].
    fn decode_chunk_into(
        geo: &Geometry,
        key: &StoreKey,
        stored: &[u8],
        out: &mut [u8],
    ) -> Result<()> {
        Self::decode_chunk_into_on(geo, key, stored, out, 1)
    }

    /// Decodes as [`Dataset::decode_chunk_into`], sharing one chunk's decoding among up to
    /// `threads` threads where its codecs can ([`Chain::decode_into_on`]).
    fn decode_chunk_into_on(
        geo: &Geometry,
        key: &StoreKey,
        stored: &[u8],
        out: &mut [u8],
        threads: usize,
    ) -> Result<()> {
        if geo.fortran {
            out.copy_from_slice(&Self::decode_chunk(geo, key, stored.to_vec())?);
            return Ok(());
        }
        let n = geo
            .chain
            .decode_into_on(stored, out, threads)
            .map_err(|e| in_chunk(e, key))?;
        if n != out.len() {
            return Err(Error::ChunkSize {
                key: key.to_string(),
                got: n,
                expected: out.len(),
            });
        }
        if geo.swap {
            convert::swap_bytes_in_place(out, geo.esize);
        }
        Ok(())
    }

    /// Decodes at least the bytes at `wanted` (element-aligned ranges) of a stored chunk into
    /// their places in `out` (a whole chunk's length), in native order, when its codec can
    /// decode parts and the chunk declares the right size; `Ok(false)` when it must be decoded
    /// whole.
    fn decode_chunk_parts_into(
        geo: &Geometry,
        key: &StoreKey,
        stored: &[u8],
        out: &mut [u8],
        wanted: &[Range<usize>],
    ) -> Result<bool> {
        if geo.partial_decode() == PartialDecode::Whole {
            return Ok(false);
        }
        let done = geo
            .chain
            .decode_parts(stored, out, wanted)
            .map_err(|e| in_chunk(e, key))?;
        if done && geo.swap {
            for r in wanted {
                convert::swap_bytes_in_place(&mut out[r.clone()], geo.esize);
            }
        }
        Ok(done)
    }

    /// Reads a hyperslab of a fixed-size type into `out`, laid out with element strides
    /// `mem_strides` (C order over `count` when `None`), converted to `memtype`.
    /// Returns true when some value was out of range for `memtype`.
    pub fn get_fixed(
        &mut self,
        g: GroupId,
        v: usize,
        slab: &Slab,
        mem_strides: Option<&[i64]>,
        memtype: NcType,
        out: &mut [u8],
    ) -> Result<bool> {
        self.ensure_data_mode()?;
        self.check_slab(g, v, slab, false)?;
        if self.record_type(g, v).is_some() {
            // No conversion between a compound type and an atomic one.
            return Err(Error::BadType(memtype.id()));
        }
        let geo = self.geometry(g, v)?;
        if memtype == NcType::String || geo.ty == NcType::String {
            return Err(Error::Char);
        }
        if (memtype == NcType::Char) != (geo.ty == NcType::Char) {
            return Err(Error::Char);
        }
        let slab = scalar_slab(geo.scalar, slab);
        let n = product(&slab.count)?;
        if n == 0 {
            return Ok(false);
        }
        let c_strides = c_order_strides(&slab.count)?;
        if memtype == geo.ty {
            let strides = mem_strides.map_or(c_strides, <[i64]>::to_vec);
            self.read_into(g, v, &geo, &slab, out, &strides)?;
            return Ok(false);
        }
        let mut tmp = vec![0u8; n * geo.esize];
        self.read_into(g, v, &geo, &slab, &mut tmp, &c_strides)?;
        let msize = memtype.size();
        let classic = self.tree.classic_model;
        match mem_strides {
            None => {
                let dst = out
                    .get_mut(..n * msize)
                    .ok_or_else(|| Error::Invalid("output buffer too small".into()))?;
                convert::convert_flagging_range(geo.ty, &tmp, memtype, dst, classic)
            }
            Some(strides) => {
                let mut converted = vec![0u8; n * msize];
                let range = convert::convert_flagging_range(
                    geo.ty,
                    &tmp,
                    memtype,
                    &mut converted,
                    classic,
                )?;
                scatter(&converted, &slab.count, out, strides, msize)?;
                Ok(range)
            }
        }
    }

    /// Reads an NC_STRING hyperslab, in C order over `count`.
    pub fn get_strings(&mut self, g: GroupId, v: usize, slab: &Slab) -> Result<Vec<Vec<u8>>> {
        self.refuse_vlen_as_strings(g, v)?;
        self.get_items(g, v, slab)
    }

    /// Reads a hyperslab of a variable of a variable-length type, in C order over `count`:
    /// each value's sequence as the bytes of its values (the base type's, native order).
    pub fn get_vlens(&mut self, g: GroupId, v: usize, slab: &Slab) -> Result<Vec<Vec<u8>>> {
        self.refuse_all_but_vlens(g, v)?;
        self.get_items(g, v, slab)
    }

    /// Writes values of a variable of a variable-length type (C order over `count`), each
    /// sequence as the bytes of its values (the base type's, native order).
    pub fn put_vlens(&mut self, g: GroupId, v: usize, slab: &Slab, data: &[Vec<u8>]) -> Result<()> {
        self.refuse_all_but_vlens(g, v)?;
        self.put_items(g, v, slab, data)
    }

    /// Values of a variable-length type move in that type only, never as strings.
    fn refuse_vlen_as_strings(&self, g: GroupId, v: usize) -> Result<()> {
        match self.tree.group(g).vars[v].vlen {
            Some(_) => Err(Error::BadType(NcType::String.id())),
            None => Ok(()),
        }
    }

    fn refuse_all_but_vlens(&self, g: GroupId, v: usize) -> Result<()> {
        match self.tree.group(g).vars[v].vlen {
            Some(_) => Ok(()),
            None => Err(Error::BadType(0)),
        }
    }

    /// Reads the items of a variable of strings or sequences, in C order over `count`.
    fn get_items(&mut self, g: GroupId, v: usize, slab: &Slab) -> Result<Vec<Vec<u8>>> {
        self.ensure_data_mode()?;
        self.check_slab(g, v, slab, false)?;
        let slab = scalar_slab(self.tree.group(g).vars[v].is_scalar(), slab);
        let n = product(&slab.count)?;
        let (slots, width) = self.widening_slots(g, v, |ds, geo| {
            if geo.ty != NcType::String {
                return Err(Error::Char);
            }
            let mut slots = request_slots(n, geo.esize)?;
            if n > 0 {
                ds.read_into(
                    g,
                    v,
                    &geo,
                    &slab,
                    &mut slots,
                    &c_order_strides(&slab.count)?,
                )?;
            }
            Ok((slots, geo.esize))
        })?;
        let var = &self.tree.group(g).vars[v];
        let slots = slots.chunks_exact(width);
        Ok(match var.strings {
            StringStorage::Ucs4 => slots.map(|s| ucs4::decode(s, var.endian)).collect(),
            StringStorage::Objects => slots.map(|s| codec::slot_item(s).to_vec()).collect(),
            StringStorage::Bytes => slots
                .map(|s| {
                    let end = s.iter().position(|b| *b == 0).unwrap_or(s.len());
                    s[..end].to_vec()
                })
                .collect(),
        })
    }

    /// Core read: every piece of the request copied into `out` (variable type, native order).
    ///
    /// Cached chunks are copied first. Of the rest, whole chunks that land in `out` as one
    /// contiguous run are read (and decoded) straight into it and are not cached; the others
    /// are fetched and decoded into chunk buffers, then copied. Both go in bounded batches,
    /// one concurrent fetch per batch, decoding in parallel across the batch's chunks; coded
    /// chunks of a remote store instead stream through in one pass, a bounded number fetched
    /// ahead of their decoding.
    #[allow(clippy::too_many_arguments)]
    fn read_into(
        &mut self,
        g: GroupId,
        v: usize,
        geo: &Geometry,
        slab: &Slab,
        out: &mut [u8],
        strides: &[i64],
    ) -> Result<()> {
        let proj = Projection::new(
            &geo.shape,
            &geo.chunks,
            &slab.start,
            &slab.count,
            &slab.stride,
        )?;
        let mut all = proj.pieces();
        let pieces: Vec<ChunkPiece> = all.by_ref().take(MOST_PIECES_AT_ONCE).collect();
        if pieces.len() == MOST_PIECES_AT_ONCE {
            // A request through very many chunks is read a batch of them at a time, without
            // reading ahead.
            self.stop_read_ahead(g, v);
            let mut batch = pieces;
            while !batch.is_empty() {
                self.read_pieces(g, v, geo, &batch, out, strides)?;
                batch = all.by_ref().take(MOST_PIECES_AT_ONCE).collect();
            }
            return Ok(());
        }
        let reads_ahead = self.read_ahead_depth(g, v, geo, &pieces) > 0;
        let mut ahead = 0;
        if reads_ahead {
            self.take_read_ahead(g, v, geo, &pieces)?;
            // What was handed over may show that decoding ahead saves nothing.
            ahead = self.read_ahead_depth(g, v, geo, &pieces);
        }
        if ahead == 0 {
            self.stop_read_ahead(g, v);
        }
        self.read_pieces(g, v, geo, &pieces, out, strides)?;
        if reads_ahead {
            self.release_read_whole(g, v, geo, &pieces);
        }
        if ahead > 0 {
            self.read_ahead_after(g, v, geo, &pieces, ahead);
        }
        Ok(())
    }

    /// Reads the `pieces` of a request into `out`: from the cache, straight from the store, or
    /// through chunk buffers, each piece the cheapest way.
    fn read_pieces(
        &mut self,
        g: GroupId,
        v: usize,
        geo: &Geometry,
        pieces: &[ChunkPiece],
        out: &mut [u8],
        strides: &[i64],
    ) -> Result<()> {
        let mut direct: Vec<(usize, Range<usize>)> = Vec::new();
        let mut buffered: Vec<usize> = Vec::new();
        let mut by_runs: Vec<usize> = Vec::new();
        let mut by_rows: Vec<usize> = Vec::new();
        let parts_possible = geo.stored_as_is() && self.store.is_local();
        {
            let cache = self.cache_for(g, v);
            for (i, p) in pieces.iter().enumerate() {
                if let Some(buf) = cache.get(&p.chunk) {
                    read_piece(buf, &geo.chunks, out, strides, p, geo.esize)?;
                    continue;
                }
                match whole_chunk_range(&geo.chunks, out.len(), strides, p, geo.esize)? {
                    Some(range) => direct.push((i, range)),
                    None if parts_possible => {
                        match by_runs::route(geo, out.len(), strides, p, true)? {
                            by_runs::Route::Runs => by_runs.push(i),
                            by_runs::Route::Rows => by_rows.push(i),
                            by_runs::Route::Whole => buffered.push(i),
                        }
                    }
                    None => buffered.push(i),
                }
            }
        }
        buffered.extend(by_runs::read(
            self.store.as_ref(),
            split::Target::new(geo, pieces, out, strides),
            &by_runs,
        )?);
        // Chunks the cache will not keep are decoded and copied in one parallel step.
        let unkept = if geo.cache_keeps(buffered.len()) {
            self.first_sparse_reads(g, v, geo, pieces, &mut buffered, out.len(), strides)?
        } else {
            std::mem::take(&mut buffered)
        };
        if !unkept.is_empty() {
            let mut scattered = Vec::new();
            let mut spanned = Vec::new();
            let mut strided = Vec::new();
            let remote_raw = geo.stored_as_is() && !self.store.is_local();
            for i in unkept {
                if remote_raw
                    && by_runs::route(geo, out.len(), strides, &pieces[i], false)?
                        == by_runs::Route::Runs
                    && self.store.reads_runs_in_place(&geo.key(&pieces[i].chunk)?)
                {
                    spanned.push(i);
                } else if decoded::worth_it(geo, out.len(), strides, &pieces[i])? {
                    scattered.push(i);
                } else {
                    strided.push(i);
                }
            }
            let mut rest = decoded::read_rows(
                self.store.as_ref(),
                split::Target::new(geo, pieces, out, strides),
                &strided,
                landing_batch_len(geo.chunk_bytes, self.store.is_local()),
            )?;
            rest.extend(by_runs::read(
                self.store.as_ref(),
                split::Target::new(geo, pieces, out, strides),
                &spanned,
            )?);
            rest.extend(decoded::read(
                self.store.as_ref(),
                split::Target::new(geo, pieces, out, strides),
                &scattered,
                landing_batch_len(geo.chunk_bytes, self.store.is_local()),
            )?);
            buffered.extend(rest);
        }
        by_runs::read_rows(
            self.store.as_ref(),
            split::Target::new(geo, pieces, out, strides),
            &by_rows,
        )?;
        // Direct targets must be disjoint (an `imap` can make them overlap): keep the first of
        // any overlapping ones direct and copy the others.
        direct.sort_by_key(|(_, r)| r.start);
        let mut end = 0;
        direct.retain(|(i, r)| {
            let keep = r.start >= end;
            if keep {
                end = r.end;
            } else {
                buffered.push(*i);
            }
            keep
        });
        buffered.sort_unstable();
        self.read_direct(geo, pieces, &direct, out)?;
        self.read_buffered(g, v, geo, pieces, &buffered, out, strides)
    }

    /// Takes out of `buffered` the pieces whose chunks are read sparsely for the first time
    /// (see [`ChunkCache::admits`]): pieces needing at most half of their chunk (half of its
    /// decoded prefix when the codec decodes a prefix), copied run by run. They are decoded
    /// (only as far as the piece needs when the codec can decode parts) into a worker's buffer
    /// and not kept; the others stay in `buffered` (and in the cache). Chunks that a remote
    /// store fetches whole anyway ([`remote_parts::fetched_whole`]) are kept from their first
    /// read: a reader going row by row (`ncdump`) would otherwise fetch each chunk again for
    /// its next row.
    #[allow(clippy::too_many_arguments)]
    fn first_sparse_reads(
        &mut self,
        g: GroupId,
        v: usize,
        geo: &Geometry,
        pieces: &[ChunkPiece],
        buffered: &mut Vec<usize>,
        out_len: usize,
        strides: &[i64],
    ) -> Result<Vec<usize>> {
        let by_prefix = geo.partial_decode() == PartialDecode::Prefix;
        let mut first = Vec::new();
        let mut again = Vec::with_capacity(buffered.len());
        for i in std::mem::take(buffered) {
            let p = &pieces[i];
            // What the piece costs to decode: the chunk's prefix up to its last element when
            // the codec stops there, its elements otherwise (only the blocks that hold them when
            // the codec decodes blocks; the whole chunk, but into a worker's reused buffer
            // instead of a new cache entry, when it cannot).
            let needed = if by_prefix {
                p.chunk_region.c_order_end(&geo.chunks)
            } else {
                p.chunk_region.num_elements()
            };
            let sparse = needed.saturating_mul(2) <= geo.chunk_elems()
                && decoded::worth_it(geo, out_len, strides, p)?
                && !remote_parts::fetched_whole(self.store.as_ref(), geo, p, out_len, strides)?;
            if sparse && !self.cache_for(g, v).admits(&p.chunk) {
                first.push(i);
            } else {
                again.push(i);
            }
        }
        *buffered = again;
        Ok(first)
    }

    /// Reads whole chunks straight into their disjoint, sorted ranges of `out`.
    fn read_direct(
        &self,
        geo: &Geometry,
        pieces: &[ChunkPiece],
        direct: &[(usize, Range<usize>)],
        out: &mut [u8],
    ) -> Result<()> {
        let mut targets: Vec<(StoreKey, &mut [u8])> = Vec::with_capacity(direct.len());
        let (mut rest, mut consumed) = (out, 0usize);
        for (i, r) in direct {
            let (_, tail) = std::mem::take(&mut rest).split_at_mut(r.start - consumed);
            let (mine, tail) = tail.split_at_mut(r.len());
            (rest, consumed) = (tail, r.end);
            targets.push((geo.key(&pieces[*i].chunk)?, mine));
        }
        // Chunks decode straight into the caller's buffer: only the workers' read buffers are
        // used, from batch to batch.
        let buffers = WorkerBuffers::new();
        let workers = rayon::current_num_threads();
        let local = self.store.is_local();
        let held = chunks_held(geo.chunk_bytes, local);
        // Coded chunks of a remote store stream through in one pass, a batch of them fetched
        // ahead of their decoding (batch after batch, each would wait for its last chunk
        // before the next is asked for).
        let pass = if local || geo.stored_as_is() {
            held
        } else {
            targets.len().max(1)
        };
        for batch in targets.chunks_mut(pass) {
            // Fewer chunks than workers (a loop reading one chunk at a time): each chunk's
            // decoding is shared among the idle ones where its codec can split it.
            let threads = (workers / batch.len().min(held).max(1))
                .min(geo.chunk_bytes / MIN_BYTES_PER_DECODE_THREAD)
                .max(1);
            let keys: Vec<StoreKey> = batch.iter().map(|(k, _)| k.clone()).collect();
            if geo.stored_as_is() {
                let mut outs: Vec<&mut [u8]> = batch.iter_mut().map(|(_, o)| &mut **o).collect();
                let lens = self.store.get_many_into(&keys, &mut outs)?;
                outs.into_par_iter()
                    .zip(lens)
                    .zip(&keys)
                    .try_for_each(|((o, len), key)| finish_direct(geo, key, len, o))?;
            } else {
                let outs: Vec<&mut [u8]> = batch.iter_mut().map(|(_, o)| &mut **o).collect();
                chunk_io::fetch_each(
                    self.store.as_ref(),
                    &keys,
                    outs,
                    held,
                    &buffers,
                    |_, o, key, stored| match stored {
                        None => {
                            fill_pattern(o, &geo.fill);
                            Ok(())
                        }
                        Some(b) => Self::decode_chunk_into_on(geo, key, b, o, threads),
                    },
                )?;
            }
        }
        Ok(())
    }

    /// Reads the chunks of `wanted` pieces into chunk buffers and copies the pieces into `out`;
    /// decoded chunks small enough are kept in the cache.
    #[allow(clippy::too_many_arguments)]
    fn read_buffered(
        &mut self,
        g: GroupId,
        v: usize,
        geo: &Geometry,
        pieces: &[ChunkPiece],
        wanted: &[usize],
        out: &mut [u8],
        strides: &[i64],
    ) -> Result<()> {
        // A request whose chunks cannot all stay in the cache would only cycle them through
        // it (evicting what a later request could use): such chunks are not kept.
        let keep = geo.cache_keeps(wanted.len());
        let mut fill_chunk: Option<Vec<u8>> = None;
        let mut scratch: Vec<Vec<u8>> = Vec::new();
        let buffers = WorkerBuffers::new();
        for batch in wanted.chunks(batch_len(geo.chunk_bytes, self.store.is_local())) {
            let keys: Vec<StoreKey> = batch
                .iter()
                .map(|i| geo.key(&pieces[*i].chunk))
                .collect::<Result<_>>()?;
            let present = self.fetch_chunks(geo, &keys, &mut scratch, &buffers)?;
            for (k, (i, found)) in batch.iter().zip(present).enumerate() {
                let p = &pieces[*i];
                if !found {
                    let f = fill_chunk.get_or_insert_with(|| Self::filled_chunk(geo));
                    read_piece(f, &geo.chunks, out, strides, p, geo.esize)?;
                    continue;
                }
                read_piece(&scratch[k], &geo.chunks, out, strides, p, geo.esize)?;
                if keep {
                    let buf = std::mem::take(&mut scratch[k]);
                    let evicted = self.cache_for(g, v).insert(p.chunk.clone(), buf, false);
                    self.store_evicted(g, v, geo, evicted)?;
                }
            }
        }
        Ok(())
    }

    /// Fetches and decodes the chunks of `keys` into `scratch[..keys.len()]` (native order),
    /// returning which exist. Uncompressed chunks are read into the scratch buffers in place,
    /// coded ones through the workers' read `buffers` ([`chunk_io::fetch_each`]), so buffers
    /// are reused from batch to batch instead of allocated per chunk.
    fn fetch_chunks(
        &self,
        geo: &Geometry,
        keys: &[StoreKey],
        scratch: &mut Vec<Vec<u8>>,
        buffers: &WorkerBuffers<ChunkBuffers>,
    ) -> Result<Vec<bool>> {
        if scratch.len() < keys.len() {
            scratch.resize_with(keys.len(), Vec::new);
        }
        let scratch = &mut scratch[..keys.len()];
        if !geo.stored_as_is() {
            let mut present = vec![false; keys.len()];
            let slots: Vec<_> = scratch.iter_mut().zip(present.iter_mut()).collect();
            chunk_io::fetch_each(
                self.store.as_ref(),
                keys,
                slots,
                keys.len(),
                buffers,
                |_, (slot, found), key, stored| {
                    if let Some(b) = stored {
                        slot.resize(geo.chunk_bytes, 0);
                        Self::decode_chunk_into(geo, key, b, slot)?;
                        *found = true;
                    }
                    Ok(())
                },
            )?;
            return Ok(present);
        }
        for slot in scratch.iter_mut() {
            slot.resize(geo.chunk_bytes, 0);
        }
        let lens = {
            let mut outs: Vec<&mut [u8]> = scratch.iter_mut().map(Vec::as_mut_slice).collect();
            self.store.get_many_into(keys, &mut outs)?
        };
        scratch
            .par_iter_mut()
            .zip(lens)
            .zip(keys)
            .map(|((slot, len), key)| match len {
                None => Ok(false),
                Some(_) => finish_direct(geo, key, len, slot).map(|()| true),
            })
            .collect()
    }

    /// Stores dirty chunks the cache of variable `v` evicted. When one fails, all of them go
    /// back into the cache, still dirty, so a later eviction or flush stores them (the error
    /// is reported now, and no data are lost; those stored already are stored again).
    fn store_evicted(
        &mut self,
        g: GroupId,
        v: usize,
        geo: &Geometry,
        evicted: Evicted,
    ) -> Result<()> {
        if evicted.is_empty() {
            return Ok(());
        }
        let chunks: Vec<(&ChunkIndex, &[u8])> =
            evicted.iter().map(|(idx, data)| (idx, &data[..])).collect();
        let stored = self.store_chunks(geo, &chunks);
        if stored.is_err() {
            self.cache_for(g, v).restore_dirty(evicted);
        }
        stored
    }

    /// Encodes and stores `chunks` (native order in), in parallel, in buffers each worker
    /// keeps.
    fn store_chunks(&self, geo: &Geometry, chunks: &[(&ChunkIndex, &[u8])]) -> Result<()> {
        let buffers: WorkerBuffers<EncodeBuffers> = WorkerBuffers::new();
        chunk_io::store_each(
            self.store.as_ref(),
            chunks,
            batch_len(geo.chunk_bytes, self.store.is_local()),
            &buffers,
            |&(idx, data), b, put| {
                let (key, stored) = encoded::encode_chunk(geo, idx, data, b)?;
                put(&key, stored)
            },
        )
    }

    /// Writes a hyperslab of a fixed-size type from `data` (memtype values laid out with
    /// `mem_strides`, C order over `count` when `None`). Returns true when some value was out
    /// of range for the variable's type, or for the 16-bit floats it stores (it is written
    /// converted all the same).
    pub fn put_fixed(
        &mut self,
        g: GroupId,
        v: usize,
        slab: &Slab,
        mem_strides: Option<&[i64]>,
        memtype: NcType,
        data: &[u8],
    ) -> Result<bool> {
        self.check_writable()?;
        if self.record_type(g, v).is_some() {
            return Err(Error::BadType(memtype.id()));
        }
        self.ensure_data_mode()?;
        self.check_slab(g, v, slab, true)?;
        let geo = self.geometry(g, v)?;
        if memtype == NcType::String
            || geo.ty == NcType::String
            || (memtype == NcType::Char) != (geo.ty == NcType::Char)
        {
            return Err(Error::Char);
        }
        let half_floats = self.tree.group(g).vars[v].half_floats.is_some();
        let slab = scalar_slab(geo.scalar, slab);
        let n = product(&slab.count)?;
        if n == 0 {
            return Ok(false);
        }
        let c_strides = c_order_strides(&slab.count)?;
        let msize = memtype.size();
        // Gather the caller's values into C order of the request, converted to the variable type.
        let gathered;
        let src: &[u8] = match mem_strides {
            Some(strides) => {
                let mut tmp = vec![0u8; n * msize];
                gather(data, strides, &slab.count, &mut tmp, msize)?;
                gathered = tmp;
                &gathered
            }
            None => data
                .get(..n * msize)
                .ok_or_else(|| Error::Invalid("input buffer too small".into()))?,
        };
        // Converted to the variable's type (and quantized) only when needed.
        let (values, range): (std::borrow::Cow<[u8]>, bool) =
            if memtype == geo.ty && geo.quantize.is_none() {
                (std::borrow::Cow::Borrowed(src), false)
            } else {
                let mut out = vec![0u8; n * geo.ty.size()];
                let range = convert::convert_flagging_range(
                    memtype,
                    src,
                    geo.ty,
                    &mut out,
                    self.tree.classic_model,
                )?;
                if let Some(q) = geo.quantize {
                    quantize_in_place(q, geo.ty, &geo.fill, &mut out);
                }
                (std::borrow::Cow::Owned(out), range)
            };
        // Stored as 16-bit floats: a value past their range is stored as an infinity.
        let range = range || (half_floats && codec::past_half_range(&values));
        self.grow_unlimited(g, v, &slab);
        self.write_from(g, v, geo, &slab, &values, &c_strides)?;
        Ok(range)
    }

    /// Writes NC_STRING values (C order over `count`), each whole: a string longer than the
    /// variable's width widens it first ([`Dataset::widen_strings`]).
    pub fn put_strings(
        &mut self,
        g: GroupId,
        v: usize,
        slab: &Slab,
        data: &[Vec<u8>],
    ) -> Result<()> {
        self.refuse_vlen_as_strings(g, v)?;
        self.put_items(g, v, slab, data)
    }

    /// Writes the items of a variable of strings or sequences, each whole (see
    /// [`Dataset::put_strings`]).
    fn put_items(&mut self, g: GroupId, v: usize, slab: &Slab, data: &[Vec<u8>]) -> Result<()> {
        self.check_writable()?;
        self.ensure_data_mode()?;
        self.check_slab(g, v, slab, true)?;
        let var = &self.tree.group(g).vars[v];
        if var.ty != NcType::String {
            return Err(Error::Char);
        }
        let objects = var.strings == StringStorage::Objects;
        let maxstrlen = var.maxstrlen;
        let slab = scalar_slab(var.is_scalar(), slab);
        // Fails here, before anything changes, when the variable's data cannot be served.
        self.geometry(g, v)?;
        let n = product(&slab.count)?;
        if n == 0 {
            return Ok(());
        }
        let data = data
            .get(..n)
            .ok_or_else(|| Error::Invalid("too few strings".into()))?;
        let data = stored_strings(&self.tree.group(g).vars[v], data)?;
        let longest = data.iter().map(Vec::len).max().unwrap_or(0);
        if longest > maxstrlen {
            self.widen_strings(g, v, longest)?;
        }
        let strides = c_order_strides(&slab.count)?;
        // Refused before anything changes when the request's slots cannot be had.
        request_slot_bytes(n, self.tree.group(g).vars[v].decoded_esize())?;
        self.grow_unlimited(g, v, &slab);
        self.widening_slots(g, v, |ds, geo| {
            let width = geo.esize;
            let mut slots = request_slots(n, width)?;
            for (dst, s) in slots.chunks_exact_mut(width).zip(data.iter()) {
                if objects {
                    codec::put_slot_item(dst, s);
                } else {
                    // The width holds every string now; `min` only keeps a slip from panicking.
                    let len = s.len().min(width);
                    dst[..len].copy_from_slice(&s[..len]);
                }
            }
            ds.write_from(g, v, geo, &slab, &slots, &strides)
        })
    }

    fn grow_unlimited(&mut self, g: GroupId, v: usize, slab: &Slab) {
        let dims = self.tree.group(g).vars[v].dims.clone();
        for (i, d) in dims.iter().enumerate() {
            if self.tree.dim(*d).unlimited && slab.count[i] > 0 {
                let end = slab.start[i] + (slab.count[i] - 1) * slab.stride[i] + 1;
                let dim = &mut self.tree.dims[d.0];
                dim.len = dim.len.max(end);
            }
        }
    }

    /// Core write: `values` (variable type, native order, laid out with `strides`) into chunks.
    /// `geo` was computed before unlimited dimensions grew; its shape is brought up to date.
    fn write_from(
        &mut self,
        g: GroupId,
        v: usize,
        mut geo: Geometry,
        slab: &Slab,
        values: &[u8],
        strides: &[i64],
    ) -> Result<()> {
        let var = &self.tree.group(g).vars[v];
        if !var.is_scalar() {
            geo.shape = self.tree.var_shape(var);
        }
        let proj = Projection::new(
            &geo.shape,
            &geo.chunks,
            &slab.start,
            &slab.count,
            &slab.stride,
        )?;
        // Set before any chunk is stored: a write that fails part way has stored some. Set
        // once: a variable changed is copied from the snapshots that share it.
        if !self.tree.group(g).vars[v].data_written {
            self.tree.var_mut(g, v).data_written = true;
        }
        let mut all = proj.pieces();
        loop {
            let pieces = next_write_batch(&mut all, &geo);
            if pieces.is_empty() {
                return Ok(());
            }
            self.write_pieces(g, v, &geo, &pieces, values, strides)?;
        }
    }

    /// Writes the `pieces` of a request (some of its chunks): whole chunks straight to the
    /// store, parts of chunks into the chunks read first.
    fn write_pieces(
        &mut self,
        g: GroupId,
        v: usize,
        geo: &Geometry,
        pieces: &[ChunkPiece],
        values: &[u8],
        strides: &[i64],
    ) -> Result<()> {
        let (whole, partial): (Vec<usize>, Vec<usize>) = (0..pieces.len())
            .partition(|i| crate::chunk::projection::is_whole_chunk(&pieces[*i], &geo.chunks));
        self.write_whole_chunks(g, v, geo, pieces, &whole, values, strides)?;
        // Partial chunks not in the cache must be read first: one batch.
        let need: Vec<usize> = {
            let cache = self.cache_for(g, v);
            partial
                .iter()
                .copied()
                .filter(|i| cache.get(&pieces[*i].chunk).is_none())
                .collect()
        };
        let keys: Vec<StoreKey> = need
            .iter()
            .map(|i| geo.key(&pieces[*i].chunk))
            .collect::<Result<_>>()?;
        let fetched = self.store.get_many(&keys)?;
        let decoded: Vec<Option<Vec<u8>>> = fetched
            .into_par_iter()
            .zip(keys.par_iter())
            .map(|(bytes, key)| bytes.map(|b| Self::decode_chunk(geo, key, b)).transpose())
            .collect::<Result<_>>()?;
        // Every chunk read for the write: its values, or `None` when it is not stored.
        let mut existing: std::collections::HashMap<usize, Option<Vec<u8>>> =
            need.iter().copied().zip(decoded).collect();
        for i in partial {
            let p = &pieces[i];
            let mut buf = match self.cache_for(g, v).take(&p.chunk) {
                Some((b, _)) => b,
                None => match existing.remove(&i) {
                    Some(Some(b)) => b,
                    Some(None) => Self::filled_chunk(geo),
                    // Cached when the write began, evicted by an earlier piece's chunk (and
                    // stored then, when it was dirty): the store has it now.
                    None => self.stored_chunk_or_fill(geo, &p.chunk)?,
                },
            };
            write_piece(&mut buf, &geo.chunks, values, strides, p, geo.esize)?;
            let evicted = self.cache_for(g, v).insert(p.chunk.clone(), buf, true);
            self.store_evicted(g, v, geo, evicted)?;
        }
        Ok(())
    }

    /// A chunk of fill values.
    fn filled_chunk(geo: &Geometry) -> Vec<u8> {
        let mut b = vec![0u8; geo.chunk_bytes];
        fill_pattern(&mut b, &geo.fill);
        b
    }

    /// The stored chunk at `idx`, decoded (fill values when there is none).
    fn stored_chunk_or_fill(&self, geo: &Geometry, idx: &[u64]) -> Result<Vec<u8>> {
        let key = geo.key(idx)?;
        match self.store.get(&key)? {
            Some(bytes) => Self::decode_chunk(geo, &key, bytes),
            None => Ok(Self::filled_chunk(geo)),
        }
    }

    /// Writes the chunks that `whole` pieces cover entirely straight to the store, bypassing
    /// the cache (a cached copy is dropped: every byte of it is overwritten): assembled (unless
    /// the chunk is one run of `values`), byte-swapped, encoded and stored in parallel batches
    /// ([`chunk_io::store_each`]), each worker in the buffers it keeps.
    #[allow(clippy::too_many_arguments)]
    fn write_whole_chunks(
        &mut self,
        g: GroupId,
        v: usize,
        geo: &Geometry,
        pieces: &[ChunkPiece],
        whole: &[usize],
        values: &[u8],
        strides: &[i64],
    ) -> Result<()> {
        let buffers: WorkerBuffers<WriteBuffers> = WorkerBuffers::new();
        let local = self.store.is_local();
        let held = chunks_held(geo.chunk_bytes, local);
        // On a remote store the chunks stream out in one pass, a batch of them made ahead of
        // their upload.
        let pass = if local { held } else { whole.len().max(1) };
        for batch in whole.chunks(pass) {
            let cache = self.cache_for(g, v);
            for i in batch {
                cache.take(&pieces[*i].chunk);
            }
            chunk_io::store_each(self.store.as_ref(), batch, held, &buffers, |&i, b, put| {
                let p = &pieces[i];
                let native: &[u8] =
                    match whole_chunk_range(&geo.chunks, values.len(), strides, p, geo.esize)? {
                        Some(run) => &values[run],
                        None => {
                            // A whole piece writes every byte: only growth needs filling.
                            b.assembled.resize(geo.chunk_bytes, 0);
                            let esize = geo.esize;
                            write_piece(&mut b.assembled, &geo.chunks, values, strides, p, esize)?;
                            &b.assembled
                        }
                    };
                let (key, stored) = encoded::encode_chunk(geo, &p.chunk, native, &mut b.encode)?;
                put(&key, stored)
            })?;
        }
        Ok(())
    }

    /// Writes every dirty chunk of one variable, encoded from the cache where they are; they
    /// are marked clean once all are stored (after a failure they stay dirty, and a later
    /// flush stores them again).
    pub(crate) fn flush_var_chunks(&mut self, g: GroupId, v: usize) -> Result<()> {
        let Some(cache) = self.caches.get(&(g.0, v)) else {
            return Ok(());
        };
        let dirty = cache.dirty();
        if dirty.is_empty() {
            return Ok(());
        }
        let geo = self.geometry(g, v)?;
        self.store_chunks(&geo, &dirty)?;
        let stored: Vec<ChunkIndex> = dirty.into_iter().map(|(idx, _)| idx.clone()).collect();
        if let Some(cache) = self.caches.get_mut(&(g.0, v)) {
            cache.mark_clean(&stored);
        }
        Ok(())
    }

    /// Writes every dirty chunk of the dataset: every variable's, even after one fails (the
    /// first error is returned).
    pub(crate) fn flush_chunks(&mut self) -> Result<()> {
        let keys: Vec<(usize, usize)> = self.caches.keys().copied().collect();
        let mut first_error = None;
        for (g, v) in keys {
            if let Err(e) = self.flush_var_chunks(GroupId(g), v) {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// `nc_set_var_chunk_cache`.
    pub fn set_var_chunk_cache(
        &mut self,
        g: GroupId,
        v: usize,
        size: usize,
        nelems: usize,
        preemption: f32,
    ) -> Result<()> {
        if !(0.0..=1.0).contains(&preemption) {
            return Err(Error::Invalid(format!("preemption {preemption}")));
        }
        self.tree.var_mut(g, v).cache = crate::model::CacheSettings {
            size,
            nelems,
            preemption,
        };
        let evicted = self.cache_for(g, v).set_limits(size, nelems);
        if evicted.is_empty() {
            return Ok(());
        }
        let geo = self.geometry(g, v)?;
        self.store_evicted(g, v, &geo, evicted)
    }
}

/// Names the chunk in a codec failure.
fn in_chunk(e: Error, key: &StoreKey) -> Error {
    match e {
        Error::Filter { codec, why } => Error::Filter {
            codec,
            why: format!("{why} (chunk {key})"),
        },
        Error::PastLimit { codec, why } => Error::PastLimit {
            codec,
            why: format!("{why} (chunk {key})"),
        },
        other => other,
    }
}

/// Quantizes native-order float or double values, leaving the fill value alone.
fn quantize_in_place(q: codec::quantize::Quantize, ty: NcType, fill: &[u8], buf: &mut [u8]) {
    match ty {
        NcType::Float => {
            let fill = f32::from_ne_bytes(fill[..4].try_into().unwrap_or([0; 4]));
            let mut vals: Vec<f32> = buf
                .chunks_exact(4)
                .map(|c| f32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            codec::quantize::apply_f32(q, &mut vals, fill);
            for (c, v) in buf.chunks_exact_mut(4).zip(vals) {
                c.copy_from_slice(&v.to_ne_bytes());
            }
        }
        NcType::Double => {
            let fill = f64::from_ne_bytes(fill[..8].try_into().unwrap_or([0; 8]));
            let mut vals: Vec<f64> = buf
                .chunks_exact(8)
                .map(|c| f64::from_ne_bytes(c.try_into().unwrap_or([0; 8])))
                .collect();
            codec::quantize::apply_f64(q, &mut vals, fill);
            for (c, v) in buf.chunks_exact_mut(8).zip(vals) {
                c.copy_from_slice(&v.to_ne_bytes());
            }
        }
        _ => {}
    }
}

/// Copies C-ordered `src` (shape `count`) into `dst` laid out with element strides.
fn scatter(src: &[u8], count: &[u64], dst: &mut [u8], strides: &[i64], esize: usize) -> Result<()> {
    let piece = ChunkPiece::whole(count);
    read_piece(src, count, dst, strides, &piece, esize)
}

/// Copies `src` laid out with element strides into C-ordered `dst` (shape `count`).
fn gather(src: &[u8], strides: &[i64], count: &[u64], dst: &mut [u8], esize: usize) -> Result<()> {
    let piece = ChunkPiece::whole(count);
    write_piece(dst, count, src, strides, &piece, esize)
}
