//! Enum types: an integer base type and named values of it (`nc_def_enum`,
//! `nc_insert_enum`). Owns the rules members keep (names and values each given once, values
//! the base type can hold) and how a value passes between its base type's bytes and a number.
//! Knows nothing of where a type is listed, of JSON or of C.

use super::types::NcType;
use crate::error::{Error, Result};
use std::collections::HashMap;

/// The longest member name, in bytes (`NC_MAX_NAME`).
const LONGEST_NAME: usize = 256;

/// Members one enum type may have (more are refused, and a stored type with more is not
/// listed).
pub const MOST_MEMBERS: usize = 1 << 16;

/// The base type and members of an enum type, members found by name and by value without a
/// search (a type may have many).
#[derive(Debug, Clone)]
pub struct Enumeration {
    pub base: NcType,
    members: Vec<EnumMember>,
    /// Each member's position by name.
    by_name: HashMap<String, usize>,
    /// Each member's position by value.
    by_value: HashMap<i128, usize>,
}

impl PartialEq for Enumeration {
    fn eq(&self, other: &Enumeration) -> bool {
        self.base == other.base && self.members == other.members
    }
}

/// One named value of an enum type.
#[derive(Debug, Clone, PartialEq)]
pub struct EnumMember {
    pub name: String,
    pub value: i128,
}

/// The number one value of integer type `ty` holds, from its bytes in this machine's order.
pub fn value_of(ty: NcType, bytes: &[u8]) -> Result<i128> {
    let short = || Error::Invalid(format!("an enum value shorter than its {}", ty.name()));
    let b = bytes.get(..ty.size()).ok_or_else(short)?;
    let arr = |b: &[u8]| -> [u8; 8] {
        let mut a = [0u8; 8];
        a[..b.len()].copy_from_slice(b);
        a
    };
    Ok(match ty {
        NcType::Byte => i128::from(i8::from_ne_bytes([b[0]])),
        NcType::UByte => i128::from(b[0]),
        NcType::Short => i128::from(i16::from_ne_bytes([b[0], b[1]])),
        NcType::UShort => i128::from(u16::from_ne_bytes([b[0], b[1]])),
        NcType::Int => i128::from(i32::from_ne_bytes([b[0], b[1], b[2], b[3]])),
        NcType::UInt => i128::from(u32::from_ne_bytes([b[0], b[1], b[2], b[3]])),
        NcType::Int64 => i128::from(i64::from_ne_bytes(arr(b))),
        NcType::UInt64 => i128::from(u64::from_ne_bytes(arr(b))),
        other => return Err(Error::BadType(other.id())),
    })
}

/// The bytes of `value` as integer type `ty` holds it, or `None` when it does not fit.
pub fn bytes_of(ty: NcType, value: i128) -> Option<Vec<u8>> {
    Some(match ty {
        NcType::Byte => i8::try_from(value).ok()?.to_ne_bytes().to_vec(),
        NcType::UByte => u8::try_from(value).ok()?.to_ne_bytes().to_vec(),
        NcType::Short => i16::try_from(value).ok()?.to_ne_bytes().to_vec(),
        NcType::UShort => u16::try_from(value).ok()?.to_ne_bytes().to_vec(),
        NcType::Int => i32::try_from(value).ok()?.to_ne_bytes().to_vec(),
        NcType::UInt => u32::try_from(value).ok()?.to_ne_bytes().to_vec(),
        NcType::Int64 => i64::try_from(value).ok()?.to_ne_bytes().to_vec(),
        NcType::UInt64 => u64::try_from(value).ok()?.to_ne_bytes().to_vec(),
        _ => return None,
    })
}

impl Enumeration {
    /// An enum type of base `ty` without members; a base that is not an integer type is
    /// `NC_EBADTYPE`.
    pub fn new(base: NcType) -> Result<Enumeration> {
        if !base.is_integer() {
            return Err(Error::BadType(base.id()));
        }
        Ok(Enumeration {
            base,
            members: Vec::new(),
            by_name: HashMap::new(),
            by_value: HashMap::new(),
        })
    }

    /// The members in the order they were inserted.
    pub fn members(&self) -> &[EnumMember] {
        &self.members
    }

