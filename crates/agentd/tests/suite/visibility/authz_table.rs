//! The authorization table: every operation on every binding (JSON-RPC,
//! REST, gRPC), tried by every relation a principal can have to a task, with
//! the outcome asserted from one table ([`TABLE`]). The task is alice's
//! workflow run waiting at a human gate addressed to bob, so every relation
//! exists at once: the owner (alice), the gate's answerer (bob), another
//! principal (bot), an operator (ops) and an anonymous caller. Each case
//! gets a fresh task; a refused call must leave it, its push configs and its
//! conversation as they were, and no answer may carry a webhook secret its
//! caller may not read. Paths that reach the engine another way (inline
//! push configs, the reminders' SendMessage-metadata path, commands) are
//! rows of their own, and [`every_method_has_a_row`] fails when a method
//! has none.

use crate::common::receiver::Receiver;
use crate::common::scripted::{Scripted, command};
use crate::common::workflow::{REVIEW, daemon_with, doc, run};
use crate::common::*;
use agentd_proto::ext::{events, reminders};
use agentd_proto::jsonrpc::methods;
use agentd_server::grpc::pb::{self, a2a_service_client::A2aServiceClient};
use serde_json::{Value, json};
use tonic::transport::Channel;
use tonic_types::StatusExt;

const OWNER_SECRET: &str = "owner-webhook-secret";
const OPS_SECRET: &str = "ops-webhook-secret";
const INLINE_ID: &str = "configuration.taskPushNotificationConfig.id";

#[derive(Clone, Copy, Debug, PartialEq)]
enum Who {
    Owner,
    Answerer,
    Other,
    Operator,
    Anonymous,
}

const WHO: [Who; 5] = [Who::Owner, Who::Answerer, Who::Other, Who::Operator, Who::Anonymous];

