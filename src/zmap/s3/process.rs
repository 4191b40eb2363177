//! Credentials printed by a command: a profile's `credential_process`, as the AWS tools run it
//! (single sign-on helpers, vaults and password managers use it).
//!
//! Owns running the command (`sh -c`, with the caller's environment, its standard output read
//! as the credentials, its standard error kept for messages), reading what it prints (version
//! 1: `AccessKeyId`, `SecretAccessKey`, optional `SessionToken` and `Expiration`), and keeping
//! the keys until five minutes before they expire; keys without an expiration are kept for
//! good. A command that runs past its time is killed, with whatever it started. It knows nothing of stores or profiles.

use async_trait::async_trait;
use object_store::CredentialProvider;
use object_store::aws::AwsCredential;
use serde::Deserialize;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::Mutex;

/// Keys are fetched again once they are this close to expiring.
const RENEW_BEFORE: Duration = Duration::from_secs(300);

/// How often a running command is looked at while waiting for it.
const POLL: Duration = Duration::from_millis(10);

/// Most bytes read of what the command prints.
const OUTPUT_AT_MOST: u64 = 1 << 20;

/// What the command prints.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Printed {
    version: u32,
    access_key_id: String,
    secret_access_key: String,
    session_token: Option<String>,
    expiration: Option<String>,
}

/// Keys and the time to fetch them again (`None`: never).
struct Held {
    credential: Arc<AwsCredential>,
    renew_at: Option<Instant>,
}

/// Runs `command` for credentials, at most once per `RENEW_BEFORE` of their life.
#[derive(Debug)]
pub struct ProcessCredentials {
    command: String,
    timeout: Duration,
    held: Mutex<Option<HeldKeys>>,
}

/// [`Held`], with a `Debug` that shows no secret.
struct HeldKeys(Held);

impl std::fmt::Debug for HeldKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HeldKeys")
    }
}

impl ProcessCredentials {
    /// Runs `command` when keys are wanted, each run allowed `timeout`.
    pub fn new(command: &str, timeout: Duration) -> ProcessCredentials {
        ProcessCredentials {
            command: command.to_string(),
            timeout,
            held: Mutex::new(None),
        }
    }
}

/// Reads what the command printed; `now` is the present, for the expiration.
fn read_printed(text: &[u8], now: SystemTime) -> Result<Held, String> {
    let printed: Printed = serde_json::from_slice(text)
        .map_err(|e| format!("its output is not the credentials JSON: {e}"))?;
    if printed.version != 1 {
        return Err(format!("its output is version {}, not 1", printed.version));
    }
    let renew_at = match printed.expiration {
        None => None,
        Some(text) => {
            let expires = chrono::DateTime::parse_from_rfc3339(&text)
                .map_err(|e| format!("its Expiration {text:?} is not an RFC 3339 time: {e}"))?;
            let expires = SystemTime::from(expires);
            let left = expires
                .duration_since(now)
                .unwrap_or_default()
                .saturating_sub(RENEW_BEFORE);
            Some(Instant::now() + left)
        }
    };
    Ok(Held {
        credential: Arc::new(AwsCredential {
            key_id: printed.access_key_id,
            secret_key: printed.secret_access_key,
            token: printed.session_token,
        }),
        renew_at,
    })
}

/// The last line of what the command wrote on its standard error, for messages.
fn last_line(stderr: &[u8]) -> String {
    String::from_utf8_lossy(stderr)
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
        .to_string()
}

