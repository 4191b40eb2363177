//! Credentials of a role assumed with other keys: STS `AssumeRole`, signed with the keys of the
//! profile's `source_profile` or `credential_source`.
//!
//! Owns the request (a SigV4-signed query to STS: role, session name, external id, one hour)
//! and reading its answer. Keeping the keys until they expire is [`super::renewing`]'s; the
//! source's keys come from their own provider. It knows nothing of stores or profiles.

use super::renewing::{Fetch, Fetched};
use crate::zmap::remote::full_chain;
use async_trait::async_trait;
use object_store::aws::{AwsAuthorizer, AwsCredential, AwsCredentialProvider};
use object_store::client::{HttpRequest, HttpRequestBody};
use serde::Deserialize;
use std::time::SystemTime;

/// The role `role_arn`, asked of STS at `sts` (signed for `region`) with the keys of `source`.
pub struct AssumedRole {
    pub source: AwsCredentialProvider,
    pub role_arn: String,
    pub session_name: Option<String>,
    pub external_id: Option<String>,
    pub sts: String,
    pub region: String,
    pub client: reqwest::Client,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct AssumeRoleResponse {
    assume_role_result: AssumeRoleResult,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct AssumeRoleResult {
    credentials: StsKeys,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct StsKeys {
    access_key_id: String,
    secret_access_key: String,
    session_token: String,
    expiration: String,
}

/// The keys in STS's answer `body`.
fn read_answer(body: &str) -> Result<Fetched, String> {
    let answer: AssumeRoleResponse = quick_xml::de::from_str(body)
        .map_err(|e| format!("STS's answer is not AssumeRole credentials: {e}"))?;
    let keys = answer.assume_role_result.credentials;
    let expires = chrono::DateTime::parse_from_rfc3339(&keys.expiration)
        .map_err(|e| format!("STS's Expiration {:?} is not a time: {e}", keys.expiration))?;
    Ok(Fetched {
        credential: AwsCredential {
            key_id: keys.access_key_id,
            secret_key: keys.secret_access_key,
            token: Some(keys.session_token),
        },
        expires: Some(SystemTime::from(expires)),
    })
}

impl AssumedRole {
    /// The query asking for the role.
    fn url(&self) -> Result<reqwest::Url, String> {
        let session = self.session_name.clone().unwrap_or_else(|| {
            let now = SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            format!("nczarr-rs-{now}")
        });
        let mut params = vec![
            ("Action", "AssumeRole"),
            ("Version", "2011-06-15"),
            ("RoleArn", self.role_arn.as_str()),
            ("RoleSessionName", session.as_str()),
            ("DurationSeconds", "3600"),
        ];
        if let Some(id) = &self.external_id {
            params.push(("ExternalId", id.as_str()));
        }
        reqwest::Url::parse_with_params(&format!("{}/", self.sts.trim_end_matches('/')), params)
            .map_err(|e| format!("bad STS address: {e}"))
    }
}

#[async_trait]
impl Fetch for AssumedRole {
    async fn fetch(&self) -> Result<Fetched, String> {
        let keys = self
            .source
            .get_credential()
            .await
            .map_err(|e| format!("no keys to assume it with: {}", full_chain(&e)))?;
        let url = self.url()?;
        let mut signed: HttpRequest = http::Request::builder()
            .method("GET")
            .uri(url.as_str())
            .body(HttpRequestBody::empty())
            .map_err(|e| format!("cannot make the request: {e}"))?;
        AwsAuthorizer::new(&keys, "sts", &self.region)
            .try_authorize(&mut signed, None)
            .map_err(|e| format!("cannot sign the request: {e}"))?;
        let response = self
            .client
            .get(url)
            .headers(signed.headers().clone())
            .send()
            .await
            .map_err(|e| format!("STS did not answer: {e}"))?;
        let status = response.status();
        let body = response
            .text()
            .await
            .map_err(|e| format!("STS's answer was cut short: {e}"))?;
        if !status.is_success() {
            return Err(format!("STS refused ({status}): {}", body.trim()));
        }
        read_answer(&body)
    }

    fn describe(&self) -> String {
        format!("role {} assumed at {}", self.role_arn, self.sts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_of_sts_gives_keys_and_their_expiry() {
        let body = "<AssumeRoleResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">\
            <AssumeRoleResult><AssumedRoleUser><Arn>x</Arn></AssumedRoleUser><Credentials>\
            <AccessKeyId>A</AccessKeyId><SecretAccessKey>S</SecretAccessKey>\
            <SessionToken>T</SessionToken><Expiration>2030-01-01T00:00:00Z</Expiration>\
            </Credentials></AssumeRoleResult></AssumeRoleResponse>";
        let got = read_answer(body).unwrap();
        assert_eq!(
            (
                got.credential.key_id.as_str(),
                got.credential.token.as_deref()
            ),
            ("A", Some("T"))
        );
        let want = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_893_456_000);
        assert_eq!(got.expires, Some(want));
        assert!(read_answer("<ErrorResponse/>").is_err());
    }
}
