//! `shuffle` (numcodecs) = HDF5 filter 2: byte transposition by element size. Bytes left
//! over after the last whole element are kept as they are (HDF5's rule).
//!
//! netcdf-c writes `"elementsize": 0` although it shuffles with the variable's element size;
//! an element size of 0 is therefore read as the element size of the data.

use super::{Codec, Config, Context, hdf5_id, params, past_limit};
use crate::error::Result;
use serde_json::Value;

const ID: &str = "shuffle";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shuffle {
    pub elementsize: usize,
}

impl Shuffle {
    pub fn new(elementsize: usize) -> Shuffle {
        Shuffle { elementsize }
    }

    /// numcodecs default element size is 4; 0 means the data's element size.
    pub fn from_config(cfg: &Config, ctx: Context) -> Result<Shuffle> {
        let e = params::int(cfg, ID, "elementsize", 4, 0..=i64::from(u32::MAX))? as usize;
        Ok(Shuffle::new(if e == 0 { ctx.elem_size } else { e }))
    }
}

/// Elements moved per block: fixed-size blocks let the compiler turn the byte gather into
/// vector shuffles.
const BLOCK: usize = 64;

/// Shuffles `src` (elements of `e` bytes) into `out` (same length): byte `k` of element `i`
/// goes to `out[k * n + i]`; bytes after the last whole element are kept as they are.
fn shuffle_into(src: &[u8], e: usize, out: &mut [u8]) {
    let n = src.len() / e;
    match e {
        2 => planes_from_elements::<2>(src, n, out),
        4 => planes_from_elements::<4>(src, n, out),
        8 => planes_from_elements::<8>(src, n, out),
        _ => {
            for (i, elem) in src[..n * e].chunks_exact(e).enumerate() {
                for (k, b) in elem.iter().enumerate() {
                    out[k * n + i] = *b;
                }
            }
        }
    }
    out[n * e..].copy_from_slice(&src[n * e..]);
}

/// The reverse of [`shuffle_into`].
fn unshuffle_into(src: &[u8], e: usize, out: &mut [u8]) {
    let n = src.len() / e;
    match e {
        2 => elements_from_planes::<2>(src, n, out),
        4 => elements_from_planes::<4>(src, n, out),
        8 => elements_from_planes::<8>(src, n, out),
        _ => {
            for (i, elem) in out[..n * e].chunks_exact_mut(e).enumerate() {
                for (k, b) in elem.iter_mut().enumerate() {
                    *b = src[k * n + i];
                }
            }
        }
    }
    out[n * e..].copy_from_slice(&src[n * e..]);
}

fn planes_from_elements<const E: usize>(src: &[u8], n: usize, out: &mut [u8]) {
    let full = n / BLOCK * BLOCK;
    for (b, block) in src[..full * E].chunks_exact(BLOCK * E).enumerate() {
        let elems: [[u8; E]; BLOCK] =
            std::array::from_fn(|j| std::array::from_fn(|k| block[j * E + k]));
        for k in 0..E {
            let plane = &mut out[k * n + b * BLOCK..k * n + (b + 1) * BLOCK];
            for (j, o) in plane.iter_mut().enumerate() {
                *o = elems[j][k];
            }
        }
    }
    for i in full..n {
        for k in 0..E {
            out[k * n + i] = src[i * E + k];
        }
    }
}

fn elements_from_planes<const E: usize>(src: &[u8], n: usize, out: &mut [u8]) {
    let full = n / BLOCK * BLOCK;
    for (b, block) in out[..full * E].chunks_exact_mut(BLOCK * E).enumerate() {
        let planes: [[u8; BLOCK]; E] = std::array::from_fn(|k| {
            let plane = &src[k * n + b * BLOCK..k * n + (b + 1) * BLOCK];
            std::array::from_fn(|j| plane[j])
        });
        for (j, elem) in block.chunks_exact_mut(E).enumerate() {
            for (k, o) in elem.iter_mut().enumerate() {
                *o = planes[k][j];
            }
        }
    }
    for i in full..n {
        for k in 0..E {
            out[i * E + k] = src[k * n + i];
        }
    }
}

