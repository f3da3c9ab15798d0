//! ProtoJSON rules, pinned: camelCase out, camelCase and snake_case in,
//! enum names (numbers accepted), member-based oneofs, unknown fields
//! ignored, `.sssZ` UTC timestamps out and any RFC 3339 in, base64 `raw`,
//! REQUIRED members always written. Payloads are the spec's examples.

use agentd_proto::validate::decode;
use agentd_proto::*;
use serde_json::{Value, json};
use std::sync::Arc;

fn roundtrip<T: serde::Serialize + serde::de::DeserializeOwned>(v: Value) -> Value {
    let t: T = decode(v).expect("decodes");
    serde_json::to_value(&t).expect("encodes")
}

#[test]
fn spec_stream_examples_roundtrip_byte_for_byte() {
    // §9.4.2 / digest §7.2 stream payloads.
    for ev in [
        json!({"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_SUBMITTED"}}}),
        json!({"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}}),
        json!({"artifactUpdate":{"taskId":"t1","contextId":"c1","artifact":{"artifactId":"a1","parts":[{"text":"..."}]},"lastChunk":true}}),
        json!({"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED","timestamp":"2024-03-15T18:30:00.000Z"}}}),
    ] {
        assert_eq!(roundtrip::<StreamResponse>(ev.clone()), ev);
    }
}

#[test]
fn parts_are_a_oneof_by_member() {
    for p in [
        json!({"text":"Hello","mediaType":"text/plain"}),
        json!({"raw":"iVBORw0KGgo=","filename":"a.png","mediaType":"image/png"}),
        json!({"url":"https://host/doc.pdf","filename":"doc.pdf","mediaType":"application/pdf"}),
        json!({"data":{"k":"v"},"mediaType":"application/json"}),
        json!({"data":[1,2,3]}),
        json!({"data":null}),
    ] {
        assert_eq!(roundtrip::<Part>(p.clone()), p);
    }
    for bad in [json!({"text":"a","data":{}}), json!({"mediaType":"text/plain"}), json!({})] {
        let e = decode::<Part>(bad.clone()).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidParams, "{bad}");
    }
}

#[test]
fn raw_accepts_every_base64_flavour_and_writes_standard_padded() {
    for input in ["+/8=", "+/8", "-_8=", "-_8"] {
        let p: Part = decode(json!({"raw": input})).unwrap();
        assert_eq!(p.content, PartContent::Raw(Arc::new(vec![0xfb, 0xff])), "{input}");
        assert_eq!(serde_json::to_value(&p).unwrap(), json!({"raw":"+/8="}));
    }
}

#[test]
fn snake_case_names_are_accepted_on_input() {
    let r: ListTasksRequest = decode(json!({
        "context_id":"c","page_size":5,"page_token":"x","history_length":2,
        "include_artifacts":true,"status_timestamp_after":"2025-11-09T10:30:00+02:00","status":"TASK_STATE_WORKING"
    }))
    .unwrap();
    assert_eq!(
        (r.context_id.as_str(), r.page_size, r.history_length, r.include_artifacts),
        ("c", Some(5), Some(2), Some(true))
    );
    assert_eq!(r.status, TaskState::Working);
    assert_eq!(
        r.status_timestamp_after.unwrap().to_wire(),
        "2025-11-09T08:30:00.000Z",
        "offsets normalise to Z"
    );
    let m: Message = decode(json!({"message_id":"m","role":"ROLE_USER","parts":[{"text":"x","media_type":"text/plain"}],"reference_task_ids":["t"]})).unwrap();
    assert_eq!(m.message_id, "m");
    assert_eq!(m.parts[0].media_type, "text/plain");
    assert_eq!(m.reference_task_ids, vec!["t"]);
    let out = serde_json::to_value(&m).unwrap();
    assert!(out.get("messageId").is_some() && out.get("referenceTaskIds").is_some(), "camelCase out: {out}");
    assert_eq!(out["parts"][0]["mediaType"], "text/plain");
}

#[test]
fn enums_are_names_out_and_names_or_numbers_in() {
    let s: TaskStatus = decode(json!({"state": 6})).unwrap();
    assert_eq!(s.state, TaskState::InputRequired);
    assert_eq!(serde_json::to_value(&s).unwrap(), json!({"state":"TASK_STATE_INPUT_REQUIRED"}));
    assert_eq!(TaskState::Rejected.number(), 7);
    assert_eq!(TaskState::AuthRequired.number(), 8);
    let e = decode::<TaskStatus>(json!({"state":"completed"})).unwrap_err();
    assert_eq!(e.violations[0].field, "state", "the bad field is named");
    let e = decode::<Message>(json!({"role": 99})).unwrap_err();
    assert_eq!(e.violations[0].field, "role");
}

