//! Zip-archive store specifics: the layouts other tools write, hostile and damaged archives,
//! creation rules and atomic replacement. The generic contract is in `zmap_conformance.rs`.

use nczarr_rs::error::Error;
use nczarr_rs::zmap::zip::ZipStore;
use nczarr_rs::zmap::{Store, StoreKey, StorePrefix};
use std::fs;
use std::io::{Read, Write};
use std::path::Path;
use tempfile::TempDir;
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

fn key(s: &str) -> StoreKey {
    StoreKey::new(s).unwrap()
}

/// Writes an archive with the given entries (a name ending in `/` is a directory entry).
fn write_zip(path: &Path, entries: &[(&str, &[u8])], method: CompressionMethod) {
    let mut w = ZipWriter::new(fs::File::create(path).unwrap());
    let options = SimpleFileOptions::default().compression_method(method);
    for (name, bytes) in entries {
        if name.ends_with('/') {
            w.add_directory(*name, options).unwrap();
        } else {
            w.start_file(*name, options).unwrap();
            w.write_all(bytes).unwrap();
        }
    }
    w.finish().unwrap();
}

fn all_keys(s: &dyn Store) -> Vec<String> {
    s.list_keys(&StorePrefix::root())
        .unwrap()
        .into_iter()
        .map(|k| k.as_str().to_string())
        .collect()
}

#[test]
fn reads_objects_at_the_archive_root_as_zarr_python_writes_them() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("py.zip");
    write_zip(
        &path,
        &[
            (".zgroup", br#"{"zarr_format":2}"#),
            ("t/", b""),
            ("t/.zarray", b"{}"),
            ("t/0.0", &[7u8; 100]),
        ],
        CompressionMethod::Deflated,
    );
    let s = ZipStore::open(&path, false).unwrap();
    assert_eq!(s.entry_prefix(), "");
    assert_eq!(all_keys(&s), [".zgroup", "t/.zarray", "t/0.0"]);
    assert_eq!(s.get(&key("t/0.0")).unwrap(), Some(vec![7u8; 100]));
    assert_eq!(
        s.list_children(&StorePrefix::root()).unwrap(),
        [".zgroup", "t"]
    );
}

#[test]
fn reads_objects_below_one_directory_as_netcdf_c_writes_them() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("renamed.zip");
    write_zip(
        &path,
        &[
            ("orig/.zgroup", b"{}"),
            ("orig/v/.zarray", b"{}"),
            ("stray/.zgroup", b"not part of the dataset"),
        ],
        CompressionMethod::Stored,
    );
    let s = ZipStore::open(&path, false).unwrap();
    assert_eq!(s.entry_prefix(), "orig/");
    assert_eq!(all_keys(&s), [".zgroup", "v/.zarray"]);
}

#[test]
fn names_that_cannot_be_keys_are_invisible() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("hostile.zip");
    write_zip(
        &path,
        &[
            (".zgroup", b"{}"),
            ("../escape", b"x"),
            ("a/../../escape", b"x"),
            ("/abs/olute", b"x"),
            ("ctl\u{1}name", b"x"),
            ("ok", b"fine"),
        ],
        CompressionMethod::Stored,
    );
    let s = ZipStore::open(&path, true).unwrap();
    assert_eq!(all_keys(&s), [".zgroup", "ok"]);
    // Rewriting the archive keeps only what is visible.
    s.put(&key("new"), b"n").unwrap();
    s.flush().unwrap();
    let again = ZipStore::open(&path, false).unwrap();
    assert_eq!(all_keys(&again), [".zgroup", "new", "ok"]);
    assert!(!dir.path().parent().unwrap().join("escape").exists());
}

#[test]
fn damaged_archives_are_errors_not_crashes() {
    let dir = TempDir::new().unwrap();
    let not_zip = dir.path().join("text.zip");
    fs::write(&not_zip, b"just some text, not an archive").unwrap();
    assert!(matches!(
        ZipStore::open(&not_zip, false),
        Err(Error::NotZarr(_))
    ));

    let good = dir.path().join("good.zip");
    write_zip(
        &good,
        &[(".zgroup", b"{}"), ("c/0", &[1u8; 4096])],
        CompressionMethod::Stored,
    );
    let bytes = fs::read(&good).unwrap();

    let truncated = dir.path().join("truncated.zip");
    fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    assert!(matches!(
        ZipStore::open(&truncated, false),
        Err(Error::NotZarr(_))
    ));

    // Flip bytes inside the chunk: the entry's checksum no longer matches.
    let corrupt = dir.path().join("corrupt.zip");
    let mut damaged = bytes.clone();
    let at = damaged
        .windows(64)
        .position(|w| w.iter().all(|&b| b == 1))
        .unwrap();
    damaged[at + 10] ^= 0xff;
    fs::write(&corrupt, &damaged).unwrap();
    let s = ZipStore::open(&corrupt, false).unwrap();
    assert_eq!(s.get(&key(".zgroup")).unwrap(), Some(b"{}".to_vec()));
    assert!(matches!(s.get(&key("c/0")), Err(Error::Io { .. })));

    assert!(matches!(
        ZipStore::open(&dir.path().join("missing.zip"), false),
        Err(Error::NotFound(_))
    ));
    assert!(matches!(
        ZipStore::open(dir.path(), false),
        Err(Error::NotZarr(_) | Error::Io { .. })
    ));
}

