//! Zarr v3 written through libnetcdf (`mode=nczarr,v3` and `mode=zarr,v3`) and read by
//! zarr-python 3 and xarray, and Zarr v3 stores zarr-python wrote, edited through libnetcdf.
//!
//! The oracle of what a store must hold is the netCDF-4 file stock `ncgen` makes of the same
//! CDL, as netCDF4-python and xarray read it (`tests/py/netcdf_truth.py`); zarr-python and
//! xarray must read the same from our store (`tests/py/check_zarr_v3.py`). That ncdump reads
//! our Zarr v3 back as the HDF5 ground truth is tests/cli_differential.rs's check.

mod common;

use common::s3::{BUCKET, Kind, Server};
use common::{Host, case_name, cdl_files, ncdump, ncgen, run, run_env, scratch, url};
use nczarr_rs::api::{Dataset, Owner};
use nczarr_rs::model::{NcType, Tree, Values};
use nczarr_rs::url::DatasetUrl;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// The dataset at `store` opened through the library's Rust API in `mode`.
fn open(store: &Path, mode: &str, writable: bool) -> Dataset {
    let u = DatasetUrl::parse(&url(store, mode)).unwrap();
    Dataset::open(&u, writable).unwrap()
}

/// Sets a text attribute `note` on the root group: a change that rewrites the root's metadata.
fn note_on_root(ds: &mut Dataset) {
    let note = Values::text("x");
    ds.put_att(Owner::Group(Tree::ROOT), "note", NcType::Char, note)
        .unwrap();
}

use common::zarr_v3_check::truth;

/// The problems zarr-python and xarray find in `store` (a directory or a zip archive) against
/// the truth in the file `truth`, after checking that they compared at least one array.
fn problems(store: &Path, truth: &Path) -> Vec<String> {
    let (compared, mut problems) = common::zarr_v3_check::problems(store, truth);
    if compared == 0 {
        problems.push("no array compared".to_string());
    }
    problems
}

/// Every CDL of the corpus, written by stock `ncgen` through the library as NCZarr and as pure
/// Zarr in Zarr v3, reads in zarr-python and xarray as the netCDF-4 file of the same CDL does
/// in netCDF4-python and xarray: arrays, dimension names, types, values, attributes.
#[test]
fn zarr_python_and_xarray_read_what_netcdf_writes() {
    if common::reference_only() {
        // netcdf-c writes no Zarr v3.
        return;
    }
    let dir = scratch("v3-write");
    let mut report = common::Report::new("zarr_v3_written");
    for cdl in cdl_files() {
        let name = case_name(&cdl);
        let nc = dir.path().join(format!("{name}.nc"));
        ncgen(Host::Stock, &cdl, nc.to_str().unwrap()).unwrap_or_else(|e| panic!("{e}"));
        let truth_file = dir.path().join(format!("{name}.json"));
        std::fs::write(&truth_file, truth(&nc)).unwrap();
        for mode in ["nczarr,v3,file", "zarr,v3,file"] {
            let store = dir
                .path()
                .join(format!("{name}.{}.zarr", &mode[..mode.find(',').unwrap()]));
            let outcome =
                ncgen(Host::Ours, &cdl, &url(&store, mode)).and_then(|()| {
                    match problems(&store, &truth_file) {
                        p if p.is_empty() => Ok(()),
                        p => Err(p.join("\n")),
                    }
                });
            report.case(&format!("{name} [{mode}]"), outcome);
        }
    }
    report.finish(30);
}

