//! Datasets read over plain HTTP (`#mode=...,http`) from three web servers on loopback, each
//! behind a proxy that records every request: Python's `http.server` (GETs only: no ranges, no
//! ETags, no WebDAV listings, index pages of directories), nginx (ranges and ETags; index pages
//! sent chunked, without a length, and without dot-files) and WsgiDAV (WebDAV: `PROPFIND`
//! listings, ranged GETs, ETags). Stock
//! `ncdump` (4.9.0, and 4.10.1 through `with-netcdf-4.10`) and netCDF4-python with the library
//! preloaded read the same as `ncdump` of the directories the servers serve: the CDL corpus
//! as NCZarr, and pure Zarr v2 and v3 from xarray and zarr-python, consolidated or not
//! (listed by WebDAV, or by index pages where the server has no WebDAV). A server that cannot
//! list at all refuses only the datasets that need a listing; nothing is ever written, and
//! large chunks read sparsely take ranges where the server serves them.

mod common;

use common::s3::{CountingProxy, Request};
use common::web::{FakeWeb, WebKind, WebServer};
use common::{Host, Report, Run, case_name, cdl_files, dump, run_env, scratch, url};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::Path;

/// Writes pure Zarr datasets below `sys.argv[1]`: xarray's, consolidated, in Zarr v2 and v3
/// (`xarray2.zarr`, `xarray3.zarr`), and zarr-python's without consolidated metadata, with a
/// group, an empty directory and a stray file, in v2 and v3 (`plain2.zarr`, `plain3.zarr`);
/// the v2 group `sub` is left implicit (no `.zgroup` nor `.zattrs`: some writers leave them
/// out), found only by the array below it; and a store that is one array, no chunk written
/// (`lone2.zarr`).
const WRITE_ZARR: &str = r#"
import os, sys, numpy as np, xarray as xr, zarr
top = sys.argv[1]
ds = xr.Dataset(
    {"temp": (("time", "lat"), np.arange(12, dtype="f4").reshape(3, 4), {"units": "K"})},
    coords={"lat": np.linspace(-45.0, 45.0, 4), "time": np.arange(3)},
)
ds.to_zarr(f"{top}/xarray2.zarr", zarr_format=2, consolidated=True, mode="w")
ds.to_zarr(f"{top}/xarray3.zarr", zarr_format=3, consolidated=True, mode="w")
for fmt in (2, 3):
    g = zarr.open_group(f"{top}/plain{fmt}.zarr", mode="w", zarr_format=fmt)
    a = g.create_array("a", shape=(5, 7), chunks=(2, 3), dtype="i2")
    a[:] = np.arange(35, dtype="i2").reshape(5, 7)
    s = g.create_group("sub")
    b = s.create_array("b", shape=(4,), chunks=(3,), dtype="f8")
    b[:] = [0.5, 1.5, 2.5, 3.5]
    # What else a directory of a web server holds: an empty directory and a file.
    os.makedirs(f"{top}/plain{fmt}.zarr/empty")
    with open(f"{top}/plain{fmt}.zarr/README", "w") as f:
        f.write("not Zarr")
for implied in (".zgroup", ".zattrs"):
    os.remove(f"{top}/plain2.zarr/sub/{implied}")
# A store that is one array, with no chunk written: its listing shows nothing where dot-files
# are left out.
lone = zarr.open_array(f"{top}/lone2.zarr", mode="w", shape=(3,), dtype="i4", zarr_format=2)
lone.attrs["units"] = "m"
"#;

/// The corpus as NCZarr (`nczarr/<case>`, by stock `ncgen` through the library) and the pure
/// Zarr datasets of [`WRITE_ZARR`] below `dir`; returns the dataset paths with their modes.
fn write_datasets(dir: &Path) -> Vec<(String, &'static str)> {
    let mut made = Vec::new();
    for cdl in cdl_files() {
        let name = format!("nczarr/{}", case_name(&cdl));
        let target = url(&dir.join(&name), "nczarr,file");
        common::ncgen(Host::Ours, &cdl, &target).unwrap_or_else(|e| panic!("{e}"));
        made.push((name, "nczarr"));
    }
    common::python::run_script("zarr3", WRITE_ZARR, &[dir.to_str().unwrap()])
        .unwrap_or_else(|e| panic!("{e}"));
    for name in [
        "xarray2.zarr",
        "xarray3.zarr",
        "plain2.zarr",
        "plain3.zarr",
        "lone2.zarr",
    ] {
        made.push((name.to_string(), "zarr"));
    }
    made
}

