//! Credentials printed by a command: a profile's `credential_process`, as the AWS tools run it
//! (single sign-on helpers, vaults and password managers use it).
//!
//! Owns running the command (`sh -c`, with the caller's environment, standard input and
//! process group, its standard output read as the credentials, its standard error kept for
//! messages) and reading what it prints (version 1: `AccessKeyId`, `SecretAccessKey`, optional
//! `SessionToken` and `Expiration`). A command that runs past its time is killed. Messages name
//! only the program, never its arguments. Keeping the keys until
//! they expire is [`super::renewing`]'s. It knows nothing of stores or profiles.

use super::renewing::{Fetch, Fetched};
use async_trait::async_trait;
use object_store::aws::AwsCredential;
use serde::Deserialize;
use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

/// How often a running command is looked at while waiting for it.
const POLL: Duration = Duration::from_millis(10);

/// Most bytes kept of what the command prints on each of its outputs.
const OUTPUT_AT_MOST: usize = 1 << 20;

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

/// A `credential_process` command, each run allowed `timeout`.
pub struct ProcessCommand {
    pub command: String,
    pub timeout: Duration,
}

/// Reads what the command printed.
fn read_printed(text: &[u8]) -> Result<Fetched, String> {
    let printed: Printed = serde_json::from_slice(text)
        .map_err(|e| format!("its output is not the credentials JSON: {e}"))?;
    if printed.version != 1 {
        return Err(format!("its output is version {}, not 1", printed.version));
    }
    let expires = match printed.expiration {
        None => None,
        Some(text) => Some(SystemTime::from(
            chrono::DateTime::parse_from_rfc3339(&text)
                .map_err(|e| format!("its Expiration {text:?} is not an RFC 3339 time: {e}"))?,
        )),
    };
    Ok(Fetched {
        credential: AwsCredential {
            key_id: printed.access_key_id,
            secret_key: printed.secret_access_key,
            token: printed.session_token,
        },
        expires,
    })
}

/// The program a command line runs, for messages: its arguments may carry secrets.
pub fn program(command: &str) -> String {
    let first = command.split_whitespace().next().unwrap_or("");
    if first.len() < command.trim().len() {
        format!("{first} ...")
    } else {
        first.to_string()
    }
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

/// Reads `pipe` to its end on a thread of its own, keeping its first [`OUTPUT_AT_MOST`] bytes
/// in `kept` (the rest is read and dropped: a command that writes a lot is never stopped by a
/// closed pipe); says so on `done` at the end.
fn drain(mut pipe: impl Read + Send + 'static, kept: Arc<Mutex<Vec<u8>>>, done: Sender<()>) {
    std::thread::spawn(move || {
        let mut chunk = [0u8; 8192];
        while let Ok(n @ 1..) = pipe.read(&mut chunk) {
            let mut kept = kept.lock().unwrap_or_else(PoisonError::into_inner);
            let room = OUTPUT_AT_MOST.saturating_sub(kept.len());
            kept.extend_from_slice(&chunk[..n.min(room)]);
        }
        let _ = done.send(());
    });
}

/// Runs `command` as the AWS tools do (`sh -c`, with the caller's standard input and process
/// group, so a helper can ask for a code and an interrupt reaches it) and waits for it at
/// most `timeout`; its standard output. A command still running then is killed. Once it has
/// exited, its output is taken as it is at the deadline even if something it left running
/// still holds the pipes open.
fn run(command: &str, timeout: Duration) -> Result<Vec<u8>, String> {
    let mut child = Command::new("sh")
        .args(["-c", command])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start it: {e}"))?;
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err("cannot read its output".into());
    };
    let (out, err) = (Arc::default(), Arc::default());
    let (done, ended) = mpsc::channel();
    drain(stdout, Arc::clone(&out), done.clone());
    drain(stderr, Arc::clone(&err), done);
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(POLL),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("it ran for over {:.1} s", timeout.as_secs_f64()));
            }
            Err(e) => return Err(format!("cannot wait for it: {e}")),
        }
    };
    for _ in 0..2 {
        if ended
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .is_err()
        {
            break;
        }
    }
    let taken = |kept: &Mutex<Vec<u8>>| {
        std::mem::take(&mut *kept.lock().unwrap_or_else(PoisonError::into_inner))
    };
    if !status.success() {
        return Err(format!("it failed ({status}): {}", last_line(&taken(&err))));
    }
    Ok(taken(&out))
}

#[async_trait]
impl Fetch for ProcessCommand {
    async fn fetch(&self) -> Result<Fetched, String> {
        let (command, timeout) = (self.command.clone(), self.timeout);
        tokio::task::spawn_blocking(move || read_printed(&run(&command, timeout)?))
            .await
            .map_err(|e| e.to_string())?
    }

    fn describe(&self) -> String {
        format!("credential_process `{}`", program(&self.command))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printed_keys_are_read_with_their_expiration() {
        let text = r#"{"Version":1,"AccessKeyId":"A","SecretAccessKey":"S","SessionToken":"T","Expiration":"2030-01-01T00:00:00Z"}"#;
        let got = read_printed(text.as_bytes()).unwrap();
        assert_eq!(
            (
                got.credential.key_id.as_str(),
                got.credential.token.as_deref()
            ),
            ("A", Some("T"))
        );
        let want = SystemTime::UNIX_EPOCH + Duration::from_secs(1_893_456_000);
        assert_eq!(got.expires, Some(want));
        let forever = r#"{"Version":1,"AccessKeyId":"A","SecretAccessKey":"S"}"#;
        assert!(read_printed(forever.as_bytes()).unwrap().expires.is_none());
        for bad in [
            r#"{"Version":2,"AccessKeyId":"A","SecretAccessKey":"S"}"#,
            r#"{"Version":1,"AccessKeyId":"A"}"#,
            r#"{"Version":1,"AccessKeyId":"A","SecretAccessKey":"S","Expiration":"soon"}"#,
            "not json",
        ] {
            assert!(read_printed(bad.as_bytes()).is_err(), "{bad}");
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

    /// What a command left running keeps the pipes open: its output is taken at the deadline.
    /// A command writing more than is kept is read to its end, not stopped by a closed pipe.
    #[test]
    fn a_command_is_neither_held_by_what_it_leaves_running_nor_stopped_by_its_output() {
        let started = Instant::now();
        let left = run("printf ok; sleep 30 &", Duration::from_millis(500));
        assert_eq!(left.as_deref(), Ok(&b"ok"[..]));
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        let chatty = run(
            "head -c 3000000 /dev/zero >&2; printf ok",
            Duration::from_secs(10),
        );
        assert_eq!(chatty.as_deref(), Ok(&b"ok"[..]));
    }

    #[test]
    fn messages_name_the_program_not_its_arguments() {
        assert_eq!(program("vault exec --token=SECRET aws"), "vault ...");
        assert_eq!(program("helper"), "helper");
        let described = ProcessCommand {
            command: "vault --token=SECRET".into(),
            timeout: Duration::from_secs(1),
        }
        .describe();
        assert!(!described.contains("SECRET"), "{described}");
    }
}