    /// Adds member `name` of `value`: a name netCDF cannot give (empty, holding a `/`, longer
    /// than `NC_MAX_NAME`) is `NC_EBADNAME` or `NC_EMAXNAME`, a name given already is
    /// `NC_ENAMEINUSE`, a value given
    /// already or one the base type cannot hold `NC_EINVAL` (netCDF-4 files take both, then
    /// fail when the definitions end).
    pub fn insert(&mut self, name: &str, value: i128) -> Result<()> {
        if name.is_empty() || name.contains('/') {
            return Err(Error::BadName(name.to_string()));
        }
        if name.len() > LONGEST_NAME {
            return Err(Error::MaxName(name.to_string()));
        }
        if self.by_name.contains_key(name) {
            return Err(Error::NameInUse(name.to_string()));
        }
        if bytes_of(self.base, value).is_none() {
            return Err(Error::Invalid(format!(
                "enum value {value} outside {}",
                self.base.name()
            )));
        }
        if let Some(&at) = self.by_value.get(&value) {
            return Err(Error::Invalid(format!(
                "enum value {value} given to {:?} already",
                self.members[at].name
            )));
        }
        if self.members.len() >= MOST_MEMBERS {
            return Err(Error::Invalid(format!(
                "an enum type of more than {MOST_MEMBERS} members"
            )));
        }
        self.by_name.insert(name.to_string(), self.members.len());
        self.by_value.insert(value, self.members.len());
        self.members.push(EnumMember {
            name: name.to_string(),
            value,
        });
        Ok(())
    }

    /// The name of the member of `value` (`nc_inq_enum_ident`): none is `NC_EINVAL`.
    pub fn ident(&self, value: i128) -> Result<&str> {
        self.by_value
            .get(&value)
            .map(|&at| self.members[at].name.as_str())
            .ok_or_else(|| Error::Invalid(format!("no enum member of value {value}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_integer_types_are_bases() {
        for ty in NcType::ALL {
            let integer = !matches!(
                ty,
                NcType::Char | NcType::Float | NcType::Double | NcType::String
            );
            assert_eq!(Enumeration::new(ty).is_ok(), integer, "{ty:?}");
        }
    }

    #[test]
    fn members_are_named_and_valued_once_within_the_base() {
        let mut e = Enumeration::new(NcType::UByte).unwrap();
        e.insert("clear", 0).unwrap();
        e.insert("missing", 255).unwrap();
        assert!(matches!(e.insert("clear", 3), Err(Error::NameInUse(_))));
        assert!(matches!(e.insert("other", 0), Err(Error::Invalid(_))));
        assert!(matches!(e.insert("big", 256), Err(Error::Invalid(_))));
        assert!(matches!(e.insert("neg", -1), Err(Error::Invalid(_))));
        assert_eq!(e.ident(255).unwrap(), "missing");
        assert!(e.ident(7).is_err());
        assert_eq!(e.members().len(), 2);
    }

    #[test]
    fn members_are_bounded_and_named_as_netcdf_names_things() {
        let mut e = Enumeration::new(NcType::Int).unwrap();
        for i in 0..MOST_MEMBERS {
            e.insert(&format!("m{i}"), i as i128).unwrap();
        }
        assert_eq!(e.ident(65535).unwrap(), "m65535");
        // A new name and value the base holds, past the bound.
        assert!(matches!(e.insert("more", -1), Err(Error::Invalid(_))));
        assert_eq!(e.members().len(), MOST_MEMBERS);
        let mut e = Enumeration::new(NcType::Int).unwrap();
        assert!(matches!(e.insert("", 1), Err(Error::BadName(_))));
        assert!(matches!(e.insert("a/b", 1), Err(Error::BadName(_))));
        assert!(matches!(
            e.insert(&"x".repeat(257), 1),
            Err(Error::MaxName(_))
        ));
        e.insert(&"x".repeat(256), 1).unwrap();
    }

    #[test]
    fn values_pass_through_bytes_of_every_base() {
        let cases: [(NcType, i128); 8] = [
            (NcType::Byte, -128),
            (NcType::UByte, 255),
            (NcType::Short, -32768),
            (NcType::UShort, 65535),
            (NcType::Int, i128::from(i32::MIN)),
            (NcType::UInt, i128::from(u32::MAX)),
            (NcType::Int64, i128::from(i64::MIN)),
            (NcType::UInt64, i128::from(u64::MAX)),
        ];
        for (ty, v) in cases {
            let bytes = bytes_of(ty, v).unwrap();
            assert_eq!(bytes.len(), ty.size());
            assert_eq!(value_of(ty, &bytes).unwrap(), v, "{ty:?}");
            assert!(bytes_of(ty, v + if v < 0 { -1 } else { 1 }).is_none());
        }
        assert!(value_of(NcType::Int, &[1, 2]).is_err());
    }
}
