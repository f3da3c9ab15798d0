//! The start-up check of the model: an OpenAI-compatible server is asked
//! for `GET {endpoint}/models` (what every such server answers cheaply), an
//! Anthropic one for `GET {endpoint}/v1/models` (the same list shape), and
//! what it said goes to the log and to `/readyz`. A server that is not
//! up yet is asked again every 30 s until it answers, so readiness follows
//! it; requests are never refused because of the probe.

use agentd_client::root_cause;
use agentd_core::Background;
use agentd_runtime::model::{ModelConfig, ModelKind};
use agentd_server::Readiness;
use std::time::Duration;

const CHECK: &str = "model";
const RETRY: Duration = Duration::from_secs(30);
const TIMEOUT: Duration = Duration::from_secs(5);

/// Probes in the background: now, then every 30 s while it fails (until
/// the daemon stops).
pub fn spawn(cfg: &ModelConfig, readiness: Readiness, background: &Background) {
    if cfg.remote().is_none() {
        readiness.set(CHECK, true, format!("{} (built in, nothing to reach)", cfg.kind));
        return;
    }
    readiness.set(CHECK, false, "not probed yet");
    let cfg = cfg.clone();
    background.spawn_until_shutdown(async move {
        while !probe_once(&cfg, &readiness).await {
            tokio::time::sleep(RETRY).await;
        }
    });
}

/// One round over the endpoints; true when one answered.
async fn probe_once(cfg: &ModelConfig, readiness: &Readiness) -> bool {
    let Some((endpoints, model)) = cfg.remote() else { return true };
    let kind = cfg.kind;
    let (path, key) = match kind {
        ModelKind::Anthropic => ("/v1/models", &cfg.anthropic.api_key),
        _ => ("/models", &cfg.openai.api_key),
    };
    let key = key.as_ref().and_then(|k| k.resolve().ok());
    let Ok(http) = reqwest::Client::builder().timeout(TIMEOUT).build() else {
        return false;
    };
    let mut problems = Vec::new();
    for endpoint in endpoints {
        let url = format!("{}{path}", endpoint.trim_end_matches('/'));
        let mut rb = http.get(&url);
        if kind == ModelKind::Anthropic {
            rb = rb.header("anthropic-version", agentd_runtime::model::ANTHROPIC_API_VERSION);
        }
        match (&key, kind) {
            (Some(k), ModelKind::Anthropic) => rb = rb.header("x-api-key", k.expose()),
            (Some(k), _) => rb = rb.bearer_auth(k.expose()),
            (None, _) => {}
        }
        match rb.send().await {
            Ok(r) if r.status().is_success() => {
                let listed = r.json::<serde_json::Value>().await.ok().map(|v| model_ids(&v));
                let detail = match listed {
                    Some(ids) if !ids.is_empty() && !ids.iter().any(|id| id == model) => {
                        tracing::warn!(endpoint = %endpoint, model = %model, offered = %ids.join(", "),
                            "the model server answers but does not list the configured model; requests may fail");
                        format!("{endpoint} answers; it lists {} but not {model:?}", ids.join(", "))
                    }
                    _ => {
                        tracing::info!(endpoint = %endpoint, model = %model, "the model server answers");
                        format!("{endpoint} answers")
                    }
                };
                readiness.set(CHECK, true, detail);
                return true;
            }
            // Up, without a model list: as good as it gets from here.
            Ok(r) if matches!(r.status().as_u16(), 404 | 405) => {
                tracing::info!(endpoint = %endpoint, "the model server answers (it has no /models)");
                readiness.set(CHECK, true, format!("{endpoint} answers (no /models)"));
                return true;
            }
            Ok(r) if matches!(r.status().as_u16(), 401 | 403) => {
                problems.push(format!(
                    "{url} refused the credentials (HTTP {}): check model.{kind}.api_key",
                    r.status()
                ));
            }
            Ok(r) => problems.push(format!("{url} answered HTTP {}", r.status())),
            Err(e) => problems.push(format!("{url}: {}", root_cause(&e))),
        }
    }
    let detail = problems.join("; ");
    tracing::warn!(
        "the model server cannot be reached ({detail}); turns will fail until it is up. Retrying every {}s; /readyz reports it",
        RETRY.as_secs()
    );
    readiness.set(CHECK, false, detail);
    false
}

/// The `id`s of a `{"data": [{"id": …}]}` model list.
fn model_ids(v: &serde_json::Value) -> Vec<String> {
    v["data"].as_array().into_iter().flatten().filter_map(|m| m["id"].as_str().map(str::to_owned)).collect()
}
