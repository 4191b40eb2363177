//! The data path's fast paths against a dense copy: whole chunks read straight into the
//! caller's buffer (native and big-endian, converted, missing, wrongly sized), pieces copied
//! through reused scratch buffers across several batches, edge chunks, strides, `imap`
//! layouts whose whole-chunk targets overlap, and dirty cached chunks that must win over
//! what is stored.

use nczarr_rs::api::{CreateOptions, Dataset, Slab};
use nczarr_rs::error::Error;
use nczarr_rs::model::{Endian, GroupId, NcType, Storage, Tree};
use nczarr_rs::url::DatasetUrl;
use std::io::Write;
use std::path::Path;
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

const G: GroupId = Tree::ROOT;

fn url(dir: &Path, name: &str) -> DatasetUrl {
    DatasetUrl::parse(&format!(
        "file://{}#mode=nczarr,file",
        dir.join(name).display()
    ))
    .unwrap()
}

/// Creates `name` with one float variable `v` of `shape` in chunks of `chunks`, holding
/// `value(i) = i` in C order (or nothing when `write` is false), and closes it.
fn make(dir: &Path, name: &str, shape: &[u64], chunks: &[u64], endian: Endian, write: bool) {
    make_with(dir, name, shape, chunks, endian, write, Coding::Raw);
}

/// How [`make_with`] codes the variable's chunks.
#[derive(Clone, Copy)]
enum Coding {
    Raw,
    ShuffleDeflate,
    /// One HDF5 filter: id and parameters.
    Filter(u32, &'static [u32]),
}

/// [`make`], with the chunks coded as `coding` says.
fn make_with(
    dir: &Path,
    name: &str,
    shape: &[u64],
    chunks: &[u64],
    endian: Endian,
    write: bool,
    coding: Coding,
) {
    let mut ds = Dataset::create(&url(dir, name), CreateOptions::default()).unwrap();
    let dims: Vec<i32> = shape
        .iter()
        .enumerate()
        .map(|(i, &n)| ds.def_dim(G, &format!("d{i}"), n, false).unwrap().0 as i32)
        .collect();
    let v = ds.def_var(G, "v", NcType::Float, &dims).unwrap();
    ds.def_var_chunking(G, v, Storage::Chunked, Some(chunks))
        .unwrap();
    ds.def_var_endian(G, v, Some(endian)).unwrap();
    match coding {
        Coding::Raw => {}
        Coding::ShuffleDeflate => ds.def_var_deflate(G, v, true, true, 1).unwrap(),
        Coding::Filter(id, params) => ds.def_var_filter(G, v, id, params).unwrap(),
    }
    ds.enddef().unwrap();
    if write {
        let n: u64 = shape.iter().product();
        let data: Vec<u8> = (0..n).flat_map(|i| (i as f32).to_ne_bytes()).collect();
        let all = slab(&vec![0; shape.len()], shape, &vec![1; shape.len()]);
        ds.put_fixed(G, v, &all, None, NcType::Float, &data)
            .unwrap();
    }
    ds.close().unwrap();
}

/// Cuts the last `by` bytes off a stored chunk.
fn truncate(chunk: &Path, by: usize) {
    let bytes = std::fs::read(chunk).unwrap();
    std::fs::write(chunk, &bytes[..bytes.len() - by]).unwrap();
}

/// The error a read of `slab` gives.
fn read_error(ds: &mut Dataset, slab: &Slab) -> Error {
    let n: u64 = slab.count.iter().product();
    let mut out = vec![0u8; n as usize * 4];
    ds.get_fixed(G, 0, slab, None, NcType::Float, &mut out)
        .unwrap_err()
}

/// Reads `c` into Fortran-order memory (an `imap`) and checks it against the dense copy.
fn check_fortran_order_read(ds: &mut Dataset, shape: &[u64], c: &Slab, what: &str) {
    let n: u64 = c.count.iter().product();
    let imap = [1i64, c.count[0] as i64, (c.count[0] * c.count[1]) as i64];
    let mut out = vec![0u8; n as usize * 4];
    ds.get_fixed(G, 0, c, Some(&imap), NcType::Float, &mut out)
        .unwrap();
    let got = floats(&out);
    let (a, b, k) = (
        c.count[0] as usize,
        c.count[1] as usize,
        c.count[2] as usize,
    );
    for (flat, w) in expected(shape, c).iter().enumerate() {
        let (x, y, z) = (flat / (b * k), flat / k % b, flat % k);
        assert_eq!(got[x + a * (y + b * z)], *w, "{what} imap {c:?}");
    }
}

fn floats(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_ne_bytes(b.try_into().unwrap()))
        .collect()
}

/// The values of a strided request of the dense array `i -> i` of `shape`, in C order.
fn expected(shape: &[u64], slab: &Slab) -> Vec<f32> {
    let mut out = Vec::new();
    let n: u64 = slab.count.iter().product();
    for flat in 0..n {
        let mut rest = flat;
        let mut index = 0u64;
        let mut idx = vec![0u64; shape.len()];
        for d in (0..shape.len()).rev() {
            idx[d] = slab.start[d] + (rest % slab.count[d]) * slab.stride[d];
            rest /= slab.count[d];
        }
        for d in 0..shape.len() {
            index = index * shape[d] + idx[d];
        }
        out.push(index as f32);
    }
    out
}

fn read(ds: &mut Dataset, slab: &Slab) -> Vec<f32> {
    let n: u64 = slab.count.iter().product();
    let mut out = vec![0u8; n as usize * 4];
    ds.get_fixed(G, 0, slab, None, NcType::Float, &mut out)
        .unwrap();
    floats(&out)
}

/// Asserts that `got` and `want` hold the same values bit for bit (fill NaNs included), naming
/// the first difference.
fn assert_same_bits(got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "lengths");
    assert!(
        got.iter()
            .zip(want)
            .all(|(a, b)| a.to_bits() == b.to_bits()),
        "first difference at {:?}",
        got.iter()
            .zip(want)
            .position(|(a, b)| a.to_bits() != b.to_bits())
    );
}

fn slab(start: &[u64], count: &[u64], stride: &[u64]) -> Slab {
    Slab {
        start: start.to_vec(),
        count: count.to_vec(),
        stride: stride.to_vec(),
    }
}

#[test]
fn whole_and_partial_reads_match_the_dense_copy() {
    let dir = tempfile::tempdir().unwrap();
    // Chunks span the two fast dimensions, so whole chunks are contiguous in a whole read;
    // 7 is not a multiple of 2, so the last chunk is an edge chunk.
    let shape = [7u64, 6, 5];
    for (name, endian) in [("le.zarr", Endian::Little), ("be.zarr", Endian::Big)] {
        make(dir.path(), name, &shape, &[2, 6, 5], endian, true);
        let mut ds = Dataset::open(&url(dir.path(), name), false).unwrap();
        let cases = [
            slab(&[0, 0, 0], &[7, 6, 5], &[1, 1, 1]),
            slab(&[2, 0, 0], &[4, 6, 5], &[1, 1, 1]),
            slab(&[1, 0, 0], &[5, 6, 5], &[1, 1, 1]),
            slab(&[0, 1, 0], &[7, 3, 5], &[1, 2, 1]),
            slab(&[0, 0, 0], &[4, 6, 5], &[2, 1, 1]),
            slab(&[6, 5, 4], &[1, 1, 1], &[1, 1, 1]),
            slab(&[0, 0, 3], &[7, 1, 1], &[1, 1, 1]),
        ];
        for c in &cases {
            assert_eq!(read(&mut ds, c), expected(&shape, c), "{name} {c:?}");
        }
        // Converted: the whole chunks land in the conversion buffer.
        let all = &cases[0];
        let mut out = vec![0u8; 7 * 6 * 5 * 8];
        ds.get_fixed(G, 0, all, None, NcType::Double, &mut out)
            .unwrap();
        let got: Vec<f32> = out
            .chunks_exact(8)
            .map(|b| f64::from_ne_bytes(b.try_into().unwrap()) as f32)
            .collect();
        assert_eq!(got, expected(&shape, all), "{name} as double");
    }
}

