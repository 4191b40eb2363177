//! The one global registry: external ncid (file part) -> open dataset, and the panic guard
//! every entry point runs inside.

use super::status;
use crate::api::Dataset;
use crate::error::{Error, Result};
use crate::model::GroupId;
use std::collections::HashMap;
use std::os::raw::c_int;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{LazyLock, Mutex, MutexGuard};

/// An open dataset and how it was opened.
pub struct Open {
    pub ds: Dataset,
    /// `NC_FORMATX_*` reported by `nc_inq_format_extended`.
    pub formatx: c_int,
    /// The mode flags given to open/create.
    pub mode: c_int,
    /// The plain path the caller named the dataset by, when libnetcdf was given a URL made of
    /// it (what `nc_inq_path` answers).
    pub given_path: Option<String>,
}

static OPEN: LazyLock<Mutex<HashMap<c_int, Open>>> = LazyLock::new(|| Mutex::new(HashMap::new()));

/// The registry, recovering from a poisoned lock (a caught panic must not wedge the process).
pub fn lock() -> MutexGuard<'static, HashMap<c_int, Open>> {
    OPEN.lock().unwrap_or_else(|p| p.into_inner())
}

/// The file part of an ncid.
pub fn file_of(ncid: c_int) -> c_int {
    ncid & !0xFFFF
}

/// Runs `f` on the dataset and group named by `ncid`.
pub fn with<T>(ncid: c_int, f: impl FnOnce(&mut Open, GroupId) -> Result<T>) -> Result<T> {
    let mut reg = lock();
    let open = reg.get_mut(&file_of(ncid)).ok_or(Error::BadId(ncid))?;
    // A group index the dataset does not have is `NC_EBADID`, as netCDF-4 answers.
    let g = open
        .ds
        .group_id((ncid & 0xFFFF) as usize)
        .ok_or(Error::BadId(ncid))?;
    f(open, g)
}

/// Runs an entry point body: catches panics, maps errors to codes.
pub fn guard(f: impl FnOnce() -> Result<c_int>) -> c_int {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(code)) => code,
        Ok(Err(e)) => status::report(&e),
        Err(panic) => {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "panic".into());
            status::report(&Error::Internal(msg))
        }
    }
}

/// The ncid of group `g` of the file `ncid` belongs to.
pub fn group_ncid(ncid: c_int, g: GroupId) -> c_int {
    file_of(ncid) | g.0 as c_int
}
