//! Variable-length types defined by netCDF programs (`ncgen`, `nccopy`), stored as numpy object
//! arrays of numcodecs' `vlen-array` (as zarr-python 2 writes ragged arrays) with NCZarr keeping
//! each type, and read back as the types they were defined as; ragged arrays that zarr-python 2
//! writes, read as values of variable-length types.
//!
//! The oracle is netCDF-4 itself: `tests/cdl_vlen/vlen.cdl` (types of several bases, a scalar,
//! an unlimited dimension, empty sequences, extreme values) and `vlen_atts.cdl` (a fill, attributes
//! of variable-length types on a variable and on the dataset) written by stock `ncgen` into an
//! HDF5 file and dumped by stock `ncdump`. Through the library, into a directory and a zip
//! archive, `ncgen` must write and `ncdump` must print exactly that (on 4.10.1 too, from the
//! directory); `nccopy` must copy the HDF5 file into a store that dumps the same, and the store
//! back into an HDF5 file that stock `ncdump` prints the same. zarr-python 2 must read from the
//! store the sequences the HDF5 file holds, and stock netcdf-c 4.10.1 (no library) refuse the
//! store without crashing, as it refuses zarr-python's ragged arrays.

mod common;

use common::{Host, diff, dump, ncdump, ncgen, repo_root, run, scratch, url};
use std::path::{Path, PathBuf};

fn cdl_named(name: &str) -> PathBuf {
    repo_root().join(format!("tests/cdl_vlen/{name}.cdl"))
}

/// The HDF5 file stock `ncgen` writes of `cdl` and its dump by stock `ncdump` (without the
/// dataset's name).
fn truth_of(dir: &Path, cdl: &Path) -> (PathBuf, String) {
    let nc = dir.join(format!("{}.nc", common::case_name(cdl)));
    ncgen(Host::Stock, cdl, nc.to_str().unwrap()).unwrap_or_else(|e| panic!("{e}"));
    let dumped = ncdump(Host::Stock, &[], nc.to_str().unwrap()).unwrap();
    assert!(dumped.contains("int(*) ragged_t ;"), "{dumped}");
    (nc, dump::normalise_name(&dumped))
}

#[test]
fn defined_vlen_types_round_trip_through_the_stock_tools() {
    if common::reference_only() {
        return;
    }
    for name in ["vlen", "vlen_atts"] {
        let cdl = cdl_named(name);
        let dir = scratch(&format!("vlen-tools-{name}"));
        let (nc, truth) = truth_of(dir.path(), &cdl);
        // Zarr v3 has no codec for them.
        common::tool_round_trip::through_stock_tools(dir.path(), &cdl, &nc, &truth, false);
    }
}

/// Prints, as JSON, each variable of `vlen.cdl` as lists of its sequences' numbers, read by
/// zarr-python from the store argv[1].
const SEQUENCES: &str = r#"
import sys, json, warnings, numpy as np, zarr
warnings.simplefilter("ignore")
g = zarr.open_group(sys.argv[1], mode="r")
out = {}
for p, dtype in [("ragged", "<i4"), ("series", "<f8"), ("one", "|u1")]:
    a = g[p]
    assert a.dtype == object and a.filters[0].codec_id == "vlen-array", (p, a.dtype)
    assert a.filters[0].dtype == np.dtype(dtype), (p, a.filters[0].dtype)
    out[p] = [np.asarray(x).tolist() for x in np.asarray(a[...]).reshape(-1)]
print(json.dumps(out, sort_keys=True))
"#;

#[test]
fn zarr_python_reads_the_sequences_the_file_holds() {
    if common::reference_only() {
        return;
    }
    let dir = scratch("vlen-zarr");
    let cdl = cdl_named("vlen");
    let store = dir.path().join("s.zarr");
    ncgen(Host::Ours, &cdl, &url(&store, "nczarr,file")).unwrap_or_else(|e| panic!("{e}"));
    let (_, dumped) = truth_of(dir.path(), &cdl);
    assert!(
        dumped.contains(" ragged = {1, 2, 3}, {}, {-2147483647, 2147483647}, {42} ;"),
        "{dumped}"
    );
    let want = serde_json::json!({
        "ragged": [[1, 2, 3], [], [-2147483647, 2147483647], [42]],
        "series": [[0.5], [], [1.5, 2.5], [3.0], [], [4.0, 5.0, 6.0, 7.0], [], [8.0],
                   [9.0], [10.0], [11.0], []],
        "one": [[0, 1, 255]],
    });
    let got = common::python::run_script("zarr2", SEQUENCES, &[store.to_str().unwrap()])
        .unwrap_or_else(|e| panic!("{e}"));
    let got: serde_json::Value = serde_json::from_str(got.trim()).unwrap();
    assert_eq!(got, want);
}

