//! The one conformance suite every `Store` backend must pass, a model-based test replaying
//! random operation sequences against a backend and a `BTreeMap`, and the checks specific to
//! the directory-tree backend (creation safety, atomic replacement under a concurrent reader).
//! The S3 backend runs the same suite and replay against two independent servers on loopback,
//! s3s-fs (checks signatures) and moto, each started by the test.

mod common;

use common::s3::{Kind, Server};
use nczarr_rs::zmap::s3;

use nczarr_rs::Error;
use nczarr_rs::url::DatasetUrl;
use nczarr_rs::zmap::created::CreatedStore;
use nczarr_rs::zmap::file::FileStore;
use nczarr_rs::zmap::memory::MemoryStore;
use nczarr_rs::zmap::overlay::OverlayStore;
use nczarr_rs::zmap::zip::ZipStore;
use nczarr_rs::zmap::{OpenHow, Store, StoreKey, StorePrefix, Tail, open_store};
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tempfile::TempDir;

fn key(s: &str) -> StoreKey {
    StoreKey::new(s).unwrap()
}

fn prefix(s: &str) -> StorePrefix {
    StorePrefix::new(s).unwrap()
}

fn keys(store: &dyn Store, p: &str) -> Vec<String> {
    let listed = store.list_keys(&prefix(p)).unwrap();
    listed.iter().map(|k| k.to_string()).collect()
}

fn put_all(store: &dyn Store, ks: &[&str]) {
    for k in ks {
        store.put(&key(k), k.as_bytes()).unwrap();
    }
}

/// A fresh store plus whatever must outlive it (the temporary directory).
struct Fixture {
    store: Box<dyn Store>,
    _dir: Option<TempDir>,
}

fn memory() -> Fixture {
    Fixture {
        store: Box::new(MemoryStore::new()),
        _dir: None,
    }
}

/// The view of a store a dataset was just created in, over an empty one.
fn created_over_memory() -> Fixture {
    Fixture {
        store: Box::new(CreatedStore::new(Box::new(MemoryStore::new()))),
        _dir: None,
    }
}

fn directory() -> Fixture {
    let dir = TempDir::new().unwrap();
    let store = FileStore::create(&dir.path().join("x.zarr"), false).unwrap();
    Fixture {
        store: Box::new(store),
        _dir: Some(dir),
    }
}

fn zip_archive() -> Fixture {
    let dir = TempDir::new().unwrap();
    let store = ZipStore::create(&dir.path().join("x.zip"), false).unwrap();
    Fixture {
        store: Box::new(store),
        _dir: Some(dir),
    }
}

/// A zip store whose every check runs against an archive flushed and reopened first.
fn reopened_zip_archive() -> Fixture {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("x.zip");
    let store = ZipStore::create(&path, false).unwrap();
    store.put(&key("seed"), b"seed").unwrap();
    store.flush().unwrap();
    drop(store);
    let store = ZipStore::open(&path, true).unwrap();
    store.delete(&key("seed")).unwrap();
    Fixture {
        store: Box::new(store),
        _dir: Some(dir),
    }
}

fn overlay_over_directory() -> Fixture {
    let dir = TempDir::new().unwrap();
    let base = FileStore::create(&dir.path().join("x.zarr"), false).unwrap();
    Fixture {
        store: Box::new(OverlayStore::new(Box::new(base))),
        _dir: Some(dir),
    }
}

/// A fresh, empty dataset root on a running S3 server.
fn s3(server: &Server) -> Fixture {
    let store = s3::create(server.settings("conformance"), false).unwrap();
    Fixture {
        store: Box::new(store),
        _dir: None,
    }
}

// ---- the conformance suite ------------------------------------------------------------------

fn absent_keys_are_none(s: &dyn Store) {
    assert_eq!(s.get(&key("nothing")).unwrap(), None);
    assert_eq!(s.get(&key("no/such/.zarray")).unwrap(), None);
    assert!(s.list_children(&prefix("no/such")).unwrap().is_empty());
    assert!(s.list_keys(&prefix("no")).unwrap().is_empty());
    assert!(s.list_children(&StorePrefix::root()).unwrap().is_empty());
}

fn overwrite_leaves_no_stale_tail(s: &dyn Store) {
    let k = key("g/v/0.0");
    s.put(&k, &[7u8; 1000]).unwrap();
    assert_eq!(s.get(&k).unwrap(), Some(vec![7u8; 1000]));
    s.put(&k, b"short").unwrap();
    assert_eq!(s.get(&k).unwrap().as_deref(), Some(&b"short"[..]));
    s.put(&k, b"").unwrap();
    assert_eq!(s.get(&k).unwrap(), Some(Vec::new()));
}

