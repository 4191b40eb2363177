//! Sparse reads of large coded chunks on S3 fetch only the parts they need: a time series
//! through Zarr v3 shards (zarr-python's, index at the end) reads each shard's index with one
//! suffix GET and then the inner chunks it needs, and one through blosc chunks reads each
//! chunk's head and then the blocks it needs; every read through netCDF4-python (netcdf-c
//! 4.10.1 with the library preloaded) on s3s-fs behind a proxy that records each request, the
//! values compared with what zarr-python reads of the same stores. A whole read still fetches
//! each chunk object once, whole.

mod common;

use common::s3::{BUCKET, CountingProxy, Kind, Request, Server, tool_env};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// Writes, with zarr-python 3, a Zarr v3 store (`sharded`: one 4 MiB shard per time step,
/// inner chunks of 128x128, zstd) and a Zarr v2 store (`blosc`: one 4 MiB blosc-lz4 chunk per
/// time step) of the same noise, which neither codec can shrink much.
const WRITE: &str = r#"
import sys, numpy as np, zarr, numcodecs
root3, root2 = sys.argv[1], sys.argv[2]
data = np.random.default_rng(7).standard_normal((6, 1024, 1024), dtype=np.float32)
g = zarr.open_group(root3, mode="w", zarr_format=3)
a = g.create_array("sharded", shape=data.shape, chunks=(1, 128, 128), shards=(1, 1024, 1024),
                   dtype="float32", compressors=[zarr.codecs.ZstdCodec(level=1)],
                   dimension_names=["t", "y", "x"])
a[:] = data
g2 = zarr.open_group(root2, mode="w", zarr_format=2)
b = g2.create_array("blosc", shape=data.shape, chunks=(1, 1024, 1024), dtype="float32",
                    compressors=numcodecs.Blosc(cname="lz4", clevel=5, shuffle=1))
b.attrs["_ARRAY_DIMENSIONS"] = ["t", "y", "x"]
b[:] = data
"#;

/// What a reader finds in the variables of `sys.argv[2]` (name: source): `series`, the time
/// series at (5, 9), which lies in the first inner chunk of each shard and the first block of
/// each blosc chunk; `column`, a column of one time step; `whole`, a digest of the whole
/// variable. Prints JSON. Run by zarr-python on the directories (`zarr`) or by netCDF4-python
/// on the S3 URLs.
const READ: &str = r#"
import sys, json, hashlib, numpy as np
how, sources, part = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
out = {}
for var, source in sources.items():
    if how == "zarr":
        import zarr
        v = zarr.open_array(source, mode="r")
    else:
        import netCDF4
        ds = netCDF4.Dataset(source)
        v = ds[var]
    if part == "whole":
        out[var] = hashlib.sha256(np.ascontiguousarray(v[:], dtype="<f4").tobytes()).hexdigest()
    elif part == "series":
        out[var] = np.asarray(v[:, 5, 9]).tolist()
    else:
        out[var] = np.asarray(v[2, :, 9]).tolist()
print(json.dumps(out))
"#;

/// Bytes a `Range` header asks for (`bytes=a-b` or `bytes=-n`).
fn range_bytes(range: &str) -> u64 {
    let spec = range.trim_start_matches("bytes=");
    match spec.split_once('-') {
        Some(("", n)) => n.parse().unwrap(),
        Some((a, b)) => b.parse::<u64>().unwrap() - a.parse::<u64>().unwrap() + 1,
        None => panic!("range {range}"),
    }
}

/// The requests for chunk objects (`<store>/<var>/<chunk>`) among `reqs`, by object.
fn chunk_requests<'r>(reqs: &'r [Request], var: &str) -> BTreeMap<String, Vec<&'r Request>> {
    let mut by_object: BTreeMap<String, Vec<&Request>> = BTreeMap::new();
    for r in reqs {
        let below = format!("/{var}/");
        let Some((_, object)) = r.target.split_once(&below) else {
            continue;
        };
        if object.starts_with('.') || object.ends_with("zarr.json") || r.target.contains('?') {
            continue;
        }
        by_object.entry(object.to_string()).or_default().push(r);
    }
    by_object
}

