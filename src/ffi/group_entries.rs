//! Entry points for groups, type inquiry, and the user-defined-type calls NCZarr refuses.

use super::cmem::{self, put};
use super::codes::*;
use super::registry::{group_ncid, guard, with};
use crate::api::Dataset;
use crate::error::Error;
use crate::model::NcType;
use std::os::raw::{c_char, c_int, c_longlong, c_void};

pub(crate) extern "C" fn show_metadata(ncid: c_int) -> c_int {
    guard(|| with(ncid, |_, _| Ok(NC_NOERR)))
}

pub(crate) extern "C" fn inq_ncid(ncid: c_int, name: *const c_char, grp: *mut c_int) -> c_int {
    guard(|| {
        if name.is_null() {
            // ncdump asks this way for the group itself.
            with(ncid, |_, _| Ok(()))?;
            put(grp, ncid);
            return Ok(NC_NOERR);
        }
        let name = cmem::name(name)?;
        let g = with(ncid, |o, g| {
            o.ds.tree
                .child_named(g, name)
                .ok_or_else(|| Error::NoGroup(name.to_string()))
        })?;
        put(grp, group_ncid(ncid, g));
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn inq_grps(ncid: c_int, np: *mut c_int, ids: *mut c_int) -> c_int {
    guard(|| {
        let kids = with(ncid, |o, g| Ok(o.ds.tree.group(g).children.clone()))?;
        put(np, kids.len() as c_int);
        if let Some(out) = cmem::slice_mut(ids, kids.len()) {
            for (o, k) in out.iter_mut().zip(&kids) {
                *o = group_ncid(ncid, *k);
            }
        }
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn inq_grpname(ncid: c_int, name: *mut c_char) -> c_int {
    guard(|| {
        with(ncid, |o, g| {
            cmem::put_name(name, &o.ds.tree.group(g).name);
            Ok(NC_NOERR)
        })
    })
}

pub(crate) extern "C" fn inq_grpname_full(
    ncid: c_int,
    lenp: *mut usize,
    name: *mut c_char,
) -> c_int {
    guard(|| {
        let full = with(ncid, |o, g| Ok(o.ds.tree.group_full_name(g)))?;
        put(lenp, full.len());
        cmem::put_string_unbounded(name, &full);
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn inq_grp_parent(ncid: c_int, parent: *mut c_int) -> c_int {
    guard(|| {
        let p = with(ncid, |o, g| {
            o.ds.tree
                .group(g)
                .parent
                .ok_or_else(|| Error::NoGroup("parent of root".into()))
        })?;
        put(parent, group_ncid(ncid, p));
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn inq_grp_full_ncid(
    ncid: c_int,
    full: *const c_char,
    grp: *mut c_int,
) -> c_int {
    guard(|| {
        if full.is_null() {
            return Err(Error::Invalid("NULL group name".into()));
        }
        let path = String::from_utf8_lossy(&cmem::c_bytes(full)).into_owned();
        let g = with(ncid, |o, g| o.ds.group_by_path(g, &path))?;
        put(grp, group_ncid(ncid, g));
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn inq_varids(ncid: c_int, np: *mut c_int, ids: *mut c_int) -> c_int {
    guard(|| {
        let n = with(ncid, |o, g| Ok(o.ds.tree.group(g).vars.len()))?;
        put(np, n as c_int);
        if let Some(out) = cmem::slice_mut(ids, n) {
            for (i, o) in out.iter_mut().enumerate() {
                *o = i as c_int;
            }
        }
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn inq_typeids(ncid: c_int, np: *mut c_int, _ids: *mut c_int) -> c_int {
    guard(|| {
        with(ncid, |_, _| Ok(()))?;
        put(np, 0);
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn inq_type_equal(
    ncid1: c_int,
    t1: c_int,
    ncid2: c_int,
    t2: c_int,
    equal: *mut c_int,
) -> c_int {
    guard(|| {
        with(ncid1, |_, _| Ok(()))?;
        with(ncid2, |_, _| Ok(()))?;
        let (a, b) = (NcType::from_id(t1)?, NcType::from_id(t2)?);
        put(equal, c_int::from(a == b));
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn def_grp(ncid: c_int, name: *const c_char, newp: *mut c_int) -> c_int {
    guard(|| {
        let name = cmem::name(name)?;
        let g = with(ncid, |o, g| o.ds.def_grp(g, name))?;
        put(newp, group_ncid(ncid, g));
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn rename_grp(ncid: c_int, name: *const c_char) -> c_int {
    guard(|| {
        let name = cmem::name(name)?;
        with(ncid, |o, g| o.ds.rename_grp(g, name))?;
        Ok(NC_NOERR)
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) extern "C" fn inq_user_type(
    ncid: c_int,
    xtype: c_int,
    _name: *mut c_char,
    _size: *mut usize,
    _base: *mut c_int,
    _nfields: *mut usize,
    _class: *mut c_int,
) -> c_int {
    guard(|| {
        with(ncid, |_, _| Ok(()))?;
        Err(Error::BadType(xtype))
    })
}

pub(crate) extern "C" fn inq_typeid(ncid: c_int, name: *const c_char, typep: *mut c_int) -> c_int {
    guard(|| {
        let name = cmem::name(name)?;
        with(ncid, |_, _| Ok(()))?;
        put(typep, Dataset::typeid(name)?.id());
        Ok(NC_NOERR)
    })
}

fn not_nc4(what: &str) -> c_int {
    guard(|| {
        Err(Error::NotNc4(format!(
            "{what}: user-defined types are not part of the NCZarr model"
        )))
    })
}

pub(crate) extern "C" fn def_compound(
    _: c_int,
    _: usize,
    _: *const c_char,
    _: *mut c_int,
) -> c_int {
    not_nc4("nc_def_compound")
}
pub(crate) extern "C" fn insert_compound(
    _: c_int,
    _: c_int,
    _: *const c_char,
    _: usize,
    _: c_int,
) -> c_int {
    not_nc4("nc_insert_compound")
}
#[allow(clippy::too_many_arguments)]
pub(crate) extern "C" fn insert_array_compound(
    _: c_int,
    _: c_int,
    _: *const c_char,
    _: usize,
    _: c_int,
    _: c_int,
    _: *const c_int,
) -> c_int {
    not_nc4("nc_insert_array_compound")
}
#[allow(clippy::too_many_arguments)]
pub(crate) extern "C" fn inq_compound_field(
    _: c_int,
    _: c_int,
    _: c_int,
    _: *mut c_char,
    _: *mut usize,
    _: *mut c_int,
    _: *mut c_int,
    _: *mut c_int,
) -> c_int {
    not_nc4("nc_inq_compound_field")
}
pub(crate) extern "C" fn inq_compound_fieldindex(
    _: c_int,
    _: c_int,
    _: *const c_char,
    _: *mut c_int,
) -> c_int {
    not_nc4("nc_inq_compound_fieldindex")
}
pub(crate) extern "C" fn def_vlen(_: c_int, _: *const c_char, _: c_int, _: *mut c_int) -> c_int {
    not_nc4("nc_def_vlen")
}
pub(crate) extern "C" fn put_vlen_element(
    _: c_int,
    _: c_int,
    _: *mut c_void,
    _: usize,
    _: *const c_void,
) -> c_int {
    not_nc4("nc_put_vlen_element")
}
pub(crate) extern "C" fn get_vlen_element(
    _: c_int,
    _: c_int,
    _: *const c_void,
    _: *mut usize,
    _: *mut c_void,
) -> c_int {
    not_nc4("nc_get_vlen_element")
}
pub(crate) extern "C" fn def_enum(_: c_int, _: c_int, _: *const c_char, _: *mut c_int) -> c_int {
    not_nc4("nc_def_enum")
}
pub(crate) extern "C" fn insert_enum(
    _: c_int,
    _: c_int,
    _: *const c_char,
    _: *const c_void,
) -> c_int {
    not_nc4("nc_insert_enum")
}
pub(crate) extern "C" fn inq_enum_member(
    _: c_int,
    _: c_int,
    _: c_int,
    _: *mut c_char,
    _: *mut c_void,
) -> c_int {
    not_nc4("nc_inq_enum_member")
}
pub(crate) extern "C" fn inq_enum_ident(
    _: c_int,
    _: c_int,
    _: c_longlong,
    _: *mut c_char,
) -> c_int {
    not_nc4("nc_inq_enum_ident")
}
pub(crate) extern "C" fn def_opaque(_: c_int, _: usize, _: *const c_char, _: *mut c_int) -> c_int {
    not_nc4("nc_def_opaque")
}
