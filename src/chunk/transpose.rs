//! Reordering a whole chunk between Fortran (column-major) and C (row-major) element order.
//!
//! Zarr v2 arrays with `order: "F"` store each chunk with the first index varying fastest; the
//! rest of the engine works in C order, so such chunks are reordered right after decoding and
//! right before encoding, by the contiguous-run copy engine with column-major strides on one
//! side. Knows only shapes and element sizes.

use super::copy::{read_piece, write_piece};
use super::projection::ChunkPiece;

/// Reorders `buf` (a chunk of `shape`, elements of `esize` bytes) from F order to C order.
pub fn f_to_c(buf: &[u8], shape: &[u64], esize: usize) -> Vec<u8> {
    let mut out = vec![0u8; buf.len()];
    // The F-ordered buffer is "memory" with column-major strides; the C-ordered one the chunk.
    let copied = f_strides(shape).and_then(|strides| {
        write_piece(
            &mut out,
            shape,
            buf,
            &strides,
            &ChunkPiece::whole(shape),
            esize,
        )
        .ok()
    });
    if copied.is_none() {
        out.copy_from_slice(buf);
    }
    out
}

/// Reorders `buf` (a chunk of `shape`, elements of `esize` bytes) from C order to F order.
pub fn c_to_f(buf: &[u8], shape: &[u64], esize: usize) -> Vec<u8> {
    let mut out = vec![0u8; buf.len()];
    let copied = f_strides(shape).and_then(|strides| {
        read_piece(
            buf,
            shape,
            &mut out,
            &strides,
            &ChunkPiece::whole(shape),
            esize,
        )
        .ok()
    });
    if copied.is_none() {
        out.copy_from_slice(buf);
    }
    out
}

/// Element strides of a column-major (F-ordered) box of `shape`; `None` when the orders agree
/// (fewer than 2 dimensions) or the shape overflows.
fn f_strides(shape: &[u64]) -> Option<Vec<i64>> {
    if shape.len() < 2 {
        return None;
    }
    let mut strides = vec![1i64; shape.len()];
    for d in 1..shape.len() {
        strides[d] = strides[d - 1].checked_mul(i64::try_from(shape[d - 1]).ok()?)?;
    }
    Some(strides)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_by_three_matches_numpy() {
        // numpy: np.arange(6).reshape(2, 3) in F order is stored as 0 3 1 4 2 5.
        let f: Vec<u8> = vec![0, 3, 1, 4, 2, 5];
        assert_eq!(f_to_c(&f, &[2, 3], 1), vec![0, 1, 2, 3, 4, 5]);
        assert_eq!(c_to_f(&[0, 1, 2, 3, 4, 5], &[2, 3], 1), f);
    }

    #[test]
    fn round_trips_three_dims_with_wide_elements() {
        let shape = [2u64, 3, 4];
        let c: Vec<u8> = (0..24u16).flat_map(|v| v.to_le_bytes()).collect();
        let f = c_to_f(&c, &shape, 2);
        assert_ne!(f, c);
        // Element (1, 2, 3) sits at F offset 1 + 2*2 + 3*6 = 23 and has C value 23.
        assert_eq!(&f[23 * 2..24 * 2], &23u16.to_le_bytes());
        // Element (1, 0, 0): C value 12 at F offset 1.
        assert_eq!(&f[2..4], &12u16.to_le_bytes());
        assert_eq!(f_to_c(&f, &shape, 2), c);
    }

    #[test]
    fn one_dimension_is_unchanged() {
        assert_eq!(f_to_c(&[1, 2, 3], &[3], 1), vec![1, 2, 3]);
    }
}