#[test]
fn new_archives_use_netcdf_c_layout_and_appear_only_at_flush() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("made.zip");
    let s = ZipStore::create(&path, false).unwrap();
    s.put(&key(".zgroup"), b"{}").unwrap();
    s.put(&key("v/0.0"), &[3u8; 10]).unwrap();
    assert!(!path.exists(), "nothing may be visible before flush");
    s.flush().unwrap();
    let mut archive = zip::ZipArchive::new(fs::File::open(&path).unwrap()).unwrap();
    let names: Vec<String> = archive
        .file_names()
        .map(|n| n.unwrap().into_owned())
        .collect();
    assert_eq!(names, ["made/.zgroup", "made/v/0.0"]);
    for i in 0..archive.len() {
        assert_eq!(
            archive.by_index(i).unwrap().compression(),
            CompressionMethod::Stored
        );
    }
    let leftovers: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers, ["made.zip"], "temporary files left behind");
}

#[test]
fn unflushed_changes_never_reach_the_archive() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("x.zip");
    let s = ZipStore::create(&path, false).unwrap();
    s.put(&key("a"), b"1").unwrap();
    s.flush().unwrap();
    let before = fs::read(&path).unwrap();
    let w = ZipStore::open(&path, true).unwrap();
    w.put(&key("a"), b"2").unwrap();
    w.delete(&key("a")).unwrap();
    w.put(&key("b"), b"3").unwrap();
    assert_eq!(fs::read(&path).unwrap(), before);
    let reader = ZipStore::open(&path, false).unwrap();
    assert_eq!(reader.get(&key("a")).unwrap(), Some(b"1".to_vec()));
    assert_eq!(reader.get(&key("b")).unwrap(), None);
    w.flush().unwrap();
    let reader = ZipStore::open(&path, false).unwrap();
    assert_eq!(all_keys(&reader), ["b"]);
}

#[test]
fn read_only_archives_refuse_writes() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("x.zip");
    write_zip(&path, &[(".zgroup", b"{}")], CompressionMethod::Stored);
    let s = ZipStore::open(&path, false).unwrap();
    assert!(matches!(s.put(&key("a"), b"1"), Err(Error::ReadOnly)));
    assert!(matches!(s.delete(&key(".zgroup")), Err(Error::ReadOnly)));
}

#[test]
fn create_follows_the_clobber_rules() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("x.zip");
    fs::write(&path, b"old").unwrap();
    assert!(matches!(
        ZipStore::create(&path, false),
        Err(Error::Exists(_))
    ));
    assert!(matches!(
        ZipStore::create(dir.path(), true),
        Err(Error::Exists(_))
    ));
    let s = ZipStore::create(&path, true).unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"old", "replaced only at flush");
    s.put(&key(".zgroup"), b"{}").unwrap();
    s.flush().unwrap();
    assert_eq!(
        ZipStore::open(&path, false)
            .unwrap()
            .get(&key(".zgroup"))
            .unwrap(),
        Some(b"{}".to_vec())
    );
}

#[test]
fn discarding_a_new_archive_removes_it() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("x.zip");
    let s = ZipStore::create(&path, false).unwrap();
    s.put(&key(".zgroup"), b"{}").unwrap();
    s.flush().unwrap();
    assert!(path.exists());
    s.discard().unwrap();
    assert!(!path.exists());
}

/// Names of the files beside an archive other than the archive itself.
fn leftovers(dir: &Path, archive: &str) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != archive)
        .collect()
}

/// Size of the one archive being written in `dir` (none: 0).
fn spool_size(dir: &Path) -> u64 {
    let sizes: Vec<u64> = fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains("nczarr-tmp"))
        .map(|e| e.metadata().unwrap().len())
        .collect();
    assert!(
        sizes.len() <= 1,
        "one archive at a time is written: {sizes:?}"
    );
    sizes.into_iter().sum()
}

fn bytes(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31) ^ seed)
        .collect()
}

/// Every entry's bytes, read with their CRCs checked (the zip crate checks them at the end of
/// each entry), and whether each is stored.
fn entries_checked(path: &Path) -> Vec<(String, Vec<u8>, bool)> {
    let mut archive = zip::ZipArchive::new(fs::File::open(path).unwrap()).unwrap();
    (0..archive.len())
        .map(|i| {
            let mut entry = archive.by_index(i).unwrap();
            let mut data = Vec::new();
            std::io::Read::read_to_end(&mut entry, &mut data).unwrap();
            let stored = entry.compression() == CompressionMethod::Stored;
            (entry.name().unwrap().into_owned(), data, stored)
        })
        .collect()
}

