//! Environment variables as the library reads them: through a function, so that tests can
//! supply their own environment, and with blank values counting as unset.
//!
//! Owns that one rule; it knows nothing of which variables mean what.

/// A non-empty, trimmed value of `key` in the environment `env`.
pub fn value(env: &dyn Fn(&str) -> Option<String>, key: &str) -> Option<String> {
    env(key)
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// The process's own environment, as `env` functions see it.
pub fn of_process(key: &str) -> Option<String> {
    std::env::var(key).ok()
}
