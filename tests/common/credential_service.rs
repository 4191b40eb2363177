//! Fake credential services on loopback. One answers as the EC2 instance metadata service
//! (IMDSv2: a session token first, then the role's name, then its keys), as a container's
//! credential agent (keys for the authorization token it was given) and as a single sign-on
//! portal (a role's keys for the bearer token `aws sso login` caches); it records every request
//! so tests can check what was asked and with which token. The other is STS over HTTPS
//! (`tests/py/fake_sts.py`), giving keys for one role to a web identity token or to an
//! `AssumeRole` request signed with one access key.

use super::python::interpreter;
use super::repo_root;
use super::s3::{header, read_head};
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

/// The session token the fake metadata service hands out and then requires.
pub const SESSION_TOKEN: &str = "imds-session-token";
/// The path the fake container agent serves its keys at.
pub const CONTAINER_PATH: &str = "/v2/credentials/task";

/// The keys the service hands out.
#[derive(Clone)]
pub struct Keys {
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: String,
}

/// One request as the service read it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    /// `X-aws-ec2-metadata-token`, if sent.
    pub metadata_token: Option<String>,
    /// `Authorization`, if sent.
    pub authorization: Option<String>,
    /// `x-amz-sso_bearer_token`, if sent.
    pub sso_bearer: Option<String>,
}

/// A role a sign-on portal hands keys out for.
#[derive(Clone)]
pub struct SsoRole {
    pub bearer: String,
    pub account_id: String,
    pub role_name: String,
    pub keys: Keys,
}

/// What the service knows.
#[derive(Clone)]
pub struct Answers {
    /// The instance's role and its keys; `None`: an instance without a role.
    pub role: Option<(String, Keys)>,
    /// The container agent's authorization token and the keys it gives for it.
    pub container: Option<(String, Keys)>,
    /// The sign-on portal's bearer token, and the account, role and keys it gives for it.
    pub sso: Option<SsoRole>,
    /// Keys handed out have already expired (a client asks again before each use), and only
    /// the first request for them is answered: every later one fails as the service would
    /// when it is down (503).
    pub expired_once: bool,
}

pub struct CredentialService {
    port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl CredentialService {
    pub fn start(answers: Answers) -> CredentialService {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (log, answers) = (Arc::clone(&log), answers.clone());
                std::thread::spawn(move || serve(stream, &answers, &log));
            }
        });
        CredentialService { port, seen }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The requests read so far, emptying the record.
    pub fn take(&self) -> Vec<Seen> {
        std::mem::take(&mut *self.seen.lock().unwrap())
    }
}

/// The keys as both services write them (the metadata service adds `Code` and `Type`).
fn keys_json(keys: &Keys, expired: bool) -> String {
    let expiration = if expired { "2020" } else { "2099" };
    format!(
        r#"{{"Code":"Success","Type":"AWS-HMAC","AccessKeyId":"{}","SecretAccessKey":"{}","Token":"{}","Expiration":"{expiration}-01-01T00:00:00Z","LastUpdated":"2020-01-01T00:00:00Z"}}"#,
        keys.access_key_id, keys.secret_access_key, keys.session_token
    )
}

