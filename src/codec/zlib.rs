//! `zlib` (numcodecs) = HDF5 deflate (filter 1): a zlib stream, level 0-9.

use super::{Codec, Config, bad_config, failed, hdf5_id, params, past_limit, reused::with_reused};
use crate::error::Result;
use libdeflater::{CompressionLvl, Compressor, DecompressionError, Decompressor};
use serde_json::Value;
use std::cell::RefCell;

const ID: &str = "zlib";

/// Most bytes one deflate stream can inflate to per byte of input: a 258-byte match coded in
/// two bits.
const MOST_EXPANSION: usize = 1032;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Zlib {
    pub level: u32,
}

impl Zlib {
    pub fn new(level: u32) -> Result<Zlib> {
        if level > 9 {
            return Err(bad_config(ID, format!("level {level} is outside 0..=9")));
        }
        Ok(Zlib { level })
    }

    /// numcodecs default level is 1.
    pub fn from_config(cfg: &Config) -> Result<Zlib> {
        Zlib::new(params::int(cfg, ID, "level", 1, 0..=9)? as u32)
    }

    pub fn from_hdf5(p: &[u32]) -> Result<Zlib> {
        Zlib::new(params::hdf5_one(ID, p, 1)?)
    }
}

impl Codec for Zlib {
    fn id(&self) -> &'static str {
        ID
    }

    fn config(&self) -> Config {
        params::config(ID, &[("level", Value::from(self.level))])
    }

    fn hdf5(&self) -> Option<(u32, Vec<u32>)> {
        Some((hdf5_id::DEFLATE, vec![self.level]))
    }

    /// Deflates into `out`'s memory in one pass with libdeflate (this thread's compressor for
    /// the level; level 0 stores the bytes in uncompressed blocks, as zlib's does).
    fn encode_into(&self, raw: &[u8], out: &mut Vec<u8>) -> Result<()> {
        deflate_into(ID, Framing::Zlib, raw, self.level, out)
    }

    /// Inflates into a buffer of `limit` bytes, or fewer when `encoded` cannot inflate to that
    /// many: a short corrupt stream never reserves a large buffer.
    fn decode(&self, encoded: &[u8], limit: usize) -> Result<Vec<u8>> {
        inflated(encoded, limit, |out| {
            inflate_into(ID, Framing::Zlib, encoded, out, limit)
        })
    }

    fn writes_in_place(&self) -> bool {
        true
    }

    fn decode_into(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize> {
        let limit = out.len();
        inflate_into(ID, Framing::Zlib, encoded, out, limit)
    }
}

/// What `inflate` writes of the deflate stream `encoded` (at most `limit` bytes) into a buffer
/// of `limit` bytes, or fewer when `encoded` cannot inflate to that many: a short corrupt
/// stream never reserves a large buffer.
pub(super) fn inflated(
    encoded: &[u8],
    limit: usize,
    inflate: impl FnOnce(&mut [u8]) -> Result<usize>,
) -> Result<Vec<u8>> {
    let room = limit.min(encoded.len().saturating_mul(MOST_EXPANSION));
    let mut out = vec![0u8; room];
    let n = inflate(&mut out)?;
    out.truncate(n);
    Ok(out)
}

/// How a deflate stream is framed: zlib's header and Adler-32, or a gzip member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Framing {
    Zlib,
    Gzip,
}

/// Deflates `raw` into one stream of `framing` in `out` (replacing what it held) with this
/// thread's libdeflate compressor for `level` (0-9), made on its first use; `codec` names
/// the codec in errors.
pub(super) fn deflate_into(
    codec: &str,
    framing: Framing,
    raw: &[u8],
    level: u32,
    out: &mut Vec<u8>,
) -> Result<()> {
    thread_local! {
        static COMPRESSORS: RefCell<Option<[Option<Compressor>; 10]>> = const { RefCell::new(None) };
    }
    with_reused(
        codec,
        &COMPRESSORS,
        || Some(Default::default()),
        |all| {
            let outside = || bad_config(codec, format!("level {level} is outside 0..=9"));
            let slot = all.get_mut(level as usize).ok_or_else(outside)?;
            let c = match slot {
                Some(c) => c,
                None => {
                    let lvl = CompressionLvl::new(level as i32).map_err(|_| outside())?;
                    slot.insert(Compressor::new(lvl))
                }
            };
            // Zero-filled only past the kept length (the end of the last chunk's output);
            // the compressor writes every byte it returns.
            let bound = match framing {
                Framing::Zlib => c.zlib_compress_bound(raw.len()),
                Framing::Gzip => c.gzip_compress_bound(raw.len()),
            };
            out.resize(bound, 0);
            let n = match framing {
                Framing::Zlib => c.zlib_compress(raw, out),
                Framing::Gzip => c.gzip_compress(raw, out),
            }
            .map_err(|e| failed(codec, format!("cannot compress: {e:?}")))?;
            out.truncate(n);
            Ok(())
        },
    )
}

