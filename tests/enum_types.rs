//! Enum types defined by netCDF programs (`ncgen`, `nccopy`, netCDF4-python), stored as their
//! base integer types with NCZarr keeping each type's members, and read back as the types
//! they were defined as.
//!
//! The oracle is netCDF-4 itself: `tests/cdl_enum/enum.cdl` (bases of every width and sign,
//! values at their ranges' ends, a type no variable uses, a type of the parent group, enum
//! `_FillValue`s and attributes on variables and groups, a scalar, an unlimited dimension)
//! written by stock `ncgen` into an HDF5 file and dumped by stock `ncdump`. Through the
//! library, into a directory, a zip archive and Zarr v3, `ncgen` must write and `ncdump` must
//! print exactly that (on 4.10.1 too, from the directory); `nccopy` must copy the HDF5 file into a store that
//! dumps the same, and the store back into an HDF5 file that stock `ncdump` prints the same.
//! netCDF4-python through the library must see the types, members, values and attributes it
//! sees in the HDF5 file. Stock netcdf-c (4.9.0 and 4.10.1, no library) must read the store's
//! variables as their base types, and zarr-python 2 and 3 the numbers netCDF4-python reads
//! from the file.

mod common;

use common::{Host, dump, ncdump, ncgen, repo_root, run, scratch, url};
use std::path::{Path, PathBuf};

fn cdl() -> PathBuf {
    cdl_named("enum")
}

fn cdl_named(name: &str) -> PathBuf {
    repo_root().join(format!("tests/cdl_enum/{name}.cdl"))
}

/// The HDF5 file stock `ncgen` writes of the corpus and its dump (without the dataset's name).
fn truth(dir: &Path) -> (PathBuf, String) {
    truth_of(dir, &cdl())
}

/// The HDF5 file stock `ncgen` writes of `cdl` and its dump (without the dataset's name).
fn truth_of(dir: &Path, cdl: &Path) -> (PathBuf, String) {
    let nc = dir.join(format!("{}.nc", common::case_name(cdl)));
    ncgen(Host::Stock, cdl, nc.to_str().unwrap()).unwrap_or_else(|e| panic!("{e}"));
    let dumped = ncdump(Host::Stock, &[], nc.to_str().unwrap()).unwrap();
    assert!(dumped.contains("ubyte enum cloud_t"), "{dumped}");
    (nc, dump::normalise_name(&dumped))
}

fn dumped(host: Host, target: &str) -> String {
    dump::normalise_name(&ncdump(host, &[], target).unwrap_or_else(|e| panic!("{target}: {e}")))
}

#[test]
fn defined_enum_types_round_trip_through_the_stock_tools() {
    if common::reference_only() {
        return;
    }
    round_trip(&cdl(), true);
    // Enum fields of a compound type (compound types are refused in Zarr v3).
    round_trip(&cdl_named("compound_enum"), false);
}

fn round_trip(cdl: &Path, zarr_v3: bool) {
    let dir = scratch(&format!("enum-tools-{}", common::case_name(cdl)));
    let (nc, truth) = truth_of(dir.path(), cdl);
    common::tool_round_trip::through_stock_tools(dir.path(), cdl, &nc, &truth, zarr_v3);
}

/// netcdf-c without the library has no enum types in NCZarr: both references must read the
/// store (not crash, not refuse) with each variable of its base type and the same numbers.
#[test]
fn stock_netcdf_reads_the_store_as_base_types() {
    if common::reference_only() {
        return;
    }
    let dir = scratch("enum-stock");
    let store = url(&dir.path().join("s.zarr"), "nczarr,file");
    ncgen(Host::Ours, &cdl(), &store).unwrap_or_else(|e| panic!("{e}"));
    // netcdf-c 4.9.0 reads a `ubyte` attribute value above 127 as out of range (and crashes on
    // its own stores holding one): its store leaves `missing` out of the `ubyte` attribute.
    let corpus = std::fs::read_to_string(cdl()).unwrap();
    let without = corpus.replace("clear, stratus, missing ;", "clear, stratus ;");
    assert_ne!(without, corpus);
    let for_490 = dir.path().join("for_490.cdl");
    std::fs::write(&for_490, without).unwrap();
    let store_490 = url(&dir.path().join("s490.zarr"), "nczarr,file");
    ncgen(Host::Ours, &for_490, &store_490).unwrap_or_else(|e| panic!("{e}"));
    for (host, store) in [(Host::Stock, &store_490), (Host::Ref410, &store)] {
        let seen = ncdump(host, &["-v", "sky,huge,plain"], store)
            .unwrap_or_else(|e| panic!("{host:?}: {e}"));
        for want in [
            "ubyte sky(n) ;",
            "uint64 huge(n) ;",
            "int plain(n) ;",
            "plain = 1, 2, 3, 4 ;",
            "huge = 18446744073709551615, 18446744073709551615",
        ] {
            assert!(seen.contains(want), "{host:?} lacks {want:?}:\n{seen}");
        }
        // 4.9.0 prints a fill as its number, 4.10.1 as `_`.
        assert!(
            seen.contains("sky = 0, 2, 255, 1 ;") || seen.contains("sky = 0, 2, _, 1 ;"),
            "{host:?}:\n{seen}"
        );
    }
}