#[test]
fn many_chunks_span_several_batches() {
    let dir = tempfile::tempdir().unwrap();
    // 1200 chunks of one row each: more than one fetch batch on every path.
    let shape = [1200u64, 3];
    make(
        dir.path(),
        "many.zarr",
        &shape,
        &[1, 3],
        Endian::Little,
        true,
    );
    let mut ds = Dataset::open(&url(dir.path(), "many.zarr"), false).unwrap();
    for c in [
        slab(&[0, 0], &[1200, 3], &[1, 1]),
        slab(&[0, 1], &[1200, 2], &[1, 1]),
        slab(&[5, 0], &[398, 2], &[3, 2]),
    ] {
        assert_eq!(read(&mut ds, &c), expected(&shape, &c), "{c:?}");
    }
}

#[test]
fn missing_chunks_read_as_fill() {
    let dir = tempfile::tempdir().unwrap();
    make(
        dir.path(),
        "empty.zarr",
        &[4, 3],
        &[2, 3],
        Endian::Big,
        false,
    );
    let mut ds = Dataset::open(&url(dir.path(), "empty.zarr"), false).unwrap();
    let got = read(&mut ds, &slab(&[0, 0], &[4, 3], &[1, 1]));
    assert_eq!(got, vec![f32::from_bits(0x7cf0_0000); 12], "NC_FILL_FLOAT");
}

#[test]
fn a_truncated_chunk_is_an_error_on_the_direct_path() {
    let dir = tempfile::tempdir().unwrap();
    make(
        dir.path(),
        "cut.zarr",
        &[4, 3],
        &[2, 3],
        Endian::Little,
        true,
    );
    truncate(&dir.path().join("cut.zarr/v/1.0"), 4);
    let mut ds = Dataset::open(&url(dir.path(), "cut.zarr"), false).unwrap();
    let err = read_error(&mut ds, &slab(&[0, 0], &[4, 3], &[1, 1]));
    assert!(matches!(err, Error::ChunkSize { .. }), "{err:?}");
}

#[test]
fn imap_layouts_with_overlapping_whole_chunk_targets() {
    let dir = tempfile::tempdir().unwrap();
    let shape = [4u64, 3];
    make(
        dir.path(),
        "imap.zarr",
        &shape,
        &[1, 3],
        Endian::Little,
        true,
    );
    let mut ds = Dataset::open(&url(dir.path(), "imap.zarr"), false).unwrap();
    let all = slab(&[0, 0], &[4, 3], &[1, 1]);
    // Transposed: no piece is contiguous in memory.
    let mut out = vec![0u8; 12 * 4];
    ds.get_fixed(G, 0, &all, Some(&[1, 4]), NcType::Float, &mut out)
        .unwrap();
    let got = floats(&out);
    for r in 0..4 {
        for c in 0..3 {
            assert_eq!(got[c * 4 + r], (r * 3 + c) as f32);
        }
    }
    // Row stride 0: every whole-chunk target is the same three elements; the last row wins,
    // as it does when the pieces are copied one after the other.
    let mut out = vec![0u8; 3 * 4];
    ds.get_fixed(G, 0, &all, Some(&[0, 1]), NcType::Float, &mut out)
        .unwrap();
    assert_eq!(floats(&out), [9.0, 10.0, 11.0]);
}

#[test]
fn dirty_cached_chunks_win_over_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let shape = [4u64, 3];
    let mut ds = written(dir.path(), "dirty.zarr", &shape, &[2, 3]);
    let one = slab(&[3, 1], &[1, 1], &[1, 1]);
    ds.put_fixed(G, 0, &one, None, NcType::Float, &(-1.0f32).to_ne_bytes())
        .unwrap();
    let mut want = expected(&shape, &slab(&[0, 0], &[4, 3], &[1, 1]));
    want[10] = -1.0;
    assert_eq!(read(&mut ds, &slab(&[0, 0], &[4, 3], &[1, 1])), want);
    ds.close().unwrap();
}

/// Writes one float `value` at `at` of variable 0.
fn put_one(ds: &mut Dataset, at: &[u64], value: f32) -> Result<bool, Error> {
    let ones = vec![1; at.len()];
    ds.put_fixed(
        G,
        0,
        &slab(at, &ones, &ones),
        None,
        NcType::Float,
        &value.to_ne_bytes(),
    )
}

/// Makes `name` with every value written (little-endian, uncompressed) and opens it for
/// writing.
fn written(dir: &Path, name: &str, shape: &[u64], chunks: &[u64]) -> Dataset {
    make(dir, name, shape, chunks, Endian::Little, true);
    Dataset::open(&url(dir, name), true).unwrap()
}

/// Reopens `name` read-only and checks that all of it (`all`) reads as `want`.
fn assert_stored(dir: &Path, name: &str, all: &Slab, want: &[f32]) {
    let mut ds = Dataset::open(&url(dir, name), false).unwrap();
    assert_eq!(read(&mut ds, all), want, "{name} as stored");
    ds.close().unwrap();
}

/// Makes the place of a chunk file unusable (a directory with something in it takes it), or
/// frees it again.
fn block_chunk(path: &Path, blocked: bool) {
    if blocked {
        let _ = std::fs::remove_file(path);
        std::fs::create_dir_all(path.join("in-the-way")).unwrap();
    } else {
        std::fs::remove_dir_all(path).unwrap();
    }
}

/// A dirty chunk that cannot be stored fails the sync, or the write whose eviction tried to
/// store it, and stays dirty in the cache: once it can be stored, a later sync, eviction or
/// close stores it, and no value written is lost.
#[test]
fn chunks_that_fail_to_store_stay_dirty_until_stored() {
    let dir = tempfile::tempdir().unwrap();
    let shape = [4u64, 3];
    let all = slab(&[0, 0], &[4, 3], &[1, 1]);
    let first_chunk = dir.path().join("retry.zarr/v/0.0");

    // Flushed by a sync.
    let mut ds = written(dir.path(), "retry.zarr", &shape, &[2, 3]);
    put_one(&mut ds, &[0, 1], -1.0).unwrap();
    block_chunk(&first_chunk, true);
    assert!(ds.sync().is_err());
    assert!(
        ds.sync().is_err(),
        "still dirty, so stored again, and failing again"
    );
    block_chunk(&first_chunk, false);
    ds.sync().unwrap();
    ds.close().unwrap();
    let mut want = expected(&shape, &all);
    want[1] = -1.0;
    assert_stored(dir.path(), "retry.zarr", &all, &want);

    // Evicted by a write to another chunk, the cache holding one chunk.
    let mut ds = Dataset::open(&url(dir.path(), "retry.zarr"), true).unwrap();
    ds.set_var_chunk_cache(G, 0, 2 * 3 * 4, 10, 0.75).unwrap();
    put_one(&mut ds, &[1, 2], -1.0).unwrap();
    block_chunk(&first_chunk, true);
    assert!(put_one(&mut ds, &[3, 0], -1.0).is_err());
    block_chunk(&first_chunk, false);
    ds.close().unwrap();
    want[5] = -1.0;
    want[9] = -1.0;
    assert_stored(dir.path(), "retry.zarr", &all, &want);
}

