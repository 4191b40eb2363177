//! One codec context per thread, made on first use and kept: a fresh context costs more
//! than coding a small chunk. Owns nothing but the slot discipline; the codecs own their slots.

use super::failed;
use crate::error::Result;
use std::cell::RefCell;
use std::thread::LocalKey;

/// Runs `f` with the context in this thread's `slot`, made by `make` on first use; `codec`
/// names the codec in errors.
pub fn with_reused<C: 'static, T>(
    codec: &str,
    slot: &'static LocalKey<RefCell<Option<C>>>,
    make: fn() -> Option<C>,
    f: impl FnOnce(&mut C) -> Result<T>,
) -> Result<T> {
    slot.with(|cell| {
        let mut held = cell.try_borrow_mut().map_err(|e| failed(codec, e))?;
        let context = match &mut *held {
            Some(c) => c,
            empty => empty.insert(make().ok_or_else(|| failed(codec, "cannot make a context"))?),
        };
        f(context)
    })
}
