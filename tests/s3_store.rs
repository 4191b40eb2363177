//! The S3 backend beyond the conformance suite: requests counted at the wire (one GET per
//! object, no HEAD, batches spread over several connections, consolidated open is one GET),
//! credentials (right, wrong, anonymous on a public and on a protected server), creation rules
//! (clobber, noclobber, missing bucket), deletes at a service without bulk deletes, and failures that must end in a clear error, never a
//! hang: a stopped server, a silent one, one that drops or stalls mid-GET, and throttling that
//! a retry overcomes.

mod common;

use common::s3::{
    BUCKET, CountingProxy, FakeServer, Kind, Misbehaviour, Server, Trap, settings_at, within,
};
use nczarr_rs::Error;
use nczarr_rs::api::{CreateOptions, Dataset};
use nczarr_rs::url::DatasetUrl;
use nczarr_rs::zmap::s3;
use nczarr_rs::zmap::s3::settings::{Credentials, S3Settings};
use nczarr_rs::zmap::{Store, StoreKey, StorePrefix};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Longest any single case may take before it counts as a hang.
const HANG: Duration = Duration::from_secs(60);

fn key(s: &str) -> StoreKey {
    StoreKey::new(s).unwrap()
}

fn chunk_keys(n: usize) -> Vec<StoreKey> {
    (0..n).map(|i| key(&format!("v/{i}.0"))).collect()
}

#[test]
fn many_chunks_are_one_get_each_over_several_connections() {
    for kind in [Kind::S3sFs, Kind::Moto] {
        let server = Server::start(kind);
        let proxy = CountingProxy::start(server.port);
        let mut settings = settings_at(&proxy.endpoint(), &server.fresh_root("count"));
        settings.transfer.concurrency = 8;
        let store = s3::create(settings, false).unwrap();
        let keys = chunk_keys(64);
        let items: Vec<(StoreKey, Vec<u8>)> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| (k.clone(), vec![i as u8; 100 + i]))
            .collect();
        store.put_many(items).unwrap();
        let puts = proxy.take();
        assert_eq!(puts.iter().filter(|r| r.method == "PUT").count(), 64);

        let mut asked = keys.clone();
        asked.push(key("v/missing"));
        let got = store.get_many(&asked).unwrap();
        for (i, v) in got.iter().take(64).enumerate() {
            assert_eq!(v.as_deref(), Some(&vec![i as u8; 100 + i][..]), "{kind:?}");
        }
        assert_eq!(got[64], None);
        let reqs = proxy.take();
        let gets = reqs.iter().filter(|r| r.method == "GET").count();
        let heads = reqs.iter().filter(|r| r.method == "HEAD").count();
        assert_eq!((gets, heads, reqs.len()), (65, 0, 65), "{kind:?}: {reqs:?}");
        let mut connections: Vec<usize> = reqs.iter().map(|r| r.connection).collect();
        connections.sort_unstable();
        connections.dedup();
        assert!(
            connections.len() > 1,
            "{kind:?}: the batch used one connection, so it was not concurrent"
        );
        assert!(reqs.iter().all(|r| r.signed), "{kind:?}");
    }
}

/// Deleting a dataset's objects is one listing and one bulk delete per 1000 objects, not one
/// request per object; every object is gone afterwards.
#[test]
fn deleting_many_objects_is_a_few_bulk_requests() {
    for kind in [Kind::S3sFs, Kind::Moto] {
        let server = Server::start(kind);
        let proxy = CountingProxy::start(server.port);
        let settings = settings_at(&proxy.endpoint(), &server.fresh_root("bulk"));
        let store = s3::create(settings, false).unwrap();
        let items: Vec<(StoreKey, Vec<u8>)> = chunk_keys(40)
            .into_iter()
            .map(|k| (k, vec![1u8; 10]))
            .collect();
        store.put_many(items).unwrap();
        proxy.take();
        store.delete_prefix(&StorePrefix::root()).unwrap();
        let reqs = proxy.take();
        let deletes = reqs.iter().filter(|r| r.method == "DELETE").count();
        let posts = reqs.iter().filter(|r| r.method == "POST").count();
        assert_eq!((deletes, posts), (0, 1), "{kind:?}: {reqs:?}");
        assert!(
            store.list_keys(&StorePrefix::root()).unwrap().is_empty(),
            "{kind:?}: objects left"
        );
    }
}