fn serve(stream: TcpStream, answers: &Answers, log: &Mutex<Vec<Seen>>) {
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    while let Some(head) = read_head(&mut reader) {
        let mut words = head[0].split_whitespace();
        let seen = Seen {
            method: words.next().unwrap_or_default().to_string(),
            path: words.next().unwrap_or_default().to_string(),
            metadata_token: header(&head, "x-aws-ec2-metadata-token"),
            authorization: header(&head, "authorization"),
            sso_bearer: header(&head, "x-amz-sso_bearer_token"),
        };
        let earlier = {
            let mut log = log.lock().unwrap();
            log.push(seen.clone());
            log.len() - 1
        };
        let (status, body) = if answers.expired_once && earlier > 0 {
            ("503 Service Unavailable", String::new())
        } else {
            answer(&seen, &head, answers)
        };
        let reply = format!(
            "HTTP/1.1 {status}\r\nContent-Length: {}\r\nContent-Type: text/plain\r\n\r\n{body}",
            body.len()
        );
        if writer.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

fn answer(seen: &Seen, head: &[String], answers: &Answers) -> (&'static str, String) {
    const ROLES: &str = "/latest/meta-data/iam/security-credentials/";
    let not_found = ("404 Not Found", String::new());
    let refused = ("401 Unauthorized", String::new());
    match (seen.method.as_str(), seen.path.as_str()) {
        ("PUT", "/latest/api/token") => {
            if header(head, "x-aws-ec2-metadata-token-ttl-seconds").is_none() {
                return ("400 Bad Request", String::new());
            }
            ("200 OK", SESSION_TOKEN.to_string())
        }
        ("GET", path) if path.starts_with(ROLES) => {
            if seen.metadata_token.as_deref() != Some(SESSION_TOKEN) {
                return refused;
            }
            let Some((role, keys)) = &answers.role else {
                return not_found;
            };
            match &path[ROLES.len()..] {
                "" => ("200 OK", role.clone()),
                asked if asked == role => ("200 OK", keys_json(keys, answers.expired_once)),
                _ => not_found,
            }
        }
        ("GET", path) if path.starts_with("/federation/credentials?") => {
            let Some(sso) = &answers.sso else {
                return not_found;
            };
            let query = &path["/federation/credentials?".len()..];
            let wanted = format!("role_name={}&account_id={}", sso.role_name, sso.account_id);
            if seen.sso_bearer.as_deref() != Some(sso.bearer.as_str()) {
                return (
                    "401 Unauthorized",
                    r#"{"message":"Session token not found or invalid"}"#.into(),
                );
            }
            if query != wanted {
                return ("403 Forbidden", r#"{"message":"No access"}"#.into());
            }
            let k = &sso.keys;
            let body = format!(
                r#"{{"roleCredentials":{{"accessKeyId":"{}","secretAccessKey":"{}","sessionToken":"{}","expiration":4070908800000}}}}"#,
                k.access_key_id, k.secret_access_key, k.session_token
            );
            ("200 OK", body)
        }
        ("GET", CONTAINER_PATH) => match &answers.container {
            Some((token, keys)) if seen.authorization.as_deref() == Some(token.as_str()) => {
                ("200 OK", keys_json(keys, answers.expired_once))
            }
            Some(_) => refused,
            None => not_found,
        },
        _ => not_found,
    }
}

/// `tests/py/fake_sts.py` running until dropped, with its certificate and request log in a
/// directory of the test's.
pub struct FakeSts {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl FakeSts {
    /// Grants `keys` for `role_arn` to a caller holding the web identity `token`, or (when
    /// `source_key_id` is given) to an `AssumeRole` request signed with that access key;
    /// refuses anything else.
    pub fn start(
        dir: &Path,
        role_arn: &str,
        token: &str,
        keys: &Keys,
        source_key_id: Option<&str>,
    ) -> FakeSts {
        let python = interpreter("s3").expect("the s3 Python environment");
        let script = repo_root().join("tests/py/fake_sts.py");
        let mut child = Command::new(python)
            .arg(script)
            .arg(dir)
            .args([role_arn, token])
            .args([
                &keys.access_key_id,
                &keys.secret_access_key,
                &keys.session_token,
            ])
            .args(source_key_id)
            .env_remove("LD_PRELOAD")
            .stdout(Stdio::piped())
            .spawn()
            .expect("start fake_sts.py");
        let mut line = String::new();
        let stdout = child.stdout.take().expect("piped stdout");
        BufReader::new(stdout).read_line(&mut line).unwrap();
        let port = line
            .trim()
            .strip_prefix("port ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("fake_sts.py did not start: {line:?}"));
        FakeSts {
            child,
            port,
            dir: dir.to_path_buf(),
        }
    }

    /// `https://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }

    /// Its self-signed certificate, for `SSL_CERT_FILE`.
    pub fn certificate(&self) -> PathBuf {
        self.dir.join("cert.pem")
    }

    /// The parameters of every request it has read, as JSON lines.
    pub fn requests(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.join("requests.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

impl Drop for FakeSts {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
