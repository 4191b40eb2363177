//! Consolidated metadata (`.zmetadata`) through the real path: stock `ncgen`/`ncdump` with our
//! library write it, read it for the whole open, and it never goes stale when an existing dataset
//! is modified (netcdf-c leaves it stale: reference notes §1.15).

mod common;

use common::{Host, case_name, cdl_files, dump, hdf5_truth, ncdump, ncgen, scratch, url};
use nczarr_rs::api::{Dataset, Owner};
use nczarr_rs::model::{NcType, Values};
use nczarr_rs::url::DatasetUrl;
use serde_json::Value;
use std::fs;
use std::path::Path;

const MODE: &str = "nczarr,consolidated,file";

fn zmetadata(store: &Path) -> Value {
    metadata_json(&fs::read(store.join(".zmetadata")).expect(".zmetadata written"))
}

/// A metadata object as JSON (attributes' NaN and infinities are bare literals, as zarr-python
/// writes them, which strict JSON refuses).
fn metadata_json(bytes: &[u8]) -> Value {
    nczarr_rs::format::lenient::parse(bytes)
        .expect("metadata is JSON")
        .to_value()
}

/// Every metadata object on disk is mirrored, byte for byte as JSON, in `.zmetadata`.
fn assert_mirrors_store(store: &Path) {
    let z = zmetadata(store);
    assert_eq!(z["zarr_consolidated_format"], 1);
    let meta = z["metadata"].as_object().unwrap();
    let mut on_disk = 0;
    for entry in walk(store) {
        let rel = entry
            .strip_prefix(store)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let name = entry.file_name().unwrap().to_string_lossy().into_owned();
        if [".zgroup", ".zarray", ".zattrs"].contains(&name.as_str()) {
            on_disk += 1;
            let file = metadata_json(&fs::read(&entry).unwrap());
            assert_eq!(meta.get(&rel), Some(&file), "{rel} differs from .zmetadata");
        }
    }
    assert_eq!(
        meta.len(),
        on_disk,
        ".zmetadata names objects that are not on disk"
    );
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn written_by_ncgen_and_used_for_the_whole_open() {
    let dir = scratch("consolidated");
    let mut checked = 0;
    for cdl in cdl_files() {
        let name = case_name(&cdl);
        let store = dir.path().join(format!("{name}.zarr"));
        let u = url(&store, MODE);
        ncgen(Host::Ours, &cdl, &u).unwrap();
        assert_mirrors_store(&store);
        let truth = dump::normalise_name(&hdf5_truth(dir.path(), &cdl, &["-p", "9,17"]));
        // Break every per-object metadata file: an open that reads .zmetadata does not notice.
        for entry in walk(&store) {
            let n = entry.file_name().unwrap().to_string_lossy().into_owned();
            if [".zgroup", ".zarray", ".zattrs"].contains(&n.as_str()) {
                fs::write(&entry, b"{ broken").unwrap();
            }
        }
        let ours = dump::normalise_name(&ncdump(Host::Ours, &["-p", "9,17"], &u).unwrap());
        assert_eq!(
            ours, truth,
            "{name}: dump from .zmetadata differs from the HDF5 truth"
        );
        checked += 1;
    }
    assert!(checked >= 15, "only {checked} CDL files");
}

#[test]
fn never_stale_after_modifying_an_existing_dataset() {
    let dir = scratch("consolidated-modify");
    let cdl = common::repo_root().join("tests/cdl/groups.cdl");
    let store = dir.path().join("g.zarr");
    ncgen(Host::Ours, &cdl, &url(&store, MODE)).unwrap();

    // Reopen without asking for consolidation: the store has .zmetadata, so it is maintained.
    let plain = DatasetUrl::parse(&url(&store, "nczarr,file")).unwrap();
    let mut ds = Dataset::open(&plain, true).unwrap();
    let root = ds.group_id(0).unwrap();
    ds.put_att(
        Owner::Group(root),
        "history",
        NcType::Char,
        Values::text("modified"),
    )
    .unwrap();
    let g1 = ds.tree.child_named(root, "g1").expect("groups.cdl has g1");
    ds.rename_grp(g1, "renamed").unwrap();
    ds.close().unwrap();

    assert_mirrors_store(&store);
    let z = zmetadata(&store);
    assert_eq!(z["metadata"][".zattrs"]["history"], "modified");
    assert!(z["metadata"].get("renamed/.zgroup").is_some());
    assert!(
        z["metadata"].get("g1/.zgroup").is_none(),
        "stale group left in .zmetadata"
    );
    let dumped = ncdump(Host::Ours, &["-h"], &url(&store, MODE)).unwrap();
    assert!(dumped.contains(":history = \"modified\""), "{dumped}");
    assert!(dumped.contains("group: renamed {"), "{dumped}");
}

#[test]
fn reopening_for_writing_without_changes_rewrites_nothing() {
    let dir = scratch("consolidated-untouched");
    let cdl = common::repo_root().join("tests/cdl/groups.cdl");
    let store = dir.path().join("g.zarr");
    ncgen(Host::Ours, &cdl, &url(&store, MODE)).unwrap();
    let stamp = |p: &Path| fs::metadata(p).unwrap().modified().unwrap();
    let before: Vec<_> = walk(&store).into_iter().map(|p| (stamp(&p), p)).collect();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let ds = Dataset::open(&DatasetUrl::parse(&url(&store, MODE)).unwrap(), true).unwrap();
    ds.close().unwrap();
    for (t, p) in before {
        assert_eq!(stamp(&p), t, "{} was rewritten", p.display());
    }
}
