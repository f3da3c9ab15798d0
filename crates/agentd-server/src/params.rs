//! Service parameters of a request (§3.2.6): authentication, `A2A-Version`
//! (header or query parameter) and extension activation, resolved once per
//! request before dispatch.

use crate::auth::{AuthFailure, PeerAddr, PeerIdentity};
use crate::extensions::{self, Activated};
use crate::state::{AppState, VersionPolicy};
use agentd_core::Principal;
use agentd_proto::{A2aError, ErrorKind};
use http::HeaderMap;
use std::fmt::Write as _;

/// Who is calling and what the request activated.
pub struct RequestContext {
    pub principal: Principal,
    pub activated: Activated,
}

/// Authentication outcome before any dispatch: 401 on failure. `peer`:
/// what the connection's client certificate says.
pub async fn authenticate(
    state: &AppState,
    headers: &HeaderMap,
    peer: Option<&PeerIdentity>,
) -> Result<Principal, AuthFailure> {
    let mut values = headers.get_all(http::header::AUTHORIZATION).iter();
    let first = values.next();
    // Two credentials are refused, not chosen between: a proxy in front
    // may have judged the request by the other one.
    if values.next().is_some() && state.auth.is_protected() {
        return Err(AuthFailure::Duplicate);
    }
    let value = match first.map(|v| v.to_str()) {
        Some(Ok(v)) => Some(v),
        // Credentials the server cannot read are refused, not taken for
        // none: that would fall back on the connection's client
        // certificate, or answer "a token is required" to a caller who
        // sent one. An open listener reads no credentials at all.
        Some(Err(_)) if state.auth.is_protected() => return Err(AuthFailure::NotAscii),
        Some(Err(_)) | None => None,
    };
    state.auth.authenticate(value, peer).await
}

/// Who a request's share of the body budget (and of the open streams)
/// counts against: its principal or, without credentials configured
/// (everyone is the local operator), the peer it came from, counted as
/// the connection caps count it (an IPv6 address as its /64, which one
/// host may take any address of).
pub fn budget_holder(state: &AppState, principal: &Principal, peer: Option<&PeerAddr>) -> String {
    if state.auth.is_protected() { principal.id.clone() } else { peer_holder(peer.map(|p| p.0)) }
}

fn peer_holder(peer: Option<std::net::IpAddr>) -> String {
    match peer {
        Some(ip) => {
            // Sized for the longest address: `format!` grew it twice.
            let mut holder = String::with_capacity("peer:".len() + 39);
            let _ = write!(holder, "peer:{}", crate::listen::peer_of(ip));
            holder
        }
        None => "peer:unknown".to_owned(),
    }
}

/// Checks `A2A-Version` (header first, then the `A2A-Version` query
/// parameter). Major.Minor only; a patch number is ignored.
/// A header value that is not visible ASCII is refused as a version this
/// agent does not speak (no version is written so), rather than taken for
/// an absent header, which the lenient policy would let through.
pub fn check_version(state: &AppState, headers: &HeaderMap, query: Option<&str>) -> Result<(), A2aError> {
    let header = match headers.get("a2a-version").map(|v| v.to_str()) {
        Some(Ok(v)) => Some(v.trim().to_owned()),
        Some(Err(_)) => return Err(unsupported_version("(a value that is not ASCII text)")),
        None => None,
    };
    let value = header.or_else(|| query_version(query)).unwrap_or_default();
    if value.is_empty() {
        return match state.config.version_policy {
            VersionPolicy::Lenient => Ok(()),
            VersionPolicy::Strict => Err(unsupported_version("(none, which means 0.3)")),
        };
    }
    if version_supported(&value) { Ok(()) } else { Err(unsupported_version(&value)) }
}

/// The first `A2A-Version` query parameter, decoded as the REST binding
/// decodes every query pair (so it is the very pair `query_params` drops).
pub(crate) fn query_version(query: Option<&str>) -> Option<String> {
    crate::rest::form_pairs(query?)
        .into_iter()
        .find_map(|(k, v)| k.eq_ignore_ascii_case("A2A-Version").then_some(v))
}

/// Whether a non-empty `A2A-Version` value is 1.0 (a patch number is ignored).
pub(crate) fn version_supported(value: &str) -> bool {
    let mut it = value.split('.');
    let (major, minor) = (it.next().map(str::trim), it.next().map(str::trim).unwrap_or("0"));
    major == Some("1") && minor == "0"
}

fn unsupported_version(got: &str) -> A2aError {
    A2aError::new(
        ErrorKind::VersionNotSupported,
        format!("A2A-Version {got} is not supported; this agent speaks {}", agentd_proto::PROTOCOL_VERSION),
    )
    .with_meta("supportedVersions", agentd_proto::PROTOCOL_VERSION)
}

/// Version check and extension activation for `method`.
pub fn service_params(
    state: &AppState,
    principal: Principal,
    headers: &HeaderMap,
    query: Option<&str>,
    method: &str,
) -> Result<RequestContext, A2aError> {
    check_version(state, headers, query)?;
    let activated = state.extensions.activate(method, &extensions::requested(headers)?)?;
    Ok(RequestContext { principal, activated })
}

#[cfg(test)]
mod holder_tests {
    use super::peer_holder;

    #[test]
    fn addresses_of_one_ipv6_64_hold_one_share_and_ipv4_its_own() {
        let of = |s: &str| peer_holder(Some(s.parse().unwrap()));
        assert_eq!(of("2001:db8:1:2::1"), of("2001:db8:1:2:ffff:1:2:3"), "one /64, one holder");
        assert_ne!(of("2001:db8:1:2::1"), of("2001:db8:1:3::1"), "the next /64 is another");
        assert_eq!(of("::ffff:192.0.2.7"), of("192.0.2.7"), "IPv4-mapped is the IPv4 address");
        assert_ne!(of("192.0.2.7"), of("192.0.2.8"));
        assert_eq!(peer_holder(None), "peer:unknown");
    }
}
