//! Extension activation, the mechanism every agentd extension plugs into:
//! a client lists URIs in `A2A-Extensions` (or the legacy
//! `X-A2A-Extensions`); the server activates those it declares that apply
//! to the method, echoes exactly those in the response header, and never
//! emits an extension's payload to a request that did not activate it.

use agentd_proto::{A2aError, AgentExtension, ErrorKind, Metadata};
use http::HeaderMap;
use std::collections::HashSet;

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

/// Most URIs a request may list (after removing repeats).
pub const MAX_REQUESTED: usize = 64;
/// Most bytes of `A2A-Extensions` and `X-A2A-Extensions` values together.
pub const MAX_HEADER_BYTES: usize = 16 * 1024;

/// Every URI a request lists, across header lines and both header names,
/// in order, each once. Linear in the header size, which is capped, as is
/// the number of URIs: past either, InvalidRequest naming the limit.
pub fn requested(headers: &HeaderMap) -> Result<Vec<String>, A2aError> {
    let names = ["a2a-extensions", "x-a2a-extensions"];
    let size: usize = names.iter().flat_map(|n| headers.get_all(*n)).map(|v| v.len()).sum();
    if size > MAX_HEADER_BYTES {
        return Err(A2aError::new(
            ErrorKind::InvalidRequest,
            format!(
                "the A2A-Extensions header is {size} bytes; this server accepts at most {MAX_HEADER_BYTES}"
            ),
        )
        .with_meta("limit", "A2A-Extensions bytes")
        .with_meta("limitValue", MAX_HEADER_BYTES.to_string()));
    }
    let mut seen: HashSet<&str> = HashSet::new();
    let mut out: Vec<String> = Vec::new();
    for value in names.iter().flat_map(|n| headers.get_all(*n)) {
        // Unreadable, it is refused rather than taken for no extensions:
        // a required one would then be reported missing, and an optional
        // one silently off.
        let Ok(text) = value.to_str() else {
            return Err(A2aError::new(
                ErrorKind::InvalidRequest,
                "the A2A-Extensions header holds a value that is not ASCII text; list extension URIs \
                 separated by commas",
            ));
        };
        for uri in text.split(',').map(str::trim).filter(|u| !u.is_empty()) {
            if seen.insert(uri) {
                if out.len() == MAX_REQUESTED {
                    return Err(A2aError::new(
                        ErrorKind::InvalidRequest,
                        format!("the A2A-Extensions header lists more than {MAX_REQUESTED} extensions"),
                    )
                    .with_meta("limit", "A2A-Extensions entries")
                    .with_meta("limitValue", MAX_REQUESTED.to_string()));
                }
                out.push(uri.to_owned());
            }
        }
    }
    Ok(out)
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
        assert_eq!(requested(&h).unwrap(), ["https://x/a", "https://x/b", "https://x/c", "https://x/d"]);
    }

    #[test]
    fn too_many_entries_or_bytes_are_refused_naming_the_limit() {
        let list = |n: usize| (0..n).map(|i| format!("https://x/{i}")).collect::<Vec<_>>().join(",");
        let mut h = HeaderMap::new();
        h.insert("A2A-Extensions", HeaderValue::from_str(&list(MAX_REQUESTED)).unwrap());
        // Repeats are not entries.
        h.append("X-A2A-Extensions", HeaderValue::from_static("https://x/0, https://x/1"));
        assert_eq!(requested(&h).unwrap().len(), MAX_REQUESTED);
        h.append("X-A2A-Extensions", HeaderValue::from_static("https://x/one-more"));
        let e = requested(&h).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidRequest);
        assert!(e.message.contains(&MAX_REQUESTED.to_string()), "{}", e.message);

        let mut h = HeaderMap::new();
        h.insert("A2A-Extensions", HeaderValue::from_str(&",".repeat(MAX_HEADER_BYTES + 1)).unwrap());
        let e = requested(&h).unwrap_err();
        assert!(e.message.contains(&MAX_HEADER_BYTES.to_string()), "{}", e.message);
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
