//! Shared helpers for the command-line tests: locating the library under test, running Debian's
//! stock netCDF tools with or without it, and collecting every failure before reporting.
//!
//! "Ours" is the stock tool with `LD_PRELOAD` of our cdylib. The library is found through
//! `NCZARR_RS_LIB`, else next to the test binary (`target/<profile>/libnczarr_rs.so`). Without it
//! every test fails, unless `NCZARR_RS_REFERENCE_ONLY` is set: then "ours" is played by a
//! reference implementation so the harness itself can be exercised (`1`: the built-in NCZarr of
//! the system libnetcdf, `4.10`: netcdf-c 4.10.1 through `with-netcdf-4.10`).

// Each integration-test binary uses a different subset of these helpers.
#![allow(dead_code)]

pub mod credential_service;
pub mod diff;
pub mod dump;
pub mod python;
pub mod s3;
pub mod tool_round_trip;
pub mod web;
pub mod zarr_json;
pub mod zarr_v3_check;

use std::fs;
use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Longest any single tool invocation may take before it is killed and reported.
const TOOL_TIMEOUT: Duration = Duration::from_secs(120);

/// Root of the repository (where Cargo.toml lives).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The CDL corpus, sorted by file name.
pub fn cdl_files() -> Vec<PathBuf> {
    let dir = repo_root().join("tests/cdl");
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "cdl"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 10,
        "the CDL corpus in {} is incomplete",
        dir.display()
    );
    files
}

/// File stem of a CDL file, used as the case name.
pub fn case_name(cdl: &Path) -> String {
    cdl.file_stem().unwrap().to_string_lossy().into_owned()
}

/// `file://` URL of a store directory with the given mode list (e.g. `nczarr,file`).
pub fn url(store: &Path, mode: &str) -> String {
    assert!(
        store.is_absolute(),
        "store paths must be absolute: {}",
        store.display()
    );
    format!("file://{}#mode={mode}", store.display())
}

/// Who plays "ours" in this run.
#[derive(Clone, Debug)]
pub enum Subject {
    /// The real thing: stock tools with `LD_PRELOAD` of this library.
    Preload(PathBuf),
    /// Reference-only mode: the built-in NCZarr of the system libnetcdf.
    BuiltIn,
    /// Reference-only mode: netcdf-c 4.10.1.
    Ref410,
}

/// Decides the subject once per test binary. Panics (failing the test) when the library is missing
/// and reference-only mode was not asked for.
pub fn subject() -> &'static Subject {
    static SUBJECT: OnceLock<Subject> = OnceLock::new();
    SUBJECT.get_or_init(|| {
        if let Ok(mode) = std::env::var("NCZARR_RS_REFERENCE_ONLY") {
            return match mode.as_str() {
                "4.10" => Subject::Ref410,
                "" | "0" => locate_library(),
                _ => Subject::BuiltIn,
            };
        }
        locate_library()
    })
}

/// The library under test, for tests that load it into a program of their own (Python);
/// `None` in reference-only mode, where such tests have nothing to run.
pub fn preloaded_library() -> Option<&'static Path> {
    match subject() {
        Subject::Preload(lib) => Some(lib),
        Subject::BuiltIn | Subject::Ref410 => None,
    }
}

fn locate_library() -> Subject {
    if let Ok(p) = std::env::var("NCZARR_RS_LIB") {
        let p = PathBuf::from(p);
        assert!(p.is_file(), "NCZARR_RS_LIB={} is not a file", p.display());
        return Subject::Preload(fs::canonicalize(&p).unwrap());
    }
    // The test binary lives in target/<profile>/deps/; the cdylib in target/<profile>/.
    let exe = std::env::current_exe().expect("current_exe");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>");
    let lib = profile_dir.join("libnczarr_rs.so");
    assert!(
        lib.is_file(),
        "library under test not found at {} (build it, set NCZARR_RS_LIB, or set \
         NCZARR_RS_REFERENCE_ONLY=1 to exercise the harness against the reference only)",
        lib.display()
    );
    // `cargo test` rebuilds the rlib the test binary links, not the cdylib the tools preload:
    // refuse to test a library older than its sources.
    let built = fs::metadata(&lib)
        .and_then(|m| m.modified())
        .expect("library mtime");
    if let Some(newer) = newest_source(&repo_root().join("src")).filter(|(t, _)| *t > built) {
        panic!(
            "{} is older than {}: run `cargo build` (same profile) before these tests",
            lib.display(),
            newer.1.display()
        );
    }
    Subject::Preload(lib)
}

