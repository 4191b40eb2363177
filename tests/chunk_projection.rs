//! Property tests for the chunk engine's core: projected pieces tile every request exactly
//! once, and reads and writes through projection + copy agree with a dense in-memory model,
//! for C-order and `imap`-style (permuted, padded) memory layouts and all element sizes.

use nczarr_rs::chunk::copy::{c_order_strides, read_piece, write_piece};
use nczarr_rs::chunk::projection::{Projection, chunks_touched};
use proptest::prelude::*;
use std::collections::BTreeSet;

/// A random request on a random chunked array.
#[derive(Clone, Debug)]
struct Case {
    shape: Vec<u64>,
    chunk: Vec<u64>,
    start: Vec<u64>,
    count: Vec<u64>,
    stride: Vec<u64>,
}

fn case() -> impl Strategy<Value = Case> {
    prop::collection::vec(
        (0u64..=9, 1u64..=5, 1u64..=5, any::<u64>(), any::<u64>()),
        1..=4,
    )
    .prop_map(|dims| {
        let mut c = Case {
            shape: vec![],
            chunk: vec![],
            start: vec![],
            count: vec![],
            stride: vec![],
        };
        for (n, ch, t, a, b) in dims {
            let start = a % (n + 1);
            let max = if start < n {
                (n - 1 - start) / t + 1
            } else {
                0
            };
            c.shape.push(n);
            c.chunk.push(ch);
            c.stride.push(t);
            c.start.push(start);
            c.count.push(b % (max + 1));
        }
        c
    })
}

/// A memory layout over `count`: dimensions in the order `perm` (outermost first), each
/// padded by `pad` unused elements.
fn layout(count: &[u64], perm: &[usize], pad: &[u64]) -> (Vec<i64>, usize) {
    let mut strides = vec![0i64; count.len()];
    let mut n = 1u64;
    for &d in perm.iter().rev() {
        strides[d] = n as i64;
        n *= count[d] + pad[d];
    }
    (strides, n as usize)
}

fn case_with_layouts()
-> impl Strategy<Value = (Case, usize, Vec<usize>, Vec<u64>, Vec<usize>, Vec<u64>)> {
    (case(), prop::sample::select(vec![1usize, 2, 3, 4, 8, 16])).prop_flat_map(|(c, esize)| {
        let rank = c.shape.len();
        let perm = || Just((0..rank).collect::<Vec<_>>()).prop_shuffle();
        let pad = || prop::collection::vec(0u64..=2, rank);
        (Just(c), Just(esize), perm(), pad(), perm(), pad())
    })
}

/// Bytes of element value `v` at size `esize`: an odd multiplier spreads distinct values over
/// all bytes, so every element size sees different data.
fn elem(v: u64, esize: usize) -> Vec<u8> {
    let mixed = u128::from(v).wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835);
    mixed.to_le_bytes()[..esize].to_vec()
}

