//! Dataset URLs as netcdf-c hands them to the dispatcher.
//!
//! Owns the syntax: scheme, host, port, the percent-decoded path, and the fragment's
//! `key=value` list with its `mode=` tokens (lowercased, de-duplicated in first-seen order).
//! It also answers the questions the mode list decides: which storage, which flavor of Zarr,
//! whether xarray dimension names and consolidated metadata are wanted. It must not know how
//! any storage is opened or what a dataset contains.

use crate::error::{Error, Result};

/// Schemes a dataset URL may carry; anything else is refused.
const SCHEMES: [&str; 5] = ["file", "http", "https", "s3", "gs3"];

/// Schemes that name remote object storage.
const REMOTE_SCHEMES: [&str; 4] = ["http", "https", "s3", "gs3"];

/// Environment variable asking for consolidated metadata, as in netcdf-c.
const CONSOLIDATED_ENV: &str = "NCZARR_CONSOLIDATED";

/// A parsed dataset location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatasetUrl {
    /// Lowercased scheme (`file`, `https`, ...); `None` for a plain path.
    pub scheme: Option<String>,
    /// Lowercased host, without IPv6 brackets; `None` for plain paths and `file:///...`.
    pub host: Option<String>,
    /// Explicit port, if any.
    pub port: Option<u16>,
    /// Percent-decoded path (a plain path is taken literally).
    pub path: String,
    /// The raw query text after `?`, if any (never interpreted here).
    pub query: Option<String>,
    /// Fragment `mode=` tokens, lowercased, de-duplicated, in first-seen order.
    pub modes: Vec<String>,
    /// Other fragment `key=value` pairs in order; keys lowercased, values decoded.
    pub params: Vec<(String, String)>,
    /// The user name and password a web URL gives (`https://user:password@host/...`).
    pub login: Option<Login>,
    /// The text as given, a password in it hidden (`user:***@`): it is shown in messages.
    pub original: String,
}

/// A user name and password for a web server; the password is never shown.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Login {
    pub user: String,
    pub password: String,
}

impl std::fmt::Debug for Login {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Login({:?}, ***)", self.user)
    }
}

/// Where the dataset's objects live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageKind {
    /// A directory tree.
    File,
    /// A zip archive.
    Zip,
    /// An S3-compatible object store (also Google Cloud Storage through `gs3`).
    S3,
    /// Any web server, read over plain HTTP(S) (the `http` or `https` mode).
    Http,
}

/// Which metadata layout is read and written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// Zarr plus NCZarr's extra metadata (groups, named dimensions, netCDF types).
    NcZarr,
    /// Plain Zarr that any Zarr reader understands.
    PureZarr,
}

fn url_error(url: &str, why: impl Into<String>) -> Error {
    Error::Url {
        url: url.to_string(),
        why: why.into(),
    }
}

/// Decodes `%XX` escapes; anything malformed or non-UTF-8 is an error.
fn percent_decode(url: &str, text: &str) -> Result<String> {
    if !text.contains('%') {
        return Ok(text.to_string());
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .filter(|_| bytes[i + 1].is_ascii_hexdigit() && bytes[i + 2].is_ascii_hexdigit())
                .ok_or_else(|| url_error(url, format!("bad percent escape at byte {i}")))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| url_error(url, "percent escapes do not form UTF-8"))
}

/// Splits `scheme:rest` when `text` starts with a scheme (two or more characters, so that a
/// drive letter is not mistaken for one).
fn split_scheme(text: &str) -> Option<(&str, &str)> {
    let (scheme, rest) = text.split_once(':')?;
    let mut chars = scheme.chars();
    let ok = scheme.len() >= 2
        && chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    ok.then_some((scheme, rest))
}

/// `text` with the login of its `user:password@` part, if it has one, hidden (`user:***@`,
/// or `***@` for a user alone). libnetcdf hands a URL over with `#`, `?` and `/` in a password
/// unescaped, so everything from the authority's first `:` to the text's last `@` is hidden
/// whenever the text after `//` holds a `:` before an `@`: a message may show less than the
/// URL, never a password.
pub(crate) fn redacted(text: &str) -> String {
    let hidden = || -> Option<String> {
        let (scheme, rest) = split_scheme(text)?;
        let after = rest.strip_prefix("//")?;
        let at = after.rfind('@')?;
        let shown = match after[..at].find(':') {
            Some(colon) => format!("{}:***", &after[..colon]),
            None if !after[..at].contains(['/', '?', '#']) => "***".to_string(),
            None => return None,
        };
        Some(format!("{scheme}://{shown}@{}", &after[at + 1..]))
    };
    hidden().unwrap_or_else(|| text.to_string())
}

