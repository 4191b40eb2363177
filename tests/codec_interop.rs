//! Codec interoperability through the real tools, both ways:
//! - arrays written by zarr-python 2 and 3 (numcodecs) with every codec and parameter set we
//!   read are dumped by stock `ncdump` with the library preloaded and must hold the values
//!   zarr-python wrote (tests/py/codec_cases.py);
//! - variables written by stock `ncgen` through the library with every filter the netCDF API
//!   offers are read back by zarr-python 2 and 3 and by netcdf-c 4.10.1 with its codec plugins,
//!   and must hold the CDL's values;
//! - stores netcdf-c 4.10.1 writes with its plugins (including its `shuffle` with
//!   `"elementsize": 0`) are read with the CDL's values;
//! - an unknown codec fails only its variable, with NC_ENOFILTER and the codec's name;
//! - values netCDF4-python writes into an array zarr-python stored with `fixedscaleoffset`
//!   are stored as numcodecs stores them.

mod common;

use common::{Host, repo_root, run, scratch, url};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

type Values = BTreeMap<String, Vec<f64>>;

fn cases_script() -> PathBuf {
    repo_root().join("tests/py/codec_cases.py")
}

fn run_python(env: &str, args: &[&str]) -> Values {
    let script = cases_script();
    let mut all = vec![script.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = common::python::run(env, &all).unwrap_or_else(|e| panic!("{e}"));
    serde_json::from_str(&out).expect("JSON from codec_cases.py")
}

/// The `_FillValue` attribute of `var` in an `ncdump` header (NaN when there is none).
fn declared_fill(dump: &str, var: &str) -> f64 {
    let prefix = format!("{var}:_FillValue = ");
    dump.lines()
        .find_map(|l| l.trim().strip_prefix(&prefix))
        .map(|v| v.trim_end_matches(" ;"))
        .map(|v| v.trim_end_matches(|c: char| "fFsSbBuUlL".contains(c)))
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(f64::NAN)
}

/// The values of `var` in an `ncdump` data section (`_` as the declared fill value).
fn ncdump_values(dump: &str, var: &str) -> Result<Vec<f64>, String> {
    let fill = declared_fill(dump, var);
    let data = dump
        .split_once("\ndata:\n")
        .ok_or_else(|| format!("no data section in:\n{dump}"))?
        .1;
    let start = data
        .find(&format!("\n {var} ="))
        .ok_or_else(|| format!("{var} not in data section:\n{data}"))?;
    let body = &data[start + var.len() + 4..];
    let body = &body[..body.find(';').ok_or("unterminated data")?];
    body.split(',')
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .map(|s| {
            if s == "_" {
                Ok(fill)
            } else {
                s.parse::<f64>().map_err(|e| format!("{s:?}: {e}"))
            }
        })
        .collect()
}

/// Equal values; a `want` that is a float (exact in `f32`) is compared as a float, since
/// `ncdump -p 9` prints floats with the 9 digits that identify them.
fn same(got: &[f64], want: &[f64]) -> bool {
    got.len() == want.len()
        && got.iter().zip(want).all(|(g, w)| {
            g == w
                || (g.is_nan() && w.is_nan())
                || (f64::from(*w as f32) == *w && *g as f32 == *w as f32)
        })
}

fn ncdump_var(host: Host, u: &str, var: &str) -> Result<Vec<f64>, String> {
    let dump = run(host, "ncdump", &["-v", var, "-p", "9,17", u]).output()?;
    ncdump_values(&dump, var)
}

fn reads_numcodecs(env: &str) {
    let dir = scratch(&format!("numcodecs-{env}"));
    let store = dir.path().join("cases.zarr");
    let expected = run_python(env, &["write", store.to_str().unwrap()]);
    assert!(expected.len() >= 20, "too few cases");
    let u = url(&store, "zarr,file");
    let mut failures = Vec::new();
    for (var, want) in &expected {
        match ncdump_var(Host::Ours, &u, var) {
            Ok(got) if same(&got, want) => {}
            Ok(got) => failures.push(format!("{var}: got {got:?}\n want {want:?}")),
            Err(e) => failures.push(format!("{var}: {e}")),
        }
    }
    // `ncdump -s` lists every variable's filters without failing.
    let s = run(Host::Ours, "ncdump", &["-s", "-h", &u]);
    match s.output() {
        Ok(text) => {
            for needle in [
                "blosc_lz4_shuffle:_Filter = \"32001,0,0,0,0,5,1,1\"",
                "zlib9:_DeflateLevel = 9",
                "shuffle_zlib:_Shuffle = \"true\"",
                "fletcher32:_Fletcher32 = \"true\"",
                "bz2:_Filter = \"307,9\"",
                "zstd0:_Filter = \"32015,0\"",
            ] {
                if !text.contains(needle) {
                    failures.push(format!("ncdump -s lacks {needle}"));
                }
            }
            // Codecs without an HDF5 id show only in `_Codecs` (key order is the writer's).
            let lz4 = text
                .lines()
                .find(|l| l.trim_start().starts_with("lz4:_Codecs = "));
            if !lz4.is_some_and(|l| {
                l.contains(r#"\"id\":\"lz4\""#) && l.contains(r#"\"acceleration\":1"#)
            }) {
                failures.push(format!("ncdump -s: lz4:_Codecs is {lz4:?}"));
            }
        }
        Err(e) => failures.push(format!("ncdump -s: {e}")),
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn reads_what_zarr_python_2_writes() {
    reads_numcodecs("zarr2");
}

#[test]
fn reads_what_zarr_python_3_writes() {
    reads_numcodecs("zarr3");
}

/// A CDL file with every filter the netCDF API can define, and the values it holds.
fn filter_cdl(dir: &Path) -> (PathBuf, Values) {
    let specs: [(&str, &str, &str); 13] = [
        (
            "deflate_shuffle",
            "int",
            "_DeflateLevel = 6 ; v:_Shuffle = \"true\"",
        ),
        (
            "deflate1_shuffle",
            "float",
            "_DeflateLevel = 1 ; v:_Shuffle = \"true\"",
        ),
        ("deflate0", "double", "_DeflateLevel = 0"),
        ("deflate9", "int", "_DeflateLevel = 9"),
        ("fletcher", "short", "_Fletcher32 = \"true\""),
        (
            "fletcher_deflate",
            "float",
            "_Fletcher32 = \"true\" ; v:_DeflateLevel = 2",
        ),
        ("zstd", "int", "_Filter = \"32015,7\""),
        ("zstd_shuffle", "double", "_Filter = \"2|32015,1\""),
        ("bzip2", "int", "_Filter = \"307,9\""),
        ("blosc_lz4", "int", "_Filter = \"32001,0,0,0,0,5,1,1\""),
        (
            "blosc_zstd_bit",
            "double",
            "_Filter = \"32001,0,0,0,0,9,2,5\"",
        ),
        ("blosc_zlib", "short", "_Filter = \"32001,0,0,0,256,4,0,4\""),
        (
            "blosc_blosclz",
            "float",
            "_Filter = \"32001,0,0,0,0,1,1,0\"",
        ),
    ];
    // Chunks large and regular enough that every compressor shrinks them: netcdf-c's blosc
    // filter refuses to store a chunk it cannot compress.
    let n = 300;
    let mut cdl = format!("netcdf filtered {{\ndimensions:\n\tx = {n} ;\nvariables:\n");
    let mut data = String::from("data:\n");
    let mut values = Values::new();
    for (name, ty, special) in specs {
        let special = special.replace("v:", &format!("{name}:"));
        cdl.push_str(&format!(
            "\t{ty} {name}(x) ;\n\t\t{name}:_ChunkSizes = 100 ;\n\t\t{name}:{special} ;\n"
        ));
        let vals: Vec<f64> = (0..n)
            .map(|i| {
                let v = ((i / 6) % 11) as f64 * 100.0 - (i % 3) as f64;
                if ty == "double" || ty == "float" {
                    v + 0.25
                } else {
                    v
                }
            })
            .collect();
        data.push_str(&format!(
            " {name} = {} ;\n",
            vals.iter()
                .map(f64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ));
        values.insert(name.to_string(), vals);
    }
    cdl.push_str(&data);
    cdl.push_str("}\n");
    let path = dir.join("filtered.cdl");
    fs::write(&path, cdl).unwrap();
    (path, values)
}

#[test]
fn zarr_python_and_netcdf_4101_read_what_we_write() {
    let dir = scratch("ours-filters");
    let (cdl, values) = filter_cdl(dir.path());
    let store = dir.path().join("filtered.zarr");
    let u = url(&store, "nczarr,file");
    common::ncgen(Host::Ours, &cdl, &u).expect("ncgen through the library");
    let zarray: Value =
        serde_json::from_slice(&fs::read(store.join("deflate_shuffle/.zarray")).unwrap()).unwrap();
    assert_eq!(
        zarray["filters"],
        serde_json::json!([{"id": "shuffle", "elementsize": 4}]),
        "shuffle is written with the real element size"
    );
    assert_eq!(
        zarray["compressor"],
        serde_json::json!({"id": "zlib", "level": 6})
    );
    let names: Vec<&str> = values.keys().map(String::as_str).collect();
    let mut failures = Vec::new();
    for env in ["zarr2", "zarr3"] {
        let mut args = vec!["read", store.to_str().unwrap()];
        args.extend(&names);
        let got = run_python(env, &args);
        for (var, want) in &values {
            if !same(&got[var], want) {
                failures.push(format!("{env} {var}: got {:?}\n want {want:?}", got[var]));
            }
        }
    }
    for (var, want) in &values {
        for host in [Host::Ref410, Host::Ours] {
            match ncdump_var(host, &u, var) {
                Ok(got) if same(&got, want) => {}
                Ok(got) => failures.push(format!("{host:?} {var}: got {got:?}")),
                Err(e) => failures.push(format!("{host:?} {var}: {e}")),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn reads_what_netcdf_4101_writes_with_its_plugins() {
    let dir = scratch("ref-filters");
    let (cdl, values) = filter_cdl(dir.path());
    let store = dir.path().join("ref.zarr");
    let u = url(&store, "nczarr,file");
    common::ncgen(Host::Ref410, &cdl, &u).expect("ncgen on netcdf-c 4.10.1");
    // netcdf-c writes shuffle with elementsize 0 (reference notes §1.13); it means the type size.
    let zarray = fs::read_to_string(store.join("deflate_shuffle/.zarray")).unwrap();
    assert!(zarray.contains("\"elementsize\": 0"), "{zarray}");
    let mut failures = Vec::new();
    for (var, want) in &values {
        match ncdump_var(Host::Ours, &u, var) {
            Ok(got) if same(&got, want) => {}
            Ok(got) => failures.push(format!("{var}: got {got:?}\n want {want:?}")),
            Err(e) => failures.push(format!("{var}: {e}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Row by row, stock `ncdump` with the library preloaded reads chunks the engine decodes in
/// parts and ahead of the reader: blosc chunks of several blocks (a row's first read decodes,
/// and on a file store or a zip archive reads, only the blocks holding it), zstd chunks (a
/// prefix), and small coded chunks read in sequence on a read-only open (decoded ahead). Every
/// value matches, from the directory and from a zip archive of it, and netcdf-c 4.10.1 with
/// its plugins reads the same values. (Its blosc filter ignores the block size parameter, so
/// the dataset is written through the library.)
#[test]
fn rows_of_multi_block_chunks_read_in_parts_and_ahead_match() {
    let dir = scratch("rows-in-parts");
    // Chunks of two rows of 128 KiB, four chunks along `t`: the first row read of a chunk
    // wants half of it, the reads go on from chunk to chunk.
    let (t, x) = (8usize, 32768usize);
    let specs = [
        // Forced blocks of 16 KiB (64 KiB once blosc splits them by byte): 4 per chunk.
        ("blosc_rows", "_Filter = \"32001,0,0,0,16384,5,1,1\""),
        ("zstd_rows", "_Filter = \"32015,3\""),
        ("deflate_rows", "_DeflateLevel = 1 ; v:_Shuffle = \"true\""),
    ];
    let mut cdl = format!("netcdf rows {{\ndimensions:\n\tt = {t} ;\n\tx = {x} ;\nvariables:\n");
    let values: Vec<f64> = (0..t * x)
        .map(|i| {
            let (r, c) = (i / x, i % x);
            ((r * 7 + c / 6) % 11) as f64 * 100.0 - (c % 3) as f64 + 0.25
        })
        .collect();
    let text = values
        .iter()
        .map(f64::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let mut data = String::from("data:\n");
    for (name, special) in specs {
        let special = special.replace("v:", &format!("{name}:"));
        cdl.push_str(&format!(
            "\tfloat {name}(t, x) ;\n\t\t{name}:_ChunkSizes = 2, {x} ;\n\t\t{name}:{special} ;\n"
        ));
        data.push_str(&format!(" {name} = {text} ;\n"));
    }
    cdl.push_str(&data);
    cdl.push_str("}\n");
    let cdl_path = dir.path().join("rows.cdl");
    fs::write(&cdl_path, cdl).unwrap();
    let store = dir.path().join("rows.zarr");
    let u = url(&store, "nczarr,file");
    common::ncgen(Host::Ours, &cdl_path, &u).expect("ncgen through the library");
    let chunk = fs::read(store.join("blosc_rows/0.0")).unwrap();
    let nbytes = u32::from_le_bytes(chunk[4..8].try_into().unwrap());
    let blocksize = u32::from_le_bytes(chunk[8..12].try_into().unwrap());
    assert!(
        nbytes / blocksize >= 4,
        "{blocksize} of {nbytes}: several blocks per chunk"
    );
    let zip = dir.path().join("rows.zip");
    let zu = url(&zip, "nczarr,zip");
    run(Host::Ours, "nccopy", &[&u, &zu])
        .output()
        .expect("nccopy to a zip archive");
    let mut failures = Vec::new();
    for (host, at) in [(Host::Ours, &u), (Host::Ours, &zu), (Host::Ref410, &u)] {
        for (var, _) in specs {
            match ncdump_var(host, at, var) {
                Ok(got) if same(&got, &values) => {}
                Ok(got) => failures.push(format!("{host:?} {at} {var}: {} values", got.len())),
                Err(e) => failures.push(format!("{host:?} {at} {var}: {e}")),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn an_unknown_codec_fails_only_its_variable() {
    let dir = scratch("unknown-codec");
    let store = dir.path().join("cases.zarr");
    run_python("zarr2", &["write", store.to_str().unwrap()]);
    let meta = store.join("zlib1/.zarray");
    let text = fs::read_to_string(&meta)
        .unwrap()
        .replace("\"zlib\"", "\"jpeg2000\"");
    fs::write(&meta, text).unwrap();
    let u = url(&store, "zarr,file");
    let header = run(Host::Ours, "ncdump", &["-h", "-s", &u]);
    let header = header.output().expect("ncdump -h -s works");
    assert!(header.contains("int zlib1(rows, cols)"), "{header}");
    assert!(
        header.contains("jpeg2000"),
        "_Codecs names the codec:\n{header}"
    );
    let r = run(Host::Ours, "ncdump", &["-v", "zlib1", &u]);
    assert!(!r.success() && !r.crashed(), "{}", r.describe());
    assert!(
        r.stderr
            .contains("variable zlib1 uses unsupported codec jpeg2000"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("Filter error: undefined filter encountered"),
        "{}",
        r.stderr
    );
    assert_eq!(ncdump_var(Host::Ours, &u, "zlib9").unwrap().len(), 140);
}

#[test]
fn corrupt_chunks_are_filter_errors() {
    let dir = scratch("corrupt-chunk");
    let store = dir.path().join("cases.zarr");
    run_python("zarr2", &["write", store.to_str().unwrap()]);
    let u = url(&store, "zarr,file");
    for (var, codec) in [
        ("zlib1", "zlib"),
        ("zstd0", "zstd"),
        ("blosc_lz4_shuffle", "blosc"),
        ("lz4", "lz4"),
        ("bz2", "bz2"),
        ("fletcher32", "fletcher32"),
    ] {
        let chunk = store.join(var).join("0.0");
        let mut bytes = fs::read(&chunk).unwrap();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 0x5a;
        bytes.truncate(bytes.len() - 3);
        fs::write(&chunk, bytes).unwrap();
        let r = run(Host::Ours, "ncdump", &["-v", var, &u]);
        assert!(!r.success() && !r.crashed(), "{var}: {}", r.describe());
        assert!(
            r.stderr.contains(&format!("codec {codec} failed"))
                && r.stderr.contains("NetCDF: Filter error"),
            "{var}: {}",
            r.stderr
        );
    }
}

/// Creates an array stored with `fixedscaleoffset` (float64 as uint16 hundredths above 1000)
/// and zlib, with zarr-python 2.
const PACKED_CREATE: &str = r#"
import sys, numcodecs, zarr
root = zarr.open_group(sys.argv[1], mode="w")
fso = numcodecs.FixedScaleOffset(offset=1000, scale=100, dtype="<f8", astype="<u2")
a = root.create_dataset("packed", shape=(8,), chunks=(3,), dtype="<f8", filters=[fso],
                        compressor=numcodecs.Zlib(level=1), fill_value=None)
a[:] = 1000.0
a.attrs["_ARRAY_DIMENSIONS"] = ["n"]
"#;

/// The values netCDF4-python writes, as Python literals.
const PACKED_VALUES: &str =
    "[1000.004, 1000.015, 1001.5, 1005.255, 1000.0, 1010.0, 1000.125, 1655.35]";

/// Writes PACKED_VALUES into the array through netCDF4-python (the library preloaded).
const PACKED_WRITE: &str = r#"
import sys, netCDF4
with netCDF4.Dataset(sys.argv[1], "r+") as ds:
    ds["packed"][:] = eval(sys.argv[2])
"#;

/// Prints what zarr-python reads and what numcodecs makes of the same values, as JSON.
const PACKED_READ: &str = r#"
import json, sys, numcodecs, numpy as np, zarr
a = zarr.open_group(sys.argv[1], mode="r")["packed"]
fso = numcodecs.FixedScaleOffset(offset=1000, scale=100, dtype="<f8", astype="<u2")
want = fso.decode(fso.encode(np.array(eval(sys.argv[2]), dtype="<f8")))
print(json.dumps({"read": a[:].tolist(), "numcodecs": want.tolist()}))
"#;

#[test]
fn values_written_into_fixedscaleoffset_arrays_are_stored_as_numcodecs_stores_them() {
    let dir = scratch("fixedscaleoffset-writes");
    let store = dir.path().join("packed.zarr");
    let path = store.to_str().unwrap();
    common::python::run_script("zarr2", PACKED_CREATE, &[path]).unwrap_or_else(|e| panic!("{e}"));
    common::python::run_netcdf4_preloaded(PACKED_WRITE, &[path, PACKED_VALUES])
        .unwrap_or_else(|e| panic!("{e}"));
    let out = common::python::run_script("zarr2", PACKED_READ, &[path, PACKED_VALUES])
        .unwrap_or_else(|e| panic!("{e}"));
    let got: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(got["read"], got["numcodecs"], "{got}");
    let dump = ncdump_var(Host::Ours, &url(&store, "zarr,file"), "packed").unwrap();
    let want: Vec<f64> = serde_json::from_value(got["numcodecs"].clone()).unwrap();
    assert!(same(&dump, &want), "ncdump {dump:?}, numcodecs {want:?}");
}
