//! Conversions round-trip: data model → prost → protobuf bytes → prost →
//! data model gives back the same value; malformed messages name the field.

use super::pb;
use agentd_proto::{
    AgentCard, Artifact, AuthenticationInfo, ListTasksRequest, Message, Part, PartContent, Role,
    SendMessageConfiguration, SendMessageRequest, SendMessageResponse, StreamResponse, Task,
    TaskArtifactUpdateEvent, TaskPushNotificationConfig, TaskState, TaskStatus, TaskStatusUpdateEvent,
    Timestamp,
};
use serde_json::json;

/// Through the wire and back.
fn wire<T: prost::Message + Default>(m: T) -> T {
    T::decode(m.encode_to_vec().as_slice()).expect("decodes what it encoded")
}

fn round_trip<D, P>(v: D) -> D
where
    D: Clone + std::fmt::Debug + PartialEq,
    P: prost::Message + Default + From<D>,
    D: TryFrom<P>,
    <D as TryFrom<P>>::Error: std::fmt::Debug,
{
    let back = D::try_from(wire(P::from(v.clone()))).expect("converts back");
    assert_eq!(back, v);
    back
}

fn meta(v: serde_json::Value) -> Option<agentd_proto::Metadata> {
    v.as_object().cloned()
}

fn message() -> Message {
    let mut file = Part::raw(vec![0, 1, 2, 255]);
    file.filename = "output.txt".into();
    file.media_type = "text/plain".into();
    let mut url = Part::new(PartContent::Url("https://example.com/output.txt".into()));
    url.metadata = meta(json!({"k": [1, 2.5, "x", null, {"deep": true}]}));
    Message {
        message_id: "m1".into(),
        context_id: "c1".into(),
        task_id: "t1".into(),
        role: Role::User,
        parts: vec![Part::text("hello"), file, url, Part::data(json!({"key": "value", "count": 42}))],
        metadata: meta(json!({"https://ext/x": {"a": 1}})),
        extensions: vec!["https://ext/x".into()],
        reference_task_ids: vec!["t0".into()],
    }
}

fn task() -> Task {
    let ts = Timestamp::parse("2026-05-28T12:00:00.123Z").ok();
    Task {
        id: "t1".into(),
        context_id: "c1".into(),
        status: TaskStatus {
            state: TaskState::InputRequired,
            message: Some(Message { role: Role::Agent, ..message() }),
            timestamp: ts,
        },
        artifacts: Some(vec![Artifact {
            artifact_id: "a1".into(),
            name: "n".into(),
            description: "d".into(),
            parts: vec![Part::data(json!([1, "two", null]))],
            metadata: meta(json!({"x": "y"})),
            extensions: vec!["e".into()],
        }]),
        history: Some(vec![message()]),
        metadata: meta(json!({"n": -3})),
    }
}

#[test]
fn messages_parts_and_tasks_round_trip() {
    round_trip::<Message, pb::Message>(message());
    round_trip::<Task, pb::Task>(task());
    round_trip::<Task, pb::Task>(Task { id: "bare".into(), ..Task::default() });
    round_trip::<Part, pb::Part>(Part::data(json!(null)));
    round_trip::<Part, pb::Part>(Part::data(json!("a string")));
}

#[test]
fn stream_events_and_send_responses_round_trip() {
    let events = [
        StreamResponse::Task(task()),
        StreamResponse::Message(message()),
        StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: "t1".into(),
            context_id: "c1".into(),
            status: TaskStatus {
                state: TaskState::Completed,
                message: None,
                timestamp: Some(Timestamp::now()),
            },
            metadata: None,
        }),
        StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
            task_id: "t1".into(),
            context_id: "c1".into(),
            artifact: Artifact {
                artifact_id: "a".into(),
                parts: vec![Part::text("chunk-2")],
                ..Default::default()
            },
            append: true,
            last_chunk: true,
            metadata: meta(json!({})),
        }),
    ];
    for ev in events {
        round_trip::<StreamResponse, pb::StreamResponse>(ev);
    }
    round_trip::<SendMessageResponse, pb::SendMessageResponse>(SendMessageResponse::Task(task()));
    round_trip::<SendMessageResponse, pb::SendMessageResponse>(SendMessageResponse::Message(message()));
}

