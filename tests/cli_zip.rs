//! Zip storage end to end with Debian's stock tools and the preload: the CDL corpus written to
//! `#mode=nczarr,zip` archives reads back as the HDF5 ground truth, the archive holds exactly what
//! the directory store holds, `nccopy` moves datasets between directory and zip storage without
//! loss, archives made by other tools (Python's `zipfile`, zarr-python's `ZipStore`) open, and
//! zarr-python reads the archives we write.

mod common;

use common::{
    Host, Report, case_name, cdl_files, hdf5_truth, ncdump, ncgen, repo_root, run, scratch, url,
};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// Every entry of an archive, by name.
fn archive_entries(path: &Path) -> BTreeMap<String, Vec<u8>> {
    use std::io::Read;
    let mut archive = zip::ZipArchive::new(fs::File::open(path).unwrap()).unwrap();
    let mut out = BTreeMap::new();
    for i in 0..archive.len() {
        let mut e = archive.by_index(i).unwrap();
        let mut bytes = Vec::new();
        e.read_to_end(&mut bytes).unwrap();
        out.insert(e.name().unwrap().into_owned(), bytes);
    }
    out
}

fn zip_url(path: &Path, mode: &str) -> String {
    url(path, &format!("{mode},zip"))
}

#[test]
fn zip_stores_match_hdf5_ground_truth_and_directory_stores() {
    let mut report = Report::new("zip_vs_hdf5");
    let dir = scratch("zip");
    for cdl in cdl_files() {
        let name = case_name(&cdl);
        let archive = dir.path().join(format!("{name}.zip"));
        let tree = dir.path().join(format!("{name}.zarr"));
        let outcome = (|| {
            ncgen(Host::Ours, &cdl, &zip_url(&archive, "nczarr"))?;
            ncgen(Host::Ours, &cdl, &url(&tree, "nczarr,file"))?;
            let truth = common::dump::normalise_name(&hdf5_truth(dir.path(), &cdl, &[]));
            let ours = common::dump::normalise_name(&ncdump(
                Host::Ours,
                &[],
                &zip_url(&archive, "nczarr"),
            )?);
            common::diff::compare(&truth, &ours, "ncdump of our zip store vs HDF5")?;
            // The archive is the directory store under one top-level directory named after it.
            let expected: BTreeMap<String, Vec<u8>> = common::directory_objects(&tree)
                .into_iter()
                .map(|(k, v)| (format!("{name}/{k}"), v))
                .collect();
            let got = archive_entries(&archive);
            if got.keys().ne(expected.keys()) {
                return Err(format!(
                    "entries differ:\n  zip: {:?}\n  dir: {:?}",
                    got.keys().collect::<Vec<_>>(),
                    expected.keys().collect::<Vec<_>>()
                ));
            }
            for (k, v) in &expected {
                if got[k] != *v {
                    return Err(format!(
                        "entry {k} differs from the directory store's object"
                    ));
                }
            }
            Ok(())
        })();
        report.case(&name, outcome);
    }
    report.finish(10);
}

/// `nccopy` directory -> zip -> directory gives the dataset `nccopy` directory -> directory ->
/// directory gives (nccopy itself changes storage details such as `_NoFill`), and the same data
/// and attributes as the source.
#[test]
fn nccopy_moves_datasets_between_directory_and_zip() {
    let mut report = Report::new("nccopy_zip");
    let dir = scratch("nccopy-zip");
    for cdl in cdl_files() {
        let name = case_name(&cdl);
        let outcome = (|| {
            let at = |suffix: &str, mode: &str| {
                let p = dir.path().join(format!("{name}.{suffix}"));
                if mode == "zip" {
                    zip_url(&p, "nczarr")
                } else {
                    url(&p, "nczarr,file")
                }
            };
            let src = at("src.zarr", "file");
            ncgen(Host::Ours, &cdl, &src)?;
            let (zipped, back) = (at("zip", "zip"), at("back.zarr", "file"));
            let (mid, back2) = (at("mid.zarr", "file"), at("back2.zarr", "file"));
            for (from, to) in [
                (&src, &zipped),
                (&zipped, &back),
                (&src, &mid),
                (&mid, &back2),
            ] {
                run(Host::Ours, "nccopy", &[from, to]).output()?;
            }
            let dump = |u: &str, opts: &[&str]| -> Result<String, String> {
                Ok(common::dump::normalise_name(&ncdump(Host::Ours, opts, u)?))
            };
            common::diff::compare(
                &dump(&src, &[])?,
                &dump(&back, &[])?,
                "source vs through zip",
            )?;
            common::diff::compare(
                &dump(&back2, &["-s"])?,
                &dump(&back, &["-s"])?,
                "through directories vs through zip (-s)",
            )
        })();
        report.case(&name, outcome);
    }
    report.finish(10);
}

