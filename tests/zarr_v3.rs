//! Zarr v3 (`zarr.json`), what zarr-python 3 and xarray write by default, read through libnetcdf
//! as zarr-python reads it: every data type netCDF has, the codecs zarr-python writes (bytes of
//! either order, transpose, gzip, zstd, blosc, crc32c, sharding with the index at either end and
//! inner chunks never written), both chunk key encodings, `dimension_names` (named or not),
//! nested groups, 0-d arrays, zarr-python's inline consolidated metadata, and xarray's
//! `_FillValue` encoding; from a directory, a zip archive and S3. Features we do not serve fail
//! their array alone; a damaged shard fails its read with an error; the datasets open read-only.

mod common;

use common::dump::has_line;
use common::s3::{BUCKET, Kind, Server};
use common::{Host, ncdump, run, scratch, url};
use serde_json::Value;
use std::path::Path;

/// Prints, as JSON, the flat raw values (no masking) of the variables argv[2] (comma separated,
/// `group/name` for nested ones) of the dataset at argv[1] as netCDF4-python reads them.
const READ_NETCDF4: &str = r#"
import json, sys, numpy as np, netCDF4
with netCDF4.Dataset(sys.argv[1]) as ds:
    ds.set_auto_maskandscale(False)
    out = {}
    for name in sys.argv[2].split(","):
        node = ds
        for part in name.split("/")[:-1]:
            node = node.groups[part]
        node.set_auto_maskandscale(False)
        v = np.asarray(node.variables[name.split("/")[-1]][...])
        out[name] = (v.astype(str).ravel().tolist() if v.dtype.kind in "UOS"
                     else v.astype("f8").ravel().tolist())
    # Parts of shards, as tests/py/write_zarr_v3.py reads them.
    out["sharded[1:10:3, 4]"] = np.asarray(ds["sharded"][1:10:3, 4]).astype("f8").tolist()
    out["start[3, 1:5]"] = np.asarray(ds["start"][3, 1:5]).astype("f8").tolist()
print(json.dumps(out))
"#;

/// xarray's own Zarr v3 dataset: coordinates, a datetime axis, a masked float, an integer
/// with a `_FillValue` other than its `fill_value`, strings, complex numbers with a
/// `_FillValue`; prints nothing.
const WRITE_XARRAY: &str = r#"
import sys, numpy as np, pandas as pd, xarray as xr
ds = xr.Dataset(
    {"temp": (("time", "lat"), np.array([[1.5, np.nan], [3, 4]], dtype="f4"), {"units": "K"}),
     "count": (("time",), np.array([1, -1], dtype="i2"))},
    coords={"time": pd.date_range("2020-01-01", periods=2), "lat": [10.0, 20.0],
            "name": ("lat", ["a", "bb"])},
    attrs={"title": "xarray v3"})
ds["count"].encoding["_FillValue"] = -1
ds["wave"] = (("time",), np.array([1 + 2j, 3j], dtype="c16"))
ds["wave"].encoding["_FillValue"] = complex(-1, -1)
ds.to_zarr(sys.argv[1], mode="w", zarr_format=3, consolidated=True)
"#;

const ARRAYS: &str = "plain,gz,blosc,big,fortran,v2keys,sharded,start,text,fixed,flags,vbytes,\
                      point,sub/deep,sub/unwritten,tshard,tinner,twice,after,cshard,half";

fn netcdf4(target: &str) -> Value {
    common::python::netcdf4_json(READ_NETCDF4, &[target, ARRAYS])
}

/// Writes the store of `tests/py/write_zarr_v3.py`; returns the values zarr-python reads.
fn write(store: &Path, consolidated: bool) -> Value {
    let how = if consolidated {
        "consolidated"
    } else {
        "plain"
    };
    let script = common::repo_root().join("tests/py/write_zarr_v3.py");
    let args = [script.to_str().unwrap(), store.to_str().unwrap(), how];
    let written = common::python::run("zarr3", &args).unwrap_or_else(|e| panic!("{e}"));
    serde_json::from_str(&written).unwrap_or_else(|e| panic!("{e}: {written}"))
}

