//! NCZarr / Zarr v2 / Zarr v3 metadata <-> the netCDF model.
//!
//! Owns every metadata layout we read and the ones we write: dtype strings and v3 data types,
//! `fill_value` JSON, attribute JSON, `_nczarr_*` keys, `_ARRAY_DIMENSIONS`,
//! `dimension_names`, `.zmetadata` and v3's inline consolidated metadata. Reads and writes
//! metadata objects through a [`crate::zmap::Store`]; never touches chunk data and knows
//! nothing of C or of netCDF API rules.

pub mod attrs;
pub mod base64;
pub mod dtype;
pub mod json;
pub mod lenient;
pub mod non_finite;
pub mod number;
pub mod read;
pub mod structured;
pub mod ucs4;
pub mod write;

/// The name pure Zarr gives a dimension it has no name for, after its length (as netcdf-c).
pub fn anonymous_dim_name(len: u64) -> String {
    format!("_Anonymous_Dim_{len}")
}

/// True when `name` is one [`anonymous_dim_name`] gives.
pub fn is_anonymous_dim_name(name: &str) -> bool {
    name.strip_prefix("_Anonymous_Dim_")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The name the metadata gives dimension `i` of `var`: its dimension's, or, for the
/// anonymous dimension of an array whose stored name clashed, that stored name; `None` for
/// any other anonymous dimension.
pub fn written_dim_name(
    tree: &crate::model::Tree,
    var: &crate::model::Var,
    i: usize,
) -> Option<String> {
    let dim = tree.dim(var.dims[i]);
    if dim.name != anonymous_dim_name(dim.len) {
        return Some(dim.name.clone());
    }
    var.clashing_dim_names.get(i).cloned().flatten()
}

/// How a dataset's metadata is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Write/read the NCZarr extensions (`_nczarr_*`); false for pure Zarr.
    pub nczarr: bool,
    /// Write `_ARRAY_DIMENSIONS` (xarray's convention).
    pub xarray: bool,
    /// Keep consolidated metadata up to date (`.zmetadata`; in Zarr v3, inline in the root's
    /// `zarr.json`, as zarr-python keeps it).
    pub consolidated: bool,
    /// Zarr v3 (`zarr.json`) rather than Zarr v2.
    pub zarr_v3: bool,
}
