//! The agent card: built once at start from what the listener really does
//! (bindings, capabilities, security, extensions), served at
//! `/.well-known/agent-card.json` with `Cache-Control`, `ETag` and
//! `Last-Modified`, and as the extended card to authenticated callers; and
//! with JWT issuers, the RFC 9728 protected-resource metadata.

use crate::extensions::ExtensionRegistry;
use agentd_proto::{
    AgentCapabilities, AgentCard, AgentInterface, AgentProvider, AgentSkill, HttpAuthSecurityScheme,
    MutualTlsSecurityScheme, OpenIdConnectSecurityScheme, SecurityRequirement, SecurityScheme, StringList,
};
use std::collections::BTreeMap;

/// Paths of the two HTTP bindings under the base URL (gRPC is at its root).
pub const JSONRPC_PATH: &str = "/a2a/jsonrpc";
pub const REST_PATH: &str = "/a2a/rest";
pub const CARD_PATH: &str = "/.well-known/agent-card.json";

#[derive(Clone, Debug)]
pub struct CardConfig {
    pub name: String,
    pub description: String,
    pub version: String,
    /// Base URL clients reach this listener at, e.g. `http://127.0.0.1:7420`.
    pub base_url: String,
    pub streaming: bool,
    pub push_notifications: bool,
    /// The credentials the listener takes, declared as security schemes.
    pub security: CardSecurity,
    pub input_modes: Vec<String>,
    pub output_modes: Vec<String>,
    pub skills: Vec<AgentSkill>,
    /// Who runs the agent, if the operator says.
    pub provider: Option<AgentProvider>,
    pub documentation_url: Option<String>,
    /// `Cache-Control: max-age` in seconds.
    pub max_age_secs: u32,
}

/// What authenticates a caller, as the card declares it.
#[derive(Clone, Debug, Default)]
pub struct CardSecurity {
    /// Bearer tokens: static ones, or JWTs of issuers without discovery.
    pub bearer: bool,
    /// Some bearer tokens are JWTs (the scheme's `bearerFormat`).
    pub jwt: bool,
    /// The discovery URLs of the OpenID Connect issuers.
    pub openid_connect: Vec<String>,
    /// Client certificates (mutual TLS).
    pub mtls: bool,
    /// RFC 9728 metadata: the resource identifier tokens are issued for,
    /// and the issuers (authorization servers) that issue them.
    pub resource: Option<String>,
    pub authorization_servers: Vec<String>,
}

impl CardSecurity {
    /// The schemes by name, and one requirement per scheme: any one of
    /// them authenticates a caller.
    fn schemes(&self) -> (BTreeMap<String, SecurityScheme>, Vec<SecurityRequirement>) {
        let mut schemes = BTreeMap::new();
        if self.bearer {
            let scheme = SecurityScheme::HttpAuth(HttpAuthSecurityScheme {
                description: "A bearer token issued by the operator of this agent or its identity provider"
                    .into(),
                scheme: "Bearer".into(),
                bearer_format: if self.jwt { "JWT".into() } else { String::new() },
            });
            schemes.insert("bearer".to_owned(), scheme);
        }
        for (i, url) in self.openid_connect.iter().enumerate() {
            let name = if i == 0 { "oidc".to_owned() } else { format!("oidc{}", i + 1) };
            let scheme = SecurityScheme::OpenIdConnect(OpenIdConnectSecurityScheme {
                description: "An access token of this OpenID Connect provider, as a bearer token".into(),
                open_id_connect_url: url.clone(),
            });
            schemes.insert(name, scheme);
        }
        if self.mtls {
            let scheme = SecurityScheme::MutualTls(MutualTlsSecurityScheme {
                description: "A client certificate issued under the operator's client CA".into(),
            });
            schemes.insert("mtls".to_owned(), scheme);
        }
        let requirements = schemes
            .keys()
            .map(|name| SecurityRequirement {
                schemes: BTreeMap::from([(name.clone(), StringList::default())]),
            })
            .collect();
        (schemes, requirements)
    }

    /// The RFC 9728 protected-resource metadata document, when issuers are
    /// configured.
    fn resource_metadata(&self, name: &str, documentation: Option<&str>) -> Option<Vec<u8>> {
        let resource = self.resource.as_ref().filter(|_| !self.authorization_servers.is_empty())?;
        let mut doc = serde_json::json!({
            "resource": resource,
            "authorization_servers": self.authorization_servers,
            "bearer_methods_supported": ["header"],
            "resource_name": name,
        });
        if let Some(url) = documentation {
            doc["resource_documentation"] = url.into();
        }
        if self.mtls {
            doc["tls_client_certificate_bound_access_tokens"] = false.into();
        }
        serde_json::to_vec(&doc).ok()
    }
}

/// The card and its precomputed HTTP caching headers.
pub struct CardService {
    pub card: AgentCard,
    /// `/.well-known/oauth-protected-resource`, when JWT issuers are configured.
    pub resource_metadata: Option<Vec<u8>>,
    pub json: Vec<u8>,
    pub etag: String,
    pub last_modified: String,
    pub max_age_secs: u32,
}

