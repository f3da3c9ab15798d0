//! JWT bearer tokens of an OpenID Connect issuer the test runs (discovery
//! and JWKS on 127.0.0.1, ES256 keys it generates): a valid token is its
//! configured principal and role; every kind of bad token is a 401 that
//! runs nothing; an unknown `kid` refreshes the keys once, then is refused;
//! keys rotate without a restart; the card and the RFC 9728 metadata name
//! the issuer.

use crate::common::oidc::{SigningKey, TestIssuer, now, raw_token, with_payload};
use crate::common::*;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::Method;
use serde_json::{Value, json};

const RESOURCE: &str = "https://agent.test/a2a";

struct Setup {
    d: Daemon,
    issuer: TestIssuer,
    key: SigningKey,
    _tmp: tempfile::TempDir,
}

impl Setup {
    async fn start() -> Setup {
        let issuer = TestIssuer::start().await;
        let key = SigningKey::new("k1");
        issuer.publish(&[&key]);
        let tmp = tempfile::tempdir().expect("tempdir");
        let yaml = format!(
            "auth:\n  resource: \"{RESOURCE}\"\n  issuers:\n    - issuer: \"{}\"\n      role_claim: roles\n      \
             roles: {{agentd-operators: operator}}\n      leeway_secs: 5\n",
            issuer.url
        );
        let conf = write_config(tmp.path(), &yaml);
        let d = Daemon::start_in(
            &tmp.path().join("data"),
            &["--agent", "tck", "--config", conf.to_str().unwrap()],
        );
        Setup { d, issuer, key, _tmp: tmp }
    }

    /// A valid token of `sub` with `roles`.
    fn token(&self, sub: &str, roles: &[&str]) -> String {
        let mut c = self.issuer.claims(sub, RESOURCE);
        c["roles"] = json!(roles);
        self.key.sign(&c)
    }

    fn as_jwt(&self, token: &str) -> Daemon {
        self.d.as_token(Some(token))
    }

    /// Tasks every owner has, as an operator sees them.
    async fn all_tasks(&self) -> u64 {
        let ops = self.as_jwt(&self.token("root", &["agentd-operators"]));
        let l = ops.call("ListTasks", json!({})).await;
        l["totalSize"].as_u64().unwrap_or_else(|| panic!("{l}"))
    }

    /// SendMessage with `token` on JSON-RPC and REST: the HTTP status of
    /// each, and the challenge of the JSON-RPC answer.
    async fn send_with(&self, token: &str) -> (u16, u16, String) {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                          "params": {"message": user_msg(&uniq("m"), "hi")}});
        let r =
            self.d.http.post(self.d.jsonrpc_url()).bearer_auth(token).json(&body).send().await.expect("rpc");
        let challenge =
            r.headers().get("www-authenticate").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
        let rpc = r.status().as_u16();
        let rest = self
            .d
            .http
            .post(self.d.rest_url("/message:send"))
            .bearer_auth(token)
            .json(&json!({"message": user_msg(&uniq("m"), "hi")}))
            .send()
            .await
            .expect("rest")
            .status()
            .as_u16();
        (rpc, rest, challenge)
    }
}

#[tokio::test]
async fn a_valid_token_is_its_configured_principal_and_role() {
    let s = Setup::start().await;
    let alice = s.as_jwt(&s.token("alice", &[]));
    let r = alice.call("SendMessage", json!({"message": user_msg(&uniq("tck-input-required"), "x")})).await;
    let id = r["task"]["id"].as_str().unwrap_or_else(|| panic!("{r}")).to_owned();
    // `sub` → `user:alice`, a user: she sees her task, bob (a user too) does not.
    assert_eq!(alice.call("ListTasks", json!({})).await["totalSize"], 1);
    let bob = s.as_jwt(&s.token("bob", &["unrelated-group"]));
    assert_eq!(bob.call("ListTasks", json!({})).await["totalSize"], 0);
    let (status, body) = bob.rest(Method::GET, &format!("/tasks/{id}"), None).await;
    assert_eq!(status, 404, "another user's task: {body}");
    // The `roles` claim's `agentd-operators` maps to the operator role.
    assert_eq!(s.all_tasks().await, 1);
    // One fetch of the keys served every token so far.
    assert_eq!(s.issuer.jwks_fetches(), 1);
}

#[tokio::test]
async fn every_bad_token_is_401_and_runs_nothing() {
    let s = Setup::start().await;
    let c = |sub: &str| s.issuer.claims(sub, RESOURCE);
    let t = now();
    let mut expired = c("alice");
    (expired["iat"], expired["nbf"], expired["exp"]) = (json!(t - 900), json!(t - 900), json!(t - 60));
    let mut early = c("alice");
    early["nbf"] = json!(t + 120);
    let mut wrong_iss = c("alice");
    wrong_iss["iss"] = json!("http://127.0.0.1:9/other-issuer");
    let mut wrong_aud = c("alice");
    wrong_aud["aud"] = json!("https://another-agent.test");
    let hs256 = |secret: &[u8]| {
        let mut h = Header::new(Algorithm::HS256);
        h.kid = Some("k1".into());
        jsonwebtoken::encode(&h, &c("alice"), &EncodingKey::from_secret(secret).expect("key")).expect("hs256")
    };
    let mut escalated = c("alice");
    escalated["roles"] = json!(["agentd-operators"]);
    let stranger = SigningKey::new("k1");
    let bad = [
        ("expired", s.key.sign(&expired)),
        ("not yet valid", s.key.sign(&early)),
        ("wrong issuer", s.key.sign(&wrong_iss)),
        ("wrong audience", s.key.sign(&wrong_aud)),
        ("alg none", raw_token(&json!({"alg": "none", "typ": "JWT", "kid": "k1"}), &c("alice"), b"")),
        ("HS256 with the public key", hs256(&s.key.public_raw)),
        ("HS256 with the JWK", hs256(s.key.jwk().to_string().as_bytes())),
        ("tampered payload", with_payload(&s.key.sign(&c("alice")), &escalated)),
        ("another key under the known kid", stranger.sign(&c("alice"))),
        ("not a JWT", "a.b".to_owned()),
    ];
    for (name, token) in &bad {
        let (rpc, rest, challenge) = s.send_with(token).await;
        assert_eq!((rpc, rest), (401, 401), "{name}");
        assert!(challenge.contains("error=\"invalid_token\""), "{name}: {challenge}");
    }
    assert_eq!(s.all_tasks().await, 0, "no refused request ran");
    // The token the tampered one came from is fine.
    assert_eq!(s.send_with(&s.key.sign(&c("alice"))).await.0, 200);
}

