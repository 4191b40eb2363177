//! JSON-valued attributes of pure Zarr (as zarr-python and xarray write them) survive reading and
//! writing: a dataset written by zarr-python is read by us, copied by stock `nccopy` into pure Zarr
//! and NCZarr stores, and read again; every dump is the same, and zarr-python reads back from our
//! copy the values it wrote (arrays of numbers keep every value and their kind, booleans stay
//! booleans; dictionaries and nested arrays, which netCDF holds as JSON text, come back as that
//! JSON). Attribute text that netcdf-c wrote as it is (not UTF-8) or with raw control
//! characters is read rather than refused.

mod common;

use common::{Host, ncdump, run, scratch, url};
use serde_json::Value;

const ATTRS: &str = r#"{
  "title": "json attributes",
  "mixed": [1, 2.5],
  "ints": [1, 3000000000],
  "negative": [-1, 7],
  "floats": [0.1, 1e300, -2.5e-300],
  "flag": true,
  "flags": [true, false],
  "names": ["a", "bc", ""],
  "nested": [[1, 2], [3, 4]],
  "dict": {"a": [1, 2], "b": {"c": "d"}},
  "empty_text": "",
  "looks_like_json": "[1, 2]",
  "unicode": "ünïcödé ✓"
}"#;

/// Writes a pure Zarr group carrying ATTRS on the group and on one array.
const WRITE: &str = r#"
import json, sys, numpy as np, zarr
attrs = json.loads(sys.argv[2])
root = zarr.open_group(sys.argv[1], mode="w")
root.attrs.update(attrs)
a = root.create_dataset("v", shape=(3,), chunks=(3,), dtype="<i4", fill_value=-1, compressor=None)
a[:] = [1, 2, 3]
a.attrs.update(dict(attrs, _ARRAY_DIMENSIONS=["n"]))
"#;

/// Prints the attributes of the group and of array `v` as JSON.
const READ: &str = r#"
import json, sys, zarr
root = zarr.open_group(sys.argv[1], mode="r")
print(json.dumps({"group": dict(root.attrs), "v": dict(root["v"].attrs)}))
"#;

fn python(script: &str, args: &[&str]) -> String {
    common::python::run_script("zarr2", script, args).unwrap_or_else(|e| panic!("{e}"))
}

/// What zarr-python must read back from our copy for an attribute it wrote.
fn expected_after_copy(written: &Value) -> Value {
    match written {
        Value::Object(_) => Value::String(written.to_string()),
        Value::Array(items) if items.iter().any(|i| i.is_array() || i.is_object()) => {
            Value::String(written.to_string())
        }
        // Booleans are unsigned bytes 0/1 in netCDF and booleans again in pure Zarr.
        other => other.clone(),
    }
}

/// Compares JSON values, numbers by value (1 and 1.0 are the same number).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        (Value::String(x), Value::String(y)) => {
            // JSON text may differ in spacing only.
            x == y
                || matches!(
                    (serde_json::from_str::<Value>(x), serde_json::from_str::<Value>(y)),
                    (Ok(p), Ok(q)) if p == q && (p.is_object() || p.is_array())
                )
        }
        _ => a == b,
    }
}

#[test]
fn json_attributes_survive_read_write_read() {
    let dir = scratch("json-attrs");
    let source = dir.path().join("source.zarr");
    python(WRITE, &[source.to_str().unwrap(), ATTRS]);
    let src_url = url(&source, "zarr,file");
    let dump = |u: &str| common::dump::normalise_name(&ncdump(Host::Ours, &[], u).unwrap());
    let first = dump(&src_url);
    assert!(first.contains(":mixed = 1., 2.5 ;"), "{first}");
    assert!(first.contains(":ints = 1LL, 3000000000LL ;"), "{first}");

    let pure = dir.path().join("copy.zarr");
    let nczarr = dir.path().join("copy.nczarr");
    let pure_url = url(&pure, "zarr,file");
    let nczarr_url = url(&nczarr, "nczarr,file");
    for (from, to) in [(&src_url, &pure_url), (&src_url, &nczarr_url)] {
        let r = run(Host::Ours, "nccopy", &[from, to]);
        assert!(r.success(), "{}", r.describe());
    }
    let again = url(&dir.path().join("again.zarr"), "zarr,file");
    let r = run(Host::Ours, "nccopy", &[&pure_url, &again]);
    assert!(r.success(), "{}", r.describe());
    for u in [&pure_url, &nczarr_url, &again] {
        if let Some(d) = common::diff::diff(&first, &dump(u)) {
            panic!("{u} differs from the source (- source, + copy)\n{d}");
        }
    }

    let written: serde_json::Map<String, Value> = serde_json::from_str(ATTRS).unwrap();
    let read: Value = serde_json::from_str(&python(READ, &[pure.to_str().unwrap()])).unwrap();
    for owner in ["group", "v"] {
        for (name, value) in &written {
            let want = expected_after_copy(value);
            let got = &read[owner][name];
            assert!(
                same(&want, got),
                "{owner}:{name}: wrote {value}, expected {want} after the copy, zarr-python read {got}"
            );
        }
    }
}

