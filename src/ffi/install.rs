//! Getting our table into the host's libnetcdf.
//!
//! - Preloaded or linked ahead of libnetcdf, our exported `NCZ_initialize` interposes on
//!   libnetcdf's: it runs the real one, then stores our table in `NCZ_dispatch_table`, so every
//!   `mode=nczarr`/`mode=zarr` URL reaches us.
//! - `nczarr_rs_install()` does the same explicitly.
//! - `nczarr_rs_register_udf()` (and the `.ncrc` init symbols) register a user-defined format.
//!
//! libnetcdf is found at run time with `dlsym`; we never link it. A libnetcdf loaded with
//! `RTLD_LOCAL` (Python loads the netCDF4 wheel's so) is outside the global search order that
//! `dlsym` walks, so [`netcdf_symbol`] looks through every loaded object as well.

use super::codes::*;
use super::table::{NCZARR_TABLE, NcDispatch, UDF0_TABLE, UDF1_TABLE};
use std::ffi::{CStr, CString};
use std::io::Write;
use std::os::raw::{c_int, c_void};

pub(crate) fn lookup(handle: *mut c_void, name: &CStr) -> *mut c_void {
    // SAFETY: dlsym with a valid NUL-terminated name; the handle is RTLD_DEFAULT/RTLD_NEXT or
    // one dlopen returned.
    unsafe { libc::dlsym(handle, name.as_ptr()) }
}

/// The base address of the object that holds `addr` (null when none does).
fn object_base(addr: *const c_void) -> *mut c_void {
    let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
    // SAFETY: dladdr only reads `addr` as a number and fills `info`.
    if unsafe { libc::dladdr(addr, info.as_mut_ptr()) } == 0 {
        return std::ptr::null_mut();
    }
    // SAFETY: dladdr succeeded, so it filled `info`.
    unsafe { info.assume_init() }.dli_fbase
}

/// True when `addr` lies in this library.
pub(crate) fn is_ours(addr: *const c_void) -> bool {
    let ours = object_base(netcdf_symbol as *const c_void);
    !ours.is_null() && object_base(addr) == ours
}

/// libnetcdf's definition of `name`: the next one after this library in the global search
/// order (libnetcdf preloaded or linked after us), else the global one when it is not ours
/// (linked before us), else the first loaded object other than this library that defines it.
/// Null when no loaded object does.
pub(crate) fn netcdf_symbol(name: &CStr) -> *mut c_void {
    let next = lookup(libc::RTLD_NEXT, name);
    if !next.is_null() {
        return next;
    }
    let global = lookup(libc::RTLD_DEFAULT, name);
    if !global.is_null() && !is_ours(global) {
        return global;
    }
    let mut objects: Vec<CString> = Vec::new();
    // SAFETY: the callback gets `objects` back as `data`, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(note_object), (&raw mut objects).cast()) };
    // Looked up after the walk: dlopen and dladdr take the loader's lock that the walk holds
    // in the other order.
    objects
        .iter()
        .map(|path| in_object(path, name))
        .find(|addr| !addr.is_null() && !is_ours(*addr))
        .unwrap_or(std::ptr::null_mut())
}

/// libnetcdf's function `name` ([`netcdf_symbol`]) as a function of type `F`, looked up once
/// into `slot`; `None` when no loaded object defines it.
///
/// # Safety
/// `F` must be a function pointer type of exactly the signature of libnetcdf's `name`.
pub(crate) unsafe fn netcdf_function<F: Copy>(
    slot: &'static std::sync::OnceLock<Option<F>>,
    name: &CStr,
) -> Option<F> {
    *slot.get_or_init(|| {
        let f = netcdf_symbol(name);
        // SAFETY: `F` is a function pointer of `name`'s signature (the caller's promise), as
        // wide as a data pointer, and `f` is not null.
        (!f.is_null()).then(|| unsafe { std::mem::transmute_copy::<*mut c_void, F>(&f) })
    })
}

/// `dl_iterate_phdr` callback: adds the name of one loaded object (not the main program) to
/// the `Vec<CString>` at `data`.
extern "C" fn note_object(
    info: *mut libc::dl_phdr_info,
    _size: libc::size_t,
    data: *mut c_void,
) -> c_int {
    // SAFETY: dl_iterate_phdr passes a valid `info`, and `data` is the vector that
    // `netcdf_symbol` handed it.
    let (info, objects) = unsafe { (&*info, &mut *data.cast::<Vec<CString>>()) };
    if !info.dlpi_name.is_null() {
        // SAFETY: a loaded object's name is a NUL-terminated string.
        let path = unsafe { CStr::from_ptr(info.dlpi_name) };
        if !path.is_empty() {
            objects.push(path.to_owned());
        }
    }
    0
}

/// `name` as the loaded object at `path` defines it (null when it does not).
fn in_object(path: &CStr, name: &CStr) -> *mut c_void {
    // SAFETY: RTLD_NOLOAD only takes another reference to an object loaded already.
    let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOLOAD | libc::RTLD_LAZY) };
    if handle.is_null() {
        return std::ptr::null_mut();
    }
    let addr = lookup(handle, name);
    // SAFETY: drops the reference taken above; the object stays loaded.
    unsafe { libc::dlclose(handle) };
    addr
}

fn warn(msg: &str) {
    if std::env::var_os("NCZARR_RS_QUIET").is_none() {
        let _ = writeln!(std::io::stderr(), "nczarr-rs: {msg}");
    }
}

/// Stores our table in libnetcdf's `NCZ_dispatch_table` after checking the built-in one's
/// layout version.
fn take_over() -> c_int {
    let slot = netcdf_symbol(c"NCZ_dispatch_table").cast::<*const NcDispatch>();
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
    let real = netcdf_symbol(c"NCZ_initialize");
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
    let init = netcdf_symbol(c"nc_initialize");
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
    let def = netcdf_symbol(c"nc_def_user_format");
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
