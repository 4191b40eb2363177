//! netCDF semantics on an open dataset: define mode, ids, name rules, inquiry, type
//! conversion with NC_ERANGE, fill rules, renames, and the data path.
//!
//! Safe Rust, unit-testable without C. Must not see C pointers (that is `ffi`) nor raw JSON
//! (that is `format`).

pub mod attribute;
pub mod chunking;
pub mod convert;
pub mod data;
pub mod dataset;
pub mod define;
pub mod define_enums;
pub mod define_opaque;
pub mod define_types;
pub mod define_vlen;
pub mod filters;
pub mod inquire;
pub mod names;
mod renames;
pub mod types;

pub use attribute::Owner;
pub use data::Slab;
pub use dataset::{CreateOptions, Dataset};
