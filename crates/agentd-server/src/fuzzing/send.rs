//! The `send_message` fuzz target's check (`fuzz/`), shared with the stable
//! regression test (`tests/suite/fuzz_regressions.rs`).
//!
//! An input is a [`Script`]: a few SendMessage (or SendStreamingMessage)
//! requests, each from one caller over one binding, sent through the real
//! router ([`crate::app`]) to a real engine. A later step may name the task
//! or context an earlier step was answered with (`$task:N`, `$context:N`),
//! so continuing, steering and cross-principal attempts are reached too.
//!
//! The properties, checked on every answer:
//! - nothing answers 5xx, and no request panics the daemon (a panic in a
//!   spawned run aborts a fuzzer; the stable test counts them);
//! - a missing or wrong token is 401 with a challenge, and only that;
//! - every refusal is well formed for its binding: a known code (never
//!   Internal), a message, typed details, and InvalidParams names a field;
//! - every result decodes as the wire type it claims to be;
//! - a non-operator is never answered with a task, or a context, that a
//!   different principal started;
//! - the message that started a task is stored as sent: its first history
//!   entry, read back through GetTask, has the same parts, metadata, role,
//!   extensions and references.

use crate::{AppState, Authenticator, CardConfig, CardService, ExtensionRegistry, ServerConfig, TokenEntry};
use agentd_client::sse::SseDecoder;
use agentd_core::{Engine, Principal, PrincipalRole};
use agentd_proto::jsonrpc::methods;
use agentd_proto::{ErrorKind, Message, SendMessageRequest, SendMessageResponse, StreamResponse, Task};
use axum::Router;
use axum::body::Body;
use http::{HeaderValue, Request, StatusCode, header};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// Who sends a step: one of three configured tokens, none, or a wrong one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Caller {
    Alice,
    Bob,
    Operator,
    Anonymous,
    WrongToken,
}

impl Caller {
    fn authorization(self) -> Option<&'static str> {
        match self {
            Caller::Alice => Some("Bearer alice-token"),
            Caller::Bob => Some("Bearer bob-token"),
            Caller::Operator => Some("Bearer operator-token"),
            Caller::Anonymous => None,
            Caller::WrongToken => Some("Bearer not-a-token"),
        }
    }

    /// The principal the token maps to; `None` when it maps to none.
    fn principal(self) -> Option<&'static str> {
        match self {
            Caller::Alice => Some("user:alice"),
            Caller::Bob => Some("user:bob"),
            Caller::Operator => Some("operator:ops"),
            Caller::Anonymous | Caller::WrongToken => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Binding {
    JsonRpc,
    Rest,
}

/// One request of a [`Script`].
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Step {
    pub caller: Caller,
    pub binding: Binding,
    /// SendStreamingMessage (SSE) instead of SendMessage.
    #[serde(default)]
    pub streaming: bool,
    /// `A2A-Extensions` header values, one header line each.
    #[serde(default)]
    pub extensions: Vec<String>,
    /// The JSON-RPC request id (REST has none).
    #[serde(default)]
    pub id: Value,
    /// The request's params (JSON-RPC) or body (REST). A string `$task:N`
    /// or `$context:N` anywhere in it stands for the task or context id
    /// step N was answered with (left as it is when there was none).
    pub params: Value,
}

/// A `send_message` input: the steps, sent in order.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    pub steps: Vec<Step>,
}

/// The router over an engine, with the tokens [`Caller`] presents.
pub struct SendHarness {
    router: Router,
}

