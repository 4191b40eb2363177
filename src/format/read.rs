//! Store -> model: reads the metadata of a dataset into a [`Tree`].
//!
//! Understands the current NCZarr layout (attributes in `.zattrs`), the 2.0.0 layout with the
//! NCZarr keys inside `.zgroup`/`.zarray` (either case), and pure Zarr v2 (groups found by
//! listing, dimensions from `_ARRAY_DIMENSIONS` or anonymous). Uses `.zmetadata` when present.
//! A variable whose metadata uses something we cannot serve is still listed; it carries the
//! reason in `Var::unreadable` and fails at its first data access. Never reads chunks.

use super::write::{ARRAY, ARRAY_DIMENSIONS, ATTR, GROUP, NCPROPERTIES, SUPERBLOCK};
use super::{Layout, attrs, dtype, number};
use crate::error::{Error, Result};
use crate::model::{Att, DimId, GroupId, NcType, Storage, Tree, Values, Var};
use crate::zmap::{Store, StoreKey, StorePrefix};
use serde_json::{Map, Value};
use std::cell::RefCell;
use std::collections::HashMap;

type Obj = Map<String, Value>;

/// What opening found.
#[derive(Debug)]
pub struct Opened {
    pub tree: Tree,
    /// The layout the dataset is in (`nczarr` false for pure Zarr).
    pub layout: Layout,
    /// Set when the dataset can be read but we will not write to it (older layouts).
    pub read_only_reason: Option<String>,
    /// `_NCProperties` as stored, if any.
    pub ncproperties: Option<String>,
    /// The store has a consolidated `.zmetadata`.
    pub has_zmetadata: bool,
}

/// Metadata objects, from `.zmetadata` or the store. Objects known to be needed soon are
/// fetched in one batch ([`Meta::prefetch`]), which a remote store serves concurrently.
struct Meta<'a> {
    store: &'a dyn Store,
    consolidated: Option<Obj>,
    prefetched: RefCell<HashMap<String, Option<Vec<u8>>>>,
}

fn parse_obj(key: &str, bytes: &[u8]) -> Result<Obj> {
    let v: Value = super::lenient::parse(bytes).map_err(|e| Error::metadata(key, e.to_string()))?;
    match v {
        Value::Object(m) => Ok(m),
        _ => Err(Error::metadata(key, "not a JSON object")),
    }
}

fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}/{name}")
    }
}

impl<'a> Meta<'a> {
    fn new(store: &'a dyn Store, consolidated: Option<Obj>) -> Meta<'a> {
        Meta {
            store,
            consolidated,
            prefetched: RefCell::new(HashMap::new()),
        }
    }

    /// Fetches those of `keys` not fetched yet in one batch, for the next [`Meta::get`] calls
    /// (nothing to do when the metadata is consolidated).
    fn prefetch(&self, keys: &[String]) -> Result<()> {
        if self.consolidated.is_some() {
            return Ok(());
        }
        let missing: Vec<&String> = {
            let known = self.prefetched.borrow();
            keys.iter().filter(|k| !known.contains_key(*k)).collect()
        };
        if missing.is_empty() {
            return Ok(());
        }
        let store_keys = missing
            .iter()
            .map(|k| StoreKey::new(k))
            .collect::<Result<Vec<_>>>()?;
        let values = self.store.get_many(&store_keys)?;
        self.prefetched
            .borrow_mut()
            .extend(missing.into_iter().cloned().zip(values));
        Ok(())
    }

    fn get(&self, key: &str) -> Result<Option<Obj>> {
        if let Some(c) = &self.consolidated {
            return match c.get(key) {
                Some(Value::Object(m)) => Ok(Some(m.clone())),
                Some(_) => Err(Error::metadata(key, "not a JSON object in .zmetadata")),
                None => Ok(None),
            };
        }
        self.prefetch(&[key.to_string()])?;
        let bytes = self.prefetched.borrow().get(key).cloned().flatten();
        match bytes {
            Some(b) => parse_obj(key, &b).map(Some),
            None => Ok(None),
        }
    }

    fn children(&self, path: &str) -> Result<Vec<String>> {
        if let Some(c) = &self.consolidated {
            let pre = if path.is_empty() {
                String::new()
            } else {
                format!("{path}/")
            };
            let mut names: Vec<String> = c
                .keys()
                .filter_map(|k| k.strip_prefix(&pre))
                .filter_map(|rest| rest.split_once('/').map(|(a, _)| a.to_string()))
                .collect();
            names.sort();
            names.dedup();
            return Ok(names);
        }
        self.store.list_children(&StorePrefix::new(path)?)
    }
}

fn get_alt<'a>(m: &'a Obj, names: &[&str]) -> Option<&'a Value> {
    names.iter().find_map(|n| m.get(*n))
}

