//! Entry points for the dataset life cycle and dataset-level inquiry.

use super::cmem::{self, put};
use super::codes::*;
use super::registry::{self, Open, guard, with};
use super::table::NcDispatch;
use crate::api::{CreateOptions, Dataset, Owner};
use crate::error::Error;
use crate::url::DatasetUrl;
use std::os::raw::{c_char, c_int, c_void};

fn formatx_of(table: *const NcDispatch) -> c_int {
    if table.is_null() {
        return NC_FORMATX_NCZARR;
    }
    // SAFETY: libnetcdf passes the table it dispatched through (one of ours).
    let model = unsafe { (*table).model };
    match model {
        NC_FORMATX_UDF0 | NC_FORMATX_UDF1 => model,
        _ => NC_FORMATX_NCZARR,
    }
}

/// The dataset URL libnetcdf passed, refusing what we cannot serve.
fn dataset_url(path: *const c_char, mode: c_int) -> crate::error::Result<DatasetUrl> {
    if path.is_null() {
        return Err(Error::Invalid("NULL path".into()));
    }
    super::signals::protect_library_threads();
    if mode & NC_INMEMORY != 0 {
        return Err(Error::NotBuilt("in-memory NCZarr datasets".into()));
    }
    let text = String::from_utf8_lossy(&cmem::c_bytes(path)).into_owned();
    if std::env::var_os("NCZARR_RS_DEBUG").is_some() {
        // libnetcdf rewrites URLs before dispatching (S3 forms become path-style https).
        eprintln!(
            "nczarr-rs: dataset URL as received: {}",
            crate::url::redacted(&text)
        );
    }
    DatasetUrl::parse(&text)
}

fn register(ncid: c_int, ds: Dataset, formatx: c_int, mode: c_int, path: *const c_char) {
    let given_path = super::given_path::text_of(path).and_then(|url| super::given_path::take(&url));
    let open = Open {
        ds,
        formatx,
        mode,
        given_path,
    };
    registry::lock().insert(registry::file_of(ncid), open);
}

#[allow(clippy::too_many_arguments)]
pub(crate) extern "C" fn create(
    path: *const c_char,
    cmode: c_int,
    _initialsz: usize,
    _basepe: c_int,
    _chunksizehint: *mut usize,
    _params: *mut c_void,
    table: *const NcDispatch,
    ncid: c_int,
) -> c_int {
    guard(|| {
        let url = dataset_url(path, cmode)?;
        let opts = CreateOptions {
            clobber: cmode & NC_NOCLOBBER == 0,
            classic_model: cmode & NC_CLASSIC_MODEL != 0,
            diskless: cmode & NC_DISKLESS != 0 && cmode & NC_PERSIST == 0,
        };
        let ds = Dataset::create(&url, opts)?;
        register(ncid, ds, formatx_of(table), cmode | NC_WRITE, path);
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn open(
    path: *const c_char,
    mode: c_int,
    _basepe: c_int,
    _chunksizehint: *mut usize,
    _params: *mut c_void,
    table: *const NcDispatch,
    ncid: c_int,
) -> c_int {
    guard(|| {
        let url = dataset_url(path, mode)?;
        let diskless = mode & NC_DISKLESS != 0 && mode & NC_PERSIST == 0;
        let ds = Dataset::open_with(&url, mode & NC_WRITE != 0, diskless)?;
        register(ncid, ds, formatx_of(table), mode, path);
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn redef(ncid: c_int) -> c_int {
    guard(|| with(ncid, |o, _| o.ds.redef()).map(|_| NC_NOERR))
}

pub(crate) extern "C" fn enddef(ncid: c_int, _a: usize, _b: usize, _c: usize, _d: usize) -> c_int {
    guard(|| with(ncid, |o, _| o.ds.enddef()).map(|_| NC_NOERR))
}

pub(crate) extern "C" fn sync(ncid: c_int) -> c_int {
    guard(|| with(ncid, |o, _| o.ds.sync()).map(|_| NC_NOERR))
}

pub(crate) extern "C" fn abort(ncid: c_int) -> c_int {
    guard(|| {
        // A group index the dataset does not have is NC_EBADID and aborts nothing, as
        // netCDF-4 answers; any group's ncid aborts its dataset.
        registry::with(ncid, |_, _| Ok(()))?;
        let open = registry::lock()
            .remove(&registry::file_of(ncid))
            .ok_or(Error::BadId(ncid))?;
        open.ds.abort().map(|_| NC_NOERR)
    })
}

pub(crate) extern "C" fn close(ncid: c_int, _memio: *mut c_void) -> c_int {
    guard(|| {
        if ncid & 0xFFFF != 0 {
            return Err(Error::BadGroupId(ncid));
        }
        // Stored while still registered: when that fails the dataset stays open (netcdf-c
        // keeps its handle), so nc_close can be called again, or nc_abort.
        let mut open = registry::lock();
        let file = registry::file_of(ncid);
        open.get_mut(&file)
            .ok_or(Error::BadId(ncid))?
            .ds
            .store_for_close()?;
        open.remove(&file);
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn set_fill(ncid: c_int, fillmode: c_int, old: *mut c_int) -> c_int {
    guard(|| {
        if fillmode != NC_FILL && fillmode != NC_NOFILL {
            return Err(Error::Invalid(format!("fill mode {fillmode}")));
        }
        let was = with(ncid, |o, _| o.ds.set_fill(fillmode == NC_NOFILL))?;
        put(old, if was { NC_NOFILL } else { NC_FILL });
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn inq_format(ncid: c_int, formatp: *mut c_int) -> c_int {
    guard(|| {
        let classic = with(ncid, |o, _| Ok(o.ds.tree.classic_model))?;
        put(
            formatp,
            if classic {
                NC_FORMAT_NETCDF4_CLASSIC
            } else {
                NC_FORMAT_NETCDF4
            },
        );
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn inq_format_extended(
    ncid: c_int,
    formatp: *mut c_int,
    modep: *mut c_int,
) -> c_int {
    guard(|| {
        let (fx, mode) = with(ncid, |o, _| Ok((o.formatx, o.mode)))?;
        put(formatp, fx);
        put(modep, mode | NC_NETCDF4);
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn inq(
    ncid: c_int,
    ndimsp: *mut c_int,
    nvarsp: *mut c_int,
    nattsp: *mut c_int,
    unlimp: *mut c_int,
) -> c_int {
    guard(|| {
        with(ncid, |o, g| {
            let grp = o.ds.tree.group(g);
            put(ndimsp, grp.dims.len() as c_int);
            put(nvarsp, grp.vars.len() as c_int);
            put(nattsp, o.ds.natts(Owner::Group(g)) as c_int);
            put(
                unlimp,
                o.ds.unlimdims(g).first().map_or(-1, |d| d.0 as c_int),
            );
            Ok(NC_NOERR)
        })
    })
}

pub(crate) extern "C" fn inq_type(
    ncid: c_int,
    xtype: c_int,
    name: *mut c_char,
    size: *mut usize,
) -> c_int {
    guard(|| {
        let t = with(ncid, |o, _| o.ds.type_summary(xtype))?;
        cmem::put_name(name, &t.name);
        put(size, t.size);
        Ok(NC_NOERR)
    })
}
