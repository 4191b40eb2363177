//! netCDF's runtime configuration files (`.ncrc`, `.daprc`, `.dodsrc`), read as netcdf-c reads
//! them, for the keys its NCZarr honours (`AWS.PROFILE`, `AWS.REGION`,
//! `ZARR.DIMENSION_SEPARATOR`) and its web credentials (`HTTP.CREDENTIALS.*`, `HTTP.NETRC`).
//!
//! Owns which files are read and in what order, their line syntax, and which of several
//! entries for one key wins. Files: with `NCRCENV_IGNORE` set, none; with `NCRCENV_RC`, that
//! one; else `.ncrc`, `.daprc`, `.dodsrc` in the home directory (`NCRCENV_HOME`, else `HOME`),
//! then the same three in the current directory. Lines: `KEY=VALUE` (the value is everything
//! after the first `=`; no `=` means an empty value), key and value trimmed, `#` starting a
//! comment line; `[URL]KEY=VALUE` scopes an entry to datasets at that URL. Keys are
//! case-sensitive. A later entry for the same key and scope replaces an earlier one; an entry
//! whose scope matches the dataset beats an unscoped one, the first such if several do.
//! Environment lookups go through a function so tests can supply their own. It knows nothing
//! of S3, Zarr or how a scope is matched against a dataset: the caller decides that.

use crate::env::{self, value as env_value};
use crate::url::DatasetUrl;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The files read in each directory, in order.
const FILE_NAMES: [&str; 3] = [".ncrc", ".daprc", ".dodsrc"];

/// Where an entry applies: the URL in its `[...]` prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    /// The URL as written.
    pub text: String,
    /// The URL parsed (`None`: not a URL; such an entry never applies).
    pub url: Option<DatasetUrl>,
}

#[derive(Clone, PartialEq, Eq)]
struct Entry {
    key: String,
    value: String,
    scope: Option<Scope>,
}

/// Shows an entry's value only when its key names no secret (`HTTP.CREDENTIALS.*`, or any key
/// saying password or secret).
impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let key = self.key.to_ascii_uppercase();
        let secret = ["CREDENTIALS", "PASSWORD", "SECRET", "TOKEN"]
            .iter()
            .any(|s| key.contains(s));
        f.debug_struct("Entry")
            .field("key", &self.key)
            .field("value", &if secret { "***" } else { self.value.as_str() })
            .field("scope", &self.scope)
            .finish()
    }
}

/// The entries of every file read.
#[derive(Debug, Default, Clone)]
pub struct RcFiles {
    entries: Vec<Entry>,
    /// The files that were read, in order, for messages.
    pub sources: Vec<PathBuf>,
}

impl RcFiles {
    /// Reads the files netcdf-c would read for a process with environment `env` running in
    /// `cwd`; a missing or unreadable file is skipped.
    pub fn load(env: &dyn Fn(&str) -> Option<String>, cwd: Option<&Path>) -> RcFiles {
        let mut rc = RcFiles::default();
        if env("NCRCENV_IGNORE").is_some() {
            return rc;
        }
        let files: Vec<PathBuf> = match env_value(env, "NCRCENV_RC") {
            Some(only) => vec![PathBuf::from(only)],
            None => {
                let home = env_value(env, "NCRCENV_HOME")
                    .or_else(|| env_value(env, "HOME"))
                    .map(PathBuf::from);
                home.iter()
                    .map(PathBuf::as_path)
                    .chain(cwd)
                    .flat_map(|dir| FILE_NAMES.iter().map(move |name| dir.join(name)))
                    .collect()
            }
        };
        for file in files {
            if let Ok(text) = std::fs::read_to_string(&file) {
                rc.add_text(&text);
                rc.sources.push(file);
            }
        }
        rc
    }

