//! Who the web client says it is: the user name and password sent (HTTP basic authentication)
//! to one web server, found as netcdf-c and curl find them.
//!
//! Owns the order of the sources: the URL's own `user:password@`; the `.ncrc` keys
//! `HTTP.CREDENTIALS.USER` with `HTTP.CREDENTIALS.PASSWORD`, then
//! `HTTP.CREDENTIALS.USERPASSWORD` (`user:password`), an entry scoped to the server
//! (`[https://host:port]KEY=...`: same scheme, host and port) before an unscoped one, which
//! applies only to the dataset's own server (never to a server a reference set names); then
//! the netrc file (`HTTP.NETRC` in `.ncrc`, else `$NETRC`, else `~/.netrc`), its entry for the
//! host, or its `default` (again only for the dataset's own server). A user name holding `:`
//! cannot be sent and gives no login. It must not know how requests are made.

use super::super::positional::{Opened, open_regular, read_whole};
use crate::env::value as env_value;
use crate::rcfile::RcFiles;
use crate::url::{DatasetUrl, Login};
use std::path::PathBuf;

/// The longest netrc file read: a login file, not a data file.
const MOST_NETRC_BYTES: u64 = 1 << 20;

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
    found_login(url, asker, env, rc).filter(|login| !login.user.contains(':'))
}

/// The port `url` is asked on: its own, else its scheme's.
fn effective_port(url: &DatasetUrl) -> Option<u16> {
    url.port.or(match url.scheme.as_deref() {
        Some("http") => Some(80),
        Some("https") => Some(443),
        _ => None,
    })
}

fn found_login(
    url: &DatasetUrl,
    asker: Asker,
    env: &dyn Fn(&str) -> Option<String>,
    rc: &RcFiles,
) -> Option<Login> {
    if let Some(login) = &url.login {
        return Some(login.clone());
    }
    let same_server = |scope: &DatasetUrl| {
        scope.scheme == url.scheme
            && scope.host == url.host
            && effective_port(scope) == effective_port(url)
    };
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
    // A file's name, not a login: the unscoped entry applies to every server.
    let netrc = rc
        .get_for("HTTP.NETRC", &same_server)
        .filter(|v| !v.is_empty())
        .map(str::to_string)
        .or_else(|| env_value(env, "NETRC"))
        .map(PathBuf::from)
        .or_else(|| env_value(env, "HOME").map(|h| PathBuf::from(h).join(".netrc")))?;
    let Ok(Opened::File(file, len)) = open_regular(&netrc) else {
        return None;
    };
    if len > MOST_NETRC_BYTES {
        return None;
    }
    let text = String::from_utf8(read_whole(file, len).ok()?).ok()?;
    let entries = in_netrc(&text, url.host.as_deref()?);
    match asker {
        Asker::Dataset => entries.machine.or(entries.default),
        Asker::Target => entries.machine,
    }
}

/// What a netrc file holds for one host.
#[derive(Debug, Default, PartialEq, Eq)]
struct NetrcEntries {
    /// Its first `machine` entry for the host.
    machine: Option<Login>,
    /// Its `default` entry.
    default: Option<Login>,
}

/// The entries netrc text `text` holds for `host`, read as curl reads them: words separated by
/// white space, keywords in any case, a line starting with `#` a comment, a `macdef` macro
/// running to the next empty line.
fn in_netrc(text: &str, host: &str) -> NetrcEntries {
    let mut out = NetrcEntries::default();
    // The entry being read: whether it is the default (else the host's), and its login.
    let mut current: Option<(bool, Login)> = None;
    let finish = |entry: Option<(bool, Login)>, out: &mut NetrcEntries| {
        if let Some((is_default, login)) = entry {
            let slot = if is_default {
                &mut out.default
            } else {
                &mut out.machine
            };
            slot.get_or_insert(login);
        }
    };
    let mut lines = text.lines();
    let mut pending: Vec<&str> = Vec::new();
    /// The next word of the lines to come, comments left out; `None` at the end.
    fn next_word<'t>(
        lines: &mut std::str::Lines<'t>,
        pending: &mut Vec<&'t str>,
    ) -> Option<&'t str> {
        loop {
            if let Some(word) = pending.pop() {
                return Some(word);
            }
            let line = lines.next()?;
            if !line.trim_start().starts_with('#') {
                pending.extend(line.split_ascii_whitespace().rev());
            }
        }
    }
    while let Some(word) = next_word(&mut lines, &mut pending) {
        let keyword = word.to_ascii_lowercase();
        match keyword.as_str() {
            "machine" => {
                finish(current.take(), &mut out);
                let Some(name) = next_word(&mut lines, &mut pending) else {
                    break;
                };
                current = name
                    .eq_ignore_ascii_case(host)
                    .then(|| (false, Login::default()));
            }
            "default" => {
                finish(current.take(), &mut out);
                current = Some((true, Login::default()));
            }
            "login" | "password" | "account" => {
                let Some(value) = next_word(&mut lines, &mut pending) else {
                    break;
                };
                if let Some((_, login)) = &mut current {
                    match keyword.as_str() {
                        "login" => login.user = value.to_string(),
                        "password" => login.password = value.to_string(),
                        _ => {}
                    }
                }
            }
            // A macro's body runs from the next line to an empty one; it holds no entries.
            "macdef" => {
                finish(current.take(), &mut out);
                pending.clear();
                for line in lines.by_ref() {
                    if line.trim().is_empty() {
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    finish(current.take(), &mut out);
    out
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
        let text = "# machine data.example.org login commented password out\n\
                    machine other.org login o password op\n\
                    MACHINE Data.Example.org\n  login alice\n  Password s3cret\n\
                    macdef init\nmachine data.example.org login mallory password x\n\n\
                    macdef again\nmacdef loops\n\n\
                    default login anon password guest\n";
        let found = in_netrc(text, "data.example.org");
        assert_eq!(found.machine, login("alice", "s3cret"));
        assert_eq!(found.default, login("anon", "guest"));
        assert_eq!(in_netrc(text, "elsewhere").machine, None);
        assert_eq!(
            in_netrc("machine a login u password p\nmachine", "a").machine,
            login("u", "p"),
            "cut short after the entry"
        );
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
