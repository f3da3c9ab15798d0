//! `server.max_json_values` on gRPC: the elements a request's JSON form
//! would hold (parts, repeated strings, metadata members) are counted
//! against it as the JSON bindings count them, and a request over it is
//! INVALID_ARGUMENT naming the limit, before anything is stored.

use crate::support::serve_in_process;
use agentd_server::grpc::pb::{self, a2a_service_client::A2aServiceClient};
use agentd_server::{ExtensionRegistry, VersionPolicy};
use tonic::Code;
use tonic::transport::Channel;

#[tokio::test]
async fn many_empty_parts_or_metadata_members_are_refused_naming_the_limit() {
    let (addr, stop) = serve_in_process(ExtensionRegistry::default(), VersionPolicy::Lenient).await;
    let ch = Channel::from_shared(format!("http://{addr}")).expect("uri").connect().await.expect("connect");
    let mut c = A2aServiceClient::new(ch);
    let empty = pb::Part { content: Some(pb::part::Content::Text(String::new())), ..Default::default() };
    let send = |parts: usize, ids: usize| pb::SendMessageRequest {
        message: Some(pb::Message {
            message_id: "m1".into(),
            role: pb::Role::User as i32,
            parts: vec![empty.clone(); parts],
            reference_task_ids: vec![String::new(); ids],
            ..Default::default()
        }),
        ..Default::default()
    };
    // 20,000 values by default; an empty part is two (`{"text": ""}`).
    for (what, req) in [("parts", send(10_001, 0)), ("referenceTaskIds", send(1, 20_000))] {
        let e = c.send_message(req).await.err().unwrap_or_else(|| panic!("{what}: accepted"));
        assert_eq!(e.code(), Code::InvalidArgument, "{what}: {e:?}");
        assert!(e.message().contains("server.max_json_values"), "{what}: {}", e.message());
    }
    let tasks = c.list_tasks(pb::ListTasksRequest::default()).await.expect("list").into_inner();
    assert!(tasks.tasks.is_empty(), "nothing was stored");

    let members = (0..20_001).map(|i| (i.to_string(), prost_types::Value::default())).collect();
    let cancel = pb::CancelTaskRequest {
        id: "no-such-task".into(),
        metadata: Some(prost_types::Struct { fields: members }),
        ..Default::default()
    };
    let e = c.cancel_task(cancel).await.err().unwrap_or_else(|| panic!("too many metadata values: accepted"));
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    assert!(e.message().contains("server.max_json_values"), "{}", e.message());
    stop.cancel();
}