#[test]
fn reads_archives_made_by_other_tools() {
    let mut report = Report::new("foreign_zip");
    let dir = scratch("foreign-zip");
    for cdl in cdl_files() {
        let name = case_name(&cdl);
        for (layout, top) in [("root", "."), ("renamed-directory", "other name")] {
            let outcome = (|| {
                let tree = dir.path().join(format!("{name}.zarr"));
                let tree_url = url(&tree, "nczarr,file");
                if !tree.exists() {
                    ncgen(Host::Ours, &cdl, &tree_url)?;
                }
                let archive = dir.path().join(format!("{name}.{layout}.zip"));
                common::python::zip_directory(&tree, &archive, top)?;
                let expected = common::dump::normalise_name(&ncdump(Host::Ours, &[], &tree_url)?);
                let got = common::dump::normalise_name(&ncdump(
                    Host::Ours,
                    &[],
                    &zip_url(&archive, "nczarr"),
                )?);
                common::diff::compare(
                    &expected,
                    &got,
                    "zipped directory store vs the directory store",
                )
            })();
            report.case(&format!("{name} [{layout}]"), outcome);
        }
    }
    report.finish(20);
}

/// zarr-python 3 writes a group with arrays into a `ZipStore`; prints every value as JSON.
const ZARR_WRITES_ZIP: &str = r#"
import json, sys, numpy as np, zarr
store = zarr.storage.ZipStore(sys.argv[1], mode="w")
root = zarr.open_group(store, mode="w", zarr_format=2)
a = root.create_array("temperature", shape=(5, 7), chunks=(2, 3), dtype="<f4", fill_value=-1.0,
                      compressors=None, attributes={"_ARRAY_DIMENSIONS": ["y", "x"]})
a[:] = np.arange(35, dtype="<f4").reshape(5, 7) / 4
b = root.create_array("count", shape=(7,), chunks=(4,), dtype=">i2", fill_value=-99,
                      compressors=None, attributes={"_ARRAY_DIMENSIONS": ["x"]})
b[:5] = np.arange(5) - 2
values = {"temperature": a[:].ravel().tolist(), "count": b[:].tolist()}
store.close()
print(json.dumps(values))
"#;

/// Reads the values of a variable from `ncdump` output as numbers (`_`, a fill value, as `fill`).
fn dumped_values(dump: &str, var: &str, fill: f64) -> Vec<f64> {
    let data = dump.split("data:").nth(1).unwrap_or("");
    let start = data
        .find(&format!(" {var} ="))
        .map(|i| i + var.len() + 3)
        .unwrap_or(data.len());
    let body = &data[start..];
    let end = body.find(';').unwrap_or(body.len());
    body[..end]
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|t| !t.is_empty())
        .map(|t| match t {
            "_" => fill,
            _ => t.trim_end_matches('f').parse::<f64>().unwrap_or(f64::NAN),
        })
        .collect()
}

#[test]
fn reads_zarr_python_zip_stores() {
    let dir = scratch("zarr-zip");
    let archive = dir.path().join("from-zarr.zip");
    let json = common::python::run_script("zarr3", ZARR_WRITES_ZIP, &[archive.to_str().unwrap()])
        .unwrap_or_else(|e| panic!("{e}"));
    let expected: BTreeMap<String, Vec<f64>> = serde_json::from_str(&json).unwrap();
    let dump =
        ncdump(Host::Ours, &[], &zip_url(&archive, "zarr")).unwrap_or_else(|e| panic!("{e}"));
    assert!(dump.contains("float temperature(y, x)"), "{dump}");
    assert!(dump.contains("short count(x)"), "{dump}");
    // zarr-python's fill values are netCDF fill values.
    assert!(dump.contains("count:_FillValue = -99s"), "{dump}");
    assert!(dump.contains("temperature:_FillValue = -1.f"), "{dump}");
    for (var, fill) in [("temperature", -1.0), ("count", -99.0)] {
        assert_eq!(
            dumped_values(&dump, var, fill),
            expected[var],
            "{var} in\n{dump}"
        );
    }
}