fn empty_values_are_present(s: &dyn Store) {
    s.put(&key(".zattrs"), b"").unwrap();
    assert_eq!(s.get(&key(".zattrs")).unwrap(), Some(Vec::new()));
    assert_eq!(s.list_children(&StorePrefix::root()).unwrap(), [".zattrs"]);
}

fn children_are_sorted_and_unique(s: &dyn Store) {
    put_all(
        s,
        &[
            "g10/.zgroup",
            "g1/v/0.0",
            ".zgroup",
            "g1/.zgroup",
            "g1/v/.zarray",
            "a.b",
            "g1/v/1.0",
        ],
    );
    let root = s.list_children(&StorePrefix::root()).unwrap();
    assert_eq!(root, [".zgroup", "a.b", "g1", "g10"]);
    assert_eq!(s.list_children(&prefix("g1")).unwrap(), [".zgroup", "v"]);
    let v = s.list_children(&prefix("g1/v")).unwrap();
    assert_eq!(v, [".zarray", "0.0", "1.0"]);
    assert!(s.list_children(&prefix("g1/v/0.0")).unwrap().is_empty());
}

fn keys_are_listed_recursively(s: &dyn Store) {
    put_all(s, &["g10/.zgroup", "g1/v/0.0", ".zgroup", "g1/.zgroup"]);
    assert_eq!(
        keys(s, ""),
        [".zgroup", "g1/.zgroup", "g1/v/0.0", "g10/.zgroup"]
    );
    assert_eq!(keys(s, "g1"), ["g1/.zgroup", "g1/v/0.0"]);
    assert_eq!(keys(s, "g1/v"), ["g1/v/0.0"]);
}

fn delete_and_delete_missing(s: &dyn Store) {
    put_all(s, &["g1/v/0.0", "g1/.zgroup"]);
    s.delete(&key("g1/v/0.0")).unwrap();
    assert_eq!(s.get(&key("g1/v/0.0")).unwrap(), None);
    assert_eq!(s.list_children(&prefix("g1")).unwrap(), [".zgroup"]);
    s.delete(&key("g1/v/0.0")).unwrap();
    s.delete(&key("never/was")).unwrap();
    s.delete(&key("g1/.zgroup")).unwrap();
    assert!(s.list_children(&StorePrefix::root()).unwrap().is_empty());
}

fn delete_prefix_spares_siblings(s: &dyn Store) {
    put_all(
        s,
        &[
            ".zgroup",
            "g1/.zgroup",
            "g1/v/0",
            "g10/.zgroup",
            "g1x",
            "g2/g1/a",
        ],
    );
    s.delete_prefix(&prefix("g1")).unwrap();
    assert_eq!(keys(s, ""), [".zgroup", "g10/.zgroup", "g1x", "g2/g1/a"]);
    s.delete_prefix(&prefix("g2/g1")).unwrap();
    assert_eq!(
        s.list_children(&StorePrefix::root()).unwrap(),
        [".zgroup", "g10", "g1x"]
    );
    s.delete_prefix(&prefix("not/there")).unwrap();
    s.delete_prefix(&StorePrefix::root()).unwrap();
    assert!(keys(s, "").is_empty());
    s.put(&key("again"), b"1").unwrap();
    assert_eq!(keys(s, ""), ["again"]);
}

fn get_many_keeps_order(s: &dyn Store) {
    put_all(s, &["a", "b/c"]);
    let got = s.get_many(&[key("b/c"), key("missing"), key("a")]).unwrap();
    assert_eq!(got, [Some(b"b/c".to_vec()), None, Some(b"a".to_vec())]);
    s.put_many(vec![(key("m/1"), vec![1]), (key("m/2"), vec![2])])
        .unwrap();
    assert_eq!(keys(s, "m"), ["m/1", "m/2"]);
}

