//! Zarr v2 `dtype` strings <-> netCDF types.

use crate::error::{Error, Result};
use crate::model::{Endian, NcType, StringStorage};

/// The slot width `|O` strings decode into at first (netCDF's usual string width); slots widen
/// when a chunk holds a longer string.
pub const OBJECT_SLOTS_AT_FIRST: usize = 64;

/// What a Zarr v2 dtype string means for netCDF.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dtype {
    pub ty: NcType,
    /// Byte order of stored values (one-byte types: the native order).
    pub endian: Endian,
    /// Width of one decoded element in bytes (`|S<n>`: n, `<U<n>`: 4n, `|O`: the first slot
    /// width).
    pub width: usize,
    /// How strings are stored (`|S`, numpy's unicode `<U`, objects `|O`), all read as
    /// NC_STRING.
    pub strings: StringStorage,
    /// numpy datetimes and time spans (`<M8[ns]`, `<m8[s]`): 64-bit counts of a unit, read as
    /// NC_INT64 with the CF `units` (and `calendar`) saying what they count.
    pub time: Option<TimeCounts>,
    /// numpy complex numbers (`<c8`, `<c16`): each stored element a pair (real, imaginary) of
    /// `ty`, read as a trailing dimension of 2 (see [`crate::model::Var::complex`]).
    pub complex: bool,
    /// 16-bit floats (`<f2`), read as NC_FLOAT (see [`crate::model::Var::half_floats`]).
    pub half: bool,
}

/// What the 64-bit integers of a numpy `M8`/`m8` array count, as CF attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeCounts {
    /// `M8` (instants since the Unix epoch) rather than `m8` (spans).
    pub instant: bool,
    /// The unit in CF/UDUNITS words (`nanoseconds`).
    pub unit: &'static str,
}

impl TimeCounts {
    /// The CF `units` attribute (`nanoseconds since 1970-01-01 00:00:00`, or `seconds`).
    pub fn units(self) -> String {
        if self.instant {
            format!("{} since 1970-01-01 00:00:00", self.unit)
        } else {
            self.unit.to_string()
        }
    }

    /// The CF `calendar` of instants: numpy's, the proleptic Gregorian.
    pub fn calendar(self) -> Option<&'static str> {
        self.instant.then_some("proleptic_gregorian")
    }
}

/// The CF unit of a numpy time unit code; `None` for units of no fixed length (years,
/// months) and for multiples (`10s`).
fn time_unit(code: &str) -> Option<&'static str> {
    Some(match code {
        "W" => "weeks",
        "D" => "days",
        "h" => "hours",
        "m" => "minutes",
        "s" => "seconds",
        "ms" => "milliseconds",
        "us" => "microseconds",
        "ns" => "nanoseconds",
        _ => return None,
    })
}

/// Parses a dtype. `char_is_s1` says how `S1` is read: NC_CHAR (NCZarr `>S1`, and pure Zarr
/// one-byte strings) or NC_STRING.
pub fn parse(dtype: &str, nczarr: bool) -> Result<Dtype> {
    let bad = |why: &str| Error::Unsupported {
        var: String::new(),
        why: format!("dtype {dtype:?}: {why}"),
    };
    let (order, body) = match dtype.chars().next() {
        Some(c @ ('<' | '>' | '|' | '=')) => (c, &dtype[1..]),
        Some(_) => ('|', dtype),
        None => return Err(bad("empty")),
    };
    let endian = match order {
        '>' => Endian::Big,
        '<' => Endian::Little,
        _ => Endian::native(),
    };
    let kind = body.chars().next().ok_or_else(|| bad("no kind"))?;
    if let ('m' | 'M', Some(rest)) = (kind, body.get(1..)) {
        let unit = rest
            .strip_prefix("8[")
            .and_then(|r| r.strip_suffix(']'))
            .and_then(time_unit)
            .ok_or_else(|| bad("only datetimes of weeks down to nanoseconds are read"))?;
        return Ok(Dtype {
            ty: NcType::Int64,
            endian,
            width: 8,
            strings: StringStorage::Bytes,
            time: Some(TimeCounts {
                instant: kind == 'M',
                unit,
            }),
            complex: false,
            half: false,
        });
    }
    if body == "O" {
        return Ok(Dtype {
            ty: NcType::String,
            endian,
            width: OBJECT_SLOTS_AT_FIRST,
            strings: StringStorage::Objects,
            time: None,
            complex: false,
            half: false,
        });
    }
    let width: usize = body[kind.len_utf8()..]
        .parse()
        .map_err(|_| bad("bad width"))?;
    let ty = match (kind, width) {
        ('i', 1) => NcType::Byte,
        ('i', 2) => NcType::Short,
        ('i', 4) => NcType::Int,
        ('i', 8) => NcType::Int64,
        ('u', 1) => NcType::UByte,
        ('u', 2) => NcType::UShort,
        ('u', 4) => NcType::UInt,
        ('u', 8) => NcType::UInt64,
        ('f', 4) => NcType::Float,
        ('f', 8) => NcType::Double,
        ('b', 1) => NcType::UByte,
        ('S', 1) if !nczarr || order == '>' => NcType::Char,
        ('S', n) if n >= 1 => NcType::String,
        ('U', 1) if nczarr => NcType::Char,
        ('U', n) if n >= 1 => {
            return Ok(Dtype {
                ty: NcType::String,
                endian,
                width: n.checked_mul(4).ok_or_else(|| bad("too wide"))?,
                strings: StringStorage::Ucs4,
                time: None,
                complex: false,
                half: false,
            });
        }
        ('f', 2) => {
            return Ok(Dtype {
                ty: NcType::Float,
                endian,
                width: NcType::Float.size(),
                strings: StringStorage::Bytes,
                time: None,
                complex: false,
                half: true,
            });
        }
        ('c', 8 | 16) => {
            let ty = if width == 8 {
                NcType::Float
            } else {
                NcType::Double
            };
            return Ok(Dtype {
                ty,
                endian,
                width: ty.size(),
                strings: StringStorage::Bytes,
                time: None,
                complex: true,
                half: false,
            });
        }
        ('c', _) => return Err(bad("complex numbers of this width have no netCDF type")),
        _ => return Err(bad("unknown type")),
    };
    let width = if ty == NcType::String {
        width
    } else {
        ty.size()
    };
    Ok(Dtype {
        ty,
        endian,
        width,
        strings: StringStorage::Bytes,
        time: None,
        complex: false,
        half: false,
    })
}

