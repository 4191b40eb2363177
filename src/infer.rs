//! Paths repaired before libnetcdf infers a dataset's format from them (`NC_infermodel`,
//! which every `nc_open` and `nc_create` goes through; `ffi` hands us each path first).
//!
//! Two repairs, each applied only where libnetcdf would otherwise fail:
//! - **A plain path or bare `file://` URL naming a Zarr dataset** (a directory whose top level
//!   holds a Zarr or NCZarr object, or a zip archive holding one) is opened as
//!   `file://<absolute path>#mode=nczarr,file` (`,zip`). libnetcdf itself answers "Unknown file
//!   format" for a directory, and would read a zip archive as netCDF. Only plain opens: a path to
//!   create is the caller's to name, and a caller who chose the format (a user-defined format
//!   flag, an in-memory open) gets what it chose.
//! - **A fragment that sends libnetcdf 4.9.0 into an endless loop.** Its mode inference
//!   (`dinfermodel.c`, `processinferences`) repeats while the *last* word of the first `mode`
//!   value implies another (`zarr`, `xarray`, `noxarray`, in any case), allocating until the
//!   process is killed: `#mode=zarr`, `#mode=nczarr,zarr`, and `#xarray`, which it expands to
//!   `mode=zarr`. Each `mode` value ending so gets a final `nczarr` (which those words imply
//!   anyway), so every libnetcdf reads the same dataset from it (4.9.0 drops later `mode` keys of
//!   other values; equal values stay equal). Fragments with other stand-alone mode keys are left
//!   as they are: 4.9.0 reads them through a quirk of its own (two-word expansions shift the keys
//!   after them), without looping.
//!
//! Owns only this text and the check of what a local path holds; it must not know how a dataset
//! is read.

use crate::zmap::ZARR_MARKERS;
use crate::zmap::zip::ZipStore;
use crate::zmap::{Store, StorePrefix};
use std::path::{Path, PathBuf};

/// Mode words from which libnetcdf 4.9.0 infers another one (`dinfermodel.c`, `modeinferences`;
/// compared without case).
const INFERRING: [&str; 3] = ["zarr", "xarray", "noxarray"];

/// Fragment keys that stand alone for mode words (`dinfermodel.c`, `macrodefs`; compared with
/// case).
const MACROS: [&str; 7] = ["zarr", "dap2", "dap4", "s3", "bytes", "xarray", "noxarray"];

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
    /// `nc_create`, or an open whose format the caller chose (a user-defined format flag, an
    /// in-memory dataset).
    Other,
}

/// The path to give libnetcdf in place of `path`, when it needs repair (see the module doc).
pub fn repaired(path: &str, request: Request) -> Option<String> {
    match path.split_once('#') {
        Some((location, fragment)) if is_url(location) => {
            repaired_fragment(fragment).map(|f| format!("{location}#{f}"))
        }
        Some(_) => None,
        None if request != Request::Open => None,
        None => {
            let local = match path.strip_prefix("file://") {
                Some(rest) if rest.starts_with('/') => rest,
                Some(rest) => rest
                    .strip_prefix("localhost")
                    .filter(|r| r.starts_with('/'))?,
                None if is_url(path) => return None,
                None => path,
            };
            zarr_url(Path::new(local))
        }
    }
}

/// True when `text` starts with a URL scheme (`letters://`).
fn is_url(text: &str) -> bool {
    text.split_once("://").is_some_and(|(scheme, _)| {
        !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '+')
    })
}

/// The fragment with a final `nczarr` in its mode value when libnetcdf 4.9.0 would loop on it;
/// `None` when it would not, or when its form is not the plain one (see the module doc).
fn repaired_fragment(fragment: &str) -> Option<String> {
    let mut parts: Vec<String> = fragment.split('&').map(str::to_string).collect();
    let is_mode = |p: &String| {
        p.split_once('=')
            .is_some_and(|(k, _)| k.eq_ignore_ascii_case("mode"))
    };
    let modes: Vec<usize> = (0..parts.len()).filter(|&i| is_mode(&parts[i])).collect();
    let macros: Vec<usize> = (0..parts.len())
        .filter(|&i| MACROS.contains(&parts[i].as_str()))
        .collect();
    let loops = |value: &str| {
        let last = value.rsplit(',').next().unwrap_or("");
        INFERRING.iter().any(|w| last.eq_ignore_ascii_case(w))
    };
    match (modes.as_slice(), macros.as_slice()) {
        ([], [x]) if parts[*x] == "xarray" => parts[*x] = "mode=zarr,nczarr".to_string(),
        (modes, []) => {
            // Every value that ends in such a word, so that whichever keys 4.9.0 keeps (it
            // drops later `mode` keys of other values) and merges, the list ends in `nczarr`;
            // values equal before stay equal.
            let mut repaired = false;
            for &m in modes {
                if loops(parts[m].split_once('=').map_or("", |(_, v)| v)) {
                    parts[m].push_str(",nczarr");
                    repaired = true;
                }
            }
            if !repaired {
                return None;
            }
        }
        _ => return None,
    }
    Some(parts.join("&"))
}