fn get_many_into_reports_lengths(s: &dyn Store) {
    s.put(&key("exact"), &[1, 2, 3, 4]).unwrap();
    s.put(&key("long"), &[9; 6000]).unwrap();
    s.put(&key("short"), &[7, 7]).unwrap();
    s.put(&key("empty"), &[]).unwrap();
    let mut bufs = vec![vec![0u8; 4]; 5];
    let mut outs: Vec<&mut [u8]> = bufs.iter_mut().map(Vec::as_mut_slice).collect();
    let ks = [
        key("exact"),
        key("long"),
        key("short"),
        key("missing"),
        key("empty"),
    ];
    let lens = s.get_many_into(&ks, &mut outs).unwrap();
    assert_eq!(lens, [Some(4), Some(6000), Some(2), None, Some(0)]);
    assert_eq!(bufs[0], [1, 2, 3, 4]);
    assert_eq!(bufs[1], [9; 4], "a longer object fills the buffer");
    assert_eq!(&bufs[2][..2], [7, 7]);
    assert_eq!(bufs[3], [0; 4], "an absent object leaves its buffer alone");
}

/// A large object read alone into a buffer of its size (local stores split the read among
/// threads) gives every byte in place; one a byte longer or shorter than its buffer reports
/// its true length, as when read whole.
fn a_large_object_read_alone_is_whole(s: &dyn Store) {
    let len = (5 << 20) + 3;
    let big: Vec<u8> = (0..len as u32).map(|i| (i % 251) as u8).collect();
    s.put(&key("big"), &big).unwrap();
    let mut out = vec![0u8; len];
    assert_eq!(
        s.get_many_into(&[key("big")], &mut [&mut out[..]]).unwrap(),
        [Some(len)]
    );
    assert!(out == big, "the object's bytes, in place");
    let mut short = vec![0u8; len - 1];
    assert_eq!(
        s.get_many_into(&[key("big")], &mut [&mut short[..]])
            .unwrap(),
        [Some(len)]
    );
    assert!(short[..] == big[..len - 1]);
    let mut long = vec![0u8; len + 1];
    assert_eq!(
        s.get_many_into(&[key("big")], &mut [&mut long[..]])
            .unwrap(),
        [Some(len)]
    );
    assert!(long[..len] == big[..]);
}

/// A whole object read into a caller's buffer replaces what the buffer held, longer or shorter;
/// an absent object says so.
fn get_into_replaces_the_buffer(s: &dyn Store) {
    let long: Vec<u8> = (0..70_000u32).map(|i| (i % 253) as u8).collect();
    s.put(&key("long"), &long).unwrap();
    s.put(&key("short"), b"abc").unwrap();
    s.put(&key("empty"), b"").unwrap();
    let mut buf = vec![0xEEu8; 100];
    for (k, want) in [
        ("long", &long[..]),
        ("short", b"abc"),
        ("empty", b""),
        ("long", &long[..]),
    ] {
        assert!(s.get_into(&key(k), &mut buf).unwrap(), "{k}");
        assert!(buf == want, "{k}");
    }
    assert!(!s.get_into(&key("missing"), &mut buf).unwrap());
}

fn get_runs_into_reads_ranges(s: &dyn Store) {
    let value: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
    s.put(&key("obj"), &value).unwrap();
    // Consecutive runs, a gap, a run out of order, a run cut by the end, one past it.
    let spans = [
        (0u64, 3usize),
        (3, 700),
        (703, 1),
        (2000, 5),
        (10, 4),
        (4998, 4),
        (6000, 2),
    ];
    let mut bufs: Vec<Vec<u8>> = spans.iter().map(|&(_, n)| vec![0xEE; n]).collect();
    let mut runs: Vec<(u64, &mut [u8])> = spans
        .iter()
        .zip(bufs.iter_mut())
        .map(|(&(o, _), b)| (o, b.as_mut_slice()))
        .collect();
    assert_eq!(s.get_runs_into(&key("obj"), &mut runs).unwrap(), Some(5000));
    for (&(o, n), b) in spans.iter().zip(&bufs).take(5) {
        assert_eq!(b[..], value[o as usize..o as usize + n], "run at {o}");
    }
    assert_eq!(bufs[5][..2], value[4998..]);
    let mut none: Vec<(u64, &mut [u8])> = Vec::new();
    assert_eq!(s.get_runs_into(&key("missing"), &mut none).unwrap(), None);
}