#[derive(Clone, Copy, Debug, PartialEq)]
enum Wire {
    JsonRpc,
    Rest,
    Grpc,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Expect {
    /// Succeeds (and a listing shows the task or the owner's config).
    Ok,
    /// Succeeds without showing or changing anything of the task: a
    /// listing without it, a delete of a config that is not the caller's.
    Nothing,
    NotFound,
    Denied,
    /// InvalidParams naming this field (its JSON name; gRPC's is snake_case).
    Invalid(&'static str),
    Unauthenticated,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    GetTask,
    ListTasks,
    CancelTask,
    Answer,
    AnswerStreaming,
    AnswerWithWebhook,
    AnswerTakingOperatorsWebhook,
    AnswerTakingOwnersWebhook,
    Subscribe,
    CreateConfig,
    CreateConfigTakingOperators,
    GetConfig,
    ListConfigs,
    ListConfigsRcName,
    DeleteConfig,
    InjectReminder,
    ReminderInMetadata,
    JoinContext,
    WorkflowStatus,
    WorkflowCancel,
}

use Expect::{Denied, Invalid, NotFound, Nothing, Ok as Yes, Unauthenticated as Unauth};

/// The one table: what each relation gets from each operation.
#[rustfmt::skip]
const TABLE: &[(Op, [Expect; 5])] = &[
    //                                   owner               answerer         other            operator  anonymous
    (Op::GetTask,                       [Yes,                Yes,             NotFound,        Yes,      Unauth]),
    (Op::ListTasks,                     [Yes,                Nothing,         Nothing,         Yes,      Unauth]),
    (Op::CancelTask,                    [Yes,                Denied,          NotFound,        Yes,      Unauth]),
    (Op::Answer,                        [Yes,                Yes,             NotFound,        Yes,      Unauth]),
    (Op::AnswerStreaming,               [Yes,                Yes,             NotFound,        Yes,      Unauth]),
    (Op::AnswerWithWebhook,             [Yes,                Denied,          NotFound,        Yes,      Unauth]),
    (Op::AnswerTakingOperatorsWebhook,  [Invalid(INLINE_ID), Denied,          NotFound,        Yes,      Unauth]),
    (Op::AnswerTakingOwnersWebhook,     [Yes,                Denied,          NotFound,        Yes,      Unauth]),
    (Op::Subscribe,                     [Yes,                Denied,          NotFound,        Yes,      Unauth]),
    (Op::CreateConfig,                  [Yes,                Denied,          NotFound,        Yes,      Unauth]),
    (Op::CreateConfigTakingOperators,   [Invalid("id"),      Denied,          NotFound,        Yes,      Unauth]),
    (Op::GetConfig,                     [Yes,                NotFound,        NotFound,        Yes,      Unauth]),
    (Op::ListConfigs,                   [Yes,                Nothing,         NotFound,        Yes,      Unauth]),
    (Op::ListConfigsRcName,             [Yes,                Nothing,         NotFound,        Yes,      Unauth]),
    (Op::DeleteConfig,                  [Yes,                Nothing,         NotFound,        Yes,      Unauth]),
    (Op::InjectReminder,                [Yes,                NotFound,        NotFound,        Yes,      Unauth]),
    (Op::ReminderInMetadata,            [Yes,                NotFound,        NotFound,        Yes,      Unauth]),
    (Op::JoinContext,                   [Yes,                Invalid(CTX),    Invalid(CTX),    Yes,      Unauth]),
    (Op::WorkflowStatus,                [Yes,                Denied,          NotFound,        Yes,      Unauth]),
    (Op::WorkflowCancel,                [Yes,                Denied,          NotFound,        Yes,      Unauth]),
];

const CTX: &str = "message.contextId";

/// Methods that are not about one task: the card, and the events feed
/// (filtered by the same visibility, tested in `events.rs`).
const NOT_ABOUT_A_TASK: &[&str] = &[methods::GET_EXTENDED_CARD, events::METHOD];

/// The method each operation calls.
fn method(op: Op) -> &'static str {
    match op {
        Op::GetTask => methods::GET_TASK,
        Op::ListTasks => methods::LIST_TASKS,
        Op::CancelTask => methods::CANCEL_TASK,
        Op::AnswerStreaming => methods::SEND_STREAMING_MESSAGE,
        Op::Answer
        | Op::AnswerWithWebhook
        | Op::AnswerTakingOperatorsWebhook
        | Op::AnswerTakingOwnersWebhook
        | Op::ReminderInMetadata
        | Op::JoinContext
        | Op::WorkflowStatus
        | Op::WorkflowCancel => methods::SEND_MESSAGE,
        Op::Subscribe => methods::SUBSCRIBE_TO_TASK,
        Op::CreateConfig | Op::CreateConfigTakingOperators => methods::CREATE_PUSH_CONFIG,
        Op::GetConfig => methods::GET_PUSH_CONFIG,
        Op::ListConfigs => methods::LIST_PUSH_CONFIGS,
        Op::ListConfigsRcName => methods::LIST_PUSH_CONFIGS_RC,
        Op::DeleteConfig => methods::DELETE_PUSH_CONFIG,
        Op::InjectReminder => reminders::METHOD,
    }
}

/// Whether `op` exists on `wire`: gRPC has the proto's operations only
/// (reminders reach it through SendMessage metadata), and REST and gRPC
/// have one name for listing configs.
fn exists(op: Op, wire: Wire) -> bool {
    match op {
        Op::InjectReminder => wire != Wire::Grpc,
        Op::ListConfigsRcName => wire == Wire::JsonRpc,
        _ => true,
    }
}

#[test]
fn every_method_has_a_row() {
    let mut all: Vec<&str> = methods::ALL.to_vec();
    all.extend([reminders::METHOD, events::METHOD]);
    for m in all {
        let covered = TABLE.iter().any(|(op, _)| method(*op) == m) || NOT_ABOUT_A_TASK.contains(&m);
        assert!(covered, "method {m} has no row in the authorization table");
    }
}

/// The task every case starts from, and what must stay as it is.
struct Subject {
    task: String,
    context: String,
    seen: Seen,
}

/// What a refused call must not change: the task's state and history
/// length, the number of tasks in its conversation, and its push configs.
#[derive(Debug, PartialEq)]
struct Seen {
    state: String,
    history: usize,
    turns: Value,
    configs: Value,
}

struct Fixture {
    s: Scripted,
    hook: String,
    grpc: Channel,
    _receiver: Receiver,
    _dir: tempfile::TempDir,
}

impl Fixture {
    fn caller(&self, who: Who) -> Daemon {
        match who {
            Who::Owner => self.s.alice(),
            Who::Answerer => self.s.bob(),
            Who::Other => self.s.bot(),
            Who::Operator => self.s.ops(),
            Who::Anonymous => self.s.d.as_token(None),
        }
    }

    /// A fresh run of alice's waiting at the gate addressed to bob, with a
    /// webhook of alice's and one of the operator's.
    async fn subject(&self) -> Subject {
        let (alice, ops) = (self.s.alice(), self.s.ops());
        let t = run(&alice, "review", json!({"what": "v1"})).await;
        assert_eq!(task_state(&t), "TASK_STATE_INPUT_REQUIRED", "{t}");
        let task = t["id"].as_str().expect("id").to_owned();
        for (d, id, secret) in [(&alice, "owner-hook", OWNER_SECRET), (&ops, "ops-hook", OPS_SECRET)] {
            let cfg = json!({"taskId": task, "id": id, "url": self.hook,
                             "authentication": {"scheme": "Bearer", "credentials": secret}});
            d.ok(Binding::JsonRpc, methods::CREATE_PUSH_CONFIG, cfg).await;
        }
        let context = t["contextId"].as_str().expect("contextId").to_owned();
        let seen = self.observe(&task, &context).await;
        assert_eq!(seen.configs.as_array().map(Vec::len), Some(2), "{seen:?}");
        Subject { task, context, seen }
    }

