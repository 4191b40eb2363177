//! The model -> the metadata objects we write (the current NCZarr layout, or pure Zarr v2; in
//! Zarr v3, [`v3`]).
//!
//! Produces every metadata object of the dataset as `(key, JSON bytes)`; the caller decides
//! which ones changed and writes those. Never touches chunks.

mod memo;
mod v3;

pub use memo::VarObjectsMemo;

use super::{Layout, attrs, dtype, non_finite, number};
use crate::model::{GroupId, NcType, StringStorage, Tree, TypeClass, Var};
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// Reserved attribute marking the root of an NCZarr dataset.
pub const SUPERBLOCK: &str = "_nczarr_superblock";
/// The superblock's key saying the netCDF-4 classic model is in force (ours).
pub const CLASSIC_MODEL: &str = "classic_model";
/// Per-group NCZarr information.
pub const GROUP: &str = "_nczarr_group";
/// Per-array NCZarr information.
pub const ARRAY: &str = "_nczarr_array";
/// Per-object attribute types.
pub const ATTR: &str = "_nczarr_attr";
/// xarray's dimension names.
pub const ARRAY_DIMENSIONS: &str = "_ARRAY_DIMENSIONS";
/// Provenance attribute of the root group.
pub const NCPROPERTIES: &str = "_NCProperties";
/// Version string in the superblock.
pub const NCZARR_VERSION: &str = "2.0.0";

/// The NCZarr version of datasets stored in Zarr v3.
pub const NCZARR_V3_VERSION: &str = "3.0.0";

/// `_NCProperties` text we write into a dataset of `layout`.
pub fn ncproperties(layout: Layout) -> String {
    let version = if layout.zarr_v3 {
        NCZARR_V3_VERSION
    } else {
        NCZARR_VERSION
    };
    format!(
        "version=2,nczarr-rs={},nczarr={version}",
        env!("CARGO_PKG_VERSION")
    )
}

/// `v` as the text of a metadata object; attributes' non-finite numbers are bare literals.
fn to_bytes(v: &Value) -> Vec<u8> {
    non_finite::unmarked_json(serde_json::to_vec_pretty(v).unwrap_or_default())
}

/// `name` below store path `path` (`name` itself at the root).
pub fn prefixed(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}/{name}")
    }
}

/// Whether `full` is [`prefixed`]`(path, name)`, without building it.
pub fn is_prefixed(full: &str, path: &str, name: &str) -> bool {
    if path.is_empty() {
        return full == name;
    }
    full.strip_prefix(path)
        .and_then(|rest| rest.strip_prefix('/'))
        .is_some_and(|rest| rest == name)
}

/// Store path of variable `varid` of group `g`.
pub fn var_path(tree: &Tree, g: GroupId, var: &Var) -> String {
    prefixed(&tree.group_path(g), &var.name)
}

/// How a variable's `_FillValue` attribute is written among its attributes.
#[derive(Debug, Clone, PartialEq)]
enum FillAttribute {
    /// As any attribute, its type recorded.
    AsAny,
    /// As this JSON, its type the variable's (not recorded).
    Encoded(Value),
    /// Not at all (the format keeps it elsewhere).
    Left,
}

/// What NCZarr records of the types of an object's attributes: each one's dtype (`types`),
/// and the full name of the enum type of those of one (`enum_types`), of the opaque type
/// of those of one (`opaque_types`: their values are stored as bytes, `ubyte`) and of the
/// variable-length type of those of one (`vlen_types`: their values are stored as arrays of
/// the base's numbers).
#[derive(Default)]
struct AttTypes {
    dtypes: Map<String, Value>,
    enums: Map<String, Value>,
    opaques: Map<String, Value>,
    vlens: Map<String, Value>,
}