/// Python's `zipfile` finds every entry's CRC right (an independent reader of what we wrote).
fn python_tests_zip(path: &Path) {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); \
             print(z.testzip(), len(z.namelist()))",
            path.to_str().unwrap(),
        ])
        .output()
        .expect("python3 runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.starts_with("None "),
        "zipfile: {text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Objects rewritten and deleted before the flush, small (held in memory) and large (written
/// into the new archive as they come): reads see the latest bytes all along, and the archive
/// holds the live objects only, with no bytes of the replaced ones.
#[test]
fn rewritten_and_deleted_objects_leave_nothing_behind() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("x.zip");
    let s = ZipStore::create(&path, false).unwrap();
    let big = 300 << 10;
    for round in 0..5u8 {
        s.put(&key("meta"), &[round; 8]).unwrap();
        s.put(&key("v/0"), &bytes(round, big)).unwrap();
        assert_eq!(s.get(&key("v/0")).unwrap(), Some(bytes(round, big)));
    }
    s.put(&key("g/a"), &bytes(10, big)).unwrap();
    s.put(&key("g/b"), b"2").unwrap();
    s.put(&key("gone"), &bytes(11, big)).unwrap();
    s.delete(&key("gone")).unwrap();
    s.delete_prefix(&StorePrefix::new("g").unwrap()).unwrap();
    assert_eq!(all_keys(&s), ["meta", "v/0"]);
    s.flush().unwrap();
    assert!(leftovers(dir.path(), "x.zip").is_empty());
    let entries = entries_checked(&path);
    let names: Vec<&str> = entries.iter().map(|(n, _, _)| n.as_str()).collect();
    assert_eq!(names, ["x/v/0", "x/meta"]);
    assert_eq!(entries[0].1, bytes(4, big));
    assert_eq!(entries[1].1, vec![4u8; 8]);
    assert!(entries.iter().all(|(_, _, stored)| *stored));
    let live: u64 = entries
        .iter()
        .map(|(n, d, _)| (n.len() + d.len()) as u64)
        .sum();
    let size = fs::metadata(&path).unwrap().len();
    assert!(
        size < live + 512,
        "{size} bytes for {live} of names and data: replaced bytes were kept"
    );
    python_tests_zip(&path);
    let reader = ZipStore::open(&path, false).unwrap();
    assert_eq!(reader.get(&key("v/0")).unwrap(), Some(bytes(4, big)));
}

/// An object written large (into the new archive) and then small (held in memory) is in the
/// archive once, with its small bytes.
#[test]
fn an_object_that_shrinks_is_in_the_archive_once() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("x.zip");
    let s = ZipStore::create(&path, false).unwrap();
    s.put(&key("v/0"), &bytes(1, 1 << 20)).unwrap();
    s.put(&key("v/0"), b"now small").unwrap();
    s.flush().unwrap();
    let entries = entries_checked(&path);
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].1, b"now small");
}

/// A flush that fails (the archive's name taken by a directory, so the rename fails) leaves
/// the session as it was: its objects read back, and the next flush writes them all.
#[test]
fn a_failed_flush_can_be_tried_again() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("x.zip");
    let s = ZipStore::create(&path, false).unwrap();
    s.put(&key(".zgroup"), b"{}").unwrap();
    s.put(&key("v/0"), &bytes(1, 1 << 20)).unwrap();
    s.put(&key("v/1"), &bytes(2, 300 << 10)).unwrap();
    fs::create_dir(&path).unwrap();
    fs::write(path.join("in the way"), b"").unwrap();
    assert!(s.flush().is_err(), "the rename over a directory must fail");
    assert_eq!(s.get(&key("v/0")).unwrap(), Some(bytes(1, 1 << 20)));
    s.put(&key("v/2"), &bytes(3, 200 << 10)).unwrap();
    fs::remove_dir_all(&path).unwrap();
    s.flush().unwrap();
    let names: Vec<String> = entries_checked(&path)
        .into_iter()
        .map(|(n, _, _)| n)
        .collect();
    assert_eq!(names.len(), 4, "{names:?}");
    let reader = ZipStore::open(&path, false).unwrap();
    for (k, want) in [
        ("v/0", bytes(1, 1 << 20)),
        ("v/1", bytes(2, 300 << 10)),
        ("v/2", bytes(3, 200 << 10)),
    ] {
        assert_eq!(reader.get(&key(k)).unwrap(), Some(want), "{k}");
    }
    assert!(leftovers(dir.path(), "x.zip").is_empty());
}

