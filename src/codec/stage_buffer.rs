//! The buffers a chain's inner stages decode into, kept by each thread between chunks: a
//! fresh buffer per chunk costs its pages' faults and zeroing every time (a third of a time
//! series through 16 MiB zlib chunks). The process keeps at most [`KEPT_AT_MOST`] bytes of them
//! in all, whatever its thread count. Knows nothing of codecs.

use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Most bytes all threads together keep between chunks; a buffer that would exceed it is freed.
pub const KEPT_AT_MOST: usize = 64 << 20;

/// Bytes kept by all threads now.
static KEPT_BYTES: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static KEPT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// This thread's kept buffer (empty when none is kept or it is in use).
pub fn take() -> Vec<u8> {
    let taken = KEPT
        .with(|k| k.try_borrow_mut().map(|mut v| std::mem::take(&mut *v)))
        .unwrap_or_default();
    KEPT_BYTES.fetch_sub(taken.capacity(), Ordering::Relaxed);
    taken
}

/// Keeps the larger of two buffers a chain has finished with, while the process's total stays
/// within [`KEPT_AT_MOST`]; the other is freed.
pub fn give_back(a: Vec<u8>, b: Vec<u8>) {
    let larger = if a.capacity() >= b.capacity() { a } else { b };
    let bytes = larger.capacity();
    if KEPT_BYTES.fetch_add(bytes, Ordering::Relaxed) + bytes > KEPT_AT_MOST {
        KEPT_BYTES.fetch_sub(bytes, Ordering::Relaxed);
        return;
    }
    let refused = KEPT.with(|k| match k.try_borrow_mut() {
        Ok(mut v) if v.capacity() == 0 => {
            *v = larger;
            false
        }
        _ => true,
    });
    if refused {
        KEPT_BYTES.fetch_sub(bytes, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_gets_back_what_it_gave_and_the_total_stays_bounded() {
        std::thread::scope(|s| {
            s.spawn(|| {
                give_back(vec![1u8; 1000], vec![2u8; 10]);
                let kept = take();
                assert_eq!(kept.capacity(), 1000);
                assert_eq!(kept[0], 1);
                assert!(take().is_empty());
                // Beyond the process's budget: nothing is kept.
                give_back(Vec::with_capacity(KEPT_AT_MOST + 1), Vec::new());
                assert!(take().capacity() == 0);
            });
        });
    }
}
