//! The crate's one error type.
//!
//! Every layer returns [`Error`]; each variant carries the context a user needs to understand
//! what went wrong (the key, the variable, the value). The mapping to netCDF status codes lives
//! in exactly one place, `ffi::status`, as an exhaustive match: this module knows nothing of
//! numeric codes.

use thiserror::Error as ThisError;

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong below the C boundary.
#[derive(Debug, ThisError)]
pub enum Error {
    // ---- identifiers --------------------------------------------------------------------
    /// No open dataset or group has this ncid.
    #[error("not a valid ncid: {0}")]
    BadId(i32),
    /// The ncid of a group where the dataset's own is needed (`nc_close`).
    #[error("{0} is the ncid of a group, not of a dataset")]
    BadGroupId(i32),
    /// The root group where another group is needed (`nc_rename_grp`).
    #[error("the root group cannot be {0}")]
    RootGroup(&'static str),
    /// No variable with this id or name.
    #[error("variable not found: {0}")]
    NotVar(String),
    /// No attribute with this name or number.
    #[error("attribute not found: {0}")]
    NotAtt(String),
    /// No dimension with this id or name.
    #[error("dimension not found: {0}")]
    BadDim(String),
    /// No group with this name.
    #[error("group not found: {0}")]
    NoGroup(String),
    /// A type id that is neither atomic nor defined.
    #[error("bad type id {0}")]
    BadType(i32),
    /// A compound type has no field of this number or name.
    #[error("compound field not found: {0}")]
    BadField(String),
    /// No user-defined type of the dataset has this id (`NC_EBADTYPID`, where netCDF asks for
    /// a type to change rather than a type of values).
    #[error("no user-defined type has id {0}")]
    BadTypeId(i32),
    /// A compound type a variable already uses cannot be given more fields.
    #[error("type already in use, its fields fixed: {0}")]
    TypeDefined(String),

    // ---- names and definitions ----------------------------------------------------------
    /// The name is already used by another object of the same group.
    #[error("name already in use: {0}")]
    NameInUse(String),
    /// The name breaks netCDF's naming rules.
    #[error("invalid name: {0:?}")]
    BadName(String),
    /// The name is longer than `NC_MAX_NAME` bytes.
    #[error("name longer than NC_MAX_NAME: {0:?}")]
    MaxName(String),
    /// Operation not allowed in define mode.
    #[error("operation not allowed in define mode")]
    InDefine,
    /// Operation needs define mode.
    #[error("operation needs define mode")]
    NotInDefine,
    /// The dataset was opened read-only.
    #[error("dataset is read-only")]
    ReadOnly,
    /// A dimension length that netCDF does not accept.
    #[error("invalid dimension size {0}")]
    DimSize(u64),
    /// Variable property set after its data was written or after enddef.
    #[error("variable property can no longer be changed: {0}")]
    LateDef(String),
    /// Fill value set after data was written.
    #[error("fill value can no longer be changed: {0}")]
    LateFill(String),
    /// Bad chunk sizes for a variable.
    #[error("bad chunk sizes for {var}: {why}")]
    BadChunk { var: String, why: String },
    /// A storage layout the variable cannot have (contiguous with an unlimited dimension or a
    /// filter): `NC_EINVAL`, as netCDF-4 answers.
    #[error("bad storage request: {0}")]
    Storage(String),
    /// A netCDF-4 feature this data model does not have (user-defined types).
    #[error("not supported by NCZarr: {0}")]
    NotNc4(String),
    /// A non-classic operation on a dataset created with `NC_CLASSIC_MODEL`.
    #[error("not allowed in classic model: {0}")]
    StrictNc3(String),
    /// The dataset is in a layout we read but do not write (older NCZarr generations).
    #[error("{0}")]
    ReadOnlyLayout(String),
    /// A second unlimited dimension in the classic model.
    #[error("the classic model allows one unlimited dimension")]
    SecondUnlimited,
    /// An argument that is wrong in a way no more specific code describes.
    #[error("invalid argument: {0}")]
    Invalid(String),
    /// Reserved attribute manipulated through the normal attribute API.
    #[error("reserved attribute: {0}")]
    AttMeta(String),

    // ---- data access --------------------------------------------------------------------
    /// `start` lies outside the variable.
    #[error("index exceeds dimension bound in {var}: start {start} > length {len}")]
    InvalidCoords { var: String, start: u64, len: u64 },
    /// `start + count` exceeds the variable's shape.
    #[error("start+count exceeds dimension bound in {var}")]
    Edge { var: String },
    /// Zero or negative stride.
    #[error("illegal stride {0}")]
    Stride(i64),
    /// A value could not be represented in the target type. The data were still converted.
    #[error("numeric conversion not representable")]
    Range,
    /// Conversion between text and numbers.
    #[error("attempt to convert between text and numbers")]
    Char,
    /// Mapped access (`nc_get_varm`, `nc_put_varm` with a map) to a variable of a user-defined
    /// type: netCDF serves it for atomic types only.
    #[error("mapped access is for variables of atomic types only")]
    MapType,
    /// A request too large for this address space.
    #[error("request too large: {0}")]
    TooLarge(String),

    // ---- codecs -------------------------------------------------------------------------
    /// The variable uses a codec that is not available.
    #[error("variable {var} uses unsupported codec {codec}")]
    NoFilter { var: String, codec: String },
    /// The variable's chain has no filter with this HDF5 id (an inquiry, not a failure).
    #[error("{var} has no HDF5 filter {id}")]
    FilterNotInChain { var: String, id: u32 },
    /// No filter with this HDF5 id is built in (an inquiry, not a failure).
    #[error("HDF5 filter {0} is not built in")]
    FilterUnavailable(u32),
    /// A codec configuration (numcodecs JSON or HDF5 parameters) that cannot be used.
    #[error("invalid {codec} configuration: {why}")]
    CodecConfig { codec: String, why: String },
    /// A codec failed to encode or decode.
    #[error("codec {codec} failed: {why}")]
    Filter { codec: String, why: String },
    /// A codec's output would pass the bound it was given: a damaged or hostile buffer, or a
    /// chunk of strings longer than its slots allow (see [`Error::StringSlots`]).
    #[error("codec {codec} failed: {why}")]
    PastLimit { codec: String, why: String },
    /// The strings of a chunk need decoded slots at least `width` bytes wide. The string
    /// data path widens the variable's slots and reads again; no caller ever sees it.
    #[error("a chunk holds strings that need slots of {width} bytes")]
    StringSlots { width: usize },

    // ---- storage and format -------------------------------------------------------------
    /// The location holds no dataset at all.
    #[error("no dataset at {0}")]
    NotFound(String),
    /// The location exists but is not a Zarr dataset.
    #[error("not a Zarr dataset: {0}")]
    NotZarr(String),
    /// `NC_NOCLOBBER` and something exists already.
    #[error("dataset already exists: {0}")]
    Exists(String),
    /// Metadata that cannot be understood.
    #[error("bad Zarr metadata in {key}: {why}")]
    Metadata { key: String, why: String },
    /// A feature of a Zarr array this library cannot serve (dtype, order, ...).
    #[error("unsupported Zarr feature in {var}: {why}")]
    Unsupported { var: String, why: String },
    /// A chunk object whose decoded size does not match the array.
    #[error("chunk {key} has {got} bytes, expected {expected}")]
    ChunkSize {
        key: String,
        got: usize,
        expected: usize,
    },
    /// An object larger than any object of the dataset can be, refused rather than read.
    #[error("{what} is larger than {limit} bytes, more than any object of this dataset can be")]
    ObjectTooLarge { what: String, limit: u64 },
    /// A store key that would be unsafe or illegal.
    #[error("invalid store key {key:?}: {why}")]
    BadKey { key: String, why: String },
    /// The URL cannot be understood.
    #[error("malformed URL {url:?}: {why}")]
    Url { url: String, why: String },
    /// A storage kind or feature not compiled into this build.
    #[error("not built: {0}")]
    NotBuilt(String),
    /// Operating-system I/O failed.
    #[error("I/O error on {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// Permission denied by the storage.
    #[error("access denied: {0}")]
    Access(String),
    /// Credentials were rejected.
    #[error("authorization failure: {0}")]
    Auth(String),
    /// A remote object store failed: unreachable, timed out, dropped the connection, or
    /// answered with an error that no more specific variant describes.
    #[error("object store {store}: {why}")]
    Remote { store: String, why: String },
    /// A web server failed: unreachable, timed out, dropped the connection, or answered with
    /// an error that no more specific variant describes.
    #[error("web server {store}: {why}")]
    Web { store: String, why: String },
    /// A store was asked for a listing its server cannot give (a web server without WebDAV
    /// or index pages of its directories).
    #[error(
        "{store} cannot be listed ({why}); over plain HTTP a dataset opens without listing \
         when it is NCZarr or has consolidated metadata"
    )]
    NoListing { store: String, why: String },
    /// A reference dataset's object could not be read from the target its reference names
    /// (the target is missing, shorter than the reference says, or unreadable).
    #[error("reference {key}: {why}")]
    Reference { key: String, why: String },
    /// Memory could not be allocated.
    #[error("out of memory")]
    NoMem,
    /// A bug in this library (including a caught panic).
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    /// Wraps an I/O error with the path it happened on.
    pub fn io(path: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// A metadata error in the object at `key`.
    pub fn metadata(key: impl Into<String>, why: impl Into<String>) -> Self {
        Error::Metadata {
            key: key.into(),
            why: why.into(),
        }
    }
}
