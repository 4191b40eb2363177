//! Which credentials sign an S3 dataset's requests, chosen as the AWS tools choose them.
//!
//! Owns the order of the sources (README.md "S3" documents the same list): profile `none`/`no`
//! means anonymous; a profile named in the fragment or netCDF's rc files is used as is (an
//! error if it holds no credentials); a profile named by `AWS_PROFILE` must exist; then
//! `AWS_ACCESS_KEY_ID` + `AWS_SECRET_ACCESS_KEY` (+ `AWS_SESSION_TOKEN`); then the profile's
//! web identity, single sign-on role, keys or `credential_process` in the files (as the AWS
//! CLI orders them); then a web identity token named by `AWS_WEB_IDENTITY_TOKEN_FILE` +
//! `AWS_ROLE_ARN`; then the container's credential agent
//! (`AWS_CONTAINER_CREDENTIALS_RELATIVE_URI`, `AWS_CONTAINER_CREDENTIALS_FULL_URI`); then the
//! EC2 instance's role, unless `AWS_EC2_METADATA_DISABLED=true`; else anonymous, unsigned
//! requests. It only decides: fetching what a source gives is `super::credentials`'s, and
//! whether the instance has a role is found there. It knows nothing of URLs, HTTP or the
//! client library.

use super::profiles::Profiles;
use crate::env::value as env_value;
use crate::error::{Error, Result};
use std::fmt;
use std::path::PathBuf;

/// How requests are signed.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum Credentials {
    /// Unsigned requests (public buckets).
    Anonymous,
    /// Signed with these keys.
    Keys {
        access_key_id: String,
        secret_access_key: String,
        session_token: Option<String>,
    },
    /// Temporary keys of a role, asked of STS with the web identity token in a file (the
    /// service account token of a Kubernetes pod, as EKS mounts it).
    WebIdentity {
        token_file: String,
        role_arn: String,
        session_name: Option<String>,
        /// `https://host[:port]` of STS; `None`: the regional AWS endpoint.
        sts_endpoint: Option<String>,
    },
    /// Keys printed by a profile's `credential_process` command.
    Process { command: String },
    /// Temporary keys of an account's role, asked of the single sign-on portal at `portal`
    /// with the token `aws sso login` cached in `token_file`.
    Sso {
        token_file: PathBuf,
        account_id: String,
        role_name: String,
        portal: String,
    },
    /// Temporary keys of the role `role_arn`, asked of STS (at `sts_endpoint`, else the
    /// regional endpoint of `region`) with the keys of `source`: a profile's `role_arn` with
    /// `source_profile` or `credential_source`.
    AssumeRole {
        role_arn: String,
        session_name: Option<String>,
        external_id: Option<String>,
        source: Box<Credentials>,
        sts_endpoint: Option<String>,
        region: String,
    },
    /// Temporary keys served by the container's credential agent (ECS task roles, EKS Pod
    /// Identity).
    Container(ContainerAgent),
    /// The temporary keys of the EC2 instance's role, from its metadata service at
    /// `metadata_endpoint`; anonymous when the machine is not an EC2 instance (unless the
    /// endpoint was `configured`) or the instance has no role.
    InstanceRole {
        metadata_endpoint: String,
        configured: bool,
    },
}

/// Where a container's credential agent answers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ContainerAgent {
    /// A path below the ECS agent's fixed address (`AWS_CONTAINER_CREDENTIALS_RELATIVE_URI`).
    Relative(String),
    /// A full URL, with the file holding the authorization token to send
    /// (`AWS_CONTAINER_CREDENTIALS_FULL_URI` + `AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE`).
    Full { uri: String, token_file: String },
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Credentials::Anonymous => f.write_str("Anonymous"),
            Credentials::Keys {
                access_key_id,
                session_token,
                ..
            } => write!(
                f,
                "Keys({access_key_id}, secret hidden{})",
                if session_token.is_some() {
                    ", session token"
                } else {
                    ""
                }
            ),
            Credentials::WebIdentity {
                token_file,
                role_arn,
                ..
            } => write!(f, "WebIdentity({role_arn}, token in {token_file})"),
            Credentials::Process { command } => {
                write!(f, "Process({})", super::process::program(command))
            }
            Credentials::Sso {
                account_id,
                role_name,
                ..
            } => write!(f, "Sso({role_name} of {account_id})"),
            Credentials::AssumeRole {
                role_arn, source, ..
            } => write!(f, "AssumeRole({role_arn} with {source:?})"),
            Credentials::Container(agent) => write!(f, "Container({agent:?})"),
            Credentials::InstanceRole {
                metadata_endpoint, ..
            } => write!(f, "InstanceRole({metadata_endpoint})"),
        }
    }
}

