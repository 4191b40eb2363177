//! A CDL's round trip through the stock tools, against netCDF-4's own HDF5 file of it: `ncgen`
//! through the library into a directory, a zip archive and (when asked) Zarr v3, `nccopy` of
//! the HDF5 file into a store and of that store back into a file. Each is dumped by stock
//! `ncdump` (the directory on 4.10.1 too) and must print what it prints of the HDF5 file. And
//! stock netcdf-c 4.10.1's refusal of such a store, for types it has no dtype of.

use super::{Host, diff, dump, ncdump, ncgen, run, url};
use std::path::Path;

fn dumped(host: Host, target: &str) -> String {
    dump::normalise_name(&ncdump(host, &[], target).unwrap_or_else(|e| panic!("{target}: {e}")))
}

/// Runs the round trip of `cdl` in `dir`; `nc` is netCDF-4's HDF5 file of it and `truth` its
/// dump (without the dataset's name).
pub fn through_stock_tools(dir: &Path, cdl: &Path, nc: &Path, truth: &str, zarr_v3: bool) {
    for (name, mode) in [
        ("gen.zarr", "nczarr,file"),
        ("gen.zip", "nczarr,zip"),
        ("gen3.zarr", "nczarr,v3,file"),
    ]
    .into_iter()
    .filter(|(_, mode)| zarr_v3 || !mode.contains("v3"))
    {
        let store = url(&dir.join(name), mode);
        ncgen(Host::Ours, cdl, &store).unwrap_or_else(|e| panic!("{mode}: {e}"));
        assert_eq!(
            diff::diff(truth, &dumped(Host::Ours, &store)),
            None,
            "ncgen, {mode}"
        );
    }
    let generated = url(&dir.join("gen.zarr"), "nczarr,file");
    assert_eq!(
        diff::diff(truth, &dumped(Host::OursOn410, &generated)),
        None,
        "on 4.10.1"
    );

    let copy = url(&dir.join("copy.zarr"), "nczarr,file");
    let copied = run(Host::Ours, "nccopy", &[nc.to_str().unwrap(), &copy]);
    assert!(copied.success(), "{}", copied.describe());
    assert_eq!(
        diff::diff(truth, &dumped(Host::Ours, &copy)),
        None,
        "nccopy into a store"
    );
    let back = dir.join("back.nc");
    let copied = run(Host::Ours, "nccopy", &[&copy, back.to_str().unwrap()]);
    assert!(copied.success(), "{}", copied.describe());
    assert_eq!(
        diff::diff(truth, &dumped(Host::Stock, back.to_str().unwrap())),
        None,
        "nccopy of the store into a netCDF-4 file"
    );
}

/// `ncgen` of `cdl` through the library into a store of `dir`, which stock netcdf-c 4.10.1
/// (without the library) must refuse with an error, not a crash: for types whose numpy dtype
/// it has none of (void, objects of numbers). 4.9.0 crashes opening any store holding one.
pub fn refused_by_stock_410(dir: &Path, cdl: &Path) {
    let store = url(&dir.join("s.zarr"), "nczarr,file");
    ncgen(Host::Ours, cdl, &store).unwrap_or_else(|e| panic!("{e}"));
    let dumped = run(Host::Ref410, "ncdump", &["-h", &store]);
    assert_eq!(
        dumped.status.and_then(|s| s.code()),
        Some(1),
        "{}",
        dumped.describe()
    );
    assert!(
        dumped.stderr.contains("NCZarr error"),
        "{}",
        dumped.describe()
    );
}
