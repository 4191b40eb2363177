//! Enum types through the netCDF API: their definition (`nc_def_enum`, `nc_insert_enum`),
//! their members (`nc_inq_enum_member`, `nc_inq_enum_ident`), variables of them (stored as
//! their base type) and attributes of them. The rules members keep are the model's
//! ([`crate::model::Enumeration`]); this adds netCDF's: names, define mode, the classic
//! model, and that values of an enum type move in that type only.

use super::attribute::Owner;
use super::dataset::Dataset;
use super::names;
use crate::error::{Error, Result};
use crate::model::enums::{bytes_of, value_of};
use crate::model::{GroupId, NcType, TypeRef, Values};

impl Dataset {
    /// `nc_def_enum`: an enum type of integer type `base` in group `g`, its members inserted
    /// next; returns its id.
    pub fn def_enum(&mut self, g: GroupId, base: i32, name: &str) -> Result<i32> {
        if self.tree.classic_model {
            return Err(Error::StrictNc3("enum types".into()));
        }
        self.ensure_define_mode()?;
        names::check(name)?;
        let base = NcType::from_id(base)?;
        self.check_type_name_free(g, name)?;
        self.tree.types.define_enum(g, name, base)
    }

    /// `nc_insert_enum`: member `name` of enum type `id`, its value one of the base type
    /// (`value`: its bytes in this machine's order).
    pub fn insert_enum(&mut self, id: i32, name: &str, value: &[u8]) -> Result<()> {
        self.check_writable()?;
        names::check(name)?;
        let value = match self.tree.types.enumeration(id) {
            Ok(e) => value_of(e.base, value)?,
            // The type's own error.
            Err(_) => 0,
        };
        self.tree.types.insert_enum(id, name, value)
    }

    /// `nc_inq_enum_member`: the name and value (bytes of the base type) of member `index`.
    pub fn enum_member(&self, id: i32, index: i32) -> Result<(String, Vec<u8>)> {
        let e = self.tree.types.enumeration(id)?;
        let m = usize::try_from(index)
            .ok()
            .and_then(|i| e.members().get(i))
            .ok_or_else(|| Error::Invalid(format!("enum member {index}")))?;
        let bytes = bytes_of(e.base, m.value).ok_or(Error::Invalid("enum value".into()))?;
        Ok((m.name.clone(), bytes))
    }

    /// `nc_inq_enum_ident`: the name of the member of enum type `id` whose value is `value`
    /// (as netCDF compares them: as `long long`, so an `uint64` member past its range is
    /// matched by the negative number of the same bits).
    pub fn enum_ident(&self, id: i32, value: i64) -> Result<String> {
        let e = self.tree.types.enumeration(id)?;
        let wanted = match e.base {
            NcType::UInt64 => i128::from(value as u64),
            _ => i128::from(value),
        };
        e.ident(wanted).map(str::to_string)
    }

    /// `nc_def_var` of enum type `id`: a variable whose values are stored as the type's base.
    pub fn def_enum_var(&mut self, g: GroupId, name: &str, id: i32, dims: &[i32]) -> Result<usize> {
        let base = self.tree.types.enumeration(id)?.base;
        let v = self.define_var(g, name, base, dims, None)?;
        self.tree.var_mut(g, v).enum_type = Some(TypeRef::Listed(id));
        Ok(v)
    }

    /// The enum type of variable `v` of group `g`, when its values are of one.
    pub fn var_enum_type(&self, g: GroupId, v: usize) -> Option<i32> {
        self.tree.group(g).vars[v].enum_type.as_ref()?.id()
    }

    /// The type values of variable `v` move in for the caller's type id `memtype` (`NC_NAT`,
    /// 0: the variable's): an enum variable's values move as its base type's, in the enum type
    /// only (text: `NC_ECHAR`, another type: `NC_EBADTYPE`, as netCDF-4 answers).
    pub fn memory_type(&self, g: GroupId, v: usize, memtype: i32) -> Result<NcType> {
        let ty = self.tree.group(g).vars[v].ty;
        match self.var_enum_type(g, v) {
            Some(id) if memtype == 0 || memtype == id => Ok(ty),
            Some(_) if memtype == NcType::Char.id() => Err(Error::Char),
            Some(_) => Err(Error::BadType(memtype)),
            None if memtype == 0 => Ok(ty),
            None => NcType::from_id(memtype),
        }
    }

    /// `nc_put_att` of `count` values of enum type `id` (`bytes`: values of its base type);
    /// a variable's `_FillValue` must be of the variable's own type.
    pub fn put_enum_att(
        &mut self,
        owner: Owner,
        name: &str,
        id: i32,
        count: usize,
        bytes: &[u8],
    ) -> Result<()> {
        let base = self.tree.types.enumeration(id)?.base;
        let bytes = Self::counted_values(bytes, count, base.size(), "enum")?;
        self.put_att_of(
            owner,
            name,
            base,
            Values::fixed(base, bytes.to_vec()),
            Some(id),
        )?;
        Ok(())
    }
}
