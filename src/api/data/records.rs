//! Reading and writing the values of a variable holding records (numpy structured dtypes),
//! as values of its compound type: bytes moved as they are, no conversion to another type
//! (netCDF has none between compound and atomic types). What turns stored records into
//! compound values is the first codec of the variable's chain (see `codec_chain`).

use super::{Dataset, Slab, gather, product, scalar_slab};
use crate::chunk::copy::c_order_strides;
use crate::error::{Error, Result};
use crate::model::GroupId;

impl Dataset {
    /// The compound type id of variable `v` of group `g`, when it holds records.
    pub fn record_type(&self, g: GroupId, v: usize) -> Option<i32> {
        self.tree.group(g).vars[v]
            .record
            .as_ref()
            .map(|r| r.type_id)
    }

    /// Checks that the values of variable `v` of group `g`, holding records or sequences of a
    /// variable-length type, may move in the
    /// caller's type id `memtype` (`NC_NAT`, 0: the variable's): in the variable's own type
    /// only (text: `NC_ECHAR`, another type: `NC_EBADTYPE`, as netCDF-4 answers).
    pub fn check_records_memory_type(&self, g: GroupId, v: usize, memtype: i32) -> Result<()> {
        match self.record_type(g, v).or_else(|| self.var_vlen_type(g, v)) {
            Some(id) if memtype == 0 || memtype == id => Ok(()),
            Some(_) if memtype == crate::model::NcType::Char.id() => Err(Error::Char),
            _ => Err(Error::BadType(memtype)),
        }
    }

    /// Reads a hyperslab of a variable holding records into `out` as compound values, laid
    /// out with element strides `mem_strides` (C order over `count` when `None`).
    pub fn get_records(
        &mut self,
        g: GroupId,
        v: usize,
        slab: &Slab,
        mem_strides: Option<&[i64]>,
        out: &mut [u8],
    ) -> Result<()> {
        self.ensure_data_mode()?;
        self.check_slab(g, v, slab, false)?;
        if self.record_type(g, v).is_none() {
            return Err(Error::BadType(0));
        }
        let geo = self.geometry(g, v)?;
        let slab = scalar_slab(geo.scalar, slab);
        if product(&slab.count)? == 0 {
            return Ok(());
        }
        let strides = match mem_strides {
            Some(s) => s.to_vec(),
            None => c_order_strides(&slab.count)?,
        };
        self.read_into(g, v, &geo, &slab, out, &strides)
    }

    /// Writes a hyperslab of a variable holding records from `data`, compound values laid out
    /// with element strides `mem_strides` (C order over `count` when `None`). Returns true
    /// when a 16-bit float field was given a value past its range (stored as an infinity).
    pub fn put_records(
        &mut self,
        g: GroupId,
        v: usize,
        slab: &Slab,
        mem_strides: Option<&[i64]>,
        data: &[u8],
    ) -> Result<bool> {
        self.check_writable()?;
        if self.record_type(g, v).is_none() {
            return Err(Error::BadType(0));
        }
        self.ensure_data_mode()?;
        self.check_slab(g, v, slab, true)?;
        let geo = self.geometry(g, v)?;
        let slab = scalar_slab(geo.scalar, slab);
        let n = product(&slab.count)?;
        if n == 0 {
            return Ok(false);
        }
        let bytes = n
            .checked_mul(geo.esize)
            .ok_or_else(|| Error::TooLarge(format!("{n} compound values")))?;
        let gathered;
        let values: &[u8] = match mem_strides {
            Some(strides) => {
                let mut tmp = vec![0u8; bytes];
                gather(data, strides, &slab.count, &mut tmp, geo.esize)?;
                gathered = tmp;
                &gathered
            }
            None => data
                .get(..bytes)
                .ok_or_else(|| Error::Invalid("input buffer too small".into()))?,
        };
        // Text the records cannot hold is refused now, before anything is stored (chunks
        // written in part are encoded only when they leave the cache).
        let plan = match &self.tree.group(g).vars[v].record {
            Some(r) => r.plan.clone(),
            None => return Err(Error::BadType(0)),
        };
        check_storable(&plan, values)?;
        let range = plan.past_half_range(values);
        let c_strides = c_order_strides(&slab.count)?;
        self.grow_unlimited(g, v, &slab);
        self.write_from(g, v, geo, &slab, values, &c_strides)?;
        Ok(range)
    }
}

/// Refuses compound values whose text their records cannot hold (`NC_EINVAL`), before
/// anything is stored.
pub(in crate::api) fn check_storable(plan: &crate::codec::RecordPlan, values: &[u8]) -> Result<()> {
    plan.check_text(values).map_err(|e| match e {
        Error::Filter { why, .. } => Error::Invalid(why),
        other => other,
    })
}