/// Writes the user attributes into `map` and returns the record of their types.
fn user_atts(
    tree: &Tree,
    atts: &[crate::model::Att],
    map: &mut Map<String, Value>,
    layout: Layout,
    fill: FillAttribute,
) -> AttTypes {
    let mut types = AttTypes::default();
    for a in atts {
        if a.name == "_FillValue" {
            match &fill {
                FillAttribute::AsAny => {}
                FillAttribute::Encoded(v) => {
                    map.insert(a.name.clone(), v.clone());
                    continue;
                }
                FillAttribute::Left => continue,
            }
        }
        if let Some(json) = &a.json
            && a.user_type.is_none()
            && attrs::from_json(&a.name, json, None, "").is_ok_and(|v| v == a.values)
        {
            // As read, with no type recorded: read again, it gives these values.
            map.insert(a.name.clone(), json.clone());
            continue;
        }
        let (v, dt) = attrs::to_json(&a.values, layout.nczarr);
        map.insert(a.name.clone(), v);
        types.dtypes.insert(a.name.clone(), Value::from(dt));
        if let Some(id) = a.user_type.as_ref().and_then(crate::model::TypeRef::id)
            && let Some(full) = tree.type_full_name(id)
        {
            let class = tree.types.get(id).map(|t| &t.class);
            let by_class = match class {
                Some(crate::model::TypeClass::Opaque) => &mut types.opaques,
                Some(crate::model::TypeClass::Vlen(_)) => &mut types.vlens,
                _ => &mut types.enums,
            };
            by_class.insert(a.name.clone(), Value::from(full));
        }
    }
    types
}

/// The full name of a user-defined type listed in `tree` (an enum or variable-length type of a
/// variable).
fn listed_type_name(tree: &Tree, r: Option<&crate::model::TypeRef>) -> Option<String> {
    tree.type_full_name(r?.id()?)
}

fn close_attrs(mut map: Map<String, Value>, types: AttTypes, layout: Layout) -> Value {
    if layout.nczarr {
        let AttTypes {
            mut dtypes,
            enums,
            opaques,
            vlens,
        } = types;
        for k in map.keys() {
            if k.starts_with("_nczarr_") {
                dtypes.insert(k.clone(), Value::from("|J0"));
            }
        }
        dtypes.insert(ATTR.into(), Value::from("|J0"));
        let mut info = json!({ "types": dtypes });
        if !enums.is_empty() {
            info["enum_types"] = Value::Object(enums);
        }
        if !opaques.is_empty() {
            info["opaque_types"] = Value::Object(opaques);
        }
        if !vlens.is_empty() {
            info["vlen_types"] = Value::Object(vlens);
        }
        map.insert(ATTR.into(), info);
    }
    Value::Object(map)
}

/// The attributes of group `g`: its own, and in NCZarr the `_nczarr_*` records of it
/// (`superblock`: the root's superblock record).
fn group_attributes(tree: &Tree, g: GroupId, layout: Layout, superblock: Value) -> Value {
    let grp = tree.group(g);
    let mut map = Map::new();
    let mut types = user_atts(tree, &grp.atts, &mut map, layout, FillAttribute::AsAny);
    if g == Tree::ROOT && layout.nczarr {
        map.insert(NCPROPERTIES.into(), Value::from(ncproperties(layout)));
        types.dtypes.insert(NCPROPERTIES.into(), Value::from(">S1"));
    }
    if layout.nczarr {
        let mut dims = Map::new();
        for d in &grp.dims {
            let dim = tree.dim(*d);
            let v = if dim.unlimited {
                json!({ "size": dim.len, "unlimited": 1 })
            } else {
                Value::from(dim.len)
            };
            dims.insert(dim.name.clone(), v);
        }
        let arrays: Vec<&str> = grp.vars.iter().map(|v| v.name.as_str()).collect();
        let groups: Vec<&str> = grp
            .children
            .iter()
            .map(|c| tree.group(*c).name.as_str())
            .collect();
        let mut info = json!({ "dimensions": dims, "arrays": arrays, "groups": groups });
        let types = declared_types(tree, g);
        if !types.is_empty() {
            info["types"] = Value::from(types);
        }
        map.insert(GROUP.into(), info);
        if g == Tree::ROOT {
            map.insert(SUPERBLOCK.into(), superblock);
        }
    }
    close_attrs(map, types, layout)
}

