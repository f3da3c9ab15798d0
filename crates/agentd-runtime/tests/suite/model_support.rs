//! A scriptable model server for the model tests: a real HTTP server (axum
//! on 127.0.0.1:0) serving OpenAI's Chat Completions and Anthropic's
//! Messages paths, that records every request and answers each with the
//! `Reply` a test's closure picks.

#![allow(dead_code)]

use agentd_runtime::model::{ModelError, ModelProvider, ModelRequest, ModelResponse, OpenAiConfig};
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

/// What one request received.
#[derive(Clone, Debug)]
pub struct Received {
    /// The path asked for (`/v1/chat/completions` or `/v1/messages`).
    pub path: String,
    pub headers: HeaderMap,
    pub body: Value,
}

/// How the server answers one request.
pub enum Reply {
    /// A JSON body with a status and extra headers.
    Json { status: u16, body: Value, headers: Vec<(&'static str, String)> },
    /// Any body, as written, with a content type.
    Raw { status: u16, content_type: &'static str, body: String },
    /// An SSE stream: each string is sent as `data: …\n\n`, `gap` apart;
    /// with `hang`, the stream stays open (silent) after the last one.
    Sse { events: Vec<String>, gap: Duration, hang: bool },
    /// Raw SSE bytes, in the pieces given.
    SseRaw(Vec<String>),
    /// Raw SSE bytes, in the pieces given, `gap` apart; with `hang`, the
    /// stream stays open (silent) after the last one.
    SseRawSlow { pieces: Vec<String>, gap: Duration, hang: bool },
    /// Waits, then answers.
    After(Duration, Box<Reply>),
}

type Handler = dyn Fn(usize, &Received) -> Reply + Send + Sync;

struct Shared {
    handler: Box<Handler>,
    received: Mutex<Vec<Received>>,
    /// Notified when a stream is dropped before its end (client went away).
    dropped: Notify,
    /// The headers of each `GET /v1/models` (a daemon's start-up probe).
    probes: Mutex<Vec<HeaderMap>>,
}

pub struct Mock {
    /// OpenAI base URL, `http://127.0.0.1:PORT/v1`.
    pub base: String,
    /// Anthropic base URL, `http://127.0.0.1:PORT`.
    pub root: String,
    shared: Arc<Shared>,
}

impl Mock {
    /// Starts a server whose answers come from `handler(n, request)`, `n`
    /// counting requests from 0.
    pub async fn start(handler: impl Fn(usize, &Received) -> Reply + Send + Sync + 'static) -> Mock {
        let shared = Arc::new(Shared {
            handler: Box::new(handler),
            received: Mutex::default(),
            dropped: Notify::new(),
            probes: Mutex::default(),
        });
        let app = axum::Router::new()
            .route("/v1/chat/completions", axum::routing::post(complete))
            .route("/v1/messages", axum::routing::post(complete))
            .route("/v1/models", axum::routing::get(models))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Mock { base: format!("http://{addr}/v1"), root: format!("http://{addr}"), shared }
    }

    pub fn received(&self) -> Vec<Received> {
        self.shared.received.lock().unwrap().clone()
    }

    pub fn hits(&self) -> usize {
        self.shared.received.lock().unwrap().len()
    }

    /// The headers of the model-list requests received so far.
    pub fn probes(&self) -> Vec<HeaderMap> {
        self.shared.probes.lock().unwrap().clone()
    }

    /// Waits (at most `within`) for a stream to be dropped by the client.
    pub async fn stream_dropped(&self, within: Duration) -> bool {
        tokio::time::timeout(within, self.shared.dropped.notified()).await.is_ok()
    }
}

async fn complete(State(shared): State<Arc<Shared>>, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let received = Received { path: uri.path().to_owned(), headers, body };
    let n = {
        let mut all = shared.received.lock().unwrap();
        all.push(received.clone());
        all.len() - 1
    };
    let mut reply = (shared.handler)(n, &received);
    while let Reply::After(d, next) = reply {
        // The delay is the subject: a slow server, for timeouts and failover.
        tokio::time::sleep(d).await;
        reply = *next;
    }
    respond(reply, shared)
}

/// The model list both APIs serve, naming one model.
async fn models(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> axum::Json<Value> {
    shared.probes.lock().unwrap().push(headers);
    axum::Json(json!({"data": [{"id": "claude-small", "type": "model"}]}))
}

fn respond(reply: Reply, shared: Arc<Shared>) -> Response {
    let builder = |status: u16, content_type: &str| {
        Response::builder().status(StatusCode::from_u16(status).unwrap()).header("content-type", content_type)
    };
    match reply {
        Reply::Json { status, body, headers } => {
            let mut b = builder(status, "application/json");
            for (k, v) in headers {
                b = b.header(k, v);
            }
            b.body(Body::from(body.to_string())).unwrap()
        }
        Reply::Raw { status, content_type, body } => {
            builder(status, content_type).body(Body::from(body)).unwrap()
        }
        Reply::Sse { events, gap, hang } => {
            let pieces = events.into_iter().map(|e| format!("data: {e}\n\n")).collect();
            builder(200, "text/event-stream").body(sse_body(pieces, gap, hang, shared)).unwrap()
        }
        Reply::SseRaw(pieces) => builder(200, "text/event-stream")
            .body(sse_body(pieces.into(), Duration::ZERO, false, shared))
            .unwrap(),
        Reply::SseRawSlow { pieces, gap, hang } => {
            builder(200, "text/event-stream").body(sse_body(pieces.into(), gap, hang, shared)).unwrap()
        }
        Reply::After(..) => unreachable!("unwrapped by the caller"),
    }
}

/// Notifies `dropped` when the body goes away before it was sent whole.
struct DropGuard {
    shared: Arc<Shared>,
    finished: bool,
}

impl DropGuard {
    fn finish(&mut self) {
        self.finished = true;
    }
}

impl Drop for DropGuard {
    fn drop(&mut self) {
        if !self.finished {
            self.shared.dropped.notify_one();
        }
    }
}

fn sse_body(pieces: VecDeque<String>, gap: Duration, hang: bool, shared: Arc<Shared>) -> Body {
    let guard = DropGuard { shared, finished: false };
    let stream =
        futures::stream::unfold((pieces, guard, true), move |(mut pieces, mut guard, first)| async move {
            match pieces.pop_front() {
                Some(p) => {
                    if !first {
                        // The gap is the subject: a server streaming slowly.
                        tokio::time::sleep(gap).await;
                    }
                    Some((Ok::<_, Infallible>(Bytes::from(p)), (pieces, guard, false)))
                }
                None if hang => {
                    std::future::pending::<()>().await;
                    None
                }
                None => {
                    guard.finish();
                    None
                }
            }
        });
    Body::from_stream(stream)
}

/// A chunk carrying a text delta.
pub fn text(t: &str) -> String {
    json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": t}, "finish_reason": null}]})
        .to_string()
}

/// A chunk carrying one tool-call fragment.
pub fn tool(index: usize, id: Option<&str>, name: Option<&str>, args: &str) -> String {
    let mut call = json!({"index": index, "function": {"arguments": args}});
    if let Some(id) = id {
        call["id"] = json!(id);
        call["type"] = json!("function");
    }
    if let Some(name) = name {
        call["function"]["name"] = json!(name);
    }
    json!({"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": null}]}).to_string()
}

/// The chunk that ends the choice.
pub fn finish(reason: &str) -> String {
    json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}).to_string()
}