/// Ragged arrays as zarr-python 2 writes them: big-endian numbers, compressed, chunks never
/// written, elements of a written chunk never written (zarr-python stores its default fill,
/// 0, and reads it back as `[0]`).
const WRITE_RAGGED: &str = r#"
import sys, warnings, numpy as np, numcodecs, zarr
warnings.simplefilter("ignore")
g = zarr.open_group(sys.argv[1], mode="w")
a = g.create_dataset("ragged", shape=(3, 2), chunks=(2, 1), dtype=object,
                     object_codec=numcodecs.VLenArray(">i2"), compressor=numcodecs.Zlib(1))
a[0, 0] = np.array([1, -2, 300], dtype=">i2")
a[2, 1] = np.array([7], dtype=">i2")
a.attrs["_ARRAY_DIMENSIONS"] = ["y", "x"]
b = g.create_dataset("f", shape=(2,), dtype=object, object_codec=numcodecs.VLenArray("<f4"))
b[0] = np.array([1.5], dtype="<f4")
b[1] = np.array([2.5, 3.5], dtype="<f4")
b.attrs["_ARRAY_DIMENSIONS"] = ["x"]
"#;

#[test]
fn ragged_arrays_of_zarr_python_are_vlen_variables() {
    if common::reference_only() {
        return;
    }
    let dir = scratch("vlen-ragged");
    let store = dir.path().join("r.zarr");
    common::python::run_script("zarr2", WRITE_RAGGED, &[store.to_str().unwrap()])
        .unwrap_or_else(|e| panic!("{e}"));
    let target = url(&store, "zarr,file");
    let dumped = dump::normalise_name(&ncdump(Host::Ours, &[], &target).unwrap());
    for want in [
        "float(*) f_t ;",
        "short(*) ragged_t ;",
        "f_t f(x) ;",
        "ragged_t ragged(y, x) ;",
        " f = {1.5}, {2.5, 3.5} ;",
        "{1, -2, 300}, {},\n  {0}, {},\n  {}, {7} ;",
    ] {
        assert!(dumped.contains(want), "{want:?} in\n{dumped}");
    }
    let nc = dir.path().join("r.nc");
    let copied = run(Host::Ours, "nccopy", &[&target, nc.to_str().unwrap()]);
    assert!(copied.success(), "{}", copied.describe());
    let stock = dump::normalise_name(&ncdump(Host::Stock, &[], nc.to_str().unwrap()).unwrap());
    assert_eq!(diff::diff(&dumped, &stock), None);
}

/// netcdf-c 4.10.1 without the library has no ragged arrays: it refuses the store with an
/// error (not a crash). (4.9.0 crashes opening any store that holds one, zarr-python's too.)
#[test]
fn stock_netcdf_refuses_the_store_cleanly() {
    if common::reference_only() {
        return;
    }
    let dir = scratch("vlen-stock");
    common::tool_round_trip::refused_by_stock_410(dir.path(), &cdl_named("vlen"));
}

