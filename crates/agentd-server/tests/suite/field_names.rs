//! A field an error names is spelled as the binding spells fields: the
//! ProtoJSON (camelCase) name on JSON-RPC, the proto's (snake_case) name in
//! a gRPC BadRequest. What a client wrote inside data keeps its spelling.

use crate::support::{serve_in_process, violated_fields};
use agentd_server::grpc::pb::{self, a2a_service_client::A2aServiceClient};
use agentd_server::{ExtensionRegistry, VersionPolicy};
use serde_json::{Value, json};
use tonic::transport::Channel;
use tonic::{Code, Request};

/// A message with no id, whose one part is a command object without `op`,
/// with a negative `historyLength`.
const BAD_SEND: &str = r#"{"message": {"messageId": "", "role": "ROLE_USER",
    "parts": [{"data": {"agentd": {}}}]}, "configuration": {"historyLength": -1}}"#;

async fn json_rpc_fields(url: &str, params: Value) -> Vec<String> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params});
    let resp: Value = reqwest::Client::new()
        .post(url)
        .header("a2a-version", "1.0")
        .json(&body)
        .send()
        .await
        .expect("post")
        .json()
        .await
        .expect("json");
    let error = &resp["error"];
    assert_eq!(error["code"], -32602, "{resp}");
    let bad_request =
        error["data"].as_array().and_then(|d| d.iter().find(|d| d["fieldViolations"].is_array()));
    let violations = bad_request.unwrap_or_else(|| panic!("a BadRequest: {resp}"))["fieldViolations"].clone();
    violations
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["field"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn grpc_send(history_length: i32) -> pb::SendMessageRequest {
    let command = prost_types::Struct {
        fields: [(
            "agentd".to_owned(),
            prost_types::Value {
                kind: Some(prost_types::value::Kind::StructValue(prost_types::Struct::default())),
            },
        )]
        .into_iter()
        .collect(),
    };
    let data = prost_types::Value { kind: Some(prost_types::value::Kind::StructValue(command)) };
    pb::SendMessageRequest {
        message: Some(pb::Message {
            message_id: String::new(),
            role: pb::Role::User as i32,
            parts: vec![pb::Part { content: Some(pb::part::Content::Data(data)), ..Default::default() }],
            ..Default::default()
        }),
        configuration: Some(pb::SendMessageConfiguration {
            history_length: Some(history_length),
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[tokio::test]
async fn json_names_fields_in_camel_case_and_grpc_in_snake_case() {
    let (addr, stop) = serve_in_process(ExtensionRegistry::new(Vec::new()), VersionPolicy::Lenient).await;

    let fields = json_rpc_fields(
        &format!("http://{addr}{}", agentd_server::card::JSONRPC_PATH),
        serde_json::from_str(BAD_SEND).unwrap(),
    )
    .await;
    assert_eq!(fields, ["message.messageId", "configuration.historyLength"]);

    let ch = Channel::from_shared(format!("http://{addr}")).expect("uri").connect().await.expect("connect");
    let mut r = Request::new(grpc_send(-1));
    r.metadata_mut().insert("a2a-version", "1.0".parse().expect("ascii"));
    let e = A2aServiceClient::new(ch.clone()).send_message(r).await.expect_err("invalid");
    assert_eq!(e.code(), Code::InvalidArgument);
    assert_eq!(violated_fields(&e), ["message.message_id", "configuration.history_length"]);
    assert!(e.message().starts_with("message.message_id: is required"), "{}", e.message());

    // Below the part's `data` is what the client wrote: named as written.
    let mut fixed = grpc_send(0);
    fixed.message.as_mut().unwrap().message_id = "m1".into();
    let mut r = Request::new(fixed);
    r.metadata_mut().insert("a2a-version", "1.0".parse().expect("ascii"));
    let e = A2aServiceClient::new(ch).send_message(r).await.expect_err("a command without op");
    assert_eq!(violated_fields(&e), ["message.parts[0].data.agentd.op"]);
    stop.cancel();
}
