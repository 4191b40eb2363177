//! Attributes: put/get with type conversion, inquiry, rename, delete, and the virtual
//! attributes netCDF answers by name only (`_NCProperties`, `_SuperblockVersion`,
//! `_IsNetcdf4`, `_Codecs`, `_InnerChunkSizes`). `_InnerChunkSizes` is also put and deleted:
//! it defines a variable's Zarr v3 shards.

use super::convert;
use super::dataset::Dataset;
use super::names;
use crate::error::{Error, Result};
use crate::model::{Att, GroupId, NcType, Values};

/// Which object an attribute belongs to: a group (`NC_GLOBAL`) or a variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    Group(GroupId),
    Var(GroupId, usize),
}

/// The shape of the chunks inside each Zarr v3 shard of a variable, whose chunks are shards.
pub const INNER_CHUNK_SIZES: &str = "_InnerChunkSizes";

/// Names answered by name only: never listed, never counted.
pub const VIRTUAL: [&str; 5] = [
    "_NCProperties",
    "_SuperblockVersion",
    "_IsNetcdf4",
    "_Codecs",
    INNER_CHUNK_SIZES,
];

/// Converts values to `to` (with the classic model's rules when `classic_model`); the flag says
/// some value was out of range.
pub fn convert_values(values: &Values, to: NcType, classic_model: bool) -> Result<(Values, bool)> {
    match values {
        // Sequences move in their own type only.
        Values::Vlens { .. } if to == NcType::Char => Err(Error::Char),
        Values::Vlens { base, .. } if *base == to => Ok((values.clone(), false)),
        Values::Vlens { .. } => Err(Error::BadType(to.id())),
        Values::Strings(_) if to == NcType::String => Ok((values.clone(), false)),
        Values::Strings(_) => Err(Error::Char),
        Values::Fixed { .. } if to == NcType::String => Err(Error::Char),
        Values::Fixed { ty, bytes } => {
            if *ty == to {
                return Ok((values.clone(), false));
            }
            if (*ty == NcType::Char) != (to == NcType::Char) {
                return Err(Error::Char);
            }
            let mut out = vec![0u8; values.len() * to.size()];
            let range = convert::convert_flagging_range(*ty, bytes, to, &mut out, classic_model)?;
            Ok((Values::fixed(to, out), range))
        }
    }
}

impl Dataset {
    pub(super) fn atts(&self, owner: Owner) -> &Vec<Att> {
        match owner {
            Owner::Group(g) => &self.tree.group(g).atts,
            Owner::Var(g, v) => &self.tree.group(g).vars[v].atts,
        }
    }

    fn atts_mut(&mut self, owner: Owner) -> &mut Vec<Att> {
        match owner {
            Owner::Group(g) => &mut self.tree.group_mut(g).atts,
            Owner::Var(g, v) => &mut self.tree.var_mut(g, v).atts,
        }
    }

    fn virtual_att(&self, owner: Owner, name: &str) -> Option<Values> {
        match (owner, name) {
            (Owner::Group(g), "_NCProperties") if g.0 == 0 => {
                self.ncproperties.as_deref().map(Values::text)
            }
            (Owner::Group(g), "_SuperblockVersion") if g.0 == 0 => {
                let v: i32 = if self.ncproperties.is_some() { 2 } else { 0 };
                Some(Values::fixed(NcType::Int, v.to_ne_bytes().to_vec()))
            }
            (Owner::Group(g), "_IsNetcdf4") if g.0 == 0 => {
                Some(Values::fixed(NcType::Int, 1i32.to_ne_bytes().to_vec()))
            }
            (Owner::Var(g, v), "_Codecs") => {
                let configs = self.tree.group(g).vars[v].codec_configs();
                if configs.is_empty() {
                    return None;
                }
                let list: Vec<serde_json::Value> =
                    configs.into_iter().map(serde_json::Value::Object).collect();
                // NUL-terminated, as netcdf-c hands it out: ncdump prints it as a C string.
                let mut text =
                    crate::format::non_finite::json_text(&serde_json::Value::Array(list))
                        .into_bytes();
                text.push(0);
                Some(Values::fixed(NcType::Char, text))
            }
            (Owner::Var(g, v), INNER_CHUNK_SIZES) => {
                let sizes = self.tree.group(g).vars[v].inner_chunk_sizes()?;
                Some(integers(&sizes))
            }
            _ => None,
        }
    }

