//! The channels a bridge can deliver to, from the instruction document's
//! `::!channel{name=… kind=… target=…}` entries.

use std::fmt;

/// The kinds of channel a bridge delivers to. `log` writes the
/// announcement to the daemon's log (no target): the built-in demo's
/// channel, and a way to try gates with nothing to POST to.
pub const KINDS: &[&str] = &["webhook", "slack", "log"];

/// The kind that delivers to the daemon's log.
pub const LOG: &str = "log";

/// A channel as declared in the document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeclaredChannel {
    pub name: String,
    pub kind: Option<String>,
    /// A URL, or a reference to one (`env:NAME`, `file:/path`), since a
    /// Slack incoming-webhook URL is itself a credential.
    pub target: Option<String>,
}

/// A channel ready for delivery.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Channel {
    pub name: String,
    pub kind: String,
    /// The target as declared (a reference stays a reference).
    pub declared_target: String,
    pub url: String,
}

/// `Debug` without the URL: a resolved reference is a secret.
impl fmt::Debug for Channel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Channel").field("name", &self.name).field("kind", &self.kind).finish()
    }
}

/// Reads a `env:NAME` or `file:/path` reference; anything else is the value itself.
fn resolve(target: &str) -> Result<String, String> {
    let value = if let Some(var) = target.strip_prefix("env:") {
        std::env::var(var).map_err(|_| format!("environment variable {var} is not set"))?
    } else if let Some(path) = target.strip_prefix("file:") {
        std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?
    } else {
        return Ok(target.trim().to_owned());
    };
    Ok(value.trim().to_owned())
}

impl Channel {
    /// Checks a declared channel: a known kind and a target that is a URL.
    pub(crate) fn from_declared(d: &DeclaredChannel) -> Result<Self, String> {
        let name = &d.name;
        let kind = d.kind.as_deref().map(str::trim).unwrap_or("");
        if !KINDS.contains(&kind) {
            let shown = if kind.is_empty() { "no kind".to_owned() } else { format!("kind {kind:?}") };
            return Err(format!("channel {name:?} has {shown}; bridges deliver to: {}", KINDS.join(", ")));
        }
        let declared = d.target.as_deref().map(str::trim).filter(|t| !t.is_empty());
        if kind == LOG {
            let target = declared.unwrap_or_default().to_owned();
            return Ok(Self {
                name: name.clone(),
                kind: kind.to_owned(),
                declared_target: target,
                url: String::new(),
            });
        }
        let declared =
            declared.ok_or_else(|| format!("channel {name:?} has no target (the URL to POST to)"))?;
        let url = resolve(declared).map_err(|e| format!("channel {name:?} target: {e}"))?;
        let parsed =
            reqwest::Url::parse(&url).map_err(|_| format!("channel {name:?} target is not a URL"))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(format!("channel {name:?} target must be an http(s) URL"));
        }
        Ok(Self { name: name.clone(), kind: kind.to_owned(), declared_target: declared.to_owned(), url })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declared(kind: Option<&str>, target: Option<&str>) -> DeclaredChannel {
        DeclaredChannel { name: "ops".into(), kind: kind.map(Into::into), target: target.map(Into::into) }
    }

    #[test]
    fn channels_need_a_known_kind_and_a_url() {
        let c = Channel::from_declared(&declared(Some("webhook"), Some("https://h.example/x"))).unwrap();
        assert_eq!((c.kind.as_str(), c.url.as_str()), ("webhook", "https://h.example/x"));
        let e = Channel::from_declared(&declared(Some("email"), Some("https://h"))).unwrap_err();
        assert!(e.contains("kind \"email\"") && e.contains("webhook, slack, log"), "{e}");
        let e = Channel::from_declared(&declared(None, Some("https://h"))).unwrap_err();
        assert!(e.contains("no kind"), "{e}");
        let e = Channel::from_declared(&declared(Some("slack"), None)).unwrap_err();
        assert!(e.contains("no target"), "{e}");
        let e = Channel::from_declared(&declared(Some("slack"), Some("#ops"))).unwrap_err();
        assert!(e.contains("not a URL"), "{e}");
        let e = Channel::from_declared(&declared(Some("slack"), Some("env:AGENTD_TEST_UNSET_VAR_X")))
            .unwrap_err();
        assert!(e.contains("AGENTD_TEST_UNSET_VAR_X is not set"), "{e}");
    }

    #[test]
    fn a_log_channel_needs_no_target() {
        let c = Channel::from_declared(&declared(Some("log"), None)).unwrap();
        assert_eq!((c.kind.as_str(), c.url.as_str()), ("log", ""));
    }

    #[test]
    fn a_referenced_target_is_read_and_kept_out_of_debug() {
        let dir = std::env::temp_dir().join(format!("agentd-channel-{}", std::process::id()));
        std::fs::write(&dir, "https://hooks.slack.example/T0/B0/s3cret\n").unwrap();
        let c = Channel::from_declared(&declared(Some("slack"), Some(&format!("file:{}", dir.display()))))
            .unwrap();
        let _ = std::fs::remove_file(&dir);
        assert_eq!(c.url, "https://hooks.slack.example/T0/B0/s3cret");
        assert!(c.declared_target.starts_with("file:"));
        assert!(!format!("{c:?}").contains("s3cret"));
    }
}
