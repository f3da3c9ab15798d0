//! Model configuration as the daemon's YAML file holds it: which provider
//! (`ModelConfig`), the settings of each remote one (`OpenAiConfig`,
//! `AnthropicConfig`) and what they share (`HttpSettings`). Secrets are
//! references (`SecretRef`), resolved when a provider is built.

use super::secret::SecretRef;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::path::PathBuf;
use std::time::Duration;

/// Which provider to build and its settings. Every key has a default, so an
/// empty `model:` section means the offline `echo` model.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModelConfig {
    /// `echo` (default), `scripted`, `openai` or `anthropic`.
    pub kind: ModelKind,
    /// `scripted`: the script file (`.yaml`, `.yml` or `.json`).
    pub script: Option<PathBuf>,
    /// `scripted`: append every request received to this file as JSON lines.
    pub record_to: Option<PathBuf>,
    /// `scripted`: the script goes on across restarts, like a model server
    /// that outlives the daemon: requests already in `record_to` count,
    /// and a request identical to a recorded one gets that one's answer
    /// again (a call a restart interrupted, made again).
    pub resume: bool,
    /// `openai`: the endpoint settings.
    pub openai: OpenAiConfig,
    /// `anthropic`: the endpoint settings.
    pub anthropic: AnthropicConfig,
}

impl ModelConfig {
    /// The endpoints and model name of the remote provider `kind` names;
    /// `None` for the built-in ones.
    pub fn remote(&self) -> Option<(&[String], &str)> {
        match self.kind {
            ModelKind::Openai => Some((&self.openai.endpoints, &self.openai.model)),
            ModelKind::Anthropic => Some((&self.anthropic.endpoints, &self.anthropic.model)),
            ModelKind::Echo | ModelKind::Scripted => None,
        }
    }

    /// The endpoints and model name of the remote provider `kind` names
    /// (what `--model-url` and `--model-name` set); `None` for the built-in ones.
    pub fn remote_mut(&mut self) -> Option<(&mut Vec<String>, &mut String)> {
        match self.kind {
            ModelKind::Openai => Some((&mut self.openai.endpoints, &mut self.openai.model)),
            ModelKind::Anthropic => Some((&mut self.anthropic.endpoints, &mut self.anthropic.model)),
            ModelKind::Echo | ModelKind::Scripted => None,
        }
    }
}

/// The model providers agentd has.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelKind {
    /// Answers with the user's text, offline.
    #[default]
    Echo,
    /// Plays a script file.
    Scripted,
    /// An OpenAI-compatible Chat Completions server.
    Openai,
    /// The Anthropic Messages API.
    Anthropic,
}

impl ModelKind {
    const ALL: [ModelKind; 4] =
        [ModelKind::Echo, ModelKind::Scripted, ModelKind::Openai, ModelKind::Anthropic];

    /// Every kind, as written in configuration.
    pub const NAMES: &[&str] = &["echo", "scripted", "openai", "anthropic"];

    pub fn as_str(self) -> &'static str {
        match self {
            ModelKind::Echo => "echo",
            ModelKind::Scripted => "scripted",
            ModelKind::Openai => "openai",
            ModelKind::Anthropic => "anthropic",
        }
    }

    /// The kind a name in [`Self::NAMES`] stands for.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

impl fmt::Display for ModelKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An OpenAI-compatible Chat Completions endpoint (OpenAI, vLLM, Ollama,
/// llama.cpp server, LM Studio). `Debug` shows no secret: the key appears
/// as its reference, header values not at all.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct OpenAiConfig {
    /// Base URLs such as `http://127.0.0.1:8080/v1`, tried in order (failover).
    /// In YAML a list or one comma-separated string.
    #[serde(deserialize_with = "comma_list")]
    pub endpoints: Vec<String>,
    /// The `model` member of each request.
    pub model: String,
    /// `Authorization: Bearer` key, by reference.
    pub api_key: Option<SecretRef>,
    /// Timeouts, retries, streaming and extra headers.
    #[serde(flatten)]
    pub http: HttpSettings,
    /// Honour a reminder's `roleHint`: reminders hinted `system` or
    /// `developer` are sent as a message of that role after the
    /// conversation instead of inside the user-role reminder block. Only
    /// for servers that accept such messages mid-conversation (default false).
    pub reminder_role_hints: bool,
}