/// An entry damaged in the old archive is copied as it is stored when the archive is
/// rewritten: its CRC still tells, instead of being computed anew over the damaged bytes.
#[test]
fn a_damaged_entry_stays_detectable_when_the_archive_is_rewritten() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("x.zip");
    let good = bytes(5, 100 << 10);
    write_zip(
        &path,
        &[(".zgroup", b"{}"), ("a/0", &good), ("b/0", &good)],
        CompressionMethod::Stored,
    );
    let start = {
        let mut archive = zip::ZipArchive::new(fs::File::open(&path).unwrap()).unwrap();
        archive.by_name("a/0").unwrap().data_start().unwrap()
    };
    let mut raw = fs::read(&path).unwrap();
    raw[start as usize + 1000] ^= 0xff;
    fs::write(&path, &raw).unwrap();
    let s = ZipStore::open(&path, true).unwrap();
    s.put(&key("c/0"), &bytes(6, 100 << 10)).unwrap();
    s.flush().unwrap();
    let mut archive = zip::ZipArchive::new(fs::File::open(&path).unwrap()).unwrap();
    let mut damaged = Vec::new();
    let read = std::io::Read::read_to_end(&mut archive.by_name("a/0").unwrap(), &mut damaged);
    assert!(read.is_err(), "the damaged entry passed its CRC check");
    let mut intact = Vec::new();
    std::io::Read::read_to_end(&mut archive.by_name("b/0").unwrap(), &mut intact).unwrap();
    assert_eq!(intact, good);
}

/// A large object rewritten many times does not grow the archive being written without bound.
#[test]
fn an_object_rewritten_many_times_keeps_the_new_archive_bounded() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("x.zip");
    let s = ZipStore::create(&path, false).unwrap();
    let len = 4 << 20;
    let mut largest = 0;
    for round in 0..24u8 {
        s.put(&key("v/0"), &bytes(round, len)).unwrap();
        s.put(&key("v/1"), &bytes(round ^ 0x55, len)).unwrap();
        largest = largest.max(spool_size(dir.path()));
        assert_eq!(s.get(&key("v/0")).unwrap(), Some(bytes(round, len)));
    }
    assert!(
        largest <= (2 * len + (32 << 20) + (2 * len) + (1 << 20)) as u64,
        "the new archive reached {largest} bytes for 8 MiB of live objects"
    );
    s.flush().unwrap();
    assert!(leftovers(dir.path(), "x.zip").is_empty());
    assert!(fs::metadata(&path).unwrap().len() < (2 * len + 1024) as u64);
    let reader = ZipStore::open(&path, false).unwrap();
    assert_eq!(
        reader.get(&key("v/1")).unwrap(),
        Some(bytes(23 ^ 0x55, len))
    );
}

/// Objects written into the new archive are read in place before the flush, whole and in
/// runs; objects held in memory are read whole.
#[test]
fn objects_written_before_the_flush_read_back_every_way() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("x.zip");
    let s = ZipStore::create(&path, false).unwrap();
    let value = bytes(7, 5 << 20);
    s.put(&key("v/0"), &value).unwrap();
    s.put(&key("small"), b"tiny").unwrap();
    assert!(s.reads_runs_in_place(&key("v/0")));
    assert!(!s.reads_runs_in_place(&key("small")));
    let mut buf = vec![1u8; 3];
    assert!(s.get_into(&key("v/0"), &mut buf).unwrap());
    assert_eq!(buf, value);
    let (mut a, mut b) = (vec![0u8; value.len()], vec![0u8; 4]);
    let got = s
        .get_many_into(&[key("v/0"), key("small")], &mut [&mut a, &mut b])
        .unwrap();
    assert_eq!(got, [Some(value.len()), Some(4)]);
    assert_eq!(
        (a.as_slice(), b.as_slice()),
        (value.as_slice(), &b"tiny"[..])
    );
    let (mut r1, mut r2) = (vec![0u8; 100], vec![0u8; 10]);
    let len = s
        .get_runs_into(
            &key("v/0"),
            &mut [(12345, &mut r1), (value.len() as u64 - 4, &mut r2)],
        )
        .unwrap();
    assert_eq!(len, Some(value.len() as u64));
    assert_eq!(r1, value[12345..12445]);
    assert_eq!(r2[..4], value[value.len() - 4..]);
    drop(s);
    assert!(
        leftovers(dir.path(), "x.zip").is_empty() && !path.exists(),
        "a store dropped unflushed leaves nothing"
    );
}