impl SendHarness {
    /// Serves `engine` as `agentd serve` would, with three bearer tokens
    /// (`user:alice`, `user:bob`, `operator:ops`) and default limits.
    pub fn new(engine: Engine) -> Self {
        let user = |id: &str| Principal::new(id, PrincipalRole::User);
        let auth = Authenticator::new(vec![
            TokenEntry::from_secret("alice-token", user("user:alice")),
            TokenEntry::from_secret("bob-token", user("user:bob")),
            TokenEntry::from_secret(
                "operator-token",
                Principal::new("operator:ops", PrincipalRole::Operator),
            ),
        ]);
        let extensions = ExtensionRegistry::new(crate::ext_docs::declared());
        let card = CardService::new(
            CardConfig {
                name: "agentd".into(),
                description: "fuzzing".into(),
                version: "0".into(),
                base_url: "http://127.0.0.1:1".into(),
                streaming: true,
                push_notifications: true,
                security: crate::card::CardSecurity { bearer: true, ..Default::default() },
                input_modes: vec!["text/plain".into()],
                output_modes: vec!["text/plain".into()],
                skills: vec![crate::card::chat_skill()],
                provider: None,
                documentation_url: None,
                max_age_secs: 0,
            },
            &extensions,
        );
        let config = Arc::new(ServerConfig::default());
        let state = AppState {
            engine,
            auth: Arc::new(auth),
            card: Arc::new(card),
            extensions: Arc::new(extensions),
            admission: Arc::new(crate::admission::Admission::new(&config)),
            config,
            shutdown: CancellationToken::new(),
        };
        Self { router: crate::app(state) }
    }

    /// Runs `script`; panics, naming the script, when a property fails.
    pub async fn run(&self, script: &Script) {
        if let Err(why) = self.check(script).await {
            panic!(
                "send_message: {why}\nscript (a regression input as it stands): {}",
                serde_json::to_string(script).unwrap_or_default()
            );
        }
    }

    async fn check(&self, script: &Script) -> Result<(), String> {
        let mut seen = Seen::default();
        for (i, step) in script.steps.iter().enumerate() {
            let params = seen.substitute(&step.params);
            let answer = self.send(step, &params).await.map_err(|e| format!("step {i}: {e}"))?;
            self.judge(step, &params, answer, &mut seen).await.map_err(|e| format!("step {i}: {e}"))?;
        }
        Ok(())
    }

    /// Sends one step and reads the whole answer (a stream to its end).
    async fn send(&self, step: &Step, params: &Value) -> Result<Answer, String> {
        let (uri, body) = match (step.binding, step.streaming) {
            (Binding::JsonRpc, streaming) => {
                let method = if streaming { "SendStreamingMessage" } else { "SendMessage" };
                let body = agentd_client::jsonrpc::request(step.id.clone(), method, params);
                (crate::card::JSONRPC_PATH.to_owned(), body)
            }
            (Binding::Rest, false) => (format!("{}/message:send", crate::card::REST_PATH), params.clone()),
            (Binding::Rest, true) => (format!("{}/message:stream", crate::card::REST_PATH), params.clone()),
        };
        let mut req = Request::post(uri)
            .header(header::CONTENT_TYPE, "application/json")
            .header("A2A-Version", "1.0")
            .body(Body::from(serde_json::to_vec(&body).map_err(|e| e.to_string())?))
            .map_err(|e| e.to_string())?;
        let headers = req.headers_mut();
        if let Some(a) = step.caller.authorization() {
            headers.insert(header::AUTHORIZATION, HeaderValue::from_static(a));
        }
        for value in &step.extensions {
            if let Ok(v) = HeaderValue::from_str(value) {
                headers.append("A2A-Extensions", v);
            }
        }
        let resp = self.router.clone().oneshot(req).await.unwrap_or_else(|e| match e {});
        let status = resp.status();
        let content_type =
            resp.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
        let challenge = resp.headers().contains_key(header::WWW_AUTHENTICATE);
        let body = axum::body::to_bytes(resp.into_body(), usize::MAX).await.map_err(|e| e.to_string())?;
        Ok(Answer { status, content_type, challenge, body: body.to_vec() })
    }

