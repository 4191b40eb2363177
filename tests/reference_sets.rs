//! Reference sets (`#mode=zarr,reference`): the JSON documents and Parquet reference sets
//! kerchunk writes for netCDF-4/HDF5 and netCDF-3 files, read as Zarr datasets whose chunks are
//! byte ranges of those files, and a document of a Zarr v3 store's files. netCDF4-python with the library preloaded reads every array as
//! zarr-python reads the same set through fsspec, and as the files read directly; stock
//! `ncdump` (4.9.0 and 4.10.1) prints the data it prints for the files. On S3 and over HTTP the
//! document (or each Parquet file) is one GET and each chunk one ranged GET of its file, never a
//! HEAD. Broken sets and targets are errors.

mod common;

use common::s3::{CountingProxy, Kind, Request, Server, tool_env};
use common::web::{WebKind, WebServer};
use common::{Host, Report, run_env, scratch};
use nczarr_rs::zmap::{Store, StoreKey};
use std::collections::BTreeMap;
use std::path::Path;

/// The reference sets `tests/py/write_references.py` writes (JSON documents, and directories
/// holding Parquet sets), each with the files it describes.
const DOCUMENTS: [(&str, &str); 11] = [
    ("hdf.json", "hdf.nc"),
    ("hdf-v0.json", "hdf.nc"),
    ("hdf-templated.json", "hdf.nc"),
    ("classic.json", "classic.nc"),
    ("combined.json", "part0.nc,part1.nc,part2.nc"),
    ("generated.json", ""),
    ("hdf.parq", "hdf.nc"),
    ("classic.parq", "classic.nc"),
    ("combined.parq", "part0.nc,part1.nc,part2.nc"),
    ("holes.parq", ""),
    ("v3.json", ""),
];

/// Writes the netCDF files and their reference documents into `dir`.
fn write_references(dir: &Path) {
    let script = common::repo_root().join("tests/py/write_references.py");
    common::python::run(
        "kerchunk",
        &[script.to_str().unwrap(), dir.to_str().unwrap()],
    )
    .unwrap_or_else(|e| panic!("{e}"));
}

fn reference_url(doc: &Path) -> String {
    format!("file://{}#mode=zarr,reference", doc.display())
}

