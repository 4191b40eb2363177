//! A dataset whose root has no objects of its own (no `.zgroup`, `.zattrs` or `.zmetadata`:
//! some writers leave them out) opens as a group when Zarr objects lie below it, as netcdf-c
//! reads it: stock `ncdump` with our library prints what it prints on netcdf-c 4.10.1, from a
//! directory in both modes and from a zip archive of it; a directory holding nothing of Zarr
//! is still "Unknown file format" for both. Such a dataset opens read-only: its arrays may
//! carry NCZarr metadata that a pure-Zarr root written beside them would contradict.

mod common;

use common::{Host, ncdump, run, scratch, url};
use std::fs;
use std::io::Write;
use std::path::Path;

/// Writes `objects` (key, bytes) below `root`.
fn write_objects(root: &Path, objects: &[(&str, Vec<u8>)]) {
    for (key, bytes) in objects {
        let path = root.join(key);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, bytes).unwrap();
    }
}

/// An array at the root level and one in a group, uncompressed, with dimension names, and an
/// empty one without; the root itself has no object.
fn rootless_dataset() -> Vec<(&'static str, Vec<u8>)> {
    let ints = |vals: &[i32]| {
        vals.iter()
            .flat_map(|v| v.to_le_bytes())
            .collect::<Vec<u8>>()
    };
    let doubles: Vec<u8> = [0.5f64, 1.5, -2.25, 1e300]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    vec![
        (
            "temp/.zarray",
            br#"{"zarr_format": 2, "shape": [2, 3], "chunks": [2, 2], "dtype": "<i4",
                "fill_value": null, "order": "C", "compressor": null, "filters": null}"#
                .to_vec(),
        ),
        (
            "temp/.zattrs",
            br#"{"_ARRAY_DIMENSIONS": ["y", "x"], "units": "K"}"#.to_vec(),
        ),
        ("temp/0.0", ints(&[1, 2, 4, 5])),
        ("temp/0.1", ints(&[3, -1, 6, -1])),
        // No values and no dimension names: an anonymous dimension of length 0, which netCDF
        // can only have unlimited.
        (
            "empty/.zarray",
            br#"{"zarr_format": 2, "shape": [0], "chunks": [1], "dtype": "<i4",
                "fill_value": null, "order": "C", "compressor": null, "filters": null}"#
                .to_vec(),
        ),
        ("obs/.zgroup", br#"{"zarr_format": 2}"#.to_vec()),
        (
            "obs/t/.zarray",
            br#"{"zarr_format": 2, "shape": [4], "chunks": [4], "dtype": "<f8",
                "fill_value": null, "order": "C", "compressor": null, "filters": null}"#
                .to_vec(),
        ),
        ("obs/t/0", doubles),
    ]
}

fn zip_directory(dir: &Path, top: &str, archive: &Path) {
    let mut zip = zip::ZipWriter::new(fs::File::create(archive).unwrap());
    let stored =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for (key, bytes) in rootless_dataset() {
        zip.start_file(format!("{top}/{key}"), stored).unwrap();
        zip.write_all(&bytes).unwrap();
    }
    zip.finish().unwrap();
    assert!(dir.join(top).is_dir());
}

/// The dump without its first line (which names the dataset after its file).
fn body(dump: &str) -> &str {
    dump.split_once('\n').map_or("", |(_, rest)| rest)
}

#[test]
fn a_root_without_objects_opens_as_netcdf_c_reads_it() {
    let dir = scratch("implicit-root");
    let root = dir.path().join("rootless");
    write_objects(&root, &rootless_dataset());
    for mode in ["zarr,file", "nczarr,file"] {
        let u = url(&root, mode);
        let ours = ncdump(Host::Ours, &[], &u).unwrap_or_else(|e| panic!("ours, {mode}: {e}"));
        let reference =
            ncdump(Host::Ref410, &[], &u).unwrap_or_else(|e| panic!("4.10.1, {mode}: {e}"));
        assert_eq!(ours, reference, "mode={mode}");
        assert!(
            ours.contains("int temp(y, x)")
                && ours.contains("group: obs")
                && ours.contains("_Anonymous_Dim_0 = UNLIMITED ;"),
            "{ours}"
        );
        assert!(
            ours.contains("1, 2, 3,") && ours.contains("1e+300"),
            "{ours}"
        );
    }

    let writable = nczarr_rs::url::DatasetUrl::parse(&url(&root, "nczarr,file")).unwrap();
    let opened = nczarr_rs::api::Dataset::open(&writable, true).expect("opens for writing");
    let refused = opened.check_writable().unwrap_err().to_string();
    assert!(refused.contains("no root group object"), "{refused}");

    let archive = dir.path().join("rootless.zip");
    zip_directory(dir.path(), "rootless", &archive);
    let from_zip = ncdump(Host::Ours, &[], &url(&archive, "zarr,zip")).expect("ours, zip");
    let from_directory = ncdump(Host::Ours, &[], &url(&root, "zarr,file")).unwrap();
    assert_eq!(body(&from_zip), body(&from_directory));
}

#[test]
fn a_directory_without_zarr_objects_is_not_a_dataset() {
    let dir = scratch("implicit-root-none");
    let root = dir.path().join("plain");
    write_objects(&root, &[("notes/readme.txt", b"not zarr".to_vec())]);
    for host in [Host::Ours, Host::Ref410] {
        let r = run(host, "ncdump", &["-h", &url(&root, "zarr,file")]);
        assert!(
            r.refused_saying("Unknown file format"),
            "{host:?}: {}",
            r.describe()
        );
    }
}
