//! The AWS shared configuration files: `~/.aws/config` and `~/.aws/credentials`.
//!
//! Owns their INI dialect as the AWS tools read it: `[default]`, `[profile NAME]` in the config
//! file and `[NAME]` in the credentials file; `key = value` lines; `#` and `;` comments;
//! indented lines continue a nested block (such as `s3 =`) and are skipped; `[sso-session NAME]`
//! sections are kept apart from profiles. Values of one profile
//! from both files are merged, the credentials file winning. It knows nothing of URLs,
//! environment variables or stores.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The settings of every profile found in the two files.
#[derive(Debug, Default)]
pub struct Profiles {
    profiles: HashMap<String, HashMap<String, String>>,
    sso_sessions: HashMap<String, HashMap<String, String>>,
    /// The files that were read, for messages.
    pub sources: Vec<PathBuf>,
}

/// Which of the two files a text comes from (they name sections differently).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// `~/.aws/config`: `[default]` and `[profile NAME]`.
    Config,
    /// `~/.aws/credentials`: `[NAME]`.
    Credentials,
}

/// What a section holds.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Section {
    Profile(String),
    /// `[sso-session NAME]` of the config file: where a single sign-on session logs in.
    SsoSession(String),
}

/// The section a header names, or `None` for sections that are neither profiles nor sign-on
/// sessions (`[services x]`).
fn section(header: &str, kind: FileKind) -> Option<Section> {
    let header = header.trim();
    let named = |prefix: &str| {
        header
            .strip_prefix(prefix)
            .filter(|rest| rest.starts_with(char::is_whitespace))
            .map(|rest| rest.trim().to_string())
    };
    match kind {
        FileKind::Credentials => Some(Section::Profile(header.to_string())),
        FileKind::Config if header == "default" => Some(Section::Profile(header.to_string())),
        FileKind::Config => named("profile")
            .map(Section::Profile)
            .or_else(|| named("sso-session").map(Section::SsoSession)),
    }
}

impl Profiles {
    /// Reads the config file, then the credentials file; a missing file is no error.
    pub fn load(config: Option<&Path>, credentials: Option<&Path>) -> Profiles {
        let mut profiles = Profiles::default();
        for (path, kind) in [
            (config, FileKind::Config),
            (credentials, FileKind::Credentials),
        ] {
            if let Some(text) = path.and_then(|p| std::fs::read_to_string(p).ok()) {
                profiles.add_text(&text, kind);
                profiles.sources.extend(path.map(Path::to_path_buf));
            }
        }
        profiles
    }

    /// Adds the profiles of one file's text; later values replace earlier ones.
    pub fn add_text(&mut self, text: &str, kind: FileKind) {
        let mut current: Option<Section> = None;
        for line in text.lines() {
            if line.starts_with(char::is_whitespace) && !line.trim().is_empty() {
                continue;
            }
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
                continue;
            }
            if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                current = section(header, kind);
                if let Some(Section::Profile(name)) = &current {
                    self.profiles.entry(name.clone()).or_default();
                }
                continue;
            }
            let (Some(current), Some((key, value))) = (&current, line.split_once('=')) else {
                continue;
            };
            let value = value.trim();
            if value.is_empty() {
                continue;
            }
            let (map, name) = match current {
                Section::Profile(name) => (&mut self.profiles, name),
                Section::SsoSession(name) => (&mut self.sso_sessions, name),
            };
            map.entry(name.clone())
                .or_default()
                .insert(key.trim().to_ascii_lowercase(), value.to_string());
        }
    }

    /// True when some file has a section for `profile`.
    pub fn has(&self, profile: &str) -> bool {
        self.profiles.contains_key(profile)
    }

    /// The value of `key` (lowercase) in the `[sso-session NAME]` section `session`.
    pub fn sso_session(&self, session: &str, key: &str) -> Option<&str> {
        self.sso_sessions
            .get(session)
            .and_then(|p| p.get(key))
            .map(String::as_str)
    }

    /// The value of `key` (lowercase) in `profile`.
    pub fn get(&self, profile: &str, key: &str) -> Option<&str> {
        self.profiles
            .get(profile)
            .and_then(|p| p.get(key))
            .map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_files_merge_and_credentials_win() {
        let mut p = Profiles::default();
        p.add_text(
            "# comment\n[default]\nregion = eu-west-1\n\n[profile dev]\nregion=us-west-2\n\
             aws_access_key_id = FROMCONFIG\ns3 =\n  addressing_style = path\n\
             [sso-session x]\nregion = nowhere\n[profilex]\nregion = bad\n",
            FileKind::Config,
        );
        p.add_text(
            "[dev]\naws_access_key_id = AKID\naws_secret_access_key = se=cret\n; note\n\
             [default]\nAWS_SESSION_TOKEN = tok\n",
            FileKind::Credentials,
        );
        assert_eq!(p.get("default", "region"), Some("eu-west-1"));
        assert_eq!(p.get("default", "aws_session_token"), Some("tok"));
        assert_eq!(p.get("dev", "region"), Some("us-west-2"));
        assert_eq!(p.get("dev", "aws_access_key_id"), Some("AKID"));
        assert_eq!(p.get("dev", "aws_secret_access_key"), Some("se=cret"));
        assert_eq!(p.get("dev", "addressing_style"), None);
        assert!(!p.has("x") && !p.has("sso-session x") && !p.has("profilex"));
        assert_eq!(p.sso_session("x", "region"), Some("nowhere"));
        assert_eq!(p.sso_session("dev", "region"), None);
    }

    #[test]
    fn missing_files_give_no_profiles() {
        let p = Profiles::load(
            Some(Path::new("/nonexistent/config")),
            Some(Path::new("/nonexistent/credentials")),
        );
        assert!(!p.has("default"));
        assert!(p.sources.is_empty());
    }
}
