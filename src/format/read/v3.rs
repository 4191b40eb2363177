//! Zarr v3 (`zarr.json`) metadata, as zarr-python 3 and xarray write it by default: each
//! array's object put into the terms of the Zarr v2 reader (a numpy dtype, `fill_value`,
//! `order`, numcodecs configurations) plus what v2 has no word for (chunk key encoding,
//! `dimension_names`), and the hierarchy found from each group's children's `zarr.json`, or
//! from zarr-python's consolidated metadata inline in the root's.
//!
//! Owns the meaning of the v3 keys; what a dtype, fill value or codec means is the v2 reader's
//! and the codecs'. A feature it cannot serve (a chunk grid other than regular, a storage
//! transformer, a data type netCDF has no type for) leaves the array listed and unreadable.

use super::super::json::{Json, Object};
use super::meta::{Meta, join};
use super::{
    NCPROPERTIES, Opened, Reader, SUPERBLOCK, consolidation_mismatch, nczarr_group_info,
    plain_name, read_atts, read_only_as_consolidated, u64_list,
};
use crate::error::{Error, Result};
use crate::format::Layout;
use crate::model::{GroupId, NcType, StringStorage, Tree, Values, Var};
use crate::zmap::Store;
use serde_json::Number;
use std::borrow::Cow;
use std::sync::Arc;
use typed_arena::Arena;

type Obj<'a> = Object<'a>;

/// The metadata object of every Zarr v3 node.
pub(super) const ZARR_JSON: &str = "zarr.json";
/// A group's key for zarr-python's consolidated metadata.
const CONSOLIDATED: &str = "consolidated_metadata";

/// What a `zarr.json` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Node {
    Group,
    Array,
}

/// The node a `zarr.json` describes, checking it is Zarr v3.
pub(super) fn node(obj: &Obj, key: &str) -> Result<Node> {
    if obj.get("zarr_format").and_then(Json::as_u64) != Some(3) {
        return Err(Error::metadata(key, "zarr.json without zarr_format 3"));
    }
    match obj.get("node_type").and_then(Json::as_str) {
        Some("group") => Ok(Node::Group),
        Some("array") => Ok(Node::Array),
        other => Err(Error::metadata(
            key,
            format!("node_type {} is neither group nor array", show(other)),
        )),
    }
}

fn show(v: Option<&str>) -> String {
    v.map_or_else(|| "(none)".to_string(), |s| format!("{s:?}"))
}

/// zarr-python's consolidated metadata of the root group `root`, keyed as the store keys the
/// objects it holds (`a/b/zarr.json`); `None` when there is none (or in a form not known).
pub(super) fn consolidated<'a>(root: &Obj<'a>) -> Option<Obj<'a>> {
    let mut out = Obj::default();
    for (path, obj) in inline_metadata(root)?.iter() {
        let path = path.trim_matches('/');
        if !path.is_empty() {
            out.insert(&format!("{path}/{ZARR_JSON}"), obj.clone());
        }
    }
    Some(out)
}

/// The nodes zarr-python's consolidated metadata of `group` describes, by path from it, as it
/// holds them; `None` when there is none (or in a form not known).
fn inline_metadata<'o, 'a>(group: &'o Obj<'a>) -> Option<&'o Obj<'a>> {
    let c = group.get(CONSOLIDATED)?.as_object()?;
    if c.get("kind").and_then(Json::as_str) != Some("inline") {
        return None;
    }
    c.get("metadata")?.as_object()
}

/// The user attributes of a node.
pub(super) fn attributes<'a>(obj: &Obj<'a>) -> Obj<'a> {
    match obj.get("attributes") {
        Some(Json::Object(a)) => a.clone(),
        _ => Obj::default(),
    }
}

/// Reads a Zarr v3 dataset whose root `zarr.json` is `root`, with the objects `fetched` holds;
/// a root that is an array is a dataset of that one variable, named `lone_array`. NCZarr when the root's attributes hold the superblock and `pure`
/// (`mode=zarr`) does not ask otherwise: dimensions, arrays and groups are then those
/// `_nczarr_group` lists, as in Zarr v2. Consolidated metadata serves the open unless
/// `writable` (see [`super::read_dataset_as`]).
pub(super) fn read_dataset<'a>(
    store: &'a dyn Store,
    fetched: &'a Arena<Vec<u8>>,
    root: Obj<'a>,
    pure: bool,
    xarray: bool,
    writable: bool,
    lone_array: &str,
) -> Result<Opened> {
    if node(&root, ZARR_JSON)? == Node::Array {
        let mut reader = Reader::new(Meta::new(store, None, fetched), false, false);
        reader.v3 = true;
        reader.v3_arrays.insert(String::new(), root);
        return reader.read_lone_array(lone_array, xarray, false);
    }
    let root_attrs = attributes(&root);
    let nczarr = !pure && root_attrs.contains_key(SUPERBLOCK);
    let ncproperties = root_attrs
        .get(NCPROPERTIES)
        .and_then(Json::as_str)
        .map(String::from);
    let has_consolidated = inline_metadata(&root).is_some();
    // Opened for writing, the objects are read (and checked against the consolidated nodes).
    let inline = consolidated(&root).filter(|_| !writable);
    let mut reader = Reader::new(Meta::new(store, inline, fetched), nczarr, false);
    reader.v3 = true;
    reader.keep_stored = writable;
    let read = reader
        .read_group_v3(Tree::ROOT, "", &root)
        .and_then(|()| reader.read_pending_vars());
    let consolidated_anywhere = !reader.consolidated_nodes.is_empty() || has_consolidated;
    let mismatch = consolidation_mismatch(
        read,
        writable && consolidated_anywhere,
        &reader.consolidated_nodes,
        &reader.tree,
    )?;
    if let Some(why) = mismatch {
        return read_only_as_consolidated(
            read_dataset(store, fetched, root, pure, xarray, false, lone_array)?,
            &why,
        );
    }
    reader.tree.classic_model = nczarr && super::classic_model_in(root_attrs.get(SUPERBLOCK));
    Ok(Opened {
        read_only_reason: reader.unwritable_arrays(),
        tree: reader.tree,
        layout: Layout {
            nczarr,
            xarray,
            consolidated: false,
            zarr_v3: true,
        },
        ncproperties,
        has_zmetadata: has_consolidated,
    })
}

