//! JWT bearer tokens of OpenID Connect issuers: the signature checked with
//! a key of the issuer's JWKS, `iss`, `aud`, `exp` and `nbf` (with a small
//! leeway) checked, then claims mapped to a principal.
//!
//! Only asymmetric algorithms are accepted, each only with a key of its
//! family (`alg: none` does not parse; HS256 "signed" with a public key is
//! refused because no HMAC algorithm is ever allowed).

use super::AuthFailure;
use super::jwks::{KeyCache, KeySource};
use agentd_core::{Principal, PrincipalRole};
use jsonwebtoken::{Algorithm, Validation};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

/// Every asymmetric algorithm jsonwebtoken verifies.
const ASYMMETRIC: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// One issuer as the operator configures it.
#[derive(Clone, Debug)]
pub struct IssuerSettings {
    /// The `iss` its tokens carry.
    pub issuer: String,
    /// OpenID Connect discovery document naming `jwks_uri`.
    pub discovery_url: Option<String>,
    /// Or the JWKS directly.
    pub jwks_url: Option<String>,
    /// Accepted `aud` values (one of them must be in the token).
    pub audience: Vec<String>,
    /// Allowed algorithms by name; empty: every asymmetric one.
    pub algorithms: Vec<String>,
    pub leeway: Duration,
    /// The claim naming the caller, and the prefix of the principal id.
    pub id_claim: String,
    pub id_prefix: String,
    /// The claim whose values map to a role (`roles`, `groups`, `scope`…).
    pub role_claim: Option<String>,
    pub roles: BTreeMap<String, PrincipalRole>,
    pub default_role: PrincipalRole,
    /// Least time between two fetches of the JWKS for an unknown `kid`.
    pub min_refresh: Duration,
    /// Keys are fetched again when older than this.
    pub max_age: Duration,
}

/// A configured issuer with its key cache.
pub struct Issuer {
    settings: IssuerSettings,
    allowed: Vec<Algorithm>,
    keys: KeyCache,
}

impl std::fmt::Debug for Issuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Issuer").field("issuer", &self.settings.issuer).finish_non_exhaustive()
    }
}

impl Issuer {
    /// Checks the settings (the errors name the setting) and prepares the
    /// key cache; nothing is fetched until a token of this issuer arrives.
    pub fn new(settings: IssuerSettings, http: agentd_client::LazyHttp) -> Result<Issuer, String> {
        if settings.issuer.trim().is_empty() {
            return Err("issuer: must name the `iss` of the issuer's tokens".into());
        }
        if settings.audience.is_empty() {
            return Err("audience: none is set (set auth.resource or the issuer's audience)".into());
        }
        let source = match (&settings.discovery_url, &settings.jwks_url) {
            (Some(_), Some(_)) => return Err("give either discovery_url or jwks_url, not both".into()),
            (_, Some(j)) => KeySource::Jwks(check_url(j, "jwks_url")?),
            (Some(d), None) => KeySource::Discovery(check_url(d, "discovery_url")?, settings.issuer.clone()),
            (None, None) => {
                let d = discovery_url_of(&settings.issuer);
                KeySource::Discovery(check_url(&d, "issuer")?, settings.issuer.clone())
            }
        };
        let mut allowed = Vec::new();
        for name in &settings.algorithms {
            let alg =
                Algorithm::from_str(name).map_err(|_| format!("algorithms: unknown algorithm {name:?}"))?;
            if !ASYMMETRIC.contains(&alg) {
                return Err(format!(
                    "algorithms: {name} is a shared-secret algorithm; only asymmetric ones (RS*, PS*, ES*, EdDSA) are accepted"
                ));
            }
            allowed.push(alg);
        }
        if allowed.is_empty() {
            allowed = ASYMMETRIC.to_vec();
        }
        if settings.id_claim.is_empty() {
            return Err("id_claim: must name a claim".into());
        }
        let keys = KeyCache::new(source, http, settings.min_refresh, settings.max_age);
        Ok(Issuer { settings, allowed, keys })
    }

    pub fn issuer(&self) -> &str {
        &self.settings.issuer
    }