#[test]
fn zarr_python_3_stores_read_as_zarr_python_reads_them() {
    if common::reference_only() {
        // netcdf-c reads no Zarr v3 (4.9.0 opens it as an empty dataset, 4.10.1 refuses it).
        return;
    }
    let dir = scratch("zarr-v3");
    let server = Server::start(Kind::S3sFs);
    let endpoint = server.endpoint();
    let s3_env = common::s3::tool_env(&endpoint);
    for consolidated in [false, true] {
        let store = dir.path().join(format!("v3-{consolidated}.zarr"));
        let written = write(&store, consolidated);
        if consolidated {
            // Arrays and groups come from the root's inline metadata alone: with every other
            // zarr.json gone, the dataset still opens and lists them.
            for entry in std::fs::read_dir(&store).unwrap() {
                let p = entry.unwrap().path();
                if p.is_dir() {
                    for meta in [p.join("zarr.json"), p.join("deep/zarr.json")] {
                        let _ = std::fs::remove_file(meta);
                    }
                }
            }
        }
        let u = url(&store, "zarr,file");
        let dump = ncdump(Host::Ours, &["-h"], &u).unwrap_or_else(|e| panic!("{e}"));
        for line in [
            "float plain(y, x) ;",
            "plain:units = \"K\" ;",
            "double big(y, _Anonymous_Dim_6) ;",
            "float sharded(t, x) ;",
            "string text(n) ;",
            "string fixed(n) ;",
            "string vbytes(n) ;",
            "int point ;",
            ":title = \"v3 sample\" ;",
            ":n = 1, 2 ;",
            "group: sub {",
            ":kind = \"nested\" ;",
            "double deep(x2) ;",
            "short unwritten(n) ;",
        ] {
            assert!(has_line(&dump, line), "{consolidated}: {line}\n{dump}");
        }
        // Every array has a fill value in Zarr v3 (zarr-python's default 0): none of them is
        // a `_FillValue` (xarray masks none of them either).
        assert!(!dump.contains("_FillValue"), "{dump}");

        let zip = dir.path().join(format!("v3-{consolidated}.zip"));
        common::python::zip_directory(&store, &zip, ".").unwrap_or_else(|e| panic!("{e}"));
        for target in [u.clone(), url(&zip, "zarr,zip")] {
            let read = netcdf4(&target);
            let parts = ["sharded[1:10:3, 4]", "start[3, 1:5]"];
            for name in ARRAYS.split(',').chain(parts) {
                assert!(read[name].is_array(), "{target} {name}: {read}");
                assert_eq!(read[name], written[name], "{target} {name}");
            }
        }

        // From S3 (s3s-fs on loopback) and the zip archive, stock `ncdump` dumps what it dumps
        // from the directory.
        let key = format!("v3/{consolidated}");
        common::copy_tree(&store, &server.bucket_dir().join(&key));
        let s3 = format!("s3://{BUCKET}/{key}#mode=zarr,s3");
        let vars = ARRAYS.replace("sub/", "");
        let from_s3 = common::run_env(Host::Ours, "ncdump", &["-v", &vars, &s3], &s3_env);
        let from_zip = ncdump(Host::Ours, &["-v", &vars], &url(&zip, "zarr,zip"))
            .unwrap_or_else(|e| panic!("{e}"));
        let from_file = ncdump(Host::Ours, &["-v", &vars], &u).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            common::dump::normalise_name(&from_s3.output().unwrap_or_else(|e| panic!("{e}"))),
            common::dump::normalise_name(&from_file),
            "{consolidated}: S3"
        );
        assert_eq!(
            common::dump::normalise_name(&from_zip),
            common::dump::normalise_name(&from_file),
            "{consolidated}: zip"
        );

        // Half floats, which netCDF has no type for, are floats.
        assert!(has_line(&dump, "float half(h) ;"), "{dump}");

        let opened =
            nczarr_rs::api::Dataset::open(&nczarr_rs::url::DatasetUrl::parse(&u).unwrap(), true)
                .expect("opens for writing");
        // Its complex arrays keep it read-only (as in Zarr v2); so do, when they are gone,
        // the objects its consolidated metadata lists (writing it back would lose them).
        let refused = opened.check_writable().unwrap_err().to_string();
        let why = if consolidated {
            "consolidated metadata does not match its objects"
        } else {
            "complex"
        };
        assert!(refused.contains(why), "{refused}");
    }
}

#[test]
fn xarray_v3_datasets_read_with_xarrays_fill_values() {
    if common::reference_only() {
        return;
    }
    let dir = scratch("zarr-v3-xarray");
    let store = dir.path().join("xr.zarr");
    common::python::run_script("zarr3", WRITE_XARRAY, &[store.to_str().unwrap()])
        .unwrap_or_else(|e| panic!("{e}"));
    // By plain path, as the library opens local datasets.
    let dump = ncdump(Host::Ours, &[], store.to_str().unwrap()).unwrap_or_else(|e| panic!("{e}"));
    for line in [
        // xarray stores a float's `_FillValue` as the base64 text of a double.
        "temp:_FillValue = NaNf ;",
        "temp:units = \"K\" ;",
        // An integer's as itself, beside a `fill_value` of 0.
        "count:_FillValue = -1s ;",
        "count = 1, _ ;",
        "temp =",
        "1.5, _,",
        "name = \"a\", \"bb\" ;",
        "time:units = \"days since 2020-01-01 00:00:00\" ;",
        "time = 0, 1 ;",
        ":title = \"xarray v3\" ;",
        "double wave(time, _pfnc_complex) ;",
    ] {
        assert!(has_line(&dump, line), "{line}\n{dump}");
    }
    // A complex number's (a pair of base64 texts) is no `_FillValue` of its parts.
    assert!(!dump.contains("wave:_FillValue"), "{dump}");
}

