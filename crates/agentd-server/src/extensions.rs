//! Extension activation, the mechanism every agentd extension plugs into:
//! a client lists URIs in `A2A-Extensions` (or the legacy
//! `X-A2A-Extensions`); the server activates those it declares that apply
//! to the method, echoes exactly those in the response header, and never
//! emits an extension's payload to a request that did not activate it.

use agentd_proto::{A2aError, AgentExtension, ErrorKind, Metadata};
use http::HeaderMap;

/// An extension the card declares.
#[derive(Clone, Debug)]
pub struct DeclaredExtension {
    pub uri: String,
    pub description: String,
    pub required: bool,
    pub params: Option<Metadata>,
    /// The methods (JSON-RPC names) the extension applies to.
    pub methods: Vec<String>,
}

#[derive(Clone, Debug, Default)]
pub struct ExtensionRegistry {
    declared: Vec<DeclaredExtension>,
}

/// The extensions active for one request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Activated(pub Vec<String>);

impl Activated {
    pub fn contains(&self, uri: &str) -> bool {
        self.0.iter().any(|u| u == uri)
    }
    /// The response header value, `None` when nothing was activated.
    pub fn header_value(&self) -> Option<String> {
        (!self.0.is_empty()).then(|| self.0.join(", "))
    }
}

/// Every URI a request lists, across header lines and both header names.
pub fn requested(headers: &HeaderMap) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for name in ["a2a-extensions", "x-a2a-extensions"] {
        for value in headers.get_all(name) {
            let Ok(text) = value.to_str() else { continue };
            for uri in text.split(',').map(str::trim).filter(|u| !u.is_empty()) {
                if !out.iter().any(|u| u == uri) {
                    out.push(uri.to_owned());
                }
            }
        }
    }
    out
}

impl ExtensionRegistry {
    pub fn new(declared: Vec<DeclaredExtension>) -> Self {
        Self { declared }
    }
    /// The card entries.
    pub fn card_entries(&self) -> Vec<AgentExtension> {
        self.declared
            .iter()
            .map(|d| AgentExtension {
                uri: d.uri.clone(),
                description: d.description.clone(),
                required: d.required,
                params: d.params.clone(),
            })
            .collect()
    }
    /// requested ∩ declared ∩ applies-to-`method`; a required extension the
    /// client did not request is ExtensionSupportRequired.
    pub fn activate(&self, method: &str, requested: &[String]) -> Result<Activated, A2aError> {
        if let Some(missing) = self.declared.iter().find(|d| d.required && !requested.contains(&d.uri)) {
            return Err(A2aError::new(
                ErrorKind::ExtensionSupportRequired,
                format!(
                    "this agent requires the extension {}; list it in the A2A-Extensions header",
                    missing.uri
                ),
            )
            .with_meta("uri", &missing.uri));
        }
        Ok(Activated(
            self.declared
                .iter()
                .filter(|d| requested.contains(&d.uri) && d.methods.iter().any(|m| m == method))
                .map(|d| d.uri.clone())
                .collect(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn registry() -> ExtensionRegistry {
        let ext = |uri: &str, required: bool, methods: &[&str]| DeclaredExtension {
            uri: uri.into(),
            description: String::new(),
            required,
            params: None,
            methods: methods.iter().map(|m| (*m).to_owned()).collect(),
        };
        ExtensionRegistry::new(vec![
            ext("https://x/a", false, &["GetTask", "ListTasks"]),
            ext("https://x/b", false, &["SendMessage"]),
        ])
    }

    #[test]
    fn header_lists_are_split_trimmed_and_merged() {
        let mut h = HeaderMap::new();
        h.append("A2A-Extensions", HeaderValue::from_static(" https://x/a ,https://x/b"));
        h.append("A2A-Extensions", HeaderValue::from_static("https://x/c"));
        h.append("X-A2A-Extensions", HeaderValue::from_static("https://x/a, https://x/d"));
        assert_eq!(requested(&h), ["https://x/a", "https://x/b", "https://x/c", "https://x/d"]);
    }

    #[test]
    fn activation_is_requested_and_declared_and_applicable() {
        let r = registry();
        let req = vec!["https://x/a".to_owned(), "https://x/b".into(), "https://x/unknown".into()];
        assert_eq!(r.activate("GetTask", &req).unwrap(), Activated(vec!["https://x/a".into()]));
        assert_eq!(r.activate("SendMessage", &req).unwrap().header_value().as_deref(), Some("https://x/b"));
        assert_eq!(r.activate("CancelTask", &req).unwrap().header_value(), None);
        assert_eq!(r.activate("GetTask", &[]).unwrap(), Activated::default());
    }

    #[test]
    fn a_required_extension_must_be_requested() {
        let mut r = registry();
        r.declared[0].required = true;
        let e = r.activate("GetTask", &[]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::ExtensionSupportRequired);
        assert!(r.activate("GetTask", &["https://x/a".into()]).is_ok());
    }
}
