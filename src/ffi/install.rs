//! Getting our table into the host's libnetcdf.
//!
//! - Preloaded or linked ahead of libnetcdf, our exported `NCZ_initialize` interposes on
//!   libnetcdf's: it runs the real one, then stores our table in `NCZ_dispatch_table`, so every
//!   `mode=nczarr`/`mode=zarr` URL reaches us.
//! - `nczarr_rs_install()` does the same explicitly.
//! - `nczarr_rs_register_udf()` (and the `.ncrc` init symbols) register a user-defined format.
//!
//! libnetcdf is found at run time with `dlsym`; we never link it.

use super::codes::*;
use super::table::{NCZARR_TABLE, NcDispatch, UDF0_TABLE, UDF1_TABLE};
use std::ffi::CStr;
use std::os::raw::{c_int, c_void};

fn lookup(handle: *mut c_void, name: &CStr) -> *mut c_void {
    // SAFETY: dlsym with a valid NUL-terminated name; the handle is RTLD_DEFAULT/RTLD_NEXT.
    unsafe { libc::dlsym(handle, name.as_ptr()) }
}

fn warn(msg: &str) {
    if std::env::var_os("NCZARR_RS_QUIET").is_none() {
        eprintln!("nczarr-rs: {msg}");
    }
}

/// Stores our table in libnetcdf's `NCZ_dispatch_table` after checking the built-in one's
/// layout version.
fn take_over() -> c_int {
    let slot = lookup(libc::RTLD_DEFAULT, c"NCZ_dispatch_table").cast::<*const NcDispatch>();
    if slot.is_null() {
        warn(
            "this libnetcdf has no NCZarr dispatch table (built without NCZarr); use nczarr_rs_register_udf",
        );
        return NC_ENOTBUILT;
    }
    // SAFETY: the symbol is libnetcdf's `const NC_Dispatch* NCZ_dispatch_table`.
    unsafe {
        let current = *slot;
        if !current.is_null()
            && !std::ptr::eq(current, &NCZARR_TABLE)
            && (*current).dispatch_version != NC_DISPATCH_VERSION
        {
            warn(&format!(
                "libnetcdf's dispatch table is version {}, this library implements {NC_DISPATCH_VERSION}; not installed",
                (*current).dispatch_version
            ));
            return NC_EINVAL;
        }
        *slot = &NCZARR_TABLE;
    }
    NC_NOERR
}

/// Interposes on libnetcdf's `NCZ_initialize`, which `nc_initialize` calls once.
#[unsafe(no_mangle)]
pub extern "C" fn NCZ_initialize() -> c_int {
    let real = lookup(libc::RTLD_NEXT, c"NCZ_initialize");
    if !real.is_null() {
        // SAFETY: the next definition is libnetcdf's `int NCZ_initialize(void)`.
        let f: extern "C" fn() -> c_int = unsafe { std::mem::transmute(real) };
        let rc = f();
        if rc != NC_NOERR {
            return rc;
        }
    }
    take_over();
    NC_NOERR
}

/// Makes this library serve every NCZarr/Zarr URL of the process. Idempotent.
/// Returns `NC_NOERR`, or `NC_ENOTBUILT` when no libnetcdf with NCZarr is loaded.
#[unsafe(no_mangle)]
pub extern "C" fn nczarr_rs_install() -> c_int {
    let init = lookup(libc::RTLD_DEFAULT, c"nc_initialize");
    if init.is_null() {
        warn("libnetcdf is not loaded in this process");
        return NC_ENOTBUILT;
    }
    // SAFETY: libnetcdf's `int nc_initialize(void)`.
    let f: extern "C" fn() -> c_int = unsafe { std::mem::transmute(init) };
    let rc = f();
    if rc != NC_NOERR {
        return rc;
    }
    take_over()
}

/// Registers this library as user-defined format `mode_flag` (`NC_UDF0` or `NC_UDF1`), so
/// `#mode=udf0,file` (or `udf1`) URLs and `nc_open(path, NC_UDF0, ...)` reach it.
#[unsafe(no_mangle)]
pub extern "C" fn nczarr_rs_register_udf(mode_flag: c_int) -> c_int {
    let table: &'static NcDispatch = match mode_flag {
        NC_UDF0 => &UDF0_TABLE,
        NC_UDF1 => &UDF1_TABLE,
        _ => return NC_EINVAL,
    };
    let def = lookup(libc::RTLD_DEFAULT, c"nc_def_user_format");
    if def.is_null() {
        warn("libnetcdf is not loaded in this process");
        return NC_ENOTBUILT;
    }
    // SAFETY: libnetcdf's `int nc_def_user_format(int, NC_Dispatch*, char*)`.
    let f: extern "C" fn(c_int, *const NcDispatch, *const std::os::raw::c_char) -> c_int =
        unsafe { std::mem::transmute(def) };
    f(mode_flag, table, std::ptr::null())
}

/// `.ncrc` init hook for slot 0 (`NETCDF.UDF0.LIBRARY=<path>/libnczarr_rs.so`,
/// `NETCDF.UDF0.INIT=nczarr_rs_udf0_init`, netcdf-c >= 4.10): returns the dispatch table, which
/// libnetcdf registers itself (`NC_Dispatch *init(void)`, its self-registration contract).
#[unsafe(no_mangle)]
pub extern "C" fn nczarr_rs_udf0_init() -> *const c_void {
    std::ptr::from_ref(&UDF0_TABLE).cast()
}

/// `.ncrc` init hook for slot 1, as [`nczarr_rs_udf0_init`].
#[unsafe(no_mangle)]
pub extern "C" fn nczarr_rs_udf1_init() -> *const c_void {
    std::ptr::from_ref(&UDF1_TABLE).cast()
}