/// The types group `g` defines, as NCZarr declares them: a compound type's name, size and
/// fields (name, offset, type and dimensions; a field's type is an atomic type's CDL name or
/// a user-defined type's full name), an enum type's name, base (a CDL name) and members (name
/// and value), an opaque type's name and size (nothing else), a variable-length type's name
/// and base (`"vlen"`: a CDL name). Left out: types without fields
/// or members, and the types of variables holding records that no definition gave (their
/// records tell them again).
fn declared_types(tree: &Tree, g: GroupId) -> Vec<Value> {
    let type_name = |id: i32| match NcType::from_id(id) {
        Ok(t) => t.name().to_string(),
        Err(_) => tree.type_full_name(id).unwrap_or_default(),
    };
    tree.types
        .types
        .iter()
        .filter(|t| t.group == g && !t.implicit)
        .filter_map(|t| {
            match &t.class {
                TypeClass::Enum(e) => {
                    let members: Vec<Value> = e
                        .members()
                        .iter()
                        .map(|m| json!({ "name": m.name, "value": enum_value_json(m.value) }))
                        .collect();
                    return (!members.is_empty()).then(
                        || json!({ "name": t.name, "base": e.base.name(), "members": members }),
                    );
                }
                TypeClass::Opaque => return Some(json!({ "name": t.name, "size": t.size })),
                TypeClass::Vlen(base) => {
                    return Some(json!({ "name": t.name, "vlen": base.name() }));
                }
                TypeClass::Compound => {}
            }
            if t.fields.is_empty() {
                return None;
            }
            let fields: Vec<Value> = t
                .fields
                .iter()
                .map(|f| {
                    json!({
                        "name": f.name,
                        "offset": f.offset,
                        "type": type_name(f.type_id),
                        "dimensions": f.dims,
                    })
                })
                .collect();
            Some(json!({ "name": t.name, "size": t.size, "fields": fields }))
        })
        .collect()
}

/// An enum member's value as a JSON number: as netCDF gives it (a `long long`), so an
/// `uint64` value past `i64`'s range is the negative number of the same bits (netcdf-c 4.9.0
/// refuses a dataset whose metadata holds a larger integer).
fn enum_value_json(value: i128) -> Value {
    Value::from(i64::try_from(value).unwrap_or(value as u64 as i64))
}

fn group_objects(tree: &Tree, g: GroupId, layout: Layout, out: &mut Vec<(String, Value)>) {
    let path = tree.group_path(g);
    out.push((prefixed(&path, ".zgroup"), json!({ "zarr_format": 2 })));
    let mut superblock = json!({ "version": NCZARR_VERSION });
    if tree.classic_model {
        superblock[CLASSIC_MODEL] = Value::Bool(true);
    }
    let attributes = group_attributes(tree, g, layout, superblock);
    out.push((prefixed(&path, ".zattrs"), attributes));
}

/// The `fill_value` JSON of a variable (`nczarr` false: pure Zarr, byte strings in base64).
pub fn fill_json(var: &Var, nczarr: bool) -> Value {
    if let Some(record) = &var.record {
        return match &record.stored_dtype {
            Some(stored) => stored.1.clone(),
            None if var.no_fill && !fill_beside_nofill(var, nczarr) => Value::Null,
            // The record of the fill (netCDF's: zeros), in base64 as zarr-python writes it.
            None => {
                let memory = var
                    .stored_fill
                    .clone()
                    .unwrap_or_else(|| vec![0; record.plan.memory_size]);
                // A fill is checked when it is given: it always narrows.
                match record.stored_form(&memory) {
                    Ok(stored) => Value::from(super::base64::encode(&stored)),
                    Err(_) => Value::Null,
                }
            }
        };
    }
    // numcodecs' arrays of numbers have no fill of their own (zarr-python reads null as
    // `None`): a sequence's fill is its `_FillValue`, the empty sequence without one.
    if var.no_fill || var.vlen.is_some() {
        return Value::Null;
    }
    fill_of(var, nczarr)
}

