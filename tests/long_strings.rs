//! Strings longer than a fixed-width string variable's stored width (`|S<n>`), written after
//! the variable holds data: stock `nccopy` from netCDF-4, which writes a string variable a
//! piece at a time, keeps every string whole in both modes, into a directory, a zip archive
//! and S3 (s3s-fs on loopback): the stored chunks are rewritten wider, the dtype follows,
//! where netcdf-c cuts them at its default width of 128 bytes. The copy is also read by
//! zarr-python, which must see the same strings.

mod common;

use common::dump::data_lines;
use common::s3::{BUCKET, Kind, Server};
use common::{Host, hdf5_truth, ncdump, run_env, scratch, url};

/// Strings of growing length, the longest past twice the default width, one per chunk, in two
/// variables (one in a group, one with an unlimited dimension).
fn long_cdl() -> String {
    let words: Vec<String> = [1, 2, 130, 5, 300, 0, 129]
        .iter()
        .map(|n| format!("\"{}\"", "é".repeat(*n / 2) + &"s".repeat(*n % 2)))
        .collect();
    format!(
        "netcdf long {{\ndimensions:\n  n = 7 ;\n  t = UNLIMITED ;\nvariables:\n  \
         string s(n) ;\n    s:_ChunkSizes = 1 ;\n  string r(t) ;\n    r:_ChunkSizes = 2 ;\n\
         data:\n  s = {0} ;\n  r = {0} ;\n\ngroup: g {{\nvariables:\n  string s(n) ;\n    \
         s:_ChunkSizes = 3 ;\ndata:\n  s = {0} ;\n}}\n}}\n",
        words.join(", ")
    )
}

#[test]
fn nccopy_keeps_strings_longer_than_the_stored_width() {
    let dir = scratch("long-strings");
    let cdl = dir.path().join("long.cdl");
    std::fs::write(&cdl, long_cdl()).unwrap();
    let truth = hdf5_truth(dir.path(), &cdl, &[]);
    let nc = dir.path().join("long.nc");
    let server = Server::start(Kind::S3sFs);
    let endpoint = server.endpoint();
    let env = common::s3::tool_env(&endpoint);
    for mode in ["nczarr,file", "zarr,file", "nczarr,zip", "zarr,s3"] {
        let store = dir.path().join(format!("{}.zarr", mode.replace(',', "_")));
        let u = match mode {
            "zarr,s3" => format!("s3://{BUCKET}/long#mode={mode}"),
            "nczarr,zip" => url(&dir.path().join("long.zip"), mode),
            _ => url(&store, mode),
        };
        let r = run_env(Host::Ours, "nccopy", &[nc.to_str().unwrap(), &u], &env);
        assert!(r.success(), "{mode}: {}", r.describe());
        let dump = |opts: &[&str]| {
            let args = [opts, &[u.as_str()]].concat();
            run_env(Host::Ours, "ncdump", &args, &env)
                .output()
                .unwrap_or_else(|e| panic!("{mode}: {e}"))
        };
        if mode.starts_with("nczarr") {
            assert_eq!(
                common::dump::normalise_name(&dump(&[])),
                common::dump::normalise_name(&truth),
                "{mode}"
            );
        }
        // Pure Zarr has no unlimited dimensions and lists arrays by name: the values only.
        for var in ["s", "r", "/g/s"] {
            let want = ncdump(Host::Stock, &["-v", var], nc.to_str().unwrap()).unwrap();
            assert_eq!(
                data_lines(&dump(&["-v", var])),
                data_lines(&want),
                "{mode} {var}"
            );
        }
        if !mode.ends_with("file") {
            continue;
        }
        let zarray: serde_json::Value =
            serde_json::from_slice(&std::fs::read(store.join("s/.zarray")).unwrap()).unwrap();
        let width: usize = zarray["dtype"].as_str().unwrap()[2..].parse().unwrap();
        assert!(width >= 300, "{mode}: {zarray}");
        if mode == "zarr,file" && !common::reference_only() {
            // zarr-python reads the rewritten chunks as the strings written.
            const READ: &str = "import sys, zarr, json; g = zarr.open_group(sys.argv[1], mode='r'); \
                print(json.dumps([x.decode() for x in g['g/s'][...].tolist()]))";
            let read = common::python::run_script("zarr2", READ, &[store.to_str().unwrap()])
                .unwrap_or_else(|e| panic!("{e}"));
            let read: Vec<String> = serde_json::from_str(&read).unwrap();
            let lens: Vec<usize> = read.iter().map(String::len).collect();
            assert_eq!(lens, [1, 2, 130, 5, 300, 0, 129]);
        }
    }
}