/// zarr-python 2 and 3 read every array of archives we wrote and of the same datasets in
/// directory stores. Arguments: triples of (path, group path inside, "zip" or "dir"); prints one
/// JSON line per triple: a digest of every array (shape, dtype, values) or the error.
const ZARR_READS: &str = r#"
import json, sys, zarr, numpy as np
def digest(path, inside, kind):
    if kind == "zip":
        store = zarr.storage.ZipStore(path, mode="r")
        root = zarr.open_group(store, path=inside, mode="r")
    else:
        root = zarr.open_group(path, mode="r")
    out = {}
    def walk(g, prefix):
        for name, a in sorted(g.arrays()):
            v = a[...]
            out[prefix + name] = [list(v.shape), str(v.dtype),
                                  np.asarray(v).ravel().tolist() if v.dtype.kind in "iufb" else None]
        for name, sub in sorted(g.groups()):
            walk(sub, prefix + name + "/")
    walk(root, "")
    return out
args = sys.argv[1:]
for i in range(0, len(args), 3):
    try:
        print(json.dumps(digest(*args[i:i + 3]), default=str))
    except Exception as e:
        print(json.dumps({"error": repr(e)}))
"#;

#[test]
fn zarr_python_reads_our_zip_stores() {
    let mut report = Report::new("zarr_reads_zip");
    let dir = scratch("zip-for-zarr");
    let mut cases = Vec::new();
    let mut args: Vec<String> = Vec::new();
    for cdl in cdl_files() {
        let name = case_name(&cdl);
        let archive: PathBuf = dir.path().join(format!("{name}.zip"));
        let tree = dir.path().join(format!("{name}.zarr"));
        let written = ncgen(Host::Ours, &cdl, &zip_url(&archive, "zarr"))
            .and_then(|()| ncgen(Host::Ours, &cdl, &url(&tree, "zarr,file")));
        if written.is_ok() {
            args.extend([archive.display().to_string(), name.clone(), "zip".into()]);
            args.extend([tree.display().to_string(), String::new(), "dir".into()]);
        }
        cases.push((name, written));
    }
    let arg_refs: Vec<&str> = args.iter().map(String::as_str).collect();
    for env in ["zarr2", "zarr3"] {
        let output = common::python::run_script(env, ZARR_READS, &arg_refs);
        let mut lines = output.as_deref().unwrap_or("").lines();
        for (name, written) in &cases {
            let outcome = written.clone().and(output.clone()).and_then(|_| {
                let from_zip = lines.next().unwrap_or("").to_string();
                let from_tree = lines.next().unwrap_or("").to_string();
                for (what, digest) in [("archive", &from_zip), ("directory", &from_tree)] {
                    if digest.trim() == "{}" || digest.contains("\"error\"") {
                        return Err(format!("zarr-python could not read the {what}: {digest}"));
                    }
                }
                common::diff::compare(
                    &from_tree,
                    &from_zip,
                    "zarr-python: directory store vs zip store",
                )
            });
            report.case(&format!("{name} [{env}]"), outcome);
        }
    }
    report.finish(20);
}

#[test]
fn damaged_archives_give_netcdf_errors() {
    let dir = scratch("bad-zip");
    let text = dir.path().join("text.zip");
    fs::write(&text, "not an archive").unwrap();
    let good = dir.path().join("good.zip");
    ncgen(
        Host::Ours,
        &repo_root().join("tests/cdl/storage.cdl"),
        &zip_url(&good, "nczarr"),
    )
    .unwrap();
    let bytes = fs::read(&good).unwrap();
    let truncated = dir.path().join("truncated.zip");
    fs::write(&truncated, &bytes[..bytes.len() * 2 / 3]).unwrap();
    for path in [&text, &truncated, &dir.path().join("missing.zip")] {
        let r = run(Host::Ours, "ncdump", &[&zip_url(path, "nczarr")]);
        assert!(!r.crashed(), "crashed: {}", r.describe());
        assert!(!r.success(), "expected an error: {}", r.describe());
        assert!(
            r.stderr.contains("NetCDF: ") || r.stderr.contains("No such file"),
            "no netCDF message: {}",
            r.describe()
        );
    }
}