#[test]
fn requests_round_trip() {
    let push = TaskPushNotificationConfig {
        tenant: "acme".into(),
        id: "p1".into(),
        task_id: String::new(),
        url: "https://hooks.example.com/a2a".into(),
        token: "tok".into(),
        authentication: Some(AuthenticationInfo { scheme: "Bearer".into(), credentials: "secret".into() }),
    };
    round_trip::<SendMessageRequest, pb::SendMessageRequest>(SendMessageRequest {
        tenant: "acme".into(),
        message: Some(message()),
        configuration: Some(SendMessageConfiguration {
            accepted_output_modes: vec!["text/plain".into()],
            task_push_notification_config: Some(push.clone()),
            history_length: Some(0),
            return_immediately: true,
        }),
        metadata: meta(json!({"trace": "x"})),
    });
    let back = TaskPushNotificationConfig::from(wire(pb::TaskPushNotificationConfig::from(push.clone())));
    assert_eq!(back, push);
    round_trip::<ListTasksRequest, pb::ListTasksRequest>(ListTasksRequest {
        tenant: String::new(),
        context_id: "c1".into(),
        status: TaskState::Working,
        page_size: Some(5),
        page_token: "tok".into(),
        history_length: None,
        status_timestamp_after: Timestamp::parse("2026-01-01T00:00:00Z").ok(),
        include_artifacts: Some(false),
    });
}

#[test]
fn malformed_requests_name_the_field() {
    let mut m = pb::Message::from(message());
    m.parts[1].content = None;
    let req = pb::SendMessageRequest { message: Some(m), ..Default::default() };
    let e = SendMessageRequest::try_from(req).unwrap_err();
    assert_eq!(e.field, "message.parts[1]");

    let mut m = pb::Message::from(message());
    m.role = 9;
    let e = SendMessageRequest::try_from(pb::SendMessageRequest { message: Some(m), ..Default::default() })
        .unwrap_err();
    assert_eq!(e.field, "message.role");

    let mut m = pb::Message::from(message());
    m.parts[3].content = Some(pb::part::Content::Data(prost_types::Value { kind: None }));
    let e = SendMessageRequest::try_from(pb::SendMessageRequest { message: Some(m), ..Default::default() })
        .unwrap_err();
    assert_eq!(e.field, "message.parts[3].data");

    let e =
        ListTasksRequest::try_from(pb::ListTasksRequest { status: 42, ..Default::default() }).unwrap_err();
    assert_eq!(e.field, "status");
    let bad_ts = prost_types::Timestamp { seconds: 1, nanos: 2_000_000_000 };
    let e = ListTasksRequest::try_from(pb::ListTasksRequest {
        status_timestamp_after: Some(bad_ts),
        ..Default::default()
    })
    .unwrap_err();
    assert_eq!(e.field, "status_timestamp_after");

    // As a status: INVALID_ARGUMENT with a BadRequest naming the field.
    use tonic_types::StatusExt;
    let s = tonic::Status::from(e);
    assert_eq!(s.code(), tonic::Code::InvalidArgument);
    let details = s.get_error_details();
    assert_eq!(
        details.bad_request().map(|b| b.field_violations[0].field.as_str()),
        Some("status_timestamp_after")
    );
}

