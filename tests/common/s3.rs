//! S3 test fixtures: real servers on loopback (s3s-fs, which checks SigV4 signatures, and moto)
//! started and stopped through `scripts/s3-server`, a counting proxy that records every HTTP
//! request line the client sends, and small fake servers that misbehave on purpose.

use nczarr_rs::zmap::remote::Transfer;
use nczarr_rs::zmap::s3::settings::{Credentials, S3Settings};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tempfile::TempDir;

/// Access key and secret s3s-fs is started with (see `scripts/s3-server`).
pub const ACCESS_KEY: &str = "nczarr-test";
pub const SECRET_KEY: &str = "nczarr-test-secret";
/// The bucket every test server is created with.
pub const BUCKET: &str = "nczarr";

/// Which real server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    S3sFs,
    Moto,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::S3sFs => "s3s-fs",
            Kind::Moto => "moto",
        }
    }
}

/// A port nothing listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// `scripts/s3-server`.
pub fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/s3-server")
}

/// A running server, stopped when dropped.
pub struct Server {
    pub kind: Kind,
    pub port: u16,
    dir: TempDir,
    roots: AtomicUsize,
}

impl Server {
    /// Starts `kind` with the bucket [`BUCKET`].
    pub fn start(kind: Kind) -> Server {
        let dir = TempDir::new().unwrap();
        for _ in 0..3 {
            let port = free_port();
            let out = Command::new(script())
                .args(["start", kind.name(), &port.to_string()])
                .arg(dir.path())
                .arg(BUCKET)
                // Stopped when this test program exits, also when it never drops the server.
                .env("S3_SERVER_OWNER", std::process::id().to_string())
                .output()
                .expect("scripts/s3-server");
            if out.status.success() {
                return Server {
                    kind,
                    port,
                    dir,
                    roots: AtomicUsize::new(0),
                };
            }
            eprintln!(
                "starting {} failed, retrying: {}",
                kind.name(),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        panic!("could not start {}", kind.name());
    }

    /// Stops the server (also done on drop).
    pub fn stop(&self) {
        let _ = Command::new(script())
            .arg("stop")
            .arg(self.dir.path())
            .status();
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The directory that holds bucket [`BUCKET`]'s objects as files (s3s-fs only): a store
    /// copied there is a dataset in the bucket.
    pub fn bucket_dir(&self) -> PathBuf {
        assert_eq!(self.kind, Kind::S3sFs, "only s3s-fs keeps objects as files");
        self.dir.path().join("data").join(BUCKET)
    }

    /// A fresh dataset root in the bucket, unique within this server.
    pub fn fresh_root(&self, stem: &str) -> String {
        format!("{stem}/{}", self.roots.fetch_add(1, Ordering::Relaxed))
    }

    /// Settings for a fresh root, signed with the right keys, short timeouts.
    pub fn settings(&self, stem: &str) -> S3Settings {
        settings_at(&self.endpoint(), &self.fresh_root(stem))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The environment stock tools need to reach the server at `endpoint` with the test keys,
/// and nothing of the user's own AWS set-up.
pub fn tool_env(endpoint: &str) -> Vec<(&'static str, Option<&str>)> {
    vec![
        ("AWS_ACCESS_KEY_ID", Some(ACCESS_KEY)),
        ("AWS_SECRET_ACCESS_KEY", Some(SECRET_KEY)),
        ("AWS_ENDPOINT_URL", Some(endpoint)),
        ("AWS_PROFILE", None),
        ("AWS_CONFIG_FILE", Some("/dev/null")),
        ("AWS_SHARED_CREDENTIALS_FILE", Some("/dev/null")),
        ("NCRCENV_RC", Some("/dev/null")),
    ]
}

/// Settings for `root` in [`BUCKET`] at `endpoint`: test keys, 4 requests in flight, short
/// timeouts, one retry.
pub fn settings_at(endpoint: &str, root: &str) -> S3Settings {
    S3Settings {
        bucket: BUCKET.into(),
        root: root.into(),
        endpoint: Some(endpoint.into()),
        region: "us-east-1".into(),
        credentials: Credentials::Keys {
            access_key_id: ACCESS_KEY.into(),
            secret_access_key: SECRET_KEY.into(),
            session_token: None,
        },
        credentials_source: "test".into(),
        transfer: Transfer {
            concurrency: 4,
            timeout: Duration::from_secs(5),
            retries: 1,
        },
    }
}

/// One request as the server received it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    /// Path and query, as sent.
    pub target: String,
    pub signed: bool,
    /// Which client connection carried it (numbered from 0).
    pub connection: usize,
    /// The `Range` header, if any.
    pub range: Option<String>,
}

/// A TCP proxy in front of a server that records every request the client sends.
pub struct CountingProxy {
    pub port: u16,
    log: Arc<Mutex<Vec<Request>>>,
}

/// The value of header `name` (any case) in a request head read by [`read_head`].
pub fn header(head: &[String], name: &str) -> Option<String> {
    head.iter().skip(1).find_map(|line| {
        let (k, v) = line.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case(name)
            .then(|| v.trim().to_string())
    })
}

/// The request line and headers of the next request, up to the blank line; `None` at the end.
pub fn read_head(reader: &mut BufReader<TcpStream>) -> Option<Vec<String>> {
    let mut lines = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let done = line == "\r\n" || line == "\n";
        lines.push(line);
        if done {
            return Some(lines);
        }
    }
}

/// What a [`CountingProxy`] does with the requests it traps, instead of forwarding them.
#[derive(Debug, Clone, Copy)]
pub enum Trap {
    /// A GET never answered (the connection stays open): a server that stalls.
    Stall,
    /// A GET answered 200 with a body announced as 64 GiB, zeros sent until the client hangs
    /// up.
    EndlessBody,
    /// A POST answered 501 Not Implemented, with S3's error document: a service without the
    /// request (bulk deletes, say).
    NotImplemented,
    /// A POST answered 404 Not Found, with no body: a service that has no such request and
    /// says so as for a missing object.
    NotFound,
}

impl Trap {
    /// The method of the requests it traps.
    fn method(self) -> &'static str {
        match self {
            Trap::Stall | Trap::EndlessBody => "GET",
            Trap::NotImplemented | Trap::NotFound => "POST",
        }
    }
}

fn answer_trapped(mut client: TcpStream, trap: Trap) {
    match trap {
        Trap::NotImplemented => {
            let body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>NotImplemented\
                        </Code><Message>A header you provided implies functionality that is \
                        not implemented</Message></Error>";
            let head = format!(
                "HTTP/1.1 501 Not Implemented\r\nContent-Type: application/xml\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = client.write_all(head.as_bytes());
            let _ = client.write_all(body.as_bytes());
            let _ = client.shutdown(Shutdown::Both);
        }
        Trap::NotFound => {
            let head = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
            let _ = client.write_all(head.as_bytes());
            let _ = client.shutdown(Shutdown::Both);
        }
        Trap::Stall => std::thread::sleep(Duration::from_secs(3600)),
        Trap::EndlessBody => {
            let zeros = vec![0u8; 1 << 20];
            let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", 64u64 << 30);
            if client.write_all(head.as_bytes()).is_ok() {
                while client.write_all(&zeros).is_ok() {}
            }
            let _ = client.shutdown(Shutdown::Both);
        }
    }
}

fn forward_requests(
    client: TcpStream,
    mut server: TcpStream,
    connection: usize,
    log: Arc<Mutex<Vec<Request>>>,
    trap: Option<(Arc<str>, Trap)>,
) {
    let answer_to = client.try_clone().unwrap();
    let mut reader = BufReader::new(client);
    while let Some(head) = read_head(&mut reader) {
        let mut parts = head[0].split_whitespace();
        let method = parts.next().unwrap_or("").to_string();
        let target = parts.next().unwrap_or("").to_string();
        let header = |name: &str| header(&head, name);
        let length: usize = header("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        assert!(
            header("transfer-encoding").is_none(),
            "the counting proxy does not understand chunked uploads"
        );
        let trapped = trap
            .as_ref()
            .filter(|(pattern, trap)| method == trap.method() && target.contains(&**pattern))
            .map(|(_, trap)| *trap);
        log.lock().unwrap().push(Request {
            method,
            target,
            signed: header("authorization").is_some(),
            connection,
            range: header("range"),
        });
        let mut body = vec![0u8; length];
        if let Some(trap) = trapped {
            if trap.method() != "GET" && reader.read_exact(&mut body).is_err() {
                break;
            }
            answer_trapped(answer_to, trap);
            return;
        }
        if reader.read_exact(&mut body).is_err() {
            break;
        }
        if server.write_all(head.concat().as_bytes()).is_err() || server.write_all(&body).is_err() {
            break;
        }
    }
    let _ = server.shutdown(Shutdown::Write);
}

impl CountingProxy {
    /// Forwards 127.0.0.1:<new port> to 127.0.0.1:`target`.
    pub fn start(target: u16) -> CountingProxy {
        Self::start_trapping(target, None)
    }

    /// As [`CountingProxy::start`], but a request of the trap's method whose target contains
    /// the pattern of `trap` is recorded and answered as the trap says, not forwarded.
    pub fn start_trapping(target: u16, trap: Option<(&str, Trap)>) -> CountingProxy {
        let trap: Option<(Arc<str>, Trap)> = trap.map(|(p, t)| (Arc::from(p), t));
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let log = Arc::new(Mutex::new(Vec::new()));
        let shared = Arc::clone(&log);
        std::thread::spawn(move || {
            for (n, client) in listener.incoming().enumerate() {
                let Ok(client) = client else { continue };
                let Ok(server) = TcpStream::connect(("127.0.0.1", target)) else {
                    continue;
                };
                let (mut back_from, mut back_to) =
                    (server.try_clone().unwrap(), client.try_clone().unwrap());
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut back_from, &mut back_to);
                    let _ = back_to.shutdown(Shutdown::Write);
                });
                let (log, trap) = (Arc::clone(&shared), trap.clone());
                std::thread::spawn(move || forward_requests(client, server, n, log, trap));
            }
        });
        CountingProxy { port, log }
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every request so far, in arrival order; clears the log.
    pub fn take(&self) -> Vec<Request> {
        std::mem::take(&mut *self.log.lock().unwrap())
    }
}

/// How a fake server answers each connection.
#[derive(Debug, Clone, Copy)]
pub enum Misbehaviour {
    /// Accepts the connection and never answers.
    Silent,
    /// Sends a 200 announcing 1000 bytes, sends 100, then closes the connection.
    DropsMidBody,
    /// Sends a 200 announcing 1000 bytes, sends 100, then stalls.
    StallsMidBody,
    /// Answers `503 SlowDown` to the first two requests, then `200` with body `fine`.
    ThrottlesTwice,
}

/// A fake S3 endpoint on loopback; counts the requests it reads.
pub struct FakeServer {
    pub port: u16,
    pub requests: Arc<AtomicUsize>,
}

impl FakeServer {
    pub fn start(how: Misbehaviour) -> FakeServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&requests);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let count = Arc::clone(&count);
                std::thread::spawn(move || serve_badly(stream, how, &count));
            }
        });
        FakeServer { port, requests }
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