/// Inflates the stream of `framing` at the start of `encoded` into the start of `out` in one
/// pass (libdeflate, this thread's decompressor); returns the bytes written. A stream longer
/// than `out` (reported as longer than `limit`), a truncated or corrupt one, or one whose
/// checksum does not match is an error; bytes after the stream (for gzip: any further
/// member) are ignored.
pub(super) fn inflate_into(
    codec: &str,
    framing: Framing,
    encoded: &[u8],
    out: &mut [u8],
    limit: usize,
) -> Result<usize> {
    thread_local! {
        static DECOMPRESSOR: RefCell<Option<Decompressor>> = const { RefCell::new(None) };
    }
    with_reused(
        codec,
        &DECOMPRESSOR,
        || Some(Decompressor::new()),
        |d| {
            let inflated = match framing {
                Framing::Zlib => d.zlib_decompress(encoded, out),
                Framing::Gzip => d.gzip_decompress(encoded, out),
            };
            match inflated {
                Ok(n) => Ok(n),
                Err(DecompressionError::InsufficientSpace) => Err(past_limit(
                    codec,
                    format!("decompresses to more than the expected {limit} bytes"),
                )),
                Err(DecompressionError::BadData) => Err(failed(
                    codec,
                    "corrupt stream: truncated, damaged or failing its checksum",
                )),
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_defaults_and_limits() {
        let data: Vec<u8> = (0..5000u32).flat_map(|i| (i % 97).to_le_bytes()).collect();
        for level in 0..=9 {
            let z = Zlib::new(level).unwrap();
            let enc = z.encode(&data).unwrap();
            assert_eq!(z.decode(&enc, data.len()).unwrap(), data);
        }
        assert_eq!(
            Zlib::from_config(&params::config(ID, &[])).unwrap().level,
            1
        );
        assert_eq!(Zlib::from_hdf5(&[]).unwrap().level, 1);
        let z = Zlib::new(5).unwrap();
        let enc = z.encode(&data).unwrap();
        let e = z.decode(&enc, data.len() - 1).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "codec zlib failed: decompresses to more than the expected {} bytes",
                data.len() - 1
            )
        );
        assert_eq!(
            Zlib::new(10).unwrap_err().to_string(),
            "invalid zlib configuration: level 10 is outside 0..=9"
        );
        assert_eq!(
            Zlib::from_config(&params::config(ID, &[("level", Value::from("x"))]))
                .unwrap_err()
                .to_string(),
            "invalid zlib configuration: level \"x\" is not an integer"
        );
        assert_eq!(Zlib::from_config(&z.config()).unwrap(), z);
        assert_eq!(z.hdf5(), Some((1, vec![5])));
    }

    /// Every level's stream is a zlib stream another inflater (zlib-rs, through flate2) reads;
    /// level 0 keeps the bytes uncompressed, the others compress.
    #[test]
    fn every_level_is_a_zlib_stream_zlib_inflates() {
        use std::io::Read;
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        for level in 0..=9 {
            let enc = Zlib::new(level).unwrap().encode(&data).unwrap();
            let mut back = Vec::new();
            flate2::read::ZlibDecoder::new(&enc[..])
                .read_to_end(&mut back)
                .unwrap();
            assert!(back == data, "level {level}");
            assert_eq!(
                enc.len() > data.len(),
                level == 0,
                "level {level}: {}",
                enc.len()
            );
        }
    }

    #[test]
    fn inflating_in_place_checks_size_end_and_checksum() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let z = Zlib::new(1).unwrap();
        let enc = z.encode(&data).unwrap();
        let mut out = vec![0u8; data.len()];
        assert_eq!(z.decode_into(&enc, &mut out).unwrap(), data.len());
        assert_eq!(out, data);
        // Room to spare, or bytes after the stream: the stream's own length is reported.
        let mut big = vec![0u8; data.len() + 10];
        assert_eq!(z.decode_into(&enc, &mut big).unwrap(), data.len());
        let trailing = [&enc[..], &[9, 9, 9]].concat();
        assert_eq!(z.decode_into(&trailing, &mut out).unwrap(), data.len());
        assert_eq!(z.decode(&trailing, 1 << 20).unwrap(), data);
        // Too long for the buffer, truncated, garbage, empty, a wrong checksum: errors.
        let mut small = vec![0u8; data.len() - 1];
        let e = z.decode_into(&enc, &mut small).unwrap_err().to_string();
        assert!(e.contains("more than the expected 99999 bytes"), "{e}");
        let mut bad_sum = enc.clone();
        *bad_sum.last_mut().unwrap() ^= 1;
        for bad in [&enc[..enc.len() / 2], &[1, 2, 3, 4], &[], &bad_sum[..]] {
            let e = z.decode_into(bad, &mut out).unwrap_err().to_string();
            assert!(e.starts_with("codec zlib failed: corrupt stream"), "{e}");
            assert!(z.decode(bad, data.len()).is_err());
        }
    }

    #[test]
    fn a_short_stream_never_reserves_its_whole_limit() {
        let z = Zlib::new(1).unwrap();
        let enc = z.encode(&[5u8; 10]).unwrap();
        let out = z.decode(&enc, usize::MAX / 2).unwrap();
        assert_eq!(out, [5u8; 10]);
        assert!(
            out.capacity() <= enc.len() * MOST_EXPANSION,
            "{}",
            out.capacity()
        );
        // The densest stream there is still fits the reservation.
        let zeros = vec![0u8; 4 << 20];
        let dense = Zlib::new(9).unwrap().encode(&zeros).unwrap();
        assert_eq!(z.decode(&dense, usize::MAX / 2).unwrap(), zeros);
    }
}
