//! Entry points for attributes.

use super::cmem::{self, put};
use super::codes::*;
use super::registry::{guard, with};
use crate::api::{Dataset, Owner};
use crate::error::{Error, Result};
use crate::model::{GroupId, NcType, Values};
use std::os::raw::{c_char, c_int, c_void};

fn owner(ds: &Dataset, g: GroupId, varid: c_int) -> Result<Owner> {
    if varid == NC_GLOBAL {
        Ok(Owner::Group(g))
    } else {
        Ok(Owner::Var(g, ds.var_index(g, varid)?))
    }
}

pub(crate) extern "C" fn inq_att(
    ncid: c_int,
    varid: c_int,
    name: *const c_char,
    typep: *mut c_int,
    lenp: *mut usize,
) -> c_int {
    guard(|| {
        let name = cmem::name(name)?;
        let (t, n) = with(ncid, |o, g| {
            let ow = owner(&o.ds, g, varid)?;
            o.ds.inq_att_typed(ow, name)
        })?;
        put(typep, t);
        put(lenp, n);
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn inq_attid(
    ncid: c_int,
    varid: c_int,
    name: *const c_char,
    idp: *mut c_int,
) -> c_int {
    guard(|| {
        let name = cmem::name(name)?;
        let i = with(ncid, |o, g| {
            let ow = owner(&o.ds, g, varid)?;
            o.ds.inq_attid(ow, name)
        })?;
        put(idp, i as c_int);
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn inq_attname(
    ncid: c_int,
    varid: c_int,
    num: c_int,
    name: *mut c_char,
) -> c_int {
    guard(|| {
        with(ncid, |o, g| {
            let ow = owner(&o.ds, g, varid)?;
            cmem::put_name(name, o.ds.inq_attname(ow, num)?);
            Ok(NC_NOERR)
        })
    })
}

pub(crate) extern "C" fn rename_att(
    ncid: c_int,
    varid: c_int,
    name: *const c_char,
    newname: *const c_char,
) -> c_int {
    guard(|| {
        let (name, newname) = (cmem::name(name)?, cmem::name(newname)?);
        with(ncid, |o, g| {
            let ow = owner(&o.ds, g, varid)?;
            o.ds.rename_att(ow, name, newname)
        })?;
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn del_att(ncid: c_int, varid: c_int, name: *const c_char) -> c_int {
    guard(|| {
        let name = cmem::name(name)?;
        with(ncid, |o, g| {
            let ow = owner(&o.ds, g, varid)?;
            o.ds.del_att(ow, name)
        })?;
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn get_att(
    ncid: c_int,
    varid: c_int,
    name: *const c_char,
    value: *mut c_void,
    memtype: c_int,
) -> c_int {
    guard(|| {
        let name = cmem::name(name)?;
        let (fill, user_type) = with(ncid, |o, g| {
            let ow = owner(&o.ds, g, varid)?;
            Ok((
                o.ds.records_fill_in(ow, name, memtype)?,
                o.ds.att_user_type(ow, name),
            ))
        })?;
        if fill.is_some() || user_type.is_some() {
            super::reclaim::refuse_user_values_unless_interposed(name)?;
        }
        if let Some(bytes) = fill {
            cmem::bytes_mut(value, bytes.len())?.copy_from_slice(&bytes);
            return Ok(NC_NOERR);
        }
        // Values of an enum or opaque type are read as the bytes they are stored as, in that
        // type only.
        let mt = if memtype == NC_NAT || user_type == Some(memtype) {
            None
        } else {
            Some(NcType::from_id(memtype)?)
        };
        let (values, range, sequences_typed) = with(ncid, |o, g| {
            let ow = owner(&o.ds, g, varid)?;
            let (values, range) = o.ds.get_att(ow, name, mt)?;
            let typed = user_type.is_some_and(|id| o.ds.vlen_base(id).is_ok());
            Ok((values, range, typed))
        })?;
        match &values {
            Values::Fixed { bytes, .. } => {
                cmem::bytes_mut(value, bytes.len())?.copy_from_slice(bytes)
            }
            Values::Strings(items) => cmem::put_strings(value, items, 0..items.len())?,
            // Only as values of their own type, whose `nc_vlen_t`s the caller's memory holds.
            Values::Vlens { .. } if !sequences_typed => return Err(Error::BadType(memtype)),
            Values::Vlens { base, items } => {
                cmem::put_vlens(value, items, base.size(), 0..items.len())?
            }
        }
        Ok(if range { NC_ERANGE } else { NC_NOERR })
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) extern "C" fn put_att(
    ncid: c_int,
    varid: c_int,
    name: *const c_char,
    file_type: c_int,
    len: usize,
    value: *const c_void,
    memtype: c_int,
) -> c_int {
    guard(|| {
        let name = cmem::name(name)?;
        if file_type >= crate::model::FIRST_USER_TYPE {
            return with(ncid, |o, g| {
                let ow = owner(&o.ds, g, varid)?;
                if memtype != NC_NAT && memtype != file_type {
                    return Err(Error::BadType(file_type));
                }
                if let Ok(base) = o.ds.vlen_base(file_type) {
                    let items = cmem::get_vlens(value, len, base.size(), 0..len)?;
                    o.ds.put_vlen_att(ow, name, file_type, items)?;
                    return Ok(NC_NOERR);
                }
                let n = o.ds.user_att_bytes(ow, name, file_type, len)?;
                o.ds.put_user_att(ow, name, file_type, len, cmem::bytes(value, n)?)?;
                Ok(NC_NOERR)
            });
        }
        let ft = NcType::from_id(file_type)?;
        let mt = if memtype == NC_NAT {
            ft
        } else {
            NcType::from_id(memtype)?
        };
        let values = if mt == NcType::String {
            Values::Strings(cmem::get_strings(value, len, 0..len)?)
        } else {
            let n = len
                .checked_mul(mt.size())
                .ok_or(crate::error::Error::NoMem)?;
            Values::fixed(mt, cmem::bytes(value, n)?.to_vec())
        };
        let range = with(ncid, |o, g| {
            let ow = owner(&o.ds, g, varid)?;
            o.ds.put_att(ow, name, ft, values)
        })?;
        Ok(if range { NC_ERANGE } else { NC_NOERR })
    })
}
