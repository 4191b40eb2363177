//! numpy's fixed-width unicode strings (`"dtype": "<U<n>"`, `">U<n>"`), which zarr-python
//! writes for `str` arrays of a fixed width and xarray for such coordinates, written in place
//! through libnetcdf's C API (`nc_put_vara_string`, the library preloaded) in a directory, a
//! zip archive and S3 (s3s-fs on loopback):
//! - strings longer than the stored width, non-ASCII and beyond the Basic Multilingual Plane,
//!   are kept whole: the stored chunks are rewritten wider, the dtype follows in its byte
//!   order, and zarr-python and xarray read back exactly what was written;
//! - a fill value the array's metadata gives (`"NA"`) is kept when that metadata is written
//!   again, for numpy unicode and for byte strings (`|S`, stored in base64);
//! - a string that is not UTF-8 cannot be stored as code points: `NC_EINVAL`, nothing changed.

mod common;

use common::s3::{BUCKET, Kind, Server};
use common::{Host, run_env, scratch, url};
use serde_json::{Value, json};
use std::path::Path;

/// Writes the dataset at argv[1] with xarray and zarr-python (format 2).
const WRITE: &str = r#"
import sys, numpy as np, xarray as xr, zarr
path = sys.argv[1]
v2 = zarr.__version__.startswith("2")
fmt = {} if v2 else {"zarr_format": 2}
xr.Dataset(coords={"name": ("x", np.array(["ab", "c"], dtype="<U2"))}).to_zarr(path, **fmt)
root = zarr.open_group(path, mode="a", **({} if v2 else {"use_consolidated": False}))
def make(name, dtype, n, fill):
    if v2:
        a = root.create_dataset(name, shape=(n,), chunks=(4,), dtype=dtype, fill_value=fill)
    else:
        a = root.create_array(name, shape=(n,), chunks=(4,), dtype=dtype, fill_value=fill,
                              compressors=None)
    a.attrs["_ARRAY_DIMENSIONS"] = ["n%d" % n]
    return a
make("u", "<U3", 6, "NA")[0:4] = np.array(["ab", "c", "d\u00e9f", "xyz"], dtype="<U3")
make("be", ">U2", 3, "NA")[0:2] = np.array(["ab", "c"], dtype=">U2")
make("s", "|S2", 3, b"NA")[0:2] = np.array([b"ab", b"c"], dtype="|S2")
zarr.consolidate_metadata(path)
"#;

/// Through libnetcdf's C API (the system's, with whatever LD_PRELOAD holds): opens argv[1] for
/// writing and puts each `[variable, index, hex bytes]` of argv[2] with `nc_put_vara_string`;
/// prints each put's status as JSON, then the close's.
const PUT: &str = r#"
import ctypes, json, sys
nc = ctypes.CDLL("libnetcdf.so.19")
nc.nc_strerror.restype = ctypes.c_char_p
ncid = ctypes.c_int()
r = nc.nc_open(sys.argv[1].encode(), 1, ctypes.byref(ncid))
if r:
    sys.exit(f"nc_open: {nc.nc_strerror(r).decode()}")
status = []
for var, index, value in json.loads(sys.argv[2]):
    varid = ctypes.c_int()
    r = nc.nc_inq_varid(ncid, var.encode(), ctypes.byref(varid))
    if r:
        sys.exit(f"{var}: {nc.nc_strerror(r).decode()}")
    start, count = (ctypes.c_size_t * 1)(index), (ctypes.c_size_t * 1)(1)
    text = (ctypes.c_char_p * 1)(bytes.fromhex(value))
    status.append(nc.nc_put_vara_string(ncid, varid, start, count, text))
status.append(nc.nc_close(ncid))
print(json.dumps(status))
"#;

/// Prints, as JSON, each array's values as zarr-python reads them (bytes as text), its dtype
/// and fill value, the `name` coordinate as xarray reads it (from the consolidated metadata),
/// and the dtype of `u` in the consolidated metadata, of the store at argv[1].
const READ: &str = r#"
import json, sys, numpy as np, zarr, xarray as xr
path = sys.argv[1]
v2 = zarr.__version__.startswith("2")
root = zarr.open_group(path, mode="r", **({} if v2 else {"zarr_format": 2}))
out = {}
for k in ["name", "u", "be", "s"]:
    meta = json.load(open(f"{path}/{k}/.zarray"))
    out[k] = {"values": [x.decode(errors="replace") if isinstance(x, bytes) else x
                         for x in np.asarray(root[k][...]).tolist()],
              "dtype": meta["dtype"], "fill_value": meta["fill_value"]}
out["xarray name"] = [str(x) for x in xr.open_zarr(path).name.values]
out["consolidated"] = json.load(open(f"{path}/.zmetadata"))["metadata"]["u/.zarray"]["dtype"]
print(json.dumps(out))
"#;

