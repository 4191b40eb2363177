//! Opaque types defined by netCDF programs (`ncgen`, `nccopy`), stored as numpy void arrays
//! (`|V<n>`; Zarr v3: zarr-python's `raw_bytes`) with NCZarr keeping each type, and read back
//! as the types they were defined as; numpy void arrays that zarr-python writes, read as
//! values of opaque types.
//!
//! The oracle is netCDF-4 itself: `tests/cdl_opaque/opaque.cdl` (types of several sizes, one
//! no variable uses, one of the parent group, fills, opaque attributes on variables and groups,
//! a scalar, an unlimited dimension) written by stock `ncgen` into an HDF5 file and dumped by
//! stock `ncdump`. Through the library, into a directory, a zip archive and Zarr v3, `ncgen`
//! must write and `ncdump` must print exactly that (on 4.10.1 too, from the directory);
//! `nccopy` must copy the HDF5 file into a store that dumps the same, and the store back into
//! an HDF5 file that stock `ncdump` prints the same. `compound_opaque.cdl` does the same for
//! opaque fields of a compound type. zarr-python 2 and 3 must read from the store the bytes
//! the HDF5 file holds (netCDF4-python reads no opaque type), and stock netcdf-c 4.10.1 (no
//! library) refuse the store without crashing, as it refuses numpy void arrays.

mod common;

use common::{Host, dump, ncdump, ncgen, repo_root, run, scratch, url};
use std::path::{Path, PathBuf};

fn cdl_named(name: &str) -> PathBuf {
    repo_root().join(format!("tests/cdl_opaque/{name}.cdl"))
}

/// The HDF5 file stock `ncgen` writes of `cdl` and its dump by stock `ncdump` (without the
/// dataset's name).
fn truth_of(dir: &Path, cdl: &Path) -> (PathBuf, String) {
    let nc = dir.join(format!("{}.nc", common::case_name(cdl)));
    ncgen(Host::Stock, cdl, nc.to_str().unwrap()).unwrap_or_else(|e| panic!("{e}"));
    let dumped = ncdump(Host::Stock, &[], nc.to_str().unwrap()).unwrap();
    assert!(dumped.contains("opaque(3) raw_t ;"), "{dumped}");
    (nc, dump::normalise_name(&dumped))
}

fn dumped(host: Host, target: &str) -> String {
    dump::normalise_name(&ncdump(host, &[], target).unwrap_or_else(|e| panic!("{target}: {e}")))
}

#[test]
fn defined_opaque_types_round_trip_through_the_stock_tools() {
    if common::reference_only() {
        return;
    }
    round_trip(&cdl_named("opaque"), true);
    // Opaque fields of a compound type (compound types are refused in Zarr v3).
    round_trip(&cdl_named("compound_opaque"), false);
}

/// `ncgen` of `cdl` into an HDF5 file and, through the library, into stores; `nccopy` of the
/// file into a store and back.
fn round_trip(cdl: &Path, zarr_v3: bool) {
    let dir = scratch(&format!("opaque-tools-{}", common::case_name(cdl)));
    let (nc, truth) = truth_of(dir.path(), cdl);
    common::tool_round_trip::through_stock_tools(dir.path(), cdl, &nc, &truth, zarr_v3);
}

/// netcdf-c 4.10.1 without the library has no numpy void arrays: it refuses the store with an
/// error (not a crash). (4.9.0 crashes opening any store that holds one, zarr-python's too.)
#[test]
fn stock_netcdf_refuses_the_store_cleanly() {
    if common::reference_only() {
        return;
    }
    let dir = scratch("opaque-stock");
    common::tool_round_trip::refused_by_stock_410(dir.path(), &cdl_named("opaque"));
}

/// Prints, as JSON, each variable of `opaque.cdl` as hex text, one value after another: read by
/// zarr-python from the store argv[1] (the dtype must be numpy void of the type's size).
const BYTES: &str = r#"
import sys, json, warnings, numpy as np, zarr
warnings.simplefilter("ignore")
g = zarr.open_group(sys.argv[1], mode="r")
out = {}
for p, size in [("raw", 3), ("blob", 8), ("one", 3), ("sub/pair", 2), ("sub/inherited", 3)]:
    a = np.asarray(g[p][...])
    assert a.dtype == np.dtype("V%d" % size), (p, a.dtype)
    out[p] = [x.tobytes().hex().upper() for x in a.reshape(-1)]
print(json.dumps(out, sort_keys=True))
"#;