    /// The files of this process, read once (as netcdf-c reads them once, when it starts).
    pub fn of_process() -> &'static RcFiles {
        static LOADED: OnceLock<RcFiles> = OnceLock::new();
        LOADED.get_or_init(|| {
            let cwd = std::env::current_dir().ok();
            RcFiles::load(&env::of_process, cwd.as_deref())
        })
    }

    /// Adds the entries of one file's text; later entries replace earlier ones of the same key
    /// and scope.
    pub fn add_text(&mut self, text: &str) {
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (scope, rest) = match line.strip_prefix('[').and_then(|l| l.split_once(']')) {
                Some((url, rest)) => {
                    let text = url.trim().to_string();
                    let url = DatasetUrl::parse(&text).ok().filter(|u| u.scheme.is_some());
                    (Some(Scope { text, url }), rest)
                }
                None => (None, line),
            };
            let (key, value) = rest.split_once('=').unwrap_or((rest, ""));
            let entry = Entry {
                key: key.trim().to_string(),
                value: value.trim().to_string(),
                scope,
            };
            if entry.key.is_empty() {
                continue;
            }
            match self
                .entries
                .iter_mut()
                .find(|e| e.key == entry.key && e.scope == entry.scope)
            {
                Some(old) => old.value = entry.value,
                None => self.entries.push(entry),
            }
        }
    }

    /// The unscoped value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.get_for(key, &|_| false)
    }

    /// The value of `key` for a dataset: an entry whose scope `applies` (the first such, as in
    /// netcdf-c, if several do), else the unscoped entry.
    pub fn get_for(&self, key: &str, applies: &dyn Fn(&DatasetUrl) -> bool) -> Option<&str> {
        self.scoped_entry(key, applies)
            .or_else(|| {
                self.entries
                    .iter()
                    .find(|e| e.key == key && e.scope.is_none())
            })
            .map(|e| e.value.as_str())
    }

    /// The value of `key` from an entry whose scope `applies` (the first such), never an
    /// unscoped one.
    pub fn get_scoped(&self, key: &str, applies: &dyn Fn(&DatasetUrl) -> bool) -> Option<&str> {
        self.scoped_entry(key, applies).map(|e| e.value.as_str())
    }

    fn scoped_entry(&self, key: &str, applies: &dyn Fn(&DatasetUrl) -> bool) -> Option<&Entry> {
        self.entries.iter().find(|e| {
            e.key == key
                && e.scope
                    .as_ref()
                    .and_then(|s| s.url.as_ref())
                    .is_some_and(applies)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn secrets_are_never_shown() {
        let mut rc = RcFiles::default();
        rc.add_text("HTTP.CREDENTIALS.USERPASSWORD=u:hunter2\n[https://h]HTTP.CREDENTIALS.PASSWORD=hunter2\nAWS.PROFILE=dev\n");
        let shown = format!("{rc:?}");
        assert!(
            !shown.contains("hunter2") && shown.contains("dev"),
            "{shown}"
        );
    }

    #[test]
    fn lines_are_read_as_netcdf_reads_them() {
        let mut rc = RcFiles::default();
        rc.add_text(
            "# a comment\n\n  AWS.PROFILE = dev \nEMPTY\nURL=http://x/?a=b\r\nkey=lower\n\
             [s3://bucket/data]AWS.PROFILE=scoped\n[not a url]AWS.PROFILE=never\n=nokey\n",
        );
        assert_eq!(rc.get("AWS.PROFILE"), Some("dev"));
        assert_eq!(rc.get("EMPTY"), Some(""));
        assert_eq!(rc.get("URL"), Some("http://x/?a=b"));
        assert_eq!(rc.get("KEY"), None, "keys are case-sensitive");
        assert_eq!(rc.get("key"), Some("lower"));
        let bucket = |u: &DatasetUrl| u.host.as_deref() == Some("bucket");
        assert_eq!(rc.get_for("AWS.PROFILE", &bucket), Some("scoped"));
        assert_eq!(rc.get_for("AWS.PROFILE", &|_| false), Some("dev"));
        assert_eq!(
            rc.get_for("AWS.PROFILE", &|u| u.host.is_none()),
            Some("dev")
        );

        rc.add_text("AWS.PROFILE=later\n[s3://bucket/data]AWS.PROFILE=rescoped\n");
        assert_eq!(rc.get("AWS.PROFILE"), Some("later"), "a later entry wins");
        assert_eq!(rc.get_for("AWS.PROFILE", &bucket), Some("rescoped"));
    }

    #[test]
    fn files_are_found_as_netcdf_finds_them() {
        let home = tempfile::TempDir::new().unwrap();
        let cwd = tempfile::TempDir::new().unwrap();
        let other = tempfile::TempDir::new().unwrap();
        std::fs::write(home.path().join(".ncrc"), "A=home-ncrc\nB=home\n").unwrap();
        std::fs::write(home.path().join(".dodsrc"), "A=home-dodsrc\nC=home\n").unwrap();
        std::fs::write(cwd.path().join(".daprc"), "C=cwd\n").unwrap();
        std::fs::write(other.path().join("rc"), "A=only\n").unwrap();
        let h = home.path().to_str().unwrap();
        let only = other.path().join("rc");
        let load = |vars: &[(&str, &str)]| {
            let map: HashMap<String, String> = vars
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            RcFiles::load(&|k| map.get(k).cloned(), Some(cwd.path()))
        };
        let rc = load(&[("HOME", h)]);
        assert_eq!(
            (rc.get("A"), rc.get("B"), rc.get("C")),
            (Some("home-dodsrc"), Some("home"), Some("cwd"))
        );
        assert_eq!(rc.sources.len(), 3);
        let rc = load(&[("HOME", "/nonexistent"), ("NCRCENV_HOME", h)]);
        assert_eq!(rc.get("B"), Some("home"), "NCRCENV_HOME beats HOME");
        let rc = load(&[("HOME", h), ("NCRCENV_RC", only.to_str().unwrap())]);
        assert_eq!((rc.get("A"), rc.get("B")), (Some("only"), None));
        let rc = load(&[("HOME", h), ("NCRCENV_IGNORE", "")]);
        assert!(rc.sources.is_empty() && rc.get("A").is_none());
    }
}
