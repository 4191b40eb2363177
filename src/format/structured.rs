//! numpy structured dtypes as Zarr v2 stores them (`[["x", "<i4"], ["v", "<f4", [3]],
//! ["inner", [...]]]`) <-> the records of the model.
//!
//! Each field's own dtype string is read as [`super::dtype::parse`] reads an array's; what
//! netCDF has no compound field for (numpy objects) is refused with the reason, which leaves
//! only that variable unreadable. Knows nothing of chunks, codecs or C.

use super::dtype;
use super::json::{Json, Object};
use crate::error::{Error, Result};
use crate::model::{FieldKind, MOST_RECORD_BYTES, NcType, Record, RecordField, StringStorage};

/// Records nested deeper than this are refused.
const DEEPEST: usize = 16;

/// Fields one record may have.
const MOST_FIELDS: usize = 4096;

/// Dimensions one field may have (HDF5's most, which netCDF's compound fields follow).
const MOST_FIELD_DIMS: usize = 32;

/// The longest netCDF name, in bytes (`NC_MAX_NAME`).
const LONGEST_NAME: usize = 256;

fn refuse(why: impl Into<String>) -> Error {
    Error::Unsupported {
        var: String::new(),
        why: why.into(),
    }
}

/// The record of a structured dtype (the list of its fields).
pub fn parse(fields: &[Json]) -> Result<Record> {
    record(fields, 0)
}

fn record(fields: &[Json], depth: usize) -> Result<Record> {
    if depth > DEEPEST {
        return Err(refuse(format!(
            "structured dtype nested more than {DEEPEST} deep"
        )));
    }
    if fields.len() > MOST_FIELDS {
        return Err(refuse(format!(
            "structured dtype of more than {MOST_FIELDS} fields"
        )));
    }
    let mut out = Vec::with_capacity(fields.len());
    let mut at = 0usize;
    for (i, field) in fields.iter().enumerate() {
        let parts = field
            .as_array()
            .filter(|p| (2..=3).contains(&p.len()))
            .ok_or_else(|| refuse(format!("structured dtype field {i} is not [name, dtype]")))?;
        let name = parts[0]
            .as_str()
            .ok_or_else(|| refuse(format!("structured dtype field {i} has no name")))?;
        if name.len() > LONGEST_NAME {
            return Err(refuse(format!(
                "field name of {} bytes, longer than netCDF allows",
                name.len()
            )));
        }
        let mut dims = match parts.get(2) {
            None => Vec::new(),
            Some(Json::Array(shape)) => shape
                .iter()
                .map(|d| d.as_u64().and_then(|d| usize::try_from(d).ok()))
                .collect::<Option<Vec<usize>>>()
                .ok_or_else(|| refuse(format!("field {name:?} has a bad shape")))?,
            Some(Json::Number(_)) => vec![
                parts[2]
                    .as_u64()
                    .and_then(|d| usize::try_from(d).ok())
                    .ok_or_else(|| refuse(format!("field {name:?} has a bad shape")))?,
            ],
            Some(_) => return Err(refuse(format!("field {name:?} has a bad shape"))),
        };
        if dims.len() > MOST_FIELD_DIMS || dims.contains(&0) {
            return Err(refuse(format!(
                "field {name:?} has a shape netCDF cannot hold: {dims:?}"
            )));
        }
        let (kind, value_size) = match &parts[1] {
            Json::String(text) => match void_width(text) {
                // numpy's padding between the fields of an aligned dtype.
                Some(n) if name.is_empty() => {
                    at = grown(at, n)?;
                    continue;
                }
                Some(n) => {
                    dims.push(n);
                    (
                        FieldKind::Number {
                            ty: NcType::UByte,
                            endian: crate::model::Endian::native(),
                        },
                        1,
                    )
                }
                None => field_kind(name, text, &mut dims)?,
            },
            Json::Array(inner) => {
                let nested = record(inner, depth + 1)?;
                let size = nested.stored_size;
                (FieldKind::Nested(nested), size)
            }
            _ => return Err(refuse(format!("field {name:?} has no dtype"))),
        };
        let values = dims
            .iter()
            .try_fold(1usize, |n, &d| n.checked_mul(d))
            .ok_or_else(|| refuse(format!("field {name:?} is too large")))?;
        let bytes = values
            .checked_mul(value_size)
            .ok_or_else(|| refuse(format!("field {name:?} is too large")))?;
        let name = field_name(name, i);
        if out.iter().any(|f: &RecordField| f.name == name) {
            return Err(refuse(format!("two fields named {name:?}")));
        }
        out.push(RecordField {
            name,
            stored_offset: at,
            dims,
            kind,
        });
        at = grown(at, bytes)?;
    }
    if out.is_empty() {
        return Err(refuse("structured dtype without fields"));
    }
    Ok(Record {
        fields: out,
        stored_size: at,
        memory: None,
    })
}

