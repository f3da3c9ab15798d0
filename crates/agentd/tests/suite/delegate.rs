//! A2A delegation against a second real agentd started by the test: the
//! streaming and the polling path, a direct Message reply, failures, an
//! unknown peer, cancel propagation, bearer credentials, and the model's
//! `delegate` tool. A transparent proxy in front of the peer records which
//! methods and headers reached it and can hide its streaming capability.

mod proxy;
mod tool;

use crate::common::*;
use agentd_proto::{Message, Part, Role, Task, TaskState};
use agentd_runtime::delegate::{
    A2aDelegator, DelegateError, DelegateOptions, DelegateRequest, Delegator, PeerConfig,
};
use proxy::{proxy, proxy_with};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

fn fast() -> DelegateOptions {
    DelegateOptions { poll_interval: Duration::from_millis(50), request_timeout: Duration::from_secs(10) }
}

fn delegator(name: &str, url: &str, credentials: Option<&str>) -> A2aDelegator {
    let mut spec = format!("{name}={url}");
    if let Some(c) = credentials {
        spec.push_str(&format!(";credentials={c}"));
    }
    A2aDelegator::new(&[PeerConfig::parse_spec(&spec).unwrap()], fast()).unwrap()
}

/// A request to peer `p` whose messageId picks the tck scenario.
fn request(p: &str, message_id: &str, text: &str) -> DelegateRequest {
    let message = Message {
        message_id: message_id.to_owned(),
        role: Role::User,
        parts: vec![Part::text(text)],
        ..Default::default()
    };
    DelegateRequest { peer: p.to_owned(), message }
}

fn artifact_text(t: &Task) -> String {
    agentd_runtime::delegate::answer_text(t)
}

