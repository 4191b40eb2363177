//! Definitions: dimensions, variables, groups, renames, and per-variable properties.

use super::chunking::default_chunks;
use super::dataset::Dataset;
use super::names;
use crate::error::{Error, Result};
use crate::model::{DimId, Endian, Filter, GroupId, NcType, Storage, StringStorage, Values, Var};
use crate::rcfile::RcFiles;
use std::sync::Arc;

/// The separator of the chunk keys of new variables: `ZARR.DIMENSION_SEPARATOR` in netCDF's rc
/// files when it is `/`, as netcdf-c honours it, else `.`.
fn separator_of_new_variables() -> char {
    match RcFiles::of_process().get("ZARR.DIMENSION_SEPARATOR") {
        Some("/") => '/',
        _ => '.',
    }
}

impl Dataset {
    fn name_free(&self, g: GroupId, name: &str) -> Result<()> {
        let grp = self.tree.group(g);
        let used = grp.var_index(name).is_some()
            || grp
                .children
                .iter()
                .any(|c| self.tree.group(*c).name == name)
            || grp.dims.iter().any(|d| self.tree.dim(*d).name == name)
            || self.tree.types.named(g, name).is_some();
        if used {
            Err(Error::NameInUse(name.to_string()))
        } else {
            Ok(())
        }
    }

    /// Refuses to name a variable of group `g` after another variable, a type or a group of
    /// it (they would share store keys); a dimension may share its name.
    fn var_name_free(&self, g: GroupId, name: &str) -> Result<()> {
        if self.tree.types.named(g, name).is_some() {
            return Err(Error::NameInUse(name.to_string()));
        }
        self.check_type_name_free(g, name)
    }

    /// `nc_def_dim`.
    pub fn def_dim(&mut self, g: GroupId, name: &str, len: u64, unlimited: bool) -> Result<DimId> {
        self.ensure_define_mode()?;
        names::check(name)?;
        let grp = self.tree.group(g);
        if grp.dims.iter().any(|d| self.tree.dim(*d).name == name) {
            return Err(Error::NameInUse(name.to_string()));
        }
        if self.tree.classic_model && unlimited && self.tree.dims.iter().any(|d| d.unlimited) {
            return Err(Error::SecondUnlimited);
        }
        if !unlimited && (len == 0 || len > i64::MAX as u64) {
            return Err(Error::DimSize(len));
        }
        Ok(self
            .tree
            .add_dim(g, name, if unlimited { 0 } else { len }, unlimited))
    }

    /// `nc_def_grp`.
    pub fn def_grp(&mut self, parent: GroupId, name: &str) -> Result<GroupId> {
        self.ensure_define_mode()?;
        if self.tree.classic_model {
            return Err(Error::StrictNc3("groups".into()));
        }
        names::check_node(name, self.layout.zarr_v3)?;
        self.name_free(parent, name)?;
        if self.tree.groups.len() >= 0xFFFF {
            return Err(Error::Invalid("too many groups".into()));
        }
        Ok(self.tree.add_group(parent, name))
    }

    /// `nc_def_var`.
    pub fn def_var(&mut self, g: GroupId, name: &str, ty: NcType, dims: &[i32]) -> Result<usize> {
        self.define_var(g, name, ty, dims, None)
    }

