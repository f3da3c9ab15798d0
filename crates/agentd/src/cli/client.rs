//! The CLI's view of a running daemon: `agentd_client`'s JSON-RPC client,
//! with its failures said for a person at a terminal (which URL, what to
//! check, the exit code when the daemon cannot be reached or TLS fails).

use super::ClientOpts;
use super::exit::{self, Exit};
use agentd_client::tls::TlsClient;
use agentd_client::tls::{TlsFile, TlsSetupError};
use agentd_client::{ClientError, TlsFailure, TlsFiles, root_cause, tls_failure};
use anyhow::{Context, anyhow};
use serde::Serialize;
use serde_json::Value;
use std::path::PathBuf;
use std::time::Duration;

pub struct Client {
    inner: agentd_client::Client,
    /// The base URL as given (for messages).
    base: String,
    /// `<base>/a2a/jsonrpc`.
    endpoint: String,
    /// The TLS files given (for messages).
    tls: TlsFiles,
    /// The HTTP client's TLS, to find out what a failure the client could
    /// not name was.
    diagnosis: TlsClient,
    /// The JSON-RPC endpoint's URL (whose host and port a diagnosis dials).
    url: reqwest::Url,
}

impl Client {
    pub fn new(opts: &ClientOpts) -> anyhow::Result<Self> {
        let base = opts.url.trim().trim_end_matches('/').to_owned();
        // `127.0.0.1:7701` parses with no scheme or with `127.0.0.1` as one: a usage error.
        let parsed = reqwest::Url::parse(&base).ok().filter(|u| matches!(u.scheme(), "http" | "https"));
        if parsed.is_none() {
            let message = format!("--url {base:?}: expected a URL like http://127.0.0.1:7420");
            return Err(Exit { code: exit::USAGE, message }.into());
        }
        let tls = tls_files(opts)?;
        let builder = reqwest::Client::builder().connect_timeout(Duration::from_secs(10));
        let diagnosis = tls.build(builder).map_err(tls_setup_failed)?;
        let endpoint = format!("{base}/a2a/jsonrpc");
        let url = reqwest::Url::parse(&endpoint).with_context(|| format!("--url {base:?} is not a URL"))?;
        let mut inner = agentd_client::Client::new(diagnosis.http.clone(), url.clone());
        if let Some(t) = opts.token.as_deref().filter(|t| !t.trim().is_empty()) {
            inner = inner
                .with_bearer(t)
                .map_err(|_| anyhow!("--token has characters not allowed in an HTTP header"))?;
        }
        Ok(Self { inner, base, endpoint, tls, diagnosis, url })
    }

    /// Requests these extensions on every call.
    pub fn with_extensions(mut self, uris: &[&str]) -> anyhow::Result<Self> {
        self.inner = self.inner.with_extensions(uris)?;
        Ok(self)
    }

    /// A unary call; returns the `result` member.
    pub async fn call(&self, method: &str, params: &impl Serialize) -> anyhow::Result<Value> {
        match self.inner.call(method, params).await {
            Ok(v) => Ok(v),
            Err(e) => Err(self.failed(e).await),
        }
    }

    /// A streaming call; yields the `result` of every event.
    pub async fn stream(&self, method: &str, params: &impl Serialize) -> anyhow::Result<EventStream> {
        match self.inner.stream(method, params).await {
            Ok(events) => Ok(EventStream { events, base: self.base.clone() }),
            Err(e) => Err(self.failed(e).await),
        }
    }

    /// `e` said for a person. A connection that broke off with no cause
    /// given, on an `https` URL, may have been a TLS refusal the HTTP client
    /// lost (`TlsClient::diagnose`): a connection of its own finds out.
    async fn failed(&self, e: ClientError) -> anyhow::Error {
        if let ClientError::Transport(t) | ClientError::BrokenOff(t) = &e {
            // Connected and not timed out, yet failed: what was lost may be TLS.
            let cause_lost = !t.is_connect() && !t.is_timeout();
            let found = match tls_failure(t) {
                Some(f) => Some(f),
                None if cause_lost => self.diagnosis.diagnose(&self.url).await,
                None => None,
            };
            if let Some(f) = found {
                return self.tls_failed(&f);
            }
            if cause_lost && self.url.scheme() == "http" && self.diagnosis.speaks_tls(&self.url).await {
                let message = format!(
                    "{} answered in TLS, not cleartext HTTP\n  Use an https:// --url: https{}",
                    self.base,
                    &self.base["http".len()..]
                );
                return Exit { code: exit::TLS, message }.into();
            }
        }
        match e {
            ClientError::Refused(r) => refused(&r),
            ClientError::Transport(e) if e.is_connect() || e.is_timeout() => {
                let message = format!(
                    "could not reach agentd at {}: {}\n  \
                     Is the daemon running? Start it with `agentd serve`, or point --url (AGENTD_URL) at it.",
                    self.base,
                    root_cause(&e)
                );
                Exit { code: exit::UNREACHABLE, message }.into()
            }
            ClientError::Transport(e) | ClientError::BrokenOff(e) => {
                anyhow!("request to {} failed: {}", self.endpoint, root_cause(&e))
            }
            ClientError::Status { status, body } => {
                let status =
                    reqwest::StatusCode::from_u16(status).map_or(status.to_string(), |s| s.to_string());
                self.not_agentd(&format!("answered HTTP {status}: {}", body.trim()))
            }
            ClientError::NotJson(_) | ClientError::UnexpectedResult(_) => {
                self.not_agentd("did not answer with JSON-RPC")
            }
            ClientError::NoResult => self.not_agentd("answered without a JSON-RPC result or error"),
            e => anyhow!("{}: {e}", self.endpoint),
        }
    }