    /// Checks one answer and records the task and context it names.
    async fn judge(
        &self,
        step: &Step,
        params: &Value,
        answer: Answer,
        seen: &mut Seen,
    ) -> Result<(), String> {
        let text = String::from_utf8_lossy(&answer.body).into_owned();
        if answer.status.is_server_error() {
            return Err(format!("HTTP {}: {text}", answer.status));
        }
        let Some(principal) = step.caller.principal() else {
            if answer.status != StatusCode::UNAUTHORIZED || !answer.challenge {
                return Err(format!("an unauthenticated caller got HTTP {}: {text}", answer.status));
            }
            seen.steps.push(Answered::default());
            return Ok(());
        };
        if answer.status == StatusCode::UNAUTHORIZED {
            return Err(format!("a valid token was refused: {text}"));
        }
        let results = if answer.content_type.starts_with("text/event-stream") {
            if !step.streaming {
                return Err("a unary method answered with a stream".into());
            }
            sse_frames(&text)?
                .iter()
                .map(|frame| payload(step, answer.status, frame, true))
                .collect::<Result<Vec<_>, _>>()?
        } else {
            let value: Value = serde_json::from_slice(&answer.body)
                .map_err(|e| format!("the answer is not JSON ({e}): {text}"))?;
            vec![payload(step, answer.status, &value, false)?]
        };
        let mut answered = Answered::default();
        for result in results.into_iter().flatten() {
            let (task_id, context_id) = if step.streaming {
                let ev: StreamResponse = serde_json::from_value(result.clone())
                    .map_err(|e| format!("not a StreamResponse ({e}): {result}"))?;
                stream_ids(&ev)
            } else {
                let r: SendMessageResponse = serde_json::from_value(result.clone())
                    .map_err(|e| format!("not a SendMessageResponse ({e}): {result}"))?;
                match r {
                    SendMessageResponse::Task(t) => (t.id, t.context_id),
                    SendMessageResponse::Message(m) => (m.task_id, m.context_id),
                }
            };
            if answered.task.is_empty() {
                answered.task = task_id;
            }
            if answered.context.is_empty() {
                answered.context = context_id;
            }
        }
        if seen.claim(principal, &answered)? {
            self.check_stored_input(params, &answered.task).await?;
        }
        seen.steps.push(answered);
        Ok(())
    }

    /// The first history entry of a task a step started equals the message
    /// the step sent (as the wire decodes it).
    async fn check_stored_input(&self, params: &Value, task_id: &str) -> Result<(), String> {
        let Ok(sent) = agentd_proto::validate::decode::<SendMessageRequest>(params.clone()) else {
            return Err(format!("task {task_id:?} was started by params that do not decode: {params}"));
        };
        let Some(sent) = sent.message else { return Err("a task was started without a message".into()) };
        if is_command(&sent) {
            return Ok(()); // the task a command starts has its own input
        }
        let body = agentd_client::jsonrpc::request(1, methods::GET_TASK, &json!({"id": task_id}));
        let req = Request::post(crate::card::JSONRPC_PATH)
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::AUTHORIZATION, Caller::Operator.authorization().unwrap_or_default())
            .body(Body::from(body.to_string()))
            .map_err(|e| e.to_string())?;
        let resp = self.router.clone().oneshot(req).await.unwrap_or_else(|e| match e {});
        let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX).await.map_err(|e| e.to_string())?;
        let value: Value = serde_json::from_slice(&bytes).map_err(|e| format!("GetTask answer: {e}"))?;
        let task: Task = serde_json::from_value(value["result"].clone())
            .map_err(|e| format!("GetTask {task_id:?} of a task just started: {e}: {value}"))?;
        let first = task.history.as_ref().and_then(|h| h.first()).ok_or("the stored task has no history")?;
        let same = first.parts == sent.parts
            && first.metadata == sent.metadata
            && first.role == sent.role
            && first.extensions == sent.extensions
            && first.reference_task_ids == sent.reference_task_ids
            && (sent.message_id.is_empty() || first.message_id == sent.message_id);
        if !same {
            return Err(format!(
                "the stored input differs from the message sent:\nsent   {}\nstored {}",
                serde_json::to_string(&sent).unwrap_or_default(),
                serde_json::to_string(first).unwrap_or_default()
            ));
        }
        Ok(())
    }
}

struct Answer {
    status: StatusCode,
    content_type: String,
    challenge: bool,
    body: Vec<u8>,
}

/// The ids one step was answered with.
#[derive(Default)]
struct Answered {
    task: String,
    context: String,
}

/// What a script has seen so far: each step's answer, and who started
/// each task and context.
#[derive(Default)]
struct Seen {
    steps: Vec<Answered>,
    task_owner: HashMap<String, &'static str>,
    context_owner: HashMap<String, &'static str>,
}

