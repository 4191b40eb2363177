//! The root's virtual attributes `_NCProperties` and `_SuperblockVersion` (what `ncdump -s`
//! prints) answer as netcdf-c 4.10.1 answers them for the same store: the provenance a root
//! `.zattrs` carries is shown in either layout (netcdf-c writes it into pure Zarr too) with
//! superblock version 2, and a store without one shows none and version 0.

mod common;

use common::{Host, ncdump, ncgen, scratch, url};
use std::fs;

/// The `_NCProperties` and `_SuperblockVersion` lines of `ncdump -s -h`.
fn provenance_lines(host: Host, target: &str) -> Vec<String> {
    let dump = ncdump(host, &["-s", "-h"], target).unwrap_or_else(|e| panic!("{host:?}: {e}"));
    dump.lines()
        .map(str::trim)
        .filter(|l| l.starts_with(":_NCProperties") || l.starts_with(":_SuperblockVersion"))
        .map(String::from)
        .collect()
}

/// Our provenance lines for `target`, which must be netcdf-c 4.10.1's.
fn ours_as_410s(target: &str) -> Vec<String> {
    let ours = provenance_lines(Host::Ours, target);
    assert_eq!(ours, provenance_lines(Host::Ref410, target), "{target}");
    ours
}

#[test]
fn provenance_is_answered_as_netcdf_c_answers_it() {
    let dir = scratch("provenance");
    let cdl = dir.path().join("small.cdl");
    fs::write(
        &cdl,
        "netcdf small {\ndimensions: x = 2 ;\nvariables: int v(x) ;\ndata: v = 1, 2 ;\n}\n",
    )
    .unwrap();
    for (mode, read_as) in [("zarr", "zarr"), ("zarr", "nczarr"), ("nczarr", "nczarr")] {
        let store = dir.path().join(format!("by-4.10.1-{mode}-{read_as}"));
        ncgen(Host::Ref410, &cdl, &url(&store, &format!("{mode},file")))
            .expect("ncgen on netcdf-c 4.10.1");
        let ours = ours_as_410s(&url(&store, &format!("{read_as},file")));
        assert!(
            ours.len() == 2
                && ours[0].contains("netcdf=4.10.1")
                && ours[1] == ":_SuperblockVersion = 2 ;",
            "written as {mode}, read as {read_as}: {ours:?}"
        );
    }

    let bare = dir.path().join("bare");
    fs::create_dir_all(bare.join("v")).unwrap();
    fs::write(bare.join(".zgroup"), r#"{"zarr_format": 2}"#).unwrap();
    fs::write(
        bare.join("v/.zarray"),
        r#"{"zarr_format": 2, "shape": [2], "chunks": [2], "dtype": "<i4", "fill_value": null,
            "order": "C", "compressor": null, "filters": null}"#,
    )
    .unwrap();
    for read_as in ["zarr", "nczarr"] {
        let ours = ours_as_410s(&url(&bare, &format!("{read_as},file")));
        assert_eq!(ours, [":_SuperblockVersion = 0 ;"], "read as {read_as}");
    }
}
