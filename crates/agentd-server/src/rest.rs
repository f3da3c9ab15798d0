//! The HTTP+JSON/REST binding (§11). Routes are matched by hand on decoded
//! path segments because A2A puts custom verbs inside the last segment
//! (`/tasks/{id}:cancel`): the segment is split on its last `:` after
//! percent-decoding, and every route also exists under a `/{tenant}` prefix.

use crate::auth::{PeerAddr, PeerIdentity};
use crate::dispatch::{Outcome, execute};
use crate::errors::{json_bytes_response, json_response, rest_error, unauthenticated};
use crate::operation::OperationKind as K;
use crate::params::{authenticate, budget_holder, service_params};
use crate::routes::{read_body, with_extensions};
use crate::sse::{self, Framing};
use crate::state::AppState;
use agentd_proto::bounded;
use agentd_proto::validate::Params;
use agentd_proto::{A2aError, ErrorKind};
use axum::Extension;
use axum::body::Body;
use axum::extract::State;
use axum::response::Response;
use http::{HeaderMap, Method, StatusCode, Uri};
use percent_encoding::percent_decode_str;
use serde_json::{Map, Value};

/// A matched route: the operation and the params taken from the path.
#[derive(Debug, PartialEq)]
pub struct Route {
    pub op: K,
    pub path_params: Vec<(&'static str, String)>,
}

/// Matches decoded segments (after the REST base path) without a tenant.
fn match_plain(http: &Method, segs: &[String]) -> Option<Route> {
    let route = |op, path_params| Some(Route { op, path_params });
    let get = http == Method::GET;
    let post = http == Method::POST;
    match segs {
        [s] if s == "message:send" && post => route(K::SendMessage, vec![]),
        [s] if s == "message:stream" && post => route(K::SendStreamingMessage, vec![]),
        [s] if s == "tasks" && get => route(K::ListTasks, vec![]),
        [s] if s == "extendedAgentCard" && get => route(K::GetExtendedCard, vec![]),
        [t, idv] if t == "tasks" => {
            let (id, verb) = match idv.rsplit_once(':') {
                Some((id, v @ ("cancel" | "subscribe" | "injectReminder"))) => (id.to_owned(), Some(v)),
                _ => (idv.clone(), None),
            };
            match (verb, get, post) {
                (None, true, _) => route(K::GetTask, vec![("id", id)]),
                (Some("cancel"), _, true) => route(K::CancelTask, vec![("id", id)]),
                (Some("injectReminder"), _, true) => route(K::InjectReminder, vec![("taskId", id)]),
                (Some("subscribe"), true, _) | (Some("subscribe"), _, true) => {
                    route(K::SubscribeToTask, vec![("id", id)])
                }
                _ => None,
            }
        }
        [t, id, p] if t == "tasks" && p == "pushNotificationConfigs" => {
            let params = vec![("taskId", id.clone())];
            if post {
                route(K::CreatePushConfig, params)
            } else if get {
                route(K::ListPushConfigs, params)
            } else {
                None
            }
        }
        [t, id, p, cfg] if t == "tasks" && p == "pushNotificationConfigs" => {
            let params = vec![("taskId", id.clone()), ("id", cfg.clone())];
            if get {
                route(K::GetPushConfig, params)
            } else if http == Method::DELETE {
                route(K::DeletePushConfig, params)
            } else {
                None
            }
        }
        _ => None,
    }
}

/// Matches a path below the REST base, with or without a tenant prefix.
pub fn match_route(http: &Method, rest_path: &str) -> Option<Route> {
    let segs: Vec<String> = rest_path
        .trim_matches('/')
        .split('/')
        .map(|s| percent_decode_str(s).decode_utf8_lossy().into_owned())
        .collect();
    if let Some(r) = match_plain(http, &segs) {
        return Some(r);
    }
    let (tenant, rest) = segs.split_first()?;
    let mut r = match_plain(http, rest)?;
    r.path_params.push(("tenant", tenant.clone()));
    Some(r)
}

/// Query parameters as a params object; repeated keys and `a,b` lists
/// become arrays only for list-typed members.
pub(crate) fn query_params(query: Option<&str>, into: &mut Map<String, Value>) {
    let Some(q) = query else { return };
    for (k, v) in form_pairs(q) {
        if k.eq_ignore_ascii_case("A2A-Version") {
            continue;
        }
        into.insert(k, Value::String(v));
    }
}

/// `application/x-www-form-urlencoded` pairs, `+` and `%XX` decoded.
pub(crate) fn form_pairs(q: &str) -> Vec<(String, String)> {
    let dec = |s: &str| percent_decode_str(&s.replace('+', " ")).decode_utf8_lossy().into_owned();
    q.split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| match kv.split_once('=') {
            Some((k, v)) => (dec(k), dec(v)),
            None => (dec(kv), String::new()),
        })
        .collect()
}