/// A record's stored size `at` grown by `bytes`, or the refusal of a record larger than
/// [`MOST_RECORD_BYTES`].
fn grown(at: usize, bytes: usize) -> Result<usize> {
    at.checked_add(bytes)
        .filter(|&n| n <= MOST_RECORD_BYTES)
        .ok_or_else(|| refuse(format!("record of more than {MOST_RECORD_BYTES} bytes")))
}

/// The width of a numpy void dtype (`|V8`: raw bytes).
pub fn void_width(text: &str) -> Option<usize> {
    let body = text.trim_start_matches(['<', '>', '|', '=']);
    body.strip_prefix('V')?.parse().ok().filter(|&n| n > 0)
}

/// A field name netCDF can give: `/` is no part of a netCDF name, and numpy names a field it
/// was given no name for `f<i>`.
fn field_name(name: &str, i: usize) -> String {
    if name.is_empty() {
        format!("f{i}")
    } else {
        name.replace('/', "_")
    }
}

/// The kind of one value of a field of dtype `text`, and its stored size; `dims` gains the
/// dimension its values bring (text length, complex parts).
fn field_kind(name: &str, text: &str, dims: &mut Vec<usize>) -> Result<(FieldKind, usize)> {
    let dt = dtype::parse(text, false).map_err(|e| match e {
        Error::Unsupported { why, .. } => refuse(format!("field {name:?}: {why}")),
        other => other,
    })?;
    Ok(match (dt.ty, dt.strings) {
        (_, StringStorage::Objects) => {
            return Err(refuse(format!(
                "field {name:?}: numpy objects in records are not read"
            )));
        }
        (NcType::String, StringStorage::Ucs4) => (
            FieldKind::Ucs4 {
                chars: dt.width / 4,
                endian: dt.endian,
            },
            dt.width,
        ),
        (NcType::String | NcType::Char, _) => {
            if dt.width > 1 {
                dims.push(dt.width);
            }
            (FieldKind::Char, 1)
        }
        _ if dt.half => (FieldKind::Half { endian: dt.endian }, 2),
        (ty, _) if dt.complex => {
            dims.push(2);
            (
                FieldKind::Number {
                    ty,
                    endian: dt.endian,
                },
                ty.size(),
            )
        }
        (ty, _) => (
            FieldKind::Number {
                ty,
                endian: dt.endian,
            },
            ty.size(),
        ),
    })
}

