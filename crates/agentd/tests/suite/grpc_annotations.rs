//! Task annotations on the gRPC binding: activated by `a2a-extensions`
//! metadata exactly as on HTTP, echoed, and absent (no `metadata`) when
//! not activated. The object is validated against the published schema.

use crate::common::annotations::URI;
use crate::common::*;
use agentd_server::grpc::pb::{self, a2a_service_client::A2aServiceClient};
use prost_types::value::Kind;
use serde_json::{Value, json};
use tonic::Request;
use tonic::transport::Endpoint;

fn to_json(v: &prost_types::Value) -> Value {
    match &v.kind {
        Some(Kind::StringValue(s)) => json!(s),
        Some(Kind::NumberValue(n)) => json!(n),
        Some(Kind::BoolValue(b)) => json!(b),
        Some(Kind::StructValue(s)) => {
            Value::Object(s.fields.iter().map(|(k, v)| (k.clone(), to_json(v))).collect())
        }
        Some(Kind::ListValue(l)) => Value::Array(l.values.iter().map(to_json).collect()),
        Some(Kind::NullValue(_)) | None => Value::Null,
    }
}

fn get(id: &str, activate: bool) -> Request<pb::GetTaskRequest> {
    let mut r = Request::new(pb::GetTaskRequest { id: id.to_owned(), ..Default::default() });
    r.metadata_mut().insert("a2a-version", "1.0".parse().expect("ascii"));
    if activate {
        r.metadata_mut().insert("a2a-extensions", URI.parse().expect("ascii"));
    }
    r
}

#[tokio::test]
async fn grpc_answers_carry_annotations_exactly_when_activated() {
    let d = Daemon::start(&["--agent", "tck"]);
    let id =
        d.call("SendMessage", tck("tck-complete-task")).await["task"]["id"].as_str().expect("id").to_owned();
    let target = d.url.strip_prefix("http://").expect("http url").to_owned();
    let ch = Endpoint::from_shared(format!("http://{target}"))
        .expect("endpoint")
        .connect()
        .await
        .expect("connect");
    let mut client = A2aServiceClient::new(ch);

    let r = client.get_task(get(&id, true)).await.expect("GetTask");
    assert_eq!(r.metadata().get("a2a-extensions").and_then(|v| v.to_str().ok()), Some(URI));
    let meta = r.into_inner().metadata.expect("metadata when activated");
    let a = to_json(meta.fields.get(URI).expect("the annotations"));
    crate::common::annotations::check(&json!({ URI: a }));
    assert_eq!(a["link"]["kind"], "turn");
    let states: Vec<&str> = a["statusHistory"]
        .as_array()
        .expect("history")
        .iter()
        .map(|e| e["state"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(states, ["TASK_STATE_SUBMITTED", "TASK_STATE_COMPLETED"], "{a}");

    let r = client.get_task(get(&id, false)).await.expect("GetTask");
    assert!(r.metadata().get("a2a-extensions").is_none());
    assert!(r.into_inner().metadata.is_none(), "no metadata without activation");
}