impl<'a> Reader<'a> {
    /// Reads group `g` at `path` from its `zarr.json` `obj`: its attributes, its arrays (kept
    /// for [`Reader::read_pending_vars`]) and, depth first, its groups. Children are the ones
    /// `_nczarr_group` lists, in NCZarr; otherwise the names below `path` that hold a
    /// `zarr.json` (anything else there is not Zarr).
    fn read_group_v3(&mut self, g: GroupId, path: &str, obj: &Obj<'a>) -> Result<()> {
        let key = join(path, ZARR_JSON);
        let attrs = attributes(obj);
        self.tree.group_mut(g).atts = read_atts(&attrs, &key)?;
        if self.keep_stored {
            // What any group's consolidated metadata lists is checked against what is read.
            for (node, listed) in inline_metadata(obj).iter().flat_map(|m| m.iter()) {
                let node = join(path, node.trim_matches('/'));
                let array = listed.get("node_type").and_then(Json::as_str) == Some("array");
                self.consolidated_nodes.push((node, array));
            }
            // Consolidated metadata is made again when written: only whether there was some
            // is kept.
            let mut kept = obj.clone();
            if let Some(Json::Object(_)) = kept.remove(CONSOLIDATED) {
                kept.insert(CONSOLIDATED, Json::Object(Obj::default()));
            }
            self.tree.group_mut(g).v3_stored = Some(Arc::new(kept.to_map()));
        }
        let info = if self.nczarr {
            nczarr_group_info(&attrs, &Obj::default(), &key)?
        } else {
            None
        };
        let listed = info.is_some();
        let names: Vec<String> = match info {
            Some(info) => {
                for (name, len, unlimited) in info.dims {
                    self.tree.add_dim(g, &name, len, unlimited);
                }
                for mut declared in info.types {
                    declared.group = g;
                    self.tree.declared_types.push(declared);
                }
                let names: Vec<String> = info.arrays.into_iter().chain(info.groups).collect();
                if let Some(bad) = names.iter().find(|n| !plain_name(n)) {
                    return Err(Error::metadata(key, format!("bad child name {bad:?}")));
                }
                names
            }
            None => self
                .meta
                .children(path)?
                .into_iter()
                .filter(|n| !n.starts_with('.') && n != ZARR_JSON)
                .collect(),
        };
        let keys: Vec<String> = names
            .iter()
            .map(|n| join(&join(path, n), ZARR_JSON))
            .collect();
        self.meta.prefetch(&keys)?;
        let mut arrays = Vec::new();
        let mut groups = Vec::new();
        for (name, key) in names.into_iter().zip(keys) {
            let Some(child) = self.meta.get(&key)? else {
                if listed {
                    return Err(Error::metadata(key, "missing"));
                }
                continue;
            };
            match node(&child, &key)? {
                Node::Array => {
                    self.v3_arrays.insert(join(path, &name), child);
                    arrays.push(name);
                }
                Node::Group => groups.push((name, child)),
            }
        }
        self.pending_vars.push((g, path.to_string(), arrays));
        for (name, child) in groups {
            let sub = self.tree.add_group(g, &name);
            self.read_group_v3(sub, &join(path, &name), &child)?;
        }
        Ok(())
    }
}