    /// The discovery document's URL, if keys are found through one.
    pub fn discovery_url(&self) -> Option<&str> {
        self.keys.discovery_url()
    }

    async fn verify(&self, token: &str, header: &jsonwebtoken::Header) -> Result<Principal, AuthFailure> {
        if !self.allowed.contains(&header.alg) {
            return Err(rejected(format!("the algorithm {:?} is not accepted", header.alg)));
        }
        let key = self.keys.key(header.kid.as_deref(), header.alg).await?;
        let mut v = Validation::new(header.alg);
        v.leeway = self.settings.leeway.as_secs();
        v.validate_nbf = true;
        v.set_required_spec_claims(&["exp", "iss", "aud"]);
        v.set_issuer(&[&self.settings.issuer]);
        v.set_audience(&self.settings.audience);
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key, &v)
            .map_err(|e| rejected(describe(&e)))?;
        self.principal(&data.claims).map_err(rejected)
    }

    /// The principal the claims name: `id_prefix` + the `id_claim`, and the
    /// most privileged role any value of `role_claim` maps to (operator,
    /// then user, then agent), else `default_role`.
    fn principal(&self, claims: &Map<String, Value>) -> Result<Principal, String> {
        let s = &self.settings;
        let id = claim(claims, &s.id_claim)
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty())
            .ok_or_else(|| format!("the token has no {} claim", s.id_claim))?;
        let mut role = None;
        if let Some(name) = &s.role_claim {
            let spaced = name == "scope" || name == "scp";
            for value in claim(claims, name).map(|v| values(v, spaced)).unwrap_or_default() {
                if let Some(r) = s.roles.get(value) {
                    role = Some(role.map_or(*r, |have| more_privileged(have, *r)));
                }
            }
        }
        Ok(Principal::new(format!("{}{id}", s.id_prefix), role.unwrap_or(s.default_role)))
    }
}

/// Verifies `token` with the issuer its `iss` names.
pub(super) async fn verify(issuers: &[Arc<Issuer>], token: &str) -> Result<Principal, AuthFailure> {
    // A header that does not parse (not a JWT, `alg: none`, an unknown alg)
    // is a token no one issued.
    let header = jsonwebtoken::decode_header(token).map_err(|_| AuthFailure::Invalid)?;
    // The issuer is chosen by the unverified `iss`; its keys then verify the
    // signature and its settings every claim, `iss` included.
    #[derive(serde::Deserialize)]
    struct Iss {
        iss: Option<String>,
    }
    let iss = jsonwebtoken::dangerous::insecure_decode_claims::<Iss>(token)
        .ok()
        .and_then(|c| c.iss)
        .ok_or_else(|| rejected("the token names no issuer (iss)".into()))?;
    let issuer = issuers
        .iter()
        .find(|i| i.settings.issuer == iss)
        .ok_or_else(|| rejected(format!("the issuer {iss:?} is not trusted here")))?;
    issuer.verify(token, &header).await
}

fn rejected(why: String) -> AuthFailure {
    AuthFailure::Rejected(why)
}

fn describe(e: &jsonwebtoken::errors::Error) -> String {
    use jsonwebtoken::errors::ErrorKind as K;
    match e.kind() {
        K::ExpiredSignature => "the token has expired".into(),
        K::ImmatureSignature => "the token is not valid yet (nbf)".into(),
        K::InvalidIssuer => "the token's issuer (iss) is not the one expected".into(),
        K::InvalidAudience => "the token is not issued for this agent (aud)".into(),
        K::InvalidSignature => "the signature does not verify".into(),
        K::InvalidAlgorithm => "the algorithm does not match the key".into(),
        K::MissingRequiredClaim(c) => format!("the token has no {c} claim"),
        _ => format!("the token cannot be read: {e}"),
    }
}

fn check_url(url: &str, what: &str) -> Result<String, String> {
    let ok = url.starts_with("https://") || url.starts_with("http://");
    if ok { Ok(url.to_owned()) } else { Err(format!("{what}: {url:?} is not an http(s) URL")) }
}