/// Changing one object of an existing archive keeps every other entry as it was: stored ones
/// are copied, deflated ones stay deflated, and both read back.
#[test]
fn rewriting_an_archive_keeps_the_entries_not_changed() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("x.zip");
    let stored = bytes(1, 3 << 20);
    let deflated = vec![9u8; 200 << 10];
    {
        let mut w = ZipWriter::new(fs::File::create(&path).unwrap());
        let plain = SimpleFileOptions::default().compression_method(CompressionMethod::Stored);
        let packed = plain.compression_method(CompressionMethod::Deflated);
        for (name, data, options) in [
            (".zgroup", &b"{}"[..], plain),
            ("a/0", &stored, plain),
            ("b/0", &deflated, packed),
        ] {
            w.start_file(name, options).unwrap();
            w.write_all(data).unwrap();
        }
        w.finish().unwrap();
    }
    let s = ZipStore::open(&path, true).unwrap();
    s.put(&key("c/0"), &bytes(3, 1 << 20)).unwrap();
    s.flush().unwrap();
    let entries = entries_checked(&path);
    let find = |n: &str| {
        entries
            .iter()
            .find(|(name, _, _)| name == n)
            .unwrap()
            .clone()
    };
    assert_eq!(find("a/0"), ("a/0".to_string(), stored, true));
    assert_eq!(find("b/0"), ("b/0".to_string(), deflated, false));
    assert_eq!(find("c/0").1, bytes(3, 1 << 20));
    assert_eq!(entries.len(), 4);
    python_tests_zip(&path);
    assert!(leftovers(dir.path(), "x.zip").is_empty());
}

/// Runs of an entry read in place (stored entries) or out of the whole entry (deflated ones)
/// equal the entry's bytes at those offsets, in both layouts; runs past the end are left alone
/// and the entry's length is reported.
#[test]
fn runs_of_archive_entries_are_read_in_place() {
    let dir = TempDir::new().unwrap();
    let value: Vec<u8> = (0..5000u32).map(|i| (i * 7 % 251) as u8).collect();
    for (name, method, entry) in [
        ("stored.zip", CompressionMethod::Stored, "stored/v/0.0"),
        (
            "deflated.zip",
            CompressionMethod::Deflated,
            "deflated/v/0.0",
        ),
    ] {
        let path = dir.path().join(name);
        write_zip(
            &path,
            &[
                (&entry.replace("v/0.0", ".zgroup"), b"{}"),
                ("padding-entry-before", &[1u8; 333]),
                (entry, &value),
            ],
            method,
        );
        let s = ZipStore::open(&path, false).unwrap();
        let spans = [(0u64, 5usize), (5, 700), (4000, 10), (4998, 4), (9000, 3)];
        let mut bufs: Vec<Vec<u8>> = spans.iter().map(|&(_, n)| vec![0xEE; n]).collect();
        let mut runs: Vec<(u64, &mut [u8])> = spans
            .iter()
            .zip(bufs.iter_mut())
            .map(|(&(o, _), b)| (o, b.as_mut_slice()))
            .collect();
        assert_eq!(
            s.get_runs_into(&key("v/0.0"), &mut runs).unwrap(),
            Some(5000),
            "{name}"
        );
        for (&(o, n), b) in spans.iter().zip(&bufs).take(3) {
            assert_eq!(
                b[..],
                value[o as usize..o as usize + n],
                "{name} run at {o}"
            );
        }
        assert_eq!(bufs[3][..2], value[4998..], "{name}");
        assert_eq!(bufs[3][2..], [0xEE; 2], "{name}");
        assert_eq!(bufs[4], [0xEE; 3], "{name}");
        let mut none: Vec<(u64, &mut [u8])> = Vec::new();
        assert_eq!(s.get_runs_into(&key("v/1.0"), &mut none).unwrap(), None);
        assert_eq!(
            s.reads_runs_in_place(&key("v/0.0")),
            method == CompressionMethod::Stored,
            "{name}"
        );
        assert!(!s.reads_runs_in_place(&key("v/1.0")), "{name}");
    }

    // A stored entry really is read in place: with a byte of it damaged, a whole read fails
    // its CRC check while a run elsewhere in the entry still reads (from the archive itself).
    let path = dir.path().join("stored.zip");
    let mut bytes = fs::read(&path).unwrap();
    let at = bytes
        .windows(64)
        .position(|w| w == &value[..64])
        .expect("stored entry data");
    bytes[at + 4500] ^= 0xFF;
    fs::write(&path, &bytes).unwrap();
    let s = ZipStore::open(&path, false).unwrap();
    assert!(
        s.get(&key("v/0.0")).is_err(),
        "the damage is visible to a whole read"
    );
    let mut buf = [0u8; 100];
    let mut runs: Vec<(u64, &mut [u8])> = vec![(1000, &mut buf[..])];
    assert_eq!(
        s.get_runs_into(&key("v/0.0"), &mut runs).unwrap(),
        Some(5000)
    );
    assert_eq!(buf[..], value[1000..1100]);
    // Read whole straight into a buffer of its size, in place too: the CRC check catches it.
    let mut whole = vec![0u8; 5000];
    assert!(
        s.get_many_into(&[key("v/0.0")], &mut [&mut whole[..]])
            .is_err(),
        "the damage is visible to a whole read in place"
    );
    assert!(s.get_into(&key("v/0.0"), &mut Vec::new()).is_err());
}

