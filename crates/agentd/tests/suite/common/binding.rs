//! Runs one A2A operation on either binding, so that every case can be
//! checked on JSON-RPC and on REST with the same code, and normalises the
//! two error shapes into one [`WireError`].

use super::{Daemon, SseStream};
use serde_json::{Map, Value, json};
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Binding {
    JsonRpc,
    Rest,
}

/// Both bindings; `for b in BINDINGS { … }` runs a case on each.
pub const BINDINGS: [Binding; 2] = [Binding::JsonRpc, Binding::Rest];

/// An error answer of either binding.
#[derive(Clone, Debug)]
pub struct WireError {
    pub binding: Binding,
    pub http: u16,
    pub content_type: String,
    /// The JSON-RPC `error` object, or the REST body's `error` object.
    pub error: Value,
}

impl WireError {
    pub fn from_body(binding: Binding, http: u16, content_type: &str, body: &Value) -> WireError {
        let error = body
            .get("error")
            .cloned()
            .unwrap_or_else(|| panic!("{binding:?}: not an error answer ({http}): {body}"));
        WireError { binding, http, content_type: content_type.to_owned(), error }
    }
    fn details(&self) -> Vec<Value> {
        let key = if self.binding == Binding::JsonRpc { "data" } else { "details" };
        self.error[key].as_array().cloned().unwrap_or_default()
    }
    /// The ErrorInfo reason, if any.
    pub fn reason(&self) -> Option<String> {
        self.details()
            .iter()
            .find(|d| d["@type"] == "type.googleapis.com/google.rpc.ErrorInfo")
            .and_then(|d| d["reason"].as_str().map(str::to_owned))
    }
    /// The `field` of every BadRequest violation.
    pub fn fields(&self) -> Vec<String> {
        self.details()
            .iter()
            .filter(|d| d["@type"] == "type.googleapis.com/google.rpc.BadRequest")
            .flat_map(|d| d["fieldViolations"].as_array().cloned().unwrap_or_default())
            .filter_map(|v| v["field"].as_str().map(str::to_owned))
            .collect()
    }
    /// Asserts a BadRequest violation names `field` exactly.
    pub fn assert_field(&self, field: &str) -> &Self {
        assert!(
            self.fields().iter().any(|f| f == field),
            "{:?}: expected a violation of `{field}`: {}",
            self.binding,
            self.error
        );
        self
    }
}

/// The A2A 1.0.1 error table (digest §5.1), restated independently of the
/// daemon: JSON-RPC code → (HTTP status, ErrorInfo reason).
pub fn error_table(code: i64) -> (u16, Option<&'static str>) {
    match code {
        -32001 => (404, Some("TASK_NOT_FOUND")),
        -32002 => (400, Some("TASK_NOT_CANCELABLE")),
        -32003 => (400, Some("PUSH_NOTIFICATION_NOT_SUPPORTED")),
        -32004 => (400, Some("UNSUPPORTED_OPERATION")),
        -32005 => (400, Some("CONTENT_TYPE_NOT_SUPPORTED")),
        -32006 => (500, Some("INVALID_AGENT_RESPONSE")),
        -32007 => (400, Some("EXTENDED_AGENT_CARD_NOT_CONFIGURED")),
        -32008 => (400, Some("EXTENSION_SUPPORT_REQUIRED")),
        -32009 => (400, Some("VERSION_NOT_SUPPORTED")),
        -32700 | -32600 | -32602 => (400, None),
        -32601 => (404, None),
        -32603 => (500, None),
        other => panic!("no such A2A error code {other}"),
    }
}

