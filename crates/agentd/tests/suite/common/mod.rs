//! Test harness: runs a real daemon on `127.0.0.1:0` with its own data
//! directory and talks to it over HTTP as a client would. By default the
//! daemon runs in this process (`inprocess.rs`: `agentd::Daemon` on a
//! thread of its own); where the process is the subject (kill -9,
//! signals, its environment, its memory) it is the `agentd` binary
//! (`Daemon::process*`, `Daemon::start_with_env`).

pub mod annotations;
pub mod certs;
pub mod feed;
pub mod inprocess;
pub mod oidc;
pub mod otlp;
pub mod principals;
pub mod receiver;
pub mod scripted;
pub mod sse;
pub mod workflow;

use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use sse::SseStream;

pub struct Daemon {
    child: Option<Child>,
    in_process: Option<inprocess::InProcess>,
    pub url: String,
    pub data_dir: PathBuf,
    _tmp: Option<tempfile::TempDir>,
    pub log: Arc<Mutex<String>>,
    pub http: reqwest::Client,
    /// Bearer token sent with every request, if any.
    pub token: Option<String>,
}

impl Daemon {
    /// Starts a daemon in this process with a fresh data directory and
    /// extra `serve` args.
    pub fn start(args: &[&str]) -> Daemon {
        Daemon::in_fresh_dir(|dir| Daemon::start_in(dir, args))
    }

    /// A daemon `start` gives on a fresh data directory it owns.
    pub fn in_fresh_dir(start: impl FnOnce(&Path) -> Daemon) -> Daemon {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut d = start(tmp.path());
        d._tmp = Some(tmp);
        d
    }

    /// Starts a daemon in this process on an existing data directory
    /// (restart tests).
    pub fn start_in(dir: &Path, args: &[&str]) -> Daemon {
        let log = Arc::new(Mutex::new(String::new()));
        let (in_process, url) = inprocess::InProcess::start(dir, args, log.clone())
            .unwrap_or_else(|e| panic!("agentd did not start: {e}; log:\n{}", log.lock().unwrap()));
        Daemon {
            child: None,
            in_process: Some(in_process),
            url,
            data_dir: dir.to_path_buf(),
            _tmp: None,
            log,
            http: reqwest::Client::new(),
            token: None,
        }
    }

    /// `start` as an `agentd serve` process (kill -9, signals, its memory).
    pub fn process(args: &[&str]) -> Daemon {
        Daemon::in_fresh_dir(|dir| Daemon::process_in(dir, args))
    }

    /// `start_in` as an `agentd serve` process.
    pub fn process_in(dir: &Path, args: &[&str]) -> Daemon {
        Daemon::start_with_env(dir, args, &[])
    }

    /// An `agentd serve` process with extra environment variables.
    pub fn start_with_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Daemon {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentd"));
        cmd.arg("serve").arg("--listen").arg("127.0.0.1:0").arg("--data-dir").arg(dir);
        cmd.args(args);
        // `info` unless the test asks for another filter.
        cmd.env("AGENTD_LOG", "info");
        for (k, v) in env {
            cmd.env(k, v);
        }
        Daemon::spawn(cmd, dir)
    }