/// The Zarr v2 dtype of `record` (raw bytes: `|V<n>`): its fields in the order they are
/// stored, numbers in their byte order, text a byte (`|S1`) per character, and numpy's padding
/// (`["", "|V<n>"]`, as it lists an aligned dtype) wherever no field is stored.
pub fn to_json(record: &Record) -> serde_json::Value {
    use serde_json::Value;
    if record.is_raw() {
        // numpy's void dtype: raw bytes.
        return Value::from(format!("|V{}", record.stored_size));
    }
    let order = |endian: crate::model::Endian| match endian {
        crate::model::Endian::Little => '<',
        crate::model::Endian::Big => '>',
    };
    let mut fields: Vec<&RecordField> = record.fields.iter().collect();
    fields.sort_by_key(|f| f.stored_offset);
    let mut listed = Vec::with_capacity(fields.len());
    let mut at = 0usize;
    let pad = |listed: &mut Vec<Value>, from: usize, to: usize| {
        if to > from {
            listed.push(serde_json::json!(["", format!("|V{}", to - from)]));
        }
    };
    for f in fields {
        pad(&mut listed, at, f.stored_offset);
        let (dt, size) = match &f.kind {
            FieldKind::Number { ty, endian } => (
                Value::from(dtype::format(*ty, *endian, 1, false)),
                ty.size(),
            ),
            FieldKind::Char => (Value::from("|S1"), 1),
            FieldKind::Half { endian } => (Value::from(dtype::half_floats(*endian)), 2),
            FieldKind::Ucs4 { chars, endian } => (
                Value::from(format!("{}U{chars}", order(*endian))),
                chars.saturating_mul(4),
            ),
            FieldKind::Nested(inner) => (to_json(inner), inner.stored_size),
        };
        let mut entry = vec![Value::from(f.name.as_str()), dt];
        if !f.dims.is_empty() {
            entry.push(Value::from(f.dims.clone()));
        }
        listed.push(Value::Array(entry));
        let values: usize = f.dims.iter().product();
        at = at.max(f.stored_offset + values.saturating_mul(size));
    }
    pad(&mut listed, at, record.stored_size);
    Value::Array(listed)
}

/// The fill value of records given field by field (zarr-python's Zarr v3 form: each field's
/// JSON value by name, nested records as objects; a field not named is zero), as a compound
/// value in memory.
pub fn fill_of_fields(record: &Record, fields: &Object) -> Result<Vec<u8>> {
    let mut out = vec![0u8; record.memory_size()?];
    put_fields(record, fields, &mut out)?;
    Ok(out)
}

fn put_fields(record: &Record, fields: &Object, out: &mut [u8]) -> Result<()> {
    let offsets = record.memory_offsets()?;
    for (f, offset) in record.fields.iter().zip(offsets) {
        let Some(value) = fields.get(&f.name) else {
            continue;
        };
        let bad = || refuse(format!("fill value {value} of field {:?}", f.name));
        let slot = &mut out[offset..];
        match &f.kind {
            FieldKind::Nested(inner) => {
                let inner_fields = value.as_object().ok_or_else(bad)?;
                put_fields(inner, inner_fields, slot)?;
            }
            FieldKind::Char => {
                let text = value.as_str().ok_or_else(bad)?;
                let bytes = super::base64::decode(text).unwrap_or_else(|| text.as_bytes().to_vec());
                let n = f.dims.iter().product::<usize>().min(bytes.len());
                slot[..n].copy_from_slice(&bytes[..n]);
            }
            FieldKind::Ucs4 { chars, .. } => {
                let text = value.as_str().ok_or_else(bad)?;
                if text.chars().count() > *chars {
                    return Err(bad());
                }
                let mut at = 0;
                for c in text.chars() {
                    at += c.encode_utf8(&mut slot[at..]).len();
                }
            }
            FieldKind::Number { ty, .. } => {
                let values = flat_numbers(value);
                if values.len() > f.dims.iter().product::<usize>() {
                    return Err(bad());
                }
                for (i, v) in values.iter().enumerate() {
                    let bytes = field_number(*ty, v).ok_or_else(bad)?;
                    let at = i * ty.size();
                    slot.get_mut(at..at + ty.size())
                        .ok_or_else(bad)?
                        .copy_from_slice(&bytes);
                }
            }
            FieldKind::Half { .. } => {
                let values = flat_numbers(value);
                if values.len() > f.dims.iter().product::<usize>() {
                    return Err(bad());
                }
                for (i, v) in values.iter().enumerate() {
                    let half = match v.as_str().and_then(|s| s.strip_prefix("0x")) {
                        Some(hex) => u16::from_str_radix(hex, 16).map(half::f16::from_bits).ok(),
                        None => field_number(NcType::Double, v)
                            .and_then(|b| b.try_into().ok())
                            .map(|b| half::f16::from_f64(f64::from_ne_bytes(b))),
                    };
                    let single = half.ok_or_else(bad)?.to_f32().to_ne_bytes();
                    slot.get_mut(4 * i..4 * i + 4)
                        .ok_or_else(bad)?
                        .copy_from_slice(&single);
                }
            }
        }
    }
    Ok(())
}