/// Shrinking the cache evicts several dirty chunks; when one of them cannot be stored, they
/// all stay dirty, and the close stores them.
#[test]
fn chunks_evicted_together_after_a_failed_one_stay_dirty() {
    let dir = tempfile::tempdir().unwrap();
    let shape = [6u64, 3];
    let all = slab(&[0, 0], &[6, 3], &[1, 1]);
    let mut ds = written(dir.path(), "three.zarr", &shape, &[2, 3]);
    let mut want = expected(&shape, &all);
    for (row, value) in [(0u64, -1.0f32), (2, -2.0), (4, -3.0)] {
        put_one(&mut ds, &[row, 1], value).unwrap();
        want[row as usize * 3 + 1] = value;
    }
    let middle = dir.path().join("three.zarr/v/1.0");
    block_chunk(&middle, true);
    assert!(ds.set_var_chunk_cache(G, 0, 0, 10, 0.75).is_err());
    block_chunk(&middle, false);
    let stored_first = std::fs::metadata(dir.path().join("three.zarr/v/0.0")).unwrap();
    assert!(stored_first.is_file());
    ds.close().unwrap();
    assert_stored(dir.path(), "three.zarr", &all, &want);
}

/// A write over several partial chunks, with a cache of one chunk: inserting the first
/// piece's chunk evicts a chunk that was cached (dirty) when the write began, whose own piece
/// comes later; that piece starts from the chunk as it was stored at eviction, not from fill
/// values.
#[test]
fn a_chunk_evicted_during_a_write_keeps_its_other_values() {
    let dir = tempfile::tempdir().unwrap();
    let shape = [4u64, 3];
    let all = slab(&[0, 0], &[4, 3], &[1, 1]);
    let mut ds = written(dir.path(), "evict.zarr", &shape, &[2, 3]);
    ds.set_var_chunk_cache(G, 0, 2 * 3 * 4, 10, 0.75).unwrap();
    let mut want = expected(&shape, &all);
    put_one(&mut ds, &[2, 1], -1.0).unwrap();
    want[7] = -1.0;
    let column: Vec<u8> = [-2.0f32, -3.0, -4.0]
        .iter()
        .flat_map(|f| f.to_ne_bytes())
        .collect();
    ds.put_fixed(
        G,
        0,
        &slab(&[1, 0], &[3, 1], &[1, 1]),
        None,
        NcType::Float,
        &column,
    )
    .unwrap();
    (want[3], want[6], want[9]) = (-2.0, -3.0, -4.0);
    assert_eq!(read(&mut ds, &all), want, "before closing");
    ds.close().unwrap();
    assert_stored(dir.path(), "evict.zarr", &all, &want);
}

/// Uncompressed chunks on a local store are read run by run straight into the caller's buffer
/// when a piece is a few runs or long ones: time series through every chunk (one element
/// each, edge chunks included), whole reads of chunks that are strided in the output, both
/// byte orders; missing chunks are fill; a truncated chunk is an error even when the bytes
/// asked for are still there.
#[test]
fn partial_reads_of_uncompressed_chunks_match_the_dense_copy() {
    let dir = tempfile::tempdir().unwrap();
    let shape = [9u64, 8, 130];
    for (name, endian) in [("le.zarr", Endian::Little), ("be.zarr", Endian::Big)] {
        make(dir.path(), name, &shape, &[2, 4, 64], endian, true);
        let mut ds = Dataset::open(&url(dir.path(), name), false).unwrap();
        for c in [
            slab(&[0, 0, 0], &[9, 1, 1], &[1, 1, 1]),
            slab(&[0, 7, 129], &[9, 1, 1], &[1, 1, 1]),
            slab(&[0, 3, 5], &[5, 2, 1], &[2, 3, 1]),
            slab(&[0, 0, 0], &[9, 8, 130], &[1, 1, 1]),
            slab(&[1, 1, 60], &[7, 6, 70], &[1, 1, 1]),
        ] {
            assert_eq!(read(&mut ds, &c), expected(&shape, &c), "{name} {c:?}");
        }
    }
    make(
        dir.path(),
        "empty.zarr",
        &shape,
        &[2, 4, 64],
        Endian::Big,
        false,
    );
    let mut ds = Dataset::open(&url(dir.path(), "empty.zarr"), false).unwrap();
    let got = read(&mut ds, &slab(&[0, 0, 0], &[9, 1, 1], &[1, 1, 1]));
    assert_eq!(got, vec![f32::from_bits(0x7cf0_0000); 9], "NC_FILL_FLOAT");

    truncate(&dir.path().join("le.zarr/v/0.0.0"), 4);
    let mut ds = Dataset::open(&url(dir.path(), "le.zarr"), false).unwrap();
    let err = read_error(&mut ds, &slab(&[0, 0, 0], &[9, 1, 1], &[1, 1, 1]));
    assert!(matches!(err, Error::ChunkSize { .. }), "{err:?}");
}

/// Strided requests on local uncompressed chunks read only the spans of the rows they touch
/// (every 4th row and column here, edge chunks included), in both byte orders, through a
/// Fortran-order `imap` too; missing chunks give fill; a truncated chunk is an error.
#[test]
fn strided_reads_of_uncompressed_chunks_match_the_dense_copy() {
    let dir = tempfile::tempdir().unwrap();
    let shape = [6u64, 16, 300];
    let cases = [
        slab(&[0, 0, 0], &[6, 4, 75], &[1, 4, 4]),
        slab(&[1, 2, 3], &[3, 3, 50], &[2, 5, 6]),
    ];
    for (name, endian) in [("le.zarr", Endian::Little), ("be.zarr", Endian::Big)] {
        make(dir.path(), name, &shape, &[2, 16, 256], endian, true);
        let mut ds = Dataset::open(&url(dir.path(), name), false).unwrap();
        for c in &cases {
            assert_eq!(read(&mut ds, c), expected(&shape, c), "{name} {c:?}");
            check_fortran_order_read(&mut ds, &shape, c, name);
        }
    }
    make(
        dir.path(),
        "empty.zarr",
        &shape,
        &[2, 16, 256],
        Endian::Little,
        false,
    );
    let mut ds = Dataset::open(&url(dir.path(), "empty.zarr"), false).unwrap();
    let got = read(&mut ds, &cases[0]);
    assert_eq!(
        got,
        vec![f32::from_bits(0x7cf0_0000); 6 * 4 * 75],
        "NC_FILL_FLOAT"
    );

    truncate(&dir.path().join("le.zarr/v/2.0.0"), 8);
    let mut ds = Dataset::open(&url(dir.path(), "le.zarr"), false).unwrap();
    let err = read_error(&mut ds, &cases[0]);
    assert!(matches!(err, Error::ChunkSize { .. }), "{err:?}");
}

