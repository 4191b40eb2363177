//! Comparing what we read with what zarr-python and xarray read: our side through the library's
//! Rust API (every variable's shape, dimension names, values and attributes), their side through
//! `tests/data/read_zarr.py` run in a pinned environment (`scripts/pyenv zarr2|zarr3`).
//!
//! Values are compared element by element as JSON: numbers exactly (f32 widened to f64 on both
//! sides), non-finite numbers as the strings `NaN`/`Infinity`/`-Infinity`, text as strings.

use super::repo_root;
use nczarr_rs::api::Dataset;
use nczarr_rs::api::data::Slab;
use nczarr_rs::model::NcType;
use nczarr_rs::url::DatasetUrl;
use serde_json::Value;
use std::collections::BTreeMap;

/// One variable as we read it.
#[derive(Debug)]
pub struct OurVar {
    pub shape: Vec<u64>,
    pub dims: Vec<String>,
    pub scalar: bool,
    /// Values, or the error its data access gave.
    pub values: Result<Vec<Value>, String>,
}

fn number(v: f64) -> Value {
    if v.is_nan() {
        Value::from("NaN")
    } else if v.is_infinite() {
        Value::from(if v > 0.0 { "Infinity" } else { "-Infinity" })
    } else {
        Value::from(v)
    }
}

fn decode(ty: NcType, bytes: &[u8]) -> Vec<Value> {
    let n = ty.size();
    bytes
        .chunks_exact(n)
        .map(|b| match ty {
            NcType::Byte => Value::from(b[0] as i8),
            NcType::UByte => Value::from(b[0]),
            NcType::Char => Value::from(if b[0] == 0 {
                String::new()
            } else {
                String::from_utf8_lossy(b).into_owned()
            }),
            NcType::Short => Value::from(i16::from_ne_bytes([b[0], b[1]])),
            NcType::UShort => Value::from(u16::from_ne_bytes([b[0], b[1]])),
            NcType::Int => Value::from(i32::from_ne_bytes(b.try_into().unwrap())),
            NcType::UInt => Value::from(u32::from_ne_bytes(b.try_into().unwrap())),
            NcType::Int64 => Value::from(i64::from_ne_bytes(b.try_into().unwrap())),
            NcType::UInt64 => Value::from(u64::from_ne_bytes(b.try_into().unwrap())),
            NcType::Float => number(f64::from(f32::from_ne_bytes(b.try_into().unwrap()))),
            NcType::Double => number(f64::from_ne_bytes(b.try_into().unwrap())),
            NcType::String => unreachable!("strings are read with get_strings"),
        })
        .collect()
}

/// Every variable of the dataset at `url`, keyed by its store path (`g/h/name`).
pub fn ours(url: &str) -> BTreeMap<String, OurVar> {
    let mut ds = Dataset::open(&DatasetUrl::parse(url).unwrap(), false)
        .unwrap_or_else(|e| panic!("{url}: open failed: {e}"));
    let mut out = BTreeMap::new();
    for g in ds.tree.groups_preorder() {
        let gp = ds.tree.group_path(g);
        for v in 0..ds.tree.group(g).vars.len() {
            let var = &ds.tree.group(g).vars[v];
            let (ty, scalar, name) = (var.ty, var.is_scalar(), var.name.clone());
            let shape = ds.tree.var_shape(var);
            let dims = var
                .dims
                .iter()
                .map(|d| ds.tree.dim(*d).name.clone())
                .collect();
            let count = if scalar { vec![1] } else { shape.clone() };
            let slab = Slab {
                start: vec![0; count.len()],
                stride: vec![1; count.len()],
                count: count.clone(),
            };
            let n: u64 = count.iter().product();
            let values = if ty == NcType::String {
                ds.get_strings(g, v, &slab).map(|s| {
                    s.iter()
                        .map(|x| Value::from(String::from_utf8_lossy(x).into_owned()))
                        .collect()
                })
            } else {
                let mut buf = vec![0u8; n as usize * ty.size()];
                ds.get_fixed(g, v, &slab, None, ty, &mut buf)
                    .map(|_| decode(ty, &buf))
            };
            let path = if gp.is_empty() {
                name
            } else {
                format!("{gp}/{name}")
            };
            out.insert(
                path,
                OurVar {
                    shape,
                    dims,
                    scalar,
                    values: values.map_err(|e| e.to_string()),
                },
            );
        }
    }
    out
}

/// What `read_zarr.py` prints for `store`, run with the python of `env` (`zarr2`/`zarr3`);
/// `kind` is `zarr` or `xarray`.
pub fn theirs(env: &str, kind: &str, store: &std::path::Path) -> Value {
    let script = repo_root().join("tests/data/read_zarr.py");
    let out = super::python::run(
        env,
        &[script.to_str().unwrap(), kind, store.to_str().unwrap()],
    )
    .unwrap_or_else(|e| panic!("read_zarr.py {kind} {}: {e}", store.display()));
    serde_json::from_str(&out).unwrap()
}

/// Compares one of our variables with their array entry; returns the differences.
pub fn compare(label: &str, ours: &OurVar, theirs: &Value) -> Vec<String> {
    let mut bad = Vec::new();
    if let Some(err) = theirs.get("error") {
        bad.push(format!("{label}: they cannot read it: {err}"));
        return bad;
    }
    let their_shape: Vec<u64> = serde_json::from_value(theirs["shape"].clone()).unwrap();
    // NCZarr stores a netCDF scalar as shape [1]; we serve it as a scalar.
    let shape_ok = their_shape == ours.shape || (ours.scalar && their_shape == [1]);
    if !shape_ok {
        bad.push(format!(
            "{label}: shape ours {:?} theirs {their_shape:?}",
            ours.shape
        ));
    }
    if let Some(their_dims) = theirs.get("dims").and_then(Value::as_array) {
        let their_dims: Vec<&str> = their_dims.iter().filter_map(Value::as_str).collect();
        if their_dims != ours.dims && !ours.scalar {
            bad.push(format!(
                "{label}: dims ours {:?} theirs {their_dims:?}",
                ours.dims
            ));
        }
    }
    match &ours.values {
        Err(e) => bad.push(format!("{label}: we cannot read it: {e}")),
        Ok(v) => {
            if Some(v) != theirs["values"].as_array() {
                bad.push(format!(
                    "{label}: values ours {v:?} theirs {}",
                    theirs["values"]
                ));
            }
        }
    }
    bad
}
