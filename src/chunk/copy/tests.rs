//! Unit tests of the copy plans and loops, including the private merging of axes.

use super::*;
use crate::chunk::projection::{Projection, Region};

fn piece(chunk: &[(u64, u64, u64)], request_start: &[u64]) -> ChunkPiece {
    let spans = |v: Vec<Span>| Region { spans: v };
    ChunkPiece {
        chunk: vec![0; chunk.len()],
        chunk_region: spans(
            chunk
                .iter()
                .map(|&(start, step, count)| Span { start, step, count })
                .collect(),
        ),
        request_region: spans(
            chunk
                .iter()
                .zip(request_start)
                .map(|(&(_, _, count), &start)| Span {
                    start,
                    step: 1,
                    count,
                })
                .collect(),
        ),
    }
}

fn axes(p: &ChunkPiece, shape: &[u64], strides: &[i64], mem_len: usize) -> Vec<Axis> {
    let len = shape.iter().product::<u64>() as usize * 4;
    let dir = Dir::ChunkToMemory;
    plan(dir, len, shape, mem_len, strides, p, 4)
        .unwrap()
        .unwrap()
        .axes
}

#[test]
fn whole_chunk_merges_into_one_run() {
    let p = piece(&[(0, 1, 3), (0, 1, 4), (0, 1, 5)], &[0, 0, 0]);
    let a = axes(&p, &[3, 4, 5], &[20, 5, 1], 240);
    assert_eq!(a.len(), 1);
    assert_eq!((a[0].count, a[0].src, a[0].dst), (60, 4, 4));
}

#[test]
fn row_block_merges_inner_dims_only() {
    // Rows 1..3 of a 4x6 chunk into a wider 2x10 buffer: two runs of 6 elements.
    let p = piece(&[(1, 1, 2), (0, 1, 6)], &[0, 0]);
    let a = axes(&p, &[4, 6], &[10, 1], 80);
    assert_eq!(a.len(), 2);
    // Full rows into a tight buffer: one run of 12.
    let a = axes(&p, &[4, 6], &[6, 1], 48);
    assert_eq!((a.len(), a[0].count), (1, 12));
}

#[test]
fn read_and_write_strided_and_transposed() {
    let chunk: Vec<u8> = (0..12).collect();
    // Column 1 of a 3x4 chunk with esize 1, every other row: elements 1 and 9.
    let p = piece(&[(0, 2, 2), (1, 1, 1)], &[0, 0]);
    let mut mem = [0u8; 2];
    read_piece(&chunk, &[3, 4], &mut mem, &[1, 1], &p, 1).unwrap();
    assert_eq!(mem, [1, 9]);
    // The whole chunk transposed.
    let p = piece(&[(0, 1, 3), (0, 1, 4)], &[0, 0]);
    let mut t = [0u8; 12];
    read_piece(&chunk, &[3, 4], &mut t, &[1, 3], &p, 1).unwrap();
    assert_eq!(t, [0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]);
    let mut back = [0u8; 12];
    write_piece(&mut back, &[3, 4], &t, &[1, 3], &p, 1).unwrap();
    assert_eq!(back.to_vec(), chunk);
    // 3-byte elements spread out in memory.
    let chunk: Vec<u8> = (1..10).collect();
    let p = piece(&[(0, 1, 3)], &[0]);
    let mut mem = [0u8; 15];
    read_piece(&chunk, &[3], &mut mem, &[2], &p, 3).unwrap();
    assert_eq!(mem, [1, 2, 3, 0, 0, 0, 4, 5, 6, 0, 0, 0, 7, 8, 9]);
}

