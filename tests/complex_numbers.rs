//! numpy complex numbers (`"dtype": "<c8"`, `">c16"`), which zarr-python and xarray write, read
//! through libnetcdf as their parts: a `float` or `double` variable with a last dimension
//! `_pfnc_complex` of 2 (the nc-complex convention), which netCDF4-python reads back as
//! complex numbers with `auto_complex=True`. Chunks (whole, partial, never written, 0-d) and
//! both byte orders read as zarr-python reads them, from a directory, a zip archive and S3; strided
//! reads too. A fill value whose parts differ leaves its array listed but unreadable, the rest
//! of the dataset readable; such datasets open read-only.

mod common;

use common::s3::{BUCKET, Kind, Server};
use common::{Host, ncdump, run, scratch, url};
use serde_json::Value;

/// Writes complex arrays at argv[1] with zarr-python (format 2) and xarray and prints, as
/// JSON, each one's values as zarr-python reads them: `[real, imaginary]` pairs, flat.
const WRITE: &str = r#"
import json, sys, numpy as np, xarray as xr, zarr
path = sys.argv[1]
v2 = zarr.__version__.startswith("2")
fmt = {} if v2 else {"zarr_format": 2}
xr.Dataset({"wave": (("t",), np.array([1 + 2j, -3.5 - 4j, 5j], dtype="c16"))}).to_zarr(
    path, consolidated=False, **fmt)
root = zarr.open_group(path, mode="a", **fmt)
def make(name, shape, chunks, dtype, fill):
    if v2:
        a = root.create_dataset(name, shape=shape, chunks=chunks, dtype=dtype, fill_value=fill)
    else:
        a = root.create_array(name, shape=shape, chunks=chunks, dtype=dtype, fill_value=fill)
    a.attrs["_ARRAY_DIMENSIONS"] = ["d%d_%d" % (i, n) for i, n in enumerate(shape)]
    return a
grid = (np.arange(35).reshape(5, 7) + 1j * np.arange(35).reshape(5, 7)[::-1]).astype("<c8")
make("grid", (5, 7), (2, 3), "<c8", 0)[...] = grid
big = make("big", (6,), (4,), ">c16", complex("nan+nanj"))
big[0:2] = np.array([1e300 + 1j, -0.0 + 2.5j])  # the second chunk is never written
make("point", (), (), "<c16", 0)[...] = 3 - 3j
make("odd", (2,), (2,), "<c8", complex("nan+1j"))
arrays = ["wave", "grid", "big", "point"]
def parts(a):
    return [[None if np.isnan(x) else x for x in (c.real, c.imag)]
            for c in np.asarray(root[a][...]).astype("c16").ravel()]
print(json.dumps({a: parts(a) for a in arrays}))
"#;

/// Prints, as JSON, the flat values of the arrays argv[2] (comma separated) of the dataset at
/// argv[1] as netCDF4-python reads them with `auto_complex=True` (`[real, imaginary]` pairs,
/// NaN as null), each one's dtype, and `grid[::2, 1::3]`.
const READ_NETCDF4: &str = r#"
import json, sys, numpy as np, netCDF4
def parts(values):
    return [[None if np.isnan(x) else float(x) for x in (c.real, c.imag)]
            for c in np.ma.filled(np.asarray(values)).astype("c16").ravel()]
with netCDF4.Dataset(sys.argv[1], auto_complex=True) as ds:
    out = {k: parts(ds[k][...]) for k in sys.argv[2].split(",")}
    out["dtypes"] = {k: str(ds[k].dtype) for k in sys.argv[2].split(",")}
    out["strided"] = parts(ds["grid"][::2, 1::3])
print(json.dumps(out))
"#;

fn netcdf4(target: &str, arrays: &str) -> Value {
    common::python::netcdf4_json(READ_NETCDF4, &[target, arrays])
}

#[test]
fn numpy_complex_numbers_read_as_their_parts() {
    if common::reference_only() {
        // netcdf-c reads no numpy complex numbers: nothing to compare against.
        return;
    }
    let dir = scratch("complex");
    let server = Server::start(Kind::S3sFs);
    let endpoint = server.endpoint();
    let s3_env = common::s3::tool_env(&endpoint);
    let arrays = "wave,grid,big,point";
    for env in ["zarr2", "zarr3"] {
        let store = dir.path().join(format!("{env}.zarr"));
        let written = common::python::run_script(env, WRITE, &[store.to_str().unwrap()])
            .unwrap_or_else(|e| panic!("{e}"));
        let written: Value = serde_json::from_str(&written).unwrap();
        let u = url(&store, "zarr,file");
        let dump = ncdump(Host::Ours, &["-h"], &u).unwrap_or_else(|e| panic!("{env}: {e}"));
        for line in [
            "_pfnc_complex = 2 ;",
            "double wave(t, _pfnc_complex) ;",
            "float grid(d0_5, d1_7, _pfnc_complex) ;",
            "double big(d0_6, _pfnc_complex) ;",
            "double point(_pfnc_complex) ;",
        ] {
            assert!(common::dump::has_line(&dump, line), "{env}: {line}\n{dump}");
        }
        assert!(
            !dump.contains("grid:_FillValue"),
            "a part is no missing number: {dump}"
        );

        let zip = dir.path().join(format!("{env}.zip"));
        common::python::zip_directory(&store, &zip, ".").unwrap_or_else(|e| panic!("{e}"));
        for target in [u.clone(), url(&zip, "zarr,zip")] {
            let read = netcdf4(&target, arrays);
            for name in arrays.split(',') {
                assert_eq!(read[name], written[name], "{env} {target} {name}");
            }
            assert_eq!(read["dtypes"]["grid"], "complex64", "{env}");
            assert_eq!(read["dtypes"]["big"], "complex128", "{env}");
            // grid[::2, 1::3] of the 5 x 7 grid: rows 0, 2, 4; columns 1 and 4.
            let grid = written["grid"].as_array().unwrap();
            let want: Vec<&Value> = [0, 2, 4]
                .iter()
                .flat_map(|r| [1, 4].map(|c| &grid[r * 7 + c]))
                .collect();
            assert_eq!(
                read["strided"],
                Value::from(want.into_iter().cloned().collect::<Vec<_>>())
            );
        }

        // From S3 (s3s-fs on loopback), stock `ncdump` dumps what it dumps from the directory.
        let key = format!("complex/{env}");
        common::copy_tree(&store, &server.bucket_dir().join(&key));
        let s3 = format!("s3://{BUCKET}/{key}#mode=zarr,s3");
        let vars = ["-v", arrays];
        let from_s3 = common::run_env(Host::Ours, "ncdump", &[vars[0], vars[1], &s3], &s3_env);
        let from_file = ncdump(Host::Ours, &vars, &u).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            common::dump::normalise_name(&from_s3.output().unwrap_or_else(|e| panic!("{e}"))),
            common::dump::normalise_name(&from_file),
            "{env}: S3"
        );

        // A fill value whose parts differ: listed, failing alone.
        assert!(
            dump.lines()
                .any(|l| l.trim() == "float odd(d0_2, _pfnc_complex) ;"),
            "{dump}"
        );
        let odd = run(Host::Ours, "ncdump", &["-v", "odd", &u]);
        assert!(
            odd.refused_saying("parts that differ"),
            "{}",
            odd.describe()
        );

        let opened =
            nczarr_rs::api::Dataset::open(&nczarr_rs::url::DatasetUrl::parse(&u).unwrap(), true)
                .expect("opens for writing");
        let refused = opened.check_writable().unwrap_err().to_string();
        assert!(refused.contains("numpy complex"), "{refused}");
    }
}