#[test]
fn zarr_python_reads_the_bytes_the_file_holds() {
    if common::reference_only() {
        return;
    }
    let dir = scratch("opaque-zarr");
    let cdl = cdl_named("opaque");
    let store = dir.path().join("s.zarr");
    ncgen(Host::Ours, &cdl, &url(&store, "nczarr,file")).unwrap_or_else(|e| panic!("{e}"));
    // The values the HDF5 file holds, as stock ncdump prints them (`_`: the fill).
    let (_, dump) = truth_of(dir.path(), &cdl);
    let values = |var: &str| -> Vec<String> {
        let statement = |text: &str, start: &str| -> Option<String> {
            let from = text.find(start)? + start.len();
            Some(text[from..].split(';').next()?.trim().to_string())
        };
        let fill = statement(&dump, &format!(" {var}:_FillValue = 0X"));
        let data = dump.split("data:").skip(1).collect::<String>();
        statement(&data, &format!("\n {var} = "))
            .or_else(|| statement(&data, &format!("\n   {var} = ")))
            .unwrap_or_else(|| panic!("no data of {var}:\n{dump}"))
            .split(',')
            .map(|v| match v.trim() {
                "_" => fill.clone().unwrap_or_else(|| panic!("{var} has no fill")),
                v => v.strip_prefix("0X").unwrap_or(v).to_string(),
            })
            .collect()
    };
    let want = serde_json::json!({
        "raw": values("raw"),
        "blob": values("blob"),
        "one": values("one"),
        "sub/pair": values("pair"),
        "sub/inherited": values("inherited"),
    });
    assert_eq!(
        want["raw"],
        serde_json::json!(["616263", "646566", "78797A", "000000"])
    );
    assert_eq!(
        want["sub/pair"],
        serde_json::json!(["0001", "FFFF", "ABCD", "0000"])
    );
    for (env, name, mode) in [
        ("zarr2", "s.zarr", "nczarr,file"),
        ("zarr3", "s.zarr", "nczarr,file"),
        ("zarr3", "s3.zarr", "nczarr,v3,file"),
    ] {
        let store = dir.path().join(name);
        if !store.exists() {
            ncgen(Host::Ours, &cdl, &url(&store, mode)).unwrap_or_else(|e| panic!("{e}"));
        }
        let got = common::python::run_script(env, BYTES, &[store.to_str().unwrap()])
            .unwrap_or_else(|e| panic!("{env} {mode}: {e}"));
        let got: serde_json::Value = serde_json::from_str(got.trim()).unwrap();
        assert_eq!(got, want, "{env} {mode}");
    }
}

/// numpy void arrays as zarr-python 2 and 3 write them (Zarr v2 `|V5`, Zarr v3 `raw_bytes`),
/// with a fill value and a chunk never written: through the library, stock `ncdump` prints a
/// variable of an opaque type named after the array, its values and its fill; `nccopy` copies
/// it into a netCDF-4 file that stock `ncdump` prints the same.
const WRITE_VOID: &str = r#"
import sys, warnings, numpy as np, zarr
warnings.simplefilter("ignore")
path, fmt = sys.argv[1], int(sys.argv[2])
v2 = zarr.__version__.startswith("2")
g = zarr.open_group(path, mode="w", **({} if v2 else {"zarr_format": fmt}))
# Uncompressed, so that netCDF-4 files take the codecs nccopy copies.
codecs = {"compressor": None} if v2 else {"compressors": None}
a = g.create_dataset("tags", shape=(6,), chunks=(2,), dtype="V5",
                     fill_value=np.void(b"\xff\xfe\xfd\xfc\xfb"), **codecs)
a[0:2] = np.array([b"hello", b"world"], dtype="V5")
a[4] = np.void(b"\x00\x01\x02\x03\x04")
"#;

