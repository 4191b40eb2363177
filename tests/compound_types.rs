//! Compound types defined by netCDF programs (`ncgen`, `nccopy`), stored as numpy structured
//! records and read back as the types they were defined as.
//!
//! The oracle is netCDF-4 itself: the CDL files of `tests/cdl_compound` (nested types, a type
//! of the parent group, arrays of compound values in a field, char arrays, a scalar, an
//! unlimited dimension, a type no variable uses, a compound `_FillValue`) written by stock `ncgen` into an HDF5 file
//! and dumped by stock `ncdump`. Through the library, into a directory and into a zip archive, `ncgen` must write
//! and `ncdump` must print exactly that (on 4.10.1 too, from the directory); `nccopy` must copy the HDF5 file
//! into a store that dumps the same, and the store back into an HDF5 file that stock `ncdump`
//! prints the same. zarr-python must read from the store the values netCDF4-python reads from
//! the file, field by field, also from a pure Zarr copy (which keeps no type names); netcdf-c
//! 4.10.1's own NCZarr, which has no compound types, must refuse the store without crashing.
//! netCDF4-python through the library must read back, byte for byte, the records it wrote under
//! numpy's aligned layout.

mod common;

use common::{Host, dump, ncdump, ncgen, repo_root, run, scratch, url};
use std::path::{Path, PathBuf};

fn cdl(name: &str) -> PathBuf {
    repo_root().join(format!("tests/cdl_compound/{name}.cdl"))
}

/// The HDF5 file stock `ncgen` writes of `cdl` and its dump (without the dataset's name).
fn truth(dir: &Path, cdl: &Path) -> (PathBuf, String) {
    let nc = dir.join(format!("{}.nc", common::case_name(cdl)));
    ncgen(Host::Stock, cdl, nc.to_str().unwrap()).unwrap_or_else(|e| panic!("{e}"));
    let dumped = ncdump(Host::Stock, &[], nc.to_str().unwrap()).unwrap();
    assert!(dumped.contains("compound pos_t"), "{dumped}");
    (nc, dump::normalise_name(&dumped))
}

fn dumped(host: Host, target: &str) -> String {
    dump::normalise_name(&ncdump(host, &[], target).unwrap_or_else(|e| panic!("{target}: {e}")))
}

/// Reads argv[1] (a store, with zarr-python) and argv[2] (a netCDF-4 file, with
/// netCDF4-python's values as .npy files in argv[3]) and prints every difference: each
/// variable's fields, names and values, nested fields in turn. Without argv[2], writes the
/// .npy files.
const FIELDS: &str = r#"
import sys, os, warnings, numpy as np
warnings.simplefilter("ignore")
paths = ["obs", "here", "sub/where", "sub/other", "sub/track"]
if sys.argv[1] == "--oracle":
    import netCDF4
    ds = netCDF4.Dataset(sys.argv[2])
    for p in paths:
        v = ds[p]
        v.set_auto_chartostring(False)
        np.save(os.path.join(sys.argv[3], p.replace("/", "_") + ".npy"), v[...])
    sys.exit(0)
import zarr
only = sys.argv[3].split(",") if len(sys.argv) > 3 else paths
g = zarr.open_group(sys.argv[1], mode="r")
def same(a, b, where):
    if a.dtype.names is None:
        if a.shape != b.shape or not np.array_equal(a, b):
            print(where, "reads", a.tolist(), "not", b.tolist())
        return
    if a.dtype.names != b.dtype.names:
        print(where, "has fields", a.dtype.names, "not", b.dtype.names)
        return
    for name in a.dtype.names:
        same(a[name], b[name], where + "." + name)
for p in only:
    want = np.load(os.path.join(sys.argv[2], p.replace("/", "_") + ".npy"))
    got = np.asarray(g[p][...])
    if want.ndim == 0 and got.shape == (1,):
        got = got.reshape(())
    same(got, want, p)
"#;

#[test]
fn defined_compound_types_round_trip_through_the_stock_tools() {
    if common::reference_only() {
        return;
    }
    for name in ["compound", "nested_arrays"] {
        round_trip(&cdl(name));
    }
}

