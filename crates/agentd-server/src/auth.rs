//! Authentication: `Authorization: Bearer <token>` against configured token
//! digests. Tokens are kept only as SHA-256 digests and compared in
//! constant time. With no tokens configured (allowed only on loopback),
//! every caller is `operator:local`.

use agentd_core::Principal;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

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

#[derive(Debug, PartialEq, Eq)]
pub enum AuthFailure {
    Missing,
    Invalid,
}

#[derive(Clone, Debug, Default)]
pub struct Authenticator {
    tokens: Vec<TokenEntry>,
}

impl Authenticator {
    pub fn new(tokens: Vec<TokenEntry>) -> Self {
        Self { tokens }
    }
    /// Whether any credential is configured (the listener is protected).
    pub fn is_protected(&self) -> bool {
        !self.tokens.is_empty()
    }
    /// Resolves the caller from the `Authorization` header value.
    pub fn authenticate(&self, authorization: Option<&str>) -> Result<Principal, AuthFailure> {
        if !self.is_protected() {
            return Ok(Principal::local_operator());
        }
        let value = authorization.ok_or(AuthFailure::Missing)?.trim();
        let (scheme, token) = value.split_once(' ').ok_or(AuthFailure::Invalid)?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Err(AuthFailure::Invalid);
        }
        let presented = digest(token.trim());
        // Every entry is compared, so timing does not reveal which matched.
        let mut found = None;
        for t in &self.tokens {
            if bool::from(t.sha256.ct_eq(&presented)) {
                found = Some(t.principal.clone());
            }
        }
        found.ok_or(AuthFailure::Invalid)
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

    #[test]
    fn bearer_tokens_map_to_their_principal() {
        let a = auth();
        assert_eq!(a.authenticate(Some("Bearer s3cret")).unwrap().id, "user:alice");
        assert_eq!(a.authenticate(Some("bearer op")).unwrap().id, "operator:ops");
    }

    #[test]
    fn missing_wrong_or_malformed_credentials_are_refused() {
        let a = auth();
        assert_eq!(a.authenticate(None), Err(AuthFailure::Missing));
        assert_eq!(a.authenticate(Some("Bearer nope")), Err(AuthFailure::Invalid));
        assert_eq!(a.authenticate(Some("Basic s3cret")), Err(AuthFailure::Invalid));
        assert_eq!(a.authenticate(Some("s3cret")), Err(AuthFailure::Invalid));
    }

    #[test]
    fn an_open_listener_maps_everyone_to_the_local_operator() {
        let a = Authenticator::default();
        assert_eq!(a.authenticate(None).unwrap(), Principal::local_operator());
    }

    #[test]
    fn bad_hex_digests_are_config_errors() {
        let p = Principal::local_operator();
        assert!(TokenEntry::from_hex("zz", p.clone()).is_err());
        assert!(TokenEntry::from_hex("abcd", p).is_err());
    }
}