    /// A handshake that failed, said as what it was (not as an unreachable
    /// daemon), with the flag that mends it.
    fn tls_failed(&self, f: &TlsFailure) -> anyhow::Error {
        let base = &self.base;
        let show = |p: &Option<PathBuf>| p.as_deref().map(|p| p.display().to_string());
        let (what, hint) = match f {
            TlsFailure::UnknownIssuer => (
                format!("the daemon's certificate at {base} is not trusted (unknown issuer)"),
                match show(&self.tls.ca_cert) {
                    Some(ca) => format!("It is issued neither by --ca-cert {ca} nor by a CA this system trusts."),
                    None => "Pass the CA that issued it with --ca-cert FILE (AGENTD_CA_CERT).".to_owned(),
                },
            ),
            TlsFailure::WrongName { expected, presented } if !presented.is_empty() => (
                format!("the daemon's certificate is for {}, not {expected}", presented.join(", ")),
                "Use a --url whose host the certificate names, or a certificate for this host.".to_owned(),
            ),
            TlsFailure::WrongName { .. } => (
                format!("the daemon's certificate is not for the host of {base}"),
                "Use a --url whose host the certificate names, or a certificate for this host.".to_owned(),
            ),
            TlsFailure::Expired => (
                format!("the daemon's certificate at {base} has expired"),
                "Renew the daemon's certificate (tls.cert), or check this machine's clock.".to_owned(),
            ),
            TlsFailure::NotValidYet => (
                format!("the daemon's certificate at {base} is not valid yet"),
                "Check this machine's clock, and the certificate's validity.".to_owned(),
            ),
            TlsFailure::BadServerCertificate(w) => {
                (format!("the daemon's certificate at {base} is not valid: {w}"), String::new())
            }
            TlsFailure::ClientCertificateRequired => (
                format!("the daemon at {base} requires a client certificate"),
                "Pass one with --client-cert FILE and --client-key FILE (AGENTD_CLIENT_CERT, AGENTD_CLIENT_KEY)."
                    .to_owned(),
            ),
            TlsFailure::ClientCertificateRefused(alert) => (
                match show(&self.tls.client_cert) {
                    Some(c) => format!("the daemon at {base} refused the client certificate {c} ({alert})"),
                    None => format!("the daemon at {base} refused the client certificate ({alert})"),
                },
                "The daemon accepts certificates issued by a CA of its tls.client_ca.".to_owned(),
            ),
            TlsFailure::NotTls => (
                format!("{base} did not answer in TLS"),
                "If the daemon serves cleartext HTTP, use an http:// --url.".to_owned(),
            ),
            TlsFailure::Other(w) => (format!("the handshake with {base} failed: {w}"), String::new()),
        };
        let mut message = format!("TLS: {what}");
        if !hint.is_empty() {
            message.push_str("\n  ");
            message.push_str(&hint);
        }
        Exit { code: exit::TLS, message }.into()
    }

    /// The answer does not look like agentd's: name the URL and say so.
    fn not_agentd(&self, what: &str) -> anyhow::Error {
        anyhow!(
            "{} {what}\n  {} may not be an agentd daemon: check --url (AGENTD_URL).",
            self.endpoint,
            self.base
        )
    }
}

