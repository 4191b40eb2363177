//! The model -> Zarr v3 metadata: one `zarr.json` per group and array, pure Zarr or NCZarr,
//! in the forms zarr-python 3 and xarray write and read.
//!
//! A node read from a Zarr v3 store is written back as it was stored (codecs, extensions and
//! keys we do not know kept) with what the model owns put in: attributes, shape and
//! dimension names. A new array is described whole: netCDF types as Zarr v3 data types (char
//! as one-byte `null_terminated_bytes`, strings as `string` with `vlen-utf8`), the filters as
//! v3 codecs (zarr-python's `numcodecs.*` names for those v3 does not define; inside
//! `sharding_indexed` when the variable has inner chunks), the `_FillValue` attribute in
//! xarray's encoding. NCZarr's records are the attributes of the Zarr v2 layout,
//! the superblock saying version 3. Never touches chunks.

use super::{
    FillAttribute, Layout, NCZARR_V3_VERSION, array_attributes, fill_of, group_attributes, number,
    prefixed, var_path,
};
use crate::format::base64;
use crate::model::{NcType, StringStorage, Tree, Values, Var};
use serde_json::{Map, Value, json};

/// The metadata object of every Zarr v3 node.
pub(super) const ZARR_JSON: &str = "zarr.json";
/// A group's key for zarr-python's consolidated metadata.
const CONSOLIDATED: &str = "consolidated_metadata";

/// Every `zarr.json` of the dataset, groups before their contents; with consolidated metadata
/// inline in the root's when `layout.consolidated`, and in any other group's that had some.
pub(super) fn metadata_objects(tree: &Tree, layout: Layout) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let mut consolidating = Vec::new();
    for g in tree.groups_preorder() {
        let path = tree.group_path(g);
        let keeps = if g == Tree::ROOT {
            layout.consolidated
        } else {
            had_consolidated(tree.group(g))
        };
        if keeps {
            consolidating.push((out.len(), path.clone()));
        }
        out.push((prefixed(&path, ZARR_JSON), group_object(tree, g, layout)));
        for var in &tree.group(g).vars {
            let key = prefixed(&var_path(tree, g, var), ZARR_JSON);
            out.push((key, array_object(tree, var, layout)));
        }
    }
    let blocks: Vec<(usize, Value)> = consolidating
        .iter()
        .map(|(at, path)| (*at, consolidated_below(&out, path)))
        .collect();
    for (at, block) in blocks {
        out[at].1[CONSOLIDATED] = block;
    }
    out
}

/// A group read with consolidated metadata of its own (zarr-python consolidates any group).
fn had_consolidated(group: &crate::model::Group) -> bool {
    group
        .v3_stored
        .as_ref()
        .is_some_and(|o| o.get(CONSOLIDATED).is_some_and(Value::is_object))
}

fn consolidated_block(metadata: Map<String, Value>) -> Value {
    json!({ "kind": "inline", "must_understand": false, "metadata": metadata })
}

/// The consolidated metadata of the group at `path`: every node below it, by path from it, as
/// zarr-python consolidates them (a group's carrying an empty block of its own).
fn consolidated_below(objects: &[(String, Value)], path: &str) -> Value {
    let prefix = if path.is_empty() {
        String::new()
    } else {
        format!("{path}/")
    };
    let mut metadata = Map::new();
    for (key, obj) in objects {
        let Some(node) = key
            .strip_prefix(&prefix)
            .and_then(|rest| rest.strip_suffix(ZARR_JSON))
            .map(|rest| rest.trim_end_matches('/'))
            .filter(|node| !node.is_empty())
        else {
            continue;
        };
        let mut obj = obj.clone();
        if obj["node_type"] == "group" {
            obj[CONSOLIDATED] = consolidated_block(Map::new());
        }
        metadata.insert(node.to_string(), obj);
    }
    consolidated_block(metadata)
}

fn group_object(tree: &Tree, g: crate::model::GroupId, layout: Layout) -> Value {
    let mut superblock = json!({ "version": NCZARR_V3_VERSION, "format": 3 });
    if tree.classic_model {
        superblock[super::CLASSIC_MODEL] = Value::Bool(true);
    }
    let attributes = group_attributes(tree, g, layout, superblock);
    let mut obj = match &tree.group(g).v3_stored {
        Some(stored) => (**stored).clone(),
        None => {
            let mut new = Map::new();
            new.insert("zarr_format".into(), Value::from(3));
            new.insert("node_type".into(), Value::from("group"));
            new
        }
    };
    obj.insert("attributes".into(), attributes);
    // Made again from the nodes below when it is kept: as stored, it may be stale.
    obj.remove(CONSOLIDATED);
    Value::Object(obj)
}

