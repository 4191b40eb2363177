//! Choosing and opening the store a dataset URL names.
//!
//! Owns the step from a parsed [`DatasetUrl`] to a boxed [`Store`]: which backend, and whether
//! it opens an existing location or creates a new one. It must not know what the store holds.

use super::Store;
use super::file::FileStore;
use super::s3::S3Store;
use super::s3::settings::S3Settings;
use crate::error::{Error, Result};
use crate::url::{DatasetUrl, StorageKind};
use std::path::Path;

/// How a dataset location is approached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenHow {
    /// The location must exist already.
    Open {
        /// Whether the caller intends to write (`NC_WRITE`).
        writable: bool,
    },
    /// A new dataset is made; `clobber` allows replacing an existing one.
    Create {
        /// Replace whatever dataset is there (`NC_CLOBBER`).
        clobber: bool,
    },
}

/// Opens or creates the store that `url` names.
///
/// Directory trees are served by [`FileStore`], S3 by [`S3Store`] (settings from the URL, the
/// environment and the shared AWS files); zip archives are not built yet and fail with
/// [`Error::NotBuilt`].
pub fn open_store(url: &DatasetUrl, how: OpenHow) -> Result<Box<dyn Store>> {
    match url.storage_kind() {
        StorageKind::File => {
            let root = Path::new(&url.path);
            let store = match how {
                OpenHow::Open { writable: _ } => FileStore::open(root)?,
                OpenHow::Create { clobber } => FileStore::create(root, clobber)?,
            };
            Ok(Box::new(store))
        }
        StorageKind::Zip => Err(Error::NotBuilt("zip storage".into())),
        StorageKind::S3 => {
            let settings = S3Settings::resolve(url, &|k| std::env::var(k).ok())?;
            let store = match how {
                OpenHow::Open { writable: _ } => S3Store::open(settings)?,
                OpenHow::Create { clobber } => S3Store::create(settings, clobber)?,
            };
            Ok(Box::new(store))
        }
    }
}
