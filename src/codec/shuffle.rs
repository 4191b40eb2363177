//! `shuffle` (numcodecs) = HDF5 filter 2: byte transposition by element size. Bytes left
//! over after the last whole element are kept as they are (HDF5's rule).
//!
//! netcdf-c writes `"elementsize": 0` although it shuffles with the variable's element size;
//! an element size of 0 is therefore read as the element size of the data.

use super::{Codec, Config, Context, failed, hdf5_id, params};
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

fn transpose(src: &[u8], rows: usize, cols: usize) -> Vec<u8> {
    let mut out = vec![0u8; src.len()];
    let n = rows * cols;
    if n == 0 {
        out.copy_from_slice(src);
        return out;
    }
    for (r, row) in src[..n].chunks_exact(cols).enumerate() {
        for (c, b) in row.iter().enumerate() {
            out[c * rows + r] = *b;
        }
    }
    out[n..].copy_from_slice(&src[n..]);
    out
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

    fn encode(&self, raw: &[u8]) -> Result<Vec<u8>> {
        let e = self.elementsize;
        if e <= 1 {
            return Ok(raw.to_vec());
        }
        Ok(transpose(raw, raw.len() / e, e))
    }

    fn decode(&self, encoded: &[u8], limit: usize) -> Result<Vec<u8>> {
        if encoded.len() > limit {
            return Err(failed(
                ID,
                format!("{} bytes, more than the expected {limit}", encoded.len()),
            ));
        }
        let e = self.elementsize;
        if e <= 1 {
            return Ok(encoded.to_vec());
        }
        Ok(transpose(encoded, e, encoded.len() / e))
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
}
