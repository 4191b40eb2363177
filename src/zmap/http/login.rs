//! Who the web client says it is: the user name and password sent (HTTP basic authentication)
//! to one web server, found as netcdf-c and curl find them.
//!
//! Owns the order of the sources: the URL's own `user:password@`; the `.ncrc` keys
//! `HTTP.CREDENTIALS.USER` with `HTTP.CREDENTIALS.PASSWORD`, then
//! `HTTP.CREDENTIALS.USERPASSWORD` (`user:password`), an entry scoped to the server
//! (`[https://host:port]KEY=...`) before an unscoped one, which applies only to the dataset's
//! own server (never to a server a reference set names); then the netrc file (`HTTP.NETRC` in
//! `.ncrc`, else `$NETRC`, else `~/.netrc`), its entry for the host or its `default`. It must
//! not know how requests are made.

use crate::env::value as env_value;
use crate::rcfile::RcFiles;
use crate::url::{DatasetUrl, Login};
use std::path::PathBuf;

/// Whose server a login is looked up for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asker {
    /// The dataset's own: unscoped `.ncrc` credentials apply.
    Dataset,
    /// A server a reference set names: only credentials scoped to it (or in netrc) apply.
    Target,
}

/// The login for the server of `url`, if any source gives one.
pub fn login_for(
    url: &DatasetUrl,
    asker: Asker,
    env: &dyn Fn(&str) -> Option<String>,
    rc: &RcFiles,
) -> Option<Login> {
    if let Some(login) = &url.login {
        return Some(login.clone());
    }
    let same_server = |scope: &DatasetUrl| scope.host == url.host && scope.port == url.port;
    let from_rc = |key: &str| -> Option<String> {
        let value = match asker {
            Asker::Dataset => rc.get_for(key, &same_server),
            Asker::Target => rc.get_scoped(key, &same_server),
        };
        value.filter(|v| !v.is_empty()).map(str::to_string)
    };
    if let (Some(user), Some(password)) = (
        from_rc("HTTP.CREDENTIALS.USER"),
        from_rc("HTTP.CREDENTIALS.PASSWORD"),
    ) {
        return Some(Login { user, password });
    }
    if let Some(both) = from_rc("HTTP.CREDENTIALS.USERPASSWORD") {
        let (user, password) = both.split_once(':').unwrap_or((&both, ""));
        return Some(Login {
            user: user.to_string(),
            password: password.to_string(),
        });
    }
    let netrc = from_rc("HTTP.NETRC")
        .or_else(|| env_value(env, "NETRC"))
        .map(PathBuf::from)
        .or_else(|| env_value(env, "HOME").map(|h| PathBuf::from(h).join(".netrc")))?;
    // Not a FIFO or a device: reading one could wait forever.
    if !std::fs::metadata(&netrc).is_ok_and(|m| m.is_file()) {
        return None;
    }
    let text = std::fs::read_to_string(&netrc).ok()?;
    in_netrc(&text, url.host.as_deref()?)
}

/// The login netrc text `text` gives for `host`: its first `machine` entry for the host, else
/// its `default` entry.
fn in_netrc(text: &str, host: &str) -> Option<Login> {
    let mut words = text.split_ascii_whitespace();
    let (mut found, mut default) = (None, None);
    // The entry being read: whether it is the host's (or the default), and its login.
    let mut current: Option<(bool, Login)> = None;
    let mut finish = |entry: Option<(bool, Login)>, found: &mut Option<Login>| {
        if let Some((is_default, login)) = entry {
            if is_default {
                default.get_or_insert(login);
            } else {
                found.get_or_insert(login);
            }
        }
    };
    while let Some(word) = words.next() {
        match word {
            "machine" => {
                finish(current.take(), &mut found);
                let name = words.next()?;
                current = name
                    .eq_ignore_ascii_case(host)
                    .then(|| (false, Login::default()));
            }
            "default" => {
                finish(current.take(), &mut found);
                current = Some((true, Login::default()));
            }
            "login" | "password" | "account" => {
                let value = words.next()?;
                if let Some((_, login)) = &mut current {
                    match word {
                        "login" => login.user = value.to_string(),
                        "password" => login.password = value.to_string(),
                        _ => {}
                    }
                }
            }
            // A macro runs to the next blank line; its words are no entries.
            "macdef" => {
                finish(current.take(), &mut found);
                let rest = text.split_once(word)?.1;
                let end = rest.find("\n\n").unwrap_or(rest.len());
                words = rest[end..].split_ascii_whitespace();
            }
            _ => {}
        }
    }
    finish(current.take(), &mut found);
    found.or(default)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> DatasetUrl {
        DatasetUrl::parse(text).unwrap()
    }

    fn login(user: &str, password: &str) -> Option<Login> {
        Some(Login {
            user: user.into(),
            password: password.into(),
        })
    }

    #[test]
    fn netrc_entries_are_found_by_host_else_default() {
        let text = "machine other.org login o password op\n\
                    machine Data.Example.org\n  login alice\n  password s3cret\n\
                    macdef init\nmachine data.example.org login mallory password x\n\n\
                    default login anon password guest\n";
        assert_eq!(in_netrc(text, "data.example.org"), login("alice", "s3cret"));
        assert_eq!(in_netrc(text, "elsewhere"), login("anon", "guest"));
        assert_eq!(in_netrc("machine a login u password p", "b"), None);
        assert_eq!(in_netrc("machine", "a"), None, "cut short");
    }

    #[test]
    fn the_url_then_ncrc_then_netrc_give_the_login() {
        let dir = tempfile::tempdir().unwrap();
        let netrc = dir.path().join("netrc");
        std::fs::write(&netrc, "machine h.org login n password np\n").unwrap();
        let shown = netrc.to_str().unwrap().to_string();
        let env = move |k: &str| (k == "NETRC").then(|| shown.clone());
        let mut rc = RcFiles::default();
        let at = url("https://h.org/x.zarr#mode=zarr,http");
        assert_eq!(
            login_for(&at, Asker::Dataset, &env, &rc),
            login("n", "np"),
            "netrc"
        );
        rc.add_text("HTTP.CREDENTIALS.USERPASSWORD=any:where\n");
        assert_eq!(
            login_for(&at, Asker::Dataset, &env, &rc),
            login("any", "where")
        );
        assert_eq!(
            login_for(&at, Asker::Target, &env, &rc),
            login("n", "np"),
            "an unscoped login is not sent to a server a document names"
        );
        rc.add_text(
            "[https://h.org]HTTP.CREDENTIALS.USER=u\n[https://h.org]HTTP.CREDENTIALS.PASSWORD=p\n\
             [https://h.org:8443]HTTP.CREDENTIALS.USERPASSWORD=port:8443\n",
        );
        assert_eq!(login_for(&at, Asker::Target, &env, &rc), login("u", "p"));
        assert_eq!(
            login_for(&url("https://h.org:8443/x"), Asker::Target, &env, &rc),
            login("port", "8443")
        );
        assert_eq!(
            login_for(&url("https://me:pw%40@h.org/x"), Asker::Dataset, &env, &rc),
            login("me", "pw@")
        );
        assert_eq!(
            login_for(&url("https://nobody.org/x"), Asker::Target, &|_| None, &rc),
            None
        );
    }
}