/// The data sections of a dump, each group's entries sorted: pure Zarr records no order, and
/// declarations differ where Zarr cannot say what netCDF says (unlimited dimensions, the types
/// of attributes written as JSON).
fn data_only(dump: &str) -> String {
    let mut out = String::new();
    let mut in_data = false;
    for line in common::dump::canonical_order(dump).lines() {
        let t = line.trim();
        if t == "data:" {
            in_data = true;
        } else if t == "}" || t.starts_with("group: ") || t.starts_with("} // group") {
            in_data = false;
            out.push_str(t);
            out.push('\n');
        } else if in_data {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Every array of every document reads through the library as zarr-python reads it through
/// fsspec, and as netCDF reads the files it points into (the parts of `combined.json`
/// concatenated along time); dimensions, attributes and fill values agree with the
/// document's metadata.
#[test]
fn netcdf4_python_reads_reference_sets_as_zarr_python_and_the_files_do() {
    let Some(lib) = common::preloaded_library() else {
        return;
    };
    let dir = scratch("references-values");
    write_references(dir.path());
    let script = common::repo_root().join("tests/py/check_references.py");
    let mut args = vec![
        script.to_str().unwrap().to_string(),
        dir.path().to_str().unwrap().to_string(),
    ];
    args.extend(
        DOCUMENTS
            .iter()
            .map(|(doc, files)| format!("{doc}={files}")),
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out =
        common::python::run_with("kerchunk", &args, Some(lib)).unwrap_or_else(|e| panic!("{e}"));
    let got: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(got["faults"], serde_json::json!([]), "{got:#}");
    // hdf.nc's 15 arrays in three documents and two Parquet sets, classic.nc's 3 and the
    // combined parts' 3 in a document and a Parquet set each, the generated document's 3 (one
    // of them classic.nc's `r`), and the Zarr v3 store's 3.
    let mut expected = serde_json::Map::new();
    for name in [
        "be", "c", "s", "scalar", "sub/gv", "t_f8", "t_i1", "t_i8", "t_u1", "t_u2", "t_u4", "t_u8",
        "v", "w",
    ] {
        expected.insert(name.into(), 5.into());
    }
    expected.insert("time".into(), 7.into());
    for name in ["fixed", "q", "lat", "temp"] {
        expected.insert(name.into(), 2.into());
    }
    for name in ["whole", "packed", "plain", "sharded", "grp/g"] {
        expected.insert(name.into(), 1.into());
    }
    expected.insert("r".into(), 3.into());
    assert_eq!(
        got["checked"],
        serde_json::Value::Object(expected),
        "{got:#}"
    );
}

/// Stock `ncdump` of 4.9.0 and of 4.10.1, through the library, prints the data of each
/// document and Parquet set as `ncdump` prints the file it describes, whether named by URL or
/// by plain path.
#[test]
fn stock_ncdump_reads_reference_sets_as_it_reads_the_files() {
    if common::preloaded_library().is_none() {
        return;
    }
    let dir = scratch("references-ncdump");
    write_references(dir.path());
    let mut report = Report::new("reference sets through stock ncdump");
    for (doc, files) in DOCUMENTS
        .iter()
        .filter(|(_, f)| !f.is_empty() && !f.contains(','))
    {
        let original = dir.path().join(files);
        let expected = common::ncdump(Host::Stock, &[], original.to_str().unwrap());
        let at = dir.path().join(doc);
        // By URL, and by plain path (found to be a reference document by its content).
        for (host, name) in [
            (Host::Ours, reference_url(&at)),
            (Host::OursOn410, reference_url(&at)),
            (Host::Ours, at.to_str().unwrap().to_string()),
            (Host::OursOn410, at.to_str().unwrap().to_string()),
        ] {
            let got = common::ncdump(host, &[], &name);
            let outcome = match (&expected, got) {
                (Ok(e), Ok(g)) => match common::diff::diff(&data_only(e), &data_only(&g)) {
                    None => Ok(()),
                    Some(d) => Err(d),
                },
                (Err(e), _) => Err(e.clone()),
                (_, Err(e)) => Err(e),
            };
            report.case(&format!("{host:?}/{name}"), outcome);
        }
    }
    report.finish(24);
}

/// The GETs of each object, by object: how many asked for which range (`None`: whole).
fn gets(reqs: &[Request]) -> BTreeMap<String, BTreeMap<Option<String>, usize>> {
    let mut out: BTreeMap<String, BTreeMap<Option<String>, usize>> = BTreeMap::new();
    for r in reqs.iter().filter(|r| r.method == "GET") {
        let object = r.target.split('?').next().unwrap_or_default().to_string();
        *out.entry(object)
            .or_default()
            .entry(r.range.clone())
            .or_default() += 1;
    }
    out
}

/// Faults in how a reader fetched a reference set: any request but a GET, the document and the
/// targets of whole-object references (`wholes`) read other than once whole, a target of
/// ranges read whole or a range of it twice, an object that is none of these, and other than
/// one ranged GET per chunk the document names in a target (`ranges`).
fn fetch_faults(
    reqs: &[Request],
    document: &str,
    ranges: &BTreeMap<&str, usize>,
    wholes: &[&str],
) -> Vec<String> {
    let mut faults: Vec<String> = reqs
        .iter()
        .filter(|r| r.method != "GET")
        .map(|r| format!("{} {}", r.method, r.target))
        .collect();
    let by_object = gets(reqs);
    for (object, asked) in &by_object {
        let is_document = object.ends_with(document);
        let read_whole = is_document || wholes.iter().any(|t| object.ends_with(t));
        if !read_whole && !ranges.keys().any(|t| object.ends_with(t)) {
            faults.push(format!("{object}: neither the document nor a target"));
        }
        for (range, n) in asked {
            if *n > 1 || range.is_some() == read_whole {
                faults.push(format!("{object} {range:?} x{n}"));
            }
        }
    }
    for (target, n) in ranges {
        let got = by_object
            .iter()
            .find(|(o, _)| o.ends_with(target))
            .map_or(0, |(_, a)| a.len());
        if got != *n {
            faults.push(format!("{target}: {got} ranged GETs for {n} chunks"));
        }
    }
    faults
}

/// How many chunks document `doc` (in `dir`) names as ranges of each target file.
fn ranges_per_target(dir: &Path, doc: &str) -> BTreeMap<String, usize> {
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join(doc)).unwrap()).unwrap();
    let mut out = BTreeMap::new();
    for value in json["refs"].as_object().unwrap().values() {
        if let Some([url, _, _]) = value.as_array().map(Vec::as_slice) {
            let name = url
                .as_str()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap()
                .to_string();
            *out.entry(name).or_default() += 1;
        }
    }
    out
}

/// `doc` in `dir` with each target URL's directory replaced by `prefix`, written as `as_name`.
fn retargeted(dir: &Path, doc: &str, prefix: &str, as_name: &str) -> Vec<u8> {
    let text = std::fs::read_to_string(dir.join(doc)).unwrap();
    let local = format!("{}/", dir.display());
    let bytes = text.replace(&local, prefix).into_bytes();
    std::fs::write(dir.join(as_name), &bytes).unwrap();
    bytes
}

/// Writes the reference document `doc` in `dir` as the Parquet reference set `set` there, 5
/// references a record.
fn to_parquet(dir: &Path, doc: &str, set: &str) {
    let script = common::repo_root().join("tests/py/to_parquet.py");
    let (doc, set) = (dir.join(doc), dir.join(set));
    common::python::run(
        "kerchunk",
        &[
            script.to_str().unwrap(),
            doc.to_str().unwrap(),
            set.to_str().unwrap(),
            "5",
        ],
    )
    .unwrap_or_else(|e| panic!("{e}"));
}

/// Stock `ncdump` reads documents on S3 (moto) and on a WebDAV server, whose targets are
/// `s3://` or `http://` URLs or names relative to the document, and Parquet sets there: the
/// same text as the documents read locally, the document (each file of a Parquet set) in one
/// GET, each chunk in one ranged GET of its file, no HEAD.
#[test]
fn reference_sets_on_s3_and_http_fetch_each_chunk_once_by_range() {
    if common::preloaded_library().is_none() {
        return;
    }
    let dir = scratch("references-remote");
    write_references(dir.path());
    let mut report = Report::new("remote reference sets");
    // `ncdump` of `url` behind `proxy` prints what it prints for the local document `local`,
    // and fetches as `fetch_faults` allows: `doc` and `wholes` read whole once each, and the
    // chunks `local` names in targets by range (or `ranges`) one ranged GET each.
    let read_remotely = |proxy: &CountingProxy,
                         url: &str,
                         env: &[(&str, Option<&str>)],
                         (doc, local): (&str, &str),
                         ranges: Option<BTreeMap<&str, usize>>,
                         wholes: &[&str]|
     -> Result<(), String> {
        let expected = common::ncdump(Host::Ours, &[], &reference_url(&dir.path().join(local)))?;
        proxy.take();
        let run = run_env(Host::Ours, "ncdump", &[url], env);
        let reqs = proxy.take();
        let got = run.output()?;
        let normal = common::dump::normalise_name;
        if let Some(diff) = common::diff::diff(&normal(&expected), &normal(&got)) {
            return Err(diff);
        }
        let in_document = ranges_per_target(dir.path(), local);
        let ranges =
            ranges.unwrap_or_else(|| in_document.iter().map(|(k, v)| (k.as_str(), *v)).collect());
        let faults = fetch_faults(&reqs, doc, &ranges, wholes);
        if faults.is_empty() {
            Ok(())
        } else {
            Err(format!("{faults:?}"))
        }
    };

    let server = Server::start(Kind::Moto);
    let proxy = CountingProxy::start(server.port);
    let bucket =
        nczarr_rs::zmap::s3::open(common::s3::settings_at(&server.endpoint(), "data")).unwrap();
    let put =
        |name: &str, bytes: Vec<u8>| bucket.put(&StoreKey::new(name).unwrap(), &bytes).unwrap();
    for file in [
        "hdf.nc",
        "classic.nc",
        "classic.json",
        "part0.nc",
        "part1.nc",
        "part2.nc",
    ] {
        put(file, std::fs::read(dir.path().join(file)).unwrap());
    }
    let to_s3 = format!("s3://{}/data/", common::s3::BUCKET);
    put(
        "hdf.json",
        retargeted(dir.path(), "hdf.json", &to_s3, "hdf-s3.json"),
    );
    put(
        "combined.json",
        retargeted(dir.path(), "combined.json", &to_s3, "combined-s3.json"),
    );
    // Parquet sets: hdf.json's references to S3 (5 a record), and classic.parq, whose target
    // is found beside it.
    to_parquet(dir.path(), "hdf-s3.json", "hdf-s3.parq");
    let hdf_parq = common::files_below(&dir.path().join("hdf-s3.parq"), "hdf.parq");
    let classic_parq = common::files_below(&dir.path().join("classic.parq"), "classic.parq");
    // The same set under a name that is no object and says nothing of Parquet.
    let classic_set = common::files_below(&dir.path().join("classic.parq"), "classic-set");
    for (name, path) in hdf_parq.iter().chain(&classic_parq).chain(&classic_set) {
        put(name, std::fs::read(path).unwrap());
    }
    let endpoint = proxy.endpoint();
    let env = tool_env(&endpoint);
    for (doc, local) in [
        ("hdf.json", "hdf.json"),
        ("classic.json", "classic.json"),
        ("combined.json", "combined.json"),
    ] {
        let url = format!("s3://{}/data/{doc}#mode=zarr,reference", common::s3::BUCKET);
        let outcome = read_remotely(&proxy, &url, &env, (doc, local), None, &[]);
        report.case(&format!("s3/{doc}"), outcome);
    }
    // Named as a directory; and by a name whose object is asked for first (a 404).
    for (set, local, files, also_asked) in [
        ("hdf.parq", "hdf.json", &hdf_parq, None),
        ("classic.parq/", "classic.json", &classic_parq, None),
        (
            "classic-set",
            "classic.json",
            &classic_set,
            Some("data/classic-set"),
        ),
    ] {
        let url = format!("s3://{}/data/{set}#mode=zarr,reference", common::s3::BUCKET);
        let mut wholes: Vec<&str> = files.keys().map(String::as_str).collect();
        wholes.extend(also_asked);
        let zmetadata = format!("{}/.zmetadata", set.trim_end_matches('/'));
        let outcome = read_remotely(&proxy, &url, &env, (&zmetadata, local), None, &wholes);
        report.case(&format!("s3/{set}"), outcome);
    }

    let web = WebServer::start(WebKind::WebDav, dir.path());
    let web_proxy = CountingProxy::start(web.port);
    retargeted(
        dir.path(),
        "hdf.json",
        &format!("{}/", web_proxy.endpoint()),
        "hdf-http.json",
    );
    to_parquet(dir.path(), "hdf-http.json", "hdf-http.parq");
    let env = [
        ("NCZARR_RS_QUIET", None),
        ("NCZARR_RS_S3_CONCURRENCY", Some("4")),
    ];
    for (doc, local) in [
        ("hdf-http.json", "hdf.json"),
        ("classic.json", "classic.json"),
    ] {
        let url = format!("{}/{doc}#mode=zarr,reference,http", web_proxy.endpoint());
        let outcome = read_remotely(&web_proxy, &url, &env, (doc, local), None, &[]);
        report.case(&format!("http/{doc}"), outcome);
    }
    for (set, local) in [
        ("hdf-http.parq", "hdf.json"),
        ("classic.parq", "classic.json"),
    ] {
        let url = format!("{}/{set}#mode=zarr,reference,http", web_proxy.endpoint());
        let files = common::files_below(&dir.path().join(set), set);
        let wholes: Vec<&str> = files.keys().map(String::as_str).collect();
        let zmetadata = format!("{set}/.zmetadata");
        let outcome = read_remotely(&web_proxy, &url, &env, (&zmetadata, local), None, &wholes);
        report.case(&format!("http/{set}"), outcome);
    }
    // Its generator names 4 ranges of classic.nc; the whole files it names are read once each.
    let url = format!(
        "{}/generated.json#mode=zarr,reference,http",
        web_proxy.endpoint()
    );
    let outcome = read_remotely(
        &web_proxy,
        &url,
        &env,
        ("generated.json", "generated.json"),
        Some(BTreeMap::from([("classic.nc", 4)])),
        &["raw.bin", "packed.bin"],
    );
    report.case("http/generated.json", outcome);
    report.finish(11);
}

/// A copy of `hdf.parq` in `dir` as `name`, broken by `breaking`; its URL.
fn broken_parquet(dir: &Path, name: &str, breaking: impl Fn(&Path)) -> String {
    let set = dir.join(name);
    common::copy_tree(&dir.join("hdf.parq"), &set);
    breaking(&set);
    reference_url(&set)
}

/// Broken documents and targets fail with the netCDF error that says so and a message naming
/// the cause, never a crash; a reference set is never written.
#[test]
fn broken_reference_sets_are_errors() {
    if common::preloaded_library().is_none() {
        return;
    }
    let dir = scratch("references-broken");
    write_references(dir.path());
    let hdf = std::fs::read_to_string(dir.path().join("hdf.json")).unwrap();
    let nc = format!("{}/hdf.nc", dir.path().display());
    let write = |name: &str, text: &str| {
        std::fs::write(dir.path().join(name), text).unwrap();
        reference_url(&dir.path().join(name))
    };
    // The file, cut a byte before its last chunk ends.
    let short = dir.path().join("short.nc");
    let refs: serde_json::Value = serde_json::from_str(&hdf).unwrap();
    let end = refs["refs"]
        .as_object()
        .unwrap()
        .values()
        .filter_map(|v| Some(v.get(1)?.as_u64()? + v.get(2)?.as_u64()?))
        .max()
        .unwrap();
    let whole = std::fs::read(&nc).unwrap();
    std::fs::write(&short, &whole[..end as usize - 1]).unwrap();
    let cases = [
        (
            write("missing.json", &hdf.replace(&nc, "/nonexistent/hdf.nc")),
            "/nonexistent/hdf.nc",
            "I/O failure",
        ),
        (
            write("short.json", &hdf.replace(&nc, short.to_str().unwrap())),
            "short.nc ends at byte",
            "I/O failure",
        ),
        (
            write("corrupt.json", &hdf[..hdf.len() / 2]),
            "not a JSON reference document",
            "NCZarr error",
        ),
        (
            write(
                "hostile.json",
                r#"{"version": 1, "refs": {"../../x/.zarray": "{}"}}"#,
            ),
            "relative segment",
            "NCZarr error",
        ),
        (
            write(
                "unknown.json",
                r#"{"version": 1, "refs": {"v/0": ["ftp://h/f.nc", 0, 4]}}"#,
            ),
            "unsupported scheme",
            "NetCDF: Malformed URL",
        ),
        (
            broken_parquet(dir.path(), "damaged.parq", |set| {
                let record = set.join("v/refs.0.parq");
                let bytes = std::fs::read(&record).unwrap();
                std::fs::write(&record, &bytes[..bytes.len() / 2]).unwrap();
            }),
            "not a readable Parquet file",
            "I/O failure",
        ),
        (
            broken_parquet(dir.path(), "no-records.parq", |set| {
                let zmetadata = set.join(".zmetadata");
                let text = std::fs::read_to_string(&zmetadata).unwrap();
                let text = text.replace("\"record_size\":5", "\"record_size\":0");
                std::fs::write(&zmetadata, text).unwrap();
            }),
            "no \"record_size\"",
            "NCZarr error",
        ),
        // A Parquet set opened as plain Zarr: its chunks are not where Zarr looks.
        (
            format!("file://{}/hdf.parq#mode=zarr,file", dir.path().display()),
            "a Parquet reference set",
            "Unknown file format",
        ),
    ];
    let mut report = Report::new("broken reference sets");
    for (url, says, code) in &cases {
        let run = run_env(Host::Ours, "ncdump", &[url], &[("NCZARR_RS_QUIET", None)]);
        report.case(
            url,
            if run.refused_saying(says) && run.stderr.contains(code) {
                Ok(())
            } else {
                Err(run.describe())
            },
        );
    }
    // Copying into a reference set is refused before anything is written.
    let before = std::fs::read(dir.path().join("hdf.json")).unwrap();
    let into = reference_url(&dir.path().join("hdf.json"));
    let run = run_env(
        Host::Ours,
        "nccopy",
        &[&nc, &into],
        &[("NCZARR_RS_QUIET", None)],
    );
    report.case(
        "nccopy into a reference set",
        if run.refused_saying("read-only")
            && std::fs::read(dir.path().join("hdf.json")).unwrap() == before
        {
            Ok(())
        } else {
            Err(run.describe())
        },
    );
    report.finish(cases.len() + 1);
}
