//! Authentication: who is calling, before anything is dispatched.
//!
//! - Static bearer tokens, kept only as SHA-256 digests and compared in
//!   constant time (this file).
//! - JWT bearer tokens from OpenID Connect issuers, checked against the
//!   issuer's published keys (`jwt.rs`, keys in `jwks.rs`).
//! - A client certificate verified at the TLS handshake (`PeerIdentity`,
//!   made by the listener's `tls.rs`).
//!
//! An `Authorization` header decides when present; otherwise the client
//! certificate does. With nothing configured (allowed only on loopback),
//! every caller is `operator:local`.

mod jwks;
mod jwt;

pub use jwks::http_client as issuer_http_client;
pub use jwt::{Issuer, IssuerSettings, discovery_url_of};

use agentd_core::Principal;
use sha2::{Digest, Sha256};
use std::sync::Arc;
use subtle::ConstantTimeEq;

/// Where RFC 9728's metadata document is served.
pub const RESOURCE_METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// One configured credential.
#[derive(Clone, Debug)]
pub struct TokenEntry {
    pub sha256: [u8; 32],
    pub principal: Principal,
}

impl TokenEntry {
    pub fn from_secret(secret: &str, principal: Principal) -> Self {
        Self { sha256: digest(secret), principal }
    }
    /// From a hex SHA-256 digest as written in config files.
    pub fn from_hex(hex_digest: &str, principal: Principal) -> Result<Self, String> {
        let bytes = hex::decode(hex_digest.trim()).map_err(|e| format!("sha256 is not hex: {e}"))?;
        let sha256: [u8; 32] =
            bytes.try_into().map_err(|_| "sha256 must be 64 hex digits (32 bytes)".to_owned())?;
        Ok(Self { sha256, principal })
    }
}