/// `nccopy` of a netCDF-4 file into a Zarr v3 zip archive and into S3 (s3s-fs on loopback)
/// stores the dataset it stores in a directory: `ncdump` reads the same from all three, and
/// zarr-python and xarray read the archive and the bucket's objects as the netCDF-4 file.
#[test]
fn zip_archives_and_s3_hold_what_a_directory_holds() {
    if common::reference_only() {
        return;
    }
    let dir = scratch("v3-stores");
    let server = Server::start(Kind::S3sFs);
    let endpoint = server.endpoint();
    let s3_env = common::s3::tool_env(&endpoint);
    for name in ["groups", "strings", "filters", "unlimited"] {
        let cdl = common::repo_root().join(format!("tests/cdl/{name}.cdl"));
        let nc = dir.path().join(format!("{name}.nc"));
        let nc = nc.to_str().unwrap();
        ncgen(Host::Stock, &cdl, nc).unwrap_or_else(|e| panic!("{e}"));
        let truth_file = dir.path().join(format!("{name}.json"));
        std::fs::write(&truth_file, truth(Path::new(nc))).unwrap();

        let store = dir.path().join(format!("{name}.zarr"));
        let zip = dir.path().join(format!("{name}.zip"));
        let key = format!("v3/{name}");
        let s3 = format!("s3://{BUCKET}/{key}#mode=nczarr,v3,s3");
        for target in [url(&store, "nczarr,v3,file"), url(&zip, "nczarr,v3,zip")] {
            run(Host::Ours, "nccopy", &[nc, &target])
                .output()
                .unwrap_or_else(|e| panic!("{e}"));
        }
        run_env(Host::Ours, "nccopy", &[nc, &s3], &s3_env)
            .output()
            .unwrap_or_else(|e| panic!("{e}"));

        let from_dir = ncdump(Host::Ours, &[], &url(&store, "nczarr,file")).unwrap();
        let from_zip = ncdump(Host::Ours, &[], &url(&zip, "nczarr,zip")).unwrap();
        let from_s3 = run_env(Host::Ours, "ncdump", &[&s3], &s3_env)
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        let norm = common::dump::normalise_name;
        assert_eq!(norm(&from_zip), norm(&from_dir), "{name}: zip");
        assert_eq!(norm(&from_s3), norm(&from_dir), "{name}: S3");
        for stored in [zip.clone(), server.bucket_dir().join(&key)] {
            let found = problems(&stored, &truth_file);
            assert!(found.is_empty(), "{name} {}: {found:#?}", stored.display());
        }
    }
}

/// zarr-python's own store: a sharded float array, a gzip array, a nested group with an array
/// without dimension names, consolidated metadata.
const WRITE_ZARR_PYTHON: &str = r#"
import sys, warnings, numpy as np, zarr
warnings.simplefilter("ignore")
g = zarr.open_group(sys.argv[1], mode="w", zarr_format=3)
g.attrs["title"] = "zarr-python"
a = g.create_array("sharded", shape=(8, 6), chunks=(2, 3), shards=(4, 6), dtype="f4",
                   dimension_names=["y", "x"], fill_value=-1.0)
a[:] = np.arange(48, dtype="f4").reshape(8, 6)
b = g.create_array("gz", shape=(5,), chunks=(2,), dtype="i2", dimension_names=["t"],
                   compressors=[zarr.codecs.GzipCodec(level=3)])
b[:] = np.arange(5)
s = g.create_group("sub")
s.attrs["kind"] = "nested"
c = s.create_array("anon", shape=(3,), chunks=(3,), dtype="u1")
c[:] = [1, 2, 3]
zarr.consolidate_metadata(sys.argv[1])
"#;

/// Edits through netCDF4-python (the library preloaded; the plain path, which netCDF4-python
/// opens rather than creates): attributes of the root and of the sharded array, a block of the
/// sharded array, and a new variable.
const EDIT_NETCDF4: &str = r#"
import sys, numpy as np, netCDF4
with netCDF4.Dataset(sys.argv[1], "r+") as ds:
    ds.setncattr("history", "edited")
    v = ds["sharded"]
    v.setncattr("note", "block set")
    v[1:5, 2:4] = np.full((4, 2), 42, dtype="f4")
    added = ds.createVariable("added", "f8", ("t",), zlib=True, complevel=2)
    added[:] = np.linspace(0, 1, 5)
"#;

/// What zarr-python reads of the store, with and without its consolidated metadata.
const READ_ZARR_PYTHON: &str = r#"
import json, sys, warnings, numpy as np, zarr
warnings.simplefilter("ignore")
out = {}
for consolidated in (True, False):
    g = zarr.open_group(sys.argv[1], mode="r", use_consolidated=consolidated)
    out[str(consolidated)] = {
        "root": dict(g.attrs),
        "members": sorted(k for k, _ in g.members(max_depth=None)),
        "sharded": g["sharded"][...].tolist(),
        "sharded.attrs": dict(g["sharded"].attrs),
        "added": g["added"][...].tolist(),
        "added.codecs": [type(c).__name__ for c in g["added"].metadata.codecs],
        "added.dims": list(g["added"].metadata.dimension_names),
        "gz": g["gz"][...].tolist(),
        "anon": g["sub/anon"][...].tolist(),
        "anon.dims": g["sub/anon"].metadata.dimension_names,
    }
print(json.dumps(out))
"#;

