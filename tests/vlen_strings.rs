//! Strings stored as numpy objects (`"dtype": "|O"` with the `vlen-utf8` or `vlen-bytes`
//! codec), which xarray writes for every `str` coordinate and zarr-python for `str` arrays,
//! read and written as NC_STRING through libnetcdf:
//! - values equal what zarr-python wrote, through every compressor, with strings far longer
//!   than the slots chunks first decode into (several chunks of them, so slots widen while a
//!   request is under way), and chunks never written read as the fill value; from S3 (s3s-fs
//!   on loopback) and from a zip archive as from the directory;
//! - stock `nccopy` copies them whole;
//! - netCDF4-python writes into such arrays in place (longer strings included, in chunks that
//!   already hold others), and zarr-python and xarray read back exactly what it wrote, the
//!   array still `|O` with its codecs;
//! - objects stored by other codecs (`json2`) and damaged chunks fail with a netCDF error,
//!   the rest of the dataset still readable.

mod common;

use common::s3::{BUCKET, Kind, Server};
use common::{Host, ncdump, run, scratch, url};
use nczarr_rs::api::{Dataset, Slab};
use nczarr_rs::error::Error;
use nczarr_rs::model::Tree;
use nczarr_rs::url::DatasetUrl;
use serde_json::{Value, json};
use std::path::Path;

/// Writes the dataset at argv[1] with xarray and zarr-python (format 2) and prints, as JSON,
/// each array's flat values as zarr-python reads them back.
const WRITE: &str = r#"
import json, sys, numpy as np, xarray as xr, zarr, numcodecs
path = sys.argv[1]
v2 = zarr.__version__.startswith("2")
long = "x" * 300
names = np.array(["a", "", "h\u00e9llo w\u00f6rld", long, long + "y", "z", "\u6771\u4eac"],
                 dtype=object)
labels = np.array([["p", "q" * 70], ["", "r"]], dtype=object)
ds = xr.Dataset({"t": (("station",), np.arange(7.0)), "label": (("i", "j"), labels)},
                coords={"station": names})
ds.to_zarr(path, encoding={"station": {"chunks": (2,)}, "label": {"chunks": (1, 2)}},
           **({} if v2 else {"zarr_format": 2}))
root = zarr.open_group(path, mode="a", **({} if v2 else {"use_consolidated": False}))
def make(name, data, compressor, fill=None):
    if v2:
        a = root.create_dataset(name, shape=data.shape, chunks=(2,), dtype=object,
                                fill_value=fill, object_codec=numcodecs.VLenUTF8(),
                                compressor=compressor)
    else:
        a = root.create_array(name, shape=data.shape, dtype=str, chunks=(2,), fill_value=fill,
                              compressors=compressor)
    a.attrs["_ARRAY_DIMENSIONS"] = ["n%d" % data.shape[0]]
    return a
words = np.array(["one", "two", "three", "four", "five"], dtype=object)
make("plain", words, None)[...] = words
make("zlib1", words, numcodecs.Zlib(level=1))[...] = words
make("lz4", words, numcodecs.LZ4())[...] = words
make("sparse", np.array(["s0", "s1", "", "", "", ""], dtype=object),
     numcodecs.Zstd(level=3), fill="NA")[0:2] = np.array(["s0", "s1"], dtype=object)
arrays = ["station", "label", "plain", "zlib1", "lz4", "sparse"]
if v2:
    b = root.create_dataset("raw", shape=(3,), chunks=(2,), dtype=object,
                            object_codec=numcodecs.VLenBytes(), compressor=numcodecs.LZ4())
    b[...] = np.array([b"b0", b"", b"b\x01two"], dtype=object)
    b.attrs["_ARRAY_DIMENSIONS"] = ["n3"]
    j = root.create_dataset("js", shape=(2,), dtype=object, object_codec=numcodecs.JSON())
    j[...] = np.array([{"a": 1}, [2]], dtype=object)
    j.attrs["_ARRAY_DIMENSIONS"] = ["n2"]
    arrays.append("raw")
