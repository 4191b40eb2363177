//! Where a reference document's target URLs lead, and the stores that read them.
//!
//! Owns the resolution of each target: a local path or `file://` URL, `s3://` (also `s3a://`),
//! `gs://`/`gcs://` (through Google's S3 interoperability, as `gs3://`), `http(s)://`; a
//! relative target is taken relative to the directory of the document itself, wherever that
//! lives. Local files are opened on first use, a bounded number held open; each bucket or web
//! server gets one remote store, made on first use with the document URL's settings. It must
//! not know what the bytes mean.

use super::super::http::HttpSettings;
use super::super::positional::{Opened, not_regular, open_regular};
use super::super::remote::RemoteStore;
use super::super::s3::settings::S3Settings;
use super::super::{Store, StoreKey};
use crate::error::{Error, Result};
use crate::url::DatasetUrl;
use std::collections::HashMap;
use std::fs::File;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Local target files held open at once; past it, all are closed and reopened as needed (a
/// document combining thousands of files must not run out of descriptors).
const MOST_FILES_OPEN: usize = 128;

/// Where a document lives: relative targets are found beside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Base {
    /// The local directory holding the document.
    Local(PathBuf),
    /// The service (`s3://bucket`, `gs3://bucket` or `https://host:port`) and the key prefix
    /// of the document's directory (empty, or ending in `/`).
    Remote { service: Service, dir: String },
}

/// One bucket or web server.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Service {
    /// An S3 bucket (`gs3`: on Google Cloud Storage).
    S3 {
        scheme: &'static str,
        bucket: String,
    },
    /// A web server, `scheme://host[:port]`.
    Http { server: String },
}

/// Where one target lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    Local(PathBuf),
    Remote { service: Service, key: StoreKey },
}

