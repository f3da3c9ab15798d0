//! A transparent proxy in front of a peer daemon: records the method and
//! headers of every JSON-RPC request, can hide the peer's streaming
//! capability, leave its card pointing at the peer, or end a stream after
//! its first event.

use crate::common::Daemon;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

/// What one JSON-RPC request to the proxy carried.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    pub version: Option<String>,
    pub authorization: Option<String>,
}

#[derive(Clone)]
struct ProxyState {
    upstream: String,
    me: String,
    streaming: bool,
    /// Whether the card's interface URLs are rewritten to the proxy.
    rewrite: bool,
    /// Whether a stream is ended after its first event.
    cut_streams: bool,
    seen: Arc<Mutex<Vec<Seen>>>,
    http: reqwest::Client,
}

pub struct Proxy {
    pub url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Proxy {
    pub fn methods(&self) -> Vec<String> {
        self.seen.lock().unwrap().iter().map(|s| s.method.clone()).collect()
    }
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

/// The peer's card with this proxy's URL and the chosen streaming flag.
async fn card(State(s): State<ProxyState>) -> Response {
    let card: Value = s
        .http
        .get(format!("{}/.well-known/agent-card.json", s.upstream))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let mut text = card.to_string();
    if s.rewrite {
        text = text.replace(&s.upstream, &s.me);
    }
    let mut card: Value = serde_json::from_str(&text).unwrap();
    card["capabilities"]["streaming"] = json!(s.streaming);
    text = card.to_string();
    Response::builder().header("content-type", "application/json").body(Body::from(text)).unwrap()
}

async fn rpc(State(s): State<ProxyState>, headers: HeaderMap, body: Bytes) -> Response {
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let header = |k: &str| headers.get(k).and_then(|v| v.to_str().ok()).map(str::to_owned);
    s.seen.lock().unwrap().push(Seen {
        method: v["method"].as_str().unwrap_or("").to_owned(),
        version: header("a2a-version"),
        authorization: header("authorization"),
    });
    let mut rb = s.http.post(format!("{}/a2a/jsonrpc", s.upstream)).body(body);
    for k in ["a2a-version", "authorization", "accept", "content-type"] {
        if let Some(v) = header(k) {
            rb = rb.header(k, v);
        }
    }
    let mut resp = rb.send().await.unwrap();
    if s.cut_streams && v["method"] == "SendStreamingMessage" {
        let mut first = Vec::new();
        while !String::from_utf8_lossy(&first).contains("\n\n") {
            match resp.chunk().await.unwrap() {
                Some(c) => first.extend_from_slice(&c),
                None => break,
            }
        }
        return Response::builder()
            .header("content-type", "text/event-stream")
            .body(Body::from(first))
            .unwrap();
    }
    let status = StatusCode::from_u16(resp.status().as_u16()).unwrap();
    let ct = resp.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    Response::builder()
        .status(status)
        .header("content-type", ct)
        .body(Body::from_stream(resp.bytes_stream()))
        .unwrap()
}

pub async fn proxy(peer: &Daemon, streaming: bool) -> Proxy {
    proxy_with(peer, streaming, true, false).await
}

pub async fn proxy_with(peer: &Daemon, streaming: bool, rewrite: bool, cut_streams: bool) -> Proxy {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let state = ProxyState {
        upstream: peer.url.clone(),
        me: url.clone(),
        streaming,
        rewrite,
        cut_streams,
        seen: seen.clone(),
        http: reqwest::Client::new(),
    };
    let app = axum::Router::new()
        .route("/.well-known/agent-card.json", axum::routing::get(card))
        .route("/a2a/jsonrpc", axum::routing::post(rpc))
        .with_state(state);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Proxy { url, seen }
}
