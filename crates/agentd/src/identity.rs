//! Who may call the daemon, from its configuration: static tokens, JWT
//! issuers, the listener's TLS and client certificates; and how the card
//! declares them (`docs/security.md`).

use crate::config::{Config, resolve_secret};
use agentd_core::Principal;
use agentd_server::{
    Authenticator, CardSecurity, ClientIdentityRule, Issuer, IssuerSettings, Tls, TlsSettings, TokenEntry,
};
use anyhow::Context;
use std::time::Duration;

/// The authenticator; issuers are checked here and fetched from at the
/// first token each signs.
pub fn authenticator(cfg: &Config) -> anyhow::Result<Authenticator> {
    let http = agentd_server::auth::issuer_http_client();
    let resource = cfg.auth.resource(cfg.public_url.as_deref());
    let mut issuers = Vec::new();
    for (i, c) in cfg.auth.issuers.iter().enumerate() {
        let audience = match c.audience.is_empty() {
            true => resource.map(str::to_owned).into_iter().collect(),
            false => c.audience.clone(),
        };
        let settings = IssuerSettings {
            issuer: c.issuer.clone(),
            discovery_url: c.discovery_url.clone(),
            jwks_url: c.jwks_url.clone(),
            audience,
            algorithms: c.algorithms.clone(),
            leeway: Duration::from_secs(c.leeway_secs),
            id_claim: c.id_claim.clone(),
            id_prefix: c.id_prefix.clone(),
            role_claim: c.role_claim.clone(),
            roles: c.roles.iter().map(|(k, r)| (k.clone(), r.principal_role())).collect(),
            default_role: c.default_role.principal_role(),
            min_refresh: Duration::from_secs(c.jwks_refresh_secs),
            max_age: Duration::from_secs(c.jwks_max_age_secs.max(1)),
        };
        issuers
            .push(Issuer::new(settings, http.clone()).map_err(|e| anyhow::anyhow!("auth.issuers[{i}].{e}"))?);
    }
    Ok(Authenticator::new(tokens(cfg)?).with_issuers(issuers).with_mtls(cfg.tls.client_ca.is_some()))
}

/// The listener's TLS, its files read now so a bad one stops the start.
pub fn tls(cfg: &Config) -> anyhow::Result<Option<Tls>> {
    let (Some(cert), Some(key)) = (&cfg.tls.cert, &cfg.tls.key) else {
        return Ok(None);
    };
    let id = &cfg.tls.client_identity;
    let settings = TlsSettings {
        cert: cert.clone(),
        key: key.clone(),
        client_ca: cfg.tls.client_ca.clone(),
        identity: ClientIdentityRule {
            from: id.from,
            prefix: id.prefix.clone(),
            role: id.role.principal_role(),
            roles: id.roles.iter().map(|(k, r)| (k.clone(), r.principal_role())).collect(),
        },
    };
    Tls::new(&settings).map(Some).map_err(anyhow::Error::msg)
}

/// The card's schemes for what is configured; `resource` names the agent
/// in its protected-resource metadata.
pub fn card_security(cfg: &Config, auth: &Authenticator, base_url: &str) -> CardSecurity {
    let issuers = auth.issuers();
    CardSecurity {
        bearer: auth.has_static_tokens() || issuers.iter().any(|i| i.discovery_url().is_none()),
        jwt: !issuers.is_empty(),
        openid_connect: issuers.iter().filter_map(|i| i.discovery_url().map(str::to_owned)).collect(),
        mtls: auth.mtls(),
        resource: Some(cfg.auth.resource(cfg.public_url.as_deref()).unwrap_or(base_url).to_owned()),
        authorization_servers: issuers.iter().map(|i| i.issuer().to_owned()).collect(),
    }
}

fn tokens(cfg: &Config) -> anyhow::Result<Vec<TokenEntry>> {
    let mut out = Vec::new();
    for t in &cfg.auth.tokens {
        let role = t.role.principal_role();
        let principal = Principal::new(t.id.clone(), role);
        let entry = match (&t.sha256, &t.token) {
            (Some(hex), _) => TokenEntry::from_hex(hex, principal)
                .map_err(|e| anyhow::anyhow!("auth.tokens[{}]: {e}", t.id))?,
            (None, Some(reference)) => TokenEntry::from_secret(
                &resolve_secret(reference).with_context(|| format!("auth.tokens[{}].token", t.id))?,
                principal,
            ),
            (None, None) => anyhow::bail!("auth.tokens[{}]: give `sha256` or `token`", t.id),
        };
        out.push(entry);
    }
    Ok(out)
}
