//! How datasets are named to libnetcdf, through stock tools and netCDF4-python with the library
//! loaded:
//! - fragments on which libnetcdf 4.9.0's mode inference never ends (`#mode=zarr`, ...) open
//!   and create the dataset their mode words name, under a memory limit that turns the old
//!   endless loop into a failure instead of an exhausted machine;
//! - a Zarr directory or zip archive named by plain path (or a `file://` URL without a
//!   fragment) opens as its URL does, while other paths, and paths to create, are left to
//!   libnetcdf;
//! - netCDF4-python, whose wheel loads its own libnetcdf privately (`RTLD_LOCAL`), is served by
//!   the library when it is preloaded: it reads what libnetcdf's own NCZarr reads, and what it
//!   and xarray's netCDF4 engine create is written by the library.

mod common;

use common::{Host, Run, ncdump, ncgen, repo_root, run, scratch, url};
use std::fs;
use std::path::{Path, PathBuf};

/// Address-space limit for tools given a fragment that used to loop: the loop allocated until
/// the machine ran out of memory; under this limit it fails within seconds.
const LOOP_GUARD: &str = "--as=2147483648";

fn skip_in_reference_mode() -> bool {
    if common::reference_only() {
        eprintln!("reference-only mode: these repairs are the library's");
        return true;
    }
    false
}

/// `storage.cdl` written by the library at `dir/<name>` with `mode`.
fn written(dir: &Path, name: &str, mode: &str) -> PathBuf {
    let store = dir.join(name);
    let cdl = repo_root().join("tests/cdl/storage.cdl");
    ncgen(Host::Ours, &cdl, &url(&store, mode)).unwrap_or_else(|e| panic!("{e}"));
    store
}

/// `ncdump target` (with the library) under [`LOOP_GUARD`].
fn guarded_dump(host: Host, target: &str) -> Run {
    run(host, "prlimit", &[LOOP_GUARD, "ncdump", target])
}

#[test]
fn mode_words_libnetcdf_490_loops_on_open_and_create() {
    if skip_in_reference_mode() {
        return;
    }
    let dir = scratch("loop-modes");
    let store = written(dir.path(), "x.zarr", "nczarr,file");
    let at = |fragment: &str| format!("file://{}#{fragment}", store.display());
    // Each fragment that loops, next to the same mode words ending in a storage word (which
    // never looped): the same dataset must come out.
    for (looping, same) in [
        ("mode=zarr", "mode=zarr,file"),
        ("mode=xarray", "mode=xarray,file"),
        ("mode=noxarray", "mode=noxarray,file"),
        ("mode=nczarr,zarr", "mode=nczarr,zarr,file"),
        ("mode=nczarr,noxarray", "mode=nczarr,noxarray,file"),
        ("xarray", "mode=zarr,file"),
        ("mode=zarr&mode=file", "mode=zarr,file"),
    ] {
        let got = guarded_dump(Host::Ours, &at(looping));
        let want = ncdump(Host::Ours, &[], &at(same)).unwrap();
        assert_eq!(got.output(), Ok(want), "#{looping}");
    }
    // What the library rewrote, as it says with NCZARR_RS_DEBUG: the looping fragments get the
    // words 4.10.1 infers, ending in `nczarr`; forms on which 4.9.0 does not loop (it reads
    // some through quirks of its own) are left for libnetcdf to read as it always has.
    let rewrites = |fragment: &str| {
        let r = common::run_env(
            Host::Ours,
            "prlimit",
            &[LOOP_GUARD, "ncdump", "-h", &at(fragment)],
            &[("NCZARR_RS_DEBUG", Some("1"))],
        );
        // `#XARRAY` is no mode key to libnetcdf: it fails as it always has, without a crash.
        assert!(!r.crashed(), "{}", r.describe());
        r.stderr
            .lines()
            .filter_map(|l| l.split_once(" is opened as ").map(|(_, to)| to.to_string()))
            .collect::<Vec<_>>()
    };
    for (looping, repaired) in [
        ("mode=nczarr,zarr", "mode=zarr,nczarr"),
        ("xarray", "mode=zarr,nczarr"),
        ("mode=zarr&mode=file", "mode=zarr,file,nczarr"),
        ("mode=zarr&xarray", "mode=zarr,nczarr"),
    ] {
        assert_eq!(rewrites(looping), [at(repaired)], "#{looping}");
    }
    for kept in [
        "zarr",
        "noxarray",
        "XARRAY",
        "mode=nczarr&mode=file",
        "mode=zarr,file",
    ] {
        assert_eq!(rewrites(kept), Vec::<String>::new(), "#{kept}");
    }
    // The prefix form names the same parameters.
    let prefixed = format!("[mode=zarr]{}", at("").trim_end_matches('#'));
    let r = common::run_env(
        Host::Ours,
        "prlimit",
        &[LOOP_GUARD, "ncdump", "-h", &prefixed],
        &[("NCZARR_RS_DEBUG", Some("1"))],
    );
    assert!(r.success(), "{}", r.describe());
    assert!(
        r.stderr
            .contains(&format!(" is opened as {}", at("mode=zarr,nczarr")))
    );
    // `#zarr` creates NCZarr with or without the library (libnetcdf's expansion of it), so it
    // is not rewritten into the pure Zarr its words might suggest.
    let nczarr_made = dir.path().join("w.zarr");
    let cdl = repo_root().join("tests/cdl/storage.cdl");
    let target = format!("file://{}#zarr", nczarr_made.display());
    ncgen(Host::Ours, &cdl, &target).unwrap();
    let zattrs = fs::read_to_string(nczarr_made.join(".zattrs")).unwrap();
    assert!(
        zattrs.contains("_nczarr_superblock"),
        "#zarr made pure Zarr: {zattrs}"
    );
    // A zip archive named with a looping fragment reads as with `mode=zarr,zip`.
    let zip = written(dir.path(), "x.zip", "nczarr,zip");
    let zip_at = |fragment: &str| format!("file://{}#{fragment}", zip.display());
    let got = guarded_dump(Host::Ours, &zip_at("mode=zarr"));
    let want = ncdump(Host::Ours, &[], &zip_at("mode=zarr,zip")).unwrap();
    assert_eq!(got.output(), Ok(want), "zip #mode=zarr");
    // Created with a looping fragment: a pure Zarr store, as `mode=zarr,file` makes.
    let created = dir.path().join("y.zarr");
    let target = format!("file://{}#mode=zarr", created.display());
    let r = run(
        Host::Ours,
        "prlimit",
        &[
            LOOP_GUARD,
            "ncgen",
            "-4",
            "-o",
            &target,
            cdl.to_str().unwrap(),
        ],
    );
    assert!(r.success(), "{}", r.describe());
    let zattrs = fs::read_to_string(created.join("be_int/.zattrs")).unwrap();
    assert!(
        zattrs.contains("_ARRAY_DIMENSIONS") && !zattrs.contains("_nczarr"),
        "not pure Zarr: {zattrs}"
    );
    let pure = written(dir.path(), "z.zarr", "zarr,file");
    let as_made = ncdump(Host::Ours, &[], &url(&created, "zarr,file")).unwrap();
    let reference = ncdump(Host::Ours, &[], &url(&pure, "zarr,file")).unwrap();
    assert_eq!(
        as_made.replace("netcdf y {", ""),
        reference.replace("netcdf z {", "")
    );
}

