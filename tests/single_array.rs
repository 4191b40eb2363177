//! A store that is one Zarr array, not a group (what zarr-python's `zarr.save` of one array
//! and `zarr.open_array` write), is read as a dataset holding that one variable, named after
//! the store (`temps` for `temps.zarr`, `temps.zarr.zip` or `s3://bucket/temps.zarr`; `data`
//! where that is no netCDF name), also with consolidated metadata beside it: stock
//! `ncdump` and netCDF4-python read the values zarr-python reads, in Zarr v2 (with a `.zattrs`,
//! with xarray's dimension names, with no chunk written) and v3, from a directory, a zip
//! archive and S3. netcdf-c reads such a v2 store as an empty dataset and refuses a v3 one.
//! The dataset opens read-only: writing is refused with the reason.

mod common;

use common::dump::has_line;
use common::s3::{BUCKET, Kind, Server};
use common::{Host, run_env, scratch, url};
use serde_json::Value;

/// Writes single arrays below argv[1] with zarr-python and prints their values as JSON.
const WRITE: &str = r#"
import json, sys, numpy as np, zarr
top = sys.argv[1]
out = {}
zarr.save(f"{top}/temps.zarr", np.arange(12, dtype="f4").reshape(3, 4) / 4)
out["temps"] = zarr.open_array(f"{top}/temps.zarr", mode="r")[...]
zarr.save(f"{top}/counts3.zarr", np.arange(6, dtype="i2").reshape(2, 3) - 2, zarr_format=3)
out["counts3"] = zarr.open_array(f"{top}/counts3.zarr", mode="r")[...]
a = zarr.open_array(f"{top}/depth.zarr", mode="w", shape=(3,), chunks=(2,), dtype="i4",
                    fill_value=-1, zarr_format=2)
a.attrs["_ARRAY_DIMENSIONS"] = ["x"]
a.attrs["units"] = "m"
out["depth"] = a[...]
# Consolidated metadata beside the array (as zarr-python 2 could write it).
zarr.save(f"{top}/consolidated.zarr", np.arange(1, 5, dtype="u1"), zarr_format=2)
c = zarr.open_array(f"{top}/consolidated.zarr", mode="a")
c.attrs["note"] = "consolidated"
listed = {k: json.load(open(f"{top}/consolidated.zarr/{k}")) for k in (".zarray", ".zattrs")}
json.dump({"zarr_consolidated_format": 1, "metadata": listed},
          open(f"{top}/consolidated.zarr/.zmetadata", "w"))
out["consolidated"] = c[...]
# A store whose name is no netCDF name.
zarr.save(f"{top}/-odd.zarr", np.array([7, 8], dtype="i8"), zarr_format=3)
out["-odd"] = zarr.open_array(f"{top}/-odd.zarr", mode="r")[...]
print(json.dumps({k: v.astype("f8").ravel().tolist() for k, v in out.items()}))
"#;

/// Prints, as JSON, the values netCDF4-python reads of the variable argv[2] of argv[1].
const READ: &str = r#"
import json, sys, numpy as np, netCDF4
with netCDF4.Dataset(sys.argv[1]) as ds:
    ds.set_auto_mask(False)
    print(json.dumps({"names": list(ds.variables),
                      "values": np.asarray(ds[sys.argv[2]][...]).astype("f8").ravel().tolist()}))
"#;

#[test]
fn a_store_that_is_one_array_is_a_dataset_of_that_variable() {
    if common::reference_only() {
        return;
    }
    let dir = scratch("single-array");
    let written = common::python::run_script("zarr3", WRITE, &[dir.path().to_str().unwrap()])
        .unwrap_or_else(|e| panic!("{e}"));
    let written: Value = serde_json::from_str(&written).unwrap();
    let server = Server::start(Kind::S3sFs);
    let endpoint = server.endpoint();
    let s3_env = common::s3::tool_env(&endpoint);
    // (store, variable, lines of its dump)
    let stores = [
        (
            "temps",
            "temps",
            vec![
                "float temps(_Anonymous_Dim_3, _Anonymous_Dim_4) ;",
                "temps = 0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75, 2, 2.25, 2.5, 2.75 ;",
            ],
        ),
        (
            "counts3",
            "counts3",
            vec![
                "short counts3(_Anonymous_Dim_2, _Anonymous_Dim_3) ;",
                "counts3 = -2, -1, 0, 1, 2, 3 ;",
            ],
        ),
        (
            "depth",
            "depth",
            vec![
                "x = 3 ;",
                "int depth(x) ;",
                "depth:units = \"m\" ;",
                "depth:_FillValue = -1 ;",
                "depth = _, _, _ ;",
            ],
        ),
        (
            "consolidated",
            "consolidated",
            vec![
                "ubyte consolidated(_Anonymous_Dim_4) ;",
                "consolidated:note = \"consolidated\" ;",
                "consolidated = 1, 2, 3, 4 ;",
            ],
        ),
        (
            "-odd",
            "data",
            vec!["int64 data(_Anonymous_Dim_2) ;", "data = 7, 8 ;"],
        ),
    ];
    for (stem, name, lines) in stores {
        let store = dir.path().join(format!("{stem}.zarr"));
        let zip = dir.path().join(format!("{stem}.zarr.zip"));
        common::python::zip_directory(&store, &zip, ".").unwrap_or_else(|e| panic!("{e}"));
        let key = format!("single/{stem}.zarr");
        common::copy_tree(&store, &server.bucket_dir().join(&key));
        let s3 = format!("s3://{BUCKET}/{key}#mode=zarr,s3");
        for (place, target, env) in [
            ("directory", url(&store, "zarr,file"), &[][..]),
            ("zip", url(&zip, "zarr,zip"), &[][..]),
            ("S3", s3.clone(), &s3_env[..]),
        ] {
            let mut dump = run_env(Host::Ours, "ncdump", &[&target], env)
                .output()
                .unwrap_or_else(|e| panic!("{name}, {place}: {e}"));
            // Data lines joined, as ncdump wraps them.
            dump = dump.replace("\n  ", " ").replace(",\n", ", ");
            for line in &lines {
                assert!(
                    has_line(&dump, line),
                    "{name}, {place}: no {line:?} in\n{dump}"
                );
            }
        }
        let read = common::python::netcdf4_json(READ, &[&url(&store, "zarr,file"), name]);
        assert_eq!(read["names"], serde_json::json!([name]), "{name}: {read}");
        assert_eq!(read["values"], written[stem], "{name}");
        let refused = common::python::netcdf4_writes(&store)
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("{name}: written"));
        assert!(refused.contains("read only"), "{name}: {refused}");
        let writable = nczarr_rs::url::DatasetUrl::parse(&url(&store, "zarr,file")).unwrap();
        let opened = nczarr_rs::api::Dataset::open(&writable, true).unwrap();
        let why = opened.check_writable().unwrap_err().to_string();
        assert!(why.contains("single Zarr array"), "{name}: {why}");
    }
}