/// Several objects' runs at once (one request per object on remote stores): lengths, bytes,
/// a run cut by the end of its object, a run past it, an absent object.
fn get_runs_many_reads_ranges(s: &dyn Store) {
    let value: Vec<u8> = (0..3000u32).map(|i| (i % 253) as u8).collect();
    s.put(&key("a"), &value).unwrap();
    s.put(&key("b"), &value[..10]).unwrap();
    let mut bufs: Vec<Vec<u8>> = [4usize, 4, 3000, 100, 12, 10]
        .iter()
        .map(|&n| vec![0xEE; n])
        .collect();
    let [a1, m, a2, a3, b1, b2] = &mut bufs[..] else {
        unreachable!()
    };
    let mut runs = vec![
        vec![(100u64, &mut a1[..])],
        vec![(0, &mut m[..])],
        vec![(0, &mut a2[..]), (2900, &mut a3[..])],
        vec![(8, &mut b1[..]), (50, &mut b2[..])],
    ];
    let keys = [key("a"), key("missing"), key("a"), key("b")];
    let lens = s.get_runs_many(&keys, &mut runs).unwrap();
    assert_eq!(lens, [Some(3000), None, Some(3000), Some(10)]);
    drop(runs);
    assert_eq!(bufs[0], value[100..104]);
    assert_eq!(bufs[1], [0xEE; 4], "an absent object leaves its runs alone");
    assert_eq!(bufs[2], value);
    assert_eq!(bufs[3], value[2900..]);
    assert_eq!(bufs[4][..2], value[8..10], "a run cut by the end");
    assert_eq!(bufs[4][2..], [0xEE; 10]);
    assert_eq!(bufs[5], [0xEE; 10], "a run past the end");
}

/// The last bytes of several objects at once (one suffix request per object on remote
/// stores): an object longer than the tail asked for, one shorter, an empty one, an absent one.
fn get_tails_many_reads_ends(s: &dyn Store) {
    let value: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8).collect();
    s.put(&key("a"), &value).unwrap();
    s.put(&key("b"), &value[..10]).unwrap();
    s.put(&key("e"), b"").unwrap();
    let keys = [key("a"), key("missing"), key("b"), key("e")];
    let tails = s.get_tails_many(&keys, 100).unwrap();
    let want = |v: &[u8]| {
        Some(Tail {
            len: v.len() as u64,
            bytes: v[v.len().saturating_sub(100)..].to_vec(),
        })
    };
    assert_eq!(
        tails,
        [want(&value), None, want(&value[..10]), want(b"")],
        "{}",
        s.describe()
    );
}

fn utf8_and_spaces(s: &dyn Store) {
    let k = key("grp ü/v 1/.zarray");
    s.put(&k, "{\"ü\": 1}".as_bytes()).unwrap();
    assert_eq!(s.get(&k).unwrap(), Some("{\"ü\": 1}".as_bytes().to_vec()));
    assert_eq!(s.list_children(&StorePrefix::root()).unwrap(), ["grp ü"]);
    assert_eq!(s.list_children(&prefix("grp ü")).unwrap(), ["v 1"]);
    assert_eq!(keys(s, "grp ü"), ["grp ü/v 1/.zarray"]);
}

type Check = fn(&dyn Store);

/// `get_each` hands every object (and every absence) out once, with its key's index, never
/// more than `held` at a time in the caller's hands, also when asked from a worker thread; a
/// failure of the callback is the result.
fn get_each_hands_out_each_object_once(s: &dyn Store) {
    use std::sync::Mutex;
    use std::sync::atomic::AtomicUsize;
    let keys: Vec<StoreKey> = (0..30)
        .map(|i| key(&format!("v/{i}")))
        .chain([key("v/absent")])
        .collect();
    for (i, k) in keys.iter().enumerate().take(30) {
        s.put(k, &vec![i as u8; 100 + i]).unwrap();
    }
    let run = |held: usize| {
        let got = Mutex::new(Vec::new());
        let (active, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        s.get_each(&keys, held, &|i, value| {
            let now = active.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(2));
            got.lock().unwrap().push((i, value));
            active.fetch_sub(1, Ordering::SeqCst);
            Ok(())
        })
        .unwrap();
        let mut got = got.into_inner().unwrap();
        got.sort();
        let expected: Vec<(usize, Option<Vec<u8>>)> = (0..30)
            .map(|i| (i, Some(vec![i as u8; 100 + i])))
            .chain([(30, None)])
            .collect();
        assert_eq!(got, expected, "held {held}");
        assert!(
            most.load(Ordering::SeqCst) <= held,
            "more than {held} in hand"
        );
    };
    run(3);
    run(1);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    pool.install(|| run(4));
    let failed = s.get_each(&keys, 4, &|i, _| match i {
        7 => Err(Error::Internal("stop at 7".into())),
        _ => Ok(()),
    });
    assert!(matches!(failed, Err(Error::Internal(m)) if m == "stop at 7"));
}

