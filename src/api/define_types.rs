//! Definitions of compound types (`nc_def_compound`, `nc_insert_compound`,
//! `nc_insert_array_compound`) and of variables holding their values, with their fill (given
//! by `nc_def_var_fill` or as their `_FillValue` attribute of their own type). The rules a
//! definition keeps are the model's ([`crate::model::UserTypes`]); this adds netCDF's: names,
//! define mode, the classic model, and the layouts that can store records (Zarr v2's).

use super::attribute::Owner;
use super::dataset::Dataset;
use super::names;
use crate::error::{Error, Result};
use crate::model::{Att, GroupId, NcType, TypeField, VarRecord};

/// The attribute that holds a compound variable's fill.
const FILL: &str = "_FillValue";

impl Dataset {
    /// Refuses compound types where they cannot be kept: the classic model has none, and
    /// Zarr v3 has no data type for records that other readers share.
    fn check_compound_allowed(&self, name: &str) -> Result<()> {
        if self.tree.classic_model {
            return Err(Error::StrictNc3("compound types".into()));
        }
        if self.layout.zarr_v3 {
            return Err(Error::Unsupported {
                var: name.to_string(),
                why: "compound types are stored in Zarr v2 datasets only".into(),
            });
        }
        Ok(())
    }

    /// `nc_def_compound`: a compound type of `size` bytes in group `g`, its fields inserted
    /// next; returns its id.
    pub fn def_compound(&mut self, g: GroupId, size: usize, name: &str) -> Result<i32> {
        self.check_compound_allowed(name)?;
        self.ensure_define_mode()?;
        names::check(name)?;
        if size == 0 {
            return Err(Error::Invalid("a compound type of no bytes".into()));
        }
        self.check_type_name_free(g, name)?;
        self.tree.types.define(g, name, size)
    }

    /// Checks that a type of class `what` named `name` may be defined in group `g` now: not
    /// in the classic model, in define mode, a netCDF name that no variable or group of `g`
    /// has.
    pub(super) fn check_new_type(&mut self, g: GroupId, name: &str, what: &str) -> Result<()> {
        if self.tree.classic_model {
            return Err(Error::StrictNc3(what.into()));
        }
        self.ensure_define_mode()?;
        names::check(name)?;
        self.check_type_name_free(g, name)
    }

    /// Refuses to name a type in group `g` after a variable or a group of it (types are named
    /// apart from each other by the type table).
    pub(super) fn check_type_name_free(&self, g: GroupId, name: &str) -> Result<()> {
        let grp = self.tree.group(g);
        if grp.var_index(name).is_some()
            || grp
                .children
                .iter()
                .any(|c| self.tree.group(*c).name == name)
        {
            return Err(Error::NameInUse(name.to_string()));
        }
        Ok(())
    }

    /// `nc_insert_compound` (no `dims`) and `nc_insert_array_compound`: a field of type
    /// `field_type` at `offset` in the values of compound type `id`.
    pub fn insert_compound(
        &mut self,
        id: i32,
        name: &str,
        offset: usize,
        field_type: i32,
        dims: &[usize],
    ) -> Result<()> {
        self.check_writable()?;
        names::check(name)?;
        self.tree.types.insert(
            id,
            TypeField {
                name: name.to_string(),
                offset,
                type_id: field_type,
                dims: dims.to_vec(),
            },
        )
    }

