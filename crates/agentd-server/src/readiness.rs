//! `GET /readyz`: whether the daemon can do its work, as named checks the
//! binary sets (the model endpoint it probed, say). 200 when every check
//! passes, 503 otherwise; the body lists each with what it found.
//! `/healthz` only says the listener answers.

use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

#[derive(Clone, Debug, Default)]
pub struct Readiness(Arc<Mutex<BTreeMap<String, (bool, String)>>>);

impl Readiness {
    /// Records the outcome of one check, replacing the last one.
    pub fn set(&self, name: &str, ok: bool, detail: impl Into<String>) {
        let mut checks = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        checks.insert(name.to_owned(), (ok, detail.into()));
    }

    /// `(ready, {"ready": …, "checks": {name: {"ok": …, "detail": …}}})`.
    pub fn report(&self) -> (bool, Value) {
        let checks = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let ready = checks.values().all(|(ok, _)| *ok);
        let list: Map<String, Value> =
            checks.iter().map(|(k, (ok, detail))| (k.clone(), json!({"ok": ok, "detail": detail}))).collect();
        (ready, json!({"ready": ready, "checks": list}))
    }
}

pub async fn handle(State(state): State<AppState>) -> Response {
    let (ready, body) = state.config.readiness.report();
    let status = if ready { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (status, Json(body)).into_response()
}

#[cfg(test)]
mod tests {
    use super::Readiness;
    use serde_json::json;

    #[test]
    fn ready_only_when_every_check_passes() {
        let r = Readiness::default();
        assert!(r.report().0, "no checks: ready");
        r.set("model", false, "unreachable");
        assert_eq!(
            r.report(),
            (false, json!({"ready": false, "checks": {"model": {"ok": false, "detail": "unreachable"}}}))
        );
        r.set("model", true, "ok");
        assert!(r.report().0);
    }
}
