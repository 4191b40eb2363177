//! Data-path rules on reopened datasets, through the Rust API on a directory store: a string
//! variable that already holds data widens for a longer string (its stored chunks rewritten at
//! the new width, every string whole, the width at least doubling; a damaged chunk refuses it
//! and changes nothing), and a variable whose data cannot be served refuses writes without
//! touching the dataset (no unlimited dimension grows, no chunk is written).

use nczarr_rs::api::{CreateOptions, Dataset, Slab};
use nczarr_rs::error::Error;
use nczarr_rs::model::{GroupId, NcType, Storage, Tree};
use nczarr_rs::url::DatasetUrl;
use std::fs;
use std::path::Path;

const G: GroupId = Tree::ROOT;

fn url(root: &Path) -> DatasetUrl {
    DatasetUrl::parse(&format!("file://{}#mode=nczarr,file", root.display())).unwrap()
}

fn slab(start: u64, count: u64) -> Slab {
    Slab {
        start: vec![start],
        count: vec![count],
        stride: vec![1],
    }
}

/// A dataset with an unlimited dimension `t` and a string variable `s(t)` holding `first`.
fn make(root: &Path, first: &[&str]) {
    let mut ds = Dataset::create(&url(root), CreateOptions::default()).unwrap();
    let t = ds.def_dim(G, "t", 0, true).unwrap();
    ds.def_var(G, "s", NcType::String, &[t.0 as i32]).unwrap();
    ds.enddef().unwrap();
    let data: Vec<Vec<u8>> = first.iter().map(|s| s.as_bytes().to_vec()).collect();
    ds.put_strings(G, 0, &slab(0, data.len() as u64), &data)
        .unwrap();
    ds.close().unwrap();
}

/// A dataset whose string variable `s(n)`, in chunks of two, holds `w0`, `w1`, ...
fn words_in_chunks_of_two(root: &Path, n: u64) -> Vec<Vec<u8>> {
    let mut ds = Dataset::create(&url(root), CreateOptions::default()).unwrap();
    let dim = ds.def_dim(G, "n", n, false).unwrap();
    ds.def_var(G, "s", NcType::String, &[dim.0 as i32]).unwrap();
    ds.def_var_chunking(G, 0, Storage::Chunked, Some(&[2]))
        .unwrap();
    ds.enddef().unwrap();
    let words: Vec<Vec<u8>> = (0..n).map(|i| format!("w{i}").into_bytes()).collect();
    ds.put_strings(G, 0, &slab(0, n), &words).unwrap();
    ds.close().unwrap();
    words
}

fn strings(root: &Path, n: u64) -> Vec<String> {
    let mut ds = Dataset::open(&url(root), false).unwrap();
    ds.get_strings(G, 0, &slab(0, n))
        .unwrap()
        .into_iter()
        .map(|s| String::from_utf8(s).unwrap())
        .collect()
}

#[test]
fn stored_strings_widen_for_longer_strings_after_reopening() {
    let dir = tempfile::TempDir::new().unwrap();
    let root = dir.path().join("s.zarr");
    make(&root, &["a", "b", "c"]);
    let dtype = |root: &Path| {
        let zarray: serde_json::Value =
            serde_json::from_slice(&fs::read(root.join("s/.zarray")).unwrap()).unwrap();
        zarray["dtype"].as_str().unwrap().to_string()
    };
    assert_eq!(dtype(&root), "|S128");
    let long = "x".repeat(300);
    let mut ds = Dataset::open(&url(&root), true).unwrap();
    ds.put_strings(G, 0, &slab(1, 1), &[long.as_bytes().to_vec()])
        .unwrap();
    // The metadata follows the rewritten chunks at once, not only at close.
    assert_eq!(dtype(&root), "|S300");
    ds.close().unwrap();
    assert_eq!(dtype(&root), "|S300");
    assert_eq!(strings(&root, 3), ["a", long.as_str(), "c"]);
}

#[test]
fn a_damaged_chunk_refuses_widening_and_changes_nothing() {
    let dir = tempfile::TempDir::new().unwrap();
    let root = dir.path().join("d.zarr");
    let words = words_in_chunks_of_two(&root, 8);
    fs::write(root.join("s/3"), b"short").unwrap();
    let zarray = fs::read(root.join("s/.zarray")).unwrap();

    let mut ds = Dataset::open(&url(&root), true).unwrap();
    let long = vec![b'x'; 130];
    let err = ds.put_strings(G, 0, &slab(0, 1), &[long]).unwrap_err();
    assert!(matches!(err, Error::ChunkSize { .. }), "{err}");
    ds.close().unwrap();
    assert_eq!(fs::read(root.join("s/.zarray")).unwrap(), zarray);
    let mut ds = Dataset::open(&url(&root), false).unwrap();
    let read = ds.get_strings(G, 0, &slab(0, 6)).unwrap();
    assert_eq!(read, words[..6]);

    // Healthy again, the same string widens the variable to twice its width.
    fs::remove_file(root.join("s/3")).unwrap();
    let mut ds = Dataset::open(&url(&root), true).unwrap();
    ds.put_strings(G, 0, &slab(0, 1), &[vec![b'x'; 130]])
        .unwrap();
    ds.close().unwrap();
    let zarray: serde_json::Value =
        serde_json::from_slice(&fs::read(root.join("s/.zarray")).unwrap()).unwrap();
    assert_eq!(zarray["dtype"], "|S256");
}