impl OpenAiConfig {
    /// The defaults with one endpoint and a model name.
    pub fn new(endpoint: impl Into<String>, model: impl Into<String>) -> Self {
        Self { endpoints: vec![endpoint.into()], model: model.into(), ..Self::default() }
    }
}

/// The Anthropic Messages API (`POST {endpoint}/v1/messages`). Failover
/// goes through the endpoints with `model`, then with each fallback model
/// in turn. `Debug` shows no secret.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct AnthropicConfig {
    /// Base URLs without `/v1` (default `https://api.anthropic.com`), tried
    /// in order. In YAML a list or one comma-separated string.
    #[serde(deserialize_with = "comma_list")]
    pub endpoints: Vec<String>,
    /// The `model` member of each request, such as `claude-sonnet-4-5`.
    pub model: String,
    /// Models to fail over to, in order, when `model` fails on every endpoint.
    #[serde(deserialize_with = "comma_list")]
    pub fallback_models: Vec<String>,
    /// `x-api-key`, by reference.
    pub api_key: Option<SecretRef>,
    /// `max_tokens` of a request (the API requires one) when the agent's
    /// limits set no `max_output_tokens`.
    pub max_tokens: u32,
    /// Timeouts, retries, streaming and extra headers.
    #[serde(flatten)]
    pub http: HttpSettings,
}

impl Default for AnthropicConfig {
    fn default() -> Self {
        Self {
            endpoints: vec!["https://api.anthropic.com".into()],
            model: String::new(),
            fallback_models: Vec::new(),
            api_key: None,
            max_tokens: 4096,
            http: HttpSettings::default(),
        }
    }
}

impl AnthropicConfig {
    /// The defaults with one endpoint and a model name.
    pub fn new(endpoint: impl Into<String>, model: impl Into<String>) -> Self {
        Self { endpoints: vec![endpoint.into()], model: model.into(), ..Self::default() }
    }
}

/// What every HTTP model provider shares: timeouts, retries, streaming,
/// extra headers. Written flat beside the provider's own keys.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct HttpSettings {
    /// Longest wait for the response headers, for the whole body (non
    /// streaming), and for the next chunk of a stream (streaming).
    #[serde(rename = "timeout_secs", deserialize_with = "secs", serialize_with = "as_secs")]
    pub timeout: Duration,
    /// Retries on one endpoint (429, 408, 5xx, connect errors, timeouts)
    /// before failing over to the next.
    pub max_retries: u32,
    /// First retry delay; doubles per retry, with jitter, up to `max_backoff`.
    #[serde(rename = "backoff_ms", deserialize_with = "millis", serialize_with = "as_millis")]
    pub backoff_base: Duration,
    /// Cap on a retry delay, including one asked for by `Retry-After`.
    #[serde(rename = "max_backoff_ms", deserialize_with = "millis", serialize_with = "as_millis")]
    pub max_backoff: Duration,
    /// Ask for a streamed (SSE) response (default true).
    pub stream: bool,
    /// Extra request headers; a value `env:NAME` or `file:/path` is resolved
    /// as a secret, any other value is sent as written.
    pub headers: Headers,
}

impl Default for HttpSettings {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(300),
            max_retries: 2,
            backoff_base: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            stream: true,
            headers: Headers::default(),
        }
    }
}

/// Extra request headers by name. `Debug` lists the names only: a value
/// may be a credential written inline.
#[derive(Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(transparent)]
pub struct Headers(pub BTreeMap<String, String>);

impl fmt::Debug for Headers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.0.keys()).finish()
    }
}

impl Deref for Headers {
    type Target = BTreeMap<String, String>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl DerefMut for Headers {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

fn comma_list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    let items = match OneOrMany::deserialize(d)? {
        OneOrMany::One(s) => s.split(',').map(str::to_owned).collect(),
        OneOrMany::Many(v) => v,
    };
    Ok(items.into_iter().map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect())
}

fn secs<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let v = f64::deserialize(d)?;
    Duration::try_from_secs_f64(v)
        .map_err(|_| serde::de::Error::custom(format!("{v} is not a duration in seconds")))
}

fn millis<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    Ok(Duration::from_millis(u64::deserialize(d)?))
}

fn as_secs<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

fn as_millis<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
