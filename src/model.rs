//! The in-memory netCDF-4 data model: types, values and the dataset tree.
//!
//! Owns the shape of a dataset as the netCDF API sees it. Knows nothing of storage, Zarr
//! JSON, chunks or C.

pub mod enums;
pub mod records;
pub mod tree;
pub mod types;
pub mod user_types;
pub mod values;

pub use enums::{EnumMember, Enumeration};
pub use records::{FieldKind, MOST_RECORD_BYTES, MemoryLayout, Record, RecordField, VarRecord};
pub use tree::{
    Att, COMPLEX_DIMENSION, CacheSettings, Dim, DimId, Endian, Filter, Group, GroupId, Storage,
    StringStorage, Tree, Var, VarVlen,
};
pub use types::NcType;
pub use user_types::{
    DeclaredField, DeclaredType, FIRST_USER_TYPE, TypeClass, TypeField, TypeRef, UserType,
    UserTypes, VLEN_SIZE,
};
pub use values::Values;
