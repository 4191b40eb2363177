//! The Zarr v3 oracle of the write tests: what netCDF4-python and xarray read of a netCDF-4
//! file (`tests/py/netcdf_truth.py`), and what zarr-python 3 and xarray find different in a
//! Zarr v3 store (`tests/py/check_zarr_v3.py`).

use super::{python, repo_root};
use serde_json::Value;
use std::path::Path;

/// What netCDF4-python and xarray read of the netCDF-4 file `nc`, as JSON text.
pub fn truth(nc: &Path) -> String {
    let script = repo_root().join("tests/py/netcdf_truth.py");
    python::run("netcdf4", &[script.to_str().unwrap(), nc.to_str().unwrap()])
        .unwrap_or_else(|e| panic!("{e}"))
}

/// How many arrays zarr-python and xarray compared in `store` (a directory or a zip archive)
/// against the truth in the file `truth`, and the problems they found.
pub fn problems(store: &Path, truth: &Path) -> (u64, Vec<String>) {
    let script = repo_root().join("tests/py/check_zarr_v3.py");
    let args = [
        script.to_str().unwrap(),
        store.to_str().unwrap(),
        truth.to_str().unwrap(),
    ];
    let out = python::run("zarr3", &args).unwrap_or_else(|e| format!("\"{e}\""));
    let report: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let problems = report["problems"]
        .as_array()
        .map(|p| {
            p.iter()
                .map(|s| s.as_str().unwrap_or("?").to_string())
                .collect()
        })
        .unwrap_or_else(|| vec![format!("no report: {out}")]);
    (report["compared"].as_u64().unwrap_or(0), problems)
}