/// What the C API writes: longer than every width, non-ASCII, beyond the BMP, into a chunk
/// never written (beside the fill), and into a coordinate xarray wrote.
const PUTS: [(&str, usize, &str); 5] = [
    ("u", 1, "longer \u{fc}n\u{ef}code \u{1F600}"),
    ("u", 5, "e"),
    ("be", 0, "wider"),
    ("s", 0, "much longer"),
    ("name", 1, "\u{6771}\u{4eac}\u{90fd}"),
];

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Puts `puts` into the dataset at `target` through the C API; each status, then the close's.
fn put(target: &str, puts: &[(&str, usize, Vec<u8>)], env: &[(&str, Option<&str>)]) -> Vec<i32> {
    let python = common::python::interpreter("zarr2").unwrap_or_else(|e| panic!("{e}"));
    let puts: Vec<Value> = puts
        .iter()
        .map(|(var, index, text)| json!([var, index, hex(text)]))
        .collect();
    let puts = Value::from(puts).to_string();
    let r = run_env(Host::Ours, &python, &["-c", PUT, target, &puts], env);
    let out = r.output().unwrap_or_else(|e| panic!("{e}"));
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

fn read(env: &str, store: &Path) -> Value {
    let out = common::python::run_script(env, READ, &[store.to_str().unwrap()])
        .unwrap_or_else(|e| panic!("{e}"));
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// Unpacks the zip archive `zip` (objects at its top) into the directory `to`.
fn unzip(zip: &Path, to: &Path) {
    const UNZIP: &str = "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])";
    common::python::run_script(
        "zarr2",
        UNZIP,
        &[zip.to_str().unwrap(), to.to_str().unwrap()],
    )
    .unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn numpy_unicode_strings_are_written_in_place_whole() {
    if common::reference_only() {
        // netcdf-c writes no numpy unicode strings: nothing to compare against.
        return;
    }
    let dir = scratch("unicode");
    let server = Server::start(Kind::S3sFs);
    let endpoint = server.endpoint();
    let s3_env = common::s3::tool_env(&endpoint);
    let puts: Vec<(&str, usize, Vec<u8>)> = PUTS
        .iter()
        .map(|(var, i, text)| (*var, *i, text.as_bytes().to_vec()))
        .collect();
    for env in ["zarr2", "zarr3"] {
        for storage in ["file", "zip", "s3"] {
            let store = dir.path().join(format!("{env}-{storage}.zarr"));
            common::python::run_script(env, WRITE, &[store.to_str().unwrap()])
                .unwrap_or_else(|e| panic!("{e}"));
            let before = read(env, &store);
            if storage == "file" {
                // The fill value is the `_FillValue`, as xarray reads it.
                let dump = common::ncdump(Host::Ours, &["-h"], &url(&store, "zarr,file"))
                    .unwrap_or_else(|e| panic!("{e}"));
                for var in ["u", "be", "s"] {
                    let att = format!("string {var}:_FillValue = \"NA\" ;");
                    assert!(dump.contains(&att), "{env}: {dump}");
                }
            }
            // Where the store is written, and where zarr-python then reads it.
            let (target, tool_env, written) = match storage {
                "file" => (url(&store, "zarr,file"), vec![], store.clone()),
                "zip" => {
                    let zip = dir.path().join(format!("{env}.zip"));
                    common::python::zip_directory(&store, &zip, ".")
                        .unwrap_or_else(|e| panic!("{e}"));
                    (url(&zip, "zarr,zip"), vec![], zip)
                }
                _ => {
                    let key = format!("unicode/{env}");
                    common::copy_tree(&store, &server.bucket_dir().join(&key));
                    let target = format!("s3://{BUCKET}/{key}#mode=zarr,s3");
                    (target, s3_env.clone(), server.bucket_dir().join(&key))
                }
            };
            let status = put(&target, &puts, &tool_env);
            assert_eq!(status, [0; PUTS.len() + 1], "{env} {storage}: {status:?}");
            let after_store = if storage == "zip" {
                let unpacked = dir.path().join(format!("{env}-unzipped.zarr"));
                unzip(&written, &unpacked);
                unpacked
            } else {
                written
            };
            let after = read(env, &after_store);
            let mut want = before.clone();
            for (var, index, text) in PUTS {
                want[var]["values"][index] = json!(text);
            }
            for var in ["name", "u", "be", "s"] {
                assert_eq!(
                    after[var]["values"], want[var]["values"],
                    "{env} {storage} {var}: {after}"
                );
                // The fill value the metadata gave is kept.
                assert_eq!(
                    after[var]["fill_value"], before[var]["fill_value"],
                    "{env} {storage} {var}"
                );
            }
            assert_eq!(
                after["xarray name"], want["name"]["values"],
                "{env} {storage}"
            );
            // The dtype follows the longest string, in the array's own kind and byte order.
            let width = |var: &str, kind: &str| -> usize {
                let dtype = after[var]["dtype"].as_str().unwrap();
                let (prefix, n) = dtype.split_at(2);
                assert_eq!(prefix, kind, "{env} {storage} {var}: {dtype}");
                n.parse().unwrap()
            };
            assert!(width("u", "<U") >= PUTS[0].2.chars().count());
            assert!(width("be", ">U") >= 5);
            assert!(width("s", "|S") >= 11);
            assert!(width("name", "<U") >= 3);
        }
    }
}

#[test]
fn a_string_that_is_not_utf8_is_refused_as_numpy_unicode() {
    if common::reference_only() {
        return;
    }
    let dir = scratch("unicode-invalid");
    let store = dir.path().join("x.zarr");
    common::python::run_script("zarr2", WRITE, &[store.to_str().unwrap()])
        .unwrap_or_else(|e| panic!("{e}"));
    let before = read("zarr2", &store);
    let target = url(&store, "zarr,file");
    // NC_EINVAL for the unicode array; byte strings take any bytes.
    let status = put(
        &target,
        &[("u", 0, b"\xff\xfe".to_vec()), ("s", 2, b"\xff".to_vec())],
        &[],
    );
    assert_eq!(status, [-36, 0, 0]);
    let after = read("zarr2", &store);
    assert_eq!(after["u"], before["u"], "the unicode array changed");
    assert_eq!(after["s"]["values"][2], json!("\u{fffd}"), "{after}");
}
