//! Writing datasets into zip archives through the dataset API, with chunks large enough to go
//! straight into the archive being written: whole writes, partial writes that rewrite chunks
//! (a chunk cache too small to hold them evicts them half written, so they are stored several
//! times), syncs between them, and a close. What reads back equals a directory store written
//! the same way, and the archive holds each object once, without the bytes of the copies it
//! replaced, every entry's CRC right for the zip crate and Python's `zipfile`.

use nczarr_rs::api::{CreateOptions, Dataset, Slab};
use nczarr_rs::model::{GroupId, NcType, Storage, Tree};
use nczarr_rs::url::DatasetUrl;
use std::fs;
use std::io::Read;
use std::path::Path;

const G: GroupId = Tree::ROOT;
const SHAPE: [u64; 3] = [8, 512, 512];
/// 2 x 256 x 256 floats: 512 KiB chunks.
const CHUNKS: [u64; 3] = [2, 256, 256];

fn slab(start: [u64; 3], count: [u64; 3]) -> Slab {
    Slab {
        start: start.to_vec(),
        count: count.to_vec(),
        stride: vec![1; 3],
    }
}

fn values(n: u64, scale: f32, offset: f32) -> Vec<u8> {
    (0..n)
        .flat_map(|i| (i as f32 * scale + offset).to_ne_bytes())
        .collect()
}

/// Writes the dataset at `url`: everything, a sync, a partial overwrite, a sync, another
/// partial overwrite through a chunk cache too small for the chunks it touches, and a close.
fn write(url: &DatasetUrl) {
    let mut ds = Dataset::create(url, CreateOptions::default()).unwrap();
    let dims: Vec<i32> = SHAPE
        .iter()
        .enumerate()
        .map(|(i, &n)| ds.def_dim(G, &format!("d{i}"), n, false).unwrap().0 as i32)
        .collect();
    let v = ds.def_var(G, "v", NcType::Float, &dims).unwrap();
    ds.def_var_chunking(G, v, Storage::Chunked, Some(&CHUNKS))
        .unwrap();
    ds.enddef().unwrap();
    let n: u64 = SHAPE.iter().product();
    ds.put_fixed(
        G,
        v,
        &slab([0; 3], SHAPE),
        None,
        NcType::Float,
        &values(n, 1.0, 0.0),
    )
    .unwrap();
    ds.sync().unwrap();
    let corner = slab([6, 0, 200], [2, 300, 100]);
    ds.put_fixed(
        G,
        v,
        &corner,
        None,
        NcType::Float,
        &values(60_000, 0.5, 7.0),
    )
    .unwrap();
    ds.sync().unwrap();
    // Rows 100..400 of times 1..6, one time at a time, after the last sync: each chunk is
    // written in halves, and stored once per half.
    ds.set_var_chunk_cache(G, v, 1 << 20, 2, 1.0).unwrap();
    for t in 1..6 {
        let part = slab([t, 100, 0], [1, 300, 512]);
        ds.put_fixed(
            G,
            v,
            &part,
            None,
            NcType::Float,
            &values(300 * 512, -1.0, t as f32),
        )
        .unwrap();
    }
    ds.close().unwrap();
}

fn read_all(url: &DatasetUrl) -> Vec<u8> {
    let mut ds = Dataset::open(url, false).unwrap();
    let n: u64 = SHAPE.iter().product();
    let mut out = vec![0u8; n as usize * 4];
    ds.get_fixed(G, 0, &slab([0; 3], SHAPE), None, NcType::Float, &mut out)
        .unwrap();
    ds.close().unwrap();
    out
}

/// Every entry of the archive with its bytes, read with its CRC checked.
fn entries(path: &Path) -> Vec<(String, Vec<u8>)> {
    let mut archive = zip::ZipArchive::new(fs::File::open(path).unwrap()).unwrap();
    (0..archive.len())
        .map(|i| {
            let mut entry = archive.by_index(i).unwrap();
            let mut data = Vec::new();
            entry.read_to_end(&mut data).unwrap();
            (entry.name().unwrap().into_owned(), data)
        })
        .collect()
}