/// A strided request into a padded `imap` (gaps after every row and every plane): the rows of
/// the pieces land in their own parts of the buffer, in parallel, and the gaps keep what the
/// caller had there.
#[test]
fn strided_rows_land_around_the_gaps_of_a_padded_imap() {
    let dir = tempfile::tempdir().unwrap();
    let shape = [6u64, 16, 300];
    make(
        dir.path(),
        "pad.zarr",
        &shape,
        &[2, 16, 256],
        Endian::Little,
        true,
    );
    let mut ds = Dataset::open(&url(dir.path(), "pad.zarr"), false).unwrap();
    let c = slab(&[0, 1, 2], &[6, 4, 74], &[1, 4, 4]);
    let (row_pitch, plane_pitch) = (74 + 5, 4 * (74 + 5) + 7);
    let imap = [plane_pitch as i64, row_pitch as i64, 1];
    let len = 5 * plane_pitch + 3 * row_pitch + 74;
    let untouched = f32::from_bits(0xdead_beef);
    let mut out: Vec<u8> = (0..len).flat_map(|_| untouched.to_ne_bytes()).collect();
    ds.get_fixed(G, 0, &c, Some(&imap), NcType::Float, &mut out)
        .unwrap();
    let mut want = vec![untouched; len];
    for (flat, w) in expected(&shape, &c).into_iter().enumerate() {
        let (z, y, x) = (flat / (4 * 74), flat / 74 % 4, flat % 74);
        want[z * plane_pitch + y * row_pitch + x] = w;
    }
    let got = floats(&out);
    assert_same_bits(&got, &want);
}

/// A strided request whose row spans need more scratch than one batch holds (40 chunks of
/// 1 MiB, a quarter of each read): the scratch buffer is reused batch after batch, and a
/// missing chunk read after present ones still gives fill, never what the buffer held.
#[test]
fn strided_row_spans_reuse_their_scratch_across_batches() {
    let dir = tempfile::tempdir().unwrap();
    let shape = [40u64, 512, 512];
    make(
        dir.path(),
        "big.zarr",
        &shape,
        &[1, 512, 512],
        Endian::Little,
        true,
    );
    let missing = [0usize, 21, 39];
    for t in missing {
        std::fs::remove_file(dir.path().join(format!("big.zarr/v/{t}.0.0"))).unwrap();
    }
    let mut ds = Dataset::open(&url(dir.path(), "big.zarr"), false).unwrap();
    let c = slab(&[0, 0, 0], &[40, 128, 128], &[1, 4, 4]);
    let mut want = expected(&shape, &c);
    for t in missing {
        want[t * 128 * 128..(t + 1) * 128 * 128].fill(f32::from_bits(0x7cf0_0000));
    }
    let got = read(&mut ds, &c);
    assert_same_bits(&got, &want);
}

/// Coded chunks that the cache will not keep are decoded and copied into the caller's buffer
/// in one parallel step: whole, partial, strided and `imap` requests equal the dense copy in
/// both byte orders, with a cache big enough to keep them and with no cache; missing chunks
/// are fill and a corrupt chunk is an error.
#[test]
fn coded_chunks_copied_in_parallel_match_the_dense_copy() {
    let dir = tempfile::tempdir().unwrap();
    let shape = [7u64, 12, 40];
    let cases = [
        slab(&[0, 0, 0], &[7, 12, 40], &[1, 1, 1]),
        slab(&[1, 2, 3], &[5, 9, 30], &[1, 1, 1]),
        slab(&[0, 1, 0], &[4, 5, 40], &[2, 2, 1]),
        slab(&[0, 0, 0], &[7, 3, 10], &[1, 4, 4]),
    ];
    for (name, endian) in [("le.zarr", Endian::Little), ("be.zarr", Endian::Big)] {
        make_with(
            dir.path(),
            name,
            &shape,
            &[2, 5, 16],
            endian,
            true,
            Coding::ShuffleDeflate,
        );
        for cache in [1usize << 20, 0] {
            let mut ds = Dataset::open(&url(dir.path(), name), false).unwrap();
            ds.set_var_chunk_cache(G, 0, cache, 10, 0.75).unwrap();
            for c in &cases {
                assert_eq!(
                    read(&mut ds, c),
                    expected(&shape, c),
                    "{name} cache {cache} {c:?}"
                );
                check_fortran_order_read(&mut ds, &shape, c, name);
            }
        }
    }
    make_with(
        dir.path(),
        "empty.zarr",
        &shape,
        &[2, 5, 16],
        Endian::Little,
        false,
        Coding::ShuffleDeflate,
    );
    let mut ds = Dataset::open(&url(dir.path(), "empty.zarr"), false).unwrap();
    ds.set_var_chunk_cache(G, 0, 0, 10, 0.75).unwrap();
    for c in &cases {
        let n: u64 = c.count.iter().product();
        let got = read(&mut ds, c);
        assert_eq!(
            got,
            vec![f32::from_bits(0x7cf0_0000); n as usize],
            "NC_FILL_FLOAT {c:?}"
        );
    }

    std::fs::write(dir.path().join("le.zarr/v/1.1.1"), b"not zlib at all").unwrap();
    let mut ds = Dataset::open(&url(dir.path(), "le.zarr"), false).unwrap();
    ds.set_var_chunk_cache(G, 0, 0, 10, 0.75).unwrap();
    let err = read_error(&mut ds, &cases[1]);
    assert!(
        matches!(err, Error::Filter { .. } | Error::ChunkSize { .. }),
        "{err:?}"
    );
}

/// Strided reads through coded chunks the cache does not keep, with too many short runs per
/// chunk to list one by one, are copied row by row out of each decoded chunk, in parallel
/// across chunks: in both byte orders and through an `imap`, with two chunks absent (fill),
/// they equal the dense copy; a damaged chunk is an error.
#[test]
fn strided_reads_of_coded_chunks_match_the_dense_copy() {
    let dir = tempfile::tempdir().unwrap();
    let shape = [4u64, 64, 96];
    let chunks = [2u64, 32, 48];
    let absent = [[0u64, 0, 0], [1, 1, 1]];
    let fill = f32::from_bits(0x7cf0_0000);
    let cases = [
        slab(&[0, 0, 0], &[4, 32, 32], &[1, 2, 3]),
        slab(&[1, 3, 5], &[3, 20, 30], &[1, 3, 3]),
        slab(&[0, 1, 0], &[2, 21, 48], &[3, 3, 2]),
    ];
    let with_fill = |c: &Slab| -> Vec<f32> {
        let values = expected(&shape, c);
        let (b, k) = (c.count[1] as usize, c.count[2] as usize);
        values
            .into_iter()
            .enumerate()
            .map(|(flat, v)| {
                let idx = [flat / (b * k), flat / k % b, flat % k];
                let chunk: Vec<u64> = (0..3)
                    .map(|d| (c.start[d] + idx[d] as u64 * c.stride[d]) / chunks[d])
                    .collect();
                if absent.iter().any(|a| a[..] == chunk[..]) {
                    fill
                } else {
                    v
                }
            })
            .collect()
    };
    for (name, endian) in [
        ("rows-le.zarr", Endian::Little),
        ("rows-be.zarr", Endian::Big),
    ] {
        make_with(
            dir.path(),
            name,
            &shape,
            &chunks,
            endian,
            true,
            Coding::Filter(32015, &[3]),
        );
        let mut ds = Dataset::open(&url(dir.path(), name), false).unwrap();
        ds.set_var_chunk_cache(G, 0, 0, 10, 0.75).unwrap();
        for c in &cases {
            assert_eq!(read(&mut ds, c), expected(&shape, c), "{name} {c:?}");
            check_fortran_order_read(&mut ds, &shape, c, name);
        }
        for a in absent {
            let chunk = format!("{name}/v/{}.{}.{}", a[0], a[1], a[2]);
            std::fs::remove_file(dir.path().join(chunk)).unwrap();
        }
        let mut ds = Dataset::open(&url(dir.path(), name), false).unwrap();
        ds.set_var_chunk_cache(G, 0, 0, 10, 0.75).unwrap();
        for c in &cases {
            assert_eq!(read(&mut ds, c), with_fill(c), "{name} absent {c:?}");
        }
        std::fs::write(dir.path().join(format!("{name}/v/0.1.0")), b"not zstd").unwrap();
        let err = read_error(&mut ds, &cases[0]);
        assert!(matches!(err, Error::Filter { .. }), "{name}: {err:?}");
    }
}

