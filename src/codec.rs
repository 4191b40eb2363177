//! Filters and compressors: a variable's numcodecs chain, applied to one chunk's bytes.
//!
//! Each codec lives in its own file (validated configuration, implementation, tests) and is
//! reachable two ways: from its numcodecs JSON (`{"id": "zlib", "level": 5}`), which is what
//! Zarr metadata stores, and from an HDF5 filter id with `unsigned int` parameters, which is
//! how the netCDF API names filters. Decoding is bounded: every decoder is told how many bytes
//! it may produce and fails instead of allocating more. Knows nothing of stores, metadata
//! objects or netCDF rules; the only thing it is told about the data is its element size.

mod blosc;
mod bz2;
mod crc32c;
mod delta;
mod fixed_scale_offset;
mod fletcher32;
mod gzip;
mod half_floats;
mod numcodecs_quantize;
mod numeric;
pub use half_floats::{HalfFloats, past_half_range};
mod lz4;
mod params;
pub mod quantize;
mod records;
pub use records::{FieldOp, Move, RecordPlan, Records};
mod reused;
mod sharding;
pub use sharding::{ID as SHARDING, new_config as new_sharding_config};
mod shuffle;
mod stage_buffer;
mod stream;
mod vlen;
pub use vlen::{
    ARRAY as VLEN_ARRAY, SLOT_HEADER as OBJECT_SLOT_HEADER, UTF8 as VLEN_UTF8, array_dtype,
    put_slot_item, slot_item,
};
mod zlib;
mod zstd;

use crate::error::{Error, Result};
use serde_json::{Map, Value};
use std::ops::Range;
use std::sync::Arc;

/// A codec's numcodecs configuration (`{"id": ..., ...}`).
pub type Config = Map<String, Value>;

/// HDF5 filter ids of the filters built in.
pub mod hdf5_id {
    pub const DEFLATE: u32 = 1;
    pub const SHUFFLE: u32 = 2;
    pub const FLETCHER32: u32 = 3;
    pub const SZIP: u32 = 4;
    pub const BZIP2: u32 = 307;
    pub const BLOSC: u32 = 32001;
    pub const ZSTD: u32 = 32015;
}

/// What a codec may know about the data it transforms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Context {
    /// Bytes per element (1 for text and bytes).
    pub elem_size: usize,
}

/// How much of an encoded buffer must be decoded to get some of its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartialDecode {
    /// All of it.
    Whole,
    /// Everything up to the last byte wanted (a stream, like a Zstandard frame).
    Prefix,
    /// Only the independently coded blocks that hold the bytes wanted (blosc).
    Blocks,
}

/// Which parts of an encoded buffer decoding some of its bytes reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EncodedParts {
    /// All of it.
    Whole,
    /// Not known from the first bytes given; the first this many bytes tell.
    Head(usize),
    /// Not known from the bytes given; the last this many bytes tell (a Zarr v3 shard's
    /// index at its end).
    Tail(usize),
    /// These byte ranges (sorted, disjoint); the rest of the buffer may hold anything.
    Ranges(Vec<Range<usize>>),
}

