//! Secrets given by reference (`env:NAME`, `file:/path`): resolved when a
//! provider is built, never printed.

use super::types::ModelError;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

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