/// Whether reading `name` needs a listing (no consolidated metadata, pure Zarr).
fn needs_listing(name: &str) -> bool {
    name.starts_with("plain")
}

/// Requests no reader should make: HEADs, and writes of any kind.
fn unwanted(reqs: &[Request]) -> Vec<String> {
    reqs.iter()
        .filter(|r| !matches!(r.method.as_str(), "GET" | "PROPFIND"))
        .map(|r| format!("{} {}", r.method, r.target))
        .collect()
}

/// The objects GET asked for more than once by one reader: the same bytes twice, except the
/// whole object after a ranged GET that `kind` answered with the whole object (read whole
/// again: the reader learns so that the server serves no ranges); and objects under 2 MiB in
/// `dir` (the served directory) that were not read whole in one GET: ranged requests for them
/// cost a round trip as the whole object does, and what is read whole is kept.
fn fetched_twice(kind: WebKind, reqs: &[Request], dir: &Path) -> Vec<String> {
    let mut seen: BTreeMap<(&str, Option<&str>), usize> = BTreeMap::new();
    for r in reqs.iter().filter(|r| r.method == "GET") {
        *seen.entry((&r.target, r.range.as_deref())).or_default() += 1;
    }
    let ranged = |t: &str| {
        seen.keys()
            .any(|(target, range)| *target == t && range.is_some())
    };
    let small = |t: &str| {
        std::fs::metadata(dir.join(t.trim_start_matches('/'))).is_ok_and(|m| m.len() < 2 << 20)
    };
    let mut faults: Vec<String> = seen
        .iter()
        .filter(|((t, range), n)| {
            let allowed = if kind == WebKind::Plain && range.is_none() && ranged(t) {
                2
            } else {
                1
            };
            **n > allowed
        })
        .map(|((t, _), n)| format!("{t} x{n}"))
        .collect();
    faults.extend(
        seen.keys()
            .filter(|(t, range)| range.is_some() && small(t))
            .map(|(t, range)| format!("{t} (small) ranged {range:?}")),
    );
    faults
}

/// Requests in flight at once: both test servers listen with a backlog of 5 connections, and
/// connections beyond it wait for TCP to retry (a second and more each).
const TEST_SERVER_CONCURRENCY: &str = "4";

fn ncdump_on(host: Host, target: &str) -> Run {
    let env = [
        ("NCZARR_RS_QUIET", None),
        ("NCZARR_RS_S3_CONCURRENCY", Some(TEST_SERVER_CONCURRENCY)),
    ];
    run_env(host, "ncdump", &[target], &env)
}