/// A service without S3's bulk delete, answering it 501 (`NotImplemented`) or 404, gets one
/// DELETE per object after its first refusal; the refusal is remembered for the endpoint, so
/// a store opened there later in the process sends no bulk request at all. A bucket that is
/// not there fails the delete.
#[test]
fn a_service_refusing_bulk_deletes_gets_one_delete_per_object() {
    let server = Server::start(Kind::S3sFs);
    for trap in [Trap::NotImplemented, Trap::NotFound] {
        let proxy = CountingProxy::start_trapping(server.port, Some(("?delete", trap)));
        let root = server.fresh_root("single-deletes");
        for (open, bulk_requests) in [("first", 1), ("second", 0)] {
            let mut settings = settings_at(&proxy.endpoint(), &root);
            settings.transfer.retries = 0;
            let store = s3::open(settings).unwrap();
            let keys = chunk_keys(3);
            store
                .put_many(keys.iter().map(|k| (k.clone(), vec![7u8; 10])).collect())
                .unwrap();
            proxy.take();
            store.delete_many(&keys).unwrap();
            let reqs = proxy.take();
            let count = |method: &str| reqs.iter().filter(|r| r.method == method).count();
            assert_eq!(
                (count("POST"), count("DELETE")),
                (bulk_requests, 3),
                "{trap:?}, {open} open: {reqs:?}"
            );
            assert!(
                store.list_keys(&StorePrefix::root()).unwrap().is_empty(),
                "{trap:?}, {open} open: objects left"
            );
        }
    }
    // A bucket that is not there is an error, not a refused bulk request deleting nothing
    // (moto answers 404 `NoSuchBucket`; s3s-fs deletes the objects of any bucket name).
    let moto = Server::start(Kind::Moto);
    let proxy = CountingProxy::start(moto.port);
    let mut settings = settings_at(&proxy.endpoint(), "gone");
    settings.bucket = "no-such-bucket".into();
    let store = s3::open(settings).unwrap();
    let deleted = store.delete_many(&chunk_keys(2));
    assert!(
        matches!(deleted, Err(Error::NotFound(_) | Error::Remote { .. })),
        "{deleted:?}"
    );
    let reqs = proxy.take();
    assert!(reqs.iter().all(|r| r.method == "POST"), "{reqs:?}");
}

/// A dataset written with consolidated metadata opens with exactly one GET, through the
/// public URL path (endpoint and anonymous profile from the fragment; moto is public).
#[test]
fn consolidated_open_is_a_single_get() {
    let server = Server::start(Kind::Moto);
    let proxy = CountingProxy::start(server.port);
    let text = format!(
        "s3://{BUCKET}/consolidated#mode=nczarr,s3,consolidated&aws.profile=none&aws.endpoint={}",
        proxy.endpoint()
    );
    let url = DatasetUrl::parse(&text).unwrap();
    let mut ds = Dataset::create(&url, CreateOptions::default()).unwrap();
    let root = nczarr_rs::model::Tree::ROOT;
    let d = ds.def_dim(root, "x", 6, false).unwrap();
    ds.def_var(root, "v", nczarr_rs::model::NcType::Int, &[d.0 as i32])
        .unwrap();
    ds.close().unwrap();
    let written = proxy.take();
    assert!(
        written.iter().all(|r| !r.signed),
        "anonymous requests are unsigned"
    );
    assert!(written.iter().any(|r| r.target.ends_with("/.zmetadata")));

    let ds = Dataset::open(&url, false).unwrap();
    let reqs = proxy.take();
    assert_eq!(reqs.len(), 1, "{reqs:?}");
    assert_eq!(reqs[0].method, "GET");
    assert!(
        reqs[0].target.ends_with("consolidated/.zmetadata"),
        "{reqs:?}"
    );
    drop(ds);
}