/// Metadata as other writers may leave it: a key given twice (the last value wins, in the
/// first place, as JSON readers commonly do), escapes in keys and values, and the same
/// objects once more inside a consolidated `.zmetadata`. Stock `ncdump` shows each attribute
/// once, unescaped, in order.
#[test]
fn repeated_keys_and_escapes_read_as_one_attribute_each() {
    let dir = scratch("json-repeated");
    let group_attrs = r#"{"a": 1, "b": "x", "a": 2, "\u0041bc": "say \"hi\"\u0021"}"#;
    let array = r#"{"zarr_format": 2, "shape": [2], "chunks": [2], "dtype": "<i4",
        "compressor": null, "filters": null, "fill_value": 0, "order": "C", "order": "C"}"#;
    // More members than an object searches one by one: the sorted index folds the repeats.
    let many: String = (0..40).map(|i| format!(r#", "a{i}": {i}"#)).collect();
    let array_attrs = format!(
        r#"{{"_ARRAY_DIMENSIONS": ["n"], "units": "m"{many}, "units": "km", "a5": -5, "a5": 55}}"#
    );
    let array_attrs = array_attrs.as_str();
    for consolidated in [false, true] {
        let store = dir.path().join(format!("repeated-{consolidated}.zarr"));
        std::fs::create_dir_all(store.join("v")).unwrap();
        std::fs::write(store.join(".zgroup"), r#"{"zarr_format": 2}"#).unwrap();
        std::fs::write(store.join(".zattrs"), group_attrs).unwrap();
        std::fs::write(store.join("v/.zarray"), array).unwrap();
        std::fs::write(store.join("v/.zattrs"), array_attrs).unwrap();
        let values: Vec<u8> = [7i32, 8].iter().flat_map(|x| x.to_le_bytes()).collect();
        std::fs::write(store.join("v/0"), values).unwrap();
        if consolidated {
            let zmetadata = format!(
                r#"{{"zarr_consolidated_format": 1, "metadata": {{".zgroup": {{"zarr_format": 2}},
                ".zattrs": {group_attrs}, "v/.zarray": {array}, "v/.zattrs": {array_attrs}}}}}"#
            );
            std::fs::write(store.join(".zmetadata"), zmetadata).unwrap();
            // Only `.zmetadata` is read: the objects themselves say otherwise.
            std::fs::write(store.join(".zattrs"), r#"{"a": 99}"#).unwrap();
        }
        let dump = ncdump(Host::Ours, &[], &url(&store, "zarr,file")).unwrap();
        let lines: Vec<&str> = dump.lines().map(str::trim).collect();
        let at = |want: &str| {
            let found: Vec<usize> = (0..lines.len()).filter(|&i| lines[i] == want).collect();
            assert_eq!(found.len(), 1, "{want:?} once in\n{dump}");
            found[0]
        };
        assert!(at(":a = 2 ;") < at(":b = \"x\" ;"), "{dump}");
        at(":Abc = \"say \\\"hi\\\"!\" ;");
        at("v:units = \"km\" ;");
        assert!(at("v:a4 = 4 ;") < at("v:a5 = 55 ;"), "{dump}");
        assert!(at("v:a5 = 55 ;") < at("v:a6 = 6 ;"), "{dump}");
        at("v:a39 = 39 ;");
        at("v = 7, 8 ;");
    }
}

