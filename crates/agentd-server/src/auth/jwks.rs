//! An issuer's signing keys: its JWKS, found through its discovery document
//! or at a configured URL, fetched at the first token, kept for `max_age`,
//! and fetched again early when a token names a `kid` the set lacks (keys
//! rotate) — at most once per `min_refresh`, so a flood of made-up `kid`s
//! costs the issuer one request per interval. One fetch runs at a time;
//! requests waiting for it then use what it brought.

use super::AuthFailure;
use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::Value;
use std::str::FromStr;
use std::sync::RwLock;
use std::time::{Duration, Instant};

/// Largest discovery document or JWKS read.
const MAX_DOCUMENT_BYTES: usize = 512 * 1024;

pub enum KeySource {
    Jwks(String),
    /// The discovery document's URL and the issuer it must name.
    Discovery(String, String),
}

pub struct KeyCache {
    source: KeySource,
    http: agentd_client::LazyHttp,
    min_refresh: Duration,
    max_age: Duration,
    state: RwLock<State>,
    fetching: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct State {
    keys: Vec<Key>,
    fetched: Option<Instant>,
    /// The last fetch made for an unknown `kid`.
    forced: Option<Instant>,
    /// The last failed fetch and why.
    failed: Option<(Instant, String)>,
}

#[derive(Clone)]
struct Key {
    kid: Option<String>,
    alg: Option<Algorithm>,
    key: DecodingKey,
}

impl KeyCache {
    pub fn new(
        source: KeySource,
        http: agentd_client::LazyHttp,
        min_refresh: Duration,
        max_age: Duration,
    ) -> Self {
        Self {
            source,
            http,
            min_refresh,
            max_age,
            state: RwLock::new(State::default()),
            fetching: tokio::sync::Mutex::new(()),
        }
    }

    pub fn discovery_url(&self) -> Option<&str> {
        match &self.source {
            KeySource::Discovery(url, _) => Some(url),
            KeySource::Jwks(_) => None,
        }
    }

    /// The key that verifies a token of `alg` naming `kid`.
    pub async fn key(&self, kid: Option<&str>, alg: Algorithm) -> Result<DecodingKey, AuthFailure> {
        if let Some(k) = self.cached(kid, alg, true) {
            return Ok(k);
        }
        let _one = self.fetching.lock().await;
        // Decided under the lock, with what an earlier holder fetched.
        let now = Instant::now();
        let since = |t: Option<Instant>| t.is_none_or(|t| now.duration_since(t) >= self.min_refresh);
        let (due, unknown_kid_allowed, failed_allowed) = {
            let s = self.read();
            let due = s.fetched.is_none_or(|t| now.duration_since(t) >= self.max_age);
            (due, since(s.forced), since(s.failed.as_ref().map(|f| f.0)))
        };
        if let Some(k) = self.cached(kid, alg, true) {
            return Ok(k);
        }
        let fetch = failed_allowed && (due || unknown_kid_allowed);
        if fetch {
            let result = self.fetch().await;
            let mut s = self.state.write().unwrap_or_else(|p| p.into_inner());
            if !due {
                s.forced = Some(now);
            }
            match result {
                Ok(keys) => {
                    tracing::debug!(keys = keys.len(), "fetched the issuer's keys");
                    s.keys = keys;
                    s.fetched = Some(now);
                    s.failed = None;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot fetch the issuer's keys");
                    s.failed = Some((now, e));
                }
            }
        }
        // Old keys still verify while the issuer cannot be reached.
        if let Some(k) = self.cached(kid, alg, false) {
            return Ok(k);
        }
        let s = self.read();
        match (&s.failed, s.keys.is_empty()) {
            (Some((_, why)), true) => Err(AuthFailure::Unavailable(why.clone())),
            _ => Err(AuthFailure::Rejected(match kid {
                Some(kid) => format!("the key {kid:?} is not among the issuer's keys"),
                None => "the token names no key (kid) and the issuer has more than one".into(),
            })),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|p| p.into_inner())
    }

    /// A key of the set for `kid` and `alg` (without a `kid`, the only key
    /// of `alg`'s family); `fresh`: only from a set younger than `max_age`.
    fn cached(&self, kid: Option<&str>, alg: Algorithm, fresh: bool) -> Option<DecodingKey> {
        let s = self.read();
        let fetched = s.fetched?;
        if fresh && fetched.elapsed() >= self.max_age {
            return None;
        }
        let fits = |k: &&Key| k.key.family() == alg.family() && k.alg.is_none_or(|a| a == alg);
        let mut candidates = s.keys.iter().filter(fits);
        match kid {
            Some(kid) => candidates.find(|k| k.kid.as_deref() == Some(kid)).map(|k| k.key.clone()),
            None => {
                let first = candidates.next()?;
                candidates.next().is_none().then(|| first.key.clone())
            }
        }
    }

    async fn fetch(&self) -> Result<Vec<Key>, String> {
        let client = self.http.get()?;
        let jwks_url = match &self.source {
            KeySource::Jwks(url) => url.clone(),
            KeySource::Discovery(url, issuer) => {
                let doc = get_json(client, url).await?;
                // OpenID Connect Discovery §4.3: the document is the issuer's own.
                if doc.get("issuer").and_then(Value::as_str) != Some(issuer.as_str()) {
                    return Err(format!("the discovery document at {url} does not name the issuer {issuer}"));
                }
                doc.get("jwks_uri")
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("the discovery document at {url} has no jwks_uri"))?
                    .to_owned()
            }
        };
        let set = get_json(client, &jwks_url).await?;
        let entries = set
            .get("keys")
            .and_then(Value::as_array)
            .ok_or_else(|| format!("the JWKS at {jwks_url} has no keys"))?;
        Ok(entries.iter().filter_map(signing_key).collect())
    }
}

/// A verification key of the set, or `None` for what cannot verify an
/// asymmetric signature: encryption keys, shared secrets (`oct`), unknown types.
fn signing_key(v: &Value) -> Option<Key> {
    let jwk: Jwk = serde_json::from_value(v.clone()).ok()?;
    if matches!(jwk.common.public_key_use, Some(ref u) if *u != PublicKeyUse::Signature) {
        return None;
    }
    if matches!(jwk.algorithm, AlgorithmParameters::OctetKey(_)) {
        return None;
    }
    let alg = match &jwk.common.key_algorithm {
        Some(a) => Some(Algorithm::from_str(&a.to_string()).ok()?),
        None => None,
    };
    let key = DecodingKey::from_jwk(&jwk).ok()?;
    Some(Key { kid: jwk.common.key_id.clone(), alg, key })
}

async fn get_json(client: &reqwest::Client, url: &str) -> Result<Value, String> {
    let mut resp = client.get(url).send().await.map_err(|e| format!("GET {url}: {e}"))?;
    if !resp.status().is_success() {
        return Err(format!("GET {url}: HTTP {}", resp.status()));
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| format!("GET {url}: {e}"))? {
        if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
            return Err(format!("GET {url}: larger than {MAX_DOCUMENT_BYTES} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&body).map_err(|e| format!("GET {url}: not JSON: {e}"))
}

/// The HTTP client of every issuer's key fetches, built at the first one.
/// The issuers are the operator's: no SSRF guard (a loopback issuer is fine).
pub fn http_client() -> agentd_client::LazyHttp {
    agentd_client::LazyHttp::new(|| {
        reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(10))
            .user_agent(concat!("agentd/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("cannot build the HTTP client for the token issuers: {e}"))
    })
}
