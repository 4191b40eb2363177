//! New Zarr v3 arrays stored in shards: `_InnerChunkSizes` (with `_ChunkSizes` the shard
//! shape) through stock `ncgen` and netCDF4-python, read back by zarr-python 3 and by the
//! library, in a directory, a zip archive and S3; and what cannot be sharded refused.
//!
//! The oracles: zarr-python reads the shard and inner chunk shapes asked for and the values of
//! the netCDF-4 file stock `ncgen` makes of the same CDL (`tests/py/check_zarr_v3.py`), and
//! `ncdump` of the store prints what stock `ncdump` prints of that file.

mod common;

use common::s3::{BUCKET, CountingProxy, Kind, Server, Trap};
use common::{Host, ncdump, ncgen, run, run_env, scratch, url};
use nczarr_rs::api::{Dataset, Owner, Slab};
use nczarr_rs::error::Error;
use nczarr_rs::ffi::status::code;
use nczarr_rs::model::{NcType, Storage, Tree, Values};
use nczarr_rs::url::DatasetUrl;
use serde_json::{Value, json};
use std::path::Path;

/// Rows 2 and 3 of `a` are fill: in each of the shards of rows 0-3, the inner chunks of rows
/// 2-3 hold only fill and are left out. Its shard of rows 4-7 and columns 6-11 is all fill,
/// and stored as no object (as zarr-python stores it).
const SHARDED_CDL: &str = r#"netcdf sharded {
dimensions:
  y = 8 ;
  x = 12 ;
  t = UNLIMITED ;
  n = 3 ;
variables:
  float a(y, x) ;
    a:_ChunkSizes = 4, 6 ;
    a:_InnerChunkSizes = 2, 3 ;
    a:_Filter = "32015,3" ;
    a:_FillValue = -1.f ;
    a:units = "K" ;
  short s(t, x) ;
    s:_ChunkSizes = 2, 12 ;
    s:_InnerChunkSizes = 1, 4 ;
    s:_Shuffle = "true" ;
    s:_DeflateLevel = 1 ;
  double d(y, n) ;
    d:_ChunkSizes = 8, 3 ;
    d:_InnerChunkSizes = 8, 3 ;
    d:_Endianness = "big" ;
  char c(y, n) ;
    c:_ChunkSizes = 4, 3 ;
    c:_InnerChunkSizes = 2, 1 ;
data:
  a = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
      12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23,
      _, _, _, _, _, _, _, _, _, _, _, _,
      _, _, _, _, _, _, _, _, _, _, _, _,
      48, 49, 50, 51, 52, 53, _, _, _, _, _, _,
      60, 61, 62, 63, 64, 65, _, _, _, _, _, _,
      72, 73, 74, 75, 76, 77, _, _, _, _, _, _,
      84, 85, 86, 87, 88, 89, _, _, _, _, _, _ ;
  s = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
      13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24,
      25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36 ;
  d = 0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5, 10.5, 11.5,
      12.5, 13.5, 14.5, 15.5, 16.5, 17.5, 18.5, 19.5, 20.5, 21.5, 22.5, 23.5 ;
  c = "abc", "def", "ghi", "jkl", "mno", "pqr", "stu", "vwx" ;
}
"#;

/// The (inner chunk, shard) shapes `SHARDED_CDL` asks for, by array.
fn asked_for() -> Value {
    json!({
        "a": {"chunks": [2, 3], "shards": [4, 6]},
        "s": {"chunks": [1, 4], "shards": [2, 12]},
        "d": {"chunks": [8, 3], "shards": [8, 3]},
        "c": {"chunks": [2, 1], "shards": [4, 3]},
    })
}

/// The chunk and shard shapes zarr-python reads of every array of a store (a directory, or a
/// zip archive holding the dataset below its own name).
const SHAPES_ZARR_PYTHON: &str = r#"
import json, os, sys, warnings, zarr
warnings.simplefilter("ignore")
store, top = sys.argv[1], ""
if store.endswith(".zip"):
    top = os.path.basename(store)[: -len(".zip")]
    store = zarr.storage.ZipStore(store, mode="r")