/// A store whose metadata is damaged or hostile: a ragged array of a dtype that is no numbers is
/// listed but unreadable; a declaration of a `string` or `char` base lists no type (its variable
/// gets one of its own); sequences another class's table also names (opaque, enum), or that a
/// variable's enum type would take as its fill, are still handed out only as values of a
/// variable-length type (never `nc_vlen_t`s into memory sized for bytes or numbers); an
/// attribute's sequences that are not lists of numbers fail the open with a clear error.
#[test]
fn broken_vlen_metadata_is_refused_cleanly() {
    if common::reference_only() {
        return;
    }
    let dir = scratch("vlen-broken");
    let path = dir.path().join("s.zarr");
    let store = url(&path, "nczarr,file");
    ncgen(Host::Ours, &cdl_named("vlen_atts"), &store).unwrap_or_else(|e| panic!("{e}"));
    let edit = |file: &str, change: &dyn Fn(&mut serde_json::Value)| {
        let p = path.join(file);
        let mut json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        change(&mut json);
        std::fs::write(&p, serde_json::to_string(&json).unwrap()).unwrap();
    };
    // Bases of text: the declarations are not listed; the variables get types of their own.
    for base in ["string", "char"] {
        edit(".zattrs", &|j| {
            j["_nczarr_group"]["types"][0]["vlen"] = base.into();
            j["_nczarr_group"]["types"][1]["vlen"] = base.into();
        });
        let dumped = ncdump(Host::Ours, &[], &store).unwrap_or_else(|e| panic!("{e}"));
        assert!(!dumped.contains(&format!("{base}(*)")), "{dumped}");
        assert!(dumped.contains("int(*) ragged_t ;"), "{dumped}");
        assert!(dumped.contains("float(*) spectrum_t ;"), "{dumped}");
        assert!(dumped.contains(" ragged = {1}, _, {2, 3} ;"), "{dumped}");
    }
    // Another class's table naming sequences too: an opaque type of one byte that sequences
    // of bytes would fit as bytes, an enum type of their base; and an enum variable whose fill
    // is stored as a sequence.
    edit(".zattrs", &|j| {
        let types = j["_nczarr_group"]["types"].as_array_mut().unwrap();
        types.push(serde_json::json!({"name": "raw_t", "size": 1}));
        types.push(serde_json::json!({"name": "e_t", "base": "int",
                                      "members": [{"name": "a", "value": 1},
                                                  {"name": "b", "value": 2},
                                                  {"name": "c", "value": 3}]}));
        j["packets"] = serde_json::json!([[1, 2, 3], [4]]);
        let info = &mut j["_nczarr_attr"];
        info["types"]["packets"] = "|u1".into();
        info["vlen_types"]["packets"] = "/ragged_t".into();
        info["opaque_types"] = serde_json::json!({"packets": "/raw_t"});
        info["enum_types"] = serde_json::json!({"reference": "/e_t"});
    });
    edit("plain/.zattrs", &|j| {
        j["_FillValue"] = serde_json::json!([[5, 6]]);
        let info = &mut j["_nczarr_attr"];
        info["types"]["_FillValue"] = "<i4".into();
        info["vlen_types"] = serde_json::json!({"_FillValue": "/ragged_t"});
        j["_nczarr_array"]["type"] = "/e_t".into();
    });
    let checked = run(
        Host::Ours,
        "valgrind",
        &["-q", "--error-exitcode=9", "ncdump", &store],
    );
    assert!(checked.success(), "{}", checked.describe());
    for want in [
        ":reference = {0.5, 1.5, 2.5} ;",
        ":bounds = {0, 10}, {}, {20, 30, 40} ;",
        ":_FillValue = {-1} ;",
        "e_t plain(n) ;",
        ":packets = {1, 2, 3}, {4} ;",
        "plain:_FillValue = {5, 6} ;",
    ] {
        assert!(
            checked.stdout.contains(want),
            "{want} in {}",
            checked.stdout
        );
    }
    // A dtype that is no numbers: listed, its data refused.
    edit("ragged/.zarray", &|j| {
        j["filters"][0]["dtype"] = "<M8[s]".into()
    });
    let refused = run(Host::Ours, "ncdump", &["-v", "ragged", &store]);
    assert_eq!(
        refused.status.and_then(|s| s.code()),
        Some(1),
        "{}",
        refused.describe()
    );
    // Sequences that are not lists of numbers.
    edit("ragged/.zattrs", &|j| j["bounds"][0] = "x".into());
    let broken = run(Host::Ours, "ncdump", &["-h", &store]);
    assert_eq!(
        broken.status.and_then(|s| s.code()),
        Some(1),
        "{}",
        broken.describe()
    );
    assert!(broken.stderr.contains("bounds"), "{}", broken.describe());
}
