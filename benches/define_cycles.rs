//! Micro-benchmark of writing a dataset one variable at a time, as netCDF4-python and xarray's
//! netcdf4 engine do: every variable defined, then written, so define mode is left once per
//! variable and the metadata stored each time. The benchmark measures one such cycle on a
//! dataset that already holds 1000 variables (an attribute of one of them changed, define mode
//! left, values written), in memory (`NC_DISKLESS`), so only the library's own work is timed.
//!
//! Run with `cargo bench --bench define_cycles`. The end-to-end comparison against netcdf-c is
//! `scripts/bench` (its `write1000` cases).

use criterion::{Criterion, criterion_group, criterion_main};
use nczarr_rs::api::dataset::{CreateOptions, Dataset};
use nczarr_rs::api::{Owner, Slab};
use nczarr_rs::model::{NcType, Tree, Values};
use nczarr_rs::url::DatasetUrl;
use std::hint::black_box;

const VARS: usize = 1000;
const LEN: u64 = 10;

fn values(i: usize) -> Vec<u8> {
    (0..LEN)
        .flat_map(|k| (k as f32 + i as f32).to_ne_bytes())
        .collect()
}

fn slab() -> Slab {
    Slab {
        start: vec![0],
        count: vec![LEN],
        stride: vec![1],
    }
}

/// A diskless dataset of `VARS` float variables, each defined, given an attribute and
/// written in its own define cycle.
fn written_one_at_a_time(mode: &str) -> Dataset {
    let url = DatasetUrl::parse(&format!(
        "file:///bench-define-cycles.zarr#mode={mode},file"
    ))
    .unwrap();
    let opts = CreateOptions {
        clobber: true,
        classic_model: false,
        diskless: true,
    };
    let mut ds = Dataset::create(&url, opts).unwrap();
    let g = Tree::ROOT;
    let x = ds.def_dim(g, "x", LEN, false).unwrap();
    for i in 0..VARS {
        let v = ds
            .def_var(g, &format!("v{i}"), NcType::Float, &[x.0 as i32])
            .unwrap();
        let units = Values::fixed(NcType::Char, b"m".to_vec());
        ds.put_att(Owner::Var(g, v), "units", NcType::Char, units)
            .unwrap();
        ds.put_fixed(g, v, &slab(), None, NcType::Float, &values(i))
            .unwrap();
    }
    ds
}

fn cycles(c: &mut Criterion) {
    let mut group = c.benchmark_group("define cycle with 1000 variables");
    for mode in ["nczarr", "zarr"] {
        let mut ds = written_one_at_a_time(mode);
        let g = Tree::ROOT;
        let mut i = 0usize;
        group.bench_function(
            format!("{mode}: one attribute changed, then values written"),
            |b| {
                b.iter(|| {
                    i += 1;
                    let v = i % VARS;
                    let stamp = Values::fixed(NcType::Int, (i as i32).to_ne_bytes().to_vec());
                    ds.put_att(Owner::Var(g, v), "stamp", NcType::Int, stamp)
                        .unwrap();
                    ds.put_fixed(g, v, &slab(), None, NcType::Float, &values(i))
                        .unwrap();
                    black_box(&ds);
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, cycles);
criterion_main!(benches);