/// Asserts `r` is the error `code` as its binding must report it: JSON-RPC
/// with HTTP 200 and `error.code`; REST with the table's HTTP status and a
/// google.rpc.Status body; both as `application/json` with the ErrorInfo
/// reason the table gives.
pub fn expect_error(r: Result<Value, WireError>, code: i64) -> WireError {
    let e = match r {
        Ok(v) => panic!("expected error {code}, got success: {v}"),
        Err(e) => e,
    };
    let (http, reason) = error_table(code);
    let b = e.binding;
    assert!(e.content_type.starts_with("application/json"), "{b:?}: error content-type {:?}", e.content_type);
    match b {
        Binding::JsonRpc => {
            assert_eq!(e.http, 200, "JSON-RPC errors travel with HTTP 200: {}", e.error);
            assert_eq!(e.error["code"], json!(code), "{b:?}: {}", e.error);
        }
        Binding::Rest => {
            assert_eq!(e.http, http, "{b:?}: HTTP status for {code}: {}", e.error);
            assert_eq!(e.error["code"], json!(http), "{b:?}: error.code is the HTTP status: {}", e.error);
            assert!(
                e.error["status"].as_str().is_some_and(|s| !s.is_empty()),
                "{b:?}: error.status: {}",
                e.error
            );
            assert!(e.error["details"].is_array(), "{b:?}: error.details is an array: {}", e.error);
        }
    }
    assert!(e.error["message"].as_str().is_some_and(|s| !s.is_empty()), "{b:?}: error.message: {}", e.error);
    if let Some(reason) = reason {
        assert_eq!(e.reason().as_deref(), Some(reason), "{b:?}: ErrorInfo reason: {}", e.error);
        let info = e.details().into_iter().find(|d| d["reason"] == reason).unwrap_or_default();
        assert_eq!(info["domain"], "a2a-protocol.org", "{b:?}: ErrorInfo domain: {info}");
    }
    if code == -32602 {
        assert!(!e.fields().is_empty(), "{b:?}: InvalidParams names the field: {}", e.error);
    }
    e
}

/// The REST request for an operation: HTTP method, path, query and body.
fn rest_request(
    method: &str,
    params: &Value,
) -> (reqwest::Method, String, Vec<(String, String)>, Option<Value>) {
    use reqwest::Method as M;
    let mut rest: Map<String, Value> = params.as_object().cloned().unwrap_or_default();
    let mut take = |k: &str| match rest.remove(k) {
        Some(Value::String(s)) => s,
        Some(v) => v.to_string(),
        None => String::new(),
    };
    let (m, path, in_body) = match method {
        "SendMessage" => (M::POST, "/message:send".to_owned(), true),
        "SendStreamingMessage" => (M::POST, "/message:stream".to_owned(), true),
        "GetTask" => (M::GET, format!("/tasks/{}", take("id")), false),
        "ListTasks" => (M::GET, "/tasks".to_owned(), false),
        "CancelTask" => (M::POST, format!("/tasks/{}:cancel", take("id")), true),
        "SubscribeToTask" => (M::POST, format!("/tasks/{}:subscribe", take("id")), true),
        "CreateTaskPushNotificationConfig" => {
            (M::POST, format!("/tasks/{}/pushNotificationConfigs", take("taskId")), true)
        }
        "ListTaskPushNotificationConfigs" => {
            (M::GET, format!("/tasks/{}/pushNotificationConfigs", take("taskId")), false)
        }
        "GetTaskPushNotificationConfig" | "DeleteTaskPushNotificationConfig" => {
            let t = take("taskId");
            let path = format!("/tasks/{t}/pushNotificationConfigs/{}", take("id"));
            (if method.starts_with("Get") { M::GET } else { M::DELETE }, path, false)
        }
        "GetExtendedAgentCard" => (M::GET, "/extendedAgentCard".to_owned(), false),
        "InjectTaskReminder" => (M::POST, format!("/tasks/{}:injectReminder", take("taskId")), true),
        other => panic!("no REST route for {other}"),
    };
    if in_body {
        let body = (!rest.is_empty()).then(|| Value::Object(rest));
        (m, path, Vec::new(), body)
    } else {
        let q = rest
            .into_iter()
            .map(|(k, v)| (k, v.as_str().map_or_else(|| v.to_string(), str::to_owned)))
            .collect();
        (m, path, q, None)
    }
}

/// The events of a stream opened on either binding, payloads unwrapped.
pub struct Events {
    pub binding: Binding,
    pub sse: SseStream,
}

