//! netCDF naming rules for dimensions, variables, attributes and groups.

use crate::error::{Error, Result};

/// Longest name in bytes (`NC_MAX_NAME`).
pub const MAX_NAME: usize = 256;

/// Checks a name the way netCDF-4 does: non-empty valid UTF-8 of at most `NC_MAX_NAME` bytes,
/// no `/`, no control characters, not starting with a space or trailing white space, and the
/// first character alphanumeric, `_`, or non-ASCII. Names must also not be a store key
/// segment that would escape (`.`/`..`), which the first-character rule already excludes.
pub fn check(name: &str) -> Result<()> {
    if name.len() > MAX_NAME {
        return Err(Error::MaxName(name.to_string()));
    }
    let bad = || Err(Error::BadName(name.to_string()));
    let Some(first) = name.chars().next() else {
        return bad();
    };
    if !(first.is_alphanumeric() || first == '_' || !first.is_ascii()) {
        return bad();
    }
    if name.contains('/') || name.chars().any(|c| c.is_control()) {
        return bad();
    }
    if name.ends_with(|c: char| c.is_ascii_whitespace()) {
        return bad();
    }
    Ok(())
}

/// The metadata object of every Zarr v3 node, which no group or variable may be named: its
/// store path would be that object's.
const ZARR_V3_NODE_OBJECT: &str = "zarr.json";

/// Checks the name of a group or variable of a dataset in Zarr v3 when `zarr_v3`: a netCDF
/// name ([`check`]) that is not a metadata object's (the v2 objects' start with `.`, which
/// [`check`] refuses; `zarr.json` is a name like any other in Zarr v2).
pub fn check_node(name: &str, zarr_v3: bool) -> Result<()> {
    check(name)?;
    if zarr_v3 && name == ZARR_V3_NODE_OBJECT {
        return Err(Error::BadName(format!(
            "{name} (the name of Zarr v3's metadata objects)"
        )));
    }
    Ok(())
}

/// Decodes a C name: must be UTF-8.
pub fn from_bytes(bytes: &[u8]) -> Result<&str> {
    std::str::from_utf8(bytes)
        .map_err(|_| Error::BadName(String::from_utf8_lossy(bytes).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_and_rejects_like_netcdf() {
        for ok in ["x", "_x", "température", "2d", "a b", "a-b.c+d@e"] {
            assert!(check(ok).is_ok(), "{ok}");
        }
        for bad in ["", "/a", "a/b", " a", "a ", "-a", ".a", "..", "a\n"] {
            assert!(check(bad).is_err(), "{bad:?}");
        }
        assert!(matches!(check(&"a".repeat(257)), Err(Error::MaxName(_))));
    }

    #[test]
    fn groups_and_variables_are_not_named_as_metadata_objects() {
        assert!(check_node("zarr.json", false).is_ok());
        assert!(matches!(
            check_node("zarr.json", true),
            Err(Error::BadName(_))
        ));
        assert!(check_node("zarr.jsonx", true).is_ok());
        assert!(check_node(".zarray", false).is_err());
    }
}
