//! The in-memory netCDF-4 tree of one dataset: groups, dimensions, variables, attributes.
//!
//! Pure data with lookup helpers. It knows nothing of storage, JSON or C; the rules of the
//! netCDF API (define mode, name checks, error codes) live in `api`.

use super::types::NcType;
use super::user_types::TypeRef;
use super::values::Values;
use std::sync::Arc;

/// Index of a group in [`Tree::groups`]; equals the group part of an ncid (root = 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupId(pub usize);

/// Index of a dimension in [`Tree::dims`]; equals the netCDF dimid (unique per dataset).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DimId(pub usize);

/// A shared dimension.
#[derive(Debug, Clone, PartialEq)]
pub struct Dim {
    pub name: String,
    /// Current length (for an unlimited dimension: the largest extent written so far).
    pub len: u64,
    pub unlimited: bool,
    pub group: GroupId,
}

/// A named attribute.
#[derive(Debug, Clone, PartialEq)]
pub struct Att {
    pub name: String,
    pub values: Values,
    /// The enum or opaque type of the values (which are then of the enum's base type, or
    /// `ubyte`: the opaque values' bytes).
    pub user_type: Option<TypeRef>,
    /// The JSON the attribute was read from, when no type was recorded for it and its values
    /// would be written in another form (an object, a null, numbers of mixed kinds): written
    /// back as it was while its values are those read from it, so that changing another
    /// attribute leaves it as its writer (zarr-python, xarray) gave it.
    pub json: Option<serde_json::Value>,
}

impl Att {
    /// An attribute of `values`, of their own type.
    pub fn new(name: &str, values: Values) -> Att {
        Att {
            name: name.to_string(),
            values,
            user_type: None,
            json: None,
        }
    }

    /// The `_FillValue` attribute of a variable holding records, listed among its attributes
    /// where it was given: its value is the variable's fill (no attribute value holds a
    /// compound value), so it holds none here.
    pub fn compound_fill() -> Att {
        Att::new(
            "_FillValue",
            Values::Fixed {
                ty: NcType::UByte,
                bytes: Vec::new(),
            },
        )
    }
}

/// Byte order of a variable's stored data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endian {
    Little,
    Big,
}

impl Endian {
    /// The byte order of this machine.
    pub fn native() -> Endian {
        if cfg!(target_endian = "big") {
            Endian::Big
        } else {
            Endian::Little
        }
    }
}

/// The storage layout a user asked for. NCZarr stores everything chunked; contiguous and
/// compact variables are one chunk covering the whole variable, reported back as asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Storage {
    Chunked,
    Contiguous,
    Compact,
}

/// netCDF quantize modes (`NC_QUANTIZE_*`).
pub const QUANTIZE_BITGROOM: i32 = 1;
pub const QUANTIZE_GRANULARBR: i32 = 2;
pub const QUANTIZE_BITROUND: i32 = 3;

/// The attribute that records each quantize mode, as netCDF names it.
pub fn quantize_attribute(mode: i32) -> Option<&'static str> {
    match mode {
        QUANTIZE_BITGROOM => Some("_QuantizeBitGroomNumberOfSignificantDigits"),
        QUANTIZE_GRANULARBR => Some("_QuantizeGranularBitRoundNumberOfSignificantDigits"),
        QUANTIZE_BITROUND => Some("_QuantizeBitRoundNumberOfSignificantBits"),
        _ => None,
    }
}

/// One filter in a variable's chain, as netCDF names it (HDF5 filter id + parameters),
/// with the numcodecs JSON it is stored as.
#[derive(Debug, Clone, PartialEq)]
pub struct Filter {
    /// HDF5 filter id, or 0 when the codec has no HDF5 equivalent.
    pub id: u32,
    pub params: Vec<u32>,
    /// The numcodecs configuration (`{"id": ..., ...}`).
    pub codec: serde_json::Map<String, serde_json::Value>,
}

impl Filter {
    /// The filter of a codec configuration, its HDF5 id and parameters found by building the
    /// codec (0 and none when HDF5 has no such filter); the error when the codec cannot be
    /// built.
    pub fn of_codec(
        codec: serde_json::Map<String, serde_json::Value>,
        ctx: crate::codec::Context,
    ) -> (Filter, Option<crate::error::Error>) {
        let (hdf5, error) = match crate::codec::from_config(&codec, ctx) {
            Ok(built) => (built.hdf5(), None),
            Err(e) => (None, Some(e)),
        };
        let (id, params) = hdf5.unwrap_or_default();
        (Filter { id, params, codec }, error)
    }

