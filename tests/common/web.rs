//! Web servers on loopback for the plain-HTTP tests, each serving one directory and stopped
//! when dropped: Python's own `http.server` (GETs only: no ranges, no ETags, no WebDAV) and
//! WsgiDAV (a WebDAV server: listings by `PROPFIND`, ranged GETs, ETags); and [`FakeWeb`],
//! which answers listings as no real server of either kind does.

use super::python;
use super::s3::free_port;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Which server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WebKind {
    /// `python3 -m http.server`.
    Plain,
    /// WsgiDAV, from the pinned environment `http` of `scripts/pyenv`.
    WebDav,
    /// WsgiDAV answering only requests that log in as [`WEB_USER`] with [`WEB_PASSWORD`]
    /// (HTTP basic authentication).
    WebDavLogin,
}

/// The user [`WebKind::WebDavLogin`] lets in.
pub const WEB_USER: &str = "alice";
/// Their password: characters a URL must escape, none that netrc cannot hold.
pub const WEB_PASSWORD: &str = "s3cr@t:x%";

impl WebKind {
    pub fn name(self) -> &'static str {
        match self {
            WebKind::Plain => "http.server",
            WebKind::WebDav => "wsgidav",
            WebKind::WebDavLogin => "wsgidav with a login",
        }
    }
}

/// A running server.
pub struct WebServer {
    pub kind: WebKind,
    pub port: u16,
    child: Child,
}

impl WebServer {
    /// Starts `kind` serving the files below `dir`.
    pub fn start(kind: WebKind, dir: &Path) -> WebServer {
        let dir = dir.to_str().unwrap();
        for _ in 0..3 {
            let port = free_port();
            let mut cmd = match kind {
                WebKind::Plain => {
                    let mut c = Command::new("python3");
                    c.args(["-m", "http.server", &port.to_string()]).args([
                        "--bind",
                        "127.0.0.1",
                        "--directory",
                        dir,
                    ]);
                    c
                }
                WebKind::WebDav => {
                    let mut c = Command::new(python::interpreter("http").unwrap());
                    c.args(["-m", "wsgidav.server.server_cli", "-p", &port.to_string()])
                        .args(["-H", "127.0.0.1", "-r", dir, "--auth", "anonymous"])
                        .args(["--no-config", "-q"]);
                    c
                }
                WebKind::WebDavLogin => {
                    let config = std::env::temp_dir().join(format!("wsgidav-login-{port}.json"));
                    let text = serde_json::json!({
                        "host": "127.0.0.1",
                        "port": port,
                        "provider_mapping": {"/": dir},
                        "http_authenticator": {
                            "domain_controller": null,
                            "accept_basic": true,
                            "accept_digest": false,
                            "default_to_digest": false,
                        },
                        "simple_dc": {"user_mapping": {"*": {WEB_USER: {"password": WEB_PASSWORD}}}},
                        "verbose": 0,
                    });
                    std::fs::write(&config, text.to_string()).unwrap();
                    let mut c = Command::new(python::interpreter("http").unwrap());
                    c.args(["-m", "wsgidav.server.server_cli", "--config"])
                        .arg(&config);
                    c
                }
            };
            let mut child = cmd
                .env_remove("LD_PRELOAD")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("starting {}: {e}", kind.name()));
            let deadline = Instant::now() + Duration::from_secs(30);
            while Instant::now() < deadline {
                if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    return WebServer { kind, port, child };
                }
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
            eprintln!("{} did not start on port {port}; retrying", kind.name());
        }
        panic!("could not start {}", kind.name());
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for WebServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A web server on loopback that serves the files below a directory to GETs (200 or 404,
/// whole, one request per connection) and answers every `PROPFIND` with one status and no
/// body, counting them: servers that list nothing in ways WebDAV servers never do.
pub struct FakeWeb {
    pub port: u16,
    pub propfinds: Arc<AtomicUsize>,
}

impl FakeWeb {
    pub fn start(dir: &Path, propfind_status: u16) -> FakeWeb {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let propfinds = Arc::new(AtomicUsize::new(0));
        let (counted, dir) = (Arc::clone(&propfinds), dir.to_path_buf());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (counted, dir) = (Arc::clone(&counted), dir.clone());
                std::thread::spawn(move || answer(stream, &dir, propfind_status, &counted));
            }
        });
        FakeWeb { port, propfinds }
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

fn answer(stream: TcpStream, dir: &Path, propfind_status: u16, propfinds: &AtomicUsize) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request = String::new();
    if reader.read_line(&mut request).is_err() {
        return;
    }
    let mut line = String::new();
    while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
        line.clear();
    }
    let mut parts = request.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or("/"));
    let (status, body) = if method == "PROPFIND" {
        propfinds.fetch_add(1, Ordering::SeqCst);
        (propfind_status, Vec::new())
    } else {
        match std::fs::read(dir.join(target.trim_start_matches('/'))) {
            Ok(bytes) => (200, bytes),
            Err(_) => (404, Vec::new()),
        }
    };
    let head = format!(
        "HTTP/1.1 {status} Status\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let mut stream = stream;
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(&body);
}