/// Undoes the encoding xarray gives the `_FillValue` attribute of a Zarr v3 array: a float's
/// is the base64 text of its eight bytes as a little-endian double, a byte string's (or one
/// byte's, read as a char) the base64 text of its bytes; other types' are the value itself.
/// A complex array's is dropped.
pub(super) fn decode_xarray_fill(var: &mut Var) {
    if var.complex {
        // xarray's is a pair of such texts; a part equal to a fill is no missing number (as
        // for the `fill_value` of complex arrays): not a `_FillValue` of the parts.
        var.atts.retain(|a| a.name != "_FillValue");
        return;
    }
    let (ty, strings) = (var.ty, var.strings);
    let Some(att) = var.atts.iter_mut().find(|a| a.name == "_FillValue") else {
        return;
    };
    let text = match &att.values {
        Values::Fixed {
            ty: NcType::Char,
            bytes,
        } => bytes.clone(),
        Values::Strings(s) if s.len() == 1 => s[0].clone(),
        _ => return,
    };
    let Some(decoded) = std::str::from_utf8(&text)
        .ok()
        .and_then(crate::format::base64::decode)
    else {
        return;
    };
    if ty.is_float()
        && let Ok(bytes) = <[u8; 8]>::try_from(decoded.as_slice())
    {
        let value = f64::from_le_bytes(bytes);
        att.values = Values::fixed(NcType::Double, value.to_ne_bytes().to_vec());
    } else if ty == NcType::String && strings == StringStorage::Bytes {
        att.values = Values::Strings(vec![decoded]);
    } else if ty == NcType::Char {
        att.values = Values::text(&String::from_utf8_lossy(&decoded));
    }
}

/// An array's `zarr.json` in the terms of the v2 reader.
pub(super) struct Array<'a> {
    /// `shape`, `chunks`, `dtype`, `fill_value`, `order`, `filters` as a `.zarray` has them.
    pub zarray: Obj<'a>,
    pub attributes: Obj<'a>,
    /// `dimension_names`, when given for every dimension (a name or none).
    pub dimension_names: Option<Vec<Option<String>>>,
    /// Between the indices of chunk keys.
    pub separator: char,
    /// Chunk keys start with `c` (the default encoding; `v2` keys do not).
    pub prefixed_keys: bool,
    /// Why the array's data cannot be read, when it uses what we do not serve.
    pub unreadable: Option<String>,
}

fn number(n: u64) -> Json<'static> {
    Json::Number(Number::from(n))
}

fn text(s: String) -> Json<'static> {
    Json::String(Cow::Owned(s))
}

fn object<'a>(members: Vec<(&str, Json<'a>)>) -> Json<'a> {
    let mut o = Obj::default();
    for (k, v) in members {
        o.insert(k, v);
    }
    Json::Object(o)
}

/// Lengths as a JSON list.
fn lengths_json(lengths: &[u64]) -> Json<'static> {
    Json::Array(lengths.iter().map(|&n| number(n)).collect())
}

/// A codec's name and configuration (`{"name": ..., "configuration": {...}}`, or the name
/// alone).
fn codec_parts<'o, 'a>(c: &'o Json<'a>) -> Option<(&'o str, Option<&'o Obj<'a>>)> {
    match c {
        Json::String(name) => Some((name, None)),
        Json::Object(o) => {
            let configuration = match o.get("configuration") {
                None => None,
                Some(Json::Object(c)) => Some(c),
                Some(_) => return None,
            };
            Some((o.get("name")?.as_str()?, configuration))
        }
        _ => None,
    }
}

/// A list of codecs at `key` of `o` (`"codecs"`, required), or why there is none.
fn codec_list<'o, 'a>(o: &'o Obj<'a>, key: &str) -> Result<&'o [Json<'a>], String> {
    match o.get(key) {
        Some(Json::Array(list)) => Ok(list),
        Some(other) => Err(format!("{key} {other} is not a list of codecs")),
        None => Err(format!("no {key}")),
    }
}

/// What a list of v3 codecs amounts to.
#[derive(Default)]
struct Codecs<'a> {
    /// The array is stored transposed: Fortran order.
    fortran: bool,
    /// `bytes`' endian (`None`: not given, as for one-byte types).
    big_endian: Option<bool>,
    /// numcodecs configurations of the byte codecs, first applied first.
    filters: Vec<Json<'a>>,
    /// The array-to-bytes codec holds strings (`vlen-utf8`, `vlen-bytes`).
    strings: bool,
    /// The transposes so far, composed: the array's dimension each encoded dimension is.
    order: Vec<u64>,
    /// The elements are complex numbers: the chunks have a last axis of their two parts.
    complex: bool,
    unreadable: Option<String>,
}

impl<'a> Codecs<'a> {
    fn refuse(&mut self, why: String) {
        self.unreadable.get_or_insert(why);
    }