    /// The numcodecs id of the codec (`?` when its configuration has none).
    pub fn codec_id(&self) -> &str {
        self.codec
            .get("id")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("?")
    }
}

/// Chunk cache settings of one variable (`nc_set_var_chunk_cache`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CacheSettings {
    pub size: usize,
    pub nelems: usize,
    pub preemption: f32,
}

impl Default for CacheSettings {
    fn default() -> Self {
        CacheSettings {
            size: 64 << 20,
            nelems: 1000,
            preemption: 0.75,
        }
    }
}

/// How a variable's NC_STRING values are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StringStorage {
    /// Fixed-width byte strings, NUL padded (`|S<n>`).
    Bytes,
    /// Fixed-width numpy unicode (`<U<n>`): `maxstrlen / 4` UTF-32 code points.
    Ucs4,
    /// numpy objects (`|O`) stored by a variable-length codec (`vlen-utf8`, `vlen-bytes`):
    /// chunks decode to slots `maxstrlen` wide, which widen to fit what they must hold.
    Objects,
}

/// A variable and everything needed to address its chunks.
#[derive(Debug, Clone, PartialEq)]
pub struct Var {
    pub name: String,
    pub ty: NcType,
    pub dims: Vec<DimId>,
    /// User-visible attributes in creation order (includes `_FillValue` when set).
    pub atts: Vec<Att>,
    /// Chunk shape, one entry per dimension (empty for scalars); a Zarr v3 shard's shape when
    /// the array is sharded.
    pub chunks: Vec<u64>,
    /// A new Zarr v3 array stored in shards of [`Var::chunks`]: the shape of the chunks
    /// inside each shard (`_InnerChunkSizes`), which [`Var::filters`] code. Empty for an array
    /// not sharded, and for one read from a store, whose sharding is a codec of `filters`.
    pub inner_chunks: Vec<u64>,
    /// The chunk shape was asked for (`nc_def_var_chunking`), not chosen by netCDF.
    pub chunks_asked: bool,
    pub storage: Storage,
    /// `NC_NOFILL` for this variable.
    pub no_fill: bool,
    pub endian: Endian,
    pub filters: Vec<Filter>,
    /// `.` or `/` between chunk indices in chunk keys.
    pub dimension_separator: char,
    /// Chunk keys are Zarr v3's default: `c`, then each index after the separator (`c` alone
    /// for a scalar).
    pub v3_chunk_keys: bool,
    /// Stored as a Zarr v3 array: its `fill_value` ([`Var::stored_fill`]), not the
    /// `_FillValue` attribute, is what was never written, as zarr-python reads it.
    pub zarr_v3: bool,
    /// For NC_STRING: the width of one string in decoded chunks, in bytes (`|S<n>`: n, `<U<n>`:
    /// 4n; for variable-length strings it grows to fit the longest string read or written).
    pub maxstrlen: usize,
    /// How NC_STRING values are stored.
    pub strings: StringStorage,
    /// Quantize mode and digits (`nc_def_var_quantize`); mode 0 = none.
    pub quantize: (i32, i32),
    pub cache: CacheSettings,
    /// Store path (relative to the dataset root, no leading `/`) of the array as it is on
    /// disk now; `None` until its metadata is first written.
    pub stored_path: Option<String>,
    /// Set once any data has been written, and for every variable read from a store (some
    /// properties, such as the string width, are then frozen).
    pub data_written: bool,
    /// Why this variable's data cannot be read, when its metadata uses a feature we do not
    /// serve; the variable is still listed and inquirable.
    pub unreadable: Option<String>,
    /// The names an array stored for dimensions it is read on anonymous ones for, its group
    /// giving the name to a dimension of another length (one entry per dimension, `None`
    /// elsewhere): the names are written back with it.
    pub clashing_dim_names: Vec<Option<String>>,
    /// The stored array is in Fortran order (`order: "F"`).
    pub fortran_order: bool,
    /// The variable is a netCDF scalar stored as shape `[1]`.
    pub scalar_as_1d: bool,
    /// The array stores 16-bit floats (numpy `f2`, Zarr v3 `float16`) in this byte order:
    /// the variable is NC_FLOAT, [`Var::endian`] native, and its codecs see 2-byte elements.
    pub half_floats: Option<Endian>,
    /// Fill value recorded in the array metadata when no `_FillValue` attribute gives one
    /// (native-endian bytes of `ty`; for strings the fill text).
    pub stored_fill: Option<Vec<u8>>,
    /// numpy complex numbers: each stored element is a pair (real, imaginary) of `ty`, served
    /// as a last dimension of 2 ([`COMPLEX_DIMENSION`]) that chunk keys leave out.
    pub complex: bool,
    /// The `zarr.json` a Zarr v3 array was read from: kept as it is (codecs, extensions and
    /// all) when its metadata is written again, but for what the model changes.
    pub v3_stored: Option<StoredObject>,
    /// The array stores numpy structured records, served as values of a compound type:
    /// [`Var::ty`] is then only a stand-in (`ubyte`), and [`Var::endian`] native.
    pub record: Option<super::records::VarRecord>,
    /// The enum type of the values, which are stored as its base type ([`Var::ty`]).
    pub enum_type: Option<TypeRef>,
    /// The values are of a variable-length type, stored as numpy objects by numcodecs'
    /// `vlen-array`: [`Var::ty`] is then only a stand-in (`string`, its values' bytes held
    /// as [`StringStorage::Objects`] are), and [`Var::endian`] native.
    pub vlen: Option<VarVlen>,
}