    /// `nc_put_att` of `_InnerChunkSizes`: the variable's inner chunks, as integers.
    fn put_inner_chunk_sizes(
        &mut self,
        owner: Owner,
        file_type: NcType,
        values: &Values,
    ) -> Result<()> {
        let Owner::Var(g, v) = owner else {
            return Err(Error::AttMeta(INNER_CHUNK_SIZES.to_string()));
        };
        let integer =
            file_type.is_integer() && matches!(values, Values::Fixed { ty, .. } if ty.is_integer());
        let sizes = match convert_values(values, NcType::Int64, false) {
            Ok((Values::Fixed { bytes, .. }, false)) if integer => bytes
                .chunks_exact(8)
                .map(|b| i64::from_ne_bytes(b.try_into().unwrap_or([0; 8])))
                .map(|n| u64::try_from(n).ok().filter(|n| *n > 0))
                .collect::<Option<Vec<u64>>>(),
            _ => None,
        };
        let sizes = sizes.ok_or_else(|| {
            Error::Invalid(format!(
                "{INNER_CHUNK_SIZES} must be positive integers, one per dimension"
            ))
        })?;
        self.def_var_inner_chunks(g, v, Some(&sizes))
    }

    /// The attribute's values (stored or virtual).
    pub fn att_values(&self, owner: Owner, name: &str) -> Result<Values> {
        // A compound variable's `_FillValue` holds a compound value, no `Values`.
        if let Some((type_id, _)) = self.compound_att(owner, name) {
            return Err(Error::BadType(type_id));
        }
        if let Some(a) = self.atts(owner).iter().find(|a| a.name == name) {
            return Ok(a.values.clone());
        }
        self.virtual_att(owner, name)
            .ok_or_else(|| Error::NotAtt(name.to_string()))
    }

    /// `nc_inq_att`: type and length.
    pub fn inq_att(&self, owner: Owner, name: &str) -> Result<(NcType, usize)> {
        let v = self.att_values(owner, name)?;
        Ok((v.ty(), v.len()))
    }

    /// `nc_inq_attid`: virtual attributes have no number.
    pub fn inq_attid(&self, owner: Owner, name: &str) -> Result<usize> {
        if let Some(i) = self.atts(owner).iter().position(|a| a.name == name) {
            return Ok(i);
        }
        if self.virtual_att(owner, name).is_some() {
            return Err(Error::AttMeta(name.to_string()));
        }
        Err(Error::NotAtt(name.to_string()))
    }

    /// `nc_inq_attname`.
    pub fn inq_attname(&self, owner: Owner, num: i32) -> Result<&str> {
        usize::try_from(num)
            .ok()
            .and_then(|n| self.atts(owner).get(n))
            .map(|a| a.name.as_str())
            .ok_or_else(|| Error::NotAtt(format!("attribute number {num}")))
    }

    /// Number of (listed) attributes.
    pub fn natts(&self, owner: Owner) -> usize {
        self.atts(owner).len()
    }

    /// The enum or opaque type of attribute `name` of `owner`, when its values are of one.
    pub fn att_user_type(&self, owner: Owner, name: &str) -> Option<i32> {
        self.atts(owner)
            .iter()
            .find(|a| a.name == name)?
            .user_type
            .as_ref()?
            .id()
    }

    /// `nc_inq_att` in the netCDF API's terms: the id of the attribute's type (a user-defined
    /// type's when its values are of one) and the number of its values (an opaque value is
    /// its type's size in bytes).
    pub fn inq_att_typed(&self, owner: Owner, name: &str) -> Result<(i32, usize)> {
        if let Some((id, _)) = self.compound_att(owner, name) {
            return Ok((id, 1));
        }
        let (t, n) = self.inq_att(owner, name)?;
        Ok(match self.att_user_type(owner, name) {
            Some(id) => match self.opaque_size(id) {
                Ok(size) => (id, n / size.max(1)),
                Err(_) => (id, n),
            },
            None => (t.id(), n),
        })
    }

    /// `nc_get_att` in `memtype` (`None`: the attribute's own type). The flag reports that
    /// some value was out of range for `memtype` (the data are still converted).
    pub fn get_att(
        &self,
        owner: Owner,
        name: &str,
        memtype: Option<NcType>,
    ) -> Result<(Values, bool)> {
        let v = self.att_values(owner, name)?;
        // Values of an enum or opaque type are read in that type only (as text: `NC_ECHAR`,
        // as netCDF-4 answers); no values read in any.
        if let (Some(t), Some(_)) = (memtype, self.att_user_type(owner, name)) {
            if v.is_empty() {
                let none = match t {
                    NcType::String => Values::Strings(Vec::new()),
                    t => Values::fixed(t, Vec::new()),
                };
                return Ok((none, false));
            }
            return Err(if t == NcType::Char {
                Error::Char
            } else {
                Error::BadType(t.id())
            });
        }
        match memtype {
            None => Ok((v, false)),
            Some(t) => convert_values(&v, t, self.tree.classic_model),
        }
    }

    /// `nc_put_att`: `values` are in the caller's memory type, stored as `file_type`.
    /// Returns true when some value was out of range (it is stored converted all the same).
    pub fn put_att(
        &mut self,
        owner: Owner,
        name: &str,
        file_type: NcType,
        values: Values,
    ) -> Result<bool> {
        self.put_att_of(owner, name, file_type, values, None)
    }

