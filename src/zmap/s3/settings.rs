//! Where an S3 dataset lives and how to reach it: bucket, root key, endpoint, region,
//! credentials, and the client's limits.
//!
//! Owns the reading of the URL forms (`s3://bucket/key`, path style, virtual host, Google Cloud
//! Storage, any S3-compatible `http(s)://host:port/bucket/key`) and the precedence of the
//! fragment keys, the `AWS_*` environment variables and the shared AWS configuration files.
//! Environment lookups go through a function so that tests can supply their own. It knows
//! nothing of HTTP or of the client library.
//!
//! Precedence (first found wins; README.md "S3" documents the same list):
//! - endpoint: fragment `aws.endpoint`, `AWS_ENDPOINT_URL_S3`, `AWS_ENDPOINT_URL`, profile
//!   `endpoint_url`, the URL's own host when it is not an AWS host, else AWS for the region;
//! - region: fragment `aws.region`, the region in an AWS host name of the URL (unless an
//!   endpoint override is in force), `AWS.REGION` in netCDF's rc files ([`crate::rcfile`]),
//!   `AWS_REGION`, `AWS_DEFAULT_REGION`, profile `region`, `us-east-1`;
//! - profile: fragment `aws.profile`, `AWS.PROFILE` in the rc files, `AWS_PROFILE`, `default`;
//!   an rc file entry scoped to a URL applies when that URL names the dataset's bucket (or
//!   endpoint) and a prefix of its key, and then beats an unscoped one;
//! - credentials: as [`super::chain`] chooses them.

pub use super::chain::{ContainerAgent, Credentials};
use super::chain::{ProfileNamedBy, resolve_credentials};
use super::profiles::Profiles;
use crate::env::value as env_value;
use crate::error::{Error, Result};
use crate::rcfile::RcFiles;
use crate::url::DatasetUrl;
use crate::zmap::StorePrefix;
use crate::zmap::remote::Transfer;
use std::path::PathBuf;

const DEFAULT_REGION: &str = "us-east-1";
const GOOGLE_ENDPOINT: &str = "https://storage.googleapis.com";

/// Everything needed to talk to the bucket that holds one dataset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Settings {
    pub bucket: String,
    /// Key of the dataset root inside the bucket, without leading or trailing `/`
    /// (empty: the bucket root).
    pub root: String,
    /// `scheme://host[:port]` of an S3-compatible service; `None` means AWS for `region`.
    pub endpoint: Option<String>,
    pub region: String,
    pub credentials: Credentials,
    /// Where the credentials came from ("environment", "profile dev", "anonymous").
    pub credentials_source: String,
    pub transfer: Transfer,
}

/// Bucket, root and what the URL's host says about endpoint and region.
#[derive(Debug, PartialEq, Eq)]
struct Location {
    bucket: String,
    root: String,
    endpoint: Option<String>,
    region: Option<String>,
}

fn url_error(url: &DatasetUrl, why: impl Into<String>) -> Error {
    Error::Url {
        url: url.original.clone(),
        why: why.into(),
    }
}

/// `bucket/key/...` -> (bucket, key).
fn split_bucket(path: &str) -> (String, String) {
    let path = path.trim_matches('/');
    match path.split_once('/') {
        Some((b, k)) => (b.to_string(), k.to_string()),
        None => (path.to_string(), String::new()),
    }
}

/// Reads an AWS host name: `s3[.region].amazonaws.com` (path style) or
/// `bucket.s3[.region].amazonaws.com` (virtual host). Returns (bucket if virtual, region).
fn aws_host(host: &str) -> Option<(Option<String>, Option<String>)> {
    let stem = host.strip_suffix(".amazonaws.com")?;
    let region_of = |rest: &str| {
        let region = rest.trim_start_matches("dualstack.");
        (!region.is_empty()).then(|| region.to_string())
    };
    if stem == "s3" {
        return Some((None, None));
    }
    if let Some(rest) = stem.strip_prefix("s3.") {
        return Some((None, region_of(rest)));
    }
    if let Some(rest) = stem.strip_prefix("s3-") {
        return Some((None, region_of(rest)));
    }
    if let Some((bucket, rest)) = stem.split_once(".s3.") {
        return Some((Some(bucket.to_string()), region_of(rest)));
    }
    stem.strip_suffix(".s3")
        .map(|bucket| (Some(bucket.to_string()), None))
}

