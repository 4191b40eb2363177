//! `nc_reclaim_data` and `nc_reclaim_data_all`, interposed on libnetcdf's (preloaded, or linked
//! ahead of libnetcdf).
//!
//! libnetcdf's versions ask its own HDF5-side bookkeeping whether a user-defined type holds
//! variable-length parts, which a dataset served here has none of: `ncdump` dumping a compound,
//! enum, opaque or variable-length value of ours would crash there. Of our user-defined types,
//! only a variable-length type's values own memory (each its sequence, `malloc`ed): reclaiming
//! frees those, and nothing for the other types (`_all` then frees the buffer itself). Every
//! other call goes to libnetcdf's definition unchanged. Where ours is not the one called (the library loaded as a `.ncrc` user-defined format), values of
//! user-defined types are not handed out at all ([`refuse_user_values_unless_interposed`]).

use super::codes::*;
use super::install::{is_ours, lookup, netcdf_function};
use super::registry::{guard, with};
use crate::model::FIRST_USER_TYPE;
use std::os::raw::{c_int, c_void};
use std::sync::OnceLock;

type Reclaim = unsafe extern "C" fn(c_int, c_int, *mut c_void, usize) -> c_int;

/// libnetcdf's definition of `name`, looked up once.
fn real(slot: &'static OnceLock<Option<Reclaim>>, name: &std::ffi::CStr) -> Option<Reclaim> {
    // SAFETY: libnetcdf's `nc_reclaim_data(_all)` has exactly this signature.
    unsafe { netcdf_function(slot, name) }
}

/// True when calls to `nc_reclaim_data` in this process reach ours (the library preloaded or
/// linked ahead of libnetcdf); not when it was loaded later (a user-defined format loaded from
/// `.ncrc`), where compound values must not be handed out: libnetcdf's would crash on them.
pub(crate) fn interposed() -> bool {
    static SEEN: OnceLock<bool> = OnceLock::new();
    *SEEN.get_or_init(|| is_ours(lookup(libc::RTLD_DEFAULT, c"nc_reclaim_data")))
}

/// Refuses to hand out values of a user-defined type where libnetcdf's `nc_reclaim_data` is
/// the one its callers reach (`ncdump` calls it on every value it read, and it would crash on
/// ours), naming `what` was asked for.
pub(crate) fn refuse_user_values_unless_interposed(what: &str) -> crate::error::Result<()> {
    if interposed() {
        return Ok(());
    }
    Err(crate::error::Error::Unsupported {
        var: what.to_string(),
        why: "values of user-defined types are served only with the library preloaded or \
              linked ahead of libnetcdf (libnetcdf's nc_reclaim_data cannot free them)"
            .into(),
    })
}

/// What values of `xtype` own, when `ncid` is a dataset of ours and `xtype` one of its
/// user-defined types: nothing (`Some(false)`), or each one's sequence of a variable-length
/// type (`Some(true)`).
fn our_user_type(ncid: c_int, xtype: c_int) -> Option<bool> {
    if xtype < FIRST_USER_TYPE {
        return None;
    }
    let mut sequences = false;
    let ours = guard(|| {
        with(ncid, |o, _| {
            sequences = o.ds.user_type(xtype)?.vlen_base().is_some();
            Ok(NC_NOERR)
        })
    });
    (ours == NC_NOERR).then_some(sequences)
}

/// Frees the sequences of `count` `nc_vlen_t`s at `memory` (handed out by us, each `malloc`ed
/// or null) and leaves them empty.
fn free_sequences(memory: *mut c_void, count: usize) {
    if memory.is_null() {
        return;
    }
    let values = memory.cast::<super::cmem::NcVlen>();
    for i in 0..count {
        // SAFETY: `memory` holds `count` values of a variable-length type, as the caller
        // promises; each sequence was `malloc`ed (or is null).
        unsafe {
            let v = values.add(i);
            let mut value = v.read_unaligned();
            libc::free(value.p);
            value.p = std::ptr::null_mut();
            value.len = 0;
            v.write_unaligned(value);
        }
    }
}

fn forward(
    slot: &'static OnceLock<Option<Reclaim>>,
    name: &std::ffi::CStr,
    args: (c_int, c_int, *mut c_void, usize),
) -> c_int {
    match real(slot, name) {
        // SAFETY: the caller's arguments, passed on unchanged to the function they meant.
        Some(f) => unsafe { f(args.0, args.1, args.2, args.3) },
        None => NC_ENOTBUILT,
    }
}

/// `nc_reclaim_data`: frees what `count` values of type `xtype` at `memory` own.
///
/// # Safety
/// As libnetcdf's: `memory` holds `count` values of `xtype` read from `ncid`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nc_reclaim_data(
    ncid: c_int,
    xtype: c_int,
    memory: *mut c_void,
    count: usize,
) -> c_int {
    static REAL: OnceLock<Option<Reclaim>> = OnceLock::new();
    match our_user_type(ncid, xtype) {
        Some(sequences) => {
            if sequences {
                free_sequences(memory, count);
            }
            NC_NOERR
        }
        None => forward(&REAL, c"nc_reclaim_data", (ncid, xtype, memory, count)),
    }
}

/// `nc_reclaim_data_all`: as [`nc_reclaim_data`], then frees `memory` itself.
///
/// # Safety
/// As libnetcdf's: `memory` is null or a `malloc`'d buffer of `count` values of `xtype` read
/// from `ncid`, which the call takes over.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nc_reclaim_data_all(
    ncid: c_int,
    xtype: c_int,
    memory: *mut c_void,
    count: usize,
) -> c_int {
    static REAL: OnceLock<Option<Reclaim>> = OnceLock::new();
    if let Some(sequences) = our_user_type(ncid, xtype) {
        if sequences {
            free_sequences(memory, count);
        }
        // SAFETY: `memory` is the caller's malloc'd buffer (or null), handed over to be freed.
        unsafe { libc::free(memory) };
        return NC_NOERR;
    }
    forward(&REAL, c"nc_reclaim_data_all", (ncid, xtype, memory, count))
}