    /// Reads `list`, the codecs of chunks of `chunk_shape` (of complex numbers when
    /// `complex`); `inner`: of the inner chunks of shards.
    fn read(list: &[Json<'a>], chunk_shape: &[u64], inner: bool, complex: bool) -> Codecs<'a> {
        let rank = chunk_shape.len();
        let identity: Vec<u64> = (0..rank as u64).collect();
        let reversed: Vec<u64> = identity.iter().rev().copied().collect();
        let mut out = Codecs {
            order: identity.clone(),
            complex,
            ..Codecs::default()
        };
        for c in list {
            let Some((name, cfg)) = codec_parts(c) else {
                out.refuse(format!("codec {c} is not a codec"));
                continue;
            };
            let get = |k: &str| cfg.and_then(|o| o.get(k)).cloned();
            match name {
                "transpose" => {
                    let order: Option<Vec<u64>> = cfg
                        .and_then(|o| o.get("order"))
                        .and_then(Json::as_array)
                        .and_then(|a| a.iter().map(Json::as_u64).collect());
                    let mut sorted = order.clone().unwrap_or_default();
                    sorted.sort_unstable();
                    match order.filter(|_| sorted == identity) {
                        // Encoded dimension i is the dimension order[i] of its input.
                        Some(o) => out.order = o.iter().map(|&i| out.order[i as usize]).collect(),
                        None => out.refuse(format!("transpose {c} is not read")),
                    }
                    out.fortran = out.order == reversed && out.order != identity;
                }
                "sharding_indexed" | "bytes" | "vlen-utf8" | "vlen-bytes"
                    if out.order != identity && out.order != reversed =>
                {
                    out.refuse(format!("transpose to {:?} is not read", out.order));
                }
                "bytes" => match get("endian") {
                    None => {}
                    Some(endian) => match endian.as_str() {
                        Some("little") => out.big_endian = Some(false),
                        Some("big") => out.big_endian = Some(true),
                        _ => out.refuse(format!("bytes endian {endian}")),
                    },
                },
                "vlen-utf8" | "vlen-bytes" => {
                    out.strings = true;
                    out.filters
                        .push(object(vec![("id", text(name.to_string()))]));
                }
                "sharding_indexed" if inner => out.refuse("shards within shards".to_string()),
                "sharding_indexed" => out.shards(cfg, chunk_shape),
                "gzip" => out
                    .filters
                    .push(numcodecs("gzip", &[("level", get("level"))])),
                "zstd" => out.filters.push(numcodecs(
                    "zstd",
                    &[("level", get("level")), ("checksum", get("checksum"))],
                )),
                "blosc" => {
                    let shuffle = match get("shuffle").as_ref().and_then(Json::as_str) {
                        None | Some("noshuffle") => 0,
                        Some("shuffle") => 1,
                        Some("bitshuffle") => 2,
                        Some(other) => {
                            out.refuse(format!("blosc shuffle {other:?}"));
                            0
                        }
                    };
                    out.filters.push(numcodecs(
                        "blosc",
                        &[
                            ("cname", get("cname")),
                            ("clevel", get("clevel")),
                            ("shuffle", Some(number(shuffle))),
                            ("blocksize", get("blocksize")),
                        ],
                    ));
                }
                "crc32c" => out.filters.push(numcodecs("crc32c", &[])),
                other => {
                    // numcodecs' own codecs, as zarr-python 3 names them.
                    let id = other.strip_prefix("numcodecs.").unwrap_or(other);
                    let mut o = cfg.cloned().unwrap_or_default();
                    o.insert("id", text(id.to_string()));
                    out.filters.push(Json::Object(o));
                }
            }
        }
        // These work on values of the numpy dtype they name, where Zarr v3 serialises with
        // `bytes` after them: served only as stored little-endian (zarr-python's default).
        let typed = out.filters.iter().find_map(|f| {
            let id = f.get("id").and_then(Json::as_str)?;
            ["delta", "fixedscaleoffset", "quantize"]
                .contains(&id)
                .then(|| id.to_string())
        });
        if let (Some(id), Some(true)) = (typed, out.big_endian) {
            out.refuse(format!("numcodecs.{id} before a big-endian bytes codec"));
        }
        out
    }

    /// `sharding_indexed`: shards of `shard_shape` (as encoded, after any transpose) holding
    /// inner chunks, as this crate's sharding codec takes it.
    fn shards(&mut self, cfg: Option<&Obj<'a>>, shard_shape: &[u64]) {
        let Some(cfg) = cfg else {
            return self.refuse("sharding_indexed without a configuration".to_string());
        };
        let inner_shape: Option<Vec<u64>> = cfg
            .get("chunk_shape")
            .and_then(Json::as_array)
            .and_then(|a| a.iter().map(Json::as_u64).collect());
        let Some(mut inner_shape) = inner_shape else {
            return self.refuse("sharding_indexed without a chunk_shape".to_string());
        };
        // The inner chunk shape applies to the shard as transposed.
        let mut shard_shape: Vec<u64> = if self.fortran {
            shard_shape.iter().rev().copied().collect()
        } else {
            shard_shape.to_vec()
        };
        let list = match codec_list(cfg, "codecs") {
            Ok(list) => list,
            Err(why) => return self.refuse(format!("sharding_indexed: {why}")),
        };
        let inner = Codecs::read(list, &inner_shape, true, false);
        if self.complex {
            // The two parts of each number are the last axis of both.
            shard_shape.push(2);
            inner_shape.push(2);
        }
        if let Some(why) = inner.unreadable {
            return self.refuse(format!("in shards: {why}"));
        }
        if inner.strings {
            return self.refuse("strings in shards are not read yet".to_string());
        }
        if inner.fortran && self.complex {
            return self.refuse("complex numbers transposed in shards are not read".to_string());
        }
        self.big_endian = inner.big_endian;
        let index: Vec<(String, Option<String>)> = cfg
            .get("index_codecs")
            .and_then(Json::as_array)
            .unwrap_or(&[])
            .iter()
            .filter_map(codec_parts)
            .map(|(name, c)| {
                let endian = c.and_then(|c| c.get("endian")).and_then(Json::as_str);
                (name.to_string(), endian.map(String::from))
            })
            .collect();
        let little = |e: &Option<String>| e.as_deref().is_none_or(|e| e == "little");
        let checksum = match index.as_slice() {
            [(b, e)] if b == "bytes" && little(e) => false,
            [(b, e), (c, _)] if b == "bytes" && little(e) && c == "crc32c" => true,
            _ => return self.refuse(format!("shard index codecs {index:?} are not read")),
        };
        let location = match cfg.get("index_location").and_then(Json::as_str) {
            None | Some("end") => "end",
            Some("start") => "start",
            Some(other) => return self.refuse(format!("shard index_location {other:?}")),
        };
        self.filters.push(object(vec![
            ("id", text("sharding_indexed".to_string())),
            ("shard_shape", lengths_json(&shard_shape)),
            ("chunk_shape", lengths_json(&inner_shape)),
            ("codecs", Json::Array(inner.filters)),
            ("index_location", text(location.to_string())),
            ("index_checksum", Json::Bool(checksum)),
            (
                "inner_order",
                text(if inner.fortran { "F" } else { "C" }.into()),
            ),
        ]));
    }
}

/// A numcodecs configuration of `id` with the parameters given.
fn numcodecs<'a>(id: &str, params: &[(&str, Option<Json<'a>>)]) -> Json<'a> {
    let mut members = vec![("id", text(id.to_string()))];
    for (k, v) in params {
        if let Some(v) = v {
            members.push((k, v.clone()));
        }
    }
    object(members)
}

