//! Many operations with a bound on those in flight: answered in input order, or handed out as
//! they come to workers that use them while the rest are still on their way.
//!
//! Owns the scheduling only: an operation that finishes frees its place at once, whatever the
//! order (waiting for answers in input order would keep the places of those finished behind a
//! slow one, and fewer would be in flight). It knows nothing of S3, stores or what a failure
//! means.

use crate::error::{Error, Result};
use futures::{StreamExt, TryStreamExt};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, mpsc};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// An answer handed out as it came: its item's index, the answer, and its place among those
/// held (freed when the answer is dropped).
pub type Handed<T> = (usize, T, OwnedSemaphorePermit);

/// Runs `op` on every item, at most `limit` at once; the answers in input order, or the first
/// failure to happen.
pub async fn in_order<I, T, E, Fut>(
    items: Vec<I>,
    limit: usize,
    mut op: impl FnMut(I) -> Fut,
) -> std::result::Result<Vec<T>, E>
where
    Fut: Future<Output = Result<T, E>>,
{
    let count = items.len();
    let answers = futures::stream::iter(items.into_iter().enumerate())
        .map(|(i, item)| {
            let answer = op(item);
            async move { answer.await.map(|v| (i, v)) }
        })
        .buffer_unordered(limit.max(1))
        .try_fold(
            std::iter::repeat_with(|| None)
                .take(count)
                .collect::<Vec<Option<T>>>(),
            |mut answers, (i, v)| async move {
                answers[i] = Some(v);
                Ok(answers)
            },
        )
        .await?;
    // Every index got its answer: the fold ends only once every operation has.
    Ok(answers.into_iter().flatten().collect())
}

/// Runs `op` on every item, at most `limit` at once, each starting only once a place among
/// `held` is free, and sends each answer to `to` as it comes with its place, which its receiver
/// frees when done with it: no more than `held` answers are ever in flight or waiting. Stops
/// quietly when `to` has no receiver any more.
pub async fn as_they_come<I, T, E, Fut>(
    items: Vec<I>,
    limit: usize,
    held: Arc<Semaphore>,
    mut op: impl FnMut(I) -> Fut,
    to: mpsc::Sender<Handed<T>>,
) -> std::result::Result<(), E>
where
    Fut: Future<Output = std::result::Result<T, E>>,
{
    let answers = futures::stream::iter(items.into_iter().enumerate())
        .map(|(i, item)| {
            let held = Arc::clone(&held);
            let answer = op(item);
            async move {
                // The semaphore is never closed.
                let place = held.acquire_owned().await.ok();
                answer.await.map(|v| (i, v, place))
            }
        })
        .buffer_unordered(limit.max(1));
    futures::pin_mut!(answers);
    while let Some(answer) = answers.next().await {
        let (i, v, place) = answer?;
        let Some(place) = place else { return Ok(()) };
        if to.send((i, v, place)).is_err() {
            return Ok(());
        }
    }
    Ok(())
}

/// Runs `fetch` on a helper thread, giving it the sending end of a channel, and hands every
/// answer it sends to `each` on the rayon workers as it arrives; returns once all are done.
/// The first failure of `each` is the result (the rest are not handed out: the channel closes,
/// which stops `fetch`), else that of `fetch`.
pub fn hand_out<T: Send>(
    fetch: impl FnOnce(mpsc::Sender<Handed<T>>) -> Result<()> + Send,
    each: &(dyn Fn(usize, T) -> Result<()> + Sync),
) -> Result<()> {
    let (to, from) = mpsc::channel::<Handed<T>>();
    let failed: Mutex<Option<Error>> = Mutex::new(None);
    let has_failed = || failed.lock().map_or(true, |f| f.is_some());
    let fetched = std::thread::scope(|scope| {
        let fetcher = std::thread::Builder::new()
            .name("nczarr-rs-fetch".into())
            .spawn_scoped(scope, move || fetch(to))
            .map_err(|e| Error::Internal(format!("cannot start a fetching thread: {e}")))?;
        rayon::in_place_scope(|workers| {
            for (i, v, place) in from {
                if has_failed() {
                    break;
                }
                let failed = &failed;
                workers.spawn(move |_| {
                    if let Err(e) = each(i, v)
                        && let Ok(mut first) = failed.lock()
                    {
                        first.get_or_insert(e);
                    }
                    drop(place);
                });
            }
        });
        fetcher
            .join()
            .map_err(|_| Error::Internal("the fetching thread panicked".into()))?
    });
    match failed.into_inner() {
        Ok(Some(e)) => Err(e),
        Ok(None) => fetched,
        Err(_) => Err(Error::Internal("a fetch worker panicked".into())),
    }
}

/// Places for at most `held` items handed to an asynchronous consumer and not yet done with:
/// producers wait for a place, and are refused once the consumer has stopped.
struct Places {
    taken_and_closed: Mutex<(usize, bool)>,
    freed: Condvar,
    held: usize,
}

impl Places {
    fn new(held: usize) -> Places {
        Places {
            taken_and_closed: Mutex::new((0, false)),
            freed: Condvar::new(),
            held: held.max(1),
        }
    }