fn round_trip(cdl: &Path) {
    let case = common::case_name(cdl);
    let dir = scratch(&format!("compound-{case}"));
    let (nc, truth) = truth(dir.path(), cdl);

    for (name, mode) in [("gen.zarr", "nczarr,file"), ("gen.zip", "nczarr,zip")] {
        let store = url(&dir.path().join(name), mode);
        ncgen(Host::Ours, cdl, &store).unwrap_or_else(|e| panic!("{case}, {mode}: {e}"));
        let ours = dumped(Host::Ours, &store);
        assert_eq!(
            common::diff::diff(&truth, &ours),
            None,
            "{case}: ncgen, {mode}"
        );
    }
    let on_410 = dumped(
        Host::OursOn410,
        &url(&dir.path().join("gen.zarr"), "nczarr,file"),
    );
    assert_eq!(
        common::diff::diff(&truth, &on_410),
        None,
        "{case}: on 4.10.1"
    );

    let copy = url(&dir.path().join("copy.zarr"), "nczarr,file");
    let copied = run(Host::Ours, "nccopy", &[nc.to_str().unwrap(), &copy]);
    assert!(copied.success(), "{case}: {}", copied.describe());
    assert_eq!(
        common::diff::diff(&truth, &dumped(Host::Ours, &copy)),
        None,
        "{case}: nccopy into a store"
    );
    let back = dir.path().join("back.nc");
    let copied = run(Host::Ours, "nccopy", &[&copy, back.to_str().unwrap()]);
    assert!(copied.success(), "{case}: {}", copied.describe());
    assert_eq!(
        common::diff::diff(&truth, &dumped(Host::Stock, back.to_str().unwrap())),
        None,
        "{case}: nccopy of the store into a netCDF-4 file"
    );

    // netcdf-c's own NCZarr has no compound types: 4.10.1 refuses the store (4.9.0 crashes
    // cleaning up after the same refusal, as it does on zarr-python's records).
    let refused = run(Host::Ref410, "ncdump", &[&copy]);
    assert!(
        !refused.success() && !refused.crashed(),
        "{case}: {}",
        refused.describe()
    );
}

#[test]
fn zarr_python_reads_the_values_netcdf_wrote() {
    if common::reference_only() {
        return;
    }
    let dir = scratch("compound-values");
    let (nc, _) = truth(dir.path(), &cdl("compound"));
    let values = dir.path().join("values");
    std::fs::create_dir(&values).unwrap();
    let args = ["--oracle", nc.to_str().unwrap(), values.to_str().unwrap()];
    common::python::run_script("netcdf4", FIELDS, &args).unwrap_or_else(|e| panic!("{e}"));

    let nczarr = dir.path().join("values.zarr");
    let compound = cdl("compound");
    ncgen(Host::Ours, &compound, &url(&nczarr, "nczarr,file")).unwrap_or_else(|e| panic!("{e}"));
    // Pure Zarr: what zarr-python and xarray write, no NCZarr metadata (nor type names).
    let pure = dir.path().join("pure.zarr");
    let copied = run(
        Host::Ours,
        "nccopy",
        &[nc.to_str().unwrap(), &url(&pure, "zarr,file")],
    );
    assert!(copied.success(), "{}", copied.describe());
    for store in [&nczarr, &pure] {
        let args = [store.to_str().unwrap(), values.to_str().unwrap()];
        let differences = common::python::run_script("zarr2", FIELDS, &args)
            .unwrap_or_else(|e| panic!("{}: {e}", store.display()));
        assert_eq!(differences, "", "zarr-python 2, {}", store.display());
        // zarr-python 3 reads records without subarray fields.
        let args = [
            store.to_str().unwrap(),
            values.to_str().unwrap(),
            "sub/where,sub/other,sub/track",
        ];
        let differences = common::python::run_script("zarr3", FIELDS, &args)
            .unwrap_or_else(|e| panic!("{}: {e}", store.display()));
        assert_eq!(differences, "", "zarr-python 3, {}", store.display());
    }
    // The pure copy reads back with types of its own, the values the same.
    let pure_dump = ncdump(Host::Ours, &[], &url(&pure, "zarr,file")).unwrap();
    assert!(
        pure_dump.contains("compound obs_t") && pure_dump.contains("compound obs_pos_t"),
        "{pure_dump}"
    );
}

