//! Model configuration as the daemon's YAML file holds it (`ModelConfig`,
//! `OpenAiConfig`), and secret references (`env:NAME`, `file:/path`) that
//! are resolved when a provider is built and never printed.

use super::types::ModelError;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// Which provider to build and its settings. Every key has a default, so an
/// empty `model:` section means the offline `echo` model.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModelConfig {
    /// `echo` (default), `scripted` or `openai`.
    pub kind: ModelKind,
    /// `scripted`: the script file (`.yaml`, `.yml` or `.json`).
    pub script: Option<PathBuf>,
    /// `scripted`: append every request received to this file as JSON lines.
    pub record_to: Option<PathBuf>,
    /// `openai`: the endpoint settings.
    pub openai: OpenAiConfig,
}

impl Default for ModelConfig {
    fn default() -> Self {
        Self { kind: ModelKind::Echo, script: None, record_to: None, openai: OpenAiConfig::default() }
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
}

impl ModelKind {
    /// Every kind, as written in configuration.
    pub const NAMES: &[&str] = &["echo", "scripted", "openai"];

    pub fn as_str(self) -> &'static str {
        match self {
            ModelKind::Echo => "echo",
            ModelKind::Scripted => "scripted",
            ModelKind::Openai => "openai",
        }
    }

    /// The kind a name in [`Self::NAMES`] stands for.
    pub fn from_name(name: &str) -> Option<Self> {
        [ModelKind::Echo, ModelKind::Scripted, ModelKind::Openai].into_iter().find(|k| k.as_str() == name)
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
#[derive(Clone, Deserialize, Serialize)]
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
    pub headers: BTreeMap<String, String>,
    /// Honour a reminder's `roleHint`: reminders hinted `system` or
    /// `developer` are sent as a message of that role after the
    /// conversation instead of inside the user-role reminder block. Only
    /// for servers that accept such messages mid-conversation (default false).
    pub reminder_role_hints: bool,
}

impl Default for OpenAiConfig {
    fn default() -> Self {
        Self {
            endpoints: Vec::new(),
            model: String::new(),
            api_key: None,
            timeout: Duration::from_secs(300),
            max_retries: 2,
            backoff_base: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            stream: true,
            headers: BTreeMap::new(),
            reminder_role_hints: false,
        }
    }
}

impl OpenAiConfig {
    /// The defaults with one endpoint and a model name.
    pub fn new(endpoint: impl Into<String>, model: impl Into<String>) -> Self {
        Self { endpoints: vec![endpoint.into()], model: model.into(), ..Self::default() }
    }
}

impl fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiConfig")
            .field("endpoints", &self.endpoints)
            .field("model", &self.model)
            .field("api_key", &self.api_key)
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .field("backoff_base", &self.backoff_base)
            .field("max_backoff", &self.max_backoff)
            .field("stream", &self.stream)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("reminder_role_hints", &self.reminder_role_hints)
            .finish()
    }
}

/// A secret given by reference: `env:NAME` or `file:/path`. Holds only the
/// reference; `resolve` reads the secret. Inline secrets are refused, so a
/// key never sits in a config file or a log.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretRef(String);

impl SecretRef {
    /// Checks the form of a reference (it is not resolved yet).
    pub fn parse(reference: &str) -> Result<Self, ModelError> {
        let ok = |rest: &str| !rest.trim().is_empty();
        match reference.split_once(':') {
            Some(("env" | "file", rest)) if ok(rest) => Ok(Self(reference.to_owned())),
            _ => Err(ModelError::Config("secrets are given by reference: `env:NAME` or `file:/path`".into())),
        }
    }

    /// The reference itself (`env:NAME`), safe to show.
    pub fn reference(&self) -> &str {
        &self.0
    }

    /// Reads the secret now: the variable's value, or the file's content
    /// without surrounding whitespace. Errors name the reference, never a value.
    pub fn resolve(&self) -> Result<Secret, ModelError> {
        let value = if let Some(name) = self.0.strip_prefix("env:") {
            std::env::var(name)
                .map_err(|_| ModelError::Config(format!("environment variable {name} is not set")))?
        } else if let Some(path) = self.0.strip_prefix("file:") {
            std::fs::read_to_string(path)
                .map_err(|e| ModelError::Config(format!("cannot read secret file {path}: {e}")))?
                .trim()
                .to_owned()
        } else {
            return Err(ModelError::Config(format!("{self:?} is not a secret reference")));
        };
        if value.is_empty() {
            return Err(ModelError::Config(format!("the secret {} is empty", self.0)));
        }
        Ok(Secret(value))
    }
}

impl fmt::Debug for SecretRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SecretRef({})", self.0)
    }
}

/// Serialized as the reference (`env:NAME`), never the secret.
impl Serialize for SecretRef {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for SecretRef {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        SecretRef::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// A resolved secret. Its `Debug` is `Secret(***)`; `expose` is the only way in.
#[derive(Clone)]
pub struct Secret(String);

impl Secret {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
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