#[test]
fn rewritten_chunks_in_a_zip_archive_read_back_as_from_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let tree = DatasetUrl::parse(&format!(
        "file://{}#mode=nczarr,file",
        dir.path().join("d.zarr").display()
    ))
    .unwrap();
    let archive = dir.path().join("d.zip");
    let zipped =
        DatasetUrl::parse(&format!("file://{}#mode=nczarr,zip", archive.display())).unwrap();
    write(&tree);
    write(&zipped);
    let want = read_all(&tree);
    assert!(read_all(&zipped) == want, "the archive reads differently");

    let entries = entries(&archive);
    let names: Vec<&str> = entries.iter().map(|(n, _)| n.as_str()).collect();
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "an entry twice: {names:?}");
    let chunk_names = names.iter().filter(|n| n.starts_with("d/v/")).count();
    assert!(chunk_names >= 16, "{names:?}");
    for (name, data) in &entries {
        let key = name.strip_prefix("d/").unwrap();
        let from_tree = fs::read(dir.path().join("d.zarr").join(key)).unwrap();
        if !key.ends_with(".zattrs") && !key.ends_with(".zarray") && !key.ends_with(".zgroup") {
            assert!(*data == from_tree, "{key} differs from the directory's");
        }
    }
    let live: u64 = entries
        .iter()
        .map(|(n, d)| (n.len() * 2 + d.len()) as u64)
        .sum();
    let size = fs::metadata(&archive).unwrap().len();
    assert!(
        size < live + 200 * entries.len() as u64,
        "{size} bytes for {live} of names and data: replaced chunks were kept"
    );
    let leftovers: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("nczarr-tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let checked = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys, zipfile; print(zipfile.ZipFile(sys.argv[1]).testzip())",
            archive.to_str().unwrap(),
        ])
        .output()
        .expect("python3 runs");
    assert_eq!(
        String::from_utf8_lossy(&checked.stdout).trim(),
        "None",
        "{}",
        String::from_utf8_lossy(&checked.stderr)
    );
}

/// The variables of a dataset in the archive at `path`, as another process opening it now
/// sees them.
fn variables_in(path: &Path) -> Vec<String> {
    let url = DatasetUrl::parse(&format!("file://{}#mode=nczarr,zip", path.display())).unwrap();
    let ds = Dataset::open(&url, false).unwrap();
    let names = ds
        .tree
        .group(G)
        .vars
        .iter()
        .map(|v| v.name.clone())
        .collect();
    ds.close().unwrap();
    names
}

/// Written one variable at a time, as netCDF4-python and xarray write (each definition enters
/// define mode, each write leaves it), the archive is completed and replaced at `nc_enddef`,
/// `nc_sync` and `nc_close` only, not each time a write leaves define mode: that copies every
/// entry of the archive, once per variable.
#[test]
fn leaving_define_mode_for_a_write_does_not_replace_the_archive() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("d.zip");
    let url = DatasetUrl::parse(&format!("file://{}#mode=nczarr,zip", archive.display())).unwrap();
    let mut ds = Dataset::create(&url, CreateOptions::default()).unwrap();
    let x = ds.def_dim(G, "x", 4, false).unwrap().0 as i32;
    let define_and_write = |ds: &mut Dataset, name: &str| {
        let v = ds.def_var(G, name, NcType::Float, &[x]).unwrap();
        ds.put_fixed(G, v, &slab1(4), None, NcType::Float, &values(4, 1.0, 0.0))
            .unwrap();
    };
    ds.def_var(G, "v0", NcType::Float, &[x]).unwrap();
    ds.enddef().unwrap();
    let committed = fs::read(&archive).unwrap();
    assert_eq!(variables_in(&archive), ["v0"]);
    define_and_write(&mut ds, "v1");
    define_and_write(&mut ds, "v2");
    assert!(
        fs::read(&archive).unwrap() == committed,
        "a write leaving define mode replaced the archive"
    );
    ds.sync().unwrap();
    assert_eq!(variables_in(&archive), ["v0", "v1", "v2"]);
    define_and_write(&mut ds, "v3");
    ds.redef().unwrap();
    ds.def_var(G, "v4", NcType::Float, &[x]).unwrap();
    ds.enddef().unwrap();
    assert_eq!(variables_in(&archive), ["v0", "v1", "v2", "v3", "v4"]);
    define_and_write(&mut ds, "v5");
    ds.close().unwrap();
    assert_eq!(variables_in(&archive), ["v0", "v1", "v2", "v3", "v4", "v5"]);
    let mut back = Dataset::open(&url, false).unwrap();
    let mut out = vec![0u8; 16];
    back.get_fixed(G, 5, &slab1(4), None, NcType::Float, &mut out)
        .unwrap();
    assert!(out == values(4, 1.0, 0.0));
}

fn slab1(n: u64) -> Slab {
    Slab {
        start: vec![0],
        count: vec![n],
        stride: vec![1],
    }
}