/// OpenID Connect Discovery §4: the issuer with the well-known path appended.
pub fn discovery_url_of(issuer: &str) -> String {
    format!("{}/.well-known/openid-configuration", issuer.trim_end_matches('/'))
}

/// A claim by name, or by a dotted path into nested objects
/// (`realm_access.roles`) when no claim has the whole name.
fn claim<'a>(claims: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    claims.get(name).or_else(|| {
        let mut parts = name.split('.');
        let first = claims.get(parts.next()?)?;
        parts.try_fold(first, |v, k| v.get(k))
    })
}

/// A claim's values: a string (split at spaces for `scope`), or a list of strings.
fn values(v: &Value, spaced: bool) -> Vec<&str> {
    match v {
        Value::String(s) if spaced => s.split_whitespace().collect(),
        Value::String(s) => vec![s.as_str()],
        Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn more_privileged(a: PrincipalRole, b: PrincipalRole) -> PrincipalRole {
    let rank = |r: PrincipalRole| match r {
        PrincipalRole::Operator => 3,
        PrincipalRole::User => 2,
        PrincipalRole::Agent => 1,
        PrincipalRole::Anonymous => 0,
    };
    if rank(b) > rank(a) { b } else { a }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn settings() -> IssuerSettings {
        IssuerSettings {
            issuer: "https://idp.example.com".into(),
            discovery_url: None,
            jwks_url: None,
            audience: vec!["https://agent.example.com".into()],
            algorithms: Vec::new(),
            leeway: Duration::from_secs(30),
            id_claim: "sub".into(),
            id_prefix: "user:".into(),
            role_claim: Some("realm_access.roles".into()),
            roles: BTreeMap::from([
                ("agentd-operator".into(), PrincipalRole::Operator),
                ("bots".into(), PrincipalRole::Agent),
            ]),
            default_role: PrincipalRole::User,
            min_refresh: Duration::from_secs(30),
            max_age: Duration::from_secs(3600),
        }
    }

    fn issuer(s: IssuerSettings) -> Result<Issuer, String> {
        Issuer::new(s, agentd_client::LazyHttp::new(|| Err("no client in unit tests".into())))
    }

    #[test]
    fn claims_map_to_an_id_and_the_most_privileged_role() {
        let i = issuer(settings()).unwrap();
        let claims = |v: Value| v.as_object().unwrap().clone();
        let p = i.principal(&claims(
            json!({"sub": "alice", "realm_access": {"roles": ["bots", "agentd-operator"]}}),
        ));
        assert_eq!(p.unwrap(), Principal::new("user:alice", PrincipalRole::Operator));
        let p = i.principal(&claims(json!({"sub": "bob", "realm_access": {"roles": ["other"]}})));
        assert_eq!(p.unwrap().role, PrincipalRole::User, "no mapped value: the default role");
        assert!(i.principal(&claims(json!({"realm_access": {}}))).unwrap_err().contains("sub"));

        let mut s = settings();
        s.role_claim = Some("scope".into());
        s.roles = BTreeMap::from([("agentd:operate".into(), PrincipalRole::Operator)]);
        let i = issuer(s).unwrap();
        let p = i.principal(&claims(json!({"sub": "svc", "scope": "openid agentd:operate"}))).unwrap();
        assert_eq!(p.role, PrincipalRole::Operator, "scopes are space-separated");
    }

    #[test]
    fn shared_secret_and_unknown_algorithms_are_config_errors() {
        for bad in ["HS256", "none", "RS1"] {
            let mut s = settings();
            s.algorithms = vec![bad.into()];
            assert!(issuer(s).unwrap_err().starts_with("algorithms:"), "{bad}");
        }
        let mut s = settings();
        s.audience.clear();
        assert!(issuer(s).unwrap_err().contains("audience"));
    }

    #[test]
    fn the_discovery_url_defaults_to_the_issuer_s_well_known_one() {
        let i = issuer(settings()).unwrap();
        assert_eq!(i.discovery_url(), Some("https://idp.example.com/.well-known/openid-configuration"));
    }
}
