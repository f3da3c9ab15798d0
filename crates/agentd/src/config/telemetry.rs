//! `telemetry:`: where traces go (`docs/observability.md`, "Traces").

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct TelemetryConfig {
    pub otlp: OtlpConfig,
}

/// OTLP export of traces; off while `endpoint` is unset.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct OtlpConfig {
    /// The collector's base URL (`http://collector:4318`); spans are posted
    /// as OTLP/HTTP protobuf to `<endpoint>/v1/traces`.
    pub endpoint: Option<String>,
}

impl TelemetryConfig {
    /// The URL spans are posted to, when export is on.
    pub fn traces_url(&self) -> Option<String> {
        let base = self.otlp.endpoint.as_deref()?.trim().trim_end_matches('/');
        Some(format!("{base}/v1/traces"))
    }

    pub(super) fn validate(&self) -> anyhow::Result<()> {
        let Some(endpoint) = &self.otlp.endpoint else { return Ok(()) };
        match reqwest::Url::parse(endpoint.trim()) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.query().is_none() => Ok(()),
            _ => anyhow::bail!(
                "telemetry.otlp.endpoint {endpoint:?} must be an http:// or https:// URL with no query \
                 (the collector's base URL, such as http://127.0.0.1:4318; spans go to <endpoint>/v1/traces)"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(endpoint: &str) -> TelemetryConfig {
        TelemetryConfig { otlp: OtlpConfig { endpoint: Some(endpoint.into()) } }
    }

    #[test]
    fn spans_go_to_v1_traces_under_the_endpoint() {
        assert_eq!(
            with("http://collector:4318").traces_url().as_deref(),
            Some("http://collector:4318/v1/traces")
        );
        assert_eq!(
            with("https://otel.example.com/base/").traces_url().as_deref(),
            Some("https://otel.example.com/base/v1/traces")
        );
        assert_eq!(TelemetryConfig::default().traces_url(), None);
    }

    #[test]
    fn an_endpoint_that_is_no_http_url_is_refused_by_its_key() {
        for bad in ["collector:4318", "grpc://collector:4317", "http://c:4318/?x=1", ""] {
            let e = with(bad).validate().unwrap_err().to_string();
            assert!(e.contains("telemetry.otlp.endpoint"), "{bad}: {e}");
        }
        with("http://127.0.0.1:4318").validate().expect("valid");
    }
}
