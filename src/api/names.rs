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
}