/// One configured codec.
pub trait Codec: Send + Sync + std::fmt::Debug {
    /// The numcodecs id.
    fn id(&self) -> &'static str;
    /// The numcodecs configuration that reproduces this codec.
    fn config(&self) -> Config;
    /// The HDF5 filter id and visible parameters, when HDF5 has this filter.
    fn hdf5(&self) -> Option<(u32, Vec<u32>)>;
    /// Encodes one buffer into `out`, replacing what it held; codecs that can write into its
    /// memory do, so that a writer encoding chunk after chunk reuses it.
    fn encode_into(&self, raw: &[u8], out: &mut Vec<u8>) -> Result<()>;
    /// Encodes one buffer into a fresh one.
    fn encode(&self, raw: &[u8]) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.encode_into(raw, &mut out)?;
        Ok(out)
    }
    /// Decodes one buffer into at most `limit` bytes.
    fn decode(&self, encoded: &[u8], limit: usize) -> Result<Vec<u8>>;
    /// Decodes one buffer into the start of `out` (at most `out.len()` bytes) and returns how
    /// many bytes it wrote. The default decodes and copies; codecs that can write in place
    /// override it.
    fn decode_into(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize> {
        let decoded = self.decode(encoded, out.len())?;
        let n = decoded.len().min(out.len());
        out[..n].copy_from_slice(&decoded[..n]);
        Ok(n)
    }
    /// Decodes as [`Codec::decode_into`], sharing the work among up to `threads` threads when
    /// the codec can split one buffer (blosc's blocks); the default decodes on this one.
    fn decode_into_on(&self, encoded: &[u8], out: &mut [u8], _threads: usize) -> Result<usize> {
        self.decode_into(encoded, out)
    }
    /// True when [`Codec::decode_into`] writes straight into `out` (not the default's decode
    /// and copy), so a chain may hand it a reused buffer between stages.
    fn writes_in_place(&self) -> bool {
        false
    }
    /// True when decoding costs about what copying the decoded bytes costs (a byte transform,
    /// a compressor built for speed like LZ4): decoding such chunks ahead and copying them
    /// out later saves nothing.
    fn decodes_at_copy_speed(&self) -> bool {
        false
    }
    /// True when `encoded`, this codec's output, holds no values: a shard of which every inner
    /// chunk was left out as all fill. Such an object need not be stored: a missing one reads
    /// as fill too.
    fn holds_nothing(&self, _encoded: &[u8]) -> bool {
        false
    }
    /// The size of the elements this codec's output holds, when it differs from its
    /// input's (codecs after it in a chain see elements of this size).
    fn encoded_elem_size(&self) -> Option<usize> {
        None
    }
    /// The encoded length of `n` bytes when it depends only on `n`.
    fn encoded_len(&self, _n: usize) -> Option<usize> {
        None
    }
    /// The most bytes `n` bytes encode to, when known without a compressor's worst case:
    /// the exact length where [`Codec::encoded_len`] knows it.
    fn encoded_bound(&self, n: usize) -> Option<usize> {
        self.encoded_len(n)
    }
    /// The error to report when a stage decoding before this codec (the chain's first) fails
    /// with `e`: `e` itself, except for a codec whose input may legitimately pass its bound
    /// (strings longer than their slots), which asks for wider slots instead.
    fn input_failed(&self, e: Error) -> Error {
        e
    }
    /// Decodes at least the bytes at `wanted` (ranges of the decoded buffer) of a buffer that
    /// decodes to exactly `out.len()` bytes, each into its place in `out`; other bytes of `out`
    /// are left unspecified. Only codecs whose buffers declare their decoded size do this, and
    /// only when it is `out.len()` and nothing outside the parts decoded is checked as a whole
    /// (a checksum), so a chunk of the wrong size is still caught. `Ok(false)`: not done (or
    /// it would save nothing); decode the whole buffer.
    fn decode_parts(
        &self,
        _encoded: &[u8],
        _out: &mut [u8],
        _wanted: &[Range<usize>],
    ) -> Result<bool> {
        Ok(false)
    }
    /// How much of a buffer [`Codec::decode_parts`] decodes to get some of its bytes.
    fn partial_decode(&self) -> PartialDecode {
        PartialDecode::Whole
    }
    /// Wanted ranges closer than this many bytes cost [`Codec::decode_parts`] no more
    /// decoding when asked for as one (they lie in one of its smallest parts).
    fn part_gap(&self) -> usize {
        0
    }
    /// How many bytes at the end of an encoded buffer tell, before anything else, which parts
    /// of it [`Codec::encoded_parts`] names (a Zarr v3 shard's index at its end); `None` when
    /// its head tells.
    fn tail_first(&self) -> Option<usize> {
        None
    }
    /// The byte ranges of an encoded buffer of `encoded_len` bytes (decoding to `decoded_len`)
    /// that [`Codec::decode_parts`] reads to decode `wanted`, found from the buffer's first
    /// bytes `head` and last bytes `tail` (empty unless the codec asked for them), so that only
    /// those need be fetched.
    fn encoded_parts(
        &self,
        _head: &[u8],
        _tail: &[u8],
        _encoded_len: usize,
        _decoded_len: usize,
        _wanted: &[Range<usize>],
    ) -> EncodedParts {
        EncodedParts::Whole
    }
}

