//! The names a web server's index page of a directory lists (nginx's `autoindex`, Apache's
//! `mod_autoindex`, Python's `http.server`): the links of the page that lead to a file or a
//! directory right below it. Knows nothing of stores, keys or Zarr; never follows a link.

/// The most bytes of an index page read: a page listing thousands of chunks is far smaller.
pub const MOST_PAGE_BYTES: u64 = 32 << 20;

/// One entry of an index page.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Entry {
    pub name: String,
    /// Its link ends with `/`.
    pub directory: bool,
}

/// The entries right below the directory at `dir` (its path on the server, `/` first) that the
/// links of `page` lead to, sorted by name and without repeats (a name linked both as a file
/// and as a directory is a directory). Links elsewhere (up, to other directories, to other
/// servers' other paths, to sort orders) and names that are not one path segment are left
/// out.
pub fn entries(page: &str, dir: &str) -> Vec<Entry> {
    let base = format!("/{}/", dir.trim_matches('/'));
    let base = if base == "//" { "/".to_string() } else { base };
    let mut found: Vec<Entry> = links(page)
        .filter_map(|href| child_of(&decode_entities(href), &base))
        .collect();
    found.sort_unstable();
    // A name linked both as a file and as a directory is a directory.
    found.dedup_by(|later, earlier| {
        let same = later.name == earlier.name;
        if same {
            earlier.directory |= later.directory;
        }
        same
    });
    found
}

/// The values of the `href` attributes in `page`, quoted or not.
fn links(page: &str) -> impl Iterator<Item = &str> {
    let lower = page.to_ascii_lowercase();
    let mut at = 0;
    std::iter::from_fn(move || {
        loop {
            let found = lower[at..].find("href")?;
            let mut i = at + found + 4;
            at = i;
            let rest = &page[i..];
            let spaces = rest.len() - rest.trim_start().len();
            i += spaces;
            if !page[i..].starts_with('=') {
                continue;
            }
            i += 1;
            let rest = &page[i..];
            i += rest.len() - rest.trim_start().len();
            let value = &page[i..];
            let (value, used) = match value.chars().next() {
                Some(q @ ('"' | '\'')) => {
                    let end = value[1..].find(q)?;
                    (&value[1..1 + end], end + 2)
                }
                Some(_) => {
                    let end = value
                        .find(|c: char| c.is_ascii_whitespace() || c == '>')
                        .unwrap_or(value.len());
                    (&value[..end], end)
                }
                None => return None,
            };
            at = i + used;
            return Some(value);
        }
    })
}

/// The name of the entry right below `base` (a directory's path, ending in `/`) that `href`
/// leads to, if it leads to one.
fn child_of(href: &str, base: &str) -> Option<Entry> {
    let href = href.split(['#', '?']).next()?;
    let path = if let Some(rest) = href
        .strip_prefix("http://")
        .or_else(|| href.strip_prefix("https://"))
        .or_else(|| href.strip_prefix("//"))
    {
        // Another server's, or this one's by its address: only the path is compared.
        &rest[rest.find('/')?..]
    } else {
        href
    };
    let absolute;
    let path = if path.starts_with('/') {
        path
    } else if path.contains(':') {
        return None; // mailto:, javascript: and the like
    } else {
        absolute = format!("{base}{path}");
        &absolute
    };
    let decoded = percent_decode(path)?;
    let rest = decoded.strip_prefix(base)?;
    let name = rest.strip_suffix('/').unwrap_or(rest);
    let ok = !name.is_empty() && name != "." && name != ".." && !name.contains('/');
    ok.then(|| Entry {
        name: name.to_string(),
        directory: rest.ends_with('/'),
    })
}