/// `put_streamed` stores every object its producer puts, from many threads, before it
/// returns; a failure of the producer is the result.
fn put_streamed_stores_every_object(s: &dyn Store) {
    use rayon::prelude::*;
    let keys: Vec<StoreKey> = (0..40).map(|i| key(&format!("v/{i}"))).collect();
    s.put_streamed(3, &|put| {
        keys.par_iter()
            .enumerate()
            .try_for_each(|(i, k)| put(k, vec![i as u8; 1000 + i]))
    })
    .unwrap();
    let got = s.get_many(&keys).unwrap();
    for (i, value) in got.into_iter().enumerate() {
        assert_eq!(value, Some(vec![i as u8; 1000 + i]), "object {i}");
    }
    let failed = s.put_streamed(2, &|put| {
        put(&key("w/0"), b"kept or not".to_vec())?;
        Err(Error::Internal("producer failed".into()))
    });
    assert!(matches!(failed, Err(Error::Internal(m)) if m == "producer failed"));
}

const SUITE: &[(&str, Check)] = &[
    (
        "put_streamed_stores_every_object",
        put_streamed_stores_every_object,
    ),
    (
        "get_each_hands_out_each_object_once",
        get_each_hands_out_each_object_once,
    ),
    ("absent_keys_are_none", absent_keys_are_none),
    (
        "overwrite_leaves_no_stale_tail",
        overwrite_leaves_no_stale_tail,
    ),
    ("empty_values_are_present", empty_values_are_present),
    (
        "children_are_sorted_and_unique",
        children_are_sorted_and_unique,
    ),
    ("keys_are_listed_recursively", keys_are_listed_recursively),
    ("delete_and_delete_missing", delete_and_delete_missing),
    (
        "delete_prefix_spares_siblings",
        delete_prefix_spares_siblings,
    ),
    ("get_many_keeps_order", get_many_keeps_order),
    (
        "get_many_into_reports_lengths",
        get_many_into_reports_lengths,
    ),
    (
        "a_large_object_read_alone_is_whole",
        a_large_object_read_alone_is_whole,
    ),
    ("get_into_replaces_the_buffer", get_into_replaces_the_buffer),
    ("get_runs_into_reads_ranges", get_runs_into_reads_ranges),
    ("get_runs_many_reads_ranges", get_runs_many_reads_ranges),
    ("get_tails_many_reads_ends", get_tails_many_reads_ends),
    ("utf8_and_spaces", utf8_and_spaces),
];

/// Runs every check on a fresh store from `make`, naming the check that fails.
fn conformance(make: &dyn Fn() -> Fixture) {
    for (name, check) in SUITE {
        let fixture = make();
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            check(fixture.store.as_ref())
        }));
        if outcome.is_err() {
            panic!("{name} failed on {}", fixture.store.describe());
        }
    }
}

#[test]
fn memory_store_conforms() {
    conformance(&memory);
}

#[test]
fn file_store_conforms() {
    conformance(&directory);
}

#[test]
fn s3_store_conforms_on_s3s_fs() {
    let server = Server::start(Kind::S3sFs);
    conformance(&|| s3(&server));
}

#[test]
fn s3_store_conforms_on_moto() {
    let server = Server::start(Kind::Moto);
    conformance(&|| s3(&server));
}

#[test]
fn overlay_store_conforms() {
    conformance(&overlay_over_directory);
}

#[test]
fn created_store_conforms() {
    conformance(&created_over_memory);
}

#[test]
fn zip_store_conforms() {
    conformance(&zip_archive);
    conformance(&reopened_zip_archive);
}

// ---- model-based test ----------------------------------------------------------------------

const DIRS: [&str; 3] = ["g1", "g10", "ü x"];
const LEAVES: [&str; 4] = [".zarray", ".zattrs", "0", "0.1"];

#[derive(Debug, Clone)]
enum Op {
    Put(String, Vec<u8>),
    Get(String),
    Delete(String),
    DeletePrefix(String),
    List(String),
    ListKeys(String),
    Flush,
}

/// Directory names and leaf names never overlap, so no key is both object and directory.
fn a_prefix() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(&DIRS[..]), 0..=2).prop_map(|d| d.join("/"))
}

fn a_key() -> impl Strategy<Value = String> {
    (a_prefix(), prop::sample::select(&LEAVES[..])).prop_map(|(p, leaf)| {
        if p.is_empty() {
            leaf.to_string()
        } else {
            format!("{p}/{leaf}")
        }
    })
}

