//! netCDF's filter API on a dataset: `nc_def_var_filter`/`deflate`/`fletcher32`/`quantize`
//! and their inquiries. Filters are named by HDF5 filter id and parameters here; the codec
//! layer turns them into numcodecs configurations. Must not see C pointers.

use super::dataset::Dataset;
use crate::codec::quantize::Quantize;
use crate::codec::{self, hdf5_id};
use crate::error::{Error, Result};
use crate::model::tree::{
    QUANTIZE_BITGROOM, QUANTIZE_BITROUND, QUANTIZE_GRANULARBR, quantize_attribute,
};
use crate::model::{Att, Filter, GroupId, NcType, Storage, Values, Var};

impl Dataset {
    /// A variable ready for a filter definition (define mode entered as netCDF-4 does), or
    /// `None` when netCDF ignores filters on it (strings). A scalar has no chunks to filter:
    /// `NC_EINVAL`, as netCDF-4 files answer. Sequences of a variable-length type take
    /// compressors after their object codec (netCDF-4 files refuse every filter on them, Zarr
    /// compresses them as zarr-python does), but no shuffle, which their slots have no use of;
    /// as for strings, none is reported ([`Var::reported_filters`]).
    fn var_for_filter(&mut self, g: GroupId, v: usize, id: u32) -> Result<Option<&mut Var>> {
        let var = self.var_mut_for_definition(g, v)?;
        if var.is_scalar() {
            return Err(Error::Invalid(format!(
                "{}: a scalar variable has no chunks to filter",
                var.name
            )));
        }
        let sequences = var.vlen.is_some();
        if (var.ty == NcType::String && !sequences) || (sequences && id == hdf5_id::SHUFFLE) {
            return Ok(None);
        }
        Ok(Some(var))
    }

    /// `nc_def_var_filter` (and `nc_def_var_zstandard`/`blosc`, which netCDF defines by
    /// it): only in define mode, `NC_EINDEFINE` otherwise (read-only datasets too), as
    /// netCDF-4 files and netcdf-c's NCZarr answer; [`Self::add_filter`] then.
    pub fn def_var_filter(&mut self, g: GroupId, v: usize, id: u32, params: &[u32]) -> Result<()> {
        if !self.define_mode {
            return Err(Error::InDefine);
        }
        self.add_filter(g, v, id, params)
    }

    /// Appends the filter (or replaces the parameters of the same filter already in the
    /// chain). Shuffle always runs first.
    fn add_filter(&mut self, g: GroupId, v: usize, id: u32, params: &[u32]) -> Result<()> {
        self.check_definable(g, v)?;
        if !codec::hdf5_available(id) {
            return Err(Error::FilterUnavailable(id));
        }
        let zarr_v3 = self.layout.zarr_v3;
        let Some(var) = self.var_for_filter(g, v, id)? else {
            return Ok(());
        };
        let ctx = codec::Context {
            elem_size: var.stored_esize(),
        };
        let built = codec::from_hdf5(id, params, ctx)?;
        let config = match built.hdf5() {
            // Zarr v3 defines gzip and no zlib: the same compression, which every v3 reader has.
            Some((hdf5_id::DEFLATE, level)) if zarr_v3 => {
                let level = level.first().copied().unwrap_or(1);
                let gzip = [("id", "gzip".into()), ("level", level.into())];
                let gzip = gzip.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
                codec::from_config(&gzip, ctx)?.config()
            }
            _ => built.config(),
        };
        let filter = Filter {
            id,
            params: params.to_vec(),
            codec: config,
        };
        if let Some(existing) = var.filters.iter_mut().find(|f| f.id == id) {
            *existing = filter;
        } else if id == hdf5_id::SHUFFLE {
            var.filters.insert(0, filter);
        } else {
            var.filters.push(filter);
        }
        if var.storage != Storage::Chunked {
            var.storage = Storage::Chunked;
        }
        Ok(())
    }

    /// `nc_def_var_deflate`. Level 0 turns deflate off, as netCDF-4 does (a valid zlib level,
    /// but one that only adds overhead).
    pub fn def_var_deflate(
        &mut self,
        g: GroupId,
        v: usize,
        shuffle: bool,
        deflate: bool,
        level: i32,
    ) -> Result<()> {
        self.check_definable(g, v)?;
        if deflate && !(0..=9).contains(&level) {
            return Err(Error::Invalid(format!(
                "deflate level {level} is outside 0..=9"
            )));
        }
        if shuffle {
            self.add_filter(g, v, hdf5_id::SHUFFLE, &[])?;
        }
        let deflate = deflate && level != 0;
        if deflate {
            self.add_filter(g, v, hdf5_id::DEFLATE, &[level as u32])?;
        }
        if !shuffle && !deflate {
            self.var_mut_for_definition(g, v)?;
        }
        Ok(())
    }

