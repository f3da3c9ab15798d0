//! The configured A2A peers (`a2a.peers`): a name the model and workflows
//! use, the peer's base URL (where `/.well-known/agent-card.json` is
//! served) and an optional bearer token given by reference.

use crate::model::{Secret, SecretRef};
use reqwest::Url;
use serde::Deserialize;

/// One entry of `a2a.peers`, as configured.
#[derive(Clone, Debug, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct PeerConfig {
    pub name: String,
    /// The peer's base URL; its card is at `<url>/.well-known/agent-card.json`.
    pub url: String,
    /// A bearer token by reference (`env:NAME` or `file:/path`).
    #[serde(default)]
    pub credentials: Option<SecretRef>,
}

impl PeerConfig {
    /// Parses `NAME=URL` or `NAME=URL;credentials=REF` (the `AGENTD_A2A_PEERS`
    /// entries and `--a2a-peer` flags).
    pub fn parse_spec(spec: &str) -> Result<Self, String> {
        let usage = "is not NAME=URL or NAME=URL;credentials=env:VAR";
        let (name, rest) = spec.split_once('=').ok_or_else(|| format!("peer {spec:?} {usage}"))?;
        let (url, credentials) = match rest.split_once(';') {
            None => (rest, None),
            Some((url, extra)) => {
                let reference = extra
                    .trim()
                    .strip_prefix("credentials=")
                    .ok_or_else(|| format!("peer {name:?} {usage}"))?;
                let r = SecretRef::parse(reference.trim()).map_err(|e| format!("peer {name:?}: {e}"))?;
                (url, Some(r))
            }
        };
        Ok(Self { name: name.trim().to_owned(), url: url.trim().to_owned(), credentials })
    }
}

/// A peer ready to use: URL checked, token read.
#[derive(Clone, Debug)]
pub(crate) struct Peer {
    pub name: String,
    pub base: Url,
    pub token: Option<Secret>,
}

impl Peer {
    pub(crate) fn from_config(c: &PeerConfig) -> Result<Self, String> {
        let name = c.name.trim();
        if name.is_empty() || !name.chars().all(|ch| ch.is_ascii_alphanumeric() || "-_.".contains(ch)) {
            return Err(format!("a2a.peers: name {:?} must be letters, digits, '-', '_' or '.'", c.name));
        }
        let base = Url::parse(c.url.trim())
            .map_err(|e| format!("a2a.peers[{name}].url {:?} is not a URL: {e}", c.url))?;
        if !matches!(base.scheme(), "http" | "https") || base.host_str().is_none() {
            return Err(format!("a2a.peers[{name}].url must be an http:// or https:// URL with a host"));
        }
        let token = match &c.credentials {
            Some(r) => Some(r.resolve().map_err(|e| format!("a2a.peers[{name}].credentials: {e}"))?),
            None => None,
        };
        Ok(Self { name: name.to_owned(), base, token })
    }

    /// `<base>/.well-known/agent-card.json`, keeping a base path.
    pub(crate) fn card_url(&self) -> Result<Url, String> {
        let mut base = self.base.clone();
        if !base.path().ends_with('/') {
            base.set_path(&format!("{}/", base.path()));
        }
        base.join(".well-known/agent-card.json").map_err(|e| format!("cannot build the card URL: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_with_and_without_credentials() {
        let p = PeerConfig::parse_spec("review=http://127.0.0.1:7421").unwrap();
        assert_eq!((p.name.as_str(), p.url.as_str()), ("review", "http://127.0.0.1:7421"));
        assert!(p.credentials.is_none());
        let p = PeerConfig::parse_spec("r=https://h/x;credentials=env:TOKEN").unwrap();
        assert_eq!(p.credentials.unwrap().reference(), "env:TOKEN");
        assert!(PeerConfig::parse_spec("nourl").is_err());
        assert!(PeerConfig::parse_spec("r=http://h;credentials=inline-secret").is_err());
        assert!(PeerConfig::parse_spec("r=http://h;token=x").is_err());
    }

    #[test]
    fn peers_are_checked_and_card_urls_keep_the_path() {
        let cfg = |url: &str| PeerConfig { name: "p".into(), url: url.into(), credentials: None };
        let p = Peer::from_config(&cfg("http://h:1/agents/a")).unwrap();
        assert_eq!(p.card_url().unwrap().as_str(), "http://h:1/agents/a/.well-known/agent-card.json");
        let p = Peer::from_config(&cfg("http://h:1")).unwrap();
        assert_eq!(p.card_url().unwrap().as_str(), "http://h:1/.well-known/agent-card.json");
        assert!(Peer::from_config(&cfg("ftp://h")).is_err());
        assert!(Peer::from_config(&cfg("not a url")).is_err());
        let bad = PeerConfig { name: "a b".into(), url: "http://h".into(), credentials: None };
        assert!(Peer::from_config(&bad).is_err());
    }
}