/// `file://...#mode=nczarr,file` (or `,zip`) for a local Zarr dataset at `path`; `None` for
/// anything else (and for paths that cannot be written into a URL as they are).
fn zarr_url(path: &Path) -> Option<String> {
    let storage = if is_zarr_directory(path) {
        "file"
    } else if is_zarr_zip(path) {
        "zip"
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragments_that_loop_end_in_nczarr() {
        for (given, wanted) in [
            ("mode=zarr", "mode=zarr,nczarr"),
            ("mode=nczarr,zarr", "mode=nczarr,zarr,nczarr"),
            ("mode=xarray", "mode=xarray,nczarr"),
            ("mode=nczarr,noxarray", "mode=nczarr,noxarray,nczarr"),
            ("log&MODE=ZARR&", "log&MODE=ZARR,nczarr&"),
            ("xarray", "mode=zarr,nczarr"),
            ("xarray&log", "mode=zarr,nczarr&log"),
            ("mode=zarr&mode=file", "mode=zarr,nczarr&mode=file"),
            ("mode=zarr&mode=zarr", "mode=zarr,nczarr&mode=zarr,nczarr"),
        ] {
            assert_eq!(repaired_fragment(given).as_deref(), Some(wanted), "{given}");
        }
    }

    #[test]
    fn fragments_that_do_not_loop_are_kept() {
        for given in [
            "mode=nczarr,file",
            "mode=zarr,file",
            "mode=zarr,",
            "mode=zarr,consolidated",
            "mode=zarr,nczarr",
            "mode=dap4",
            "",
            "log&show=fetch",
            // 4.9.0 reads these through its own quirks, without looping.
            "zarr",
            "noxarray",
            "XARRAY",
            "log&noxarray&mode=s3",
            "zarr&mode=zarr",
            "mode=nczarr,file&mode=s3",
        ] {
            assert_eq!(repaired_fragment(given), None, "{given}");
        }
    }

    #[test]
    fn urls_keep_all_but_the_fragment() {
        assert_eq!(
            repaired("s3://bucket/a#b/key#mode=zarr", Request::Open),
            None,
            "the first '#' starts the fragment, as in netcdf-c"
        );
        assert_eq!(
            repaired("https://h:9000/b/k?x=1#mode=zarr", Request::Other).as_deref(),
            Some("https://h:9000/b/k?x=1#mode=zarr,nczarr")
        );
        assert_eq!(repaired("/data/x.nc#mode=zarr", Request::Open), None);
    }

    #[test]
    fn local_zarr_datasets_become_urls_when_opened() {
        let dir = tempfile::TempDir::new().unwrap();
        let store = dir.path().join("x.zarr");
        std::fs::create_dir(&store).unwrap();
        let text = store.to_str().unwrap();
        assert_eq!(
            repaired(text, Request::Open),
            None,
            "an empty directory is no dataset"
        );
        std::fs::write(store.join(".zgroup"), br#"{"zarr_format":2}"#).unwrap();
        let wanted = format!("file://{text}#mode=nczarr,file");
        assert_eq!(repaired(text, Request::Open), Some(wanted.clone()));
        assert_eq!(
            repaired(&format!("file://{text}"), Request::Open),
            Some(wanted.clone())
        );
        assert_eq!(
            repaired(&format!("file://localhost{text}"), Request::Open),
            Some(wanted)
        );
        assert_eq!(repaired("file://localhostx.zarr", Request::Open), None);
        assert_eq!(
            repaired(text, Request::Other),
            None,
            "created paths are not renamed"
        );
        let spaced = dir.path().join("a b.zarr");
        std::fs::create_dir(&spaced).unwrap();
        std::fs::write(spaced.join(".zgroup"), b"{}").unwrap();
        assert_eq!(repaired(spaced.to_str().unwrap(), Request::Open), None);
        let zip = dir.path().join("x.zip");
        let archive = ZipStore::create(&zip, false).unwrap();
        archive
            .put(&crate::zmap::StoreKey::new(".zgroup").unwrap(), b"{}")
            .unwrap();
        archive.flush().unwrap();
        let text = zip.to_str().unwrap();
        assert_eq!(
            repaired(text, Request::Open),
            Some(format!("file://{text}#mode=nczarr,zip"))
        );
        let netcdf = dir.path().join("x.nc");
        std::fs::write(&netcdf, b"CDF\x01").unwrap();
        assert_eq!(repaired(netcdf.to_str().unwrap(), Request::Open), None);
    }
}