/// netcdf-c writes the bytes of a char attribute into `.zattrs` as they are: Latin-1 text
/// from an old file makes JSON that is not UTF-8, and other writers leave control characters
/// unescaped in strings. Such objects are read (each invalid sequence as U+FFFD, as text we
/// write), not refused with the whole dataset; the reference reads them too.
#[test]
fn attribute_text_that_is_not_utf8_or_has_raw_control_characters_is_read() {
    let dir = scratch("json-not-utf8");
    let cdl = dir.path().join("latin1.cdl");
    let mut text =
        b"netcdf latin1 {\ndimensions: n = 2 ;\nvariables: int v(n) ;\n  v:units = \"".to_vec();
    text.extend_from_slice(b"x\xb0C\" ;\n  v:note = \"plain\" ;\ndata: v = 3, 4 ;\n}\n");
    std::fs::write(&cdl, text).unwrap();
    let store = dir.path().join("latin1.zarr");
    common::ncgen(Host::Ref410, &cdl, &url(&store, "nczarr,file")).expect("ncgen on 4.10.1");
    let zattrs = std::fs::read(store.join("v/.zattrs")).unwrap();
    assert!(
        std::str::from_utf8(&zattrs).is_err(),
        "4.10.1 wrote UTF-8 this time"
    );

    let raw = dir.path().join("raw-control.zarr");
    std::fs::create_dir_all(raw.join("v")).unwrap();
    std::fs::write(raw.join(".zgroup"), r#"{"zarr_format": 2}"#).unwrap();
    std::fs::write(raw.join(".zattrs"), b"{\"title\": \"tab\there\"}").unwrap();
    std::fs::write(
        raw.join("v/.zarray"),
        r#"{"zarr_format": 2, "shape": [2], "chunks": [2], "dtype": "<i4",
            "compressor": null, "filters": null, "fill_value": 0, "order": "C"}"#,
    )
    .unwrap();
    let values: Vec<u8> = [3i32, 4].iter().flat_map(|x| x.to_le_bytes()).collect();
    std::fs::write(raw.join("v/0"), values).unwrap();

    for (store, mode, want) in [
        (&store, "nczarr,file", "v:units = \"x\u{fffd}C\" ;"),
        (&raw, "zarr,file", ":title = \"tab\\there\" ;"),
    ] {
        let u = url(store, mode);
        let dump = ncdump(Host::Ours, &[], &u).unwrap_or_else(|e| panic!("{e}"));
        let lines: Vec<&str> = dump.lines().map(str::trim).collect();
        assert!(lines.contains(&want), "{want:?} in\n{dump}");
        assert!(lines.contains(&"v = 3, 4 ;"), "{dump}");
        assert!(
            ncdump(Host::Ref410, &[], &u).is_ok(),
            "the reference reads {u}"
        );
    }
    let latin1 = ncdump(Host::Ours, &[], &url(&store, "nczarr,file")).unwrap();
    assert!(latin1.contains("v:note = \"plain\" ;"), "{latin1}");
}

/// Adds an attribute to array `v` and to the group through netCDF4-python (the library
/// preloaded), as a user adds one to a dataset another tool wrote (by plain path: with a URL,
/// netCDF4-python's "r+" finds no file there and creates one).
const TOUCH: &str = r#"
import sys, netCDF4
with netCDF4.Dataset(sys.argv[1], "r+") as ds:
    ds.touched = 1
    ds["v"].touched = 1
"#;

/// Changing one attribute of an array or group rewrites its attributes: the others come back
/// as their writer gave them (objects stay objects, nulls nulls, integers integers), not as
/// the JSON text or doubles netCDF reads them as.
#[test]
fn attributes_other_tools_wrote_keep_their_json_when_another_changes() {
    let dir = scratch("json-attrs-touched");
    let store = dir.path().join("source.zarr");
    let attrs = r#"{"nested": {"a": [1, null]}, "nul": null, "mix": [1, 2.5],
                    "deep": [[1, 2], [3]], "plain": 7, "text": "t"}"#;
    python(WRITE, &[store.to_str().unwrap(), attrs]);
    common::python::run_netcdf4_preloaded(TOUCH, &[store.to_str().unwrap()])
        .unwrap_or_else(|e| panic!("{e}"));
    let read: Value = serde_json::from_str(&python(READ, &[store.to_str().unwrap()])).unwrap();
    let written: serde_json::Map<String, Value> = serde_json::from_str(attrs).unwrap();
    for owner in ["group", "v"] {
        assert_eq!(read[owner]["touched"], Value::from(1), "{read}");
        for (name, value) in &written {
            assert_eq!(&read[owner][name], value, "{owner}:{name}: {read}");
        }
    }
}