fn serve_badly(stream: TcpStream, how: Misbehaviour, count: &AtomicUsize) {
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    while read_head(&mut reader).is_some() {
        let n = count.fetch_add(1, Ordering::SeqCst);
        let partial = b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n";
        match how {
            Misbehaviour::Silent => std::thread::sleep(Duration::from_secs(3600)),
            Misbehaviour::DropsMidBody => {
                let _ = writer.write_all(partial);
                let _ = writer.write_all(&[b'x'; 100]);
                let _ = writer.shutdown(Shutdown::Both);
                return;
            }
            Misbehaviour::StallsMidBody => {
                let _ = writer.write_all(partial);
                let _ = writer.write_all(&[b'x'; 100]);
                std::thread::sleep(Duration::from_secs(3600));
            }
            Misbehaviour::ThrottlesTwice if n < 2 => {
                let body = "<Error><Code>SlowDown</Code><Message>Reduce your request rate</Message></Error>";
                let _ = write!(
                    writer,
                    "HTTP/1.1 503 Slow Down\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
            }
            Misbehaviour::ThrottlesTwice => {
                let _ = writer.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nfine");
            }
        }
    }
}

/// Runs `work` on a thread and fails the test if it has not finished after `limit` (a hang).
pub fn within<T: Send + 'static>(limit: Duration, work: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(work());
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("no answer after {limit:?}: the operation hangs"))
}
