//! Credentials fetched when the store is opened: from STS with a web identity token, from the
//! container's credential agent, from the EC2 instance metadata service (all three over HTTP),
//! from a profile's `credential_process` command ([`super::process`]) or from a single sign-on
//! portal ([`super::sso`]).
//!
//! Owns three rules. Such credentials are fetched when the first store that needs them is
//! opened, and shared by later ones in the process, so a source that gives none fails the
//! open with an authorization error rather than the first read. A
//! later failure to refresh them is an authorization failure too, not a server error. The
//! instance metadata service is asked only on a machine that is an EC2 instance, or when its
//! endpoint was named; a machine that is not one, or an instance without a role, makes
//! anonymous requests, as when no credentials are found at all. The client library fetches and
//! renews the keys of STS, the container's agent and the metadata service; [`super::renewing`]
//! those of the command and the portal. It knows nothing of stores or keys.

use super::assume::AssumedRole;
use super::process::ProcessCommand;
use super::renewing::Renewing;
use super::settings::{ContainerAgent, Credentials};
use super::sso::SsoRole;
use crate::error::{Error, Result};
use crate::zmap::remote::{full_chain, runtime};
use async_trait::async_trait;
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey, AwsCredential, AwsCredentialProvider};
use object_store::{CredentialProvider, StaticCredentialProvider};
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};
use std::time::Duration;

/// True when the machine describes itself as an EC2 instance: the firmware's vendor or asset
/// tag on Nitro instances, the hypervisor's UUID on Xen ones. `sys` is `/sys` but in tests.
pub fn is_ec2_instance(sys: &Path) -> bool {
    let read = |rel: &str| {
        std::fs::read_to_string(sys.join(rel))
            .map(|t| t.trim().to_ascii_lowercase())
            .unwrap_or_default()
    };
    read("devices/virtual/dmi/id/sys_vendor") == "amazon ec2"
        || read("devices/virtual/dmi/id/board_asset_tag").starts_with("i-")
        || read("hypervisor/uuid").starts_with("ec2")
}

/// The longest wait for the instance metadata service, whatever the overall timeout: where
/// it cannot answer (a container whose hop limit drops its answers), requests go anonymous
/// after this long, as the AWS tools do after their own short wait.
const METADATA_WAIT: Duration = Duration::from_secs(5);

/// `builder` set up to sign requests as `credentials` say, and, when they are to be anonymous
/// instead of the instance role `credentials` named, why. Credentials that come from a service
/// are fetched here once, within `timeout`; `source` names them in messages.
pub fn sign(
    builder: AmazonS3Builder,
    credentials: &Credentials,
    source: &str,
    timeout: Duration,
) -> Result<(AmazonS3Builder, Option<String>)> {
    let anonymous = |why: String| (builder.clone().with_skip_signature(true), Some(why));
    let instance = match credentials {
        Credentials::Anonymous => return Ok((builder.with_skip_signature(true), None)),
        Credentials::Keys {
            access_key_id,
            secret_access_key,
            session_token,
        } => {
            let b = builder
                .with_access_key_id(access_key_id)
                .with_secret_access_key(secret_access_key);
            return Ok((
                match session_token {
                    Some(t) => b.with_token(t),
                    None => b,
                },
                None,
            ));
        }
        Credentials::InstanceRole { configured, .. } => {
            if !configured && !is_ec2_instance(Path::new("/sys")) {
                return Ok(anonymous("no credentials found".into()));
            }
            true
        }
        Credentials::WebIdentity { .. }
        | Credentials::Process { .. }
        | Credentials::Sso { .. }
        | Credentials::AssumeRole { .. }
        | Credentials::Container(_) => false,
    };
    let fetched = {
        let mut kept = FETCHED.lock().unwrap_or_else(PoisonError::into_inner);
        match kept.get(credentials) {
            Some(known) => known.clone(),
            None => {
                let outcome = fetch(&builder, credentials, source, timeout, instance)?;
                kept.insert(credentials.clone(), outcome.clone());
                outcome
            }
        }
    };
    Ok(match fetched {
        Outcome::Signed(provider) => (builder.with_credentials(provider), None),
        Outcome::AnonymousInstead(why) => anonymous(why),
    })
}

