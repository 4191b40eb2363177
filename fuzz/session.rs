//! One fuzzing session over the read path, shared by the fuzz targets (`fuzz_targets/`) and
//! `tests/metadata_fuzz.rs`.
//!
//! An input is a set of store objects: a line `@@ <key>` starts each one, and the bytes up to the
//! next such line are its value (so seeds stay readable and a fuzzer mutates JSON as text). The
//! objects go into an in-memory store, which is opened as NCZarr, as pure Zarr with
//! `_ARRAY_DIMENSIONS` and as pure Zarr without; every open dataset is inquired as `ncdump`
//! inquires it (groups, dimensions, variables, filters, every attribute in its own type and
//! converted) and every variable is read: whole when small, converted, strided, and at its last
//! element. Errors are expected answers; a panic, an abort, a hang or an allocation past the
//! fuzzer's limits is a failure.

#![allow(dead_code)] // each fuzz target uses part of the session

use nczarr_rs::api::{Dataset, Owner, Slab};
use nczarr_rs::format::Layout;
use nczarr_rs::model::{GroupId, NcType, Values};
use nczarr_rs::url::DatasetUrl;
use nczarr_rs::zmap::file::FileStore;
use nczarr_rs::zmap::memory::MemoryStore;
use nczarr_rs::zmap::zip::ZipStore;
use nczarr_rs::zmap::{Store, StoreKey};

/// What starts each object in an input.
const MARK: &[u8] = b"@@ ";

/// The most bytes one read asks for: a variable is read whole only up to this size (larger
/// ones at some elements), and a strided read of many dimensions is skipped past it.
const WHOLE_READ_LIMIT: u64 = 1 << 20;

/// The objects an input names, in order: `(key, value)`.
pub fn objects(input: &[u8]) -> Vec<(String, &[u8])> {
    let mut starts: Vec<usize> = Vec::new();
    if input.starts_with(MARK) {
        starts.push(0);
    }
    for (i, w) in input.windows(MARK.len() + 1).enumerate() {
        if w[0] == b'\n' && &w[1..] == MARK {
            starts.push(i + 1);
        }
    }
    let mut out = Vec::new();
    for (n, &start) in starts.iter().enumerate() {
        let end = starts.get(n + 1).map_or(input.len(), |&next| next - 1);
        let body = &input[start + MARK.len()..end.max(start + MARK.len())];
        let (key, value) = match body.iter().position(|&b| b == b'\n') {
            Some(nl) => (&body[..nl], &body[nl + 1..]),
            None => (body, &body[body.len()..]),
        };
        out.push((String::from_utf8_lossy(key).into_owned(), value));
    }
    out
}

/// Runs one session on the objects `input` names.
pub fn run(input: &[u8]) {
    let objects = objects(input);
    read_each_way(|| {
        let store = MemoryStore::new();
        for (key, value) in &objects {
            if let Ok(key) = StoreKey::new(key) {
                let _ = store.put(&key, value);
            }
        }
        Some(Box::new(store))
    });
}

/// Opens what `store` gives (a new store each time) in each layout, then inquires and reads
/// the datasets that open.
pub fn read_each_way(store: impl Fn() -> Option<Box<dyn Store>>) {
    for (nczarr, xarray) in [(true, true), (false, true), (false, false)] {
        let Some(store) = store() else {
            return;
        };
        let wanted = Layout {
            nczarr,
            xarray,
            consolidated: false,
            // The version stored is the one read.
            zarr_v3: false,
        };
        if let Ok(mut ds) =
            Dataset::open_over(store, wanted, false, nczarr_rs::format::read::LONE_ARRAY)
        {
            inquire_and_read(&mut ds);
            let _ = ds.close();
        }
    }
}

/// Inquires every group, dimension, variable, filter and attribute of `ds` as `ncdump` does, and
/// reads every variable: whole (when small), converted, strided and at its last element.
pub fn inquire_and_read(ds: &mut Dataset) {
    for g in ds.tree.groups_preorder() {
        let _ = ds.tree.group_full_name(g);
        for d in ds.dimids(g, true) {
            let _ = ds.tree.dim_fqn(d);
        }
        let _ = ds.unlimdims(g);
        read_atts(ds, Owner::Group(g));
        for v in 0..ds.tree.group(g).vars.len() {
            let _ = ds.var_info(g, v);
            for id in ds.filter_ids(g, v) {
                let _ = ds.filter_info(g, v, id);
            }
            read_atts(ds, Owner::Var(g, v));
            read_var(ds, g, v);
        }
    }
}

fn read_atts(ds: &Dataset, owner: Owner) {
    let names: Vec<String> = (0..ds.natts(owner))
        .filter_map(|i| ds.inq_attname(owner, i as i32).ok().map(str::to_string))
        .chain(
            nczarr_rs::api::attribute::VIRTUAL
                .iter()
                .map(|s| s.to_string()),
        )
        .collect();
    for name in names {
        let _ = ds.inq_att(owner, &name);
        let _ = ds.inq_attid(owner, &name);
        if let Ok((Values::Fixed { ty, .. }, _)) = ds.get_att(owner, &name, None)
            && ty.is_numeric()
        {
            let _ = ds.get_att(owner, &name, Some(NcType::Double));
            let _ = ds.get_att(owner, &name, Some(NcType::Byte));
        }
    }
}