/// A home directory below `dir` whose `.ncrc` names library `lib` as user-defined format 0 of
/// zip archives, and where netcdf-c 4.10.1 is cached (with-netcdf-4.10 keeps its environment
/// under $HOME unless told otherwise).
fn ncrc_home(dir: &Path, lib: &Path) -> (PathBuf, String) {
    let home = dir.join("home");
    fs::create_dir_all(&home).unwrap();
    fs::write(
        home.join(".ncrc"),
        format!(
            "NETCDF.UDF0.LIBRARY={}\nNETCDF.UDF0.INIT=nczarr_rs_udf0_init\nNETCDF.UDF0.MAGIC=PK\n",
            lib.display()
        ),
    )
    .unwrap();
    let cache = std::env::var("NC410_HOME")
        .unwrap_or_else(|_| format!("{}/.cache/netcdf-4.10", std::env::var("HOME").unwrap()));
    (home, cache)
}

/// netcdf-c >= 4.10 loads user-defined formats named in `.ncrc`. With our library in slot 0 and
/// the zip signature as its magic number, stock `ncdump` on netcdf-c 4.10.1 (which has no zip
/// storage of its own), with no preload, dumps a plain `x.zip` path like the HDF5 truth.
/// (netcdf-c probes every UDF open by reading the file's magic number, so URLs and directory
/// stores cannot take this route; archives can.)
#[test]
fn netcdf_4101_opens_zip_archives_through_the_ncrc_plugin_keys() {
    let common::Subject::Preload(lib) = common::subject() else {
        eprintln!("reference-only mode: no library to register");
        return;
    };
    let mut report = Report::new("ncrc_udf_zip");
    let dir = scratch("ncrc_udf");
    let (home, cache) = ncrc_home(dir.path(), lib);
    let env = [
        ("HOME", Some(home.to_str().unwrap())),
        ("NC410_HOME", Some(cache.as_str())),
    ];
    for cdl in cdl_files() {
        let name = case_name(&cdl);
        let archive = dir.path().join(format!("{name}.zip"));
        let outcome = (|| {
            ncgen(Host::Ours, &cdl, &zip_url(&archive, "nczarr"))?;
            let truth = common::dump::normalise_name(&hdf5_truth(dir.path(), &cdl, &[]));
            let dumped =
                common::run_env(Host::Ref410, "ncdump", &[archive.to_str().unwrap()], &env);
            if !dumped.success() {
                return Err(format!("{}: {}", dumped.cmdline, dumped.stderr));
            }
            let ours = common::dump::normalise_name(&dumped.stdout);
            common::diff::compare(&truth, &ours, "4.10.1 ncdump x.zip through .ncrc vs HDF5")
        })();
        report.case(&name, outcome);
    }
    report.finish(10);
}

/// Loaded from `.ncrc` (no preload), the library is not the `nc_reclaim_data` that `ncdump`
/// calls on every value it reads, and libnetcdf's crashes on values of our user-defined types:
/// the values of enum, opaque and compound types (variables and attributes) are refused with an
/// error instead, and `ncdump` of such archives fails cleanly (exit 1, a netCDF message) rather
/// than crashing; with the library preloaded the same archives dump.
#[test]
fn ncrc_plugin_keys_refuse_user_defined_values_instead_of_crashing() {
    let common::Subject::Preload(lib) = common::subject() else {
        eprintln!("reference-only mode: no library to register");
        return;
    };
    let dir = scratch("ncrc_udf_user_types");
    let (home, cache) = ncrc_home(dir.path(), lib);
    let env = [
        ("HOME", Some(home.to_str().unwrap())),
        ("NC410_HOME", Some(cache.as_str())),
    ];
    let root = common::repo_root();
    for cdl in [
        "tests/cdl_enum/enum.cdl",
        "tests/cdl_opaque/opaque.cdl",
        "tests/cdl_compound/compound.cdl",
        "tests/cdl_vlen/vlen_atts.cdl",
    ] {
        let cdl = root.join(cdl);
        let archive = dir.path().join(format!("{}.zip", case_name(&cdl)));
        ncgen(Host::Ours, &cdl, &zip_url(&archive, "nczarr")).unwrap_or_else(|e| panic!("{e}"));
        for opts in [&["-h"][..], &[]] {
            let mut args = opts.to_vec();
            args.push(archive.to_str().unwrap());
            let dumped = common::run_env(Host::Ref410, "ncdump", &args, &env);
            assert_eq!(
                dumped.status.and_then(|s| s.code()),
                Some(1),
                "{}",
                dumped.describe()
            );
            assert!(dumped.stderr.contains("NetCDF: "), "{}", dumped.describe());
        }
        let preloaded = common::run(Host::OursOn410, "ncdump", &[archive.to_str().unwrap()]);
        assert!(preloaded.success(), "{}", preloaded.describe());
    }
}