/// Every looping form here (a `mode` key with stand-alone macros, two-word macros that shift
/// the keys after them, a `[...]` prefix) reads on 4.9.0 what the library on 4.10.1, which
/// never loops, reads from the same name: the repair gives 4.9.0 the words 4.10.1 infers.
#[test]
fn looping_names_read_on_4_9_0_as_on_4_10() {
    if skip_in_reference_mode() {
        return;
    }
    let dir = scratch("loop-as-410");
    let nczarr = written(dir.path(), "n.zarr", "nczarr,file");
    let pure = written(dir.path(), "p.zarr", "zarr,file");
    for store in [&nczarr, &pure] {
        let file = format!("file://{}", store.display());
        for name in [
            format!("{file}#mode=zarr&xarray"),
            format!("{file}#mode=nczarr&xarray"),
            format!("{file}#mode=nczarr,file&mode=zarr&xarray"),
            format!("{file}#xarray&mode=noxarray"),
            format!("{file}#xarray&xarray&log"),
            format!("{file}#zarr&zarr&mode=zarr"),
            format!("{file}#noxarray&zarr&xarray"),
            format!("[mode=zarr]{file}"),
            format!("[log][xarray]{file}"),
            format!("[mode=nczarr]{file}#xarray"),
            // libnetcdf's URL parser wants only `file:`, drops control characters and the
            // first of two backslashes.
            format!("file:{}#mode=zarr", store.display()),
            format!("{file}#mode=file,zarr\t"),
            format!("{file}#mode=zarr&x=a\\\\b"),
        ] {
            let on_490 = guarded_dump(Host::Ours, &name);
            let on_410 = run(Host::OursOn410, "ncdump", &[&name]);
            assert!(on_490.success(), "{name}: {}", on_490.describe());
            assert_eq!(on_490.output(), on_410.output(), "{name}");
        }
        // Two backslashes left once the tab between them goes, and mode words that loop once
        // 4.9.0 drops their non-ASCII bytes: no rewrite reads back as it is written, so the
        // name is refused rather than left to loop.
        for looping in [
            format!("{file}#mode=zarr&x=a\\\t\\b"),
            format!("{file}#mode=zar\u{e9}r"),
        ] {
            let refused = guarded_dump(Host::Ours, &looping);
            assert!(
                refused.refused_saying("never finish"),
                "{looping}: {}",
                refused.describe()
            );
        }
    }
}

