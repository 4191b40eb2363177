//! Inquiries that involve netCDF rules: dimension visibility, unlimited dimensions, group
//! lookup by full name, type ids.

use super::dataset::Dataset;
use crate::error::{Error, Result};
use crate::model::{DimId, GroupId, NcType, Storage};

/// What `nc_inq_var_all` reports about a variable.
#[derive(Debug, Clone)]
pub struct VarInfo {
    pub name: String,
    pub ty: NcType,
    /// The netCDF type id: of `ty`, or of the compound type of a variable holding records.
    pub type_id: i32,
    /// Bytes of one value in memory (of the fill value).
    pub value_size: usize,
    /// The base of the variable's variable-length type, when its values are of one (its
    /// fill is then a sequence of them).
    pub vlen_base: Option<NcType>,
    pub dims: Vec<DimId>,
    pub natts: usize,
    pub storage: Storage,
    pub chunks: Vec<u64>,
    pub no_fill: bool,
    /// Fill value in the variable's type (native order; strings: the text).
    pub fill: Vec<u8>,
    /// Byte order of numeric data; `None` for char and string (no byte order).
    pub endian: Option<crate::model::Endian>,
    pub shuffle: bool,
    pub deflate_level: Option<u32>,
    pub fletcher32: bool,
}

impl Dataset {
    /// Dimensions visible in group `g`: its own, then (if asked) its ancestors'.
    pub fn dimids(&self, g: GroupId, include_parents: bool) -> Vec<DimId> {
        let mut out = Vec::new();
        let mut cur = Some(g);
        while let Some(id) = cur {
            out.extend(self.tree.group(id).dims.iter().copied());
            cur = if include_parents {
                self.tree.group(id).parent
            } else {
                None
            };
        }
        out.sort();
        out
    }

    /// Unlimited dimensions defined in group `g`.
    pub fn unlimdims(&self, g: GroupId) -> Vec<DimId> {
        self.tree
            .group(g)
            .dims
            .iter()
            .copied()
            .filter(|d| self.tree.dim(*d).unlimited)
            .collect()
    }

    /// `nc_inq_unlimdim`: the first unlimited dimension visible from `g`, if any.
    pub fn first_unlimdim(&self, g: GroupId) -> Option<DimId> {
        let mut cur = Some(g);
        while let Some(id) = cur {
            if let Some(d) = self.unlimdims(id).first() {
                return Some(*d);
            }
            cur = self.tree.group(id).parent;
        }
        None
    }

    /// `nc_inq_dimid`: the dimension of this name visible from `g`, or, named by its full name
    /// (`/a/b/z`), the one of that group, as netCDF-4 files take it.
    pub fn dimid(&self, g: GroupId, name: &str) -> Result<DimId> {
        let found = match name.rsplit_once('/') {
            Some((path, dim)) if name.starts_with('/') => self
                .group_by_path(crate::model::Tree::ROOT, path)
                .ok()
                .and_then(|owner| {
                    let dims = &self.tree.group(owner).dims;
                    dims.iter().copied().find(|d| self.tree.dim(*d).name == dim)
                }),
            _ => self.tree.find_dim_in_scope(g, name),
        };
        found.ok_or_else(|| Error::BadDim(name.to_string()))
    }

    /// Validates a dimension id.
    pub fn dim_id(&self, d: i32) -> Result<DimId> {
        usize::try_from(d)
            .ok()
            .filter(|i| *i < self.tree.dims.len())
            .map(DimId)
            .ok_or_else(|| Error::BadDim(format!("dimid {d}")))
    }

    /// `nc_inq_grp_full_ncid`: the group with this full name ("/a/b"), or relative ("a/b").
    pub fn group_by_path(&self, from: GroupId, path: &str) -> Result<GroupId> {
        let (mut g, rest) = match path.strip_prefix('/') {
            Some(r) => (crate::model::Tree::ROOT, r),
            None => (from, path),
        };
        for part in rest.split('/').filter(|p| !p.is_empty()) {
            g = self
                .tree
                .child_named(g, part)
                .ok_or_else(|| Error::NoGroup(path.to_string()))?;
        }
        Ok(g)
    }

    /// Everything `nc_inq_var_all` reports.
    pub fn var_info(&self, g: GroupId, v: usize) -> VarInfo {
        let var = &self.tree.group(g).vars[v];
        let reported = var.reported_filters();
        let level = reported
            .iter()
            .find(|f| f.id == 1)
            .map(|f| f.params.first().copied().unwrap_or(0));
        let storage = if var.is_scalar() {
            Storage::Contiguous
        } else {
            var.storage
        };
        VarInfo {
            name: var.name.clone(),
            ty: var.ty,
            type_id: self.var_user_type(g, v).unwrap_or(var.ty.id()),
            value_size: match (&var.record, &var.vlen) {
                (Some(r), _) => r.plan.memory_size,
                (None, Some(_)) => crate::model::VLEN_SIZE,
                (None, None) => var.ty.size(),
            },
            // Only when the variable's type is listed (its fill is then an `nc_vlen_t`).
            vlen_base: var
                .vlen
                .as_ref()
                .filter(|l| l.type_ref.as_ref().and_then(|r| r.id()).is_some())
                .map(|l| l.base),
            dims: var.dims.clone(),
            natts: var.atts.len(),
            storage,
            chunks: if var.is_scalar() {
                Vec::new()
            } else {
                var.chunks.clone()
            },
            no_fill: var.no_fill,
            fill: self.fill_value_of(var),
            // netCDF-4 reports no byte order for user-defined types (and refuses to set one).
            endian: (var.ty.is_numeric() && var.record.is_none() && var.enum_type.is_none())
                .then_some(var.endian),
            shuffle: reported.iter().any(|f| f.id == 2),
            deflate_level: level,
            fletcher32: reported.iter().any(|f| f.id == 3),
        }
    }

    fn fill_value_of(&self, var: &crate::model::Var) -> Vec<u8> {
        if var.record.is_some() {
            return super::data::fill_element(var);
        }
        if var.vlen.is_some() {
            return var.vlen_fill().unwrap_or_default();
        }
        match var.att("_FillValue").map(|a| &a.values) {
            Some(crate::model::Values::Fixed { ty, bytes }) if *ty == var.ty => bytes.clone(),
            Some(crate::model::Values::Strings(s)) => s.first().cloned().unwrap_or_default(),
            // None, or one of another type (a store's), which is no fill.
            _ => match &var.stored_fill {
                Some(b) if var.strings == crate::model::StringStorage::Ucs4 => {
                    crate::format::ucs4::decode(b, var.endian)
                }
                Some(b) => b.clone(),
                None => var.ty.default_fill(),
            },
        }
    }
}