impl CardService {
    pub fn new(cfg: CardConfig, extensions: &ExtensionRegistry) -> Self {
        let base = cfg.base_url.trim_end_matches('/');
        let interface = |path: &str, binding: &str| AgentInterface {
            url: format!("{base}{path}"),
            protocol_binding: binding.into(),
            tenant: String::new(),
            protocol_version: agentd_proto::PROTOCOL_VERSION.into(),
        };
        let (security_schemes, security_requirements) = cfg.security.schemes();
        let resource_metadata = cfg.security.resource_metadata(&cfg.name, cfg.documentation_url.as_deref());
        #[cfg_attr(not(feature = "grpc"), allow(unused_mut))]
        let mut supported_interfaces =
            vec![interface(JSONRPC_PATH, "JSONRPC"), interface(REST_PATH, "HTTP+JSON")];
        // gRPC clients dial `host:port` (no scheme, no path).
        #[cfg(feature = "grpc")]
        supported_interfaces.push(AgentInterface { url: grpc_target(base), ..interface("", "GRPC") });
        let card = AgentCard {
            name: cfg.name,
            description: cfg.description,
            supported_interfaces,
            provider: cfg.provider,
            version: cfg.version,
            documentation_url: cfg.documentation_url,
            capabilities: AgentCapabilities {
                streaming: Some(cfg.streaming),
                push_notifications: Some(cfg.push_notifications),
                extensions: extensions.card_entries(),
                extended_agent_card: Some(true),
            },
            security_schemes,
            security_requirements,
            default_input_modes: cfg.input_modes,
            default_output_modes: cfg.output_modes,
            skills: cfg.skills,
            signatures: Vec::new(),
            icon_url: None,
        };
        let json = serde_json::to_vec(&card).unwrap_or_default();
        // An ETag only has to change with the card: a 64-bit hash of it,
        // the same in every replica of one build (SipHash with fixed keys;
        // a SHA-256 of the card was 5% of the instructions of a start).
        let etag = {
            use std::hash::{Hash, Hasher};
            let mut h = std::hash::DefaultHasher::new();
            json.hash(&mut h);
            format!("\"{:016x}\"", h.finish())
        };
        let last_modified = chrono::Utc::now().format("%a, %d %b %Y %H:%M:%S GMT").to_string();
        Self { card, resource_metadata, json, etag, last_modified, max_age_secs: cfg.max_age_secs }
    }
}

/// `host:port` of a base URL: the scheme and any path dropped, the
/// scheme's default port added when the URL names none.
pub fn grpc_target(base_url: &str) -> String {
    let (scheme, rest) = base_url.split_once("://").unwrap_or(("http", base_url));
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let authority = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    // A port follows the last `:`, unless that `:` is inside an IPv6 literal.
    let has_port = authority.rsplit_once(':').is_some_and(|(_, p)| !p.contains(']'));
    if has_port {
        authority.to_owned()
    } else {
        let port = if scheme.eq_ignore_ascii_case("https") { 443 } else { 80 };
        format!("{authority}:{port}")
    }
}

/// The skill every agentd agent has.
pub fn chat_skill() -> AgentSkill {
    AgentSkill {
        id: "chat".into(),
        name: "Chat".into(),
        description: "Talk with the agent: each message is a turn of the conversation named by contextId."
            .into(),
        tags: vec!["chat".into(), "conversation".into()],
        examples: vec!["Summarise the open incidents".into()],
        input_modes: Vec::new(),
        output_modes: Vec::new(),
        security_requirements: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::{CardConfig, CardService, grpc_target};
    use crate::extensions::ExtensionRegistry;

    /// The card lists the gRPC interface exactly when the binding is built in.
    #[test]
    fn the_card_lists_grpc_only_when_it_is_served() {
        let cfg = CardConfig {
            name: "a".into(),
            description: String::new(),
            version: "1".into(),
            base_url: "http://127.0.0.1:7420".into(),
            streaming: true,
            push_notifications: true,
            security: Default::default(),
            input_modes: Vec::new(),
            output_modes: Vec::new(),
            skills: Vec::new(),
            provider: None,
            documentation_url: None,
            max_age_secs: 0,
        };
        let card = CardService::new(cfg, &ExtensionRegistry::new(Vec::new())).card;
        let bindings: Vec<&str> =
            card.supported_interfaces.iter().map(|i| i.protocol_binding.as_str()).collect();
        let expected: &[&str] = if cfg!(feature = "grpc") {
            &["JSONRPC", "HTTP+JSON", "GRPC"]
        } else {
            &["JSONRPC", "HTTP+JSON"]
        };
        assert_eq!(bindings, expected);
    }

    #[test]
    fn the_grpc_interface_is_host_and_port() {
        assert_eq!(grpc_target("http://127.0.0.1:7420"), "127.0.0.1:7420");
        assert_eq!(grpc_target("http://127.0.0.1:7420/"), "127.0.0.1:7420");
        assert_eq!(grpc_target("https://agent.example.com/a2a"), "agent.example.com:443");
        assert_eq!(grpc_target("http://[::1]:9000"), "[::1]:9000");
        assert_eq!(grpc_target("http://[::1]"), "[::1]:80");
        assert_eq!(grpc_target("http://u:p@host:81/x"), "host:81");
    }
}