g = zarr.open_group(store, path=top, mode="r", zarr_format=3)
print(json.dumps({name: {"chunks": list(a.chunks), "shards": a.shards and list(a.shards)}
                  for name, a in g.arrays()}))
"#;

fn shapes(store: &Path) -> Value {
    let out = common::python::run_script("zarr3", SHAPES_ZARR_PYTHON, &[store.to_str().unwrap()])
        .unwrap_or_else(|e| panic!("{e}"));
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// What zarr-python and xarray find wrong in `store` against the netCDF-4 file's truth,
/// having compared its 4 arrays.
fn problems(store: &Path, truth: &Path) -> Vec<String> {
    match common::zarr_v3_check::problems(store, truth) {
        (4, problems) => problems,
        (n, problems) => vec![format!("compared {n} arrays, not 4: {problems:?}")],
    }
}

/// The `(offset, nbytes)` entries of the index at the end of a shard with `n` inner chunks,
/// after checking its CRC-32C.
fn shard_index(shard: &[u8], n: usize) -> Vec<(u64, u64)> {
    let index = &shard[shard.len() - 16 * n - 4..];
    let (entries, crc) = index.split_at(16 * n);
    assert_eq!(
        crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32Iscsi, entries) as u32,
        u32::from_le_bytes(crc.try_into().unwrap()),
        "the index checksum"
    );
    entries
        .chunks_exact(16)
        .map(|e| {
            let word = |i: usize| u64::from_le_bytes(e[i..i + 8].try_into().unwrap());
            (word(0), word(8))
        })
        .collect()
}