/// A Zarr v3 store zarr-python wrote, edited through libnetcdf, reads in zarr-python (through
/// its consolidated metadata and without) with the edits and nothing else changed: objects
/// not edited keep their bytes, shards keep their codecs, an array without dimension names
/// gets none.
#[test]
fn zarr_python_stores_are_edited_in_place() {
    if common::reference_only() {
        return;
    }
    let dir = scratch("v3-edit");
    let store = dir.path().join("zp.zarr");
    let path = store.to_str().unwrap();
    common::python::run_script("zarr3", WRITE_ZARR_PYTHON, &[path])
        .unwrap_or_else(|e| panic!("{e}"));
    let before = common::directory_objects(&store);
    common::python::run_netcdf4_preloaded(EDIT_NETCDF4, &[path]).unwrap_or_else(|e| panic!("{e}"));
    let after = common::directory_objects(&store);

    let changed: Vec<&str> = before
        .iter()
        .filter(|(k, v)| after.get(*k) != Some(*v))
        .map(|(k, _)| k.as_str())
        .collect();
    // The root (attributes, consolidated metadata), the sharded array's metadata and its two
    // shards the block touches; nothing else.
    assert_eq!(
        changed,
        [
            "sharded/c/0/0",
            "sharded/c/1/0",
            "sharded/zarr.json",
            "zarr.json"
        ],
        "{:?}",
        after.keys().collect::<Vec<_>>()
    );
    let sharded: Value = serde_json::from_slice(&after["sharded/zarr.json"]).unwrap();
    let original: Value = serde_json::from_slice(&before["sharded/zarr.json"]).unwrap();
    assert_eq!(sharded["codecs"], original["codecs"]);

    let out = common::python::run_script("zarr3", READ_ZARR_PYTHON, &[path])
        .unwrap_or_else(|e| panic!("{e}"));
    let read: BTreeMap<String, Value> = serde_json::from_str(&out).unwrap();
    let mut expected_block: Vec<Vec<f64>> = (0..8)
        .map(|r| (0..6).map(|c| f64::from(r * 6 + c)).collect())
        .collect();
    for row in &mut expected_block[1..5] {
        row[2] = 42.0;
        row[3] = 42.0;
    }
    for (how, r) in &read {
        assert_eq!(r["root"]["title"], "zarr-python", "{how}");
        assert_eq!(r["root"]["history"], "edited", "{how}");
        assert_eq!(
            r["members"],
            serde_json::json!(["added", "gz", "sharded", "sub", "sub/anon"]),
            "{how}"
        );
        assert_eq!(r["sharded"], serde_json::json!(expected_block), "{how}");
        assert_eq!(
            r["sharded.attrs"],
            serde_json::json!({"note": "block set"}),
            "{how}"
        );
        assert_eq!(
            r["added"],
            serde_json::json!([0.0, 0.25, 0.5, 0.75, 1.0]),
            "{how}"
        );
        assert_eq!(r["added.dims"], serde_json::json!(["t"]), "{how}");
        assert_eq!(
            r["added.codecs"],
            serde_json::json!(["BytesCodec", "Shuffle", "GzipCodec"]),
            "{how}"
        );
        assert_eq!(r["gz"], serde_json::json!([0, 1, 2, 3, 4]), "{how}");
        assert_eq!(r["anon"], serde_json::json!([1, 2, 3]), "{how}");
        assert_eq!(r["anon.dims"], Value::Null, "{how}");
    }
}

/// Stores zarr-python changed after consolidating them: `lon` grown and given an attribute
/// behind its root's consolidated metadata, and a group `sub` consolidated on its own.
const WRITE_STALE: &str = r#"
import sys, warnings, numpy as np, zarr
warnings.simplefilter("ignore")
path = sys.argv[1]
r = zarr.open_group(path, mode="w", zarr_format=3)
a = r.create_array("lon", shape=(4,), chunks=(2,), dtype="f8", dimension_names=["x"])
a[:] = np.arange(4.0)
s = r.create_group("sub")
s.create_array("b", shape=(4,), chunks=(4,), dtype="f8", dimension_names=["y"])[:] = 1
zarr.consolidate_metadata(path)
zarr.consolidate_metadata(path, path="sub")
a = zarr.open_array(path + "/lon", mode="a")
a.resize((8,))
a[4:] = [4, 5, 6, 7]
a.attrs["added"] = "later"
"#;

/// Edits through netCDF4-python: an attribute of `lon`, a variable added to `sub` and an
/// attribute of `sub/b`.
const EDIT_STALE: &str = r#"
import sys, netCDF4
with netCDF4.Dataset(sys.argv[1], "r+") as ds:
    ds["lon"].units = "deg"
    sub = ds.groups["sub"]
    sub.createVariable("new", "i4", ("y",))[:] = [1, 2, 3, 4]
    sub["b"].units = "m"
"#;

