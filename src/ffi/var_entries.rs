//! Entry points for variable definition and inquiry.

use super::cmem::{self, put};
use super::codes::*;
use super::registry::{guard, with};
use crate::error::Error;
use crate::model::{Endian, NcType, Storage, Values};
use std::os::raw::{c_char, c_int, c_uint, c_void};

pub(crate) extern "C" fn def_var(
    ncid: c_int,
    name: *const c_char,
    xtype: c_int,
    ndims: c_int,
    dimids: *const c_int,
    varidp: *mut c_int,
) -> c_int {
    guard(|| {
        let name = cmem::name(name)?;
        let dims = cmem::counted(dimids, ndims, "dimids")?;
        let v = with(ncid, |o, g| match NcType::from_id(xtype) {
            Ok(ty) => o.ds.def_var(g, name, ty, dims),
            Err(_) if o.ds.tree.types.enumeration(xtype).is_ok() => {
                o.ds.def_enum_var(g, name, xtype, dims)
            }
            Err(_) if o.ds.vlen_base(xtype).is_ok() => o.ds.def_vlen_var(g, name, xtype, dims),
            Err(_) if xtype >= crate::model::FIRST_USER_TYPE => {
                o.ds.def_record_var(g, name, xtype, dims)
            }
            Err(e) => Err(e),
        })?;
        put(varidp, v as c_int);
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn inq_varid(ncid: c_int, name: *const c_char, varidp: *mut c_int) -> c_int {
    guard(|| {
        let name = cmem::name(name)?;
        let v = with(ncid, |o, g| {
            o.ds.tree
                .group(g)
                .var_index(name)
                .ok_or_else(|| Error::NotVar(name.to_string()))
        })?;
        put(varidp, v as c_int);
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn rename_var(ncid: c_int, varid: c_int, name: *const c_char) -> c_int {
    guard(|| {
        let name = cmem::name(name)?;
        with(ncid, |o, g| {
            let v = o.ds.var_index(g, varid)?;
            o.ds.rename_var(g, v, name)
        })?;
        Ok(NC_NOERR)
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) extern "C" fn inq_var_all(
    ncid: c_int,
    varid: c_int,
    name: *mut c_char,
    xtypep: *mut c_int,
    ndimsp: *mut c_int,
    dimidsp: *mut c_int,
    nattsp: *mut c_int,
    shufflep: *mut c_int,
    deflatep: *mut c_int,
    deflate_levelp: *mut c_int,
    fletcher32p: *mut c_int,
    contiguousp: *mut c_int,
    chunksizesp: *mut usize,
    no_fill: *mut c_int,
    fill_valuep: *mut c_void,
    endiannessp: *mut c_int,
    idp: *mut c_uint,
    nparamsp: *mut usize,
    _params: *mut c_uint,
) -> c_int {
    guard(|| {
        let info = with(ncid, |o, g| {
            let v = o.ds.var_index(g, varid)?;
            Ok(o.ds.var_info(g, v))
        })?;
        cmem::put_name(name, &info.name);
        put(xtypep, info.type_id);
        put(ndimsp, info.dims.len() as c_int);
        if let Some(out) = cmem::slice_mut(dimidsp, info.dims.len()) {
            for (o, d) in out.iter_mut().zip(&info.dims) {
                *o = d.0 as c_int;
            }
        }
        put(nattsp, info.natts as c_int);
        put(shufflep, c_int::from(info.shuffle));
        put(deflatep, c_int::from(info.deflate_level.is_some()));
        put(deflate_levelp, info.deflate_level.unwrap_or(0) as c_int);
        put(fletcher32p, c_int::from(info.fletcher32));
        put(
            contiguousp,
            match info.storage {
                Storage::Chunked => NC_CHUNKED,
                Storage::Contiguous => NC_CONTIGUOUS,
                Storage::Compact => NC_COMPACT,
            },
        );
        if let Some(out) = cmem::slice_mut(chunksizesp, info.chunks.len()) {
            for (o, c) in out.iter_mut().zip(&info.chunks) {
                *o = *c as usize;
            }
        }
        put(no_fill, c_int::from(info.no_fill));
        // As netCDF-4: a variable in NC_NOFILL mode leaves the fill value's buffer alone.
        if !fill_valuep.is_null() && !info.no_fill {
            if let Some(base) = info.vlen_base {
                let fill = std::slice::from_ref(&info.fill);
                cmem::put_vlens(fill_valuep, fill, base.size(), std::iter::once(0))?;
            } else if info.ty == NcType::String {
                let p = cmem::malloc_string(&info.fill)?;
                put(fill_valuep.cast::<*mut c_char>(), p);
            } else {
                let mut f = info.fill.clone();
                f.resize(info.value_size, 0);
                cmem::bytes_mut(fill_valuep, f.len())?.copy_from_slice(&f);
            }
        }
        put(
            endiannessp,
            match info.endian {
                Some(Endian::Big) => NC_ENDIAN_BIG,
                Some(Endian::Little) => NC_ENDIAN_LITTLE,
                None => NC_ENDIAN_NATIVE,
            },
        );
        put(idp, 0);
        put(nparamsp, 0);
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn var_par_access(ncid: c_int, varid: c_int, _par: c_int) -> c_int {
    guard(|| with(ncid, |o, g| o.ds.var_index(g, varid).map(|_| NC_NOERR)))
}

pub(crate) extern "C" fn def_var_fill(
    ncid: c_int,
    varid: c_int,
    no_fill: c_int,
    fill: *const c_void,
) -> c_int {
    guard(|| {
        with(ncid, |o, g| {
            let v = o.ds.var_index(g, varid)?;
            if let Some(size) = o.ds.record_value_size(g, v) {
                let value = if fill.is_null() {
                    None
                } else {
                    Some(cmem::bytes(fill, size)?)
                };
                return o.ds.def_record_fill(g, v, no_fill != 0, value);
            }
            let ty = o.ds.tree.group(g).vars[v].ty;
            let vlen_base = o.ds.var_vlen_type(g, v).map(|id| o.ds.vlen_base(id));
            let value = if fill.is_null() {
                None
            } else if let Some(base) = vlen_base {
                // Not followed with NC_NOFILL, which ignores it.
                let base = base?;
                (no_fill == 0)
                    .then(|| cmem::get_vlens(fill, 1, base.size(), 0..1))
                    .transpose()?
                    .map(|items| Values::Vlens { base, items })
            } else if ty == NcType::String {
                Some(Values::Strings(cmem::get_strings(fill, 1, 0..1)?))
            } else {
                Some(Values::fixed(ty, cmem::bytes(fill, ty.size())?.to_vec()))
            };
            o.ds.def_var_fill(g, v, no_fill != 0, value)
        })?;
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn def_var_deflate(
    ncid: c_int,
    varid: c_int,
    shuffle: c_int,
    deflate: c_int,
    level: c_int,
) -> c_int {
    guard(|| {
        with(ncid, |o, g| {
            let v = o.ds.var_index(g, varid)?;
            o.ds.def_var_deflate(g, v, shuffle != 0, deflate != 0, level)
        })?;
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn def_var_fletcher32(ncid: c_int, varid: c_int, on: c_int) -> c_int {
    guard(|| {
        with(ncid, |o, g| {
            let v = o.ds.var_index(g, varid)?;
            o.ds.def_var_fletcher32(g, v, on != 0)
        })?;
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn def_var_chunking(
    ncid: c_int,
    varid: c_int,
    storage: c_int,
    sizes: *const usize,
) -> c_int {
    guard(|| {
        let st = match storage {
            NC_CHUNKED => Storage::Chunked,
            NC_CONTIGUOUS => Storage::Contiguous,
            NC_COMPACT => Storage::Compact,
            other => return Err(Error::Invalid(format!("storage {other}"))),
        };
        with(ncid, |o, g| {
            let v = o.ds.var_index(g, varid)?;
            let n = o.ds.tree.group(g).vars[v].dims.len();
            let sizes: Option<Vec<u64>> =
                cmem::slice(sizes, n).map(|s| s.iter().map(|x| *x as u64).collect());
            o.ds.def_var_chunking(g, v, st, sizes.as_deref())
        })?;
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn def_var_endian(ncid: c_int, varid: c_int, endian: c_int) -> c_int {
    guard(|| {
        let e = match endian {
            NC_ENDIAN_LITTLE => Some(Endian::Little),
            NC_ENDIAN_BIG => Some(Endian::Big),
            NC_ENDIAN_NATIVE => None,
            other => return Err(Error::Invalid(format!("endianness {other}"))),
        };
        with(ncid, |o, g| {
            let v = o.ds.var_index(g, varid)?;
            o.ds.def_var_endian(g, v, e)
        })?;
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn def_var_filter(
    ncid: c_int,
    varid: c_int,
    id: c_uint,
    n: usize,
    params: *const c_uint,
) -> c_int {
    guard(|| {
        let params = if n == 0 {
            &[][..]
        } else {
            cmem::slice(params, n).ok_or_else(|| Error::Invalid("NULL filter parameters".into()))?
        };
        with(ncid, |o, g| {
            let v = o.ds.var_index(g, varid)?;
            o.ds.def_var_filter(g, v, id, params)
        })?;
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn set_var_chunk_cache(
    ncid: c_int,
    varid: c_int,
    size: usize,
    nelems: usize,
    preemption: f32,
) -> c_int {
    guard(|| {
        with(ncid, |o, g| {
            let v = o.ds.var_index(g, varid)?;
            o.ds.set_var_chunk_cache(g, v, size, nelems, preemption)
        })?;
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn get_var_chunk_cache(
    ncid: c_int,
    varid: c_int,
    sizep: *mut usize,
    nelemsp: *mut usize,
    preemptionp: *mut f32,
) -> c_int {
    guard(|| {
        let c = with(ncid, |o, g| {
            let v = o.ds.var_index(g, varid)?;
            Ok(o.ds.tree.group(g).vars[v].cache)
        })?;
        put(sizep, c.size);
        put(nelemsp, c.nelems);
        put(preemptionp, c.preemption);
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn inq_var_filter_ids(
    ncid: c_int,
    varid: c_int,
    nfiltersp: *mut usize,
    ids: *mut c_uint,
) -> c_int {
    guard(|| {
        let list = with(ncid, |o, g| {
            let v = o.ds.var_index(g, varid)?;
            Ok(o.ds.filter_ids(g, v))
        })?;
        put(nfiltersp, list.len());
        if let Some(out) = cmem::slice_mut(ids, list.len()) {
            out.copy_from_slice(&list);
        }
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn inq_var_filter_info(
    ncid: c_int,
    varid: c_int,
    id: c_uint,
    nparamsp: *mut usize,
    params: *mut c_uint,
) -> c_int {
    guard(|| {
        let p = with(ncid, |o, g| {
            let v = o.ds.var_index(g, varid)?;
            o.ds.filter_info(g, v, id)
        })?;
        put(nparamsp, p.len());
        if let Some(out) = cmem::slice_mut(params, p.len()) {
            out.copy_from_slice(&p);
        }
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn def_var_quantize(
    ncid: c_int,
    varid: c_int,
    mode: c_int,
    nsd: c_int,
) -> c_int {
    guard(|| {
        with(ncid, |o, g| {
            let v = o.ds.var_index(g, varid)?;
            o.ds.def_var_quantize(g, v, mode, nsd)
        })?;
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn inq_var_quantize(
    ncid: c_int,
    varid: c_int,
    modep: *mut c_int,
    nsdp: *mut c_int,
) -> c_int {
    guard(|| {
        let q = with(ncid, |o, g| {
            let v = o.ds.var_index(g, varid)?;
            Ok(o.ds.tree.group(g).vars[v].quantize)
        })?;
        put(modep, q.0);
        put(nsdp, q.1);
        Ok(NC_NOERR)
    })
}

pub(crate) extern "C" fn inq_filter_avail(ncid: c_int, id: c_uint) -> c_int {
    guard(|| {
        with(ncid, |_, _| Ok(()))?;
        crate::api::filters::filter_avail(id)?;
        Ok(NC_NOERR)
    })
}