zarr.consolidate_metadata(path)
got = {k: np.asarray(root[k][...]).ravel().tolist() for k in arrays}
print(json.dumps({k: [x.decode() if isinstance(x, bytes) else x for x in v]
                  for k, v in got.items()}))
"#;

/// Prints, as JSON, the flat values of the arrays argv[2] (comma separated) of the dataset at
/// argv[1], as netCDF4-python reads them.
const READ_NETCDF4: &str = r#"
import json, sys, netCDF4
with netCDF4.Dataset(sys.argv[1]) as ds:
    print(json.dumps({k: [str(x) for x in ds[k][...].ravel()] for k in sys.argv[2].split(",")}))
"#;

/// Writes strings into the dataset at argv[1] (a plain path: netCDF4-python opens only what
/// exists for appending) with netCDF4-python.
const WRITE_NETCDF4: &str = r#"
import sys, netCDF4
with netCDF4.Dataset(sys.argv[1], "a") as ds:
    ds["plain"][0] = "short"  # held in the cache when the next write widens the slots
    ds["plain"][2] = "w" * 400
    ds["zlib1"][0] = ""
    ds["zlib1"][1] = "\u00fcber"
    ds["sparse"][3] = "s3"
    ds["station"][2] = "new"  # beside a string longer than the slots: they widen mid-write
    ds["label"][1, 0] = "filled"
"#;

/// Prints, as JSON, the flat values of every array argv[2] names, as zarr-python reads them
/// (and xarray for the coordinate), and each one's `.zarray` dtype, filters and compressor.
const READ_ZARR: &str = r#"
import json, sys, numpy as np, zarr, xarray as xr
path, names = sys.argv[1], sys.argv[2].split(",")
v2 = zarr.__version__.startswith("2")
root = zarr.open_group(path, mode="r", **({} if v2 else {"zarr_format": 2}))
out = {k: np.asarray(root[k][...]).ravel().tolist() for k in names}
out["xarray station"] = xr.open_zarr(path).station.values.tolist()
meta = {k: {f: json.load(open(f"{path}/{k}/.zarray"))[f] for f in ("dtype", "filters", "compressor")}
        for k in names}
print(json.dumps({"values": out, "meta": meta}))
"#;

fn strings(v: &Value) -> Vec<String> {
    serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{e}: {v}"))
}