    /// `nc_put_att` of values of `file_type`, or of user-defined type `user_type` stored as
    /// `file_type` (an enum type's base; `ubyte`, an opaque type's bytes).
    pub(super) fn put_att_of(
        &mut self,
        owner: Owner,
        name: &str,
        file_type: NcType,
        values: Values,
        user_type: Option<i32>,
    ) -> Result<bool> {
        self.check_writable()?;
        names::check(name)?;
        if name == INNER_CHUNK_SIZES {
            self.put_inner_chunk_sizes(owner, file_type, &values)?;
            return Ok(false);
        }
        if VIRTUAL.contains(&name) || name.starts_with("_nczarr_") || name == "_ARRAY_DIMENSIONS" {
            return Err(Error::AttMeta(name.to_string()));
        }
        if self.tree.classic_model && !file_type.in_classic_model() {
            return Err(Error::StrictNc3(format!(
                "attributes of type {}",
                file_type.name()
            )));
        }
        let (stored, range) = convert_values(&values, file_type, self.tree.classic_model)?;
        if name == "_FillValue"
            && let Owner::Var(g, v) = owner
        {
            let var = &self.tree.group(g).vars[v];
            // Of the variable's own type: an enum variable's fill is of its enum type, a
            // variable-length one's of its variable-length type.
            let own_type = self.var_user_type(g, v);
            let stored_as = match &var.vlen {
                Some(vlen) => vlen.base,
                None => var.ty,
            };
            if file_type != stored_as || var.record.is_some() || own_type != user_type {
                return Err(Error::BadType(file_type.id()));
            }
            if stored.len() != 1 {
                return Err(Error::Invalid(
                    "_FillValue must have exactly one value".into(),
                ));
            }
            if var.is_stored() {
                return Err(Error::LateFill(var.name.clone()));
            }
        }
        self.ensure_define_mode()?;
        // The quantize attribute is written with the variable (netCDF-4 writes it at enddef),
        // so attributes defined before then come before it.
        let quantize_at = match owner {
            Owner::Var(g, v) => {
                let var = &self.tree.group(g).vars[v];
                let mode = var.quantize.0;
                crate::model::tree::quantize_attribute(mode)
                    .filter(|_| var.stored_path.is_none())
                    .and_then(|q| var.atts.iter().position(|a| a.name == q))
            }
            Owner::Group(_) => None,
        };
        if let Owner::Var(g, v) = owner
            && name == "_FillValue"
        {
            self.tree.var_mut(g, v).take_new_fill(&stored);
        }
        let atts = self.atts_mut(owner);
        let mut new = Att::new(name, stored);
        new.user_type = user_type.map(crate::model::TypeRef::Listed);
        match (atts.iter_mut().find(|a| a.name == name), quantize_at) {
            (Some(a), _) => *a = new,
            (None, Some(at)) => atts.insert(at, new),
            (None, None) => atts.push(new),
        }
        Ok(range)
    }

    /// Checks that attribute `name` of variable `v` (its `values`) may become its `_FillValue`
    /// by a rename: of the variable's own type (an enum or variable-length one's where it has
    /// one), one sequence for a variable of sequences (whose slots then widen to hold it
    /// whole), before any data is written (as a fill given is).
    fn check_new_fill(
        &mut self,
        g: GroupId,
        v: usize,
        owner: Owner,
        name: &str,
        values: &Values,
    ) -> Result<()> {
        let renamed = self.att_user_type(owner, name);
        let own_type = self.var_user_type(g, v);
        if own_type != renamed {
            return Err(Error::BadType(renamed.unwrap_or(0)));
        }
        let var = &self.tree.group(g).vars[v];
        if var.is_stored() {
            return Err(Error::LateFill(var.name.clone()));
        }
        if let Values::Vlens { items, .. } = values {
            if items.len() != 1 {
                return Err(Error::Invalid(
                    "_FillValue must have exactly one value".into(),
                ));
            }
            let longest = items.iter().map(Vec::len).max().unwrap_or(0);
            if longest > var.maxstrlen {
                self.widen_strings(g, v, longest)?;
            }
        }
        // The fill given replaces one a deleted `_FillValue` left.
        self.tree.var_mut(g, v).stored_fill = None;
        Ok(())
    }