#[test]
fn numpy_void_arrays_of_zarr_python_are_opaque_variables() {
    if common::reference_only() {
        return;
    }
    let dir = scratch("opaque-void");
    for (env, fmt) in [("zarr2", "2"), ("zarr3", "2"), ("zarr3", "3")] {
        let store = dir.path().join(format!("{env}-{fmt}.zarr"));
        common::python::run_script(env, WRITE_VOID, &[store.to_str().unwrap(), fmt])
            .unwrap_or_else(|e| panic!("{env} {fmt}: {e}"));
        let target = url(&store, "zarr,file");
        let seen = dumped(Host::Ours, &target);
        for want in [
            "opaque(5) tags_t ;",
            "tags_t tags(",
            "tags_t tags:_FillValue = 0XFFFEFDFCFB ;",
            "tags = 0X68656C6C6F, 0X776F726C64, _, _, 0X0001020304, _ ;",
        ] {
            assert!(seen.contains(want), "{env} {fmt} lacks {want:?}:\n{seen}");
        }
        let copy = dir.path().join(format!("{env}-{fmt}.nc"));
        let copied = run(Host::Ours, "nccopy", &[&target, copy.to_str().unwrap()]);
        assert!(copied.success(), "{}", copied.describe());
        assert_eq!(
            common::diff::diff(&seen, &dumped(Host::Stock, copy.to_str().unwrap())),
            None,
            "{env} {fmt}: nccopy into a netCDF-4 file"
        );
    }
}

/// The raw data type of the Zarr v3 specification (`r24`), its fill value one number per
/// byte, as the specification gives it: a variable of an opaque type of its own.
#[test]
fn zarr_v3_raw_bits_are_opaque_variables() {
    if common::reference_only() {
        return;
    }
    let dir = scratch("opaque-raw-bits");
    let store = dir.path().join("bits.zarr");
    std::fs::create_dir_all(store.join("bits")).unwrap();
    std::fs::write(
        store.join("zarr.json"),
        r#"{"zarr_format": 3, "node_type": "group", "attributes": {}}"#,
    )
    .unwrap();
    std::fs::write(
        store.join("bits/zarr.json"),
        r#"{"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "r24",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": [97, 98, 99],
            "codecs": [{"name": "bytes"}], "dimension_names": ["x"], "attributes": {}}"#,
    )
    .unwrap();
    std::fs::create_dir_all(store.join("bits/c")).unwrap();
    std::fs::write(store.join("bits/c/1"), b"").unwrap();
    let seen = dumped(Host::Ours, &url(&store, "zarr,file"));
    for want in [
        "opaque(3) bits_t ;",
        "bits_t bits:_FillValue = 0X616263 ;",
        "bits = _, _, 0X010203, 0X040506 ;",
    ] {
        assert!(seen.contains(want), "lacks {want:?}:\n{seen}");
    }
}

/// A store whose type table a hostile or broken writer left wrong: an opaque type of another
/// size than its variable's values, one of no bytes, one with keys of another class. Each such
/// type is not listed, or not given to values it does not fit: the variable is served under a
/// type of its own, an attribute as its bytes; the good type beside them is served.
#[test]
fn broken_opaque_declarations_leave_types_of_their_own_not_errors() {
    if common::reference_only() {
        return;
    }
    let dir = scratch("opaque-broken");
    let store = dir.path().join("s.zarr");
    let target = url(&store, "nczarr,file");
    ncgen(Host::Ours, &cdl_named("opaque"), &target).unwrap_or_else(|e| panic!("{e}"));
    let attrs = store.join(".zattrs");
    let mut meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&attrs).unwrap()).unwrap();
    let types = meta["_nczarr_group"]["types"].as_array_mut().unwrap();
    let by_name = |types: &mut Vec<serde_json::Value>, name: &str| -> usize {
        types.iter().position(|t| t["name"] == name).unwrap()
    };
    // raw_t: another size than the values of `raw` and `stamps`.
    let i = by_name(types, "raw_t");
    types[i]["size"] = serde_json::json!(4);
    // blob_t: no bytes.
    let i = by_name(types, "blob_t");
    types[i]["size"] = serde_json::json!(0);
    // spare_t: a key of another class.
    let i = by_name(types, "spare_t");
    types[i]["base"] = serde_json::json!("int");
    std::fs::write(&attrs, serde_json::to_vec(&meta).unwrap()).unwrap();

    let seen = dumped(Host::Ours, &target);
    for want in [
        "opaque(4) raw_t ;",
        "opaque(3) raw_t1 ;",
        "raw_t1 raw(n) ;",
        "raw = 0X616263, 0X646566, _, 0X000000 ;",
        ":stamps = 97UB, 98UB, 99UB, 100UB, 101UB, 102UB ;",
        "opaque(8) blob_t ;",
        "blob = 0X0102030405060708, 0XFFFFFFFFFFFFFFFF ;",
        "opaque(2) pair_t ;",
        "pair = 0X0001, _, 0XABCD, 0X0000 ;",
    ] {
        assert!(seen.contains(want), "lacks {want:?}:\n{seen}");
    }
    assert!(!seen.contains("spare_t"), "{seen}");
}