/// The most recently modified file below `dir`.
fn newest_source(dir: &Path) -> Option<(std::time::SystemTime, PathBuf)> {
    let mut newest: Option<(std::time::SystemTime, PathBuf)> = None;
    for entry in fs::read_dir(dir).ok()?.flatten() {
        let p = entry.path();
        let candidate = if p.is_dir() {
            newest_source(&p)
        } else {
            entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .map(|t| (t, p))
        };
        if let Some(c) = candidate
            && newest.as_ref().is_none_or(|n| c.0 > n.0)
        {
            newest = Some(c);
        }
    }
    newest
}

/// True when "ours" is a reference implementation (harness validation), not the library.
pub fn reference_only() -> bool {
    !matches!(subject(), Subject::Preload(_))
}

/// The shared tools directory (holds `with-netcdf-4.10`): `$NCZARR_RS_SHARED/tools`, else the
/// first `shared/tools` found beside the repository or one of its ancestors.
pub fn shared_tools() -> PathBuf {
    if let Ok(p) = std::env::var("NCZARR_RS_SHARED") {
        return PathBuf::from(p).join("tools");
    }
    let root = repo_root();
    for anc in root.ancestors().skip(1) {
        let cand = anc.join("shared/tools/with-netcdf-4.10");
        if cand.is_file() {
            return anc.join("shared/tools");
        }
    }
    panic!(
        "shared/tools/with-netcdf-4.10 not found beside {} or its ancestors",
        root.display()
    );
}

/// Which implementation of the netCDF library a tool runs with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Host {
    /// Stock tool, system libnetcdf, no preload (HDF5 ground truth, built-in NCZarr 4.9.0).
    Stock,
    /// Stock tool with the library under test (or its reference-only stand-in).
    Ours,
    /// Stock tool on netcdf-c 4.10.1, no preload.
    Ref410,
    /// Stock tool on netcdf-c 4.10.1 with the library under test.
    OursOn410,
}

/// Outcome of one tool run.
#[derive(Debug)]
pub struct Run {
    pub cmdline: String,
    pub status: Option<ExitStatus>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn success(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }

    /// Killed by a signal (a crash), or by our timeout.
    pub fn crashed(&self) -> bool {
        self.status.is_none_or(|s| s.signal().is_some())
    }

    /// Failed with an error (no crash, no hang) whose message says `says`.
    pub fn refused_saying(&self, says: &str) -> bool {
        !self.success() && !self.crashed() && self.stderr.contains(says)
    }

    /// One-paragraph description for failure messages.
    pub fn describe(&self) -> String {
        let how = match self.status {
            None => "timed out".to_string(),
            Some(s) => match s.signal() {
                Some(sig) => format!("killed by signal {sig}"),
                None => format!("exit {}", s.code().unwrap_or(-1)),
            },
        };
        let err: String = self.stderr.chars().take(2000).collect();
        format!("`{}`: {how}\n  stderr: {}", self.cmdline, err.trim_end())
    }

    /// stdout if the run succeeded, else a description of the failure.
    pub fn output(&self) -> Result<String, String> {
        if self.success() {
            Ok(self.stdout.clone())
        } else {
            Err(self.describe())
        }
    }
}

/// Runs `program args...` on the given host with a timeout, capturing output through files (no
/// pipe deadlocks, no stdin).
pub fn run(host: Host, program: &str, args: &[&str]) -> Run {
    run_env(host, program, args, &[])
}

/// [`run`] with changes to the environment: `(name, Some(value))` sets, `(name, None)` removes.
pub fn run_env(host: Host, program: &str, args: &[&str], env: &[(&str, Option<&str>)]) -> Run {
    let host = match (host, subject()) {
        (Host::Ours, Subject::BuiltIn) => Host::Stock,
        (Host::Ours | Host::OursOn410, Subject::Ref410) => Host::Ref410,
        (Host::OursOn410, Subject::BuiltIn) => Host::Ref410,
        (h, _) => h,
    };
    let mut cmd = match host {
        Host::Ref410 | Host::OursOn410 => {
            let mut c = Command::new(shared_tools().join("with-netcdf-4.10"));
            c.arg(program);
            c
        }
        _ => Command::new(program),
    };
    cmd.args(args);
    for (name, value) in env {
        match value {
            Some(v) => cmd.env(name, v),
            None => cmd.env_remove(name),
        };
    }
    cmd.env_remove("LD_PRELOAD");
    if let (Host::Ours | Host::OursOn410, Subject::Preload(lib)) = (host, subject()) {
        // with-netcdf-4.10 prepends its own libraries to an LD_PRELOAD it inherits.
        cmd.env("LD_PRELOAD", lib);
    }
    let cmdline = format!("{host:?}: {program} {}", args.join(" "));
    let out = tempfile::tempfile().expect("tempfile");
    let err = tempfile::tempfile().expect("tempfile");
    cmd.stdin(Stdio::null())
        .stdout(out.try_clone().unwrap())
        .stderr(err.try_clone().unwrap());
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return Run {
                cmdline,
                status: None,
                stdout: String::new(),
                stderr: format!("spawn: {e}"),
            };
        }
    };
    let start = Instant::now();
    let status = loop {
        match child.try_wait().expect("wait") {
            Some(s) => break Some(s),
            None if start.elapsed() > TOOL_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            None => std::thread::sleep(Duration::from_millis(5)),
        }
    };
    Run {
        cmdline,
        status,
        stdout: read_all(out),
        stderr: read_all(err),
    }
}