/// What asking a command or service for credentials came to.
#[derive(Clone)]
enum Outcome {
    /// Keys were given; the provider renews them.
    Signed(AwsCredentialProvider),
    /// The instance has no role (or its metadata service did not answer): anonymous, for
    /// this reason.
    AnonymousInstead(String),
}

/// Credentials fetched from a command or service, kept for the life of the process as the AWS
/// tools keep one provider per session: datasets opened with the same credentials share them,
/// so a command runs, or a service is asked, once rather than at every open (an instance whose
/// metadata service never answers costs its wait once). A failure is not kept: the next open
/// asks again (after `aws sso login`, say).
static FETCHED: LazyLock<Mutex<HashMap<Credentials, Outcome>>> = LazyLock::new(Default::default);

/// Asks the command or service `credentials` name for a first set of keys, within `timeout`
/// (shorter for the metadata service, an `instance` role).
fn fetch(
    builder: &AmazonS3Builder,
    credentials: &Credentials,
    source: &str,
    timeout: Duration,
    instance: bool,
) -> Result<Outcome> {
    let timeout = if instance {
        timeout.min(METADATA_WAIT)
    } else {
        timeout
    };
    let inner = provider(builder, credentials, source, timeout)?;
    let first = Arc::clone(&inner);
    let got = runtime::run(async move {
        tokio::time::timeout(timeout, first.get_credential())
            .await
            .map_err(|_| format!("no answer within {:.1} s", timeout.as_secs_f64()))?
            .map(|_| ())
            .map_err(|e| full_chain(&e))
    })?;
    match got {
        Ok(()) => Ok(Outcome::Signed(Arc::new(AuthFailures {
            inner,
            source: source.to_string(),
        }))),
        Err(why) if instance => Ok(Outcome::AnonymousInstead(format!("no {source}: {why}"))),
        Err(why) => Err(Error::Auth(format!(
            "no credentials from the {source}: {why}"
        ))),
    }
}

/// The provider of the keys `credentials` stand for (not yet asked for any), each request
/// of theirs allowed `timeout`; `source` names them in messages.
fn provider(
    builder: &AmazonS3Builder,
    credentials: &Credentials,
    source: &str,
    timeout: Duration,
) -> Result<AwsCredentialProvider> {
    use AmazonS3ConfigKey as K;
    let client = || {
        reqwest::Client::builder()
            .timeout(timeout)
            .build()
            .map_err(|e| Error::Auth(format!("{source}: {e}")))
    };
    Ok(match credentials {
        Credentials::Anonymous => {
            return Err(Error::Auth(format!(
                "{source}: no credentials to sign with"
            )));
        }
        Credentials::Keys {
            access_key_id,
            secret_access_key,
            session_token,
        } => Arc::new(StaticCredentialProvider::new(AwsCredential {
            key_id: access_key_id.clone(),
            secret_key: secret_access_key.clone(),
            token: session_token.clone(),
        })),
        Credentials::Process { command } => Arc::new(Renewing::new(ProcessCommand {
            command: command.clone(),
            timeout,
        })),
        Credentials::Sso {
            token_file,
            account_id,
            role_name,
            portal,
        } => Arc::new(Renewing::new(SsoRole {
            token_file: token_file.clone(),
            account_id: account_id.clone(),
            role_name: role_name.clone(),
            portal: portal.clone(),
            client: client()?,
        })),
        Credentials::AssumeRole {
            role_arn,
            session_name,
            external_id,
            source: with,
            sts_endpoint,
            region,
        } => Arc::new(Renewing::new(AssumedRole {
            source: provider(builder, with, source, timeout)?,
            role_arn: role_arn.clone(),
            session_name: session_name.clone(),
            external_id: external_id.clone(),
            sts: sts_endpoint
                .clone()
                .unwrap_or_else(|| format!("https://sts.{region}.amazonaws.com")),
            region: region.clone(),
            client: client()?,
        })),
        Credentials::WebIdentity {
            token_file,
            role_arn,
            session_name,
            sts_endpoint,
        } => {
            let mut b = builder
                .clone()
                .with_config(K::WebIdentityTokenFile, token_file)
                .with_config(K::RoleArn, role_arn);
            if let Some(name) = session_name {
                b = b.with_config(K::RoleSessionName, name);
            }
            if let Some(endpoint) = sts_endpoint {
                b = b.with_config(K::StsEndpoint, endpoint);
            }
            library_provider(b, source)?
        }
        Credentials::Container(ContainerAgent::Relative(path)) => library_provider(
            builder
                .clone()
                .with_config(K::ContainerCredentialsRelativeUri, path),
            source,
        )?,
        Credentials::Container(ContainerAgent::Full { uri, token_file }) => library_provider(
            builder
                .clone()
                .with_config(K::ContainerCredentialsFullUri, uri)
                .with_config(K::ContainerAuthorizationTokenFile, token_file),
            source,
        )?,
        Credentials::InstanceRole {
            metadata_endpoint, ..
        } => library_provider(
            builder
                .clone()
                .with_metadata_endpoint(metadata_endpoint)
                .with_imdsv1_fallback(),
            source,
        )?,
    })
}