#[tokio::test]
async fn streaming_peers_are_followed_over_send_streaming_message() {
    let peer = Daemon::start(&["--agent", "tck"]);
    let px = proxy(&peer, true).await;
    let d = delegator("b", &px.url, None);
    let task =
        d.delegate(request("b", &uniq("tck-stream-001"), "go"), CancellationToken::new()).await.unwrap();
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(artifact_text(&task), "Stream hello from TCK");
    // The task is the peer's own, read whole.
    let there = peer.call("GetTask", json!({"id": task.id})).await;
    assert_eq!(there["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(there["artifacts"].as_array().unwrap().len(), task.artifacts.as_ref().unwrap().len());
    let methods = px.methods();
    assert_eq!(methods.first().map(String::as_str), Some("SendStreamingMessage"), "{methods:?}");
    assert!(!methods.iter().any(|m| m == "SendMessage"), "{methods:?}");
    assert!(px.seen().iter().all(|s| s.version.as_deref() == Some("1.0")), "{:?}", px.seen());
}

#[tokio::test]
async fn a_stream_that_ends_early_is_followed_by_polling() {
    let peer = Daemon::start(&["--agent", "tck"]);
    let px = proxy_with(&peer, true, true, true).await;
    let d = delegator("b", &px.url, None);
    let task = d
        .delegate(request("b", &uniq("test-resubscribe-message-id"), "x"), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    let methods = px.methods();
    assert_eq!(methods[0], "SendStreamingMessage");
    assert!(methods.iter().filter(|m| *m == "GetTask").count() >= 2, "{methods:?}");
}

#[tokio::test]
async fn peers_without_streaming_are_polled_with_get_task() {
    let peer = Daemon::start(&["--agent", "tck"]);
    let px = proxy(&peer, false).await;
    let d = delegator("b", &px.url, None);
    // Works for about four seconds: several polls see it WORKING first.
    let id = uniq("test-resubscribe-message-id");
    let started = Instant::now();
    let task = d.delegate(request("b", &id, "slow"), CancellationToken::new()).await.unwrap();
    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    assert!(started.elapsed() >= Duration::from_secs(3), "returned before the peer finished");
    let methods = px.methods();
    assert_eq!(methods.first().map(String::as_str), Some("SendMessage"), "{methods:?}");
    assert!(methods.iter().filter(|m| *m == "GetTask").count() >= 2, "{methods:?}");
    assert!(!methods.iter().any(|m| m == "SendStreamingMessage"), "{methods:?}");
    assert!(px.seen().iter().all(|s| s.version.as_deref() == Some("1.0")), "{:?}", px.seen());
}

#[tokio::test]
async fn a_direct_message_reply_comes_back_as_a_completed_task() {
    let peer = Daemon::start(&["--agent", "tck"]);
    for streaming in [true, false] {
        let px = proxy(&peer, streaming).await;
        let d = delegator("b", &px.url, None);
        let task = d
            .delegate(request("b", &uniq("tck-message-response"), "hi"), CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(task.status.state, TaskState::Completed, "streaming={streaming}");
        assert_eq!(artifact_text(&task), "Direct message response");
        assert!(!task.id.is_empty());
    }
}

#[tokio::test]
async fn peer_failures_are_errors_that_name_the_peer() {
    // Nobody listens there.
    let d = delegator("gone", "http://127.0.0.1:9", None);
    let e = d.delegate(request("gone", "m1", "x"), CancellationToken::new()).await.unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, DelegateError::Peer { .. }), "{e:?}");
    assert!(text.contains("\"gone\"") && text.contains("agent card"), "{text}");

    // The peer dies in the middle of the task.
    let mut peer = Daemon::process(&["--agent", "tck"]);
    let d = Arc::new(delegator("b", &peer.url, None));
    let d2 = d.clone();
    let call = tokio::spawn(async move {
        d2.delegate(request("b", &uniq("test-resubscribe-message-id"), "x"), CancellationToken::new()).await
    });
    wait_working(&peer).await;
    peer.kill9();
    let e = tokio::time::timeout(Duration::from_secs(30), call).await.unwrap().unwrap().unwrap_err();
    assert!(matches!(e, DelegateError::Peer { .. }), "{e:?}");

    // A task the peer ends badly is returned in that state.
    let peer = Daemon::start(&["--agent", "tck"]);
    let d = delegator("b", &peer.url, None);
    let task =
        d.delegate(request("b", &uniq("tck-reject-task"), "x"), CancellationToken::new()).await.unwrap();
    assert_eq!(task.status.state, TaskState::Rejected);
}

#[tokio::test]
async fn an_unknown_peer_is_refused_by_name() {
    let d = delegator("b", "http://127.0.0.1:9", None);
    assert_eq!(d.peers(), vec!["b".to_owned()]);
    let e = d.delegate(request("c", "m1", "x"), CancellationToken::new()).await.unwrap_err();
    assert!(matches!(&e, DelegateError::UnknownPeer(n) if n == "c"), "{e:?}");
    assert!(e.to_string().contains("a2a.peers"), "{e}");
}

/// Waits until the peer has a WORKING task and returns its id.
pub(crate) async fn wait_working(peer: &Daemon) -> String {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let list = peer.call("ListTasks", json!({"status": "TASK_STATE_WORKING"})).await;
        if let Some(id) = list["tasks"][0]["id"].as_str() {
            return id.to_owned();
        }
        assert!(Instant::now() < deadline, "the peer never started working");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[tokio::test]
async fn cancelling_the_delegation_cancels_the_peers_task() {
    let peer = Daemon::start(&["--agent", "tck"]);
    for streaming in [true, false] {
        let px = proxy(&peer, streaming).await;
        let d = Arc::new(delegator("b", &px.url, None));
        let cancel = CancellationToken::new();
        let (d2, c2) = (d.clone(), cancel.clone());
        let call = tokio::spawn(async move {
            d2.delegate(request("b", &uniq("test-resubscribe-message-id"), "x"), c2).await
        });
        let id = wait_working(&peer).await;
        cancel.cancel();
        let e = tokio::time::timeout(Duration::from_secs(10), call).await.unwrap().unwrap().unwrap_err();
        assert!(matches!(e, DelegateError::Cancelled), "{e:?}");
        wait_for_state(&peer, &id, "TASK_STATE_CANCELED", Duration::from_secs(10)).await;
        assert!(px.methods().iter().any(|m| m == "CancelTask"), "streaming={streaming}: {:?}", px.methods());
    }
}

pub(crate) const PEER_AUTH: &str = r#"
auth:
  tokens:
    - id: "agent:delegator"
      role: agent
      token: "env:PEER_TOKEN"
"#;
pub(crate) const TOKEN: &str = "peer-t0ken-5d1c";

#[tokio::test]
async fn credentials_are_sent_as_a_bearer_token() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), PEER_AUTH);
    let peer = Daemon::start_with_env(
        &dir.path().join("data"),
        &["--agent", "tck", "--config", cfg.to_str().unwrap()],
        &[("PEER_TOKEN", TOKEN)],
    )
    .with_token(TOKEN);
    let px = proxy(&peer, true).await;
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    let d = delegator("b", &px.url, Some(&format!("file:{}", token_file.display())));
    let task =
        d.delegate(request("b", &uniq("tck-complete-task"), "hi"), CancellationToken::new()).await.unwrap();
    assert_eq!(task.status.state, TaskState::Completed);
    assert!(px.seen().iter().all(|s| s.authorization.as_deref() == Some(&format!("Bearer {TOKEN}") as &str)));

    // Without credentials the peer refuses, and the error says where to look.
    let d = delegator("b", &px.url, None);
    let e = d
        .delegate(request("b", &uniq("tck-complete-task"), "hi"), CancellationToken::new())
        .await
        .unwrap_err();
    let text = e.to_string();
    assert!(text.contains("401") && text.contains("credentials"), "{text}");
    assert!(!text.contains(TOKEN));
}

#[tokio::test]
async fn credentials_go_only_to_the_configured_origin() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), PEER_AUTH);
    let peer = Daemon::start_with_env(
        &dir.path().join("data"),
        &["--agent", "tck", "--config", cfg.to_str().unwrap()],
        &[("PEER_TOKEN", TOKEN)],
    );
    // A card served at one origin that points its interface at another.
    let px = proxy_with(&peer, true, false, false).await;
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, TOKEN).unwrap();
    let d = delegator("b", &px.url, Some(&format!("file:{}", token_file.display())));
    let e = d
        .delegate(request("b", &uniq("tck-complete-task"), "hi"), CancellationToken::new())
        .await
        .unwrap_err();
    let text = e.to_string();
    assert!(text.contains("another origin") && text.contains("a2a.peers[b].url"), "{text}");
    assert!(px.methods().is_empty(), "nothing was sent: {:?}", px.methods());
    let list = peer.as_token(Some(TOKEN)).call("ListTasks", json!({})).await;
    assert_eq!(list["tasks"], json!([]), "the peer got nothing: {list}");
}
