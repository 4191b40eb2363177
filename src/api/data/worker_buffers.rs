//! One scratch buffer per worker thread for the whole of a request: a buffer made per batch,
//! or per piece of work the thread pool splits off, costs its pages' faults and zeroing again
//! each time (a third of the page faults of a time series through 1 MiB chunks).
//!
//! Owns only which thread uses which buffer; what goes in them is the caller's. The buffers
//! are freed with the request.

use std::sync::Mutex;

pub(super) struct WorkerBuffers<T = Vec<u8>>(Vec<Mutex<T>>);

impl<T: Default> WorkerBuffers<T> {
    /// Buffers for every thread of the pool, and one for a caller outside it.
    pub(super) fn new() -> WorkerBuffers<T> {
        WorkerBuffers(
            (0..=rayon::current_num_threads())
                .map(|_| Mutex::default())
                .collect(),
        )
    }

    /// Runs `f` with the calling thread's buffer: a fresh one if the thread is already using
    /// its buffer further up its stack (nested parallel work), or another pool's thread.
    pub(super) fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        let outside = self.0.len() - 1;
        let slot =
            rayon::current_thread_index().map_or(Some(outside), |i| (i < outside).then_some(i));
        match slot.and_then(|s| self.0[s].try_lock().ok()) {
            Some(mut buffer) => f(&mut buffer),
            None => f(&mut T::default()),
        }
    }
}

/// Makes `buf` `len` bytes long for a caller that writes only some of them. A buffer that must
/// grow is allocated anew, zeroed by the allocator: large ones are fresh pages from the kernel,
/// mapped only where they are written, where growing in place would write every byte (a
/// time series through 16 MiB blosc chunks writes a few blocks of each).
pub(super) fn set_len_sparse(buf: &mut Vec<u8>, len: usize) {
    if buf.len() < len {
        *buf = Vec::new();
        *buf = vec![0u8; len];
    } else {
        buf.truncate(len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rayon::prelude::*;

    #[test]
    fn each_thread_keeps_its_buffer_and_nesting_gets_a_fresh_one() {
        let buffers: WorkerBuffers = WorkerBuffers::new();
        buffers.with(|b| b.extend_from_slice(b"outside"));
        buffers.with(|b| {
            assert_eq!(b, b"outside");
            buffers.with(|inner| assert!(inner.is_empty()));
        });
        (0..64).into_par_iter().for_each(|i| {
            buffers.with(|b| {
                // A thread finds what it left last time: its own buffer, never another's.
                let me = rayon::current_thread_index().unwrap() as u8;
                assert!(b.iter().all(|&t| t == me), "item {i}");
                b.push(me);
            })
        });
        let used: usize = buffers.0.iter().map(|m| m.lock().unwrap().len()).sum();
        assert_eq!(used, 64 + "outside".len());
    }
}