fn is_reserved(name: &str) -> bool {
    name.starts_with("_nczarr_")
        || name.starts_with("_NCZARR_")
        || name == ARRAY_DIMENSIONS
        || name == NCPROPERTIES
}

fn read_atts(zattrs: &Obj, key: &str) -> Result<Vec<Att>> {
    let types = get_alt(zattrs, &[ATTR, "_NCZARR_ATTR"])
        .and_then(|t| t.get("types"))
        .and_then(Value::as_object);
    let mut out = Vec::new();
    for (name, v) in zattrs {
        if is_reserved(name) {
            continue;
        }
        let recorded = types.and_then(|t| t.get(name)).and_then(Value::as_str);
        out.push(Att {
            name: name.clone(),
            values: attrs::from_json(name, v, recorded, key)?,
        });
    }
    Ok(out)
}

fn u64_list(v: Option<&Value>, key: &str, what: &str) -> Result<Vec<u64>> {
    let arr = v
        .and_then(Value::as_array)
        .ok_or_else(|| Error::metadata(key, format!("missing {what}")))?;
    arr.iter()
        .map(|x| {
            x.as_u64()
                .ok_or_else(|| Error::metadata(key, format!("{what} holds {x}, not a length")))
        })
        .collect()
}

/// Group info of the NCZarr layouts: dims, arrays, subgroups.
struct GroupInfo {
    dims: Vec<(String, u64, bool)>,
    arrays: Vec<String>,
    groups: Vec<String>,
}

fn nczarr_group_info(zattrs: &Obj, zgroup: &Obj, key: &str) -> Result<Option<GroupInfo>> {
    let Some(info) =
        get_alt(zattrs, &[GROUP]).or_else(|| get_alt(zgroup, &[GROUP, "_NCZARR_GROUP"]))
    else {
        return Ok(None);
    };
    let bad = |why: &str| Error::metadata(key, format!("{GROUP}: {why}"));
    let mut dims = Vec::new();
    if let Some(d) = info.get("dimensions").or_else(|| info.get("dims")) {
        for (name, v) in d
            .as_object()
            .ok_or_else(|| bad("dimensions is not an object"))?
        {
            let (len, unlim) = match v {
                Value::Object(o) => (
                    o.get("size")
                        .and_then(Value::as_u64)
                        .ok_or_else(|| bad("dimension without size"))?,
                    o.get("unlimited")
                        .is_some_and(|u| u.as_u64() == Some(1) || u.as_bool() == Some(true)),
                ),
                other => (
                    other.as_u64().ok_or_else(|| bad("bad dimension size"))?,
                    false,
                ),
            };
            dims.push((name.clone(), len, unlim));
        }
    }
    let names = |k: &[&str]| -> Result<Vec<String>> {
        match k.iter().find_map(|n| info.get(*n)) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(a)) => a
                .iter()
                .map(|x| {
                    x.as_str()
                        .map(String::from)
                        .ok_or_else(|| bad("names must be strings"))
                })
                .collect(),
            Some(_) => Err(bad("names must be a list")),
        }
    };
    Ok(Some(GroupInfo {
        dims,
        arrays: names(&["arrays", "vars"])?,
        groups: names(&["groups"])?,
    }))
}