/// The numpy dtype of a v3 `data_type` stored in the byte order `big` (`None`: not given),
/// or why it is not read.
fn numpy_dtype(data_type: &Json, big: Option<bool>) -> std::result::Result<String, String> {
    let order = if big == Some(true) { '>' } else { '<' };
    let (name, cfg) = match data_type {
        Json::String(s) => (s.as_ref(), None),
        Json::Object(o) => match o.get("name").and_then(Json::as_str) {
            Some(name) => (name, o.get("configuration").and_then(Json::as_object)),
            None => return Err(format!("data type {data_type} has no name")),
        },
        _ => return Err(format!("data type {data_type} is not a name")),
    };
    let length = || {
        cfg.and_then(|c| c.get("length_bytes"))
            .and_then(Json::as_u64)
            .filter(|&n| n > 0)
            .ok_or_else(|| format!("data type {data_type} has no length_bytes"))
    };
    Ok(match name {
        "bool" => "|b1".to_string(),
        "int8" => "|i1".to_string(),
        "uint8" => "|u1".to_string(),
        "int16" => format!("{order}i2"),
        "int32" => format!("{order}i4"),
        "int64" => format!("{order}i8"),
        "uint16" => format!("{order}u2"),
        "uint32" => format!("{order}u4"),
        "uint64" => format!("{order}u8"),
        "float16" => format!("{order}f2"),
        "float32" => format!("{order}f4"),
        "float64" => format!("{order}f8"),
        "complex64" => format!("{order}c8"),
        "complex128" => format!("{order}c16"),
        "string" | "bytes" | "variable_length_bytes" => "|O".to_string(),
        "fixed_length_utf32" => match length()? {
            n if n % 4 == 0 => format!("{order}U{}", n / 4),
            n => return Err(format!("fixed_length_utf32 of {n} bytes")),
        },
        // One byte is a char, in NCZarr as in pure Zarr (netcdf-c's marker).
        "null_terminated_bytes" => match length()? {
            1 => ">S1".to_string(),
            n => format!("|S{n}"),
        },
        // zarr-python's numpy void, and the raw bits of the Zarr v3 specification (`r24`).
        "raw_bytes" => format!("|V{}", length()?),
        bits if let Some(n) = raw_bits(bits) => format!("|V{n}"),
        "numpy.datetime64" | "numpy.timedelta64" => {
            let unit = cfg
                .and_then(|c| c.get("unit"))
                .and_then(Json::as_str)
                .ok_or_else(|| format!("data type {data_type} has no unit"))?;
            let scale = cfg
                .and_then(|c| c.get("scale_factor"))
                .and_then(Json::as_u64)
                .unwrap_or(1);
            let kind = if name == "numpy.datetime64" { 'M' } else { 'm' };
            match scale {
                1 => format!("{order}{kind}8[{unit}]"),
                n => format!("{order}{kind}8[{n}{unit}]"),
            }
        }
        other => return Err(format!("Zarr v3 data type {other} is not read")),
    })
}

/// The bytes of a Zarr v3 raw data type `r<bits>` (a whole number of bytes).
fn raw_bits(name: &str) -> Option<usize> {
    let bits: usize = name.strip_prefix('r')?.parse().ok()?;
    (bits > 0 && bits.is_multiple_of(8) && !name[1..].starts_with(['0', '+'])).then_some(bits / 8)
}