/// True when chunks can be decoded ahead here: the worker pool has a thread to spare (says so
/// when not).
fn decodes_ahead() -> bool {
    let spare = rayon::current_num_threads() >= 2;
    if !spare {
        eprintln!("one worker thread: nothing is decoded ahead");
    }
    spare
}

/// A dataset opened read-only and read chunk after chunk has the chunks that follow decoded
/// ahead (on a machine with two cores or more): once a request waited for them, they are
/// served decoded even after their files change. Values are right in both byte orders, with
/// an absent chunk (fill) among those decoded ahead, and for requests of single rows; a chunk
/// decoded ahead is let go of once a request has read it whole (a reader going chunk after
/// chunk does not come back, and the cache would otherwise hold it on top of the chunks being
/// decoded ahead); a dataset opened for writing decodes nothing ahead (the change shows at
/// once).
#[test]
fn chunks_read_in_sequence_are_decoded_ahead_on_read_only_datasets() {
    let dir = tempfile::tempdir().unwrap();
    let shape = [6u64, 16, 32];
    let chunks = [1u64, 8, 16];
    let chunk_at = |t: u64, y: u64, x: u64| slab(&[t, y * 8, x * 16], &[1, 8, 16], &[1, 1, 1]);
    let fill = f32::from_bits(0x7cf0_0000);
    for (name, endian) in [
        ("ahead-le.zarr", Endian::Little),
        ("ahead-be.zarr", Endian::Big),
    ] {
        make_with(
            dir.path(),
            name,
            &shape,
            &chunks,
            endian,
            true,
            Coding::ShuffleDeflate,
        );
        let path = |c: &str| dir.path().join(format!("{name}/v/{c}"));
        std::fs::remove_file(path("2.0.0")).unwrap();
        // Requests lie within one chunk: those in chunk (2, 0, 0) are fill.
        let expect = |c: &Slab| -> Vec<f32> {
            let chunk: Vec<u64> = c.start.iter().zip(chunks).map(|(s, n)| s / n).collect();
            if chunk == [2, 0, 0] {
                vec![fill; c.count.iter().product::<u64>() as usize]
            } else {
                expected(&shape, c)
            }
        };
        let mut ds = Dataset::open(&url(dir.path(), name), false).unwrap();
        // Chunks 0, 1 and 2 in C order: a sequence; the request for chunk 2 waits for the
        // chunks decoded ahead of it.
        let order = [(0, 0, 0), (0, 0, 1), (0, 1, 0)];
        for (t, y, x) in order {
            let c = chunk_at(t, y, x);
            assert_eq!(read(&mut ds, &c), expect(&c), "{name} {c:?}");
        }
        let good: Vec<_> = (1..6)
            .map(|t| std::fs::read(path(&format!("{t}.1.1"))))
            .collect();
        if !decodes_ahead() {
            continue;
        }
        for t in 1..6 {
            std::fs::write(path(&format!("{t}.1.1")), b"damaged").unwrap();
        }
        for t in 0..6 {
            for (y, x) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
                if t == 0 && (y, x) != (1, 1) {
                    continue;
                }
                // A single row of the chunk, then all of it: both served by what was decoded
                // ahead.
                let row = slab(&[t, y * 8 + 3, x * 16], &[1, 1, 16], &[1, 1, 1]);
                assert_eq!(read(&mut ds, &row), expect(&row), "{name} row {row:?}");
                let c = chunk_at(t, y, x);
                assert_eq!(read(&mut ds, &c), expect(&c), "{name} ahead {c:?}");
                // Read whole, it was let go of: read again, it comes from its damaged file.
                if t > 0 && (y, x) == (1, 1) {
                    let err = read_error(&mut ds, &c);
                    assert!(
                        matches!(err, Error::Filter { .. } | Error::ChunkSize { .. }),
                        "{name} {c:?} read again: {err:?}"
                    );
                }
            }
        }
        let mut writable = Dataset::open(&url(dir.path(), name), true).unwrap();
        for (t, y, x) in order {
            read(&mut writable, &chunk_at(t, y, x));
        }
        let err = read_error(&mut writable, &chunk_at(1, 1, 1));
        assert!(
            matches!(err, Error::Filter { .. } | Error::ChunkSize { .. }),
            "{name}: {err:?}"
        );
        for (t, bytes) in (1..6).zip(good) {
            std::fs::write(path(&format!("{t}.1.1")), bytes.unwrap()).unwrap();
        }
    }
}

/// Chunks too large to decode several per thread ahead (4 MiB) are decoded ahead one per
/// thread when their codec costs much more than a copy (zstd, deflate) and the requests want
/// whole chunks, and not when it costs about as much (blosc-lz4, read straight into the
/// caller's buffer) or the requests are single points. Shown by damaging the file of a chunk
/// after the request before it waited for the work: a chunk decoded ahead is served, one that
/// was not reports the damage.
#[test]
fn large_chunks_of_slow_codecs_are_decoded_ahead_one_per_thread() {
    if !decodes_ahead() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let shape = [4u64, 1024, 1024];
    let chunks = [1u64, 1024, 1024];
    let chunk = |t: u64| slab(&[t, 0, 0], &chunks, &[1, 1, 1]);
    for (name, coding, ahead) in [
        ("zstd.zarr", Coding::Filter(32015, &[3]), true),
        ("deflate.zarr", Coding::ShuffleDeflate, true),
        (
            "blosc-lz4.zarr",
            Coding::Filter(32001, &[0, 0, 0, 0, 5, 1, 1]),
            false,
        ),
    ] {
        make_with(
            dir.path(),
            name,
            &shape,
            &chunks,
            Endian::Little,
            true,
            coding,
        );
        let mut ds = Dataset::open(&url(dir.path(), name), false).unwrap();
        // Chunks 0 and 1: a sequence, so chunks 2 and 3 are decoded in the background; the
        // request for chunk 2 waits for both.
        for t in 0..3 {
            assert_eq!(
                read(&mut ds, &chunk(t)),
                expected(&shape, &chunk(t)),
                "{name} {t}"
            );
        }
        let last = dir.path().join(format!("{name}/v/3.0.0"));
        let good = std::fs::read(&last).unwrap();
        std::fs::write(&last, b"damaged").unwrap();
        if ahead {
            assert_eq!(
                read(&mut ds, &chunk(3)),
                expected(&shape, &chunk(3)),
                "{name}"
            );
        } else {
            let err = read_error(&mut ds, &chunk(3));
            assert!(
                matches!(err, Error::Filter { .. } | Error::ChunkSize { .. }),
                "{name}: {err:?}"
            );
        }
        std::fs::write(&last, good).unwrap();
    }
    // A loop of single points, one chunk after another, decodes a few blocks of each chunk
    // and nothing ahead.
    let mut ds = Dataset::open(&url(dir.path(), "zstd.zarr"), false).unwrap();
    let point = |t: u64| slab(&[t, 0, 0], &[1, 1, 1], &[1, 1, 1]);
    for t in 0..3 {
        assert_eq!(
            read(&mut ds, &point(t)),
            expected(&shape, &point(t)),
            "point {t}"
        );
    }
    let last = dir.path().join("zstd.zarr/v/3.0.0");
    std::fs::write(&last, b"damaged").unwrap();
    let err = read_error(&mut ds, &point(3));
    assert!(matches!(err, Error::Filter { .. }), "{err:?}");
}