/// The variable-length type of a variable's values.
#[derive(Debug, Clone, PartialEq)]
pub struct VarVlen {
    /// The type of the values of each sequence (the dtype of numcodecs' `vlen-array`).
    pub base: NcType,
    /// The type, listed; before the dataset's types are listed, the full name of the one its
    /// metadata declares, if any (else the type is named after the variable).
    pub type_ref: Option<TypeRef>,
}

/// The enum type a dataset's metadata names for values of type `base`, by id when it is
/// listed as an enum type of that base; else none (the values are of their base type).
fn resolve_enum(
    r: &mut Option<TypeRef>,
    base: NcType,
    listed: &std::collections::HashMap<String, i32>,
    types: &super::user_types::UserTypes,
) {
    resolve(r, listed, |id| {
        types.enumeration(id).is_ok_and(|e| e.base == base)
    });
}

/// The user-defined type a dataset's metadata names for the values of an attribute: an enum
/// type of their type, or an opaque type whose values their bytes make whole; else none (the
/// values are of their own type).
fn resolve_att_type(
    att: &mut Att,
    listed: &std::collections::HashMap<String, i32>,
    types: &super::user_types::UserTypes,
) {
    let values = &att.values;
    let sequences = matches!(values, Values::Vlens { .. });
    resolve(&mut att.user_type, listed, |id| match types.get(id) {
        Some(t) if t.is_opaque() => {
            !sequences && values.ty() == NcType::UByte && values.len().is_multiple_of(t.size.max(1))
        }
        Some(t) if let Some(base) = t.vlen_base() => {
            matches!(values, Values::Vlens { base: b, .. } if *b == base)
        }
        _ => !sequences && types.enumeration(id).is_ok_and(|e| e.base == values.ty()),
    });
}

/// Replaces a type named by its full name with its id when it is listed and `fits` it;
/// else none.
fn resolve(
    r: &mut Option<TypeRef>,
    listed: &std::collections::HashMap<String, i32>,
    fits: impl Fn(i32) -> bool,
) {
    let id = match r.as_ref() {
        Some(TypeRef::Named(full)) => listed.get(full).copied(),
        Some(TypeRef::Listed(id)) => Some(*id),
        None => None,
    };
    *r = id.filter(|id| fits(*id)).map(TypeRef::Listed);
}

/// A metadata object as a store held it (JSON), kept to be written back with changes.
pub type StoredObject = std::sync::Arc<serde_json::Map<String, serde_json::Value>>;

/// The dimension of a complex variable's two parts: the name of the nc-complex convention,
/// which netCDF4-python reads as complex numbers (`auto_complex=True`).
pub const COMPLEX_DIMENSION: &str = "_pfnc_complex";

