//! netCDF semantics on an open dataset.
//!
//! Owns what the netCDF API means, independent of how it is called or stored: define mode,
//! ids, name rules, inquiry, fill rules, renames and type conversion with its `NC_ERANGE`
//! rules. Everything here is safe Rust working on the `model` tree and on plain byte slices;
//! it must not touch C pointers (that is `ffi`) nor read or write store bytes (that is
//! `format`, `chunk` and `zmap`).

pub mod convert;
