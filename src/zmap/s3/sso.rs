//! Credentials of single sign-on (IAM Identity Center): the keys of an account's role, asked of
//! the sign-on portal with the token `aws sso login` left in the AWS tools' cache.
//!
//! Owns where that token is cached (`~/.aws/sso/cache/<SHA-1 of the session name, or of the
//! start URL for the older profile form>.json`), reading it (`accessToken`, `expiresAt`), and
//! the portal's `GetRoleCredentials` request and answer. An expired token is an error asking
//! for a new login: refreshing it is left to the AWS tools. It knows nothing of stores or
//! profiles.

use super::renewing::{Fetch, Fetched};
use async_trait::async_trait;
use object_store::aws::AwsCredential;
use serde::Deserialize;
use sha1::{Digest, Sha1};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The cached token of a sign-on session named `key` (the session's name, or the start URL of
/// a profile of the older form), below the home directory `home`.
pub fn token_file(home: &Path, key: &str) -> PathBuf {
    let digest = Sha1::digest(key.as_bytes());
    let name: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    home.join(".aws/sso/cache").join(format!("{name}.json"))
}

/// The part of the cached token that is read.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CachedToken {
    access_token: String,
    expires_at: String,
}

/// The portal's answer.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RoleCredentials {
    role_credentials: Keys,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Keys {
    access_key_id: String,
    secret_access_key: String,
    session_token: Option<String>,
    /// Milliseconds since the epoch.
    expiration: Option<u64>,
}

/// The role `role_name` of account `account_id`, asked of the portal at `portal` with the
/// token cached in `token_file`.
pub struct SsoRole {
    pub token_file: PathBuf,
    pub account_id: String,
    pub role_name: String,
    pub portal: String,
    pub client: reqwest::Client,
}

/// A time as the AWS tools write `expiresAt`: RFC 3339, or with `UTC` for the zone.
fn parse_time(text: &str) -> Option<SystemTime> {
    let text = text
        .strip_suffix("UTC")
        .map_or(text.to_string(), |t| format!("{t}Z"));
    chrono::DateTime::parse_from_rfc3339(&text)
        .ok()
        .map(SystemTime::from)
}

/// The token in the cache file's `text`, if it has not expired at `now`.
fn live_token(text: &str, now: SystemTime) -> Result<String, String> {
    let cached: CachedToken = serde_json::from_str(text)
        .map_err(|e| format!("the cached sign-on token is not readable: {e}"))?;
    let expires = parse_time(&cached.expires_at).ok_or_else(|| {
        format!(
            "the cached sign-on token's expiresAt {:?} is not a time",
            cached.expires_at
        )
    })?;
    if expires <= now {
        return Err("the sign-on session has expired: run `aws sso login`".into());
    }
    Ok(cached.access_token)
}

/// The keys in the portal's answer `body`.
fn read_answer(body: &[u8]) -> Result<Fetched, String> {
    let answer: RoleCredentials = serde_json::from_slice(body)
        .map_err(|e| format!("the portal's answer is not role credentials: {e}"))?;
    let keys = answer.role_credentials;
    Ok(Fetched {
        credential: AwsCredential {
            key_id: keys.access_key_id,
            secret_key: keys.secret_access_key,
            token: keys.session_token,
        },
        expires: keys
            .expiration
            .map(|ms| SystemTime::UNIX_EPOCH + Duration::from_millis(ms)),
    })
}

#[async_trait]
impl Fetch for SsoRole {
    async fn fetch(&self) -> Result<Fetched, String> {
        // Off the runtime's thread: a home directory on a stalled network file system must
        // not stop every other request.
        let file = self.token_file.clone();
        let read = tokio::task::spawn_blocking(move || std::fs::read_to_string(file))
            .await
            .map_err(|e| e.to_string())?;
        let text = read.map_err(|e| {
            format!(
                "no cached sign-on token in {} ({e}): run `aws sso login`",
                self.token_file.display()
            )
        })?;
        let token = live_token(&text, SystemTime::now())?;
        let url = reqwest::Url::parse_with_params(
            &format!(
                "{}/federation/credentials",
                self.portal.trim_end_matches('/')
            ),
            [
                ("role_name", self.role_name.as_str()),
                ("account_id", self.account_id.as_str()),
            ],
        )
        .map_err(|e| format!("bad portal address: {e}"))?;
        let response = self
            .client
            .get(url)
            .header("x-amz-sso_bearer_token", token)
            .send()
            .await
            .map_err(|e| format!("the portal did not answer: {e}"))?;
        let status = response.status();
        let body = response
            .bytes()
            .await
            .map_err(|e| format!("the portal's answer was cut short: {e}"))?;
        if !status.is_success() {
            let text = String::from_utf8_lossy(&body);
            return Err(format!("the portal refused ({status}): {}", text.trim()));
        }
        read_answer(&body)
    }

    fn describe(&self) -> String {
        format!(
            "single sign-on role {} of account {} at {}",
            self.role_name, self.account_id, self.portal
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_file_is_named_by_the_sha1_of_the_session() {
        let file = token_file(Path::new("/home/u"), "my-sso");
        let want = "/home/u/.aws/sso/cache/0ad374308c5a4e22f723adf10145eafad7c4031c.json";
        assert_eq!(file, PathBuf::from(want));
    }

    #[test]
    fn a_cached_token_is_used_until_it_expires() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_893_456_000); // 2030-01-01
        let cached = |at: &str| format!(r#"{{"accessToken":"tok","expiresAt":"{at}"}}"#);
        assert_eq!(
            live_token(&cached("2030-01-01T01:00:00Z"), now),
            Ok("tok".into())
        );
        assert_eq!(
            live_token(&cached("2030-01-01T01:00:00UTC"), now),
            Ok("tok".into())
        );
        let expired = live_token(&cached("2029-12-31T23:00:00Z"), now);
        assert!(
            matches!(&expired, Err(why) if why.contains("aws sso login")),
            "{expired:?}"
        );
        assert!(live_token(&cached("tomorrow"), now).is_err());
        assert!(live_token("{}", now).is_err());
    }

    #[test]
    fn the_portals_answer_gives_keys_and_their_expiry() {
        let body = br#"{"roleCredentials":{"accessKeyId":"A","secretAccessKey":"S","sessionToken":"T","expiration":1893456000000}}"#;
        let got = read_answer(body).unwrap();
        assert_eq!(got.credential.key_id, "A");
        assert_eq!(
            got.expires,
            Some(SystemTime::UNIX_EPOCH + Duration::from_secs(1_893_456_000))
        );
        assert!(read_answer(b"{}").is_err());
    }
}
