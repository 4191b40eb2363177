//! Many operations with a bound on those in flight, answered in input order.
//!
//! Owns the scheduling only: an operation that finishes frees its place at once, whatever the
//! order (waiting for answers in input order would keep the places of those finished behind a
//! slow one, and fewer would be in flight). It knows nothing of S3, stores or what a failure
//! means.

use futures::{StreamExt, TryStreamExt};
use std::future::Future;

/// Runs `op` on every item, at most `limit` at once; the answers in input order, or the first
/// failure to happen.
pub async fn in_order<I, T, E, Fut>(
    items: Vec<I>,
    limit: usize,
    mut op: impl FnMut(I) -> Fut,
) -> Result<Vec<T>, E>
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
