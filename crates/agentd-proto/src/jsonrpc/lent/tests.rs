//! The lent reading answers every body as the `Value` reading does: the
//! same envelope errors, and the same request or InvalidParams error once
//! the params are decoded.

use super::*;

const LIMITS: JsonLimits = JsonLimits { max_depth: 8, max_values: 60 };

fn msg(message: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":"r1","method":"SendMessage","params":{{"message":{message}}}}}"#)
}

fn envelope_cases() -> Vec<String> {
    let plain = r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}}"#;
    [
        plain,
        " \n{\"jsonrpc\":\"2.0\",\"method\":\"GetTask\"}\t",
        "{",
        "",
        "{\"jsonrpc\":\"2.0\",}",
        "{} x",
        "[{\"jsonrpc\":\"2.0\"}]",
        "5",
        "\"x\"",
        "null",
        r#"{"jsonrpc":"2.0","id":true,"method":"x"}"#,
        r#"{"jsonrpc":"2.0","id":{},"method":"x"}"#,
        r#"{"jsonrpc":"2.0","id":[1],"method":"x"}"#,
        r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#,
        r#"{"jsonrpc":"2.0","id":-1.50,"method":"x"}"#,
        r#"{"jsonrpc":"2.0","id":1e2,"method":"x"}"#,
        r#"{"jsonrpc":"2.0","id":"a\u00e9\n","method":"x"}"#,
        r#"{"jsonrpc":"1.0","id":5,"method":"GetTask"}"#,
        r#"{"jsonrpc":2.0,"id":5,"method":"GetTask"}"#,
        r#"{"id":5,"method":"GetTask"}"#,
        r#"{"jsonrpc":"2\u002e0","id":5,"method":"GetTask"}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":""}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":5}"#,
        r#"{"jsonrpc":"2.0","id":5}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"Send\u004dessage","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"GetTask","params":null}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"GetTask","params":[]}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"GetTask","params":"x"}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"GetTask","params":{"id":"a","id":"b"}}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"GetTask","params":{"id":"a"},"params":{"id":"b"}}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"GetTask","params":{"\u0069d":"a"}}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"GetTask","extra":[1,{"a":2}],"params":{"id":"a"}}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"GetTask","params":{"id":[[[[[[[[1]]]]]]]]}}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"GetTask","params":{"id":1e999}}"#,
    ]
    .into_iter()
    .map(str::to_owned)
    .collect()
}

