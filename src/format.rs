//! NCZarr / Zarr v2 metadata <-> the netCDF model.
//!
//! Owns every metadata layout we read and the one we write: dtype strings, `fill_value`
//! JSON, attribute JSON, `_nczarr_*` keys, `_ARRAY_DIMENSIONS`, `.zmetadata`. Reads and writes
//! metadata objects through a [`crate::zmap::Store`]; never touches chunk data and knows
//! nothing of C or of netCDF API rules.

pub mod attrs;
pub mod base64;
pub mod dtype;
pub mod json;
pub mod lenient;
pub mod number;
pub mod read;
pub mod ucs4;
pub mod write;

/// How a dataset's metadata is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Write/read the NCZarr extensions (`_nczarr_*`); false for pure Zarr.
    pub nczarr: bool,
    /// Write `_ARRAY_DIMENSIONS` (xarray's convention).
    pub xarray: bool,
    /// Keep a consolidated `.zmetadata` up to date.
    pub consolidated: bool,
}
