//! A webhook receiver on 127.0.0.1 (axum): every POST to `/hook` is kept
//! with its headers and JSON body, answered 200 (or 503 for the first
//! `fail` requests).

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// One request the receiver got and what it answered.
#[derive(Debug)]
pub struct Hit {
    pub headers: HeaderMap,
    pub body: Value,
    /// The body exactly as received.
    pub raw: String,
    pub status: u16,
}

struct RxState {
    tx: mpsc::UnboundedSender<Hit>,
    /// Requests still to answer with 503.
    fail: AtomicUsize,
}

async fn hook(State(s): State<Arc<RxState>>, headers: HeaderMap, body: String) -> StatusCode {
    let failing = s.fail.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok();
    let status = if failing { StatusCode::SERVICE_UNAVAILABLE } else { StatusCode::OK };
    let parsed = serde_json::from_str(&body).unwrap_or(Value::String(body.clone()));
    let _ = s.tx.send(Hit { headers, body: parsed, raw: body, status: status.as_u16() });
    status
}

/// A webhook receiver; it stops when dropped.
pub struct Receiver {
    pub port: u16,
    rx: mpsc::UnboundedReceiver<Hit>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl Receiver {
    /// On a fresh port, answering 503 to its first `fail` requests.
    pub async fn start(fail: usize) -> Receiver {
        Receiver::start_on(0, fail).await
    }

    pub async fn start_on(port: u16, fail: usize) -> Receiver {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await.expect("bind receiver");
        let port = listener.local_addr().expect("receiver address").port();
        let (tx, rx) = mpsc::unbounded_channel();
        let state = Arc::new(RxState { tx, fail: AtomicUsize::new(fail) });
        let app = axum::Router::new().route("/hook", axum::routing::post(hook)).with_state(state);
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Receiver { port, rx, server }
    }

    pub fn url(&self) -> String {
        hook_url(self.port)
    }

    /// Hits until one answered 200 carries `last_state` for `task_id`.
    pub async fn until_state(&mut self, task_id: &str, last_state: &str, within: Duration) -> Vec<Hit> {
        let deadline = Instant::now() + within;
        let mut hits = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let hit = tokio::time::timeout(left, self.rx.recv())
                .await
                .unwrap_or_else(|_| panic!("no {last_state} push for {task_id} in {within:?}; got {hits:#?}"))
                .expect("receiver channel");
            let done = hit.status == 200
                && hit.body["statusUpdate"]["taskId"] == task_id
                && hit.body["statusUpdate"]["status"]["state"] == last_state;
            hits.push(hit);
            if done {
                return hits;
            }
        }
    }
}

pub fn hook_url(port: u16) -> String {
    format!("http://127.0.0.1:{port}/hook")
}

impl Receiver {
    /// The next request, or `None` when none came within `within`.
    pub async fn next_within(&mut self, within: Duration) -> Option<Hit> {
        tokio::time::timeout(within, self.rx.recv()).await.ok().flatten()
    }

    /// The next request; panics naming `what` when none came within `within`.
    pub async fn next(&mut self, what: &str, within: Duration) -> Hit {
        self.next_within(within)
            .await
            .unwrap_or_else(|| panic!("no {what} reached the receiver in {within:?}"))
    }
}
