//! Variable-length types through the netCDF API: their definition (`nc_def_vlen`; `nc_inq_vlen`
//! is libnetcdf's, over `nc_inq_user_type`) and variables of them, stored as numpy object
//! arrays (`|O`) whose first codec is numcodecs' `vlen-array` of the base's dtype, as
//! zarr-python 2 writes ragged arrays. A sequence's values move as their bytes: the chunk
//! engine holds each one in a slot as it holds a string stored as an object, widening the
//! slots when a longer one comes. The rules a definition keeps are the model's
//! ([`crate::model::UserTypes::define_vlen`]); this adds netCDF's: names, define mode, the
//! classic model, and that values of a variable-length type move in that type only.

use super::dataset::Dataset;
use crate::error::{Error, Result};
use crate::model::{Filter, GroupId, NcType, StringStorage, TypeRef, VarVlen};

/// Bytes a new variable's slots hold for one sequence before they widen.
const FIRST_SLOT_ROOM: usize = 32;

impl Dataset {
    /// `nc_def_vlen`: a variable-length type of values of numeric type `base` in group `g`;
    /// returns its id. Zarr v3 has no codec for them.
    pub fn def_vlen(&mut self, g: GroupId, name: &str, base: i32) -> Result<i32> {
        // A classic-model dataset refuses every user-defined type with NC_ESTRICTNC3, which
        // check_new_type answers; Zarr v3's own refusal comes first only outside that model.
        if self.layout.zarr_v3 && !self.tree.classic_model {
            return Err(Error::Unsupported {
                var: name.to_string(),
                why: "variable-length types are stored in Zarr v2 datasets only".into(),
            });
        }
        self.check_new_type(g, name, "variable-length types")?;
        let base = NcType::from_id(base)?;
        self.tree.types.define_vlen(g, name, base)
    }

    /// The base of variable-length type `id` (another type's id is `NC_EBADTYPE`).
    pub fn vlen_base(&self, id: i32) -> Result<NcType> {
        self.tree
            .types
            .get(id)
            .and_then(|t| t.vlen_base())
            .ok_or(Error::BadType(id))
    }

    /// `nc_def_var` of variable-length type `id`.
    pub fn def_vlen_var(&mut self, g: GroupId, name: &str, id: i32, dims: &[i32]) -> Result<usize> {
        let base = self.vlen_base(id)?;
        if self.layout.zarr_v3 {
            // A type a Zarr v3 dataset's metadata declares has no codec there either.
            return Err(Error::Unsupported {
                var: name.to_string(),
                why: "variable-length types are stored in Zarr v2 datasets only".into(),
            });
        }
        let v = self.define_var(g, name, NcType::String, dims, None)?;
        let var = self.tree.var_mut(g, v);
        var.strings = StringStorage::Objects;
        var.maxstrlen = FIRST_SLOT_ROOM.next_multiple_of(base.size());
        let codec = [
            ("id".to_string(), crate::codec::VLEN_ARRAY.into()),
            ("dtype".to_string(), little_endian_dtype(base).into()),
        ];
        var.filters = vec![Filter {
            id: 0,
            params: Vec::new(),
            codec: codec.into_iter().collect(),
        }];
        var.vlen = Some(VarVlen {
            base,
            type_ref: Some(TypeRef::Listed(id)),
        });
        Ok(v)
    }

    /// `nc_put_att` of values of variable-length type `id` (`items`: each sequence's values'
    /// bytes); a variable's `_FillValue` is one value of its own type.
    pub fn put_vlen_att(
        &mut self,
        owner: super::attribute::Owner,
        name: &str,
        id: i32,
        items: Vec<Vec<u8>>,
    ) -> Result<()> {
        let base = self.vlen_base(id)?;
        let values = crate::model::Values::Vlens { base, items };
        self.put_att_of(owner, name, base, values, Some(id))?;
        // Kept as a defined type (one of a variable read from pure Zarr, named after it, would
        // otherwise not be declared: its attribute would come back of a type of its own).
        self.tree.types.close(id);
        Ok(())
    }

    /// The user-defined type of the values of variable `v` of group `g` (compound or opaque:
    /// its records'; enum; variable-length), when they are of one.
    pub fn var_user_type(&self, g: GroupId, v: usize) -> Option<i32> {
        self.record_type(g, v)
            .or_else(|| self.var_enum_type(g, v))
            .or_else(|| self.var_vlen_type(g, v))
    }

    /// The variable-length type of variable `v` of group `g`, when its values are of one.
    pub fn var_vlen_type(&self, g: GroupId, v: usize) -> Option<i32> {
        self.tree.group(g).vars[v]
            .vlen
            .as_ref()?
            .type_ref
            .as_ref()?
            .id()
    }
}

/// numpy's little-endian dtype of `base` (`|i1`, `<i4`, `<f8`; text as `|S1`).
fn little_endian_dtype(base: NcType) -> String {
    crate::format::dtype::format(base, crate::model::Endian::Little, 1, false)
}