impl Seen {
    /// `$task:N` and `$context:N` replaced, at any depth.
    fn substitute(&self, v: &Value) -> Value {
        match v {
            Value::String(s) => {
                let pick = |prefix: &str, f: fn(&Answered) -> &String| {
                    let n: usize = s.strip_prefix(prefix)?.parse().ok()?;
                    self.steps.get(n).map(f).filter(|id| !id.is_empty()).cloned()
                };
                let id = pick("$task:", |a| &a.task).or_else(|| pick("$context:", |a| &a.context));
                Value::String(id.unwrap_or_else(|| s.clone()))
            }
            Value::Array(items) => Value::Array(items.iter().map(|i| self.substitute(i)).collect()),
            Value::Object(m) => {
                Value::Object(m.iter().map(|(k, v)| (k.clone(), self.substitute(v))).collect())
            }
            other => other.clone(),
        }
    }

    /// Records who started the task and context of an answer, and fails
    /// when a non-operator was answered with another principal's. `true`
    /// when the task is new.
    fn claim(&mut self, principal: &'static str, answered: &Answered) -> Result<bool, String> {
        let operator = principal.starts_with("operator:");
        let mut new_task = false;
        // A direct reply (no task) only echoes the contextId it was sent.
        let context = if answered.task.is_empty() { "" } else { answered.context.as_str() };
        for (id, owners, what) in [
            (answered.task.as_str(), &mut self.task_owner, "task"),
            (context, &mut self.context_owner, "context"),
        ] {
            if id.is_empty() {
                continue;
            }
            match owners.get(id) {
                Some(owner) if *owner != principal && !operator => {
                    return Err(format!("{principal} was answered with {what} {id:?} that {owner} started"));
                }
                Some(_) => {}
                None => {
                    owners.insert(id.to_owned(), principal);
                    new_task |= what == "task";
                }
            }
        }
        Ok(new_task)
    }
}

/// The member of a DataPart that makes it a command (docs/commands.md).
const COMMAND_KEY: &str = "agentd";

/// A task started by a command has no history entry of the command message.
fn is_command(msg: &Message) -> bool {
    msg.parts.iter().any(|p| {
        matches!(&p.content, agentd_proto::PartContent::Data(d) if matches!(&**d, Value::Object(o) if o.contains_key(COMMAND_KEY)))
    })
}

/// The task and context ids a stream event names.
fn stream_ids(ev: &StreamResponse) -> (String, String) {
    match ev {
        StreamResponse::Task(t) => (t.id.clone(), t.context_id.clone()),
        StreamResponse::Message(m) => (m.task_id.clone(), m.context_id.clone()),
        StreamResponse::StatusUpdate(u) => (u.task_id.clone(), u.context_id.clone()),
        StreamResponse::ArtifactUpdate(u) => (u.task_id.clone(), u.context_id.clone()),
    }
}

/// The JSON documents of an SSE body (comments and event names skipped).
fn sse_frames(text: &str) -> Result<Vec<Value>, String> {
    let mut decoder = SseDecoder::default();
    let mut events = decoder.push(text.as_bytes()).map_err(|e| e.to_string())?;
    events.extend(decoder.finish().map_err(|e| e.to_string())?);
    let mut out = Vec::new();
    for ev in events {
        let frame = serde_json::from_str(&ev.data)
            .map_err(|e| format!("an SSE frame is not JSON ({e}): {}", ev.data))?;
        out.push(frame);
    }
    if out.is_empty() {
        return Err("a stream ended without a single event".into());
    }
    Ok(out)
}

