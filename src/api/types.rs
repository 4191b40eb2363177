//! The types of a dataset as the netCDF API names them: atomic types by id and CDL name, and
//! the user-defined types (compound, enum and opaque) (`nc_inq_typeids`, `nc_inq_user_type`,
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

/// What `nc_inq_type_equal` compares of a type: two types are equal when their shapes are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TypeShape {
    Atomic(NcType),
    Enum {
        base: NcType,
        /// Each member's name and value, sorted by name.
        members: Vec<(String, i128)>,
    },
    Compound {
        size: usize,
        fields: Vec<FieldShape>,
    },
    /// Opaque types of the same size are equal, whatever their names (as netCDF-4 files
    /// compare them).
    Opaque {
        size: usize,
    },
    /// Variable-length types of the same base are equal, whatever their names.
    Vlen {
        base: NcType,
    },
}

/// One field of a compound [`TypeShape`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldShape {
    pub name: String,
    pub offset: usize,
    pub shape: TypeShape,
    pub dims: Vec<usize>,
}

impl Dataset {
    /// The user-defined type with this id.
    pub fn user_type(&self, id: i32) -> Result<&UserType> {
        self.tree.types.get(id).ok_or(Error::BadType(id))
    }

    /// The compound type with this id (an enum type's is `NC_EBADTYPE`; an opaque type is
    /// served as one without fields, as netCDF-4 answers for it).
    fn compound_type(&self, id: i32) -> Result<&UserType> {
        let t = self.user_type(id)?;
        if t.enumeration().is_some() {
            return Err(Error::BadType(id));
        }
        Ok(t)
    }

    /// `nc_inq_type`: an atomic type's name and size, or a user-defined type's.
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

    /// `nc_inq_typeids`: the ids of the user-defined types group `g` defines.
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
        let t = self.compound_type(id)?;
        usize::try_from(index)
            .ok()
            .and_then(|i| t.fields.get(i))
            .ok_or_else(|| Error::BadField(format!("{index} of type {}", t.name)))
    }

    /// `nc_inq_compound_fieldindex`: the number of the field of compound type `id` named
    /// `name`.
    pub fn compound_field_index(&self, id: i32, name: &str) -> Result<usize> {
        let t = self.compound_type(id)?;
        t.fields
            .iter()
            .position(|f| f.name == name)
            .ok_or_else(|| Error::BadField(format!("{name:?} of type {}", t.name)))
    }

    /// `nc_inq_typeid`: an atomic type by CDL name, else a user-defined type by its full name
    /// (`/group/name`), or by name in `g`, the nearest group around it, else the first group
    /// of the dataset (in preorder) that defines one of that name, as netcdf-c looks. A
    /// relative name with a `/` is `NC_EINVAL`.
    pub fn typeid_in(&self, g: GroupId, name: &str) -> Result<i32> {
        if let Some(t) = NcType::from_name(name) {
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

    /// What `nc_inq_type_equal` compares of type `id` (HDF5 compares layouts): the atomic
    /// type, an enum type's base and members, or a compound type's size and fields (names,
    /// offsets, shapes and dimensions), nested types in turn; not the type's name.
    pub fn type_shape(&self, id: i32) -> Result<TypeShape> {
        if let Ok(t) = NcType::from_id(id) {
            return Ok(TypeShape::Atomic(t));
        }
        let t = self.user_type(id)?;
        if t.is_opaque() {
            return Ok(TypeShape::Opaque { size: t.size });
        }
        if let Some(base) = t.vlen_base() {
            return Ok(TypeShape::Vlen { base });
        }
        if let Some(e) = t.enumeration() {
            // Members sorted by name (the order they were given in does not count).
            let mut members: Vec<(String, i128)> = e
                .members()
                .iter()
                .map(|m| (m.name.clone(), m.value))
                .collect();
            members.sort();
            return Ok(TypeShape::Enum {
                base: e.base,
                members,
            });
        }
        let mut fields = Vec::with_capacity(t.fields.len());
        for f in &t.fields {
            fields.push(FieldShape {
                name: f.name.clone(),
                offset: f.offset,
                shape: self.type_shape(f.type_id)?,
                dims: f.dims.clone(),
            });
        }
        Ok(TypeShape::Compound {
            size: t.size,
            fields,
        })
    }
}
