//! nczarr-rs: the netCDF-4 data model over Zarr storage, served to netcdf-c through its
//! `NC_Dispatch` table.
//!
//! Layers, top to bottom (each knows only those below it): `ffi` (the C boundary, the only
//! `unsafe` code), `api` (netCDF semantics), `format` (Zarr/NCZarr metadata <-> model),
//! `chunk` (hyperslabs to chunks, cache), `codec` (filters), `zmap` (key/value stores), with
//! `model` (the in-memory tree) and `url` shared below `api`.

#![deny(unsafe_code)]

pub mod api;
pub mod chunk;
pub mod codec;
pub mod env;
pub mod error;
#[allow(unsafe_code)]
pub mod ffi;
pub mod format;
pub mod infer;
pub mod machine;
pub mod model;
pub mod rcfile;
pub mod url;
pub mod zmap;

pub use error::{Error, Result};