/// Every dataset reads over HTTP as it reads from its directory, through stock `ncdump` of
/// 4.9.0 and 4.10.1 (which read row by row), with no HEAD and no object fetched twice; from a
/// server without WebDAV, the datasets that need a listing are listed by the index pages of
/// their directories after one refused listing; a location that holds no dataset is "not
/// found".
#[test]
fn stock_ncdump_reads_datasets_over_http() {
    let dir = scratch("http-read");
    let datasets = write_datasets(dir.path());
    let mut report = Report::new("datasets over plain HTTP");
    for kind in [WebKind::Plain, WebKind::Nginx, WebKind::WebDav] {
        let server = WebServer::start(kind, dir.path());
        let proxy = CountingProxy::start(server.port);
        for (name, mode) in &datasets {
            let local = url(&dir.path().join(name), &format!("{mode},file"));
            let remote = format!("{}/{name}#mode={mode},http", proxy.endpoint());
            for host in [Host::Ours, Host::OursOn410] {
                let case = format!("{}/{host:?}/{name}", kind.name());
                let expected = ncdump_on(host, &local).output();
                proxy.take();
                let got = ncdump_on(host, &remote);
                let reqs = proxy.take();
                let outcome = (|| {
                    let expected = expected.map(|d| dump::normalise_name(&d))?;
                    let got = got.output().map(|d| dump::normalise_name(&d))?;
                    if let Some(d) = common::diff::diff(&expected, &got) {
                        return Err(d);
                    }
                    let bad = unwanted(&reqs);
                    if !bad.is_empty() {
                        return Err(format!("unwanted requests: {bad:?}"));
                    }
                    let twice = fetched_twice(kind, &reqs, dir.path());
                    if !twice.is_empty() {
                        return Err(format!("fetched more than once: {twice:?}"));
                    }
                    if kind == WebKind::WebDav
                        && needs_listing(name)
                        && !reqs.iter().any(|r| r.method == "PROPFIND")
                    {
                        return Err("read without a listing?".into());
                    }
                    // Without WebDAV: one listing refused, then index pages of directories.
                    let propfinds = reqs.iter().filter(|r| r.method == "PROPFIND").count();
                    let pages = reqs.iter().filter(|r| r.target.ends_with('/')).count();
                    if kind.lists_by_index_pages()
                        && needs_listing(name)
                        && (propfinds, pages > 0) != (1, true)
                    {
                        return Err(format!("{propfinds} listings, {pages} index pages"));
                    }
                    Ok(())
                })();
                report.case(&case, outcome);
            }
        }
        let missing = format!("{}/nothing.zarr#mode=zarr,http", proxy.endpoint());
        let run = ncdump_on(Host::Ours, &missing);
        report.case(
            &format!("{}/missing dataset", kind.name()),
            if run.refused_saying("No such file") || run.refused_saying("not found") {
                Ok(())
            } else {
                Err(run.describe())
            },
        );
    }
    report.finish(3 * (2 * (cdl_files().len() + 5) + 1));
}

/// Opening for writing, creating and copying into a web server are refused with `NC_EPERM`
/// before any request, and leave the served directory as it was.
#[test]
fn nothing_is_written_over_http() {
    let Some(lib) = common::preloaded_library() else {
        return;
    };
    let dir = scratch("http-write");
    let cdl = cdl_files().into_iter().next().unwrap();
    let store = dir.path().join("d.zarr");
    common::ncgen(Host::Ours, &cdl, &url(&store, "nczarr,file")).unwrap();
    let before = common::directory_objects(dir.path());
    let server = WebServer::start(WebKind::WebDav, dir.path());
    let proxy = CountingProxy::start(server.port);
    let at = |name: &str| format!("{}/{name}#mode=nczarr,http", proxy.endpoint());

    let script = r#"
import sys, netCDF4
try:
    netCDF4.Dataset(sys.argv[1], "a")
    print("opened")
except OSError as e:
    print(e.errno)
"#;
    let answer =
        common::python::run_with("netcdf4", &["-c", script, &at("d.zarr")], Some(lib)).unwrap();
    assert_eq!(answer.trim(), "-37", "NC_EPERM expected");

    let created = run_env(
        Host::Ours,
        "ncgen",
        &["-4", "-o", &at("new.zarr"), cdl.to_str().unwrap()],
        &[],
    );
    assert!(
        created.refused_saying("cannot be written"),
        "{}",
        created.describe()
    );
    let copied = run_env(
        Host::Ours,
        "nccopy",
        &[&url(&store, "nczarr,file"), &at("copy.zarr")],
        &[],
    );
    assert!(
        copied.refused_saying("cannot be written"),
        "{}",
        copied.describe()
    );
    let reqs = proxy.take();
    assert!(reqs.is_empty(), "requests made: {:?}", unwanted(&reqs));
    assert_eq!(common::directory_objects(dir.path()), before);
}

