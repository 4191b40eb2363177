//! Requests through more chunks than the data path handles at once are read and written a
//! batch of chunks at a time, every value where it belongs.

use super::{MOST_PIECES_AT_ONCE, Slab};
use crate::api::dataset::Dataset;
use crate::model::{NcType, Storage, Tree};
use crate::zmap::memory::MemoryStore;

/// Ints, one a chunk (1 x 2 chunks of a 2 x n variable).
fn dataset(n: u64) -> Dataset {
    let mut ds = Dataset::creating_over(Box::new(MemoryStore::new()));
    let g = Tree::ROOT;
    let y = ds.def_dim(g, "y", 2, false).unwrap().0 as i32;
    let x = ds.def_dim(g, "x", n, false).unwrap().0 as i32;
    let v = ds.def_var(g, "v", NcType::Int, &[y, x]).unwrap();
    ds.def_var_chunking(g, v, Storage::Chunked, Some(&[1, 2]))
        .unwrap();
    ds.enddef().unwrap();
    ds
}

fn ints(values: impl Iterator<Item = i32>) -> Vec<u8> {
    values.flat_map(i32::to_ne_bytes).collect()
}

#[test]
fn requests_through_more_chunks_than_a_batch_move_every_value() {
    let n = 2 * MOST_PIECES_AT_ONCE as u64 + 6;
    let mut ds = dataset(n);
    // Row 1, every other column: half of each of n / 2 chunks (each read before its write).
    let every_other = Slab {
        start: vec![1, 1],
        count: vec![1, n / 2],
        stride: vec![1, 2],
    };
    let odd = ints((0..n as i32 / 2).map(|i| 3 * i + 1));
    ds.put_fixed(Tree::ROOT, 0, &every_other, None, NcType::Int, &odd)
        .unwrap();
    let whole = Slab {
        start: vec![0, 0],
        count: vec![2, n],
        stride: vec![1, 1],
    };
    let mut out = vec![0u8; 2 * n as usize * 4];
    ds.get_fixed(Tree::ROOT, 0, &whole, None, NcType::Int, &mut out)
        .unwrap();
    let fill = i32::from_ne_bytes(NcType::Int.default_fill().try_into().unwrap());
    let want = ints((0..2 * n as i32).map(|i| {
        let (row, col) = (i / n as i32, i % n as i32);
        if row == 1 && col % 2 == 1 {
            3 * (col / 2) + 1
        } else {
            fill
        }
    }));
    assert!(out == want, "the values read differ from those written");
    let mut back = vec![0u8; odd.len()];
    ds.get_fixed(Tree::ROOT, 0, &every_other, None, NcType::Int, &mut back)
        .unwrap();
    assert!(back == odd);
}
