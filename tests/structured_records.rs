//! numpy structured dtypes (records), which zarr-python 2 writes as Zarr v2 dtype lists and
//! zarr-python 3 as Zarr v3 `structured` data types, read as netCDF compound types.
//!
//! The oracle is netCDF-4 itself: the values zarr-python reads are written by netCDF4-python
//! (no library preloaded) into an HDF5 file under compound types of the same names and fields
//! (text as `char` arrays, numpy unicode as UTF-8, 16-bit floats as `float`, complex numbers
//! as pairs, datetimes as `int64`, raw bytes as `ubyte` arrays, bools as `ubyte`, every field
//! native and C-aligned). Stock `ncdump` of the store through the library must print what
//! stock `ncdump` prints of that file; `nccopy` through the library must copy the store into a
//! file that dumps the same; netCDF4-python through the library must read the dtypes (field
//! offsets included) and values netCDF4-python reads from the file, whole, in parts and
//! strided, from a directory and from a zip archive. netCDF4-python writes records into them
//! (into a chunk never written too), which zarr-python then reads with their dtypes
//! unchanged (text too long for its field refused, a 16-bit float past its range stored as an
//! infinity and reported); an array whose records netCDF cannot hold leaves the others readable, and the
//! dataset read-only.

mod common;

use common::{Host, ncdump, run, scratch, url};
use std::path::Path;

/// Writes a store argv[1] in Zarr format argv[2] with zarr-python, and each array's values
/// as zarr-python reads them to argv[1] + "." + name + ".npy".
const WRITE: &str = r#"
import sys, warnings, numpy as np, zarr
warnings.simplefilter("ignore")
path, fmt = sys.argv[1], int(sys.argv[2])
v2 = zarr.__version__.startswith("2")
if fmt == 2:
    rec_t = np.dtype([("x", "<i4"), ("b", ">i2", (3,)), ("s", "S3"), ("h", "<f2"), ("c", "<c8"),
                      ("t", "<M8[s]"), ("u", "<U2"), ("v", "V3"), ("ok", "?"),
                      ("inner", [("a", "u1"), ("d", ">f8")]), ("e", ">u8")])
else:
    rec_t = np.dtype([("x", "<i4"), ("s", "S3"), ("h", "<f2"), ("c", "<c8"), ("t", "<M8[s]"),
                      ("u", "<U2"), ("v", "V3"), ("ok", "?"),
                      ("inner", [("a", "u1"), ("d", "<f8")]), ("e", "<u8")])
point_t = np.dtype([("x", "<i2"), ("y", "<f4")])
def record(k):
    out = np.zeros((), rec_t)
    for name in rec_t.names:
        kind = rec_t[name].base.kind
        value = {"x": k, "b": (k, -k, 2 * k), "s": b"ab"[: k % 3], "h": k / 4,
                 "c": complex(k, -k), "t": k * 1000, "u": "\u00e9" + str(k % 10),
                 "v": bytes([k, k + 1, k + 2]), "ok": k % 2 == 0, "inner": (k, k + 0.5),
                 "e": 2**63 + k}[name]
        out[name] = value
    return out
rec = np.stack([np.stack([record(3 * i + j) for j in range(3)]) for i in range(4)])
points_fill = np.array((-1, 0.5), dtype=point_t)
if v2:
    g = zarr.open_group(path, mode="w")
    a = g.create_dataset("rec", shape=(5, 3), chunks=(2, 2), dtype=rec_t, fill_value=None,
                         compressor=zarr.Blosc("lz4", shuffle=1))
    a.attrs["_ARRAY_DIMENSIONS"] = ["y", "x"]
    p = g.create_dataset("points", shape=(7,), chunks=(3,), dtype=point_t, fill_value=points_fill[()])
    p.attrs["_ARRAY_DIMENSIONS"] = ["n"]
else:
    g = zarr.open_group(path, mode="w", zarr_format=3)
    a = g.create_array("rec", shape=(5, 3), chunks=(2, 2), dtype=rec_t,
                       fill_value=np.zeros((), rec_t)[()], dimension_names=["y", "x"])
    p = g.create_array("points", shape=(7,), chunks=(3,), dtype=point_t,
                       fill_value=points_fill[()], dimension_names=["n"])
a[:4, :] = rec
p[:2] = np.array([(1, 1.5), (2, 2.5)], dtype=point_t)
for name in ("rec", "points"):
    np.save(path + "." + name + ".npy", g[name][...])
if v2:
    zarr.consolidate_metadata(path)
"#;

