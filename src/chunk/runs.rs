//! The contiguous byte runs one [`ChunkPiece`] occupies in an uncompressed chunk and in user
//! memory, for reading only those bytes of a stored chunk straight into the caller's buffer.
//!
//! Owns the run arithmetic (checked exactly like [`super::copy::read_piece`]) and nothing else:
//! it does not read, and it does not know what a store is.

use super::copy::{Plan, read_plan as piece_plan};
use super::projection::ChunkPiece;
use crate::error::Result;

/// One contiguous run: `len` bytes at `chunk` in the chunk and at `mem` in user memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    pub chunk: usize,
    pub mem: usize,
    pub len: usize,
}

/// How a piece breaks into runs: how many, and how long each is; and, row by row (a row is
/// one position of every axis but the innermost), how many rows and how many chunk bytes a row
/// spans from its first element to the end of its last.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunShape {
    pub runs: usize,
    pub run_len: usize,
    pub rows: usize,
    pub row_span: usize,
    /// Chunk bytes from the piece's first element to the end of its last.
    pub span: usize,
}

/// A piece row by row: every row holds `count` elements `chunk_step` bytes apart in the chunk
/// and `mem_step` bytes apart in memory, spanning `span` chunk bytes; `starts` has the chunk and
/// memory offsets of each row's first element, in chunk order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rows {
    pub count: usize,
    pub chunk_step: usize,
    pub mem_step: isize,
    pub span: usize,
    pub starts: Vec<(usize, usize)>,
}

/// Calls `row` with the chunk and memory offsets of the first element of every row of `p`
/// (all axes but the innermost, which `p` no longer holds), in chunk order.
fn for_each_row(p: &Plan, mut row: impl FnMut(usize, usize)) {
    let (mut src, mut dst) = (p.src as isize, p.dst as isize);
    let mut odometer = vec![0usize; p.axes.len()];
    loop {
        row(src as usize, dst as usize);
        let mut level = p.axes.len();
        loop {
            if level == 0 {
                return;
            }
            level -= 1;
            let a = &p.axes[level];
            if odometer[level] + 1 < a.count {
                odometer[level] += 1;
                src += a.src;
                dst += a.dst;
                break;
            }
            src -= a.src * odometer[level] as isize;
            dst -= a.dst * odometer[level] as isize;
            odometer[level] = 0;
        }
    }
}

/// The run shape of `piece` (arguments as [`super::copy::read_piece`], with the chunk given by
/// its shape); `None` for an empty piece.
pub fn run_shape(
    chunk_shape: &[u64],
    mem_len: usize,
    mem_strides: &[i64],
    piece: &ChunkPiece,
    esize: usize,
) -> Result<Option<RunShape>> {
    let Some(p) = piece_plan(chunk_shape, mem_len, mem_strides, piece, esize)? else {
        return Ok(None);
    };
    let Some((inner, outer)) = p.axes.split_last() else {
        return Ok(None);
    };
    let rows: usize = outer.iter().map(|a| a.count).product();
    let e = esize as isize;
    let row_span = (inner.count - 1) * inner.src.unsigned_abs() + esize;
    let span = outer
        .iter()
        .map(|a| (a.count - 1) * a.src.unsigned_abs())
        .sum::<usize>()
        + row_span;
    Ok(Some(if inner.src == e && inner.dst == e {
        RunShape {
            runs: rows,
            run_len: inner.count * esize,
            rows,
            row_span,
            span,
        }
    } else {
        RunShape {
            runs: rows * inner.count,
            run_len: esize,
            rows,
            row_span,
            span,
        }
    }))
}

/// Every run of `piece`, in chunk order (arguments as [`run_shape`]). Every offset is inside
/// its buffer: the chunk of `chunk_shape` and the `mem_len` bytes of user memory.
pub fn runs(
    chunk_shape: &[u64],
    mem_len: usize,
    mem_strides: &[i64],
    piece: &ChunkPiece,
    esize: usize,
) -> Result<Vec<Run>> {
    let Some(mut p) = piece_plan(chunk_shape, mem_len, mem_strides, piece, esize)? else {
        return Ok(Vec::new());
    };
    let e = esize as isize;
    let Some(inner) = p.axes.pop() else {
        return Ok(Vec::new());
    };
    let contiguous = inner.src == e && inner.dst == e;
    let mut out = Vec::new();
    for_each_row(&p, |src, dst| {
        if contiguous {
            out.push(Run {
                chunk: src,
                mem: dst,
                len: inner.count * esize,
            });
        } else {
            let (mut s, mut d) = (src as isize, dst as isize);
            for _ in 0..inner.count {
                out.push(Run {
                    chunk: s as usize,
                    mem: d as usize,
                    len: esize,
                });
                s += inner.src;
                d += inner.dst;
            }
        }
    });
    Ok(out)
}