/// A damaged shard, a shard index pointing outside its shard and a corrupt `zarr.json` are
/// errors of the read or the open, never a crash or wrong values.
#[test]
fn damaged_v3_stores_are_errors() {
    if common::reference_only() {
        return;
    }
    let dir = scratch("zarr-v3-damaged");
    let store = dir.path().join("v3.zarr");
    write(&store, false);
    let u = url(&store, "zarr,file");

    // Inner chunk 0 (rows 4-5, columns 0-2) of the second shard made undecodable: a column
    // through inner chunks left whole still reads (only the inner chunks it needs are read
    // and decoded, in place and row by row), a read through the broken one fails.
    let shard = store.join("sharded/c/1/0");
    let mut bytes = std::fs::read(&shard).unwrap();
    let entry = bytes.len() - 4 - 64;
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize;
    let (offset, nbytes) = (word(entry), word(entry + 8));
    bytes[offset..offset + nbytes].fill(0xaa);
    std::fs::write(&shard, &bytes).unwrap();
    let column = common::python::run_netcdf4_preloaded(
        "import sys, json, netCDF4\n\
         v = netCDF4.Dataset(sys.argv[1])['sharded']\n\
         print(json.dumps([float(x) for x in v[4:8, 4]]))\n\
         try:\n    v[4:8, 1]\n    print('read')\n\
         except Exception as e:\n    print('refused', e)",
        &[&u],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let mut lines = column.lines();
    assert_eq!(lines.next(), Some("[4.0, 10.0, 16.0, 22.0]"), "{column}");
    assert!(
        lines.next().is_some_and(|l| l.starts_with("refused")),
        "{column}"
    );

    let mut bytes = std::fs::read(&shard).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff; // the index's checksum
    std::fs::write(&shard, &bytes).unwrap();
    let read = run(Host::Ours, "ncdump", &["-v", "sharded", &u]);
    assert!(
        !read.crashed() && read.refused_saying("checksum"),
        "{}",
        read.describe()
    );

    // The shard indexed at its start: its first inner chunk's offset moved far past the end
    // (the index's checksum made to match).
    let start = store.join("start/c/0/0");
    let mut bytes = std::fs::read(&start).unwrap();
    bytes[..8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let sum = crc32c_of(&bytes[..64]);
    bytes[64..68].copy_from_slice(&sum.to_le_bytes());
    std::fs::write(&start, &bytes).unwrap();
    let read = run(Host::Ours, "ncdump", &["-v", "start", &u]);
    assert!(
        !read.crashed() && read.refused_saying("outside the shard"),
        "{}",
        read.describe()
    );
    // The other arrays still read.
    let plain = ncdump(Host::Ours, &["-v", "plain"], &u).unwrap_or_else(|e| panic!("{e}"));
    assert!(plain.contains("18, 19, 20, 21, 22, 23 ;"), "{plain}");

    // A shard file a terabyte long (a hole after its index and inner chunks): a read of a
    // part of it is refused by the object limit, never an allocation of its length.
    let holed = dir.path().join("holed.zarr");
    write(&holed, false);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(holed.join("start/c/0/0"))
        .unwrap();
    file.set_len(1 << 40).unwrap();
    let holed_url = url(&holed, "zarr,file");
    let part = common::python::run_netcdf4_preloaded(
        "import sys, netCDF4\n\
         v = netCDF4.Dataset(sys.argv[1])['start']\n\
         try:\n    v[3, 1:5]\n    print('read')\n\
         except Exception as e:\n    print('refused', e)",
        &[&holed_url],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(part.starts_with("refused"), "{part}");

    std::fs::write(
        store.join("gz/zarr.json"),
        b"{\"zarr_format\": 3, \"node_type\":",
    )
    .unwrap();
    let open = run(Host::Ours, "ncdump", &["-h", &u]);
    assert!(
        !open.crashed() && open.refused_saying("gz/zarr.json"),
        "{}",
        open.describe()
    );
}

/// CRC-32C (Castagnoli), bit by bit: the test's own, independent of the library's.
fn crc32c_of(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0x82f6_3b78
            } else {
                crc >> 1
            };
        }
    }
    !crc
}
