//! Choosing and opening the store a dataset URL names.
//!
//! Owns the step from a parsed [`DatasetUrl`] to a boxed [`Store`]: which backend, and whether
//! it opens an existing location or creates a new one. It must not know what the store holds.

use super::Store;
use super::created::CreatedStore;
use super::file::FileStore;
use super::http::HttpSettings;
use super::memory::MemoryStore;
use super::overlay::OverlayStore;
use super::s3::settings::S3Settings;
use super::zip::ZipStore;
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
/// A reference document (mode `reference`) is served read-only by
/// [`reference`](super::reference), wherever it lives. Otherwise directory trees are served by
/// [`FileStore`], zip archives by [`ZipStore`], web servers
/// read-only by [`http`](super::http), S3 by
/// [`s3`](super::s3) (settings from the URL, the environment and the shared AWS files; a new dataset
/// there through [`CreatedStore`], every read being a round trip).
pub fn open_store(url: &DatasetUrl, how: OpenHow) -> Result<Box<dyn Store>> {
    if url.is_reference() {
        return match how {
            OpenHow::Open { writable: false } => Ok(Box::new(super::reference::open(url)?)),
            OpenHow::Open { writable: true } | OpenHow::Create { .. } => {
                Err(Error::ReadOnlyLayout(format!(
                    "{}: a reference dataset (mode reference) cannot be written; open it \
                     read-only",
                    url.original
                )))
            }
        };
    }
    match url.storage_kind() {
        StorageKind::File => {
            let root = Path::new(&url.path);
            let store = match how {
                OpenHow::Open { writable: _ } => FileStore::open(root)?,
                OpenHow::Create { clobber } => FileStore::create(root, clobber)?,
            };
            Ok(Box::new(store))
        }
        StorageKind::Zip => {
            let path = Path::new(&url.path);
            let store = match how {
                OpenHow::Open { writable } => ZipStore::open(path, writable)?,
                OpenHow::Create { clobber } => ZipStore::create(path, clobber)?,
            };
            Ok(Box::new(store))
        }
        StorageKind::Http => match how {
            OpenHow::Open { writable: false } => Ok(Box::new(super::http::open(
                HttpSettings::resolve(url, &crate::env::of_process)?,
            )?)),
            OpenHow::Open { writable: true } | OpenHow::Create { .. } => {
                Err(Error::ReadOnlyLayout(format!(
                    "{}: a dataset read over plain HTTP (mode http) cannot be written; \
                     open it read-only, or name an S3 service (mode s3) to write",
                    url.original
                )))
            }
        },
        StorageKind::S3 => {
            let settings = S3Settings::resolve(url, &crate::env::of_process)?;
            Ok(match how {
                OpenHow::Open { writable: _ } => Box::new(super::s3::open(settings)?),
                // Empty once created: what this session did not write is not asked for.
                OpenHow::Create { clobber } => Box::new(CreatedStore::new(Box::new(
                    super::s3::create(settings, clobber)?,
                ))),
            })
        }
    }
}

/// Opens or creates the store for a diskless dataset (`NC_DISKLESS` without `NC_PERSIST`):
/// a new dataset lives only in memory; an existing one is read from `url` and changes to it stay
/// in memory, so the stored dataset is never modified.
pub fn open_diskless(url: &DatasetUrl, how: OpenHow) -> Result<Box<dyn Store>> {
    match how {
        OpenHow::Create { .. } => Ok(Box::new(MemoryStore::new())),
        OpenHow::Open { writable: false } => open_store(url, how),
        OpenHow::Open { writable: true } => Ok(Box::new(OverlayStore::new(open_store(
            url,
            OpenHow::Open { writable: false },
        )?))),
    }
}