impl Events {
    /// The next StreamResponse (`result` of a JSON-RPC frame), `None` at close.
    pub async fn next(&mut self) -> Option<Value> {
        let v = self.sse.next().await?;
        Some(match self.binding {
            Binding::JsonRpc => {
                assert_eq!(v["jsonrpc"], "2.0", "JSON-RPC SSE frames are responses: {v}");
                assert_eq!(v["id"], json!(7), "frames carry the request id: {v}");
                v.get("result").cloned().unwrap_or_else(|| panic!("error frame in stream: {v}"))
            }
            Binding::Rest => v,
        })
    }
    /// Every remaining event until the stream closes.
    pub async fn collect(&mut self) -> Vec<Value> {
        let mut out = Vec::new();
        while let Some(v) = self.next().await {
            out.push(v);
        }
        out
    }
    /// The error answered instead of a stream (plain JSON, not SSE).
    pub async fn refused(mut self) -> WireError {
        assert!(!self.sse.is_sse(), "{:?}: expected a plain error, got a stream", self.binding);
        let body = self.sse.plain_body().await;
        WireError::from_body(self.binding, self.sse.status, &self.sse.content_type.clone(), &body)
    }
}

/// A unique suffix for message ids.
pub fn uid(prefix: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!("{prefix}-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}

/// SendMessage params whose messageId starts with `prefix` (a `tck` scenario).
pub fn tck(prefix: &str) -> Value {
    json!({"message": {"messageId": uid(prefix), "role": "ROLE_USER", "parts": [{"text": "hi"}]}})
}

/// `tck(prefix)` continuing the task `task_id`.
pub fn tck_on(prefix: &str, task_id: &str) -> Value {
    let mut p = tck(prefix);
    p["message"]["taskId"] = json!(task_id);
    p
}

/// A raw HTTP answer.
pub struct Raw {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub text: String,
}

impl Raw {
    pub fn json(&self) -> Value {
        let v = serde_json::from_str(&self.text)
            .unwrap_or_else(|_| panic!("not JSON ({}): {:?}", self.status, self.text));
        super::annotations::check(&v);
        v
    }
    pub fn header(&self, name: &str) -> String {
        self.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned()
    }
}

impl Daemon {
    /// Runs `method` on binding `b`; `Err` carries the normalised error.
    pub async fn op(&self, b: Binding, method: &str, params: Value) -> Result<Value, WireError> {
        self.op_versioned(b, method, params, Some("1.0"), &[]).await
    }

    /// [`Daemon::op`] with the `A2A-Version` header given (or left out) and
    /// extra URL query pairs.
    pub async fn op_versioned(
        &self,
        b: Binding,
        method: &str,
        params: Value,
        version: Option<&str>,
        url_query: &[(&str, &str)],
    ) -> Result<Value, WireError> {
        self.op_full(b, method, params, version, url_query, &[]).await.1
    }

    /// [`Daemon::op`] with extra request headers; returns the response
    /// headers too.
    pub async fn op_with(
        &self,
        b: Binding,
        method: &str,
        params: Value,
        headers: &[(&str, &str)],
    ) -> (reqwest::header::HeaderMap, Result<Value, WireError>) {
        self.op_full(b, method, params, Some("1.0"), &[], headers).await
    }

    async fn op_full(
        &self,
        b: Binding,
        method: &str,
        params: Value,
        version: Option<&str>,
        url_query: &[(&str, &str)],
        headers: &[(&str, &str)],
    ) -> (reqwest::header::HeaderMap, Result<Value, WireError>) {
        let mut rb = match b {
            Binding::JsonRpc => {
                let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
                self.http.post(self.jsonrpc_url()).json(&body)
            }
            Binding::Rest => {
                let (m, path, query, body) = rest_request(method, &params);
                let rb = self.http.request(m, self.rest_url(&path)).query(&query);
                match body {
                    Some(body) => rb.json(&body),
                    None => rb,
                }
            }
        };
        rb = rb.query(url_query);
        if let Some(v) = version {
            rb = rb.header("A2A-Version", v);
        }
        if let Some(t) = &self.token {
            rb = rb.bearer_auth(t);
        }
        for (k, v) in headers {
            rb = rb.header(*k, *v);
        }
        let r = rb.send().await.expect("request");
        let http = r.status().as_u16();
        let response_headers = r.headers().clone();
        let ct = r.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
        let text = r.text().await.unwrap_or_default();
        let body: Value = serde_json::from_str(&text)
            .unwrap_or_else(|_| panic!("{b:?} {method}: not JSON ({http}): {text:?}"));
        super::annotations::check(&body);
        let outcome = match b {
            Binding::JsonRpc if body.get("error").is_none() && http == 200 => {
                assert_eq!(body["jsonrpc"], "2.0", "{body}");
                assert_eq!(body["id"], json!(1), "the response echoes the id: {body}");
                Ok(body.get("result").cloned().unwrap_or_else(|| panic!("no result: {body}")))
            }
            Binding::Rest if http == 200 => Ok(body),
            _ => Err(WireError::from_body(b, http, &ct, &body)),
        };
        (response_headers, outcome)
    }

    /// Runs `method` on `b` and returns its result; panics on an error.
    pub async fn ok(&self, b: Binding, method: &str, params: Value) -> Value {
        match self.op(b, method, params).await {
            Ok(v) => v,
            Err(e) => panic!("{b:?} {method} failed ({}): {}", e.http, e.error),
        }
    }

    /// Opens a stream (SendStreamingMessage / SubscribeToTask) on `b`.
    pub async fn stream(&self, b: Binding, method: &str, params: Value) -> Events {
        let sse = match b {
            Binding::JsonRpc => self.rpc_stream(method, params).await,
            Binding::Rest => {
                let (m, path, _, body) = rest_request(method, &params);
                self.rest_stream(m, &path, body).await
            }
        };
        Events { binding: b, sse }
    }

    /// A raw request: no `A2A-Version` unless given in `headers`; the
    /// daemon's bearer token if set.
    pub async fn raw(
        &self,
        method: reqwest::Method,
        url: &str,
        body: Option<Vec<u8>>,
        headers: &[(&str, &str)],
    ) -> Raw {
        let mut rb = self.http.request(method, url);
        if let Some(t) = &self.token {
            rb = rb.bearer_auth(t);
        }
        for (k, v) in headers {
            rb = rb.header(*k, *v);
        }
        if let Some(b) = body {
            rb = rb.header("content-type", "application/json").body(b);
        }
        let r = rb.send().await.expect("raw request");
        let status = r.status().as_u16();
        let headers = r.headers().clone();
        let text = r.text().await.unwrap_or_default();
        Raw { status, headers, text }
    }

    /// Polls GetTask until `done(task)` holds; panics after `secs` seconds.
    pub async fn wait_task(&self, b: Binding, id: &str, secs: u64, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
        loop {
            let t = self.ok(b, "GetTask", json!({"id": id})).await;
            if done(&t) {
                return t;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{b:?}: task {id} never reached the awaited state: {t}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }
}

/// `task.status.state`.
pub fn task_state(task: &Value) -> &str {
    task["status"]["state"].as_str().unwrap_or("")
}

impl Daemon {
    /// [`Daemon::stream`] with extra request headers; returns the response
    /// headers too.
    pub async fn stream_with(
        &self,
        b: Binding,
        method: &str,
        params: Value,
        headers: &[(&str, &str)],
    ) -> (reqwest::header::HeaderMap, Events) {
        let mut rb = match b {
            Binding::JsonRpc => {
                let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
                self.http.post(self.jsonrpc_url()).json(&body)
            }
            Binding::Rest => {
                let (m, path, _, body) = rest_request(method, &params);
                let rb = self.http.request(m, self.rest_url(&path));
                match body {
                    Some(body) => rb.json(&body),
                    None => rb,
                }
            }
        };
        rb = rb.header("A2A-Version", "1.0");
        if let Some(t) = &self.token {
            rb = rb.bearer_auth(t);
        }
        for (k, v) in headers {
            rb = rb.header(*k, *v);
        }
        let r = rb.send().await.expect("stream request");
        let h = r.headers().clone();
        (h, Events { binding: b, sse: SseStream::new(r) })
    }
}