#[test]
fn plain_paths_open_zarr_datasets() {
    if skip_in_reference_mode() {
        return;
    }
    let dir = scratch("plain-paths");
    let store = written(dir.path(), "x.zarr", "nczarr,file");
    let zip = written(dir.path(), "x.zip", "nczarr,zip");
    let by_url = ncdump(Host::Ours, &[], &url(&store, "nczarr,file")).unwrap();
    let zip_by_url = ncdump(Host::Ours, &[], &url(&zip, "nczarr,zip")).unwrap();
    for host in [Host::Ours, Host::OursOn410] {
        for path in [
            store.display().to_string(),
            format!("file://{}", store.display()),
        ] {
            assert_eq!(
                ncdump(host, &[], &path),
                Ok(by_url.clone()),
                "{host:?} {path}"
            );
        }
        let zip_path = zip.display().to_string();
        assert_eq!(
            ncdump(host, &[], &zip_path),
            Ok(zip_by_url.clone()),
            "{host:?}"
        );
    }
    // nccopy from a plain path to netCDF-4: the same data in an HDF5 file.
    let copy = dir.path().join("copy.nc");
    let r = run(
        Host::Ours,
        "nccopy",
        &[store.to_str().unwrap(), copy.to_str().unwrap()],
    );
    assert!(r.success(), "{}", r.describe());
    let copied = ncdump(Host::Ours, &[], copy.to_str().unwrap()).unwrap();
    assert_eq!(
        copied.replace("netcdf copy {", ""),
        by_url.replace("netcdf x {", "")
    );
    // Left to libnetcdf: a directory that holds no dataset, and a plain path to create (an
    // HDF5 file, whatever its name).
    let empty = dir.path().join("empty.zarr");
    fs::create_dir(&empty).unwrap();
    let r = run(Host::Ours, "ncdump", &[empty.to_str().unwrap()]);
    assert!(r.refused_saying("Unknown file format"), "{}", r.describe());
    let created = dir.path().join("new.zarr");
    let cdl = repo_root().join("tests/cdl/storage.cdl");
    ncgen(Host::Ours, &cdl, created.to_str().unwrap()).unwrap();
    let magic = fs::read(&created).unwrap();
    assert!(
        magic.starts_with(b"\x89HDF"),
        "a plain path to create is an HDF5 file"
    );
}

/// Prints every variable of the dataset at argv[1] as JSON, then, when argv[2] is given,
/// creates a dataset there with one variable, and copies the first dataset with xarray's
/// netCDF4 engine to argv[3] and prints whether it reads back identical.
const PYTHON_SCRIPT: &str = r#"
import json, sys
import netCDF4
with netCDF4.Dataset(sys.argv[1]) as d:
    print(json.dumps({k: v[:].filled(0).tolist() for k, v in d.variables.items()}, sort_keys=True))
if len(sys.argv) > 2:
    with netCDF4.Dataset(sys.argv[2], "w") as d:
        d.createDimension("x", 3)
        d.createVariable("v", "f4", ("x",))[:] = [1.5, 2.5, 3.5]
    import xarray
    source = xarray.open_dataset(sys.argv[1], engine="netcdf4").load()
    source.to_netcdf(sys.argv[3], engine="netcdf4")
    print("identical:", xarray.open_dataset(sys.argv[3], engine="netcdf4").identical(source))
"#;

/// netCDF4-python (the wheel, which loads its own netcdf-c 4.10.1 as Python loads extension
/// libraries) running [`PYTHON_SCRIPT`], with `preload` preloaded.
fn python(preload: Option<&Path>, args: &[&str]) -> Result<String, String> {
    let all: Vec<&str> = ["-c", PYTHON_SCRIPT].iter().chain(args).copied().collect();
    common::python::run_with("netcdf4", &all, preload)
}

#[test]
fn netcdf4_python_is_served_by_the_preloaded_library() {
    if skip_in_reference_mode() {
        return;
    }
    let common::Subject::Preload(lib) = common::subject() else {
        return;
    };
    let dir = scratch("netcdf4-python");
    let store = written(dir.path(), "x.zarr", "nczarr,file");
    let at = url(&store, "nczarr,file");
    // The wheel's own NCZarr (netcdf-c 4.10.1) reads what we wrote: the expected values.
    let theirs = python(None, &[&at]).unwrap();
    let created = dir.path().join("py.zarr");
    let target = url(&created, "nczarr,file");
    let copied = dir.path().join("xr.zarr");
    let copy = url(&copied, "nczarr,file");
    let ours = python(Some(lib), &[&at, &target, &copy]).unwrap();
    assert_eq!(ours, format!("{theirs}identical: True\n"));
    assert_eq!(
        python(Some(lib), &[store.to_str().unwrap()]).unwrap(),
        theirs
    );
    // Written by the library (netcdf-c's `_NCProperties` names netcdf), and readable by the
    // wheel's own NCZarr.
    for written in [&created, &copied] {
        let zattrs = fs::read_to_string(written.join(".zattrs")).unwrap();
        assert!(
            zattrs.contains("nczarr-rs="),
            "not written by the library: {zattrs}"
        );
    }
    let read_back = python(None, &[&target]).unwrap();
    assert!(read_back.contains("[1.5, 2.5, 3.5]"), "{read_back}");
    assert_eq!(python(None, &[&copy]).unwrap(), theirs);
}
