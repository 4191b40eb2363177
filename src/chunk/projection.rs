//! Projection of a strided hyperslab (`start`, `count`, `stride`) onto a regular chunk grid.
//!
//! A request is split into [`ChunkPiece`]s, one per chunk that holds at least one requested
//! element. The pieces tile the request exactly and never overlap. Nothing here walks the chunk
//! grid: the chunks touched along each dimension are computed arithmetically, so a request for a
//! few elements of a huge array costs a few steps, and the pieces are the cartesian product of
//! the per-dimension lists, generated on demand in C order of the chunk grid.

use crate::error::{Error, Result};

/// One dimension of a [`Region`]: `count` elements, the first at `start`, `step` apart.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Span {
    /// Index of the first element.
    pub start: u64,
    /// Distance between consecutive elements (at least 1 when `count > 1`).
    pub step: u64,
    /// Number of elements.
    pub count: u64,
}

/// A strided box: one [`Span`] per dimension, outermost first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Region {
    /// The spans, one per dimension.
    pub spans: Vec<Span>,
}

impl Region {
    /// Number of elements in the box (saturating at `u64::MAX`); 1 for a 0-dimensional box.
    pub fn num_elements(&self) -> u64 {
        self.spans
            .iter()
            .fold(1u64, |n, s| n.saturating_mul(s.count))
    }

    /// How many elements of a C-order box of `shape` come up to and including this region's
    /// last element (0 for an empty region; saturating): the prefix of the box that holds the
    /// whole region.
    pub fn c_order_end(&self, shape: &[u64]) -> u64 {
        if self.spans.iter().any(|s| s.count == 0) {
            return 0;
        }
        let last = self.spans.iter().zip(shape).fold(0u64, |at, (s, &extent)| {
            let index = s.start.saturating_add((s.count - 1).saturating_mul(s.step));
            at.saturating_mul(extent).saturating_add(index)
        });
        last.saturating_add(1)
    }
}

/// The part of a request that falls into one chunk.
///
/// `chunk_region` is in element coordinates inside the full-size chunk (edge chunks included),
/// with the request's stride as step; `request_region` is in the request's own index space
/// (`0..count` per dimension) with step 1. Both have the same counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChunkPiece {
    /// Index of the chunk in the chunk grid.
    pub chunk: Vec<u64>,
    /// The elements of the chunk that are read or written.
    pub chunk_region: Region,
    /// Where those elements sit in the request.
    pub request_region: Region,
}

impl ChunkPiece {
    /// The piece covering a whole box of `shape` (chunk 0, all of it, same place in the
    /// request): a whole chunk, or a whole request.
    pub fn whole(shape: &[u64]) -> ChunkPiece {
        let region = Region {
            spans: shape
                .iter()
                .map(|&count| Span {
                    start: 0,
                    step: 1,
                    count,
                })
                .collect(),
        };
        ChunkPiece {
            chunk: vec![0; shape.len()],
            chunk_region: region.clone(),
            request_region: region,
        }
    }
}

/// The chunks touched by one dimension of a request, computed on demand.
#[derive(Clone, Copy, Debug)]
struct DimPlan {
    chunk: u64,
    start: u64,
    count: u64,
    stride: u64,
    first_chunk: u64,
    touched: u64,
}

impl DimPlan {
    fn new(dim: usize, len: u64, chunk: u64, start: u64, count: u64, stride: u64) -> Result<Self> {
        if chunk == 0 {
            return Err(Error::Invalid(format!("chunk length 0 in dimension {dim}")));
        }
        if stride == 0 {
            return Err(Error::Invalid(format!("stride 0 in dimension {dim}")));
        }
        let mut plan = DimPlan {
            chunk,
            start,
            count,
            stride,
            first_chunk: 0,
            touched: 0,
        };
        if count == 0 {
            return Ok(plan);
        }
        let last = u128::from(start) + u128::from(count - 1) * u128::from(stride);
        if last >= u128::from(len) {
            return Err(Error::Invalid(format!(
                "request start {start} count {count} stride {stride} exceeds length {len} \
                 in dimension {dim}"
            )));
        }
        // `last < len <= u64::MAX`, so it fits.
        let last = last as u64;
        plan.first_chunk = start / chunk;
        // With a stride of at least the chunk length every element is in a chunk of its own;
        // with a shorter one no chunk between the first and the last can be skipped.
        plan.touched = if stride >= chunk {
            count
        } else {
            last / chunk - plan.first_chunk + 1
        };
        Ok(plan)
    }

