//! Micro-benchmarks of the chunk engine's hot paths, so regressions show: projecting requests
//! onto the chunk grid, copying pieces between chunks and user memory (contiguous, strided,
//! one element per chunk), and each codec's decode/encode of one chunk.
//!
//! Run with `cargo bench --bench chunk_engine`. The end-to-end comparison against other
//! implementations is `scripts/bench`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use nczarr_rs::chunk::copy::{c_order_strides, read_piece, write_piece};
use nczarr_rs::chunk::projection::{ChunkPiece, Projection};
use nczarr_rs::codec;
use std::hint::black_box;

/// A 1 GiB float variable in 1 MiB chunks, as in `scripts/bench`.
const SHAPE: [u64; 3] = [256, 1024, 1024];
const CHUNKS: [u64; 3] = [1, 512, 512];

fn projection(c: &mut Criterion) {
    let mut g = c.benchmark_group("projection");
    g.bench_function("whole variable, 1024 chunks", |b| {
        b.iter(|| {
            let p = Projection::new(&SHAPE, &CHUNKS, &[0, 0, 0], &SHAPE, &[1, 1, 1]).unwrap();
            black_box(p.pieces().count())
        })
    });
    g.bench_function("strided by 4, 1024 chunks", |b| {
        b.iter(|| {
            let p =
                Projection::new(&SHAPE, &CHUNKS, &[0, 0, 0], &[256, 256, 256], &[1, 4, 4]).unwrap();
            black_box(p.pieces().count())
        })
    });
    g.bench_function("time series, 256 chunks", |b| {
        b.iter(|| {
            let p = Projection::new(&SHAPE, &CHUNKS, &[0, 7, 7], &[256, 1, 1], &[1, 1, 1]).unwrap();
            black_box(p.pieces().count())
        })
    });
    g.finish();
}

fn first_piece(start: &[u64], count: &[u64], stride: &[u64]) -> ChunkPiece {
    Projection::new(&SHAPE, &CHUNKS, start, count, stride)
        .unwrap()
        .piece(0)
        .unwrap()
}

fn copy(c: &mut Criterion) {
    let chunk_bytes = 512 * 512 * 4;
    let chunk = vec![1u8; chunk_bytes];
    let mut g = c.benchmark_group("copy");
    g.throughput(Throughput::Bytes(chunk_bytes as u64));
    // One chunk of a whole-variable read: 512 runs of 512 elements into a 1024-wide buffer.
    let count = [1u64, 1024, 1024];
    let piece = first_piece(&[0, 0, 0], &count, &[1, 1, 1]);
    let strides = c_order_strides(&count).unwrap();
    let mut out = vec![0u8; 1024 * 1024 * 4];
    g.bench_function("read piece, contiguous rows", |b| {
        b.iter(|| read_piece(&chunk, &CHUNKS, &mut out, &strides, &piece, 4).unwrap())
    });
    g.bench_function("write piece, contiguous rows", |b| {
        let mut target = vec![0u8; chunk_bytes];
        b.iter(|| write_piece(&mut target, &CHUNKS, &out, &strides, &piece, 4).unwrap())
    });
    // Every 4th element in both fast dimensions.
    let count = [1u64, 256, 256];
    let piece = first_piece(&[0, 0, 0], &count, &[1, 4, 4]);
    let strides = c_order_strides(&count).unwrap();
    let mut small = vec![0u8; 256 * 256 * 4];
    g.bench_function("read piece, strided by 4", |b| {
        b.iter(|| read_piece(&chunk, &CHUNKS, &mut small, &strides, &piece, 4).unwrap())
    });
    g.finish();
}

/// The first `rows` x 512 float32 values `scripts/bench` writes (`fill_values` in
/// `bench/c/ncbench.c`): a smooth field plus low-order noise, so that the codecs see data as
/// compressible as the end-to-end cases'.
fn harness_values(rows: usize) -> Vec<u8> {
    let row = 512;
    let mut r = 12345u32;
    (0..rows * row)
        .flat_map(|i| {
            r = r.wrapping_mul(1103515245).wrapping_add(12345);
            let (y, x) = (i / row, i % row);
            let smooth = ((x * 7 + y * 3) % 1000) as f64;
            let noise = f64::from((r >> 16) & 0xff);
            ((smooth * 0.01 + noise * 1e-4) as f32).to_le_bytes()
        })
        .collect()
}

/// One 1 MiB chunk of float32 through each codec chain the benchmark harness uses, and a
/// shard (and the empty chain: the fixed cost of the codec layer itself).
fn codecs(c: &mut Criterion) {
    let raw = harness_values(512);
    let mut g = c.benchmark_group("codec");
    g.throughput(Throughput::Bytes(raw.len() as u64));
    let chains: [(&str, &str); 8] = [
        ("none", "[]"),
        (
            "zlib-1+shuffle",
            r#"[{"id":"shuffle","elementsize":4},{"id":"zlib","level":1}]"#,
        ),
        // Zarr v3's deflate.
        (
            "gzip-1+shuffle",
            r#"[{"id":"shuffle","elementsize":4},{"id":"gzip","level":1}]"#,
        ),
        ("zstd-3", r#"[{"id":"zstd","level":3}]"#),
        (
            "blosc-lz4+shuffle",
            r#"[{"id":"blosc","cname":"lz4","clevel":5,"shuffle":1,"blocksize":0}]"#,
        ),
        ("lz4", r#"[{"id":"lz4","acceleration":1}]"#),
        ("bz2-1", r#"[{"id":"bz2","level":1}]"#),
        // A Zarr v3 shard of 16 inner chunks of 128 x 128.
        (
            "shard-zstd-3",
            r#"[{"id":"sharding_indexed","shard_shape":[512,512],"chunk_shape":[128,128],
                "codecs":[{"id":"zstd","level":3}],"index_checksum":true}]"#,
        ),
    ];
    for (name, json) in chains {
        let cfgs: Vec<codec::Config> = serde_json::from_str(json).unwrap();
        let chain =
            codec::Chain::from_configs("v", &cfgs, codec::Context { elem_size: 4 }).unwrap();
        let stored = chain.encode(raw.clone()).unwrap();
        g.bench_function(format!("{name} decode"), |b| {
            b.iter(|| chain.decode(stored.clone(), raw.len()).unwrap())
        });
        g.bench_function(format!("{name} encode"), |b| {
            b.iter(|| chain.encode(raw.clone()).unwrap())
        });
        let mut decoded = vec![0u8; raw.len()];
        for (which, at) in [("first", 0), ("middle", raw.len() / 2)] {
            let element = at..at + 4;
            let wanted = std::slice::from_ref(&element);
            if chain.decode_parts(&stored, &mut decoded, wanted).unwrap() {
                g.bench_function(format!("{name} decode {which} element"), |b| {
                    b.iter(|| chain.decode_parts(&stored, &mut decoded, wanted).unwrap())
                });
            }
        }
    }
    g.finish();
}

criterion_group!(benches, projection, copy, codecs);
criterion_main!(benches);