/// Writes the netCDF-4 file argv[2] holding the values saved beside the store argv[1], under
/// compound types netCDF can hold (see the module's doc).
const ORACLE: &str = r#"
import sys, numpy as np, netCDF4
store, out = sys.argv[1], sys.argv[2]
def nc_dtype(dt):
    fields = []
    for name in dt.names:
        sub = dt[name]
        base, shape = (sub.base, sub.shape)
        k = base.kind
        if k == "V" and base.names:
            fields.append((name, nc_dtype(base), shape) if shape else (name, nc_dtype(base)))
            continue
        if k == "S":
            f, extra = "S1", (base.itemsize,) if base.itemsize > 1 else ()
        elif k == "U":
            f, extra = "S1", (base.itemsize,)
        elif k == "V":
            f, extra = "u1", (base.itemsize,)
        elif k == "c":
            f, extra = "f%d" % (base.itemsize // 2), (2,)
        elif k in "Mm":
            f, extra = "i8", ()
        elif k == "b":
            f, extra = "u1", ()
        elif k == "f" and base.itemsize == 2:
            f, extra = "f4", ()
        else:
            f, extra = base.newbyteorder("=").str, ()
        full = shape + extra
        fields.append((name, f, full) if full else (name, f))
    return np.dtype(fields, align=True)
def convert(a, dt):
    out = np.zeros(a.shape, dt)
    for name in dt.names:
        src, base = a[name], a.dtype[name].base
        k = base.kind
        if k == "V" and base.names:
            out[name] = convert(src, dt[name].base)
        elif k == "U":
            text = [s.encode("utf-8").ljust(base.itemsize, b"\0") for s in src.ravel()]
            out[name] = np.frombuffer(b"".join(text), "S1").reshape(out[name].shape)
        elif k in "SV":
            out[name] = np.frombuffer(src.tobytes(), "S1" if k == "S" else "u1").reshape(out[name].shape)
        elif k == "c":
            out[name] = np.stack([src.real, src.imag], axis=-1)
        elif k in "Mm":
            out[name] = src.view("i8")
        else:
            out[name] = src.astype(dt[name].base)
    return out
with netCDF4.Dataset(out, "w") as ds:
    ds.createDimension("n", 7); ds.createDimension("y", 5); ds.createDimension("x", 3)
    # Pure Zarr has no creation order: the library lists arrays by name.
    for name, dims in (("points", ("n",)), ("rec", ("y", "x"))):
        a = np.load(store + "." + name + ".npy")
        dt = nc_dtype(a.dtype)
        for field in dt.names:
            if dt[field].base.names:
                ds.createCompoundType(dt[field].base, name + "_" + field + "_t")
        t = ds.createCompoundType(dt, name + "_t")
        v = ds.createVariable(name, t, dims)
        # Written as char arrays, as they are (netCDF4-python would cast them to strings).
        v.set_auto_chartostring(False)
        v[...] = convert(a, dt)
"#;

/// Reads `rec` and `points` from argv[1] (through the library) and argv[2] (the oracle file)
/// with netCDF4-python, whole, in parts and strided; prints how they differ (nothing when they
/// do not), then what the library says when `bad` (if there) is read.
const COMPARE: &str = r#"
import sys, numpy as np, netCDF4
ours, truth = netCDF4.Dataset(sys.argv[1]), netCDF4.Dataset(sys.argv[2])
for name, parts in (("rec", [np.s_[...], np.s_[1:3, 1], np.s_[::2, ::2], np.s_[4, :]]),
                    ("points", [np.s_[...], np.s_[2:], np.s_[::3]])):
    a, b = ours[name], truth[name]
    if a.dtype != b.dtype:
        print(name, "dtype", a.dtype, "!=", b.dtype)
    for part in parts:
        x, y = a[part], b[part]
        if x.dtype != y.dtype or x.shape != y.shape or x.tobytes() != y.tobytes():
            print(name, part, "reads", x, "not", y)
if "bad" in ours.variables:
    try:
        ours["bad"][...]
        print("bad read")
    except Exception as e:
        print("bad:", e)
"#;

/// With netCDF4-python through the library: writes two points into `points[3:5]`, copies
/// `rec[1:3, 0]` into `rec[4, 0:2]` (a chunk never written), and sets an attribute.
const WRITE_BACK: &str = r#"
import sys, numpy as np, netCDF4
with netCDF4.Dataset(sys.argv[1], "a") as ds:
    p = ds["points"]
    p[3:5] = np.array([(7, 7.5), (8, -8.5)], dtype=p.dtype)
    r = ds["rec"]
    r.set_auto_chartostring(False)
    r[4, 0:2] = r[1:3, 0]
    # Three characters for a field of two: refused, nothing stored.
    long = r[0, 0]
    long["u"] = np.frombuffer(b"abc".ljust(8, b"\0"), "S1")
    try:
        r[4, 2] = long
        print("too long text written")
    except Exception as e:
        pass
    # Past the range of a 16-bit float: stored as an infinity, as numpy stores it, and told.
    big = r[0, 0]
    big["h"] = 70000
    try:
        r[4, 2] = big
        print("no range error")
    except Exception as e:
        if "not representable" not in str(e):
            print(e)
    ds.setncattr("note", "written")
    ds.renameVariable("points", "pts")
"#;

/// With zarr-python: prints how the arrays of argv[1] differ from the values saved beside it
/// with the writes of [`WRITE_BACK`] applied (nothing when they do not), dtypes included.
const READ_BACK: &str = r#"
import json, os, sys, warnings, numpy as np, zarr
warnings.simplefilter("ignore")
path, before = sys.argv[1], sys.argv[2]
g = zarr.open_group(path, mode="r")
points = np.load(path + ".points.npy")
points[3:5] = np.array([(7, 7.5), (8, -8.5)], dtype=points.dtype)
rec = np.load(path + ".rec.npy")
rec[4, 0:2] = rec[1:3, 0]
rec[4, 2] = rec[0, 0]
rec[4, 2]["h"] = np.inf
# The renamed array's metadata says what it said, dtype and fill value alike.
for meta in (".zarray", "zarr.json"):
    if os.path.exists(os.path.join(before, meta)):
        old = json.load(open(os.path.join(before, meta)))
        new = json.load(open(os.path.join(path, "pts", meta)))
        for key in ("dtype", "data_type", "fill_value"):
            if old.get(key) != new.get(key):
                print(key, new.get(key), "was", old.get(key))
if os.path.exists(os.path.join(path, ".zmetadata")):
    listed = json.load(open(os.path.join(path, ".zmetadata")))["metadata"]
    if listed.get("pts/.zarray", {}).get("dtype") != json.load(open(os.path.join(before, ".zarray")))["dtype"]:
        print("consolidated", listed.get("pts/.zarray"))
    g = zarr.open_consolidated(path, mode="r")
for name, want in (("pts", points), ("rec", rec)):
    got = g[name][...]
    if got.dtype != want.dtype:
        print(name, "dtype", got.dtype, "!=", want.dtype)
    elif not (got == want).all():
        print(name, "reads", got, "not", want)
if g.attrs.get("note") != "written":
    print("attributes", dict(g.attrs))
"#;

/// Writes the store (and the values beside it) in Zarr format `format`, and the oracle file.
fn write(dir: &Path, format: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let store = dir.join("records.zarr");
    let env = if format == "2" { "zarr2" } else { "zarr3" };
    common::python::run_script(env, WRITE, &[store.to_str().unwrap(), format])
        .unwrap_or_else(|e| panic!("v{format}: {e}"));
    let oracle = dir.join("records.nc");
    let args = [store.to_str().unwrap(), oracle.to_str().unwrap()];
    common::python::run_script("netcdf4", ORACLE, &args).unwrap_or_else(|e| panic!("{e}"));
    (store, oracle)
}

/// zarr-python 3.1's `structured` data type in the form of its successor, `struct`.
fn as_struct(data_type: &serde_json::Value) -> serde_json::Value {
    if data_type["name"] != "structured" {
        return data_type.clone();
    }
    let fields = data_type["configuration"]["fields"].as_array().unwrap();
    let fields: Vec<_> = fields
        .iter()
        .map(|f| serde_json::json!({"name": f[0], "data_type": as_struct(&f[1])}))
        .collect();
    serde_json::json!({"name": "struct", "configuration": {"fields": fields}})
}

/// The dump without its first line (which names the dataset).
fn body(dump: &str) -> &str {
    dump.split_once('\n').map_or("", |(_, rest)| rest)
}

fn compare(ours: &str, truth: &Path) -> String {
    common::python::run_netcdf4_preloaded(COMPARE, &[ours, truth.to_str().unwrap()])
        .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn records_read_as_compound_values() {
    if common::reference_only() {
        return;
    }
    for format in ["2", "3"] {
        let dir = scratch("records");
        let (store, oracle) = write(dir.path(), format);
        let truth = ncdump(Host::Stock, &[], oracle.to_str().unwrap()).unwrap();
        assert!(truth.contains("compound rec_t"), "{truth}");
        let dump = ncdump(Host::Ours, &[], &url(&store, "zarr,file"))
            .unwrap_or_else(|e| panic!("v{format}: {e}"));
        assert_eq!(body(&dump), body(&truth), "v{format}: ours\n{dump}");
        if format == "2" {
            // The library's nc_reclaim_data stands in for libnetcdf's on its datasets.
            let on_410 = ncdump(Host::OursOn410, &[], &url(&store, "zarr,file")).unwrap();
            assert_eq!(body(&on_410), body(&truth), "on 4.10.1");
        }

        let copy = dir.path().join("copy.nc");
        let copied = run(
            Host::Ours,
            "nccopy",
            // Without blosc, which this HDF5 has no filter for.
            &[
                "-F",
                "none",
                &url(&store, "zarr,file"),
                copy.to_str().unwrap(),
            ],
        );
        assert!(copied.success(), "v{format}: {}", copied.describe());
        let copy_dump = ncdump(Host::Stock, &[], copy.to_str().unwrap()).unwrap();
        assert_eq!(body(&copy_dump), body(&truth), "v{format}: nccopy");

        if format == "3" {
            // zarr-python's newer form of the same: `struct`, fields as objects, the fill
            // value field by field.
            let struct_store = dir.path().join("struct.zarr");
            common::copy_tree(&store, &struct_store);
            for (array, fill) in [
                ("rec", serde_json::json!({})),
                ("points", serde_json::json!({"x": -1, "y": 0.5})),
            ] {
                let path = struct_store.join(array).join("zarr.json");
                let mut meta: serde_json::Value =
                    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
                meta["data_type"] = as_struct(&meta["data_type"]);
                meta["fill_value"] = fill;
                std::fs::write(&path, meta.to_string()).unwrap();
            }
            let dump = ncdump(Host::Ours, &[], &url(&struct_store, "zarr,file")).unwrap();
            assert_eq!(body(&dump), body(&truth), "struct: ours\n{dump}");
        }

        let differences = compare(store.to_str().unwrap(), &oracle);
        assert_eq!(differences, "", "v{format}");
        let zipped = dir.path().join("records.zip");
        common::python::zip_directory(&store, &zipped, ".").unwrap();
        let through_zip = compare(&url(&zipped, "zarr,zip"), &oracle);
        assert_eq!(through_zip, "", "v{format} from a zip archive");

        let before = dir.path().join("points-before");
        common::copy_tree(&store.join("points"), &before);
        let wrote = common::python::run_netcdf4_preloaded(WRITE_BACK, &[store.to_str().unwrap()])
            .unwrap_or_else(|e| panic!("v{format}: {e}"));
        assert_eq!(wrote, "", "v{format}");
        let env = if format == "2" { "zarr2" } else { "zarr3" };
        let args = [store.to_str().unwrap(), before.to_str().unwrap()];
        let read_back = common::python::run_script(env, READ_BACK, &args)
            .unwrap_or_else(|e| panic!("v{format}: {e}"));
        assert_eq!(read_back, "", "v{format}: zarr-python reads back");
    }
}

#[test]
fn records_netcdf_cannot_hold_leave_the_other_arrays_readable() {
    if common::reference_only() {
        return;
    }
    let dir = scratch("records-bad");
    let (store, oracle) = write(dir.path(), "2");
    // An array added behind zarr-python's back: its consolidated metadata would not list it.
    std::fs::remove_file(store.join(".zmetadata")).unwrap();
    let bad = store.join("bad");
    std::fs::create_dir(&bad).unwrap();
    let zarray = std::fs::read_to_string(store.join("points/.zarray")).unwrap();
    let mut meta: serde_json::Value = serde_json::from_str(&zarray).unwrap();
    meta["dtype"] = serde_json::json!([["x", "<i2"], ["o", "|O"]]);
    meta["fill_value"] = serde_json::Value::Null;
    std::fs::write(bad.join(".zarray"), meta.to_string()).unwrap();
    std::fs::write(bad.join(".zattrs"), r#"{"_ARRAY_DIMENSIONS": ["n"]}"#).unwrap();
    let said = compare(store.to_str().unwrap(), &oracle);
    assert!(
        said.starts_with("bad:") && said.contains("NCZarr error"),
        "{said}"
    );
    let refused = common::python::netcdf4_writes(&store).unwrap();
    assert!(
        refused.is_some_and(|why| why.contains("Write to read only")),
        "a dataset with records that cannot be read was opened for writing"
    );
    let dumped = run(
        Host::Ours,
        "ncdump",
        &["-v", "bad", &url(&store, "zarr,file")],
    );
    assert!(
        dumped.refused_saying("numpy objects in records are not read"),
        "{}",
        dumped.describe()
    );
}