/// What zarr-python reads, through consolidated metadata (the root's and `sub`'s) and not.
const READ_STALE: &str = r#"
import json, sys, warnings, zarr
warnings.simplefilter("ignore")
out = {}
for consolidated in (True, False):
    g = zarr.open_group(sys.argv[1], mode="r", use_consolidated=consolidated)
    sub = zarr.open_group(sys.argv[1], path="sub", mode="r", use_consolidated=consolidated)
    out[str(consolidated)] = {
        "lon": g["lon"][...].tolist(),
        "lon.attrs": dict(g["lon"].attrs),
        "sub": sorted(sub.array_keys()),
        "b.attrs": dict(sub["b"].attrs),
    }
print(json.dumps(out))
"#;

/// An edit writes back each object as the store has it, not as a stale consolidated copy
/// says (zarr-python keeps no consolidated metadata up to date by itself): the grown array
/// keeps its length and attributes; and every group's consolidated metadata is made again,
/// not only the root's.
#[test]
fn edits_start_from_the_objects_and_refresh_every_consolidation() {
    if common::reference_only() {
        return;
    }
    let dir = scratch("v3-stale");
    let store = dir.path().join("st.zarr");
    let path = store.to_str().unwrap();
    common::python::run_script("zarr3", WRITE_STALE, &[path]).unwrap_or_else(|e| panic!("{e}"));
    common::python::run_netcdf4_preloaded(EDIT_STALE, &[path]).unwrap_or_else(|e| panic!("{e}"));
    let out =
        common::python::run_script("zarr3", READ_STALE, &[path]).unwrap_or_else(|e| panic!("{e}"));
    let read: BTreeMap<String, Value> = serde_json::from_str(&out).unwrap();
    for (how, r) in &read {
        let lon: Vec<f64> = (0..8).map(f64::from).collect();
        assert_eq!(r["lon"], serde_json::json!(lon), "{how}");
        assert_eq!(
            r["lon.attrs"],
            serde_json::json!({"added": "later", "units": "deg"}),
            "{how}"
        );
        assert_eq!(r["sub"], serde_json::json!(["b", "new"]), "{how}");
        assert_eq!(r["b.attrs"], serde_json::json!({"units": "m"}), "{how}");
    }

    // Consolidated metadata asked for (`consolidated`) on a store that has none is written
    // at the first change.
    let plain = dir.path().join("plain.zarr");
    let plain_path = plain.to_str().unwrap();
    common::python::run_script("zarr3", WRITE_STALE, &[plain_path])
        .unwrap_or_else(|e| panic!("{e}"));
    let root = plain.join("zarr.json");
    let mut obj: Value = serde_json::from_slice(&std::fs::read(&root).unwrap()).unwrap();
    obj.as_object_mut().unwrap().remove("consolidated_metadata");
    std::fs::write(&root, serde_json::to_vec(&obj).unwrap()).unwrap();
    let mut ds = open(&plain, "zarr,consolidated,file", true);
    note_on_root(&mut ds);
    ds.close().unwrap();
    let obj: Value = serde_json::from_slice(&std::fs::read(&root).unwrap()).unwrap();
    let block = &obj["consolidated_metadata"]["metadata"];
    assert_eq!(block["lon"]["shape"], serde_json::json!([8]), "{obj}");
    assert_eq!(block["sub/b"]["node_type"], "array", "{obj}");
}

