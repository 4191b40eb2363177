//! Our `NC_infermodel`, ahead of libnetcdf's (preloaded or linked before it, as our
//! `NCZ_initialize` is): every `nc_open` and `nc_create` passes its path through it before
//! libnetcdf decides which dispatcher serves the dataset. The path is repaired as
//! [`crate::infer`] says (a local Zarr dataset named by plain path; a fragment that would send
//! libnetcdf 4.9.0 into an endless loop, or `NC_EURL` where it cannot be rewritten), then
//! libnetcdf's own inference runs on it.

use super::codes::{
    NC_64BIT_DATA, NC_64BIT_OFFSET, NC_EINTERNAL, NC_EURL, NC_INMEMORY, NC_MMAP, NC_UDF0, NC_UDF1,
};
use super::install::netcdf_symbol;
use crate::infer::{Repair, Request};
use std::ffi::{CStr, CString};
use std::io::Write;
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

/// libnetcdf's `NC_infermodel`, when a loaded object defines one.
fn real() -> Option<InferModel> {
    static REAL: OnceLock<Option<InferModel>> = OnceLock::new();
    *REAL.get_or_init(|| {
        let found = netcdf_symbol(c"NC_infermodel");
        // SAFETY: a non-null address of libnetcdf's `NC_infermodel`, of the type above.
        (!found.is_null()).then(|| unsafe { std::mem::transmute::<*mut c_void, InferModel>(found) })
    })
}

/// Mode flags with which the caller chooses the format itself: user-defined formats 0-9 (the
/// bits of netcdf-c 4.10; 4.9 has 0 and 1), an in-memory dataset, `NC_MMAP`.
const FORMAT_CHOSEN: c_int = NC_UDF0
    | NC_UDF1
    | 0x10000
    | 0x80000
    | 0x100000
    | 0x200000
    | 0x400000
    | 0x800000
    | 0x1000000
    | 0x2000000
    | NC_INMEMORY
    | NC_MMAP;

/// Create flags that ask for a netCDF-3 format.
const NETCDF3_CREATE: c_int = NC_64BIT_OFFSET | NC_64BIT_DATA;

/// What to give libnetcdf for `path`, when it needs repair.
fn repaired(path: *const c_char, request: Request) -> Option<Repair> {
    if path.is_null() {
        return None;
    }
    // SAFETY: libnetcdf passes the NUL-terminated path its caller gave.
    let text = unsafe { CStr::from_ptr(path) }.to_str().ok()?;
    let repair = std::panic::catch_unwind(|| crate::infer::repaired(text, request))
        .ok()
        .flatten()?;
    if std::env::var_os("NCZARR_RS_DEBUG").is_some() {
        let _ = match &repair {
            Repair::Path(new) => {
                writeln!(std::io::stderr(), "nczarr-rs: {text} is opened as {new}")
            }
            Repair::Refuse => writeln!(std::io::stderr(), "nczarr-rs: {text} is refused"),
        };
    }
    Some(repair)
}

/// The caller's mode flags, which libnetcdf passes in `omodep` (null is read as none).
fn mode(omodep: *const c_int) -> c_int {
    if omodep.is_null() {
        return 0;
    }
    // SAFETY: a non-null `omodep` points at libnetcdf's copy of the caller's mode.
    unsafe { *omodep }
}

/// The path libnetcdf's inference wrote to `newpathp`, when it rewrote the path.
fn rewritten(newpathp: *mut *mut c_char) -> Option<String> {
    if newpathp.is_null() {
        return None;
    }
    // SAFETY: a non-null `newpathp` points at libnetcdf's out-pointer, null or a path.
    super::given_path::text_of(unsafe { *newpathp })
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
    let Some(real) = real() else {
        return NC_EINTERNAL;
    };
    let chosen =
        mode(omodep) & FORMAT_CHOSEN != 0 || (iscreate != 0 && mode(omodep) & NETCDF3_CREATE != 0);
    let request = if !params.is_null() || chosen {
        Request::Other
    } else if iscreate != 0 {
        Request::Create
    } else {
        Request::Open
    };
    let new = match repaired(path, request) {
        Some(Repair::Refuse) => {
            let _ = writeln!(
                std::io::stderr(),
                "nczarr-rs: libnetcdf would never finish reading the mode words of this name"
            );
            return NC_EURL;
        }
        Some(Repair::Path(new)) => CString::new(new).ok(),
        None => None,
    };
    let given = new.as_ref().and_then(|_| super::given_path::text_of(path));
    let path = new.as_ref().map_or(path, |p| p.as_ptr());
    let status = real(path, omodep, iscreate, useparallel, params, model, newpathp);
    if let Some(given) = given {
        // What libnetcdf opens: its own rewriting of our URL, when it made one.
        let url = rewritten(newpathp).or_else(|| super::given_path::text_of(path));
        if let Some(url) = url {
            super::given_path::remember(&url, &given);
        }
    }
    status
}
