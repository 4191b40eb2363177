//! Bad input through stock `ncdump` with our library: every broken dataset must give a netCDF
//! error (non-zero exit, a `NetCDF: ...` message) and must never kill the host with a signal.
//! Broken datasets are made by writing a valid one with our library and then damaging files.

mod common;

use common::{Host, Report, Run, ncgen, repo_root, run, scratch, url};
use std::fs;
use std::path::{Path, PathBuf};

const MODE: &str = "nczarr,file";

/// Writes tests/cdl/storage.cdl (several variables, explicit chunks) into a fresh store.
fn valid_store(dir: &Path, name: &str) -> Result<PathBuf, String> {
    let store = dir.join(format!("{name}.zarr"));
    let cdl = repo_root().join("tests/cdl/storage.cdl");
    ncgen(Host::Ours, &cdl, &url(&store, MODE))?;
    Ok(store)
}

/// Data objects (chunks) of a variable: files in its directory tree whose names do not start with '.'.
fn chunk_files(var_dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![var_dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if !e.file_name().to_string_lossy().starts_with('.') {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The run must be a clean netCDF error.
fn expect_nc_error(r: &Run) -> Result<(), String> {
    if r.crashed() {
        return Err(format!("host crashed: {}", r.describe()));
    }
    if r.success() {
        return Err(format!(
            "expected a netCDF error, got success: {}",
            r.cmdline
        ));
    }
    // libnetcdf rejects some locations itself before any dispatcher runs; ncdump then prints
    // the system error text instead of a `NetCDF:` message.
    if !r.stderr.contains("NetCDF: ") && !r.stderr.contains("No such file or directory") {
        return Err(format!("no `NetCDF: ...` message: {}", r.describe()));
    }
    Ok(())
}

/// Damage applied to a valid store; returns the URL to open.
type Damage = fn(&Path) -> Result<String, String>;

fn remove(p: PathBuf) -> Result<(), String> {
    fs::remove_file(&p).map_err(|e| format!("remove {}: {e}", p.display()))
}

fn overwrite(p: PathBuf, bytes: &[u8]) -> Result<(), String> {
    if !p.is_file() {
        return Err(format!("{} missing from a store we wrote", p.display()));
    }
    fs::write(&p, bytes).map_err(|e| format!("write {}: {e}", p.display()))
}

fn one_chunk(store: &Path, var: &str) -> Result<PathBuf, String> {
    chunk_files(&store.join(var))
        .into_iter()
        .next()
        .ok_or_else(|| format!("no chunk objects under {}/{var}", store.display()))
}

const DAMAGES: &[(&str, Damage)] = &[
    // A root without `.zgroup` and `.zattrs` is not damage: it opens, as netcdf-c's does, as
    // a group of the arrays below it (tests/implicit_root.rs).
    ("corrupt JSON in .zarray", |s| {
        overwrite(
            s.join("chunked/.zarray"),
            b"{\"zarr_format\": 2, \"shape\": [5,",
        )
        .map(|()| url(s, MODE))
    }),
    ("corrupt JSON in variable .zattrs", |s| {
        overwrite(s.join("be_int/.zattrs"), b"{\"_nczarr_array\": {").map(|()| url(s, MODE))
    }),
    ("corrupt JSON in root .zattrs", |s| {
        overwrite(s.join(".zattrs"), b"{]").map(|()| url(s, MODE))
    }),
    (".zarray that is not an object", |s| {
        overwrite(s.join("chunked/.zarray"), b"[1, 2, 3]").map(|()| url(s, MODE))
    }),
    ("missing .zarray of a listed variable", |s| {
        remove(s.join("chunked/.zarray")).map(|()| url(s, MODE))
    }),
    ("truncated chunk", |s| {
        let c = one_chunk(s, "chunked")?;
        let len = fs::metadata(&c).map_err(|e| e.to_string())?.len() as usize;
        let bytes = fs::read(&c).map_err(|e| e.to_string())?;
        overwrite(c, &bytes[..len / 2]).map(|()| url(s, MODE))
    }),
    ("oversized chunk", |s| {
        let c = one_chunk(s, "contiguous")?;
        let mut bytes = fs::read(&c).map_err(|e| e.to_string())?;
        bytes.extend_from_slice(&[0x55; 37]);
        overwrite(c, &bytes).map(|()| url(s, MODE))
    }),
    ("chunk shape larger than the machine's memory", |s| {
        edit_json(&s.join("chunked/.zarray"), |zarray| {
            zarray["chunks"] = serde_json::json!([4u64, 42_949_672_964u64]);
            // Coded chunks are decoded whole (uncompressed ones are read in place).
            zarray["compressor"] = serde_json::json!({"id": "bz2", "level": 1});
        })
        .map(|()| url(s, MODE))
    }),
    ("empty chunk object", |s| {
        let c = one_chunk(s, "be_double")?;
        overwrite(c, b"").map(|()| url(s, MODE))
    }),
    // Codecs given in a shape Zarr does not allow are no codecs: reading the chunks as if
    // they were none would hand out their encoded bytes as values.
    ("filters that are not a list", |s| {
        edit_json(&s.join("chunked/.zarray"), |z| {
            z["filters"] = serde_json::json!({"id": "delta", "dtype": "<i4"});
        })
        .map(|()| url(s, MODE))
    }),
    ("a compressor that is not a codec", |s| {
        edit_json(&s.join("chunked/.zarray"), |z| {
            z["compressor"] = serde_json::json!("zlib");
        })
        .map(|()| url(s, MODE))
    }),
    ("an order that is not text", |s| {
        edit_json(&s.join("chunked/.zarray"), |z| {
            z["order"] = serde_json::json!(5)
        })
        .map(|()| url(s, MODE))
    }),
];

/// Rewrites the JSON object at `p` with `edit`.
fn edit_json(p: &Path, edit: impl FnOnce(&mut serde_json::Value)) -> Result<(), String> {
    let text = fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
    let mut json: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    edit(&mut json);
    overwrite(p.to_path_buf(), json.to_string().as_bytes())
}

const V3_MODE: &str = "nczarr,v3,file";

/// A change to a JSON object.
type JsonEdit = fn(&mut serde_json::Value);

/// Damage to a Zarr v3 array's codecs (of `be_int`, big-endian: read as little-endian, its
/// values would be others).
const V3_CODEC_DAMAGES: &[(&str, JsonEdit)] = &[
    ("codecs that are not a list", |z| {
        z["codecs"] = serde_json::json!({"name": "bytes", "configuration": {"endian": "big"}});
    }),
    ("no codecs", |z| {
        z.as_object_mut().map(|o| o.remove("codecs"));
    }),
    ("a configuration that is not an object", |z| {
        z["codecs"] = serde_json::json!([{"name": "bytes", "configuration": ["big"]}]);
    }),
    ("an endian that is not text", |z| {
        z["codecs"] = serde_json::json!([{"name": "bytes", "configuration": {"endian": 5}}]);
    }),
];

#[test]
fn zarr_v3_codecs_of_the_wrong_shape_give_netcdf_errors() {
    let mut report = Report::new("damaged_v3_codecs");
    let dir = scratch("bad_v3");
    let cdl = repo_root().join("tests/cdl/storage.cdl");
    for (i, (what, damage)) in V3_CODEC_DAMAGES.iter().enumerate() {
        let store = dir.path().join(format!("case{i}.zarr"));
        let outcome = ncgen(Host::Ours, &cdl, &url(&store, V3_MODE))
            .and_then(|()| edit_json(&store.join("be_int/zarr.json"), damage))
            .and_then(|()| {
                let r = run(
                    Host::Ours,
                    "ncdump",
                    &["-v", "be_int", &url(&store, V3_MODE)],
                );
                expect_nc_error(&r)
            });
        report.case(what, outcome);
    }
    report.finish(V3_CODEC_DAMAGES.len());
}

#[test]
fn damaged_stores_give_netcdf_errors() {
    let mut report = Report::new("damaged_store");
    let dir = scratch("bad");
    for (i, (what, damage)) in DAMAGES.iter().enumerate() {
        let outcome = valid_store(dir.path(), &format!("case{i}"))
            .and_then(|s| damage(&s))
            .and_then(|u| expect_nc_error(&run(Host::Ours, "ncdump", &[&u])));
        report.case(what, outcome);
    }
    report.finish(DAMAGES.len());
}

/// A missing root `.zattrs` removes the NCZarr metadata; a reader may reject the dataset or fall back
/// to reading it as pure Zarr, but must not crash, and an error must be a netCDF one.
#[test]
fn missing_root_zattrs_never_crashes() {
    let dir = scratch("zattrs");
    let store = valid_store(dir.path(), "nozattrs").unwrap();
    let _ = fs::remove_file(store.join(".zattrs"));
    let r = run(Host::Ours, "ncdump", &[&url(&store, MODE)]);
    assert!(!r.crashed(), "{}", r.describe());
    if !r.success() {
        expect_nc_error(&r).unwrap();
    }
}

/// Locations that are not datasets at all.
#[test]
fn bad_locations_give_netcdf_errors() {
    let mut report = Report::new("bad_location");
    let dir = scratch("where");
    let plain = dir.path().join("plain.txt");
    fs::write(&plain, "not a dataset\n").unwrap();
    let empty = dir.path().join("empty.zarr");
    fs::create_dir(&empty).unwrap();
    let cases: Vec<(&str, String)> = vec![
        ("URL without a path", format!("file://#mode={MODE}")),
        ("path is a plain file", url(&plain, MODE)),
        (
            "non-existent path",
            url(&dir.path().join("does/not/exist.zarr"), MODE),
        ),
        ("empty directory", url(&empty, MODE)),
    ];
    for (what, u) in cases {
        report.case(what, expect_nc_error(&run(Host::Ours, "ncdump", &[&u])));
    }
    report.finish(4);
}

/// A chunk file far larger than any chunk of its variable can be stored in (a 3 GiB file, sparse,
/// for a compressed variable of 4 KiB chunks): refused before it is read, with a netCDF error
/// saying so, within a 1 GiB address space, where reading it would run out of memory.
#[test]
fn a_chunk_file_larger_than_any_chunk_is_refused_unread() {
    let dir = scratch("huge-chunk");
    let cdl = dir.path().join("huge.cdl");
    let values: Vec<String> = (0..4096).map(|i| i.to_string()).collect();
    fs::write(
        &cdl,
        format!(
            "netcdf huge {{\ndimensions:\n  x = 4096 ;\nvariables:\n  int v(x) ;\n    \
             v:_ChunkSizes = 1024 ;\n    v:_DeflateLevel = 1 ;\ndata:\n  v = {} ;\n}}\n",
            values.join(", ")
        ),
    )
    .unwrap();
    let store = dir.path().join("huge.zarr");
    let target = url(&store, MODE);
    ncgen(Host::Ours, &cdl, &target).unwrap();
    let chunk = one_chunk(&store, "v").unwrap();
    fs::OpenOptions::new()
        .write(true)
        .open(&chunk)
        .and_then(|f| f.set_len(3 << 30))
        .unwrap();
    let r = run(
        Host::Ours,
        "prlimit",
        &["--as=1073741824", "ncdump", "-v", "v", &target],
    );
    expect_nc_error(&r).unwrap();
    assert!(
        r.stderr.contains("NetCDF: NCZarr error") && r.stderr.contains("is larger than"),
        "{}",
        r.describe()
    );
}

/// An array whose one chunk is larger than the memory the process may use (`ulimit -v`),
/// though not larger than the machine's: reading it is `NC_ENOMEM`, not a failed allocation
/// that ends the host.
#[test]
fn a_chunk_past_the_address_space_limit_is_refused() {
    let dir = scratch("address_space");
    let store = dir.path().join("wide.zarr");
    let write = |key: &str, text: &str| {
        let p = store.join(key);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    };
    write(".zgroup", r#"{"zarr_format": 2}"#);
    write(
        "a/.zarray",
        r#"{"zarr_format": 2, "shape": [4], "chunks": [4], "dtype": "|S999999999",
            "compressor": null, "filters": null, "fill_value": null, "order": "C"}"#,
    );
    let script = format!(
        "ulimit -v 3000000; exec ncdump '{}'",
        url(&store, "zarr,file")
    );
    let r = run(Host::Ours, "sh", &["-c", &script]);
    assert!(
        r.refused_saying("NetCDF: Memory allocation"),
        "{}",
        r.describe()
    );
}
