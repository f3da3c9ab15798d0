//! What one client can hold of the listener, before any authentication:
//! silent, slow and idle connections are closed after short configured
//! timeouts, a declared body over the limit is refused before it is sent,
//! and connections over the caps are refused at once while the clients
//! already connected go on being served. Every wait here is on the
//! connection itself (its end, or the answer), under a deadline far above
//! the configured timeouts.

use crate::common::*;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

/// Far above every timeout configured here; only reached when a timeout
/// does not work.
const DEADLINE: Duration = Duration::from_secs(10);

fn addr(d: &Daemon) -> SocketAddr {
    d.url.trim_start_matches("http://").parse().expect("daemon address")
}

async fn connect_from(d: &Daemon, local: &str) -> TcpStream {
    let s = TcpSocket::new_v4().expect("socket");
    s.bind(format!("{local}:0").parse().expect("local address")).expect("bind");
    s.connect(addr(d)).await.expect("connect")
}

async fn connect(d: &Daemon) -> TcpStream {
    TcpStream::connect(addr(d)).await.expect("connect")
}

/// Reads until the server closes the connection; what it sent, or `None`
/// when it is still open at the deadline.
async fn until_closed(s: &mut TcpStream) -> Option<String> {
    let mut got = Vec::new();
    let read = async {
        let mut buf = [0u8; 4096];
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    };
    tokio::time::timeout(DEADLINE, read).await.ok()?;
    Some(String::from_utf8_lossy(&got).into_owned())
}

/// One HTTP/1.1 response on a kept-alive connection: (status, body).
async fn response(s: &mut TcpStream) -> (u16, String) {
    let mut got = Vec::new();
    let read = async {
        let mut buf = [0u8; 4096];
        loop {
            let text = String::from_utf8_lossy(&got).into_owned();
            if let Some((head, body)) = text.split_once("\r\n\r\n") {
                let len = head
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_owned())
                    })
                    .and_then(|v| v.parse::<usize>().ok())
                    .unwrap_or(0);
                if body.len() >= len {
                    let status = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
                    return (status, body.to_owned());
                }
            }
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => return (0, text),
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    };
    tokio::time::timeout(DEADLINE, read).await.expect("no answer before the deadline")
}

async fn healthz(s: &mut TcpStream) -> u16 {
    s.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n").await.expect("write");
    response(s).await.0
}

fn short_timeouts() -> [(&'static str, &'static str); 3] {
    [
        ("AGENTD_SERVER_HEADER_READ_TIMEOUT_MS", "300"),
        ("AGENTD_SERVER_BODY_READ_TIMEOUT_MS", "300"),
        ("AGENTD_SERVER_IDLE_TIMEOUT_MS", "300"),
    ]
}

#[tokio::test]
async fn silent_slow_and_idle_connections_are_closed_after_their_timeouts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = Daemon::start_with_env(dir.path(), &[], &short_timeouts());

    let mut silent = connect(&d).await;
    assert!(until_closed(&mut silent).await.is_some(), "a connection that sends nothing is closed");

    // Headers one line every 50 ms: each line arrives well within the
    // timeout, the head as a whole never does.
    let mut slow = connect(&d).await;
    slow.write_all(b"POST /a2a/jsonrpc HTTP/1.1\r\nhost: 127.0.0.1\r\n").await.expect("write");
    let mut tick = tokio::time::interval(Duration::from_millis(50));
    let dribble = async {
        for _ in 0..200 {
            tick.tick().await;
            if slow.write_all(b"x-pad: a\r\n").await.is_err() {
                return true;
            }
        }
        false
    };
    assert!(tokio::time::timeout(DEADLINE, dribble).await.unwrap_or(false), "slow headers are cut off");

    let mut slow_body = connect(&d).await;
    slow_body
        .write_all(b"POST /a2a/jsonrpc HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{\"jsonrpc\"")
        .await
        .expect("write");
    let answer = until_closed(&mut slow_body).await.expect("a body that never completes is cut off");
    assert!(answer.starts_with("HTTP/1.1 408"), "answered 408: {answer}");
    assert!(answer.contains("server.body_read_timeout_ms"), "names the limit: {answer}");

    let mut idle = connect(&d).await;
    assert_eq!(healthz(&mut idle).await, 200);
    assert!(until_closed(&mut idle).await.is_some(), "an idle keep-alive connection is closed");

    // HTTP/2 with prior knowledge (how gRPC connects): the preface and
    // SETTINGS, then nothing.
    let mut h2 = connect(&d).await;
    h2.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
        .await
        .expect("write");
    assert!(until_closed(&mut h2).await.is_some(), "an idle HTTP/2 connection is closed");

    let r = d.ok(Binding::JsonRpc, "SendMessage", send_params(&uid("m"), "still here", None)).await;
    assert_eq!(task_state(&r["task"]), "TASK_STATE_COMPLETED");
}

