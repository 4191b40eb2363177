//! `sharding_indexed` (Zarr v3): one stored object (a shard) holding a grid of inner chunks,
//! each coded by its own chain, and an index of where each one lies. Reached through the
//! configuration the metadata reader builds from the Zarr v3 codec (this crate's own form, not
//! a numcodecs one):
//!
//! ```json
//! {"id": "sharding_indexed", "shard_shape": [4, 6], "chunk_shape": [2, 3],
//!  "codecs": [{"id": "zstd", "level": 0}], "index_location": "end",
//!  "index_checksum": true, "fill": [0, 0]}
//! ```
//!
//! `codecs` are the inner chunks' byte codecs (their byte order is the shard's; `"inner_order":
//! "F"` says each is stored transposed); the index is `(offset, nbytes)` pairs of little-endian u64 in C order of the inner
//! grid, followed by its CRC-32C when `index_checksum` is set; an inner chunk never written is
//! the pair of `u64::MAX` and decodes to `fill` (one element's bytes as stored). Decoding checks every offset against the shard
//! and every inner chunk's decoded size. Encoding leaves out inner chunks that are all fill, as
//! zarr-python does.

use super::crc32c::{self, Crc32c};
use super::{
    Chain, Codec, Config, Context, EncodedParts, PartialDecode, bad_config, failed, loose_bound,
    past_limit,
};
use crate::error::Result;
use rayon::prelude::*;
use serde_json::Value;
use std::ops::Range;

pub const ID: &str = "sharding_indexed";

/// The index entry of an inner chunk never written.
const ABSENT: u64 = u64::MAX;

/// The most bytes any compressor adds to one inner chunk beyond half its size again.
const INNER_OVERHEAD: usize = 1 << 10;

/// The least decoded bytes a shard's bands are coded or decoded in parallel for: below it,
/// handing the bands to other threads costs more than it saves.
const PARALLEL_FROM: usize = 4 << 20;

/// The buffers one thread codes or decodes inner chunks with, from one to the next: the
/// inner chunk in C order, and as stored transposed (empty when inner chunks are not).
struct Scratch {
    inner: Vec<u8>,
    transposed: Vec<u8>,
}

impl Scratch {
    fn new(inner_bytes: usize, transposed: bool) -> Scratch {
        Scratch {
            inner: vec![0; inner_bytes],
            transposed: vec![0; if transposed { inner_bytes } else { 0 }],
        }
    }
}

/// The inner chunks of one band of a shard, coded: their bytes one after the other, and the
/// length of each (`None`: left out, all fill).
#[derive(Default)]
struct CodedBand {
    bytes: Vec<u8>,
    lengths: Vec<Option<usize>>,
}

#[derive(Debug, Clone)]
pub struct Sharding {
    config: Config,
    shard_shape: Vec<usize>,
    chunk_shape: Vec<usize>,
    /// Inner chunks along each dimension.
    grid: Vec<usize>,
    inner: Chain,
    index_at_start: bool,
    index_checksum: bool,
    /// Inner chunks are stored transposed (Fortran order).
    inner_fortran: bool,
    fill: Vec<u8>,
    elem_size: usize,
}

/// The configuration of shards of `shard_shape` holding inner chunks of `chunk_shape` coded
/// by `codecs`, as zarr-python writes them: the index at the end with its checksum, inner
/// chunks in C order. The caller adds the `fill`.
pub fn new_config(shard_shape: &[u64], chunk_shape: &[u64], codecs: Vec<Config>) -> Config {
    let mut cfg = Config::new();
    cfg.insert("id".into(), ID.into());
    cfg.insert("shard_shape".into(), shard_shape.into());
    cfg.insert("chunk_shape".into(), chunk_shape.into());
    let codecs = codecs.into_iter().map(Value::Object).collect();
    cfg.insert("codecs".into(), Value::Array(codecs));
    cfg.insert("index_location".into(), "end".into());
    cfg.insert("index_checksum".into(), true.into());
    cfg.insert("inner_order".into(), "C".into());
    cfg
}

fn shape(cfg: &Config, key: &str) -> Result<Vec<usize>> {
    let bad = || bad_config(ID, format!("{key} is not a list of positive lengths"));
    let list = cfg.get(key).and_then(Value::as_array).ok_or_else(bad)?;
    list.iter()
        .map(|v| {
            v.as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .filter(|&n| n > 0)
                .ok_or_else(bad)
        })
        .collect()
}

