//! Default chunk shapes, chosen the way netcdf-c chooses them so that `_ChunkSizes` agrees
//! with the reference: aim for chunks of [`DEFAULT_CHUNK_BYTES`], unlimited dimensions get 1
//! (a lone unlimited dimension gets 4 KiB worth), then trim chunks that overhang the
//! dimension so the last chunk is not mostly empty.

/// Target chunk size in bytes (netcdf-c's CMake default).
pub const DEFAULT_CHUNK_BYTES: f64 = 16.0 * 1024.0 * 1024.0;
/// Bytes per chunk for a variable whose only dimension is unlimited.
pub const DEFAULT_1D_UNLIM_BYTES: u64 = 4096;

/// Default chunk shape for dimensions `(length, unlimited)` and element size `esize`.
pub fn default_chunks(dims: &[(u64, bool)], esize: usize) -> Vec<u64> {
    let esize = esize.max(1) as u64;
    let n = dims.len();
    if n == 0 {
        return Vec::new();
    }
    let n_unlim = dims.iter().filter(|d| d.1).count();
    if n == 1 && n_unlim == 1 {
        return vec![(DEFAULT_1D_UNLIM_BYTES / esize).max(1)];
    }
    let mut chunks: Vec<u64> = dims.iter().map(|d| if d.1 { 1 } else { 0 }).collect();
    if n > 1 && n == n_unlim {
        let s = (DEFAULT_CHUNK_BYTES / esize as f64).powf(1.0 / n as f64) as u64;
        return vec![s.max(1); n];
    }
    let num_values: f64 = dims.iter().filter(|d| !d.1).map(|d| d.0 as f64).product();
    let fixed = (n - n_unlim) as f64;
    for (c, (len, _)) in chunks.iter_mut().zip(dims) {
        if *c == 0 {
            let s = ((DEFAULT_CHUNK_BYTES / (num_values * esize as f64)).powf(1.0 / fixed)
                * *len as f64
                - 0.5)
                .max(0.0) as u64;
            *c = s.min(*len).max(1);
        }
    }
    for (c, (len, _)) in chunks.iter_mut().zip(dims) {
        if *len > 0 {
            let num_chunks = len.div_ceil(*c);
            let overhang = num_chunks * *c - len;
            *c -= overhang / num_chunks;
        }
    }
    chunks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_reference_choices() {
        // Observed with netcdf-c 4.9.0 and 4.10.1 NCZarr.
        assert_eq!(
            default_chunks(&[(1000, false), (3000, false)], 4),
            vec![1000, 3000]
        );
        assert_eq!(default_chunks(&[(0, true)], 4), vec![1024]);
        assert_eq!(
            default_chunks(&[(0, true), (1000, false)], 8),
            vec![1, 1000]
        );
        assert_eq!(default_chunks(&[(7, false)], 2), vec![7]);
        let big = default_chunks(&[(100_000, false), (100_000, false)], 8);
        assert!(big.iter().product::<u64>() * 8 <= 17 << 20, "{big:?}");
    }
}
