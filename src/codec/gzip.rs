//! `gzip` (numcodecs, and a core codec of Zarr v3): a gzip member, level 0-9. Reported to
//! netCDF as deflate of its level: the same compression, framed otherwise.

use super::zlib::{Framing, deflate_into, inflate_into, inflated};
use super::{Codec, Config, bad_config, params, stream};
use crate::error::{Error, Result};
use flate2::read::MultiGzDecoder;
use serde_json::Value;

const ID: &str = "gzip";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gzip {
    pub level: u32,
}

impl Gzip {
    /// numcodecs default level is 1.
    pub fn from_config(cfg: &Config) -> Result<Gzip> {
        let level = params::int(cfg, ID, "level", 1, 0..=9)? as u32;
        if level > 9 {
            return Err(bad_config(ID, format!("level {level} is outside 0..=9")));
        }
        Ok(Gzip { level })
    }
}

impl Codec for Gzip {
    fn id(&self) -> &'static str {
        ID
    }

    fn config(&self) -> Config {
        params::config(ID, &[("level", Value::from(self.level))])
    }

    fn hdf5(&self) -> Option<(u32, Vec<u32>)> {
        Some((super::hdf5_id::DEFLATE, vec![self.level]))
    }

    /// One gzip member in one pass (libdeflate, as for zlib).
    fn encode_into(&self, raw: &[u8], out: &mut Vec<u8>) -> Result<()> {
        deflate_into(ID, Framing::Gzip, raw, self.level, out)
    }

    fn decode(&self, encoded: &[u8], limit: usize) -> Result<Vec<u8>> {
        inflated(encoded, limit, |out| decode_to(encoded, out, limit))
    }

    fn writes_in_place(&self) -> bool {
        true
    }

    fn decode_into(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize> {
        let limit = out.len();
        decode_to(encoded, out, limit)
    }
}

/// Inflates `encoded` into the start of `out`. One member (what numcodecs and zarr-python
/// write) is inflated in one pass, and kept when it is the whole stream: when the stream ends
/// with that member's trailer (its CRC-32 and length). Anything else (more members, which gzip
/// allows, or bytes after the member) is read again by a decoder of members, which takes every
/// member and refuses anything that is not one.
fn decode_to(encoded: &[u8], out: &mut [u8], limit: usize) -> Result<usize> {
    match inflate_into(ID, Framing::Gzip, encoded, out, limit) {
        Ok(n) if ends_with_trailer_of(encoded, &out[..n]) => Ok(n),
        Ok(_) | Err(Error::Filter { .. }) => {
            let all = stream::read_bounded(ID, MultiGzDecoder::new(encoded), limit)?;
            let (n, room) = (all.len(), out.len());
            out.get_mut(..n)
                .ok_or_else(|| {
                    super::past_limit(ID, format!("decompresses to more than {room} bytes"))
                })?
                .copy_from_slice(&all);
            Ok(n)
        }
        Err(e) => Err(e),
    }
}

/// True when the gzip stream `encoded` ends with the trailer of a member that inflates to
/// `decoded`: its CRC-32 and its length modulo 2^32, little-endian.
fn ends_with_trailer_of(encoded: &[u8], decoded: &[u8]) -> bool {
    let Some(trailer) = encoded.len().checked_sub(8).map(|at| &encoded[at..]) else {
        return false;
    };
    let crc = u32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
    let size = u32::from_le_bytes([trailer[4], trailer[5], trailer[6], trailer[7]]);
    size == decoded.len() as u32 && crc == libdeflater::crc32(decoded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_config() {
        let data: Vec<u8> = (0..3000u32).flat_map(|i| (i / 3).to_le_bytes()).collect();
        let g = Gzip::from_config(&params::config(ID, &[("level", Value::from(6))])).unwrap();
        let enc = g.encode(&data).unwrap();
        assert_eq!(&enc[..2], &[0x1f, 0x8b]);
        assert_eq!(g.decode(&enc, data.len()).unwrap(), data);
        assert_eq!(Gzip::from_config(&g.config()).unwrap(), g);
        assert_eq!(
            Gzip::from_config(&params::config(ID, &[])).unwrap().level,
            1
        );
        assert_eq!(
            Gzip::from_config(&params::config(ID, &[("level", Value::from(-1))]))
                .unwrap_err()
                .to_string(),
            "invalid gzip configuration: level -1 is outside 0..=9"
        );
        assert_eq!(
            g.hdf5(),
            Some((super::super::hdf5_id::DEFLATE, vec![g.level]))
        );
    }

    /// Streams of several members (gzip allows them; flate2's encoder makes one per call)
    /// read whole, in place or not; a stream longer than the room it is given fails.
    #[test]
    fn every_member_is_read_and_limits_hold() {
        use flate2::{Compression, write::GzEncoder};
        use std::io::Write;
        let member = |bytes: &[u8]| {
            let mut e = GzEncoder::new(Vec::new(), Compression::new(5));
            e.write_all(bytes).unwrap();
            e.finish().unwrap()
        };
        let data: Vec<u8> = (0..40_000u32).map(|i| (i % 251) as u8).collect();
        let g = Gzip { level: 1 };
        let mut two = member(&data[..15_000]);
        two.extend(member(&data[15_000..]));
        assert_eq!(g.decode(&two, data.len()).unwrap(), data);
        let mut out = vec![0u8; data.len()];
        assert_eq!(g.decode_into(&two, &mut out).unwrap(), data.len());
        assert_eq!(out, data);
        let one = g.encode(&data).unwrap();
        let mut back = Vec::new();
        std::io::Read::read_to_end(&mut MultiGzDecoder::new(&one[..]), &mut back).unwrap();
        assert_eq!(
            back, data,
            "libdeflate's member is a gzip member flate2 reads"
        );
        let mut short = vec![0u8; data.len() - 1];
        for stream in [&one, &two] {
            let e = g.decode_into(stream, &mut short).unwrap_err().to_string();
            assert!(e.contains("more than"), "{e}");
        }
        let mut larger = vec![0u8; data.len() + 10];
        assert_eq!(g.decode_into(&one, &mut larger).unwrap(), data.len());
        // A whole member followed by anything but members is no gzip stream; followed by
        // another member, it is longer than its room.
        for after in [&b"garbage!"[..], &[0u8; 16][..], &member(b"more")[..]] {
            let mut stream = one.clone();
            stream.extend_from_slice(after);
            assert!(g.decode(&stream, data.len()).is_err(), "{after:?}");
            assert!(g.decode_into(&stream, &mut out).is_err(), "{after:?}");
        }
        // Where the room is only a bound (strings behind vlen-utf8), several members still
        // read whole.
        let mut room = vec![0u8; 2 * data.len()];
        assert_eq!(g.decode_into(&two, &mut room).unwrap(), data.len());
        assert_eq!(&room[..data.len()], &data[..]);
        let damaged: Vec<u8> = one.iter().map(|b| b ^ 0x55).collect();
        assert!(g.decode(&damaged, data.len()).is_err());
    }
}