/// Writes NaN and infinities as attributes of the group and of array `v`, with zarr-python of
/// Zarr format `sys.argv[2]` (which writes them as the bare literals `NaN`, `Infinity`).
const WRITE_NON_FINITE: &str = r#"
import sys, zarr
fmt = int(sys.argv[2])
attrs = {"nan": float("nan"), "ninf": float("-inf"), "mixed": [1.5, float("nan"), float("inf")],
         "text": "NaN"}
if fmt == 2:
    root = zarr.open_group(sys.argv[1], mode="w")
    a = root.create_dataset("v", shape=(2,), chunks=(2,), dtype="<f4", fill_value=None)
    a.attrs.update(dict(attrs, _ARRAY_DIMENSIONS=["n"]))
else:
    root = zarr.open_group(sys.argv[1], mode="w", zarr_format=3)
    a = root.create_array("v", shape=(2,), chunks=(2,), dtype="float32", dimension_names=["n"])
    a.attrs.update(attrs)
root.attrs.update(attrs)
"#;

/// Prints the attributes of the group and of array `v` as JSON, each non-finite number as its
/// Python spelling inside an object (`{"float": "nan"}`), which strict JSON can hold.
const READ_NON_FINITE: &str = r#"
import json, math, sys, zarr
def plain(v):
    if isinstance(v, float) and not math.isfinite(v):
        return {"float": repr(v)}
    if isinstance(v, list):
        return [plain(x) for x in v]
    return v
root = zarr.open_group(sys.argv[1], mode="r")
print(json.dumps({owner: {k: plain(v) for k, v in attrs.items()}
                  for owner, attrs in [("group", root.attrs), ("v", root["v"].attrs)]}))
"#;