impl Codec for Shuffle {
    fn id(&self) -> &'static str {
        ID
    }

    fn config(&self) -> Config {
        params::config(ID, &[("elementsize", Value::from(self.elementsize))])
    }

    fn hdf5(&self) -> Option<(u32, Vec<u32>)> {
        Some((hdf5_id::SHUFFLE, Vec::new()))
    }

    fn encode_into(&self, raw: &[u8], out: &mut Vec<u8>) -> Result<()> {
        let e = self.elementsize;
        if e <= 1 {
            out.clear();
            out.extend_from_slice(raw);
        } else {
            // Every byte is written by the shuffle: only growth needs filling.
            out.resize(raw.len(), 0);
            shuffle_into(raw, e, out);
        }
        Ok(())
    }

    fn decode(&self, encoded: &[u8], limit: usize) -> Result<Vec<u8>> {
        let mut out = vec![0u8; encoded.len().min(limit)];
        self.decode_into(encoded, &mut out)?;
        Ok(out)
    }

    fn writes_in_place(&self) -> bool {
        true
    }

    fn decodes_at_copy_speed(&self) -> bool {
        true
    }

    fn decode_into(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize> {
        let Some(target) = out.get_mut(..encoded.len()) else {
            return Err(past_limit(
                ID,
                format!(
                    "{} bytes, more than the expected {}",
                    encoded.len(),
                    out.len()
                ),
            ));
        };
        let e = self.elementsize;
        if e <= 1 {
            target.copy_from_slice(encoded);
        } else {
            unshuffle_into(encoded, e, target);
        }
        Ok(encoded.len())
    }

    fn encoded_len(&self, n: usize) -> Option<usize> {
        Some(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_round_trip_and_zero_elementsize() {
        let s = Shuffle::new(4);
        let raw: Vec<u8> = [1u32, 2, 3]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .chain([9u8, 8])
            .collect();
        let enc = s.encode(&raw).unwrap();
        assert_eq!(enc, vec![1, 2, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9, 8]);
        assert_eq!(s.decode(&enc, raw.len()).unwrap(), raw);
        let ctx = Context { elem_size: 8 };
        let zero = params::config(ID, &[("elementsize", Value::from(0))]);
        assert_eq!(Shuffle::from_config(&zero, ctx).unwrap().elementsize, 8);
        assert_eq!(
            Shuffle::from_config(&params::config(ID, &[]), ctx)
                .unwrap()
                .elementsize,
            4
        );
        assert_eq!(Shuffle::from_config(&s.config(), ctx).unwrap(), s);
        assert!(s.decode(&enc, 3).is_err());
    }

    /// The blocked transpositions agree with the definition for every element size, lengths
    /// around the block size and leftover bytes.
    #[test]
    fn blocked_transposition_matches_the_definition() {
        for e in [2usize, 3, 4, 8, 16] {
            for len in [0usize, 1, 7, 64 * e - 1, 64 * e, 64 * e + 5, 1000 * e + 3] {
                let raw: Vec<u8> = (0..len).map(|i| (i * 31 + i / 7) as u8).collect();
                let n = len / e;
                let mut want = raw.clone();
                for i in 0..n {
                    for k in 0..e {
                        want[k * n + i] = raw[i * e + k];
                    }
                }
                let s = Shuffle::new(e);
                let enc = s.encode(&raw).unwrap();
                assert_eq!(enc, want, "e={e} len={len}");
                let mut back = vec![0u8; len + 3];
                assert_eq!(s.decode_into(&enc, &mut back).unwrap(), len);
                assert_eq!(back[..len], raw[..], "e={e} len={len}");
            }
        }
    }
}