/// A loop over large zstd chunks of noise (stored nearly raw, decoding at the speed of a copy)
/// stops decoding ahead once the chunks decoded ahead show it, and every chunk still comes
/// back right, those decoded ahead and those read after; a damaged chunk after that is
/// reported.
#[test]
fn large_chunks_stored_nearly_raw_are_read_right_and_no_longer_decoded_ahead() {
    let dir = tempfile::tempdir().unwrap();
    let shape = [6u64, 1024, 1024];
    let chunks = [1u64, 1024, 1024];
    let name = "noise.zarr";
    make_with(
        dir.path(),
        name,
        &shape,
        &chunks,
        Endian::Little,
        false,
        Coding::Filter(32015, &[3]),
    );
    // Finite values with noise in every byte, which zstd cannot shrink.
    let n: u64 = shape.iter().product();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let noise: Vec<f32> = (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            f32::from_bits((state as u32 & 0x3fff_ffff) | 0x0080_0000)
        })
        .collect();
    let bytes: Vec<u8> = noise.iter().flat_map(|f| f.to_ne_bytes()).collect();
    let mut ds = Dataset::open(&url(dir.path(), name), true).unwrap();
    ds.put_fixed(
        G,
        0,
        &slab(&[0, 0, 0], &shape, &[1, 1, 1]),
        None,
        NcType::Float,
        &bytes,
    )
    .unwrap();
    ds.close().unwrap();
    let stored = std::fs::metadata(dir.path().join(format!("{name}/v/2.0.0"))).unwrap();
    assert!(
        stored.len() > 4 << 20,
        "stored nearly raw: {}",
        stored.len()
    );
    let chunk = |t: u64| slab(&[t, 0, 0], &chunks, &[1, 1, 1]);
    let per_chunk = 1024 * 1024;
    let mut ds = Dataset::open(&url(dir.path(), name), false).unwrap();
    for t in 0..5 {
        let got = read(&mut ds, &chunk(t));
        let want = &noise[t as usize * per_chunk..(t as usize + 1) * per_chunk];
        assert_same_bits(&got, want);
    }
    if !decodes_ahead() {
        return;
    }
    std::fs::write(dir.path().join(format!("{name}/v/5.0.0")), b"damaged").unwrap();
    let err = read_error(&mut ds, &chunk(5));
    assert!(matches!(err, Error::Filter { .. }), "{err:?}");
}

/// A loop over the chunks of a variable whose last dimension is not a multiple of its chunks
/// reads the edge chunks in part (what lies inside the variable); those requests still count
/// as whole chunks, so the large zstd chunks after them are decoded ahead too.
#[test]
fn edge_chunks_keep_large_chunks_decoded_ahead() {
    if !decodes_ahead() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let shape = [4u64, 1024, 1536];
    let chunks = [1u64, 1024, 1024];
    let name = "edges.zarr";
    let zstd = Coding::Filter(32015, &[3]);
    make_with(
        dir.path(),
        name,
        &shape,
        &chunks,
        Endian::Little,
        true,
        zstd,
    );
    // Chunk (t, 0, x): columns x*1024 up to the variable's end.
    let chunk = |t: u64, x: u64| {
        let width = (shape[2] - x * 1024).min(1024);
        slab(&[t, 0, x * 1024], &[1, 1024, width], &[1, 1, 1])
    };
    let mut ds = Dataset::open(&url(dir.path(), name), false).unwrap();
    // (0, 0, 0), then the edge chunk (0, 0, 1): a sequence, so (1, 0, 0) and (1, 0, 1) are
    // decoded ahead and the request for (1, 0, 0) waits for both.
    for (t, x) in [(0, 0), (0, 1), (1, 0)] {
        let c = chunk(t, x);
        assert_eq!(read(&mut ds, &c), expected(&shape, &c), "({t}, 0, {x})");
    }
    std::fs::write(dir.path().join(format!("{name}/v/1.0.1")), b"damaged").unwrap();
    let edge = chunk(1, 1);
    assert_eq!(read(&mut ds, &edge), expected(&shape, &edge));
}

/// Makes the last compressed block of a one-frame Zstandard stream undecodable, leaving the
/// frame's structure (block headers and sizes) intact: its literals section claims ~1 MiB of
/// raw literals, more than a block can hold.
fn break_last_zstd_block(frame: &mut [u8]) {
    let fhd = frame[4];
    let single_segment = fhd & 0x20 != 0;
    let dict_len = [0, 1, 2, 4][usize::from(fhd & 3)];
    let fcs_len = match fhd >> 6 {
        0 => usize::from(single_segment),
        1 => 2,
        2 => 4,
        _ => 8,
    };
    let mut at = 5 + usize::from(!single_segment) + dict_len + fcs_len;
    let mut compressed = Vec::new();
    loop {
        let header = u32::from_le_bytes([frame[at], frame[at + 1], frame[at + 2], 0]);
        let (last, kind, size) = (header & 1 == 1, (header >> 1) & 3, (header >> 3) as usize);
        if kind == 2 {
            compressed.push(at + 3);
        }
        at += 3 + if kind == 1 { 1 } else { size };
        if last {
            break;
        }
    }
    let target = *compressed.last().unwrap();
    assert!(
        compressed.len() > 1,
        "the chunk must have several compressed blocks"
    );
    frame[target..target + 3].copy_from_slice(&[0xFC, 0xFF, 0xFF]);
}

/// Points the last block of a blosc buffer outside the buffer.
fn break_last_blosc_block(buf: &mut [u8]) {
    let nblocks = blosc_blocks(buf);
    assert!(nblocks > 1, "the chunk must have several blosc blocks");
    break_blosc_block(buf, nblocks - 1);
}

/// The number of blocks of a blosc buffer.
fn blosc_blocks(buf: &[u8]) -> usize {
    let nbytes = u32::from_le_bytes(buf[4..8].try_into().unwrap());
    let blocksize = u32::from_le_bytes(buf[8..12].try_into().unwrap());
    nbytes.div_ceil(blocksize) as usize
}

