//! The listener: accepts connections under the caps, over TLS when
//! configured (`tls.rs`), and serves each with its timeouts (`conn.rs`). `axum::serve` has neither; without them one
//! client holding silent or idle sockets up to the file-descriptor limit
//! stops every other client.

mod body;
mod bulk;
mod caps;
pub use bulk::when_connections_close_in_bulk;
pub(crate) use caps::peer_of;
mod conn;
mod tls;

pub use body::BodyTimedOut;
pub use tls::{CertName, ClientIdentityRule, Tls, TlsSettings};

use crate::state::AppState;
use agentd_proto::{A2aError, ErrorKind};
use caps::{ConnectionCaps, Refused};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// Serves the bindings on an already bound listener until `shutdown`
/// fires, then waits for open connections to finish: each is asked to
/// close after what it has in flight. Streams end with `state.shutdown`
/// (the same token, or a later one: the daemon lets running turns finish
/// first), after which a connection closes as soon as nothing is in
/// flight. Connections are tracked on the engine's background work.
/// Taking the listener (not an address) lets tests bind `127.0.0.1:0`.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let app = crate::routes::App::bindings(state.clone());
    serve_app(listener, &state, app, shutdown).await
}

/// Serves `GET /metrics` alone (`--metrics-listen`) as [`serve`] serves the
/// bindings: same caps, timeouts and TLS; `open`: scrapes need no credentials.
pub async fn serve_metrics(
    listener: TcpListener,
    state: AppState,
    open: bool,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let app = crate::routes::App::router(crate::metrics::app(state.clone(), open));
    serve_app(listener, &state, app, shutdown).await
}

async fn serve_app(
    listener: TcpListener,
    state: &AppState,
    app: crate::routes::App,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let limits = state.config.connections.clone();
    let background = state.engine.background().clone();
    let stopped = state.shutdown.clone();
    let tls = state.config.tls.clone();
    let builders = Arc::new(conn::builders(&limits));
    let caps = ConnectionCaps::new(limits.max_connections, limits.max_connections_per_peer);
    let refusals = [
        (Refused::Total, refusal(Refused::Total, &limits)),
        (Refused::Peer, refusal(Refused::Peer, &limits)),
    ];
    loop {
        let (stream, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(pair) => pair,
                Err(e) => {
                    // Out of file descriptors or a connection reset before
                    // it was accepted: keep accepting, without spinning.
                    tracing::warn!(error = %e, "accept error");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = shutdown.cancelled() => break,
        };
        let admitted = match caps.admit(peer.ip()) {
            Ok(a) => a,
            Err(which) => {
                tracing::debug!(%peer, ?which, "connection refused: over the cap");
                let answer =
                    refusals.iter().find(|(w, _)| *w == which).map_or(&[][..], |(_, a)| a.as_slice());
                refuse(stream, answer);
                continue;
            }
        };
        // Without TCP_NODELAY the second small SSE frame of a stream waits
        // for the client's delayed ACK (~40 ms, Nagle).
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY");
        }
        let (app, builders, limits, shutdown, stopped) =
            (app.clone(), builders.clone(), limits.clone(), shutdown.clone(), stopped.clone());
        match &tls {
            None => {
                background.spawn(async move {
                    // The first bytes get the time a request head gets.
                    let first = tokio::time::timeout(limits.header_read_timeout, conn::sniff(&stream));
                    let version = tokio::select! {
                        v = first => match v {
                            Ok(v) => v,
                            Err(_) => return tracing::debug!(%peer, "nothing sent within the header timeout"),
                        },
                        () = shutdown.cancelled() => return,
                    };
                    conn::serve(
                        stream,
                        version,
                        None,
                        peer.ip(),
                        app,
                        builders,
                        limits,
                        shutdown,
                        stopped,
                        admitted,
                    )
                    .await;
                });
            }
            Some(tls) => {
                let tls = tls.clone();
                background.spawn(async move {
                    // The handshake gets the time a request head gets: a
                    // client that connects and says nothing holds no place.
                    let accepted =
                        tokio::time::timeout(limits.header_read_timeout, tls.acceptor.accept(stream));
                    let stream = match accepted.await {
                        Ok(Ok(s)) => s,
                        Ok(Err(e)) => return tracing::debug!(%peer, error = %e, "TLS handshake failed"),
                        Err(_) => return tracing::debug!(%peer, "TLS handshake timed out"),
                    };
                    let identity = match (&tls.identity, stream.get_ref().1.peer_certificates()) {
                        (Some(rule), Some([cert, ..])) => Some(tls::identify(rule, cert)),
                        _ => None,
                    };
                    conn::serve(
                        stream,
                        None,
                        identity,
                        peer.ip(),
                        app,
                        builders,
                        limits,
                        shutdown,
                        stopped,
                        admitted,
                    )
                    .await;
                });
            }
        }
    }
    drop(listener);
    caps.drained().await;
    Ok(())
}

/// The whole HTTP/1.1 answer to a connection over a cap: 503 with the
/// REST error body naming the limit, then close.
fn refusal(which: Refused, limits: &crate::state::ConnectionLimits) -> Vec<u8> {
    let (what, key, n) = match which {
        Refused::Total => ("connections are open", "server.max_connections", limits.max_connections),
        Refused::Peer => (
            "connections are open from your address (IPv6: your /64)",
            "server.max_connections_per_peer",
            limits.max_connections_per_peer,
        ),
    };
    let e = A2aError::new(ErrorKind::Unavailable, format!("too many {what}: the limit is {n} ({key})"))
        .with_meta("limit", key)
        .with_meta("limitValue", n.to_string());
    let body = e.to_rest().to_string();
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Writes what fits of `answer` without waiting (the socket is new: its
/// send buffer is empty) and closes.
fn refuse(stream: TcpStream, answer: &[u8]) {
    let _ = stream.try_write(answer);
    drop(stream);
}