#[test]
fn unknown_fields_are_ignored_and_null_means_absent() {
    let r: SendMessageRequest = decode(json!({
        "message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x","futureField":1}],"contextId":null,"extensions":null},
        "configuration":{"returnImmediately":null,"historyLength":null,"somethingNew":true},
        "futureTopLevel":{"a":1}
    }))
    .unwrap();
    let m = r.message.unwrap();
    assert!(m.context_id.is_empty() && m.extensions.is_empty());
    let c = r.configuration.unwrap();
    assert!(!c.return_immediately && c.history_length.is_none());
}

#[test]
fn timestamps_are_millisecond_utc_out() {
    let t = Timestamp::parse("2024-03-15T18:30:00Z").unwrap();
    assert_eq!(t.to_wire(), "2024-03-15T18:30:00.000Z");
    let t = Timestamp::parse("2024-03-15T18:30:00.123456789-05:00").unwrap();
    assert_eq!(t.to_wire(), "2024-03-15T23:30:00.123Z");
    assert!(Timestamp::parse("yesterday").is_err());
    assert!(Timestamp::now().to_wire().ends_with('Z'));
}

/// The daemon writes timestamps without chrono's formatter; the text must be
/// chrono's RFC 3339 (milliseconds, `Z`) for every instant, the rare ones
/// (a leap second, years outside 0000..=9999) included, and read back.
#[test]
fn timestamps_are_written_as_chrono_writes_them_and_read_back() {
    use chrono::{SecondsFormat, TimeZone, Utc};
    let mut instants: Vec<Timestamp> = [
        -62_135_596_800_000_i64, // 0001-01-01T00:00:00.000Z
        -62_167_219_200_000,     // 0000-01-01
        253_402_300_799_999,     // 9999-12-31T23:59:59.999Z
        253_402_300_800_000,     // 10000-01-01: past four digits
        -62_167_219_200_001,     // before year 0
        0,
        1,
        999,
        1_710_527_400_123,
    ]
    .into_iter()
    .map(|ms| Timestamp::from_millis(ms).unwrap())
    .collect();
    // Every month and day-of-month digit, hours, minutes, seconds.
    let mut ms = 946_684_800_000_i64; // 2000-01-01
    for _ in 0..500 {
        instants.push(Timestamp::from_millis(ms).unwrap());
        ms += 86_400_000 + 3_600_000 + 61_000 + 7;
    }
    // A leap second: 23:59:60.500.
    let leap = Utc.with_ymd_and_hms(2016, 12, 31, 23, 59, 59).unwrap();
    instants.push(Timestamp(chrono::Timelike::with_nanosecond(&leap, 1_500_000_000).unwrap()));
    for t in instants {
        let want = t.0.to_rfc3339_opts(SecondsFormat::Millis, true);
        assert_eq!(t.to_wire(), want);
        assert_eq!(serde_json::to_string(&t).unwrap(), format!("\"{want}\""));
        if (1..=9999).contains(&chrono::Datelike::year(&t.0)) {
            let back: Timestamp = serde_json::from_str(&format!("\"{want}\"")).unwrap();
            assert_eq!(back.millis(), t.millis(), "{want}");
        }
    }
    // Read from escaped text, from a `Value`, and refused when not a string.
    let escaped: Timestamp = serde_json::from_str(r#""2024-03-15T18:30:00.5\u005a""#).unwrap();
    assert_eq!(escaped.to_wire(), "2024-03-15T18:30:00.500Z");
    let from_value: Timestamp = serde_json::from_value(json!("2024-03-15T18:30:00Z")).unwrap();
    assert_eq!(from_value.to_wire(), "2024-03-15T18:30:00.000Z");
    let e = serde_json::from_str::<Timestamp>("5").unwrap_err().to_string();
    assert!(e.contains("expected a string"), "{e}");
}

#[test]
fn required_members_are_always_written() {
    let r = ListTasksResponse::default();
    assert_eq!(
        serde_json::to_value(&r).unwrap(),
        json!({"tasks":[],"nextPageToken":"","pageSize":0,"totalSize":0})
    );
    let t = Task {
        id: "t".into(),
        status: TaskStatus { state: TaskState::Working, ..Default::default() },
        ..Default::default()
    };
    assert_eq!(serde_json::to_value(&t).unwrap(), json!({"id":"t","status":{"state":"TASK_STATE_WORKING"}}));
}

#[test]
fn send_message_response_and_push_config_shapes() {
    let v = json!({"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"hi"}]}});
    assert_eq!(roundtrip::<SendMessageResponse>(v.clone()), v);
    // digest §3.7 create example.
    let c = json!({"taskId":"t1","url":"https://example.com/hook","authentication":{"scheme":"Bearer","credentials":"tok"}});
    assert_eq!(roundtrip::<TaskPushNotificationConfig>(c.clone()), c);
    let c: TaskPushNotificationConfig = decode(json!({"task_id":"t1","url":"u"})).unwrap();
    assert_eq!(c.task_id, "t1");
}

#[test]
fn int32_fields_accept_numeric_strings_but_name_bad_values() {
    let r: GetTaskRequest = decode(json!({"id":"t","historyLength":"3"})).unwrap();
    assert_eq!(r.history_length, Some(3));
    let e = decode::<GetTaskRequest>(json!({"id":"t","historyLength":"abc"})).unwrap_err();
    assert_eq!(e.violations[0].field, "historyLength");
    let e = decode::<GetTaskRequest>(json!({"id":"t","historyLength": 3_000_000_000_i64})).unwrap_err();
    assert_eq!(e.violations[0].field, "historyLength");
}

/// The protobuf JSON mapping for int32, as its conformance suite pins it
/// (`Int32FieldExponentialFormat`, `Int32FieldFloatTrailingZero`,
/// `Int32FieldMaxFloatValue`, `Int32FieldLeadingSpace`, …): integral
/// numbers in any notation, strings holding exactly a JSON number.
#[test]
fn int32_follows_the_protojson_mapping_exactly() {
    let history = |v: Value| decode::<GetTaskRequest>(json!({"id": "t", "historyLength": v}));
    let accepted: [(Value, i32); 16] = [
        (json!(1.0), 1),
        (json!(5.0), 5),
        (json!(1e5), 100_000),
        (serde_json::from_str("100000.000").unwrap(), 100_000),
        (serde_json::from_str("2.147483647e9").unwrap(), i32::MAX),
        (serde_json::from_str("-2.147483648e9").unwrap(), i32::MIN),
        (serde_json::from_str("-0").unwrap(), 0),
        (json!("1"), 1),
        (json!("-1"), -1),
        (json!("0"), 0),
        (json!("2147483647"), i32::MAX),
        (json!("-2147483648"), i32::MIN),
        (json!("1e2"), 100),
        (json!("1E+2"), 100),
        (json!("1.50e1"), 15),
        (json!("0.0000010e7"), 10),
    ];
    for (v, want) in accepted {
        let shown = v.to_string();
        let r = history(v).unwrap_or_else(|e| panic!("{shown} refused: {e:?}"));
        assert_eq!(r.history_length, Some(want), "{shown}");
    }
    let refused = [
        json!(" 1"),
        json!("1 "),
        json!("+1"),
        json!("01"),
        json!("-01"),
        json!("00"),
        json!(""),
        json!("-"),
        json!("1."),
        json!(".5"),
        json!("1e"),
        json!("0x10"),
        json!("3x3"),
        json!("1.5"),
        json!("1e-1"),
        json!("2147483648"),
        json!("1e10"),
        json!("1e999999999999"),
        json!(0.5),
        json!(2_147_483_648_i64),
        json!(1e10),
        json!(true),
        json!([1]),
    ];
    for v in refused {
        let e = history(v.clone()).expect_err(&v.to_string());
        assert_eq!(e.violations[0].field, "historyLength", "{v}");
        assert!(e.violations[0].description.contains("32-bit integer"), "{v}: {e:?}");
    }
    // Plain int32 (pageSize) and null, the same rules.
    let r: ListTaskPushNotificationConfigsRequest = decode(json!({"taskId": "t", "pageSize": 2.0})).unwrap();
    assert_eq!(r.page_size, 2);
    let r: ListTaskPushNotificationConfigsRequest = decode(json!({"taskId": "t", "pageSize": null})).unwrap();
    assert_eq!(r.page_size, 0);
    let e = decode::<ListTaskPushNotificationConfigsRequest>(json!({"taskId": "t", "pageSize": "+2"}));
    assert_eq!(e.unwrap_err().violations[0].field, "pageSize");
}

#[test]
fn errors_map_through_the_one_table() {
    let e = A2aError::task_not_found("nope");
    assert_eq!(
        e.to_jsonrpc(),
        json!({"code":-32001,"message":"task \"nope\" not found","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org","metadata":{"taskId":"nope"}}]})
    );
    let rest = e.to_rest();
    assert_eq!(rest["error"]["code"], 404);
    assert_eq!(rest["error"]["status"], "NOT_FOUND");
    let v = A2aError::invalid_field("message.parts", "At least one part is required").to_jsonrpc();
    assert_eq!(v["code"], -32602);
    assert_eq!(v["data"][0]["@type"], "type.googleapis.com/google.rpc.ErrorInfo");
    assert_eq!(v["data"][0]["reason"], "INVALID_PARAMS");
    assert_eq!(v["data"][1]["@type"], "type.googleapis.com/google.rpc.BadRequest");
    assert_eq!(v["data"][1]["fieldViolations"][0]["field"], "message.parts");
    // v1.0.1 statuses, not v1.0.0's.
    assert_eq!(ErrorKind::TaskNotCancelable.codes().http, 400);
    assert_eq!(ErrorKind::ContentTypeNotSupported.codes().http, 400);
    assert_eq!(ErrorKind::InvalidAgentResponse.codes().http, 500);
    assert_eq!(ErrorKind::VersionNotSupported.codes().grpc, "FAILED_PRECONDITION");
}

#[test]
fn jsonrpc_envelopes_are_told_apart() {
    use agentd_proto::jsonrpc::{Id, parse_request};
    let id = |text: &str| Id::from_text(text).unwrap();
    assert_eq!(parse_request(b"{not json").unwrap_err().error.kind, ErrorKind::ParseError);
    let e = parse_request(br#"{"jsonrpc":"1.0","id":5,"method":"GetTask"}"#).unwrap_err();
    assert_eq!((e.error.kind, e.id), (ErrorKind::InvalidRequest, id("5")));
    assert_eq!(parse_request(br#"[{"jsonrpc":"2.0"}]"#).unwrap_err().error.kind, ErrorKind::InvalidRequest);
    assert_eq!(
        parse_request(br#"{"jsonrpc":"2.0","id":{},"method":"x"}"#).unwrap_err().error.kind,
        ErrorKind::InvalidRequest
    );
    let r = parse_request(br#"{"jsonrpc":"2.0","id":"a","method":"GetExtendedAgentCard"}"#).unwrap();
    assert_eq!((r.id, r.params), (Some(id(r#""a""#)), None));
}

#[test]
fn agent_card_serialises_oneof_security_schemes_by_member() {
    let s =
        SecurityScheme::HttpAuth(HttpAuthSecurityScheme { scheme: "Bearer".into(), ..Default::default() });
    assert_eq!(serde_json::to_value(&s).unwrap(), json!({"httpAuthSecurityScheme":{"scheme":"Bearer"}}));
    let req = SecurityRequirement { schemes: [("bearer".to_owned(), StringList::default())].into() };
    assert_eq!(serde_json::to_value(&req).unwrap(), json!({"schemes":{"bearer":{"list":[]}}}));
}

#[test]
fn message_typed_members_must_be_objects_not_arrays() {
    // serde-derived structs would take an array positionally; ProtoJSON
    // messages are objects, so every such member is InvalidParams naming it.
    let msg = json!({"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}]});
    for (params, field) in [
        (json!({"message": msg, "configuration": []}), "configuration"),
        (json!({"message": ["m", "", "", "ROLE_USER", [{"text":"x"}]]}), "message"),
        (json!({"message": {"messageId":"m","role":"ROLE_USER","parts":[["x"]]}}), "message.parts[0]"),
        (
            json!({"message": msg, "configuration": {"taskPushNotificationConfig": ["", "", "t", "https://h"]}}),
            "configuration.taskPushNotificationConfig",
        ),
        (
            json!({"message": msg, "configuration": {"taskPushNotificationConfig": {"url":"u","authentication":["Bearer"]}}}),
            "configuration.taskPushNotificationConfig.authentication",
        ),
        (json!(["t1"]), "params"),
    ] {
        let e = decode::<SendMessageRequest>(params.clone()).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidParams, "{params}");
        assert_eq!(e.violations[0].field, field, "{params}: {e:?}");
        assert!(e.message.contains("expected a JSON object"), "{params}: {}", e.message);
    }
    let e = decode::<StreamResponse>(json!({"task": ["t1", "c1"]})).unwrap_err();
    assert_eq!(e.violations[0].field, "task");
    let e = decode::<Task>(json!({"id":"t","status":["TASK_STATE_WORKING"]})).unwrap_err();
    assert_eq!(e.violations[0].field, "status");
    let e = decode::<AgentCard>(json!({"name":"a","description":"d","supportedInterfaces":[],"version":"1",
        "capabilities":[],"defaultInputModes":[],"defaultOutputModes":[],"skills":[]}))
    .unwrap_err();
    assert_eq!(e.violations[0].field, "capabilities");
    // Lists, maps and google.protobuf.Value members still take arrays.
    let r: SendMessageRequest = decode(json!({
        "message": {"messageId":"m","role":"ROLE_USER","parts":[{"data":[1,[2]]}],"metadata":{"k":[1]}},
        "configuration": {"acceptedOutputModes":["text/plain"]}
    }))
    .unwrap();
    assert_eq!(r.message.unwrap().parts[0].content, PartContent::Data(Arc::new(json!([1, [2]]))));
}