    /// `nc_def_var` of compound type `id`: a variable whose values are stored as numpy
    /// records, each field where the type's definition places it (the type takes no more
    /// fields); of opaque type `id`: one whose values are stored as numpy void, their bytes
    /// (also in Zarr v3, as zarr-python's `raw_bytes`).
    pub fn def_record_var(
        &mut self,
        g: GroupId,
        name: &str,
        id: i32,
        dims: &[i32],
    ) -> Result<usize> {
        if NcType::from_id(id).is_ok() {
            return Err(Error::BadType(id));
        }
        if self.opaque_size(id).is_err() {
            self.check_compound_allowed(name)?;
        }
        self.ensure_define_mode()?;
        let record = self.tree.types.record_of(id)?;
        if !self.layout.nczarr && !record.has_c_layout()? {
            // Read back, such records are laid out as C lays out their fields.
            return Err(Error::Unsupported {
                var: name.to_string(),
                why: "pure Zarr keeps no compound layout but C's, and this type's fields sit \
                      elsewhere (NCZarr keeps it)"
                    .into(),
            });
        }
        let mut record = VarRecord::new(record)?;
        record.type_id = id;
        let v = self.define_var(g, name, NcType::UByte, dims, Some(record))?;
        self.tree.types.close(id);
        Ok(v)
    }

    /// `nc_def_var_fill` of a variable holding records: its fill, one compound value, or
    /// netCDF's (zeros) when `value` is `None`; as netCDF-4, a value given with `NC_NOFILL`
    /// is not kept, and a value given is listed last as the `_FillValue` attribute.
    pub fn def_record_fill(
        &mut self,
        g: GroupId,
        v: usize,
        no_fill: bool,
        value: Option<&[u8]>,
    ) -> Result<()> {
        self.ensure_define_mode()?;
        self.set_record_fill(g, v, no_fill, value.filter(|_| !no_fill), true)
    }

    /// Keeps `value` as the fill of variable `v` (holding records) and lists it as the
    /// `_FillValue` attribute: last when `relist` (as `nc_def_var_fill` does), else where it
    /// is listed already.
    fn set_record_fill(
        &mut self,
        g: GroupId,
        v: usize,
        no_fill: bool,
        value: Option<&[u8]>,
        relist: bool,
    ) -> Result<()> {
        let var = self.var_mut_for_definition(g, v)?;
        let Some(record) = &var.record else {
            return Err(Error::BadType(0));
        };
        if let Some(bytes) = value {
            if relist {
                var.atts.retain(|a| a.name != FILL);
            }
            let bytes = bytes
                .get(..record.plan.memory_size)
                .ok_or_else(|| Error::Invalid("fill value shorter than its type".into()))?;
            super::data::records::check_storable(&record.plan, bytes)?;
            // As it is stored: the bytes between fields (which a C struct leaves undefined)
            // are zeros.
            let stored = record
                .relaid(bytes, record)
                .ok_or_else(|| Error::Invalid("fill value cannot be stored".into()))?;
            var.stored_fill = Some(stored);
            // netCDF lists a fill given as the `_FillValue` attribute.
            if var.att(FILL).is_none() {
                var.atts.push(Att::compound_fill());
            }
        }
        var.no_fill = no_fill;
        Ok(())
    }

    /// Bytes of one compound value of variable `v` of group `g`, when it holds records.
    pub fn record_value_size(&self, g: GroupId, v: usize) -> Option<usize> {
        let var = &self.tree.group(g).vars[v];
        var.record.as_ref().map(|r| r.plan.memory_size)
    }

    /// Whether attribute `name` of `owner` is the fill of a variable holding records (of a
    /// compound or opaque type), which holds one value of that type, the variable's fill.
    pub fn is_records_fill(&self, owner: Owner, name: &str) -> bool {
        let holds_records = |g: GroupId, v: usize| self.tree.group(g).vars[v].record.is_some();
        matches!(owner, Owner::Var(g, v) if name == FILL && holds_records(g, v))
    }

    /// The `_FillValue` attribute of a variable holding records, when it has one: its
    /// compound type and its value (the variable's fill).
    pub fn compound_att(&self, owner: Owner, name: &str) -> Option<(i32, Vec<u8>)> {
        let Owner::Var(g, v) = owner else {
            return None;
        };
        let var = &self.tree.group(g).vars[v];
        let record = var.record.as_ref()?;
        if name != FILL || var.att(FILL).is_none() {
            return None;
        }
        Some((record.type_id, super::data::fill_element(var)))
    }

