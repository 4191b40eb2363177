//! `nc_def_var_zstandard`, `nc_inq_var_zstandard`, `nc_def_var_blosc` and `nc_inq_var_blosc`,
//! interposed on libnetcdf's (preloaded, or linked ahead of libnetcdf).
//!
//! netCDF defines these four in libdispatch, not in the dispatch table, and a libnetcdf built
//! without zstd or blosc (Debian's 4.9.0) compiles each to `return NC_NOERR`: a variable of
//! ours asked for zstd or blosc was silently stored uncompressed, and the inquiries left
//! `hasfilter` unset. For a dataset of ours, each is served here as netCDF's own does it
//! (the same parameter checks and HDF5 parameters, `hasfilter` 0 when the chain has no such
//! filter); every other dataset goes to libnetcdf's definition unchanged.

use super::codes::NC_NOERR;
use super::install::netcdf_function as real;
use super::registry::{self, guard, with};
use std::os::raw::{c_int, c_uint};
use std::sync::OnceLock;

/// True when `ncid` is a dataset (or group) of ours.
fn ours(ncid: c_int) -> bool {
    std::panic::catch_unwind(|| registry::lock().contains_key(&registry::file_of(ncid)))
        .unwrap_or(false)
}

/// Writes `value` through `out` when it is not null.
fn put<T>(out: *mut T, value: T) {
    if !out.is_null() {
        // SAFETY: a non-null output pointer of netCDF's API points at a `T` the caller owns.
        unsafe { *out = value };
    }
}

type DefZstandard = unsafe extern "C" fn(c_int, c_int, c_int) -> c_int;
type InqZstandard = unsafe extern "C" fn(c_int, c_int, *mut c_int, *mut c_int) -> c_int;
type DefBlosc = unsafe extern "C" fn(c_int, c_int, c_uint, c_uint, c_uint, c_uint) -> c_int;
type InqBlosc = unsafe extern "C" fn(
    c_int,
    c_int,
    *mut c_int,
    *mut c_uint,
    *mut c_uint,
    *mut c_uint,
    *mut c_uint,
) -> c_int;

/// `int nc_def_var_zstandard(int ncid, int varid, int level)`.
///
/// # Safety
/// As libnetcdf's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nc_def_var_zstandard(ncid: c_int, varid: c_int, level: c_int) -> c_int {
    if !ours(ncid) {
        static REAL: OnceLock<Option<DefZstandard>> = OnceLock::new();
        // SAFETY: libnetcdf's function of that name has this signature; the caller's
        // arguments are passed on unchanged.
        return match unsafe { real(&REAL, c"nc_def_var_zstandard") } {
            Some(f) => unsafe { f(ncid, varid, level) },
            None => super::codes::NC_EBADID,
        };
    }
    guard(|| {
        with(ncid, |o, g| {
            let v = o.ds.var_index(g, varid)?;
            o.ds.def_var_zstandard(g, v, level)
        })?;
        Ok(NC_NOERR)
    })
}

/// `int nc_inq_var_zstandard(int ncid, int varid, int *hasfilterp, int *levelp)`.
///
/// # Safety
/// As libnetcdf's: each pointer is null or points at an `int`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nc_inq_var_zstandard(
    ncid: c_int,
    varid: c_int,
    hasfilterp: *mut c_int,
    levelp: *mut c_int,
) -> c_int {
    if !ours(ncid) {
        static REAL: OnceLock<Option<InqZstandard>> = OnceLock::new();
        // SAFETY: as in `nc_def_var_zstandard`.
        return match unsafe { real(&REAL, c"nc_inq_var_zstandard") } {
            Some(f) => unsafe { f(ncid, varid, hasfilterp, levelp) },
            None => super::codes::NC_EBADID,
        };
    }
    guard(|| {
        let level = with(ncid, |o, g| {
            let v = o.ds.var_index(g, varid)?;
            o.ds.var_zstandard(g, v)
        })?;
        put(hasfilterp, c_int::from(level.is_some()));
        if let Some(level) = level {
            put(levelp, level);
        }
        Ok(NC_NOERR)
    })
}

/// `int nc_def_var_blosc(int ncid, int varid, unsigned subcompressor, unsigned level, unsigned
/// blocksize, unsigned addshuffle)`.
///
/// # Safety
/// As libnetcdf's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nc_def_var_blosc(
    ncid: c_int,
    varid: c_int,
    subcompressor: c_uint,
    level: c_uint,
    blocksize: c_uint,
    addshuffle: c_uint,
) -> c_int {
    if !ours(ncid) {
        static REAL: OnceLock<Option<DefBlosc>> = OnceLock::new();
        // SAFETY: as in `nc_def_var_zstandard`.
        return match unsafe { real(&REAL, c"nc_def_var_blosc") } {
            Some(f) => unsafe { f(ncid, varid, subcompressor, level, blocksize, addshuffle) },
            None => super::codes::NC_EBADID,
        };
    }
    guard(|| {
        with(ncid, |o, g| {
            let v = o.ds.var_index(g, varid)?;
            o.ds.def_var_blosc(g, v, subcompressor, level, blocksize, addshuffle)
        })?;
        Ok(NC_NOERR)
    })
}

/// `int nc_inq_var_blosc(int ncid, int varid, int *hasfilterp, unsigned *subcompressorp,
/// unsigned *levelp, unsigned *blocksizep, unsigned *addshufflep)`.
///
/// # Safety
/// As libnetcdf's: each pointer is null or points at a value of its type.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nc_inq_var_blosc(
    ncid: c_int,
    varid: c_int,
    hasfilterp: *mut c_int,
    subcompressorp: *mut c_uint,
    levelp: *mut c_uint,
    blocksizep: *mut c_uint,
    addshufflep: *mut c_uint,
) -> c_int {
    if !ours(ncid) {
        static REAL: OnceLock<Option<InqBlosc>> = OnceLock::new();
        // SAFETY: as in `nc_def_var_zstandard`.
        return match unsafe { real(&REAL, c"nc_inq_var_blosc") } {
            Some(f) => unsafe {
                f(
                    ncid,
                    varid,
                    hasfilterp,
                    subcompressorp,
                    levelp,
                    blocksizep,
                    addshufflep,
                )
            },
            None => super::codes::NC_EBADID,
        };
    }
    guard(|| {
        let blosc = with(ncid, |o, g| {
            let v = o.ds.var_index(g, varid)?;
            o.ds.var_blosc(g, v)
        })?;
        put(hasfilterp, c_int::from(blosc.is_some()));
        if let Some([compressor, level, blocksize, shuffle]) = blosc {
            put(subcompressorp, compressor);
            put(levelp, level);
            put(blocksizep, blocksize);
            put(addshufflep, shuffle);
        }
        Ok(NC_NOERR)
    })
}