/// A time series through large blosc chunks and Zarr v3 shards reads the values zarr-python
/// reads: from WsgiDAV by ranged GETs only, never a chunk whole; from `http.server`, which
/// answers a ranged GET with the whole object, by whole GETs once that is known (after a
/// round of ranged GETs of which it served none): the first variable read fetches each chunk
/// object at most three times (a look answered whole, the look read whole again, then the
/// chunk), and later variables of the same dataset once. The
/// same holds for uncompressed chunks, which the cache could hold (ranged GETs are still asked
/// where the server serves them).
#[test]
fn sparse_reads_of_large_chunks_over_http() {
    let Some(lib) = common::preloaded_library() else {
        return;
    };
    let dir = scratch("http-parts");
    let script = r#"
import sys, json, numpy as np, zarr, numcodecs
top = sys.argv[1]
data = np.random.default_rng(3).standard_normal((6, 1024, 1024), dtype=np.float32)
g = zarr.open_group(f"{top}/v3.zarr", mode="w", zarr_format=3)
a = g.create_array("sharded", shape=data.shape, chunks=(1, 128, 128), shards=(1, 1024, 1024),
                   dtype="float32", compressors=[zarr.codecs.ZstdCodec(level=1)],
                   dimension_names=["t", "y", "x"])
a[:] = data
zarr.consolidate_metadata(f"{top}/v3.zarr")
g2 = zarr.open_group(f"{top}/v2.zarr", mode="w", zarr_format=2)
blosc = numcodecs.Blosc(cname="lz4", clevel=5, shuffle=1)
for name, compressors in (("blosc", blosc), ("again", blosc), ("raw", None)):
    b = g2.create_array(name, shape=data.shape, chunks=(1, 1024, 1024), dtype="float32",
                        compressors=compressors)
    b.attrs["_ARRAY_DIMENSIONS"] = ["t", "y", "x"]
    b[:] = data
zarr.consolidate_metadata(f"{top}/v2.zarr")
print(json.dumps(data[:, 5, 9].tolist()))
"#;
    let expected = common::python::run_script("zarr3", script, &[dir.path().to_str().unwrap()])
        .unwrap_or_else(|e| panic!("{e}"));
    let expected: serde_json::Value = serde_json::from_str(expected.trim()).unwrap();
    let read = r#"
import sys, json, numpy as np, netCDF4
ds = netCDF4.Dataset(sys.argv[1])
print(json.dumps([np.asarray(ds[v][:, 5, 9]).tolist() for v in sys.argv[2:]]))
"#;
    for kind in [WebKind::WebDav, WebKind::Nginx, WebKind::Plain] {
        let server = WebServer::start(kind, dir.path());
        let status = ranged_get_status(server.port, "/v2.zarr/.zmetadata");
        let expected_status = if kind == WebKind::Plain { 200 } else { 206 };
        assert_eq!(
            status,
            expected_status,
            "{}: answer to a ranged GET",
            kind.name()
        );
        let proxy = CountingProxy::start(server.port);
        for (store, vars) in [
            ("v3.zarr", &["sharded"][..]),
            ("v2.zarr", &["blosc", "again", "raw"]),
        ] {
            let case = format!("{}/{store}", kind.name());
            let source = format!("{}/{store}#mode=zarr,http", proxy.endpoint());
            proxy.take();
            let mut args = vec!["-c", read, &source];
            args.extend_from_slice(vars);
            let limits = [("NCZARR_RS_S3_CONCURRENCY", Some(TEST_SERVER_CONCURRENCY))];
            let got = common::python::run_with_vars("netcdf4", &args, Some(lib), &limits)
                .unwrap_or_else(|e| panic!("{case}: {e}"));
            let got: serde_json::Value = serde_json::from_str(got.trim()).unwrap();
            let want = serde_json::Value::Array(vec![expected.clone(); vars.len()]);
            assert_eq!(got, want, "{case}: values");
            let reqs = proxy.take();
            assert!(unwanted(&reqs).is_empty(), "{case}: {:?}", unwanted(&reqs));
            for (n, var) in vars.iter().enumerate() {
                let per_object = chunk_gets(&reqs, store, var);
                assert_eq!(per_object.len(), 6, "{case}/{var}: objects {per_object:?}");
                for (object, (ranged, whole)) in &per_object {
                    let fine = match (kind, n) {
                        (
                            WebKind::WebDav
                            | WebKind::WebDavLogin
                            | WebKind::Nginx
                            | WebKind::NginxLogin,
                            _,
                        ) => *ranged >= 1 && *whole == 0,
                        (WebKind::Plain, 0) => *ranged <= 1 && (1..=2).contains(whole),
                        (WebKind::Plain, _) => *ranged == 0 && *whole == 1,
                    };
                    assert!(
                        fine,
                        "{case}/{var}: {object}: {ranged} ranged, {whole} whole"
                    );
                }
            }
        }
    }
}

