//! Facts about the machine the library runs on, read once per process.
//!
//! Owns only the reading of those facts; it must not know what they are used for.

use std::sync::OnceLock;

/// The machine's physical memory in bytes (`u64::MAX` when the system does not say).
pub fn memory_bytes() -> u64 {
    static MEMORY: OnceLock<u64> = OnceLock::new();
    *MEMORY.get_or_init(|| {
        let info = rustix::system::sysinfo();
        let bytes = info
            .totalram
            .saturating_mul(u64::from(info.mem_unit.max(1)));
        if bytes == 0 { u64::MAX } else { bytes }
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn memory_is_read() {
        let bytes = super::memory_bytes();
        assert!((64 << 20..u64::MAX).contains(&bytes), "{bytes}");
    }
}
