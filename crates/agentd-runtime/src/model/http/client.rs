//! One request to one target, its answer read whole or as a stream, and
//! the retries and failover over the targets (see the module above).

use super::{MAX_ANSWER, MAX_EVENT, Step, StreamedAnswer, Target, config_error};
use crate::model::config::HttpSettings;
use crate::model::retry;
use crate::model::secret::SecretRef;
use crate::model::stream::{send_delta, sleep};
use crate::model::types::{ModelError, ModelResponse};
use agentd_client::describe;
use agentd_client::sse::{SseDecoder, SseError};
use futures::StreamExt;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use std::future::Future;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Largest non-streamed response body accepted.
const MAX_BODY: usize = 16 * 1024 * 1024;
/// Longest wait for a TCP (and TLS) connection, if `timeout` is longer.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How much of an error body is read for its message.
const MAX_ERROR_BODY: usize = 64 * 1024;
/// Reads a whole (non-streamed) response body.
type ParseWhole = fn(&[u8]) -> Result<ModelResponse, ModelError>;

/// An HTTP client with the provider's headers and retry settings.
pub(super) struct HttpClient {
    pub(super) settings: HttpSettings,
    /// Every request's headers; the secret ones are marked sensitive.
    headers: HeaderMap,
    client: reqwest::Client,
}

/// A failed attempt, and whether another attempt may help.
struct Failure {
    error: ModelError,
    retry: bool,
    after: Option<Duration>,
}

impl Failure {
    fn fatal(error: ModelError) -> Self {
        Self { error, retry: false, after: None }
    }
    fn transient(error: ModelError) -> Self {
        Self { error, retry: true, after: None }
    }
}

impl From<ModelError> for Failure {
    /// A timeout, or an HTTP status worth retrying (also when a stream
    /// reports it as an error event), may go better next time.
    fn from(error: ModelError) -> Self {
        let retry = match &error {
            ModelError::Timeout => true,
            ModelError::Http { status, .. } => retry::retryable_status(*status),
            _ => false,
        };
        Self { error, retry, after: None }
    }
}

