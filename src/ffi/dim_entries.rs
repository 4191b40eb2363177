//! Entry points for dimensions.

use super::cmem::{self, put};
use super::codes::*;
use super::registry::{guard, with};
use std::os::raw::{c_char, c_int};

pub(crate) extern "C" fn def_dim(
    ncid: c_int,
    name: *const c_char,
    len: usize,
    idp: *mut c_int,
) -> c_int {
    guard(|| {
        let name = cmem::name(name)?;
        let d = with(ncid, |o, g| {
            o.ds.def_dim(g, name, len as u64, len == NC_UNLIMITED)
        })?;
        put(idp, d.0 as c_int);
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn inq_dimid(ncid: c_int, name: *const c_char, idp: *mut c_int) -> c_int {
    guard(|| {
        let name = cmem::name(name)?;
        let d = with(ncid, |o, g| o.ds.dimid(g, name))?;
        put(idp, d.0 as c_int);
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn inq_dim(
    ncid: c_int,
    dimid: c_int,
    name: *mut c_char,
    lenp: *mut usize,
) -> c_int {
    guard(|| {
        with(ncid, |o, _| {
            let d = o.ds.dim_id(dimid)?;
            let dim = o.ds.tree.dim(d);
            cmem::put_name(name, &dim.name);
            put(lenp, dim.len as usize);
            Ok(NC_NOERR)
        })
    })
}

pub(crate) extern "C" fn inq_unlimdim(ncid: c_int, idp: *mut c_int) -> c_int {
    guard(|| {
        let d = with(ncid, |o, g| Ok(o.ds.unlimdims(g).first().copied()))?;
        put(idp, d.map_or(-1, |d| d.0 as c_int));
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn rename_dim(ncid: c_int, dimid: c_int, name: *const c_char) -> c_int {
    guard(|| {
        let name = cmem::name(name)?;
        with(ncid, |o, _| {
            let d = o.ds.dim_id(dimid)?;
            o.ds.rename_dim(d, name)
        })?;
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn inq_unlimdims(ncid: c_int, np: *mut c_int, ids: *mut c_int) -> c_int {
    guard(|| {
        let dims = with(ncid, |o, g| Ok(o.ds.unlimdims(g)))?;
        put(np, dims.len() as c_int);
        if let Some(out) = cmem::slice_mut(ids, dims.len()) {
            for (o, d) in out.iter_mut().zip(&dims) {
                *o = d.0 as c_int;
            }
        }
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn inq_dimids(
    ncid: c_int,
    np: *mut c_int,
    ids: *mut c_int,
    include_parents: c_int,
) -> c_int {
    guard(|| {
        let dims = with(ncid, |o, g| Ok(o.ds.dimids(g, include_parents != 0)))?;
        put(np, dims.len() as c_int);
        if let Some(out) = cmem::slice_mut(ids, dims.len()) {
            for (o, d) in out.iter_mut().zip(&dims) {
                *o = d.0 as c_int;
            }
        }
        Ok(NC_NOERR)
    })
}
