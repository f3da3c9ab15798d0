//! Browsers and the A2A endpoints. A web page of another site can make a
//! browser send a "simple" POST (`text/plain`, no preflight) to any
//! address, the daemon's on loopback included, and a name of that site
//! can be rebound to 127.0.0.1 so that its pages are same-origin with the
//! daemon. Without credentials configured everybody is the local operator,
//! so either would let any page the user opens act on every task.
//!
//! On the A2A endpoints (JSON-RPC, REST, gRPC):
//!
//! - a request with an `Origin` header must come from the daemon's own
//!   origin: the host it was reached at, or the host of `public_url`
//!   (always: a client certificate is sent by a browser on its own too);
//! - without credentials configured, the host a request names (`Host`, or
//!   HTTP/2's `:authority`) must be a loopback address, `localhost` or the
//!   host of `public_url`.
//!
//! A request without `Origin` is not a browser's cross-site one, nor is a
//! request without a host a browser's. The card, `/healthz`, `/readyz`,
//! `/metrics`, the extension documents and the console's files stay open:
//! they act on nothing. The console is served by the daemon, so its calls
//! are same-origin.

use crate::errors::{jsonrpc_error, rest_error};
use crate::state::AppState;
use agentd_proto::{A2aError, ErrorKind};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::{StatusCode, header};
use std::net::IpAddr;

/// Refuses a cross-site or rebound request to an A2A endpoint (403),
/// before anything else of it is read.
pub async fn check(State(state): State<AppState>, req: Request, next: Next) -> Response {
    match refusal(&state, &req) {
        Some(refused) => refused,
        None => next.run(req).await,
    }
}

/// The answer refusing `req` when it is a cross-site or rebound request to
/// an A2A endpoint; `None` when it may go on.
pub fn refusal(state: &AppState, req: &Request) -> Option<Response> {
    let grpc = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/grpc"));
    let path = req.uri().path();
    let jsonrpc = path.starts_with(crate::card::JSONRPC_PATH);
    if !(grpc || jsonrpc || path.starts_with(crate::card::REST_PATH)) {
        return None;
    }
    // Borrowed, compared without regard to case: every request to an
    // endpoint passes here.
    let host = req
        .uri()
        .authority()
        .map(http::uri::Authority::as_str)
        .or_else(|| req.headers().get(header::HOST).and_then(|h| h.to_str().ok()));
    let public = state.config.public_url.as_deref().and_then(authority_of);
    if let Some(origin) = req.headers().get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        let from = authority_of(origin);
        let own = from
            .as_deref()
            .is_some_and(|a| host.is_some_and(|h| h.eq_ignore_ascii_case(a)) || public.as_deref() == Some(a));
        if !own {
            let e = A2aError::new(
                ErrorKind::PermissionDenied,
                format!(
                    "a page of another origin ({origin}) may not call this agent: a request with an Origin \
                     header must come from the agent's own origin ({}{})",
                    host.map_or("the host it is reached at".to_owned(), |h| {
                        format!("http(s)://{}", h.to_ascii_lowercase())
                    }),
                    public.as_deref().map_or(String::new(), |p| format!(" or public_url's {p}")),
                ),
            )
            .with_reason("ORIGIN_NOT_ALLOWED")
            .with_meta("header", "Origin");
            return Some(refuse(grpc, jsonrpc, &e));
        }
    }
    if !state.auth.is_protected()
        && let Some(h) = host
        && !local_host(h, public.as_deref())
    {
        let h = h.to_ascii_lowercase();
        let e = A2aError::new(
            ErrorKind::PermissionDenied,
            format!(
                "without credentials this agent answers only requests to a loopback address, localhost \
                 or the host of public_url, not to {h} (a name rebound to this machine); \
                 configure auth.tokens, auth.issuers or tls.client_ca to serve other names"
            ),
        )
        .with_reason("HOST_NOT_ALLOWED")
        .with_meta("header", "Host");
        return Some(refuse(grpc, jsonrpc, &e));
    }
    None
}

fn refuse(grpc: bool, jsonrpc: bool, e: &A2aError) -> Response {
    if grpc {
        #[cfg(feature = "grpc")]
        return crate::grpc::to_status(e).into_http();
    }
    if jsonrpc {
        let mut r = jsonrpc_error(&agentd_proto::jsonrpc::Id::null(), e);
        *r.status_mut() = StatusCode::FORBIDDEN;
        return r;
    }
    rest_error(e)
}

/// `host[:port]` of a URL or an origin, lowercase; `None` for `null` or
/// what is not one.
fn authority_of(url: &str) -> Option<String> {
    let (_, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    (!authority.is_empty()).then(|| authority.to_ascii_lowercase())
}

/// The host of `host[:port]` (an IPv6 literal without its brackets).
fn host_of(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    authority
        .rsplit_once(':')
        .map_or(authority, |(h, port)| if port.chars().all(|c| c.is_ascii_digit()) { h } else { authority })
}

/// A loopback address, `localhost`, or the host of `public_url`.
fn local_host(authority: &str, public: Option<&str>) -> bool {
    let host = host_of(authority).trim_end_matches('.');
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.to_canonical().is_loopback())
        || public.is_some_and(|p| host_of(p).eq_ignore_ascii_case(host))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_and_origins_are_read_as_browsers_send_them() {
        assert_eq!(authority_of("https://Evil.example"), Some("evil.example".into()));
        assert_eq!(authority_of("http://127.0.0.1:7601"), Some("127.0.0.1:7601".into()));
        assert_eq!(authority_of("null"), None);
        for ok in [
            "127.0.0.1:7601",
            "127.1.2.3",
            "localhost:7601",
            "[::1]:7601",
            "localhost.",
            "[::ffff:127.0.0.1]:1",
            // The Host header's case is the client's: the check ignores it.
            "LocalHost:7601",
            "[::FFFF:127.0.0.1]:1",
        ] {
            assert!(local_host(ok, None), "{ok}");
        }
        for bad in [
            "rebind.evil.example:7601",
            "10.0.0.1:7601",
            "[::2]:7601",
            "localhost.evil.example",
            "0.0.0.0:7601",
        ] {
            assert!(!local_host(bad, None), "{bad}");
        }
        assert!(local_host("agent.example.com", Some("agent.example.com:443")));
        assert!(local_host("agent.example.com:8443", Some("agent.example.com")));
        assert!(local_host("Agent.Example.COM", Some("agent.example.com")));
        assert!(!local_host("LOCALHOST.Evil.example", None));
    }
}