    /// A new variable of type `ty`, or holding `record`s (`ty` a stand-in).
    pub(super) fn define_var(
        &mut self,
        g: GroupId,
        name: &str,
        ty: NcType,
        dims: &[i32],
        record: Option<crate::model::VarRecord>,
    ) -> Result<usize> {
        self.ensure_define_mode()?;
        names::check_node(name, self.layout.zarr_v3)?;
        self.var_name_free(g, name)?;
        if self.tree.classic_model && !ty.in_classic_model() {
            return Err(Error::StrictNc3(format!("type {}", ty.name())));
        }
        let mut dimids = Vec::with_capacity(dims.len());
        for d in dims {
            let id = usize::try_from(*d)
                .ok()
                .filter(|i| *i < self.tree.dims.len())
                .ok_or_else(|| Error::BadDim(format!("dimid {d}")))?;
            dimids.push(DimId(id));
        }
        let mut var = Var::new(name, ty, dimids);
        var.no_fill = self.nofill_default;
        var.dimension_separator = separator_of_new_variables();
        if self.layout.zarr_v3 {
            // Zarr v3's defaults, as zarr-python writes them: `c/0/0` chunk keys, strings as
            // variable-length UTF-8.
            var.zarr_v3 = true;
            var.v3_chunk_keys = true;
            var.dimension_separator = '/';
            if ty == NcType::String {
                var.strings = StringStorage::Objects;
                let id = ("id".to_string(), crate::codec::VLEN_UTF8.into());
                var.filters.push(Filter {
                    id: 0,
                    params: Vec::new(),
                    codec: [id].into_iter().collect(),
                });
            }
        }
        let esize = match &record {
            Some(r) => r.plan.stored_size,
            None if ty == NcType::String => var.maxstrlen,
            None => ty.size(),
        };
        var.record = record;
        let dims: Vec<(u64, bool)> = var
            .dims
            .iter()
            .map(|d| (self.tree.dim(*d).len, self.tree.dim(*d).unlimited))
            .collect();
        var.chunks = default_chunks(&dims, esize);
        let grp = self.tree.group_mut(g);
        grp.vars.push(Arc::new(var));
        Ok(grp.vars.len() - 1)
    }

    /// A variable whose definition may still change, define mode entered (as netCDF-4
    /// does) only once that is known: a variable stored already is `NC_ELATEDEF` and leaves
    /// the dataset in the mode it was in, as netCDF-4 files answer.
    pub(super) fn var_mut_for_definition(&mut self, g: GroupId, v: usize) -> Result<&mut Var> {
        self.check_definable(g, v)?;
        self.ensure_define_mode()?;
        Ok(self.tree.var_mut(g, v))
    }

    /// Fails unless the definition of variable `v` may still change: `NC_ELATEDEF` for a
    /// variable stored already, checked (as netCDF-4 does) before any of the arguments.
    pub(super) fn check_definable(&self, g: GroupId, v: usize) -> Result<()> {
        self.check_writable()?;
        let var = &self.tree.group(g).vars[v];
        if var.is_stored() {
            return Err(Error::LateDef(var.name.clone()));
        }
        Ok(())
    }

    /// `nc_def_var_chunking`.
    pub fn def_var_chunking(
        &mut self,
        g: GroupId,
        v: usize,
        storage: Storage,
        sizes: Option<&[u64]>,
    ) -> Result<()> {
        let shape: Vec<(u64, bool)> = {
            let var = &self.tree.group(g).vars[v];
            var.dims
                .iter()
                .map(|d| (self.tree.dim(*d).len, self.tree.dim(*d).unlimited))
                .collect()
        };
        let var = self.var_mut_for_definition(g, v)?;
        if var.is_scalar() {
            return if storage == Storage::Chunked {
                Err(Error::Invalid("scalar variables cannot be chunked".into()))
            } else {
                Ok(())
            };
        }
        match storage {
            Storage::Chunked => {
                if let Some(sizes) = sizes {
                    if sizes.len() != shape.len() {
                        return Err(Error::BadChunk {
                            var: var.name.clone(),
                            why: format!("chunk sizes {sizes:?}"),
                        });
                    }
                    // A length of 0 asks for the default one, as netCDF-4 files take it.
                    let defaults = default_chunks(&shape, var.decoded_esize());
                    let sizes: Vec<u64> = sizes
                        .iter()
                        .zip(defaults)
                        .map(|(&c, default)| if c == 0 { default } else { c })
                        .collect();
                    let bytes = sizes
                        .iter()
                        .fold(var.decoded_esize() as f64, |b, &c| b * c as f64);
                    if bytes > f64::from(u32::MAX) {
                        // netCDF-4's bound: no chunk of 4 GiB or more.
                        return Err(Error::BadChunk {
                            var: var.name.clone(),
                            why: format!("chunks of {bytes} bytes (4 GiB at most)"),
                        });
                    }
                    let sizes = &sizes[..];
                    for (c, (len, unlim)) in sizes.iter().zip(&shape) {
                        if !unlim && *len > 0 && c > len {
                            return Err(Error::BadChunk {
                                var: var.name.clone(),
                                why: format!("chunk {c} exceeds dimension length {len}"),
                            });
                        }
                    }
                    if !var.inner_chunks.is_empty() {
                        check_inner_chunks(sizes, &var.inner_chunks).map_err(|why| {
                            Error::BadChunk {
                                var: var.name.clone(),
                                why,
                            }
                        })?;
                    }
                    var.chunks = sizes.to_vec();
                    var.chunks_asked = true;
                }
            }
            Storage::Contiguous | Storage::Compact => {
                if shape.iter().any(|s| s.1) {
                    return Err(Error::Storage(format!(
                        "{} has an unlimited dimension and must be chunked",
                        var.name
                    )));
                }
                if !var.inner_chunks.is_empty() {
                    // In one piece, as asked: one shard holding the whole variable.
                    let one = one_shard(&shape, &var.inner_chunks, var.stored_esize()).map_err(
                        |why| Error::BadChunk {
                            var: var.name.clone(),
                            why,
                        },
                    )?;
                    var.chunks = one;
                    var.chunks_asked = true;
                    return Ok(());
                }
                // The codec turning strings into bytes is no filter.
                let object_codec_only = |f: &Filter| crate::codec::is_object_codec(f.codec_id());
                if !var.filters.iter().all(object_codec_only) {
                    return Err(Error::Storage(format!(
                        "{} has filters and must be chunked",
                        var.name
                    )));
                }
                var.chunks = shape.iter().map(|s| s.0.max(1)).collect();
            }
        }
        var.storage = storage;
        Ok(())
    }