/// Calls `f` with every index of a box of `count`, in C order.
fn each_index(count: &[u64], mut f: impl FnMut(&[u64])) {
    if count.contains(&0) {
        return;
    }
    let mut idx = vec![0u64; count.len()];
    loop {
        f(&idx);
        let mut d = count.len();
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < count[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

fn linear(idx: &[u64], shape: &[u64]) -> usize {
    idx.iter().zip(shape).fold(0, |n, (&i, &s)| n * s + i) as usize
}

/// The array as full-size chunks (edges padded with `u64::MAX`), from element values.
fn to_chunks(c: &Case, value: impl Fn(&[u64]) -> u64, esize: usize) -> Vec<Vec<u8>> {
    let grid: Vec<u64> = c
        .shape
        .iter()
        .zip(&c.chunk)
        .map(|(n, k)| n.div_ceil(*k))
        .collect();
    let mut chunks = vec![];
    each_index(&grid, |g| {
        let mut buf = vec![];
        each_index(&c.chunk, |e| {
            let a: Vec<u64> = (0..g.len()).map(|d| g[d] * c.chunk[d] + e[d]).collect();
            let inside = a.iter().zip(&c.shape).all(|(i, n)| i < n);
            buf.extend(elem(if inside { value(&a) } else { u64::MAX }, esize));
        });
        chunks.push(buf);
    });
    chunks
}

fn chunk_slot(c: &Case, chunk: &[u64]) -> usize {
    let grid: Vec<u64> = c
        .shape
        .iter()
        .zip(&c.chunk)
        .map(|(n, k)| n.div_ceil(*k))
        .collect();
    linear(chunk, &grid)
}

fn array_index(c: &Case, r: &[u64]) -> Vec<u64> {
    (0..r.len())
        .map(|d| c.start[d] + r[d] * c.stride[d])
        .collect()
}

fn mem_offset(r: &[u64], strides: &[i64]) -> usize {
    r.iter()
        .zip(strides)
        .map(|(&i, &s)| i as i64 * s)
        .sum::<i64>() as usize
}

fn project(c: &Case) -> Projection {
    Projection::new(&c.shape, &c.chunk, &c.start, &c.count, &c.stride).unwrap()
}

proptest! {
    #[test]
    fn pieces_tile_the_request_exactly_once(c in case()) {
        let p = project(&c);
        let mut hits = vec![0u32; c.count.iter().product::<u64>() as usize];
        let mut chunks = BTreeSet::new();
        for piece in p.pieces() {
            prop_assert!(piece.chunk_region.num_elements() > 0);
            prop_assert!(chunks.insert(piece.chunk.clone()));
            let local: Vec<u64> = piece.request_region.spans.iter().map(|s| s.count).collect();
            each_index(&local, |i| {
                let r: Vec<u64> =
                    (0..i.len()).map(|d| piece.request_region.spans[d].start + i[d]).collect();
                hits[linear(&r, &c.count)] += 1;
                for (d, s) in piece.chunk_region.spans.iter().enumerate() {
                    let in_chunk = s.start + i[d] * s.step;
                    assert!(in_chunk < c.chunk[d]);
                    assert_eq!(piece.chunk[d] * c.chunk[d] + in_chunk, array_index(&c, &r)[d]);
                }
            });
        }
        prop_assert!(hits.iter().all(|&h| h == 1));
        let mut expected = BTreeSet::new();
        each_index(&c.count, |r| {
            let a = array_index(&c, r);
            expected.insert(a.iter().zip(&c.chunk).map(|(i, k)| i / k).collect::<Vec<_>>());
        });
        prop_assert_eq!(&chunks, &expected);
        prop_assert_eq!(p.len(), expected.len() as u64);
        let touched = chunks_touched(&c.shape, &c.chunk, &c.start, &c.count, &c.stride).unwrap();
        prop_assert_eq!(touched, expected.len() as u64);
    }

    #[test]
    fn read_matches_dense_model(
        c in case(),
        esize in prop::sample::select(vec![1usize, 2, 3, 4, 8, 16]),
    ) {
        let chunks = to_chunks(&c, |a| linear(a, &c.shape) as u64, esize);
        let strides = c_order_strides(&c.count).unwrap();
        let n = c.count.iter().product::<u64>() as usize;
        let mut out = vec![0xAAu8; n * esize];
        for piece in project(&c).pieces() {
            let buf = &chunks[chunk_slot(&c, &piece.chunk)];
            read_piece(buf, &c.chunk, &mut out, &strides, &piece, esize).unwrap();
        }
        let mut want = vec![];
        each_index(&c.count, |r| want.extend(elem(linear(&array_index(&c, r), &c.shape) as u64, esize)));
        prop_assert_eq!(out, want);
    }

    #[test]
    fn write_then_read_matches_dense_model(
        (c, esize, perm_w, pad_w, perm_r, pad_r) in case_with_layouts()
    ) {
        let shape_len = c.shape.iter().product::<u64>() as usize;
        let mut model: Vec<u64> = (0..shape_len as u64).collect();
        let mut chunks = to_chunks(&c, |a| linear(a, &c.shape) as u64, esize);
        let (w_strides, w_len) = layout(&c.count, &perm_w, &pad_w);
        let mem: Vec<u8> = (0..w_len as u64).flat_map(|k| elem(1_000_000 + k, esize)).collect();
        let p = project(&c);
        for piece in p.pieces() {
            let slot = chunk_slot(&c, &piece.chunk);
            write_piece(&mut chunks[slot], &c.chunk, &mem, &w_strides, &piece, esize).unwrap();
        }
        each_index(&c.count, |r| {
            model[linear(&array_index(&c, r), &c.shape)] = 1_000_000 + mem_offset(r, &w_strides) as u64;
        });
        let value = |a: &[u64]| model[linear(a, &c.shape)];
        prop_assert_eq!(&chunks, &to_chunks(&c, value, esize));

        let (r_strides, r_len) = layout(&c.count, &perm_r, &pad_r);
        let mut out = vec![0x55u8; r_len * esize];
        for piece in p.pieces() {
            let buf = &chunks[chunk_slot(&c, &piece.chunk)];
            read_piece(buf, &c.chunk, &mut out, &r_strides, &piece, esize).unwrap();
        }
        let mut want = vec![0x55u8; r_len * esize];
        each_index(&c.count, |r| {
            let o = mem_offset(r, &r_strides) * esize;
            want[o..o + esize].copy_from_slice(&elem(value(&array_index(&c, r)), esize));
        });
        prop_assert_eq!(out, want);
    }
}

#[test]
fn huge_arrays_cost_only_their_pieces() {
    let n = 1u64 << 40;
    let p = Projection::new(&[n], &[1 << 20], &[7], &[5], &[1 << 30]).unwrap();
    assert_eq!(p.pieces().count(), 5);
    let big = [n; 4];
    let touched = chunks_touched(&big, &[1; 4], &[0; 4], &[5; 4], &[1 << 30; 4]).unwrap();
    assert_eq!(touched, 625);
    let all = chunks_touched(&big, &[1; 4], &[0; 4], &[n; 4], &[1; 4]);
    assert!(all.is_err());
}
