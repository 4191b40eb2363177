//! `nc_inq_path`, interposed on libnetcdf's (preloaded, or linked ahead of libnetcdf), and the
//! paths it answers.
//!
//! A local dataset named by plain path reaches libnetcdf as the URL [`super::infermodel`]
//! repaired it into, and libnetcdf keeps that URL as the dataset's path. Programs reopen what
//! `nc_inq_path` answers: netCDF4-python's `Dataset(ds.filepath(), "a")` turns mode `a` on a
//! name that is not an existing file into a create that clobbers the dataset. So a dataset
//! opened or created by plain path answers the path as its caller gave it, as netCDF files
//! do; every other `nc_inq_path` goes to libnetcdf's definition unchanged.

use super::codes::NC_EINTERNAL;
use super::install::netcdf_function;
use super::registry;
use std::collections::HashMap;
use std::ffi::CStr;
use std::os::raw::{c_char, c_int};
use std::sync::{LazyLock, Mutex, OnceLock};

/// The most repairs remembered and not yet taken by an open (each open takes its own; one
/// that fails before reaching us leaves its repair behind).
const MOST_REMEMBERED: usize = 64;

/// URL -> the plain path it was repaired from.
static REPAIRED: LazyLock<Mutex<HashMap<String, String>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// Remembers that `url` was given as `path`.
pub(crate) fn remember(url: &str, path: &str) {
    let mut repaired = REPAIRED.lock().unwrap_or_else(|p| p.into_inner());
    if repaired.len() >= MOST_REMEMBERED {
        repaired.clear();
    }
    repaired.insert(url.to_string(), path.to_string());
}

/// The plain path `url` was given as, taken from what is remembered.
pub(crate) fn take(url: &str) -> Option<String> {
    REPAIRED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .remove(url)
}

type InqPath = unsafe extern "C" fn(c_int, *mut usize, *mut c_char) -> c_int;

fn real() -> Option<InqPath> {
    static REAL: OnceLock<Option<InqPath>> = OnceLock::new();
    // SAFETY: libnetcdf's `nc_inq_path` has exactly this signature.
    unsafe { netcdf_function(&REAL, c"nc_inq_path") }
}

/// `int nc_inq_path(int ncid, size_t *pathlen, char *path)`: the path as given for a dataset
/// of ours opened by plain path (its length without the NUL in `pathlen`, its bytes and a
/// NUL in `path`, either may be null); libnetcdf's answer otherwise.
///
/// # Safety
/// As libnetcdf's: `pathlen` is null or points at a `size_t`, `path` is null or has room for
/// the path and its NUL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nc_inq_path(ncid: c_int, pathlen: *mut usize, path: *mut c_char) -> c_int {
    let given = std::panic::catch_unwind(|| {
        registry::lock()
            .get(&registry::file_of(ncid))
            .and_then(|o| o.given_path.clone())
    })
    .ok()
    .flatten();
    let Some(given) = given else {
        return match real() {
            // SAFETY: the caller's arguments, passed on unchanged.
            Some(real) => unsafe { real(ncid, pathlen, path) },
            None => NC_EINTERNAL,
        };
    };
    if !pathlen.is_null() {
        // SAFETY: a non-null `pathlen` points at a size_t the caller owns.
        unsafe { *pathlen = given.len() };
    }
    if !path.is_null() {
        // SAFETY: netCDF's contract: `path` has room for the path and its NUL (callers ask
        // the length first).
        unsafe {
            std::ptr::copy_nonoverlapping(given.as_ptr(), path.cast::<u8>(), given.len());
            *path.add(given.len()) = 0;
        }
    }
    0
}

/// The text of a C path, when it is UTF-8.
pub(crate) fn text_of(path: *const c_char) -> Option<String> {
    if path.is_null() {
        return None;
    }
    // SAFETY: libnetcdf passes NUL-terminated paths.
    unsafe { CStr::from_ptr(path) }
        .to_str()
        .ok()
        .map(str::to_string)
}
