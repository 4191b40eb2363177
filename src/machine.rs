//! Facts about the machine the library runs on, read once per process.
//!
//! Owns only the reading of those facts; it must not know what they are used for.

use std::sync::OnceLock;

/// The memory this process may use, in bytes: the least of the machine's physical memory, the
/// process's address-space and data limits (`ulimit -v`, `ulimit -d`) and its control group's
/// memory limit (`u64::MAX` when none of them says). An allocation past it fails, and a
/// failed allocation would end the host process.
pub fn memory_bytes() -> u64 {
    static MEMORY: OnceLock<u64> = OnceLock::new();
    *MEMORY.get_or_init(|| {
        [
            physical_memory(),
            limit(rustix::process::Resource::As),
            limit(rustix::process::Resource::Data),
            cgroup_limit(),
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(u64::MAX)
    })
}

fn physical_memory() -> Option<u64> {
    let info = rustix::system::sysinfo();
    let bytes = info
        .totalram
        .saturating_mul(u64::from(info.mem_unit.max(1)));
    (bytes != 0).then_some(bytes)
}

/// A resource limit's soft value, when one is set.
fn limit(resource: rustix::process::Resource) -> Option<u64> {
    rustix::process::getrlimit(resource).current
}

/// The memory limit of the process's control group (v2's `memory.max`, v1's
/// `memory.limit_in_bytes`), when one is set.
fn cgroup_limit() -> Option<u64> {
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    // Lines are `id:controllers:path`; v2's is `0::path`.
    let path_of = |wanted: &str| {
        own.lines().find_map(|line| {
            let mut parts = line.splitn(3, ':');
            let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            (controllers == wanted || controllers.split(',').any(|c| c == wanted))
                .then(|| path.trim_end_matches('/').to_string())
        })
    };
    let mut files = Vec::new();
    if let Some(path) = path_of("") {
        files.push(format!("/sys/fs/cgroup{path}/memory.max"));
    }
    if let Some(path) = path_of("memory") {
        files.push(format!("/sys/fs/cgroup/memory{path}/memory.limit_in_bytes"));
    }
    files.push("/sys/fs/cgroup/memory.max".into());
    files.push("/sys/fs/cgroup/memory/memory.limit_in_bytes".into());
    files
        .iter()
        .filter_map(|file| std::fs::read_to_string(file).ok())
        .filter_map(|text| cgroup_bytes(&text))
        .min()
}

/// A cgroup memory limit's text: a number of bytes, or `max` (none). cgroup v1 writes no
/// limit as a number near `i64::MAX`.
fn cgroup_bytes(text: &str) -> Option<u64> {
    text.trim()
        .parse::<u64>()
        .ok()
        .filter(|&bytes| bytes > 0 && bytes < 1 << 62)
}

#[cfg(test)]
mod tests {
    #[test]
    fn memory_is_read() {
        let bytes = super::memory_bytes();
        assert!((64 << 20..u64::MAX).contains(&bytes), "{bytes}");
        assert!(bytes <= super::physical_memory().unwrap());
    }

    #[test]
    fn cgroup_limits_are_read_from_their_text() {
        assert_eq!(super::cgroup_bytes("max\n"), None);
        assert_eq!(super::cgroup_bytes("1073741824\n"), Some(1 << 30));
        assert_eq!(super::cgroup_bytes("9223372036854771712\n"), None);
    }
}
