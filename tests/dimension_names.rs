//! Dimension names that pure Zarr gives at several lengths in one group, read through stock
//! `ncdump` and netCDF4-python as zarr-python reads them: netCDF cannot give one group two
//! dimensions of one name, so the name goes to the coordinate array named like it, else to the
//! length most arrays use, and the other arrays are read on anonymous dimensions. Every array
//! keeps the names it stored when the dataset is changed, in Zarr v2 (`_ARRAY_DIMENSIONS`),
//! Zarr v3 (`dimension_names`, consolidated or not) and NCZarr alike. netcdf-c 4.10.1's own
//! NCZarr refuses to open such datasets, so zarr-python is the reference here.

mod common;

use common::dump::has_line;
use common::{Host, ncdump, scratch, url};
use serde_json::Value;
use std::path::Path;

/// Reads the arrays of the dataset at argv[1] (`group/name` for nested ones) named in argv[2]
/// (comma separated) with netCDF4-python and prints their values as JSON; then, through the
/// plain path argv[3], adds an attribute to the dataset and one to the first array named.
const READ_AND_CHANGE: &str = r#"
import json, sys, numpy as np, netCDF4
names = sys.argv[2].split(",")
with netCDF4.Dataset(sys.argv[1]) as ds:
    print(json.dumps({n: np.asarray(ds[n][...]).astype("f8").ravel().tolist() for n in names}))
with netCDF4.Dataset(sys.argv[3], "a") as ds:
    ds.setncattr("history", "changed")
    ds[names[0]].setncattr("touched", 1)
"#;

/// Prints, as JSON, the dimension names zarr-python finds for each array of the dataset at
/// argv[1] named in argv[2], read without consolidated metadata and with it (`"<array> <bool>"`),
/// and the root's `history` attribute.
const STORED_NAMES: &str = r#"
import json, sys, warnings, zarr
warnings.simplefilter("ignore")
out = {}
for consolidated in (False, True):
    g = zarr.open_group(sys.argv[1], mode="r", use_consolidated=consolidated)
    for n in sys.argv[2].split(","):
        a = g[n]
        names = (a.metadata.dimension_names if a.metadata.zarr_format == 3
                 else a.attrs["_ARRAY_DIMENSIONS"])
        out[f"{n} {consolidated}"] = list(names)
    out[f"history {consolidated}"] = g.attrs.get("history")
print(json.dumps(out, sort_keys=True))
"#;