/// Where the EC2 metadata service answers unless told otherwise (and over IPv6).
pub(super) const METADATA_ENDPOINT: &str = "http://169.254.169.254";
pub(super) const METADATA_ENDPOINT_IPV6: &str = "http://[fd00:ec2::254]";

/// Profiles one role may be assumed through (`source_profile` naming a profile that assumes
/// a role in turn), before the chain is taken for a loop.
const ROLE_CHAIN_AT_MOST: usize = 5;

/// The credentials a profile holds, in the order the AWS CLI tries them: a role, assumed with
/// a web identity token file or with another source's keys (`source_profile`,
/// `credential_source`), a single sign-on role, both halves of a key, a `credential_process`
/// command. A sign-on setting with a part missing, or a role that cannot be assumed, is an
/// error rather than "no credentials", so that no other identity is used instead.
fn profile_credentials(
    profiles: &Profiles,
    profile: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<Credentials>> {
    profile_credentials_in_chain(profiles, profile, env, 0)
}

/// [`profile_credentials`] of a profile `depth` roles down a chain of assumed roles.
fn profile_credentials_in_chain(
    profiles: &Profiles,
    profile: &str,
    env: &dyn Fn(&str) -> Option<String>,
    depth: usize,
) -> Result<Option<Credentials>> {
    let get = |key: &str| profiles.get(profile, key).map(str::to_string);
    if let Some(role_arn) = get("role_arn") {
        if let Some(token_file) = get("web_identity_token_file") {
            return Ok(Some(Credentials::WebIdentity {
                token_file,
                role_arn,
                session_name: get("role_session_name"),
                sts_endpoint: env_value(env, "AWS_ENDPOINT_URL_STS"),
            }));
        }
        let source = role_source(profiles, profile, env, depth)?;
        return Ok(Some(Credentials::AssumeRole {
            role_arn,
            session_name: get("role_session_name"),
            external_id: get("external_id"),
            source: Box::new(source),
            sts_endpoint: env_value(env, "AWS_ENDPOINT_URL_STS"),
            region: get("region")
                .or_else(|| env_value(env, "AWS_REGION"))
                .or_else(|| env_value(env, "AWS_DEFAULT_REGION"))
                .unwrap_or_else(|| "us-east-1".to_string()),
        }));
    }
    if let Some(sso) = sso_credentials(profiles, profile, env)? {
        return Ok(Some(sso));
    }
    if let (Some(access_key_id), Some(secret_access_key)) =
        (get("aws_access_key_id"), get("aws_secret_access_key"))
    {
        return Ok(Some(Credentials::Keys {
            access_key_id,
            secret_access_key,
            session_token: get("aws_session_token"),
        }));
    }
    Ok(get("credential_process").map(|command| Credentials::Process { command }))
}

/// The credentials a profile's role is assumed with: its `source_profile`'s (that profile's
/// own keys when it names itself), or its `credential_source` (`Environment`,
/// `Ec2InstanceMetadata`, `EcsContainer`). A role that needs an MFA code is refused (nobody
/// can type it here).
fn role_source(
    profiles: &Profiles,
    profile: &str,
    env: &dyn Fn(&str) -> Option<String>,
    depth: usize,
) -> Result<Credentials> {
    let get = |key: &str| profiles.get(profile, key).map(str::to_string);
    let refused = |why: String| Error::Auth(format!("AWS profile {profile:?}: {why}"));
    if get("mfa_serial").is_some() {
        return Err(refused(
            "assuming its role needs an MFA code, which cannot be asked for here".into(),
        ));
    }
    if let Some(source) = get("source_profile") {
        if source == profile {
            let (Some(access_key_id), Some(secret_access_key)) =
                (get("aws_access_key_id"), get("aws_secret_access_key"))
            else {
                return Err(refused("its source_profile is itself, without keys".into()));
            };
            return Ok(Credentials::Keys {
                access_key_id,
                secret_access_key,
                session_token: get("aws_session_token"),
            });
        }
        if depth + 1 >= ROLE_CHAIN_AT_MOST {
            return Err(refused(format!(
                "its roles are assumed through more than {ROLE_CHAIN_AT_MOST} profiles (a loop?)"
            )));
        }
        if !profiles.has(&source) {
            return Err(refused(format!(
                "its source_profile {source:?} is not found"
            )));
        }
        return profile_credentials_in_chain(profiles, &source, env, depth + 1)?.ok_or_else(|| {
            refused(format!(
                "its source_profile {source:?} holds no credentials"
            ))
        });
    }
    let unavailable = |want: &str| {
        refused(format!(
            "credential_source {want} gives no credentials here"
        ))
    };
    match get("credential_source").as_deref() {
        Some("Environment") => match (
            env_value(env, "AWS_ACCESS_KEY_ID"),
            env_value(env, "AWS_SECRET_ACCESS_KEY"),
        ) {
            (Some(access_key_id), Some(secret_access_key)) => Ok(Credentials::Keys {
                access_key_id,
                secret_access_key,
                session_token: env_value(env, "AWS_SESSION_TOKEN"),
            }),
            _ => Err(refused(
                "credential_source Environment, but AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY are not set".into(),
            )),
        },
        Some(want @ "EcsContainer") => container_credentials(env)?
            .map(|(c, _)| c)
            .ok_or_else(|| unavailable(want)),
        // Asked for by name: the metadata service is asked even where the machine does not
        // say it is an EC2 instance.
        Some(want @ "Ec2InstanceMetadata") => match instance_credentials(env, profiles, profile) {
            Some((Credentials::InstanceRole {
                metadata_endpoint, ..
            }, _)) => Ok(Credentials::InstanceRole {
                metadata_endpoint,
                configured: true,
            }),
            _ => Err(unavailable(want)),
        },
        Some(other) => Err(refused(format!("credential_source {other:?} is not known"))),
        None => Err(refused(
            "role_arn needs source_profile, credential_source or web_identity_token_file".into(),
        )),
    }
}

/// The single sign-on role a profile names, in either form: `sso_session` naming an
/// `[sso-session]` section with `sso_region` (and `sso_start_url`), or `sso_start_url` and
/// `sso_region` in the profile itself; with `sso_account_id` and `sso_role_name`. `None` for a
/// profile without sign-on; an error naming what is missing for one with a part missing.
fn sso_credentials(
    profiles: &Profiles,
    profile: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<Credentials>> {
    let get = |key: &str| profiles.get(profile, key).map(str::to_string);
    let session = get("sso_session");
    let start_url = get("sso_start_url");
    if session.is_none() && start_url.is_none() {
        return Ok(None);
    }
    let needed = |what: &str| {
        Error::Auth(format!(
            "AWS profile {profile:?} signs on with single sign-on but has no {what}"
        ))
    };
    let (cache_key, region) = match session {
        Some(session) => {
            let region = profiles
                .sso_session(&session, "sso_region")
                .ok_or_else(|| needed(&format!("sso_region in [sso-session {session}]")))?
                .to_string();
            (session, region)
        }
        None => (
            start_url.unwrap_or_default(),
            get("sso_region").ok_or_else(|| needed("sso_region"))?,
        ),
    };
    let home = env_value(env, "HOME").ok_or_else(|| needed("HOME for the token cache"))?;
    Ok(Some(Credentials::Sso {
        token_file: super::sso::token_file(std::path::Path::new(&home), &cache_key),
        account_id: get("sso_account_id").ok_or_else(|| needed("sso_account_id"))?,
        role_name: get("sso_role_name").ok_or_else(|| needed("sso_role_name"))?,
        portal: env_value(env, "AWS_ENDPOINT_URL_SSO")
            .unwrap_or_else(|| format!("https://portal.sso.{region}.amazonaws.com")),
    }))
}

/// The sources tried once neither keys nor a profile gave credentials: a web identity token,
/// the container's agent, the instance's role; `None` when all are ruled out.
fn machine_credentials(
    env: &dyn Fn(&str) -> Option<String>,
    profiles: &Profiles,
    profile: &str,
) -> Result<Option<(Credentials, String)>> {
    if let (Some(token_file), Some(role_arn)) = (
        env_value(env, "AWS_WEB_IDENTITY_TOKEN_FILE"),
        env_value(env, "AWS_ROLE_ARN"),
    ) {
        let source = format!("web identity token {token_file} for {role_arn}");
        let credentials = Credentials::WebIdentity {
            token_file,
            role_arn,
            session_name: env_value(env, "AWS_ROLE_SESSION_NAME"),
            sts_endpoint: env_value(env, "AWS_ENDPOINT_URL_STS"),
        };
        return Ok(Some((credentials, source)));
    }
    if let Some(found) = container_credentials(env)? {
        return Ok(Some(found));
    }
    Ok(instance_credentials(env, profiles, profile))
}

/// The container's credential agent the environment names (ECS's relative path, else a full
/// URL with its token file), if any.
fn container_credentials(
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<(Credentials, String)>> {
    if let Some(path) = env_value(env, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") {
        let source = format!("container credentials at {path}");
        return Ok(Some((
            Credentials::Container(ContainerAgent::Relative(path)),
            source,
        )));
    }
    let Some(uri) = env_value(env, "AWS_CONTAINER_CREDENTIALS_FULL_URI") else {
        return Ok(None);
    };
    let token_file = env_value(env, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE").ok_or_else(|| {
        Error::Auth(format!(
            "AWS_CONTAINER_CREDENTIALS_FULL_URI={uri} needs the authorization token in the \
             file named by AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"
        ))
    })?;
    let source = format!("container credentials at {uri}");
    let agent = ContainerAgent::Full { uri, token_file };
    Ok(Some((Credentials::Container(agent), source)))
}

/// The EC2 instance's role, from the metadata service the environment or the profile names
/// (its endpoint, or IPv6 mode, else the usual address); `None` when the metadata service is
/// disabled.
fn instance_credentials(
    env: &dyn Fn(&str) -> Option<String>,
    profiles: &Profiles,
    profile: &str,
) -> Option<(Credentials, String)> {
    let setting = |var: &str, key: &str| {
        env_value(env, var).or_else(|| profiles.get(profile, key).map(str::to_string))
    };
    let disabled = setting("AWS_EC2_METADATA_DISABLED", "ec2_metadata_disabled")
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    if disabled {
        return None;
    }
    let named = setting(
        "AWS_EC2_METADATA_SERVICE_ENDPOINT",
        "ec2_metadata_service_endpoint",
    );
    let ipv6 = setting(
        "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE",
        "ec2_metadata_service_endpoint_mode",
    )
    .is_some_and(|m| m.eq_ignore_ascii_case("ipv6"));
    let configured = named.is_some();
    let metadata_endpoint = named
        .map(|e| e.trim_end_matches('/').to_string())
        .unwrap_or_else(|| {
            if ipv6 {
                METADATA_ENDPOINT_IPV6
            } else {
                METADATA_ENDPOINT
            }
            .to_string()
        });
    let source = format!("instance role from {metadata_endpoint}");
    let credentials = Credentials::InstanceRole {
        metadata_endpoint,
        configured,
    };
    Some((credentials, source))
}

fn is_anonymous_profile(profile: &str) -> bool {
    profile.eq_ignore_ascii_case("none") || profile.eq_ignore_ascii_case("no")
}

/// Who named the profile in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ProfileNamedBy {
    /// The fragment's `aws.profile` or the rc files' `AWS.PROFILE`: its credentials are used,
    /// and a profile without any is an error.
    Choice,
    /// `AWS_PROFILE`: the profile must exist.
    Environment,
    /// Nobody: `default`, if it holds credentials.
    Default,
}

/// Chooses the credentials (see the module documentation for the order).
pub(super) fn resolve_credentials(
    named: ProfileNamedBy,
    env: &dyn Fn(&str) -> Option<String>,
    profiles: &Profiles,
    profile: &str,
) -> Result<(Credentials, String)> {
    let anonymous = || (Credentials::Anonymous, "anonymous".to_string());
    if is_anonymous_profile(profile) {
        return Ok(anonymous());
    }
    let missing = |why: String| {
        let files: Vec<String> = profiles
            .sources
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        Error::Auth(format!("{why} (files read: [{}])", files.join(", ")))
    };
    let from_profile = || {
        profile_credentials(profiles, profile, env)?.ok_or_else(|| {
            missing(if profiles.has(profile) {
                format!(
                    "AWS profile {profile:?} has neither aws_access_key_id/aws_secret_access_key \
                     nor credential_process nor single sign-on (sso_session, sso_start_url) \
                     nor web_identity_token_file/role_arn"
                )
            } else {
                format!("AWS profile {profile:?} not found")
            })
        })
    };
    if named == ProfileNamedBy::Choice {
        return Ok((from_profile()?, format!("profile {profile}")));
    }
    match (
        env_value(env, "AWS_ACCESS_KEY_ID"),
        env_value(env, "AWS_SECRET_ACCESS_KEY"),
    ) {
        (Some(access_key_id), Some(secret_access_key)) => {
            let session_token = env_value(env, "AWS_SESSION_TOKEN");
            return Ok((
                Credentials::Keys {
                    access_key_id,
                    secret_access_key,
                    session_token,
                },
                "environment".to_string(),
            ));
        }
        (Some(_), None) => {
            return Err(Error::Auth(
                "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not".into(),
            ));
        }
        _ => {}
    }
    if named == ProfileNamedBy::Environment && !profiles.has(profile) {
        return Err(missing(format!("AWS profile {profile:?} not found")));
    }
    if let Some(found) = profile_credentials(profiles, profile, env)? {
        return Ok((found, format!("profile {profile}")));
    }
    Ok(machine_credentials(env, profiles, profile)?.unwrap_or_else(anonymous))
}