    /// `nc_rename_att`.
    pub fn rename_att(&mut self, owner: Owner, name: &str, new_name: &str) -> Result<()> {
        self.check_writable()?;
        names::check(new_name)?;
        if VIRTUAL.contains(&new_name) {
            return Err(Error::AttMeta(new_name.to_string()));
        }
        // A compound variable's `_FillValue` is its fill: it keeps its name, and no other
        // attribute takes it.
        if let Owner::Var(g, v) = owner
            && self.tree.group(g).vars[v].record.is_some()
            && (name == "_FillValue" || new_name == "_FillValue")
        {
            return Err(Error::BadType(0));
        }
        let atts = self.atts(owner);
        if atts.iter().any(|a| a.name == new_name) {
            return Err(Error::NameInUse(new_name.to_string()));
        }
        let i = atts
            .iter()
            .position(|a| a.name == name)
            .ok_or_else(|| Error::NotAtt(name.to_string()))?;
        let mut kept = None;
        if let Owner::Var(g, v) = owner {
            if new_name == "_FillValue" {
                let values = atts[i].values.clone();
                self.check_new_fill(g, v, owner, name, &values)?;
            } else if name == "_FillValue" {
                // Renamed away, a fill stays the fill, as deleted (netCDF-4 files and netcdf-c
                // 4.10.1's NCZarr keep it).
                kept = kept_fill(&self.tree.group(g).vars[v], self.layout.nczarr);
            }
        }
        self.atts_mut(owner)[i].name = new_name.to_string();
        if let Owner::Var(g, v) = owner
            && name == "_FillValue"
        {
            self.tree.var_mut(g, v).keep_fill(kept);
        }
        if !self.define_mode {
            self.write_metadata()?;
        }
        Ok(())
    }

    /// `nc_del_att`.
    pub fn del_att(&mut self, owner: Owner, name: &str) -> Result<()> {
        self.check_writable()?;
        let stored = self.atts(owner).iter().any(|a| a.name == name);
        if let (Owner::Var(g, v), INNER_CHUNK_SIZES, false) = (owner, name, stored) {
            if self.tree.group(g).vars[v].inner_chunks.is_empty() {
                return Err(match self.virtual_att(owner, name) {
                    // Shards read from a store stay as they are stored.
                    Some(_) => Error::AttMeta(name.to_string()),
                    None => Error::NotAtt(name.to_string()),
                });
            }
            return self.def_var_inner_chunks(g, v, None);
        }
        let i = self
            .atts(owner)
            .iter()
            .position(|a| a.name == name)
            .ok_or_else(|| Error::NotAtt(name.to_string()))?;
        self.ensure_define_mode()?;
        // A variable's fill outlives its `_FillValue` attribute, as in netCDF-4 files and
        // netcdf-c 4.10.1's NCZarr (the array's `fill_value` keeps it; a variable of
        // sequences' NCZarr keeps beside its null `fill_value`).
        let kept_fill = match owner {
            Owner::Var(g, v) if name == "_FillValue" => {
                kept_fill(&self.tree.group(g).vars[v], self.layout.nczarr)
            }
            _ => None,
        };
        self.atts_mut(owner).remove(i);
        if let Owner::Var(g, v) = owner
            && name == "_FillValue"
        {
            self.tree.var_mut(g, v).keep_fill(kept_fill);
        }
        Ok(())
    }
}

/// The fill variable `var` keeps when its `_FillValue` attribute is deleted or renamed, as
/// [`crate::model::Var::stored_fill`] holds it: a number's value, a sequence's values, and
/// with NCZarr metadata (`nczarr`) a character's or a string's text (numpy unicode: its code
/// points); none for records. Pure Zarr has no room for text kept apart from its `_FillValue`
/// (its `fill_value` is read back as one): there the attribute and the fill go together.
fn kept_fill(var: &crate::model::Var, nczarr: bool) -> Option<Vec<u8>> {
    if var.vlen.is_some() {
        return var.vlen_fill();
    }
    if var.record.is_some() {
        return None;
    }
    if var.ty.is_numeric() {
        return Some(super::data::fill_element(var));
    }
    if !nczarr {
        return None;
    }
    if var.ty == NcType::Char {
        return Some(super::data::fill_element(var));
    }
    let text = match var.att("_FillValue").map(|a| &a.values) {
        Some(Values::Strings(s)) => s.first()?,
        _ => return None,
    };
    Some(match var.strings {
        crate::model::StringStorage::Ucs4 => {
            crate::format::ucs4::encode(&String::from_utf8_lossy(text), var.endian)
        }
        _ => text.clone(),
    })
}

/// `sizes` as `int` values, or as `int64` when some does not fit.
fn integers(sizes: &[u64]) -> Values {
    let small: Option<Vec<i32>> = sizes.iter().map(|n| i32::try_from(*n).ok()).collect();
    match small {
        Some(s) => Values::fixed(
            NcType::Int,
            s.iter().flat_map(|n| n.to_ne_bytes()).collect(),
        ),
        None => Values::fixed(
            NcType::Int64,
            sizes
                .iter()
                .flat_map(|n| i64::try_from(*n).unwrap_or(i64::MAX).to_ne_bytes())
                .collect(),
        ),
    }
}