/// The host, port and login of an authority: `[user[:password]@]host[:port]`, the host also
/// `[v6]`.
type Authority = (Option<String>, Option<u16>, Option<Login>);

/// Parses `host`, `host:port`, `[v6]` or `[v6]:port`, after `user:password@` if given.
fn parse_authority(url: &str, auth: &str) -> Result<Authority> {
    let (login, auth) = match auth.rsplit_once('@') {
        Some((userinfo, host)) => {
            // As netcdf-c: a user without a password is no login.
            let (user, password) = userinfo
                .split_once(':')
                .filter(|(u, p)| !u.is_empty() && !p.is_empty())
                .ok_or_else(|| url_error(url, "a login names a user without a password"))?;
            let login = Login {
                user: percent_decode(url, user)?,
                password: percent_decode(url, password)?,
            };
            (Some(login), host)
        }
        None => (None, auth),
    };
    let (host, port) = if let Some(v6) = auth.strip_prefix('[') {
        let (host, after) = v6
            .split_once(']')
            .ok_or_else(|| url_error(url, "unclosed '[' in host"))?;
        match after {
            "" => (host, None),
            _ => match after.strip_prefix(':') {
                Some(port) => (host, Some(port)),
                None => return Err(url_error(url, "junk after IPv6 host")),
            },
        }
    } else {
        match auth.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (auth, None),
        }
    };
    let port = match port {
        None | Some("") => None,
        Some(p) => Some(
            // Not repeated: a password that libnetcdf unescaped may make it one.
            p.parse::<u16>()
                .map_err(|_| url_error(url, "the port is not a number from 0 to 65535"))?,
        ),
    };
    let host = (!host.is_empty()).then(|| host.to_ascii_lowercase());
    Ok((host, port, login))
}

/// True for `NCZARR_CONSOLIDATED`-style switches: a positive integer, `true` or `yes`.
fn truthy(value: &str) -> bool {
    let v = value.trim();
    v.eq_ignore_ascii_case("true")
        || v.eq_ignore_ascii_case("yes")
        || v.parse::<i64>().is_ok_and(|n| n > 0)
}

impl DatasetUrl {
    /// Parses a URL such as `file:///d/x.zarr#mode=nczarr,file` or a plain path.
    ///
    /// A text without a scheme is a plain path, taken literally (no fragment, no decoding), as
    /// netcdf-c does. Schemes other than `file`, `http`, `https`, `s3` and `gs3` are refused,
    /// as are `file:` URLs that name a remote host or a relative path, remote URLs without a
    /// host, and malformed percent escapes.
    pub fn parse(given: &str) -> Result<DatasetUrl> {
        if given.trim().is_empty() {
            return Err(url_error(given, "empty"));
        }
        // Every message shows the text with its password hidden.
        let shown = redacted(given);
        let text = shown.as_str();
        let Some((_, rest)) = split_scheme(given) else {
            return Ok(DatasetUrl {
                scheme: None,
                host: None,
                port: None,
                path: text.to_string(),
                query: None,
                modes: Vec::new(),
                params: Vec::new(),
                login: None,
                original: text.to_string(),
            });
        };
        let scheme = split_scheme(text)
            .map_or("", |(s, _)| s)
            .to_ascii_lowercase();
        if !SCHEMES.contains(&scheme.as_str()) {
            return Err(url_error(text, format!("unsupported scheme {scheme:?}")));
        }
        let (rest, fragment) = match rest.split_once('#') {
            Some((r, f)) => (r, Some(f)),
            None => (rest, None),
        };
        let (rest, query) = match rest.split_once('?') {
            Some((r, q)) => (r, Some(q.to_string())),
            None => (rest, None),
        };
        let (host, port, login, raw_path) = match rest.strip_prefix("//") {
            Some(after) => {
                let cut = after.find('/').unwrap_or(after.len());
                let (host, port, login) = parse_authority(text, &after[..cut])?;
                (host, port, login, &after[cut..])
            }
            None => (None, None, None, rest),
        };
        if login.is_some() && !matches!(scheme.as_str(), "http" | "https") {
            return Err(url_error(
                text,
                "a user and password are given only in web (http, https) URLs",
            ));
        }
        let path = percent_decode(text, raw_path)?;
        if scheme == "file" {
            if host.as_deref().is_some_and(|h| h != "localhost") {
                return Err(url_error(text, "file URL names a remote host"));
            }
            if port.is_some() {
                return Err(url_error(text, "file URL with a port"));
            }
            if path.is_empty() {
                return Err(url_error(text, "file URL without a path"));
            }
            if !path.starts_with('/') {
                return Err(url_error(text, "file URL with a relative path"));
            }
        } else if host.is_none() {
            return Err(url_error(text, "remote URL without a host"));
        }
        let mut url = DatasetUrl {
            scheme: Some(scheme),
            host,
            port,
            path,
            query,
            modes: Vec::new(),
            params: Vec::new(),
            login,
            original: text.to_string(),
        };
        if let Some(fragment) = fragment {
            url.parse_fragment(fragment)?;
        }
        if url.login.is_some() && !url.modes.is_empty() && url.storage_kind() != StorageKind::Http {
            return Err(url_error(
                text,
                "a user and password are sent only to web servers (mode http); S3 and other \
                 storage have their own credentials",
            ));
        }
        Ok(url)
    }