impl Var {
    /// A new variable with netCDF defaults; chunking is decided later.
    pub fn new(name: &str, ty: NcType, dims: Vec<DimId>) -> Var {
        Var {
            name: name.to_string(),
            ty,
            dims,
            atts: Vec::new(),
            chunks: Vec::new(),
            inner_chunks: Vec::new(),
            chunks_asked: false,
            storage: Storage::Chunked,
            no_fill: false,
            endian: Endian::native(),
            filters: Vec::new(),
            dimension_separator: '.',
            v3_chunk_keys: false,
            zarr_v3: false,
            maxstrlen: 128,
            strings: StringStorage::Bytes,
            quantize: (0, 0),
            cache: CacheSettings::default(),
            stored_path: None,
            data_written: false,
            unreadable: None,
            clashing_dim_names: Vec::new(),
            fortran_order: false,
            scalar_as_1d: false,
            half_floats: None,
            stored_fill: None,
            complex: false,
            v3_stored: None,
            record: None,
            enum_type: None,
            vlen: None,
        }
    }

    /// Element size of the values as the codecs see them (for strings, [`Var::string_slot`]
    /// of the width; 2 for 16-bit floats).
    pub fn stored_esize(&self) -> usize {
        if let Some(r) = &self.record {
            r.plan.stored_size
        } else if self.half_floats.is_some() {
            2
        } else {
            self.decoded_esize()
        }
    }

    /// Element size of the decoded values, as read and written (for strings,
    /// [`Var::string_slot`] of the width).
    pub fn decoded_esize(&self) -> usize {
        if let Some(r) = &self.record {
            r.plan.memory_size
        } else if self.ty == NcType::String {
            self.string_slot(self.maxstrlen)
        } else {
            self.ty.size()
        }
    }

    /// The fill of a variable of sequences: its `_FillValue` when that is one sequence of its
    /// base's values, else the fill its metadata kept (a deleted `_FillValue`'s); `None` for
    /// the empty sequence, and for a variable of another type.
    pub fn vlen_fill(&self) -> Option<Vec<u8>> {
        let base = self.vlen.as_ref()?.base;
        let whole = |item: &Vec<u8>| item.len().is_multiple_of(base.size());
        match self.att("_FillValue").map(|a| &a.values) {
            Some(Values::Vlens { base: b, items }) if *b == base && items.len() == 1 => {
                items.first().filter(|i| whole(i)).cloned()
            }
            _ => self.stored_fill.clone().filter(whole),
        }
    }

    /// Whether the variable is stored (its metadata written, or values of it): its definition
    /// (type, shape, chunks, filters, fill) can no longer change.
    pub fn is_stored(&self) -> bool {
        self.data_written || self.stored_path.is_some()
    }

    /// Makes room for `fill`, a `_FillValue` given to this variable before any of it is stored:
    /// the slots of strings and sequences widen to hold it whole (numpy unicode: 4 bytes a
    /// character), and a fill a deleted `_FillValue` left is replaced.
    pub fn take_new_fill(&mut self, fill: &Values) {
        let width = match fill {
            Values::Vlens { items, .. } => items.iter().map(Vec::len).max(),
            Values::Strings(s) if self.ty == NcType::String => s
                .iter()
                .map(|text| match self.strings {
                    StringStorage::Ucs4 => 4 * String::from_utf8_lossy(text).chars().count(),
                    _ => text.len(),
                })
                .max(),
            _ => None,
        };
        self.maxstrlen = self.maxstrlen.max(width.unwrap_or(0));
        self.stored_fill = None;
    }

    /// What is left of the fill once the `_FillValue` attribute is gone: `kept` (none: the
    /// type's default). A compound variable's fill is its stored one either way.
    pub fn keep_fill(&mut self, kept: Option<Vec<u8>>) {
        if self.record.is_none() {
            self.stored_fill = kept;
        }
    }

    /// The byte order of the stored values.
    pub fn stored_endian(&self) -> Endian {
        self.half_floats.unwrap_or(self.endian)
    }

    /// Bytes of one decoded string `width` bytes wide: the width itself, but for a string
    /// stored as an object, whose slot also records its length
    /// ([`crate::codec::slot_item`]).
    pub fn string_slot(&self, width: usize) -> usize {
        match self.strings {
            StringStorage::Objects => crate::codec::OBJECT_SLOT_HEADER.saturating_add(width),
            StringStorage::Bytes | StringStorage::Ucs4 => width.max(1),
        }
    }

