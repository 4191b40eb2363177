//! The types of a dataset as the netCDF API names them: atomic types by id and CDL name, and
//! the compound types of variables holding records (`nc_inq_typeids`, `nc_inq_user_type`,
//! `nc_inq_compound_field`, `nc_inq_typeid`, `nc_inq_type_equal`). Knows nothing of how
//! records are stored.

use super::dataset::Dataset;
use crate::error::{Error, Result};
use crate::model::{GroupId, NcType, TypeField, UserType};

/// What `nc_inq_type` reports of a type: its name and the bytes of one value in memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeSummary {
    pub name: String,
    pub size: usize,
}

impl Dataset {
    /// The compound type with this id.
    pub fn user_type(&self, id: i32) -> Result<&UserType> {
        self.tree.types.get(id).ok_or(Error::BadType(id))
    }

    /// `nc_inq_type`: an atomic type's name and size, or a compound type's.
    pub fn type_summary(&self, id: i32) -> Result<TypeSummary> {
        if let Ok(t) = NcType::from_id(id) {
            return Ok(TypeSummary {
                name: t.name().to_string(),
                size: t.size(),
            });
        }
        let t = self.user_type(id)?;
        Ok(TypeSummary {
            name: t.name.clone(),
            size: t.size,
        })
    }

    /// `nc_inq_typeids`: the ids of the compound types group `g` defines.
    pub fn typeids(&self, g: GroupId) -> Vec<i32> {
        self.tree
            .types
            .types
            .iter()
            .zip(crate::model::FIRST_USER_TYPE..)
            .filter(|(t, _)| t.group == g)
            .map(|(_, id)| id)
            .collect()
    }

    /// `nc_inq_compound_field`: field `index` of compound type `id`.
    pub fn compound_field(&self, id: i32, index: i32) -> Result<&TypeField> {
        let t = self.user_type(id)?;
        usize::try_from(index)
            .ok()
            .and_then(|i| t.fields.get(i))
            .ok_or_else(|| Error::BadField(format!("{index} of type {}", t.name)))
    }

    /// `nc_inq_compound_fieldindex`: the number of the field of compound type `id` named
    /// `name`.
    pub fn compound_field_index(&self, id: i32, name: &str) -> Result<usize> {
        let t = self.user_type(id)?;
        t.fields
            .iter()
            .position(|f| f.name == name)
            .ok_or_else(|| Error::BadField(format!("{name:?} of type {}", t.name)))
    }

    /// `nc_inq_typeid`: an atomic type by CDL name, else a compound type by its full name
    /// (`/group/name`), or by name in `g`, the nearest group around it, else the first group
    /// of the dataset (in preorder) that defines one of that name, as netcdf-c looks. A
    /// relative name with a `/` is `NC_EINVAL`.
    pub fn typeid_in(&self, g: GroupId, name: &str) -> Result<i32> {
        if let Some(t) = NcType::ALL.iter().find(|t| t.name() == name) {
            return Ok(t.id());
        }
        let defined_in = |g: GroupId, name: &str| {
            self.typeids(g)
                .into_iter()
                .find(|&id| self.tree.types.get(id).is_some_and(|t| t.name == name))
        };
        if let Some((path, base)) = name.rsplit_once('/')
            && name.starts_with('/')
        {
            let group = self.group_by_path(crate::model::Tree::ROOT, path)?;
            return defined_in(group, base).ok_or(Error::BadType(0));
        }
        if name.contains('/') {
            return Err(Error::Invalid(format!("type name {name:?}")));
        }
        let mut cur = Some(g);
        while let Some(group) = cur {
            if let Some(id) = defined_in(group, name) {
                return Ok(id);
            }
            cur = self.tree.group(group).parent;
        }
        self.tree
            .groups_preorder()
            .into_iter()
            .find_map(|group| defined_in(group, name))
            .ok_or(Error::BadType(0))
    }

    /// A description of type `id` that is equal for two types exactly when netCDF calls them
    /// equal (`nc_inq_type_equal`, which asks HDF5 whether their layouts are): the atomic
    /// type, or a compound type's size and fields (names, offsets, types, dimensions), nested
    /// types described in turn; not the type's name.
    pub fn type_signature(&self, id: i32) -> Result<String> {
        if let Ok(t) = NcType::from_id(id) {
            return Ok(t.name().to_string());
        }
        let t = self.user_type(id)?;
        let mut fields = Vec::with_capacity(t.fields.len());
        for f in &t.fields {
            fields.push(format!(
                "{:?}@{}:{}{:?}",
                f.name,
                f.offset,
                self.type_signature(f.type_id)?,
                f.dims
            ));
        }
        Ok(format!("compound[{}]{{{}}}", t.size, fields.join(",")))
    }
}