/// The error of a codec that failed on data.
pub(crate) fn failed(codec: &str, why: impl std::fmt::Display) -> Error {
    Error::Filter {
        codec: codec.to_string(),
        why: why.to_string(),
    }
}

/// The error of a codec whose output would be larger than the most it may produce.
pub(crate) fn past_limit(codec: &str, why: impl std::fmt::Display) -> Error {
    Error::PastLimit {
        codec: codec.to_string(),
        why: why.to_string(),
    }
}

/// The error of a codec configuration that cannot be used.
pub(crate) fn bad_config(codec: &str, why: impl Into<String>) -> Error {
    Error::CodecConfig {
        codec: codec.to_string(),
        why: why.into(),
    }
}

/// The codec for a numcodecs configuration. Unknown ids are `Error::NoFilter` naming the id.
pub fn from_config(cfg: &Config, ctx: Context) -> Result<Arc<dyn Codec>> {
    let id = match cfg.get("id") {
        Some(Value::String(s)) => s.as_str(),
        Some(other) => return Err(bad_config("?", format!("codec id {other} is not a string"))),
        None => return Err(bad_config("?", "codec configuration without an id")),
    };
    Ok(match id {
        "zlib" => Arc::new(zlib::Zlib::from_config(cfg)?),
        "gzip" => Arc::new(gzip::Gzip::from_config(cfg)?),
        "zstd" => Arc::new(zstd::Zstd::from_config(cfg)?),
        "blosc" => Arc::new(blosc::Blosc::from_config(cfg, ctx)?),
        "lz4" => Arc::new(lz4::Lz4::from_config(cfg)?),
        "bz2" => Arc::new(bz2::Bz2::from_config(cfg)?),
        "shuffle" => Arc::new(shuffle::Shuffle::from_config(cfg, ctx)?),
        "delta" => Arc::new(delta::Delta::from_config(cfg)?),
        fixed_scale_offset::ID => Arc::new(fixed_scale_offset::FixedScaleOffset::from_config(cfg)?),
        numcodecs_quantize::ID => {
            Arc::new(numcodecs_quantize::NumcodecsQuantize::from_config(cfg)?)
        }
        "fletcher32" => Arc::new(fletcher32::Fletcher32::from_config(cfg)?),
        crc32c::ID => Arc::new(crc32c::Crc32c::from_config(cfg)?),
        sharding::ID => Arc::new(sharding::Sharding::from_config(cfg, ctx)?),
        vlen::UTF8 | vlen::BYTES | vlen::ARRAY => Arc::new(vlen::Vlen::from_config(id, cfg, ctx)?),
        other => {
            return Err(Error::NoFilter {
                var: String::new(),
                codec: other.to_string(),
            });
        }
    })
}

/// The codec for an HDF5 filter id and its parameters.
pub fn from_hdf5(id: u32, params: &[u32], ctx: Context) -> Result<Arc<dyn Codec>> {
    Ok(match id {
        hdf5_id::DEFLATE => Arc::new(zlib::Zlib::from_hdf5(params)?),
        hdf5_id::SHUFFLE => Arc::new(shuffle::Shuffle::new(ctx.elem_size)),
        hdf5_id::FLETCHER32 => Arc::new(fletcher32::Fletcher32),
        hdf5_id::BZIP2 => Arc::new(bz2::Bz2::from_hdf5(params)?),
        hdf5_id::ZSTD => Arc::new(zstd::Zstd::from_hdf5(params)?),
        hdf5_id::BLOSC => Arc::new(blosc::Blosc::from_hdf5(params, ctx)?),
        other => {
            return Err(Error::NoFilter {
                var: String::new(),
                codec: format!("HDF5 filter {other}"),
            });
        }
    })
}