impl Sharding {
    pub fn from_config(cfg: &Config, ctx: Context) -> Result<Sharding> {
        let shard_shape = shape(cfg, "shard_shape")?;
        let chunk_shape = shape(cfg, "chunk_shape")?;
        if shard_shape.len() != chunk_shape.len() {
            return Err(bad_config(ID, "chunk_shape and shard_shape differ in rank"));
        }
        let grid = shard_shape
            .iter()
            .zip(&chunk_shape)
            .map(|(s, c)| (s % c == 0).then_some(s / c))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| {
                bad_config(
                    ID,
                    format!("inner chunks {chunk_shape:?} do not divide shards {shard_shape:?}"),
                )
            })?;
        let inner_cfgs: Vec<Config> = match cfg.get("codecs") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(list)) => list
                .iter()
                .map(|c| {
                    c.as_object()
                        .cloned()
                        .ok_or_else(|| bad_config(ID, "an inner codec is not an object"))
                })
                .collect::<Result<_>>()?,
            Some(_) => return Err(bad_config(ID, "codecs is not a list")),
        };
        // Elements the array stores as 16-bit floats (`half_floats`: their byte order is big
        // endian, given by the data path as `fill` is): inner chunks widen them to the 32-bit
        // floats of the shard.
        let inner = match cfg.get("half_floats").and_then(Value::as_bool) {
            Some(big_endian) => Chain::from_configs("", &inner_cfgs, Context { elem_size: 2 })?
                .storing_half_floats(big_endian),
            None => Chain::from_configs("", &inner_cfgs, ctx)?,
        };
        let index_at_start = match cfg.get("index_location").and_then(Value::as_str) {
            None | Some("end") => false,
            Some("start") => true,
            Some(other) => return Err(bad_config(ID, format!("index_location {other:?}"))),
        };
        let fill = match cfg.get("fill") {
            None | Some(Value::Null) => vec![0; ctx.elem_size],
            Some(Value::Array(bytes)) => bytes
                .iter()
                .map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok()))
                .collect::<Option<Vec<u8>>>()
                .ok_or_else(|| bad_config(ID, "fill is not a list of bytes"))?,
            Some(_) => return Err(bad_config(ID, "fill is not a list of bytes")),
        };
        if fill.len() != ctx.elem_size {
            return Err(bad_config(
                ID,
                format!(
                    "fill of {} bytes for elements of {}",
                    fill.len(),
                    ctx.elem_size
                ),
            ));
        }
        Ok(Sharding {
            config: cfg.clone(),
            shard_shape,
            chunk_shape,
            grid,
            inner,
            index_at_start,
            index_checksum: cfg.get("index_checksum").and_then(Value::as_bool) == Some(true),
            inner_fortran: match cfg.get("inner_order").and_then(Value::as_str) {
                None | Some("C") => false,
                Some("F") => true,
                Some(other) => return Err(bad_config(ID, format!("inner_order {other:?}"))),
            },
            fill,
            elem_size: ctx.elem_size,
        })
    }

    fn inner_count(&self) -> Result<usize> {
        self.grid
            .iter()
            .try_fold(1usize, |n, &g| n.checked_mul(g))
            .ok_or_else(|| failed(ID, "too many inner chunks"))
    }

    fn bytes_of(&self, shape: &[usize]) -> Result<usize> {
        shape
            .iter()
            .try_fold(self.elem_size, |n, &d| n.checked_mul(d))
            .ok_or_else(|| failed(ID, format!("a chunk of {shape:?} is too large")))
    }

    fn index_len(&self, n: usize) -> Result<usize> {
        n.checked_mul(16)
            .and_then(|b| b.checked_add(if self.index_checksum { 4 } else { 0 }))
            .ok_or_else(|| failed(ID, "too many inner chunks"))
    }

    /// The `(offset, nbytes)` entries of a shard's index, checked.
    fn index(&self, shard: &[u8]) -> Result<Vec<(u64, u64)>> {
        let n = self.inner_count()?;
        let len = self.index_len(n)?;
        if shard.len() < len {
            return Err(failed(
                ID,
                format!("{} bytes cannot hold an index of {len}", shard.len()),
            ));
        }
        let raw = if self.index_at_start {
            &shard[..len]
        } else {
            &shard[shard.len() - len..]
        };
        self.entries(raw)
    }

    /// The entries of an index stored as `raw` (its checksum checked).
    fn entries(&self, raw: &[u8]) -> Result<Vec<(u64, u64)>> {
        let entries = if self.index_checksum {
            Crc32c::AT_END.verified(raw)?
        } else {
            raw
        };
        Ok(entries
            .chunks_exact(16)
            .map(|e| {
                let word = |i: usize| u64::from_le_bytes(e[i..i + 8].try_into().unwrap_or([0; 8]));
                (word(0), word(8))
            })
            .collect())
    }

    /// The byte offset in the shard of the first element of inner chunk number `i` (C order
    /// of the inner grid), and the shard's strides in bytes.
    fn origin(&self, i: usize, strides: &[usize]) -> usize {
        let mut rest = i;
        let mut offset = 0;
        for d in (0..self.grid.len()).rev() {
            offset += (rest % self.grid[d]) * self.chunk_shape[d] * strides[d];
            rest /= self.grid[d];
        }
        offset
    }

    /// Calls `f(shard offset, inner offset, bytes)` for each contiguous row of inner chunk
    /// number `i`.
    fn rows(&self, i: usize, mut f: impl FnMut(usize, usize, usize)) {
        let rank = self.shard_shape.len();
        let mut strides = vec![self.elem_size; rank];
        for d in (0..rank.saturating_sub(1)).rev() {
            strides[d] = strides[d + 1] * self.shard_shape[d + 1];
        }
        let origin = self.origin(i, &strides);
        let row = self.chunk_shape.last().copied().unwrap_or(1) * self.elem_size;
        let rows: usize = self.chunk_shape[..rank.saturating_sub(1)].iter().product();
        let mut at = vec![0usize; rank.saturating_sub(1)];
        for r in 0..rows {
            let offset: usize = at.iter().zip(&strides).map(|(a, s)| a * s).sum();
            f(origin + offset, r * row, row);
            for d in (0..at.len()).rev() {
                at[d] += 1;
                if at[d] < self.chunk_shape[d] {
                    break;
                }
                at[d] = 0;
            }
        }
    }

    /// The decoded shard cut into bands of whole inner chunks, each band one run of bytes:
    /// along the first dimension longer than 1 (every dimension before it is 1 long). Returns
    /// the bytes of a band and the inner chunks in it (band `b` holds inner chunks
    /// `b * per_band..(b + 1) * per_band`, C order of the inner grid).
    fn bands(&self) -> Result<(usize, usize)> {
        let rank = self.shard_shape.len();
        let d = (0..rank)
            .find(|&d| self.shard_shape[d] > 1)
            .unwrap_or(rank.saturating_sub(1));
        if rank == 0 {
            return Ok((self.elem_size, 1));
        }
        let band_shape: Vec<usize> = (0..rank)
            .map(|k| match k.cmp(&d) {
                std::cmp::Ordering::Less => 1,
                std::cmp::Ordering::Equal => self.chunk_shape[k],
                std::cmp::Ordering::Greater => self.shard_shape[k],
            })
            .collect();
        let per_band = self.grid[d + 1..].iter().product();
        Ok((self.bytes_of(&band_shape)?, per_band))
    }

    /// Decodes the inner chunks numbered `which` (ascending) of the shard `encoded`, whose
    /// index holds `index`, into their places in `out` (the decoded shard); the bands of the
    /// shard ([`Sharding::bands`]) that hold some, in parallel when `threads` (the threads the
    /// caller may use) is 2 or more and there is enough to decode to share.
    fn decode_inner(
        &self,
        encoded: &[u8],
        index: &[(u64, u64)],
        which: &[usize],
        out: &mut [u8],
        threads: usize,
    ) -> Result<()> {
        let size = self.bytes_of(&self.shard_shape)?;
        let (band_bytes, per_band) = self.bands()?;
        let inner_bytes = self.bytes_of(&self.chunk_shape)?;
        let out = out
            .get_mut(..size)
            .ok_or_else(|| failed(ID, format!("a shard of {size} bytes")))?;
        // Each band with inner chunks to decode, and those chunks.
        let mut bands: Vec<(usize, &mut [u8], &[usize])> = Vec::new();
        for (b, band) in out.chunks_mut(band_bytes.max(1)).enumerate() {
            let (first, end) = (b * per_band, (b + 1) * per_band);
            let from = which.partition_point(|&i| i < first);
            let to = which.partition_point(|&i| i < end);
            if from < to {
                bands.push((b * band_bytes, band, &which[from..to]));
            }
        }
        let scratch = || Scratch::new(inner_bytes, self.inner_fortran);
        let work = which.len().saturating_mul(inner_bytes);
        if threads < 2 || bands.len() < 2 || work < PARALLEL_FROM {
            let mut scratch = scratch();
            return bands.into_iter().try_for_each(|(at, band, mine)| {
                self.decode_band(encoded, index, mine, band, at, &mut scratch)
            });
        }
        bands
            .into_par_iter()
            .try_for_each_init(scratch, |scratch, (at, band, mine)| {
                self.decode_band(encoded, index, mine, band, at, scratch)
            })
    }

    /// [`Sharding::decode_inner`] of inner chunks that all lie in `band`, the bytes of the
    /// decoded shard from `band_at` on.
    fn decode_band(
        &self,
        encoded: &[u8],
        index: &[(u64, u64)],
        which: &[usize],
        band: &mut [u8],
        band_at: usize,
        scratch: &mut Scratch,
    ) -> Result<()> {
        let inner_bytes = scratch.inner.len();
        let Scratch { inner, transposed } = scratch;
        for &i in which {
            let Some(&(offset, nbytes)) = index.get(i) else {
                continue;
            };
            if offset == ABSENT && nbytes == ABSENT {
                self.rows(i, |shard_at, _, len| {
                    let at = shard_at - band_at;
                    for e in band[at..at + len].chunks_exact_mut(self.elem_size.max(1)) {
                        e.copy_from_slice(&self.fill);
                    }
                });
                continue;
            }
            let stored = usize::try_from(offset)
                .ok()
                .zip(usize::try_from(nbytes).ok())
                .and_then(|(o, n)| encoded.get(o..o.checked_add(n)?))
                .ok_or_else(|| {
                    failed(
                        ID,
                        format!(
                            "inner chunk {i} at {offset} ({nbytes} bytes) lies outside the \
                             shard of {} bytes",
                            encoded.len()
                        ),
                    )
                })?;
            // Inner chunks stored transposed are decoded into `transposed`, then reordered.
            let decoded = if self.inner_fortran {
                &mut *transposed
            } else {
                &mut *inner
            };
            let got = self.inner.decode_into(stored, decoded)?;
            if got != inner_bytes {
                return Err(failed(
                    ID,
                    format!("inner chunk {i} decodes to {got} bytes, not {inner_bytes}"),
                ));
            }
            if self.inner_fortran {
                self.reorder(transposed, inner, false);
            }
            self.rows(i, |shard_at, inner_at, len| {
                let at = shard_at - band_at;
                band[at..at + len].copy_from_slice(&inner[inner_at..inner_at + len]);
            });
        }
        Ok(())
    }

    /// The inner chunks of band `b` ([`Sharding::bands`]) of the decoded shard `raw`, coded
    /// one after the other, and the length of each (`None`: all fill, left out).
    fn encode_band(&self, band: &[u8], b: usize, per_band: usize) -> Result<CodedBand> {
        let band_at = b * band.len();
        // Kept from inner chunk to inner chunk: the inner chunk, transposed, coded, the stages.
        let Scratch {
            mut inner,
            mut transposed,
        } = Scratch::new(self.bytes_of(&self.chunk_shape)?, self.inner_fortran);
        let (mut coded_buf, mut spare) = (Vec::new(), Vec::new());
        let mut out = CodedBand::default();
        for i in b * per_band..(b + 1) * per_band {
            self.rows(i, |shard_at, inner_at, len| {
                let at = shard_at - band_at;
                inner[inner_at..inner_at + len].copy_from_slice(&band[at..at + len]);
            });
            if self.is_fill(&inner) {
                out.lengths.push(None);
                continue;
            }
            let stored_order: &[u8] = if self.inner_fortran {
                self.reorder(&inner, &mut transposed, true);
                &transposed
            } else {
                &inner
            };
            let coded = self
                .inner
                .encode_into(stored_order, &mut coded_buf, &mut spare)?;
            out.lengths.push(Some(coded.len()));
            out.bytes.extend_from_slice(coded);
        }
        Ok(out)
    }

    /// The inner chunks (C order of the inner grid) holding some byte of `wanted`, ranges of
    /// the decoded shard, in order.
    fn inner_chunks_of(&self, wanted: &[Range<usize>]) -> Vec<usize> {
        let rank = self.shard_shape.len();
        let esize = self.elem_size.max(1);
        let (Some(&row_len), Ok(count)) = (self.shard_shape.last(), self.inner_count()) else {
            return vec![0];
        };
        let chunk_row = self.chunk_shape[rank - 1];
        // Inner chunks per step of each dimension of the grid.
        let mut grid_strides = vec![1usize; rank];
        for d in (0..rank - 1).rev() {
            grid_strides[d] = grid_strides[d + 1] * self.grid[d + 1];
        }
        let mut found = vec![false; count];
        for r in wanted {
            let (mut e, end) = (
                r.start / esize,
                r.end.div_ceil(esize).min(self.shard_shape.iter().product()),
            );
            while e < end {
                let row = e / row_len;
                let (first, row_end) = (e % row_len, end.min((row + 1) * row_len));
                let last = row_end - row * row_len - 1;
                let mut rest = row;
                let mut base = 0;
                for d in (0..rank - 1).rev() {
                    base += (rest % self.shard_shape[d]) / self.chunk_shape[d] * grid_strides[d];
                    rest /= self.shard_shape[d];
                }
                for c in first / chunk_row..=last / chunk_row {
                    found[base + c] = true;
                }
                // Whole rows after this one in the same band of inner chunks (the rows of
                // one inner chunk along the next dimension) touch the same inner chunks.
                let mut next = row_end;
                if first == 0 && last + 1 == row_len && rank >= 2 {
                    let (shard, chunk) = (self.shard_shape[rank - 2], self.chunk_shape[rank - 2]);
                    let left_in_band = chunk - 1 - (row % shard) % chunk;
                    let whole_rows = (end - row_end) / row_len;
                    next += left_in_band.min(whole_rows) * row_len;
                }
                e = next;
            }
        }
        found
            .iter()
            .enumerate()
            .filter_map(|(i, &f)| f.then_some(i))
            .collect()
    }

    /// Copies an inner chunk between C order (`c`) and Fortran order: into Fortran order
    /// when `to_fortran`, else out of it.
    fn reorder(&self, from: &[u8], to: &mut [u8], to_fortran: bool) {
        let shape = &self.chunk_shape;
        let es = self.elem_size.max(1);
        let mut fortran_strides = vec![1usize; shape.len()];
        for d in 1..shape.len() {
            fortran_strides[d] = fortran_strides[d - 1] * shape[d - 1];
        }
        let mut at = vec![0usize; shape.len()];
        for c in 0..from.len() / es {
            let f: usize = at.iter().zip(&fortran_strides).map(|(a, s)| a * s).sum();
            let (src, dst) = if to_fortran { (c, f) } else { (f, c) };
            to[dst * es..(dst + 1) * es].copy_from_slice(&from[src * es..(src + 1) * es]);
            for d in (0..at.len()).rev() {
                at[d] += 1;
                if at[d] < shape[d] {
                    break;
                }
                at[d] = 0;
            }
        }
    }

    fn is_fill(&self, bytes: &[u8]) -> bool {
        bytes
            .chunks_exact(self.elem_size.max(1))
            .all(|e| e == self.fill)
    }
}