pub async fn handle(
    State(state): State<AppState>,
    peer: Option<Extension<PeerIdentity>>,
    addr: Option<Extension<PeerAddr>>,
    http_method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let rest_path = uri.path().strip_prefix(crate::card::REST_PATH).unwrap_or("");
    let Some(route) = match_route(&http_method, rest_path) else {
        return rest_error(
            &A2aError::new(
                ErrorKind::MethodNotFound,
                format!("no A2A operation at {http_method} {}", uri.path()),
            )
            .with_reason("ROUTE_NOT_FOUND"),
        );
    };
    let principal = match authenticate(&state, &headers, peer.as_ref().map(|p| &p.0)).await {
        Ok(p) => p,
        Err(f) => return unauthenticated(&state.auth, &f),
    };
    let ctx = match service_params(&state, principal, &headers, uri.query(), route.op.method()) {
        Ok(c) => c,
        Err(e) => return rest_error(&e),
    };
    let holder = budget_holder(&state, &ctx.principal, addr.as_ref().map(|a| &a.0));
    let slot = match state.admission.stream_for(route.op, state.engine.metrics(), &holder) {
        Ok(s) => s,
        Err(e) => return with_extensions(rest_error(&e), &ctx.activated),
    };
    let mut params = Map::new();
    // The share of the body budget is held until the answer is built.
    let mut _share = None;
    if http_method == Method::POST {
        let (bytes, share) = match read_body(&state, &holder, &headers, body).await {
            Ok(b) => b,
            Err(e) => return rest_error(&e),
        };
        _share = Some(share);
        if !bytes.iter().all(u8::is_ascii_whitespace) {
            match bounded::parse(&bytes, state.config.json) {
                Ok(Value::Object(o)) => params = o,
                Ok(Value::Null) => {}
                Ok(_) => return rest_error(&A2aError::invalid_field("body", "must be a JSON object")),
                Err(e) => return rest_error(&e.to_a2a()),
            }
        }
        drop(bytes);
    } else {
        query_params(uri.query(), &mut params);
    }
    // Path parameters win over body and query.
    for (k, v) in route.path_params {
        params.insert(k.to_owned(), Value::String(v));
    }
    // The request's head, which shares the buffer hyper read it into, is
    // not kept while the operation waits (see the JSON-RPC handler).
    drop((headers, uri));
    let outcome = async {
        execute(
            &state,
            crate::metrics::Binding::Rest,
            &ctx,
            route.op.decode(Params::Value(Value::Object(params)), &ctx)?,
        )
        .await
        .map_err(crate::errors::json)
    };
    let response = match outcome.await {
        Ok(Outcome::Done) => json_response(StatusCode::OK, &Value::Object(Map::new())),
        Ok(Outcome::Value(reply)) => {
            match reply
                .into_json(b"", b"")
                .and_then(|json| crate::answers::hold(&state.admission, &holder, json))
            {
                Ok(json) => json_bytes_response(StatusCode::OK, json),
                Err(e) => rest_error(&e),
            }
        }
        Ok(Outcome::Stream(src)) => sse::response(&state, src, Framing::Rest, slot, holder),
        Err(e) => rest_error(&e),
    };
    with_extensions(response, &ctx.activated)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(method: Method, path: &str) -> Option<(K, Vec<(&'static str, String)>)> {
        match_route(&method, path).map(|r| (r.op, r.path_params))
    }

    #[test]
    fn custom_verbs_split_on_the_last_colon_after_decoding() {
        assert_eq!(r(Method::POST, "/tasks/a:b:cancel"), Some((K::CancelTask, vec![("id", "a:b".into())])));
        assert_eq!(r(Method::POST, "/tasks/t1%3Acancel"), Some((K::CancelTask, vec![("id", "t1".into())])));
        assert_eq!(
            r(Method::GET, "/tasks/t1:subscribe"),
            Some((K::SubscribeToTask, vec![("id", "t1".into())]))
        );
        assert_eq!(
            r(Method::POST, "/tasks/t1:subscribe"),
            Some((K::SubscribeToTask, vec![("id", "t1".into())]))
        );
        assert_eq!(r(Method::GET, "/tasks/x:other"), Some((K::GetTask, vec![("id", "x:other".into())])));
        assert_eq!(
            r(Method::POST, "/acme/tasks/t1:injectReminder"),
            Some((K::InjectReminder, vec![("taskId", "t1".into()), ("tenant", "acme".into())]))
        );
        assert_eq!(r(Method::GET, "/tasks/t1:injectReminder"), None);
    }

    #[test]
    fn every_route_exists_under_a_tenant() {
        assert_eq!(
            r(Method::POST, "/acme/message:send"),
            Some((K::SendMessage, vec![("tenant", "acme".into())]))
        );
        assert_eq!(
            r(Method::DELETE, "/acme/tasks/t/pushNotificationConfigs/c"),
            Some((
                K::DeletePushConfig,
                vec![("taskId", "t".into()), ("id", "c".into()), ("tenant", "acme".into())]
            ))
        );
        assert_eq!(
            r(Method::GET, "/acme/extendedAgentCard"),
            Some((K::GetExtendedCard, vec![("tenant", "acme".into())]))
        );
    }

    #[test]
    fn wrong_methods_and_unknown_paths_do_not_match() {
        assert_eq!(r(Method::GET, "/message:send"), None);
        assert_eq!(r(Method::DELETE, "/tasks/t"), None);
        assert_eq!(r(Method::GET, "/nothing/here/at/all/x"), None);
    }

    #[test]
    fn query_pairs_are_decoded() {
        let mut m = Map::new();
        query_params(Some("pageSize=5&contextId=a%20b&A2A-Version=1.0&includeArtifacts=true"), &mut m);
        assert_eq!(m.get("pageSize"), Some(&Value::String("5".into())));
        assert_eq!(m.get("contextId"), Some(&Value::String("a b".into())));
        assert!(!m.contains_key("A2A-Version"));
    }
}