    /// `nc_def_var_fletcher32`.
    pub fn def_var_fletcher32(&mut self, g: GroupId, v: usize, on: bool) -> Result<()> {
        if on {
            return self.add_filter(g, v, hdf5_id::FLETCHER32, &[]);
        }
        if let Some(var) = self.var_for_filter(g, v, hdf5_id::FLETCHER32)? {
            var.filters.retain(|f| f.id != hdf5_id::FLETCHER32);
        }
        Ok(())
    }

    /// `nc_def_var_quantize`: records the mode and writes the attribute netCDF records it
    /// with. Only float and double variables can be quantized.
    pub fn def_var_quantize(&mut self, g: GroupId, v: usize, mode: i32, nsd: i32) -> Result<()> {
        let var = self.var_mut_for_definition(g, v)?;
        if !matches!(
            mode,
            0 | QUANTIZE_BITGROOM | QUANTIZE_GRANULARBR | QUANTIZE_BITROUND
        ) {
            return Err(Error::Invalid(format!("quantize mode {mode}")));
        }
        if mode != 0 && !matches!(var.ty, NcType::Float | NcType::Double) {
            return Err(Error::Invalid(format!(
                "{} is {}; only float and double can be quantized",
                var.name,
                var.ty.name()
            )));
        }
        // A rejected request leaves the previous setting in place.
        let algorithm = match mode {
            QUANTIZE_BITGROOM | QUANTIZE_GRANULARBR | QUANTIZE_BITROUND => {
                let nsd_u = u32::try_from(nsd)
                    .map_err(|_| Error::Invalid(format!("quantize precision {nsd}")))?;
                Some(match mode {
                    QUANTIZE_BITGROOM => Quantize::BitGroom(nsd_u),
                    QUANTIZE_GRANULARBR => Quantize::GranularBitRound(nsd_u),
                    _ => Quantize::BitRound(nsd_u),
                })
            }
            _ => None,
        };
        if let Some(a) = algorithm {
            a.validate(var.ty == NcType::Double)?;
        }
        var.atts.retain(|a| {
            ![1, 2, 3]
                .iter()
                .any(|m| quantize_attribute(*m) == Some(a.name.as_str()))
        });
        var.quantize = if algorithm.is_some() {
            (mode, nsd)
        } else {
            (0, 0)
        };
        if let Some(name) = quantize_attribute(mode) {
            var.atts.push(Att::new(
                name,
                Values::fixed(NcType::Int, nsd.to_ne_bytes().to_vec()),
            ));
        }
        Ok(())
    }

    /// `nc_def_var_zstandard`: zstd at `level`, which netCDF takes from -131072 to 22.
    pub fn def_var_zstandard(&mut self, g: GroupId, v: usize, level: i32) -> Result<()> {
        if !(-131072..=22).contains(&level) {
            return Err(Error::Invalid(format!(
                "zstandard level {level} is outside -131072..=22"
            )));
        }
        self.def_var_filter(g, v, hdf5_id::ZSTD, &[level as u32])
    }

    /// `nc_inq_var_zstandard`: the level, when zstd is in the chain.
    pub fn var_zstandard(&self, g: GroupId, v: usize) -> Result<Option<i32>> {
        Ok(self
            .named_filter_params::<1>(g, v, hdf5_id::ZSTD)?
            .map(|[level]| level as i32))
    }

    /// `nc_def_var_blosc`: blosc with compressor code `compressor` (blosclz 0 to zstd 5),
    /// `level`, `blocksize` (0 lets blosc choose) and shuffle mode `shuffle` (none 0, bytes
    /// 1, bits 2), in the seven HDF5 parameters netCDF gives the filter.
    pub fn def_var_blosc(
        &mut self,
        g: GroupId,
        v: usize,
        compressor: u32,
        level: u32,
        blocksize: u32,
        shuffle: u32,
    ) -> Result<()> {
        if shuffle > 2 || compressor > 5 {
            return Err(Error::Invalid(format!(
                "blosc shuffle {shuffle} (0..=2) or compressor {compressor} (0..=5) is unknown"
            )));
        }
        let params = [0, 0, 0, blocksize, level, shuffle, compressor];
        self.def_var_filter(g, v, hdf5_id::BLOSC, &params)
    }

