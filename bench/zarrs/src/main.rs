//! Benchmark contender: the workloads of `bench/c/ncbench.c` through the zarrs crate.
//!
//! Built only by `scripts/bench`; not part of the library. Prints `elapsed <seconds> checksum
//! <hex>` like ncbench (the checksum is computed the same way, so the harness can check that
//! every contender read the same bytes). Exit status 3 means "zarrs cannot do this" (a codec it
//! does not support, a workload without an equivalent API), with the reason on stderr.
//!
//!   zarrs-bench read_all     DIR ARRAY
//!   zarrs-bench read_chunks  DIR ARRAY
//!   zarrs-bench read_series  DIR ARRAY
//!   zarrs-bench write        DIR ARRAY     (DIR holds the array's metadata; every chunk is written)
//!   zarrs-bench open         DIR           (the whole hierarchy's metadata)

use std::process::exit;
use std::sync::Arc;
use std::time::Instant;
use zarrs::array::{Array, ArrayBytes, ArraySubset};
use zarrs::filesystem::FilesystemStore;
use zarrs::node::Node;

type Store = Arc<FilesystemStore>;

fn fail(what: &str, e: impl std::fmt::Display) -> ! {
    eprintln!("zarrs-bench: {what}: {e}");
    let text = e.to_string().to_lowercase();
    let unsupported = text.contains("unsupported") || text.contains("not supported");
    exit(if unsupported { 3 } else { 1 })
}

/// Same checksum as ncbench's `checksum`.
fn checksum(p: &[u8]) -> u64 {
    let step = if p.len() > (1 << 20) { 61 } else { 1 };
    let h = p
        .iter()
        .step_by(step)
        .zip(1u64..)
        .fold(0u64, |h, (&b, k)| h.wrapping_add(u64::from(b).wrapping_mul(k)));
    h ^ p.len() as u64
}

fn bytes_of(b: ArrayBytes<'static>) -> Vec<u8> {
    match b.into_fixed() {
        Ok(raw) => raw.into_owned(),
        Err(e) => fail("fixed-size data expected", e),
    }
}

fn open(dir: &str, array: &str) -> Array<FilesystemStore> {
    let store: Store = Arc::new(FilesystemStore::new(dir).unwrap_or_else(|e| fail(dir, e)));
    Array::open(store, &format!("/{array}")).unwrap_or_else(|e| fail("open", e))
}

/// Prints the measured time (taken before the checksum is computed) and the checksum.
fn report(elapsed: std::time::Duration, sum: u64) {
    println!("elapsed {:.6} checksum {sum:016x}", elapsed.as_secs_f64());
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: zarrs-bench WORKLOAD DIR [ARRAY]");
        exit(2);
    }
    let (workload, dir) = (args[1].as_str(), args[2].as_str());
    if workload == "open" {
        let t0 = Instant::now();
        let store: Store = Arc::new(FilesystemStore::new(dir).unwrap_or_else(|e| fail(dir, e)));
        let node = Node::open(&store, "/").unwrap_or_else(|e| fail("open", e));
        report(t0.elapsed(), node.children().len() as u64);
        return;
    }
    let Some(name) = args.get(3) else {
        eprintln!("zarrs-bench: {workload} needs an array name");
        exit(2);
    };
    let array = open(dir, name);
    let shape = array.shape().to_vec();
    let whole = ArraySubset::new_with_shape(shape.clone());
    match workload {
        "read_all" => {
            let t0 = Instant::now();
            let data = bytes_of(
                array
                    .retrieve_array_subset::<ArrayBytes<'static>>(&whole)
                    .unwrap_or_else(|e| fail("read", e)),
            );
            report(t0.elapsed(), checksum(&data));
        }
        "read_chunks" => {
            let grid = array.chunk_grid_shape().to_vec();
            let mut spent = std::time::Duration::ZERO;
            let mut h: u64 = 0;
            let mut idx = vec![0u64; grid.len()];
            loop {
                let t0 = Instant::now();
                let data = bytes_of(
                    array
                        .retrieve_chunk::<ArrayBytes<'static>>(&idx)
                        .unwrap_or_else(|e| fail("read", e)),
                );
                spent += t0.elapsed();
                // ncbench reads edge chunks clipped to the array; zarrs returns them whole,
                // so only interior chunks compare checksums exactly.
                h = h.wrapping_mul(31).wrapping_add(checksum(&data));
                let mut d = grid.len();
                loop {
                    if d == 0 {
                        report(spent, h);
                        return;
                    }
                    d -= 1;
                    idx[d] += 1;
                    if idx[d] < grid[d] {
                        break;
                    }
                    idx[d] = 0;
                }
            }
        }
        "read_series" => {
            let ranges: Vec<std::ops::Range<u64>> = shape
                .iter()
                .enumerate()
                .map(|(d, &n)| if d == 0 { 0..n } else { 0..1 })
                .collect();
            let t0 = Instant::now();
            let data = bytes_of(
                array
                    .retrieve_array_subset::<ArrayBytes<'static>>(&ArraySubset::new_with_ranges(
                        &ranges,
                    ))
                    .unwrap_or_else(|e| fail("read", e)),
            );
            report(t0.elapsed(), checksum(&data));
        }
        "write" => {
            let esize = array
                .data_type()
                .fixed_size()
                .unwrap_or_else(|| fail("write", "unsupported variable-size data type"));
            let n = shape.iter().product::<u64>() as usize;
            let row = *shape.last().unwrap_or(&1) as usize;
            let data = fill_values(n, row, esize);
            let t0 = Instant::now();
            array
                .store_array_subset(&whole, ArrayBytes::new_flen(data.as_slice()))
                .unwrap_or_else(|e| fail("write", e));
            report(t0.elapsed(), checksum(&data));
        }
        "read_strided" => fail("read_strided", "not supported: zarrs has no strided read"),
        other => {
            eprintln!("zarrs-bench: unknown workload {other}");
            exit(2);
        }
    }
}

/// Same values as ncbench's `fill_values`.
fn fill_values(n: usize, row: usize, esize: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n * esize);
    let mut r: u32 = 12345;
    for i in 0..n {
        r = r.wrapping_mul(1103515245).wrapping_add(12345);
        let (y, x) = (i / row, i % row);
        let smooth = ((x * 7 + y * 3) % 1000) as f64;
        if esize == 4 {
            let f = (smooth * 0.01 + f64::from((r >> 16) & 0xff) * 1e-4) as f32;
            out.extend_from_slice(&f.to_ne_bytes());
        } else {
            let u = (smooth * 40.0 + f64::from((r >> 16) & 0x1f)) as u16;
            out.extend_from_slice(&u.to_ne_bytes());
        }
    }
    out
}