    /// The quantization applied to this variable's values when written, if any.
    pub fn quantize_algorithm(&self) -> Option<crate::codec::quantize::Quantize> {
        use crate::codec::quantize::Quantize;
        let nsd = u32::try_from(self.quantize.1).ok()?;
        match self.quantize.0 {
            QUANTIZE_BITGROOM => Some(Quantize::BitGroom(nsd)),
            QUANTIZE_GRANULARBR => Some(Quantize::GranularBitRound(nsd)),
            QUANTIZE_BITROUND => Some(Quantize::BitRound(nsd)),
            _ => None,
        }
    }

    /// The filters the netCDF API reports (`nc_inq_var_filter_ids`, `nc_inq_var_deflate`):
    /// those HDF5 has an id for, and none on strings, as netCDF allows no filter on a
    /// variable-length type (a copy asking for the same filters would be refused). Of an
    /// array stored in Zarr v3 shards, those of its inner chunks, which code its values. All
    /// of a chain still shows in `_Codecs`.
    pub fn reported_filters(&self) -> Vec<Filter> {
        if self.ty == NcType::String {
            return Vec::new();
        }
        let chain = match self.filters.as_slice() {
            [shards] if shards.codec_id() == crate::codec::SHARDING => self.inner_filters(shards),
            all => all.to_vec(),
        };
        chain.into_iter().filter(|f| f.id != 0).collect()
    }

    /// The codecs of the inner chunks of shards read from a store, as filters.
    fn inner_filters(&self, shards: &Filter) -> Vec<Filter> {
        let ctx = crate::codec::Context {
            elem_size: self.stored_esize(),
        };
        let list = shards
            .codec
            .get("codecs")
            .and_then(serde_json::Value::as_array);
        list.into_iter()
            .flatten()
            .filter_map(serde_json::Value::as_object)
            .map(|codec| Filter::of_codec(codec.clone(), ctx).0)
            .collect()
    }

    /// The codec configurations of the variable's chunks, first applied first: its filters',
    /// inside one of shards for a new sharded array (as the array reads once stored).
    pub fn codec_configs(&self) -> Vec<serde_json::Map<String, serde_json::Value>> {
        let configs = self.filters.iter().map(|f| f.codec.clone()).collect();
        if self.inner_chunks.is_empty() {
            return configs;
        }
        let shards = crate::codec::new_sharding_config(&self.chunks, &self.inner_chunks, configs);
        vec![shards]
    }

    /// The shape of the chunks inside each shard, in the order of the variable's dimensions,
    /// when the array is stored in Zarr v3 shards (defined here, or read).
    pub fn inner_chunk_sizes(&self) -> Option<Vec<u64>> {
        if !self.inner_chunks.is_empty() {
            return Some(self.inner_chunks.clone());
        }
        let shards = self
            .filters
            .iter()
            .find(|f| f.codec_id() == crate::codec::SHARDING)?;
        let mut sizes: Vec<u64> = shards
            .codec
            .get("chunk_shape")?
            .as_array()?
            .iter()
            .map(serde_json::Value::as_u64)
            .collect::<Option<_>>()?;
        if self.fortran_order {
            // Stated for the array as transposed.
            sizes.reverse();
        }
        (sizes.len() == self.dims.len()).then_some(sizes)
    }

    /// The attribute with this name.
    pub fn att(&self, name: &str) -> Option<&Att> {
        self.atts.iter().find(|a| a.name == name)
    }

    /// True for a scalar (zero dimensions).
    pub fn is_scalar(&self) -> bool {
        self.dims.is_empty()
    }
}

/// A group: its own dimensions, variables (varid = index), attributes and child groups.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub name: String,
    pub parent: Option<GroupId>,
    pub children: Vec<GroupId>,
    pub dims: Vec<DimId>,
    pub vars: Vec<Arc<Var>>,
    pub atts: Vec<Att>,
    /// The `zarr.json` a Zarr v3 group was read from ([`Var::v3_stored`]).
    pub v3_stored: Option<StoredObject>,
}

impl Group {
    /// An empty group.
    pub fn new(name: &str, parent: Option<GroupId>) -> Group {
        Group {
            name: name.to_string(),
            parent,
            children: Vec::new(),
            dims: Vec::new(),
            vars: Vec::new(),
            atts: Vec::new(),
            v3_stored: None,
        }
    }

    /// Index (varid) of the variable with this name.
    pub fn var_index(&self, name: &str) -> Option<usize> {
        self.vars.iter().position(|v| v.name == name)
    }
}