/// What Zarr v3 cannot hold as netCDF has it: a group or variable named `zarr.json` is refused
/// (its path would be a metadata object's); a char `_FillValue` of NUL is one byte, not none;
/// a string `_FillValue` deleted from pure Zarr v3 stays deleted.
#[test]
fn names_and_fill_values_zarr_v3_must_not_lose() {
    if common::reference_only() {
        return;
    }
    let dir = scratch("v3-edges");
    let named = dir.path().join("named.cdl");
    std::fs::write(
        &named,
        "netcdf named { dimensions: x = 2 ; variables: int zarr.json(x) ; }",
    )
    .unwrap();
    let refused = run(
        Host::Ours,
        "ncgen",
        &[
            "-4",
            "-o",
            &url(&dir.path().join("n.zarr"), "nczarr,v3,file"),
            named.to_str().unwrap(),
        ],
    );
    assert!(
        refused.refused_saying("Name contains illegal characters"),
        "{}",
        refused.describe()
    );
    // In Zarr v2 it is a name like any other.
    ncgen(
        Host::Ours,
        &named,
        &url(&dir.path().join("n2.zarr"), "nczarr,file"),
    )
    .unwrap();

    let cdl = dir.path().join("fills.cdl");
    std::fs::write(
        &cdl,
        "netcdf fills { dimensions: x = 3 ; variables: char c(x) ; c:_FillValue = \"\\000\" ; \
         c:units = \"u\" ; string s(x) ; s:_FillValue = \"zz\" ; data: c = \"a\" ; s = \"p\" ; }",
    )
    .unwrap();
    let nc = dir.path().join("fills.nc");
    ncgen(Host::Stock, &cdl, nc.to_str().unwrap()).unwrap();
    let store = dir.path().join("fills.zarr");
    ncgen(Host::Ours, &cdl, &url(&store, "nczarr,v3,file")).unwrap();
    let truth = ncdump(Host::Stock, &[], nc.to_str().unwrap()).unwrap();
    let ours = ncdump(Host::Ours, &[], &url(&store, "nczarr,file")).unwrap();
    let norm = common::dump::normalise_name;
    assert_eq!(norm(&ours), norm(&truth));
    let ds = open(&store, "nczarr,file", false);
    let c = &ds.tree.group(Tree::ROOT).vars[0];
    assert_eq!(c.att("_FillValue").map(|a| a.values.len()), Some(1));

    let pure = dir.path().join("pure.zarr");
    ncgen(Host::Ours, &cdl, &url(&pure, "zarr,v3,file")).unwrap();
    let u = url(&pure, "zarr,file");
    let mut ds = open(&pure, "zarr,file", true);
    ds.redef().unwrap();
    ds.del_att(Owner::Var(Tree::ROOT, 1), "_FillValue").unwrap();
    ds.close().unwrap();
    let dump = ncdump(Host::Ours, &["-h"], &u).unwrap();
    assert!(dump.contains("string s(x) ;"), "{dump}");
    assert!(!dump.contains("s:_FillValue"), "{dump}");
}

/// A Zarr v2 store zarr-python consolidated whose `y` lost its `.zarray` afterwards, and a
/// Zarr v3 array of numpy unicode with a fill value of its own.
const WRITE_MISMATCHED: &str = r#"
import os, sys, warnings, numpy as np, zarr
warnings.simplefilter("ignore")
v2, v3 = sys.argv[1], sys.argv[2]
g = zarr.open_group(v2, mode="w", zarr_format=2)
for name in ("x", "y"):
    a = g.create_array(name, shape=(4,), chunks=(2,), dtype="i4")
    a[:] = np.arange(4)
    a.attrs["_ARRAY_DIMENSIONS"] = ["n"]
zarr.consolidate_metadata(v2)
os.remove(os.path.join(v2, "y", ".zarray"))
g = zarr.open_group(v3, mode="w", zarr_format=3)
g.create_array("u", shape=(2,), dtype="<U5", fill_value="zz", dimension_names=["n"])
zarr.consolidate_metadata(v3)
"#;

/// Opened for writing, a store whose objects do not hold what its consolidated metadata
/// lists (in Zarr v2 as in v3) is read through that metadata and refuses changes, rather than
/// writing back a consolidated metadata without them; and a numpy unicode array's own fill
/// value survives a change elsewhere (no `_FillValue` stands for it).
#[test]
fn what_only_consolidated_metadata_holds_is_not_written_away() {
    if common::reference_only() {
        return;
    }
    let dir = scratch("v3-mismatch");
    let (v2, v3) = (dir.path().join("v2.zarr"), dir.path().join("v3.zarr"));
    let args = [v2.to_str().unwrap(), v3.to_str().unwrap()];
    common::python::run_script("zarr3", WRITE_MISMATCHED, &args).unwrap_or_else(|e| panic!("{e}"));
    let zmetadata = std::fs::read(v2.join(".zmetadata")).unwrap();
    let ds = open(&v2, "zarr,file", true);
    let refused = ds.check_writable().unwrap_err().to_string();
    assert!(refused.contains("it lists y"), "{refused}");
    assert_eq!(ds.tree.group(Tree::ROOT).vars.len(), 2);
    ds.close().unwrap();
    assert_eq!(std::fs::read(v2.join(".zmetadata")).unwrap(), zmetadata);

    let mut ds = open(&v3, "zarr,file", true);
    note_on_root(&mut ds);
    ds.close().unwrap();
    let obj: Value = serde_json::from_slice(&std::fs::read(v3.join("zarr.json")).unwrap()).unwrap();
    assert_eq!(
        obj["consolidated_metadata"]["metadata"]["u"]["fill_value"], "zz",
        "{obj}"
    );
    let dump = ncdump(Host::Ours, &[], &url(&v3, "zarr,file")).unwrap();
    assert!(dump.contains("u = \"zz\", \"zz\""), "{dump}");
}