    /// Stores the variable in Zarr v3 shards of its chunk shape, each holding chunks of
    /// `sizes` (`_InnerChunkSizes`), or not in shards when `None`. Only for a new array of
    /// numbers, characters or opaque values in a Zarr v3 dataset, in the variable's
    /// definition. Each size
    /// must divide the chunk size of its dimension; chunk sizes netCDF chose (none were asked
    /// for yet) become the nearest multiples of the sizes below them.
    pub fn def_var_inner_chunks(
        &mut self,
        g: GroupId,
        v: usize,
        sizes: Option<&[u64]>,
    ) -> Result<()> {
        self.check_definable(g, v)?;
        // Checked before define mode is entered: a refusal changes nothing.
        let chunks = match sizes {
            Some(sizes) => Some(self.chunks_holding(g, v, sizes)?),
            None => None,
        };
        let var = self.var_mut_for_definition(g, v)?;
        match (sizes, chunks) {
            (Some(sizes), Some(chunks)) => {
                var.inner_chunks = sizes.to_vec();
                var.chunks = chunks;
            }
            _ => var.inner_chunks.clear(),
        }
        Ok(())
    }

    /// The chunk (shard) shape of variable `v` with inner chunks of `sizes`: its own, or, when
    /// netCDF chose it, the nearest multiples of `sizes` below it (one inner chunk at least);
    /// or why it cannot be sharded.
    fn chunks_holding(&self, g: GroupId, v: usize, sizes: &[u64]) -> Result<Vec<u64>> {
        let var = &self.tree.group(g).vars[v];
        let refuse = |why: String| Error::BadChunk {
            var: var.name.clone(),
            why,
        };
        if !self.layout.zarr_v3 {
            return Err(refuse(
                "shards (_InnerChunkSizes) need Zarr v3: add v3 to the mode".into(),
            ));
        }
        if var.ty == NcType::String || var.is_scalar() || var.storage != Storage::Chunked {
            let kind = if var.is_scalar() {
                "scalar"
            } else if var.ty == NcType::String {
                "string"
            } else {
                "contiguous"
            };
            return Err(refuse(format!(
                "a {kind} variable cannot be stored in shards"
            )));
        }
        let dims: Vec<(u64, bool)> = var
            .dims
            .iter()
            .map(|d| (self.tree.dim(*d).len, self.tree.dim(*d).unlimited))
            .collect();
        if sizes.len() != dims.len() {
            return Err(refuse(format!(
                "{} inner chunk sizes for {} dimensions",
                sizes.len(),
                dims.len()
            )));
        }
        for (size, (len, unlimited)) in sizes.iter().zip(&dims) {
            if *size == 0 {
                return Err(refuse("an inner chunk size of 0".into()));
            }
            if !unlimited && size > len {
                return Err(refuse(format!(
                    "inner chunk {size} exceeds dimension length {len}"
                )));
            }
        }
        let chunks = if !var.chunks_asked && check_inner_chunks(&var.chunks, sizes).is_err() {
            var.chunks
                .iter()
                .zip(sizes)
                .map(|(c, s)| s * (c / s).max(1))
                .collect()
        } else {
            var.chunks.clone()
        };
        check_inner_chunks(&chunks, sizes).map_err(refuse)?;
        Ok(chunks)
    }

