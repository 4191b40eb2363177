//! Reordering a whole chunk between Fortran (column-major) and C (row-major) element order.
//!
//! Zarr v2 arrays with `order: "F"` store each chunk with the first index varying fastest; the
//! rest of the engine works in C order, so such chunks are reordered right after decoding and
//! right before encoding. Knows only shapes and element sizes.

/// Reorders `buf` (a chunk of `shape`, elements of `esize` bytes) from F order to C order.
pub fn f_to_c(buf: &[u8], shape: &[u64], esize: usize) -> Vec<u8> {
    reorder(buf, shape, esize, true)
}

/// Reorders `buf` (a chunk of `shape`, elements of `esize` bytes) from C order to F order.
pub fn c_to_f(buf: &[u8], shape: &[u64], esize: usize) -> Vec<u8> {
    reorder(buf, shape, esize, false)
}

/// Walks the destination in its own order and picks each element from the source. `to_c`:
/// the destination is C order and the source F order; otherwise the reverse.
fn reorder(buf: &[u8], shape: &[u64], esize: usize, to_c: bool) -> Vec<u8> {
    let mut out = vec![0u8; buf.len()];
    let n: usize = shape.iter().map(|&s| s as usize).product();
    if shape.len() < 2 || n == 0 || buf.len() < n * esize {
        out.copy_from_slice(buf);
        return out;
    }
    let rank = shape.len();
    // Element strides of the F-ordered buffer.
    let mut f_strides = vec![1usize; rank];
    for d in 1..rank {
        f_strides[d] = f_strides[d - 1] * shape[d - 1] as usize;
    }
    let mut idx = vec![0u64; rank];
    for c_pos in 0..n {
        let f_pos: usize = idx
            .iter()
            .zip(&f_strides)
            .map(|(i, s)| *i as usize * s)
            .sum();
        let (dst, src) = if to_c { (c_pos, f_pos) } else { (f_pos, c_pos) };
        out[dst * esize..(dst + 1) * esize].copy_from_slice(&buf[src * esize..(src + 1) * esize]);
        // Next C-order index: last dimension fastest.
        for d in (0..rank).rev() {
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    out
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
