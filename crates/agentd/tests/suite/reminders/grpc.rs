//! gRPC streams honour activation too: a SubscribeToTask that lists the
//! reminders extension in its `a2a-extensions` metadata gets the lifecycle
//! events (with the URI echoed); one that does not, gets none.

use super::*;
use agentd_server::grpc::pb::{self, a2a_service_client::A2aServiceClient, stream_response::Payload};
use serde_json::json;
use std::time::Duration;
use tonic::Request;
use tonic::transport::Endpoint;

fn subscribe(id: &str, activate: bool) -> Request<pb::SubscribeToTaskRequest> {
    let mut r = Request::new(pb::SubscribeToTaskRequest { id: id.into(), ..Default::default() });
    r.metadata_mut().insert("a2a-version", "1.0".parse().unwrap());
    if activate {
        r.metadata_mut().insert("a2a-extensions", URI.parse().unwrap());
    }
    r
}

/// The `event` members of the reminder events a stream carried, in order.
async fn reminder_event_names(mut s: tonic::Streaming<pb::StreamResponse>) -> Vec<String> {
    let mut out = Vec::new();
    let read = async {
        while let Some(ev) = s.message().await.expect("the stream ends with OK") {
            let Some(Payload::StatusUpdate(u)) = ev.payload else { continue };
            let Some(meta) = u.metadata else { continue };
            let Some(payload) = meta.fields.get(URI) else { continue };
            let Some(prost_types::value::Kind::StructValue(obj)) = &payload.kind else {
                panic!("the event is an object: {payload:?}")
            };
            match obj.fields.get("event").and_then(|v| v.kind.as_ref()) {
                Some(prost_types::value::Kind::StringValue(name)) => out.push(name.clone()),
                other => panic!("an event name: {other:?}"),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(20), read).await.expect("the stream ends");
    out
}

#[tokio::test]
async fn grpc_subscriptions_see_reminder_events_only_when_activated() {
    let s = slow_turn("");
    let d = &s.d;
    let id = start_turn(d).await;
    let channel = Endpoint::from_shared(d.url.clone()).unwrap().connect().await.expect("connect");
    let mut c = A2aServiceClient::new(channel);
    let activated = c.subscribe_to_task(subscribe(&id, true)).await.expect("subscribe");
    let echoed = activated.metadata().get("a2a-extensions").and_then(|v| v.to_str().ok()).map(str::to_owned);
    assert_eq!(echoed.as_deref(), Some(URI), "the activation is echoed");
    let plain = c.subscribe_to_task(subscribe(&id, false)).await.expect("subscribe").into_inner();
    s.wait_calls(1).await;
    inject(d, &id, json!({"body": "over gRPC too"})).await;
    assert_eq!(reminder_event_names(activated.into_inner()).await, ["emitted", "expired"]);
    assert!(reminder_event_names(plain).await.is_empty(), "no events without activation");
}