#[test]
fn out_of_bounds_is_invalid_and_writes_nothing() {
    let chunk = [7u8; 16];
    let p = piece(&[(0, 1, 4), (0, 1, 4)], &[0, 0]);
    let mut mem = [0u8; 15];
    let bad = [
        read_piece(&chunk, &[4, 4], &mut mem, &[4, 1], &p, 1),
        read_piece(&chunk[..15], &[4, 4], &mut mem, &[4, 1], &p, 1),
        read_piece(&chunk, &[4, 4], &mut mem, &[-4, 1], &p, 1),
        read_piece(&chunk, &[4, 4], &mut mem, &[i64::MAX, 1], &p, 1),
        read_piece(&chunk, &[4, 4], &mut mem, &[1], &p, 1),
        read_piece(&chunk, &[4, 4], &mut mem, &[4, 1], &p, 0),
        read_piece(&chunk, &[2, 8], &mut mem, &[4, 1], &p, 1),
    ];
    for b in bad {
        assert!(matches!(b, Err(Error::Invalid(_))), "{b:?}");
    }
    assert_eq!(mem, [0u8; 15]);
    let mut chunk = [0u8; 16];
    let p = piece(&[(1, 2, 2)], &[0]);
    assert!(write_piece(&mut chunk, &[16], &mem, &[1], &p, 1).is_ok());
    let p = piece(&[(1, 8, 2)], &[0]);
    assert!(write_piece(&mut chunk, &[16], &mem, &[1], &p, 1).is_ok());
    let p = piece(&[(1, 15, 2)], &[0]);
    assert!(write_piece(&mut chunk, &[16], &mem, &[1], &p, 1).is_err());
}

#[test]
fn scalar_and_empty_pieces() {
    let p = Projection::new(&[], &[], &[], &[], &[]).unwrap();
    let piece = p.piece(0).unwrap();
    let mut mem = [0u8; 8];
    read_piece(&[1, 2, 3, 4, 5, 6, 7, 8], &[], &mut mem, &[], &piece, 8).unwrap();
    assert_eq!(mem, [1, 2, 3, 4, 5, 6, 7, 8]);
    let empty = piece_of_count_zero();
    read_piece(&[0; 4], &[4], &mut [], &[1], &empty, 1).unwrap();
}

fn piece_of_count_zero() -> ChunkPiece {
    piece(&[(0, 1, 0)], &[0])
}

#[test]
fn whole_chunk_range_only_when_contiguous() {
    let p = piece(&[(0, 1, 2), (0, 1, 3)], &[1, 0]);
    // A 3x3 request buffer: the chunk's 2x3 block starts at row 1 and is contiguous.
    assert_eq!(
        whole_chunk_range(&[2, 3], 36, &[3, 1], &p, 4).unwrap(),
        Some(12..36)
    );
    // A 3x4 buffer: rows are not adjacent.
    assert_eq!(
        whole_chunk_range(&[2, 3], 48, &[4, 1], &p, 4).unwrap(),
        None
    );
    // Not the whole chunk.
    assert_eq!(
        whole_chunk_range(&[2, 4], 48, &[3, 1], &p, 4).unwrap(),
        None
    );
    assert!(whole_chunk_range(&[2, 3], 35, &[3, 1], &p, 4).is_err());
}

#[test]
fn c_order_strides_of_counts() {
    assert_eq!(c_order_strides(&[2, 3, 4]).unwrap(), vec![12, 4, 1]);
    assert_eq!(c_order_strides(&[]).unwrap(), Vec::<i64>::new());
    assert!(c_order_strides(&[1 << 40, 1 << 30, 1]).is_err());
}

#[test]
fn fill_pattern_repeats_and_truncates() {
    let mut buf = [0u8; 11];
    fill_pattern(&mut buf, &[1, 2, 3]);
    assert_eq!(buf, [1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2]);
    let mut buf = [0u8; 2];
    fill_pattern(&mut buf, &[4, 5, 6]);
    assert_eq!(buf, [4, 5]);
    let mut buf = [9u8; 5];
    fill_pattern(&mut buf, &[]);
    assert_eq!(buf, [9; 5]);
    fill_pattern(&mut buf, &[0, 0]);
    assert_eq!(buf, [0; 5]);
    let mut big = vec![0u8; 8 * 1000 + 3];
    let f = (-1.5f64).to_le_bytes();
    fill_pattern(&mut big, &f);
    assert!(big.chunks_exact(8).all(|c| c == f));
    assert_eq!(&big[8000..], &f[..3]);
}