/// The whole dataset tree. Group 0 is the root.
#[derive(Debug, Clone, PartialEq)]
pub struct Tree {
    pub groups: Vec<Group>,
    pub dims: Vec<Dim>,
    /// The user-defined types: those the dataset declares and the compound types of
    /// variables holding records ([`Tree::list_record_types`]), and those the program defines.
    pub types: super::user_types::UserTypes,
    /// The types the dataset's metadata declares, as read, until they are listed.
    pub declared_types: Vec<super::user_types::DeclaredType>,
    /// The netCDF-4 classic model is in force (`NC_CLASSIC_MODEL`): no groups, user-defined
    /// types or types outside the classic six, one unlimited dimension.
    pub classic_model: bool,
}

impl Default for Tree {
    fn default() -> Self {
        Tree::new()
    }
}

impl Tree {
    /// A tree holding only an empty root group.
    pub fn new() -> Tree {
        Tree {
            groups: vec![Group::new("/", None)],
            dims: Vec::new(),
            types: super::user_types::UserTypes::default(),
            declared_types: Vec::new(),
            classic_model: false,
        }
    }

    /// Lists the types the dataset declares (groups in preorder), then gives every variable
    /// holding records its type: the one declared for it, when its records fit it, else a
    /// type of its own in its group, named after it (variables in order); then gives every
    /// variable and attribute whose values the metadata says are of an enum type that type,
    /// when it is listed with their base (else they are of their base type). A declared type
    /// that breaks a rule of a definition is not listed; a record whose type cannot be listed
    /// leaves its variable unreadable.
    pub fn list_record_types(&mut self) {
        let mut types = super::user_types::UserTypes::default();
        let mut declared = std::mem::take(&mut self.declared_types);
        // Groups in preorder, each group's types in the order given.
        let order: std::collections::HashMap<GroupId, usize> = self
            .groups_preorder()
            .into_iter()
            .enumerate()
            .map(|(i, g)| (g, i))
            .collect();
        declared.sort_by_key(|d| order.get(&d.group).copied().unwrap_or(usize::MAX));
        let full_names: Vec<String> = declared
            .iter()
            .map(|d| self.qualified(d.group, &d.name))
            .collect();
        // A type not listed leaves its variables types of their own.
        let listed = types.declare_all(&declared, &full_names);
        for g in self.groups_preorder() {
            let group = &self.groups[g.0];
            let names_in_use: std::collections::HashSet<&str> = group
                .vars
                .iter()
                .map(|v| v.name.as_str())
                .chain(
                    group
                        .children
                        .iter()
                        .map(|c| self.groups[c.0].name.as_str()),
                )
                .chain(group.dims.iter().map(|d| self.dims[d.0].name.as_str()))
                .collect();
            let taken = |name: &str| names_in_use.contains(name);
            let vlens: Vec<Option<crate::error::Result<i32>>> = group
                .vars
                .iter()
                .map(|var| {
                    let vlen = var.vlen.as_ref()?;
                    let declared = match &vlen.type_ref {
                        Some(TypeRef::Named(full)) => listed.get(full).copied(),
                        Some(TypeRef::Listed(id)) => Some(*id),
                        None => None,
                    };
                    let fits =
                        |id: &i32| types.get(*id).and_then(|t| t.vlen_base()) == Some(vlen.base);
                    Some(match declared.filter(fits) {
                        Some(id) => Ok(id),
                        None => types.add_vlen(vlen.base, g, &var.name, &taken),
                    })
                })
                .collect();
            let listed: Vec<_> = group
                .vars
                .iter()
                .map(|var| {
                    let r = var.record.as_ref()?;
                    let fitted = r.declared_type.as_deref().and_then(|full| {
                        let id = *listed.get(full)?;
                        let record = types.fit(id, &r.record)?;
                        let mut fitted = super::records::VarRecord::new(record).ok()?;
                        fitted.type_id = id;
                        fitted.stored_dtype = r.stored_dtype.clone();
                        fitted.declared_type = r.declared_type.clone();
                        Some(fitted)
                    });
                    Some(match fitted {
                        Some(fitted) => {
                            // The fill, read in the layout of the type the record would have
                            // had, in its declared type's.
                            match var.stored_fill.as_ref().map(|f| r.relaid(f, &fitted)) {
                                Some(None) => Err(crate::error::Error::Unsupported {
                                    var: var.name.clone(),
                                    why: "its fill value does not fit its type".into(),
                                }),
                                fill => Ok((fitted, fill.flatten())),
                            }
                        }
                        None => types.add(&r.record, g, &var.name, &taken).map(|id| {
                            let mut own = r.clone();
                            own.type_id = id;
                            (own, None)
                        }),
                    })
                })
                .collect();
            let vars = self.groups[g.0].vars.iter_mut().map(Arc::make_mut);
            for (var, listed) in vars.zip(vlens) {
                match (listed, var.vlen.as_mut()) {
                    (Some(Ok(id)), Some(vlen)) => vlen.type_ref = Some(TypeRef::Listed(id)),
                    (Some(Err(e)), _) => {
                        var.unreadable.get_or_insert_with(|| e.to_string());
                    }
                    _ => {}
                }
            }
            let vars = self.groups[g.0].vars.iter_mut().map(Arc::make_mut);
            for (var, listed) in vars.zip(listed) {
                match listed {
                    Some(Ok((r, fill))) => {
                        var.record = Some(r);
                        if fill.is_some() {
                            var.stored_fill = fill;
                        }
                    }
                    Some(Err(e)) => {
                        var.unreadable.get_or_insert_with(|| e.to_string());
                        var.record = None;
                        // Its fill was listed as a compound value, which no type serves now.
                        var.atts.retain(|a| *a != Att::compound_fill());
                    }
                    None => {}
                }
            }
        }
        for group in &mut self.groups {
            for att in &mut group.atts {
                resolve_att_type(att, &listed, &types);
            }
            for var in group.vars.iter_mut().map(Arc::make_mut) {
                if var.record.is_some() {
                    // Records are of a compound type.
                    var.enum_type = None;
                } else {
                    resolve_enum(&mut var.enum_type, var.ty, &listed, &types);
                }
                for att in &mut var.atts {
                    if att.name == "_FillValue" {
                        // A fill is of its variable's type (stored as the array's).
                        att.user_type = match &var.vlen {
                            Some(vlen) => vlen.type_ref.clone().filter(|_| {
                                matches!(att.values, Values::Vlens { base, .. } if base == vlen.base)
                            }),
                            None => var.enum_type.clone().filter(|_| {
                                !matches!(att.values, Values::Vlens { .. })
                                    && att.values.ty() == var.ty
                            }),
                        };
                    } else {
                        resolve_att_type(att, &listed, &types);
                    }
                }
            }
        }
        // Sequences whose declared type is not listed get one of their own, named after them,
        // as variables do (their values are handed out as `nc_vlen_t`s of that type only).
        let names_in_use: Vec<std::collections::HashSet<String>> = self
            .groups
            .iter()
            .map(|group| {
                let vars = group.vars.iter().map(|v| v.name.clone());
                let children = group.children.iter().map(|c| self.groups[c.0].name.clone());
                let dims = group.dims.iter().map(|d| self.dims[d.0].name.clone());
                vars.chain(children).chain(dims).collect()
            })
            .collect();
        for (g, group) in self.groups.iter_mut().enumerate() {
            let taken = |name: &str| names_in_use[g].contains(name);
            let atts = group.atts.iter_mut().chain(
                group
                    .vars
                    .iter_mut()
                    .flat_map(|v| Arc::make_mut(v).atts.iter_mut()),
            );
            for att in atts {
                if let Values::Vlens { base, .. } = att.values
                    && att.user_type.is_none()
                {
                    att.user_type = types
                        .add_vlen(base, GroupId(g), &att.name, &taken)
                        .ok()
                        .map(TypeRef::Listed);
                }
            }
        }
        self.types = types;
    }

