//! Store -> model: reads the metadata of a dataset into a [`Tree`].
//!
//! Understands the current NCZarr layout (attributes in `.zattrs`), the 2.0.0 layout with the
//! NCZarr keys inside `.zgroup`/`.zarray` (either case), and pure Zarr v2 (groups found by
//! listing, dimensions from `_ARRAY_DIMENSIONS` or anonymous), the V1 layout of separate
//! `.ncz*` objects ([`v1`]), whose content is folded into the 2.0.0 keys it equals, and Zarr v3
//! (`zarr.json`, [`v3`]), whose arrays are read in the terms of v2 ones. Uses `.zmetadata`, or
//! v3's inline consolidated metadata, when present.
//! A variable whose metadata uses something we cannot serve is still listed; it carries the
//! reason in `Var::unreadable` and fails at its first data access. Never reads chunks.

mod dims;
mod meta;
mod v1;
mod v3;

use super::json::{Json, Object};
use super::write::{ARRAY, ARRAY_DIMENSIONS, ATTR, CLASSIC_MODEL, GROUP, NCPROPERTIES, SUPERBLOCK};
use super::{Layout, attrs, dtype, is_anonymous_dim_name, number};
use crate::error::{Error, Result};
use crate::model::{
    Att, DimId, GroupId, NcType, Storage, StringStorage, Tree, TypeClass, Values, Var, VarRecord,
};
use crate::zmap::{Store, StoreKey};
use dims::Unplaced;
use meta::{Meta, join};
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::Arc;
use typed_arena::Arena;

type Obj<'a> = Object<'a>;

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

fn get_alt<'o, 'a>(m: &'o Obj<'a>, names: &[&str]) -> Option<&'o Json<'a>> {
    names.iter().find_map(|n| m.get(n))
}

/// Zarr v3: the `_FillValue` attribute of a char or string variable is its `fill_value` (xarray
/// opens no such array with the attribute). NCZarr records that it is, and where among the
/// variable's attributes (`recorded`); in pure Zarr (`pure`), a fill value other than the empty
/// one zarr-python gives by default is one, put last.
fn restore_fill_attribute(var: &mut Var, recorded: Option<u64>, pure: bool) {
    let Some(stored) = &var.stored_fill else {
        return;
    };
    if var.att("_FillValue").is_some() {
        return;
    }
    let position = match recorded {
        Some(p) => usize::try_from(p).unwrap_or(usize::MAX),
        None if pure && stored.iter().any(|b| *b != 0) => usize::MAX,
        None => return,
    };
    let values = match var.ty {
        NcType::Char => Values::fixed(NcType::Char, vec![stored.first().copied().unwrap_or(0)]),
        NcType::String if var.strings != StringStorage::Ucs4 => {
            Values::Strings(vec![stored.clone()])
        }
        _ => return,
    };
    let att = Att::new("_FillValue", values);
    var.atts.insert(position.min(var.atts.len()), att);
}

/// A name one level of a store path can have.
fn plain_name(name: &str) -> bool {
    !(name.is_empty() || name.contains('/') || name == "." || name == "..")
}

fn is_reserved(name: &str) -> bool {
    name.starts_with("_nczarr_")
        || name.starts_with("_NCZARR_")
        || name == ARRAY_DIMENSIONS
        || name == NCPROPERTIES
}

fn read_atts(zattrs: &Obj, key: &str) -> Result<Vec<Att>> {
    let info = get_alt(zattrs, &[ATTR, "_NCZARR_ATTR"]);
    let types = info.and_then(|t| t.get("types")).and_then(Json::as_object);
    let named = |key: &str| info.and_then(|t| t.get(key)).and_then(Json::as_object);
    let (enums, opaques) = (named("enum_types"), named("opaque_types"));
    let vlens = named("vlen_types");
    let mut out = Vec::new();
    for (name, v) in zattrs.iter() {
        if is_reserved(name) {
            continue;
        }
        let recorded = types.and_then(|t| t.get(name)).and_then(Json::as_str);
        let sequences = vlens.is_some_and(|by_name| by_name.get(name).is_some());
        let json = v.to_value();
        let values = if sequences {
            attrs::vlens_from_json(name, &json, recorded, key)?
        } else {
            attrs::from_json(name, &json, recorded, key)?
        };
        let kept = (recorded.is_none() && !sequences && attrs::to_json(&values, false).0 != json)
            .then_some(json);
        let mut att = Att::new(name, values);
        att.json = kept;
        // Each names a type of its class; which class a name is of is checked once the
        // dataset's types are listed.
        att.user_type = [enums, opaques, vlens]
            .into_iter()
            .find_map(|by_class| by_class?.get(name)?.as_str())
            .map(|full| crate::model::TypeRef::Named(full.to_string()));
        out.push(att);
    }
    Ok(out)
}

fn u64_list(v: Option<&Json>, key: &str, what: &str) -> Result<Vec<u64>> {
    let arr = v
        .and_then(Json::as_array)
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
    /// The compound types the group declares (its `types`; group ids not yet set).
    types: Vec<crate::model::DeclaredType>,
}

/// The types an NCZarr group declares: compound types (`[{"name", "size", "fields": [{"name",
/// "offset", "type", "dimensions"}]}]`), enum types (`{"name", "base", "members"}`) and opaque
/// types (`{"name", "size"}`, nothing else). A declaration of no such form is left out: the
/// variables of its type are then served under types of their own, or as their base type.
fn declared_types(info: &Json) -> Vec<crate::model::DeclaredType> {
    let Some(Json::Array(types)) = info.get("types") else {
        return Vec::new();
    };
    let size = |v: Option<&Json>| {
        v.and_then(Json::as_u64)
            .and_then(|n| usize::try_from(n).ok())
    };
    let field = |f: &Json| {
        let f = f.as_object()?;
        let dims = match f.get("dimensions") {
            None => Vec::new(),
            Some(Json::Array(d)) => d
                .iter()
                .map(|n| size(Some(n)))
                .collect::<Option<Vec<usize>>>()?,
            Some(_) => return None,
        };
        Some(crate::model::DeclaredField {
            name: f.get("name")?.as_str()?.to_string(),
            offset: size(f.get("offset"))?,
            type_name: f.get("type")?.as_str()?.to_string(),
            dims,
        })
    };
    types
        .iter()
        .filter_map(|t| {
            let t = t.as_object()?;
            let name = t.get("name")?.as_str()?.to_string();
            if let Some(members) = t.get("members") {
                let enumeration = declared_enum(t.get("base")?, members)?;
                return Some(crate::model::DeclaredType {
                    group: GroupId(0),
                    name,
                    size: enumeration.base.size(),
                    fields: Vec::new(),
                    class: TypeClass::Enum(enumeration),
                });
            }
            if let Some(base) = t.get("vlen") {
                let base = NcType::from_name(base.as_str()?).filter(|b| b.is_numeric())?;
                return Some(crate::model::DeclaredType {
                    group: GroupId(0),
                    name,
                    size: crate::model::VLEN_SIZE,
                    fields: Vec::new(),
                    class: TypeClass::Vlen(base),
                });
            }
            let Some(Json::Array(fields)) = t.get("fields") else {
                let opaque = t.iter().all(|(key, _)| key == "name" || key == "size");
                return opaque.then_some(crate::model::DeclaredType {
                    group: GroupId(0),
                    name,
                    size: size(t.get("size"))?,
                    fields: Vec::new(),
                    class: TypeClass::Opaque,
                });
            };
            Some(crate::model::DeclaredType {
                group: GroupId(0),
                name,
                size: size(t.get("size"))?,
                fields: fields.iter().map(field).collect::<Option<Vec<_>>>()?,
                class: TypeClass::Compound,
            })
        })
        .collect()
}