/// `%XX` escapes decoded; `None` when that gives no UTF-8 text.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                out.push((hex(h)? * 16 + hex(l)?) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// The few character entities servers put in links (`&amp;` above all).
fn decode_entities(text: &str) -> String {
    if !text.contains('&') {
        return text.to_string();
    }
    text.replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names of the entries of `page`.
    fn children(page: &str, dir: &str) -> Vec<String> {
        entries(page, dir).into_iter().map(|e| e.name).collect()
    }

    /// Python 3.11's `http.server`, for `/data/x.zarr/`.
    const PYTHON: &str = r#"<!DOCTYPE HTML>
<html lang="en"><head><title>Directory listing for /data/x.zarr/</title></head>
<body><h1>Directory listing for /data/x.zarr/</h1><hr><ul>
<li><a href=".zattrs">.zattrs</a></li>
<li><a href=".zgroup">.zgroup</a></li>
<li><a href="a/">a/</a></li>
<li><a href="sp%20ace/">sp ace/</a></li>
<li><a href="sub/">sub/</a></li>
</ul><hr></body></html>"#;

    /// nginx's `autoindex`.
    const NGINX: &str = r#"<html><head><title>Index of /data/x.zarr/</title></head>
<body><h1>Index of /data/x.zarr/</h1><hr><pre><a href="../">../</a>
<a href="a/">a/</a>                                   25-Nov-2026 10:00       -
<a href="sub/">sub/</a>                               25-Nov-2026 10:00       -
<a href="README">README</a>                           25-Nov-2026 10:00      12
</pre><hr></body></html>"#;

    /// Apache's `mod_autoindex`, with its sort links and absolute hrefs.
    const APACHE: &str = r#"<html><body><h1>Index of /data/x.zarr</h1><table>
<tr><th><a href="?C=N;O=D">Name</a></th><th><a href="?C=M;O=A">Last modified</a></th></tr>
<tr><td><a href="/data/">Parent Directory</a></td></tr>
<tr><td><a href="/data/x.zarr/a/">a/</a></td></tr>
<tr><td><a HREF='sub/'>sub/</a></td></tr>
<tr><td><a href=.zgroup>.zgroup</a></td></tr>
</table></body></html>"#;

    #[test]
    fn index_pages_of_common_servers_list_their_entries() {
        let python = children(PYTHON, "data/x.zarr");
        assert_eq!(python, [".zattrs", ".zgroup", "a", "sp ace", "sub"]);
        assert_eq!(children(NGINX, "/data/x.zarr/"), ["README", "a", "sub"]);
        assert_eq!(children(APACHE, "data/x.zarr"), [".zgroup", "a", "sub"]);
        let directories: Vec<String> = entries(NGINX, "data/x.zarr")
            .into_iter()
            .filter(|e| e.directory)
            .map(|e| e.name)
            .collect();
        assert_eq!(directories, ["a", "sub"]);
        let both = entries(r#"<a href="g">g</a> <a href="g/">g/</a>"#, "");
        let g = Entry {
            name: "g".into(),
            directory: true,
        };
        assert_eq!(both, [g]);
    }

    #[test]
    fn links_elsewhere_are_left_out() {
        let page = r#"<a href="https://other.example/data/x.zarr/z/">z</a>
            <a href="http://host/data/x.zarr/y/">y</a> <a href="/elsewhere/q">q</a>
            <a href="a/b/">deeper</a> <a href="./">here</a> <a href="../up/">up</a>
            <a href="mailto:x@y">mail</a> <a href="%2e%2e/">dots</a> <a href="c#top">c</a>
            <a href="d?x=1">d</a> <a href="e&amp;f">e&f</a> <a href="%ff">bad</a> <a href=>"#;
        // Other servers' links name paths too: only the path is compared.
        assert_eq!(children(page, "data/x.zarr"), ["c", "d", "e&f", "y", "z"]);
        // At the top of the server.
        assert_eq!(
            children(r#"<a href="x.zarr/">x</a><a href="/y">y</a>"#, ""),
            ["x.zarr", "y"]
        );
    }

    #[test]
    fn pages_with_no_links_or_broken_markup_list_nothing() {
        for page in [
            "",
            "<html></html>",
            "href",
            "href=",
            "<a href=\"a",
            "<a href = 'b'>",
        ] {
            let found = children(page, "d");
            assert!(found.is_empty() || found == ["b"], "{page}: {found:?}");
        }
    }
}