fn an_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (a_key(), prop::collection::vec(any::<u8>(), 0..40)).prop_map(|(k, v)| Op::Put(k, v)),
        2 => a_key().prop_map(Op::Get),
        2 => a_key().prop_map(Op::Delete),
        1 => a_prefix().prop_map(Op::DeletePrefix),
        2 => a_prefix().prop_map(Op::List),
        1 => a_prefix().prop_map(Op::ListKeys),
        1 => Just(Op::Flush),
    ]
}

fn below(p: &str) -> String {
    if p.is_empty() {
        String::new()
    } else {
        format!("{p}/")
    }
}

fn model_children(model: &BTreeMap<String, Vec<u8>>, p: &str) -> Vec<String> {
    let start = below(p);
    let names: BTreeSet<&str> = model
        .keys()
        .filter_map(|k| k.strip_prefix(start.as_str()))
        .filter_map(|rest| rest.split('/').next())
        .collect();
    names.into_iter().map(str::to_string).collect()
}

fn model_keys(model: &BTreeMap<String, Vec<u8>>, p: &str) -> Vec<String> {
    let start = below(p);
    model
        .keys()
        .filter(|k| k.starts_with(&start))
        .cloned()
        .collect()
}

fn replay(store: &dyn Store, ops: &[Op]) -> Result<BTreeMap<String, Vec<u8>>, TestCaseError> {
    replay_from(store, BTreeMap::new(), ops)
}

/// Replays `ops` on a store that already holds `model`.
fn replay_from(
    store: &dyn Store,
    mut model: BTreeMap<String, Vec<u8>>,
    ops: &[Op],
) -> Result<BTreeMap<String, Vec<u8>>, TestCaseError> {
    for op in ops {
        match op {
            Op::Put(k, v) => {
                store.put(&key(k), v).unwrap();
                model.insert(k.clone(), v.clone());
            }
            Op::Get(k) => prop_assert_eq!(store.get(&key(k)).unwrap(), model.get(k).cloned()),
            Op::Delete(k) => {
                store.delete(&key(k)).unwrap();
                model.remove(k);
            }
            Op::DeletePrefix(p) => {
                store.delete_prefix(&prefix(p)).unwrap();
                let start = below(p);
                model.retain(|k, _| !k.starts_with(&start));
            }
            Op::List(p) => prop_assert_eq!(
                store.list_children(&prefix(p)).unwrap(),
                model_children(&model, p)
            ),
            Op::ListKeys(p) => prop_assert_eq!(keys(store, p), model_keys(&model, p)),
            Op::Flush => store.flush().unwrap(),
        }
    }
    prop_assert_eq!(keys(store, ""), model_keys(&model, ""));
    Ok(model)
}

/// After a replay and a flush, a fresh reader of the store's location sees exactly the model.
fn check_persisted(
    reopened: &dyn Store,
    model: &BTreeMap<String, Vec<u8>>,
) -> Result<(), TestCaseError> {
    prop_assert_eq!(keys(reopened, ""), model_keys(model, ""));
    for (k, v) in model {
        prop_assert_eq!(reopened.get(&key(k)).unwrap(), Some(v.clone()));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn file_store_matches_model(ops in prop::collection::vec(an_op(), 1..60)) {
        let fixture = directory();
        let model = replay(fixture.store.as_ref(), &ops)?;
        let root = fixture._dir.as_ref().unwrap().path().join("x.zarr");
        check_persisted(&FileStore::open(&root).unwrap(), &model)?;
    }

    #[test]
    fn memory_store_matches_model(ops in prop::collection::vec(an_op(), 1..60)) {
        replay(&MemoryStore::new(), &ops)?;
    }

    #[test]
    fn overlay_store_matches_model_and_spares_its_base(
        seed in prop::collection::btree_map(a_key(), prop::collection::vec(any::<u8>(), 0..8), 0..12),
        ops in prop::collection::vec(an_op(), 1..60),
    ) {
        let fixture = directory();
        for (k, v) in &seed {
            fixture.store.put(&key(k), v).unwrap();
        }
        let root = fixture._dir.as_ref().unwrap().path().join("x.zarr");
        let overlay = OverlayStore::new(Box::new(FileStore::open(&root).unwrap()));
        replay_from(&overlay, seed.clone(), &ops)?;
        check_persisted(&FileStore::open(&root).unwrap(), &seed)?;
    }

    #[test]
    fn zip_store_matches_model(ops in prop::collection::vec(an_op(), 1..60)) {
        let fixture = zip_archive();
        let model = replay(fixture.store.as_ref(), &ops)?;
        fixture.store.flush().unwrap();
        let path = fixture._dir.as_ref().unwrap().path().join("x.zip");
        check_persisted(&ZipStore::open(&path, false).unwrap(), &model)?;
    }
}

/// Replays random sequences against both S3 servers (fewer cases: every step is a request).
#[test]
fn s3_stores_match_model() {
    use proptest::test_runner::{Config, TestRunner};
    for kind in [Kind::S3sFs, Kind::Moto] {
        let server = Server::start(kind);
        let mut runner = TestRunner::new(Config::with_cases(12));
        runner
            .run(&prop::collection::vec(an_op(), 1..40), |ops| {
                let fixture = s3(&server);
                replay(fixture.store.as_ref(), &ops).map(|_| ())
            })
            .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
    }
}

// ---- directory-tree specifics --------------------------------------------------------------

fn touch(path: &Path) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, b"x").unwrap();
}