/// An enum type an NCZarr group declares (`"base"`: an integer type's CDL name,
/// `"members": [{"name", "value"}]`), or `None` when it breaks a rule of
/// [`crate::model::Enumeration::insert`] or is not of this form.
fn declared_enum(base: &Json, members: &Json) -> Option<crate::model::Enumeration> {
    let base = NcType::from_name(base.as_str()?)?;
    let mut enumeration = crate::model::Enumeration::new(base).ok()?;
    for m in members.as_array()? {
        let m = m.as_object()?;
        let value = m.get("value")?;
        // As netCDF gives it (a `long long`: an `uint64` past `i64`'s range negative), or as
        // the number it is.
        let value = match value.as_i64() {
            Some(v) if v < 0 && base == NcType::UInt64 => i128::from(v as u64),
            Some(v) => i128::from(v),
            None => i128::from(value.as_u64()?),
        };
        enumeration.insert(m.get("name")?.as_str()?, value).ok()?;
    }
    Some(enumeration)
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
            .iter()
        {
            let (len, unlim) = match v {
                Json::Object(o) => (
                    o.get("size")
                        .and_then(Json::as_u64)
                        .ok_or_else(|| bad("dimension without size"))?,
                    o.get("unlimited")
                        .is_some_and(|u| u.as_u64() == Some(1) || u.as_bool() == Some(true)),
                ),
                other => (
                    other.as_u64().ok_or_else(|| bad("bad dimension size"))?,
                    false,
                ),
            };
            dims.push((name.to_string(), len, unlim));
        }
    }
    let names = |k: &[&str]| -> Result<Vec<String>> {
        match k.iter().find_map(|n| info.get(n)) {
            None | Some(Json::Null) => Ok(Vec::new()),
            Some(Json::Array(a)) => a
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
        types: declared_types(info),
    }))
}

struct Reader<'a> {
    meta: Meta<'a>,
    nczarr: bool,
    /// NCZarr 1.0.0: the NCZarr metadata is in separate `.ncz*` objects.
    v1: bool,
    tree: Tree,
    /// (group, path, array names) in the order found.
    pending_vars: Vec<(GroupId, String, Vec<String>)>,
    /// Some array stores numpy datetimes (read with attributes of our making, which writing
    /// would store, and under a dtype writing would not keep).
    numpy_times: bool,
    /// Some array holds numpy complex numbers (the dataset then opens read-only).
    numpy_complex: bool,
    /// Some array holds numpy structured records that cannot be served (the dataset then
    /// opens read-only).
    unread_records: bool,
    /// Listings the search for Zarr objects below groups may still make.
    search_budget: Cell<usize>,
    /// Zarr v3: groups and arrays are `zarr.json` objects.
    v3: bool,
    /// Zarr v3: the `zarr.json` of each array found, by the array's path.
    v3_arrays: HashMap<String, Obj<'a>>,
    /// Zarr v3: keep each node's object in the model (`v3_stored`), to be written back.
    keep_stored: bool,
    /// Zarr v3, when `keep_stored`: every node the groups' consolidated metadata lists.
    consolidated_nodes: Vec<ListedNode>,
}

