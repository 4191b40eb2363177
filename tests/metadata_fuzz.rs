//! Fuzz-style robustness of opening and reading: valid datasets (written by stock `ncgen` with
//! the library preloaded, in NCZarr and pure Zarr layouts, and Zarr v3 by zarr-python 3, plain
//! and consolidated, with every codec and sharding) get one metadata object or chunk
//! damaged at random — truncated, bytes flipped, a JSON value replaced by one of another type or an
//! absurd size, hostile paths, the object removed — and the dataset is opened and every variable
//! read through the Rust API, then opened for writing and changed. Seeds include NCZarr and pure
//! Zarr in Zarr v3 written by `ncgen`. Any outcome is fine except a panic: every failure must be
//! an error value (which the C boundary turns into a netCDF code).

mod common;
#[path = "../fuzz/session.rs"]
mod session;

use common::{Host, ncgen, repo_root, scratch, url};
use nczarr_rs::api::{Dataset, Owner};
use nczarr_rs::model::{NcType, Tree, Values};
use nczarr_rs::url::DatasetUrl;
use proptest::prelude::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// A valid dataset: its mode list and its objects.
type Seed = (String, BTreeMap<String, Vec<u8>>);

/// Valid datasets to damage, written once per test binary.
fn seeds() -> &'static Vec<Seed> {
    static SEEDS: OnceLock<Vec<Seed>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let dir = scratch("fuzz-seeds");
        let mut out = Vec::new();
        for case in ["storage", "groups", "strings", "unlimited", "scalars"] {
            for mode in [
                "nczarr,file",
                "zarr,file",
                "nczarr,consolidated,file",
                "nczarr,v3,file",
                "zarr,v3,consolidated,file",
            ] {
                let cdl = repo_root().join(format!("tests/cdl/{case}.cdl"));
                let store = dir
                    .path()
                    .join(format!("{case}.{}.zarr", mode.replace(',', "_")));
                ncgen(Host::Ours, &cdl, &url(&store, mode)).unwrap_or_else(|e| panic!("{e}"));
                out.push((mode.to_string(), common::directory_objects(&store)));
            }
        }
        let script = repo_root().join("tests/py/write_zarr_v3.py");
        for how in ["plain", "consolidated"] {
            let store = dir.path().join(format!("v3-{how}.zarr"));
            let args = [script.to_str().unwrap(), store.to_str().unwrap(), how];
            common::python::run("zarr3", &args).unwrap_or_else(|e| panic!("{e}"));
            out.push(("zarr,file".to_string(), common::directory_objects(&store)));
        }
        out
    })
}

#[derive(Debug, Clone)]
enum Damage {
    Truncate(usize),
    FlipByte(usize, u8),
    ReplaceJsonValue(usize, usize),
    Remove,
}

/// Replacement values for a JSON node: other types, absurd sizes, hostile text.
fn replacement(i: usize) -> Value {
    let all = [
        Value::Null,
        Value::from(-1),
        Value::from(0),
        Value::from(u64::MAX),
        Value::from(i64::MIN),
        Value::from(1e308),
        Value::from(4_294_967_297u64),
        Value::from("../../etc/passwd"),
        Value::from("<f16"),
        Value::from("NaN"),
        Value::Bool(true),
        Value::Array(vec![]),
        Value::Array(vec![Value::from(1u64 << 40), Value::from(1u64 << 40)]),
        serde_json::json!({"id": "no-such-codec"}),
        serde_json::json!([[1, 2], {"a": null}]),
    ];
    all[i % all.len()].clone()
}

/// Replaces the `n`-th node (pre-order) of `v` with `with`; returns whether a node was replaced.
fn replace_nth(v: &mut Value, n: &mut usize, with: &Value) -> bool {
    if *n == 0 {
        *v = with.clone();
        return true;
    }
    *n -= 1;
    match v {
        Value::Array(items) => items.iter_mut().any(|x| replace_nth(x, n, with)),
        Value::Object(map) => map.values_mut().any(|x| replace_nth(x, n, with)),
        _ => false,
    }
}

