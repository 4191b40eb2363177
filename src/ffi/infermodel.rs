//! Our `NC_infermodel`, ahead of libnetcdf's (preloaded or linked before it, as our
//! `NCZ_initialize` is): every `nc_open` and `nc_create` passes its path through it before
//! libnetcdf decides which dispatcher serves the dataset. The path is repaired as
//! [`crate::infer`] says (a local Zarr dataset named by plain path; a fragment that would send
//! libnetcdf 4.9.0 into an endless loop), then libnetcdf's own inference runs on it.

use super::codes::NC_EINTERNAL;
use super::install::netcdf_symbol;
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int, c_void};
use std::sync::OnceLock;

/// `int NC_infermodel(const char* path, int* omodep, int iscreate, int useparallel,
/// void* params, NCmodel* model, char** newpathp)`, the same in netcdf-c 4.9.0 to 4.10.1.
type InferModel = extern "C" fn(
    *const c_char,
    *mut c_int,
    c_int,
    c_int,
    *mut c_void,
    *mut c_void,
    *mut *mut c_char,
) -> c_int;

/// libnetcdf's `NC_infermodel` (its address; 0 when no loaded object defines it).
fn real() -> usize {
    static REAL: OnceLock<usize> = OnceLock::new();
    *REAL.get_or_init(|| netcdf_symbol(c"NC_infermodel") as usize)
}

/// The repaired path for `path`, when it needs one.
fn repaired(path: *const c_char, creating: bool) -> Option<CString> {
    if path.is_null() {
        return None;
    }
    // SAFETY: libnetcdf passes the NUL-terminated path its caller gave.
    let text = unsafe { CStr::from_ptr(path) }.to_str().ok()?;
    let new = std::panic::catch_unwind(|| crate::infer::repaired(text, creating))
        .ok()
        .flatten()?;
    if std::env::var_os("NCZARR_RS_DEBUG").is_some() {
        eprintln!("nczarr-rs: {text} is opened as {new}");
    }
    CString::new(new).ok()
}

#[unsafe(no_mangle)]
pub extern "C" fn NC_infermodel(
    path: *const c_char,
    omodep: *mut c_int,
    iscreate: c_int,
    useparallel: c_int,
    params: *mut c_void,
    model: *mut c_void,
    newpathp: *mut *mut c_char,
) -> c_int {
    let real = real();
    if real == 0 {
        return NC_EINTERNAL;
    }
    // SAFETY: the address is libnetcdf's `NC_infermodel`, of the type above.
    let real: InferModel = unsafe { std::mem::transmute::<usize, InferModel>(real) };
    let new = repaired(path, iscreate != 0);
    let path = new.as_ref().map_or(path, |p| p.as_ptr());
    real(path, omodep, iscreate, useparallel, params, model, newpathp)
}