#[test]
fn credentials_are_checked_by_a_signing_server() {
    let server = Server::start(Kind::S3sFs);
    let good = s3::create(server.settings("auth"), false).unwrap();
    good.put(&key(".zgroup"), b"{}").unwrap();
    let root = good.root().to_string();

    let wrong = |credentials: Credentials| {
        let mut s = settings_at(&server.endpoint(), &root);
        s.credentials = credentials;
        s3::open(s).unwrap()
    };
    let bad_secret = wrong(Credentials::Keys {
        access_key_id: common::s3::ACCESS_KEY.into(),
        secret_access_key: "not-the-secret".into(),
        session_token: None,
    });
    let bad_key = wrong(Credentials::Keys {
        access_key_id: "nobody".into(),
        secret_access_key: "x".into(),
        session_token: None,
    });
    let anonymous = wrong(Credentials::Anonymous);
    for (what, store) in [
        ("wrong secret", &bad_secret),
        ("unknown key", &bad_key),
        ("anonymous on a protected server", &anonymous),
    ] {
        match store.get(&key(".zgroup")) {
            Err(Error::Auth(msg)) => assert!(msg.contains(".zgroup"), "{what}: {msg}"),
            other => panic!("{what}: {other:?}"),
        }
        let listed = store.list_children(&StorePrefix::root());
        assert!(matches!(listed, Err(Error::Auth(_))), "{what}: {listed:?}");
    }
    assert_eq!(good.get(&key(".zgroup")).unwrap(), Some(b"{}".to_vec()));
}

#[test]
fn anonymous_reads_of_a_public_bucket() {
    let server = Server::start(Kind::Moto);
    let proxy = CountingProxy::start(server.port);
    let mut settings = settings_at(&proxy.endpoint(), &server.fresh_root("public"));
    settings.credentials = Credentials::Anonymous;
    let store = s3::create(settings, false).unwrap();
    store.put(&key("a/.zgroup"), b"{}").unwrap();
    assert_eq!(store.get(&key("a/.zgroup")).unwrap(), Some(b"{}".to_vec()));
    assert_eq!(store.list_children(&StorePrefix::root()).unwrap(), ["a"]);
    let reqs = proxy.take();
    assert!(
        !reqs.is_empty() && reqs.iter().all(|r| !r.signed),
        "{reqs:?}"
    );
}

#[test]
fn create_clobbers_only_datasets_and_only_when_asked() {
    let server = Server::start(Kind::S3sFs);
    let settings = server.settings("create");
    let first = s3::create(settings.clone(), false).unwrap();
    first.put(&key(".zgroup"), b"{}").unwrap();
    first.put(&key("v/0.0"), b"old").unwrap();
    assert!(matches!(
        s3::create(settings.clone(), false),
        Err(Error::Exists(_))
    ));
    assert_eq!(first.get(&key("v/0.0")).unwrap(), Some(b"old".to_vec()));
    let again = s3::create(settings.clone(), true).unwrap();
    assert!(again.list_keys(&StorePrefix::root()).unwrap().is_empty());

    let other = server.settings("create-foreign");
    let foreign = s3::create(other.clone(), false).unwrap();
    foreign.put(&key("notes/readme.txt"), b"keep me").unwrap();
    for clobber in [false, true] {
        assert!(matches!(
            s3::create(other.clone(), clobber),
            Err(Error::Exists(_))
        ));
    }
    assert!(foreign.get(&key("notes/readme.txt")).unwrap().is_some());
}

#[test]
fn missing_bucket_or_dataset_is_not_found() {
    let server = Server::start(Kind::S3sFs);
    let mut no_bucket = server.settings("x");
    no_bucket.bucket = "no-such-bucket".into();
    let created = s3::create(no_bucket.clone(), false);
    assert!(matches!(created, Err(Error::NotFound(_))), "{created:?}");
    let open = s3::open(no_bucket).unwrap();
    assert_eq!(open.get(&key(".zgroup")).unwrap(), None);
    assert!(matches!(
        open.list_children(&StorePrefix::root()),
        Err(Error::NotFound(_))
    ));

    let empty = s3::open(server.settings("nothing-here")).unwrap();
    let r = nczarr_rs::format::read::read_dataset(&empty, false, true);
    assert!(matches!(r, Err(Error::NotFound(_))), "{r:?}");
}

