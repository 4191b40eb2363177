//! Opaque types through the netCDF API: their definition (`nc_def_opaque`; `nc_inq_opaque` is
//! libnetcdf's, over `nc_inq_user_type`), variables of them (stored as numpy void arrays,
//! `|V<n>`: records without fields, see [`Dataset::def_record_var`]) and attributes of them
//! (stored as their bytes). The rules a definition keeps are the model's
//! ([`crate::model::UserTypes::define_opaque`]); this adds netCDF's: names, define mode, the
//! classic model.

use super::attribute::Owner;
use super::dataset::Dataset;
use crate::error::{Error, Result};
use crate::model::{GroupId, NcType, Values};

impl Dataset {
    /// `nc_def_opaque`: an opaque type of values of `size` bytes in group `g`; returns its id.
    pub fn def_opaque(&mut self, g: GroupId, size: usize, name: &str) -> Result<i32> {
        self.check_new_type(g, name, "opaque types")?;
        self.tree.types.define_opaque(g, name, size)
    }

    /// The bytes of one value of opaque type `id` (another type's id is `NC_EBADTYPE`).
    pub fn opaque_size(&self, id: i32) -> Result<usize> {
        match self.tree.types.get(id) {
            Some(t) if t.is_opaque() => Ok(t.size),
            _ => Err(Error::BadType(id)),
        }
    }

    /// `nc_put_att` of `count` values of opaque type `id` (`bytes`: theirs, one after
    /// another), stored as their bytes. A variable's `_FillValue` is one value of its own type:
    /// see [`Dataset::put_compound_att`].
    pub fn put_opaque_att(
        &mut self,
        owner: Owner,
        name: &str,
        id: i32,
        count: usize,
        bytes: &[u8],
    ) -> Result<()> {
        let size = self.opaque_size(id)?;
        let bytes = Self::counted_values(bytes, count, size, "opaque")?;
        let values = Values::fixed(NcType::UByte, bytes.to_vec());
        self.put_att_of(owner, name, NcType::UByte, values, Some(id))?;
        // Kept as a defined type (one of a variable's raw bytes, named after it, would
        // otherwise not be declared: its attribute would come back as bytes).
        self.tree.types.close(id);
        Ok(())
    }
}
