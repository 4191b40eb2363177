//! Paths repaired before libnetcdf infers a dataset's format from them (`NC_infermodel`,
//! which every `nc_open` and `nc_create` goes through; `ffi` hands us each path first).
//!
//! Two repairs, each applied only where libnetcdf would otherwise fail:
//! - **A plain path or bare `file://` URL naming a Zarr dataset** (a directory whose top level
//!   holds a Zarr or NCZarr object, a zip archive holding one, a reference document, or a
//!   directory holding a Parquet reference set) is
//!   opened as `file://<absolute path>#mode=nczarr,file` (`,zip`, `,reference`). libnetcdf
//!   itself answers "Unknown file format" for a directory or a JSON file, and would read a zip
//!   archive as netCDF. Only plain opens: a path to
//!   create is the caller's to name, and a caller who chose the format (a user-defined format
//!   flag, an in-memory open) gets what it chose.
//! - **URL parameters that send libnetcdf 4.9.0 into an endless loop** (`#mode=zarr`,
//!   `#xarray`, `#mode=zarr&xarray`, `[mode=zarr]file://...`, ...) become a fragment it reads
//!   as 4.10.1 reads the original ([`fragment`] says how).
//!
//! Owns only this text and the check of what a local path holds; it must not know how a dataset
//! is read.

mod fragment;

use crate::zmap::ZARR_MARKERS;
use crate::zmap::reference::starts_as_json_object;
use crate::zmap::zip::ZipStore;
use crate::zmap::{Store, StorePrefix};
use std::path::{Path, PathBuf};

/// Characters a path may hold to be written into a `file://` URL as it is (netcdf-c parses
/// the URL again, so anything it could read as syntax keeps the path as the caller gave it).
fn url_safe(path: &str) -> bool {
    path.chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-~+=,@:".contains(c))
}

/// What the caller of `nc_open`/`nc_create` asked for, beyond the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// `nc_open` without a format of its choosing.
    Open,
    /// `nc_create` without a format of its choosing.
    Create,
    /// An open or create whose format the caller chose (a user-defined format flag, an
    /// in-memory dataset).
    Other,
}

/// What to give libnetcdf in place of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Repair {
    /// This path.
    Path(String),
    /// Nothing: the open or create fails with `NC_EURL`. For a name libnetcdf 4.9.0 would
    /// loop on that cannot be rewritten so that it reads it back as it is.
    Refuse,
}

/// What to give libnetcdf in place of `path`, when it needs repair (see the module doc).
pub fn repaired(path: &str, request: Request) -> Option<Repair> {
    let repair = repaired_as_read(path, request);
    // libnetcdf 4.9.0 cleaning a name also drops every byte of a non-ASCII character (it
    // compares a signed `char` with ' '), so `#mode=zar\u{e9}r` reads as `#mode=zarr` there:
    // what it reads of the name it is given must not loop either. No rewrite serves both that
    // reading and 4.10.1's (which keeps the bytes), so such a name is refused.
    if path.is_ascii() {
        return repair;
    }
    let given = match &repair {
        Some(Repair::Path(p)) => p.as_str(),
        Some(Repair::Refuse) => return repair,
        None => path,
    };
    let read_by_490: String = given.chars().filter(char::is_ascii).collect();
    match repaired_fragment(&read_by_490) {
        Some(_) => Some(Repair::Refuse),
        None => repair,
    }
}

/// [`repaired`] for the name as 4.10.1 reads it (and 4.9.0, when it is ASCII).
fn repaired_as_read(path: &str, request: Request) -> Option<Repair> {
    if let Some(repair) = repaired_fragment(path) {
        return Some(repair);
    }
    if let Some(url) = bare_s3(path).filter(|_| request != Request::Other) {
        return Some(repaired_fragment(&url).unwrap_or(Repair::Path(url)));
    }
    local_dataset(path, request).map(Repair::Path)
}