/// A compound variable a program gave a fill and `NC_NOFILL`: its `fill_value` keeps the
/// fill, and NCZarr records `NC_NOFILL` beside it (pure Zarr has no room for both).
fn fill_beside_nofill(var: &Var, nczarr: bool) -> bool {
    nczarr
        && var.no_fill
        && var.stored_fill.is_some()
        && var
            .record
            .as_ref()
            .is_some_and(|r| r.stored_dtype.is_none())
}

/// The fill value of a variable as [`fill_json`] writes it, `NC_NOFILL` or not.
fn fill_of(var: &Var, nczarr: bool) -> Value {
    let att = var.att("_FillValue").map(|a| &a.values);
    // Byte strings: NCZarr stores the text, pure Zarr its base64 (as zarr-python reads it),
    // except for strings stored as objects or as numpy unicode, whose fill zarr-python stores
    // as the text. A fill value the metadata gave is the `_FillValue` by now (as it is read).
    let text = |b: &[u8]| {
        let as_text = nczarr || matches!(var.strings, StringStorage::Objects | StringStorage::Ucs4);
        Value::String(if as_text {
            String::from_utf8_lossy(b).into_owned()
        } else {
            super::base64::encode(b)
        })
    };
    // A fill the array's metadata gave (or a deleted `_FillValue` left) stays.
    let kept = var.stored_fill.as_deref();
    match var.ty {
        NcType::String => match att {
            Some(crate::model::Values::Strings(s)) if !s.is_empty() => text(&s[0]),
            _ => match kept {
                Some(f) if var.strings == StringStorage::Ucs4 => {
                    text(&super::ucs4::decode(f, var.endian))
                }
                Some(f) => text(f.split(|b| *b == 0).next().unwrap_or_default()),
                None => text(b""),
            },
        },
        NcType::Char => match att {
            Some(crate::model::Values::Fixed { bytes, .. }) => text(
                bytes
                    .first()
                    .filter(|b| **b != 0)
                    .map_or(&[][..], std::slice::from_ref),
            ),
            _ => {
                let kept_char = kept.and_then(|f| f.first()).filter(|b| **b != 0);
                text(kept_char.map_or(&[][..], std::slice::from_ref))
            }
        },
        ty => {
            let bytes = match att {
                Some(crate::model::Values::Fixed { ty: aty, bytes })
                    if *aty == ty && bytes.len() >= ty.size() =>
                {
                    bytes[..ty.size()].to_vec()
                }
                // A fill the array's metadata gave (or a deleted `_FillValue` left) stays; 16-bit
                // floats have no room for netCDF's default fill, so theirs does too.
                _ => match &var.stored_fill {
                    Some(fill) if var.half_floats.is_some() || fill.len() == ty.size() => {
                        fill.clone()
                    }
                    _ => ty.default_fill(),
                },
            };
            number::to_json(ty, &bytes)
        }
    }
}