/// The fields of zarr-python's `structured` data type in the form of a v2 structured dtype
/// (`[["x", "<i4"], ...]`), every field in the byte order `big` (little when not given, as
/// zarr-python reads them); `None` for another data type.
fn structured_dtype<'a>(
    data_type: &Json,
    big: Option<bool>,
) -> Option<std::result::Result<Vec<Json<'a>>, String>> {
    let obj = data_type.as_object()?;
    if !matches!(
        obj.get("name").and_then(Json::as_str),
        Some("structured" | "struct")
    ) {
        return None;
    }
    Some(structured_fields(obj, big, 0))
}

fn structured_fields<'a>(
    obj: &Object,
    big: Option<bool>,
    depth: usize,
) -> std::result::Result<Vec<Json<'a>>, String> {
    if depth > 16 {
        return Err("structured data type nested too deep".into());
    }
    let fields = obj
        .get("configuration")
        .and_then(|c| c.get("fields"))
        .and_then(Json::as_array)
        .ok_or_else(|| "structured data type without fields".to_string())?;
    fields
        .iter()
        .map(|field| {
            // `structured` lists [name, type]; `struct` {"name": ..., "data_type": ...}.
            let (name, ty) = match (field.as_array(), field.as_object()) {
                (Some([Json::String(name), ty]), _) => (name.as_ref(), ty),
                (_, Some(o)) => match (o.get("name").and_then(Json::as_str), o.get("data_type")) {
                    (Some(name), Some(ty)) => (name, ty),
                    _ => return Err(format!("struct field {field} has no name and data_type")),
                },
                _ => return Err(format!("structured field {field} is not [name, type]")),
            };
            let raw_bytes = ty
                .as_object()
                .filter(|o| o.get("name").and_then(Json::as_str) == Some("raw_bytes"))
                .map(|o| o.get("configuration").and_then(|c| c.get("length_bytes")));
            let v2 = match (ty.as_object(), raw_bytes) {
                (_, Some(length)) => match length.and_then(Json::as_u64) {
                    Some(n) if n > 0 => text(format!("|V{n}")),
                    _ => return Err(format!("raw_bytes field {name:?} has no length_bytes")),
                },
                (Some(nested), None)
                    if matches!(
                        nested.get("name").and_then(Json::as_str),
                        Some("structured" | "struct")
                    ) =>
                {
                    Json::Array(structured_fields(nested, big, depth + 1)?)
                }
                _ => text(numpy_dtype(ty, big)?),
            };
            Ok(Json::Array(vec![text(name.to_string()), v2]))
        })
        .collect()
}

/// A v3 fill value in the form a v2 `.zarray` gives it: floats stored as hex bit patterns
/// (`"0x7fc00000"`) become numbers (or `"NaN"`); the rest is the same in both.
fn v2_fill<'a>(fill: &Json<'a>, dtype: &str) -> Json<'a> {
    let bits = |s: &str| u64::from_str_radix(s.strip_prefix("0x")?, 16).ok();
    let float = |s: &str| -> Option<Json<'a>> {
        let value = match dtype.get(1..)? {
            "f2" => f64::from(half::f16::from_bits(u16::try_from(bits(s)?).ok()?)),
            "f4" | "c8" => f64::from(f32::from_bits(u32::try_from(bits(s)?).ok()?)),
            "f8" | "c16" => f64::from_bits(bits(s)?),
            _ => return None,
        };
        Some(match Number::from_f64(value) {
            Some(n) => Json::Number(n),
            None if value.is_nan() => text("NaN".into()),
            None if value > 0.0 => text("Infinity".into()),
            None => text("-Infinity".into()),
        })
    };
    match fill {
        Json::String(s) if s.starts_with("0x") => float(s).unwrap_or_else(|| fill.clone()),
        Json::Array(parts) => Json::Array(parts.iter().map(|p| v2_fill(p, dtype)).collect()),
        other => other.clone(),
    }
}

