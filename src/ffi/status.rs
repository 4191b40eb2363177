//! The one mapping from [`Error`] to netCDF status codes, and error reporting.

use super::codes::*;
use crate::error::Error;
use std::os::raw::c_int;

/// The netCDF code for an error. Exhaustive on purpose: a new variant must choose its code.
pub fn code(e: &Error) -> c_int {
    match e {
        Error::BadId(_) => NC_EBADID,
        Error::BadGroupId(_) | Error::RootGroup(_) => NC_EBADGRPID,
        Error::NotVar(_) => NC_ENOTVAR,
        Error::NotAtt(_) => NC_ENOTATT,
        Error::BadDim(_) => NC_EBADDIM,
        Error::NoGroup(_) => NC_ENOGRP,
        Error::BadType(_) => NC_EBADTYPE,
        Error::BadField(_) => NC_EBADFIELD,
        Error::TypeDefined(_) => NC_ETYPDEFINED,
        Error::BadTypeId(_) => NC_EBADTYPID,
        Error::NameInUse(_) => NC_ENAMEINUSE,
        Error::BadName(_) => NC_EBADNAME,
        Error::MaxName(_) => NC_EMAXNAME,
        Error::InDefine => NC_EINDEFINE,
        Error::NotInDefine => NC_ENOTINDEFINE,
        Error::ReadOnly => NC_EPERM,
        Error::DimSize(_) => NC_EDIMSIZE,
        Error::LateDef(_) => NC_ELATEDEF,
        Error::LateFill(_) => NC_ELATEFILL,
        Error::BadChunk { .. } => NC_EBADCHUNK,
        Error::Storage(_) => NC_EINVAL,
        Error::NotNc4(_) => NC_ENOTNC4,
        Error::StrictNc3(_) => NC_ESTRICTNC3,
        Error::SecondUnlimited => NC_EUNLIMIT,
        Error::ReadOnlyLayout(_) => NC_EPERM,
        Error::Invalid(_) => NC_EINVAL,
        Error::AttMeta(_) => NC_EATTMETA,
        Error::InvalidCoords { .. } => NC_EINVALCOORDS,
        Error::Edge { .. } => NC_EEDGE,
        Error::Stride(_) => NC_ESTRIDE,
        Error::Range => NC_ERANGE,
        Error::Char => NC_ECHAR,
        Error::MapType => NC_EMAPTYPE,
        Error::TooLarge(_) => NC_ENOMEM,
        Error::NoFilter { .. } => NC_ENOFILTER,
        Error::CodecConfig { .. } => NC_EFILTER,
        Error::FilterNotInChain { .. } => NC_ENOFILTER,
        Error::FilterUnavailable(_) => NC_ENOFILTER,
        Error::Filter { .. } => NC_EFILTER,
        Error::PastLimit { .. } => NC_EFILTER,
        Error::StringSlots { .. } => NC_EINTERNAL,
        Error::NotFound(_) => NC_ENOTFOUND,
        Error::NotZarr(_) => NC_ENOTNC,
        Error::Exists(_) => NC_EEXIST,
        Error::Metadata { .. } => NC_ENCZARR,
        Error::Unsupported { .. } => NC_ENCZARR,
        Error::ChunkSize { .. } => NC_ENCZARR,
        Error::ObjectTooLarge { .. } => NC_ENCZARR,
        Error::BadKey { .. } => NC_EINVAL,
        Error::Url { .. } => NC_EURL,
        Error::NotBuilt(_) => NC_ENOTBUILT,
        Error::Io { .. } | Error::Reference { .. } => NC_EIO,
        Error::Access(_) => NC_EACCESS,
        Error::Auth(_) => NC_EAUTH,
        Error::Remote { .. } => NC_ES3,
        Error::Web { .. } | Error::NoListing { .. } => NC_EACCESS,
        Error::NoMem => NC_ENOMEM,
        Error::Internal(_) => NC_EINTERNAL,
    }
}

/// True for errors worth a line on stderr: the netCDF code alone would hide the cause.
/// Lookups that callers use to probe (missing attribute, name in use, ...) stay quiet.
fn worth_reporting(e: &Error) -> bool {
    matches!(
        e,
        Error::Metadata { .. }
            | Error::Unsupported { .. }
            | Error::ChunkSize { .. }
            | Error::ObjectTooLarge { .. }
            | Error::NoFilter { .. }
            | Error::Filter { .. }
            | Error::PastLimit { .. }
            | Error::StringSlots { .. }
            | Error::CodecConfig { .. }
            | Error::NotZarr(_)
            | Error::NotFound(_)
            | Error::Exists(_)
            | Error::Url { .. }
            | Error::NotBuilt(_)
            | Error::Io { .. }
            | Error::Reference { .. }
            | Error::Access(_)
            | Error::ReadOnlyLayout(_)
            | Error::Auth(_)
            | Error::Remote { .. }
            | Error::Web { .. }
            | Error::NoListing { .. }
            | Error::Internal(_)
            | Error::BadKey { .. }
    )
}

/// Reports an error (unless `NCZARR_RS_QUIET` is set; every error with `NCZARR_RS_DEBUG`)
/// and returns its code.
pub fn report(e: &Error) -> c_int {
    let trace = std::env::var_os("NCZARR_RS_DEBUG").is_some();
    if trace || (worth_reporting(e) && std::env::var_os("NCZARR_RS_QUIET").is_none()) {
        eprintln!("nczarr-rs: {e}");
    }
    code(e)
}