    /// `nc_def_var_endian`.
    pub fn def_var_endian(&mut self, g: GroupId, v: usize, endian: Option<Endian>) -> Result<()> {
        let var = self.var_mut_for_definition(g, v)?;
        if var.enum_type.is_some() || var.record.is_some() || var.vlen.is_some() {
            // As netCDF-4: a user-defined type's byte order (an enum's base's, a compound
            // type's fields', a variable-length type's base's) is set by no variable, and
            // opaque bytes have none.
            return Err(Error::Invalid(format!(
                "{} is of a user-defined type",
                var.name
            )));
        }
        if !var.ty.is_numeric() && var.ty != NcType::Char {
            return Err(Error::Invalid(format!(
                "{} has no byte order",
                var.ty.name()
            )));
        }
        var.endian = endian.unwrap_or_else(Endian::native);
        Ok(())
    }

    /// `nc_def_var_fill`: `value` is the fill in the variable's type. Turning fill off
    /// drops the fill value given before (its `_FillValue` attribute too; `value` is not
    /// taken), so turning it on again without a value gives the default fill, as netCDF-4
    /// does; strings cannot be left unfilled (`NC_EINVAL`).
    pub fn def_var_fill(
        &mut self,
        g: GroupId,
        v: usize,
        no_fill: bool,
        value: Option<Values>,
    ) -> Result<()> {
        let var = self.var_mut_for_definition(g, v)?;
        if no_fill {
            if var.ty == NcType::String && var.vlen.is_none() && var.record.is_none() {
                return Err(Error::Invalid(format!(
                    "{}: string variables are always filled",
                    var.name
                )));
            }
            var.no_fill = true;
            var.atts.retain(|a| a.name != "_FillValue");
            var.keep_fill(None);
            return Ok(());
        }
        var.no_fill = false;
        if let Some(val) = value {
            // A variable-length variable's fill is a sequence of its base's values.
            let (stored_as, own_type) = match &var.vlen {
                Some(vlen) => (vlen.base, vlen.type_ref.clone()),
                None => (var.ty, var.enum_type.clone()),
            };
            let sequences = matches!(val, Values::Vlens { .. });
            if val.ty() != stored_as || val.len() != 1 || sequences != var.vlen.is_some() {
                return Err(Error::Invalid(
                    "fill value must be one value of the variable's type".into(),
                ));
            }
            var.take_new_fill(&val);
            var.atts.retain(|a| a.name != "_FillValue");
            let mut fill = crate::model::Att::new("_FillValue", val);
            fill.user_type = own_type;
            var.atts.push(fill);
        }
        Ok(())
    }

    /// `nc_set_fill`: returns the previous mode (true = NC_NOFILL).
    pub fn set_fill(&mut self, nofill: bool) -> Result<bool> {
        self.check_writable()?;
        Ok(std::mem::replace(&mut self.nofill_default, nofill))
    }

    /// `nc_rename_dim`.
    pub fn rename_dim(&mut self, d: DimId, name: &str) -> Result<()> {
        self.check_writable()?;
        names::check(name)?;
        let g = self.tree.dim(d).group;
        if self
            .tree
            .group(g)
            .dims
            .iter()
            .any(|x| *x != d && self.tree.dim(*x).name == name)
        {
            return Err(Error::NameInUse(name.to_string()));
        }
        let old = std::mem::replace(&mut self.tree.dims[d.0].name, name.to_string());
        self.after_rename()
            .inspect_err(|_| self.tree.dims[d.0].name = old)
    }

