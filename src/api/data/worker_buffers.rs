//! One scratch buffer per worker thread for the whole of a request: a buffer made per batch,
//! or per piece of work the thread pool splits off, costs its pages' faults and zeroing again
//! each time (a third of the page faults of a time series through 1 MiB chunks).
//!
//! Owns only which thread uses which buffer; what goes in them is the caller's. The buffers
//! are freed with the request.

use std::sync::Mutex;

pub(super) struct WorkerBuffers(Vec<Mutex<Vec<u8>>>);

impl WorkerBuffers {
    /// Buffers for every thread of the pool, and one for a caller outside it.
    pub(super) fn new() -> WorkerBuffers {
        WorkerBuffers(
            (0..=rayon::current_num_threads())
                .map(|_| Mutex::default())
                .collect(),
        )
    }

    /// Runs `f` with the calling thread's buffer: a fresh one if the thread is already using
    /// its buffer further up its stack (nested parallel work), or another pool's thread.
    pub(super) fn with<R>(&self, f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
        let outside = self.0.len() - 1;
        let slot =
            rayon::current_thread_index().map_or(Some(outside), |i| (i < outside).then_some(i));
        match slot.and_then(|s| self.0[s].try_lock().ok()) {
            Some(mut buffer) => f(&mut buffer),
            None => f(&mut Vec::new()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rayon::prelude::*;

    #[test]
    fn each_thread_keeps_its_buffer_and_nesting_gets_a_fresh_one() {
        let buffers = WorkerBuffers::new();
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
