//! netCDF constants this library needs, defined here (the library does not link libnetcdf);
//! `tests/netcdf_constants.rs` checks them against the installed `netcdf.h`.

use std::os::raw::c_int;

pub const NC_NOERR: c_int = 0;
pub const NC_EBADID: c_int = -33;
pub const NC_EEXIST: c_int = -35;
pub const NC_EINVAL: c_int = -36;
pub const NC_EPERM: c_int = -37;
pub const NC_ENOTINDEFINE: c_int = -38;
pub const NC_EINDEFINE: c_int = -39;
pub const NC_EINVALCOORDS: c_int = -40;
pub const NC_ENAMEINUSE: c_int = -42;
pub const NC_ENOTATT: c_int = -43;
pub const NC_EBADTYPE: c_int = -45;
pub const NC_EBADDIM: c_int = -46;
pub const NC_ENOTNC: c_int = -51;
pub const NC_ENOTVAR: c_int = -49;
pub const NC_ECHAR: c_int = -56;
pub const NC_EMAPTYPE: c_int = -121;
pub const NC_EMAXNAME: c_int = -53;
pub const NC_EEDGE: c_int = -57;
pub const NC_ESTRIDE: c_int = -58;
pub const NC_EBADNAME: c_int = -59;
pub const NC_ERANGE: c_int = -60;
pub const NC_ENOMEM: c_int = -61;
pub const NC_EDIMSIZE: c_int = -63;
pub const NC_EIO: c_int = -68;
pub const NC_EURL: c_int = -74;
pub const NC_EACCESS: c_int = -77;
pub const NC_EAUTH: c_int = -78;
pub const NC_ENOTFOUND: c_int = -90;
pub const NC_EINTERNAL: c_int = -92;
pub const NC_EATTMETA: c_int = -107;
pub const NC_ENOTNC4: c_int = -111;
pub const NC_EUNLIMIT: c_int = -54;
pub const NC_ESTRICTNC3: c_int = -112;
pub const NC_EBADGRPID: c_int = -116;
pub const NC_ELATEFILL: c_int = -122;
pub const NC_ELATEDEF: c_int = -123;
pub const NC_EBADFIELD: c_int = -119;
pub const NC_ETYPDEFINED: c_int = -118;
pub const NC_EBADTYPID: c_int = -117;
pub const NC_ENOGRP: c_int = -125;
pub const NC_EBADCHUNK: c_int = -127;
pub const NC_ENOTBUILT: c_int = -128;
pub const NC_EFILTER: c_int = -132;
pub const NC_ENOFILTER: c_int = -136;
pub const NC_ENCZARR: c_int = -137;
pub const NC_ES3: c_int = -138;

pub const NC_GLOBAL: c_int = -1;
pub const NC_NAT: c_int = 0;
pub const NC_STRING: c_int = 12;
pub const NC_VLEN: c_int = 13;
pub const NC_OPAQUE: c_int = 14;
pub const NC_ENUM: c_int = 15;
pub const NC_COMPOUND: c_int = 16;
pub const NC_UNLIMITED: usize = 0;
pub const NC_MAX_NAME: usize = 256;
pub const NC_MAX_VAR_DIMS: c_int = 1024;

pub const NC_WRITE: c_int = 0x0001;
pub const NC_NOCLOBBER: c_int = 0x0004;
pub const NC_DISKLESS: c_int = 0x0008;
pub const NC_PERSIST: c_int = 0x4000;
pub const NC_CLASSIC_MODEL: c_int = 0x0100;
pub const NC_NETCDF4: c_int = 0x1000;
pub const NC_INMEMORY: c_int = 0x8000;
pub const NC_MMAP: c_int = 0x0010;
pub const NC_64BIT_OFFSET: c_int = 0x0200;
pub const NC_64BIT_DATA: c_int = 0x0020;
pub const NC_UDF0: c_int = 0x0040;
pub const NC_UDF1: c_int = 0x0080;
pub const NC_NOFILL: c_int = 0x100;
pub const NC_FILL: c_int = 0;

pub const NC_FORMAT_NETCDF4: c_int = 3;
pub const NC_FORMAT_NETCDF4_CLASSIC: c_int = 4;
pub const NC_FORMATX_UDF0: c_int = 8;
pub const NC_FORMATX_UDF1: c_int = 9;
pub const NC_FORMATX_NCZARR: c_int = 10;

pub const NC_CHUNKED: c_int = 0;
pub const NC_CONTIGUOUS: c_int = 1;
pub const NC_COMPACT: c_int = 2;
pub const NC_ENDIAN_NATIVE: c_int = 0;
pub const NC_ENDIAN_LITTLE: c_int = 1;
pub const NC_ENDIAN_BIG: c_int = 2;

/// The `NC_Dispatch` layout version we implement.
pub const NC_DISPATCH_VERSION: c_int = 5;
