//! Paths repaired before libnetcdf infers a dataset's format from them (`NC_infermodel`,
//! which every `nc_open` and `nc_create` goes through; `ffi` hands us each path first).
//!
//! Two repairs, each applied only where libnetcdf would otherwise fail:
//! - **A plain path or bare `file://` URL naming a Zarr dataset** (a directory whose top level
//!   holds a Zarr or NCZarr object, or a zip archive holding one) is opened as
//!   `file://<absolute path>#mode=nczarr,file` (`,zip`). libnetcdf itself answers "Unknown file
//!   format" for a directory, and would read a zip archive as netCDF. Only opens: a path to
//!   create is the caller's to name.
//! - **A fragment that sends libnetcdf 4.9.0 into an endless loop.** Its mode inference repeats
//!   while the *last* mode word implies another (`zarr`, `xarray`, `noxarray`), allocating until
//!   the process is killed: `#mode=zarr`, `#mode=nczarr,zarr`, `#xarray`. Such a fragment gets
//!   the mode words it means, ending with `nczarr` (which `zarr`, `xarray` and `noxarray` imply
//!   anyway), so every libnetcdf reads the same dataset from it.
//!
//! Owns only this text and the check of what a local path holds; it must not know how a dataset
//! is read.

use crate::zmap::ZARR_MARKERS;
use crate::zmap::zip::ZipStore;
use crate::zmap::{Store, StorePrefix};
use std::path::{Path, PathBuf};

/// Mode words from which libnetcdf 4.9.0 infers another one (`dinfermodel.c`, `modeinferences`).
const INFERRING: [&str; 3] = ["zarr", "xarray", "noxarray"];

/// Fragment keys that stand alone for mode words (`dinfermodel.c`, `macrodefs`).
const MACROS: [(&str, &[&str]); 3] = [
    ("zarr", &["nczarr", "zarr"]),
    ("xarray", &["zarr"]),
    ("noxarray", &["nczarr", "noxarray"]),
];

/// Characters a path may hold to be written into a `file://` URL as it is (netcdf-c parses
/// the URL again, so anything it could read as syntax keeps the path as the caller gave it).
fn url_safe(path: &str) -> bool {
    path.chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-~+=,@:".contains(c))
}

/// The path to give libnetcdf in place of `path`, when it needs repair (see the module doc).
pub fn repaired(path: &str, creating: bool) -> Option<String> {
    match path.split_once('#') {
        Some((location, fragment)) if is_url(location) => {
            repaired_fragment(fragment).map(|f| format!("{location}#{f}"))
        }
        Some(_) => None,
        None if creating => None,
        None => {
            let local = match path.strip_prefix("file://") {
                Some(rest) => rest.strip_prefix("localhost").unwrap_or(rest),
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

/// The fragment with the mode words it means, ending in one that infers nothing; `None` when
/// its mode list ends that way already and it has no stand-alone mode keys.
fn repaired_fragment(fragment: &str) -> Option<String> {
    let mut modes: Vec<String> = Vec::new();
    let mut others: Vec<&str> = Vec::new();
    let mut macro_found = false;
    for part in fragment.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = part.split_once('=').unwrap_or((part, ""));
        if key.eq_ignore_ascii_case("mode") {
            modes.extend(
                value
                    .split(',')
                    .filter(|w| !w.is_empty())
                    .map(str::to_string),
            );
        } else if let Some((_, words)) = MACROS
            .iter()
            .find(|(name, _)| value.is_empty() && key.eq_ignore_ascii_case(name))
        {
            modes.extend(words.iter().map(|w| w.to_string()));
            macro_found = true;
        } else {
            others.push(part);
        }
    }
    let loops = modes
        .last()
        .is_some_and(|last| INFERRING.iter().any(|w| last.eq_ignore_ascii_case(w)));
    if !loops && !macro_found {
        return None;
    }
    if loops {
        modes.push("nczarr".to_string());
    }
    let mode = format!("mode={}", modes.join(","));
    Some(
        std::iter::once(mode.as_str())
            .chain(others)
            .collect::<Vec<_>>()
            .join("&"),
    )
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
    path.is_dir() && ZARR_MARKERS.iter().any(|m| path.join(m).is_file())
}

/// A zip archive whose dataset (at its top level or below its one top directory) has a Zarr
/// object at its root.
fn is_zarr_zip(path: &Path) -> bool {
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
            ("mode=ZARR&log", "mode=ZARR,nczarr&log"),
            ("xarray", "mode=zarr,nczarr"),
            ("log&noxarray&mode=s3", "mode=nczarr,noxarray,s3&log"),
            ("mode=zarr&mode=file,zarr", "mode=zarr,file,zarr,nczarr"),
        ] {
            assert_eq!(repaired_fragment(given).as_deref(), Some(wanted), "{given}");
        }
    }

    #[test]
    fn fragments_that_do_not_loop_are_kept() {
        for given in [
            "mode=nczarr,file",
            "mode=zarr,file",
            "mode=zarr,consolidated",
            "mode=zarr,nczarr",
            "mode=dap4",
            "",
            "log&show=fetch",
        ] {
            assert_eq!(repaired_fragment(given), None, "{given}");
        }
    }

    #[test]
    fn urls_keep_all_but_the_fragment() {
        assert_eq!(
            repaired("s3://bucket/a#b/key#mode=zarr", false),
            None,
            "the first '#' starts the fragment, as in netcdf-c"
        );
        assert_eq!(
            repaired("https://h:9000/b/k?x=1#mode=zarr", true).as_deref(),
            Some("https://h:9000/b/k?x=1#mode=zarr,nczarr")
        );
        assert_eq!(repaired("/data/x.nc#mode=zarr", false), None);
    }

    #[test]
    fn local_zarr_datasets_become_urls_when_opened() {
        let dir = tempfile::TempDir::new().unwrap();
        let store = dir.path().join("x.zarr");
        std::fs::create_dir(&store).unwrap();
        let text = store.to_str().unwrap();
        assert_eq!(
            repaired(text, false),
            None,
            "an empty directory is no dataset"
        );
        std::fs::write(store.join(".zgroup"), br#"{"zarr_format":2}"#).unwrap();
        let wanted = format!("file://{text}#mode=nczarr,file");
        assert_eq!(repaired(text, false), Some(wanted.clone()));
        assert_eq!(repaired(&format!("file://{text}"), false), Some(wanted));
        assert_eq!(repaired(text, true), None, "created paths are not renamed");
        let spaced = dir.path().join("a b.zarr");
        std::fs::create_dir(&spaced).unwrap();
        std::fs::write(spaced.join(".zgroup"), b"{}").unwrap();
        assert_eq!(repaired(spaced.to_str().unwrap(), false), None);
        let zip = dir.path().join("x.zip");
        let archive = ZipStore::create(&zip, false).unwrap();
        archive
            .put(&crate::zmap::StoreKey::new(".zgroup").unwrap(), b"{}")
            .unwrap();
        archive.flush().unwrap();
        let text = zip.to_str().unwrap();
        assert_eq!(
            repaired(text, false),
            Some(format!("file://{text}#mode=nczarr,zip"))
        );
        let netcdf = dir.path().join("x.nc");
        std::fs::write(&netcdf, b"CDF\x01").unwrap();
        assert_eq!(repaired(netcdf.to_str().unwrap(), false), None);
    }
}