/// The GETs of each chunk object of `var` in `store` among `reqs`: (ranged, whole).
fn chunk_gets<'r>(
    reqs: &'r [Request],
    store: &str,
    var: &str,
) -> BTreeMap<&'r str, (usize, usize)> {
    let below = format!("/{store}/{var}/");
    let mut per_object: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for r in reqs.iter().filter(|r| r.method == "GET") {
        let Some((_, object)) = r.target.split_once(&below) else {
            continue;
        };
        if object.starts_with('.') || object.ends_with("zarr.json") {
            continue;
        }
        let e = per_object.entry(r.target.as_str()).or_default();
        if r.range.is_some() {
            e.0 += 1;
        } else {
            e.1 += 1;
        }
    }
    per_object
}

/// The status a server on `port` answers a GET of the first byte of `target` with.
fn ranged_get_status(port: u16, target: &str) -> u16 {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let request = format!(
        "GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nRange: bytes=0-0\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    let text = String::from_utf8_lossy(&answer);
    let status = text.split_whitespace().nth(1).unwrap_or_default();
    status.parse().unwrap_or_else(|_| panic!("answer {text:?}"))
}

/// A pure Zarr dataset without consolidated metadata on servers that answer `PROPFIND` as
/// no WebDAV server does: not found (404, which the client takes for an empty listing) and
/// forbidden (403) refuse it as unlistable (`NC_EACCESS`) after one request; a server error
/// (503) is asked again with retries, and then is an access failure, not "cannot be listed".
#[test]
fn listings_refused_in_other_ways() {
    let dir = scratch("http-propfind");
    common::python::run_script("zarr3", WRITE_ZARR, &[dir.path().to_str().unwrap()])
        .unwrap_or_else(|e| panic!("{e}"));
    for (status, propfinds, says) in [
        (404, 1, "cannot be listed"),
        (403, 1, "cannot be listed"),
        (503, 3, "503"),
    ] {
        let server = FakeWeb::start(dir.path(), status);
        let target = format!("{}/plain2.zarr#mode=zarr,http", server.endpoint());
        let env = [
            ("NCZARR_RS_QUIET", None),
            ("NCZARR_RS_S3_RETRIES", Some("1")),
        ];
        let run = run_env(Host::Ours, "ncdump", &[&target], &env);
        assert!(
            run.refused_saying(says) && run.stderr.contains("Access failure"),
            "PROPFIND {status}: {}",
            run.describe()
        );
        if status == 503 {
            assert!(
                !run.stderr.contains("cannot be listed"),
                "{}",
                run.describe()
            );
        }
        assert_eq!(
            server.propfinds.load(std::sync::atomic::Ordering::SeqCst),
            propfinds,
            "PROPFIND {status}: listings asked"
        );
        // The same server serves a dataset with consolidated metadata, which needs no listing.
        let consolidated = format!("{}/xarray2.zarr#mode=zarr,http", server.endpoint());
        let run = run_env(Host::Ours, "ncdump", &["-h", &consolidated], &env);
        assert!(run.success(), "PROPFIND {status}: {}", run.describe());
    }
}

/// A server that asks for a login is sent one found as netcdf-c finds it: in the URL
/// (`http://user:password@host/...`, escapes decoded), in `.ncrc` (`HTTP.CREDENTIALS.*`, scoped
/// to the server or not), or in the netrc file; stock `ncdump` (4.9.0 and 4.10.1) then reads
/// the dataset, listings included (WsgiDAV's `PROPFIND` and nginx's index pages), as from its
/// directory. Without a login, or with a wrong
/// one, it fails with `NC_EAUTH`, and no message shows the password.
#[test]
fn logins_are_found_where_netcdf_c_finds_them() {
    use common::web::{WEB_PASSWORD, WEB_USER};
    let dir = scratch("http-login");
    common::python::run_script("zarr3", WRITE_ZARR, &[dir.path().to_str().unwrap()])
        .unwrap_or_else(|e| panic!("{e}"));
    // A reference document beside it naming each of xarray2.zarr's files whole, by relative
    // path: read from the server, its targets are asked with the document's login.
    let mut refs = serde_json::Map::new();
    let root = dir.path().join("xarray2.zarr");
    for (below, _) in common::files_below(&root, "") {
        let key = below.trim_start_matches('/').to_string();
        refs.insert(
            key.clone(),
            serde_json::json!([format!("xarray2.zarr/{key}")]),
        );
    }
    std::fs::write(
        dir.path().join("refs.json"),
        serde_json::Value::Object(refs).to_string(),
    )
    .unwrap();
    let web = WebServer::start(WebKind::WebDavLogin, dir.path());
    let nginx = WebServer::start(WebKind::NginxLogin, dir.path());
    let home = scratch("http-login-home");
    let rc = home.path().join("ncrc");
    let netrc = home.path().join("netrc");
    let escaped = WEB_PASSWORD
        .replace('%', "%25")
        .replace('@', "%40")
        .replace(':', "%3A");
    let server = web.endpoint();
    let host_port = server.trim_start_matches("http://");
    let on = |web: &WebServer, login: &str, name: &str| {
        // A reference document is read as a reference set.
        let mode = if name.ends_with(".json") {
            "zarr,reference,http"
        } else {
            "zarr,http"
        };
        format!(
            "http://{login}{}/{name}#mode={mode}",
            web.endpoint().trim_start_matches("http://")
        )
    };
    let at = |login: &str, name: &str| on(&web, login, name);
    let mut report = Report::new("web logins");
    // (case, rc text, netrc text, URL login, host, dataset, expected outcome); nginx cases
    // list by index pages, which must be asked with the login too.
    let good = format!("{WEB_USER}:{escaped}@");
    let cases: Vec<(&str, String, String, String, Host, &str, bool)> = vec![
        (
            "nginx/url/index pages",
            String::new(),
            String::new(),
            good.clone(),
            Host::Ours,
            "plain2.zarr",
            true,
        ),
        (
            "nginx/netrc/index pages",
            String::new(),
            format!("machine 127.0.0.1 login {WEB_USER} password {WEB_PASSWORD}\n"),
            String::new(),
            Host::OursOn410,
            "plain3.zarr",
            true,
        ),
        (
            "nginx/none",
            String::new(),
            String::new(),
            String::new(),
            Host::Ours,
            "plain2.zarr",
            false,
        ),
        (
            "none",
            String::new(),
            String::new(),
            String::new(),
            Host::Ours,
            "xarray2.zarr",
            false,
        ),
        (
            "url",
            String::new(),
            String::new(),
            good.clone(),
            Host::Ours,
            "xarray2.zarr",
            true,
        ),
        (
            "url/4.10.1",
            String::new(),
            String::new(),
            good.clone(),
            Host::OursOn410,
            "xarray3.zarr",
            true,
        ),
        (
            "url/listing",
            String::new(),
            String::new(),
            good.clone(),
            Host::Ours,
            "plain2.zarr",
            true,
        ),
        (
            "url/reference set",
            String::new(),
            String::new(),
            good.clone(),
            Host::Ours,
            "refs.json",
            true,
        ),
        (
            "url/wrong",
            String::new(),
            format!("machine 127.0.0.1 login {WEB_USER} password {WEB_PASSWORD}\n"),
            format!("{WEB_USER}:not-{escaped}@"),
            Host::Ours,
            "xarray2.zarr",
            false,
        ),
        (
            "ncrc/scoped",
            format!(
                "[http://{host_port}]HTTP.CREDENTIALS.USERPASSWORD={WEB_USER}:{WEB_PASSWORD}\n"
            ),
            String::new(),
            String::new(),
            Host::Ours,
            "xarray2.zarr",
            true,
        ),
        (
            "ncrc/unscoped",
            format!("HTTP.CREDENTIALS.USER={WEB_USER}\nHTTP.CREDENTIALS.PASSWORD={WEB_PASSWORD}\n"),
            String::new(),
            String::new(),
            Host::OursOn410,
            "plain3.zarr",
            true,
        ),
        (
            "ncrc/unscoped, reference set",
            format!("HTTP.CREDENTIALS.USERPASSWORD={WEB_USER}:{WEB_PASSWORD}\n"),
            String::new(),
            String::new(),
            Host::Ours,
            "refs.json",
            true,
        ),
        (
            "ncrc/other server",
            format!(
                "[http://elsewhere.org]HTTP.CREDENTIALS.USERPASSWORD={WEB_USER}:{WEB_PASSWORD}\n"
            ),
            String::new(),
            String::new(),
            Host::Ours,
            "xarray2.zarr",
            false,
        ),
        (
            "netrc",
            String::new(),
            format!(
                "machine other.org login x password y\nmachine 127.0.0.1\n login {WEB_USER}\n password {WEB_PASSWORD}\n"
            ),
            String::new(),
            Host::Ours,
            "plain2.zarr",
            true,
        ),
    ];
    for (name, rc_text, netrc_text, login, host, dataset, reads) in &cases {
        std::fs::write(&rc, rc_text).unwrap();
        std::fs::write(&netrc, netrc_text).unwrap();
        let env = [
            ("NCZARR_RS_QUIET", None),
            ("NCZARR_RS_S3_CONCURRENCY", Some(TEST_SERVER_CONCURRENCY)),
            ("NCRCENV_RC", Some(rc.to_str().unwrap())),
            ("NETRC", Some(netrc.to_str().unwrap())),
            ("HOME", Some(home.path().to_str().unwrap())),
        ];
        let target = if name.starts_with("nginx/") {
            on(&nginx, login, dataset)
        } else {
            at(login, dataset)
        };
        let run = run_env(*host, "ncdump", &[&target], &env);
        // Ours: ncdump itself prints the URL it was given.
        let shows_password = run
            .stderr
            .lines()
            .filter(|l| l.starts_with("nczarr-rs"))
            .any(|l| l.contains(WEB_PASSWORD) || l.contains(&escaped));
        let outcome = if shows_password {
            Err(format!("a message shows the password: {}", run.stderr))
        } else if *reads {
            let local_name = if *dataset == "refs.json" {
                "xarray2.zarr"
            } else {
                dataset
            };
            let local = common::ncdump(
                Host::Ours,
                &[],
                &url(&dir.path().join(local_name), "zarr,file"),
            );
            match (local, run.output()) {
                (Ok(want), Ok(got)) => {
                    match common::diff::diff(
                        &dump::normalise_name(&want),
                        &dump::normalise_name(&got),
                    ) {
                        None => Ok(()),
                        Some(d) => Err(d),
                    }
                }
                (Err(e), _) | (_, Err(e)) => Err(e),
            }
        } else if run.refused_saying("Authorization failure") {
            Ok(())
        } else {
            Err(run.describe())
        };
        report.case(name, outcome);
    }
    // libnetcdf hands a password's escaped `#`, `/` and `?` over unescaped: the URL cannot be
    // read as given, and no message of ours shows the password.
    let mangled = at("alice:wr%23ong%2Fpw%3Fx@", "xarray2.zarr");
    let run = run_env(
        Host::Ours,
        "ncdump",
        &[&mangled],
        &[("NCZARR_RS_QUIET", None)],
    );
    let ours: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("nczarr-rs"))
        .collect();
    report.case(
        "url/password with # / ?",
        if run.success() || run.crashed() {
            Err(run.describe())
        } else if ours.iter().any(|l| l.contains("ong")) {
            Err(format!("a message shows the password: {ours:?}"))
        } else {
            Ok(())
        },
    );
    report.finish(cases.len() + 1);
}
