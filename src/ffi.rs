//! The C boundary: the `NC_Dispatch` table, one `extern "C"` function per slot, the install
//! and user-defined-format entry points, pointer checks, panic catching, and the one mapping
//! from errors to netCDF codes.
//!
//! The only module allowed `unsafe`. It decides no netCDF semantics: every entry validates
//! and converts C arguments, calls `api`, and writes outputs only on success.

pub mod att_entries;
pub mod cmem;
pub mod codes;
pub mod data_entries;
pub mod dim_entries;
pub mod file_entries;
pub mod given_path;
pub mod group_entries;
pub mod infermodel;
pub mod install;
pub mod named_filters;
pub mod reclaim;
pub mod registry;
mod signals;
pub mod status;
pub mod table;
pub mod var_entries;