/// netCDF4-python through the library: defines aligned compound types (numpy's layout, with
/// padding), writes records along an unlimited dimension, reads them back byte for byte under
/// the same dtype after a reopen; zarr-python reads the same values.
const NETCDF4_WRITES: &str = r#"
import sys, numpy as np, netCDF4
url, out = sys.argv[1], sys.argv[2]
pos = np.dtype([("x", "f4"), ("y", "f4")], align=True)
obs = np.dtype([("id", "i4"), ("pos", pos), ("w", "f8"), ("tag", "S1", (3,))], align=True)
ds = netCDF4.Dataset(url, "w")
ds.createCompoundType(pos, "pos_t")
obs_t = ds.createCompoundType(obs, "obs_t")
ds.createDimension("n", None)
v = ds.createVariable("obs", obs_t, ("n",))
v.set_auto_chartostring(False)
d = np.zeros(4, obs)
d["id"] = [1, 2, 3, -4]
d["pos"]["x"] = [0.5, 1, 1.5, 2]
d["pos"]["y"] = [-1, 1e-30, 3e30, 0]
d["w"] = [1e10, -1, 0, 2]
d["tag"] = np.array([[b"a", b"b", b"c"], [b"d", b"", b""], [b"x", b"y", b"z"], [b"", b"", b""]])
v[:] = d
ds.close()
ds = netCDF4.Dataset(url)
v = ds["obs"]
v.set_auto_chartostring(False)
back = v[:]
if back.dtype != d.dtype or back.tobytes() != d.tobytes():
    print("read back", back.dtype, back, "not", d.dtype, d)
np.save(out, d)
"#;

#[test]
fn netcdf4_python_defines_writes_and_reads_back_compound_types() {
    if common::reference_only() {
        return;
    }
    let dir = scratch("compound-netcdf4");
    let store = dir.path().join("nc4.zarr");
    let values = dir.path().join("obs.npy");
    let args = [&url(&store, "nczarr,file")[..], values.to_str().unwrap()];
    let wrote = common::python::run_netcdf4_preloaded(NETCDF4_WRITES, &args)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(wrote, "");
    const READ: &str = r#"
import sys, numpy as np, zarr
got = zarr.open_group(sys.argv[1], mode="r")["obs"][...]
want = np.load(sys.argv[2])
for name in want.dtype.names:
    if not np.array_equal(got[name], want[name]):
        print(name, got[name], "not", want[name])
"#;
    let args = [store.to_str().unwrap(), values.to_str().unwrap()];
    let differences =
        common::python::run_script("zarr2", READ, &args).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(differences, "");
}