#[tokio::test]
async fn a_declared_length_over_the_limit_is_refused_before_the_body_is_sent() {
    let d = Daemon::start(&[]);
    for path in ["/a2a/jsonrpc", "/a2a/rest/message:send"] {
        let mut s = connect(&d).await;
        let head = format!(
            "POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 1000000000\r\n\r\n"
        );
        s.write_all(head.as_bytes()).await.expect("write");
        let (status, body) = response(&mut s).await;
        assert_eq!(status, 413, "{path}: {body}");
        assert!(body.contains("4194304"), "{path}: names the limit: {body}");
    }
}

#[tokio::test]
async fn connections_over_the_caps_are_refused_while_connected_clients_are_served() {
    let dir = tempfile::tempdir().expect("tempdir");
    let env = [("AGENTD_SERVER_MAX_CONNECTIONS", "3"), ("AGENTD_SERVER_MAX_CONNECTIONS_PER_PEER", "2")];
    let d = Daemon::start_with_env(dir.path(), &[], &env);

    let mut a1 = connect_from(&d, "127.0.0.1").await;
    let mut a2 = connect_from(&d, "127.0.0.1").await;
    assert_eq!(healthz(&mut a1).await, 200);
    assert_eq!(healthz(&mut a2).await, 200);

    let mut a3 = connect_from(&d, "127.0.0.1").await;
    let refused = until_closed(&mut a3).await.expect("over the per-peer cap: closed at once");
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    assert!(refused.contains("server.max_connections_per_peer"), "names the limit: {refused}");

    let mut b1 = connect_from(&d, "127.0.0.2").await;
    assert_eq!(healthz(&mut b1).await, 200, "another address has places of its own");

    let mut c1 = connect_from(&d, "127.0.0.3").await;
    let refused = until_closed(&mut c1).await.expect("over the total cap: closed at once");
    assert!(refused.contains("server.max_connections\""), "names the limit: {refused}");

    assert_eq!(healthz(&mut a1).await, 200, "connected clients are still served");
    assert_eq!(healthz(&mut b1).await, 200, "connected clients are still served");

    // A closed connection gives its place back (once the daemon saw it close).
    drop(a2);
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let mut again = connect_from(&d, "127.0.0.1").await;
        if healthz(&mut again).await == 200 {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the place never came back");
        tokio::task::yield_now().await;
    }
}

/// A client that asks for a big answer and reads none of it holds its
/// connection, and the answer, no longer than the idle timeout: with one
/// connection allowed an address, the next one is served once the daemon
/// dropped it.
#[tokio::test]
async fn a_client_that_reads_nothing_of_its_answer_is_dropped_after_the_idle_timeout() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Idle after 300 ms; the wait for a next request head (which HTTP/1.1
    // also arms while an answer is written) far above the deadline.
    let env = [
        ("AGENTD_SERVER_IDLE_TIMEOUT_MS", "300"),
        ("AGENTD_SERVER_HEADER_READ_TIMEOUT_MS", "60000"),
        ("AGENTD_SERVER_MAX_CONNECTIONS_PER_PEER", "1"),
    ];
    let mut d = Daemon::start_with_env(dir.path(), &[], &env);
    // A fresh connection for each setup request: building and checking a
    // 3 MiB message can outlast the 300 ms idle timeout, and a kept-alive
    // connection the daemon closes as the client reuses it fails the
    // request (the race every HTTP client has with a server's idle close).
    d.http = reqwest::Client::builder().pool_max_idle_per_host(0).build().expect("client");
    // A listing far bigger than the sockets' buffers: the echo model
    // answers each 3 MiB message with its text.
    let big = "x".repeat(3 << 20);
    for _ in 0..3 {
        d.ok(Binding::JsonRpc, "SendMessage", send_params(&uid("big"), &big, None)).await;
    }
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"includeArtifacts":true}}"#;
    let socket = TcpSocket::new_v4().expect("socket");
    socket.set_recv_buffer_size(4096).expect("a small receive buffer");
    socket.bind("127.0.0.2:0".parse().expect("local address")).expect("bind");
    let mut stalled = socket.connect(addr(&d)).await.expect("connect");
    let request = format!(
        "POST /a2a/jsonrpc HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    stalled.write_all(request.as_bytes()).await.expect("write");
    // Nothing of the answer is read; the address's one place comes back
    // when the daemon drops the connection.
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let mut probe = connect_from(&d, "127.0.0.2").await;
        if healthz(&mut probe).await == 200 {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the stalled connection was never dropped");
        tokio::task::yield_now().await;
    }
    drop(stalled);
}
