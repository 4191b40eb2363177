//! Typed value vectors: attribute values and fill values.

use super::types::NcType;

/// A vector of values of one atomic type.
///
/// Fixed-size types (numbers and char) keep native-endian bytes, so they can be handed to
/// the conversion code and to C without re-encoding; strings keep owned UTF-8-ish bytes.
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    /// Numbers or chars: `bytes.len()` is a multiple of `ty.size()`, `ty` is never `String`.
    Fixed { ty: NcType, bytes: Vec<u8> },
    /// NC_STRING values (arbitrary bytes without NUL; usually UTF-8).
    Strings(Vec<Vec<u8>>),
    /// Values of a variable-length type: each a sequence of values of `base` (never `String`),
    /// as their native-endian bytes.
    Vlens { base: NcType, items: Vec<Vec<u8>> },
}

impl Values {
    /// The values' type (of sequences: their values').
    pub fn ty(&self) -> NcType {
        match self {
            Values::Fixed { ty, .. } => *ty,
            Values::Strings(_) => NcType::String,
            Values::Vlens { base, .. } => *base,
        }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            Values::Fixed { ty, bytes } => bytes.len() / ty.size(),
            Values::Strings(v) | Values::Vlens { items: v, .. } => v.len(),
        }
    }

    /// True when there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Text (NC_CHAR) values from a string.
    pub fn text(s: &str) -> Values {
        Values::Fixed {
            ty: NcType::Char,
            bytes: s.as_bytes().to_vec(),
        }
    }

    /// Values of a fixed-size type from native-endian bytes.
    pub fn fixed(ty: NcType, bytes: Vec<u8>) -> Values {
        debug_assert!(ty != NcType::String && bytes.len().is_multiple_of(ty.size()));
        Values::Fixed { ty, bytes }
    }
}