/// An NCZarr store holding records that name no type (here: their types' names taken out of
/// the metadata, as an older writer or another tool leaves them): each rewrite of the
/// metadata keeps them so, and the dataset keeps one type per such variable, however often it
/// is rewritten; the declared types and their variables come back as defined. Once a program
/// defines a variable of such a type, the type is stored as a defined one, and both variables
/// come back of it.
#[test]
fn types_of_records_no_definition_gave_are_not_stored_nor_multiplied() {
    use nczarr_rs::api::{Dataset, Owner};
    use nczarr_rs::model::{GroupId, NcType, Tree, Values};
    use nczarr_rs::url::DatasetUrl;
    if common::reference_only() {
        return;
    }
    let dir = scratch("compound-undeclared");
    let store = dir.path().join("s.zarr");
    let target = url(&store, "nczarr,file");
    ncgen(Host::Ours, &cdl("compound"), &target).unwrap_or_else(|e| panic!("{e}"));
    // The array `obs` names no type any more.
    let attrs = store.join("obs/.zattrs");
    let mut meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&attrs).unwrap()).unwrap();
    meta["_nczarr_array"]
        .as_object_mut()
        .unwrap()
        .remove("type")
        .expect("a type named");
    std::fs::write(&attrs, meta.to_string()).unwrap();

    let dataset_url = DatasetUrl::parse(&target).unwrap();
    let listing = |ds: &Dataset| -> Vec<String> {
        let mut names: Vec<String> = ds.tree.types.types.iter().map(|t| t.name.clone()).collect();
        names.sort();
        names
    };
    let mut seen = Vec::new();
    for round in 0..3 {
        let mut ds = Dataset::open(&dataset_url, true).unwrap();
        seen.push(listing(&ds));
        let text = Values::fixed(NcType::Char, format!("round {round}").into_bytes());
        ds.put_att(Owner::Group(Tree::ROOT), "history", NcType::Char, text)
            .unwrap();
        ds.close().unwrap();
    }
    assert!(seen.windows(2).all(|w| w[0] == w[1]), "{seen:?}");
    // The declared types, and the undeclared records' own (named after `obs`, whose name
    // the declared `obs_t` has taken).
    assert_eq!(
        seen[0],
        [
            "obs_pos_t",
            "obs_t",
            "obs_t1",
            "other_t",
            "pos_t",
            "unused_t"
        ]
    );
    let type_of = |ds: &Dataset, g: GroupId, name: &str| {
        let v = ds.tree.group(g).var_index(name).unwrap();
        let id = ds.record_type(g, v).unwrap();
        ds.tree.type_full_name(id).unwrap()
    };
    let stored_types = |group: &Path| -> Vec<String> {
        let attrs: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(group.join(".zattrs")).unwrap()).unwrap();
        attrs["_nczarr_group"]["types"]
            .as_array()
            .map(|t| {
                t.iter()
                    .map(|t| t["name"].as_str().unwrap().to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    let ds = Dataset::open(&dataset_url, false).unwrap();
    let sub = ds.tree.child_named(Tree::ROOT, "sub").unwrap();
    assert_eq!(type_of(&ds, Tree::ROOT, "obs"), "/obs_t1");
    assert_eq!(type_of(&ds, Tree::ROOT, "here"), "/pos_t");
    assert_eq!(type_of(&ds, sub, "where"), "/pos_t");
    assert_eq!(type_of(&ds, sub, "other"), "/sub/other_t");
    // Its `_FillValue` is a compound value: served as one, never as an empty list of bytes.
    let other = Owner::Var(sub, ds.tree.group(sub).var_index("other").unwrap());
    let (fill_type, fill) = ds.compound_att(other, "_FillValue").unwrap();
    assert_eq!(Some(fill_type), ds.tree.types.named(sub, "other_t"));
    let mut want = Vec::new();
    for part in [(-1i16).to_ne_bytes(), (-1i16).to_ne_bytes()] {
        want.extend_from_slice(&part);
    }
    want.extend_from_slice(&(-1i32).to_ne_bytes());
    want.extend_from_slice(&(-1.5f64).to_ne_bytes());
    assert_eq!(fill, want);
    assert!(matches!(
        ds.att_values(other, "_FillValue"),
        Err(nczarr_rs::error::Error::BadType(_))
    ));
    ds.close().unwrap();
    assert_eq!(stored_types(&store), ["pos_t", "obs_t"]);

    // A variable of the undeclared records' type, defined by a program.
    let mut ds = Dataset::open(&dataset_url, true).unwrap();
    let obs_t1 = ds.tree.types.named(Tree::ROOT, "obs_t1").unwrap();
    let n = ds.dimid(Tree::ROOT, "n").unwrap();
    ds.def_record_var(Tree::ROOT, "copy", obs_t1, &[n.0 as i32])
        .unwrap();
    ds.close().unwrap();
    let ds = Dataset::open(&dataset_url, false).unwrap();
    assert_eq!(type_of(&ds, Tree::ROOT, "obs"), "/obs_t1");
    assert_eq!(type_of(&ds, Tree::ROOT, "copy"), "/obs_t1");
    assert_eq!(listing(&ds), seen[0]);
    ds.close().unwrap();
    assert_eq!(
        stored_types(&store),
        ["pos_t", "obs_t", "obs_pos_t", "obs_t1"]
    );
}
