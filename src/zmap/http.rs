//! Plain HTTP(S): a dataset that any web server serves as files, read-only.
//!
//! Owns the reading of `http(s)://[user:password@]host[:port]/path#mode=...,http` into the
//! server's address, the dataset's root path and the [`login`] sent to the server, and the
//! client for it: GETs (whole or ranged, never a HEAD), listings by WebDAV `PROPFIND` where the
//! server speaks it, else by its [`index_page`] of the directory (read by [`pages`]), with
//! HTTP basic authentication when a login is found. Reads are
//! [`RemoteStore`]'s. It knows nothing of Zarr.

pub mod index_page;
pub mod login;
mod pages;

use super::remote::{RemoteStore, Service, Transfer};
use crate::error::{Error, Result};
use crate::rcfile::RcFiles;
use crate::url::{DatasetUrl, Login};
use crate::zmap::StorePrefix;
use login::Asker;
use object_store::RetryConfig;
use object_store::http::HttpBuilder;
use std::sync::Arc;

/// Where a dataset served over plain HTTP lives, and how to ask for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpSettings {
    /// `scheme://host[:port]` of the server.
    pub server: String,
    /// Path of the dataset root on the server, without leading or trailing `/`.
    pub root: String,
    pub transfer: Transfer,
    /// The user name and password sent to the server.
    pub login: Option<Login>,
}

impl HttpSettings {
    /// The server and root of the dataset `url` names, with the request limits of the
    /// environment and its login.
    pub fn resolve(url: &DatasetUrl, env: &dyn Fn(&str) -> Option<String>) -> Result<HttpSettings> {
        Self::resolve_as(url, Asker::Dataset, env)
    }

    /// [`resolve`](Self::resolve) for a server a reference set names: `.ncrc` credentials
    /// not scoped to it are not sent there.
    pub fn resolve_target(
        url: &DatasetUrl,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<HttpSettings> {
        Self::resolve_as(url, Asker::Target, env)
    }

    fn resolve_as(
        url: &DatasetUrl,
        asker: Asker,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<HttpSettings> {
        let refuse = |why: &str| Error::Url {
            url: url.original.clone(),
            why: why.to_string(),
        };
        let scheme = match url.scheme.as_deref() {
            Some(s @ ("http" | "https")) => s,
            _ => {
                return Err(refuse(
                    "plain HTTP (mode http) needs an http:// or https:// URL",
                ));
            }
        };
        let host = url
            .host
            .as_deref()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| refuse("the URL names no server"))?;
        if url.query.is_some() {
            return Err(refuse(
                "a query (`?...`) cannot be sent with every object's path",
            ));
        }
        let server = server_address(scheme, host, url.port);
        let root = url.path.trim_matches('/').to_string();
        StorePrefix::new(&root).map_err(|e| refuse(&e.to_string()))?;
        let rc = RcFiles::load(env, std::env::current_dir().ok().as_deref());
        Ok(HttpSettings {
            server,
            root,
            transfer: Transfer::from_env(env)?,
            login: login::login_for(url, asker, env, &rc),
        })
    }

    /// The dataset's address, for messages.
    fn describe(&self) -> String {
        format!("{}/{}", self.server, self.root)
    }
}

/// `scheme://host[:port]`, an IPv6 host in brackets.
pub(super) fn server_address(scheme: &str, host: &str, port: Option<u16>) -> String {
    let host = if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_string()
    };
    match port {
        Some(p) => format!("{scheme}://{host}:{p}"),
        None => format!("{scheme}://{host}"),
    }
}

/// Opens the dataset `settings` name. No request is made yet: whether a dataset is there is
/// found by the first reads.
///
/// Listings are asked once, without retries: most web servers answer `PROPFIND` with
/// 501 Not Implemented or 405, which retrying cannot change.
pub fn open(settings: HttpSettings) -> Result<RemoteStore> {
    let (mut options, retry) = settings.transfer.client_config();
    let login_headers = settings
        .login
        .as_ref()
        .map(basic_authorization)
        .unwrap_or_default();
    if settings.login.is_some() {
        options = options.with_default_headers(login_headers.clone());
    }
    let pages = pages::PageReader::new(&settings.server, &settings.transfer, login_headers)?;
    let client = |retry| {
        HttpBuilder::new()
            .with_url(&settings.server)
            .with_client_options(options.clone())
            .with_retry(retry)
            .build()
            .map(Arc::new)
            .map_err(|e| Error::Url {
                url: settings.describe(),
                why: e.to_string(),
            })
    };
    let lister = client(RetryConfig {
        max_retries: 0,
        ..retry.clone()
    })?;
    let reader = client(retry)?;
    let described = settings.describe();
    let credentials = match &settings.login {
        Some(login) => format!("HTTP basic authentication as {:?}", login.user),
        None => "none (plain HTTP)".into(),
    };
    Ok(RemoteStore::new(
        Service::Http,
        reader,
        settings.root,
        settings.transfer,
        credentials,
        described,
    )
    .listing_through(lister)
    .listing_by_index_pages(Arc::new(pages)))
}

/// The `Authorization` header of HTTP basic authentication for `login`, marked sensitive (kept
/// out of logs, and not sent on when a server redirects elsewhere).
fn basic_authorization(login: &Login) -> http::HeaderMap {
    use base64::Engine;
    let token = base64::engine::general_purpose::STANDARD
        .encode(format!("{}:{}", login.user, login.password));
    let mut headers = http::HeaderMap::new();
    if let Ok(mut value) = http::HeaderValue::from_str(&format!("Basic {token}")) {
        value.set_sensitive(true);
        headers.insert(http::header::AUTHORIZATION, value);
    }
    headers
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(text: &str) -> Result<HttpSettings> {
        HttpSettings::resolve(&DatasetUrl::parse(text).unwrap(), &|_| None)
    }

    #[test]
    fn the_url_names_server_and_root() {
        let s = resolve("https://data.example.org:8443/pub/x.zarr/#mode=zarr,http").unwrap();
        assert_eq!(s.server, "https://data.example.org:8443");
        assert_eq!(s.root, "pub/x.zarr");
        let s = resolve("http://[::1]/x.zarr#mode=nczarr,http").unwrap();
        assert_eq!(s.server, "http://[::1]");
        assert_eq!(s.root, "x.zarr");
        let s = resolve("http://127.0.0.1:8080#mode=zarr,http").unwrap();
        assert_eq!(
            (s.server.as_str(), s.root.as_str()),
            ("http://127.0.0.1:8080", "")
        );
    }

    #[test]
    fn urls_that_name_no_web_dataset_are_refused() {
        for bad in [
            "file:///tmp/x.zarr#mode=zarr,http",
            "s3://bucket/x.zarr#mode=zarr,http",
            "https://example.org/x.zarr?token=1#mode=zarr,http",
            "https://example.org/a/../x.zarr#mode=zarr,http",
        ] {
            assert!(matches!(resolve(bad), Err(Error::Url { .. })), "{bad}");
        }
    }
}