fn params_cases() -> Vec<String> {
    let mut out: Vec<String> = [
        r#"{"messageId":"m","role":"ROLE_USER","parts":[{"text":"h\u00e9"}]}"#,
        r#"{"message_id":"m","role":1,"parts":[{"data":null},{"url":"u","mediaType":"a/b"}]}"#,
        r#"{"messageId":5,"role":"ROLE_USER","parts":[]}"#,
        r#"{"messageId":"m","role":"NOPE","parts":[]}"#,
        r#"{"messageId":"m","role":9,"parts":[]}"#,
        r#"{"messageId":"m","role":1.0,"parts":[]}"#,
        r#"{"messageId":"m","role":[1,"a"],"parts":[]}"#,
        r#"{"messageId":"m","role":{"a":true},"parts":[]}"#,
        r#"{"messageId":"m","role":false,"parts":[]}"#,
        r#"{"messageId":"m","parts":"x"}"#,
        r#"{"messageId":"m","parts":[{}]}"#,
        r#"{"messageId":"m","parts":[{"text":"a","url":"b"}]}"#,
        r#"{"messageId":"m","parts":[{"raw":"!!"}]}"#,
        r#"{"messageId":"m","parts":[{"text":5}]}"#,
        r#"{"messageId":"m","parts":[{"text":"a","metadata":[]}]}"#,
        r#"{"messageId":"m","metadata":5}"#,
        r#"{"messageId":"m","extensions":"x"}"#,
        r#"{"messageId":"m","referenceTaskIds":[1]}"#,
        r#"{"messageId":"m","messageId":"n"}"#,
        r#"{"messageId":"m","message_id":"n"}"#,
        r#"["m","","","ROLE_USER"]"#,
        r#""m""#,
        "null",
    ]
    .into_iter()
    .map(msg)
    .collect();
    for p in [
        r#"{"configuration":[]}"#,
        r#"{"configuration":{"historyLength":"x"}}"#,
        r#"{"configuration":{"historyLength":1.5}}"#,
        r#"{"configuration":{"historyLength":"1e2","returnImmediately":"true"}}"#,
        r#"{"configuration":{"historyLength":99999999999}}"#,
        r#"{"configuration":{"returnImmediately":3}}"#,
        r#"{"configuration":{"taskPushNotificationConfig":{"url":5}}}"#,
        r#"{"tenant":null,"metadata":{"a":[1,2.5,-3]}}"#,
        r#"{"id":"t","historyLength":-1,"pageSize":"x","status":"NOPE"}"#,
        r#"{"pageSize":2.5,"statusTimestampAfter":"yesterday"}"#,
        r#"{"statusTimestampAfter":"2025-01-01T00:00:00Z","includeArtifacts":"no"}"#,
        r#"{"taskId":"t","url":"https://x","authentication":{"scheme":5}}"#,
        r#"{"taskId":"t","url":"https://x","token":[]}"#,
        // A derived enum refused: serde_json's text reader words it otherwise.
        r#"{"reminder":{"propagate":[]}}"#,
        r#"{"taskId":"t","reminder":{"body":"b","roleHint":5}}"#,
        r#"{"reminder":{"roleHint":{"user":null,"system":null}}}"#,
        r#"{"reminder":{"roleHint":{}}}"#,
        r#"{"reminder":{"roleHint":{"user":null},"propagate":"subagents"}}"#,
    ] {
        out.push(format!(r#"{{"jsonrpc":"2.0","id":2,"method":"M","params":{p}}}"#));
    }
    out
}

/// Checks the body reads the same both ways (the fuzz property, every
/// method's request decoded from either form); whether its params were
/// read lent.
fn same_reading(body: &str) -> bool {
    crate::fuzzing::check_lent_agrees(body.as_bytes(), LIMITS);
    matches!(
        parse_request_lent(body.as_bytes(), LIMITS),
        Ok(LentRequest { params: Some(Params::Text(_)), .. })
    )
}

#[test]
fn every_body_reads_as_its_value_reads() {
    for body in envelope_cases() {
        same_reading(&body);
    }
    let cases = params_cases();
    let lent = cases.iter().filter(|body| same_reading(body)).count();
    assert_eq!(lent, cases.len() - 1, "all but the one with a repeated key are read lent");
}

#[test]
fn a_plain_body_is_read_lent() {
    let body = r#"{"jsonrpc":"2.0","id":"a","method":"SendMessage","params":{"message":{"parts":[]}}}"#;
    let r = parse_request_lent(body.as_bytes(), LIMITS).unwrap();
    assert!(matches!(r.method, Cow::Borrowed("SendMessage")));
    assert!(matches!(r.params, Some(Params::Text(t)) if t.get() == r#"{"message":{"parts":[]}}"#));
}

fn id(text: &str) -> Id {
    Id::from_text(text).unwrap()
}

#[test]
fn ids_are_echoed_as_written_and_long_ones_refused() {
    for text in ["1E2", "-1.50", r#""a\u00e9\n""#, "null", "100000000000000000000000000001"] {
        for params in ["{}", r#"{"\u0069d":"t"}"#] {
            // The second is not plain: the `Value` reading must keep the text too.
            let body = format!(r#"{{"jsonrpc":"2.0","id":{text},"method":"GetTask","params":{params}}}"#);
            let r = parse_request_lent(body.as_bytes(), LIMITS).unwrap();
            assert_eq!(r.id.as_ref().map(Id::get), Some(text), "{body}");
            let r = super::super::parse_request(body.as_bytes()).unwrap();
            assert_eq!(r.id.as_ref().map(Id::get), Some(text), "{body}");
        }
    }
    let long = format!(r#""{}""#, "x".repeat(300));
    for params in ["{}", r#"{"\u0069d":"t"}"#] {
        let body = format!(r#"{{"jsonrpc":"2.0","id":{long},"method":"GetTask","params":{params}}}"#);
        let e = parse_request_lent(body.as_bytes(), LIMITS).unwrap_err();
        assert_eq!((e.error.kind, &e.id), (crate::ErrorKind::InvalidRequest, &Id::null()), "{body}");
        assert!(e.error.message.contains("256"), "{}", e.error.message);
    }
}

#[test]
fn a_request_without_an_id_is_a_notification_and_a_null_id_is_not() {
    for params in ["{}", r#"{"\u0069d":"t"}"#] {
        let body = format!(r#"{{"jsonrpc":"2.0","method":"GetTask","params":{params}}}"#);
        assert_eq!(parse_request_lent(body.as_bytes(), LIMITS).unwrap().id, None, "{body}");
        let body = format!(r#"{{"jsonrpc":"2.0","id":null,"method":"GetTask","params":{params}}}"#);
        assert_eq!(parse_request_lent(body.as_bytes(), LIMITS).unwrap().id, Some(Id::null()), "{body}");
    }
    // An invalid request without an id is answered, with id null.
    let e = parse_request_lent(br#"{"jsonrpc":"2.0","method":5}"#, LIMITS).unwrap_err();
    assert_eq!(e.id, Id::null());
}

#[test]
fn a_member_named_twice_is_an_invalid_request_naming_it() {
    for (body, id, member) in [
        (
            r#"{"jsonrpc":"2.0","id":"a","method":"GetTask","params":{"id":"x","id":"y"}}"#,
            id(r#""a""#),
            "params.id",
        ),
        (
            r#"{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{"message":{"parts":[{"text":"a","text":"b"}]}}}"#,
            id("7"),
            "params.message.parts[0].text",
        ),
        (r#"{"jsonrpc":"2.0","method":"GetTask","method":"CancelTask","id":"b"}"#, id(r#""b""#), "method"),
        (r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"GetTask"}"#, Id::null(), "id"),
        (r#"{"jsonrpc":"2.0","id":1,"\u0069d":1,"method":"GetTask"}"#, Id::null(), "id"),
    ] {
        let e = parse_request_lent(body.as_bytes(), LIMITS).unwrap_err();
        assert_eq!(e.error.kind, crate::ErrorKind::InvalidRequest, "{body}");
        assert_eq!(e.error.kind.codes().jsonrpc, -32600);
        assert_eq!(e.id, id, "{body}");
        assert_eq!(e.error.violations[0].field, member, "{body}");
        assert!(e.error.message.contains(&format!("`{member}`")), "{}", e.error.message);
    }
}

/// The unbounded reader (the fuzz targets') reads a body as the server
/// does: a repeated member is an invalid request with the body's id, not
/// the last one's value; nesting past serde_json's recursion limit is a
/// parse error.
#[test]
fn the_unbounded_reader_refuses_what_the_server_refuses() {
    let body = r#"{"jsonrpc":"2.0","id":7,"method":"GetTask","params":{"id":"a","id":"b"}}"#;
    let e = super::super::parse_request(body.as_bytes()).unwrap_err();
    assert_eq!((e.error.kind, e.id.get()), (crate::ErrorKind::InvalidRequest, "7"));
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{{"x":{}{}}}}}"#,
        "[".repeat(200),
        "]".repeat(200)
    );
    let e = super::super::parse_request(deep.as_bytes()).unwrap_err();
    assert_eq!(e.error.kind, crate::ErrorKind::ParseError, "{:?}", e.error);
    let ok = r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"a"}}"#;
    assert_eq!(super::super::parse_request(ok.as_bytes()).unwrap().method, "GetTask");
}