/// The store zarr-python wrote at `store` in Zarr `format`, its script having printed each
/// array's values and names as `{"values": {...}, "names": {...}}`: stock `ncdump` shows each
/// line of `header` once, netCDF4-python reads every array as zarr-python did and changes the
/// dataset, and zarr-python then still finds every array's names.
fn read_alike_and_keep_names(store: &Path, format: &str, written: &str, header: &[&str]) {
    let written: Value = serde_json::from_str(written).unwrap();
    let target = url(store, "zarr,file");
    let dump = ncdump(Host::Ours, &[], &target).unwrap_or_else(|e| panic!("{e}"));
    for line in header {
        let times = dump.lines().filter(|l| l.trim() == *line).count();
        assert_eq!(times, 1, "v{format}: {line:?} in\n{dump}");
    }
    let arrays: Vec<&str> = written["names"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let arrays = arrays.join(",");
    let args = [target.as_str(), arrays.as_str(), store.to_str().unwrap()];
    assert_eq!(
        common::python::netcdf4_json(READ_AND_CHANGE, &args),
        written["values"],
        "v{format}"
    );
    let out = common::python::run_script(
        "zarr3",
        STORED_NAMES,
        &[store.to_str().unwrap(), arrays.as_str()],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let got: Value = serde_json::from_str(&out).unwrap();
    for consolidated in ["False", "True"] {
        for (name, names) in written["names"].as_object().unwrap() {
            assert_eq!(
                &got[format!("{name} {consolidated}")],
                names,
                "v{format}, {name}: {out}"
            );
        }
        assert_eq!(got[format!("history {consolidated}")], "changed", "{out}");
    }
}

/// For Zarr v2 and v3: zarr-python's script `write` writes a store named `name` (its path
/// argv[1], the format argv[2]) and prints what [`read_alike_and_keep_names`] checks.
fn each_format(name: &str, write: &str, header: &[&str]) {
    for format in ["2", "3"] {
        let dir = scratch(name);
        let store = dir.path().join(name);
        let written =
            common::python::run_script("zarr3", write, &[store.to_str().unwrap(), format])
                .unwrap_or_else(|e| panic!("{e}"));
        read_alike_and_keep_names(&store, format, &written, header);
    }
}

/// The levels of an OME-Zarr multiscale image, arrays `0`, `1`, `2` of one group, name their
/// axes alike (`["c", "y", "x"]`) at different lengths but for `c`: the first level, the
/// largest, keeps the names, the others are read on anonymous dimensions.
#[test]
fn multiscale_levels_naming_their_axes_alike_all_read() {
    if common::reference_only() {
        return;
    }
    let write = r#"
import json, sys, numpy as np, zarr
fmt = int(sys.argv[2])
g = zarr.open_group(sys.argv[1], mode="w", zarr_format=fmt)
out = {"values": {}, "names": {}}
for i, (h, w) in enumerate([(6, 8), (3, 4), (2, 2)]):
    named = {"dimension_names": ["c", "y", "x"]} if fmt == 3 else {}
    a = g.create_array(str(i), shape=(2, h, w), chunks=(1, 2, 2), dtype="u2", **named)
    if fmt == 2:
        a.attrs["_ARRAY_DIMENSIONS"] = ["c", "y", "x"]
    a[:] = np.arange(2 * h * w, dtype="u2").reshape(2, h, w) * (i + 1)
    out["values"][str(i)] = a[...].astype("f8").ravel().tolist()
    out["names"][str(i)] = ["c", "y", "x"]
g.attrs["multiscales"] = [{"axes": [{"name": "c"}, {"name": "y"}, {"name": "x"}],
                           "datasets": [{"path": str(i)} for i in range(3)]}]
zarr.consolidate_metadata(sys.argv[1])
print(json.dumps(out))
"#;
    each_format(
        "image.zarr",
        write,
        &[
            "c = 2 ;",
            "y = 6 ;",
            "x = 8 ;",
            "ushort \\0(c, y, x) ;",
            "ushort \\1(c, _Anonymous_Dim_3, _Anonymous_Dim_4) ;",
            "ushort \\2(c, _Anonymous_Dim_2, _Anonymous_Dim_2) ;",
        ],
    );
}

/// A group whose arrays give `x` two lengths: the coordinate `x` keeps its name though arrays
/// before it in name order, and more of them, give `x` another length; `t`, with no coordinate,
/// goes to the length most arrays give it, though the first gives another. In a subgroup
/// whose arrays give `x` two lengths as often, the root's `x` wins and the other array is
/// anonymous (no `x` of the subgroup hides the root's); in one where most give `x` another
/// length, the subgroup has its own `x`, and the array of the root's length, though first, is
/// anonymous.
#[test]
fn a_name_given_several_lengths_goes_to_its_coordinate_then_to_the_most_arrays() {
    if common::reference_only() {
        return;
    }
    let write = r#"
import json, sys, numpy as np, zarr
fmt = int(sys.argv[2])
root = zarr.open_group(sys.argv[1], mode="w", zarr_format=fmt)
out = {"values": {}, "names": {}}
def array(group, path, values, names):
    named = {"dimension_names": names} if fmt == 3 else {}
    a = group.create_array(path.split("/")[-1], shape=values.shape, dtype=values.dtype,
                           chunks=values.shape, **named)
    if fmt == 2:
        a.attrs["_ARRAY_DIMENSIONS"] = names
    a[...] = values
    out["values"][path] = a[...].astype("f8").ravel().tolist()
    out["names"][path] = names
for name in ("a", "b", "c"):
    array(root, name, np.arange(5, dtype="i4") + ord(name), ["x"])
array(root, "x", np.arange(10, dtype="f8") / 2, ["x"])
array(root, "p", np.arange(3, dtype="i4"), ["t"])
array(root, "q", np.arange(4, dtype="i4") * 2, ["t"])
array(root, "r", np.arange(4, dtype="i4") * 3, ["t"])
sub = root.create_group("sub")
array(sub, "sub/s", np.arange(10, dtype="i4") - 5, ["x"])
array(sub, "sub/u", np.arange(5, dtype="i4") - 7, ["x"])
own = root.create_group("own")
array(own, "own/k", np.arange(10, dtype="i4") + 1, ["x"])
array(own, "own/m", np.arange(6, dtype="i4") * 5, ["x"])
array(own, "own/n", np.arange(6, dtype="i4") * 7, ["x"])
zarr.consolidate_metadata(sys.argv[1])
print(json.dumps(out))
"#;
    each_format(
        "clash.zarr",
        write,
        &[
            "x = 10 ;",
            "t = 4 ;",
            "int a(_Anonymous_Dim_5) ;",
            "int c(_Anonymous_Dim_5) ;",
            "double x(x) ;",
            "int p(_Anonymous_Dim_3) ;",
            "int q(t) ;",
            "int r(t) ;",
            "int s(x) ;",
            "int u(_Anonymous_Dim_5) ;",
        ],
    );
}

/// An array an NCZarr group lists without its `_nczarr_array` (as another Zarr tool adds one),
/// naming the group's `x` at another length, is read on an anonymous dimension; the name it
/// stored survives one change of the dataset, which records NCZarr's references for it, and
/// the next, which reads them.
#[test]
fn an_nczarr_array_keeps_a_clashing_name_through_rewrites() {
    if common::reference_only() {
        return;
    }
    let dir = scratch("nczarr-clash");
    let cdl = dir.path().join("x.cdl");
    std::fs::write(
        &cdl,
        "netcdf x {\ndimensions:\n x = 10 ;\nvariables:\n double x(x) ;\ndata:\n \
         x = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9 ;\n}\n",
    )
    .unwrap();
    let store = dir.path().join("x.zarr");
    let target = url(&store, "nczarr,file");
    common::ncgen(Host::Ours, &cdl, &target).unwrap_or_else(|e| panic!("{e}"));
    let add_array = r#"
import json, os, sys
root = sys.argv[1]
os.makedirs(os.path.join(root, "a"))
with open(os.path.join(root, "a", ".zarray"), "w") as f:
    json.dump({"zarr_format": 2, "shape": [5], "chunks": [5], "dtype": "<i4",
               "compressor": None, "filters": None, "fill_value": 0, "order": "C"}, f)
with open(os.path.join(root, "a", ".zattrs"), "w") as f:
    json.dump({"_ARRAY_DIMENSIONS": ["x"]}, f)
with open(os.path.join(root, "a", "0"), "wb") as f:
    f.write(b"".join(i.to_bytes(4, "little") for i in range(11, 16)))
with open(os.path.join(root, ".zattrs")) as f:
    attrs = json.load(f)
attrs["_nczarr_group"]["arrays"].append("a")
with open(os.path.join(root, ".zattrs"), "w") as f:
    json.dump(attrs, f)
"#;
    common::python::run_script("zarr3", add_array, &[store.to_str().unwrap()])
        .unwrap_or_else(|e| panic!("{e}"));
    let stored = |key: &str| -> Value {
        serde_json::from_slice(&std::fs::read(store.join(key)).unwrap()).unwrap()
    };
    let change = r#"
import sys, netCDF4, numpy as np
with netCDF4.Dataset(sys.argv[1], "a") as ds:
    ds["a"].setncattr("session", np.int32(sys.argv[2]))
"#;
    for session in ["1", "2"] {
        common::python::run_netcdf4_preloaded(change, &[store.to_str().unwrap(), session])
            .unwrap_or_else(|e| panic!("session {session}: {e}"));
        let attrs = stored("a/.zattrs");
        assert_eq!(
            attrs["_ARRAY_DIMENSIONS"],
            serde_json::json!(["x"]),
            "{attrs}"
        );
        assert_eq!(
            attrs["_nczarr_array"]["dimension_references"],
            serde_json::json!(["/_Anonymous_Dim_5"]),
            "{attrs}"
        );
        let dump = ncdump(Host::Ours, &[], &target).unwrap_or_else(|e| panic!("{e}"));
        for line in [
            "x = 10 ;",
            "int a(_Anonymous_Dim_5) ;",
            &format!("a:session = {session} ;"),
            "a = 11, 12, 13, 14, 15 ;",
        ] {
            assert!(
                has_line(&dump, line),
                "session {session}: no {line:?} in\n{dump}"
            );
        }
    }
}