/// The usage chunk `stream_options.include_usage` asks for.
pub fn usage(prompt: u64, completion: u64) -> String {
    json!({"choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}})
        .to_string()
}

pub fn done() -> String {
    "[DONE]".to_owned()
}

/// A whole streamed answer: `parts` as text deltas, then finish, usage, [DONE].
pub fn stream_of(parts: &[&str]) -> Reply {
    let mut events: Vec<String> = parts.iter().map(|p| text(p)).collect();
    events.extend([finish("stop"), usage(10, parts.len() as u64), done()]);
    Reply::Sse { events, gap: Duration::ZERO, hang: false }
}

/// A non-streamed completion answering `content`.
pub fn completion(content: &str) -> Reply {
    Reply::Json {
        status: 200,
        body: json!({
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9},
        }),
        headers: Vec::new(),
    }
}

/// An error answer in OpenAI's shape.
pub fn error(status: u16, message: &str, headers: Vec<(&'static str, String)>) -> Reply {
    Reply::Json { status, body: json!({"error": {"message": message, "type": "test"}}), headers }
}

/// A config for `endpoints` with fast retries, suited to tests.
pub fn config(endpoints: &[&str]) -> OpenAiConfig {
    let mut c = OpenAiConfig::new(endpoints[0], "test-model");
    c.endpoints = endpoints.iter().map(|e| e.to_string()).collect();
    c.http = fast_http();
    c
}

/// Transport settings with fast retries, suited to tests.
pub fn fast_http() -> agentd_runtime::model::HttpSettings {
    agentd_runtime::model::HttpSettings {
        backoff_base: Duration::from_millis(10),
        max_backoff: Duration::from_millis(100),
        timeout: Duration::from_secs(10),
        ..Default::default()
    }
}

/// Runs one call; returns the result and every delta sent.
pub async fn call(
    p: &dyn ModelProvider,
    req: &ModelRequest,
) -> (Result<ModelResponse, ModelError>, Vec<String>) {
    let (tx, mut rx) = mpsc::channel(1024);
    let result = p.complete(req, &tx, &CancellationToken::new()).await;
    drop(tx);
    let mut deltas = Vec::new();
    while let Some(d) = rx.recv().await {
        deltas.push(d);
    }
    (result, deltas)
}

/// Runs one call on a server that streams slowly, and checks that the first
/// delta (`first`) reaches the caller while the stream is still going;
/// returns the whole answer's text.
pub async fn first_delta_before_the_end(p: impl ModelProvider, req: ModelRequest, first: &str) -> String {
    let (tx, mut rx) = mpsc::channel(16);
    let task = tokio::spawn(async move { p.complete(&req, &tx, &CancellationToken::new()).await });
    let got = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await.unwrap();
    assert_eq!(got.as_deref(), Some(first));
    assert!(!task.is_finished(), "the first delta came before the stream ended");
    task.await.unwrap().unwrap().text
}

/// One call and how long it took.
pub async fn timed_call(
    p: &dyn ModelProvider,
    req: &ModelRequest,
) -> (Result<ModelResponse, ModelError>, Duration) {
    let start = std::time::Instant::now();
    let (result, _) = call(p, req).await;
    (result, start.elapsed())
}

/// Asserts that a call that met one `Retry-After: 1` waited about a second
/// (at least, and well under the 5 s cap its tests set).
pub fn waited_for_retry_after(waited: Duration) {
    assert!(waited >= Duration::from_millis(950), "Retry-After: 1 honoured, waited {waited:?}");
    assert!(waited < Duration::from_secs(4), "{waited:?}");
}

/// A plain one-question request.
pub fn ask(q: &str) -> ModelRequest {
    use agentd_runtime::model::ChatMessage;
    ModelRequest {
        messages: vec![ChatMessage::system("be terse"), ChatMessage::user(q)],
        ..Default::default()
    }
}

/// A base URL on which nothing listens (connect refused).
pub async fn dead_endpoint() -> String {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    format!("http://{addr}/v1")
}