    /// `nc_inq_var_blosc`: `[compressor, level, blocksize, shuffle]`, when blosc is in the
    /// chain.
    pub fn var_blosc(&self, g: GroupId, v: usize) -> Result<Option<[u32; 4]>> {
        Ok(self
            .named_filter_params::<7>(g, v, hdf5_id::BLOSC)?
            .map(|p| [p[6], p[4], p[3], p[5]]))
    }

    /// The `N` parameters of filter `id`, `None` when the chain has no such filter; a filter
    /// of another number of parameters is `NC_EFILTER`, as netCDF answers.
    fn named_filter_params<const N: usize>(
        &self,
        g: GroupId,
        v: usize,
        id: u32,
    ) -> Result<Option<[u32; N]>> {
        match self.filter_info(g, v, id) {
            Ok(params) => params
                .try_into()
                .map(Some)
                .map_err(|p: Vec<u32>| Error::CodecConfig {
                    codec: format!("HDF5 filter {id}"),
                    why: format!("{} parameters where {N} were expected", p.len()),
                }),
            Err(Error::FilterNotInChain { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// `nc_inq_var_filter_ids`: the HDF5 ids of the chain, in order
    /// ([`Var::reported_filters`]).
    pub fn filter_ids(&self, g: GroupId, v: usize) -> Vec<u32> {
        self.tree.group(g).vars[v]
            .reported_filters()
            .iter()
            .map(|f| f.id)
            .collect()
    }

    /// `nc_inq_var_filter_info`: the parameters of one filter of the chain.
    pub fn filter_info(&self, g: GroupId, v: usize, id: u32) -> Result<Vec<u32>> {
        let var = &self.tree.group(g).vars[v];
        var.reported_filters()
            .into_iter()
            .find(|f| f.id == id)
            .map(|f| f.params.clone())
            .ok_or_else(|| Error::FilterNotInChain {
                var: var.name.clone(),
                id,
            })
    }
}

/// `nc_inq_filter_avail`: every built-in filter is available; others are `NoFilter`.
pub fn filter_avail(id: u32) -> Result<()> {
    if codec::hdf5_available(id) {
        Ok(())
    } else {
        Err(Error::FilterUnavailable(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_compressors_check_and_report_their_parameters() {
        let store = crate::zmap::memory::MemoryStore::default();
        let mut ds = Dataset::creating_over(Box::new(store));
        let g = crate::model::Tree::ROOT;
        let x = ds.def_dim(g, "x", 10, false).unwrap().0 as i32;
        let v = ds.def_var(g, "v", NcType::Int, &[x]).unwrap();
        let w = ds.def_var(g, "w", NcType::Int, &[x]).unwrap();
        assert!(ds.def_var_zstandard(g, v, 23).is_err());
        assert!(ds.def_var_zstandard(g, v, -131073).is_err());
        ds.def_var_zstandard(g, v, -7).unwrap();
        assert_eq!(ds.var_zstandard(g, v).unwrap(), Some(-7));
        assert_eq!(ds.var_zstandard(g, w).unwrap(), None);
        assert!(ds.def_var_blosc(g, w, 6, 5, 0, 1).is_err());
        assert!(ds.def_var_blosc(g, w, 1, 5, 0, 3).is_err());
        ds.def_var_blosc(g, w, 5, 9, 4096, 2).unwrap();
        assert_eq!(ds.var_blosc(g, w).unwrap(), Some([5, 9, 4096, 2]));
        assert_eq!(ds.var_blosc(g, v).unwrap(), None);
        assert_eq!(
            ds.filter_info(g, w, hdf5_id::BLOSC).unwrap(),
            [0, 0, 0, 4096, 9, 2, 5]
        );
    }

    #[test]
    fn avail_answers_for_each_id() {
        for id in [1, 2, 3, 307, 32001, 32015] {
            assert!(filter_avail(id).is_ok(), "{id}");
        }
        for id in [0, 4, 32004, 32017] {
            assert_eq!(
                filter_avail(id).unwrap_err().to_string(),
                format!("HDF5 filter {id} is not built in")
            );
        }
    }
}