    async fn observe(&self, task: &str, context: &str) -> Seen {
        let (alice, ops) = (self.s.alice(), self.s.ops());
        let t = alice.ok(Binding::JsonRpc, methods::GET_TASK, json!({"id": task})).await;
        let listed = ops.ok(Binding::JsonRpc, methods::LIST_TASKS, json!({"contextId": context})).await;
        let configs = ops.ok(Binding::JsonRpc, methods::LIST_PUSH_CONFIGS, json!({"taskId": task})).await;
        Seen {
            state: task_state(&t).to_owned(),
            history: t["history"].as_array().map_or(0, Vec::len),
            turns: listed["totalSize"].clone(),
            configs: configs["configs"].clone(),
        }
    }

    /// Appends what changed since `s` was made to `failures`.
    async fn unchanged(&self, s: &Subject, case: &str, failures: &mut Vec<String>) {
        let now = self.observe(&s.task, &s.context).await;
        if now != s.seen {
            failures.push(format!("{case}: yet the task changed: {:?} -> {now:?}", s.seen));
        }
    }
}

/// Bob may answer the gates of `review`; webhooks reach a receiver on
/// loopback, so private targets are allowed.
async fn fixture() -> Fixture {
    let receiver = Receiver::start(0).await;
    let doc = doc(&[("review", REVIEW)], "user:bob");
    let (s, dir) = daemon_with(Some(&doc), json!([]), true, "push:\n  allow_private: true\n");
    let grpc = tonic::transport::Endpoint::from_shared(s.d.url.clone())
        .expect("endpoint")
        .connect()
        .await
        .expect("gRPC connect");
    Fixture { hook: receiver.url(), s, grpc, _receiver: receiver, _dir: dir }
}

/// The method and params of `op` on subject `s`.
fn request(op: Op, s: &Subject, hook: &str) -> Value {
    let answer = |config: Option<&str>| {
        let mut p = json!({"message": {"messageId": uid("answer"), "role": "ROLE_USER", "taskId": s.task,
                                       "parts": [{"data": {"ok": true}}]}});
        if let Some(id) = config {
            p["configuration"] = json!({"taskPushNotificationConfig": {"id": id, "url": hook,
                "authentication": {"scheme": "Bearer", "credentials": "inline-secret"}}});
        }
        p
    };
    let config = |id: &str| json!({"taskId": s.task, "id": id, "url": hook});
    match op {
        Op::GetTask | Op::CancelTask | Op::Subscribe => json!({"id": s.task}),
        Op::ListTasks => json!({"contextId": s.context}),
        Op::Answer | Op::AnswerStreaming => answer(None),
        Op::AnswerWithWebhook => answer(Some("inline-hook")),
        Op::AnswerTakingOperatorsWebhook => answer(Some("ops-hook")),
        Op::AnswerTakingOwnersWebhook => answer(Some("owner-hook")),
        Op::CreateConfig => config("new-hook"),
        Op::CreateConfigTakingOperators => config("ops-hook"),
        Op::GetConfig | Op::DeleteConfig => json!({"taskId": s.task, "id": "owner-hook"}),
        Op::ListConfigs | Op::ListConfigsRcName => json!({"taskId": s.task}),
        Op::InjectReminder => json!({"taskId": s.task, "reminder": {"body": "Be brief."}}),
        Op::ReminderInMetadata => {
            let mut p = json!({"message": {"messageId": uid("remind"), "role": "ROLE_USER", "taskId": s.task,
                                           "parts": [{"text": "r"}], "metadata": {}}});
            p["message"]["metadata"][reminders::URI] = json!({"reminder": {"body": "Be brief."}});
            p
        }
        Op::JoinContext => json!({
            "message": {"messageId": uid("join"), "role": "ROLE_USER", "contextId": s.context,
                        "parts": [{"text": "hello"}]},
            "configuration": {"returnImmediately": true}}),
        Op::WorkflowStatus => command("workflow.status", json!({"run": s.task})),
        Op::WorkflowCancel => command("workflow.cancel", json!({"run": s.task})),
    }
}

/// What a call got, the same on every binding.
#[derive(Debug)]
enum Got {
    /// The answer (or the first event of a stream), as text.
    Ok(String),
    Err {
        reason: Option<String>,
        fields: Vec<String>,
        unauthenticated: bool,
        text: String,
    },
}

impl Got {
    fn text(&self) -> &str {
        match self {
            Got::Ok(t) | Got::Err { text: t, .. } => t,
        }
    }