/// `dimension_names`: each dimension's name, none for the anonymous ones pure Zarr reads.
fn dimension_names(tree: &Tree, var: &Var) -> Value {
    (0..var.dims.len())
        .map(|i| crate::format::written_dim_name(tree, var, i).map_or(Value::Null, Value::from))
        .collect()
}

fn array_object(tree: &Tree, var: &Var, layout: Layout) -> Value {
    let attributes = array_attributes(tree, var, layout, xarray_fill_attribute(var));
    let shape = if var.is_scalar() {
        Vec::new()
    } else {
        tree.var_shape(var)
    };
    let mut obj = match &var.v3_stored {
        Some(stored) => (**stored).clone(),
        None => new_array(var),
    };
    let fill_is_modelled =
        var.ty == NcType::Char || (var.ty == NcType::String && var.strings != StringStorage::Ucs4);
    if fill_is_modelled {
        // Their `_FillValue` is the fill value: the model's (numpy unicode keeps its own,
        // which no attribute stands for).
        obj.insert("fill_value".into(), fill_value(var));
    }
    obj.insert("shape".into(), Value::from(shape));
    obj.insert("attributes".into(), attributes);
    let names = dimension_names(tree, var);
    if names
        .as_array()
        .is_some_and(|n| n.iter().any(|n| !n.is_null()))
    {
        obj.insert("dimension_names".into(), names);
    } else if obj.get("dimension_names").is_some_and(Value::is_null) {
        // No names to give (as for the arrays zarr-python writes without any).
        obj.remove("dimension_names");
    }
    Value::Object(obj)
}

/// The description of an array not stored yet (`shape`, attributes and dimension names are
/// the caller's).
fn new_array(var: &Var) -> Map<String, Value> {
    let separator = var.dimension_separator.to_string();
    let key_encoding = if var.v3_chunk_keys {
        json!({ "name": "default", "configuration": { "separator": separator } })
    } else {
        json!({ "name": "v2", "configuration": { "separator": separator } })
    };
    let mut obj = Map::new();
    obj.insert("zarr_format".into(), Value::from(3));
    obj.insert("node_type".into(), Value::from("array"));
    obj.insert("shape".into(), Value::Array(Vec::new()));
    obj.insert("data_type".into(), data_type(var));
    obj.insert(
        "chunk_grid".into(),
        json!({ "name": "regular", "configuration": { "chunk_shape": var.chunks } }),
    );
    obj.insert("chunk_key_encoding".into(), key_encoding);
    obj.insert("fill_value".into(), fill_value(var));
    obj.insert("codecs".into(), Value::Array(codecs(var)));
    // In zarr-python's order; the caller's values replace these.
    obj.insert("attributes".into(), Value::Object(Map::new()));
    obj.insert("dimension_names".into(), Value::Null);
    obj.insert("storage_transformers".into(), Value::Array(Vec::new()));
    obj
}

fn data_type(var: &Var) -> Value {
    let bytes = |n: usize| json!({ "name": "null_terminated_bytes", "configuration": { "length_bytes": n.max(1) } });
    if let Some(record) = var.record.as_ref().filter(|r| r.record.is_raw()) {
        // zarr-python's name for numpy's void dtype.
        return json!({
            "name": "raw_bytes",
            "configuration": { "length_bytes": record.record.stored_size }
        });
    }
    Value::from(match var.ty {
        NcType::Byte => "int8",
        NcType::UByte => "uint8",
        NcType::Short => "int16",
        NcType::UShort => "uint16",
        NcType::Int => "int32",
        NcType::UInt => "uint32",
        NcType::Int64 => "int64",
        NcType::UInt64 => "uint64",
        NcType::Float if var.half_floats.is_some() => "float16",
        NcType::Float => "float32",
        NcType::Double => "float64",
        NcType::Char => return bytes(1),
        NcType::String => match var.strings {
            StringStorage::Objects if object_codec(var) == Some("vlen-bytes") => {
                "variable_length_bytes"
            }
            StringStorage::Objects => "string",
            StringStorage::Bytes => return bytes(var.maxstrlen),
            StringStorage::Ucs4 => {
                return json!({
                    "name": "fixed_length_utf32",
                    "configuration": { "length_bytes": var.maxstrlen }
                });
            }
        },
    })
}