/// The dtype of 16-bit floats stored in byte order `endian`.
pub fn half_floats(endian: Endian) -> String {
    match endian {
        Endian::Little => "<f2".into(),
        Endian::Big => ">f2".into(),
    }
}

/// The dtype we write for a variable or attribute of type `ty`.
///
/// One-byte numbers are `|i1`/`|u1` (zarr-python 3 rejects `<u1`); NC_CHAR is `>S1` in NCZarr
/// mode (the marker netcdf-c reads as char) and `|S1` in pure Zarr; strings are `|S<width>`.
pub fn format(ty: NcType, endian: Endian, string_width: usize, nczarr: bool) -> String {
    let order = match endian {
        Endian::Little => '<',
        Endian::Big => '>',
    };
    match ty {
        NcType::Byte => "|i1".into(),
        NcType::UByte => "|u1".into(),
        NcType::Char if nczarr => ">S1".into(),
        NcType::Char => "|S1".into(),
        NcType::String => format!("|S{}", string_width.max(1)),
        NcType::Short => format!("{order}i2"),
        NcType::UShort => format!("{order}u2"),
        NcType::Int => format!("{order}i4"),
        NcType::UInt => format!("{order}u4"),
        NcType::Int64 => format!("{order}i8"),
        NcType::UInt64 => format!("{order}u8"),
        NcType::Float => format!("{order}f4"),
        NcType::Double => format!("{order}f8"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_type() {
        for ty in NcType::ALL {
            for endian in [Endian::Little, Endian::Big] {
                let s = format(ty, endian, 7, true);
                let d = parse(&s, true).unwrap();
                assert_eq!(d.ty, ty, "{s}");
                if ty.size() > 1 && ty.is_numeric() {
                    assert_eq!(d.endian, endian, "{s}");
                }
            }
        }
    }

    #[test]
    fn numpy_times_are_int64_counts_with_cf_units() {
        let t = parse(">M8[ns]", false).unwrap();
        assert_eq!((t.ty, t.endian, t.width), (NcType::Int64, Endian::Big, 8));
        let time = t.time.unwrap();
        assert_eq!(time.units(), "nanoseconds since 1970-01-01 00:00:00");
        assert_eq!(time.calendar(), Some("proleptic_gregorian"));
        let span = parse("<m8[D]", false).unwrap().time.unwrap();
        assert_eq!((span.units(), span.calendar()), ("days".to_string(), None));
        assert_eq!(parse("<i8", false).unwrap().time, None);
    }

    #[test]
    fn reads_foreign_spellings() {
        assert_eq!(parse("<u1", true).unwrap().ty, NcType::UByte);
        assert_eq!(parse("i2", false).unwrap().ty, NcType::Short);
        assert_eq!(parse("|b1", false).unwrap().ty, NcType::UByte);
        assert_eq!(parse("|S1", true).unwrap().ty, NcType::String);
        assert_eq!(parse("|S1", false).unwrap().ty, NcType::Char);
        assert_eq!(parse(">S1", true).unwrap().ty, NcType::Char);
        assert_eq!(parse("<U1", true).unwrap().ty, NcType::Char);
        let s = parse("|S12", false).unwrap();
        assert_eq!((s.ty, s.width), (NcType::String, 12));
        let u = parse("<U5", false).unwrap();
        assert_eq!(
            (u.ty, u.width, u.strings),
            (NcType::String, 20, StringStorage::Ucs4)
        );
        let o = parse("|O", false).unwrap();
        assert_eq!(
            (o.ty, o.width, o.strings),
            (
                NcType::String,
                OBJECT_SLOTS_AT_FIRST,
                StringStorage::Objects
            )
        );
        for bad in [
            "<c4", "<c32", "<M8[Y]", "<m8[10s]", "<M8", "<U0", "", "x", "<i3", "|O2",
        ] {
            assert!(parse(bad, false).is_err(), "{bad}");
        }
    }
}