/// True for the numcodecs ids of codecs that turn numpy objects into bytes (the first codec
/// of an `|O` array): of these, the variable-length strings are built in.
pub fn is_object_codec(id: &str) -> bool {
    matches!(
        id,
        vlen::UTF8
            | vlen::BYTES
            | vlen::ARRAY
            | "json2"
            | "json"
            | "msgpack2"
            | "pickle"
            | "categorize"
    )
}

/// True when the HDF5 filter id is built in.
pub fn hdf5_available(id: u32) -> bool {
    matches!(
        id,
        hdf5_id::DEFLATE
            | hdf5_id::SHUFFLE
            | hdf5_id::FLETCHER32
            | hdf5_id::BZIP2
            | hdf5_id::ZSTD
            | hdf5_id::BLOSC
    )
}

/// A variable's codecs in chain order (first applied first when encoding).
#[derive(Debug, Clone, Default)]
pub struct Chain(Vec<Arc<dyn Codec>>);

impl Chain {
    /// Builds the chain of numcodecs configurations; `var` names the variable in errors.
    /// Codecs after an object codec see its bytes (elements of one byte), as numcodecs does.
    pub fn from_configs(var: &str, cfgs: &[Config], ctx: Context) -> Result<Chain> {
        let mut ctx = ctx;
        let mut chain = Vec::with_capacity(cfgs.len());
        for cfg in cfgs {
            let codec = from_config(cfg, ctx).map_err(|e| name_var(e, var))?;
            if is_object_codec(codec.id()) {
                ctx = Context { elem_size: 1 };
            }
            if let Some(elem_size) = codec.encoded_elem_size() {
                ctx = Context { elem_size };
            }
            chain.push(codec);
        }
        Ok(Chain(chain))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// This chain after values are narrowed to the 16-bit floats an array stores (in
    /// `big_endian` or little-endian order): it then codes native 32-bit floats.
    pub fn storing_half_floats(mut self, big_endian: bool) -> Chain {
        self.0
            .insert(0, Arc::new(half_floats::HalfFloats { big_endian }));
        self
    }

    /// This chain after compound values are narrowed to the records an array stores
    /// ([`Records`]): it then codes compound values.
    pub fn storing_records(mut self, plan: Arc<RecordPlan>) -> Chain {
        self.0.insert(0, Arc::new(Records { plan }));
        self
    }

    /// True when `stored`, what this chain encoded, holds no values and need not be stored
    /// ([`Codec::holds_nothing`] of a chain's only codec: a shard of nothing but fill).
    pub fn holds_nothing(&self, stored: &[u8]) -> bool {
        matches!(&self.0[..], [only] if only.holds_nothing(stored))
    }

    /// Encodes a chunk through every codec, first to last.
    pub fn encode(&self, raw: Vec<u8>) -> Result<Vec<u8>> {
        if self.is_empty() {
            return Ok(raw);
        }
        let mut out = Vec::new();
        self.encode_into(&raw, &mut out, &mut Vec::new())?;
        Ok(out)
    }

    /// Encodes a chunk as [`Chain::encode`] with the caller's kept buffers: the result is `raw`
    /// itself when there are no codecs, else it lands in `out`, with `spare` holding the
    /// stages between. Both buffers keep their memory for the next chunk, failure or not.
    pub fn encode_into<'a>(
        &self,
        raw: &'a [u8],
        out: &'a mut Vec<u8>,
        spare: &mut Vec<u8>,
    ) -> Result<&'a [u8]> {
        if self.is_empty() {
            return Ok(raw);
        }
        let mut buffers = [std::mem::take(out), std::mem::take(spare)];
        let encoded = self.encode_stages(raw, &mut buffers);
        [*out, *spare] = buffers;
        encoded?;
        Ok(out)
    }

    /// Runs every codec, stages alternating between the two buffers so that the last one
    /// writes `buffers[0]`.
    fn encode_stages(&self, raw: &[u8], buffers: &mut [Vec<u8>; 2]) -> Result<()> {
        let last = self.0.len() - 1;
        for (i, c) in self.0.iter().enumerate() {
            let [even, odd] = &mut *buffers;
            let (from, to) = if (last - i).is_multiple_of(2) {
                (odd, even)
            } else {
                (even, odd)
            };
            let input: &[u8] = if i == 0 { raw } else { from };
            c.encode_into(input, to)?;
        }
        Ok(())
    }

    /// Decodes a stored chunk, last codec first, into at most `expected` bytes (each stage
    /// within [`Chain::stage_limits`]).
    pub fn decode(&self, stored: Vec<u8>, expected: usize) -> Result<Vec<u8>> {
        let Some(first) = self.0.first() else {
            return Ok(stored);
        };
        self.decode_stages(&stored, expected, |data, limit| first.decode(data, limit))
    }

    /// Decodes a stored chunk as [`Chain::decode`], the first codec (the last stage) writing
    /// straight into `out`; returns the bytes written there (the caller checks the size).
    pub fn decode_into(&self, stored: &[u8], out: &mut [u8]) -> Result<usize> {
        self.decode_into_on(stored, out, 1)
    }

    /// Decodes as [`Chain::decode_into`], the last stage on up to `threads` threads when its
    /// codec can share one buffer's work ([`Codec::decode_into_on`]).
    pub fn decode_into_on(&self, stored: &[u8], out: &mut [u8], threads: usize) -> Result<usize> {
        let Some(first) = self.0.first() else {
            let n = stored.len().min(out.len());
            out[..n].copy_from_slice(&stored[..n]);
            return Ok(stored.len());
        };
        let expected = out.len();
        self.decode_stages(stored, expected, |data, _| {
            first.decode_into_on(data, out, threads)
        })
    }

    /// Decodes every stage but the last (the chain's first codec), last codec first, each
    /// within [`Chain::stage_limits`] of `expected`; then hands the last stage's input and
    /// limit to `finish`. Codecs that write in place decode into this thread's kept buffer
    /// ([`stage_buffer`]) instead of a fresh one per chunk.
    fn decode_stages<T>(
        &self,
        stored: &[u8],
        expected: usize,
        finish: impl FnOnce(&[u8], usize) -> Result<T>,
    ) -> Result<T> {
        let limits = self.stage_limits(expected);
        let rest = self.0.get(1..).unwrap_or_default();
        let rest_limits = limits.get(1..).unwrap_or_default();
        // The latest stage's output (`None`: the stored bytes), `len` bytes of it.
        let mut decoded: Option<Vec<u8>> = None;
        let mut len = stored.len();
        let mut spare = stage_buffer::take();
        // An object codec (always first) turns a stage passing its bound into wider slots.
        let first = &self.0[0];
        for (c, &limit) in rest.iter().zip(rest_limits).rev() {
            let input = decoded.as_deref().map_or(stored, |d| &d[..len]);
            if c.writes_in_place() {
                if spare.len() < limit {
                    spare.resize(limit, 0);
                }
                len = c
                    .decode_into(input, &mut spare[..limit])
                    .map_err(|e| first.input_failed(e))?;
                spare = decoded.replace(spare).unwrap_or_default();
            } else {
                let out = c.decode(input, limit).map_err(|e| first.input_failed(e))?;
                len = out.len();
                decoded = Some(out);
            }
        }
        let input = decoded.as_deref().map_or(stored, |d| &d[..len]);
        let finished = finish(input, limits.first().copied().unwrap_or(expected));
        stage_buffer::give_back(decoded.unwrap_or_default(), spare);
        finished
    }

    /// Decodes at least the bytes at `wanted` of a stored chunk of `out.len()` decoded bytes
    /// into their places in `out`, when its one codec can decode parts
    /// ([`Codec::decode_parts`]); `Ok(false)` when the chunk must be decoded whole.
    pub fn decode_parts(
        &self,
        stored: &[u8],
        out: &mut [u8],
        wanted: &[Range<usize>],
    ) -> Result<bool> {
        match self.only() {
            Some(codec) => codec.decode_parts(stored, out, wanted),
            None => Ok(false),
        }
    }

    /// The byte ranges of a stored chunk that [`Chain::decode_parts`] reads to decode
    /// `wanted` ([`Codec::encoded_parts`] of its one codec).
    pub fn encoded_parts(
        &self,
        head: &[u8],
        tail: &[u8],
        stored_len: usize,
        decoded_len: usize,
        wanted: &[Range<usize>],
    ) -> EncodedParts {
        match self.only() {
            Some(codec) => codec.encoded_parts(head, tail, stored_len, decoded_len, wanted),
            None => EncodedParts::Whole,
        }
    }

    /// The [`Codec::tail_first`] of the chain's one codec.
    pub fn tail_first(&self) -> Option<usize> {
        self.only().and_then(|codec| codec.tail_first())
    }

    /// The [`Codec::part_gap`] of the chain's one codec (0 for other chains).
    pub fn part_gap(&self) -> usize {
        self.only().map_or(0, |codec| codec.part_gap())
    }

    /// How much of a chunk of this chain must be decoded to get some of its bytes.
    pub fn partial_decode(&self) -> PartialDecode {
        self.only()
            .map_or(PartialDecode::Whole, |codec| codec.partial_decode())
    }

    /// True when every codec of the chain decodes at about the speed of a copy (see
    /// [`Codec::decodes_at_copy_speed`]); an empty chain does.
    pub fn decodes_at_copy_speed(&self) -> bool {
        self.0.iter().all(|c| c.decodes_at_copy_speed())
    }

    /// The chain's codec when it has exactly one: only then can parts of a chunk be decoded.
    fn only(&self) -> Option<&dyn Codec> {
        match self.0.as_slice() {
            [only] => Some(only.as_ref()),
            _ => None,
        }
    }

    /// The most bytes `n` decoded bytes take once coded by the whole chain (see
    /// [`Chain::stage_limits`]): a longer stored chunk is damaged or hostile.
    pub fn encoded_bound(&self, n: usize) -> usize {
        self.0.iter().fold(n, |n, c| stage_bound(c.as_ref(), n))
    }

    /// The most bytes each stage may produce when decoding a chunk of `expected` bytes: the
    /// size it had when encoding, or the bound of the codec that made it
    /// ([`Codec::encoded_bound`]), or else a bound that exceeds any compressor's worst-case
    /// output for the bytes it compressed.
    fn stage_limits(&self, expected: usize) -> Vec<usize> {
        let mut limits = Vec::with_capacity(self.0.len());
        let mut n = expected;
        for c in &self.0 {
            limits.push(n);
            n = stage_bound(c.as_ref(), n);
        }
        limits
    }
}

/// The most bytes codec `c` makes of `n` bytes: its own bound, or else any compressor's.
fn stage_bound(c: &dyn Codec, n: usize) -> usize {
    c.encoded_bound(n).unwrap_or_else(|| loose_bound(n))
}

/// A bound on what any compressor makes of `n` bytes (its worst case is far less).
pub(crate) fn loose_bound(n: usize) -> usize {
    n.saturating_add(n / 2).saturating_add(64 * 1024)
}

fn name_var(e: Error, var: &str) -> Error {
    match e {
        Error::NoFilter { codec, .. } => Error::NoFilter {
            var: var.to_string(),
            codec,
        },
        other => other,
    }
}

#[cfg(test)]
mod tests;
