//! Python in the pinned environments of `scripts/pyenv` (zarr-python 2 or 3, xarray, numcodecs),
//! for the interop tests: one way to find the interpreter and run a script.

use super::repo_root;
use std::path::Path;
use std::process::Command;

/// The python of environment `env` (`zarr2`, `zarr3`, ...), created on first use.
pub fn interpreter(env: &str) -> Result<String, String> {
    let out = Command::new(repo_root().join("scripts/pyenv"))
        .arg(env)
        .output()
        .map_err(|e| format!("scripts/pyenv: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "scripts/pyenv {env}: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Runs `python args...` in environment `env` without the library preloaded; returns stdout,
/// or the failure with stderr.
pub fn run(env: &str, args: &[&str]) -> Result<String, String> {
    run_with(env, args, None)
}

/// [`run`] with `preload` (the library under test) preloaded, its warnings quiet.
pub fn run_with(env: &str, args: &[&str], preload: Option<&Path>) -> Result<String, String> {
    run_with_vars(env, args, preload, &[])
}

/// [`run_with`] with environment variables set (`None`: removed).
pub fn run_with_vars(
    env: &str,
    args: &[&str],
    preload: Option<&Path>,
    vars: &[(&str, Option<&str>)],
) -> Result<String, String> {
    let mut cmd = Command::new(interpreter(env)?);
    cmd.args(args).env_remove("LD_PRELOAD");
    for (name, value) in vars {
        match value {
            Some(v) => cmd.env(name, v),
            None => cmd.env_remove(name),
        };
    }
    if let Some(lib) = preload {
        cmd.env("LD_PRELOAD", lib).env("NCZARR_RS_QUIET", "1");
    }
    let out = cmd.output().map_err(|e| format!("python ({env}): {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "python {} ({env}) failed: {}",
            args.first().copied().unwrap_or(""),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs the script text `script` with `args` in environment `env`.
pub fn run_script(env: &str, script: &str, args: &[&str]) -> Result<String, String> {
    let mut all = vec!["-c", script];
    all.extend_from_slice(args);
    run(env, &all)
}

/// Runs the script text `script` with `args` in netCDF4-python (the wheel's netcdf-c 4.10.1)
/// with the library under test preloaded. Panics in reference-only mode.
pub fn run_netcdf4_preloaded(script: &str, args: &[&str]) -> Result<String, String> {
    let super::Subject::Preload(lib) = super::subject() else {
        panic!("netCDF4-python through the library needs the library");
    };
    let mut all = vec!["-c", script];
    all.extend_from_slice(args);
    run_with("netcdf4", &all, Some(lib))
}

/// Runs `script` as [`run_netcdf4_preloaded`] does and parses what it prints as JSON;
/// panics with the failure or the text that is not JSON.
pub fn netcdf4_json(script: &str, args: &[&str]) -> serde_json::Value {
    let out = run_netcdf4_preloaded(script, args).unwrap_or_else(|e| panic!("{e}"));
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// netCDF4-python (the wheel's netcdf-c 4.10.1) with the library under test preloaded: opens
/// the dataset directory `path` for writing and sets a global attribute; `Ok(None)` when it
/// wrote, `Ok(Some(why))` when netCDF refused, `Err` when it could not run. By plain path:
/// mode `"a"` opens only what `os.path.exists` finds, and creates anything else afresh (a URL
/// too, clobbering the dataset). Panics in reference-only mode.
pub fn netcdf4_writes(path: &Path) -> Result<Option<String>, String> {
    const SCRIPT: &str = r#"
import sys, netCDF4
try:
    with netCDF4.Dataset(sys.argv[1], "a") as ds:
        ds.setncattr("note", "written")
    print("written")
except Exception as e:
    print("refused:", e)
"#;
    let path = path.to_str().ok_or("a path that is not UTF-8")?;
    let out = run_netcdf4_preloaded(SCRIPT, &[path])?;
    Ok(out.trim().strip_prefix("refused: ").map(String::from))
}

/// Zips a directory store with Python's `zipfile`, deflated, either with the objects at the
/// archive root (`zip -r` inside the directory, zarr-python's layout) or below a directory with
/// another name than the archive's.
const ZIP_A_DIRECTORY: &str = r#"
import os, sys, zipfile
src, dst, top = sys.argv[1], sys.argv[2], sys.argv[3]
with zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as z:
    for base, dirs, files in sorted(os.walk(src)):
        rel = os.path.relpath(base, src)
        for d in sorted(dirs):
            z.write(os.path.join(base, d), os.path.normpath(os.path.join(top, rel, d)) + "/")
        for f in sorted(files):
            z.write(os.path.join(base, f), os.path.normpath(os.path.join(top, rel, f)))
"#;

/// Zips the directory store `src` into `dst` with Python's `zipfile` ([`ZIP_A_DIRECTORY`]),
/// its objects below `top` (`.` for the archive root).
pub fn zip_directory(src: &Path, dst: &Path, top: &str) -> Result<String, String> {
    let (src, dst) = (
        src.to_str().ok_or("a path that is not UTF-8")?,
        dst.to_str().ok_or("a path that is not UTF-8")?,
    );
    run_script("zarr3", ZIP_A_DIRECTORY, &[src, dst, top])
}