    /// The full name of user-defined type `id` (`/name` in the root, `/g/h/name` below).
    pub fn type_full_name(&self, id: i32) -> Option<String> {
        let t = self.types.get(id)?;
        Some(self.qualified(t.group, &t.name))
    }

    /// The root group's id.
    pub const ROOT: GroupId = GroupId(0);

    /// The group with this id (panics on a foreign id: ids are validated at the API edge).
    pub fn group(&self, g: GroupId) -> &Group {
        &self.groups[g.0]
    }

    /// Mutable access to a group.
    pub fn group_mut(&mut self, g: GroupId) -> &mut Group {
        &mut self.groups[g.0]
    }

    /// Mutable access to variable `v` of group `g`. Variables are shared with the copies of
    /// the tree kept for later (`nc_abort`'s, the metadata memo's); one shared is copied
    /// first, so the copies keep what they saw and an unchanged variable stays the very one
    /// they hold.
    pub fn var_mut(&mut self, g: GroupId, v: usize) -> &mut Var {
        Arc::make_mut(&mut self.groups[g.0].vars[v])
    }

    /// The dimension with this id.
    pub fn dim(&self, d: DimId) -> &Dim {
        &self.dims[d.0]
    }

    /// Adds a child group and returns its id.
    pub fn add_group(&mut self, parent: GroupId, name: &str) -> GroupId {
        let id = GroupId(self.groups.len());
        self.groups.push(Group::new(name, Some(parent)));
        self.groups[parent.0].children.push(id);
        id
    }