/// An array's `zarr.json` (`key`) in the terms of the v2 reader.
pub(super) fn array<'a>(obj: &Obj<'a>, key: &str) -> Result<Array<'a>> {
    let mut unreadable: Option<String> = None;
    let mut refuse = |why: String| {
        unreadable.get_or_insert(why);
    };
    let shape = u64_list(obj.get("shape"), key, "shape")?;
    let grid = obj.get("chunk_grid");
    let chunks = match grid.and_then(codec_parts) {
        Some(("regular", Some(cfg))) => {
            u64_list(cfg.get("chunk_shape"), key, "chunk_grid chunk_shape")?
        }
        _ => {
            refuse(format!(
                "chunk grid {} is not read",
                grid.map_or_else(|| "(none)".to_string(), Json::to_string)
            ));
            shape.iter().map(|&n| n.max(1)).collect()
        }
    };
    let encoding = obj.get("chunk_key_encoding");
    let (prefixed_keys, default_separator) = match encoding.and_then(codec_parts) {
        Some(("default", _)) | None => (true, "/"),
        Some(("v2", _)) => (false, "."),
        Some((other, _)) => {
            refuse(format!("chunk key encoding {other:?} is not read"));
            (true, "/")
        }
    };
    let separator = match encoding
        .and_then(codec_parts)
        .and_then(|(_, cfg)| cfg?.get("separator")?.as_str())
        .unwrap_or(default_separator)
    {
        "/" => '/',
        "." => '.',
        other => return Err(Error::metadata(key, format!("bad separator {other:?}"))),
    };
    if obj
        .get("storage_transformers")
        .and_then(Json::as_array)
        .is_some_and(|t| !t.is_empty())
    {
        refuse("storage transformers are not read".to_string());
    }
    let data_type = obj
        .get("data_type")
        .ok_or_else(|| Error::metadata(key, "missing data_type"))?;
    let complex = matches!(data_type.as_str(), Some("complex64" | "complex128"));
    let codecs = match codec_list(obj, "codecs") {
        Ok(list) => Codecs::read(list, &chunks, false, complex),
        Err(why) => Codecs {
            unreadable: Some(why),
            ..Codecs::default()
        },
    };
    if let Some(why) = &codecs.unreadable {
        refuse(why.clone());
    }
    let dtype = match structured_dtype(data_type, codecs.big_endian) {
        Some(Ok(fields)) => Json::Array(fields),
        Some(Err(why)) => {
            refuse(why);
            text("|u1".into())
        }
        None => match numpy_dtype(data_type, codecs.big_endian) {
            Ok(d) => text(d),
            Err(why) => {
                refuse(why);
                text("|u1".into())
            }
        },
    };
    let fill = v2_fill(
        obj.get("fill_value").unwrap_or(&Json::Null),
        dtype.as_str().unwrap_or(""),
    );
    let mut zarray = Obj::default();
    zarray.insert("shape", lengths_json(&shape));
    zarray.insert("chunks", lengths_json(&chunks));
    zarray.insert("dtype", dtype);
    zarray.insert("fill_value", fill);
    zarray.insert("order", text(if codecs.fortran { "F" } else { "C" }.into()));
    zarray.insert("filters", Json::Array(codecs.filters));
    let dimension_names = obj
        .get("dimension_names")
        .and_then(Json::as_array)
        .filter(|names| names.len() == shape.len())
        .and_then(|names| {
            names
                .iter()
                .map(|n| match n {
                    Json::Null => Some(None),
                    Json::String(s) => Some(Some(s.to_string())),
                    _ => None,
                })
                .collect()
        });
    Ok(Array {
        zarray,
        attributes: attributes(obj),
        dimension_names,
        separator,
        prefixed_keys,
        unreadable,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::json::parse;

    fn translated(text: &str) -> Array<'static> {
        let bytes: &'static [u8] = Box::leak(text.as_bytes().to_vec().into_boxed_slice());
        let Json::Object(obj) = parse(bytes).unwrap() else {
            panic!("not an object")
        };
        array(&obj, "a/zarr.json").unwrap()
    }

    fn array_json(data_type: &str, fill: &str, codecs: &str, extra: &str) -> String {
        format!(
            r#"{{"zarr_format": 3, "node_type": "array", "shape": [4, 6],
            "data_type": {data_type}, "fill_value": {fill},
            "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": [2, 3]}}}},
            "chunk_key_encoding": {{"name": "default", "configuration": {{"separator": "/"}}}},
            "codecs": {codecs}, "attributes": {{"units": "K"}} {extra}}}"#
        )
    }

    #[test]
    fn arrays_read_as_their_v2_equivalents() {
        let a = translated(&array_json(
            r#""float32""#,
            r#""0x7fc00000""#,
            r#"[{"name": "transpose", "configuration": {"order": [1, 0]}},
                {"name": "bytes", "configuration": {"endian": "big"}},
                {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5,
                  "shuffle": "bitshuffle", "typesize": 4, "blocksize": 0}},
                {"name": "crc32c"}]"#,
            r#", "dimension_names": ["y", null]"#,
        ));
        let z = Json::Object(a.zarray).to_value();
        assert_eq!(z["dtype"], ">f4");
        assert_eq!(z["fill_value"], "NaN");
        assert_eq!(z["order"], "F");
        assert_eq!(z["chunks"], serde_json::json!([2, 3]));
        assert_eq!(
            z["filters"],
            serde_json::json!([
                {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 2, "blocksize": 0},
                {"id": "crc32c"}
            ])
        );
        assert_eq!(a.dimension_names, Some(vec![Some("y".into()), None]));
        assert_eq!(Json::Object(a.attributes).to_value()["units"], "K");
        assert!(a.prefixed_keys && a.separator == '/');
        assert!(a.unreadable.is_none());
    }

    #[test]
    fn raw_bytes_are_numpy_void() {
        for data_type in [
            r#"{"name": "raw_bytes", "configuration": {"length_bytes": 3}}"#,
            r#""r24""#,
        ] {
            let a = translated(&array_json(data_type, r#""YWJj""#, "[]", ""));
            let z = Json::Object(a.zarray).to_value();
            assert_eq!(
                (&z["dtype"], &z["fill_value"]),
                (&"|V3".into(), &"YWJj".into())
            );
            assert!(a.unreadable.is_none(), "{data_type}: {:?}", a.unreadable);
        }
    }

    #[test]
    fn float16_fill_values_in_hex_are_numbers() {
        for (hex, want) in [
            (r#""0x3c00""#, serde_json::json!(1.0)),
            (r#""0x7e00""#, serde_json::json!("NaN")),
            (r#""0xfc00""#, serde_json::json!("-Infinity")),
        ] {
            let a = translated(&array_json(
                r#""float16""#,
                hex,
                r#"[{"name": "bytes", "configuration": {"endian": "little"}}]"#,
                "",
            ));
            let z = Json::Object(a.zarray).to_value();
            assert_eq!(z["dtype"], "<f2");
            assert_eq!(z["fill_value"], want, "{hex}");
        }
    }

    #[test]
    fn shards_become_this_crates_sharding_codec() {
        let a = translated(&array_json(
            r#"{"name": "fixed_length_utf32", "configuration": {"length_bytes": 12}}"#,
            r#""ab""#,
            r#"[{"name": "sharding_indexed", "configuration": {"chunk_shape": [1, 3],
                "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                           {"name": "zstd", "configuration": {"level": 0, "checksum": false}}],
                "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                                 {"name": "crc32c"}],
                "index_location": "start"}}]"#,
            r#", "chunk_key_encoding": {"name": "v2"}"#,
        ));
        let z = Json::Object(a.zarray).to_value();
        assert_eq!(z["dtype"], "<U3");
        assert_eq!(
            z["filters"],
            serde_json::json!([{"id": "sharding_indexed", "shard_shape": [2, 3],
                "chunk_shape": [1, 3], "codecs": [{"id": "zstd", "level": 0, "checksum": false}],
                "index_location": "start", "index_checksum": true, "inner_order": "C"}])
        );
        assert!(!a.prefixed_keys && a.separator == '.');
        assert!(a.unreadable.is_none(), "{:?}", a.unreadable);
    }

    #[test]
    fn what_is_not_served_leaves_the_array_unreadable() {
        for (data_type, codecs, extra, why) in [
            (
                r#""float32""#,
                "[]",
                r#", "storage_transformers": [{"name": "x"}]"#,
                "storage",
            ),
            (r#""r12""#, "[]", "", "data type r12"),
            (r#""r016""#, "[]", "", "data type r016"),
            (
                r#""float32""#,
                r#"[{"name": "transpose", "configuration": {"order": [0, 0]}}]"#,
                "",
                "transpose",
            ),
            (
                r#""string""#,
                r#"[{"name": "sharding_indexed", "configuration": {"chunk_shape": [1, 3],
                    "codecs": [{"name": "vlen-utf8"}],
                    "index_codecs": [{"name": "bytes"}]}}]"#,
                "",
                "strings in shards",
            ),
            (
                r#""int16""#,
                r#"[{"name": "sharding_indexed", "configuration": {"chunk_shape": [1, 3],
                    "codecs": [{"name": "bytes"}], "index_codecs": [{"name": "gzip"}]}}]"#,
                "",
                "index codecs",
            ),
            (
                r#""int16""#,
                "[]",
                r#", "chunk_grid": {"name": "rectilinear"}"#,
                "chunk grid",
            ),
            (
                r#""float64""#,
                r#"[{"name": "numcodecs.fixedscaleoffset", "configuration":
                    {"offset": 0, "scale": 10, "dtype": "<f8", "astype": "<u2"}},
                    {"name": "bytes", "configuration": {"endian": "big"}}]"#,
                "",
                "fixedscaleoffset before a big-endian bytes",
            ),
        ] {
            // A key given twice keeps its last value.
            let a = translated(&array_json(data_type, "0", codecs, extra));
            let got = a.unreadable.unwrap_or_default();
            assert!(got.contains(why), "{why}: {got}");
        }
    }

    #[test]
    fn nodes_and_consolidated_metadata() {
        let root = br#"{"zarr_format": 3, "node_type": "group", "attributes": {"t": 1},
            "consolidated_metadata": {"kind": "inline", "must_understand": false,
              "metadata": {"a": {"zarr_format": 3, "node_type": "array"},
                           "g/b": {"zarr_format": 3, "node_type": "array"}}}}"#;
        let Json::Object(obj) = parse(root).unwrap() else {
            panic!()
        };
        assert_eq!(node(&obj, "zarr.json").unwrap(), Node::Group);
        let c = consolidated(&obj).unwrap();
        let keys: Vec<&str> = c.iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["a/zarr.json", "g/b/zarr.json"]);
        assert_eq!(Json::Object(attributes(&obj)).to_value()["t"], 1);
        let Json::Object(v2) = parse(br#"{"zarr_format": 2, "node_type": "group"}"#).unwrap()
        else {
            panic!()
        };
        assert!(node(&v2, "zarr.json").is_err());
    }
}
