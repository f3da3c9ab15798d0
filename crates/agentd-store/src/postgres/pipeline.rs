//! Statements pipelined on one connection. tokio-postgres sends a
//! statement when its future is first polled and hands each answer to the
//! statement that asked, in order: polling every future once, in order,
//! sends them all before the first answer is awaited (one write and one
//! wait where there were one per statement), and the server runs them in
//! that order. Written here because `join_all` (from the `futures` crate,
//! not a dependency otherwise) does not promise that first-poll order for
//! the few hundred statements of a large group.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

/// One statement's answer, still to come.
pub(super) type Pending<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Sends every statement of `pending` in order, then reads their answers
/// in the same order.
pub(super) async fn in_order<T>(mut pending: Vec<Pending<'_, T>>) -> Vec<T> {
    let mut answers: Vec<Option<T>> = pending.iter().map(|_| None).collect();
    let mut sent = false;
    // The first statement not answered yet: answers come in order, so only
    // it needs polling (a later one's answer waits in its own channel).
    let mut next = 0;
    std::future::poll_fn(|cx| {
        if !sent {
            sent = true;
            for (f, answer) in pending.iter_mut().zip(answers.iter_mut()) {
                if let Poll::Ready(v) = f.as_mut().poll(cx) {
                    *answer = Some(v);
                }
            }
        }
        while let (Some(f), Some(answer)) = (pending.get_mut(next), answers.get_mut(next)) {
            if answer.is_none() {
                match f.as_mut().poll(cx) {
                    Poll::Ready(v) => *answer = Some(v),
                    Poll::Pending => return Poll::Pending,
                }
            }
            next += 1;
        }
        Poll::Ready(())
    })
    .await;
    answers.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// Each future notes when it is first polled and finishes on its
    /// second poll: all are first polled in order before any finishes,
    /// and the answers keep that order.
    #[tokio::test]
    async fn every_statement_is_sent_in_order_before_the_first_answer_is_read() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let pending: Vec<Pending<'_, usize>> = (0..100_usize)
            .map(|i| {
                let log = log.clone();
                Box::pin(async move {
                    log.lock().expect("log").push(format!("sent {i}"));
                    tokio::task::yield_now().await;
                    log.lock().expect("log").push(format!("answered {i}"));
                    i
                }) as Pending<'_, usize>
            })
            .collect();
        let answers = in_order(pending).await;
        assert_eq!(answers, (0..100).collect::<Vec<_>>());
        let log = log.lock().expect("log").clone();
        let sent: Vec<String> = (0..100).map(|i| format!("sent {i}")).collect();
        assert_eq!(log[..100], sent[..], "all sent first, in order");
        let answered: Vec<String> = (0..100).map(|i| format!("answered {i}")).collect();
        assert_eq!(log[100..], answered[..], "then answered in order");
    }
}