    /// `nc_rename_var`: in an existing dataset the variable's chunks move with it.
    pub fn rename_var(&mut self, g: GroupId, v: usize, name: &str) -> Result<()> {
        self.check_writable()?;
        names::check_node(name, self.layout.zarr_v3)?;
        self.var_name_free(g, name)?;
        if self.tree.classic_model
            && !self.define_mode
            && name.len() > self.tree.group(g).vars[v].name.len()
        {
            return Err(Error::NotInDefine);
        }
        // Its objects move when the metadata is next stored (at once outside define mode), so
        // that nc_abort leaves them where the stored metadata says they are.
        let old = std::mem::replace(&mut self.tree.var_mut(g, v).name, name.to_string());
        self.after_rename()
            .inspect_err(|_| self.tree.var_mut(g, v).name = old)
    }

    /// `nc_rename_grp`.
    pub fn rename_grp(&mut self, g: GroupId, name: &str) -> Result<()> {
        self.check_writable()?;
        let Some(parent) = self.tree.group(g).parent else {
            return Err(Error::RootGroup("renamed"));
        };
        names::check_node(name, self.layout.zarr_v3)?;
        self.name_free(parent, name)?;
        self.flush_chunks()?;
        let old = std::mem::replace(&mut self.tree.group_mut(g).name, name.to_string());
        self.after_rename()
            .inspect_err(|_| self.tree.group_mut(g).name = old)
    }

    /// Renames take effect on disk at once when not in define mode (a rename that cannot be
    /// stored is undone by its caller).
    fn after_rename(&mut self) -> Result<()> {
        if !self.define_mode {
            self.write_metadata()?;
        }
        Ok(())
    }
}

/// The most inner chunks a new shard may hold: its index then takes 64 MiB.
const MOST_INNER_CHUNKS: u64 = 1 << 22;

/// The largest shard a variable asked to be contiguous is made into: as large as the chunk
/// cache's default bound.
const MOST_ONE_SHARD_BYTES: u64 = 64 << 20;

/// The shape of one shard holding a whole variable of `shape` (no unlimited dimension) in
/// inner chunks of `inner`, elements of `esize` bytes: the shape rounded up to the inner
/// chunks; or why there can be none.
fn one_shard(
    shape: &[(u64, bool)],
    inner: &[u64],
    esize: usize,
) -> std::result::Result<Vec<u64>, String> {
    let rounded: Option<Vec<u64>> = shape
        .iter()
        .zip(inner)
        .map(|((len, _), i)| len.div_ceil(*i).checked_mul(*i))
        .collect();
    let rounded =
        rounded.ok_or_else(|| "a shard of the whole variable is too large".to_string())?;
    let bytes = rounded
        .iter()
        .try_fold(esize as u64, |n, c| n.checked_mul(*c));
    if bytes.is_none_or(|b| b > MOST_ONE_SHARD_BYTES) {
        return Err(format!(
            "one shard of the whole variable ({rounded:?}) would pass {} MiB: ask for chunks",
            MOST_ONE_SHARD_BYTES >> 20
        ));
    }
    check_inner_chunks(&rounded, inner)?;
    Ok(rounded)
}

/// Why inner chunks of `inner` cannot fill shards of `shards`, if they cannot.
fn check_inner_chunks(shards: &[u64], inner: &[u64]) -> std::result::Result<(), String> {
    if inner.len() != shards.len() {
        return Err(format!(
            "{} inner chunk sizes for {} dimensions",
            inner.len(),
            shards.len()
        ));
    }
    if inner.iter().zip(shards).any(|(i, s)| *i == 0 || s % i != 0) {
        return Err(format!(
            "inner chunks {inner:?} do not divide the chunks (shards) {shards:?}"
        ));
    }
    let count = shards
        .iter()
        .zip(inner)
        .try_fold(1u64, |n, (s, i)| n.checked_mul(s / i));
    if count.is_none_or(|n| n > MOST_INNER_CHUNKS) {
        return Err(format!(
            "shards {shards:?} would hold more than {MOST_INNER_CHUNKS} inner chunks of {inner:?}"
        ));
    }
    Ok(())
}