    /// The `j`-th touched chunk: its grid index, the span inside it, the span in the request.
    fn piece(&self, j: u64) -> (u64, Span, Span) {
        let (c, s, t, k) = (
            u128::from(self.chunk),
            u128::from(self.start),
            u128::from(self.stride),
            u128::from(self.count),
        );
        let q = if self.stride >= self.chunk {
            (s + u128::from(j) * t) / c
        } else {
            u128::from(self.first_chunk) + u128::from(j)
        };
        let lo = q * c;
        let hi = lo + c;
        let i0 = if lo <= s { 0 } else { (lo - s).div_ceil(t) };
        let i1 = k.min((hi - s).div_ceil(t));
        let offset = s + i0 * t - lo;
        let n = (i1 - i0) as u64;
        (
            q as u64,
            Span {
                start: offset as u64,
                step: self.stride,
                count: n,
            },
            Span {
                start: i0 as u64,
                step: 1,
                count: n,
            },
        )
    }
}

/// A request projected onto a chunk grid: the chunks it touches and, for each, which elements.
#[derive(Clone, Debug)]
pub struct Projection {
    dims: Vec<DimPlan>,
    len: u64,
}

impl Projection {
    /// Projects the request `start`/`count`/`stride` on an array of `shape` stored in chunks of
    /// `chunk_shape`.
    ///
    /// All slices must have the same length, chunk lengths and strides must be at least 1, and
    /// every requested element must lie inside `shape` (`Error::Invalid` otherwise). A count of 0
    /// in any dimension gives no pieces. Costs O(rank): nothing is materialised.
    pub fn new(
        shape: &[u64],
        chunk_shape: &[u64],
        start: &[u64],
        count: &[u64],
        stride: &[u64],
    ) -> Result<Self> {
        let rank = shape.len();
        if [chunk_shape.len(), start.len(), count.len(), stride.len()]
            .iter()
            .any(|&n| n != rank)
        {
            return Err(Error::Invalid(format!(
                "rank mismatch: shape {}, chunks {}, start {}, count {}, stride {}",
                rank,
                chunk_shape.len(),
                start.len(),
                count.len(),
                stride.len()
            )));
        }
        let dims = (0..rank)
            .map(|d| DimPlan::new(d, shape[d], chunk_shape[d], start[d], count[d], stride[d]))
            .collect::<Result<Vec<_>>>()?;
        let len = if dims.iter().any(|d| d.touched == 0) {
            0
        } else {
            dims.iter()
                .try_fold(1u64, |n, d| n.checked_mul(d.touched))
                .ok_or_else(|| Error::TooLarge("request touches more than 2^64 chunks".into()))?
        };
        Ok(Projection { dims, len })
    }

    /// Number of chunks touched, which is the number of pieces.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True when the request touches no chunk (a count of 0 somewhere).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of chunks touched along each dimension.
    pub fn chunks_per_dim(&self) -> impl Iterator<Item = u64> + '_ {
        self.dims.iter().map(|d| d.touched)
    }

    /// Writes piece number `index` (C order over the touched chunks) into `out`, reusing its
    /// vectors. Returns false, leaving `out` unchanged, when `index >= self.len()`.
    pub fn piece_into(&self, index: u64, out: &mut ChunkPiece) -> bool {
        if index >= self.len {
            return false;
        }
        let rank = self.dims.len();
        out.chunk.resize(rank, 0);
        out.chunk_region.spans.resize(rank, Span::default());
        out.request_region.spans.resize(rank, Span::default());
        let mut rest = index;
        for (d, plan) in self.dims.iter().enumerate().rev() {
            let (q, in_chunk, in_request) = plan.piece(rest % plan.touched);
            rest /= plan.touched;
            out.chunk[d] = q;
            out.chunk_region.spans[d] = in_chunk;
            out.request_region.spans[d] = in_request;
        }
        true
    }

    /// Piece number `index` (C order over the touched chunks), or `None` past the end.
    pub fn piece(&self, index: u64) -> Option<ChunkPiece> {
        let mut out = ChunkPiece::default();
        self.piece_into(index, &mut out).then_some(out)
    }

    /// All pieces, in C order over the touched chunks.
    pub fn pieces(&self) -> Pieces<'_> {
        Pieces {
            projection: self,
            next: 0,
        }
    }
}

/// Iterator over the pieces of a [`Projection`].
#[derive(Clone, Debug)]
pub struct Pieces<'a> {
    projection: &'a Projection,
    next: u64,
}

