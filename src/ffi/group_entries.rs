//! Entry points for groups, type inquiry (compound types of records included), and the calls
//! defining user-defined types: compound types are defined; enum, opaque and variable-length
//! types are refused.

use super::cmem::{self, put};
use super::codes::*;
use super::registry::{group_ncid, guard, with};
use crate::error::Error;
use crate::model::TypeClass;
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
        if name.contains('/') {
            // A group's own name, not a path (nc_inq_grp_full_ncid takes paths).
            return Err(Error::BadName(name.to_string()));
        }
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

pub(crate) extern "C" fn inq_typeids(ncid: c_int, np: *mut c_int, ids: *mut c_int) -> c_int {
    guard(|| {
        let listed = with(ncid, |o, g| Ok(o.ds.typeids(g)))?;
        put(np, listed.len() as c_int);
        if let Some(out) = cmem::slice_mut(ids, listed.len()) {
            out.copy_from_slice(&listed);
        }
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
        let a = with(ncid1, |o, _| o.ds.type_shape(t1))?;
        let b = with(ncid2, |o, _| o.ds.type_shape(t2))?;
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
    name: *mut c_char,
    size: *mut usize,
    base: *mut c_int,
    nfields: *mut usize,
    class: *mut c_int,
) -> c_int {
    guard(|| {
        let t = with(ncid, |o, _| o.ds.user_type(xtype).cloned())?;
        cmem::put_name(name, &t.name);
        put(size, t.size);
        match &t.class {
            TypeClass::Enum(e) => {
                put(base, e.base.id());
                put(nfields, e.members().len());
                put(class, NC_ENUM);
            }
            TypeClass::Opaque => {
                put(base, NC_NAT);
                put(nfields, 0);
                put(class, NC_OPAQUE);
            }
            TypeClass::Vlen(element) => {
                put(base, element.id());
                put(nfields, 0);
                put(class, NC_VLEN);
            }
            TypeClass::Compound => {
                put(base, NC_NAT);
                put(nfields, t.fields.len());
                put(class, NC_COMPOUND);
            }
        }
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn inq_typeid(ncid: c_int, name: *const c_char, typep: *mut c_int) -> c_int {
    guard(|| {
        let name = cmem::name(name)?;
        let id = with(ncid, |o, g| o.ds.typeid_in(g, name))?;
        put(typep, id);
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn def_compound(
    ncid: c_int,
    size: usize,
    name: *const c_char,
    typeidp: *mut c_int,
) -> c_int {
    guard(|| {
        let name = cmem::name(name)?;
        let id = with(ncid, |o, g| o.ds.def_compound(g, size, name))?;
        put(typeidp, id);
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn insert_compound(
    ncid: c_int,
    xtype: c_int,
    name: *const c_char,
    offset: usize,
    field_type: c_int,
) -> c_int {
    guard(|| {
        let name = cmem::name(name)?;
        with(ncid, |o, _| {
            o.ds.insert_compound(xtype, name, offset, field_type, &[])
        })?;
        Ok(NC_NOERR)
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) extern "C" fn insert_array_compound(
    ncid: c_int,
    xtype: c_int,
    name: *const c_char,
    offset: usize,
    field_type: c_int,
    ndims: c_int,
    dim_sizes: *const c_int,
) -> c_int {
    guard(|| {
        let name = cmem::name(name)?;
        if ndims > NC_MAX_VAR_DIMS {
            return Err(Error::Invalid(format!("a field of {ndims} dimensions")));
        }
        let dims = cmem::counted(dim_sizes, ndims, "field dimensions")?
            .iter()
            .map(|&d| usize::try_from(d).map_err(|_| Error::Invalid(format!("field size {d}"))))
            .collect::<Result<Vec<usize>, Error>>()?;
        with(ncid, |o, _| {
            o.ds.insert_compound(xtype, name, offset, field_type, &dims)
        })?;
        Ok(NC_NOERR)
    })
}
#[allow(clippy::too_many_arguments)]
pub(crate) extern "C" fn inq_compound_field(
    ncid: c_int,
    xtype: c_int,
    fieldid: c_int,
    name: *mut c_char,
    offset: *mut usize,
    field_type: *mut c_int,
    ndims: *mut c_int,
    dim_sizes: *mut c_int,
) -> c_int {
    guard(|| {
        let f = with(ncid, |o, _| o.ds.compound_field(xtype, fieldid).cloned())?;
        cmem::put_name(name, &f.name);
        put(offset, f.offset);
        put(field_type, f.type_id);
        put(ndims, f.dims.len() as c_int);
        if let Some(out) = cmem::slice_mut(dim_sizes, f.dims.len()) {
            for (o, d) in out.iter_mut().zip(&f.dims) {
                *o = c_int::try_from(*d).unwrap_or(c_int::MAX);
            }
        }
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn inq_compound_fieldindex(
    ncid: c_int,
    xtype: c_int,
    name: *const c_char,
    fieldid: *mut c_int,
) -> c_int {
    guard(|| {
        let name = cmem::name(name)?;
        let i = with(ncid, |o, _| o.ds.compound_field_index(xtype, name))?;
        put(fieldid, i as c_int);
        Ok(NC_NOERR)
    })
}
pub(crate) extern "C" fn def_vlen(
    ncid: c_int,
    name: *const c_char,
    base: c_int,
    typeidp: *mut c_int,
) -> c_int {
    guard(|| {
        let name = cmem::name(name)?;
        let id = with(ncid, |o, g| o.ds.def_vlen(g, name, base))?;
        put(typeidp, id);
        Ok(NC_NOERR)
    })
}

/// `nc_put_vlen_element`: points the `nc_vlen_t` at `element` to `len` values at `data` (not
/// copied, as netCDF-4 does).
pub(crate) extern "C" fn put_vlen_element(
    ncid: c_int,
    xtype: c_int,
    element: *mut c_void,
    len: usize,
    data: *const c_void,
) -> c_int {
    guard(|| {
        with(ncid, |o, _| o.ds.vlen_base(xtype))?;
        if element.is_null() {
            return Err(Error::Invalid("NULL vlen element".into()));
        }
        put(
            element.cast::<cmem::NcVlen>(),
            cmem::NcVlen {
                len,
                p: data.cast_mut(),
            },
        );
        Ok(NC_NOERR)
    })
}

/// `nc_get_vlen_element`: the count of the `nc_vlen_t` at `element`, its values copied to
/// `data`.
pub(crate) extern "C" fn get_vlen_element(
    ncid: c_int,
    xtype: c_int,
    element: *const c_void,
    len: *mut usize,
    data: *mut c_void,
) -> c_int {
    guard(|| {
        let base = with(ncid, |o, _| o.ds.vlen_base(xtype))?;
        let items = cmem::get_vlens(element, 1, base.size(), std::iter::once(0))?;
        let item = items.first().map(Vec::as_slice).unwrap_or_default();
        put(len, item.len() / base.size());
        cmem::bytes_mut(data, item.len())?.copy_from_slice(item);
        Ok(NC_NOERR)
    })
}
pub(crate) extern "C" fn def_enum(
    ncid: c_int,
    base: c_int,
    name: *const c_char,
    typeidp: *mut c_int,
) -> c_int {
    guard(|| {
        let name = cmem::name(name)?;
        let id = with(ncid, |o, g| o.ds.def_enum(g, base, name))?;
        put(typeidp, id);
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn insert_enum(
    ncid: c_int,
    xtype: c_int,
    name: *const c_char,
    value: *const c_void,
) -> c_int {
    guard(|| {
        let name = cmem::name(name)?;
        with(ncid, |o, _| {
            // An id of no enum type is the insert's own error, without reading `value`.
            let size =
                o.ds.tree
                    .types
                    .enumeration(xtype)
                    .map_or(0, |e| e.base.size());
            o.ds.insert_enum(xtype, name, cmem::bytes(value, size)?)
        })?;
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn inq_enum_member(
    ncid: c_int,
    xtype: c_int,
    idx: c_int,
    name: *mut c_char,
    value: *mut c_void,
) -> c_int {
    guard(|| {
        let (member, bytes) = with(ncid, |o, _| o.ds.enum_member(xtype, idx))?;
        cmem::put_name(name, &member);
        if !value.is_null() {
            cmem::bytes_mut(value, bytes.len())?.copy_from_slice(&bytes);
        }
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn inq_enum_ident(
    ncid: c_int,
    xtype: c_int,
    value: c_longlong,
    identifier: *mut c_char,
) -> c_int {
    guard(|| {
        let member = with(ncid, |o, _| o.ds.enum_ident(xtype, value))?;
        cmem::put_name(identifier, &member);
        Ok(NC_NOERR)
    })
}
pub(crate) extern "C" fn def_opaque(
    ncid: c_int,
    size: usize,
    name: *const c_char,
    typeidp: *mut c_int,
) -> c_int {
    guard(|| {
        let name = cmem::name(name)?;
        let id = with(ncid, |o, g| o.ds.def_opaque(g, size, name))?;
        put(typeidp, id);
        Ok(NC_NOERR)
    })
}
