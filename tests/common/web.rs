//! Web servers on loopback for the plain-HTTP tests, each serving one directory and stopped
//! when dropped: Python's own `http.server` (GETs only: no ranges, no ETags, no WebDAV) and
//! WsgiDAV (a WebDAV server: listings by `PROPFIND`, ranged GETs, ETags).

use super::python;
use super::s3::free_port;
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Which server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WebKind {
    /// `python3 -m http.server`.
    Plain,
    /// WsgiDAV, from the pinned environment `http` of `scripts/pyenv`.
    WebDav,
}

impl WebKind {
    pub fn name(self) -> &'static str {
        match self {
            WebKind::Plain => "http.server",
            WebKind::WebDav => "wsgidav",
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