fn var_objects(tree: &Tree, g: GroupId, var: &Var, layout: Layout, out: &mut Vec<(String, Value)>) {
    let path = var_path(tree, g, var);
    let scalar = var.is_scalar();
    let (shape, chunks): (Vec<u64>, Vec<u64>) = if scalar {
        if layout.nczarr {
            (vec![1], vec![1])
        } else {
            (vec![], vec![])
        }
    } else {
        (tree.var_shape(var), var.chunks.clone())
    };
    let mut zarray = Map::new();
    zarray.insert("zarr_format".into(), Value::from(2));
    zarray.insert("shape".into(), Value::from(shape));
    let dt = match var.strings {
        _ if let Some(record) = &var.record => match &record.stored_dtype {
            Some(stored) => stored.0.clone(),
            None => super::structured::to_json(&record.record),
        },
        StringStorage::Ucs4 => {
            let order = if var.endian == crate::model::Endian::Big {
                '>'
            } else {
                '<'
            };
            Value::from(format!("{order}U{}", var.maxstrlen / 4))
        }
        StringStorage::Objects => Value::from("|O"),
        StringStorage::Bytes => Value::from(match var.half_floats {
            Some(order) => dtype::half_floats(order),
            None => dtype::format(var.ty, var.endian, var.maxstrlen, layout.nczarr),
        }),
    };
    zarray.insert("dtype".into(), dt);
    zarray.insert("chunks".into(), Value::from(chunks));
    zarray.insert("fill_value".into(), fill_json(var, layout.nczarr));
    zarray.insert(
        "order".into(),
        Value::from(if var.fortran_order { "F" } else { "C" }),
    );
    let codecs: Vec<Value> = var
        .filters
        .iter()
        .map(|f| Value::Object(f.codec.clone()))
        .collect();
    // An object codec is a filter even when it is the only codec (numcodecs' layout).
    let object_codec_only =
        matches!(&var.filters[..], [only] if crate::codec::is_object_codec(only.codec_id()));
    let (compressor, filters) = match codecs.split_last() {
        None => (Value::Null, Value::Null),
        Some(_) if object_codec_only => (Value::Null, Value::Array(codecs.clone())),
        Some((last, [])) => (last.clone(), Value::Null),
        Some((last, rest)) => (last.clone(), Value::Array(rest.to_vec())),
    };
    zarray.insert("compressor".into(), compressor);
    zarray.insert("filters".into(), filters);
    if var.dimension_separator != '.' {
        zarray.insert(
            "dimension_separator".into(),
            Value::from(var.dimension_separator.to_string()),
        );
    }
    out.push((prefixed(&path, ".zarray"), Value::Object(zarray)));

    // A compound variable's `_FillValue` is its `fill_value` (NCZarr records where it is
    // listed).
    let fill = if var.record.is_some() {
        FillAttribute::Left
    } else {
        FillAttribute::AsAny
    };
    let attributes = array_attributes(tree, var, layout, fill);
    out.push((prefixed(&path, ".zattrs"), attributes));
}

/// The attributes of variable `var`: its own (its `_FillValue` as `fill` says), and
/// `_ARRAY_DIMENSIONS` in Zarr v2 when `layout.xarray`, `_nczarr_array` in NCZarr (saying where
/// a `_FillValue` left out was).
fn array_attributes(tree: &Tree, var: &Var, layout: Layout, fill: FillAttribute) -> Value {
    let scalar = var.is_scalar();
    let mut map = Map::new();
    let left_at = match fill {
        FillAttribute::Left => var.atts.iter().position(|a| a.name == "_FillValue"),
        _ => None,
    };
    let types = user_atts(tree, &var.atts, &mut map, layout, fill);
    if layout.xarray && !layout.zarr_v3 {
        let names: Vec<String> = if scalar {
            if layout.nczarr {
                vec!["_scalar_".into()]
            } else {
                vec![]
            }
        } else {
            (0..var.dims.len())
                .map(|i| {
                    super::written_dim_name(tree, var, i)
                        .unwrap_or_else(|| tree.dim(var.dims[i]).name.clone())
                })
                .collect()
        };
        map.insert(ARRAY_DIMENSIONS.into(), Value::from(names));
    }
    if layout.nczarr {
        let refs: Vec<String> = var.dims.iter().map(|d| tree.dim_fqn(*d)).collect();
        let storage = match var.storage {
            crate::model::Storage::Chunked => "chunked",
            crate::model::Storage::Contiguous => "contiguous",
            crate::model::Storage::Compact => "compact",
        };
        let mut info = json!({ "dimension_references": refs, "storage": storage });
        if scalar && !layout.zarr_v3 {
            info["scalar"] = Value::from(1);
        }
        if var.no_fill
            && (layout.zarr_v3 || var.vlen.is_some() || fill_beside_nofill(var, layout.nczarr))
        {
            // Zarr v3 has a fill value for every array (Zarr v2's null one is `NC_NOFILL`),
            // a compound variable's fill given is kept with `NC_NOFILL`, and an array of
            // sequences has a null one either way.
            info["nofill"] = Value::from(1);
        }
        if let Some(position) = left_at {
            // The `fill_value` is the attribute.
            info["fill_attribute"] = Value::from(position);
        }
        let fill_listed = matches!(
            var.att("_FillValue").map(|a| &a.values),
            Some(crate::model::Values::Vlens { items, .. }) if items.len() == 1
        );
        if let Some(vlen) = &var.vlen
            && !fill_listed
            && let Some(fill) = var.vlen_fill()
        {
            // A deleted `_FillValue`'s sequence stays the fill (the `fill_value` is null).
            let numbers = fill.chunks_exact(vlen.base.size());
            info["fill"] = numbers.map(|b| number::to_json(vlen.base, b)).collect();
        }
        if let Some(record) = &var.record
            && tree.types.get(record.type_id).is_some_and(|t| !t.implicit)
            && let Some(name) = tree.type_full_name(record.type_id)
        {
            info["type"] = Value::from(name);
        }
        let vlen_type = var.vlen.as_ref().and_then(|l| l.type_ref.as_ref());
        if let Some(name) = listed_type_name(tree, var.enum_type.as_ref().or(vlen_type))
            && vlen_type
                .and_then(|r| tree.types.get(r.id()?))
                .is_none_or(|t| !t.implicit)
        {
            info["type"] = Value::from(name);
        }
        map.insert(ARRAY.into(), info);
    }
    close_attrs(map, types, layout)
}