/// An `s3://bucket/key` URL that names no mode, with `mode=nczarr,s3` put first in its
/// fragment. libnetcdf 4.9.0 reads such a URL as OPeNDAP and 4.10.1 refuses it ("Unsupported
/// protocol"), so the only dataset it can name is a Zarr one; the reader tells NCZarr, pure
/// Zarr v2 and Zarr v3 apart by what is stored. Only plain URLs, which every libnetcdf parses
/// alike: printable ASCII without backslashes, a `[...]` prefix, user names or a query, whose
/// fragment is absent or holds only keys a dataset URL may carry besides its mode. Anything
/// else after a `#` may be part of the key (S3 keys may hold `#`), and a create there would
/// clobber another dataset.
fn bare_s3(path: &str) -> Option<String> {
    let plain = path
        .chars()
        .all(|c| c.is_ascii_graphic() && !"\\[@?".contains(c));
    let (location, fragment) = match path.split_once('#') {
        Some((location, fragment)) => (location, Some(fragment)),
        None => (path, None),
    };
    if !plain || url_protocol(location) != Some("s3") {
        return None;
    }
    match fragment {
        None | Some("") => Some(format!("{location}#mode=nczarr,s3")),
        Some(rest) if fragment::only_dataset_keys(rest) => {
            Some(format!("{location}#mode=nczarr,s3&{rest}"))
        }
        Some(_) => None,
    }
}

/// The repair of a URL whose parameters send libnetcdf 4.9.0 into its endless loop, read as
/// libnetcdf reads them: first its clean-up (control characters dropped, the first of each
/// pair of backslashes too), then a `[...]` prefix, the protocol before the first `:`, the
/// fragment after the first `#` that no backslash escapes.
fn repaired_fragment(path: &str) -> Option<Repair> {
    let cleaned = libnetcdf_cleaned(path);
    let (prefix, rest) = match cleaned.strip_prefix('[') {
        Some(_) => split_prefix(&cleaned)?,
        None => (String::new(), cleaned.as_str()),
    };
    let location = fragment::split_unescaped(rest, '#')[0];
    let fragment = rest.get(location.len() + 1..).unwrap_or("");
    let protocol = location.split_once(':').map(|(p, _)| p)?;
    Some(match fragment::repaired(protocol, &prefix, fragment)? {
        fragment::Looping::Fragment(f) => Repair::Path(format!("{location}#{f}")),
        fragment::Looping::Refused => Repair::Refuse,
    })
}

/// `path` as libnetcdf's URL parser first cleans it (`ncuriparse`): without control
/// characters, and without each backslash that another follows.
fn libnetcdf_cleaned(path: &str) -> String {
    let chars: Vec<char> = path.chars().collect();
    chars
        .iter()
        .enumerate()
        .filter(|&(i, &c)| c >= ' ' && !(c == '\\' && chars.get(i + 1) == Some(&'\\')))
        .map(|(_, &c)| c)
        .collect()
}

/// A local Zarr dataset named by plain path or bare `file://` URL, as its URL.
fn local_dataset(path: &str, request: Request) -> Option<String> {
    let plain = !path.chars().any(|c| c < ' ' || "\\[#".contains(c));
    if !plain || request != Request::Open {
        return None;
    }
    let local = match path.strip_prefix("file://") {
        Some(rest) if rest.starts_with('/') => rest,
        Some(rest) => rest
            .strip_prefix("localhost")
            .filter(|r| r.starts_with('/'))?,
        None if url_protocol(path).is_some() => return None,
        None => path,
    };
    zarr_url(Path::new(local))
}

/// The parameters of a `[k=v][k2]...` prefix joined by `&`, and the rest of `path`, as
/// libnetcdf splits them (`collectprefixparams`: a `]` a backslash escapes closes nothing);
/// `None` for a prefix it refuses.
fn split_prefix(mut path: &str) -> Option<(String, &str)> {
    let mut params: Vec<&str> = Vec::new();
    while let Some(rest) = path.strip_prefix('[') {
        let inside = fragment::split_unescaped(rest, ']')[0];
        path = rest.get(inside.len() + 1..)?;
        params.push(inside);
    }
    let params: Vec<&str> = params.into_iter().filter(|p| !p.is_empty()).collect();
    Some((params.join("&"), path))
}