impl Codec for Sharding {
    fn id(&self) -> &'static str {
        ID
    }

    fn config(&self) -> Config {
        self.config.clone()
    }

    fn hdf5(&self) -> Option<(u32, Vec<u32>)> {
        None
    }

    /// Every coded inner chunk has bytes, so a shard no longer than its index has none.
    fn holds_nothing(&self, encoded: &[u8]) -> bool {
        self.inner_count()
            .and_then(|n| self.index_len(n))
            .is_ok_and(|len| encoded.len() == len)
    }

    fn encode_into(&self, raw: &[u8], out: &mut Vec<u8>) -> Result<()> {
        let n = self.inner_count()?;
        if raw.len() != self.bytes_of(&self.shard_shape)? {
            return Err(failed(ID, format!("a shard of {} bytes", raw.len())));
        }
        let index_len = self.index_len(n)?;
        let (band_bytes, per_band) = self.bands()?;
        let bands: Vec<CodedBand> = if raw.len() < PARALLEL_FROM {
            raw.chunks(band_bytes.max(1))
                .enumerate()
                .map(|(b, band)| self.encode_band(band, b, per_band))
                .collect::<Result<_>>()?
        } else {
            raw.par_chunks(band_bytes.max(1))
                .enumerate()
                .with_max_len(1)
                .map(|(b, band)| self.encode_band(band, b, per_band))
                .collect::<Result<_>>()?
        };
        let coded: usize = bands.iter().map(|b| b.bytes.len()).sum();
        let mut index = Vec::with_capacity(index_len);
        let mut at = if self.index_at_start { index_len } else { 0 };
        for len in bands.iter().flat_map(|b| &b.lengths) {
            let (offset, nbytes) = match len {
                Some(len) => (at as u64, *len as u64),
                None => (ABSENT, ABSENT),
            };
            at += len.unwrap_or(0);
            index.extend_from_slice(&offset.to_le_bytes());
            index.extend_from_slice(&nbytes.to_le_bytes());
        }
        if self.index_checksum {
            index.extend_from_slice(&crc32c::checksum(&index).to_le_bytes());
        }
        out.clear();
        out.reserve(coded + index.len());
        if self.index_at_start {
            out.extend_from_slice(&index);
        }
        for band in &bands {
            out.extend_from_slice(&band.bytes);
        }
        if !self.index_at_start {
            out.extend_from_slice(&index);
        }
        Ok(())
    }

    fn decode(&self, encoded: &[u8], limit: usize) -> Result<Vec<u8>> {
        let size = self.bytes_of(&self.shard_shape)?;
        if size > limit {
            return Err(past_limit(
                ID,
                format!("a shard of {size} bytes, more than the expected {limit}"),
            ));
        }
        let mut out = vec![0u8; size];
        // Whole shards decoded so (a partial write's read-modify-write) are few at a time:
        // their bands share the pool's threads with whatever else runs on them.
        self.decode_into_on(encoded, &mut out, rayon::current_num_threads())?;
        Ok(out)
    }

    fn decode_into(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize> {
        self.decode_into_on(encoded, out, 1)
    }

    /// The bands of the shard ([`Sharding::bands`]) decoded on up to `threads` threads.
    fn decode_into_on(&self, encoded: &[u8], out: &mut [u8], threads: usize) -> Result<usize> {
        let size = self.bytes_of(&self.shard_shape)?;
        if size > out.len() {
            return Err(past_limit(
                ID,
                format!(
                    "a shard of {size} bytes, more than the expected {}",
                    out.len()
                ),
            ));
        }
        let index = self.index(encoded)?;
        let all: Vec<usize> = (0..index.len()).collect();
        self.decode_inner(encoded, &index, &all, out, threads)?;
        Ok(size)
    }

    fn decode_parts(
        &self,
        encoded: &[u8],
        out: &mut [u8],
        wanted: &[Range<usize>],
    ) -> Result<bool> {
        if self.bytes_of(&self.shard_shape)? != out.len() {
            return Ok(false);
        }
        let index = self.index(encoded)?;
        let which = self.inner_chunks_of(wanted);
        let threads = rayon::current_num_threads();
        self.decode_inner(encoded, &index, &which, out, threads)?;
        Ok(true)
    }

    fn partial_decode(&self) -> PartialDecode {
        PartialDecode::Blocks
    }

    /// The index, when it is at the shard's end.
    fn tail_first(&self) -> Option<usize> {
        let n = self.inner_count().ok()?;
        (!self.index_at_start)
            .then(|| self.index_len(n).ok())
            .flatten()
    }

    /// The shard's index and the inner chunks that hold the wanted bytes.
    fn encoded_parts(
        &self,
        head: &[u8],
        tail: &[u8],
        encoded_len: usize,
        decoded_len: usize,
        wanted: &[Range<usize>],
    ) -> EncodedParts {
        let (Ok(n), Ok(size)) = (self.inner_count(), self.bytes_of(&self.shard_shape)) else {
            return EncodedParts::Whole;
        };
        let Ok(index_len) = self.index_len(n) else {
            return EncodedParts::Whole;
        };
        // A shard longer than its contents could code to is damaged or hostile: read whole,
        // where the store's object limit refuses it.
        let longest = self.encoded_bound(size).unwrap_or(usize::MAX);
        if size != decoded_len || index_len > encoded_len || encoded_len > longest {
            return EncodedParts::Whole;
        }
        let index_at = if self.index_at_start {
            0
        } else {
            encoded_len - index_len
        };
        let raw = if self.index_at_start && head.len() >= index_len {
            &head[..index_len]
        } else if self.index_at_start {
            return EncodedParts::Head(index_len);
        } else if head.len() == encoded_len {
            &head[index_at..]
        } else if tail.len() >= index_len {
            &tail[tail.len() - index_len..]
        } else {
            return EncodedParts::Tail(index_len);
        };
        // A damaged index is for decoding to report.
        let Ok(entries) = self.entries(raw) else {
            return EncodedParts::Whole;
        };
        let mut ranges: Vec<Range<usize>> = Vec::with_capacity(entries.len() + 1);
        ranges.push(index_at..index_at + index_len);
        for i in self.inner_chunks_of(wanted) {
            let (offset, nbytes) = entries[i];
            if offset == ABSENT && nbytes == ABSENT {
                continue;
            }
            match usize::try_from(offset)
                .ok()
                .zip(usize::try_from(nbytes).ok())
                .and_then(|(o, n)| Some(o..o.checked_add(n)?))
                .filter(|r| r.end <= encoded_len)
            {
                Some(r) => ranges.push(r),
                None => return EncodedParts::Whole,
            }
        }
        ranges.sort_by_key(|r| r.start);
        let mut merged: Vec<Range<usize>> = Vec::with_capacity(ranges.len());
        for r in ranges {
            match merged.last_mut() {
                Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
                _ => merged.push(r),
            }
        }
        EncodedParts::Ranges(merged)
    }

    fn writes_in_place(&self) -> bool {
        true
    }

    /// A shard of `n` decoded bytes: each of its inner chunks within a bound on what any
    /// compressor makes of it (a compressor adds a few bytes to each buffer however small:
    /// zstd tens, blosc 16 or 32, zlib a few per 16 KiB), and its index.
    fn encoded_bound(&self, n: usize) -> Option<usize> {
        let count = self.inner_count().ok()?;
        let index = self.index_len(count).ok()?;
        if n != self.bytes_of(&self.shard_shape).ok()? {
            return loose_bound(n).checked_add(index);
        }
        let inner = self.bytes_of(&self.chunk_shape).ok()?;
        let each = inner.checked_add(inner / 2)?.checked_add(INNER_OVERHEAD)?;
        count.checked_mul(each)?.checked_add(index)
    }
}