    /// Adds a dimension to a group and returns its id.
    pub fn add_dim(&mut self, group: GroupId, name: &str, len: u64, unlimited: bool) -> DimId {
        let id = DimId(self.dims.len());
        self.dims.push(Dim {
            name: name.to_string(),
            len,
            unlimited,
            group,
        });
        self.groups[group.0].dims.push(id);
        id
    }

    /// The child of `parent` with this name.
    pub fn child_named(&self, parent: GroupId, name: &str) -> Option<GroupId> {
        self.group(parent)
            .children
            .iter()
            .copied()
            .find(|c| self.group(*c).name == name)
    }

    /// The dimension of this name visible from `group`: its own, else its ancestors'.
    pub fn find_dim_in_scope(&self, group: GroupId, name: &str) -> Option<DimId> {
        let mut g = Some(group);
        while let Some(gid) = g {
            let grp = self.group(gid);
            if let Some(d) = grp.dims.iter().copied().find(|d| self.dim(*d).name == name) {
                return Some(d);
            }
            g = grp.parent;
        }
        None
    }

    /// Store path of a group relative to the dataset root ("" for the root, "a/b" below).
    pub fn group_path(&self, g: GroupId) -> String {
        let mut parts = Vec::new();
        let mut cur = Some(g);
        while let Some(id) = cur {
            let grp = self.group(id);
            if grp.parent.is_some() {
                parts.push(grp.name.as_str());
            }
            cur = grp.parent;
        }
        parts.reverse();
        parts.join("/")
    }

    /// Full netCDF name of a group ("/" for the root, "/a/b" below).
    pub fn group_full_name(&self, g: GroupId) -> String {
        format!("/{}", self.group_path(g))
    }

    /// Fully qualified name of a dimension ("/g/x").
    pub fn dim_fqn(&self, d: DimId) -> String {
        let dim = self.dim(d);
        self.qualified(dim.group, &dim.name)
    }

    /// The full name of object `name` of group `g` ("/x" in the root, "/g/x" below).
    pub fn qualified(&self, g: GroupId, name: &str) -> String {
        let gp = self.group_path(g);
        if gp.is_empty() {
            format!("/{name}")
        } else {
            format!("/{gp}/{name}")
        }
    }

    /// Current shape of a variable (scalar: empty).
    pub fn var_shape(&self, var: &Var) -> Vec<u64> {
        var.dims.iter().map(|d| self.dim(*d).len).collect()
    }

    /// Depth-first list of all group ids, parents before children.
    pub fn groups_preorder(&self) -> Vec<GroupId> {
        let mut out = Vec::with_capacity(self.groups.len());
        let mut stack = vec![Tree::ROOT];
        while let Some(g) = stack.pop() {
            out.push(g);
            for c in self.group(g).children.iter().rev() {
                stack.push(*c);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_scopes() {
        let mut t = Tree::new();
        let x = t.add_dim(Tree::ROOT, "x", 4, false);
        let g1 = t.add_group(Tree::ROOT, "g1");
        let g2 = t.add_group(g1, "g2");
        let y = t.add_dim(g1, "y", 2, false);
        assert_eq!(t.group_path(g2), "g1/g2");
        assert_eq!(t.group_full_name(Tree::ROOT), "/");
        assert_eq!(t.group_full_name(g2), "/g1/g2");
        assert_eq!(t.dim_fqn(y), "/g1/y");
        assert_eq!(t.dim_fqn(x), "/x");
        assert_eq!(t.find_dim_in_scope(g2, "x"), Some(x));
        assert_eq!(t.find_dim_in_scope(g2, "y"), Some(y));
        assert_eq!(t.find_dim_in_scope(Tree::ROOT, "y"), None);
        assert_eq!(t.groups_preorder(), vec![Tree::ROOT, g1, g2]);
    }
}