impl Iterator for Pieces<'_> {
    type Item = ChunkPiece;

    fn next(&mut self) -> Option<ChunkPiece> {
        let piece = self.projection.piece(self.next)?;
        self.next += 1;
        Some(piece)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.projection.len - self.next;
        match usize::try_from(left) {
            Ok(n) => (n, Some(n)),
            Err(_) => (usize::MAX, None),
        }
    }
}

/// Number of chunks a request touches, without materialising them (see [`Projection::new`]
/// for the rules on the arguments).
pub fn chunks_touched(
    shape: &[u64],
    chunk_shape: &[u64],
    start: &[u64],
    count: &[u64],
    stride: &[u64],
) -> Result<u64> {
    Projection::new(shape, chunk_shape, start, count, stride).map(|p| p.len())
}

/// True when `piece` covers its entire chunk with step 1, so the chunk's bytes are exactly the
/// piece's elements in C order.
pub fn is_whole_chunk(piece: &ChunkPiece, chunk_shape: &[u64]) -> bool {
    piece.chunk_region.spans.len() == chunk_shape.len()
        && piece
            .chunk_region
            .spans
            .iter()
            .zip(chunk_shape)
            .all(|(s, &c)| s.start == 0 && s.count == c && (s.step == 1 || c == 1))
}