#[cfg(test)]
// A list of one byte range is a common argument here, not a mistaken range vector.
#[allow(clippy::single_range_in_vec_init)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sharding(extra: Value, elem_size: usize) -> Sharding {
        let mut cfg = json!({"id": ID, "shard_shape": [4, 6], "chunk_shape": [2, 3],
            "codecs": [{"id": "zstd", "level": 1}], "index_checksum": true});
        for (k, v) in extra.as_object().unwrap() {
            cfg[k] = v.clone();
        }
        Sharding::from_config(cfg.as_object().unwrap(), Context { elem_size }).unwrap()
    }

    #[test]
    fn shards_round_trip_with_the_index_at_either_end() {
        let raw: Vec<u8> = (0..24u16).flat_map(|v| v.to_le_bytes()).collect();
        for location in ["end", "start"] {
            let s = sharding(json!({"index_location": location}), 2);
            let enc = s.encode(&raw).unwrap();
            assert_eq!(s.decode(&enc, raw.len()).unwrap(), raw, "{location}");
        }
    }

    /// An inner chunk all fill is left out of the shard and decodes to fill; the layout of a
    /// shard with one inner chunk written, as zarr-python 3.1 writes it (zarr.create_array(
    /// shape=(4, 6), shards=(4, 6), chunks=(2, 3), dtype="u2", fill_value=7,
    /// compressors=None) then a[0:2, 3:6] = [[1, 2, 3], [4, 5, 6]]).
    #[test]
    fn absent_inner_chunks_are_fill() {
        let s = Sharding::from_config(
            json!({"id": ID, "shard_shape": [4, 6], "chunk_shape": [2, 3],
                "index_checksum": true, "fill": [7, 0]})
            .as_object()
            .unwrap(),
            Context { elem_size: 2 },
        )
        .unwrap();
        let mut raw: Vec<u8> = std::iter::repeat_n([7u8, 0], 24).flatten().collect();
        for (k, v) in [(3, 1u16), (4, 2), (5, 3), (9, 4), (10, 5), (11, 6)] {
            raw[2 * k..2 * k + 2].copy_from_slice(&v.to_le_bytes());
        }
        let enc = s.encode(&raw).unwrap();
        // 12 bytes of one inner chunk, an index of 4 entries and its checksum.
        assert_eq!(enc.len(), 12 + 64 + 4);
        assert_eq!(&enc[..12], &[1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0]);
        assert_eq!(&enc[12..28], &[0xff; 16]);
        assert_eq!(&enc[28..36], &0u64.to_le_bytes());
        assert_eq!(&enc[36..44], &12u64.to_le_bytes());
        assert_eq!(s.decode(&enc, raw.len()).unwrap(), raw);
        assert!(!s.holds_nothing(&enc));
        // A shard all fill is its index alone: it holds nothing to store.
        let fill: Vec<u8> = std::iter::repeat_n([7u8, 0], 24).flatten().collect();
        let empty = s.encode(&fill).unwrap();
        assert_eq!(empty.len(), 64 + 4);
        assert!(s.holds_nothing(&empty));
        assert_eq!(s.decode(&empty, fill.len()).unwrap(), fill);
    }

    /// Parts of a shard decode from its index and the inner chunks that hold them alone,
    /// found from its head (index at the start) or its tail (at the end).
    #[test]
    fn parts_of_shards_read_only_their_inner_chunks() {
        let raw: Vec<u8> = (0..24u16).flat_map(|v| v.to_le_bytes()).collect();
        // Elements (1, 4) and (3, 0): inner chunks 1 and 2 of the 2 x 2 grid.
        let wanted = [2 * 10..2 * 11, 2 * 18..2 * 19];
        for location in ["end", "start"] {
            let s = sharding(json!({"index_location": location, "codecs": []}), 2);
            assert_eq!(s.inner_chunks_of(&wanted), [1, 2]);
            assert_eq!(s.inner_chunks_of(&[0..48]), [0, 1, 2, 3]);
            assert_eq!(s.inner_chunks_of(&[6..8]), [1]);
            let enc = s.encode(&raw).unwrap();
            let len = enc.len();
            let (head, tail) = (&enc[..8], &enc[len - 8..]);
            let asked = s.encoded_parts(head, &[], len, 48, &wanted);
            let index = match location {
                "start" => {
                    assert_eq!(asked, EncodedParts::Head(68));
                    0..68
                }
                _ => {
                    assert_eq!(asked, EncodedParts::Tail(68));
                    assert_eq!(s.encoded_parts(head, tail, len, 48, &wanted), asked);
                    len - 68..len
                }
            };
            let (head, tail) = match location {
                "start" => (&enc[..68], &[][..]),
                _ => (&enc[..8], &enc[len - 68..]),
            };
            let EncodedParts::Ranges(ranges) = s.encoded_parts(head, tail, len, 48, &wanted) else {
                panic!("no ranges")
            };
            // The index and two inner chunks of 12 bytes each, nothing else.
            let total: usize = ranges.iter().map(|r| r.len()).sum();
            assert_eq!(total, 68 + 24, "{ranges:?}");
            assert!(
                ranges
                    .iter()
                    .any(|r| r.start <= index.start && index.end <= r.end)
            );
            let mut sparse = vec![0u8; len];
            for r in &ranges {
                sparse[r.clone()].copy_from_slice(&enc[r.clone()]);
            }
            let mut out = vec![0u8; 48];
            assert!(s.decode_parts(&sparse, &mut out, &wanted).unwrap());
            for r in &wanted {
                assert_eq!(out[r.clone()], raw[r.clone()], "{location}");
            }
            // A shard far longer than its contents could code to is read whole (where the
            // store's object limit refuses it).
            assert_eq!(
                s.encoded_parts(head, tail, 1 << 40, 48, &wanted),
                EncodedParts::Whole
            );
            // A decoded size other than the shard's is decoded whole.
            assert_eq!(
                s.encoded_parts(&enc, &[], len, 40, &wanted),
                EncodedParts::Whole
            );
            assert!(!s.decode_parts(&enc, &mut [0u8; 40], &wanted).unwrap());
        }
        // A 0-d shard is one inner chunk.
        let scalar = Sharding::from_config(
            json!({"id": ID, "shard_shape": [], "chunk_shape": []})
                .as_object()
                .unwrap(),
            Context { elem_size: 4 },
        )
        .unwrap();
        let enc = scalar.encode(&7u32.to_le_bytes()).unwrap();
        assert_eq!(scalar.decode(&enc, 4).unwrap(), 7u32.to_le_bytes());
        assert_eq!(scalar.inner_chunks_of(&[0..4]), [0]);
    }

    /// The inner chunks of wanted ranges are those of their elements, one by one, whatever
    /// the ranges (whole rows and bands of rows are stepped over, not walked).
    #[test]
    fn inner_chunks_of_ranges_are_those_of_their_elements() {
        let cfg = json!({"id": ID, "shard_shape": [6, 4, 6], "chunk_shape": [3, 2, 3]});
        let s = Sharding::from_config(cfg.as_object().unwrap(), Context { elem_size: 2 }).unwrap();
        let inner_of = |e: usize| {
            let (z, y, x) = (e / 24, e / 6 % 4, e % 6);
            (z / 3) * 4 + (y / 2) * 2 + x / 3
        };
        let mut seed = 7u64;
        for _ in 0..2000 {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let a = (seed >> 33) as usize % 144;
            let b = a + (seed >> 20) as usize % (145 - a);
            let wanted = [2 * a..2 * b];
            let mut want: Vec<usize> = (a..b).map(inner_of).collect();
            want.sort_unstable();
            want.dedup();
            assert_eq!(s.inner_chunks_of(&wanted), want, "{a}..{b}");
        }
    }

    /// Inner chunks stored transposed: each is reordered on the way in and out, and one
    /// inner chunk's stored bytes are its elements in Fortran order.
    #[test]
    fn transposed_inner_chunks_round_trip() {
        let s = sharding(
            json!({"inner_order": "F", "codecs": [], "index_checksum": false}),
            1,
        );
        let raw: Vec<u8> = (0..24u8).collect();
        let enc = s.encode(&raw).unwrap();
        // Inner chunk 0 holds rows 0-1, columns 0-2: 0 1 2 / 6 7 8, in Fortran order.
        assert_eq!(&enc[..6], &[0, 6, 1, 7, 2, 8]);
        assert_eq!(s.decode(&enc, 24).unwrap(), raw);
    }

    /// Shards of every shape code and decode by bands alike: the inner chunks in C order of
    /// the inner grid, one after the other whatever band coded them, those all fill left out;
    /// a partial decode gives the bytes a whole one does.
    #[test]
    fn shards_of_every_shape_code_by_bands_in_order() {
        let shapes: [(&[usize], &[usize]); 7] = [
            (&[4, 6], &[2, 3]),
            (&[2, 4], &[2, 2]),
            (&[1, 4, 6], &[1, 2, 3]),
            (&[1, 1, 6], &[1, 1, 2]),
            (&[3, 1, 4], &[1, 1, 2]),
            (&[2, 2, 2], &[2, 2, 2]),
            (&[8], &[2]),
        ];
        for (shard, chunk) in shapes {
            for extra in [
                json!({}),
                json!({"codecs": [], "inner_order": "F", "index_location": "start"}),
            ] {
                let mut cfg = json!({"id": ID, "shard_shape": shard, "chunk_shape": chunk,
                    "codecs": [{"id": "zstd", "level": 1}], "index_checksum": false});
                for (k, v) in extra.as_object().unwrap() {
                    cfg[k] = v.clone();
                }
                let s = Sharding::from_config(cfg.as_object().unwrap(), Context { elem_size: 2 })
                    .unwrap();
                let n: usize = shard.iter().product();
                // Every third element's value; the rest fill (0), so some inner chunks are.
                let raw: Vec<u8> = (0..n as u16)
                    .flat_map(|v| if v % 3 == 0 { 0 } else { v + 1 }.to_le_bytes())
                    .collect();
                let enc = s.encode(&raw).unwrap();
                assert_eq!(s.decode(&enc, raw.len()).unwrap(), raw, "{shard:?} {extra}");
                let index = s.index(&enc).unwrap();
                let base = if s.index_at_start {
                    16 * index.len()
                } else {
                    0
                };
                let mut at = base as u64;
                for (i, &(offset, nbytes)) in index.iter().enumerate() {
                    let mut inner = vec![0u8; s.bytes_of(chunk).unwrap()];
                    s.rows(i, |shard_at, inner_at, len| {
                        inner[inner_at..inner_at + len]
                            .copy_from_slice(&raw[shard_at..shard_at + len]);
                    });
                    if inner.iter().all(|b| *b == 0) {
                        assert_eq!((offset, nbytes), (ABSENT, ABSENT), "{shard:?} {i}");
                    } else {
                        assert_eq!(offset, at, "{shard:?} {extra}: inner chunk {i}");
                        at += nbytes;
                    }
                }
                for wanted in [0..2, 2..n, n / 2..n - 1] {
                    let bytes = 2 * wanted.start..2 * wanted.end;
                    let mut out = vec![0xAA; raw.len()];
                    let wanted = std::slice::from_ref(&bytes);
                    assert!(s.decode_parts(&enc, &mut out, wanted).unwrap());
                    assert_eq!(out[bytes.clone()], raw[bytes], "{shard:?} {extra}");
                }
            }
        }
    }

    /// A shard large enough to share: coded and decoded by bands on several threads, whole,
    /// in parts and into a buffer longer than the shard, it gives what one thread gives.
    #[test]
    fn large_shards_code_and_decode_on_threads_alike() {
        let cfg = json!({"id": ID, "shard_shape": [2048, 1024], "chunk_shape": [256, 256],
            "codecs": [{"id": "zstd", "level": 1}], "index_checksum": true});
        let s = Sharding::from_config(cfg.as_object().unwrap(), Context { elem_size: 4 }).unwrap();
        let raw: Vec<u8> = (0..2048 * 1024u32)
            .flat_map(|v| if v % 7 == 0 { 0 } else { v }.to_le_bytes())
            .collect();
        assert!(raw.len() > PARALLEL_FROM);
        let enc = s.encode(&raw).unwrap();
        let mut one = vec![0u8; raw.len() + 100];
        let mut many = vec![0u8; raw.len() + 100];
        assert_eq!(s.decode_into_on(&enc, &mut one, 1).unwrap(), raw.len());
        assert_eq!(s.decode_into_on(&enc, &mut many, 4).unwrap(), raw.len());
        assert_eq!(&one[..raw.len()], raw);
        assert_eq!(one, many);
        let wanted = [0..8, 4 << 20..(6 << 20) + 3, raw.len() - 4..raw.len()];
        let mut part = vec![0xAAu8; raw.len()];
        assert!(s.decode_parts(&enc, &mut part, &wanted).unwrap());
        for r in wanted {
            assert_eq!(part[r.clone()], raw[r]);
        }
    }

    /// The bound on a shard's coding holds shards of inner chunks so small that each codes
    /// to many times its size, and stays near the size of shards of ordinary inner chunks.
    #[test]
    fn the_bound_of_a_shard_holds_its_coding_and_stays_near_its_size() {
        let shards = |shard: [usize; 2], chunk: [usize; 2], elem_size: usize| {
            let cfg = json!({"id": ID, "shard_shape": shard, "chunk_shape": chunk,
                "codecs": [{"id": "zstd", "level": 1}], "index_checksum": true});
            Sharding::from_config(cfg.as_object().unwrap(), Context { elem_size }).unwrap()
        };
        let tiny = shards([256, 256], [1, 1], 1);
        let raw: Vec<u8> = (0..65536u32).map(|i| (i % 251) as u8 + 1).collect();
        let enc = tiny.encode(&raw).unwrap();
        assert!(enc.len() > 2 * raw.len() + (1 << 20), "{}", enc.len());
        assert!(enc.len() <= tiny.encoded_bound(raw.len()).unwrap());
        let ordinary = shards([1024, 1024], [16, 16], 4);
        let n = 4 << 20;
        let bound = ordinary.encoded_bound(n).unwrap();
        assert!(bound > n && bound < 3 * n, "{bound}");
        // Asked of another length, the loose bound of that length and the index.
        assert_eq!(
            ordinary.encoded_bound(1000),
            Some(1000 + 500 + (64 << 10) + 4096 * 16 + 4)
        );
    }

    #[test]
    fn damaged_shards_are_errors() {
        let s = sharding(json!({}), 2);
        let raw: Vec<u8> = (0..24u16).flat_map(|v| v.to_le_bytes()).collect();
        let enc = s.encode(&raw).unwrap();
        let mut bad_sum = enc.clone();
        let last = bad_sum.len() - 1;
        bad_sum[last] ^= 1;
        assert!(
            s.decode(&bad_sum, 48)
                .unwrap_err()
                .to_string()
                .contains("checksum")
        );
        assert!(s.decode(&enc[..10], 48).is_err(), "too short for its index");
        assert!(s.decode(&enc, 47).is_err(), "past the limit");

        // An offset past the end, and one whose end overflows.
        let unchecked = sharding(json!({"index_checksum": false}), 2);
        let mut enc = unchecked.encode(&raw).unwrap();
        let at = enc.len() - 64;
        enc[at..at + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
        let err = unchecked.decode(&enc, 48).unwrap_err().to_string();
        assert!(err.contains("outside the shard"), "{err}");
        enc[at..at + 8].copy_from_slice(&5u64.to_le_bytes());
        enc[at + 8..at + 16].copy_from_slice(&(u64::MAX - 2).to_le_bytes());
        assert!(unchecked.decode(&enc, 48).is_err());
        // An inner chunk of the wrong size.
        let plain = sharding(json!({"index_checksum": false, "codecs": []}), 2);
        let mut enc = plain.encode(&raw).unwrap();
        let at = enc.len() - 64 + 8;
        enc[at..at + 8].copy_from_slice(&10u64.to_le_bytes());
        let err = plain.decode(&enc, 48).unwrap_err().to_string();
        assert!(err.contains("decodes to 10 bytes"), "{err}");
    }

    #[test]
    fn unusable_configurations_are_refused() {
        let ctx = Context { elem_size: 4 };
        for cfg in [
            json!({"id": ID, "shard_shape": [4], "chunk_shape": [3]}),
            json!({"id": ID, "shard_shape": [4], "chunk_shape": [2, 2]}),
            json!({"id": ID, "shard_shape": [4], "chunk_shape": [0]}),
            json!({"id": ID, "shard_shape": [4], "chunk_shape": [2], "fill": [0]}),
            json!({"id": ID, "shard_shape": [4], "chunk_shape": [2], "index_location": "x"}),
            json!({"id": ID, "chunk_shape": [2]}),
        ] {
            assert!(
                Sharding::from_config(cfg.as_object().unwrap(), ctx).is_err(),
                "{cfg}"
            );
        }
    }
}