/// Overwrites the compressed bytes of block `block` of a blosc buffer (from its start to the
/// next block's) with bytes no decompressor accepts, leaving the block starts as they are.
fn overwrite_blosc_block(buf: &mut [u8], block: usize) {
    let start_of =
        |b: usize| u32::from_le_bytes(buf[16 + 4 * b..20 + 4 * b].try_into().unwrap()) as usize;
    let start = start_of(block);
    let end = (0..blosc_blocks(buf))
        .map(start_of)
        .filter(|&s| s > start)
        .min()
        .unwrap_or(buf.len());
    buf[start..end].fill(0xFF);
}

/// Points block `block` of a blosc buffer outside the buffer (header: 16 bytes, then one
/// 4-byte start offset per block).
fn break_blosc_block(buf: &mut [u8], block: usize) {
    let at = 16 + 4 * block;
    buf[at..at + 4].copy_from_slice(&0xFFFF_FFF0u32.to_le_bytes());
}

/// A time series through zstd and blosc chunks the cache will not keep decodes each chunk
/// only up to the series' element: with the last block of every chunk made undecodable, the
/// series still reads right (both byte orders) while a whole read reports the damage. With a
/// cache that keeps the chunks they are decoded whole, and the damage is reported.
#[test]
fn a_loop_over_points_reads_every_series_right_through_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let shape = [4u64, 64, 96];
    let chunks = [1u64, 32, 48];
    let codings = [
        ("zstd", Coding::Filter(32015, &[3])),
        ("blosc", Coding::Filter(32001, &[0, 0, 0, 0, 5, 1, 1])),
    ];
    for (codec, coding) in codings {
        let name = format!("{codec}-points.zarr");
        make_with(
            dir.path(),
            &name,
            &shape,
            &chunks,
            Endian::Little,
            true,
            coding,
        );
        let mut ds = Dataset::open(&url(dir.path(), &name), false).unwrap();
        // Points early and late in their chunks, visited twice: first reads decode prefixes,
        // later ones whole chunks that are kept, and then come from the cache.
        for pass in 0..2 {
            for (y, x) in [
                (0, 0),
                (1, 2),
                (31, 47),
                (5, 40),
                (33, 50),
                (63, 95),
                (0, 0),
            ] {
                let series = slab(&[0, y, x], &[shape[0], 1, 1], &[1, 1, 1]);
                let what = format!("{name} pass {pass} ({y}, {x})");
                assert_eq!(read(&mut ds, &series), expected(&shape, &series), "{what}");
            }
        }
        let whole = slab(&[0, 0, 0], &shape, &[1, 1, 1]);
        assert_eq!(
            read(&mut ds, &whole),
            expected(&shape, &whole),
            "{name} whole"
        );
    }
}

#[test]
fn a_time_series_decodes_coded_chunks_only_up_to_its_element() {
    let dir = tempfile::tempdir().unwrap();
    // 512 KiB chunks: several zstd blocks and blosc blocks each.
    let shape = [3u64, 256, 1024];
    let chunks = [1u64, 256, 512];
    let series = slab(&[0, 5, 7], &[3, 1, 1], &[1, 1, 1]);
    let whole = slab(&[0, 0, 0], &shape, &[1, 1, 1]);
    let codings = [
        ("zstd", Coding::Filter(32015, &[3])),
        ("blosc", Coding::Filter(32001, &[0, 0, 0, 65536, 5, 1, 1])),
    ];
    for (codec, coding) in codings {
        for (order, endian) in [("le", Endian::Little), ("be", Endian::Big)] {
            let name = format!("{codec}-{order}.zarr");
            make_with(dir.path(), &name, &shape, &chunks, endian, true, coding);
            for t in 0..shape[0] {
                for x in 0..2 {
                    let path = dir.path().join(format!("{name}/v/{t}.0.{x}"));
                    let mut bytes = std::fs::read(&path).unwrap();
                    match codec {
                        "zstd" => break_last_zstd_block(&mut bytes),
                        _ => break_last_blosc_block(&mut bytes),
                    }
                    std::fs::write(&path, bytes).unwrap();
                }
            }
            let mut ds = Dataset::open(&url(dir.path(), &name), false).unwrap();
            ds.set_var_chunk_cache(G, 0, 0, 10, 0.75).unwrap();
            assert_eq!(read(&mut ds, &series), expected(&shape, &series), "{name}");
            let err = read_error(&mut ds, &whole);
            assert!(matches!(err, Error::Filter { .. }), "{name}: {err:?}");
            // With a cache that could keep them, chunks read sparsely for the first time are
            // still decoded only up to the element; read again, they are decoded whole to be
            // kept, and the damage shows.
            let mut kept = Dataset::open(&url(dir.path(), &name), false).unwrap();
            assert_eq!(
                read(&mut kept, &series),
                expected(&shape, &series),
                "{name}"
            );
            let err = read_error(&mut kept, &series);
            assert!(
                matches!(err, Error::Filter { .. }),
                "{name} cached: {err:?}"
            );
        }
    }
}

/// A time series through blosc chunks decodes only the blocks that hold its elements, not
/// everything before them: with every other block of each chunk made undecodable (the first
/// among them) by pointing its start outside the chunk or by overwriting its bytes (the
/// chunk's other blocks are then read from the file on their own), a series whose elements
/// lie in the blocks left whole reads right in both byte orders, while a series through a
/// broken block and a whole read report the damage.
#[test]
fn a_time_series_decodes_only_the_blosc_blocks_it_needs() {
    let dir = tempfile::tempdir().unwrap();
    // 2 MiB chunks of 4 steps of 512 KiB.
    let shape = [8u64, 256, 512];
    let chunks = [4u64, 256, 512];
    let step = 256 * 512 * 4;
    let coding = Coding::Filter(32001, &[0, 0, 0, 65536, 5, 1, 1]);
    // Element (y, x) = (200, 7) lies 409628 bytes into its step, element (0, 9) 36 bytes.
    let series = slab(&[0, 200, 7], &[8, 1, 1], &[1, 1, 1]);
    let broken_series = slab(&[0, 0, 9], &[8, 1, 1], &[1, 1, 1]);
    let whole = slab(&[0, 0, 0], &shape, &[1, 1, 1]);
    let damages = [("starts", true), ("bytes", false)];
    for ((order, endian), (damage, starts)) in [("le", Endian::Little), ("be", Endian::Big)]
        .into_iter()
        .flat_map(|e| damages.map(|d| (e, d)))
    {
        let name = format!("blosc-blocks-{order}-{damage}.zarr");
        make_with(dir.path(), &name, &shape, &chunks, endian, true, coding);
        for t in 0..2 {
            let path = dir.path().join(format!("{name}/v/{t}.0.0"));
            let mut bytes = std::fs::read(&path).unwrap();
            let blocksize = u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize;
            let needed: Vec<usize> = (0..4).map(|s| (s * step + 409_628) / blocksize).collect();
            let broken: Vec<usize> = (0..blosc_blocks(&bytes))
                .filter(|b| !needed.contains(b))
                .collect();
            assert!(broken.len() >= needed.len() && broken[0] == 0, "{broken:?}");
            for &block in &broken {
                if starts {
                    break_blosc_block(&mut bytes, block);
                } else {
                    overwrite_blosc_block(&mut bytes, block);
                }
            }
            std::fs::write(&path, bytes).unwrap();
        }
        // The directory, and zip archives of it: entries stored (read in place, block by
        // block) and deflated (read whole).
        let mut urls = vec![url(dir.path(), &name)];
        if !starts {
            for method in [CompressionMethod::Stored, CompressionMethod::Deflated] {
                let zip = dir.path().join(format!("{name}-{method:?}.zip"));
                zip_tree(&dir.path().join(&name), &zip, method);
                let spec = format!("file://{}#mode=nczarr,zip", zip.display());
                urls.push(DatasetUrl::parse(&spec).unwrap());
            }
        }
        for at in urls {
            let mut ds = Dataset::open(&at, false).unwrap();
            ds.set_var_chunk_cache(G, 0, 0, 10, 0.75).unwrap();
            assert_eq!(read(&mut ds, &series), expected(&shape, &series), "{at:?}");
            for damaged in [&broken_series, &whole] {
                let err = read_error(&mut ds, damaged);
                assert!(matches!(err, Error::Filter { .. }), "{at:?}: {err:?}");
            }
        }
    }
}

