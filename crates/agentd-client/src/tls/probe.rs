//! Finding out why a TLS connection failed when the HTTP client could not
//! say. In TLS 1.3 a client's handshake is over before the server has read
//! the client's certificate; a server that requires one and got none
//! answers with an alert, which can reach the HTTP client's connection
//! before its request does. The connection then closes "not ready" and the
//! alert is lost with it. [`TlsClient::diagnose`] opens a connection of its
//! own with the same configuration, writes a request and reads the answer,
//! so the alert, if there is one, is read as the error it is.

use super::{TlsFailure, rustls_error, tls_failure};
use reqwest::Url;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use tokio_rustls::rustls::pki_types::ServerName;

/// The longest a diagnosis waits, for the connection and for the answer.
const PATIENCE: Duration = Duration::from_secs(10);

/// What a diagnosis reads of the answer at most: a TLS alert comes first,
/// and any HTTP answer means the handshake held.
const READ_AT_MOST: usize = 16 * 1024;

/// An HTTP client and the TLS configuration it was built with.
pub struct TlsClient {
    pub http: reqwest::Client,
    pub(super) config: Arc<rustls::ClientConfig>,
}

impl TlsClient {
    /// The TLS failure a connection to `url`'s server meets, if any; `None`
    /// for an `http` URL, a server that cannot be reached, or one whose
    /// handshake holds.
    pub async fn diagnose(&self, url: &Url) -> Option<TlsFailure> {
        if url.scheme() != "https" {
            return None;
        }
        let written = url.host_str()?;
        let probe = async {
            let mut tls = match self.handshake(url).await? {
                Ok(tls) => tls,
                Err(e) => return tls_failure(&e),
            };
            let port = url.port_or_known_default()?;
            let request = format!(
                "HEAD /.well-known/agent-card.json HTTP/1.1\r\nHost: {written}:{port}\r\nConnection: close\r\n\r\n"
            );
            if let Err(e) = tls.write_all(request.as_bytes()).await {
                return tls_failure(&e);
            }
            let mut buf = vec![0; 4096];
            let mut read = 0;
            while read < READ_AT_MOST {
                match tls.read(&mut buf).await {
                    Ok(0) => return None,
                    Ok(n) => read += n,
                    Err(e) => return tls_failure(&e),
                }
            }
            None
        };
        tokio::time::timeout(PATIENCE, probe).await.ok().flatten()
    }

    /// Whether the server at `url`'s host and port answers a TLS handshake
    /// (whether or not it would trust or be trusted): what a cleartext
    /// request to a TLS listener fails on, which the HTTP client can only
    /// call a malformed answer.
    pub async fn speaks_tls(&self, url: &Url) -> bool {
        let probe = async {
            match self.handshake(url).await {
                None => false,
                Some(Ok(_)) => true,
                // A rustls error is the server's TLS answer judged; not TLS
                // at all is a malformed record, and a server that hangs up
                // is an I/O error with no rustls error in it.
                Some(Err(e)) => {
                    rustls_error(&e).is_some_and(|r| !matches!(r, rustls::Error::InvalidMessage(_)))
                }
            }
        };
        tokio::time::timeout(PATIENCE, probe).await.unwrap_or(false)
    }

    /// A handshake with `url`'s host and port under this configuration;
    /// `None` when the host cannot be named or reached.
    async fn handshake(&self, url: &Url) -> Option<std::io::Result<TlsStream<TcpStream>>> {
        let port = url.port_or_known_default()?;
        let host = url.host_str()?.trim_start_matches('[').trim_end_matches(']');
        let name = match host.parse::<std::net::IpAddr>() {
            Ok(ip) => ServerName::from(ip),
            Err(_) => ServerName::try_from(host.to_owned()).ok()?,
        };
        let tcp = TcpStream::connect((host, port)).await.ok()?;
        Some(TlsConnector::from(self.config.clone()).connect(name, tcp).await)
    }
}