/// Makes `path` refuse changes (immutable through `chattr`, else read-only) until dropped.
struct Frozen(std::path::PathBuf);

impl Frozen {
    /// `None` when nothing here can make `path` refuse changes: a file is made immutable
    /// (a read-only file can still be replaced), a directory immutable or else read-only,
    /// which a root user ignores; a directory is checked by trying to write in it.
    fn new(path: &Path) -> Option<Frozen> {
        use std::os::unix::fs::PermissionsExt;
        let immutable = std::process::Command::new("chattr")
            .arg("+i")
            .arg(path)
            .status()
            .is_ok_and(|s| s.success());
        let frozen = Frozen(path.to_path_buf());
        if immutable {
            return Some(frozen);
        }
        if !path.is_dir() {
            return None;
        }
        fs::set_permissions(path, fs::Permissions::from_mode(0o555)).ok()?;
        let probe = path.join("probe");
        if fs::write(&probe, b"probe").is_ok() {
            let _ = fs::remove_file(probe);
            return None;
        }
        Some(frozen)
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::process::Command::new("chattr")
            .arg("-i")
            .arg(&self.0)
            .status();
        let _ = fs::set_permissions(&self.0, fs::Permissions::from_mode(0o755));
    }
}

/// A widening rewrite whose stores fail part way (one chunk immutable; where files cannot be
/// made so, the whole dataset read-only) leaves the chunks it did store readable, the metadata
/// saying their width, and no string read as another.
#[test]
fn a_rewrite_failing_part_way_keeps_what_it_stored_readable() {
    // On the disk of the build (a temporary file system may have no immutable files).
    let dir = tempfile::TempDir::new_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let root = dir.path().join("f.zarr");
    let words = words_in_chunks_of_two(&root, 16);
    let old_size = fs::metadata(root.join("s/0")).unwrap().len();
    {
        let Some(_frozen) = Frozen::new(&root.join("s/1")).or_else(|| Frozen::new(&root)) else {
            eprintln!("SKIPPED: nothing here makes a file refuse changes (root, no chattr)");
            return;
        };
        let mut ds = Dataset::open(&url(&root), true).unwrap();
        assert!(
            ds.put_strings(G, 0, &slab(0, 1), &[vec![b'x'; 200]])
                .is_err()
        );
        let _ = ds.close();
    }
    let mut ds = Dataset::open(&url(&root), false).unwrap();
    for chunk in 0..8u64 {
        let size = fs::metadata(root.join(format!("s/{chunk}"))).unwrap().len();
        let read = ds.get_strings(G, 0, &slab(2 * chunk, 2));
        match read {
            Ok(got) => assert_eq!(got, words[2 * chunk as usize..][..2], "chunk {chunk}"),
            // Only chunks left at the old width may fail (their size is wrong now).
            Err(e) => assert_eq!(
                size, old_size,
                "chunk {chunk} rewritten but unreadable: {e}"
            ),
        }
    }
}

#[test]
fn a_variable_that_cannot_be_served_refuses_writes_and_changes_nothing() {
    let dir = tempfile::TempDir::new().unwrap();
    let root = dir.path().join("u.zarr");
    make(&root, &["a", "b"]);
    // An unknown codec: the variable is listed but its data cannot be served.
    let zpath = root.join("s/.zarray");
    let zarray = fs::read_to_string(&zpath).unwrap();
    fs::write(
        &zpath,
        zarray.replace(
            "\"compressor\": null",
            "\"compressor\": {\"id\": \"no-such-codec\"}",
        ),
    )
    .unwrap();
    let before: Vec<_> = fs::read_dir(root.join("s"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    let mut ds = Dataset::open(&url(&root), true).unwrap();
    let err = ds
        .put_strings(G, 0, &slab(5, 1), &[b"late".to_vec()])
        .unwrap_err();
    assert!(matches!(err, Error::NoFilter { .. }), "{err:?}");
    assert_eq!(ds.tree.dims[0].len, 2, "the unlimited dimension grew");
    ds.close().unwrap();
    let after: Vec<_> = fs::read_dir(root.join("s"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(before.len(), after.len(), "a chunk was written");
}

/// Copies a directory tree.
fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap().flatten() {
        let target = to.join(e.file_name());
        if e.path().is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            fs::copy(e.path(), target).unwrap();
        }
    }
}

#[test]
fn older_layouts_open_for_writing_but_refuse_changes() {
    let dir = tempfile::TempDir::new().unwrap();
    let root = dir.path().join("old.zarr");
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/netcdf/nc490.zarr");
    copy_tree(&golden, &root);
    let mut ds = Dataset::open(&url(&root), true).unwrap();
    let err = ds.redef().unwrap_err();
    assert!(
        matches!(&err, Error::ReadOnlyLayout(why) if why.contains("copy it to write")),
        "{err:?}"
    );
}