/// Prints, as JSON, the numbers of the corpus's enum variables: read by netCDF4-python from
/// the HDF5 file argv[2] (argv[1] `--oracle`), else by zarr-python from the store argv[1].
const NUMBERS: &str = r#"
import sys, json, warnings, numpy as np
warnings.simplefilter("ignore")
paths = ["sky", "wide", "huge", "overhead", "history", "plain", "sub/level", "sub/inherited"]
if sys.argv[1] == "--oracle":
    import netCDF4
    ds = netCDF4.Dataset(sys.argv[2])
    def read(p):
        v = ds[p]
        v.set_auto_mask(False)
        return v[...]
else:
    import zarr
    g = zarr.open_group(sys.argv[1], mode="r")
    def read(p):
        return g[p][...]
print(json.dumps({p: [str(np.asarray(read(p)).dtype),
                      np.asarray(read(p)).reshape(-1).tolist()] for p in paths}))
"#;

#[test]
fn zarr_python_reads_the_numbers_netcdf_reads_from_the_file() {
    if common::reference_only() {
        return;
    }
    let dir = scratch("enum-zarr");
    let (nc, _) = truth(dir.path());
    let want = common::python::run_script("netcdf4", NUMBERS, &["--oracle", nc.to_str().unwrap()])
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(want.contains("\"uint64\""), "{want}");
    let store = dir.path().join("s.zarr");
    ncgen(Host::Ours, &cdl(), &url(&store, "nczarr,file")).unwrap_or_else(|e| panic!("{e}"));
    for env in ["zarr2", "zarr3"] {
        let got = common::python::run_script(env, NUMBERS, &[store.to_str().unwrap()])
            .unwrap_or_else(|e| panic!("{env}: {e}"));
        assert_eq!(got, want, "{env}");
    }
}

/// Prints, as JSON, what netCDF4-python sees of argv[1]: each variable's type (its name, and
/// for an enum type its base and members), its values and its attributes (enum ones' values
/// as numbers), groups in turn.
const DESCRIBE: &str = r#"
import sys, json, numpy as np, netCDF4
def kind(t):
    if isinstance(t, netCDF4.EnumType):
        return {"enum": t.name, "base": str(t.dtype),
                "members": sorted((k, int(v)) for k, v in t.enum_dict.items())}
    return str(t)
def value(v):
    a = np.asarray(v)
    return a.tolist() if a.dtype.kind != "S" else [x.decode() for x in a.ravel()]
def group(g):
    out = {"atts": {k: value(g.getncattr(k)) for k in g.ncattrs()},
           "types": {k: kind(t) for k, t in g.enumtypes.items()}, "vars": {}}
    for name, v in g.variables.items():
        v.set_auto_mask(False)
        out["vars"][name] = {"type": kind(v.datatype), "values": value(v[...]),
                             "atts": {k: value(v.getncattr(k)) for k in v.ncattrs()}}
    out["groups"] = {k: group(c) for k, c in g.groups.items()}
    return out
print(json.dumps(group(netCDF4.Dataset(sys.argv[1])), sort_keys=True))
"#;

#[test]
fn netcdf4_python_sees_the_types_values_and_attributes_it_sees_in_the_file() {
    if common::reference_only() {
        return;
    }
    let dir = scratch("enum-netcdf4");
    let (nc, _) = truth(dir.path());
    let want = common::python::run_script("netcdf4", DESCRIBE, &[nc.to_str().unwrap()])
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(want.contains("\"enum\": \"cloud_t\""), "{want}");
    for mode in ["nczarr,file", "nczarr,zip"] {
        let store = url(&dir.path().join(format!("s.{}", &mode[7..])), mode);
        let copied = run(Host::Ours, "nccopy", &[nc.to_str().unwrap(), &store]);
        assert!(copied.success(), "{}", copied.describe());
        let got = common::python::run_netcdf4_preloaded(DESCRIBE, &[&store])
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(got, want, "{mode}");
    }
}