/// The names of the objects in the zip archive `zip`, as Python's `zipfile` lists them.
fn zip_names(zip: &Path) -> String {
    common::python::run_script(
        "zarr3",
        "import sys, zipfile; print(sorted(zipfile.ZipFile(sys.argv[1]).namelist()))",
        &[zip.to_str().unwrap()],
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// Through libnetcdf's C API (with the library preloaded): opens the dataset `argv[1]` for
/// writing and writes fill over the shard of `a` of rows 4-7 and columns 0-5.
const FILL_A_SHARD: &str = r#"
import ctypes, sys
import ctypes.util
nc = ctypes.CDLL(ctypes.util.find_library("netcdf") or "libnetcdf.so.19")
nc.nc_strerror.restype = ctypes.c_char_p
def ok(status):
    assert status == 0, nc.nc_strerror(status)
ncid, varid = ctypes.c_int(), ctypes.c_int()
ok(nc.nc_open(sys.argv[1].encode(), 1, ctypes.byref(ncid)))
ok(nc.nc_inq_varid(ncid, b"a", ctypes.byref(varid)))
start, count = (ctypes.c_size_t * 2)(4, 0), (ctypes.c_size_t * 2)(4, 6)
ok(nc.nc_put_vara_float(ncid, varid, start, count, (ctypes.c_float * 24)(*[-1.0] * 24)))
ok(nc.nc_close(ncid))
"#;

/// Stock `ncgen` writes `SHARDED_CDL` through the library as NCZarr and as pure Zarr v3, in a
/// directory, a zip archive and S3: zarr-python reads the shards and inner chunks asked for,
/// and it, xarray and `ncdump` read the values of the netCDF-4 file of the same CDL; inner
/// chunks holding only fill are not stored, nor are shards holding only fill, and a shard
/// written over with fill is removed (from S3 and the zip archive too); the library answers
/// `_InnerChunkSizes` by name. Asked for in Zarr v2, shards are refused.
#[test]
fn netcdf_asks_for_shards_and_zarr_python_reads_them() {
    if common::reference_only() {
        // netcdf-c writes no Zarr v3.
        return;
    }
    let dir = scratch("v3-shards");
    let cdl = dir.path().join("sharded.cdl");
    std::fs::write(&cdl, SHARDED_CDL).unwrap();
    // The netCDF-4 file of the same dataset: there `_InnerChunkSizes` would be an attribute,
    // and Debian's HDF5 has no zstd filter.
    let plain_cdl = dir.path().join("plain.cdl");
    let plain: String = SHARDED_CDL
        .lines()
        .filter(|l| !l.contains("_InnerChunkSizes") && !l.contains("_Filter"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&plain_cdl, plain.replace("netcdf sharded", "netcdf plain")).unwrap();
    let nc = dir.path().join("plain.nc");
    ncgen(Host::Stock, &plain_cdl, nc.to_str().unwrap()).unwrap_or_else(|e| panic!("{e}"));
    let truth = dir.path().join("truth.json");
    std::fs::write(&truth, common::zarr_v3_check::truth(&nc)).unwrap();
    let hdf5_dump = ncdump(Host::Stock, &[], nc.to_str().unwrap()).unwrap();
    let norm = common::dump::normalise_name;

    let server = Server::start(Kind::S3sFs);
    let endpoint = server.endpoint();
    let s3_env = common::s3::tool_env(&endpoint);
    for layout in ["nczarr", "zarr"] {
        let store = dir.path().join(format!("{layout}.zarr"));
        let zip = dir.path().join(format!("{layout}z.zip"));
        let key = format!("shards/{layout}");
        let s3 = format!("s3://{BUCKET}/{key}#mode={layout},v3,s3");
        ncgen(Host::Ours, &cdl, &url(&store, &format!("{layout},v3,file")))
            .unwrap_or_else(|e| panic!("{layout}: {e}"));
        ncgen(Host::Ours, &cdl, &url(&zip, &format!("{layout},v3,zip")))
            .unwrap_or_else(|e| panic!("{layout} zip: {e}"));
        let cdl_arg = cdl.to_str().unwrap();
        run_env(Host::Ours, "ncgen", &["-4", "-o", &s3, cdl_arg], &s3_env)
            .output()
            .unwrap_or_else(|e| panic!("{layout} S3: {e}"));

        for stored in [store.clone(), zip.clone(), server.bucket_dir().join(&key)] {
            assert_eq!(shapes(&stored), asked_for(), "{}", stored.display());
            let found = problems(&stored, &truth);
            assert!(found.is_empty(), "{}: {found:#?}", stored.display());
        }
        // The shard of `a` all fill is no object; the one beside it is.
        for stored in [store.clone(), server.bucket_dir().join(&key)] {
            assert!(stored.join("a/c/1/0").is_file(), "{}", stored.display());
            assert!(!stored.join("a/c/1/1").exists(), "{}", stored.display());
        }
        let listed = zip_names(&zip);
        assert!(
            listed.contains("/a/c/1/0'") && !listed.contains("/a/c/1/1'"),
            "{listed}"
        );
        // Shards of rows 0-3 of `a`: inner chunks 2 and 3 (rows 2-3) are all fill.
        for shard in ["a/c/0/0", "a/c/0/1"] {
            let bytes = std::fs::read(store.join(shard)).unwrap();
            let index = shard_index(&bytes, 4);
            let absent: Vec<bool> = index.iter().map(|e| *e == (u64::MAX, u64::MAX)).collect();
            assert_eq!(absent, [false, false, true, true], "{shard}: {index:?}");
        }
        if layout == "nczarr" {
            let dumps = [
                ncdump(Host::Ours, &[], &url(&store, "nczarr,file")).unwrap(),
                ncdump(Host::Ours, &[], &url(&zip, "nczarr,zip")).unwrap(),
                run_env(Host::Ours, "ncdump", &[&s3], &s3_env)
                    .output()
                    .unwrap(),
            ];
            for dump in dumps {
                assert_eq!(norm(&dump), norm(&hdf5_dump));
            }
        }
        // Filled over, the shard of rows 4-7 and columns 0-5 goes from S3 and the archive;
        // from S3 through a proxy refusing bulk deletes, as some S3-compatible services do:
        // then by a DELETE of its own.
        let refusing =
            CountingProxy::start_trapping(server.port, Some(("?delete", Trap::NotImplemented)));
        let refusing_endpoint = refusing.endpoint();
        let mut refusing_env = common::s3::tool_env(&refusing_endpoint);
        // Without retries (a 501 is retried as any server error), the proxy sees one POST.
        refusing_env.push(("NCZARR_RS_S3_RETRIES", Some("0")));
        let zip_url = url(&zip, &format!("{layout},v3,zip"));
        for (target, env) in [
            (s3.as_str(), &refusing_env[..]),
            (zip_url.as_str(), &[][..]),
        ] {
            let filled = run_env(Host::Ours, "python3", &["-c", FILL_A_SHARD, target], env);
            assert!(filled.success(), "{target}: {}", filled.describe());
        }
        assert!(!server.bucket_dir().join(&key).join("a/c/1/0").exists());
        let asked: Vec<String> = refusing
            .take()
            .into_iter()
            .filter(|r| matches!(r.method.as_str(), "POST" | "DELETE"))
            .map(|r| format!("{} {}", r.method, r.target))
            .collect();
        assert_eq!(
            asked,
            [
                format!("POST /{BUCKET}?delete"),
                format!("DELETE /{BUCKET}/{key}/a/c/1/0")
            ],
            "bulk delete refused, then one DELETE"
        );
        let listed = zip_names(&zip);
        assert!(
            !listed.contains("/a/c/1/0'") && listed.contains("/a/c/0/0'"),
            "{listed}"
        );
        let mut filled_dump = run_env(Host::Ours, "ncdump", &["-v", "a", &s3], &s3_env)
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        filled_dump.retain(|c| !c.is_whitespace());
        assert!(
            filled_dump.contains("_,_,_,_,_,_,_,_,_,_,_,_;"),
            "{filled_dump}"
        );
        let u = DatasetUrl::parse(&url(&store, &format!("{layout},file"))).unwrap();
        let ds = Dataset::open(&u, false).unwrap();
        let var = |name: &str| ds.tree.group(Tree::ROOT).var_index(name).unwrap();
        for (name, want) in [("a", [2, 3]), ("s", [1, 4]), ("d", [8, 3]), ("c", [2, 1])] {
            let (got, _) = ds
                .get_att(Owner::Var(Tree::ROOT, var(name)), "_InnerChunkSizes", None)
                .unwrap();
            let want: Vec<u8> = want.iter().flat_map(|n: &i32| n.to_ne_bytes()).collect();
            assert_eq!(got, Values::fixed(NcType::Int, want), "{name}");
        }
        // The data's own codecs are its filters: zstd for `a`, shuffle and deflate for `s`.
        assert_eq!(ds.filter_ids(Tree::ROOT, var("a")), [32015]);
        assert_eq!(ds.filter_ids(Tree::ROOT, var("s")), [2, 1]);
    }
    // Asked for in Zarr v2, shards are refused, saying why.
    let v2 = url(&dir.path().join("v2.zarr"), "nczarr,file");
    let refused = run(
        Host::Ours,
        "ncgen",
        &["-4", "-o", &v2, cdl.to_str().unwrap()],
    );
    assert!(
        refused.refused_saying("Bad chunk sizes"),
        "{}",
        refused.describe()
    );
}

/// netCDF4-python defines a sharded variable with an unlimited dimension and writes blocks
/// that cut across inner chunks and shards, then, in a second session, strided points that
/// grow the unlimited dimension, and fill over a whole shard (whose object is then removed):
/// zarr-python and the library read what numpy says they hold.
const WRITE_NETCDF4: &str = r##"
import sys, numpy as np, netCDF4
path, expected = sys.argv[1], sys.argv[2]
want = np.full((5, 30, 20), -9.0, dtype="f4")
with netCDF4.Dataset("file://" + path + "#mode=nczarr,v3,file", "w") as ds:
    ds.createDimension("t", None)
    ds.createDimension("y", 30)
    ds.createDimension("x", 20)
    v = ds.createVariable("v", "f4", ("t", "y", "x"), chunksizes=(2, 12, 20),
                          fill_value=-9.0, compression="zstd", complevel=2)
    v.setncattr("_InnerChunkSizes", [1, 4, 5])
    block = np.arange(3 * 12 * 8, dtype="f4").reshape(3, 12, 8)
    v[0:3, 5:17, 3:11] = block
    want[0:3, 5:17, 3:11] = block
with netCDF4.Dataset(path, "a") as ds:
    v = ds["v"]
    points = np.arange(3 * 5 * 7, dtype="f4").reshape(3, 5, 7) + 1000
    v[2:5, 0:30:7, ::3] = points
    want[2:5, 0:30:7, ::3] = points
    v[1, 11:13, :] = 3.0
    want[1, 11:13, :] = 3.0
    v[0:2, 0:12, :] = -9.0
    want[0:2, 0:12, :] = -9.0
    assert np.array_equal(v[...], want)
    # Answered by name through libnetcdf, as the shards were read back.
    assert list(v.getncattr("_InnerChunkSizes")) == [1, 4, 5], v.getncattr("_InnerChunkSizes")
    assert "_InnerChunkSizes" not in v.ncattrs()
np.save(expected, want)
"##;

const READ_ZARR_PYTHON: &str = r#"
import sys, warnings, numpy as np, zarr
warnings.simplefilter("ignore")
a = zarr.open_array(sys.argv[1] + "/v", mode="r")
want = np.load(sys.argv[2])
assert (a.chunks, a.shards) == ((1, 4, 5), (2, 12, 20)), (a.chunks, a.shards)
assert np.array_equal(a[...], want), a[...]
print("same")
"#;

#[test]
fn writes_across_shards_and_sessions_land_where_they_belong() {
    if common::reference_only() {
        return;
    }
    let dir = scratch("v3-shard-writes");
    let store = dir.path().join("w.zarr");
    let expected = dir.path().join("want.npy");
    let args = [store.to_str().unwrap(), expected.to_str().unwrap()];
    common::python::run_netcdf4_preloaded(WRITE_NETCDF4, &args).unwrap_or_else(|e| panic!("{e}"));
    // The shard filled over is gone; the one below it, which the first session wrote, is not.
    assert!(!store.join("v/c/0/0/0").exists());
    assert!(store.join("v/c/0/1/0").is_file());
    let out = common::python::run_script("zarr3", READ_ZARR_PYTHON, &args)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.trim(), "same");
}

fn create(store: &Path, mode: &str) -> Dataset {
    let u = DatasetUrl::parse(&url(store, mode)).unwrap();
    Dataset::create(&u, Default::default()).unwrap()
}

fn ints(values: &[i64]) -> Values {
    Values::fixed(
        NcType::Int64,
        values.iter().flat_map(|n| n.to_ne_bytes()).collect(),
    )
}

fn put(ds: &mut Dataset, v: usize, values: Values) -> Result<bool, Error> {
    let ty = values.ty();
    ds.put_att(Owner::Var(Tree::ROOT, v), "_InnerChunkSizes", ty, values)
}

/// Shards are refused, with the netCDF error of the reason, where they cannot be: outside
/// Zarr v3, on strings and scalars, with sizes that do not divide the chunks or are not
/// positive integers, one per dimension, once the variable is written; chunking that no longer
/// fits them is refused too; deleting the attribute stores the variable unsharded.
#[test]
fn what_cannot_be_sharded_is_refused() {
    let dir = scratch("v3-shard-refusals");
    let mut v2 = create(&dir.path().join("v2.zarr"), "nczarr,file");
    let x = v2.def_dim(Tree::ROOT, "x", 8, false).unwrap();
    let v = v2
        .def_var(Tree::ROOT, "v", NcType::Int, &[x.0 as i32])
        .unwrap();
    let e = put(&mut v2, v, ints(&[4])).unwrap_err();
    assert_eq!(code(&e), -127, "NC_EBADCHUNK: {e}");
    assert!(e.to_string().contains("Zarr v3"), "{e}");

    let store = dir.path().join("v3.zarr");
    let mut ds = create(&store, "nczarr,v3,file");
    let x = ds.def_dim(Tree::ROOT, "x", 8, false).unwrap().0 as i32;
    let y = ds.def_dim(Tree::ROOT, "y", 6, false).unwrap().0 as i32;
    let v = ds.def_var(Tree::ROOT, "v", NcType::Int, &[x, y]).unwrap();
    ds.def_var_chunking(Tree::ROOT, v, Storage::Chunked, Some(&[4, 6]))
        .unwrap();
    let s = ds.def_var(Tree::ROOT, "s", NcType::String, &[x]).unwrap();
    let scalar = ds.def_var(Tree::ROOT, "k", NcType::Double, &[]).unwrap();
    for (var, values, want) in [
        (s, ints(&[4]), -127),
        (scalar, ints(&[]), -127),
        (v, ints(&[3, 3]), -127),
        (v, ints(&[4]), -127),
        (v, ints(&[4, 0]), -36),
        (v, ints(&[4, -3]), -36),
        (
            v,
            Values::fixed(NcType::Double, 2f64.to_ne_bytes().repeat(2)),
            -36,
        ),
        (v, Values::text("4,3"), -36),
    ] {
        let e = put(&mut ds, var, values.clone()).unwrap_err();
        assert_eq!(code(&e), want, "{values:?}: {e}");
    }
    let u = Values::fixed(
        NcType::UInt64,
        [2u64, u64::MAX]
            .iter()
            .flat_map(|n| n.to_ne_bytes())
            .collect(),
    );
    assert_eq!(code(&put(&mut ds, v, u).unwrap_err()), -36, "past i64::MAX");
    let as_double = ds.put_att(
        Owner::Var(Tree::ROOT, v),
        "_InnerChunkSizes",
        NcType::Double,
        ints(&[2, 3]),
    );
    assert_eq!(code(&as_double.unwrap_err()), -36, "stored as double");
    let on_group = ds.put_att(
        Owner::Group(Tree::ROOT),
        "_InnerChunkSizes",
        NcType::Int64,
        ints(&[2]),
    );
    assert_eq!(code(&on_group.unwrap_err()), -107, "NC_EATTMETA on a group");
    assert_eq!(
        code(&put(&mut ds, v, ints(&[9, 3])).unwrap_err()),
        -127,
        "past the dimension"
    );
    put(&mut ds, v, ints(&[2, 3])).unwrap();
    // A refusal keeps what was defined.
    assert!(put(&mut ds, v, ints(&[3, 3])).is_err());
    let inner = |ds: &Dataset, v: usize| {
        let (got, _) = ds
            .get_att(
                Owner::Var(Tree::ROOT, v),
                "_InnerChunkSizes",
                Some(NcType::Int64),
            )
            .unwrap();
        got
    };
    assert_eq!(inner(&ds, v), ints(&[2, 3]));
    let e = ds
        .def_var_chunking(Tree::ROOT, v, Storage::Chunked, Some(&[3, 6]))
        .unwrap_err();
    assert_eq!(code(&e), -127, "{e}");
    // Asked to be in one piece: one shard holding the whole variable.
    ds.def_var_chunking(Tree::ROOT, v, Storage::Contiguous, None)
        .unwrap();
    assert_eq!(ds.var_info(Tree::ROOT, v).chunks, [8, 6]);
    ds.def_var_chunking(Tree::ROOT, v, Storage::Chunked, Some(&[8, 6]))
        .unwrap();
    ds.def_var_chunking(Tree::ROOT, v, Storage::Chunked, Some(&[8, 6]))
        .unwrap();
    // Listed nowhere, answered by name.
    assert_eq!(ds.natts(Owner::Var(Tree::ROOT, v)), 0);
    assert_eq!(inner(&ds, v), ints(&[2, 3]));

    // Chunks netCDF chose become multiples of the inner chunks below them: 8 x 6 -> 6 x 4;
    // the same asked for are refused.
    let r = ds.def_var(Tree::ROOT, "r", NcType::Float, &[x, y]).unwrap();
    put(&mut ds, r, ints(&[3, 4])).unwrap();
    assert_eq!(ds.var_info(Tree::ROOT, r).chunks, [6, 4]);
    let asked = ds
        .def_var(Tree::ROOT, "asked", NcType::Float, &[x, y])
        .unwrap();
    ds.def_var_chunking(Tree::ROOT, asked, Storage::Chunked, Some(&[8, 6]))
        .unwrap();
    assert_eq!(code(&put(&mut ds, asked, ints(&[3, 4])).unwrap_err()), -127);
    // In one piece: the shape rounded up to the inner chunks, 8 x 6 -> 9 x 8.
    let one = ds
        .def_var(Tree::ROOT, "one", NcType::Short, &[x, y])
        .unwrap();
    put(&mut ds, one, ints(&[3, 4])).unwrap();
    ds.def_var_chunking(Tree::ROOT, one, Storage::Contiguous, None)
        .unwrap();
    assert_eq!(ds.var_info(Tree::ROOT, one).chunks, [9, 8]);
    // A whole variable too large for one shard is refused.
    let big = ds.def_dim(Tree::ROOT, "big", 1 << 14, false).unwrap().0 as i32;
    let huge = ds
        .def_var(Tree::ROOT, "huge", NcType::Double, &[big, big])
        .unwrap();
    put(&mut ds, huge, ints(&[16, 16])).unwrap();
    let e = ds
        .def_var_chunking(Tree::ROOT, huge, Storage::Contiguous, None)
        .unwrap_err();
    assert_eq!(code(&e), -127, "{e}");

    // A second variable sharded, then not.
    let w = ds.def_var(Tree::ROOT, "w", NcType::Short, &[x]).unwrap();
    ds.def_var_chunking(Tree::ROOT, w, Storage::Chunked, Some(&[8]))
        .unwrap();
    put(&mut ds, w, ints(&[2])).unwrap();
    ds.del_att(Owner::Var(Tree::ROOT, w), "_InnerChunkSizes")
        .unwrap();
    let e = ds
        .del_att(Owner::Var(Tree::ROOT, w), "_InnerChunkSizes")
        .unwrap_err();
    assert_eq!(code(&e), -43, "NC_ENOTATT: {e}");
    ds.enddef().unwrap();
    let shorts: Vec<u8> = (0..48i16).flat_map(|n| n.to_ne_bytes()).collect();
    let all = Slab {
        start: vec![0, 0],
        count: vec![8, 6],
        stride: vec![1, 1],
    };
    ds.put_fixed(Tree::ROOT, one, &all, None, NcType::Short, &shorts)
        .unwrap();
    let e = put(&mut ds, v, ints(&[4, 3])).unwrap_err();
    assert_eq!(code(&e), -123, "NC_ELATEDEF: {e}");
    ds.close().unwrap();

    let text = |key: &str| std::fs::read_to_string(store.join(key)).unwrap();
    let v_meta: Value = serde_json::from_str(&text("v/zarr.json")).unwrap();
    assert_eq!(
        v_meta["chunk_grid"]["configuration"]["chunk_shape"],
        json!([8, 6])
    );
    let codec = &v_meta["codecs"][0];
    assert_eq!(codec["name"], "sharding_indexed");
    assert_eq!(codec["configuration"]["chunk_shape"], json!([2, 3]));
    let w_meta: Value = serde_json::from_str(&text("w/zarr.json")).unwrap();
    assert_eq!(w_meta["codecs"][0]["name"], "bytes", "{w_meta}");

    // Shards read from a store stay as they are.
    let u = DatasetUrl::parse(&url(&store, "nczarr,file")).unwrap();
    let mut ds = Dataset::open(&u, true).unwrap();
    let e = ds
        .del_att(Owner::Var(Tree::ROOT, v), "_InnerChunkSizes")
        .unwrap_err();
    assert_eq!(code(&e), -107, "NC_EATTMETA: {e}");
    let e = put(&mut ds, v, ints(&[4, 3])).unwrap_err();
    assert_eq!(code(&e), -123, "NC_ELATEDEF: {e}");
    let mut back = vec![0u8; shorts.len()];
    let one = ds.tree.group(Tree::ROOT).var_index("one").unwrap();
    ds.get_fixed(Tree::ROOT, one, &all, None, NcType::Short, &mut back)
        .unwrap();
    assert_eq!(back, shorts);
    let shapes = shapes(&store);
    assert_eq!(shapes["one"], json!({"chunks": [3, 4], "shards": [9, 8]}));
}

/// A shard of 65536 inner chunks of one byte each, coded by zstd, many times longer than its
/// decoded bytes (each coded inner chunk and its index entry take tens of bytes): written by
/// stock `ncgen` into a directory and S3, it reads back from both alike.
#[test]
fn shards_of_tiny_inner_chunks_read_back() {
    if common::reference_only() {
        return;
    }
    let dir = scratch("v3-tiny-inner");
    let values: Vec<String> = (0..65536u32).map(|i| (i % 251 + 1).to_string()).collect();
    let cdl_text = format!(
        "netcdf tiny {{ dimensions: y = 256 ; x = 256 ; variables: ubyte v(y, x) ; \
         v:_ChunkSizes = 256, 256 ; v:_InnerChunkSizes = 1, 1 ; v:_Filter = \"32015,1\" ; \
         data: v = {} ; }}",
        values.join(", ")
    );
    let cdl = dir.path().join("tiny.cdl");
    std::fs::write(&cdl, cdl_text).unwrap();
    let store = dir.path().join("tiny.zarr");
    ncgen(Host::Ours, &cdl, &url(&store, "zarr,v3,file")).unwrap_or_else(|e| panic!("{e}"));
    let shard = std::fs::metadata(store.join("v/c/0/0")).unwrap().len();
    assert!(shard > 2 * 65536 + (1 << 20), "{shard} bytes");

    let server = Server::start(Kind::S3sFs);
    let endpoint = server.endpoint();
    let s3_env = common::s3::tool_env(&endpoint);
    let s3 = format!("s3://{BUCKET}/tiny#mode=zarr,v3,s3");
    let cdl_arg = cdl.to_str().unwrap();
    run_env(Host::Ours, "ncgen", &["-4", "-o", &s3, cdl_arg], &s3_env)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let from_dir = ncdump(Host::Ours, &[], &url(&store, "zarr,file")).unwrap();
    let from_s3 = run_env(Host::Ours, "ncdump", &[&s3], &s3_env)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(from_s3, from_dir);
    assert!(from_dir.contains("251, 1, 2,"), "{}", &from_dir[..400]);
}

/// Stock `nccopy` puts a variable's attributes before its chunking: a netCDF-4 file whose
/// variable carries `_InnerChunkSizes` as an attribute (as `ncgen` stores it in HDF5) copies
/// into Zarr v3 in shards of the file's chunks; into Zarr v2 it is refused, saying why.
#[test]
fn nccopy_carries_inner_chunk_sizes_put_before_chunking() {
    if common::reference_only() {
        return;
    }
    let dir = scratch("v3-shards-nccopy");
    let values: Vec<String> = (0..80 * 128).map(|i| (i % 97).to_string()).collect();
    // `nccopy` copies chunks of 8 KiB or more (`v`'s) and asks for smaller ones (`w`'s) to be
    // contiguous: one shard.
    let cdl_text = format!(
        "netcdf copied {{ dimensions: y = 80 ; x = 128 ; variables: float v(y, x) ; \
         v:_ChunkSizes = 40, 64 ; v:_InnerChunkSizes = 20, 16 ; v:units = \"m\" ; \
         short w(y, x) ; w:_ChunkSizes = 8, 16 ; w:_InnerChunkSizes = 40, 64 ; \
         data: v = {0} ; w = {0} ; }}",
        values.join(", ")
    );
    let cdl = dir.path().join("copied.cdl");
    std::fs::write(&cdl, &cdl_text).unwrap();
    let nc = dir.path().join("copied.nc");
    let nc = nc.to_str().unwrap();
    ncgen(Host::Stock, &cdl, nc).unwrap_or_else(|e| panic!("{e}"));

    let store = dir.path().join("copied.zarr");
    run(Host::Ours, "nccopy", &[nc, &url(&store, "nczarr,v3,file")])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let want = json!({
        "v": {"chunks": [20, 16], "shards": [40, 64]},
        "w": {"chunks": [40, 64], "shards": [80, 128]},
    });
    assert_eq!(shapes(&store), want);
    let norm = common::dump::normalise_name;
    let file_dump: String = ncdump(Host::Stock, &[], nc)
        .unwrap()
        .lines()
        .filter(|l| !l.contains("_InnerChunkSizes"))
        .map(|l| format!("{l}\n"))
        .collect();
    let ours = ncdump(Host::Ours, &[], &url(&store, "nczarr,file")).unwrap();
    assert_eq!(norm(&ours), norm(&file_dump));

    let v2 = url(&dir.path().join("v2.zarr"), "nczarr,file");
    let refused = run(Host::Ours, "nccopy", &[nc, &v2]);
    assert!(
        refused.refused_saying("Bad chunk sizes"),
        "{}",
        refused.describe()
    );
}