fn damage(bytes: &[u8], how: &Damage) -> Option<Vec<u8>> {
    match how {
        Damage::Remove => None,
        Damage::Truncate(at) => Some(bytes[..at % (bytes.len() + 1)].to_vec()),
        Damage::FlipByte(at, mask) => {
            let mut b = bytes.to_vec();
            if !b.is_empty() {
                let i = at % b.len();
                b[i] ^= mask | 1;
            }
            Some(b)
        }
        Damage::ReplaceJsonValue(node, with) => {
            let mut v: Value = serde_json::from_slice(bytes).ok()?;
            let mut n = *node % 64;
            replace_nth(&mut v, &mut n, &replacement(*with));
            Some(serde_json::to_vec(&v).unwrap())
        }
    }
}

/// Opens the dataset, inquires it and reads every variable as the fuzz targets do; panics
/// only on a library panic.
fn open_and_read(root: &Path, mode: &str) {
    let text = format!("file://{}#mode={mode}", root.display());
    let Ok(url) = DatasetUrl::parse(&text) else {
        return;
    };
    if let Ok(mut ds) = Dataset::open(&url, false) {
        session::inquire_and_read(&mut ds);
    }
    // Opened for writing, what was read is written back with a change: the writer takes
    // whatever the reader accepted.
    if let Ok(mut ds) = Dataset::open(&url, true) {
        let root = Owner::Group(Tree::ROOT);
        let _ = ds.put_att(root, "fuzzed", NcType::Char, Values::text("yes"));
        let _ = ds.close();
    }
}

fn a_damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        1 => any::<usize>().prop_map(Damage::Truncate),
        1 => (any::<usize>(), any::<u8>()).prop_map(|(a, m)| Damage::FlipByte(a, m)),
        4 => (any::<usize>(), any::<usize>()).prop_map(|(n, w)| Damage::ReplaceJsonValue(n, w)),
        1 => Just(Damage::Remove),
    ]
}

fn write_store(root: &Path, objects: &BTreeMap<String, Vec<u8>>) {
    for (k, v) in objects {
        let p: PathBuf = root.join(k);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, v).unwrap();
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn damaged_datasets_never_panic(seed in any::<usize>(), pick in any::<usize>(), how in a_damage()) {
        let (mode, objs) = &seeds()[seed % seeds().len()];
        let keys: Vec<&String> = objs.keys().collect();
        let victim = keys[pick % keys.len()].clone();
        let mut damaged = objs.clone();
        match damage(&objs[&victim], &how) {
            Some(bytes) => damaged.insert(victim.clone(), bytes),
            None => damaged.remove(&victim),
        };
        let dir = tempfile::TempDir::new().unwrap();
        let root = dir.path().join("d.zarr");
        write_store(&root, &damaged);
        let outcome = std::panic::catch_unwind(|| open_and_read(&root, mode));
        prop_assert!(outcome.is_ok(), "panic with {victim} damaged by {how:?} in mode {mode}");
    }
}

/// Inputs the fuzz targets found crashing the library (`tests/data/fuzz/<target>/`), replayed
/// through the same session: each must now end in errors, not an abort.
#[test]
fn inputs_the_fuzzer_found_are_errors() {
    let root = repo_root().join("tests/data/fuzz");
    let mut replayed = 0;
    for (target, run) in [
        ("open", session::run as fn(&[u8])),
        ("zip", session::run_zip),
        ("write", session::run_write),
    ] {
        let Ok(entries) = fs::read_dir(root.join(target)) else {
            continue;
        };
        for entry in entries.flatten() {
            let input = fs::read(entry.path()).unwrap();
            run(&input);
            replayed += 1;
        }
    }
    assert!(replayed > 0, "no fuzz findings under {}", root.display());
}
