//! Write-side interop: every CDL of the corpus written by stock `ncgen` with our library in
//! `mode=zarr`, `mode=nczarr` and `mode=nczarr,consolidated`, then opened by zarr-python 2,
//! zarr-python 3 and `xarray.open_zarr`; every array's shape, dimension names and values must
//! equal what we read ourselves. Arrays another reader cannot represent are listed in
//! `EXCEPTIONS` with the reason.

mod common;

use common::zarr_json::{compare, ours, theirs};
use common::{Host, case_name, cdl_files, ncgen, scratch, url};

const MODES: &[&str] = &["zarr,file", "nczarr,file", "nczarr,consolidated,file"];
const READERS: &[(&str, &str)] = &[("zarr2", "zarr"), ("zarr3", "zarr"), ("zarr3", "xarray")];

/// (reader env, reader kind, mode prefix, why): arrays whose failure in that reader is expected.
/// Matched against the reader's error text, so a value mismatch is never excused.
const EXCEPTIONS: &[(&str, &str, &str, &str)] = &[
    (
        "zarr3",
        "nczarr",
        "No Zarr data type found that matches {'name': '>S1'",
        "NC_CHAR is `>S1` in NCZarr mode (the marker netcdf-c reads as char); zarr-python 3 \
         has no such dtype. Pure Zarr mode writes `|S1`, which it reads",
    ),
    (
        "zarr3",
        "nczarr",
        "Incorrect padding",
        "NCZarr mode stores a string `fill_value` as its text, as netcdf-c writes and reads it; \
         zarr-python 3 decodes `|S` fill values as base64. Pure Zarr mode writes base64",
    ),
];

#[test]
fn zarr_python_and_xarray_read_what_we_write() {
    let tmp = scratch("interop");
    let mut failures = Vec::new();
    for cdl in cdl_files() {
        let case = case_name(&cdl);
        for mode in MODES {
            let store = tmp
                .path()
                .join(format!("{case}-{}.zarr", mode.replace(',', "_")));
            let u = url(&store, mode);
            if let Err(e) = ncgen(Host::Ours, &cdl, &u) {
                failures.push(format!("{case} {mode}: ncgen failed: {e}"));
                continue;
            }
            let mine = ours(&u);
            for (env, kind) in READERS {
                let them = theirs(env, kind, &store);
                if let Some(err) = them.get("open_error").and_then(|e| e.as_str()) {
                    let excused = EXCEPTIONS.iter().any(|(e, m, text, _)| {
                        e == env && mode.starts_with(m) && err.contains(text)
                    });
                    if !excused {
                        failures.push(format!("{case} {mode} [{env} {kind}]: open failed: {err}"));
                    }
                    continue;
                }
                for (path, entry) in them["arrays"].as_object().unwrap() {
                    let label = format!("{case} {mode} [{env} {kind}] {path}");
                    let Some(our) = mine.get(path) else {
                        failures.push(format!("{label}: we do not list it"));
                        continue;
                    };
                    let err = entry.get("error").and_then(|e| e.as_str()).unwrap_or("");
                    let excused = EXCEPTIONS.iter().any(|(e, m, text, _)| {
                        e == env && mode.starts_with(m) && !err.is_empty() && err.contains(text)
                    });
                    if !excused {
                        failures.extend(compare(&label, our, entry));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