/// The scheme of `text` when it is a URL (`letters://...`).
fn url_protocol(text: &str) -> Option<&str> {
    let (scheme, _) = text.split_once("://")?;
    let letters = |c: char| c.is_ascii_alphanumeric() || c == '+';
    (!scheme.is_empty() && scheme.chars().all(letters)).then_some(scheme)
}

/// `file://...#mode=nczarr,file` (or `,zip`, or `,reference`) for a local Zarr dataset or
/// reference document at `path`; `None` for anything else (and for paths that cannot be
/// written into a URL as they are).
fn zarr_url(path: &Path) -> Option<String> {
    let storage = if is_parquet_reference_set(path) {
        "reference"
    } else if is_zarr_directory(path) {
        "file"
    } else if is_zarr_zip(path) {
        "zip"
    } else if is_reference_document(path) {
        "reference"
    } else {
        return None;
    };
    let absolute: PathBuf = std::path::absolute(path).ok()?;
    let text = absolute.to_str()?;
    url_safe(text).then(|| format!("file://{text}#mode=nczarr,{storage}"))
}

fn is_zarr_directory(path: &Path) -> bool {
    path.is_dir() && crate::zmap::file::holds_dataset(path)
}

/// Bytes at the end of a `.zmetadata` read to tell whether it is a Parquet reference set's.
const PARQUET_SET_SNIFF_BYTES: u64 = 4 << 10;

/// A directory holding a Parquet reference set (fsspec's `LazyReferenceMapper`): a
/// `.zmetadata` and no other Zarr object at its top, the `.zmetadata` a JSON object whose last
/// [`PARQUET_SET_SNIFF_BYTES`] name `"record_size"` (fsspec writes it after the metadata).
fn is_parquet_reference_set(path: &Path) -> bool {
    use std::os::unix::fs::FileExt;
    let zmetadata = path.join(".zmetadata");
    if !path.is_dir()
        || !std::fs::metadata(&zmetadata).is_ok_and(|m| m.is_file())
        || ZARR_MARKERS
            .iter()
            .any(|m| *m != ".zmetadata" && path.join(m).exists())
    {
        return false;
    }
    let Ok(file) = std::fs::File::open(&zmetadata) else {
        return false;
    };
    let len = file.metadata().map_or(0, |m| m.len());
    let from = len.saturating_sub(PARQUET_SET_SNIFF_BYTES);
    let mut tail = vec![0u8; (len - from) as usize];
    let mut head = [0u8; 64];
    let head_len = file.read_at(&mut head, 0).unwrap_or(0);
    file.read_exact_at(&mut tail, from).is_ok()
        && starts_as_json_object(&head[..head_len])
        && String::from_utf8_lossy(&tail).contains("\"record_size\"")
}

/// A regular file that is a zip archive whose dataset (at its top level or below its one top
/// directory) has a Zarr object at its root.
fn is_zarr_zip(path: &Path) -> bool {
    if !path.is_file() {
        return false;
    }
    let mut magic = [0u8; 4];
    let starts_as_zip = std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic))
        .is_ok()
        && magic == *b"PK\x03\x04";
    starts_as_zip
        && ZipStore::open(path, false)
            .and_then(|z| z.list_children(&StorePrefix::root()))
            .is_ok_and(|names| names.iter().any(|n| ZARR_MARKERS.contains(&n.as_str())))
}

/// Bytes of a file read to tell whether it is a reference document.
const REFERENCE_SNIFF_BYTES: usize = 64 << 10;