/// `piece` row by row (arguments as [`run_shape`]); `None` for an empty piece.
pub fn rows(
    chunk_shape: &[u64],
    mem_len: usize,
    mem_strides: &[i64],
    piece: &ChunkPiece,
    esize: usize,
) -> Result<Option<Rows>> {
    let Some(mut p) = piece_plan(chunk_shape, mem_len, mem_strides, piece, esize)? else {
        return Ok(None);
    };
    let Some(inner) = p.axes.pop() else {
        return Ok(None);
    };
    let mut starts = Vec::new();
    for_each_row(&p, |src, dst| starts.push((src, dst)));
    Ok(Some(Rows {
        count: inner.count,
        chunk_step: inner.src.unsigned_abs(),
        mem_step: inner.dst,
        span: (inner.count - 1) * inner.src.unsigned_abs() + esize,
        starts,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::copy::{c_order_strides, read_piece};
    use crate::chunk::projection::Projection;

    /// Copying run by run gives what `read_piece` gives, for whole, partial, strided and
    /// `imap` pieces; and the run shape counts the runs listed.
    #[test]
    fn runs_copy_what_read_piece_copies() {
        let shape = [6u64, 5, 7];
        let chunks = [4u64, 3, 7];
        let chunk_elems: u64 = chunks.iter().product();
        let requests: [([u64; 3], [u64; 3], [u64; 3]); 4] = [
            ([0, 0, 0], [6, 5, 7], [1, 1, 1]),
            ([1, 1, 2], [3, 4, 3], [1, 1, 1]),
            ([0, 0, 0], [3, 3, 4], [2, 2, 2]),
            ([5, 4, 6], [1, 1, 1], [1, 1, 1]),
        ];
        for (start, count, stride) in requests {
            let proj = Projection::new(&shape, &chunks, &start, &count, &stride).unwrap();
            for esize in [1usize, 4] {
                let n: u64 = count.iter().product();
                let mem_len = n as usize * esize;
                for strides in [
                    c_order_strides(&count).unwrap(),
                    // Fortran-order memory (an imap).
                    vec![1, count[0] as i64, (count[0] * count[1]) as i64],
                ] {
                    for piece in proj.pieces() {
                        let chunk: Vec<u8> = (0..chunk_elems as usize * esize)
                            .map(|i| (i * 7 + piece.chunk.iter().sum::<u64>() as usize) as u8)
                            .collect();
                        let mut want = vec![0u8; mem_len];
                        read_piece(&chunk, &chunks, &mut want, &strides, &piece, esize).unwrap();
                        let mut got = vec![0u8; mem_len];
                        let list = runs(&chunks, mem_len, &strides, &piece, esize).unwrap();
                        for r in &list {
                            got[r.mem..r.mem + r.len]
                                .copy_from_slice(&chunk[r.chunk..r.chunk + r.len]);
                        }
                        assert_eq!(got, want, "{start:?} {count:?} {stride:?} {strides:?}");
                        let s = run_shape(&chunks, mem_len, &strides, &piece, esize)
                            .unwrap()
                            .unwrap();
                        assert_eq!(s.runs, list.len());
                        let first = list.iter().map(|r| r.chunk).min().unwrap();
                        let end = list.iter().map(|r| r.chunk + r.len).max().unwrap();
                        assert_eq!(s.span, end - first, "span");
                        assert!(list.iter().all(|r| r.len == s.run_len));
                        let rows = rows(&chunks, mem_len, &strides, &piece, esize)
                            .unwrap()
                            .unwrap();
                        assert_eq!((rows.starts.len(), rows.span), (s.rows, s.row_span));
                        let mut got = vec![0u8; mem_len];
                        for &(c, m) in &rows.starts {
                            for k in 0..rows.count {
                                let (c, m) = (
                                    c + k * rows.chunk_step,
                                    m as isize + k as isize * rows.mem_step,
                                );
                                let m = m as usize;
                                got[m..m + esize].copy_from_slice(&chunk[c..c + esize]);
                            }
                            assert!(c + rows.span <= chunk.len());
                        }
                        assert_eq!(
                            got, want,
                            "rows: {start:?} {count:?} {stride:?} {strides:?}"
                        );
                    }
                }
            }
        }
    }

    /// A piece outside the chunk or memory too small is refused, as by `read_piece`.
    #[test]
    fn bad_pieces_are_refused() {
        let piece = ChunkPiece::whole(&[4, 4]);
        assert!(runs(&[4, 4], 15, &[4, 1], &piece, 1).is_err());
        assert!(runs(&[3, 4], 16, &[4, 1], &piece, 1).is_err());
        assert!(
            run_shape(&[4, 4], 16, &[4, 1], &piece, 1)
                .unwrap()
                .is_some()
        );
    }
}