impl<'a> Reader<'a> {
    /// A reader of the metadata `meta` holds, of an NCZarr dataset when `nczarr` (in the V1
    /// layout when `v1`), of pure Zarr v2 otherwise.
    fn new(meta: Meta<'a>, nczarr: bool, v1: bool) -> Reader<'a> {
        Reader {
            meta,
            nczarr,
            v1,
            tree: Tree::new(),
            pending_vars: Vec::new(),
            numpy_times: false,
            numpy_complex: false,
            unread_records: false,
            search_budget: Cell::new(SEARCH_LISTINGS),
            v3: false,
            v3_arrays: HashMap::new(),
            keep_stored: false,
            consolidated_nodes: Vec::new(),
        }
    }

    /// Why the arrays read make the dataset one we do not write to, if they do.
    fn unwritable_arrays(&self) -> Option<String> {
        if self.numpy_times {
            Some("writing numpy datetime arrays is not supported yet".to_string())
        } else if self.numpy_complex {
            Some("writing numpy complex arrays is not supported yet".to_string())
        } else if self.unread_records {
            Some("an array of numpy structured records or raw bytes cannot be read".to_string())
        } else {
            None
        }
    }

    /// V1: the content of the first of `names` present under `path`, stored under the 2.0.0
    /// key `key` of `into` (so the rest of the reader sees one layout).
    fn fold_v1(&self, path: &str, names: &[&str], key: &str, into: &mut Obj<'a>) -> Result<()> {
        if !self.v1 {
            return Ok(());
        }
        for name in names {
            if let Some(obj) = self.meta.get(&join(path, name))? {
                into.insert(key, Json::Object(obj));
                break;
            }
        }
        Ok(())
    }

    fn read_group(&mut self, g: GroupId, path: &str) -> Result<()> {
        let zg_key = join(path, ".zgroup");
        let za_key = join(path, ".zattrs");
        self.meta.prefetch(&[zg_key.clone(), za_key.clone()])?;
        let mut zgroup = self.meta.get(&zg_key)?.unwrap_or_default();
        let mut zattrs = self.meta.get(&za_key)?.unwrap_or_default();
        self.fold_v1(path, v1::GROUP, "_NCZARR_GROUP", &mut zgroup)?;
        self.fold_v1(path, v1::ATTR, "_NCZARR_ATTR", &mut zattrs)?;
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
                for mut declared in info.types {
                    declared.group = g;
                    self.tree.declared_types.push(declared);
                }
                (info.arrays, info.groups)
            }
            None => self.classify_children(path)?,
        };
        self.pending_vars.push((g, path.to_string(), arrays));
        for name in groups {
            if !plain_name(&name) {
                return Err(Error::metadata(za_key, format!("bad group name {name:?}")));
            }
            let child = self.tree.add_group(g, &name);
            self.read_group(child, &join(path, &name))?;
        }
        Ok(())
    }

    /// Pure Zarr: arrays and groups below `path`, by listing `path` only. Each child's
    /// `.zarray` and `.zattrs` (which reading it needs anyway) are fetched in one batch and
    /// decide arrays; the rest are groups when they have a `.zgroup` or `.zattrs` or hold Zarr
    /// objects further down. An array's own listing (its chunks) is never read.
    fn classify_children(&self, path: &str) -> Result<(Vec<String>, Vec<String>)> {
        let names: Vec<String> = self
            .meta
            .children(path)?
            .into_iter()
            .filter(|n| !n.starts_with('.'))
            .collect();
        let object_keys = |names: &[String], objects: &[&str]| -> Vec<String> {
            names
                .iter()
                .flat_map(|n| objects.iter().map(move |o| join(&join(path, n), o)))
                .collect()
        };
        self.meta
            .prefetch(&object_keys(&names, &[".zarray", ".zattrs"]))?;
        let mut arrays = Vec::new();
        let mut others = Vec::new();
        for name in names {
            if self.meta.has(&join(&join(path, &name), ".zarray"))? {
                arrays.push(name);
            } else {
                others.push(name);
            }
        }
        self.meta.prefetch(&object_keys(&others, &[".zgroup"]))?;
        let mut groups = Vec::new();
        for name in others {
            let p = join(path, &name);
            if self.meta.has(&join(&p, ".zgroup"))?
                || self.meta.has(&join(&p, ".zattrs"))?
                || has_zarr_below(&self.meta, &p, IMPLICIT_GROUP_DEPTH, &self.search_budget)?
            {
                groups.push(name);
            }
        }
        Ok((arrays, groups))
    }

    fn find_dim_by_fqn(&self, fqn: &str) -> Option<DimId> {
        (0..self.tree.dims.len())
            .map(DimId)
            .find(|d| self.tree.dim_fqn(*d) == fqn)
    }

    /// Reads the variables [`Reader::read_group`] listed, group by group in its order, and
    /// places each group's on dimensions once all of them are read.
    fn read_pending_vars(&mut self) -> Result<()> {
        for (g, path, arrays) in std::mem::take(&mut self.pending_vars) {
            let mut read = Vec::with_capacity(arrays.len());
            for name in arrays {
                if !plain_name(&name) {
                    return Err(Error::metadata(
                        join(&path, ".zattrs"),
                        format!("bad array name {name:?}"),
                    ));
                }
                read.push(self.read_var(&join(&path, &name))?);
            }
            let given = dims::lengths_given(
                read.iter()
                    .filter_map(|(var, u)| Some((var.name.as_str(), u.as_ref()?))),
            );
            for (mut var, unplaced) in read {
                if let Some(unplaced) = unplaced {
                    self.place(g, &mut var, &unplaced, &given);
                }
                self.tree.group_mut(g).vars.push(Arc::new(var));
            }
        }
        Ok(())
    }

    /// The dataset whose root is an array, the only one: a root group holding it as variable
    /// `name`, read-only (there is no group to write netCDF's metadata to).
    fn read_lone_array(mut self, name: &str, xarray: bool, has_zmetadata: bool) -> Result<Opened> {
        let (mut var, unplaced) = self.read_var("")?;
        var.name = name.to_string();
        if let Some(unplaced) = unplaced {
            let given = dims::lengths_given(std::iter::once((name, &unplaced)));
            self.place(Tree::ROOT, &mut var, &unplaced, &given);
        }
        self.tree.group_mut(Tree::ROOT).vars.push(Arc::new(var));
        Ok(Opened {
            read_only_reason: Some(
                "the dataset is a single Zarr array, served as a dataset of that one variable"
                    .to_string(),
            ),
            tree: self.tree,
            layout: Layout {
                nczarr: false,
                xarray,
                consolidated: false,
                zarr_v3: self.v3,
            },
            ncproperties: None,
            has_zmetadata,
        })
    }

    /// The array at `path`, and the dimensions it names when it still has to be
    /// placed on them ([`Reader::place`]).
    fn read_var(&mut self, path: &str) -> Result<(Var, Option<Unplaced>)> {
        if self.v3 {
            let key = join(path, v3::ZARR_JSON);
            let obj = self
                .v3_arrays
                .remove(path)
                .ok_or_else(|| Error::metadata(&key, "missing"))?;
            let array = v3::array(&obj, &key)?;
            let names = array.dimension_names.clone();
            let (zarray, attributes) = (array.zarray, array.attributes);
            let (mut var, unplaced) = self.read_var_from(
                path,
                zarray,
                attributes,
                &key,
                &key,
                names,
                array.unreadable,
            )?;
            var.dimension_separator = array.separator;
            var.v3_chunk_keys = array.prefixed_keys;
            var.zarr_v3 = true;
            if self.keep_stored {
                var.v3_stored = Some(std::sync::Arc::new(obj.to_map()));
            }
            return Ok((var, unplaced));
        }
        let zk = join(path, ".zarray");
        let ak = join(path, ".zattrs");
        let mut zarray = self
            .meta
            .get(&zk)?
            .ok_or_else(|| Error::metadata(&zk, "missing"))?;
        let mut zattrs = self.meta.get(&ak)?.unwrap_or_default();
        self.fold_v1(path, v1::ARRAY, "_NCZARR_ARRAY", &mut zarray)?;
        self.fold_v1(path, v1::ATTR, "_NCZARR_ATTR", &mut zattrs)?;
        self.read_var_from(path, zarray, zattrs, &zk, &ak, None, None)
    }

    /// A variable from its array object `zarray` (`zk`) and attributes `zattrs` (`ak`), in
    /// the v2 terms; `dimension_names` are Zarr v3's, when it gives them, and `unreadable` why
    /// the Zarr v3 array cannot be read, when the v3 reader found that already.
    #[allow(clippy::too_many_arguments)]
    fn read_var_from(
        &mut self,
        path: &str,
        zarray: Obj<'a>,
        zattrs: Obj<'a>,
        zk: &str,
        ak: &str,
        dimension_names: Option<Vec<Option<String>>>,
        unreadable: Option<String>,
    ) -> Result<(Var, Option<Unplaced>)> {
        let (zk, ak) = (zk.to_string(), ak.to_string());
        let name = path.rsplit('/').next().unwrap_or(path).to_string();
        let shape = u64_list(zarray.get("shape"), &zk, "shape")?;
        let chunks = u64_list(zarray.get("chunks"), &zk, "chunks")?;
        if chunks.len() != shape.len() || chunks.contains(&0) {
            return Err(Error::metadata(&zk, "chunks do not match shape"));
        }
        let mut unreadable = unreadable;
        let mut record = None;
        // numpy structured records, served as values of a compound type, and numpy void (raw
        // bytes), served as values of an opaque type: the dtype a stand-in.
        let records = match zarray.get("dtype") {
            Some(Json::Array(fields)) => Some(super::structured::parse(fields)),
            Some(Json::String(text)) => {
                super::structured::void_width(text).map(|n| Ok(crate::model::Record::raw(n)))
            }
            Some(_) => None,
            None => return Err(Error::metadata(&zk, "missing dtype")),
        };
        let holds_records = records.is_some();
        let parsed = match (records, zarray.get("dtype")) {
            (Some(parsed), Some(dt)) => match parsed.and_then(VarRecord::new) {
                Ok(mut r) => {
                    let fill = zarray
                        .get("fill_value")
                        .map_or(serde_json::Value::Null, Json::to_value);
                    r.stored_dtype = Some(std::sync::Arc::new((dt.to_value(), fill)));
                    record = Some(r);
                    dtype::parse("|u1", false)
                }
                Err(e) => Err(e),
            },
            (_, Some(Json::String(text))) => dtype::parse(text, self.nczarr),
            _ => return Err(Error::metadata(&zk, "missing dtype")),
        };
        let dt = match parsed {
            Ok(d) => d,
            Err(e) => {
                unreadable.get_or_insert(match e {
                    Error::Unsupported { why, .. } => why,
                    other => other.to_string(),
                });
                dtype::Dtype {
                    ty: NcType::UByte,
                    endian: crate::model::Endian::native(),
                    width: 1,
                    strings: crate::model::StringStorage::Bytes,
                    time: None,
                    complex: false,
                    half: false,
                }
            }
        };
        let ainfo =
            get_alt(&zattrs, &[ARRAY]).or_else(|| get_alt(&zarray, &[ARRAY, "_NCZARR_ARRAY"]));
        let declared_type = ainfo
            .and_then(|i| i.get("type"))
            .and_then(Json::as_str)
            .map(String::from);
        let mut enum_type = None;
        match record.as_mut() {
            Some(r) => r.declared_type = declared_type,
            None => enum_type = declared_type.map(crate::model::TypeRef::Named),
        }
        let scalar_flag = ainfo.is_some_and(|i| {
            i.get("scalar")
                .is_some_and(|s| s.as_u64() == Some(1) || s.as_bool() == Some(true))
                || i.get("storage").and_then(Json::as_str) == Some("scalar")
        });
        let mut var = Var::new(&name, dt.ty, Vec::new());
        var.enum_type = enum_type;
        // A stored array may hold chunks: its layout (string width included) is fixed.
        var.data_written = true;
        var.endian = dt.endian;
        if dt.half {
            // Widened to native floats by the first codec.
            var.half_floats = Some(dt.endian);
            var.endian = crate::model::Endian::native();
        }
        var.maxstrlen = dt.width;
        var.strings = dt.strings;
        var.complex = dt.complex;
        var.stored_path = Some(path.to_string());
        var.unreadable = unreadable;
        // Records that cannot be served: writing would store the stand-in dtype.
        self.unread_records |= record.is_none() && holds_records;
        var.record = record;
        var.atts = read_atts(&zattrs, &ak)?;
        if let Some(time) = dt.time {
            // What the counts mean, unless the array says otherwise.
            let calendar = time.calendar().map(|c| ("calendar", c.to_string()));
            for (name, text) in [("units", time.units())].into_iter().chain(calendar) {
                if var.att(name).is_none() {
                    var.atts.push(Att::new(name, Values::text(&text)));
                }
            }
        }
        var.quantize = read_quantize(&var);
        var.storage = match ainfo.and_then(|i| i.get("storage")).and_then(Json::as_str) {
            Some("contiguous") => Storage::Contiguous,
            Some("compact") => Storage::Compact,
            _ => Storage::Chunked,
        };
        match zarray.get("dimension_separator") {
            None | Some(Json::Null) => {}
            Some(sep) => {
                var.dimension_separator = match sep.as_str() {
                    Some("/") => '/',
                    Some(".") => '.',
                    _ => {
                        return Err(Error::metadata(
                            &zk,
                            format!("bad dimension_separator {sep}"),
                        ));
                    }
                }
            }
        }
        match zarray.get("order") {
            None | Some(Json::Null) => {}
            Some(order) => match order.as_str() {
                Some("F") => var.fortran_order = true,
                Some("C") => {}
                _ => return Err(Error::metadata(&zk, format!("bad order {order}"))),
            },
        }
        if var.complex && var.fortran_order {
            var.unreadable
                .get_or_insert_with(|| "complex numbers in Fortran order are not read".to_string());
        }
        self.read_codecs(&zarray, &mut var);
        read_vlen(&mut var);
        type_vlen_fill(&mut var, &zattrs, &ak);
        check_object_codec(&mut var);
        // Raw bytes move as they are, in shards too.
        if var.record.as_ref().is_some_and(|r| !r.plan.is_identity())
            && var
                .filters
                .first()
                .is_some_and(|f| f.codec_id() == crate::codec::SHARDING)
        {
            var.unreadable
                .get_or_insert_with(|| "structured records in shards are not read".to_string());
        }
        self.read_fill(&zarray, &mut var, &zk, dt.time.is_some())?;
        if ainfo.and_then(|i| i.get("nofill")).and_then(Json::as_u64) == Some(1) {
            var.no_fill = true;
        }
        if let Some(base) = var.vlen.as_ref().map(|v| v.base)
            && let Some(fill) = ainfo.and_then(|i| i.get("fill"))
        {
            // A variable of sequences whose `_FillValue` was deleted keeps its fill.
            let one = serde_json::Value::Array(vec![fill.to_value()]);
            let dtype = dtype::format(base, crate::model::Endian::Little, 1, true);
            if let Ok(Values::Vlens { mut items, .. }) =
                attrs::vlens_from_json("fill", &one, Some(&dtype), &ak)
            {
                var.stored_fill = items.pop();
            }
        }
        let recorded = ainfo
            .and_then(|i| i.get("fill_attribute"))
            .and_then(Json::as_u64);
        if self.v3 {
            restore_fill_attribute(&mut var, recorded, !self.nczarr);
        }
        // Raw bytes of pure Zarr: a fill other than netCDF's (zeros) is the `_FillValue`, as
        // for atomic types (xarray reads it so), listed last.
        let pure_raw_fill = !self.nczarr
            && var.record.as_ref().is_some_and(|r| r.record.is_raw())
            && var
                .stored_fill
                .as_ref()
                .is_some_and(|f| f.iter().any(|b| *b != 0));
        if var.record.is_some()
            && let Some(at) = recorded.or(pure_raw_fill.then_some(u64::MAX))
        {
            // A compound variable's fill given as its `_FillValue`, listed where it was.
            let at = usize::try_from(at)
                .unwrap_or(usize::MAX)
                .min(var.atts.len());
            var.atts.insert(at, crate::model::Att::compound_fill());
        }
        if var.strings == StringStorage::Objects {
            // Slots hold the fill value whole from the start.
            let fill = match var.att("_FillValue").map(|a| &a.values) {
                Some(Values::Strings(s) | Values::Vlens { items: s, .. }) => {
                    s.iter().map(Vec::len).max()
                }
                _ => None,
            };
            let stored = var.stored_fill.as_ref().map(Vec::len);
            var.maxstrlen = var
                .maxstrlen
                .max(fill.unwrap_or(0))
                .max(stored.unwrap_or(0));
        }
        self.numpy_times |= dt.time.is_some();
        self.numpy_complex |= dt.complex;

        // Dimensions: placed once the group's arrays are all read.
        let refs = ainfo
            .and_then(|i| get_alt(i.as_object()?, &["dimension_references", "dimrefs"]))
            .and_then(Json::as_array);
        if self.nczarr
            && refs.is_some_and(|r| r.is_empty())
            && (scalar_flag || shape == [1] || shape.is_empty())
        {
            var.scalar_as_1d = !shape.is_empty();
            if var.complex {
                // Its one element's parts: the shape [1] of an NCZarr scalar is not stored.
                var.scalar_as_1d = false;
                var.unreadable
                    .get_or_insert_with(|| "a complex NCZarr scalar is not read".to_string());
            }
            return Ok((var, None));
        }
        let references = match refs.filter(|_| self.nczarr && !shape.is_empty()) {
            Some(refs) => {
                let references = refs
                    .iter()
                    .map(|r| {
                        r.as_str().map(str::to_string).ok_or_else(|| {
                            Error::metadata(&ak, "dimension reference is not a string")
                        })
                    })
                    .collect::<Result<Vec<String>>>()?;
                if references.len() > shape.len() {
                    return Err(Error::metadata(
                        &zk,
                        "more dimension references than shape entries",
                    ));
                }
                if references.len() != shape.len() {
                    return Err(Error::metadata(&zk, "dimension count does not match shape"));
                }
                Some(references)
            }
            None => None,
        };
        // The stored names: what pure Zarr places by, and what an NCZarr array on an anonymous
        // dimension may have kept of a name it clashed on (looked for only then).
        let anonymous = |r: &String| r.rsplit('/').next().is_some_and(is_anonymous_dim_name);
        let names = match &references {
            Some(refs) if !refs.iter().any(anonymous) => None,
            _ => dimension_names
                .or_else(|| array_dimensions(&zattrs))
                .filter(|n| n.len() == shape.len()),
        };
        var.chunks = chunks;
        Ok((
            var,
            Some(Unplaced {
                shape,
                references,
                names,
            }),
        ))
    }

    fn read_codecs(&self, zarray: &Obj, var: &mut Var) {
        let mut chain = Vec::new();
        match zarray.get("filters") {
            None | Some(Json::Null) => {}
            Some(Json::Array(f)) => {
                chain.extend(f.iter().map(|c| c.as_object().map(Object::to_map)));
            }
            Some(_) => {
                var.unreadable
                    .get_or_insert_with(|| "its filters are not a list of codecs".into());
            }
        }
        match zarray.get("compressor") {
            None | Some(Json::Null) => {}
            Some(Json::Object(c)) => chain.push(Some(c.to_map())),
            Some(_) => {
                var.unreadable
                    .get_or_insert_with(|| "its compressor is not a codec".into());
            }
        }
        let ctx = crate::codec::Context {
            elem_size: var.stored_esize(),
        };
        for c in chain {
            let codec = c.unwrap_or_default();
            // An unknown codec or unusable configuration fails only this variable's data
            // access; the data path reports the codec by name.
            let (filter, error) = crate::model::Filter::of_codec(codec, ctx);
            if let Some(e) = error {
                var.unreadable.get_or_insert_with(|| e.to_string());
            }
            var.filters.push(filter);
        }
    }

    /// Gives the `_FillValue` attribute the variable's type; in Zarr v3, after undoing the
    /// encoding xarray gives it there.
    fn type_fill_attribute(&self, var: &mut Var) {
        if self.v3 {
            v3::decode_xarray_fill(var);
        }
        type_fill_attribute(var, !self.v3);
    }

    /// The variable's stored fill value, and its `_FillValue` in pure Zarr. `time`: the array
    /// holds numpy datetimes, whose only fill value that means missing is NaT (zarr-python 2's
    /// default of 0 is the epoch, a time like any other, as xarray reads it).
    fn read_fill(&self, zarray: &Obj, var: &mut Var, key: &str, time: bool) -> Result<()> {
        if var.vlen.is_some() {
            // numcodecs' arrays of numbers have no fill of their own (zarr-python writes
            // null, or 0 by default): a sequence's fill is its `_FillValue`, else the empty
            // sequence; NCZarr records `NC_NOFILL` beside it.
            return Ok(());
        }
        if let Some(record) = &var.record {
            // No attribute holds a compound value: the stored fill is the fill (zeros, and
            // `NC_NOFILL`, when there is none).
            var.atts.retain(|a| a.name != "_FillValue");
            var.no_fill = matches!(zarray.get("fill_value"), None | Some(Json::Null));
            match record_fill(record, zarray.get("fill_value")) {
                Ok(fill) => var.stored_fill = Some(fill),
                Err(why) => {
                    var.unreadable.get_or_insert(format!("{key}: {why}"));
                }
            }
            return Ok(());
        }
        let fv = match zarray.get("fill_value") {
            None | Some(Json::Null) => {
                var.no_fill = true;
                self.type_fill_attribute(var);
                return Ok(());
            }
            Some(fv) => fv,
        };
        // A complex fill value is its two parts: one fill serves both when they are the same.
        let fv = match fv {
            Json::Array(parts) if var.complex => match parts.as_slice() {
                [re, im] if re == im => re,
                _ => {
                    var.unreadable.get_or_insert_with(|| {
                        format!("complex fill value {fv} has parts that differ")
                    });
                    return Ok(());
                }
            },
            other => other,
        };
        var.stored_fill = match var.ty {
            NcType::Char | NcType::String => {
                let text = fv.as_str().unwrap_or("");
                Some(if var.strings == StringStorage::Ucs4 {
                    super::ucs4::encode(text, var.endian)
                } else if (self.nczarr && !self.v3) || var.strings == StringStorage::Objects {
                    // zarr-python stores an object array's fill value as the text itself.
                    text.as_bytes().to_vec()
                } else {
                    // zarr-python stores byte-string fill values in base64; writers that
                    // stored the text itself are still read as they meant it.
                    super::base64::decode(text).unwrap_or_else(|| text.as_bytes().to_vec())
                })
            }
            // netcdf-c writes netCDF's default double fill to six digits (`9.96921e+36`); it
            // reads it, as we do, as that default.
            NcType::Double if fv.to_value().as_f64() == Some(DEFAULT_DOUBLE_FILL_TO_SIX_DIGITS) => {
                Some(NcType::Double.default_fill())
            }
            ty => match number::from_json(ty, &fv.to_value()) {
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
        // 16-bit floats: the fill as they store it (`0.1` is 0.099975586 in the chunks).
        if var.half_floats.is_some()
            && let Some(fill) = var.stored_fill.as_mut()
            && let Ok(bytes) = <[u8; 4]>::try_from(fill.as_slice())
        {
            let rounded = half::f16::from_f32(f32::from_ne_bytes(bytes)).to_f32();
            *fill = rounded.to_ne_bytes().to_vec();
        }
        // Pure Zarr v2: a fill value other than netCDF's default is the variable's `_FillValue`
        // (as netcdf-c and xarray read it), unless an attribute says so already. Not for the
        // parts of complex numbers: a part equal to the fill is no missing number. Not in Zarr
        // v3, whose every array has a fill value (zarr-python's default is 0): xarray masks
        // only what a `_FillValue` attribute names there, and NaT.
        if !self.nczarr
            && var.ty.is_numeric()
            && !var.complex
            && var.att("_FillValue").is_none()
            && let Some(b) = var.stored_fill.clone()
            && b != var.ty.default_fill()
            && (!time || b == i64::MIN.to_ne_bytes())
            && (!self.v3 || time)
        {
            var.atts
                .push(Att::new("_FillValue", Values::fixed(var.ty, b)));
        }
        // So is a string fill value other than netCDF's default (`""`), as xarray reads it.
        if !self.nczarr
            && !self.v3
            && var.ty == NcType::String
            && var.att("_FillValue").is_none()
            && let Some(stored) = &var.stored_fill
        {
            let text = match var.strings {
                StringStorage::Ucs4 => super::ucs4::decode(stored, var.endian),
                _ => stored.clone(),
            };
            if !text.is_empty() {
                var.atts
                    .push(Att::new("_FillValue", Values::Strings(vec![text])));
            }
        }
        self.type_fill_attribute(var);
        Ok(())
    }
}

/// A numpy object array (`|O`) whose first codec is numcodecs' `vlen-array` of numbers holds
/// values of a variable-length type of them: of the type its metadata declared (which the
/// reader took for an enum type's), else of one named after it.
fn read_vlen(var: &mut Var) {
    let Some(first) = var.filters.first() else {
        return;
    };
    if var.strings != StringStorage::Objects || first.codec_id() != crate::codec::VLEN_ARRAY {
        return;
    }
    let base = first
        .codec
        .get("dtype")
        .and_then(serde_json::Value::as_str)
        .and_then(|d| dtype::parse(d, false).ok())
        .filter(|d| d.ty.is_numeric() && d.time.is_none() && !d.complex && !d.half)
        .map(|d| d.ty);
    match base {
        Some(base) => {
            var.vlen = Some(crate::model::VarVlen {
                base,
                type_ref: var.enum_type.take(),
            });
            var.endian = crate::model::Endian::native();
        }
        None => {
            var.unreadable.get_or_insert_with(|| {
                "arrays of numbers (vlen-array) of another dtype than numbers".to_string()
            });
        }
    }
}

/// Gives the `_FillValue` of a variable of sequences its type where nothing recorded it (pure
/// Zarr records no types, so `[[-1]]` was read as its JSON text): one sequence of the base's
/// numbers, as NCZarr records it. Left as it was when it is none.
fn type_vlen_fill(var: &mut Var, zattrs: &Obj, key: &str) {
    let Some(base) = var.vlen.as_ref().map(|v| v.base) else {
        return;
    };
    let Some(att) = var.atts.iter_mut().find(|a| a.name == "_FillValue") else {
        return;
    };
    if matches!(att.values, Values::Vlens { .. }) {
        return;
    }
    let dtype = dtype::format(base, crate::model::Endian::Little, 1, true);
    if let Some(json) = zattrs.get("_FillValue")
        && let Ok(values) =
            attrs::vlens_from_json("_FillValue", &json.to_value(), Some(&dtype), key)
    {
        att.values = values;
    }
}

/// Marks a numpy object array (`|O`) unreadable unless its first codec turns objects into
/// bytes and back as strings (`vlen-utf8`, `vlen-bytes`) or arrays of numbers (`vlen-array`,
/// [`read_vlen`]), and any other array unreadable when such a codec is in its chain: those
/// codecs serve only objects.
fn check_object_codec(var: &mut Var) {
    let ids: Vec<&str> = var.filters.iter().map(|f| f.codec_id()).collect();
    let objects = var.strings == StringStorage::Objects;
    let served = |first: &str| {
        crate::codec::is_object_codec(first)
            && (first != crate::codec::VLEN_ARRAY || var.vlen.is_some())
    };
    let why = match ids.split_first() {
        Some((first, rest)) if objects && served(first) => {
            match rest.iter().find(|id| crate::codec::is_object_codec(id)) {
                Some(id) => format!("{id} after the first codec"),
                None => return,
            }
        }
        Some((first, _)) if objects => {
            format!(
                "objects stored by codec {first}: only strings (vlen-utf8, vlen-bytes) and arrays of numbers (vlen-array) are read"
            )
        }
        None if objects => "objects stored without an object codec".to_string(),
        _ => match ids.iter().find(|id| crate::codec::is_object_codec(id)) {
            Some(id) => format!("codec {id} on an array that does not hold objects"),
            None => return,
        },
    };
    var.unreadable.get_or_insert(why);
}

/// xarray's dimension names of an array (`_ARRAY_DIMENSIONS`), when every one is a name.
fn array_dimensions(zattrs: &Obj) -> Option<Vec<Option<String>>> {
    zattrs
        .get(ARRAY_DIMENSIONS)
        .and_then(Json::as_array)
        .and_then(|a| {
            a.iter()
                .map(|x| {
                    x.as_str()
                        .map(|s| Some(super::non_finite::text(s).into_owned()))
                })
                .collect()
        })
}

/// netCDF's default fill for doubles as netcdf-c writes it into `.zarray` (six digits).
const DEFAULT_DOUBLE_FILL_TO_SIX_DIGITS: f64 = 9.96921e36;

/// Gives a `_FillValue` attribute the variable's type, as netCDF requires (pure Zarr records no
/// types, so `-9999` of a float variable is read as an int, and `"NaN"` as text): from the
/// stored fill value when there is one and `stored_first` (Zarr v2, where the two are one
/// value), else converted (left as it is when it does not fit).
fn type_fill_attribute(var: &mut Var, stored_first: bool) {
    let ty = var.ty;
    let stored = var.stored_fill.clone();
    let Some(att) = var.atts.iter_mut().find(|a| a.name == "_FillValue") else {
        return;
    };
    att.values = match (&att.values, ty) {
        (v, t) if v.ty() == t => return,
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
        (_, t) if t.is_numeric() => match stored.filter(|_| stored_first) {
            Some(b) => Values::fixed(t, b),
            None => match converted(&att.values, t) {
                Some(v) => v,
                None => return,
            },
        },
        _ => return,
    };
}

/// `values` as numeric type `to`, when every value is a number `to` holds: numbers, or one
/// text naming one (`"NaN"`, which netcdf-c writes for a NaN fill, or `"-1.5"`).
fn converted(values: &Values, to: NcType) -> Option<Values> {
    let text = match values {
        Values::Fixed {
            ty: NcType::Char,
            bytes,
        } => Some(
            String::from_utf8_lossy(bytes)
                .trim_end_matches('\0')
                .to_string(),
        ),
        Values::Strings(s) if s.len() == 1 => Some(String::from_utf8_lossy(&s[0]).into_owned()),
        _ => None,
    };
    let json: Vec<serde_json::Value> = match (text, values) {
        (Some(text), _) => vec![serde_json::Value::String(text)],
        (None, Values::Fixed { ty, bytes }) if ty.is_numeric() => bytes
            .chunks_exact(ty.size())
            .map(|one| number::to_json(*ty, one))
            .collect(),
        _ => return None,
    };
    let mut out = Vec::with_capacity(json.len() * to.size());
    for one in &json {
        let bytes = number::from_json(to, one)?;
        // A finite double beyond a float's range does not fit (it would become infinite).
        let overflows = to == NcType::Float
            && one
                .as_f64()
                .or_else(|| one.as_str()?.parse().ok())
                .is_some_and(f64::is_finite)
            && bytes
                .as_slice()
                .try_into()
                .is_ok_and(|b| f32::from_ne_bytes(b).is_infinite());
        if overflows {
            return None;
        }
        out.extend(bytes);
    }
    Some(Values::fixed(to, out))
}

/// How far below a directory without objects of its own Zarr objects are looked for, to take
/// it for a group (an implicit group, as Zarr v3 has; netcdf-c reads a root without a
/// `.zgroup` too).
const IMPLICIT_GROUP_DEPTH: u32 = 4;

/// Listings one open may make looking for Zarr objects below directories without objects of
/// their own: each is a request on a remote store, and a location that is no dataset may hold
/// any number of other objects.
const SEARCH_LISTINGS: usize = 256;

/// Children whose unlisted objects the search asks for at once.
const SEARCH_WINDOW: usize = 8;

/// True when an array or group object lies within `depth` levels below `path`, found within
/// the listings `budget` still allows.
fn has_zarr_below(meta: &Meta, path: &str, depth: u32, budget: &Cell<usize>) -> Result<bool> {
    if depth == 0 || budget.get() == 0 {
        return Ok(false);
    }
    budget.set(budget.get() - 1);
    if meta.unlisted_zarr_object(path)? {
        return Ok(true);
    }
    let kids = meta.children(path)?;
    if kids.iter().any(|k| k == ".zarray" || k == ".zgroup") {
        return Ok(true);
    }
    let below: Vec<String> = kids
        .iter()
        .filter(|k| !k.starts_with('.'))
        .map(|k| join(path, k))
        .collect();
    // A few children at a time, each window's objects in one batch, so that a search that
    // ends at a first child fetches little ahead of it.
    for window in below.chunks(SEARCH_WINDOW) {
        if depth > 1 && budget.get() > 0 {
            meta.look_for_unlisted(&window[..window.len().min(budget.get())])?;
        }
        for p in window {
            if has_zarr_below(meta, p, depth - 1, budget)? {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// A node consolidated metadata lists: its path, and whether it is an array.
type ListedNode = (String, bool);

/// The node of a `.zmetadata` key naming an array or group object (`a/b/.zarray`: `a/b`).
fn v2_node(key: &str) -> Option<ListedNode> {
    [(".zarray", true), (".zgroup", false)]
        .iter()
        .find_map(|(o, array)| Some((key.strip_suffix(o)?, *array)))
        .map(|(node, array)| (node.trim_end_matches('/').to_string(), array))
}

/// Opened for writing, a dataset is read from its objects; when `consolidated` metadata lists
/// nodes (`listed`, by path) the objects do not hold, or reading the objects failed (`read`),
/// writing it back would lose what only it describes: why, if so. Without consolidated
/// metadata, a failed read is the error it is.
fn consolidation_mismatch(
    read: Result<()>,
    consolidated: bool,
    listed: &[ListedNode],
    tree: &Tree,
) -> Result<Option<String>> {
    match read {
        Err(e) if consolidated => Ok(Some(e.to_string())),
        Err(e) => Err(e),
        Ok(()) => {
            let mut nodes = std::collections::HashSet::new();
            for g in tree.groups_preorder() {
                let path = tree.group_path(g);
                for var in &tree.group(g).vars {
                    nodes.insert((join(&path, &var.name), true));
                }
                nodes.insert((path, false));
            }
            let missing = listed.iter().find(|node| !nodes.contains(*node));
            Ok(missing.map(|(node, _)| {
                if node.split('/').any(|part| part.starts_with('.')) {
                    format!("it lists {node}, which netCDF cannot name")
                } else {
                    format!("it lists {node}, which its objects do not hold")
                }
            }))
        }
    }
}

/// A dataset read through its consolidated metadata, read-only for `why` it does not match
/// its objects.
fn read_only_as_consolidated(opened: Opened, why: &str) -> Result<Opened> {
    Ok(Opened {
        read_only_reason: Some(format!(
            "its consolidated metadata does not match its objects ({why}); consolidating it \
             again puts that right"
        )),
        ..opened
    })
}

/// Whether an NCZarr superblock says the netCDF-4 classic model is in force (a key of ours,
/// which netcdf-c ignores).
pub(super) fn classic_model_in(superblock: Option<&Json>) -> bool {
    superblock
        .and_then(|s| s.get(CLASSIC_MODEL))
        .and_then(Json::as_bool)
        .unwrap_or(false)
}

/// The name [`read_dataset`] gives the variable of a dataset that is a single array.
pub const LONE_ARRAY: &str = "data";

/// Reads the dataset's metadata to be read only. `pure` forces pure-Zarr interpretation
/// (`mode=zarr`).
pub fn read_dataset(store: &dyn Store, pure: bool, xarray: bool) -> Result<Opened> {
    read_dataset_as(store, pure, xarray, false, LONE_ARRAY)
}

/// Reads the dataset's metadata; `writable`: to be written to, when the objects themselves
/// are read rather than their consolidated copies (which another writer may have left stale:
/// an object written back must be the store's, changed only as the model changes it).
pub fn read_dataset_as(
    store: &dyn Store,
    pure: bool,
    xarray: bool,
    writable: bool,
    lone_array: &str,
) -> Result<Opened> {
    let fetched = Arena::new();
    let raw = Meta::new(store, None, &fetched);
    let zmetadata = raw.keep(store.get(&StoreKey::new(".zmetadata")?)?);
    let has_zmetadata = zmetadata.is_some();
    let consolidated = match zmetadata.map(|b| raw.parse(".zmetadata", b)) {
        // fsspec's Parquet reference sets keep their metadata so; their chunks are elsewhere.
        Some(Ok(z))
            if z.contains_key("record_size") && !z.contains_key("zarr_consolidated_format") =>
        {
            return Err(Error::NotZarr(format!(
                "{}: a Parquet reference set (its .zmetadata has a record_size): open it with \
                 mode reference (#mode=zarr,reference)",
                store.describe()
            )));
        }
        Some(Ok(mut z)) => match z.remove("metadata") {
            Some(Json::Object(o)) => Some(o),
            _ => None,
        },
        // Rewritten at the first change when the dataset is written to.
        Some(Err(_)) if writable => None,
        Some(Err(e)) => return Err(e),
        None => None,
    };
    // Opened for writing, the objects are read, and checked against what `.zmetadata` lists.
    let listed: Vec<ListedNode> = consolidated
        .iter()
        .filter(|_| writable)
        .flat_map(|c| c.iter().filter_map(|(key, _)| v2_node(key)))
        .collect();
    let consolidated = consolidated.filter(|_| !writable);
    let meta = Meta::new(store, consolidated, &fetched);
    // Without consolidated metadata, a Zarr v3 root is looked for in the same round.
    let mut first = vec![".zgroup".to_string(), ".zattrs".to_string()];
    if !has_zmetadata {
        first.push(v3::ZARR_JSON.to_string());
    }
    meta.prefetch(&first)?;
    let root_zgroup = meta.get(".zgroup")?;
    let root_zattrs = meta.get(".zattrs")?;
    if root_zgroup.is_none()
        && root_zattrs.is_none()
        && !has_zmetadata
        && let Some(root) = meta.get(v3::ZARR_JSON)?
    {
        return v3::read_dataset(store, &fetched, root, pure, xarray, writable, lone_array);
    }
    // A root without a group object may be an array (what `zarr.save` of one array writes).
    if root_zgroup.is_none() && meta.has(".zarray")? {
        meta.put_back(".zattrs", &root_zattrs);
        let reader = Reader::new(meta, false, false);
        return reader.read_lone_array(lone_array, xarray, has_zmetadata);
    }
    // The root group is read again below.
    meta.put_back(".zgroup", &root_zgroup);
    meta.put_back(".zattrs", &root_zattrs);
    // Only netcdf-c 4.8 wrote the V1 superblock object: not looked for when the root says
    // otherwise (today's and 4.9's keys, consolidated metadata) or pure Zarr was asked for.
    let has_key = |o: &Option<Obj>, keys: &[&str]| {
        o.as_ref()
            .is_some_and(|m| keys.iter().any(|k| m.contains_key(k)))
    };
    let newer = has_zmetadata
        || has_key(&root_zattrs, &[SUPERBLOCK])
        || has_key(&root_zgroup, &[SUPERBLOCK, "_NCZARR_SUPERBLOCK"]);
    let v1_superblock = if pure || newer {
        None
    } else {
        raw.get(v1::SUPERBLOCK)?
    };
    let implicit_root = root_zgroup.is_none() && root_zattrs.is_none() && v1_superblock.is_none();
    if implicit_root {
        // The store's own listing: through `meta` where it reads the store (so that the search
        // below lists nothing twice), else around the consolidated metadata.
        let direct = if meta.is_consolidated() { &raw } else { &meta };
        let kids = match direct.children("") {
            Err(Error::NoListing { store, .. }) => {
                return Err(Error::NotFound(format!(
                    "{store}: no Zarr or NCZarr metadata at its top, and the server cannot list"
                )));
            }
            listed => listed?,
        };
        if kids.is_empty() {
            // An empty location (an object-store prefix with no objects) holds no dataset.
            return Err(Error::NotFound(store.describe()));
        }
        // Without `.zmetadata`, the first round looked for a Zarr v3 root already.
        if has_zmetadata
            && kids.iter().any(|k| k == v3::ZARR_JSON)
            && let Some(root) = raw.get(v3::ZARR_JSON)?
        {
            return v3::read_dataset(store, &fetched, root, pure, xarray, writable, lone_array);
        }
        // A root without objects of its own is a group when Zarr objects lie below it (some
        // writers leave out the root's `.zgroup`).
        let budget = Cell::new(SEARCH_LISTINGS);
        if !has_zarr_below(&meta, "", IMPLICIT_GROUP_DEPTH + 1, &budget)? {
            return Err(Error::NotZarr(store.describe()));
        }
    }
    let zgroup = root_zgroup.unwrap_or_default();
    let zattrs = root_zattrs.unwrap_or_default();
    let in_attrs = zattrs.contains_key(SUPERBLOCK);
    let in_object = zgroup.contains_key(SUPERBLOCK) || zgroup.contains_key("_NCZARR_SUPERBLOCK");
    let v1 = !pure && v1_superblock.is_some();
    let nczarr = !pure && (in_attrs || in_object || v1);
    let ncproperties = zattrs
        .get(NCPROPERTIES)
        .and_then(Json::as_str)
        .map(String::from);
    let mut reader = Reader::new(meta, nczarr, v1);
    let read = (|| {
        reader.read_group(Tree::ROOT, "")?;
        let ahead: Vec<String> = reader
            .pending_vars
            .iter()
            .flat_map(|(_, path, arrays)| {
                arrays.iter().flat_map(move |name| {
                    let p = join(path, name);
                    [join(&p, ".zarray"), join(&p, ".zattrs")]
                })
            })
            .collect();
        // The variables' objects stream in while the ones that have arrived are parsed.
        std::thread::scope(|scope| {
            reader.meta.stream(scope, &ahead)?;
            let read = reader.read_pending_vars();
            reader.meta.end_stream();
            read
        })
    })();
    if let Some(why) =
        consolidation_mismatch(read, has_zmetadata && writable, &listed, &reader.tree)?
    {
        return read_only_as_consolidated(
            read_dataset_as(store, pure, xarray, false, lone_array)?,
            &why,
        );
    }
    let read_only_reason = if nczarr && !in_attrs {
        Some("the dataset uses an older NCZarr layout".to_string())
    } else if let Some(why) = reader.unwritable_arrays() {
        Some(why)
    } else if implicit_root {
        // Its arrays may carry NCZarr metadata that a pure-Zarr root would contradict.
        Some("the dataset has no root group object (.zgroup)".to_string())
    } else {
        None
    };
    let superblock = zattrs.get(SUPERBLOCK).or_else(|| zgroup.get(SUPERBLOCK));
    reader.tree.classic_model = nczarr && classic_model_in(superblock);
    Ok(Opened {
        tree: reader.tree,
        layout: Layout {
            nczarr,
            xarray,
            consolidated: false,
            zarr_v3: false,
        },
        read_only_reason,
        ncproperties,
        has_zmetadata,
    })
}

/// The fill value of records, as compound values: what zarr-python stores (the record's bytes
/// in base64, or 0 for a record of zeros), zeros for none.
fn record_fill(record: &VarRecord, fill: Option<&Json>) -> std::result::Result<Vec<u8>, String> {
    let stored = match fill {
        None | Some(Json::Null) => return Ok(vec![0; record.plan.memory_size]),
        Some(Json::Number(_)) if fill.and_then(Json::as_u64) == Some(0) => {
            vec![0; record.plan.stored_size]
        }
        Some(Json::String(text)) => super::base64::decode(text)
            .ok_or_else(|| format!("fill_value {text:?} of records is not base64"))?,
        Some(Json::Object(fields)) => {
            return super::structured::fill_of_fields(&record.record, fields)
                .map_err(|e| e.to_string());
        }
        // Raw bits as the Zarr v3 specification gives their fill: one number per byte.
        Some(Json::Array(items)) if record.record.is_raw() => items
            .iter()
            .map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok()))
            .collect::<Option<Vec<u8>>>()
            .ok_or_else(|| format!("fill_value {items:?} of raw bytes is not bytes"))?,
        Some(other) => return Err(format!("fill_value {other:?} is no record")),
    };
    if stored.len() != record.plan.stored_size {
        return Err(format!(
            "fill_value of {} bytes for records of {}",
            stored.len(),
            record.plan.stored_size
        ));
    }
    record.memory_form(&stored).map_err(|e| e.to_string())
}

/// The quantize mode and precision recorded by the attribute netCDF writes with it.
fn read_quantize(var: &Var) -> (i32, i32) {
    use crate::model::tree::{QUANTIZE_BITGROOM, QUANTIZE_BITROUND, QUANTIZE_GRANULARBR};
    for mode in [QUANTIZE_BITGROOM, QUANTIZE_GRANULARBR, QUANTIZE_BITROUND] {
        let Some(name) = crate::model::tree::quantize_attribute(mode) else {
            continue;
        };
        if let Some(crate::model::Values::Fixed { ty, bytes }) = var.att(name).map(|a| &a.values)
            && ty.is_integer()
            && bytes.len() >= ty.size()
        {
            let n = number::to_json(*ty, &bytes[..ty.size()])
                .as_i64()
                .unwrap_or(0);
            return (mode, i32::try_from(n).unwrap_or(0));
        }
    }
    (0, 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zmap::memory::MemoryStore;

    const ARRAY: &str = r#"{"zarr_format": 2, "shape": [3], "chunks": [3], "dtype": "<i4",
        "compressor": null, "filters": null, "fill_value": 0, "order": "C"}"#;

    #[test]
    fn fill_attributes_convert_only_values_the_type_holds() {
        let int = Values::fixed(NcType::Int, (-9999i32).to_ne_bytes().to_vec());
        let float = converted(&int, NcType::Float).unwrap();
        assert_eq!(
            float,
            Values::fixed(NcType::Float, (-9999f32).to_ne_bytes().to_vec())
        );
        let nan = converted(&Values::text("NaN"), NcType::Double).unwrap();
        let Values::Fixed { bytes, .. } = nan else {
            panic!("{nan:?}")
        };
        assert!(f64::from_ne_bytes(bytes.try_into().unwrap()).is_nan());
        let huge = Values::fixed(NcType::Double, 1e40f64.to_ne_bytes().to_vec());
        assert_eq!(converted(&huge, NcType::Float), None);
        assert_eq!(converted(&Values::text("1e40"), NcType::Float), None);
        assert_eq!(converted(&Values::text("1.5"), NcType::Int), None);
    }

    fn store_with(objects: &[(&str, &str)]) -> MemoryStore {
        let store = MemoryStore::new();
        for (key, value) in objects {
            store
                .put(&StoreKey::new(key).unwrap(), value.as_bytes())
                .unwrap();
        }
        store
    }

    fn names(tree: &Tree, g: GroupId) -> (Vec<String>, Vec<String>) {
        let group = tree.group(g);
        let vars = group.vars.iter().map(|v| v.name.clone()).collect();
        let groups = group
            .children
            .iter()
            .map(|c| tree.group(*c).name.clone())
            .collect();
        (vars, groups)
    }

    #[test]
    fn pure_zarr_children_are_classified_by_their_objects() {
        let store = store_with(&[
            (".zgroup", r#"{"zarr_format": 2}"#),
            ("a/.zarray", ARRAY),
            ("a/0", "chunk"),
            ("both/.zarray", ARRAY),
            ("both/.zgroup", r#"{"zarr_format": 2}"#),
            ("attrs_only/.zattrs", r#"{"title": "x"}"#),
            ("implicit/deeper/b/.zarray", ARRAY),
            ("junk/readme.txt", "not zarr"),
            ("notes.txt", "not zarr"),
            ("too/deep/for/a/look/c/.zarray", ARRAY),
        ]);
        let opened = read_dataset(&store, true, false).unwrap();
        let tree = &opened.tree;
        let (vars, groups) = names(tree, Tree::ROOT);
        assert_eq!(vars, ["a", "both"]);
        assert_eq!(groups, ["attrs_only", "implicit"]);
        let implicit = tree.group(Tree::ROOT).children[1];
        let (vars, groups) = names(tree, implicit);
        assert!(vars.is_empty());
        assert_eq!(groups, ["deeper"]);
        let deeper = tree.group(implicit).children[0];
        assert_eq!(names(tree, deeper).0, ["b"]);
    }

    /// The dimension each array of the root is on, by name.
    fn root_dims(tree: &Tree) -> Vec<(String, Vec<String>)> {
        tree.group(Tree::ROOT)
            .vars
            .iter()
            .map(|v| {
                let dims = v.dims.iter().map(|d| tree.dim(*d).name.clone()).collect();
                (v.name.clone(), dims)
            })
            .collect()
    }

    #[test]
    fn an_unlimited_dimension_an_nczarr_group_declares_takes_arrays_of_any_length() {
        let store = store_with(&[
            (".zgroup", r#"{"zarr_format": 2}"#),
            (
                ".zattrs",
                r#"{"_nczarr_superblock": {"version": "2.0.0"}, "_nczarr_group":
                    {"dimensions": {"t": {"size": 5, "unlimited": 1}}, "arrays": ["a"],
                     "groups": []}}"#,
            ),
            ("a/.zarray", ARRAY),
            ("a/.zattrs", r#"{"_ARRAY_DIMENSIONS": ["t"]}"#),
        ]);
        let opened = read_dataset(&store, false, true).unwrap();
        assert_eq!(root_dims(&opened.tree), [("a".into(), vec!["t".into()])]);
        assert!(opened.tree.group(Tree::ROOT).vars[0].unreadable.is_none());
    }

    #[test]
    fn pure_zarr_names_go_to_the_length_most_arrays_give() {
        let empty = ARRAY
            .replace("[3]", "[0]")
            .replace("\"chunks\": [0]", "\"chunks\": [1]");
        let store = store_with(&[
            (".zgroup", r#"{"zarr_format": 2}"#),
            ("a/.zarray", &empty),
            ("a/.zattrs", r#"{"_ARRAY_DIMENSIONS": ["t"]}"#),
            ("b/.zarray", ARRAY),
            ("b/.zattrs", r#"{"_ARRAY_DIMENSIONS": ["t"]}"#),
            ("c/.zarray", ARRAY),
            ("c/.zattrs", r#"{"_ARRAY_DIMENSIONS": ["t"]}"#),
        ]);
        let opened = read_dataset(&store, true, true).unwrap();
        let tree = &opened.tree;
        assert_eq!(
            root_dims(tree),
            [
                ("a".into(), vec!["_Anonymous_Dim_0".into()]),
                ("b".into(), vec!["t".into()]),
                ("c".into(), vec!["t".into()]),
            ]
        );
        let a = &tree.group(Tree::ROOT).vars[0];
        assert_eq!(a.clashing_dim_names, [Some("t".to_string())]);
        // netCDF has no fixed dimension of length 0.
        assert!(tree.dim(a.dims[0]).unlimited);
    }
}