/// One answer document: `Some(result)`, or `None` for a well-formed error.
/// `in_stream`: the document is an SSE frame (an error there is framed
/// inside a 200 stream).
fn payload(step: &Step, status: StatusCode, doc: &Value, in_stream: bool) -> Result<Option<Value>, String> {
    match step.binding {
        Binding::JsonRpc => {
            if status != StatusCode::OK {
                return Err(format!("JSON-RPC answered HTTP {status}: {doc}"));
            }
            if doc["jsonrpc"] != "2.0" {
                return Err(format!("not a JSON-RPC 2.0 response: {doc}"));
            }
            let valid_id = matches!(step.id, Value::String(_) | Value::Number(_) | Value::Null);
            // A body refused by the JSON bounds is refused before its
            // envelope is read, so its id was never detected: null, as
            // JSON-RPC 2.0 says for an id that could not be detected.
            let refused_unread = doc["id"].is_null()
                && doc["error"]["data"].as_array().is_some_and(|d| {
                    d.iter().any(|e| {
                        e["metadata"]["limit"].as_str().is_some_and(|l| l.starts_with("server.max_json"))
                    })
                });
            let id_ok = doc["id"] == step.id || (!valid_id && doc["id"].is_null()) || refused_unread;
            if !id_ok {
                return Err(format!("the response id is not the request's {}: {doc}", step.id));
            }
            match (doc.get("result"), doc.get("error")) {
                (Some(r), None) => Ok(Some(r.clone())),
                (None, Some(e)) => {
                    let code = e["code"].as_i64().ok_or_else(|| format!("an error without a code: {doc}"))?;
                    let kinds: Vec<ErrorKind> = ErrorKind::ALL
                        .iter()
                        .copied()
                        .filter(|k| i64::from(k.codes().jsonrpc) == code)
                        .collect();
                    check_kinds(&kinds, code, doc)?;
                    let empty = Value::Array(Vec::new());
                    let details = e.get("data").unwrap_or(&empty);
                    check_details(e.get("message"), details, code == -32602, doc).map(|()| None)
                }
                _ => Err(format!("not exactly one of result and error: {doc}")),
            }
        }
        Binding::Rest => match doc.get("error") {
            Some(e) if doc.as_object().is_some_and(|o| o.len() == 1) => {
                let code = e["code"].as_i64().ok_or_else(|| format!("an error without a code: {doc}"))?;
                if !in_stream && code != i64::from(status.as_u16()) {
                    return Err(format!("error.code {code} is not the HTTP status {status}: {doc}"));
                }
                let grpc =
                    e["status"].as_str().ok_or_else(|| format!("error.status is not a string: {doc}"))?;
                let kinds: Vec<ErrorKind> = ErrorKind::ALL
                    .iter()
                    .copied()
                    .filter(|k| i64::from(k.codes().http) == code && k.codes().grpc == grpc)
                    .collect();
                check_kinds(&kinds, code, doc)?;
                let details = e.get("details").unwrap_or(&Value::Null);
                let invalid_params =
                    details.as_array().is_some_and(|ds| ds.iter().any(|d| d["reason"] == "INVALID_PARAMS"));
                check_details(e.get("message"), details, invalid_params, doc).map(|()| None)
            }
            _ if status.is_success() => Ok(Some(doc.clone())),
            _ => Err(format!("HTTP {status} without an error body: {doc}")),
        },
    }
}

/// The error is a row of the error table, and not one a client cannot
/// have caused.
fn check_kinds(kinds: &[ErrorKind], code: i64, doc: &Value) -> Result<(), String> {
    let internal = [ErrorKind::Internal, ErrorKind::InvalidAgentResponse, ErrorKind::Unavailable];
    if kinds.is_empty() {
        return Err(format!("error code {code} is in no row of the error table: {doc}"));
    }
    if kinds.iter().all(|k| internal.contains(k)) {
        return Err(format!("a request was answered with an internal error: {doc}"));
    }
    Ok(())
}

/// A non-empty message; details are typed objects; an invalid-params error
/// names at least one field, and no violation names none.
fn check_details(
    message: Option<&Value>,
    details: &Value,
    must_name_field: bool,
    doc: &Value,
) -> Result<(), String> {
    if message.and_then(Value::as_str).is_none_or(str::is_empty) {
        return Err(format!("an error without a message: {doc}"));
    }
    let details = details.as_array().ok_or_else(|| format!("details are not a list: {doc}"))?;
    if !details.iter().all(|d| d["@type"].is_string()) {
        return Err(format!("a detail without @type: {doc}"));
    }
    let named: Vec<&Value> = details
        .iter()
        .filter(|d| d["@type"] == "type.googleapis.com/google.rpc.BadRequest")
        .flat_map(|d| d["fieldViolations"].as_array().into_iter().flatten())
        .collect();
    if named.iter().any(|v| v["field"].as_str().is_none_or(str::is_empty)) {
        return Err(format!("a field violation names no field: {doc}"));
    }
    if must_name_field && named.is_empty() {
        return Err(format!("an invalid-params error names no field: {doc}"));
    }
    Ok(())
}