#[test]
fn create_refuses_to_clobber_a_non_zarr_directory() {
    let dir = TempDir::new().unwrap();
    touch(&dir.path().join("notes.txt"));
    touch(&dir.path().join("sub/.zgroup"));
    for clobber in [false, true] {
        match FileStore::create(dir.path(), clobber) {
            Err(Error::Exists(_)) => {}
            other => panic!("clobber={clobber}: {other:?}"),
        }
    }
    assert!(dir.path().join("notes.txt").exists());
    assert!(dir.path().join("sub/.zgroup").exists());
}

#[test]
fn create_clobbers_a_zarr_directory_only_when_asked() {
    let dir = TempDir::new().unwrap();
    let root = dir.path().join("x.zarr");
    for marker in [
        ".zgroup",
        ".zarray",
        ".zattrs",
        ".zmetadata",
        ".nczarr",
        "zarr.json",
    ] {
        touch(&root.join(marker));
        touch(&root.join("v/0.0"));
        assert!(matches!(
            FileStore::create(&root, false),
            Err(Error::Exists(_))
        ));
        let store = FileStore::create(&root, true).unwrap();
        assert!(root.is_dir(), "{marker}");
        assert_eq!(fs::read_dir(&root).unwrap().count(), 0, "{marker}");
        assert!(store.list_keys(&StorePrefix::root()).unwrap().is_empty());
    }
}

#[test]
fn create_makes_missing_and_accepts_empty_directories() {
    let dir = TempDir::new().unwrap();
    let deep = dir.path().join("a/b/x.zarr");
    FileStore::create(&deep, false).unwrap();
    assert!(deep.is_dir());
    FileStore::create(&deep, false).unwrap();
    FileStore::create(&deep, true).unwrap();
}

#[test]
fn create_over_a_plain_file() {
    let dir = TempDir::new().unwrap();
    let root = dir.path().join("x.zarr");
    touch(&root);
    assert!(matches!(
        FileStore::create(&root, false),
        Err(Error::Exists(_))
    ));
    assert!(root.is_file());
    FileStore::create(&root, true).unwrap();
    assert!(root.is_dir());
}

#[test]
fn open_needs_an_existing_directory() {
    let dir = TempDir::new().unwrap();
    let missing = dir.path().join("missing.zarr");
    assert!(matches!(FileStore::open(&missing), Err(Error::NotFound(_))));
    let file = dir.path().join("file.zarr");
    touch(&file);
    assert!(matches!(FileStore::open(&file), Err(Error::NotZarr(_))));
    FileStore::open(dir.path()).unwrap();
}

#[test]
fn deleting_everything_keeps_the_dataset_directory() {
    let f = directory();
    put_all(f.store.as_ref(), &[".zgroup", "g/v/0"]);
    f.store.delete_prefix(&StorePrefix::root()).unwrap();
    let root = f._dir.as_ref().unwrap().path().join("x.zarr");
    assert!(root.is_dir());
    assert_eq!(fs::read_dir(&root).unwrap().count(), 0);
}

#[test]
fn puts_make_the_directories_they_need_again_after_a_delete_pruned_them() {
    let f = directory();
    let s = f.store.as_ref();
    let root = f._dir.as_ref().unwrap().path().join("x.zarr");
    put_all(s, &["g/v/0.0", "g/v/0.1"]);
    s.delete_prefix(&prefix("g")).unwrap();
    assert!(
        !root.join("g").exists(),
        "the delete prunes the empty directories"
    );
    s.put(&key("g/v/0.0"), b"again").unwrap();
    s.put(&key("g/w/x/1"), b"deeper").unwrap();
    assert_eq!(
        s.get(&key("g/v/0.0")).unwrap().as_deref(),
        Some(&b"again"[..])
    );
    assert_eq!(keys(s, ""), ["g/v/0.0", "g/w/x/1"]);
    // A plain file where a directory is needed is an error, not a loop.
    touch(&root.join("h"));
    assert!(s.put(&key("h/0"), b"1").is_err());
}

