//! The properties the `rest_route` fuzz target checks (`fuzz/`), shared
//! with the stable regression test (`tests/suite/fuzz_regressions.rs`); those of
//! `send_message` are in [`send`].
//!
//! An input is text, one item a line (bytes that are not UTF-8 are
//! replaced): the HTTP method, the request target (`path?query`, the path
//! below the REST base), then any number of `A2A-Extensions` header values.
//! Nothing may panic; a matched route must be found again from its
//! canonical path; the query must decode into the params dispatch would
//! see, and those must decode (or be refused cleanly) as the route's
//! request, round-tripping like JSON-RPC params do.

pub mod send;

use crate::extensions;
use crate::operation::OperationKind as K;
use crate::params::{query_version, version_supported};
use crate::rest::{Route, form_pairs, match_route, query_params};
use http::{HeaderMap, HeaderValue, Method};
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::{Map, Value};

/// Runs one `rest_route` input; panics when a property fails.
pub fn check_rest_input(bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    let mut lines = text.split('\n');
    let method = lines.next().unwrap_or_default();
    let target = lines.next().unwrap_or_default();
    let Ok(method) = Method::from_bytes(method.as_bytes()) else { return };
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (target, None),
    };
    check_route(&method, path, query);
    // The same target as the HTTP stack hands it over, when it is one.
    if let Ok(uri) = target.parse::<http::Uri>() {
        check_route(&method, uri.path(), uri.query());
    }

    let mut headers = HeaderMap::new();
    for value in lines {
        if let Ok(v) = HeaderValue::from_str(value) {
            headers.append("a2a-extensions", v);
        }
    }
    // Over the caps the list is refused, never truncated.
    let Ok(uris) = extensions::requested(&headers) else { return };
    assert!(uris.len() <= extensions::MAX_REQUESTED, "{} URIs past the cap", uris.len());
    for (i, uri) in uris.iter().enumerate() {
        assert!(!uri.is_empty() && uri.trim() == uri && !uri.contains(','), "requested URI {uri:?}");
        assert!(!uris[..i].contains(uri), "requested URI {uri:?} listed twice");
    }
}

fn check_route(method: &Method, path: &str, query: Option<&str>) {
    let mut params = Map::new();
    query_params(query, &mut params);
    assert!(
        !params.keys().any(|k| k.eq_ignore_ascii_case("A2A-Version")),
        "A2A-Version is a service parameter, not a request member"
    );
    // A pair the query parser drops as `A2A-Version` is the one the version
    // check reads: nothing is dropped unchecked.
    let dropped =
        query.is_some_and(|q| form_pairs(q).iter().any(|(k, _)| k.eq_ignore_ascii_case("A2A-Version")));
    let version = query_version(query);
    assert_eq!(
        version.is_some(),
        dropped,
        "query {query:?}: A2A-Version dropped but not checked, or the reverse"
    );
    if let Some(v) = version {
        let _ = version_supported(&v);
    }

    let Some(route) = match_route(method, path) else { return };
    let canonical = canonical_path(&route);
    assert_eq!(
        match_route(method, &canonical).as_ref(),
        Some(&route),
        "{method} {path:?} matched {route:?}, its canonical path {canonical:?} does not"
    );
    // Path parameters win over the query, as in `rest::handle`.
    for (k, v) in &route.path_params {
        params.insert((*k).to_owned(), Value::String(v.clone()));
    }
    agentd_proto::fuzzing::check_params_roundtrip(route.op.method(), Value::Object(params));
}

/// The path a client would build for `route`, every parameter encoded.
fn canonical_path(route: &Route) -> String {
    let param = |name: &str| {
        let v = route.path_params.iter().find(|(k, _)| *k == name).map_or("", |(_, v)| v.as_str());
        utf8_percent_encode(v, NON_ALPHANUMERIC).to_string()
    };
    let tail = match route.op {
        K::SendMessage => "message:send".to_owned(),
        K::SendStreamingMessage => "message:stream".to_owned(),
        K::ListTasks => "tasks".to_owned(),
        K::GetExtendedCard => "extendedAgentCard".to_owned(),
        K::GetTask => format!("tasks/{}", param("id")),
        K::CancelTask => format!("tasks/{}:cancel", param("id")),
        K::SubscribeToTask => format!("tasks/{}:subscribe", param("id")),
        K::InjectReminder => format!("tasks/{}:injectReminder", param("taskId")),
        K::CreatePushConfig | K::ListPushConfigs => {
            format!("tasks/{}/pushNotificationConfigs", param("taskId"))
        }
        K::GetPushConfig | K::DeletePushConfig => {
            format!("tasks/{}/pushNotificationConfigs/{}", param("taskId"), param("id"))
        }
        K::SubscribeEvents => panic!("match_route returned the events feed, which has no REST route"),
    };
    if route.path_params.iter().any(|(k, _)| *k == "tenant") {
        format!("/{}/{tail}", param("tenant"))
    } else {
        format!("/{tail}")
    }
}
