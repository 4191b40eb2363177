//! Micro-benchmarks of opening: reading the metadata of a dataset of 1000 variables (what
//! `ncdump -h` needs) from a memory store, one object per variable and from a consolidated
//! `.zmetadata`, and parsing that `.zmetadata` alone into the reader's JSON tree and into a
//! `serde_json::Value` for comparison.
//!
//! Run with `cargo bench --bench metadata`. The end-to-end comparison against other
//! implementations is `scripts/bench` (its `open1000` cases).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use nczarr_rs::format::{json, read::read_dataset};
use nczarr_rs::model::Tree;
use nczarr_rs::zmap::memory::MemoryStore;
use nczarr_rs::zmap::{Store, StoreKey};
use serde_json::{Value, json};
use std::hint::black_box;

const VARS: usize = 1000;

/// The objects of an NCZarr dataset of `VARS` float variables over one dimension, each with
/// two attributes, as netCDF tools write it.
fn objects() -> Vec<(String, Value)> {
    let names: Vec<String> = (0..VARS).map(|i| format!("v{i}")).collect();
    let mut out = vec![
        (".zgroup".to_string(), json!({"zarr_format": 2})),
        (
            ".zattrs".to_string(),
            json!({
                "_NCProperties": "version=2,nczarr=2.0.0",
                "_nczarr_group": {"dimensions": {"t": 10}, "arrays": names, "groups": []},
                "_nczarr_superblock": {"version": "2.0.0"},
                "_nczarr_attr": {"types": {"_NCProperties": ">S1", "_nczarr_group": "|J0",
                    "_nczarr_superblock": "|J0", "_nczarr_attr": "|J0"}}
            }),
        ),
    ];
    for name in &names {
        out.push((
            format!("{name}/.zarray"),
            json!({"zarr_format": 2, "shape": [10], "dtype": "<f4", "chunks": [10],
                "fill_value": 9.96921e36, "order": "C", "compressor": null, "filters": null}),
        ));
        out.push((
            format!("{name}/.zattrs"),
            json!({
                "units": "m",
                "long_name": format!("variable {name}"),
                "_ARRAY_DIMENSIONS": ["t"],
                "_nczarr_array": {"dimension_references": ["/t"], "storage": "chunked"},
                "_nczarr_attr": {"types": {"units": ">S1", "long_name": ">S1",
                    "_nczarr_array": "|J0", "_nczarr_attr": "|J0"}}
            }),
        ));
    }
    out
}

fn store_of(objects: &[(String, Value)]) -> MemoryStore {
    let store = MemoryStore::new();
    for (key, value) in objects {
        let text = serde_json::to_vec_pretty(value).unwrap();
        store.put(&StoreKey::new(key).unwrap(), &text).unwrap();
    }
    store
}

fn zmetadata(objects: &[(String, Value)]) -> Vec<u8> {
    let metadata: serde_json::Map<String, Value> = objects.iter().cloned().collect();
    serde_json::to_vec_pretty(&json!({"metadata": metadata, "zarr_consolidated_format": 1}))
        .unwrap()
}

fn var_count(store: &MemoryStore) -> usize {
    let opened = read_dataset(store, false, false).unwrap();
    opened.tree.group(Tree::ROOT).vars.len()
}

fn open(c: &mut Criterion) {
    let objects = objects();
    let plain = store_of(&objects);
    let consolidated = store_of(&objects);
    let doc = zmetadata(&objects);
    consolidated
        .put(&StoreKey::new(".zmetadata").unwrap(), &doc)
        .unwrap();
    let mut g = c.benchmark_group("open 1000 variables");
    g.bench_function("read metadata, one object per variable", |b| {
        b.iter(|| black_box(var_count(&plain)))
    });
    g.bench_function("read metadata, consolidated", |b| {
        b.iter(|| black_box(var_count(&consolidated)))
    });
    g.finish();

    let mut g = c.benchmark_group("parse .zmetadata");
    g.throughput(Throughput::Bytes(doc.len() as u64));
    g.bench_function("into the reader's tree", |b| {
        b.iter(|| black_box(json::parse(&doc).unwrap()))
    });
    g.bench_function("into serde_json::Value", |b| {
        b.iter(|| black_box(serde_json::from_slice::<Value>(&doc).unwrap()))
    });
    g.finish();
}

criterion_group!(benches, open);
criterion_main!(benches);