fn read_var(ds: &mut Dataset, g: GroupId, v: usize) {
    let var = &ds.tree.group(g).vars[v];
    let ty = var.ty;
    let shape = ds.tree.var_shape(var);
    let all = Slab {
        start: vec![0; shape.len()],
        count: shape.clone(),
        stride: vec![1; shape.len()],
    };
    let elements = shape.iter().try_fold(1u64, |n, &len| n.checked_mul(len));
    if elements.is_some_and(|n| n.saturating_mul(ty.size() as u64) <= WHOLE_READ_LIMIT) {
        read(ds, g, v, &all, ty);
        if ty.is_numeric() {
            read(ds, g, v, &all, NcType::Double);
        }
    }
    if shape.iter().all(|&len| len > 0) {
        let last = Slab {
            start: shape.iter().map(|&len| len - 1).collect(),
            count: vec![1; shape.len()],
            stride: vec![1; shape.len()],
        };
        read(ds, g, v, &last, ty);
        let strided = Slab {
            start: vec![0; shape.len()],
            count: shape.iter().map(|&len| len.div_ceil(7).min(16)).collect(),
            stride: vec![7; shape.len()],
        };
        read(ds, g, v, &strided, ty);
    }
}

fn read(ds: &mut Dataset, g: GroupId, v: usize, slab: &Slab, memtype: NcType) {
    // A C caller's buffer for the request (one pointer per string).
    let size = if memtype == NcType::String {
        8
    } else {
        memtype.size()
    };
    let bytes = slab
        .count
        .iter()
        .try_fold(size, |n, &c| n.checked_mul(usize::try_from(c).ok()?));
    if bytes.is_none_or(|b| b as u64 > WHOLE_READ_LIMIT) {
        return;
    }
    if memtype == NcType::String {
        let _ = ds.get_strings(g, v, slab);
        return;
    }
    let elements: u64 = slab.count.iter().product();
    let mut out = vec![0u8; elements as usize * memtype.size()];
    let _ = ds.get_fixed(g, v, slab, None, memtype, &mut out);
}

/// Runs one session on a zip archive whose bytes are `input` (written to a file of this
/// process's own in the system's temporary directory).
pub fn run_zip(input: &[u8]) {
    let path = std::env::temp_dir().join(format!("nczarr-rs-fuzz-{}.zip", std::process::id()));
    if std::fs::write(&path, input).is_err() {
        return;
    }
    read_each_way(|| {
        ZipStore::open(&path, false)
            .ok()
            .map(|s| Box::new(s) as Box<dyn Store>)
    });
    let _ = std::fs::remove_file(&path);
}

/// Runs one writing session on the objects `input` names, stored in a directory of this
/// process's own in the system's temporary directory: the dataset is opened for writing as
/// NCZarr and as pure Zarr, given an attribute, a value at the last element of every variable,
/// a new dimension and variable and a renamed variable, synced and closed, then opened again
/// and read as [`run`] reads.
pub fn run_write(input: &[u8]) {
    let dir = std::env::temp_dir().join(format!("nczarr-rs-fuzz-{}.zarr", std::process::id()));
    for mode in ["nczarr", "zarr"] {
        let _ = std::fs::remove_dir_all(&dir);
        let Ok(store) = FileStore::create(&dir, true) else {
            return;
        };
        for (key, value) in objects(input) {
            if let Ok(key) = StoreKey::new(&key) {
                let _ = store.put(&key, value);
            }
        }
        drop(store);
        let text = format!("file://{}#mode={mode},file", dir.display());
        let Ok(url) = DatasetUrl::parse(&text) else {
            return;
        };
        if let Ok(mut ds) = Dataset::open(&url, true) {
            change(&mut ds);
            let _ = ds.close();
        }
        if let Ok(mut ds) = Dataset::open(&url, false) {
            inquire_and_read(&mut ds);
            let _ = ds.close();
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn change(ds: &mut Dataset) {
    let root = GroupId(0);
    let note = Values::fixed(NcType::Char, b"fuzzed".to_vec());
    let _ = ds.put_att(Owner::Group(root), "fuzz_note", NcType::Char, note);
    for g in ds.tree.groups_preorder() {
        for v in 0..ds.tree.group(g).vars.len() {
            let var = &ds.tree.group(g).vars[v];
            let ty = var.ty;
            let shape = ds.tree.var_shape(var);
            if shape.contains(&0) {
                continue;
            }
            let last = Slab {
                start: shape.iter().map(|&len| len - 1).collect(),
                count: vec![1; shape.len()],
                stride: vec![1; shape.len()],
            };
            if ty == NcType::String {
                let _ = ds.put_strings(g, v, &last, &[b"z".to_vec()]);
                // Longer than the stored width: widens the slots, or rewrites stored chunks.
                let first = Slab {
                    start: vec![0; shape.len()],
                    ..last.clone()
                };
                let _ = ds.put_strings(g, v, &first, &[vec![b'w'; 300]]);
            } else {
                let _ = ds.put_fixed(g, v, &last, None, ty, &vec![1u8; ty.size()]);
            }
        }
    }
    if ds.redef().is_ok() {
        if let Ok(d) = ds.def_dim(root, "fuzz_dim", 3, false) {
            let _ = ds.def_var(root, "fuzz_var", NcType::Int, &[d.0 as i32]);
        }
        if !ds.tree.group(root).vars.is_empty() {
            let _ = ds.rename_var(root, 0, "fuzz_renamed");
        }
        let _ = ds.enddef();
    }
    let _ = ds.sync();
}
