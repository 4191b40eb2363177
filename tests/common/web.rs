//! Web servers on loopback for the plain-HTTP tests, each serving one directory and stopped
//! when dropped: Python's own `http.server` (GETs only: no ranges, no ETags, no WebDAV),
//! nginx with `autoindex` (ranged GETs and ETags, no WebDAV, index pages sent chunked and
//! without dot-files) and WsgiDAV (a WebDAV server: listings by `PROPFIND`, ranged GETs,
//! ETags); and [`FakeWeb`], which answers listings as no real server of these kinds does.

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
    /// nginx (Debian's), serving the directory with `autoindex on`.
    Nginx,
    /// nginx answering only requests that log in as [`WEB_USER`] with [`WEB_PASSWORD`]
    /// (HTTP basic authentication), index pages included.
    NginxLogin,
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
            WebKind::Nginx => "nginx",
            WebKind::NginxLogin => "nginx with a login",
            WebKind::WebDav => "wsgidav",
            WebKind::WebDavLogin => "wsgidav with a login",
        }
    }

    /// True for servers without WebDAV, which list directories by their index pages.
    pub fn lists_by_index_pages(self) -> bool {
        matches!(self, WebKind::Plain | WebKind::Nginx | WebKind::NginxLogin)
    }
}

/// An nginx configuration that serves `dir` on loopback at `port`: one process in the
/// foreground (stopped with it), every file it writes below `run`, reading as the user it
/// starts as; with `login`, only to [`WEB_USER`] with [`WEB_PASSWORD`].
fn nginx_config(dir: &str, port: u16, run: &Path, login: bool) -> String {
    use base64::Engine;
    use sha1::Digest;
    // The password holds `:`, which ends nginx's plain-text passwords: its SHA-1 instead.
    let digest = sha1::Sha1::digest(WEB_PASSWORD.as_bytes());
    let hashed = base64::engine::general_purpose::STANDARD.encode(digest);
    let logins = run.join("logins");
    std::fs::write(&logins, format!("{WEB_USER}:{{SHA}}{hashed}\n")).unwrap();
    let auth = if login {
        format!(
            "auth_basic \"data\"; auth_basic_user_file {};",
            logins.display()
        )
    } else {
        String::new()
    };
    let run = run.to_str().unwrap();
    format!(
        "daemon off;\nmaster_process off;\n\
         pid {run}/nginx.pid;\nerror_log {run}/error.log;\n\
         events {{ worker_connections 256; }}\n\
         http {{\n  access_log off;\n  client_body_temp_path {run}/body;\n\
           proxy_temp_path {run}/proxy;\n  fastcgi_temp_path {run}/fastcgi;\n\
           uwsgi_temp_path {run}/uwsgi;\n  scgi_temp_path {run}/scgi;\n\
           server {{ listen 127.0.0.1:{port}; root {dir}; autoindex on; {auth} }}\n}}\n"
    )
}

/// A running server.
pub struct WebServer {
    pub kind: WebKind,
    pub port: u16,
    child: Child,
    /// Where the server keeps its own files (nginx's), removed with it.
    _own_files: Option<tempfile::TempDir>,
}

/// Debian's nginx, which is in `/usr/sbin` (not on every user's path).
fn nginx_program() -> &'static str {
    if Path::new("/usr/sbin/nginx").exists() {
        "/usr/sbin/nginx"
    } else {
        "nginx"
    }
}

impl WebServer {
    /// Starts `kind` serving the files below `dir`.
    pub fn start(kind: WebKind, dir: &Path) -> WebServer {
        let dir = dir.to_str().unwrap();
        for _ in 0..3 {
            let port = free_port();
            let mut own_files = None;
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
                WebKind::Nginx | WebKind::NginxLogin => {
                    let own = tempfile::Builder::new().prefix("nginx-").tempdir().unwrap();
                    let run = own.path().to_path_buf();
                    own_files = Some(own);
                    let config = run.join("nginx.conf");
                    let login = kind == WebKind::NginxLogin;
                    std::fs::write(&config, nginx_config(dir, port, &run, login)).unwrap();
                    let mut c = Command::new(nginx_program());
                    c.arg("-c").arg(&config).arg("-p").arg(&run);
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
                    return WebServer {
                        kind,
                        port,
                        child,
                        _own_files: own_files,
                    };
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