/// The `fill_value`: the one netCDF reads where nothing was written (under `NC_NOFILL`, which
/// Zarr v3 has no word for, the `_FillValue` if there is one, else zeros).
fn fill_value(var: &Var) -> Value {
    if let Some(record) = &var.record {
        // The stored record of the fill (netCDF's: zeros), in base64 as zarr-python writes it.
        let memory = var
            .stored_fill
            .clone()
            .unwrap_or_else(|| vec![0; record.plan.memory_size]);
        return record
            .stored_form(&memory)
            .map_or(Value::Null, |stored| Value::from(base64::encode(&stored)));
    }
    if var.ty == NcType::Char {
        // One byte, NUL included (zarr-python's base64 of no byte would read as none).
        let byte = match var.att("_FillValue").map(|a| &a.values) {
            Some(Values::Fixed {
                ty: NcType::Char,
                bytes,
            }) => bytes.first().copied().unwrap_or(0),
            // A deleted `_FillValue` left its fill.
            _ => var
                .stored_fill
                .as_ref()
                .and_then(|f| f.first())
                .copied()
                .unwrap_or(0),
        };
        return Value::from(base64::encode(&[byte]));
    }
    if !var.no_fill || var.att("_FillValue").is_some() {
        return fill_of(var, false);
    }
    match var.ty {
        NcType::Char | NcType::String => Value::from(""),
        ty => number::to_json(ty, &vec![0; ty.size()]),
    }
}

/// The `_FillValue` attribute as xarray writes it into a Zarr v3 array's attributes (and
/// requires there): a float's as the base64 text of its value as a little-endian double, an
/// integer's as itself. A char or string array's is left out: xarray opens no such array that
/// has one (its `fill_value` is the same).
fn xarray_fill_attribute(var: &Var) -> FillAttribute {
    let Some(att) = var.att("_FillValue") else {
        return FillAttribute::AsAny;
    };
    if var.record.is_some() {
        // Its value is the `fill_value`: no attribute holds an opaque or compound value.
        return FillAttribute::Left;
    }
    match (&att.values, var.ty) {
        (_, NcType::Char | NcType::String) => FillAttribute::Left,
        (Values::Fixed { ty, bytes }, vty) if *ty == vty && bytes.len() >= ty.size() => {
            let value = match ty {
                NcType::Float => bytes[..4].try_into().map(f32::from_ne_bytes).map(f64::from),
                NcType::Double => bytes[..8].try_into().map(f64::from_ne_bytes),
                _ => return FillAttribute::Encoded(number::to_json(*ty, &bytes[..ty.size()])),
            };
            match value {
                Ok(v) => FillAttribute::Encoded(Value::from(base64::encode(&v.to_le_bytes()))),
                Err(_) => FillAttribute::AsAny,
            }
        }
        _ => FillAttribute::AsAny,
    }
}

/// The numcodecs id of the codec turning a variable's objects into bytes, if it has one.
fn object_codec(var: &Var) -> Option<&str> {
    let first = var.filters.first()?.codec_id();
    crate::codec::is_object_codec(first).then_some(first)
}

/// The v3 codecs of a variable's filters: the array-to-bytes codec (`bytes` in the
/// variable's byte order, or the object codec), then the filters as bytes-to-bytes codecs.
fn codecs(var: &Var) -> Vec<Value> {
    if var.inner_chunks.is_empty() {
        return chunk_codecs(var);
    }
    let index_codecs = json!([
        { "name": "bytes", "configuration": { "endian": "little" } },
        { "name": "crc32c" },
    ]);
    vec![json!({
        "name": "sharding_indexed",
        "configuration": {
            "chunk_shape": var.inner_chunks,
            "codecs": chunk_codecs(var),
            "index_codecs": index_codecs,
            "index_location": "end",
        }
    })]
}

