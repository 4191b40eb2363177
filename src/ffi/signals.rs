//! Signal hygiene for the threads the library starts inside a host program.
//!
//! A C host (ncdump, nccopy, ...) keeps the default action of `SIGPIPE`, which kills the
//! process when a socket write meets a peer that has closed. The S3 client's thread blocks
//! `SIGPIPE`, so such a write fails with `EPIPE` and becomes an ordinary error. It knows
//! nothing of S3 beyond the hook that runs on the client's thread when it starts.

use crate::zmap::remote::runtime;

/// Blocks `SIGPIPE` for the calling thread.
fn block_sigpipe() {
    // SAFETY: `set` is initialised by sigemptyset before use; pthread_sigmask changes only the
    // calling thread's mask and reads `set` only during the call.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// Makes every thread the library starts from now on block `SIGPIPE`.
pub(crate) fn protect_library_threads() {
    runtime::set_thread_setup(block_sigpipe);
}