/// The means to read a reference set's targets.
#[derive(Debug)]
pub struct Targets {
    /// The reference set's URL: its fragment's settings (`aws.profile`, `aws.endpoint`, ...) apply
    /// to every S3 target.
    document: DatasetUrl,
    /// The S3 service (`s3` or `gs3`) and endpoint the document itself was read from, for
    /// targets in other buckets of that service.
    endpoint: Option<(&'static str, String)>,
    files: Mutex<HashMap<PathBuf, Arc<File>>>,
    remotes: Mutex<HashMap<Service, Arc<RemoteStore>>>,
    /// The largest object remote stores read whole (see [`Store::allow_objects_up_to`]).
    allowed: std::sync::atomic::AtomicU64,
}

fn refused(target: &str, why: impl Into<String>) -> Error {
    Error::Url {
        url: crate::url::redacted(target),
        why: why.into(),
    }
}

/// `dir` (empty or ending in `/`) joined with `path` (relative, or from the root with a leading
/// `/`), `.` and `..` resolved; an error when `..` climbs above the service's root or a segment
/// is empty.
fn joined_key(target: &str, dir: &str, path: &str) -> Result<StoreKey> {
    let mut segments: Vec<&str> = dir.split('/').filter(|s| !s.is_empty()).collect();
    for seg in path.strip_prefix('/').unwrap_or(path).split('/') {
        match seg {
            "" => return Err(refused(target, "an empty path segment")),
            "." => {}
            ".." => {
                segments
                    .pop()
                    .ok_or_else(|| refused(target, "climbs above the root of its service"))?;
            }
            s => segments.push(s),
        }
    }
    StoreKey::new(&segments.join("/")).map_err(|e| refused(target, e.to_string()))
}

/// The scheme of `text` (lowercased) and what follows its `://`, when it is a URL.
fn split_url(text: &str) -> Option<(String, &str)> {
    let (scheme, rest) = text.split_once("://")?;
    let mut chars = scheme.chars();
    let ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    ok.then(|| (scheme.to_ascii_lowercase(), rest))
}

/// Where `target` leads, relative targets found from `base`. As fsspec reads them: S3 keys and
/// local paths are taken literally, web URLs as URLs (percent escapes decoded, so that the
/// request asks for what the URL names). A document read from S3 or the web names objects of
/// services only: a path from the root is taken from its service's root, and local files are
/// refused.
pub fn locate(target: &str, base: &Base) -> Result<Place> {
    // fsspec chains protocols before the first `://` (`simplecache::s3://...`); an IPv6 host
    // holds `::` after it.
    if target
        .split_once("://")
        .map_or(target, |(s, _)| s)
        .contains("::")
    {
        return Err(refused(
            target,
            "chained fsspec URLs are not supported; name the object itself",
        ));
    }
    let Some((scheme, rest)) = split_url(target) else {
        return match base {
            Base::Local(dir) => Ok(Place::Local(dir.join(target))),
            Base::Remote { service, dir } => Ok(Place::Remote {
                service: service.clone(),
                key: joined_key(
                    target,
                    if target.starts_with('/') { "" } else { dir },
                    target,
                )?,
            }),
        };
    };
    let service = match scheme.as_str() {
        "file" => {
            if matches!(base, Base::Remote { .. }) {
                return Err(refused(
                    target,
                    "a document read from S3 or the web may not name local files",
                ));
            }
            let path = rest.strip_prefix("localhost").unwrap_or(rest);
            if !path.starts_with('/') {
                return Err(refused(target, "a file URL names an absolute path"));
            }
            return Ok(Place::Local(PathBuf::from(path)));
        }
        "s3" | "s3a" | "gs" | "gcs" | "gs3" => {
            let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
            if bucket.is_empty() || key.is_empty() {
                return Err(refused(target, "names no bucket and object"));
            }
            let scheme = if scheme.starts_with("s3") {
                "s3"
            } else {
                "gs3"
            };
            let service = Service::S3 {
                scheme,
                bucket: bucket.to_string(),
            };
            // Taken literally: `.` and `..` are names of keys there, which no store key may be.
            let key = StoreKey::new(key).map_err(|e| refused(target, e.to_string()))?;
            return Ok(Place::Remote { key, service });
        }
        "http" | "https" => {
            let url = DatasetUrl::parse(target).map_err(|e| match e {
                Error::Url { why, .. } => refused(target, why),
                other => other,
            })?;
            if !url.modes.is_empty() || !url.params.is_empty() || url.query.is_some() {
                return Err(refused(
                    target,
                    "a web URL with a query or fragment is not supported",
                ));
            }
            if url.login.is_some() {
                return Err(refused(
                    &url.original,
                    "a user and password in a target's URL are not used; give them in .netrc \
                     or .ncrc",
                ));
            }
            let host = url.host.as_deref().unwrap_or_default();
            let server = super::super::http::server_address(&scheme, host, url.port);
            return Ok(Place::Remote {
                key: joined_key(target, "", &url.path)?,
                service: Service::Http { server },
            });
        }
        other => other,
    };
    Err(refused(target, format!("unsupported scheme {service:?}")))
}

impl Targets {
    /// The means to read the targets of the reference set at `document`; `endpoint` is the S3
    /// endpoint the set itself was read from, if it was. Nothing is opened yet.
    pub fn new(document: DatasetUrl, endpoint: Option<(&'static str, String)>) -> Targets {
        Targets {
            document,
            endpoint,
            files: Mutex::default(),
            remotes: Mutex::default(),
            allowed: std::sync::atomic::AtomicU64::new(super::super::LARGEST_OBJECT_AT_FIRST),
        }
    }

    /// The local file at `path`, opened.
    pub fn file(&self, path: &Path) -> Result<Arc<File>> {
        let poisoned = || Error::Internal("reference file table lock poisoned".into());
        if let Some(f) = self.files.lock().map_err(|_| poisoned())?.get(path) {
            return Ok(f.clone());
        }
        let shown = || path.display().to_string();
        let file = match open_regular(path) {
            Ok(Opened::File(file, _)) => Arc::new(file),
            Ok(Opened::Absent) => return Err(Error::io(shown(), ErrorKind::NotFound.into())),
            Ok(Opened::NotRegular) => return Err(Error::io(shown(), not_regular())),
            Err(e) => return Err(Error::io(shown(), e)),
        };
        let mut files = self.files.lock().map_err(|_| poisoned())?;
        if files.len() >= MOST_FILES_OPEN {
            files.clear();
        }
        files.insert(path.to_path_buf(), file.clone());
        Ok(file)
    }

    /// The store of `service`, made on first use.
    pub fn remote(&self, service: &Service) -> Result<Arc<RemoteStore>> {
        let mut remotes = self
            .remotes
            .lock()
            .map_err(|_| Error::Internal("reference service table lock poisoned".into()))?;
        if let Some(store) = remotes.get(service) {
            return Ok(store.clone());
        }
        let store = Arc::new(self.connect(service)?);
        store.allow_objects_up_to(self.allowed.load(std::sync::atomic::Ordering::Relaxed));
        remotes.insert(service.clone(), store.clone());
        Ok(store)
    }

    /// Lets every remote store, made or still to be made, read objects of up to `bytes` whole.
    pub fn allow_objects_up_to(&self, bytes: u64) {
        self.allowed
            .fetch_max(bytes, std::sync::atomic::Ordering::Relaxed);
        if let Ok(remotes) = self.remotes.lock() {
            remotes.values().for_each(|s| s.allow_objects_up_to(bytes));
        }
    }

    fn connect(&self, service: &Service) -> Result<RemoteStore> {
        match service {
            Service::S3 { scheme, bucket } => {
                let mut url = DatasetUrl::parse(&format!("{scheme}://{bucket}#mode=zarr,s3"))?;
                url.params = self.document.params.clone();
                if let Some((document_scheme, endpoint)) = &self.endpoint
                    && document_scheme == scheme
                    && url.param("aws.endpoint").is_none()
                {
                    url.params.push(("aws.endpoint".into(), endpoint.clone()));
                }
                super::super::s3::open(S3Settings::resolve(&url, &crate::env::of_process)?)
            }
            Service::Http { server } => {
                let mut url = DatasetUrl::parse(&format!("{server}#mode=zarr,http"))?;
                // The document's own server is asked as the document was.
                let document_server = self.document.host.as_deref().map(|host| {
                    let scheme = self.document.scheme.as_deref().unwrap_or_default();
                    super::super::http::server_address(scheme, host, self.document.port)
                });
                if document_server.as_deref() == Some(server.as_str()) {
                    url.login = self.document.login.clone();
                }
                super::super::http::open(HttpSettings::resolve_target(
                    &url,
                    &crate::env::of_process,
                )?)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(k: &str) -> StoreKey {
        StoreKey::new(k).unwrap()
    }

    #[test]
    fn targets_lead_to_files_buckets_and_servers() {
        let local = Base::Local(PathBuf::from("/data/refs"));
        assert_eq!(
            locate("a.nc", &local).unwrap(),
            Place::Local("/data/refs/a.nc".into())
        );
        assert_eq!(
            locate("/abs/b.nc", &local).unwrap(),
            Place::Local("/abs/b.nc".into())
        );
        assert_eq!(
            locate("file:///abs/my%20c.nc", &local).unwrap(),
            Place::Local("/abs/my%20c.nc".into()),
            "as fsspec reads it"
        );
        let s3 = |bucket: &str| Service::S3 {
            scheme: "s3",
            bucket: bucket.into(),
        };
        assert_eq!(
            locate("s3://bkt/dir/d.nc", &local).unwrap(),
            Place::Remote {
                service: s3("bkt"),
                key: key("dir/d.nc")
            }
        );
        assert_eq!(
            locate("s3://bkt/a%20b?#.nc", &local).unwrap(),
            Place::Remote {
                service: s3("bkt"),
                key: key("a%20b?#.nc")
            },
            "an S3 key is taken literally"
        );
        assert_eq!(
            locate("http://[::1]:8080/f.nc", &local).unwrap(),
            Place::Remote {
                service: Service::Http {
                    server: "http://[::1]:8080".into()
                },
                key: key("f.nc")
            },
            "an IPv6 host is no chained URL"
        );
        assert_eq!(
            locate("s3a://bkt/d.nc", &local).unwrap(),
            Place::Remote {
                service: s3("bkt"),
                key: key("d.nc")
            }
        );
        assert_eq!(
            locate("gs://pub/e.nc", &local).unwrap(),
            Place::Remote {
                service: Service::S3 {
                    scheme: "gs3",
                    bucket: "pub".into()
                },
                key: key("e.nc")
            }
        );
        assert_eq!(
            locate("https://Data.Example.org:8443/x/f%20g.nc", &local).unwrap(),
            Place::Remote {
                service: Service::Http {
                    server: "https://data.example.org:8443".into()
                },
                key: key("x/f g.nc")
            }
        );
        let web = Base::Remote {
            service: Service::Http {
                server: "http://h".into(),
            },
            dir: "pub/refs/".into(),
        };
        let on_web = |k: &str| Place::Remote {
            service: Service::Http {
                server: "http://h".into(),
            },
            key: key(k),
        };
        assert_eq!(
            locate("../data/g.nc", &web).unwrap(),
            on_web("pub/data/g.nc")
        );
        assert_eq!(
            locate("/other/g.nc", &web).unwrap(),
            on_web("other/g.nc"),
            "from the service's root"
        );
    }

    #[test]
    fn targets_that_cannot_be_read_are_refused_by_name() {
        let web = Base::Remote {
            service: Service::Http {
                server: "http://h".into(),
            },
            dir: "a/".into(),
        };
        for bad in [
            "../../etc/passwd",
            "simplecache::s3://b/k",
            "memory://x",
            "az://container/blob",
            "https://h/x.nc?sig=1",
            "https://h/x.nc#frag",
            "s3://b/a//k",
            "s3://b/a/../k",
            "s3://b",
            "s3:///k",
            "file:///etc/passwd",
            "ftp://h/f.nc",
        ] {
            let got = locate(bad, &web);
            assert!(
                matches!(&got, Err(Error::Url { url, .. }) if url == bad),
                "{bad}: {got:?}"
            );
        }
    }
}