/// Objects read whole into the caller's buffers, in place or not, equal what was stored: a
/// reused buffer (longer or shorter than the object) ends up holding exactly the object, and
/// a buffer of the wrong size for an entry stored uncompressed is filled as far as it goes
/// with the entry's true length reported.
#[test]
fn whole_reads_into_caller_buffers_give_the_entries() {
    let dir = TempDir::new().unwrap();
    let value: Vec<u8> = (0..70_000u32).map(|i| (i * 13 % 253) as u8).collect();
    for (name, method) in [
        ("stored.zip", CompressionMethod::Stored),
        ("deflated.zip", CompressionMethod::Deflated),
    ] {
        let path = dir.path().join(name);
        write_zip(
            &path,
            &[
                ("x/.zgroup", b"{}"),
                ("x/v/0.0", &value),
                ("x/v/1.0", b"ab"),
            ],
            method,
        );
        let s = ZipStore::open(&path, false).unwrap();
        for held in [vec![], vec![7u8; 10], vec![7u8; 100_000]] {
            let mut buf = held;
            assert!(s.get_into(&key("v/0.0"), &mut buf).unwrap(), "{name}");
            assert!(buf == value, "{name}");
        }
        assert!(!s.get_into(&key("v/9.9"), &mut Vec::new()).unwrap());
        let mut exact = vec![0u8; value.len()];
        let mut short = [0u8; 10];
        let mut pair = [0u8; 2];
        let lens = s
            .get_many_into(
                &[key("v/0.0"), key("v/0.0"), key("v/9.9"), key("v/1.0")],
                &mut [&mut exact[..], &mut short[..], &mut [][..], &mut pair[..]],
            )
            .unwrap();
        assert_eq!(lens, [Some(70_000), Some(70_000), None, Some(2)], "{name}");
        assert!(exact == value, "{name}");
        assert_eq!(short[..], value[..10], "{name}");
        assert_eq!(&pair, b"ab", "{name}");
    }
}

/// Readers running while one object is rewritten again and again (large values written into
/// the new archive, small ones held in memory), the new archive compacted and flushed under
/// them, always get one whole version of it, by every way of reading; an object never
/// rewritten reads back the same after every compaction.
#[test]
fn readers_see_whole_versions_through_compactions_and_flushes() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    const BIG: usize = 4 << 20;
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("x.zip");
    let store = Arc::new(ZipStore::create(&path, false).unwrap());
    let k = key("v/0");
    store.put(&k, &[0x55; 10]).unwrap();
    // Written after another, so that compacting moves it.
    store.put(&key("gone"), &[0x11; 1 << 20]).unwrap();
    store.put(&key("kept"), &[0xCC; 1 << 20]).unwrap();
    store.delete(&key("gone")).unwrap();
    let whole = |v: &[u8]| (v.len() == BIG && v.iter().all(|&b| b == 0xAA)) || v == [0x55; 10];
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..3)
        .map(|way| {
            let (store, done, k) = (Arc::clone(&store), Arc::clone(&done), k.clone());
            std::thread::spawn(move || {
                let mut reads = 0usize;
                let mut buf = Vec::new();
                loop {
                    let finished = done.load(Ordering::Acquire);
                    match way {
                        0 => {
                            let v = store.get(&k).unwrap().expect("object vanished");
                            assert!(whole(&v), "torn get of {} bytes", v.len());
                        }
                        1 => {
                            assert!(store.get_into(&k, &mut buf).unwrap());
                            assert!(whole(&buf), "torn get_into of {} bytes", buf.len());
                        }
                        _ => {
                            let mut out = vec![0u8; BIG];
                            let got = store
                                .get_many_into(std::slice::from_ref(&k), &mut [&mut out])
                                .unwrap();
                            match got[0] {
                                Some(n) if n == BIG => assert!(out.iter().all(|&b| b == 0xAA)),
                                Some(10) => assert_eq!(out[..10], [0x55; 10]),
                                other => panic!("get_many_into gave {other:?}"),
                            }
                        }
                    }
                    reads += 1;
                    if finished {
                        return reads;
                    }
                }
            })
        })
        .collect();
    let big = vec![0xAA; BIG];
    for i in 0..60 {
        let value: &[u8] = if i % 3 == 2 { &[0x55; 10] } else { &big };
        store.put(&k, value).unwrap();
        if i % 25 == 24 {
            store.flush().unwrap();
        }
        let now = store.get(&k).unwrap().expect("object vanished");
        assert!(now == value, "put {i} reads back {} bytes", now.len());
        // An object never rewritten moves with every compaction.
        let kept = store.get(&key("kept")).unwrap().expect("object vanished");
        assert!(kept == vec![0xCC; 1 << 20], "the kept object after put {i}");
    }
    done.store(true, Ordering::Release);
    for reader in readers {
        assert!(reader.join().unwrap() > 1);
    }
    store.flush().unwrap();
    assert!(leftovers(dir.path(), "x.zip").is_empty());
}