/// A regular file that looks like a reference document (kerchunk's JSON): a JSON object whose
/// first [`REFERENCE_SNIFF_BYTES`] hold `"version": 1` and `"refs"` (version 1), or a Zarr
/// metadata object's name as a key (version 0); not an HDF5 file whose user block holds such
/// text. libnetcdf opens no JSON file, so a file taken for one that is not fails at open as it
/// would have failed anyway, with the reason.
fn is_reference_document(path: &Path) -> bool {
    use std::io::Read;
    // Before opening: a FIFO's open would wait for a writer.
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return false;
    }
    let Ok(mut file) = std::fs::File::open(path) else {
        return false;
    };
    // The first bytes tell most files apart without reading more.
    let mut head = Vec::with_capacity(REFERENCE_SNIFF_BYTES);
    if (&mut file).take(512).read_to_end(&mut head).is_err() {
        return false;
    }
    if !starts_as_json_object(&head) {
        return false;
    }
    if file
        .take((REFERENCE_SNIFF_BYTES - head.len()) as u64)
        .read_to_end(&mut head)
        .is_err()
        || holds_hdf5_signature(path)
    {
        return false;
    }
    let compact: String = String::from_utf8_lossy(&head)
        .chars()
        .filter(|c| !c.is_ascii_whitespace())
        .collect();
    (compact.contains("\"version\":1") && compact.contains("\"refs\":{"))
        || ZARR_MARKERS
            .iter()
            .any(|m| compact.contains(&format!("\"{m}\":")))
}

