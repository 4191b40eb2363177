//! The netCDF atomic types.

use crate::error::{Error, Result};

/// One of netCDF-4's atomic types (the compound types of records: `super::records`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NcType {
    Byte,
    Char,
    Short,
    Int,
    Float,
    Double,
    UByte,
    UShort,
    UInt,
    Int64,
    UInt64,
    String,
}

impl NcType {
    /// Every atomic type, in type-id order.
    pub const ALL: [NcType; 12] = [
        NcType::Byte,
        NcType::Char,
        NcType::Short,
        NcType::Int,
        NcType::Float,
        NcType::Double,
        NcType::UByte,
        NcType::UShort,
        NcType::UInt,
        NcType::Int64,
        NcType::UInt64,
        NcType::String,
    ];

    /// The netCDF type id (`NC_BYTE` = 1 ... `NC_STRING` = 12).
    pub fn id(self) -> i32 {
        match self {
            NcType::Byte => 1,
            NcType::Char => 2,
            NcType::Short => 3,
            NcType::Int => 4,
            NcType::Float => 5,
            NcType::Double => 6,
            NcType::UByte => 7,
            NcType::UShort => 8,
            NcType::UInt => 9,
            NcType::Int64 => 10,
            NcType::UInt64 => 11,
            NcType::String => 12,
        }
    }

    /// The type of this CDL name (`byte` ... `string`).
    pub fn from_name(name: &str) -> Option<NcType> {
        NcType::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The type with this id; user-defined and unknown ids are [`Error::BadType`].
    pub fn from_id(id: i32) -> Result<NcType> {
        NcType::ALL
            .iter()
            .copied()
            .find(|t| t.id() == id)
            .ok_or(Error::BadType(id))
    }

    /// Size in bytes of one value in memory (`char*` for strings).
    pub fn size(self) -> usize {
        match self {
            NcType::Byte | NcType::Char | NcType::UByte => 1,
            NcType::Short | NcType::UShort => 2,
            NcType::Int | NcType::UInt | NcType::Float => 4,
            NcType::Double | NcType::Int64 | NcType::UInt64 => 8,
            NcType::String => std::mem::size_of::<usize>(),
        }
    }

    /// The CDL name (`byte`, `ubyte`, ..., `string`).
    pub fn name(self) -> &'static str {
        match self {
            NcType::Byte => "byte",
            NcType::Char => "char",
            NcType::Short => "short",
            NcType::Int => "int",
            NcType::Float => "float",
            NcType::Double => "double",
            NcType::UByte => "ubyte",
            NcType::UShort => "ushort",
            NcType::UInt => "uint",
            NcType::Int64 => "int64",
            NcType::UInt64 => "uint64",
            NcType::String => "string",
        }
    }

    /// True for the numeric types (everything but char and string).
    pub fn is_numeric(self) -> bool {
        !matches!(self, NcType::Char | NcType::String)
    }

    /// True for float and double.
    pub fn is_float(self) -> bool {
        matches!(self, NcType::Float | NcType::Double)
    }

    /// One of the integer types (`byte` ... `uint64`; not `char`).
    pub fn is_integer(self) -> bool {
        self.is_numeric() && !self.is_float()
    }

    /// One of the six types of the classic model (`byte`, `char`, `short`, `int`, `float`,
    /// `double`).
    pub fn in_classic_model(self) -> bool {
        matches!(
            self,
            NcType::Byte
                | NcType::Char
                | NcType::Short
                | NcType::Int
                | NcType::Float
                | NcType::Double
        )
    }

    /// The netCDF default fill value as native-endian bytes (`NC_FILL_*`); strings fill with "".
    pub fn default_fill(self) -> Vec<u8> {
        match self {
            NcType::Byte => (-127i8).to_ne_bytes().to_vec(),
            NcType::Char => vec![0],
            NcType::Short => (-32767i16).to_ne_bytes().to_vec(),
            NcType::Int => (-2147483647i32).to_ne_bytes().to_vec(),
            NcType::Float => 9.969_21e36_f32.to_ne_bytes().to_vec(),
            NcType::Double => 9.969_209_968_386_869e36_f64.to_ne_bytes().to_vec(),
            NcType::UByte => vec![255],
            NcType::UShort => 65535u16.to_ne_bytes().to_vec(),
            NcType::UInt => 4294967295u32.to_ne_bytes().to_vec(),
            NcType::Int64 => (-9223372036854775806i64).to_ne_bytes().to_vec(),
            NcType::UInt64 => 18446744073709551614u64.to_ne_bytes().to_vec(),
            NcType::String => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_unknown_ids_fail() {
        for t in NcType::ALL {
            assert_eq!(NcType::from_id(t.id()).unwrap(), t);
        }
        assert!(matches!(NcType::from_id(0), Err(Error::BadType(0))));
        assert!(matches!(NcType::from_id(13), Err(Error::BadType(13))));
    }

    #[test]
    fn default_fills_have_the_type_size() {
        for t in NcType::ALL {
            if t != NcType::String {
                assert_eq!(t.default_fill().len(), t.size(), "{t:?}");
            }
        }
        assert_eq!(
            f32::from_ne_bytes(NcType::Float.default_fill().try_into().unwrap()),
            9.96921e36
        );
    }
}
