//! Python in the pinned environments of `scripts/pyenv` (zarr-python 2 or 3, xarray, numcodecs),
//! for the interop tests: one way to find the interpreter and run a script.

use super::repo_root;
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
    let out = Command::new(interpreter(env)?)
        .args(args)
        .env_remove("LD_PRELOAD")
        .output()
        .map_err(|e| format!("python ({env}): {e}"))?;
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