#[test]
fn directories_are_not_objects() {
    let f = directory();
    let s = f.store.as_ref();
    put_all(s, &["g/v/0"]);
    assert_eq!(s.get(&key("g")).unwrap(), None);
    assert_eq!(s.get(&key("g/v/0/deeper")).unwrap(), None);
    s.delete(&key("g/v")).unwrap();
    assert_eq!(keys(s, ""), ["g/v/0"]);
    assert!(s.put(&key("g/v/0/deeper"), b"1").is_err());
}

#[test]
fn temporary_and_foreign_names_are_invisible() {
    use std::os::unix::ffi::OsStrExt;
    let f = directory();
    let root = f._dir.as_ref().unwrap().path().join("x.zarr");
    touch(&root.join(".nczarr-tmp..zgroup.1.2"));
    touch(&root.join("g/.nczarr-tmp.0.1.2"));
    touch(&root.join("g/0"));
    touch(&root.join(std::ffi::OsStr::from_bytes(b"bad\xff")));
    let s = f.store.as_ref();
    assert_eq!(s.list_children(&StorePrefix::root()).unwrap(), ["g"]);
    assert_eq!(s.list_children(&prefix("g")).unwrap(), ["0"]);
    assert_eq!(keys(s, ""), ["g/0"]);
    assert!(matches!(
        s.put(&key("g/.nczarr-tmp.x"), b"1"),
        Err(Error::BadKey { .. })
    ));
}

#[test]
fn a_reader_never_sees_a_partial_object() {
    const BIG: usize = 1 << 20;
    let dir = TempDir::new().unwrap();
    let store = Arc::new(FileStore::create(&dir.path().join("x.zarr"), false).unwrap());
    let k = key("v/0.0");
    store.put(&k, &[0x55; 10]).unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let (store, done, k) = (Arc::clone(&store), Arc::clone(&done), k.clone());
        std::thread::spawn(move || {
            let mut reads = 0usize;
            loop {
                let finished = done.load(Ordering::Acquire);
                let v = store.get(&k).unwrap().expect("object vanished");
                let whole_big = v.len() == BIG && v.iter().all(|&b| b == 0xAA);
                let whole_small = v == [0x55; 10];
                assert!(whole_big || whole_small, "torn read of {} bytes", v.len());
                reads += 1;
                if finished {
                    return reads;
                }
            }
        })
    };
    let big = vec![0xAA; BIG];
    for i in 0..200 {
        let value: &[u8] = if i % 2 == 0 { &big } else { &[0x55; 10] };
        store.put(&k, value).unwrap();
    }
    done.store(true, Ordering::Release);
    assert!(reader.join().unwrap() > 1);
}

#[test]
fn open_store_follows_the_url() {
    let dir = TempDir::new().unwrap();
    let root = dir.path().join("my data.zarr");
    let url = DatasetUrl::parse(&format!(
        "file://{}#mode=nczarr,file",
        root.display().to_string().replace(' ', "%20")
    ))
    .unwrap();
    let created = open_store(&url, OpenHow::Create { clobber: false }).unwrap();
    created.put(&key(".zgroup"), b"{}").unwrap();
    let opened = open_store(&url, OpenHow::Open { writable: false }).unwrap();
    assert_eq!(opened.get(&key(".zgroup")).unwrap(), Some(b"{}".to_vec()));
    let zipped = dir.path().join("x.zip");
    let zip_url =
        DatasetUrl::parse(&format!("file://{}#mode=nczarr,zip", zipped.display())).unwrap();
    assert!(matches!(
        open_store(&zip_url, OpenHow::Open { writable: false }),
        Err(Error::NotFound(_))
    ));
    let created = open_store(&zip_url, OpenHow::Create { clobber: false }).unwrap();
    created.put(&key(".zgroup"), b"{}").unwrap();
    created.flush().unwrap();
    let opened = open_store(&zip_url, OpenHow::Open { writable: false }).unwrap();
    assert_eq!(opened.get(&key(".zgroup")).unwrap(), Some(b"{}".to_vec()));
}