#[tokio::test]
async fn an_unknown_kid_refreshes_the_keys_once_then_is_refused() {
    let s = Setup::start().await;
    assert_eq!(s.send_with(&s.token("alice", &[])).await.0, 200);
    assert_eq!(s.issuer.jwks_fetches(), 1);
    let other = SigningKey::new("unused");
    // Twenty tokens with made-up kids at once, then ten more one by one.
    let made_up = |i: usize| other.sign_as(&format!("made-up-{i}"), &s.issuer.claims("alice", RESOURCE));
    let flood: Vec<String> = (0..20).map(made_up).collect();
    let answers = futures::future::join_all(flood.iter().map(|t| s.send_with(t))).await;
    assert!(answers.iter().all(|(rpc, rest, _)| (*rpc, *rest) == (401, 401)), "{answers:?}");
    for i in 20..30 {
        assert_eq!(s.send_with(&made_up(i)).await.0, 401, "kid made-up-{i}");
    }
    assert_eq!(s.issuer.jwks_fetches(), 2, "thirty unknown kids: one refresh within the refresh interval");
    assert_eq!(s.send_with(&s.token("alice", &[])).await.0, 200, "known keys still verify");
}

#[tokio::test]
async fn keys_rotate_without_a_restart() {
    let s = Setup::start().await;
    assert_eq!(s.send_with(&s.token("alice", &[])).await.0, 200);
    let next = SigningKey::new("k2");
    s.issuer.publish(&[&next]);
    let mut c = s.issuer.claims("alice", RESOURCE);
    c["roles"] = json!([]);
    assert_eq!(s.send_with(&next.sign(&c)).await.0, 200, "a token of the new key");
    assert_eq!(s.issuer.jwks_fetches(), 2);
    assert_eq!(s.send_with(&s.key.sign(&c)).await.0, 401, "the retired key no longer verifies");
}

#[tokio::test]
async fn the_card_and_the_resource_metadata_name_the_issuer() {
    let s = Setup::start().await;
    let card: Value = reqwest::get(format!("{}/.well-known/agent-card.json", s.d.url))
        .await
        .expect("card")
        .json()
        .await
        .expect("json");
    let discovery = format!("{}/.well-known/openid-configuration", s.issuer.url);
    assert_eq!(card["securitySchemes"]["oidc"]["openIdConnectSecurityScheme"]["openIdConnectUrl"], discovery);
    let reqs = card["securityRequirements"].as_array().expect("requirements");
    assert!(reqs.iter().any(|r| r["schemes"].get("oidc").is_some()), "{card}");

    let r =
        reqwest::get(format!("{}/.well-known/oauth-protected-resource", s.d.url)).await.expect("metadata");
    assert_eq!(r.status(), 200);
    let meta: Value = r.json().await.expect("json");
    assert_eq!(meta["resource"], RESOURCE);
    assert_eq!(meta["authorization_servers"], json!([s.issuer.url]));
    assert_eq!(meta["bearer_methods_supported"], json!(["header"]));

    let (status, _, challenge) = s.send_with("").await;
    assert_eq!(status, 401);
    let want = format!("resource_metadata=\"{}/.well-known/oauth-protected-resource\"", s.d.url);
    assert!(challenge.contains(&want), "{challenge}");
}

#[tokio::test]
async fn an_issuer_that_cannot_be_reached_is_503_not_a_bad_token() {
    // Port 9 (discard) on loopback: nothing listens, the connection is refused.
    let dead = "http://127.0.0.1:9";
    let tmp = tempfile::tempdir().expect("tempdir");
    let yaml = format!(
        "auth:\n  resource: \"{RESOURCE}\"\n  issuers:\n    - issuer: \"{dead}\"\n      jwks_url: \"{dead}/jwks\"\n"
    );
    let conf = write_config(tmp.path(), &yaml);
    let d =
        Daemon::start_in(&tmp.path().join("data"), &["--agent", "tck", "--config", conf.to_str().unwrap()]);
    let key = SigningKey::new("k1");
    let t = now();
    let token = key.sign(&json!({"iss": dead, "sub": "alice", "aud": RESOURCE, "exp": t + 600}));
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}});
    let r = d.http.post(d.jsonrpc_url()).bearer_auth(&token).json(&body).send().await.expect("rpc");
    assert_eq!(r.status(), 503);
    let e: Value = r.json().await.expect("json");
    assert!(e["error"]["message"].as_str().unwrap_or_default().contains("cannot be reached"), "{e}");
    // The card declares a JWT bearer scheme (no discovery: no oidc scheme).
    let card: Value =
        reqwest::get(format!("{}/.well-known/agent-card.json", d.url)).await.unwrap().json().await.unwrap();
    assert_eq!(card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["bearerFormat"], "JWT", "{card}");
    assert!(card["securitySchemes"].get("oidc").is_none(), "{card}");
}
