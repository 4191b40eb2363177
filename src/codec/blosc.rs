//! `blosc` (numcodecs) = HDF5 filter 32001: c-blosc 1.x with an inner compressor (`cname`),
//! level (`clevel` 0-9), byte or bit shuffle (`shuffle` -1 auto, 0 none, 1 byte, 2 bit) and
//! block size (`blocksize`, 0 = automatic).
//!
//! HDF5 parameters (the layout of the blosc filter and of netCDF's `nc_def_var_blosc`):
//! `[reserved, reserved, reserved, blocksize, clevel, shuffle, compressor code]`.

use super::{
    Codec, Config, Context, EncodedParts, PartialDecode, bad_config, failed, hdf5_id, params,
    past_limit,
};
use crate::error::Result;
use rayon::prelude::*;
use serde_json::Value;
use std::ops::Range;

const ID: &str = "blosc";

/// The error of a buffer c-blosc cannot decompress: past the limit when it declares more
/// bytes than allowed.
fn decode_failed(e: cblosc::BloscError) -> crate::error::Error {
    match e {
        cblosc::BloscError::ExceedsLimit { .. } => past_limit(ID, e),
        other => failed(ID, other),
    }
}
const AUTOSHUFFLE: i64 = -1;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blosc {
    pub cname: String,
    pub clevel: u8,
    pub shuffle: i64,
    pub blocksize: usize,
    /// Element size used for shuffling when encoding (not stored in the JSON).
    pub typesize: usize,
}

impl Blosc {
    pub fn new(
        cname: &str,
        clevel: i64,
        shuffle: i64,
        blocksize: i64,
        ctx: Context,
    ) -> Result<Blosc> {
        if cblosc::compressor_code(cname).is_none() {
            let known: Vec<&str> = cblosc::COMPRESSORS.iter().map(|c| c.0).collect();
            return Err(bad_config(
                ID,
                format!("cname {cname:?} is not one of {}", known.join(", ")),
            ));
        }
        if !(0..=9).contains(&clevel) {
            return Err(bad_config(ID, format!("clevel {clevel} is outside 0..=9")));
        }
        if !(-1..=2).contains(&shuffle) {
            return Err(bad_config(
                ID,
                format!("shuffle {shuffle} is outside -1..=2"),
            ));
        }
        let blocksize = usize::try_from(blocksize)
            .map_err(|_| bad_config(ID, format!("blocksize {blocksize} is negative")))?;
        Ok(Blosc {
            cname: cname.to_string(),
            clevel: clevel as u8,
            shuffle,
            blocksize,
            typesize: ctx.elem_size.max(1),
        })
    }

    /// numcodecs defaults: lz4, clevel 5, byte shuffle, automatic block size.
    pub fn from_config(cfg: &Config, ctx: Context) -> Result<Blosc> {
        Blosc::new(
            &params::text(cfg, ID, "cname", "lz4")?,
            params::int(cfg, ID, "clevel", 5, i64::MIN..=i64::MAX)?,
            params::int(cfg, ID, "shuffle", 1, i64::MIN..=i64::MAX)?,
            params::int(cfg, ID, "blocksize", 0, i64::MIN..=i64::MAX)?,
            ctx,
        )
    }

    pub fn from_hdf5(p: &[u32], ctx: Context) -> Result<Blosc> {
        let get = |i: usize, default: u32| p.get(i).copied().unwrap_or(default);
        if p.len() > 7 {
            return Err(bad_config(
                ID,
                format!("expects at most 7 HDF5 parameters, got {}", p.len()),
            ));
        }
        let code = get(6, 1);
        let cname = cblosc::compressor_name(code)
            .ok_or_else(|| bad_config(ID, format!("compressor code {code} is unknown")))?;
        Blosc::new(
            cname,
            i64::from(get(4, 5)),
            i64::from(get(5, 1)),
            i64::from(get(3, 0)),
            ctx,
        )
    }

    fn shuffle_mode(&self) -> u8 {
        match self.shuffle {
            AUTOSHUFFLE if self.typesize == 1 => 2,
            AUTOSHUFFLE => 1,
            s => s as u8,
        }
    }
}