#[test]
fn sparse_reads_of_large_chunks_on_s3_fetch_only_their_parts() {
    let Some(lib) = common::preloaded_library() else {
        return;
    };
    let dir = common::scratch("s3-parts");
    let (v3, v2) = (dir.path().join("v3.zarr"), dir.path().join("v2.zarr"));
    common::python::run_script(
        "zarr3",
        WRITE,
        &[v3.to_str().unwrap(), v2.to_str().unwrap()],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    // One chunk of each never written: read as the fill value after one look that finds
    // nothing.
    std::fs::remove_file(v3.join("sharded/c/3/0/0")).unwrap();
    std::fs::remove_file(v2.join("blosc/3.0.0")).unwrap();
    let server = Server::start(Kind::S3sFs);
    common::copy_tree(&v3, &server.bucket_dir().join("parts/v3"));
    common::copy_tree(&v2, &server.bucket_dir().join("parts/v2"));
    let proxy = CountingProxy::start(server.port);
    let endpoint = proxy.endpoint();
    let vars = tool_env(&endpoint);

    let stored = |store: &Path, var: &str| -> u64 {
        common::directory_objects(&store.join(var))
            .iter()
            .filter(|(k, _)| !k.starts_with('.') && !k.ends_with("zarr.json"))
            .map(|(_, v)| v.len() as u64)
            .sum()
    };
    let sources = |local: bool| {
        let (a, b) = if local {
            (
                format!("{}/sharded", v3.display()),
                format!("{}/blosc", v2.display()),
            )
        } else {
            (
                format!("s3://{BUCKET}/parts/v3#mode=zarr,s3"),
                format!("s3://{BUCKET}/parts/v2#mode=zarr,s3"),
            )
        };
        serde_json::json!({"sharded": a, "blosc": b}).to_string()
    };
    let read = |local: bool, part: &str| -> Value {
        let (how, src) = (if local { "zarr" } else { "netcdf4" }, sources(local));
        let args = ["-c", READ, how, &src, part];
        let out = if local {
            common::python::run("zarr3", &args)
        } else {
            common::python::run_with_vars("netcdf4", &args, Some(lib), &vars)
        }
        .unwrap_or_else(|e| panic!("{e}"));
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
    };

    assert_eq!(read(false, "column"), read(true, "column"), "values");
    proxy.take();
    let series = read(false, "series");
    let reqs = proxy.take();
    assert_eq!(series, read(true, "series"), "values");
    for var in ["sharded", "blosc"] {
        let at = &series[var];
        assert_eq!(at[3], 0.0, "{var}: the fill value where no chunk is: {at}");
    }
    assert!(reqs.iter().all(|r| r.method != "HEAD"), "{reqs:?}");
    for (var, store) in [("sharded", &v3), ("blosc", &v2)] {
        let by_object = chunk_requests(&reqs, var);
        assert_eq!(by_object.len(), 6, "{var}: {by_object:?}");
        for (object, gets) in &by_object {
            if object == "c/3/0/0" || object == "3.0.0" {
                assert_eq!(gets.len(), 1, "{var}/{object}: {gets:?}");
                continue;
            }
            let ranges: Vec<&str> = gets
                .iter()
                .map(|r| {
                    r.range
                        .as_deref()
                        .unwrap_or_else(|| panic!("{var}: whole {r:?}"))
                })
                .collect();
            // A shard: its index by a suffix range, then its first inner chunk and the index
            // again (to check the shard is the one whose index was read). A blosc chunk: its
            // head, then its header and first block in one range.
            let looks = ranges.iter().filter(|r| r.starts_with("bytes=-")).count();
            let (want_looks, want_gets) = if var == "sharded" { (1, 3) } else { (0, 2) };
            assert_eq!(
                (looks, ranges.len()),
                (want_looks, want_gets),
                "{var}/{object}: {ranges:?}"
            );
        }
        let fetched: u64 = by_object
            .values()
            .flatten()
            .map(|r| range_bytes(r.range.as_deref().unwrap()))
            .sum();
        // A 64 KiB inner chunk of each 4 MiB shard; a block of each blosc chunk (zarr-python's
        // blosc makes blocks of 512 KiB here).
        let total = stored(store, var);
        let share = if var == "sharded" { 16 } else { 6 };
        assert!(fetched * share < total, "{var}: {fetched} of {total} bytes");
    }

    let whole = read(false, "whole");
    let reqs = proxy.take();
    assert_eq!(whole, read(true, "whole"), "values");
    for var in ["sharded", "blosc"] {
        let by_object = chunk_requests(&reqs, var);
        assert_eq!(by_object.len(), 6, "{var}: {by_object:?}");
        for (object, gets) in &by_object {
            assert_eq!(gets.len(), 1, "{var}/{object}: {gets:?}");
            assert!(gets[0].range.is_none(), "{var}/{object}: {gets:?}");
        }
    }
}