impl HttpClient {
    /// Checks the settings and resolves the secret extra headers. `headers`
    /// are the provider's own (credentials already marked sensitive); the
    /// content type, `Accept` and the configured extra headers are added.
    pub(super) fn new(
        provider: &str,
        settings: HttpSettings,
        mut headers: HeaderMap,
    ) -> Result<Self, ModelError> {
        if settings.timeout.is_zero() {
            return Err(config_error(provider, "timeout must be positive"));
        }
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let accept = if settings.stream { "text/event-stream, application/json" } else { "application/json" };
        headers.insert(ACCEPT, HeaderValue::from_static(accept));
        for (name, value) in settings.headers.iter() {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| config_error(provider, format!("bad header name {name:?}")))?;
            let (value, secret) = match SecretRef::parse(value) {
                Ok(r) => (r.resolve()?.expose().to_owned(), true),
                Err(_) => (value.clone(), false),
            };
            let mut value = HeaderValue::from_str(&value)
                .map_err(|_| config_error(provider, format!("bad value for header {name}")))?;
            value.set_sensitive(secret);
            headers.insert(name, value);
        }
        let client = reqwest::Client::builder()
            .connect_timeout(settings.timeout.min(CONNECT_TIMEOUT))
            .build()
            .map_err(|e| config_error(provider, format!("HTTP client: {e}")))?;
        Ok(Self { settings, headers, client })
    }

    /// Tries the targets in order, each up to `max_retries` times more
    /// while its failures are transient; returns the first answer, or the
    /// last error.
    pub(super) async fn complete<A: StreamedAnswer>(
        &self,
        targets: &[Target],
        parse: ParseWhole,
        deltas: &mpsc::Sender<String>,
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError> {
        let s = &self.settings;
        let mut last = None;
        for (i, target) in targets.iter().enumerate() {
            for attempt in 0..=s.max_retries {
                if cancel.is_cancelled() {
                    return Err(ModelError::Cancelled);
                }
                let mut emitted = false;
                let failure = match self.attempt::<A>(target, parse, deltas, cancel, &mut emitted).await {
                    Ok(response) => return Ok(response),
                    Err(f) => f,
                };
                if !failure.retry || emitted {
                    return Err(failure.error);
                }
                tracing::warn!(target = %target.label, attempt, error = %failure.error, "model request failed");
                if attempt < s.max_retries {
                    sleep(retry::delay(attempt, s.backoff_base, s.max_backoff, failure.after), cancel)
                        .await?;
                }
                last = Some(failure.error);
            }
            if let Some(next) = targets.get(i + 1) {
                tracing::warn!(from = %target.label, to = %next.label, "model endpoint failing over");
            }
        }
        Err(last.unwrap_or_else(|| ModelError::Unavailable("no endpoint".into())))
    }

    /// One request to one target. `emitted` becomes true once a delta has
    /// gone to the caller (after which the call must not be retried).
    async fn attempt<A: StreamedAnswer>(
        &self,
        target: &Target,
        parse: ParseWhole,
        deltas: &mpsc::Sender<String>,
        cancel: &CancellationToken,
        emitted: &mut bool,
    ) -> Result<ModelResponse, Failure> {
        let (url, timeout) = (target.url.as_str(), self.settings.timeout);
        let post = self.client.post(url).headers(self.headers.clone());
        // The model server joins the call's trace (its `chat` span), when tracing is on.
        let send = agentd_client::trace::inject(post).body(target.body.clone()).send();
        let resp = guard(cancel, timeout, send).await?.map_err(|e| transport(url, &e))?;
        let status = resp.status().as_u16();
        if !resp.status().is_success() {
            let after = retry::retry_after(resp.headers());
            let body = read_body(resp, MAX_ERROR_BODY, true, cancel, timeout).await?;
            let error = ModelError::Http { status, message: retry::error_message(&body) };
            return Err(Failure { after, ..Failure::from(error) });
        }
        let content_type = resp.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
        let is_sse = content_type.starts_with("text/event-stream")
            || (self.settings.stream && !content_type.starts_with("application/json"));
        if !is_sse {
            let body = read_body(resp, MAX_BODY, false, cancel, timeout).await?;
            let response = parse(&body).map_err(Failure::fatal)?;
            send_delta(deltas, cancel, response.text.clone()).await?;
            *emitted = !response.text.is_empty();
            return Ok(response);
        }
        // Read chunk by chunk, so that the timeout is between chunks: a
        // server's keep-alive comments show it is still working.
        let mut stream = resp.bytes_stream();
        let mut decoder = SseDecoder::new(MAX_EVENT);
        let mut acc = A::default();
        let mut size = 0usize;
        let mut apply = |acc: &mut A, data: &str| {
            size += data.len();
            if size > MAX_ANSWER {
                return Err(ModelError::Protocol(format!("answer larger than {MAX_ANSWER} bytes")));
            }
            acc.apply(data)
        };
        let protocol = |e: SseError| Failure::fatal(ModelError::Protocol(e.to_string()));
        let (mut ended, mut over) = (false, false);
        while !ended && !over {
            let events = match guard(cancel, timeout, stream.next()).await? {
                Some(Ok(bytes)) => decoder.push(&bytes).map_err(protocol)?,
                Some(Err(e)) => {
                    let e = ModelError::Unavailable(format!("the stream from {url} broke: {}", describe(&e)));
                    return Err(Failure::transient(e));
                }
                None => {
                    over = true;
                    decoder.finish().map_err(protocol)?.into_iter().collect()
                }
            };
            for event in events {
                match apply(&mut acc, &event.data)? {
                    Step::Text(text) => {
                        send_delta(deltas, cancel, text).await?;
                        *emitted = true;
                    }
                    Step::End => {
                        ended = true;
                        break;
                    }
                    Step::Nothing => {}
                }
            }
        }
        if !ended && !acc.stopped() {
            let e = ModelError::Protocol(format!("the stream from {url} ended before {}", A::END));
            return Err(Failure::transient(e));
        }
        acc.into_response().map_err(Failure::fatal)
    }
}

/// Runs `fut` unless `cancel` fires (→ Cancelled) or `timeout` passes (→ Timeout).
async fn guard<F: Future>(
    cancel: &CancellationToken,
    timeout: Duration,
    fut: F,
) -> Result<F::Output, Failure> {
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(Failure::fatal(ModelError::Cancelled)),
        r = tokio::time::timeout(timeout, fut) => r.map_err(|_| Failure::transient(ModelError::Timeout)),
    }
}

/// Reads a body of at most `cap` bytes within `timeout`. Past the cap it is
/// cut (`truncate`) or refused.
async fn read_body(
    resp: reqwest::Response,
    cap: usize,
    truncate: bool,
    cancel: &CancellationToken,
    timeout: Duration,
) -> Result<Vec<u8>, Failure> {
    let url = resp.url().to_string();
    let read = async move {
        let mut stream = resp.bytes_stream();
        let mut body = Vec::new();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| {
                Failure::transient(ModelError::Unavailable(format!("reading from {url}: {}", describe(&e))))
            })?;
            if body.len() + chunk.len() > cap {
                if truncate {
                    body.extend_from_slice(&chunk[..cap - body.len()]);
                    return Ok(body);
                }
                return Err(Failure::fatal(ModelError::Protocol(format!(
                    "response larger than {cap} bytes"
                ))));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    };
    guard(cancel, timeout, read).await?
}

/// A request that got no response: connect errors, resets, timeouts.
fn transport(url: &str, e: &reqwest::Error) -> Failure {
    let error = if e.is_timeout() {
        ModelError::Timeout
    } else if e.is_connect() {
        ModelError::Unavailable(format!("cannot connect to {url}: {}", describe(e)))
    } else {
        ModelError::Unavailable(format!("request to {url} failed: {}", describe(e)))
    };
    Failure::transient(error)
}