#[test]
fn the_card_converts_with_every_member() {
    let card: AgentCard = serde_json::from_value(json!({
        "name": "agentd", "description": "d", "version": "1",
        "supportedInterfaces": [{"url": "127.0.0.1:1", "protocolBinding": "GRPC", "protocolVersion": "1.0"}],
        "provider": {"url": "https://agentd.dev", "organization": "agentd"},
        "capabilities": {"streaming": true, "pushNotifications": false,
                         "extensions": [{"uri": "urn:x", "required": true, "params": {"a": 1}}]},
        "securitySchemes": {
            "bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}},
            "oauth": {"oauth2SecurityScheme": {"flows": {"clientCredentials":
                {"tokenUrl": "https://t", "scopes": {"read": "r"}}}, "oauth2MetadataUrl": "https://m"}}
        },
        "securityRequirements": [{"schemes": {"bearer": {"list": ["s"]}}}],
        "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "chat", "name": "Chat", "description": "d", "tags": ["t"]}],
        "signatures": [{"protected": "p", "signature": "s", "header": {"kid": "k"}}],
        "iconUrl": "https://i"
    }))
    .expect("a valid card");
    let pb = wire(pb::AgentCard::from(card));
    assert_eq!(pb.supported_interfaces[0].url, "127.0.0.1:1");
    assert_eq!(pb.capabilities.as_ref().and_then(|c| c.streaming), Some(true));
    assert_eq!(pb.capabilities.as_ref().and_then(|c| c.push_notifications), Some(false));
    assert!(pb.capabilities.as_ref().is_some_and(|c| c.extensions[0].required));
    assert_eq!(pb.security_requirements[0].schemes["bearer"].list, ["s"]);
    assert_eq!(pb.signatures[0].protected, "p");
    assert_eq!(pb.icon_url.as_deref(), Some("https://i"));
    use pb::security_scheme::Scheme;
    match pb.security_schemes["oauth"].scheme.as_ref() {
        Some(Scheme::Oauth2SecurityScheme(o)) => {
            assert_eq!(o.oauth2_metadata_url, "https://m");
            match o.flows.as_ref().and_then(|f| f.flow.as_ref()) {
                Some(pb::o_auth_flows::Flow::ClientCredentials(c)) => assert_eq!(c.scopes["read"], "r"),
                other => panic!("client credentials flow expected, got {other:?}"),
            }
        }
        other => panic!("oauth2 scheme expected, got {other:?}"),
    }
    assert!(matches!(pb.security_schemes["bearer"].scheme, Some(Scheme::HttpAuthSecurityScheme(_))));
}

/// Arbitrary bytes, decoded as any request the service takes and converted,
/// never panic: they decode-fail (tonic answers with a status) or convert
/// to a value or a field error.
#[test]
fn mutated_wire_bytes_never_panic() {
    use prost::Message as _;
    let seed = pb::SendMessageRequest::from(SendMessageRequest {
        message: Some(message()),
        configuration: Some(SendMessageConfiguration { history_length: Some(3), ..Default::default() }),
        metadata: meta(json!({"a": [1, {"b": null}]})),
        ..Default::default()
    })
    .encode_to_vec();
    let list_seed = pb::ListTasksRequest::from(ListTasksRequest {
        status_timestamp_after: Some(Timestamp::now()),
        status: TaskState::Working,
        ..Default::default()
    })
    .encode_to_vec();
    // xorshift64: deterministic, no dependency.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for round in 0..20_000 {
        let mut b = if round % 2 == 0 { seed.clone() } else { list_seed.clone() };
        for _ in 0..=(rnd() % 4) {
            if b.is_empty() {
                break;
            }
            let i = (rnd() as usize) % b.len();
            match rnd() % 3 {
                0 => b[i] = rnd() as u8,
                1 => b.truncate(i),
                _ => b.insert(i, rnd() as u8),
            }
        }
        if let Ok(m) = pb::SendMessageRequest::decode(b.as_slice()) {
            let _ = SendMessageRequest::try_from(m);
        }
        if let Ok(m) = pb::ListTasksRequest::decode(b.as_slice()) {
            let _ = ListTasksRequest::try_from(m);
        }
        if let Ok(m) = pb::StreamResponse::decode(b.as_slice()) {
            let _ = StreamResponse::try_from(m);
        }
    }
}