/// The codecs of one chunk (of an inner chunk, in shards).
fn chunk_codecs(var: &Var) -> Vec<Value> {
    let mut out = Vec::new();
    let mut filters = var.filters.iter().peekable();
    if var.fortran_order && !var.chunks.is_empty() {
        let order: Vec<usize> = (0..var.chunks.len()).rev().collect();
        out.push(json!({ "name": "transpose", "configuration": { "order": order } }));
    }
    match object_codec(var) {
        Some(id) => {
            filters.next();
            out.push(json!({ "name": id, "configuration": {} }));
        }
        None if var.stored_esize() > 1 && var.ty != NcType::String => {
            let endian = if var.stored_endian() == crate::model::Endian::Big {
                "big"
            } else {
                "little"
            };
            out.push(json!({ "name": "bytes", "configuration": { "endian": endian } }));
        }
        None => out.push(json!({ "name": "bytes" })),
    }
    out.extend(filters.map(|f| v3_codec(&f.codec, var.stored_esize())));
    out
}

/// One numcodecs configuration as a v3 codec.
fn v3_codec(cfg: &Map<String, Value>, elem_size: usize) -> Value {
    let id = cfg.get("id").and_then(Value::as_str).unwrap_or("?");
    let get = |k: &str| cfg.get(k).cloned().unwrap_or(Value::Null);
    match id {
        "gzip" => json!({ "name": "gzip", "configuration": { "level": get("level") } }),
        "zstd" => json!({
            "name": "zstd",
            "configuration": {
                "level": get("level"),
                "checksum": cfg.get("checksum").and_then(Value::as_bool).unwrap_or(false),
            }
        }),
        "blosc" => {
            // numcodecs' -1 (AUTOSHUFFLE): bit shuffle for one-byte items, else byte shuffle.
            let shuffle = match cfg.get("shuffle").and_then(Value::as_i64) {
                Some(0) => "noshuffle",
                Some(2) => "bitshuffle",
                Some(-1) if elem_size == 1 => "bitshuffle",
                _ => "shuffle",
            };
            json!({
                "name": "blosc",
                "configuration": {
                    "cname": get("cname"),
                    "clevel": get("clevel"),
                    "shuffle": shuffle,
                    "typesize": elem_size,
                    "blocksize": cfg.get("blocksize").and_then(Value::as_u64).unwrap_or(0),
                }
            })
        }
        "crc32c" => json!({ "name": "crc32c" }),
        other => {
            let mut rest = cfg.clone();
            rest.remove("id");
            json!({ "name": format!("numcodecs.{other}"), "configuration": rest })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ARRAY_DIMENSIONS, GROUP, SUPERBLOCK};
    use super::*;
    use crate::model::{Att, Filter};

    fn layout(nczarr: bool, consolidated: bool) -> Layout {
        Layout {
            nczarr,
            xarray: true,
            consolidated,
            zarr_v3: true,
        }
    }

    fn filter(codec: Value) -> Filter {
        Filter {
            id: 0,
            params: vec![],
            codec: codec.as_object().unwrap().clone(),
        }
    }

    fn tree_with(var: Var) -> Tree {
        let mut tree = Tree::new();
        tree.add_dim(Tree::ROOT, "x", 6, false);
        tree.group_mut(Tree::ROOT).vars.push(var.into());
        tree
    }

    fn object(objects: &[(String, Value)], key: &str) -> Value {
        objects
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("no {key} in {objects:?}"))
    }

    fn float_var() -> Var {
        let mut var = Var::new("t", NcType::Float, vec![crate::model::DimId(0)]);
        var.chunks = vec![3];
        var.v3_chunk_keys = true;
        var.dimension_separator = '/';
        var.atts.push(Att::new(
            "_FillValue",
            Values::fixed(NcType::Float, (-1.5f32).to_ne_bytes().to_vec()),
        ));
        var
    }

    #[test]
    fn new_arrays_are_described_as_zarr_python_writes_them() {
        let mut var = float_var();
        var.filters
            .push(filter(json!({"id": "shuffle", "elementsize": 4})));
        var.filters.push(filter(json!({"id": "gzip", "level": 1})));
        let objects = metadata_objects(&tree_with(var), layout(false, false));
        let a = object(&objects, "t/zarr.json");
        assert_eq!(a["data_type"], "float32");
        assert_eq!(a["shape"], json!([6]));
        assert_eq!(a["chunk_grid"]["configuration"]["chunk_shape"], json!([3]));
        assert_eq!(a["chunk_key_encoding"]["name"], "default");
        assert_eq!(a["fill_value"], json!(-1.5));
        assert_eq!(a["dimension_names"], json!(["x"]));
        assert_eq!(
            a["codecs"],
            json!([
                {"name": "bytes", "configuration": {"endian": "little"}},
                {"name": "numcodecs.shuffle", "configuration": {"elementsize": 4}},
                {"name": "gzip", "configuration": {"level": 1}},
            ])
        );
        // xarray's encoding: -1.5 as a little-endian double, in base64.
        let fill = a["attributes"]["_FillValue"].as_str().unwrap().to_string();
        assert_eq!(base64::decode(&fill).unwrap(), (-1.5f64).to_le_bytes());
        assert!(a["attributes"].get(ARRAY_DIMENSIONS).is_none());
    }

    #[test]
    fn nczarr_records_are_attributes_and_consolidation_is_inline() {
        let objects = metadata_objects(&tree_with(float_var()), layout(true, true));
        let root = object(&objects, "zarr.json");
        assert_eq!(root["node_type"], "group");
        let attrs = &root["attributes"];
        assert_eq!(attrs[SUPERBLOCK]["version"], NCZARR_V3_VERSION);
        assert_eq!(attrs[GROUP]["dimensions"], json!({"x": 6}));
        assert_eq!(attrs[GROUP]["arrays"], json!(["t"]));
        let a = object(&objects, "t/zarr.json");
        assert_eq!(
            a["attributes"]["_nczarr_array"]["dimension_references"],
            json!(["/x"])
        );
        // The fill's type is the variable's, not recorded (its JSON is a text).
        assert!(
            a["attributes"]["_nczarr_attr"]["types"]
                .get("_FillValue")
                .is_none()
        );
        assert_eq!(root["consolidated_metadata"]["metadata"]["t"], a);
    }

    #[test]
    fn stored_arrays_keep_what_the_model_does_not_own() {
        let mut var = float_var();
        let stored = json!({
            "zarr_format": 3, "node_type": "array", "shape": [2], "data_type": "float32",
            "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [1]}}],
            "fill_value": 0, "attributes": {"old": 1}, "future_extension": {"must_understand": false},
        });
        var.v3_stored = Some(std::sync::Arc::new(stored.as_object().unwrap().clone()));
        let objects = metadata_objects(&tree_with(var), layout(false, false));
        let a = object(&objects, "t/zarr.json");
        assert_eq!(a["shape"], json!([6]));
        assert_eq!(a["codecs"], stored["codecs"]);
        assert_eq!(a["fill_value"], json!(0));
        assert_eq!(a["future_extension"], stored["future_extension"]);
        assert!(a["attributes"].get("old").is_none());
        assert!(a["attributes"].get("_FillValue").is_some());
    }

    #[test]
    fn char_fills_are_the_fill_value_alone_and_nofill_is_recorded() {
        let mut var = Var::new("c", NcType::Char, vec![crate::model::DimId(0)]);
        var.chunks = vec![6];
        var.no_fill = true;
        for name in ["units", "_FillValue", "long_name"] {
            var.atts.push(Att::new(name, Values::text("x")));
        }
        let objects = metadata_objects(&tree_with(var), layout(true, false));
        let a = object(&objects, "c/zarr.json");
        // xarray opens no char array with a `_FillValue` attribute: the fill is `fill_value`
        // (base64, as zarr-python stores bytes), its place among the attributes recorded.
        assert_eq!(a["fill_value"], "eA==");
        assert_eq!(fill_value(&Var::new("d", NcType::Char, vec![])), "AA==");
        assert!(a["attributes"].get("_FillValue").is_none());
        let info = &a["attributes"]["_nczarr_array"];
        assert_eq!(info["fill_attribute"], 1);
        assert_eq!(info["nofill"], 1);
    }

    #[test]
    fn every_netcdf_type_has_a_data_type() {
        let kinds = [
            (NcType::Byte, json!("int8")),
            (NcType::UInt64, json!("uint64")),
            (
                NcType::Char,
                json!({"name": "null_terminated_bytes", "configuration": {"length_bytes": 1}}),
            ),
        ];
        for (ty, want) in kinds {
            assert_eq!(data_type(&Var::new("v", ty, vec![])), want);
        }
        let mut s = Var::new("s", NcType::String, vec![]);
        s.strings = StringStorage::Objects;
        s.filters.push(filter(json!({"id": "vlen-utf8"})));
        assert_eq!(data_type(&s), json!("string"));
        assert_eq!(
            codecs(&s),
            vec![json!({"name": "vlen-utf8", "configuration": {}})]
        );
    }
}