fn locate(url: &DatasetUrl) -> Result<Location> {
    let scheme = url.scheme.as_deref().unwrap_or("");
    let host = url
        .host
        .clone()
        .ok_or_else(|| url_error(url, "no bucket or host"))?;
    let mut loc = match scheme {
        "s3" | "gs3" => Location {
            bucket: host,
            root: url.path.trim_matches('/').to_string(),
            endpoint: (scheme == "gs3").then(|| GOOGLE_ENDPOINT.to_string()),
            region: None,
        },
        "http" | "https" => match aws_host(&host) {
            Some((Some(bucket), region)) => Location {
                bucket,
                root: url.path.trim_matches('/').to_string(),
                endpoint: None,
                region,
            },
            Some((None, region)) => {
                let (bucket, root) = split_bucket(&url.path);
                Location {
                    bucket,
                    root,
                    endpoint: None,
                    region,
                }
            }
            None => {
                let (bucket, root) = split_bucket(&url.path);
                let host_text = if host.contains(':') {
                    format!("[{host}]")
                } else {
                    host
                };
                let port = url.port.map(|p| format!(":{p}")).unwrap_or_default();
                Location {
                    bucket,
                    root,
                    endpoint: Some(format!("{scheme}://{host_text}{port}")),
                    region: None,
                }
            }
        },
        other => return Err(url_error(url, format!("scheme {other:?} is not S3"))),
    };
    if loc.bucket.is_empty() {
        return Err(url_error(url, "no bucket name"));
    }
    if loc.bucket.contains(['/', '\\']) || loc.bucket.chars().any(char::is_control) {
        return Err(url_error(url, format!("bad bucket name {:?}", loc.bucket)));
    }
    loc.root = loc.root.trim_matches('/').to_string();
    StorePrefix::new(&loc.root).map_err(|e| url_error(url, e.to_string()))?;
    Ok(loc)
}

/// The shared AWS files named by the environment (or below `$HOME/.aws`).
fn profile_files(env: &dyn Fn(&str) -> Option<String>) -> (Option<PathBuf>, Option<PathBuf>) {
    let home = env_value(env, "HOME").map(PathBuf::from);
    let file = |var: &str, name: &str| {
        env_value(env, var)
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".aws").join(name)))
    };
    (
        file("AWS_CONFIG_FILE", "config"),
        file("AWS_SHARED_CREDENTIALS_FILE", "credentials"),
    )
}

/// `host[:port]` of a parsed URL.
fn host_port(u: &DatasetUrl) -> Option<String> {
    let host = u.host.as_deref()?;
    Some(match u.port {
        Some(p) => format!("{host}:{p}"),
        None => host.to_string(),
    })
}

/// True when an rc file entry scoped to `scope` applies to the dataset at `url`, located at
/// `loc` and reached through `endpoint`: the scope names the same host (and port) as one of the
/// dataset's forms (the URL as given, `s3://bucket/root`, the endpoint with the path
/// `/bucket/root`, or on AWS `https://s3.REGION.amazonaws.com/bucket/root` as libnetcdf
/// rewrites it), and its path is empty or a whole-segment prefix of that form's path.
fn scope_applies(
    scope: &DatasetUrl,
    url: &DatasetUrl,
    loc: &Location,
    endpoint: Option<&str>,
) -> bool {
    let Some(scope_host) = host_port(scope) else {
        return false;
    };
    let wanted = scope.path.trim_end_matches('/');
    let in_bucket = if loc.root.is_empty() {
        format!("/{}", loc.bucket)
    } else {
        format!("/{}/{}", loc.bucket, loc.root)
    };
    let endpoint_host = endpoint
        .and_then(|e| DatasetUrl::parse(e).ok())
        .and_then(|e| host_port(&e));
    // On AWS, libnetcdf's rewritten form: path style on the regional host, whatever region
    // the scope names.
    let aws_host = (endpoint.is_none()
        && (scope_host == "s3.amazonaws.com"
            || scope_host.starts_with("s3.") && scope_host.ends_with(".amazonaws.com")))
    .then(|| (scope_host.clone(), in_bucket.clone()));
    let forms = [
        host_port(url).map(|h| (h, url.path.clone())),
        Some((loc.bucket.to_ascii_lowercase(), format!("/{}", loc.root))),
        endpoint_host.map(|h| (h, in_bucket)),
        aws_host,
    ];
    forms.into_iter().flatten().any(|(host, path)| {
        let path = path.trim_end_matches('/');
        host == scope_host
            && (wanted.is_empty()
                || path == wanted
                || path
                    .strip_prefix(wanted)
                    .is_some_and(|r| r.starts_with('/')))
    })
}

impl S3Settings {
    /// True for Google Cloud Storage's S3 interface (which has no bulk delete): an endpoint
    /// on a host of `googleapis.com`, however spelled (regional and private hosts too).
    pub fn is_google(&self) -> bool {
        self.endpoint
            .as_deref()
            .and_then(|e| reqwest::Url::parse(e).ok())
            .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
            .is_some_and(|host| host == "googleapis.com" || host.ends_with(".googleapis.com"))
    }

