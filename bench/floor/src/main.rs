//! `floor PORT`: answers every POST to `/` with a JSON-RPC result holding a
//! fixed completed task (430 bytes in all) once the body has parsed as
//! JSON, and serves an agent card for the bench's readiness and cold-start
//! probes.

use axum::Router;
use axum::body::Bytes;
use axum::http::header::CONTENT_TYPE;
use axum::routing::{get, post};

const TASK: &str = r#"{"task":{"id":"0190a5d2-7c1e-7b3a-9f00-5d1c2e3f4a5b","contextId":"0190a5d2-7c1e-7b3a-9f00-6e2d3f4a5b6c","status":{"state":"TASK_STATE_COMPLETED","message":{"messageId":"0190a5d2-7c1e-7b3a-9f00-7f3e4a5b6c7d","role":"ROLE_AGENT","parts":[{"text":"done"}]},"timestamp":"2026-01-01T00:00:00.000000000Z"},"history":[{"messageId":"tck-complete-task-bench","role":"ROLE_USER","parts":[{"text":"hi"}]}]}}"#;
const CARD: &str = r#"{"name":"floor","description":"the bench's floor","version":"0.0.0","supportedInterfaces":[{"url":"http://127.0.0.1","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],"capabilities":{},"defaultInputModes":["text"],"defaultOutputModes":["text"],"skills":[]}"#;
const JSON: [(axum::http::HeaderName, &str); 1] = [(CONTENT_TYPE, "application/json")];

async fn answer(body: Bytes) -> ([(axum::http::HeaderName, &'static str); 1], String) {
    let text = match serde_json::from_slice::<serde_json::Value>(&body) {
        Ok(request) => {
            let id = request.get("id").unwrap_or(&serde_json::Value::Null);
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{TASK}}}"#)
        }
        Err(_) => r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#.to_owned(),
    };
    (JSON, text)
}

#[tokio::main]
async fn main() {
    let port: u16 = std::env::args().nth(1).and_then(|p| p.parse().ok()).expect("usage: floor PORT");
    let app = Router::new()
        .route("/", post(answer))
        .route("/.well-known/agent-card.json", get(|| async { (JSON, CARD) }));
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await.expect("bind");
    axum::serve(listener, app).await.expect("serve");
}