    /// An `agentd serve` process from a command the test made (its own
    /// working directory, say), until it logs where it listens;
    /// `data_dir` is where the test expects its data.
    pub fn spawn(mut cmd: Command, data_dir: &Path) -> Daemon {
        cmd.stdout(Stdio::null()).stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn agentd");
        let stderr = child.stderr.take().expect("stderr");
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let log2 = log.clone();
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(i) = line.find("listening on ") {
                    // Text or JSON lines (where a quote ends the message).
                    let url = line[i + 13..].split(|c: char| c.is_whitespace() || c == '"').next();
                    let url = url.unwrap_or("").to_owned();
                    if let Some(tx) = tx.take() {
                        let _ = tx.send(url);
                    }
                }
                log2.lock().unwrap().push_str(&(line + "\n"));
            }
        });
        let url = match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(u) => u,
            Err(_) => {
                let _ = child.kill();
                panic!("agentd did not start; log:\n{}", log.lock().unwrap());
            }
        };
        Daemon {
            child: Some(child),
            in_process: None,
            url,
            data_dir: data_dir.to_path_buf(),
            _tmp: None,
            log,
            http: reqwest::Client::new(),
            token: None,
        }
    }

    pub fn with_token(mut self, token: &str) -> Self {
        self.token = Some(token.to_owned());
        self
    }

    pub fn as_token(&self, token: Option<&str>) -> Daemon {
        Daemon {
            child: None,
            in_process: None,
            url: self.url.clone(),
            data_dir: self.data_dir.clone(),
            _tmp: None,
            log: self.log.clone(),
            http: self.http.clone(),
            token: token.map(str::to_owned),
        }
    }

    pub fn jsonrpc_url(&self) -> String {
        format!("{}/a2a/jsonrpc", self.url)
    }
    pub fn rest_url(&self, path: &str) -> String {
        format!("{}/a2a/rest{}", self.url, path)
    }

    fn auth(&self, rb: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let rb = rb.header("A2A-Version", "1.0");
        match &self.token {
            Some(t) => rb.bearer_auth(t),
            None => rb,
        }
    }

    /// A JSON-RPC call; returns the whole response object.
    pub async fn rpc(&self, method: &str, params: Value) -> Value {
        self.rpc_with(method, params, &[]).await.1
    }

    /// A JSON-RPC call with extra headers; returns (headers, response).
    pub async fn rpc_with(
        &self,
        method: &str,
        params: Value,
        headers: &[(&str, &str)],
    ) -> (reqwest::header::HeaderMap, Value) {
        let body = agentd_client::jsonrpc::request(1, method, &params);
        let mut rb = self.auth(self.http.post(self.jsonrpc_url())).json(&body);
        for (k, v) in headers {
            rb = rb.header(*k, *v);
        }
        let r = rb.send().await.expect("jsonrpc request");
        assert_eq!(r.status(), 200, "JSON-RPC answers with HTTP 200");
        let h = r.headers().clone();
        let v: Value = r.json().await.expect("jsonrpc json");
        annotations::check(&v);
        (h, v)
    }

    /// The `result` of a successful JSON-RPC call (panics on an error).
    pub async fn call(&self, method: &str, params: Value) -> Value {
        let r = self.rpc(method, params).await;
        assert!(r.get("error").is_none(), "{method} failed: {r}");
        r["result"].clone()
    }

    /// A REST call: (status, body as JSON or Null).
    pub async fn rest(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut rb = self.auth(self.http.request(method, self.rest_url(path)));
        if let Some(b) = body {
            rb = rb.json(&b);
        }
        let r = rb.send().await.expect("rest request");
        let status = r.status().as_u16();
        let text = r.text().await.unwrap_or_default();
        let v = serde_json::from_str(&text).unwrap_or(Value::Null);
        annotations::check(&v);
        (status, v)
    }

    /// Opens a JSON-RPC SSE stream (SendStreamingMessage / SubscribeToTask).
    pub async fn rpc_stream(&self, method: &str, params: Value) -> SseStream {
        let body = agentd_client::jsonrpc::request(7, method, &params);
        let r = self.auth(self.http.post(self.jsonrpc_url())).json(&body).send().await.expect("stream");
        SseStream::new(r)
    }

    /// Opens a REST SSE stream.
    pub async fn rest_stream(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> SseStream {
        let mut rb = self.auth(self.http.request(method, self.rest_url(path)));
        if let Some(b) = body {
            rb = rb.json(&b);
        }
        SseStream::new(rb.send().await.expect("stream"))
    }

    /// SIGKILL, no chance to flush anything.
    pub fn kill9(&mut self) {
        assert!(self.in_process.is_none(), "kill -9 needs a daemon process: start it with Daemon::process*");
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGTERM and wait for a clean exit (in process: the same stop, with
    /// the status a process would exit with).
    pub fn stop(&mut self) -> std::process::ExitStatus {
        use std::os::unix::process::ExitStatusExt;
        if let Some(mut d) = self.in_process.take() {
            return match d.stop() {
                Ok(()) => std::process::ExitStatus::from_raw(0),
                Err(e) => {
                    self.log.lock().unwrap().push_str(&format!("agentd: {e}\n"));
                    std::process::ExitStatus::from_raw(1 << 8)
                }
            };
        }
        let mut c = self.child.take().expect("running daemon");
        let _ = Command::new("kill").arg("-TERM").arg(c.id().to_string()).status();
        // Longer than the default shutdown grace (30 s): a daemon draining a
        // running turn stops on its own deadline, not the harness's.
        let deadline = Instant::now() + Duration::from_secs(45);
        loop {
            if let Ok(Some(s)) = c.try_wait() {
                return s;
            }
            if Instant::now() > deadline {
                let _ = c.kill();
                panic!("agentd did not stop on SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A user message with one text part.
pub fn user_msg(id: &str, text: &str) -> Value {
    json!({"messageId": id, "role": "ROLE_USER", "parts": [{"text": text}]})
}

/// SendMessage params for a text message, optionally continuing a task.
pub fn send_params(id: &str, text: &str, task_id: Option<&str>) -> Value {
    let mut m = user_msg(id, text);
    if let Some(t) = task_id {
        m["taskId"] = json!(t);
    }
    json!({"message": m})
}

/// Asserts a JSON-RPC error with `code` and ErrorInfo `reason` (if given).
pub fn assert_rpc_error(resp: &Value, code: i64, reason: Option<&str>) {
    assert_eq!(resp["error"]["code"], json!(code), "expected error {code}, got {resp}");
    assert!(resp.get("result").is_none(), "an error response has no result: {resp}");
    let data = resp["error"]["data"].as_array();
    if let Some(reason) = reason {
        let data = data.unwrap_or_else(|| panic!("error.data must be an array: {resp}"));
        assert!(
            data.iter().any(|d| d["@type"] == "type.googleapis.com/google.rpc.ErrorInfo"
                && d["reason"] == reason
                && d["domain"] == "a2a-protocol.org"),
            "expected ErrorInfo reason {reason}: {resp}"
        );
    }
}

/// Asserts a REST error body with `status` and ErrorInfo `reason`.
pub fn assert_rest_error(status: u16, body: &Value, want_status: u16, reason: Option<&str>) {
    assert_eq!(status, want_status, "HTTP status; body {body}");
    assert_eq!(body["error"]["code"], json!(want_status), "error.code is the HTTP status: {body}");
    assert!(body["error"]["status"].is_string(), "error.status: {body}");
    assert!(body["error"]["message"].is_string(), "error.message: {body}");
    if let Some(reason) = reason {
        assert!(
            body["error"]["details"].as_array().is_some_and(|d| d.iter().any(|d| d["reason"] == reason)),
            "expected ErrorInfo reason {reason}: {body}"
        );
    }
}

// ---- Helpers for the stream, durability, push and auth tests ----

/// A unique suffix for message ids (the tck profile keys on prefixes).
pub fn uniq(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("{prefix}-{}-{nanos}", N.fetch_add(1, Ordering::Relaxed))
}

/// Writes a YAML config file into `dir` and returns its path.
pub fn write_config(dir: &Path, yaml: &str) -> PathBuf {
    let path = dir.join("agentd-test.yaml");
    std::fs::write(&path, yaml).expect("write config file");
    path
}

/// The payload of a stream frame: the `result` of a JSON-RPC frame (checked
/// to be a response to request id 7, as `rpc_stream` sends) or a bare REST
/// StreamResponse.
pub fn payload(frame: &Value, jsonrpc: bool) -> Value {
    if jsonrpc {
        assert_eq!(frame["jsonrpc"], "2.0", "a JSON-RPC frame is a JSON-RPC response: {frame}");
        assert_eq!(frame["id"], json!(7), "a JSON-RPC frame carries the request id: {frame}");
        assert!(frame.get("error").is_none(), "unexpected error frame: {frame}");
        frame["result"].clone()
    } else {
        assert!(frame.get("jsonrpc").is_none(), "a REST frame is a bare StreamResponse: {frame}");
        frame.clone()
    }
}

/// `task`, `statusUpdate`, `artifactUpdate` or `message`: the one member
/// of a StreamResponse (panics when it has not exactly one).
pub fn kind(ev: &Value) -> &str {
    let o = ev.as_object().unwrap_or_else(|| panic!("a StreamResponse is an object: {ev}"));
    assert_eq!(o.len(), 1, "a StreamResponse has exactly one member: {ev}");
    o.keys().next().map(String::as_str).unwrap_or_default()
}

/// The task state a StreamResponse carries (`task` or `statusUpdate`).
pub fn state(ev: &Value) -> Option<&str> {
    ev.get("task").or_else(|| ev.get("statusUpdate")).and_then(|v| v["status"]["state"].as_str())
}

/// Sends `text` with SendStreamingMessage and reads the stream to its end;
/// asserts that the turn completed with the streamed text as its answer,
/// and returns that text.
pub async fn streamed_reply(d: &Daemon, text: &str) -> String {
    let mut st = d.rpc_stream("SendStreamingMessage", send_params("m1", text, None)).await;
    let events = st.collect().await;
    let streamed: String = events
        .iter()
        .filter_map(|e| e["result"].get("artifactUpdate"))
        .map(|a| a["artifact"]["parts"][0]["text"].as_str().unwrap_or("").to_owned())
        .collect();
    let last = &events.last().unwrap()["result"]["statusUpdate"]["status"];
    assert_eq!(last["state"], "TASK_STATE_COMPLETED", "{events:?}");
    assert_eq!(last["message"]["parts"][0]["text"], streamed.as_str());
    streamed
}

/// Polls GetTask until the task is in `want` (panics after `within`).
pub async fn wait_for_state(d: &Daemon, task_id: &str, want: &str, within: Duration) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let t = d.call("GetTask", json!({"id": task_id})).await;
        if t["status"]["state"] == want {
            return t;
        }
        assert!(Instant::now() < deadline, "task {task_id} never reached {want}; last: {t}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Reads a raw HTTP response body to its end: (text, ended cleanly). A
/// body cut off (connection reset, truncated chunked encoding) is unclean.
/// `first_event` is told when the first complete SSE event has arrived
/// (the stream is open and serving).
pub async fn read_to_end(
    r: reqwest::Response,
    within: Duration,
    first_event: tokio::sync::oneshot::Sender<()>,
) -> (String, bool) {
    use futures::StreamExt;
    let mut first_event = Some(first_event);
    let mut body = r.bytes_stream();
    let mut text = String::new();
    let read = async {
        while let Some(chunk) = body.next().await {
            match chunk {
                Ok(c) => text.push_str(&String::from_utf8_lossy(&c)),
                Err(_) => return false,
            }
            if text.contains("data:")
                && text.contains("\n\n")
                && let Some(tx) = first_event.take()
            {
                let _ = tx.send(());
            }
        }
        true
    };
    let clean = tokio::time::timeout(within, read).await.expect("body did not end in time");
    (text, clean)
}

impl Daemon {
    /// The PID of the running daemon process.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("a daemon process: start it with Daemon::process*").id()
    }
}

// Running one operation on either binding (operations, errors and
// visibility tests).
pub mod binding;
pub use binding::*;

/// The `tool` role messages of a recorded model request, in order: what
/// the model was told of its tool calls.
pub fn tool_results(request: &serde_json::Value) -> Vec<String> {
    let messages = request["messages"].as_array().expect("messages");
    let tools = messages.iter().filter(|m| m["role"] == "tool");
    tools.map(|m| m["content"].as_str().unwrap_or_default().to_owned()).collect()
}