    /// Resolves the settings for `url`, reading the environment through `env` and the shared
    /// AWS files it names.
    pub fn resolve(url: &DatasetUrl, env: &dyn Fn(&str) -> Option<String>) -> Result<S3Settings> {
        let loc = locate(url)?;
        let fragment = |key: &str| {
            url.param(key)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let rc = RcFiles::load(env, std::env::current_dir().ok().as_deref());
        let early_endpoint = fragment("aws.endpoint")
            .or_else(|| env_value(env, "AWS_ENDPOINT_URL_S3"))
            .or_else(|| env_value(env, "AWS_ENDPOINT_URL"))
            .or_else(|| loc.endpoint.clone());
        let applies =
            |scope: &DatasetUrl| scope_applies(scope, url, &loc, early_endpoint.as_deref());
        let from_rc = |key: &str| {
            rc.get_for(key, &applies)
                .filter(|v| !v.is_empty())
                .map(str::to_string)
        };
        let (profile, named) =
            if let Some(p) = fragment("aws.profile").or_else(|| from_rc("AWS.PROFILE")) {
                (p, ProfileNamedBy::Choice)
            } else if let Some(p) = env_value(env, "AWS_PROFILE") {
                (p, ProfileNamedBy::Environment)
            } else {
                ("default".to_string(), ProfileNamedBy::Default)
            };
        let (config, credentials_file) = profile_files(env);
        let profiles = Profiles::load(config.as_deref(), credentials_file.as_deref());
        let from_profile = |key: &str| profiles.get(&profile, key).map(str::to_string);

        let overridden = fragment("aws.endpoint")
            .or_else(|| env_value(env, "AWS_ENDPOINT_URL_S3"))
            .or_else(|| env_value(env, "AWS_ENDPOINT_URL"))
            .or_else(|| from_profile("endpoint_url"));
        let endpoint = match overridden.as_deref() {
            Some(e) => Some(check_endpoint(url, e)?),
            None => loc.endpoint.clone(),
        };
        let region = fragment("aws.region")
            .or_else(|| overridden.is_none().then(|| loc.region.clone()).flatten())
            .or_else(|| from_rc("AWS.REGION"))
            .or_else(|| env_value(env, "AWS_REGION"))
            .or_else(|| env_value(env, "AWS_DEFAULT_REGION"))
            .or_else(|| from_profile("region"))
            .unwrap_or_else(|| DEFAULT_REGION.to_string());
        let (credentials, credentials_source) =
            resolve_credentials(named, env, &profiles, &profile)?;
        Ok(S3Settings {
            bucket: loc.bucket,
            root: loc.root,
            endpoint,
            region,
            credentials,
            credentials_source,
            transfer: Transfer::from_env(env)?,
        })
    }
}

/// An endpoint must be `http(s)://host[:port]` (a trailing `/` is dropped).
fn check_endpoint(url: &DatasetUrl, endpoint: &str) -> Result<String> {
    let e = endpoint.trim_end_matches('/');
    let ok = e
        .split_once("://")
        .is_some_and(|(s, rest)| (s == "http" || s == "https") && !rest.is_empty());
    if !ok {
        return Err(url_error(
            url,
            format!("endpoint {endpoint:?} is not http(s)://host[:port]"),
        ));
    }
    Ok(e.to_string())
}

#[cfg(test)]
mod tests {
    use super::super::chain::{METADATA_ENDPOINT, METADATA_ENDPOINT_IPV6};
    use super::*;
    use std::collections::HashMap;

    /// Settings for `text` in the environment `vars` alone: no rc file of the current
    /// directory, unless `vars` name one.
    fn resolve(text: &str, vars: &[(&str, &str)]) -> Result<S3Settings> {
        let mut map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        if !map.keys().any(|k| k.starts_with("NCRCENV_")) {
            map.insert("NCRCENV_IGNORE".into(), String::new());
        }
        let url = DatasetUrl::parse(text).unwrap();
        S3Settings::resolve(&url, &|k| map.get(k).cloned())
    }