/// netCDF4-python through the library defines an enum type, writes a variable of it and an
/// attribute, and reads them back after a reopen; zarr-python 2 and 3 read the variable as
/// its base type's numbers.
const NETCDF4_WRITES: &str = r#"
import sys, numpy as np, netCDF4
url = sys.argv[1]
ds = netCDF4.Dataset(url, "w")
t = ds.createEnumType(np.int16, "phase_t", {"solid": -7, "liquid": 0, "gas": 1000})
ds.createDimension("n", None)
v = ds.createVariable("phase", t, ("n",), fill_value=-7)
v[:] = np.array([0, 1000, 0, -7, 1000], np.int16)
ds.close()
ds = netCDF4.Dataset(url)
v = ds["phase"]
v.set_auto_mask(False)
print(v.datatype.name, sorted(v.datatype.enum_dict.items()), v[:].tolist(), v._FillValue)
"#;

#[test]
fn netcdf4_python_defines_writes_and_reads_back_an_enum_type() {
    if common::reference_only() {
        return;
    }
    let dir = scratch("enum-netcdf4-writes");
    let store = dir.path().join("nc4.zarr");
    let wrote =
        common::python::run_netcdf4_preloaded(NETCDF4_WRITES, &[&url(&store, "nczarr,file")])
            .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        wrote.trim(),
        "phase_t [('gas', 1000), ('liquid', 0), ('solid', -7)] [0, 1000, 0, -7, 1000] -7"
    );
    const READ: &str = r#"
import sys, zarr
a = zarr.open_group(sys.argv[1], mode="r")["phase"]
print(a.dtype, a[...].tolist())
"#;
    for env in ["zarr2", "zarr3"] {
        let read = common::python::run_script(env, READ, &[store.to_str().unwrap()])
            .unwrap_or_else(|e| panic!("{env}: {e}"));
        assert_eq!(read.trim(), "int16 [0, 1000, 0, -7, 1000]", "{env}");
    }
}

/// A store whose type table a hostile or broken writer left wrong: a value given twice, a base
/// that is no integer type, members of the wrong shape, a value its base cannot hold. Each
/// such type is not listed; its variables and attributes are read as their base types, with
/// their values; the good types beside them (in the same group and in another) are served. (Names given twice and types without
/// members are the model's unit tests'.)
#[test]
fn broken_enum_declarations_leave_base_types_not_errors() {
    if common::reference_only() {
        return;
    }
    let dir = scratch("enum-broken");
    let store = dir.path().join("s.zarr");
    let target = url(&store, "nczarr,file");
    ncgen(Host::Ours, &cdl(), &target).unwrap_or_else(|e| panic!("{e}"));
    let attrs = store.join(".zattrs");
    let mut meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&attrs).unwrap()).unwrap();
    let types = meta["_nczarr_group"]["types"].as_array_mut().unwrap();
    let by_name = |types: &mut Vec<serde_json::Value>, name: &str| -> usize {
        types.iter().position(|t| t["name"] == name).unwrap()
    };
    // cloud_t: a value given twice.
    let i = by_name(types, "cloud_t");
    types[i]["members"][1]["value"] = serde_json::json!(0);
    // wide_t: no integer base.
    let i = by_name(types, "wide_t");
    types[i]["base"] = serde_json::json!("double");
    // huge_t: members of the wrong shape.
    let i = by_name(types, "huge_t");
    types[i]["members"] = serde_json::json!([["top", 1]]);
    // spare_t: a value its base cannot hold.
    let i = by_name(types, "spare_t");
    types[i]["members"][0]["value"] = serde_json::json!(1000);
    // A good one among them.
    types.push(serde_json::json!({"name": "good_t", "base": "int",
        "members": [{"name": "yes", "value": 1}, {"name": "no", "value": 0}]}));
    std::fs::write(&attrs, serde_json::to_vec(&meta).unwrap()).unwrap();

    let seen = dumped(Host::Ours, &target);
    for want in [
        "ubyte sky(n) ;",
        ":skies = 0UB, 2UB, 255UB ;",
        "int64 wide(n) ;",
        "uint64 huge(n) ;",
        "sky = 0, 2, _, 1 ;",
        "wide = -9223372036854775807, 9223372036854775807, 0, -9223372036854775807 ;",
        "huge = 18446744073709551615, 18446744073709551615, 18446744073709551615,",
        "inherited = 255, 0, 0, 255 ;",
        "int enum good_t {yes = 1, no = 0} ;",
        "short enum level_t {below = -1, ground = 0, above = 300} ;",
        "level = below, above, _, below ;",
    ] {
        assert!(seen.contains(want), "lacks {want:?}:\n{seen}");
    }
    assert!(
        !seen.contains("cloud_t") && !seen.contains("spare_t"),
        "{seen}"
    );
}
