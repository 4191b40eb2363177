//! The one private thread that runs the asynchronous S3 client.
//!
//! Owns a single-threaded tokio runtime living on its own thread for the life of the process.
//! Callers hand it a future and wait for the answer on a channel; nobody ever blocks a runtime
//! on their own thread, so a netCDF caller's threads (or a runtime of the host program) are
//! never entangled with ours. It knows nothing of stores or S3.

use crate::error::{Error, Result};
use std::future::Future;
use std::sync::OnceLock;
use std::sync::mpsc;
use tokio::runtime::{Builder, Handle};

static RUNTIME: OnceLock<std::result::Result<Handle, String>> = OnceLock::new();

/// Runs first on the runtime thread (the C boundary blocks `SIGPIPE` there).
static THREAD_SETUP: OnceLock<fn()> = OnceLock::new();

/// Sets what the runtime thread runs first when it starts; the first setting stays.
pub fn set_thread_setup(setup: fn()) {
    let _ = THREAD_SETUP.set(setup);
}

fn start() -> std::result::Result<Handle, String> {
    let (tx, rx) = mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name("nczarr-rs-s3".into())
        .spawn(move || {
            if let Some(setup) = THREAD_SETUP.get() {
                setup();
            }
            let runtime = match Builder::new_current_thread().enable_all().build() {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = tx.send(Err(format!("cannot start the S3 runtime: {e}")));
                    return;
                }
            };
            let _ = tx.send(Ok(runtime.handle().clone()));
            runtime.block_on(std::future::pending::<()>());
        })
        .map_err(|e| format!("cannot start the S3 thread: {e}"))?;
    rx.recv()
        .map_err(|_| "the S3 thread stopped while starting".to_string())?
}

/// Runs `work` on the private runtime and waits for its result.
pub fn run<F>(work: F) -> Result<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handle = RUNTIME
        .get_or_init(start)
        .as_ref()
        .map_err(|e| Error::Internal(e.clone()))?;
    let (tx, rx) = mpsc::sync_channel(1);
    handle.spawn(async move {
        let _ = tx.send(work.await);
    });
    rx.recv()
        .map_err(|_| Error::Internal("an S3 request panicked".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_work_from_many_threads_on_one_runtime_thread() {
        let names: Vec<String> = (0..4)
            .map(|i| {
                std::thread::spawn(move || {
                    run(async move {
                        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                        format!("{i}:{}", std::thread::current().name().unwrap_or(""))
                    })
                    .unwrap()
                })
            })
            .map(|t| t.join().unwrap())
            .collect();
        for (i, n) in names.iter().enumerate() {
            assert_eq!(n, &format!("{i}:nczarr-rs-s3"));
        }
    }

    #[test]
    fn a_panicking_request_is_an_error_not_a_hang() {
        let r = run(async { panic!("boom") });
        assert!(matches!(r, Err(Error::Internal(_))));
        assert_eq!(run(async { 7 }).unwrap(), 7);
    }
}