fn read_all(mut f: fs::File) -> String {
    use std::io::Seek;
    f.rewind().unwrap();
    let mut buf = Vec::new();
    f.read_to_end(&mut buf).unwrap();
    String::from_utf8_lossy(&buf).into_owned()
}

/// `ncgen -4 -o target cdl` on the host; Err describes a failure.
pub fn ncgen(host: Host, cdl: &Path, target: &str) -> Result<(), String> {
    let r = run(host, "ncgen", &["-4", "-o", target, cdl.to_str().unwrap()]);
    r.output().map(|_| ())
}

/// `ncdump [opts] target` on the host.
pub fn ncdump(host: Host, opts: &[&str], target: &str) -> Result<String, String> {
    let mut args: Vec<&str> = opts.to_vec();
    args.push(target);
    run(host, "ncdump", &args).output()
}

/// Ground truth for one CDL file: stock `ncgen -4` to HDF5, stock `ncdump` with the options.
pub fn hdf5_truth(dir: &Path, cdl: &Path, opts: &[&str]) -> String {
    let nc = dir.join(format!("{}.nc", case_name(cdl)));
    let nc = nc.to_str().unwrap();
    if !Path::new(nc).exists() {
        ncgen(Host::Stock, cdl, nc).unwrap_or_else(|e| panic!("ground truth: {e}"));
    }
    ncdump(Host::Stock, opts, nc).unwrap_or_else(|e| panic!("ground truth: {e}"))
}

/// Collects failures across all cases of one check and panics once at the end with all of them.
#[derive(Default)]
pub struct Report {
    check: String,
    cases: usize,
    failures: Vec<String>,
    notes: Vec<String>,
}

impl Report {
    pub fn new(check: &str) -> Self {
        Report {
            check: check.to_string(),
            ..Default::default()
        }
    }

    /// Records the outcome of one case (`Err` holds the explanation, usually a diff).
    pub fn case(&mut self, name: &str, outcome: Result<(), String>) {
        self.cases += 1;
        match outcome {
            Ok(()) => eprintln!("ok    {} {name}", self.check),
            Err(e) => {
                eprintln!("FAIL  {} {name}", self.check);
                self.failures
                    .push(format!("--- {} / {name} ---\n{e}", self.check));
            }
        }
    }

    /// Something worth printing that is not a failure (e.g. an oracle that is unavailable).
    pub fn note(&mut self, msg: String) {
        eprintln!("note  {} {msg}", self.check);
        self.notes.push(msg);
    }

    /// Panics with every failure if there was any, and when fewer than `min_cases` ran.
    pub fn finish(self, min_cases: usize) {
        assert!(
            self.cases >= min_cases,
            "{}: only {} cases ran, expected at least {min_cases}; notes:\n{}",
            self.check,
            self.cases,
            self.notes.join("\n")
        );
        if !self.failures.is_empty() {
            panic!(
                "{}: {} of {} cases failed\n\n{}",
                self.check,
                self.failures.len(),
                self.cases,
                self.failures.join("\n\n")
            );
        }
    }
}

/// The files below directory `dir`, by their names below `name` (`name/sub/file`).
pub fn files_below(dir: &Path, name: &str) -> std::collections::BTreeMap<String, PathBuf> {
    let mut out = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let below = format!("{name}/{}", entry.file_name().to_str().unwrap());
        if entry.file_type().unwrap().is_dir() {
            out.extend(files_below(&entry.path(), &below));
        } else {
            out.insert(below, entry.path());
        }
    }
    out
}

/// Copies the directory tree `from` to `to`.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A scratch directory that is removed on drop, unless `NCZARR_RS_KEEP_TMP` is set.
pub fn scratch(label: &str) -> tempfile::TempDir {
    let prefix = format!("nczarr-rs-{label}-");
    let mut b = tempfile::Builder::new();
    b.prefix(&prefix);
    if std::env::var_os("NCZARR_RS_KEEP_TMP").is_some() {
        b.disable_cleanup(true);
    }
    b.tempdir().expect("tempdir")
}

/// Every object of a directory store, by key (its path relative to `root`).
pub fn directory_objects(root: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.insert(rel, fs::read(&p).unwrap());
            }
        }
    }
    out
}