    /// Waits for a free place and takes it; false once the consumer has stopped.
    fn take(&self) -> bool {
        let Ok(mut state) = self.taken_and_closed.lock() else {
            return false;
        };
        while state.0 >= self.held && !state.1 {
            state = match self.freed.wait(state) {
                Ok(s) => s,
                Err(_) => return false,
            };
        }
        if state.1 {
            return false;
        }
        state.0 += 1;
        true
    }

    fn free(&self) {
        if let Ok(mut state) = self.taken_and_closed.lock() {
            state.0 = state.0.saturating_sub(1);
        }
        self.freed.notify_one();
    }

    fn close(&self) {
        if let Ok(mut state) = self.taken_and_closed.lock() {
            state.1 = true;
        }
        self.freed.notify_all();
    }
}

/// Closes its places when dropped.
struct CloseOnDrop(Arc<Places>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// What [`stream_in`] gives its producer to hand an item on with.
pub type Hand<'a, T> = dyn Fn(T) -> Result<()> + Sync + 'a;

/// A producer of items for [`stream_in`].
pub type Producer<'a, T> = dyn Fn(&Hand<'_, T>) -> Result<()> + Sync + 'a;

/// A future the caller's `run` drives to its end (on an asynchronous runtime).
pub type Driven = Pin<Box<dyn Future<Output = Result<()>> + Send>>;

/// Runs `produce` on this thread (and the workers it uses), giving it a function that hands an
/// item to `consume`, which `run` drives on a helper thread as items come: at most `limit`
/// consumed at once and `held` handed and not yet consumed (handing an item waits for a
/// place). Returns once every item handed is consumed. The consumer's first failure is the
/// result (items handed after it are refused), else that of `produce`.
pub fn stream_in<T, Fut>(
    held: usize,
    limit: usize,
    consume: impl Fn(T) -> Fut + Send + 'static,
    run: impl FnOnce(Driven) -> Result<()> + Send,
    produce: &Producer<'_, T>,
) -> Result<()>
where
    T: Send + 'static,
    Fut: Future<Output = Result<()>> + Send + 'static,
{
    let places = Arc::new(Places::new(held));
    let (to, from) = tokio::sync::mpsc::unbounded_channel::<T>();
    let consumer: Driven = {
        let places = Arc::clone(&places);
        Box::pin(async move {
            let items = futures::stream::unfold(from, |mut from| async move {
                from.recv().await.map(|item| (item, from))
            });
            items
                .map(consume)
                .buffer_unordered(limit.max(1))
                .try_for_each(|()| {
                    places.free();
                    futures::future::ready(Ok(()))
                })
                .await
        })
    };
    let stopped = || Error::Internal("the consumer of a stream stopped".into());
    std::thread::scope(|scope| {
        let consumer_places = Arc::clone(&places);
        let consuming = std::thread::Builder::new()
            .name("nczarr-rs-upload".into())
            .spawn_scoped(scope, move || {
                // Whatever ends the consumer (a panic too), nobody may wait for a place after.
                let _closing = CloseOnDrop(consumer_places);
                run(consumer)
            })
            .map_err(|e| Error::Internal(format!("cannot start an uploading thread: {e}")))?;
        let produced = produce(&|item| {
            if !places.take() {
                return Err(stopped());
            }
            to.send(item).map_err(|_| stopped())
        });
        drop(to);
        let consumed = consuming
            .join()
            .map_err(|_| Error::Internal("the uploading thread panicked".into()))?;
        consumed.and(produced)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;
    use tokio::sync::Notify;

    fn block_on<F: Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(f)
    }

    /// The first operation finishes only after all the others have: with its place held, the
    /// others must still get through the remaining places (answering in input order as they
    /// finish would stall once the places behind it filled).
    #[test]
    fn a_slow_operation_holds_only_its_own_place() {
        let items: Vec<usize> = (0..40).collect();
        let finished = Arc::new(AtomicUsize::new(0));
        let all_others = Arc::new(Notify::new());
        let run = in_order(items, 4, |i| {
            let (finished, all_others) = (Arc::clone(&finished), Arc::clone(&all_others));
            async move {
                if i == 0 {
                    while finished.load(Ordering::SeqCst) < 39 {
                        all_others.notified().await;
                    }
                } else {
                    tokio::task::yield_now().await;
                    finished.fetch_add(1, Ordering::SeqCst);
                    all_others.notify_one();
                }
                Ok::<usize, ()>(i * 10)
            }
        });
        let answers = block_on(async { tokio::time::timeout(Duration::from_secs(10), run).await })
            .expect("the batch stalled behind its first operation")
            .unwrap();
        assert_eq!(answers, (0..40).map(|i| i * 10).collect::<Vec<_>>());
    }

    #[test]
    fn the_first_failure_is_the_answer() {
        let got = block_on(in_order(vec![1, 2, 3], 2, |i| async move {
            if i == 2 {
                Err(format!("item {i}"))
            } else {
                Ok(i)
            }
        }));
        assert_eq!(got, Err("item 2".to_string()));
        let none: Result<Vec<u8>, ()> =
            block_on(in_order(Vec::<u8>::new(), 8, |i| async move { Ok(i) }));
        assert_eq!(none, Ok(Vec::new()));
    }
}