/// Writes the files below `root` into a zip archive at `zip`, named relative to `root`.
fn zip_tree(root: &Path, zip: &Path, method: CompressionMethod) {
    fn add(w: &mut ZipWriter<std::fs::File>, root: &Path, dir: &Path, method: CompressionMethod) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                add(w, root, &path, method);
                continue;
            }
            let name = path.strip_prefix(root).unwrap().to_str().unwrap();
            let options = SimpleFileOptions::default().compression_method(method);
            w.start_file(name, options).unwrap();
            w.write_all(&std::fs::read(&path).unwrap()).unwrap();
        }
    }
    let mut w = ZipWriter::new(std::fs::File::create(zip).unwrap());
    add(&mut w, root, root, method);
    w.finish().unwrap();
}

/// A chunk that must be decoded whole (zlib declares no decoded size) and that a request
/// needs little of is not kept the first time it is read sparsely: the next read fetches it
/// again (and sees what the store holds now); read sparsely a second time, it is kept.
#[test]
fn a_sparse_first_read_of_a_zlib_chunk_is_not_kept() {
    let dir = tempfile::tempdir().unwrap();
    let shape = [4u64, 64, 64];
    let chunks = [1u64, 64, 64];
    let series = slab(&[0, 9, 11], &[4, 1, 1], &[1, 1, 1]);
    let name = "shuffle-zlib.zarr";
    make_with(
        dir.path(),
        name,
        &shape,
        &chunks,
        Endian::Little,
        true,
        Coding::ShuffleDeflate,
    );
    let chunk = |t: u64| dir.path().join(format!("{name}/v/{t}.0.0"));
    let good: Vec<Vec<u8>> = (0..4).map(|t| std::fs::read(chunk(t)).unwrap()).collect();
    let damage = || (0..4).for_each(|t| std::fs::write(chunk(t), b"not zlib").unwrap());
    let repair = || (0..4).for_each(|t| std::fs::write(chunk(t), &good[t as usize]).unwrap());

    let mut ds = Dataset::open(&url(dir.path(), name), false).unwrap();
    assert_eq!(read(&mut ds, &series), expected(&shape, &series));
    damage();
    let err = read_error(&mut ds, &series);
    assert!(matches!(err, Error::Filter { .. }), "not kept: {err:?}");
    repair();
    // A fresh open: the first sparse read records the chunks, the second keeps them.
    let mut ds = Dataset::open(&url(dir.path(), name), false).unwrap();
    assert_eq!(read(&mut ds, &series), expected(&shape, &series));
    assert_eq!(read(&mut ds, &series), expected(&shape, &series));
    damage();
    assert_eq!(
        read(&mut ds, &series),
        expected(&shape, &series),
        "kept from the second sparse read"
    );
}

/// Whole chunks that are one run of the caller's buffer are stored from it as they are:
/// uncompressed chunk files hold exactly the caller's bytes (byte-swapped for a big-endian
/// variable, whose swap never touches the caller's buffer), coded ones read back right; chunks
/// that are two runs of it are assembled first. Each worker reuses its buffers chunk after
/// chunk (more chunks than workers, codecs of one to two stages). A later write of one value
/// goes through the cache and is flushed on close, with the same encoding step.
#[test]
fn whole_chunks_are_written_from_the_callers_buffer() {
    let dir = tempfile::tempdir().unwrap();
    let shape = [8u64, 4, 6];
    let all = slab(&[0, 0, 0], &shape, &[1, 1, 1]);
    let n: u64 = shape.iter().product();
    let data: Vec<u8> = (0..n).flat_map(|i| (i as f32).to_ne_bytes()).collect();
    let codings = [
        ("raw", Coding::Raw),
        ("shuffle-zlib", Coding::ShuffleDeflate),
        ("zstd", Coding::Filter(32015, &[3])),
        ("blosc", Coding::Filter(32001, &[0, 0, 0, 0, 5, 1, 1])),
    ];
    for (chunks, layout) in [([2u64, 4, 6], "one-run"), ([2, 2, 6], "two-runs")] {
        for (endian, order) in [(Endian::Little, "le"), (Endian::Big, "be")] {
            for (codec, coding) in codings {
                let name = format!("{layout}-{order}-{codec}.zarr");
                let what = name.as_str();
                make_with(dir.path(), what, &shape, &chunks, endian, false, coding);
                let mut ds = Dataset::open(&url(dir.path(), what), true).unwrap();
                let given = data.clone();
                ds.put_fixed(G, 0, &all, None, NcType::Float, &given)
                    .unwrap();
                assert_eq!(given, data, "{what}: the caller's buffer changed");
                ds.close().unwrap();
                if codec == "raw" {
                    // The chunk from element (2, 2, 0) on, or from (2, 0, 0) when chunks
                    // span whole planes.
                    let (key, first) = match layout {
                        "one-run" => ("v/1.0.0", 48),
                        _ => ("v/1.1.0", 60),
                    };
                    let file = std::fs::read(dir.path().join(what).join(key)).unwrap();
                    let want: Vec<u8> = (0..chunks.iter().product::<u64>())
                        .map(|k| {
                            let (t, r) = (k / (chunks[1] * 6), k % (chunks[1] * 6));
                            (first + t * 24 + r) as f32
                        })
                        .flat_map(|f| match endian {
                            Endian::Big => f.to_be_bytes(),
                            _ => f.to_le_bytes(),
                        })
                        .collect();
                    assert_eq!(file, want, "{what}: stored bytes");
                }
                let mut ds = Dataset::open(&url(dir.path(), what), true).unwrap();
                assert_eq!(read(&mut ds, &all), expected(&shape, &all), "{what}");
                let one = slab(&[7, 3, 5], &[1, 1, 1], &[1, 1, 1]);
                ds.put_fixed(G, 0, &one, None, NcType::Float, &(-1.0f32).to_ne_bytes())
                    .unwrap();
                ds.close().unwrap();
                let mut ds = Dataset::open(&url(dir.path(), what), false).unwrap();
                let mut want = expected(&shape, &all);
                *want.last_mut().unwrap() = -1.0;
                assert_eq!(read(&mut ds, &all), want, "{what}, after one value");
            }
        }
    }
}