/// Runs `command` and waits for it at most `timeout`; its standard output.
fn run(command: &str, timeout: Duration) -> Result<Vec<u8>, String> {
    let mut child = Command::new("sh")
        .args(["-c", command])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start it: {e}"))?;
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err("cannot read its output".into());
    };
    let read_all = |pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.take(OUTPUT_AT_MOST).read_to_end(&mut bytes);
            bytes
        })
    };
    let (out, err) = (read_all(Box::new(stdout)), read_all(Box::new(stderr)));
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(POLL),
            Ok(None) => {
                // The whole group: what the shell started would keep the pipes open.
                if let Some(group) = rustix::process::Pid::from_raw(child.id() as i32) {
                    let _ =
                        rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
                }
                let _ = child.wait();
                return Err(format!("it ran for over {:.1} s", timeout.as_secs_f64()));
            }
            Err(e) => return Err(format!("cannot wait for it: {e}")),
        }
    };
    let out = out.join().unwrap_or_default();
    let err = err.join().unwrap_or_default();
    if !status.success() {
        return Err(format!("it failed ({status}): {}", last_line(&err)));
    }
    Ok(out)
}

#[async_trait]
impl CredentialProvider for ProcessCredentials {
    type Credential = AwsCredential;

    async fn get_credential(&self) -> object_store::Result<Arc<AwsCredential>> {
        let mut held = self.held.lock().await;
        if let Some(HeldKeys(h)) = held.as_ref()
            && h.renew_at.is_none_or(|at| Instant::now() < at)
        {
            return Ok(Arc::clone(&h.credential));
        }
        let (command, timeout) = (self.command.clone(), self.timeout);
        let fetched = tokio::task::spawn_blocking(move || {
            read_printed(&run(&command, timeout)?, SystemTime::now())
        })
        .await
        .map_err(|e| e.to_string())
        .and_then(|r| r)
        .map_err(|why| object_store::Error::Generic {
            store: "S3",
            source: format!("credential_process `{}`: {why}", self.command).into(),
        })?;
        let credential = Arc::clone(&fetched.credential);
        *held = Some(HeldKeys(fetched));
        Ok(credential)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printed_keys_are_kept_until_five_minutes_before_they_expire() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let at = |secs: u64| {
            chrono::DateTime::<chrono::Utc>::from(now + Duration::from_secs(secs)).to_rfc3339()
        };
        let text = format!(
            r#"{{"Version":1,"AccessKeyId":"A","SecretAccessKey":"S","SessionToken":"T","Expiration":"{}"}}"#,
            at(3600)
        );
        let held = read_printed(text.as_bytes(), now).unwrap();
        assert_eq!(
            (
                held.credential.key_id.as_str(),
                held.credential.token.as_deref()
            ),
            ("A", Some("T"))
        );
        let left = held.renew_at.unwrap() - Instant::now();
        assert!(
            left <= Duration::from_secs(3300) && left > Duration::from_secs(3290),
            "{left:?}"
        );
        let soon = format!(
            r#"{{"Version":1,"AccessKeyId":"A","SecretAccessKey":"S","Expiration":"{}"}}"#,
            at(60)
        );
        let held = read_printed(soon.as_bytes(), now).unwrap();
        assert!(held.renew_at.unwrap() <= Instant::now(), "renewed at once");
        let forever = r#"{"Version":1,"AccessKeyId":"A","SecretAccessKey":"S"}"#;
        assert!(
            read_printed(forever.as_bytes(), now)
                .unwrap()
                .renew_at
                .is_none()
        );
        for bad in [
            r#"{"Version":2,"AccessKeyId":"A","SecretAccessKey":"S"}"#,
            r#"{"Version":1,"AccessKeyId":"A"}"#,
            r#"{"Version":1,"AccessKeyId":"A","SecretAccessKey":"S","Expiration":"soon"}"#,
            "not json",
        ] {
            assert!(read_printed(bad.as_bytes(), now).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_command_that_fails_or_hangs_is_an_error_naming_why() {
        let failed = run(
            "echo 'token expired: log in again' >&2; exit 3",
            Duration::from_secs(5),
        );
        assert!(
            matches!(&failed, Err(why) if why.contains("token expired: log in again")),
            "{failed:?}"
        );
        let started = Instant::now();
        let hung = run("sleep 30", Duration::from_millis(200));
        assert!(
            matches!(&hung, Err(why) if why.contains("ran for over")),
            "{hung:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(run("printf ok", Duration::from_secs(5)).unwrap(), b"ok");
    }
}