impl Codec for Blosc {
    fn id(&self) -> &'static str {
        ID
    }

    fn config(&self) -> Config {
        params::config(
            ID,
            &[
                ("cname", Value::from(self.cname.as_str())),
                ("clevel", Value::from(self.clevel)),
                ("shuffle", Value::from(self.shuffle)),
                ("blocksize", Value::from(self.blocksize)),
            ],
        )
    }

    fn hdf5(&self) -> Option<(u32, Vec<u32>)> {
        let code = cblosc::compressor_code(&self.cname).unwrap_or(1);
        Some((
            hdf5_id::BLOSC,
            vec![
                0,
                0,
                0,
                self.blocksize as u32,
                u32::from(self.clevel),
                u32::from(self.shuffle_mode()),
                code,
            ],
        ))
    }

    fn encode_into(&self, raw: &[u8], out: &mut Vec<u8>) -> Result<()> {
        cblosc::compress_into(
            raw,
            self.clevel,
            self.shuffle_mode(),
            self.typesize,
            &self.cname,
            self.blocksize,
            out,
        )
        .map_err(|e| failed(ID, e))
    }

    fn decode(&self, encoded: &[u8], limit: usize) -> Result<Vec<u8>> {
        cblosc::decompress(encoded, limit).map_err(decode_failed)
    }

    fn writes_in_place(&self) -> bool {
        true
    }

    /// The LZ-family inner compressors do; zlib and zstd inside blosc do not.
    fn decodes_at_copy_speed(&self) -> bool {
        matches!(self.cname.as_str(), "blosclz" | "lz4" | "lz4hc")
    }

    fn decode_into(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize> {
        cblosc::decompress_into(encoded, out).map_err(decode_failed)
    }

    /// Ranges of whole blocks decompressed in parallel on the caller's workers (each with
    /// `blosc_getitem`), straight into their places in `out`; a buffer that cannot be split or
    /// a range refused is decompressed whole, which reports what is wrong with it.
    fn decode_into_on(&self, encoded: &[u8], out: &mut [u8], threads: usize) -> Result<usize> {
        let declared = cblosc::declared_size(encoded).map_err(|e| failed(ID, e))?;
        let ranges = if threads > 1 && declared <= out.len() {
            cblosc::split(encoded, threads)
        } else {
            None
        };
        let Some(ranges) = ranges else {
            return self.decode_into(encoded, out);
        };
        let mut parts: Vec<(Range<usize>, &mut [u8])> = Vec::with_capacity(ranges.len());
        let mut rest = &mut out[..declared];
        for r in ranges {
            let (mine, tail) = std::mem::take(&mut rest).split_at_mut(r.len());
            parts.push((r, mine));
            rest = tail;
        }
        let whole = parts
            .into_par_iter()
            .map(|(r, dst)| cblosc::decompress_range(encoded, r, dst))
            .collect::<std::result::Result<Vec<bool>, _>>()
            .map_err(|e| failed(ID, e))?;
        if whole.iter().all(|&ok| ok) {
            Ok(declared)
        } else {
            self.decode_into(encoded, out)
        }
    }

    /// Decompresses only the blocks that hold the wanted bytes.
    fn decode_parts(
        &self,
        encoded: &[u8],
        out: &mut [u8],
        wanted: &[Range<usize>],
    ) -> Result<bool> {
        cblosc::decompress_parts(encoded, out, wanted).map_err(|e| failed(ID, e))
    }

    fn partial_decode(&self) -> PartialDecode {
        PartialDecode::Blocks
    }

    /// No blosc block is smaller than 128 bytes (c-blosc's least block size): ranges closer
    /// than that never want a block neither one is in.
    fn part_gap(&self) -> usize {
        128
    }

    /// The header, the block starts and the blocks that hold the wanted bytes.
    fn encoded_parts(
        &self,
        head: &[u8],
        _tail: &[u8],
        encoded_len: usize,
        decoded_len: usize,
        wanted: &[Range<usize>],
    ) -> EncodedParts {
        match cblosc::parts_needed(head, encoded_len, decoded_len, wanted) {
            cblosc::Needed::Whole => EncodedParts::Whole,
            cblosc::Needed::Head(n) => EncodedParts::Head(n),
            cblosc::Needed::Ranges(r) => EncodedParts::Ranges(r),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CTX: Context = Context { elem_size: 4 };

    #[test]
    fn every_cname_and_shuffle_round_trips() {
        let data: Vec<u8> = (0..5000u32).flat_map(|i| (i / 9).to_le_bytes()).collect();
        for (cname, _) in cblosc::COMPRESSORS {
            for shuffle in -1..=2 {
                let b = Blosc::new(cname, 5, shuffle, 0, CTX).unwrap();
                let enc = b.encode(&data).unwrap();
                assert_eq!(
                    b.decode(&enc, data.len()).unwrap(),
                    data,
                    "{cname} {shuffle}"
                );
                assert_eq!(Blosc::from_config(&b.config(), CTX).unwrap(), b);
            }
        }
    }

    #[test]
    fn defaults_hdf5_and_errors() {
        let d = Blosc::from_config(&params::config(ID, &[]), CTX).unwrap();
        assert_eq!(
            (d.cname.as_str(), d.clevel, d.shuffle, d.blocksize),
            ("lz4", 5, 1, 0)
        );
        let h = Blosc::from_hdf5(&[0, 0, 0, 0, 7, 2, 5], CTX).unwrap();
        assert_eq!((h.cname.as_str(), h.clevel, h.shuffle), ("zstd", 7, 2));
        assert_eq!(h.hdf5(), Some((32001, vec![0, 0, 0, 0, 7, 2, 5])));
        assert_eq!(
            Blosc::new("snappy", 5, 1, 0, CTX).unwrap_err().to_string(),
            "invalid blosc configuration: cname \"snappy\" is not one of blosclz, lz4, lz4hc, zlib, zstd"
        );
        assert_eq!(
            Blosc::new("lz4", 10, 1, 0, CTX).unwrap_err().to_string(),
            "invalid blosc configuration: clevel 10 is outside 0..=9"
        );
        assert_eq!(
            Blosc::new("lz4", 1, 3, 0, CTX).unwrap_err().to_string(),
            "invalid blosc configuration: shuffle 3 is outside -1..=2"
        );
        assert_eq!(
            Blosc::from_hdf5(&[0, 0, 0, 0, 5, 1, 3], CTX)
                .unwrap_err()
                .to_string(),
            "invalid blosc configuration: compressor code 3 is unknown"
        );
    }
}