struct Reader<'a> {
    meta: Meta<'a>,
    nczarr: bool,
    tree: Tree,
    /// (group, path, array names) in the order found.
    pending_vars: Vec<(GroupId, String, Vec<String>)>,
}

impl Reader<'_> {
    fn read_group(&mut self, g: GroupId, path: &str) -> Result<()> {
        let zg_key = join(path, ".zgroup");
        let za_key = join(path, ".zattrs");
        self.meta.prefetch(&[zg_key.clone(), za_key.clone()])?;
        let zgroup = self.meta.get(&zg_key)?.unwrap_or_default();
        let zattrs = self.meta.get(&za_key)?.unwrap_or_default();
        self.tree.group_mut(g).atts = read_atts(&zattrs, &za_key)?;
        let info = if self.nczarr {
            nczarr_group_info(&zattrs, &zgroup, &za_key)?
        } else {
            None
        };
        let (arrays, groups) = match info {
            Some(info) => {
                for (name, len, unlim) in info.dims {
                    self.tree.add_dim(g, &name, len, unlim);
                }
                (info.arrays, info.groups)
            }
            None => self.classify_children(path)?,
        };
        self.pending_vars.push((g, path.to_string(), arrays));
        for name in groups {
            if name.contains('/') || name.is_empty() || name == "." || name == ".." {
                return Err(Error::metadata(za_key, format!("bad group name {name:?}")));
            }
            let child = self.tree.add_group(g, &name);
            self.read_group(child, &join(path, &name))?;
        }
        Ok(())
    }

    /// Pure Zarr: arrays and groups below `path`, by listing.
    fn classify_children(&self, path: &str) -> Result<(Vec<String>, Vec<String>)> {
        let mut arrays = Vec::new();
        let mut groups = Vec::new();
        for name in self.meta.children(path)? {
            if name.starts_with('.') {
                continue;
            }
            let p = join(path, &name);
            let kids = self.meta.children(&p)?;
            if kids.iter().any(|k| k == ".zarray") {
                arrays.push(name);
            } else if kids.iter().any(|k| k == ".zgroup" || k == ".zattrs")
                || (!kids.is_empty() && self.has_zarr_below(&p, 4)?)
            {
                groups.push(name);
            }
        }
        Ok((arrays, groups))
    }

    fn has_zarr_below(&self, path: &str, depth: u32) -> Result<bool> {
        if depth == 0 {
            return Ok(false);
        }
        for k in self.meta.children(path)? {
            if k == ".zarray" || k == ".zgroup" {
                return Ok(true);
            }
            if !k.starts_with('.') && self.has_zarr_below(&join(path, &k), depth - 1)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn find_dim_by_fqn(&self, fqn: &str) -> Option<DimId> {
        (0..self.tree.dims.len())
            .map(DimId)
            .find(|d| self.tree.dim_fqn(*d) == fqn)
    }

    fn read_var(&mut self, g: GroupId, path: &str) -> Result<Var> {
        let zk = join(path, ".zarray");
        let ak = join(path, ".zattrs");
        let zarray = self
            .meta
            .get(&zk)?
            .ok_or_else(|| Error::metadata(&zk, "missing"))?;
        let zattrs = self.meta.get(&ak)?.unwrap_or_default();
        let name = path.rsplit('/').next().unwrap_or(path).to_string();
        let shape = u64_list(zarray.get("shape"), &zk, "shape")?;
        let chunks = u64_list(zarray.get("chunks"), &zk, "chunks")?;
        if chunks.len() != shape.len() || chunks.contains(&0) {
            return Err(Error::metadata(&zk, "chunks do not match shape"));
        }
        let dt_text = zarray
            .get("dtype")
            .and_then(Value::as_str)
            .ok_or_else(|| Error::metadata(&zk, "missing dtype"))?;
        let mut unreadable = None;
        let dt = match dtype::parse(dt_text, self.nczarr) {
            Ok(d) => d,
            Err(e) => {
                unreadable = Some(e.to_string());
                dtype::Dtype {
                    ty: NcType::UByte,
                    endian: crate::model::Endian::native(),
                    width: 1,
                }
            }
        };
        let ainfo =
            get_alt(&zattrs, &[ARRAY]).or_else(|| get_alt(&zarray, &[ARRAY, "_NCZARR_ARRAY"]));
        let scalar_flag = ainfo.is_some_and(|i| {
            i.get("scalar")
                .is_some_and(|s| s.as_u64() == Some(1) || s.as_bool() == Some(true))
                || i.get("storage").and_then(Value::as_str) == Some("scalar")
        });
        let mut var = Var::new(&name, dt.ty, Vec::new());
        var.endian = dt.endian;
        var.maxstrlen = dt.width;
        var.stored_path = Some(path.to_string());
        var.unreadable = unreadable;
        var.atts = read_atts(&zattrs, &ak)?;
        var.storage = match ainfo.and_then(|i| i.get("storage")).and_then(Value::as_str) {
            Some("contiguous") => Storage::Contiguous,
            Some("compact") => Storage::Compact,
            _ => Storage::Chunked,
        };
        if let Some(sep) = zarray.get("dimension_separator").and_then(Value::as_str) {
            var.dimension_separator = match sep {
                "/" => '/',
                "." => '.',
                other => {
                    return Err(Error::metadata(
                        &zk,
                        format!("bad dimension_separator {other:?}"),
                    ));
                }
            };
        }
        match zarray.get("order").and_then(Value::as_str) {
            Some("F") => {
                var.fortran_order = true;
                if shape.len() > 1 {
                    var.unreadable
                        .get_or_insert_with(|| "Fortran-order arrays are not supported yet".into());
                }
            }
            Some("C") | None => {}
            Some(other) => return Err(Error::metadata(&zk, format!("bad order {other:?}"))),
        }
        self.read_codecs(&zarray, &mut var);
        self.read_fill(&zarray, &mut var, &zk)?;

        // Dimensions.
        let refs = ainfo
            .and_then(|i| get_alt(i.as_object()?, &["dimension_references", "dimrefs"]))
            .and_then(Value::as_array);
        if self.nczarr
            && refs.is_some_and(|r| r.is_empty())
            && (scalar_flag || shape == [1] || shape.is_empty())
        {
            var.scalar_as_1d = !shape.is_empty();
            return Ok(var);
        }
        if shape.is_empty() {
            return Ok(var);
        }
        let dims = match refs.filter(|_| self.nczarr) {
            Some(refs) => {
                let mut dims = Vec::new();
                for (i, r) in refs.iter().enumerate() {
                    let fqn = r.as_str().ok_or_else(|| {
                        Error::metadata(&ak, "dimension reference is not a string")
                    })?;
                    let len = *shape.get(i).ok_or_else(|| {
                        Error::metadata(&zk, "more dimension references than shape entries")
                    })?;
                    dims.push(match self.find_dim_by_fqn(fqn) {
                        Some(d) => d,
                        None => self.implicit_dim(fqn, len),
                    });
                }
                dims
            }
            None => self.pure_dims(g, &zattrs, &shape, &mut var),
        };
        if dims.len() != shape.len() {
            return Err(Error::metadata(&zk, "dimension count does not match shape"));
        }
        for (d, len) in dims.iter().zip(&shape) {
            let dim = &mut self.tree.dims[d.0];
            if dim.unlimited {
                dim.len = dim.len.max(*len);
            } else if dim.len != *len {
                var.unreadable.get_or_insert_with(|| {
                    format!(
                        "shape {shape:?} disagrees with dimension {} of length {}",
                        dim.name, dim.len
                    )
                });
            }
        }
        var.dims = dims;
        var.chunks = chunks;
        Ok(var)
    }

    /// A dimension reference naming no declared dimension: create it where the name says.
    fn implicit_dim(&mut self, fqn: &str, len: u64) -> DimId {
        let mut parts: Vec<&str> = fqn.split('/').filter(|s| !s.is_empty()).collect();
        let name = parts.pop().unwrap_or("_Anonymous_Dim").to_string();
        let mut g = Tree::ROOT;
        for p in parts {
            g = self.tree.child_named(g, p).unwrap_or(g);
        }
        match self
            .tree
            .group(g)
            .dims
            .iter()
            .copied()
            .find(|d| self.tree.dim(*d).name == name)
        {
            Some(d) => d,
            None => self.tree.add_dim(g, &name, len, false),
        }
    }

    fn pure_dims(&mut self, g: GroupId, zattrs: &Obj, shape: &[u64], var: &mut Var) -> Vec<DimId> {
        let names: Option<Vec<String>> = zattrs
            .get(ARRAY_DIMENSIONS)
            .and_then(Value::as_array)
            .and_then(|a| {
                a.iter()
                    .map(|x| x.as_str().map(String::from))
                    .collect::<Option<Vec<_>>>()
            });
        let mut dims = Vec::new();
        for (i, len) in shape.iter().enumerate() {
            let named = names
                .as_ref()
                .filter(|n| n.len() == shape.len())
                .map(|n| n[i].clone());
            let d = match named {
                Some(n) => match self.tree.find_dim_in_scope(g, &n) {
                    Some(d) if self.tree.dim(d).len == *len => d,
                    Some(d) if self.tree.dim(d).group == g => {
                        var.unreadable.get_or_insert_with(|| {
                            format!(
                                "dimension {n} has length {} but the array needs {len}",
                                self.tree.dim(d).len
                            )
                        });
                        self.anonymous(*len)
                    }
                    // netCDF has no fixed dimension of length 0: such a dimension can
                    // only have been unlimited.
                    _ => self.tree.add_dim(g, &n, *len, *len == 0),
                },
                None => self.anonymous(*len),
            };
            dims.push(d);
        }
        dims
    }

    fn anonymous(&mut self, len: u64) -> DimId {
        let name = format!("_Anonymous_Dim_{len}");
        match self.tree.find_dim_in_scope(Tree::ROOT, &name) {
            Some(d) => d,
            None => self.tree.add_dim(Tree::ROOT, &name, len, false),
        }
    }

    fn read_codecs(&self, zarray: &Obj, var: &mut Var) {
        let mut chain = Vec::new();
        if let Some(Value::Array(f)) = zarray.get("filters") {
            chain.extend(f.iter().cloned());
        }
        if let Some(c @ Value::Object(_)) = zarray.get("compressor") {
            chain.push(c.clone());
        }
        for c in chain {
            let codec = c.as_object().cloned().unwrap_or_default();
            let id = codec
                .get("id")
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_string();
            var.unreadable
                .get_or_insert_with(|| format!("codec {id} is not available"));
            var.filters.push(crate::model::Filter {
                id: 0,
                params: Vec::new(),
                codec,
            });
        }
    }

    fn read_fill(&self, zarray: &Obj, var: &mut Var, key: &str) -> Result<()> {
        let fv = zarray.get("fill_value").unwrap_or(&Value::Null);
        if fv.is_null() {
            var.no_fill = true;
            return Ok(());
        }
        var.stored_fill = match var.ty {
            NcType::Char | NcType::String => Some(fv.as_str().unwrap_or("").as_bytes().to_vec()),
            ty => match number::from_json(ty, fv) {
                Some(b) => Some(b),
                None if var.unreadable.is_some() => None,
                None => {
                    return Err(Error::metadata(
                        key,
                        format!("fill_value {fv} is not a {}", ty.name()),
                    ));
                }
            },
        };
        // A `_FillValue` attribute must have the variable's type (pure Zarr records no types).
        let ty = var.ty;
        let stored = var.stored_fill.clone();
        if let Some(att) = var.atts.iter_mut().find(|a| a.name == "_FillValue") {
            att.values = match (&att.values, ty) {
                (v, t) if v.ty() == t => return Ok(()),
                (
                    Values::Fixed {
                        ty: NcType::Char,
                        bytes,
                    },
                    NcType::String,
                ) => Values::Strings(vec![bytes.clone()]),
                (Values::Strings(s), NcType::Char) => {
                    Values::text(&String::from_utf8_lossy(s.first().map_or(&[][..], |x| x)))
                }
                (_, t) if t.is_numeric() => match stored {
                    Some(b) => Values::fixed(t, b),
                    None => return Ok(()),
                },
                _ => return Ok(()),
            };
        }
        Ok(())
    }
}

/// Reads the dataset's metadata. `pure` forces pure-Zarr interpretation (`mode=zarr`).
pub fn read_dataset(store: &dyn Store, pure: bool, xarray: bool) -> Result<Opened> {
    let raw = Meta::new(store, None);
    let zmetadata = store.get(&StoreKey::new(".zmetadata")?)?;
    let has_zmetadata = zmetadata.is_some();
    let consolidated = match zmetadata {
        Some(b) => parse_obj(".zmetadata", &b)?
            .remove("metadata")
            .and_then(|m| {
                if let Value::Object(o) = m {
                    Some(o)
                } else {
                    None
                }
            }),
        None => None,
    };
    let meta = Meta::new(store, consolidated);
    meta.prefetch(&[".zgroup".to_string(), ".zattrs".to_string()])?;
    let root_zgroup = meta.get(".zgroup")?;
    let root_zattrs = meta.get(".zattrs")?;
    if root_zgroup.is_none() && root_zattrs.is_none() {
        let kids = raw.children("")?;
        if kids.is_empty() {
            // An empty location (an object-store prefix with no objects) holds no dataset.
            return Err(Error::NotFound(store.describe()));
        }
        if kids.iter().any(|k| k == "zarr.json") {
            return Err(Error::NotZarr(format!(
                "{} is Zarr v3, which is not supported yet",
                store.describe()
            )));
        }
        if kids.iter().any(|k| k == ".zarray") {
            return Err(Error::NotZarr(format!(
                "{} is a single Zarr array, not a group",
                store.describe()
            )));
        }
        if kids.iter().any(|k| k == ".nczarr") {
            return Err(Error::NotZarr(format!(
                "{} uses the NCZarr 1.0 layout, not supported yet",
                store.describe()
            )));
        }
        return Err(Error::NotZarr(store.describe()));
    }
    let zgroup = root_zgroup.unwrap_or_default();
    let zattrs = root_zattrs.unwrap_or_default();
    let in_attrs = zattrs.contains_key(SUPERBLOCK);
    let in_object = zgroup.contains_key(SUPERBLOCK) || zgroup.contains_key("_NCZARR_SUPERBLOCK");
    let nczarr = !pure && (in_attrs || in_object);
    let ncproperties = zattrs
        .get(NCPROPERTIES)
        .and_then(Value::as_str)
        .map(String::from);
    let mut reader = Reader {
        meta,
        nczarr,
        tree: Tree::new(),
        pending_vars: Vec::new(),
    };
    reader.read_group(Tree::ROOT, "")?;
    for (g, path, arrays) in std::mem::take(&mut reader.pending_vars) {
        let wanted: Vec<String> = arrays
            .iter()
            .filter(|n| StoreKey::new(n).is_ok() && !n.contains('/'))
            .flat_map(|n| {
                [
                    join(&path, &join(n, ".zarray")),
                    join(&path, &join(n, ".zattrs")),
                ]
            })
            .collect();
        reader.meta.prefetch(&wanted)?;
        for name in arrays {
            if name.contains('/') || name.is_empty() || name == "." || name == ".." {
                return Err(Error::metadata(
                    join(&path, ".zattrs"),
                    format!("bad array name {name:?}"),
                ));
            }
            let var = reader.read_var(g, &join(&path, &name))?;
            reader.tree.group_mut(g).vars.push(var);
        }
    }
    Ok(Opened {
        tree: reader.tree,
        layout: Layout {
            nczarr,
            xarray,
            consolidated: false,
        },
        read_only_reason: (nczarr && !in_attrs)
            .then(|| "the dataset uses an older NCZarr layout".to_string()),
        ncproperties,
        has_zmetadata,
    })
}