/// The metadata object that holds a dataset's consolidated metadata: `.zmetadata`, or in Zarr
/// v3 the root's `zarr.json`.
pub fn consolidated_key(layout: Layout) -> &'static str {
    if layout.zarr_v3 {
        v3::ZARR_JSON
    } else {
        ".zmetadata"
    }
}

/// Which objects [`metadata_objects`] gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Built {
    /// Every object.
    All,
    /// Every object but those the store holds already, as far as the memo knows.
    Changed,
}

/// Every metadata object of the dataset, in a stable order: groups before their contents;
/// with `Built::Changed`, not those of variables the memo knows the store holds
/// ([`VarObjectsMemo::all_stored`]).
pub fn metadata_objects(
    tree: &Tree,
    layout: Layout,
    memo: &mut VarObjectsMemo,
    which: Built,
) -> Vec<(String, Arc<[u8]>)> {
    if layout.zarr_v3 {
        return v3::metadata_objects(tree, layout)
            .into_iter()
            .map(|(k, v)| (k, Arc::from(to_bytes(&v))))
            .collect();
    }
    let mut out: Vec<(String, Arc<[u8]>)> = Vec::new();
    let mut consolidated = Map::new();
    memo.start_build(memo::DimKeys::of(tree));
    for g in tree.groups_preorder() {
        let mut objects = Vec::new();
        group_objects(tree, g, layout, &mut objects);
        for (k, v) in objects {
            let bytes = Arc::from(to_bytes(&v));
            if layout.consolidated {
                consolidated.insert(k.clone(), v);
            }
            out.push((k, bytes));
        }
        let mut group_memo = memo.group(&tree.group_path(g));
        for (index, var) in tree.group(g).vars.iter().enumerate() {
            let build = || {
                let mut objects = Vec::new();
                var_objects(tree, g, var, layout, &mut objects);
                objects
                    .into_iter()
                    .map(|(k, v)| {
                        let bytes = Arc::from(to_bytes(&v));
                        (k, v, bytes)
                    })
                    .collect()
            };
            if memo::memoizable(var) {
                let (objects, stored) = group_memo.objects(index, var, layout, build);
                for (k, v, bytes) in objects {
                    if layout.consolidated {
                        consolidated.insert(k.clone(), v.clone());
                    }
                    if !(stored && which == Built::Changed) {
                        out.push((k.clone(), bytes.clone()));
                    }
                }
            } else {
                for (k, v, bytes) in build() {
                    if layout.consolidated {
                        consolidated.insert(k.clone(), v);
                    }
                    out.push((k, bytes));
                }
            }
        }
    }
    memo.finish_build();
    if layout.consolidated {
        let z = json!({ "metadata": consolidated, "zarr_consolidated_format": 1 });
        out.push((".zmetadata".into(), Arc::from(to_bytes(&z))));
    }
    out
}