/// The TLS files of `opts` (an empty variable is unset); a client
/// certificate without its key, or the reverse, is a usage error.
fn tls_files(opts: &ClientOpts) -> anyhow::Result<TlsFiles> {
    let given = |p: &Option<PathBuf>| p.clone().filter(|p| !p.as_os_str().is_empty());
    let tls = TlsFiles {
        ca_cert: given(&opts.ca_cert),
        client_cert: given(&opts.client_cert),
        client_key: given(&opts.client_key),
    };
    let missing = match (&tls.client_cert, &tls.client_key) {
        (Some(_), None) => Some("--client-cert needs its key: pass --client-key FILE (AGENTD_CLIENT_KEY)"),
        (None, Some(_)) => {
            Some("--client-key needs its certificate: pass --client-cert FILE (AGENTD_CLIENT_CERT)")
        }
        _ => None,
    };
    match missing {
        Some(m) => Err(Exit { code: exit::USAGE, message: m.to_owned() }.into()),
        None => Ok(tls),
    }
}

fn flag(file: TlsFile) -> &'static str {
    match file {
        TlsFile::CaCert => "--ca-cert",
        TlsFile::ClientCert => "--client-cert",
        TlsFile::ClientKey => "--client-key",
    }
}

/// A TLS file that cannot be used is a usage error naming its flag and path.
fn tls_setup_failed(e: TlsSetupError) -> anyhow::Error {
    let message = match e {
        TlsSetupError::Unreadable { file, path, source } => {
            format!("{} {}: cannot read it: {source}", flag(file), path.display())
        }
        TlsSetupError::BadContent { file, path, problem } => {
            format!("{} {}: {problem}", flag(file), path.display())
        }
        TlsSetupError::KeyMismatch { cert, key } => {
            format!("--client-key {} is not the key of --client-cert {}", key.display(), cert.display())
        }
        TlsSetupError::UnusablePair { cert, key, problem } => {
            format!("--client-cert {}, --client-key {}: {problem}", cert.display(), key.display())
        }
        e @ TlsSetupError::Incomplete => format!("--client-cert, --client-key: {e}"),
        e @ TlsSetupError::Roots(_) => return anyhow!("{e}"),
        TlsSetupError::Build(e) => {
            return anyhow::Error::new(e).context("cannot build the HTTP client");
        }
    };
    Exit { code: exit::USAGE, message }.into()
}

/// `<message> (<code>, <reason>)`, with what to do about a missing token.
fn refused(e: &agentd_client::RpcError) -> anyhow::Error {
    let mut text = e.to_string();
    if e.reason.as_deref() == Some("UNAUTHENTICATED") {
        text.push_str("\n  Pass the daemon's bearer token with --token or AGENTD_TOKEN.");
    }
    RpcError { reason: e.reason.clone().unwrap_or_default(), text }.into()
}

/// An error the daemon answered with; `reason` is its ErrorInfo reason
/// (`TASK_NOT_FOUND`, …) or empty.
#[derive(Debug)]
pub struct RpcError {
    pub reason: String,
    text: String,
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::error::Error for RpcError {}

/// Whether the daemon refused with this ErrorInfo reason.
pub fn is_reason(e: &anyhow::Error, reason: &str) -> bool {
    e.chain().filter_map(|c| c.downcast_ref::<RpcError>()).any(|r| r.reason == reason)
}

/// The events of one SSE response, as JSON-RPC `result` values.
pub struct EventStream {
    events: agentd_client::EventStream<Value>,
    base: String,
}

impl EventStream {
    /// The next event's `result`; `None` once the daemon closed the stream.
    /// An error frame becomes an error.
    pub async fn next(&mut self) -> anyhow::Result<Option<Value>> {
        self.events.next().await.map_err(|e| match e {
            ClientError::Refused(r) => refused(&r),
            ClientError::NotJson(e) => {
                anyhow::Error::new(e).context(format!("an event from {} is not JSON", self.base))
            }
            ClientError::NoResult => anyhow!("an event from {} has neither result nor error", self.base),
            ClientError::BrokenOff(e) => {
                anyhow!("the event stream from {} broke off: {}", self.base, root_cause(&e))
            }
            e => anyhow!("the event stream from {}: {e}", self.base),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_missing_token_says_how_to_pass_one() {
        let e = json!({"code": 401, "status": "UNAUTHENTICATED", "message": "the bearer token is not valid", "details": [
            {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "UNAUTHENTICATED"}
        ]});
        let e = refused(&agentd_client::RpcError::from_wire(&e, 401).unwrap());
        let text = e.to_string();
        assert!(text.starts_with("the bearer token is not valid (HTTP 401, UNAUTHENTICATED)"), "{text}");
        assert!(text.contains("--token"), "{text}");
        assert!(is_reason(&e, "UNAUTHENTICATED"));
    }
}