/// The provider the client library makes of `builder`'s credential settings (STS for a web
/// identity token, the container's agent, the metadata service).
fn library_provider(builder: AmazonS3Builder, source: &str) -> Result<AwsCredentialProvider> {
    let client = builder
        .build()
        .map_err(|e| Error::Auth(format!("{source}: {e}")))?;
    Ok(Arc::clone(client.credentials()))
}

/// A provider whose failures are authentication failures of the request that wanted the
/// credentials (the client would report them as generic errors).
#[derive(Debug)]
struct AuthFailures {
    inner: AwsCredentialProvider,
    source: String,
}

#[async_trait]
impl CredentialProvider for AuthFailures {
    type Credential = AwsCredential;

    async fn get_credential(&self) -> object_store::Result<Arc<AwsCredential>> {
        self.inner
            .get_credential()
            .await
            .map_err(|e| object_store::Error::Unauthenticated {
                path: self.source.clone(),
                source: Box::new(e),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two datasets with the same credentials share them: the command runs once; a command
    /// that failed is run again at the next open.
    #[test]
    fn credentials_fetched_once_serve_every_later_open() {
        let dir = tempfile::TempDir::new().unwrap();
        let runs = dir.path().join("runs");
        let fail = dir.path().join("fail");
        let command = format!(
            "echo run >> '{}'; [ -e '{}' ] && exit 1; \
             echo '{{\"Version\": 1, \"AccessKeyId\": \"A\", \"SecretAccessKey\": \"S\"}}'",
            runs.display(),
            fail.display()
        );
        let credentials = Credentials::Process { command };
        let open = || {
            let builder = AmazonS3Builder::new().with_bucket_name("b");
            sign(builder, &credentials, "test", Duration::from_secs(10)).map(|(_, why)| why)
        };
        let count = || std::fs::read_to_string(&runs).map_or(0, |t| t.lines().count());
        std::fs::write(&fail, "").unwrap();
        assert!(matches!(open(), Err(Error::Auth(_))));
        std::fs::remove_file(&fail).unwrap();
        assert!(matches!(open(), Ok(None)));
        assert!(matches!(open(), Ok(None)));
        assert_eq!(count(), 2, "one failed run, then one for both opens");
    }

    #[test]
    fn an_ec2_instance_is_known_by_its_firmware_or_hypervisor() {
        let sys = tempfile::TempDir::new().unwrap();
        let write = |rel: &str, text: &str| {
            let path = sys.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        assert!(!is_ec2_instance(sys.path()), "nothing to read");
        write("devices/virtual/dmi/id/sys_vendor", "QEMU\n");
        write("devices/virtual/dmi/id/board_asset_tag", "\n");
        write("hypervisor/uuid", "5a0b6b0e-0000-0000-0000-000000000000\n");
        assert!(!is_ec2_instance(sys.path()), "another hypervisor");
        write("hypervisor/uuid", "EC2E1916-9099-7CAF-FD21-012345ABCDEF\n");
        assert!(is_ec2_instance(sys.path()), "Xen instance");
        write("hypervisor/uuid", "\n");
        write(
            "devices/virtual/dmi/id/board_asset_tag",
            "i-0123456789abcdef0\n",
        );
        assert!(is_ec2_instance(sys.path()), "Nitro asset tag");
        write("devices/virtual/dmi/id/board_asset_tag", "\n");
        write("devices/virtual/dmi/id/sys_vendor", "Amazon EC2\n");
        assert!(is_ec2_instance(sys.path()), "Nitro vendor");
    }
}