/// True when `piece` covers every element of its chunk that lies inside a variable of `shape`
/// with step 1: all of an inner chunk, the part inside the variable of an edge chunk.
pub fn covers_chunk_in(piece: &ChunkPiece, chunk_shape: &[u64], shape: &[u64]) -> bool {
    piece.chunk_region.spans.len() == chunk_shape.len()
        && piece.chunk.len() == chunk_shape.len()
        && shape.len() == chunk_shape.len()
        && piece
            .chunk_region
            .spans
            .iter()
            .zip(chunk_shape)
            .zip(piece.chunk.iter().zip(shape))
            .all(|((s, &c), (&at, &extent))| {
                let inside = extent.saturating_sub(at.saturating_mul(c)).min(c);
                s.start == 0 && s.count == inside && (s.step == 1 || inside == 1)
            })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans(r: &Region) -> Vec<(u64, u64, u64)> {
        r.spans.iter().map(|s| (s.start, s.step, s.count)).collect()
    }

    fn region(spans: &[(u64, u64, u64)]) -> Region {
        Region {
            spans: spans
                .iter()
                .map(|&(start, step, count)| Span { start, step, count })
                .collect(),
        }
    }

    #[test]
    fn c_order_end_is_one_past_the_last_element() {
        // Element (2, 5) of a 10 x 10 box is the 26th.
        assert_eq!(region(&[(2, 1, 1), (5, 1, 1)]).c_order_end(&[10, 10]), 26);
        // Rows 1, 4, 7 and columns 0..3: the last is (7, 2).
        assert_eq!(region(&[(1, 3, 3), (0, 1, 3)]).c_order_end(&[10, 10]), 73);
        assert_eq!(
            region(&[(0, 1, 10), (0, 1, 10)]).c_order_end(&[10, 10]),
            100
        );
        assert_eq!(region(&[(3, 1, 0), (0, 1, 10)]).c_order_end(&[10, 10]), 0);
        assert_eq!(region(&[]).c_order_end(&[]), 1);
        assert_eq!(
            region(&[(u64::MAX, 1, 1), (5, 1, 1)]).c_order_end(&[u64::MAX, 10]),
            u64::MAX
        );
    }

    #[test]
    fn scalar_has_one_empty_piece() {
        let p = Projection::new(&[], &[], &[], &[], &[]).unwrap();
        assert_eq!(p.len(), 1);
        let all: Vec<_> = p.pieces().collect();
        assert_eq!(all, vec![ChunkPiece::default()]);
        assert!(is_whole_chunk(&all[0], &[]));
        assert_eq!(all[0].chunk_region.num_elements(), 1);
    }

    #[test]
    fn zero_count_has_no_pieces() {
        let p = Projection::new(&[10, 0], &[3, 4], &[2, 0], &[3, 0], &[1, 1]).unwrap();
        assert!(p.is_empty());
        assert_eq!(p.pieces().count(), 0);
    }

    #[test]
    fn edge_chunk_is_full_size() {
        // Length 10 in chunks of 4: the last chunk holds elements 8..12, of which 8 and 9 exist.
        let p = Projection::new(&[10], &[4], &[3], &[7], &[1]).unwrap();
        let all: Vec<_> = p.pieces().collect();
        assert_eq!(all.len(), 3);
        assert_eq!(all[0].chunk, vec![0]);
        assert_eq!(spans(&all[0].chunk_region), vec![(3, 1, 1)]);
        assert_eq!(spans(&all[1].chunk_region), vec![(0, 1, 4)]);
        assert_eq!(spans(&all[1].request_region), vec![(1, 1, 4)]);
        assert_eq!(all[2].chunk, vec![2]);
        assert_eq!(spans(&all[2].chunk_region), vec![(0, 1, 2)]);
        assert!(is_whole_chunk(&all[1], &[4]));
        assert!(!is_whole_chunk(&all[2], &[4]));
        // The edge piece holds every element of its chunk inside the variable; the first piece
        // holds one of four.
        assert!(covers_chunk_in(&all[1], &[4], &[10]));
        assert!(covers_chunk_in(&all[2], &[4], &[10]));
        assert!(!covers_chunk_in(&all[0], &[4], &[10]));
        // Element 8 alone of the edge chunk, or both with a stride, is not all of it.
        let p = Projection::new(&[10], &[4], &[8], &[1], &[1]).unwrap();
        assert!(!covers_chunk_in(&p.pieces().next().unwrap(), &[4], &[10]));
        let p = Projection::new(&[10], &[4], &[8], &[1], &[2]).unwrap();
        assert!(!covers_chunk_in(&p.pieces().next().unwrap(), &[4], &[10]));
    }

    #[test]
    fn large_stride_skips_chunks() {
        // Elements 1, 8, 15 with chunks of 3: chunks 0, 2 and 5 only.
        let p = Projection::new(&[20], &[3], &[1], &[3], &[7]).unwrap();
        let chunks: Vec<_> = p.pieces().map(|x| x.chunk[0]).collect();
        assert_eq!(chunks, vec![0, 2, 5]);
        let offsets: Vec<_> = p.pieces().map(|x| x.chunk_region.spans[0].start).collect();
        assert_eq!(offsets, vec![1, 2, 0]);
    }

    #[test]
    fn two_dims_in_c_order() {
        let p = Projection::new(&[5, 6], &[2, 4], &[1, 2], &[3, 4], &[1, 1]).unwrap();
        let chunks: Vec<_> = p.pieces().map(|x| x.chunk).collect();
        assert_eq!(chunks, vec![vec![0, 0], vec![0, 1], vec![1, 0], vec![1, 1]]);
        assert_eq!(p.chunks_per_dim().collect::<Vec<_>>(), vec![2, 2]);
        assert_eq!(
            chunks_touched(&[5, 6], &[2, 4], &[1, 2], &[3, 4], &[1, 1]).unwrap(),
            4
        );
    }

    #[test]
    fn stepped_whole_chunk_of_length_one() {
        let p = Projection::new(&[9], &[1], &[0], &[3], &[4]).unwrap();
        assert!(p.pieces().all(|x| is_whole_chunk(&x, &[1])));
    }

    #[test]
    fn huge_array_few_elements() {
        let n = 1u64 << 40;
        let p = Projection::new(&[n], &[1000], &[0], &[5], &[1 << 30]).unwrap();
        assert_eq!(p.len(), 5);
        let all: Vec<_> = p.pieces().collect();
        for (i, x) in all.iter().enumerate() {
            let e = (i as u64) << 30;
            assert_eq!(x.chunk, vec![e / 1000]);
            assert_eq!(spans(&x.chunk_region), vec![(e % 1000, 1 << 30, 1)]);
            assert_eq!(spans(&x.request_region), vec![(i as u64, 1, 1)]);
        }
    }

    #[test]
    fn invalid_inputs_are_errors() {
        let bad = [
            Projection::new(&[10], &[0], &[0], &[1], &[1]),
            Projection::new(&[10], &[2], &[0], &[1], &[0]),
            Projection::new(&[10], &[2], &[9], &[2], &[1]),
            Projection::new(&[10], &[2], &[0], &[4], &[4]),
            Projection::new(&[10, 1], &[2], &[0], &[1], &[1]),
            Projection::new(&[u64::MAX], &[2], &[u64::MAX - 1], &[2], &[u64::MAX]),
        ];
        for b in bad {
            assert!(matches!(b, Err(Error::Invalid(_))), "{b:?}");
        }
    }

    #[test]
    fn piece_into_reuses_and_stops() {
        let p = Projection::new(&[8, 8], &[4, 4], &[0, 0], &[8, 8], &[1, 1]).unwrap();
        let mut out = ChunkPiece::default();
        assert!(p.piece_into(3, &mut out));
        assert_eq!(out.chunk, vec![1, 1]);
        assert!(!p.piece_into(4, &mut out));
        assert_eq!(out.chunk, vec![1, 1]);
        assert!(p.piece(4).is_none());
    }
}