/// True when `path` holds HDF5's signature where HDF5 looks for it after a user block (at
/// 512, 1024, 2048, ... bytes).
fn holds_hdf5_signature(path: &Path) -> bool {
    use std::os::unix::fs::FileExt;
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    let len = file.metadata().map_or(0, |m| m.len());
    let mut at = 512u64;
    while at + 8 <= len {
        let mut sig = [0u8; 8];
        if file.read_exact_at(&mut sig, at).is_ok() && sig == *b"\x89HDF\r\n\x1a\n" {
            return true;
        }
        at *= 2;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The repaired path, or `<refused>`.
    fn path(path: &str, request: Request) -> Option<String> {
        repaired(path, request).map(|r| match r {
            Repair::Path(p) => p,
            Repair::Refuse => "<refused>".to_string(),
        })
    }

    #[test]
    fn urls_keep_all_but_the_fragment() {
        assert_eq!(
            path("s3://bucket/a#b/key#mode=zarr", Request::Open),
            None,
            "the first '#' starts the fragment, as in netcdf-c"
        );
        assert_eq!(
            path("https://h:9000/b/k?x=1#mode=zarr", Request::Other).as_deref(),
            Some("https://h:9000/b/k?x=1#mode=zarr,nczarr")
        );
        assert_eq!(
            path("[mode=zarr]file:///d/x.zarr", Request::Open).as_deref(),
            Some("file:///d/x.zarr#mode=zarr,nczarr"),
            "the prefix's parameters go into the fragment"
        );
        assert_eq!(
            path("[log][mode=zarr]s3://b/k#show=fetch", Request::Open).as_deref(),
            Some("s3://b/k#mode=zarr,s3,nczarr&log&show=fetch")
        );
        assert_eq!(
            path("[mode=zarr,file]file:///d/x.zarr", Request::Open),
            None
        );
        assert_eq!(path("[mode=zarr file:///d/x.zarr", Request::Open), None);
        assert_eq!(
            path("s3://b/k", Request::Open).as_deref(),
            Some("s3://b/k#mode=nczarr,s3"),
            "an S3 URL without a mode is NCZarr on S3"
        );
        // libnetcdf's URL parser wants only a `:` after the protocol, drops control
        // characters, and the first of two backslashes.
        assert_eq!(
            path("file:/d/x.zarr#mode=zarr", Request::Open).as_deref(),
            Some("file:/d/x.zarr#mode=zarr,nczarr")
        );
        assert_eq!(
            path("file:///d/x.zarr#mode=file,zarr\t", Request::Open).as_deref(),
            Some("file:///d/x.zarr#mode=zarr,file,nczarr")
        );
        assert_eq!(
            path("file:///d/x.zarr#mode=zarr&x=a\\\\b", Request::Open).as_deref(),
            Some("file:///d/x.zarr#mode=zarr,nczarr&x=a\\b")
        );
        // Two backslashes left once a control character between them goes: libnetcdf would
        // read the rewrite back otherwise.
        assert_eq!(
            path("file:///d/x.zarr#mode=zarr&x=a\\\t\\b", Request::Open).as_deref(),
            Some("<refused>")
        );
        assert_eq!(path("/data/x.nc#mode=zarr", Request::Open), None);
    }

    #[test]
    fn names_that_loop_once_4_9_0_drops_their_non_ascii_bytes_are_refused() {
        for looping in [
            "file:///d/x.zarr#mode=zar\u{e9}r",
            "file:///d/x.zarr#mode=nczarr&xarr\u{e9}ay",
        ] {
            assert_eq!(
                path(looping, Request::Open).as_deref(),
                Some("<refused>"),
                "{looping}"
            );
        }
        // A repair whose words end alike in both readings stands.
        assert_eq!(
            path("s3://b/k\u{e9}#mode=zarr", Request::Open).as_deref(),
            Some("s3://b/k\u{e9}#mode=zarr,s3,nczarr")
        );
        for fine in [
            "file:///d/\u{e9}.zarr#mode=nczarr,file",
            "/d/\u{e9}.zarr",
            "file:///d/x.zarr#mode=nczarr,file&note=\u{e9}",
        ] {
            assert_eq!(path(fine, Request::Open), None, "{fine}");
        }
    }

    #[test]
    fn s3_urls_without_a_mode_become_nczarr_on_s3() {
        for request in [Request::Open, Request::Create] {
            assert_eq!(
                path("s3://bucket/a/b.zarr", request).as_deref(),
                Some("s3://bucket/a/b.zarr#mode=nczarr,s3")
            );
            assert_eq!(
                path("s3://bucket/k#aws.profile=x&log", request).as_deref(),
                Some("s3://bucket/k#mode=nczarr,s3&aws.profile=x&log"),
                "the fragment's other keys are kept"
            );
            assert_eq!(
                path("s3://bucket/k#", request).as_deref(),
                Some("s3://bucket/k#mode=nczarr,s3")
            );
        }
        // A mode, or a word that stands for one, is the caller's choice.
        for named in [
            "#mode=bytes",
            "#MODE=nczarr,s3",
            "#s3",
            "#bytes&log",
            "#x&zarr",
        ] {
            let url = format!("s3://bucket/k{named}");
            let repaired = path(&url, Request::Open);
            assert!(
                repaired
                    .as_deref()
                    .is_none_or(|r| !r.contains("mode=nczarr,s3&")),
                "{url}: {repaired:?}"
            );
        }
        // Text after a `#` that may be part of the key, and URLs libnetcdf versions read
        // differently, are left alone.
        for other in [
            "s3://bucket/run#3",
            "s3://bucket/a#b/c",
            "s3://bucket/k#log#x",
            "s3://bucket/k?versionId=3",
            "s3://user@bucket/k",
            "s3://bucket/k\\x",
            "s3://bucket/k\u{1}",
            "s3://bucket/k\u{e9}",
            "s3://bucket/a b",
            "[log]s3://bucket/k",
        ] {
            assert_eq!(path(other, Request::Create), None, "{other}");
        }
        assert_eq!(
            path("s3://bucket/k", Request::Other),
            None,
            "a format chosen"
        );
        assert_eq!(path("https://host/bucket/k", Request::Open), None);
    }

    #[test]
    fn local_zarr_datasets_become_urls_when_opened() {
        let dir = tempfile::TempDir::new().unwrap();
        let store = dir.path().join("x.zarr");
        std::fs::create_dir(&store).unwrap();
        let text = store.to_str().unwrap();
        assert_eq!(
            path(text, Request::Open),
            None,
            "an empty directory is no dataset"
        );
        std::fs::write(store.join(".zgroup"), br#"{"zarr_format":2}"#).unwrap();
        let wanted = format!("file://{text}#mode=nczarr,file");
        assert_eq!(path(text, Request::Open), Some(wanted.clone()));
        assert_eq!(
            path(&format!("file://{text}"), Request::Open),
            Some(wanted.clone())
        );
        assert_eq!(
            path(&format!("file://localhost{text}"), Request::Open),
            Some(wanted)
        );
        assert_eq!(path("file://localhostx.zarr", Request::Open), None);
        assert_eq!(
            path(text, Request::Other),
            None,
            "created paths are not renamed"
        );
        let spaced = dir.path().join("a b.zarr");
        std::fs::create_dir(&spaced).unwrap();
        std::fs::write(spaced.join(".zgroup"), b"{}").unwrap();
        assert_eq!(path(spaced.to_str().unwrap(), Request::Open), None);
        let zip = dir.path().join("x.zip");
        let archive = ZipStore::create(&zip, false).unwrap();
        archive
            .put(&crate::zmap::StoreKey::new(".zgroup").unwrap(), b"{}")
            .unwrap();
        archive.flush().unwrap();
        let text = zip.to_str().unwrap();
        assert_eq!(
            path(text, Request::Open),
            Some(format!("file://{text}#mode=nczarr,zip"))
        );
        let netcdf = dir.path().join("x.nc");
        std::fs::write(&netcdf, b"CDF\x01").unwrap();
        assert_eq!(path(netcdf.to_str().unwrap(), Request::Open), None);
    }

    #[test]
    fn reference_documents_become_urls_when_opened() {
        let dir = tempfile::TempDir::new().unwrap();
        let at = |name: &str, text: &str| {
            let file = dir.path().join(name);
            std::fs::write(&file, text).unwrap();
            file.to_str().unwrap().to_string()
        };
        for (name, doc) in [
            (
                "v1.json",
                "{\"version\": 1, \"refs\": {\"a/0\": [\"f.nc\", 0, 4]}}",
            ),
            (
                "v0.json",
                "\u{feff}\n { \"a/.zarray\" : \"{}\", \".zgroup\": \"{}\"}",
            ),
            ("v3.refs", "{\"zarr.json\": {\"zarr_format\": 3}}"),
        ] {
            let text = at(name, doc);
            assert_eq!(
                path(&text, Request::Open),
                Some(format!("file://{text}#mode=nczarr,reference")),
                "{doc}"
            );
            assert_eq!(
                path(&text, Request::Create),
                None,
                "created paths are not renamed"
            );
        }
        // A directory holding a Parquet reference set; one holding Zarr's own consolidated
        // metadata is a Zarr dataset.
        let set = dir.path().join("refs.parq");
        std::fs::create_dir(&set).unwrap();
        let text = set.to_str().unwrap();
        // As fsspec writes it (metadata first, however long), or with white space before it.
        let long = format!(r#""a/.zattrs": {{"x": "{}"}}"#, "y".repeat(10_000));
        for zmetadata in [
            format!(r#"{{"metadata": {{".zgroup": {{}}, {long}}}, "record_size": 100000}}"#),
            "\n  {\"metadata\": {}, \"record_size\": 10}".to_string(),
        ] {
            std::fs::write(set.join(".zmetadata"), zmetadata).unwrap();
            assert_eq!(
                path(text, Request::Open),
                Some(format!("file://{text}#mode=nczarr,reference"))
            );
        }
        std::fs::write(set.join(".zgroup"), "{}").unwrap();
        assert_eq!(
            path(text, Request::Open),
            Some(format!("file://{text}#mode=nczarr,file"))
        );
        // An HDF5 file whose user block holds such text stays HDF5.
        let mut with_block = b"{\".zgroup\": {}}".to_vec();
        with_block.resize(512, b' ');
        with_block.extend_from_slice(b"\x89HDF\r\n\x1a\n");
        with_block.resize(2048, 0);
        let hdf5 = dir.path().join("block.nc");
        std::fs::write(&hdf5, &with_block).unwrap();
        assert_eq!(path(hdf5.to_str().unwrap(), Request::Open), None);
        for (name, other) in [
            ("other.json", "{\"version\": 1, \"data\": [1, 2]}"),
            ("list.json", "[\".zgroup\"]"),
            ("text.txt", "\".zgroup\": is a file name"),
        ] {
            let text = at(name, other);
            assert_eq!(path(&text, Request::Open), None, "{other}");
        }
    }
}