/// An archive flushed with no objects and opened again for writing keeps netcdf-c's layout: its
/// objects go below the directory named after the archive, where the reference looks for them.
#[test]
fn an_empty_archive_reopened_keeps_the_dataset_directory() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("x.zip");
    ZipStore::create(&path, false).unwrap().flush().unwrap();
    let s = ZipStore::open(&path, true).unwrap();
    assert_eq!(s.entry_prefix(), "x/");
    s.put(&key(".zgroup"), b"{}").unwrap();
    s.flush().unwrap();
    let names: Vec<String> = entries_checked(&path)
        .into_iter()
        .map(|(n, _, _)| n)
        .collect();
    assert_eq!(names, ["x/.zgroup"]);
}

// ---- random sessions against a model --------------------------------------------------------

/// One step of a random zip session.
#[derive(Debug, Clone)]
enum Step {
    /// Writes `bytes(seed, len)` at a key.
    Put(&'static str, u8, usize),
    Delete(&'static str),
    DeletePrefix(&'static str),
    /// Reads a key every way the store offers, the runs at `len * (at / 8)` among them.
    Read(&'static str, u8),
    Flush,
    /// Flushes, closes and opens the archive again for writing.
    Reopen,
    /// Closes without flushing: the archive keeps what the last flush wrote.
    Abandon,
}

const KEYS: [&str; 6] = ["meta", "v/0", "v/1", "v/2", "w/0", "w/x/0"];

/// Sizes on both sides of the size up to which objects are held in memory (64 KiB) and large
/// enough to be read in several parts.
const SIZES: [usize; 7] = [0, 7, 65_535, 65_536, 65_537, 150_000, 700_000];

fn a_step() -> impl proptest::strategy::Strategy<Value = Step> {
    use proptest::prelude::*;
    let a_key = proptest::sample::select(&KEYS[..]);
    prop_oneof![
        6 => (a_key.clone(), any::<u8>(), proptest::sample::select(&SIZES[..]))
            .prop_map(|(k, seed, len)| Step::Put(k, seed, len)),
        2 => a_key.clone().prop_map(Step::Delete),
        1 => proptest::sample::select(&["v", "w", "w/x"][..]).prop_map(Step::DeletePrefix),
        4 => (a_key, 0u8..=8).prop_map(|(k, at)| Step::Read(k, at)),
        1 => Just(Step::Flush),
        1 => Just(Step::Reopen),
        1 => Just(Step::Abandon),
    ]
}

type Model = std::collections::BTreeMap<&'static str, Vec<u8>>;

/// Reads `k` by `get`, `get_into`, `get_many_into` and `get_runs_into` and compares each with
/// the model.
fn read_every_way(
    s: &ZipStore,
    k: &'static str,
    at: u8,
    model: &Model,
) -> Result<(), proptest::test_runner::TestCaseError> {
    use proptest::prop_assert_eq;
    let want = model.get(k);
    prop_assert_eq!(s.get(&key(k)).unwrap(), want.cloned(), "get {}", k);
    let mut buf = vec![9u8; 3];
    let found = s.get_into(&key(k), &mut buf).unwrap();
    prop_assert_eq!(found.then_some(&buf), want, "get_into {}", k);
    let len = want.map_or(16, Vec::len);
    let mut whole = vec![0u8; len];
    let got = s.get_many_into(&[key(k)], &mut [&mut whole[..]]).unwrap();
    prop_assert_eq!(got[0], want.map(Vec::len), "get_many_into length of {}", k);
    if let Some(w) = want {
        prop_assert_eq!(&whole, w, "get_many_into {}", k);
    }
    let start = len * usize::from(at) / 8;
    let (mut first, mut second) = (vec![0u8; (len - start).min(5000)], vec![0u8; start.min(3)]);
    let got = s
        .get_runs_into(
            &key(k),
            &mut [(start as u64, &mut first[..]), (0, &mut second[..])],
        )
        .unwrap();
    prop_assert_eq!(
        got,
        want.map(|w| w.len() as u64),
        "get_runs_into length of {}",
        k
    );
    if let Some(w) = want {
        prop_assert_eq!(&first[..], &w[start..start + first.len()], "runs of {}", k);
        prop_assert_eq!(&second[..], &w[..second.len()], "first bytes of {}", k);
    }
    Ok(())
}

/// The archive on disk holds exactly `model`: each object once, stored, CRCs right, no bytes
/// of replaced objects, and nothing else is left in the directory.
fn check_archive(dir: &Path, path: &Path, model: &Model) {
    assert!(
        leftovers(dir, "x.zip").is_empty(),
        "{:?}",
        leftovers(dir, "x.zip")
    );
    let mut entries = entries_checked(path);
    entries.retain(|(name, _, _)| !name.ends_with('/'));
    entries.sort();
    let want: Vec<(String, Vec<u8>, bool)> = model
        .iter()
        .map(|(k, v)| (format!("x/{k}"), v.clone(), true))
        .collect();
    assert_eq!(entries.len(), want.len());
    assert!(entries == want, "the archive differs from the model");
    let live: u64 = entries
        .iter()
        .map(|(n, d, _)| (n.len() + d.len()) as u64)
        .sum();
    let size = fs::metadata(path).unwrap().len();
    assert!(
        size < live + 200 * (entries.len() as u64 + 1),
        "{size} bytes for {live} of names and data: replaced bytes were kept"
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

    /// Random sessions of writes, rewrites across the held/spooled size, deletes, reads every
    /// way, flushes, reopenings and abandoned sessions: every read matches a model of the
    /// session, and after every flush the archive on disk is exactly the model.
    #[test]
    fn zip_sessions_match_a_model(steps in proptest::collection::vec(a_step(), 1..40)) {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("x.zip");
        let mut store = ZipStore::create(&path, false).unwrap();
        let mut model = Model::new();
        let mut flushed: Option<Model> = None;
        for step in &steps {
            match step {
                Step::Put(k, seed, len) => {
                    store.put(&key(k), &bytes(*seed, *len)).unwrap();
                    model.insert(k, bytes(*seed, *len));
                }
                Step::Delete(k) => {
                    store.delete(&key(k)).unwrap();
                    model.remove(k);
                }
                Step::DeletePrefix(p) => {
                    store.delete_prefix(&StorePrefix::new(p).unwrap()).unwrap();
                    let below = format!("{p}/");
                    model.retain(|k, _| !k.starts_with(&below));
                }
                Step::Read(k, at) => read_every_way(&store, k, *at, &model)?,
                Step::Flush | Step::Reopen => {
                    store.flush().unwrap();
                    check_archive(dir.path(), &path, &model);
                    flushed = Some(model.clone());
                    if matches!(step, Step::Reopen) {
                        drop(store);
                        store = ZipStore::open(&path, true).unwrap();
                    }
                }
                Step::Abandon => {
                    drop(store);
                    match &flushed {
                        Some(last) => {
                            store = ZipStore::open(&path, true).unwrap();
                            model = last.clone();
                        }
                        None => {
                            proptest::prop_assert!(!path.exists(), "never flushed, yet written");
                            store = ZipStore::create(&path, false).unwrap();
                            model.clear();
                        }
                    }
                    proptest::prop_assert!(leftovers(dir.path(), "x.zip").is_empty());
                }
            }
            proptest::prop_assert_eq!(
                all_keys(&store),
                model.keys().map(|k| k.to_string()).collect::<Vec<_>>()
            );
        }
        store.flush().unwrap();
        check_archive(dir.path(), &path, &model);
        let reader = ZipStore::open(&path, false).unwrap();
        for k in KEYS {
            read_every_way(&reader, k, 3, &model)?;
        }
    }
}

/// An entry larger than any object of the dataset can be (1.1 GiB, over the store's first
/// limit of 1 GiB) is refused before any of it is read or allocated; raising the limit for a
/// variable with larger chunks lets it be read.
#[test]
fn an_entry_larger_than_any_object_is_refused_unread() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("huge.zip");
    let huge = (1u64 << 30) + (100 << 20);
    let mut w = ZipWriter::new(fs::File::create(&path).unwrap());
    let options = SimpleFileOptions::default().compression_method(CompressionMethod::Stored);
    w.start_file(".zgroup", options).unwrap();
    w.write_all(b"{}").unwrap();
    w.start_file("v/0", options).unwrap();
    std::io::copy(&mut std::io::repeat(0).take(huge), &mut w).unwrap();
    w.start_file("v/1", options).unwrap();
    w.write_all(&[7u8; 16]).unwrap();
    w.finish().unwrap();

    let store = ZipStore::open(&path, false).unwrap();
    for got in [
        store.get(&key("v/0")).map(|v| v.map(|b| b.len())),
        store
            .get_into(&key("v/0"), &mut Vec::new())
            .map(|found| found.then_some(0)),
    ] {
        assert!(
            matches!(&got, Err(Error::ObjectTooLarge { limit, .. }) if *limit == 1 << 30),
            "{got:?}"
        );
    }
    assert_eq!(store.get(&key("v/1")).unwrap(), Some(vec![7u8; 16]));
    store.allow_objects_up_to(huge);
    let mut whole = Vec::new();
    assert!(store.get_into(&key("v/0"), &mut whole).unwrap());
    assert_eq!(whole.len() as u64, huge);
}
