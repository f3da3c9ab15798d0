//! A real OTLP/HTTP trace receiver: `tests/otlp/receiver.py`, decoding each
//! export with the official OpenTelemetry protobuf definitions (the interop
//! virtualenv's `opentelemetry-proto`, found by `AGENTD_MCP_PYTHON`), every
//! span one JSON line this harness collects.

use crate::mcp_servers::{python, repo};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

pub struct Otlp {
    child: Child,
    pub port: u16,
    spans: Arc<Mutex<Vec<Value>>>,
}

impl Otlp {
    pub fn start() -> Self {
        let script = repo().join("tests/otlp/receiver.py");
        let mut child = Command::new(python())
            .arg(script)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the OTLP receiver");
        let stdout = child.stdout.take().expect("its stdout");
        let spans = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        let kept = spans.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(p) = line.strip_prefix("PORT ") {
                    let _ = tx.send(p.trim().parse::<u16>().expect("a port"));
                } else if let Some(span) = line.strip_prefix("SPAN ") {
                    kept.lock().unwrap().push(serde_json::from_str(span).expect("a span as JSON"));
                }
            }
        });
        let port = rx.recv_timeout(Duration::from_secs(60)).expect("the OTLP receiver says its port");
        Self { child, port, spans }
    }

    /// What `telemetry.otlp.endpoint` is set to.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn spans(&self) -> Vec<Value> {
        self.spans.lock().unwrap().clone()
    }

    /// The spans received once `done` holds for them; panics naming `what`
    /// with what came when it does not within `within`.
    pub async fn until(&self, what: &str, within: Duration, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + within;
        loop {
            let spans = self.spans();
            if done(&spans) {
                return spans;
            }
            assert!(Instant::now() < deadline, "no {what} within {within:?}; spans: {spans:#?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Otlp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