    fn ok(text: &str, vars: &[(&str, &str)]) -> S3Settings {
        resolve(text, vars).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    /// What is left when nothing names credentials: the instance's role, if it has one.
    fn instance_role() -> Credentials {
        Credentials::InstanceRole {
            metadata_endpoint: METADATA_ENDPOINT.into(),
            configured: false,
        }
    }

    fn keys(id: &str, secret: &str, token: Option<&str>) -> Credentials {
        Credentials::Keys {
            access_key_id: id.into(),
            secret_access_key: secret.into(),
            session_token: token.map(str::to_string),
        }
    }

    #[test]
    fn url_forms() {
        let cases = [
            ("s3://bkt/a/b#mode=nczarr,s3", "bkt", "a/b", None, None),
            (
                "https://s3.eu-west-1.amazonaws.com/bkt/a/b#mode=s3,s3,nczarr",
                "bkt",
                "a/b",
                None,
                Some("eu-west-1"),
            ),
            (
                "https://s3.amazonaws.com/bkt/k/#mode=nczarr,s3",
                "bkt",
                "k",
                None,
                None,
            ),
            (
                "https://bkt.s3.us-west-2.amazonaws.com/x.zarr#mode=zarr,s3",
                "bkt",
                "x.zarr",
                None,
                Some("us-west-2"),
            ),
            (
                "https://my.bkt.s3.amazonaws.com/x#mode=nczarr,s3",
                "my.bkt",
                "x",
                None,
                None,
            ),
            (
                "http://127.0.0.1:9000/bkt/x.zarr#mode=zarr,s3",
                "bkt",
                "x.zarr",
                Some("http://127.0.0.1:9000"),
                None,
            ),
            (
                "https://[::1]:9000/bkt#mode=zarr,s3",
                "bkt",
                "",
                Some("https://[::1]:9000"),
                None,
            ),
            (
                "gs3://gbkt/d/x#mode=nczarr,s3",
                "gbkt",
                "d/x",
                Some(GOOGLE_ENDPOINT),
                None,
            ),
            (
                "https://storage.googleapis.com/gbkt/d#mode=nczarr,s3",
                "gbkt",
                "d",
                Some(GOOGLE_ENDPOINT),
                None,
            ),
        ];
        for (text, bucket, root, endpoint, region) in cases {
            let s = ok(text, &[]);
            assert_eq!(
                (s.bucket.as_str(), s.root.as_str(), s.endpoint.as_deref()),
                (bucket, root, endpoint),
                "{text}"
            );
            assert_eq!(s.region, region.unwrap_or(DEFAULT_REGION), "{text}");
            assert_eq!(s.credentials, instance_role(), "{text}");
            assert_eq!(s.is_google(), endpoint == Some(GOOGLE_ENDPOINT), "{text}");
        }
        let at = |endpoint: &str| S3Settings {
            endpoint: Some(endpoint.into()),
            ..ok("s3://b/k#mode=s3", &[])
        };
        for google in [
            "https://Storage.GoogleApis.com:443/",
            "http://storage.googleapis.com",
            "https://storage.europe-west3.rep.googleapis.com",
        ] {
            assert!(at(google).is_google(), "{google}");
        }
        for other in [
            "https://s3.amazonaws.com",
            "https://googleapis.com.example.org",
        ] {
            assert!(!at(other).is_google(), "{other}");
        }
        for bad in [
            "https://s3.amazonaws.com/#mode=s3",
            "s3://b/a//c#mode=s3",
            "s3://b/a/../c#mode=s3",
        ] {
            assert!(matches!(resolve(bad, &[]), Err(Error::Url { .. })), "{bad}");
        }
    }

    #[test]
    fn endpoint_overrides_beat_the_rewritten_host() {
        // What libnetcdf 4.9.0 hands over for `s3://bkt/key` and for an http endpoint.
        let rewritten = "https://s3.us-east-1.amazonaws.com/bkt/key#mode=s3,s3,nczarr";
        let env = [("AWS_ENDPOINT_URL", "http://127.0.0.1:9000/")];
        let s = ok(rewritten, &env);
        assert_eq!(s.endpoint.as_deref(), Some("http://127.0.0.1:9000"));
        assert_eq!((s.bucket.as_str(), s.root.as_str()), ("bkt", "key"));
        let both = [
            ("AWS_ENDPOINT_URL", "http://a:1"),
            ("AWS_ENDPOINT_URL_S3", "http://b:2"),
        ];
        assert_eq!(ok(rewritten, &both).endpoint.as_deref(), Some("http://b:2"));
        let frag = format!("{rewritten}&aws.endpoint=http://c:3");
        assert_eq!(ok(&frag, &both).endpoint.as_deref(), Some("http://c:3"));
        let https_local = "https://127.0.0.1:9000/bkt/k#mode=zarr,s3";
        assert_eq!(
            ok(https_local, &env).endpoint.as_deref(),
            Some("http://127.0.0.1:9000")
        );
        let bad = format!("{rewritten}&aws.endpoint=ftp://x");
        assert!(matches!(resolve(&bad, &[]), Err(Error::Url { .. })));
    }

    #[test]
    fn region_precedence() {
        let url = "https://s3.eu-west-1.amazonaws.com/b/k#mode=nczarr,s3";
        let env = [("AWS_REGION", "ap-south-1"), ("AWS_DEFAULT_REGION", "x")];
        assert_eq!(ok(url, &env).region, "eu-west-1");
        assert_eq!(
            ok(&format!("{url}&aws.region=sa-east-1"), &env).region,
            "sa-east-1"
        );
        let over = [
            ("AWS_REGION", "ap-south-1"),
            ("AWS_ENDPOINT_URL", "http://h:1"),
        ];
        assert_eq!(ok(url, &over).region, "ap-south-1");
        assert_eq!(ok("s3://b/k#mode=s3", &env).region, "ap-south-1");
        assert_eq!(
            ok("s3://b/k#mode=s3", &[("AWS_DEFAULT_REGION", "x")]).region,
            "x"
        );
    }

    fn aws_dir(config: &str, credentials: &str) -> tempfile::TempDir {
        let dir = tempfile::TempDir::new().unwrap();
        std::fs::create_dir(dir.path().join(".aws")).unwrap();
        std::fs::write(dir.path().join(".aws/config"), config).unwrap();
        std::fs::write(dir.path().join(".aws/credentials"), credentials).unwrap();
        dir
    }

    #[test]
    fn credential_precedence() {
        let home = aws_dir(
            "[default]\nregion = eu-north-1\n[profile dev]\nregion = us-west-1\n\
             endpoint_url = http://devhost:9000\n",
            "[default]\naws_access_key_id = DEF\naws_secret_access_key = defsecret\n\
             [dev]\naws_access_key_id = DEV\naws_secret_access_key = devsecret\n\
             aws_session_token = devtoken\n",
        );
        let h = home.path().to_str().unwrap();
        let url = "s3://b/k#mode=nczarr,s3";
        let env_keys = [
            ("HOME", h),
            ("AWS_ACCESS_KEY_ID", "ENV"),
            ("AWS_SECRET_ACCESS_KEY", "envsecret"),
            ("AWS_SESSION_TOKEN", "envtoken"),
        ];

        let s = ok(url, &[("HOME", h)]);
        assert_eq!(s.credentials, keys("DEF", "defsecret", None));
        assert_eq!(
            (s.region.as_str(), s.endpoint.as_deref()),
            ("eu-north-1", None)
        );

        let s = ok(url, &env_keys);
        assert_eq!(s.credentials, keys("ENV", "envsecret", Some("envtoken")));
        assert_eq!(s.credentials_source, "environment");

        let with_profile = [env_keys.as_slice(), &[("AWS_PROFILE", "dev")]].concat();
        let s = ok(url, &with_profile);
        assert_eq!(s.credentials, keys("ENV", "envsecret", Some("envtoken")));
        assert_eq!(s.region, "us-west-1");
        assert_eq!(s.endpoint.as_deref(), Some("http://devhost:9000"));

        let s = ok(url, &[("HOME", h), ("AWS_PROFILE", "dev")]);
        assert_eq!(s.credentials, keys("DEV", "devsecret", Some("devtoken")));

        let s = ok(&format!("{url}&aws.profile=dev"), &env_keys);
        assert_eq!(s.credentials, keys("DEV", "devsecret", Some("devtoken")));
        assert_eq!(s.credentials_source, "profile dev");

        for anon in ["none", "no", "NONE"] {
            let s = ok(&format!("{url}&aws.profile={anon}"), &env_keys);
            assert_eq!(s.credentials, Credentials::Anonymous);
            let s = ok(url, &[("HOME", h), ("AWS_PROFILE", anon)]);
            assert_eq!(s.credentials, Credentials::Anonymous);
        }

        let elsewhere = aws_dir(
            "",
            "[other]\naws_access_key_id=O\naws_secret_access_key=o\n",
        );
        let other_credentials = elsewhere.path().join(".aws/credentials");
        let other_config = elsewhere.path().join(".aws/config");
        let files = [
            ("HOME", h),
            (
                "AWS_SHARED_CREDENTIALS_FILE",
                other_credentials.to_str().unwrap(),
            ),
            ("AWS_CONFIG_FILE", other_config.to_str().unwrap()),
        ];
        assert_eq!(ok(url, &files).credentials, instance_role());
        let s = ok(&format!("{url}&aws.profile=other"), &files);
        assert_eq!(s.credentials, keys("O", "o", None));

        for missing in [
            resolve(&format!("{url}&aws.profile=ghost"), &[("HOME", h)]),
            resolve(url, &[("HOME", h), ("AWS_PROFILE", "ghost")]),
            resolve(url, &[("AWS_ACCESS_KEY_ID", "half")]),
        ] {
            assert!(matches!(missing, Err(Error::Auth(_))), "{missing:?}");
        }
        assert!(!format!("{:?}", ok(url, &env_keys)).contains("envsecret"));
    }

    /// netCDF's rc files name a profile and a region after the fragment, before the
    /// environment; an entry scoped to the dataset's bucket and key prefix, or endpoint, wins.
    #[test]
    fn rc_files_name_the_profile_and_region() {
        let home = aws_dir(
            "[profile dev]\nregion = us-west-1\n[profile empty]\nregion = x\n",
            "[dev]\naws_access_key_id = DEV\naws_secret_access_key = d\n\
             [other]\naws_access_key_id = OTHER\naws_secret_access_key = o\n\
             [default]\naws_access_key_id = DEF\naws_secret_access_key = f\n",
        );
        std::fs::write(
            home.path().join(".ncrc"),
            "AWS.PROFILE=dev\nAWS.REGION=ap-south-1\n[s3://b/special]AWS.PROFILE=other\n\
             [http://minio:9000]AWS.REGION=minio-region\n\
             [https://s3.eu-west-3.amazonaws.com/b/rewritten]AWS.PROFILE=other\n\
             [https://s3.us-east-1.amazonaws.com/b/pathstyle]AWS.PROFILE=other\n",
        )
        .unwrap();
        let h = home.path().to_str().unwrap();
        let at = |url: &str, extra: &[(&str, &str)]| {
            let vars = [[("HOME", h), ("NCRCENV_HOME", h)].as_slice(), extra].concat();
            let s = ok(url, &vars);
            let id = match s.credentials {
                Credentials::Keys { access_key_id, .. } => access_key_id,
                other => format!("{other:?}"),
            };
            (id, s.region)
        };
        let got = |id: &str, region: &str| (id.to_string(), region.to_string());
        assert_eq!(at("s3://b/k#mode=s3", &[]), got("DEV", "ap-south-1"));
        assert_eq!(
            at(
                "s3://b/k#mode=s3",
                &[("AWS_PROFILE", "other"), ("AWS_REGION", "r")]
            ),
            got("DEV", "ap-south-1"),
            "the rc files come before the environment"
        );
        assert_eq!(
            at("s3://b/k#mode=s3&aws.profile=other&aws.region=frag", &[]),
            got("OTHER", "frag"),
            "the fragment comes before the rc files"
        );
        assert_eq!(at("s3://b/special/x#mode=s3", &[]).0, "OTHER");
        assert_eq!(at("s3://b/special#mode=s3", &[]).0, "OTHER");
        assert_eq!(
            at("s3://b/specialty#mode=s3", &[]).0,
            "DEV",
            "whole segments"
        );
        assert_eq!(
            at("s3://c/special/x#mode=s3", &[]).0,
            "DEV",
            "another bucket"
        );
        assert_eq!(
            at("s3://b/pathstyle/x#mode=s3", &[]).0,
            "OTHER",
            "a scope in libnetcdf's rewritten form applies to s3://"
        );
        let elsewhere = [("AWS_ENDPOINT_URL", "http://minio:9000")];
        assert_eq!(
            at("s3://b/pathstyle/x#mode=s3", &elsewhere).0,
            "DEV",
            "not on another endpoint"
        );
        assert_eq!(
            at(
                "https://s3.eu-west-3.amazonaws.com/b/rewritten/x#mode=s3",
                &[]
            ),
            got("OTHER", "eu-west-3"),
            "libnetcdf's rewritten URL; the host's region comes first"
        );
        assert_eq!(
            at(
                "s3://b/k#mode=s3",
                &[("AWS_ENDPOINT_URL", "http://minio:9000")]
            )
            .1,
            "minio-region",
            "an entry scoped to the endpoint"
        );
        assert_eq!(
            at("s3://b/k#mode=s3", &[("NCRCENV_IGNORE", "1")]),
            got("DEF", "us-east-1")
        );
        let keyless = home.path().join("keyless-rc");
        std::fs::write(&keyless, "AWS.PROFILE=empty\n").unwrap();
        let named_keyless = resolve(
            "s3://b/k#mode=s3",
            &[("HOME", h), ("NCRCENV_RC", keyless.to_str().unwrap())],
        );
        assert!(
            matches!(&named_keyless, Err(Error::Auth(why)) if why.contains("\"empty\"")),
            "a profile the rc files name must hold credentials: {named_keyless:?}"
        );
    }

    /// A profile's single sign-on role, in the session form and the older one: the token
    /// cache is named by the session (or start URL), the portal by its region.
    #[test]
    fn single_sign_on_profiles_name_the_role_and_the_token_cache() {
        let home = aws_dir(
            "[profile modern]\nsso_session = corp\nsso_account_id = 111122223333\n\
             sso_role_name = Reader\n[sso-session corp]\nsso_region = eu-central-1\n\
             sso_start_url = https://corp.awsapps.com/start\n\
             [profile legacy]\nsso_start_url = https://old.awsapps.com/start\n\
             sso_region = us-east-2\nsso_account_id = 444455556666\nsso_role_name = Writer\n\
             [profile partial]\nsso_session = corp\n\
             [profile both]\nsso_session = corp\nsso_account_id = 1\nsso_role_name = R\n\
             [profile assumed]\nrole_arn = arn:aws:iam::1:role/a\nsource_profile = legacy\n\
             region = eu-north-1\nexternal_id = ext\n\
             [profile chained]\nrole_arn = arn:aws:iam::1:role/c\nsource_profile = assumed\n\
             [profile mfa]\nrole_arn = arn:aws:iam::1:role/m\nsource_profile = legacy\n\
             mfa_serial = arn:aws:iam::1:mfa/u\n\
             [profile loop-a]\nrole_arn = arn:aws:iam::1:role/x\nsource_profile = loop-b\n\
             [profile loop-b]\nrole_arn = arn:aws:iam::1:role/y\nsource_profile = loop-a\n\
             [profile from-env]\nrole_arn = arn:aws:iam::1:role/e\ncredential_source = Environment\n",
            "[both]\naws_access_key_id = OLD\naws_secret_access_key = old\n",
        );
        let h = home.path().to_str().unwrap();
        let url = "s3://b/k#mode=s3";
        let cache = home.path().join(".aws/sso/cache");
        let s = ok(url, &[("HOME", h), ("AWS_PROFILE", "modern")]);
        assert_eq!(
            s.credentials,
            Credentials::Sso {
                token_file: cache.join(format!(
                    "{}.json",
                    "ee0bfd2552fbd840c02cc48b6e823320543c450f"
                )),
                account_id: "111122223333".into(),
                role_name: "Reader".into(),
                portal: "https://portal.sso.eu-central-1.amazonaws.com".into(),
            }
        );
        let s = ok(
            url,
            &[
                ("HOME", h),
                ("AWS_PROFILE", "legacy"),
                ("AWS_ENDPOINT_URL_SSO", "http://127.0.0.1:9"),
            ],
        );
        assert!(
            matches!(&s.credentials, Credentials::Sso { token_file, role_name, portal, .. }
                if token_file == &cache.join("33d5ca4bf3b1a62edb96b47f7c203034a43ac435.json")
                    && role_name == "Writer"
                    && portal == "http://127.0.0.1:9"),
            "{s:?}"
        );
        let both = ok(url, &[("HOME", h), ("AWS_PROFILE", "both")]);
        assert!(
            matches!(both.credentials, Credentials::Sso { .. }),
            "single sign-on comes before keys, as in the AWS CLI: {both:?}"
        );
        let assumed = ok(url, &[("HOME", h), ("AWS_PROFILE", "assumed")]);
        let Credentials::AssumeRole {
            role_arn,
            external_id,
            source,
            region,
            ..
        } = &assumed.credentials
        else {
            panic!("{assumed:?}");
        };
        assert_eq!(
            (role_arn.as_str(), external_id.as_deref(), region.as_str()),
            ("arn:aws:iam::1:role/a", Some("ext"), "eu-north-1")
        );
        assert!(matches!(**source, Credentials::Sso { .. }), "{source:?}");
        let chained = ok(url, &[("HOME", h), ("AWS_PROFILE", "chained")]);
        assert!(
            matches!(&chained.credentials, Credentials::AssumeRole { source, .. }
                if matches!(**source, Credentials::AssumeRole { .. })),
            "a role assumed with an assumed role: {chained:?}"
        );
        let from_env = ok(
            &format!("{url}&aws.profile=from-env"),
            &[
                ("HOME", h),
                ("AWS_ACCESS_KEY_ID", "E"),
                ("AWS_SECRET_ACCESS_KEY", "e"),
            ],
        );
        assert!(
            matches!(&from_env.credentials, Credentials::AssumeRole { source, .. }
                if **source == keys("E", "e", None)),
            "{from_env:?}"
        );
        for (profile, why) in [
            ("mfa", "MFA code"),
            ("loop-a", "a loop"),
            ("from-env", "credential_source Environment"),
        ] {
            let refused = resolve(url, &[("HOME", h), ("AWS_PROFILE", profile)]);
            assert!(
                matches!(&refused, Err(Error::Auth(w)) if w.contains(why)),
                "{profile}: {refused:?}"
            );
        }
        let partial = resolve(url, &[("HOME", h), ("AWS_PROFILE", "partial")]);
        assert!(
            matches!(&partial, Err(Error::Auth(why)) if why.contains("sso_account_id")),
            "{partial:?}"
        );
    }

    /// After keys and profiles: a web identity token, then the container's agent, then the
    /// instance's role, unless the metadata service is disabled.
    #[test]
    fn credentials_fetched_from_services_come_after_keys_and_profiles() {
        let home = aws_dir(
            "[profile pod]\nweb_identity_token_file = /run/token\nrole_arn = arn:aws:iam::1:role/p\n\
             [profile ipv6]\nec2_metadata_service_endpoint_mode = IPv6\n\
             [profile helper]\ncredential_process = vault exec --json\n\
             [profile keyed]\ncredential_process = never run\n\
             [profile ecs-role]\nrole_arn = arn:aws:iam::1:role/e\ncredential_source = EcsContainer\n\
             [profile imds-role]\nrole_arn = arn:aws:iam::1:role/i\n\
             credential_source = Ec2InstanceMetadata\nec2_metadata_service_endpoint_mode = IPv6\n",
            "[keyed]\naws_access_key_id = K\naws_secret_access_key = k\n",
        );
        let h = home.path().to_str().unwrap();
        let url = "s3://b/k#mode=nczarr,s3";
        let web = [
            ("HOME", h),
            ("AWS_WEB_IDENTITY_TOKEN_FILE", "/var/token"),
            ("AWS_ROLE_ARN", "arn:aws:iam::1:role/r"),
            ("AWS_ROLE_SESSION_NAME", "s"),
            ("AWS_ENDPOINT_URL_STS", "https://sts.local:8443"),
        ];
        let container = [
            (
                "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                "/v2/credentials/x",
            ),
            ("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://127.0.0.1:9/c"),
            ("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", "/var/agent-token"),
        ];
        let web_identity = Credentials::WebIdentity {
            token_file: "/var/token".into(),
            role_arn: "arn:aws:iam::1:role/r".into(),
            session_name: Some("s".into()),
            sts_endpoint: Some("https://sts.local:8443".into()),
        };
        let relative = Credentials::Container(ContainerAgent::Relative("/v2/credentials/x".into()));
        let full = Credentials::Container(ContainerAgent::Full {
            uri: "http://127.0.0.1:9/c".into(),
            token_file: "/var/agent-token".into(),
        });
        let everything = [web.as_slice(), &container].concat();
        let s = ok(url, &everything);
        assert_eq!(s.credentials, web_identity);
        assert!(s.credentials_source.contains("/var/token"), "{s:?}");
        let with_keys = [
            everything.as_slice(),
            &[("AWS_ACCESS_KEY_ID", "E"), ("AWS_SECRET_ACCESS_KEY", "e")],
        ]
        .concat();
        assert_eq!(ok(url, &with_keys).credentials, keys("E", "e", None));
        let keyed = [everything.as_slice(), &[("AWS_PROFILE", "keyed")]].concat();
        assert_eq!(ok(url, &keyed).credentials, keys("K", "k", None));
        let source_of = |profile: &str| {
            let vars = [everything.as_slice(), &[("AWS_PROFILE", profile)]].concat();
            match ok(url, &vars).credentials {
                Credentials::AssumeRole { source, .. } => *source,
                other => panic!("{profile}: {other:?}"),
            }
        };
        assert_eq!(
            source_of("ecs-role"),
            relative,
            "credential_source EcsContainer is the container's agent, whatever else is set"
        );
        assert_eq!(
            source_of("imds-role"),
            Credentials::InstanceRole {
                metadata_endpoint: METADATA_ENDPOINT_IPV6.into(),
                configured: true,
            },
            "credential_source Ec2InstanceMetadata reads the profile's metadata settings"
        );
        let helper = [everything.as_slice(), &[("AWS_PROFILE", "helper")]].concat();
        assert_eq!(
            ok(url, &helper).credentials,
            Credentials::Process {
                command: "vault exec --json".into()
            }
        );
        let s = ok(&format!("{url}&aws.profile=pod"), &everything);
        assert_eq!(
            s.credentials,
            Credentials::WebIdentity {
                token_file: "/run/token".into(),
                role_arn: "arn:aws:iam::1:role/p".into(),
                session_name: None,
                sts_endpoint: Some("https://sts.local:8443".into()),
            }
        );
        let no_web = [[("HOME", h)].as_slice(), &container].concat();
        assert_eq!(ok(url, &no_web).credentials, relative);
        let only_full = [[("HOME", h)].as_slice(), &container[1..]].concat();
        assert_eq!(ok(url, &only_full).credentials, full);
        let untokened = resolve(url, &[("HOME", h), container[1]]);
        assert!(
            matches!(&untokened, Err(Error::Auth(why)) if why.contains("TOKEN_FILE")),
            "{untokened:?}"
        );

        assert_eq!(ok(url, &[("HOME", h)]).credentials, instance_role());
        let named = ok(
            url,
            &[("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:8/")],
        );
        assert_eq!(
            named.credentials,
            Credentials::InstanceRole {
                metadata_endpoint: "http://127.0.0.1:8".into(),
                configured: true,
            }
        );
        let s = ok(url, &[("HOME", h), ("AWS_PROFILE", "ipv6")]);
        assert!(
            matches!(&s.credentials, Credentials::InstanceRole { metadata_endpoint, configured: false }
                if metadata_endpoint == METADATA_ENDPOINT_IPV6),
            "{s:?}"
        );
        for off in ["true", "TRUE"] {
            let s = ok(url, &[("AWS_EC2_METADATA_DISABLED", off)]);
            assert_eq!(s.credentials, Credentials::Anonymous);
            assert_eq!(s.credentials_source, "anonymous");
        }
        assert_eq!(
            ok(url, &[("AWS_EC2_METADATA_DISABLED", "false")]).credentials,
            instance_role()
        );
    }
}