    fn matches(&self, want: Expect, wire: Wire) -> bool {
        match (want, self) {
            // gRPC names the field by its proto name.
            (Invalid(f), Got::Err { fields, .. }) if wire == Wire::Grpc => {
                fields.iter().any(|x| *x == snake_case(f))
            }
            (Yes | Nothing, Got::Ok(_)) => true,
            (Unauth, Got::Err { unauthenticated, .. }) => *unauthenticated,
            (NotFound, Got::Err { reason, .. }) => reason.as_deref() == Some("TASK_NOT_FOUND"),
            (Denied, Got::Err { reason, .. }) => reason.as_deref() == Some("PERMISSION_DENIED"),
            (Invalid(f), Got::Err { fields, .. }) => fields.iter().any(|x| x == f),
            _ => false,
        }
    }
}

/// `message.contextId` → `message.context_id`.
fn snake_case(camel: &str) -> String {
    camel.chars().fold(String::new(), |mut out, c| {
        if c.is_ascii_uppercase() {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
        out
    })
}

fn wire_error(e: WireError) -> Got {
    Got::Err {
        reason: e.reason(),
        fields: e.fields(),
        unauthenticated: e.http == 401,
        text: e.error.to_string(),
    }
}

fn status_error(s: tonic::Status) -> Got {
    let details = s.get_error_details();
    Got::Err {
        reason: details.error_info().map(|i| i.reason.clone()),
        fields: details
            .bad_request()
            .map(|b| b.field_violations.iter().map(|v| v.field.clone()).collect())
            .unwrap_or_default(),
        unauthenticated: s.code() == tonic::Code::Unauthenticated,
        text: format!("{s:?}"),
    }
}

async fn call(f: &Fixture, wire: Wire, who: &Daemon, method: &str, params: Value) -> Got {
    let b = match wire {
        Wire::JsonRpc => Binding::JsonRpc,
        Wire::Rest => Binding::Rest,
        Wire::Grpc => return grpc_call(f.grpc.clone(), who, method, params).await,
    };
    if method == methods::SEND_STREAMING_MESSAGE || method == methods::SUBSCRIBE_TO_TASK {
        let mut events = who.stream(b, method, params).await;
        if !events.sse.is_sse() {
            return wire_error(events.refused().await);
        }
        return Got::Ok(events.next().await.map(|v| v.to_string()).unwrap_or_default());
    }
    match who.op(b, method, params).await {
        Ok(v) => Got::Ok(v.to_string()),
        Err(e) => wire_error(e),
    }
}

fn unary<T: std::fmt::Debug>(r: Result<tonic::Response<T>, tonic::Status>) -> Got {
    match r {
        Ok(v) => Got::Ok(format!("{:?}", v.into_inner())),
        Err(s) => status_error(s),
    }
}

async fn first_event(r: Result<tonic::Response<tonic::Streaming<pb::StreamResponse>>, tonic::Status>) -> Got {
    match r {
        Ok(s) => match s.into_inner().message().await {
            Ok(ev) => Got::Ok(format!("{ev:?}")),
            Err(s) => status_error(s),
        },
        Err(s) => status_error(s),
    }
}

/// A gRPC request as `who` sends it.
fn as_caller<T>(who: &Daemon, msg: T) -> tonic::Request<T> {
    let mut r = tonic::Request::new(msg);
    r.metadata_mut().insert("a2a-version", "1.0".parse().expect("ascii"));
    if let Some(t) = &who.token {
        r.metadata_mut().insert("authorization", format!("Bearer {t}").parse().expect("ascii"));
    }
    r
}

async fn grpc_call(ch: Channel, who: &Daemon, method: &str, params: Value) -> Got {
    let mut c = A2aServiceClient::new(ch);
    let text = |k: &str| params[k].as_str().unwrap_or_default().to_owned();
    let send = || {
        let r: agentd_proto::SendMessageRequest = serde_json::from_value(params.clone()).expect("request");
        pb::SendMessageRequest::from(r)
    };
    match method {
        methods::GET_TASK => unary(
            c.get_task(as_caller(who, pb::GetTaskRequest { id: text("id"), ..Default::default() })).await,
        ),
        methods::LIST_TASKS => unary(
            c.list_tasks(as_caller(
                who,
                pb::ListTasksRequest { context_id: text("contextId"), ..Default::default() },
            ))
            .await,
        ),
        methods::CANCEL_TASK => unary(
            c.cancel_task(as_caller(who, pb::CancelTaskRequest { id: text("id"), ..Default::default() }))
                .await,
        ),
        methods::SEND_MESSAGE => unary(c.send_message(as_caller(who, send())).await),
        methods::SEND_STREAMING_MESSAGE => {
            first_event(c.send_streaming_message(as_caller(who, send())).await).await
        }
        methods::SUBSCRIBE_TO_TASK => {
            first_event(
                c.subscribe_to_task(as_caller(
                    who,
                    pb::SubscribeToTaskRequest { id: text("id"), ..Default::default() },
                ))
                .await,
            )
            .await
        }
        methods::CREATE_PUSH_CONFIG => {
            let cfg: agentd_proto::TaskPushNotificationConfig =
                serde_json::from_value(params.clone()).expect("config");
            unary(
                c.create_task_push_notification_config(as_caller(
                    who,
                    pb::TaskPushNotificationConfig::from(cfg),
                ))
                .await,
            )
        }
        methods::GET_PUSH_CONFIG => {
            let r = pb::GetTaskPushNotificationConfigRequest {
                task_id: text("taskId"),
                id: text("id"),
                ..Default::default()
            };
            unary(c.get_task_push_notification_config(as_caller(who, r)).await)
        }
        methods::LIST_PUSH_CONFIGS => {
            let r =
                pb::ListTaskPushNotificationConfigsRequest { task_id: text("taskId"), ..Default::default() };
            unary(c.list_task_push_notification_configs(as_caller(who, r)).await)
        }
        methods::DELETE_PUSH_CONFIG => {
            let r = pb::DeleteTaskPushNotificationConfigRequest {
                task_id: text("taskId"),
                id: text("id"),
                ..Default::default()
            };
            unary(c.delete_task_push_notification_config(as_caller(who, r)).await)
        }
        other => panic!("no gRPC call for {other}"),
    }
}

/// After an answer that succeeded: what `Ok` and `Nothing` promise.
async fn check_success(f: &Fixture, case: &str, op: Op, want: Expect, s: &Subject, got: &str) -> Vec<String> {
    let mut failures = Vec::new();
    match op {
        Op::ListTasks if got.contains(&s.task) != (want == Yes) => {
            failures.push(format!("{case}: the listing, want {want:?}: {got}"));
        }
        Op::ListConfigs | Op::ListConfigsRcName if got.contains("owner-hook") != (want == Yes) => {
            failures.push(format!("{case}: the config listing, want {want:?}: {got}"));
        }
        Op::DeleteConfig if want == Yes => {
            let params = json!({"taskId": s.task, "id": "owner-hook"});
            if f.s.ops().op(Binding::JsonRpc, methods::GET_PUSH_CONFIG, params).await.is_ok() {
                failures.push(format!("{case}: the owner's config survived its delete"));
            }
        }
        _ => {}
    }
    if want == Nothing {
        f.unchanged(s, case, &mut failures).await;
    }
    failures
}

#[tokio::test]
async fn every_operation_on_every_binding_for_every_relation() {
    let f = fixture().await;
    let mut failures = Vec::new();
    let mut cases = 0;
    for wire in [Wire::JsonRpc, Wire::Rest, Wire::Grpc] {
        for (op, row) in TABLE {
            if !exists(*op, wire) {
                continue;
            }
            for (who, want) in WHO.iter().zip(row) {
                let case = format!("{wire:?} {op:?} by the {who:?}");
                let s = f.subject().await;
                let got = call(&f, wire, &f.caller(*who), method(*op), request(*op, &s, &f.hook)).await;
                cases += 1;
                if !got.matches(*want, wire) {
                    failures.push(format!("{case}: want {want:?}, got {got:?}"));
                    continue;
                }
                let may_read_owner = matches!(who, Who::Owner | Who::Operator);
                if got.text().contains(OPS_SECRET) && *who != Who::Operator
                    || got.text().contains(OWNER_SECRET) && !may_read_owner
                {
                    failures.push(format!("{case}: a webhook secret leaked: {}", got.text()));
                }
                match got {
                    Got::Ok(text) => failures.extend(check_success(&f, &case, *op, *want, &s, &text).await),
                    Got::Err { .. } => f.unchanged(&s, &case, &mut failures).await,
                }
            }
        }
    }
    assert!(cases >= 280, "{cases} cases");
    assert!(failures.is_empty(), "{} of {cases} cases failed:\n{}", failures.len(), failures.join("\n"));
}