fn failing_get(settings: S3Settings) -> Error {
    within(HANG, move || {
        let store = s3::open(settings).unwrap();
        store.get(&key("v/0.0")).unwrap_err()
    })
}

fn short(endpoint: &str) -> S3Settings {
    let mut s = settings_at(endpoint, "t");
    s.transfer.timeout = Duration::from_millis(1500);
    s
}

#[test]
fn a_stopped_server_is_an_error() {
    let server = Server::start(Kind::S3sFs);
    let settings = short(&server.endpoint());
    server.stop();
    match failing_get(settings) {
        Error::Remote { why, .. } => assert!(why.contains("GET"), "{why}"),
        other => panic!("{other:?}"),
    }
}

/// Uploads that fail stop a streamed write: the producer, waiting for room to put more, is
/// refused instead of waiting forever, and the upload's error is the result.
#[test]
fn a_streamed_write_to_a_stopped_server_is_an_error_not_a_hang() {
    let server = Server::start(Kind::S3sFs);
    let settings = short(&server.endpoint());
    server.stop();
    let failure = within(HANG, move || {
        let store = s3::open(settings).unwrap();
        store
            .put_streamed(1, &|put| {
                (0..10).try_for_each(|i| put(&key(&format!("v/{i}")), vec![1u8; 1000]))
            })
            .unwrap_err()
    });
    match failure {
        Error::Remote { why, .. } => assert!(why.contains("PUT"), "{why}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_silent_server_times_out() {
    let fake = FakeServer::start(Misbehaviour::Silent);
    match failing_get(short(&fake.endpoint())) {
        Error::Remote { why, .. } => assert!(why.contains("GET"), "{why}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_connection_dropped_mid_get_is_an_error_not_short_data() {
    let fake = FakeServer::start(Misbehaviour::DropsMidBody);
    assert!(matches!(
        failing_get(short(&fake.endpoint())),
        Error::Remote { .. }
    ));
    assert!(fake.requests.load(Ordering::SeqCst) >= 1);
}

#[test]
fn a_server_stalling_mid_get_times_out() {
    let fake = FakeServer::start(Misbehaviour::StallsMidBody);
    assert!(matches!(
        failing_get(short(&fake.endpoint())),
        Error::Remote { .. }
    ));
}

#[test]
fn throttling_is_retried() {
    let fake = FakeServer::start(Misbehaviour::ThrottlesTwice);
    let mut settings = short(&fake.endpoint());
    settings.transfer.retries = 3;
    settings.transfer.timeout = Duration::from_secs(20);
    let got = within(HANG, move || {
        s3::open(settings).unwrap().get(&key("v/0.0")).unwrap()
    });
    assert_eq!(got, Some(b"fine".to_vec()));
    assert_eq!(fake.requests.load(Ordering::SeqCst), 3);

    let fake = FakeServer::start(Misbehaviour::ThrottlesTwice);
    let mut settings = short(&fake.endpoint());
    settings.transfer.retries = 0;
    assert!(matches!(failing_get(settings), Error::Remote { .. }));
    assert_eq!(fake.requests.load(Ordering::SeqCst), 1);
}

/// Without consolidated metadata, open fetches each metadata object once, in batches (the
/// arrays of a group together), and never issues a HEAD.
#[test]
fn open_fetches_each_metadata_object_once() {
    let server = Server::start(Kind::Moto);
    let proxy = CountingProxy::start(server.port);
    let text = format!(
        "s3://{BUCKET}/plain#mode=nczarr,s3&aws.profile=none&aws.endpoint={}",
        proxy.endpoint()
    );
    let url = DatasetUrl::parse(&text).unwrap();
    let mut ds = Dataset::create(&url, CreateOptions::default()).unwrap();
    let root = nczarr_rs::model::Tree::ROOT;
    let g = ds.def_grp(root, "g").unwrap();
    let d = ds.def_dim(root, "x", 6, false).unwrap();
    for name in ["a", "b", "c", "d"] {
        ds.def_var(g, name, nczarr_rs::model::NcType::Int, &[d.0 as i32])
            .unwrap();
    }
    ds.close().unwrap();
    proxy.take();

    let ds = Dataset::open(&url, false).unwrap();
    let reqs = proxy.take();
    assert!(reqs.iter().all(|r| r.method == "GET"), "{reqs:?}");
    let mut targets: Vec<&str> = reqs.iter().map(|r| r.target.as_str()).collect();
    targets.sort_unstable();
    let total = targets.len();
    targets.dedup();
    assert_eq!(
        targets.len(),
        total,
        "an object was fetched twice: {reqs:?}"
    );
    for name in ["a", "b", "c", "d"] {
        assert!(
            targets
                .iter()
                .any(|t| t.ends_with(&format!("plain/g/{name}/.zarray"))),
            "{reqs:?}"
        );
    }
    drop(ds);
}

/// Defines float variable `name` over new dimensions `dims` with `chunks` and writes each
/// element's index into it; returns its id.
fn counting_var(ds: &mut Dataset, name: &str, dims: [(&str, u64); 3], chunks: [u64; 3]) -> usize {
    let root = nczarr_rs::model::Tree::ROOT;
    let float = nczarr_rs::model::NcType::Float;
    let ids: Vec<i32> = dims
        .iter()
        .map(|(n, len)| ds.def_dim(root, n, *len, false).unwrap().0 as i32)
        .collect();
    let v = ds.def_var(root, name, float, &ids).unwrap();
    ds.def_var_chunking(root, v, nczarr_rs::model::Storage::Chunked, Some(&chunks))
        .unwrap();
    ds.enddef().unwrap();
    let all = nczarr_rs::api::Slab {
        start: vec![0; 3],
        count: dims.iter().map(|(_, len)| *len).collect(),
        stride: vec![1; 3],
    };
    let n: u64 = dims.iter().map(|(_, len)| len).product();
    let data: Vec<u8> = (0..n as u32)
        .flat_map(|i| (i as f32).to_ne_bytes())
        .collect();
    ds.put_fixed(root, v, &all, None, float, &data).unwrap();
    v
}

/// A time series through uncompressed chunks the cache will not keep is one ranged GET per
/// chunk for the few bytes it needs (no HEAD), with the right values; points of one chunk far
/// apart are a ranged GET each, near ones share one; a chunk of the wrong size is still an
/// error.
#[test]
fn a_time_series_is_one_small_ranged_get_per_chunk() {
    let server = Server::start(Kind::Moto);
    let proxy = CountingProxy::start(server.port);
    let text = format!(
        "s3://{BUCKET}/series#mode=nczarr,s3&aws.profile=none&aws.endpoint={}",
        proxy.endpoint()
    );
    let url = DatasetUrl::parse(&text).unwrap();
    let root = nczarr_rs::model::Tree::ROOT;
    let float = nczarr_rs::model::NcType::Float;
    let mut ds = Dataset::create(&url, CreateOptions::default()).unwrap();
    let v = counting_var(&mut ds, "v", [("t", 8), ("y", 64), ("x", 64)], [1, 64, 64]);
    // Chunks of two 2 MiB time steps: the two points a series takes from each lie far apart.
    let w = counting_var(
        &mut ds,
        "w",
        [("t2", 4), ("y2", 1024), ("x2", 512)],
        [2, 1024, 512],
    );
    ds.close().unwrap();

    let series = nczarr_rs::api::Slab {
        start: vec![0, 5, 7],
        count: vec![8, 1, 1],
        stride: vec![1, 1, 1],
    };
    let mut ds = Dataset::open(&url, false).unwrap();
    ds.set_var_chunk_cache(root, v, 0, 1, 0.75).unwrap();
    proxy.take();
    let mut out = vec![0u8; 8 * 4];
    ds.get_fixed(root, v, &series, None, float, &mut out)
        .unwrap();
    let got: Vec<f32> = out
        .chunks_exact(4)
        .map(|b| f32::from_ne_bytes(b.try_into().unwrap()))
        .collect();
    let want: Vec<f32> = (0..8u32).map(|t| (t * 4096 + 5 * 64 + 7) as f32).collect();
    assert_eq!(got, want);
    let reqs = proxy.take();
    assert_eq!(reqs.len(), 8, "{reqs:?}");
    assert!(reqs.iter().all(|r| r.method == "GET"), "{reqs:?}");
    let offset = (5 * 64 + 7) * 4;
    let expected = format!("bytes={}-{}", offset, offset + 3);
    assert!(
        reqs.iter()
            .all(|r| r.range.as_deref() == Some(expected.as_str())),
        "{reqs:?}"
    );
    // Points 2 MiB apart in one chunk: a ranged GET each, not one for the 2 MiB between. Two
    // neighbouring rows of one time step: one GET for both and the bytes between.
    ds.set_var_chunk_cache(root, w, 0, 1, 0.75).unwrap();
    let step = 1024 * 512u32;
    for (rows, per_step) in [(1u64, 4u64), (2, 2052)] {
        let pair = nczarr_rs::api::Slab {
            start: vec![0, 5, 7],
            count: vec![4, rows, 1],
            stride: vec![1, 1, 1],
        };
        let mut out = vec![0u8; 4 * rows as usize * 4];
        proxy.take();
        ds.get_fixed(root, w, &pair, None, float, &mut out).unwrap();
        let got: Vec<f32> = out
            .chunks_exact(4)
            .map(|b| f32::from_ne_bytes(b.try_into().unwrap()))
            .collect();
        let want: Vec<f32> = (0..4u32)
            .flat_map(|t| (0..rows as u32).map(move |r| (t * step + (5 + r) * 512 + 7) as f32))
            .collect();
        assert_eq!(got, want, "{rows} rows");
        let reqs = proxy.take();
        assert_eq!(reqs.len(), 4, "{rows} rows: {reqs:?}");
        let mut ranges: Vec<String> = reqs.iter().filter_map(|r| r.range.clone()).collect();
        ranges.sort();
        let mut expected: Vec<String> = (0..2u64)
            .map(|t| {
                let at = (t * u64::from(step) + 5 * 512 + 7) * 4;
                format!("bytes={}-{}", at, at + per_step - 1)
            })
            .flat_map(|r| [r.clone(), r])
            .collect();
        expected.sort();
        assert_eq!(ranges, expected, "{rows} rows");
    }
    drop(ds);

    // A truncated chunk: its length comes back with the span and is refused.
    let store = s3::open(settings_at(&proxy.endpoint(), "series")).unwrap();
    store.put(&key("v/3.0.0"), &[0u8; 100]).unwrap();
    let mut ds = Dataset::open(&url, false).unwrap();
    ds.set_var_chunk_cache(root, v, 0, 1, 0.75).unwrap();
    let err = ds
        .get_fixed(root, v, &series, None, float, &mut out)
        .unwrap_err();
    assert!(matches!(err, Error::ChunkSize { .. }), "{err:?}");
}

/// `scripts/s3-server start` with `S3_SERVER_OWNER` stops the server once that process has
/// exited, also when nobody stops it (a test program keeping its server in a static).
#[test]
fn a_test_server_stops_once_its_owner_has_exited() {
    let mut owner = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    let dir = tempfile::TempDir::new().unwrap();
    let out = std::process::Command::new(common::s3::script())
        .args(["start", "s3s-fs", &common::s3::free_port().to_string()])
        .arg(dir.path())
        .env("S3_SERVER_OWNER", owner.id().to_string())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    // Whatever the outcome, the server is not left behind.
    struct StopsOnDrop<'a>(&'a std::path::Path);
    impl Drop for StopsOnDrop<'_> {
        fn drop(&mut self) {
            let _ = std::process::Command::new(common::s3::script())
                .arg("stop")
                .arg(self.0)
                .status();
        }
    }
    let _stops = StopsOnDrop(dir.path());
    let pid = std::fs::read_to_string(dir.path().join("server.pid")).unwrap();
    let running = std::path::PathBuf::from(format!("/proc/{}", pid.trim()));
    std::thread::sleep(Duration::from_millis(1500));
    assert!(running.exists(), "the server stopped while its owner ran");
    owner.kill().unwrap();
    owner.wait().unwrap();
    let start = std::time::Instant::now();
    while running.exists() && start.elapsed() < Duration::from_secs(15) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!running.exists(), "the server outlived its owner");
}
