//! The agent card as a prost `AgentCard` (GetExtendedAgentCard). The two
//! members the data model keeps as raw ProtoJSON (`signatures`, the OAuth2
//! scheme) are read member by member.

use super::pb;
use super::wkt::struct_out;
use agentd_proto::{AgentCard, AgentSkill, SecurityRequirement, SecurityScheme};
use pb::o_auth_flows::Flow;
use pb::security_scheme::Scheme;
use serde_json::Value;
use std::collections::HashMap;

impl From<AgentCard> for pb::AgentCard {
    fn from(c: AgentCard) -> Self {
        pb::AgentCard {
            name: c.name,
            description: c.description,
            supported_interfaces: c
                .supported_interfaces
                .into_iter()
                .map(|i| pb::AgentInterface {
                    url: i.url,
                    protocol_binding: i.protocol_binding,
                    tenant: i.tenant,
                    protocol_version: i.protocol_version,
                })
                .collect(),
            provider: c.provider.map(|p| pb::AgentProvider { url: p.url, organization: p.organization }),
            version: c.version,
            documentation_url: c.documentation_url,
            capabilities: Some(pb::AgentCapabilities {
                streaming: c.capabilities.streaming,
                push_notifications: c.capabilities.push_notifications,
                extensions: c
                    .capabilities
                    .extensions
                    .into_iter()
                    .map(|e| pb::AgentExtension {
                        uri: e.uri,
                        description: e.description,
                        required: e.required,
                        params: e.params.map(struct_out),
                    })
                    .collect(),
                extended_agent_card: c.capabilities.extended_agent_card,
            }),
            security_schemes: c.security_schemes.into_iter().map(|(k, s)| (k, scheme(s))).collect(),
            security_requirements: requirements(c.security_requirements),
            default_input_modes: c.default_input_modes,
            default_output_modes: c.default_output_modes,
            skills: c.skills.into_iter().map(skill).collect(),
            signatures: c.signatures.iter().map(signature).collect(),
            icon_url: c.icon_url,
        }
    }
}

fn skill(s: AgentSkill) -> pb::AgentSkill {
    pb::AgentSkill {
        id: s.id,
        name: s.name,
        description: s.description,
        tags: s.tags,
        examples: s.examples,
        input_modes: s.input_modes,
        output_modes: s.output_modes,
        security_requirements: requirements(s.security_requirements),
    }
}

fn requirements(r: Vec<SecurityRequirement>) -> Vec<pb::SecurityRequirement> {
    r.into_iter()
        .map(|r| pb::SecurityRequirement {
            schemes: r.schemes.into_iter().map(|(k, v)| (k, pb::StringList { list: v.list })).collect(),
        })
        .collect()
}

fn scheme(s: SecurityScheme) -> pb::SecurityScheme {
    let scheme = match s {
        SecurityScheme::ApiKey(k) => Scheme::ApiKeySecurityScheme(pb::ApiKeySecurityScheme {
            description: k.description,
            location: k.location,
            name: k.name,
        }),
        SecurityScheme::HttpAuth(h) => Scheme::HttpAuthSecurityScheme(pb::HttpAuthSecurityScheme {
            description: h.description,
            scheme: h.scheme,
            bearer_format: h.bearer_format,
        }),
        SecurityScheme::OAuth2(v) => Scheme::Oauth2SecurityScheme(oauth2(&v)),
        SecurityScheme::OpenIdConnect(o) => {
            Scheme::OpenIdConnectSecurityScheme(pb::OpenIdConnectSecurityScheme {
                description: o.description,
                open_id_connect_url: o.open_id_connect_url,
            })
        }
        SecurityScheme::MutualTls(m) => {
            Scheme::MtlsSecurityScheme(pb::MutualTlsSecurityScheme { description: m.description })
        }
    };
    pb::SecurityScheme { scheme: Some(scheme) }
}

/// A string member by its ProtoJSON name or its proto name.
fn s(v: &Value, camel: &str, snake: &str) -> String {
    v.get(camel).or_else(|| v.get(snake)).and_then(Value::as_str).unwrap_or_default().to_owned()
}

fn scopes(v: &Value) -> HashMap<String, String> {
    v.get("scopes")
        .and_then(Value::as_object)
        .map(|m| m.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned()))).collect())
        .unwrap_or_default()
}

fn oauth2(v: &Value) -> pb::OAuth2SecurityScheme {
    let flows = v.get("flows");
    let member = |camel: &str, snake: &str| flows.and_then(|f| f.get(camel).or_else(|| f.get(snake)));
    #[allow(deprecated)] // implicit and password are deprecated, still part of 1.0
    let flow = if let Some(f) = member("authorizationCode", "authorization_code") {
        Some(Flow::AuthorizationCode(pb::AuthorizationCodeOAuthFlow {
            authorization_url: s(f, "authorizationUrl", "authorization_url"),
            token_url: s(f, "tokenUrl", "token_url"),
            refresh_url: s(f, "refreshUrl", "refresh_url"),
            scopes: scopes(f),
            pkce_required: f.get("pkceRequired").or_else(|| f.get("pkce_required")).and_then(Value::as_bool)
                == Some(true),
        }))
    } else if let Some(f) = member("clientCredentials", "client_credentials") {
        Some(Flow::ClientCredentials(pb::ClientCredentialsOAuthFlow {
            token_url: s(f, "tokenUrl", "token_url"),
            refresh_url: s(f, "refreshUrl", "refresh_url"),
            scopes: scopes(f),
        }))
    } else if let Some(f) = member("deviceCode", "device_code") {
        Some(Flow::DeviceCode(pb::DeviceCodeOAuthFlow {
            device_authorization_url: s(f, "deviceAuthorizationUrl", "device_authorization_url"),
            token_url: s(f, "tokenUrl", "token_url"),
            refresh_url: s(f, "refreshUrl", "refresh_url"),
            scopes: scopes(f),
        }))
    } else if let Some(f) = member("implicit", "implicit") {
        Some(Flow::Implicit(pb::ImplicitOAuthFlow {
            authorization_url: s(f, "authorizationUrl", "authorization_url"),
            refresh_url: s(f, "refreshUrl", "refresh_url"),
            scopes: scopes(f),
        }))
    } else {
        member("password", "password").map(|f| {
            Flow::Password(pb::PasswordOAuthFlow {
                token_url: s(f, "tokenUrl", "token_url"),
                refresh_url: s(f, "refreshUrl", "refresh_url"),
                scopes: scopes(f),
            })
        })
    };
    pb::OAuth2SecurityScheme {
        description: s(v, "description", "description"),
        flows: flows.map(|_| pb::OAuthFlows { flow }),
        oauth2_metadata_url: s(v, "oauth2MetadataUrl", "oauth2_metadata_url"),
    }
}

fn signature(v: &Value) -> pb::AgentCardSignature {
    pb::AgentCardSignature {
        protected: s(v, "protected", "protected"),
        signature: s(v, "signature", "signature"),
        header: v.get("header").and_then(Value::as_object).cloned().map(struct_out),
    }
}