/// The numbers of a field's value: itself, or every number of its (nested) arrays in order.
fn flat_numbers<'v, 'a>(value: &'v Json<'a>) -> Vec<&'v Json<'a>> {
    match value {
        Json::Array(items) => items.iter().flat_map(flat_numbers).collect(),
        other => vec![other],
    }
}

/// Native bytes of one number of type `ty` (a float also as the hex of its bits, `0x...`).
fn field_number(ty: NcType, v: &Json) -> Option<Vec<u8>> {
    if let Some(hex) = v.as_str().and_then(|s| s.strip_prefix("0x")) {
        let bits = u64::from_str_radix(hex, 16).ok()?;
        return match ty {
            NcType::Float => Some(
                f32::from_bits(u32::try_from(bits).ok()?)
                    .to_ne_bytes()
                    .to_vec(),
            ),
            NcType::Double => Some(f64::from_bits(bits).to_ne_bytes().to_vec()),
            _ => None,
        };
    }
    super::number::from_json(ty, &v.to_value())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::json::parse as parse_json;
    use crate::model::Endian;

    fn fields(text: &'static str) -> Result<Record> {
        let json = parse_json(text.as_bytes()).unwrap();
        parse(json.as_array().unwrap())
    }

    #[test]
    fn every_kind_of_field_is_placed_packed() {
        let r = fields(
            r#"[["x", "<i4"], ["b", ">i2", [3]], ["s", "|S5"], ["h", "<f2"], ["c", "<c8"],
                ["t", "<M8[s]"], ["u", "<U2"], ["v", "|V3"], ["ok", "|b1"],
                ["in", [["a", "|u1"], ["", "|V1"], ["b", "<f8"]], 2], ["a/b", "|S1"]]"#,
        )
        .unwrap();
        let offsets: Vec<_> = r.fields.iter().map(|f| f.stored_offset).collect();
        // 4 + 6 + 5 + 2 + 8 + 8 + 8 + 3 + 1 + 2 * 10 + 1
        assert_eq!(offsets, vec![0, 4, 10, 15, 17, 25, 33, 41, 44, 45, 65]);
        assert_eq!(r.stored_size, 66);
        assert_eq!(r.fields[1].dims, vec![3]);
        assert_eq!(
            r.fields[1].kind,
            FieldKind::Number {
                ty: NcType::Short,
                endian: Endian::Big
            }
        );
        assert_eq!(
            (r.fields[2].kind.clone(), r.fields[2].dims.clone()),
            (FieldKind::Char, vec![5])
        );
        assert_eq!(r.fields[4].dims, vec![2]);
        assert_eq!(r.fields[6].memory_dims(), vec![8]);
        assert_eq!(r.fields[7].dims, vec![3]);
        let FieldKind::Nested(inner) = &r.fields[9].kind else {
            panic!("not nested")
        };
        assert_eq!(inner.stored_size, 10, "padding is skipped, not a field");
        assert_eq!(inner.fields.len(), 2);
        assert_eq!(r.fields[10].name, "a_b");
        assert_eq!(r.fields[10].dims, Vec::<usize>::new());
    }

    #[test]
    fn a_record_written_as_a_dtype_reads_back_as_itself() {
        let text = r#"[["x", "<i4"], ["b", ">i2", [3]], ["s", "|S1", [5]], ["h", "<f2"],
                ["u", "<U2"], ["in", [["a", "|u1"], ["", "|V7"], ["b", "<f8"]], [2]]]"#;
        let r = fields(text).unwrap();
        let written = to_json(&r);
        let expected: serde_json::Value = serde_json::from_str(text).unwrap();
        assert_eq!(written, expected);
        // Fields defined out of order, with room between and after them.
        let mut r = fields(r#"[["a", "<i4"], ["b", "|u1"]]"#).unwrap();
        r.fields[0].stored_offset = 8;
        r.fields[1].stored_offset = 2;
        r.stored_size = 16;
        let written = to_json(&r);
        assert_eq!(
            written,
            serde_json::json!([
                ["", "|V2"],
                ["b", "|u1"],
                ["", "|V5"],
                ["a", "<i4"],
                ["", "|V4"]
            ])
        );
        let text = written.to_string();
        let json = parse_json(text.as_bytes()).unwrap();
        let back = parse(json.as_array().unwrap()).unwrap();
        let placed: Vec<_> = back
            .fields
            .iter()
            .map(|f| (f.name.as_str(), f.stored_offset))
            .collect();
        assert_eq!(placed, vec![("b", 2), ("a", 8)]);
        assert_eq!(back.stored_size, 16);
    }

    #[test]
    fn fill_values_given_field_by_field_are_compound_values() {
        let r = fields(
            r#"[["x", "<i2"], ["h", "<f2"], ["c", "<c8"], ["s", "|S3"], ["u", "<U2"],
                ["in", [["a", "|b1"], ["d", "<f8"]]]]"#,
        )
        .unwrap();
        let json = parse_json(
            br#"{"x": -3, "h": "0x3c00", "c": [1.5, "NaN"], "s": "YWI=", "u": "\u00e9z",
                 "in": {"a": true}}"#,
        )
        .unwrap();
        let fill = fill_of_fields(&r, json.as_object().unwrap()).unwrap();
        let offsets = r.memory_offsets().unwrap();
        assert_eq!(fill.len(), r.memory_size().unwrap());
        assert_eq!(i16::from_ne_bytes(fill[0..2].try_into().unwrap()), -3);
        let float = |at: usize| f32::from_ne_bytes(fill[at..at + 4].try_into().unwrap());
        assert_eq!(float(offsets[1]), 1.0);
        assert_eq!(float(offsets[2]), 1.5);
        assert!(float(offsets[2] + 4).is_nan());
        assert_eq!(&fill[offsets[3]..offsets[3] + 3], b"ab\0");
        assert_eq!(&fill[offsets[4]..offsets[4] + 4], "\u{e9}z\0".as_bytes());
        assert_eq!(fill[offsets[5]], 1);
        assert!(fill[offsets[5] + 1..].iter().all(|&b| b == 0), "d is zero");
        for bad in [
            r#"{"x": 70000}"#,
            r#"{"c": [1, 2, 3]}"#,
            r#"{"in": 4}"#,
            r#"{"s": 1}"#,
            r#"{"u": "abc"}"#,
        ] {
            let json = parse_json(bad.as_bytes()).unwrap();
            assert!(
                fill_of_fields(&r, json.as_object().unwrap()).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn what_netcdf_cannot_hold_is_refused() {
        for bad in [
            // Nothing stored, a billion times: would take forever to plan.
            r#"[["f", [["a", [["b", "<i4"]], [0]]], [1000000000000]]]"#,
            r#"[["v", "|V1099511627776"]]"#,
            r#"[["", "|V1099511627776"], ["x", "<i4"]]"#,
            r#"[["u", "<U4611686018427387904"]]"#,
            r#"[["x", "<i4", [1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]]]"#,
            r#"[["a/b", "<i4"], ["a_b", "<i4"]]"#,
            r#"[]"#,
            r#"[["o", "|O"]]"#,
            r#"[["x"]]"#,
            r#"[[1, "<i4"]]"#,
            r#"[["x", "<i3"]]"#,
            r#"[["x", "<i4", [-1]]]"#,
            r#"[["x", "<i4", "3"]]"#,
            r#"[["x", 4]]"#,
            r#"[["x", "<i8", [4294967296, 4294967296, 4294967296]]]"#,
        ] {
            assert!(fields(bad).is_err(), "{bad}");
        }
        let mut deep = String::from(r#"[["x", "<i4"]]"#);
        for _ in 0..20 {
            deep = format!(r#"[["n", {deep}]]"#);
        }
        let deep: &'static str = Box::leak(deep.into_boxed_str());
        assert!(fields(deep).is_err());
        let long: &'static str =
            Box::leak(format!(r#"[["{}", "<i4"]]"#, "n".repeat(257)).into_boxed_str());
        assert!(fields(long).is_err());
    }
}