fn python(env: &str, script: &str, args: &[&str]) -> Value {
    let out = common::python::run_script(env, script, args).unwrap_or_else(|e| panic!("{e}"));
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

#[test]
fn strings_stored_as_objects_read_and_write_through_libnetcdf() {
    if common::reference_only() {
        // netcdf-c has no variable-length strings in Zarr: nothing to compare against.
        return;
    }
    let dir = scratch("vlen");
    let server = Server::start(Kind::S3sFs);
    let endpoint = server.endpoint();
    let s3_env = common::s3::tool_env(&endpoint);
    for env in ["zarr2", "zarr3"] {
        let store = dir.path().join(format!("{env}.zarr"));
        let path = store.to_str().unwrap();
        let written = python(env, WRITE, &[path]);
        let names: Vec<&str> = written
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let u = url(&store, "zarr,file");

        // Read through libnetcdf, every value as zarr-python reads it.
        let read = common::python::netcdf4_json(READ_NETCDF4, &[&u, &names.join(",")]);
        for name in &names {
            assert_eq!(
                strings(&read[name]),
                strings(&written[name]),
                "{env} {name} read through libnetcdf"
            );
        }
        let dump = ncdump(Host::Ours, &["-h"], &u).unwrap_or_else(|e| panic!("{env}: {e}"));
        assert!(dump.contains("\tstring station(station) ;"), "{dump}");

        // The same from S3, where coded chunks stream through decoding as they arrive.
        let key = format!("vlen/{env}");
        common::copy_tree(&store, &server.bucket_dir().join(&key));
        let s3 = format!("s3://{BUCKET}/{key}#mode=zarr,s3");
        let vars = ["-v", "station,label,plain,zlib1,lz4,sparse"];
        let from_s3 = common::run_env(Host::Ours, "ncdump", &[vars[0], vars[1], &s3], &s3_env);
        let from_file = ncdump(Host::Ours, &vars, &u).unwrap();
        assert_eq!(
            common::dump::normalise_name(&from_s3.output().unwrap_or_else(|e| panic!("{e}"))),
            common::dump::normalise_name(&from_file),
            "{env}: S3"
        );
        // And from a zip archive of the store (zarr-python's layout: objects at the root).
        let zip = dir.path().join(format!("{env}.zip"));
        common::python::zip_directory(&store, &zip, ".").unwrap_or_else(|e| panic!("{e}"));
        let from_zip = ncdump(Host::Ours, &vars, &url(&zip, "zarr,zip"))
            .unwrap_or_else(|e| panic!("{env}: {e}"));
        assert_eq!(
            common::dump::normalise_name(&from_zip),
            common::dump::normalise_name(&from_file),
            "{env}: zip"
        );

        // `nccopy` to a new dataset keeps every string (a compressed string variable reports
        // no filter to copy: netCDF allows none on strings). zarr-python 2's store holds an
        // array `nccopy` cannot read (json2), below.
        if env == "zarr3" {
            let copy = dir.path().join("copy.zarr");
            let cu = url(&copy, "zarr,file");
            let r = run(Host::Ours, "nccopy", &[&u, &cu]);
            assert!(r.success(), "{}", r.describe());
            let vars = names.join(",");
            let (theirs, ours) = (
                ncdump(Host::Ours, &["-v", &vars], &u).unwrap(),
                ncdump(Host::Ours, &["-v", &vars], &cu).unwrap(),
            );
            assert_eq!(
                common::dump::data_lines(&ours),
                common::dump::data_lines(&theirs),
                "nccopy"
            );
        }

        // Objects of another codec fail alone, with a netCDF error naming the codec.
        if env == "zarr2" {
            assert!(dump.contains("\tstring js(n2) ;"), "{dump}");
            let js = run(Host::Ours, "ncdump", &["-v", "js", &u]);
            assert!(js.refused_saying("json2"), "{}", js.describe());
        }

        // Written in place by netCDF4-python, read back by zarr-python and xarray.
        let metadata_before = python(env, READ_ZARR, &[path, "plain,zlib1,sparse,station,label"]);
        common::python::run_netcdf4_preloaded(WRITE_NETCDF4, &[path])
            .unwrap_or_else(|e| panic!("{env}: {e}"));
        let after = python(env, READ_ZARR, &[path, "plain,zlib1,sparse,station,label"]);
        let mut want = written.clone();
        want["plain"][0] = json!("short");
        want["plain"][2] = json!("w".repeat(400));
        want["zlib1"][0] = json!("");
        want["zlib1"][1] = json!("\u{fc}ber");
        want["sparse"][3] = json!("s3");
        want["station"][2] = json!("new");
        want["label"][2] = json!("filled");
        for name in ["plain", "zlib1", "sparse", "station", "label"] {
            assert_eq!(
                strings(&after["values"][name]),
                strings(&want[name]),
                "{env} {name} after writing"
            );
        }
        assert_eq!(
            strings(&after["values"]["xarray station"]),
            strings(&want["station"]),
            "{env}: xarray"
        );
        assert_eq!(
            after["meta"], metadata_before["meta"],
            "{env}: .zarray changed"
        );
        assert_eq!(after["meta"]["plain"]["dtype"], "|O");
        assert_eq!(
            after["meta"]["plain"]["filters"],
            json!([{"id": "vlen-utf8"}])
        );
    }
}

/// The stored form of `items` (a `u32` count, then each item's `u32` length and bytes).
fn vlen(items: &[&[u8]]) -> Vec<u8> {
    let mut out = (items.len() as u32).to_le_bytes().to_vec();
    for item in items {
        out.extend_from_slice(&(item.len() as u32).to_le_bytes());
        out.extend_from_slice(item);
    }
    out
}

/// The items of a stored (uncompressed) chunk.
fn items(stored: &[u8]) -> Vec<Vec<u8>> {
    let word = |at: usize| u32::from_le_bytes(stored[at..at + 4].try_into().unwrap()) as usize;
    let mut at = 4;
    (0..word(0))
        .map(|_| {
            let len = word(at);
            at += 4 + len;
            stored[at - len..at].to_vec()
        })
        .collect()
}

/// A pure-Zarr dataset with one `|O` array `s` (`zarray` gives the rest of its `.zarray`:
/// shape, chunks, codecs, fill) holding the stored `chunks`, and one int array `n`.
fn hand_made(dir: &Path, name: &str, zarray: Value, chunks: &[(&str, Vec<u8>)]) -> String {
    let store = dir.join(name);
    std::fs::create_dir_all(store.join("s")).unwrap();
    std::fs::create_dir_all(store.join("n")).unwrap();
    std::fs::write(store.join(".zgroup"), r#"{"zarr_format": 2}"#).unwrap();
    let mut meta = json!({
        "zarr_format": 2, "shape": [4], "chunks": [2], "dtype": "|O", "order": "C",
        "fill_value": null, "compressor": null, "filters": [{"id": "vlen-utf8"}],
    });
    meta.as_object_mut()
        .unwrap()
        .extend(zarray.as_object().unwrap().clone());
    std::fs::write(store.join("s/.zarray"), meta.to_string()).unwrap();
    for (key, bytes) in chunks {
        std::fs::write(store.join("s").join(key), bytes).unwrap();
    }
    let ints = json!({
        "zarr_format": 2, "shape": [2], "chunks": [2], "dtype": "<i4", "order": "C",
        "fill_value": 0, "compressor": null, "filters": null,
    });
    std::fs::write(store.join("n/.zarray"), ints.to_string()).unwrap();
    std::fs::write(store.join("n/0"), [7, 0, 0, 0, 8, 0, 0, 0]).unwrap();
    url(&store, "zarr,file")
}

fn open(u: &str, write: bool) -> Dataset {
    Dataset::open(&DatasetUrl::parse(u).unwrap(), write).unwrap()
}

fn slab(start: u64, count: u64) -> Slab {
    Slab {
        start: vec![start],
        count: vec![count],
        stride: vec![1],
    }
}

#[test]
fn hand_made_object_strings_and_their_damage() {
    let dir = scratch("vlen-damage");
    let huge = vec![b'h'; 100_000];
    let fill = "F".repeat(100);
    let good = hand_made(
        dir.path(),
        "good.zarr",
        json!({"fill_value": fill}),
        &[("0", vlen(&[b"", &huge]))],
    );
    let dump = ncdump(Host::Ours, &["-v", "s"], &good);
    if common::reference_only() {
        // netcdf-c lists no such array, or refuses the dataset.
        assert!(
            dump.as_ref().map_or(true, |d| !d.contains("string s(")),
            "{dump:?}"
        );
        return;
    }
    let dump = dump.unwrap_or_else(|e| panic!("{e}"));
    // A fill value longer than the first slots is whole: it is the `_FillValue` (as xarray
    // reads it), and the unwritten elements equal it (`_`).
    assert!(
        dump.contains(&format!("string s:_FillValue = \"{fill}\" ;")),
        "{}",
        &dump[..dump.len().min(2000)]
    );
    let want = format!(" s = \"\", \"{}\", _, _ ;", "h".repeat(100_000));
    assert!(
        dump.replace("\n    ", "").contains(&want),
        "{}",
        &dump[..dump.len().min(2000)]
    );
    let damaged: &[(&str, Vec<u8>, &str)] = &[
        (
            "truncated",
            vlen(&[b"ab", b"cd"])[..11].to_vec(),
            "truncated",
        ),
        (
            "absurd count",
            [0xFF, 0xFF, 0xFF, 0xFF, 1, 0, 0, 0].to_vec(),
            "truncated",
        ),
        ("too many items", vlen(&[b"a", b"b", b"c"]), "3 strings"),
        ("too few items", vlen(&[b"a"]), "expected"),
        ("empty object", Vec::new(), "truncated"),
    ];
    for (what, chunk, says) in damaged {
        let name = format!("{}.zarr", what.replace(' ', "_"));
        let u = hand_made(dir.path(), &name, json!({}), &[("0", chunk.clone())]);
        let r = run(Host::Ours, "ncdump", &["-v", "s", &u]);
        assert!(r.refused_saying(says), "{what}: {}", r.describe());
        let ints = ncdump(Host::Ours, &["-v", "n"], &u).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(ints.contains(" n = 7, 8 ;"), "{what}: {ints}");
    }
}

/// A chunk whose compressor declares 4 GiB of strings (one item in the chunk) widens the
/// slots until they would be too large, then fails with a netCDF error: no abort, no hang, and
/// the variable's other chunks read as before (its slots back at their width).
#[test]
fn a_chunk_declaring_vast_strings_fails_alone() {
    if common::reference_only() {
        return;
    }
    let dir = scratch("vlen-bomb");
    let lz4 = json!({"id": "lz4", "acceleration": 1});
    let codec = nczarr_rs::codec::from_config(
        lz4.as_object().unwrap(),
        nczarr_rs::codec::Context { elem_size: 1 },
    )
    .unwrap();
    let mut bomb = 0xFFFF_FFF0u32.to_le_bytes().to_vec();
    bomb.push(0);
    let u = hand_made(
        dir.path(),
        "bomb.zarr",
        json!({"shape": [1000], "chunks": [1], "compressor": lz4}),
        &[("0", bomb), ("1", codec.encode(&vlen(&[b"fine"])).unwrap())],
    );
    let r = run(Host::Ours, "ncdump", &["-v", "s", &u]);
    assert!(r.refused_saying("Memory allocation"), "{}", r.describe());
    let got = common::s3::within(std::time::Duration::from_secs(60), move || {
        let mut ds = open(&u, false);
        let whole = ds.get_strings(Tree::ROOT, 1, &slab(0, 1000));
        (
            whole.is_err(),
            ds.get_strings(Tree::ROOT, 1, &slab(1, 2)).unwrap(),
        )
    });
    assert_eq!(got, (true, vec![b"fine".to_vec(), Vec::new()]));

    // Slots as wide as a vast fill value, in chunks whose slots take half the machine's
    // memory (each worker holds a chunk's): refused, not allocated.
    let fill = "F".repeat(1 << 20);
    let elems = (nczarr_rs::machine::memory_bytes() / 2) >> 20;
    let u = hand_made(
        dir.path(),
        "vast_fill.zarr",
        json!({"shape": [elems], "chunks": [elems], "fill_value": fill}),
        &[],
    );
    let mut ds = open(&u, false);
    let err = ds.get_strings(Tree::ROOT, 1, &slab(0, 1)).unwrap_err();
    assert!(matches!(err, Error::TooLarge(_)), "{err}");
}

/// Writing into a chunk keeps its other items byte for byte (NULs included, as vlen-bytes
/// holds any bytes), and a chunk never written gets the fill value whole beside the string
/// written.
#[test]
fn writes_keep_the_other_items_of_a_chunk_whole() {
    if common::reference_only() {
        return;
    }
    let dir = scratch("vlen-rmw");
    let fill = "F".repeat(100);
    let u = hand_made(
        dir.path(),
        "rmw.zarr",
        json!({"filters": [{"id": "vlen-bytes"}], "fill_value": fill}),
        &[("0", vlen(&[b"ab\0cd", b"e\0\0"]))],
    );
    let mut ds = open(&u, true);
    let s = 1;
    ds.put_strings(Tree::ROOT, s, &slab(1, 1), &[b"new".to_vec()])
        .unwrap();
    ds.put_strings(Tree::ROOT, s, &slab(2, 1), &[b"x".to_vec()])
        .unwrap();
    ds.close().unwrap();
    let store = dir.path().join("rmw.zarr/s");
    assert_eq!(
        items(&std::fs::read(store.join("0")).unwrap()),
        [b"ab\0cd".to_vec(), b"new".to_vec()]
    );
    assert_eq!(
        items(&std::fs::read(store.join("1")).unwrap()),
        [b"x".to_vec(), fill.into_bytes()]
    );
}
