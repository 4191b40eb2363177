//! The NCZarr 1.0.0 ("V1") layout written by netcdf-c 4.8.x: the NCZarr metadata lives in
//! separate objects next to the Zarr ones (docs/nczarr.md, Appendix "NCZarr Version 1
//! Meta-Data Representation"):
//!
//! | object | holds | same content as the 2.0.0 key |
//! |---|---|---|
//! | `/.nczarr` | `{"zarr_format": 2, "nczarr_version": "1.0.0"}` | `_nczarr_superblock` |
//! | `<group>/.nczgroup` | `{"dims": {name: len}, "vars": [..], "groups": [..]}` | `_nczarr_group` |
//! | `<array>/.nczarray` (older: `.nczvar`) | `{"dimrefs": [FQN..], "storage": ..}` | `_nczarr_array` |
//! | `<object>/.nczattrs` (older: `.nczattr`) | `{"types": {name: dtype}}` | `_nczarr_attr` |
//!
//! This module only names those objects; the reader interprets their content exactly as the
//! 2.0.0 keys. It knows nothing of the rest of the layout.

/// The superblock object whose presence marks a V1 dataset.
pub const SUPERBLOCK: &str = ".nczarr";

/// Object names (current, then deprecated) holding a group's NCZarr content.
pub const GROUP: &[&str] = &[".nczgroup"];
/// Object names (current, then deprecated) holding an array's NCZarr content.
pub const ARRAY: &[&str] = &[".nczarray", ".nczvar"];
/// Object names (current, then deprecated) holding the attribute types of an object.
pub const ATTR: &[&str] = &[".nczattrs", ".nczattr"];
