//! Entry points for variable data: vara, vars and varm, get and put.

use super::cmem;
use super::codes::*;
use super::registry::{guard, with};
use crate::api::Slab;
use crate::error::{Error, Result};
use crate::model::NcType;
use std::os::raw::{c_int, c_void};

/// Caller memory of one call.
enum Buf {
    Get(*mut c_void),
    Put(*const c_void),
}

/// Element offsets of a C-ordered walk over `count` with element `strides`.
fn strided_offsets(count: &[u64], strides: &[i64]) -> Vec<usize> {
    let n: u64 = count.iter().product();
    let mut out = Vec::with_capacity(n as usize);
    let mut idx = vec![0u64; count.len()];
    for _ in 0..n {
        let off: i64 = idx.iter().zip(strides).map(|(i, s)| *i as i64 * s).sum();
        out.push(off.max(0) as usize);
        for d in (0..idx.len()).rev() {
            idx[d] += 1;
            if idx[d] < count[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    out
}

/// Bytes of the largest value an atomic or variable-length type moves in (`nc_vlen_t`).
const LARGEST_VALUE_BYTES: usize = 16;

/// Number of elements of caller memory a request spans.
fn span(count: &[u64], strides: Option<&[i64]>) -> Result<usize> {
    if count.contains(&0) {
        return Ok(0);
    }
    match strides {
        None => count
            .iter()
            .try_fold(1usize, |n, c| n.checked_mul(*c as usize))
            .ok_or(Error::NoMem),
        Some(s) => {
            let mut last: i64 = 0;
            for (c, st) in count.iter().zip(s) {
                if *st < 0 {
                    return Err(Error::Invalid("negative imap".into()));
                }
                last = last
                    .checked_add((*c as i64 - 1).checked_mul(*st).ok_or(Error::NoMem)?)
                    .ok_or(Error::NoMem)?;
            }
            Ok(last as usize + 1)
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn call(
    ncid: c_int,
    varid: c_int,
    start: *const usize,
    count: *const usize,
    stride: *const isize,
    imap: *const isize,
    buf: Buf,
    memtype: c_int,
) -> Result<c_int> {
    with(ncid, |o, g| {
        let v = o.ds.var_index(g, varid)?;
        let var = &o.ds.tree.group(g).vars[v];
        let shape = o.ds.tree.var_shape(var);
        let rank = shape.len();
        let mut slab = Slab {
            start: vec![0; rank],
            count: shape.clone(),
            stride: vec![1; rank],
        };
        if let Some(s) = cmem::slice(start, rank) {
            slab.start = s.iter().map(|x| *x as u64).collect();
        }
        if let Some(c) = cmem::slice(count, rank) {
            slab.count = c.iter().map(|x| *x as u64).collect();
        } else {
            slab.count = shape
                .iter()
                .zip(&slab.start)
                .map(|(s, st)| s.saturating_sub(*st))
                .collect();
        }
        if let Some(s) = cmem::slice(stride, rank) {
            for x in s {
                if *x <= 0 {
                    return Err(Error::Stride(*x as i64));
                }
            }
            slab.stride = s.iter().map(|x| *x as u64).collect();
        }
        let imap: Option<Vec<i64>> =
            cmem::slice(imap, rank).map(|m| m.iter().map(|x| *x as i64).collect());
        if rank == 0 {
            slab = Slab {
                start: vec![0],
                count: vec![1],
                stride: vec![1],
            };
        }
        let imap = if rank == 0 { None } else { imap };
        if imap.is_some() && o.ds.var_user_type(g, v).is_some() {
            // As libnetcdf's mapped access: for atomic types only.
            return Err(Error::MapType);
        }
        // A count past the end is NC_EEDGE, however large: not the memory it would take (the
        // request is checked here when its size would overflow; otherwise later, after the
        // checks of mode and permission netCDF makes first).
        let sized = span(&slab.count, imap.as_deref())
            .ok()
            .filter(|n| n.checked_mul(LARGEST_VALUE_BYTES).is_some());
        let elems = match sized {
            Some(elems) => elems,
            None => {
                o.ds.check_slab(g, v, &slab, matches!(buf, Buf::Put(_)))?;
                span(&slab.count, imap.as_deref())?
            }
        };
        let offsets = || match &imap {
            Some(m) => strided_offsets(&slab.count, m),
            None => (0..elems).collect(),
        };
        if let Some(id) = o.ds.var_vlen_type(g, v) {
            // Sequences move as `nc_vlen_t`s, in the variable's own type only.
            o.ds.check_records_memory_type(g, v, memtype)?;
            let base_size = o.ds.vlen_base(id)?.size();
            return match buf {
                // Mapped access is refused above: the values lie one after another.
                Buf::Get(p) => {
                    super::reclaim::refuse_user_values_unless_interposed(&var.name)?;
                    let items = o.ds.get_vlens(g, v, &slab)?;
                    cmem::put_vlens(p, &items, base_size, 0..elems)?;
                    Ok(NC_NOERR)
                }
                Buf::Put(p) => {
                    let items = cmem::get_vlens(p, elems, base_size, 0..elems)?;
                    o.ds.put_vlens(g, v, &slab, &items)?;
                    Ok(NC_NOERR)
                }
            };
        }
        if o.ds.record_type(g, v).is_some() {
            // Compound and opaque values move as they are, in the variable's own type only.
            o.ds.check_records_memory_type(g, v, memtype)?;
            let size = var.decoded_esize();
            let bytes = elems.checked_mul(size).ok_or(Error::NoMem)?;
            return match buf {
                Buf::Get(p) => {
                    super::reclaim::refuse_user_values_unless_interposed(&var.name)?;
                    let out = cmem::output_bytes(p, bytes)?;
                    o.ds.get_records(g, v, &slab, imap.as_deref(), out)?;
                    Ok(NC_NOERR)
                }
                Buf::Put(p) => {
                    let data = cmem::bytes(p, bytes)?;
                    let range = o.ds.put_records(g, v, &slab, imap.as_deref(), data)?;
                    Ok(if range { NC_ERANGE } else { NC_NOERR })
                }
            };
        }
        let mt = o.ds.memory_type(g, v, memtype)?;
        if let (Buf::Get(_), Some(_)) = (&buf, o.ds.var_enum_type(g, v)) {
            super::reclaim::refuse_user_values_unless_interposed(&var.name)?;
        }
        match buf {
            Buf::Get(p) if mt == NcType::String => {
                let strings = o.ds.get_strings(g, v, &slab)?;
                cmem::put_strings(p, &strings, offsets().into_iter())?;
                Ok(NC_NOERR)
            }
            Buf::Get(p) => {
                let bytes = elems.checked_mul(mt.size()).ok_or(Error::NoMem)?;
                let out = cmem::output_bytes(p, bytes)?;
                let range = o.ds.get_fixed(g, v, &slab, imap.as_deref(), mt, out)?;
                Ok(if range { NC_ERANGE } else { NC_NOERR })
            }
            Buf::Put(p) if mt == NcType::String => {
                let n: u64 = slab.count.iter().product();
                let strings = cmem::get_strings(p, n as usize, offsets().into_iter())?;
                o.ds.put_strings(g, v, &slab, &strings)?;
                Ok(NC_NOERR)
            }
            Buf::Put(p) => {
                let bytes = elems.checked_mul(mt.size()).ok_or(Error::NoMem)?;
                let data = cmem::bytes(p, bytes)?;
                let range = o.ds.put_fixed(g, v, &slab, imap.as_deref(), mt, data)?;
                Ok(if range { NC_ERANGE } else { NC_NOERR })
            }
        }
    })
}

pub(crate) extern "C" fn get_vara(
    ncid: c_int,
    varid: c_int,
    start: *const usize,
    count: *const usize,
    value: *mut c_void,
    memtype: c_int,
) -> c_int {
    guard(|| {
        call(
            ncid,
            varid,
            start,
            count,
            std::ptr::null(),
            std::ptr::null(),
            Buf::Get(value),
            memtype,
        )
    })
}

pub(crate) extern "C" fn put_vara(
    ncid: c_int,
    varid: c_int,
    start: *const usize,
    count: *const usize,
    value: *const c_void,
    memtype: c_int,
) -> c_int {
    guard(|| {
        call(
            ncid,
            varid,
            start,
            count,
            std::ptr::null(),
            std::ptr::null(),
            Buf::Put(value),
            memtype,
        )
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) extern "C" fn get_vars(
    ncid: c_int,
    varid: c_int,
    start: *const usize,
    count: *const usize,
    stride: *const isize,
    value: *mut c_void,
    memtype: c_int,
) -> c_int {
    guard(|| {
        call(
            ncid,
            varid,
            start,
            count,
            stride,
            std::ptr::null(),
            Buf::Get(value),
            memtype,
        )
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) extern "C" fn put_vars(
    ncid: c_int,
    varid: c_int,
    start: *const usize,
    count: *const usize,
    stride: *const isize,
    value: *const c_void,
    memtype: c_int,
) -> c_int {
    guard(|| {
        call(
            ncid,
            varid,
            start,
            count,
            stride,
            std::ptr::null(),
            Buf::Put(value),
            memtype,
        )
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) extern "C" fn get_varm(
    ncid: c_int,
    varid: c_int,
    start: *const usize,
    count: *const usize,
    stride: *const isize,
    imap: *const isize,
    value: *mut c_void,
    memtype: c_int,
) -> c_int {
    guard(|| {
        call(
            ncid,
            varid,
            start,
            count,
            stride,
            imap,
            Buf::Get(value),
            memtype,
        )
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) extern "C" fn put_varm(
    ncid: c_int,
    varid: c_int,
    start: *const usize,
    count: *const usize,
    stride: *const isize,
    imap: *const isize,
    value: *const c_void,
    memtype: c_int,
) -> c_int {
    guard(|| {
        call(
            ncid,
            varid,
            start,
            count,
            stride,
            imap,
            Buf::Put(value),
            memtype,
        )
    })
}