pub fn digest(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

/// Who the client certificate of a connection says the caller is: set on
/// every request of a TLS connection that presented one (verified against
/// `tls.client_ca` at the handshake), or why it names no principal.
#[derive(Clone, Debug)]
pub struct PeerIdentity(pub Result<Principal, String>);

/// The address of the connection's peer (an IPv4-mapped IPv6 address as
/// its IPv4 address), set on every request the listener serves.
#[derive(Clone, Copy, Debug)]
pub struct PeerAddr(pub std::net::IpAddr);

/// The principal a request was authenticated as, set by a layer that
/// authenticated it before the handler (the gRPC binding's admission).
#[derive(Clone, Debug)]
pub struct Authenticated(pub Principal);

#[derive(Debug, PartialEq, Eq)]
pub enum AuthFailure {
    Missing,
    Invalid,
    /// An `Authorization` header with bytes outside visible ASCII, which
    /// no bearer token holds (RFC 6750 §2.1).
    NotAscii,
    /// More than one `Authorization` header: which one counts is where a
    /// proxy and this server could disagree, so neither does.
    Duplicate,
    /// A JWT that is well formed but refused, and why (said to the caller:
    /// expired, wrong audience… tell a client what to fix, not a secret).
    Rejected(String),
    /// The token's issuer could not be asked for its keys.
    Unavailable(String),
}

impl AuthFailure {
    /// The message of the 401 (or 503) answer.
    pub fn message(&self) -> String {
        match self {
            AuthFailure::Missing => {
                "this agent requires a bearer token (Authorization: Bearer <token>)".to_owned()
            }
            AuthFailure::Invalid => "the bearer token is not valid".to_owned(),
            AuthFailure::NotAscii => {
                "the Authorization header is not ASCII text (a bearer token is ASCII); it was refused, not ignored"
                    .to_owned()
            }
            AuthFailure::Duplicate => {
                "the request carries more than one Authorization header; send exactly one (it was refused, not taken for either)"
                    .to_owned()
            }
            AuthFailure::Rejected(why) => format!("the bearer token is not valid: {why}"),
            AuthFailure::Unavailable(why) => {
                format!("the token's issuer cannot be reached to check it: {why}")
            }
        }
    }
}

#[derive(Clone, Default)]
pub struct Authenticator {
    tokens: Vec<TokenEntry>,
    issuers: Vec<Arc<Issuer>>,
    /// Client certificates are required at the handshake.
    mtls: bool,
    /// RFC 9728 metadata URL named in challenges (when issuers are configured).
    metadata_url: Option<String>,
}

impl Authenticator {
    pub fn new(tokens: Vec<TokenEntry>) -> Self {
        Self { tokens, ..Self::default() }
    }
    /// Adds the JWT issuers.
    pub fn with_issuers(mut self, issuers: Vec<Issuer>) -> Self {
        self.issuers = issuers.into_iter().map(Arc::new).collect();
        self
    }
    /// Every connection presents a verified client certificate.
    pub fn with_mtls(mut self, mtls: bool) -> Self {
        self.mtls = mtls;
        self
    }
    /// The URL of this listener's protected-resource metadata, named in
    /// every challenge when JWT issuers are configured.
    pub fn set_metadata_url(&mut self, url: String) {
        if !self.issuers.is_empty() {
            self.metadata_url = Some(url);
        }
    }
    /// Whether any credential is configured (the listener is protected).
    pub fn is_protected(&self) -> bool {
        !self.tokens.is_empty() || !self.issuers.is_empty() || self.mtls
    }
    pub fn has_static_tokens(&self) -> bool {
        !self.tokens.is_empty()
    }
    pub fn issuers(&self) -> &[Arc<Issuer>] {
        &self.issuers
    }
    pub fn mtls(&self) -> bool {
        self.mtls
    }

    /// Resolves the caller from the `Authorization` header value and the
    /// connection's client certificate.
    pub async fn authenticate(
        &self,
        authorization: Option<&str>,
        peer: Option<&PeerIdentity>,
    ) -> Result<Principal, AuthFailure> {
        if !self.is_protected() {
            return Ok(Principal::local_operator());
        }
        let Some(value) = authorization else {
            return match peer {
                Some(PeerIdentity(Ok(p))) => Ok(p.clone()),
                Some(PeerIdentity(Err(why))) => Err(AuthFailure::Rejected(why.clone())),
                None => Err(AuthFailure::Missing),
            };
        };
        let (scheme, token) = value.trim().split_once(' ').ok_or(AuthFailure::Invalid)?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Err(AuthFailure::Invalid);
        }
        let token = token.trim();
        if let Some(p) = self.static_token(token) {
            return Ok(p);
        }
        if self.issuers.is_empty() {
            return Err(AuthFailure::Invalid);
        }
        jwt::verify(&self.issuers, token).await
    }

    fn static_token(&self, token: &str) -> Option<Principal> {
        let presented = digest(token);
        // Every entry is compared, so timing does not reveal which matched.
        let mut found = None;
        for t in &self.tokens {
            if bool::from(t.sha256.ct_eq(&presented)) {
                found = Some(t.principal.clone());
            }
        }
        found
    }

    /// The `WWW-Authenticate` value of a 401 (RFC 6750 §3, RFC 9728 §5.1).
    pub fn challenge(&self, failure: &AuthFailure) -> String {
        let mut c = "Bearer realm=\"agentd\"".to_owned();
        if !matches!(failure, AuthFailure::Missing) {
            c.push_str(", error=\"invalid_token\"");
        }
        if let Some(url) = &self.metadata_url {
            c.push_str(&format!(", resource_metadata=\"{url}\""));
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentd_core::PrincipalRole;

    fn auth() -> Authenticator {
        Authenticator::new(vec![
            TokenEntry::from_secret("s3cret", Principal::new("user:alice", PrincipalRole::User)),
            TokenEntry::from_hex(
                &hex::encode(digest("op")),
                Principal::new("operator:ops", PrincipalRole::Operator),
            )
            .unwrap(),
        ])
    }

    fn now<T>(f: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
    }

    #[test]
    fn bearer_tokens_map_to_their_principal() {
        let a = auth();
        assert_eq!(now(a.authenticate(Some("Bearer s3cret"), None)).unwrap().id, "user:alice");
        assert_eq!(now(a.authenticate(Some("bearer op"), None)).unwrap().id, "operator:ops");
    }

    #[test]
    fn missing_wrong_or_malformed_credentials_are_refused() {
        let a = auth();
        assert_eq!(now(a.authenticate(None, None)), Err(AuthFailure::Missing));
        assert_eq!(now(a.authenticate(Some("Bearer nope"), None)), Err(AuthFailure::Invalid));
        assert_eq!(now(a.authenticate(Some("Basic s3cret"), None)), Err(AuthFailure::Invalid));
        assert_eq!(now(a.authenticate(Some("s3cret"), None)), Err(AuthFailure::Invalid));
    }

    #[test]
    fn a_client_certificate_speaks_when_no_header_does() {
        let a = auth().with_mtls(true);
        let bot = Principal::new("agent:ci", PrincipalRole::Agent);
        let peer = PeerIdentity(Ok(bot.clone()));
        assert_eq!(now(a.authenticate(None, Some(&peer))).unwrap(), bot);
        assert_eq!(now(a.authenticate(Some("Bearer s3cret"), Some(&peer))).unwrap().id, "user:alice");
        let unnamed = PeerIdentity(Err("no CN".into()));
        assert_eq!(now(a.authenticate(None, Some(&unnamed))), Err(AuthFailure::Rejected("no CN".into())));
    }

    #[test]
    fn an_open_listener_maps_everyone_to_the_local_operator() {
        let a = Authenticator::default();
        assert_eq!(now(a.authenticate(None, None)).unwrap(), Principal::local_operator());
    }

    #[test]
    fn bad_hex_digests_are_config_errors() {
        let p = Principal::local_operator();
        assert!(TokenEntry::from_hex("zz", p.clone()).is_err());
        assert!(TokenEntry::from_hex("abcd", p).is_err());
    }
}