    /// Reads `key=value&key=value...`; `mode` values are comma-separated tokens.
    fn parse_fragment(&mut self, fragment: &str) -> Result<()> {
        for item in fragment.split('&') {
            let (key, value) = item.split_once('=').unwrap_or((item, ""));
            let key = percent_decode(&self.original, key)?
                .trim()
                .to_ascii_lowercase();
            if key.is_empty() {
                continue;
            }
            if key != "mode" {
                let value = percent_decode(&self.original, value)?;
                self.params.push((key, value));
                continue;
            }
            for token in value.split(',') {
                let token = percent_decode(&self.original, token)?
                    .trim()
                    .to_ascii_lowercase();
                if !token.is_empty() && !self.modes.contains(&token) {
                    self.modes.push(token);
                }
            }
        }
        Ok(())
    }

    /// True when `mode` (case-insensitive) is among the mode tokens.
    pub fn has_mode(&self, mode: &str) -> bool {
        self.modes.iter().any(|m| m.eq_ignore_ascii_case(mode))
    }

    /// The value of the first fragment parameter `key` (case-insensitive), other than `mode`.
    pub fn param(&self, key: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.as_str())
    }

    /// Where the objects live: a `zip`, `s3`, `gs3`, `http` or `https` mode token decides (the
    /// first one seen; `http` and `https` mean a web server read over plain HTTP); else a
    /// remote scheme means S3; else an explicit `file` token or a path not ending in
    /// `.zip` means a directory tree; else a zip archive.
    pub fn storage_kind(&self) -> StorageKind {
        for mode in &self.modes {
            match mode.as_str() {
                "zip" => return StorageKind::Zip,
                "s3" | "gs3" => return StorageKind::S3,
                "http" | "https" => return StorageKind::Http,
                _ => {}
            }
        }
        if self
            .scheme
            .as_deref()
            .is_some_and(|s| REMOTE_SCHEMES.contains(&s))
        {
            return StorageKind::S3;
        }
        if !self.has_mode("file") && self.path.to_ascii_lowercase().ends_with(".zip") {
            return StorageKind::Zip;
        }
        StorageKind::File
    }

    /// True when the URL names a reference document (mode `reference`, or `kerchunk`) rather
    /// than a dataset's root: its keys are served from that document.
    pub fn is_reference(&self) -> bool {
        self.has_mode("reference") || self.has_mode("kerchunk")
    }

    /// `zarr`, `xarray` or `noxarray` among the modes means pure Zarr (as netcdf-c >= 4.9.1
    /// reads `noxarray`); otherwise NCZarr.
    pub fn flavor(&self) -> Flavor {
        if ["zarr", "xarray", "noxarray"]
            .iter()
            .any(|m| self.has_mode(m))
        {
            Flavor::PureZarr
        } else {
            Flavor::NcZarr
        }
    }

    /// Whether dimension names are written as xarray's `_ARRAY_DIMENSIONS`: always, unless the
    /// `noxarray` mode is given.
    pub fn xarray_dims(&self) -> bool {
        !self.has_mode("noxarray")
    }

    /// Whether a dataset created here is Zarr v3 (`zarr.json`): the `v3` mode. Zarr v2 is the
    /// default, as in netcdf-c; an existing dataset is read in the version it is stored in.
    pub fn zarr_v3(&self) -> bool {
        self.has_mode("v3")
    }

    /// Whether consolidated metadata (`.zmetadata`) is wanted: the `consolidated` mode, or the
    /// environment variable `NCZARR_CONSOLIDATED` set to a positive integer, `true` or `yes`.
    pub fn consolidated(&self) -> bool {
        self.has_mode("consolidated") || std::env::var(CONSOLIDATED_ENV).is_ok_and(|v| truthy(&v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> DatasetUrl {
        DatasetUrl::parse(text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
    }

    #[test]
    fn file_urls_with_duplicated_modes() {
        let u = parse("file:///d/x.zarr#mode=nczarr,nczarr,file,file");
        assert_eq!(u.scheme.as_deref(), Some("file"));
        assert_eq!(u.host, None);
        assert_eq!(u.path, "/d/x.zarr");
        assert_eq!(u.modes, ["nczarr", "file"]);
        assert_eq!(u.storage_kind(), StorageKind::File);
        assert_eq!(u.flavor(), Flavor::NcZarr);
        assert!(u.xarray_dims());
        assert!(u.params.is_empty());
    }

    #[test]
    fn flavors_follow_the_mode_tokens() {
        let zarr = parse("file:///d/x.zarr#mode=zarr,file");
        assert_eq!(
            (zarr.flavor(), zarr.xarray_dims()),
            (Flavor::PureZarr, true)
        );
        let nox = parse("file:///d/x.zarr#mode=nczarr,noxarray,file");
        assert_eq!((nox.flavor(), nox.xarray_dims()), (Flavor::PureZarr, false));
        let xa = parse("file:///d/x.zarr#mode=XArray,file");
        assert_eq!(xa.flavor(), Flavor::PureZarr);
        let udf = parse("file:///d/x.zarr#mode=udf0,udf0,file,file");
        assert_eq!(udf.modes, ["udf0", "file"]);
        assert_eq!(udf.flavor(), Flavor::NcZarr);
    }

    #[test]
    fn mode_tokens_are_case_insensitive() {
        let u = parse("file:///d/x#mode=NCZarr,FILE,nczarr");
        assert_eq!(u.modes, ["nczarr", "file"]);
        assert!(u.has_mode("NcZarr"));
        assert!(!u.has_mode("zip"));
    }

    #[test]
    fn zip_storage() {
        let u = parse("file:///d/x.zip#mode=nczarr,zip");
        assert_eq!(u.storage_kind(), StorageKind::Zip);
        assert_eq!(parse("/d/x.ZIP").storage_kind(), StorageKind::Zip);
        assert_eq!(
            parse("file:///d/x#mode=zip,file").storage_kind(),
            StorageKind::Zip
        );
        let dir = parse("file:///d/x.zip#mode=nczarr,file");
        assert_eq!(dir.storage_kind(), StorageKind::File);
    }

    #[test]
    fn plain_paths_are_literal() {
        let u = parse("/d/x.zarr");
        assert_eq!(u.scheme, None);
        assert_eq!(u.path, "/d/x.zarr");
        assert!(u.modes.is_empty());
        assert_eq!(u.storage_kind(), StorageKind::File);
        assert_eq!(parse("rel/x.zarr").path, "rel/x.zarr");
        assert_eq!(parse("/d/a%20b#c").path, "/d/a%20b#c");
        assert_eq!(parse("C:/data/x.zarr").scheme, None);
    }

    #[test]
    fn localhost_and_percent_escapes() {
        let u = parse("file://localhost/d/x");
        assert_eq!(u.host.as_deref(), Some("localhost"));
        assert_eq!(u.path, "/d/x");
        assert_eq!(parse("file:///d/my%20data.zarr").path, "/d/my data.zarr");
        assert_eq!(parse("file:///d/gr%C3%BCn").path, "/d/grün");
        assert_eq!(parse("file:/d/x").path, "/d/x");
    }

    #[test]
    fn remote_urls() {
        let u = parse("https://s3.us-east-1.amazonaws.com/bucket/key#mode=s3,s3,nczarr");
        assert_eq!(u.scheme.as_deref(), Some("https"));
        assert_eq!(u.host.as_deref(), Some("s3.us-east-1.amazonaws.com"));
        assert_eq!(u.port, None);
        assert_eq!(u.path, "/bucket/key");
        assert_eq!(u.modes, ["s3", "nczarr"]);
        assert_eq!(u.storage_kind(), StorageKind::S3);

        let u = parse("http://127.0.0.1:9000/bucket/key#mode=zarr,s3");
        assert_eq!(u.host.as_deref(), Some("127.0.0.1"));
        assert_eq!(u.port, Some(9000));
        assert_eq!(u.path, "/bucket/key");
        assert_eq!(u.flavor(), Flavor::PureZarr);

        let u = parse("http://[::1]:9000/b/k?versionId=3#mode=zarr");
        assert_eq!((u.host.as_deref(), u.port), (Some("::1"), Some(9000)));
        assert_eq!(u.query.as_deref(), Some("versionId=3"));
        assert_eq!(u.storage_kind(), StorageKind::S3);
        assert_eq!(parse("s3://bucket/k").host.as_deref(), Some("bucket"));
    }

    #[test]
    fn fragment_parameters() {
        let u = parse("file:///d/x#mode=nczarr,s3&aws.profile=none&AWS.Region=eu-west-1&log");
        assert_eq!(u.modes, ["nczarr", "s3"]);
        assert_eq!(u.param("aws.profile"), Some("none"));
        assert_eq!(u.param("aws.region"), Some("eu-west-1"));
        assert_eq!(u.param("log"), Some(""));
        assert_eq!(u.param("mode"), None);
        assert_eq!(u.storage_kind(), StorageKind::S3);
        let two = parse("file:///d/x#mode=nczarr&mode=zarr,nczarr");
        assert_eq!(two.modes, ["nczarr", "zarr"]);
    }

    #[test]
    fn web_urls_may_give_a_login_never_shown() {
        // As libnetcdf hands it over: `#`, `?` and `/` of a password unescaped.
        for (given, shown) in [
            (
                "https://u:p#a?b/c@h.org/x#mode=zarr,http",
                "https://u:***@h.org/x#mode=zarr,http",
            ),
            ("https://TOKEN@h.org/x", "https://***@h.org/x"),
            ("https://h.org:8443/a@b", "https://h.org:***@b"),
            ("https://h.org/a@b", "https://h.org/a@b"),
        ] {
            assert_eq!(redacted(given), shown);
        }
        for (refused, secret) in [
            ("https://u:p#a@h.org/x#mode=zarr,http", "p#a"),
            ("https://token@h.org/x#mode=zarr,http", "token"),
            ("https://u:@h.org/x#mode=zarr,http", "u:@"),
            ("https://u:pw@h.org/x#mode=zarr,s3", "pw"),
        ] {
            let got = DatasetUrl::parse(refused);
            assert!(
                matches!(&got, Err(Error::Url { url, why }) if !url.contains(secret)
                    && !why.contains(secret)),
                "{refused}: {got:?}"
            );
        }
        let u = parse("https://al%20ice:p%40ss:w@Data.org:8443/x.zarr#mode=zarr,http");
        let login = u.login.clone().unwrap();
        assert_eq!(
            (login.user.as_str(), login.password.as_str()),
            ("al ice", "p@ss:w")
        );
        assert_eq!((u.host.as_deref(), u.port), (Some("data.org"), Some(8443)));
        assert_eq!(
            u.original,
            "https://al%20ice:***@Data.org:8443/x.zarr#mode=zarr,http"
        );
        assert!(!format!("{u:?}").contains("p%40ss") && !format!("{u:?}").contains("p@ss"));
        let refused = DatasetUrl::parse("s3://key:secret@bucket/x#mode=zarr,s3");
        assert!(
            matches!(&refused, Err(Error::Url { url, .. }) if !url.contains("secret")),
            "{refused:?}"
        );
    }

    #[test]
    fn garbage_is_refused() {
        for bad in [
            "",
            "   ",
            "file://",
            "file:",
            "file:x.zarr",
            "file://host/d/x",
            "file:///d/x%zz",
            "file:///d/x%4",
            "file:///d/%ff",
            "https:///bucket/key",
            "http://h:99999/b",
            "s3://user:pw@h/b",
            "file://user@/d/x",
            "ftp://h/x",
            "file:///d/x#mode=%g1",
        ] {
            match DatasetUrl::parse(bad) {
                Err(Error::Url { .. }) => {}
                other => panic!("{bad:?} gave {other:?}"),
            }
        }
    }

    #[test]
    fn consolidated_switches() {
        assert!(parse("file:///d/x#mode=nczarr,consolidated").consolidated());
        for yes in ["1", "7", "true", "TRUE", "Yes", " yes "] {
            assert!(truthy(yes), "{yes:?}");
        }
        for no in ["", "0", "-1", "false", "no", "y", "on"] {
            assert!(!truthy(no), "{no:?}");
        }
    }
}