/// NaN and the infinities as attributes. zarr-python writes them as bare literals, which
/// netcdf-c (4.9.0 and 4.10.1) reads as numbers: we read them as doubles too, not as text, the
/// same dump as 4.10.1's. Our copies write them as bare literals as well: zarr-python reads
/// numbers back (not the text `"NaN"`), and stock netcdf-c 4.9.0 reads an NCZarr copy (the
/// strings 4.10.1 writes make 4.9.0 fail the whole dataset).
#[test]
fn non_finite_numbers_are_numbers_both_ways() {
    let dir = scratch("json-non-finite");
    for format in ["2", "3"] {
        let source = dir.path().join(format!("source{format}.zarr"));
        common::python::run_script(
            if format == "2" { "zarr2" } else { "zarr3" },
            WRITE_NON_FINITE,
            &[source.to_str().unwrap(), format],
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let src_url = url(&source, "zarr,file");
        let dump = |host: Host, u: &str| {
            common::dump::normalise_name(
                &ncdump(host, &["-h"], u).unwrap_or_else(|e| panic!("{u}: {e}")),
            )
        };
        let first = dump(Host::Ours, &src_url);
        for owner in ["", "v"] {
            for line in [
                ":nan = NaN ;",
                ":ninf = -Infinity ;",
                ":mixed = 1.5, NaN, Infinity ;",
                ":text = \"NaN\" ;",
            ] {
                assert!(
                    common::dump::has_line(&first, &format!("{owner}{line}")),
                    "{owner}{line} in\n{first}"
                );
            }
        }
        if format == "2" {
            let reference = dump(Host::Ref410, &src_url);
            if let Some(d) = common::diff::diff(&reference, &first) {
                panic!("ours differs from 4.10.1 (- 4.10.1, + ours)\n{d}");
            }
        }

        let v3 = if format == "2" { "" } else { "v3," };
        let pure = dir.path().join(format!("copy{format}.zarr"));
        let nczarr = dir.path().join(format!("copy{format}.nczarr"));
        let pure_url = url(&pure, &format!("zarr,{v3}file"));
        let nczarr_url = url(&nczarr, &format!("nczarr,{v3}file"));
        for to in [&pure_url, &nczarr_url] {
            let r = run(Host::Ours, "nccopy", &[&src_url, to]);
            assert!(r.success(), "{}", r.describe());
            let copy = dump(Host::Ours, to);
            if let Some(d) = common::diff::diff(&first, &copy) {
                panic!("{to} differs from the source (- source, + copy)\n{d}");
            }
        }
        let env = if format == "2" { "zarr2" } else { "zarr3" };
        let read = common::python::run_script(env, READ_NON_FINITE, &[pure.to_str().unwrap()])
            .unwrap_or_else(|e| panic!("{e}"));
        let read: Value = serde_json::from_str(&read).unwrap();
        let float = |s: &str| serde_json::json!({ "float": s });
        for owner in ["group", "v"] {
            assert_eq!(read[owner]["nan"], float("nan"), "{read}");
            assert_eq!(read[owner]["ninf"], float("-inf"), "{read}");
            assert_eq!(
                read[owner]["mixed"],
                serde_json::json!([1.5, float("nan"), float("inf")]),
                "{read}"
            );
            assert_eq!(read[owner]["text"], "NaN", "{read}");
        }
        if format == "2" {
            let stock = dump(Host::Stock, &nczarr_url);
            assert!(common::dump::has_line(&stock, "v:nan = NaN ;"), "{stock}");
            assert!(
                common::dump::has_line(&stock, ":mixed = 1.5, NaN, Infinity ;"),
                "{stock}"
            );
        }
    }
}

/// Writes a dataset the way netCDF4-python and xarray do, one variable at a time (each
/// definition enters define mode, each write leaves it), changing earlier variables between:
/// the unlimited dimension grown by a later write, a dimension renamed, and last (when nothing
/// else makes those variables' objects change) an attribute added and one changed.
const ONE_AT_A_TIME: &str = r#"
import sys, numpy as np, netCDF4
with netCDF4.Dataset(sys.argv[1], "w") as ds:
    ds.createDimension("t", None)
    ds.createDimension("x", 3)
    for i in range(6):
        v = ds.createVariable(f"v{i}", "f4", ("t", "y" if i > 4 else "x"))
        v.units = "m"
        v[:2] = np.arange(6, dtype="f4").reshape(2, 3) + i
        if i == 3:
            ds["v2"][2] = [7, 8, 9]
        if i == 5:
            ds["v0"].note = "added later"
            ds["v1"].units = "km"
        if i == 4:
            ds.renameDimension("x", "y")
"#;

/// Each define mode left stores only the variables that changed: what the store holds after
/// writing one variable at a time is what an HDF5 file holds after the same calls.
#[test]
fn variables_written_one_at_a_time_store_every_change() {
    let dir = scratch("one-at-a-time");
    let hdf5 = dir.path().join("same.nc");
    common::python::run_script("netcdf4", ONE_AT_A_TIME, &[hdf5.to_str().unwrap()])
        .unwrap_or_else(|e| panic!("{e}"));
    let truth =
        common::dump::normalise_name(&ncdump(Host::Stock, &[], hdf5.to_str().unwrap()).unwrap());
    for (name, mode) in [
        ("nczarr", "nczarr,file"),
        ("zarr", "zarr,file"),
        ("zipped", "nczarr,zip"),
    ] {
        let store = dir.path().join(match name {
            "zipped" => format!("{name}.zip"),
            _ => format!("{name}.zarr"),
        });
        let u = url(&store, mode);
        common::python::run_netcdf4_preloaded(ONE_AT_A_TIME, &[&u])
            .unwrap_or_else(|e| panic!("{e}"));
        let dump = common::dump::normalise_name(&ncdump(Host::Ours, &[], &u).unwrap());
        // Pure Zarr has no unlimited dimensions.
        let truth = match name {
            "zarr" => truth.replace("t = UNLIMITED ; // (3 currently)", "t = 3 ;"),
            _ => truth.clone(),
        };
        if let Some(d) = common::diff::diff(&truth, &dump) {
            panic!("{mode} differs from HDF5 (- HDF5, + ours)\n{d}");
        }
    }
}