    /// The value of attribute `name` of `owner` when it is the fill of a variable holding
    /// records, read in the caller's type id `memtype` (the variable's own only:
    /// [`Dataset::check_records_memory_type`]); `None` for another attribute.
    pub fn records_fill_in(
        &self,
        owner: Owner,
        name: &str,
        memtype: i32,
    ) -> Result<Option<Vec<u8>>> {
        let Some((_, value)) = self.compound_att(owner, name) else {
            return Ok(None);
        };
        if let Owner::Var(g, v) = owner {
            self.check_records_memory_type(g, v, memtype)?;
        }
        Ok(Some(value))
    }

    /// Bytes `nc_put_att` of `count` values of user-defined type `id` reads from the caller:
    /// all of them, but for a variable's fill, one value only (more are refused unread).
    pub fn user_att_bytes(&self, owner: Owner, name: &str, id: i32, count: usize) -> Result<usize> {
        let size = self.type_summary(id)?.size;
        let t = self.tree.types.get(id);
        let one_value = t.is_some_and(|t| t.is_compound())
            || (t.is_some_and(|t| t.is_opaque()) && self.is_records_fill(owner, name));
        match count {
            1 if one_value => Ok(size),
            _ if one_value => Ok(0),
            n => n.checked_mul(size).ok_or(Error::NoMem),
        }
    }

    /// The first `count` values of `size` bytes of `bytes`, the caller's values of an attribute
    /// (`what` they are, when fewer are there).
    pub(super) fn counted_values<'a>(
        bytes: &'a [u8],
        count: usize,
        size: usize,
        what: &str,
    ) -> Result<&'a [u8]> {
        count
            .checked_mul(size)
            .and_then(|n| bytes.get(..n))
            .ok_or_else(|| Error::Invalid(format!("fewer {what} values than counted")))
    }

    /// `nc_put_att` of `count` values of user-defined type `id` (`bytes`: as
    /// [`Dataset::user_att_bytes`] says), by the type's class: an enum or opaque attribute, or
    /// a variable's fill (compound or opaque).
    pub fn put_user_att(
        &mut self,
        owner: Owner,
        name: &str,
        id: i32,
        count: usize,
        bytes: &[u8],
    ) -> Result<()> {
        if self.tree.types.enumeration(id).is_ok() {
            return self.put_enum_att(owner, name, id, count, bytes);
        }
        if self.opaque_size(id).is_ok() && !self.is_records_fill(owner, name) {
            return self.put_opaque_att(owner, name, id, count, bytes);
        }
        self.put_compound_att(owner, name, id, count, bytes)
    }

    /// `nc_put_att` of `count` compound values: a variable's `_FillValue`, one value of its
    /// own type (as `nc_def_var_fill` gives it); no other attribute holds compound values.
    pub fn put_compound_att(
        &mut self,
        owner: Owner,
        name: &str,
        type_id: i32,
        count: usize,
        value: &[u8],
    ) -> Result<()> {
        self.check_writable()?;
        let Owner::Var(g, v) = owner else {
            return Err(Error::BadType(type_id));
        };
        let var = &self.tree.group(g).vars[v];
        if name != FILL || var.record.is_none() {
            return Err(Error::BadType(type_id));
        }
        // netCDF's order: the count, a fill too late, the type.
        if count != 1 {
            return Err(Error::Invalid(
                "_FillValue must have exactly one value".into(),
            ));
        }
        if var.is_stored() {
            return Err(Error::LateFill(var.name.clone()));
        }
        if self.record_type(g, v) != Some(type_id) {
            return Err(Error::BadType(type_id));
        }
        self.ensure_define_mode()?;
        let no_fill = self.tree.group(g).vars[v].no_fill;
        self.set_record_fill(g, v, no_fill, Some(value), false)
    }
}
