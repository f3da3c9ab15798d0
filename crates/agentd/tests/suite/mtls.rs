//! TLS and mutual TLS on the listener: a client certificate issued by the
//! configured client CA is the principal its subject CN names, with the
//! role configured for it; a client with no certificate, or one from
//! another CA, is refused at the handshake.

use crate::common::certs::{Issued, TestCa, write};
use crate::common::*;
use serde_json::{Value, json};

struct Setup {
    /// The daemon, its URL with `https`.
    d: Daemon,
    ca: TestCa,
    _tmp: tempfile::TempDir,
}

fn start() -> Setup {
    start_with("")
}

/// `start` with `extra` appended to the config.
fn start_with(extra: &str) -> Setup {
    let ca = TestCa::new("agentd test CA");
    let server = ca.server();
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let (cert, key) = (write(dir, "server.pem", &server.cert_pem), write(dir, "server.key", &server.key_pem));
    let client_ca = write(dir, "clients-ca.pem", &ca.cert_pem);
    let yaml = format!(
        "tls:\n  cert: {}\n  key: {}\n  client_ca: {}\n  client_identity:\n    from: cn\n    prefix: \"agent:\"\n    \
         role: agent\n    roles: {{ops-console: operator}}\n{extra}",
        cert.display(),
        key.display(),
        client_ca.display()
    );
    let conf = write_config(dir, &yaml);
    let mut d = Daemon::start_in(&dir.join("data"), &["--agent", "tck", "--config", conf.to_str().unwrap()]);
    d.url = d.url.replacen("http://", "https://", 1);
    Setup { d, ca, _tmp: tmp }
}

impl Setup {
    /// A client trusting the test CA for the server, presenting `cert`.
    fn client(&self, cert: Option<&Issued>) -> reqwest::Client {
        let root = reqwest::Certificate::from_pem(self.ca.cert_pem.as_bytes()).expect("root");
        let mut b = reqwest::Client::builder().tls_certs_only([root]);
        if let Some(c) = cert {
            b = b.identity(c.identity());
        }
        b.build().expect("client")
    }

    fn as_cert(&self, cert: &Issued) -> Daemon {
        let mut d = self.d.as_token(None);
        d.http = self.client(Some(cert));
        d
    }
}

#[tokio::test]
async fn a_client_certificate_is_the_principal_its_cn_names() {
    let s = start();
    let bot = s.as_cert(&s.ca.client("ci-bot"));
    let r = bot.call("SendMessage", json!({"message": user_msg(&uniq("tck-input-required"), "x")})).await;
    assert!(r["task"]["id"].is_string(), "{r}");
    assert_eq!(bot.call("ListTasks", json!({})).await["totalSize"], 1, "agent:ci-bot sees its task");
    let other = s.as_cert(&s.ca.client("another-bot"));
    assert_eq!(other.call("ListTasks", json!({})).await["totalSize"], 0, "another agent does not");
    let ops = s.as_cert(&s.ca.client("ops-console"));
    assert_eq!(ops.call("ListTasks", json!({})).await["totalSize"], 1, "ops-console is an operator");

    // The card says so, and its interfaces are https.
    let card: Value = ops
        .http
        .get(format!("{}/.well-known/agent-card.json", s.d.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(card["securitySchemes"]["mtls"].get("mtlsSecurityScheme").is_some(), "{card}");
    assert!(card["supportedInterfaces"][0]["url"].as_str().unwrap().starts_with("https://"), "{card}");
}

#[tokio::test]
async fn no_certificate_or_one_from_another_ca_is_refused_at_the_handshake() {
    let s = start();
    let stranger_ca = TestCa::new("another CA");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}});
    for (name, client) in
        [("no certificate", s.client(None)), ("another CA", s.client(Some(&stranger_ca.client("ci-bot"))))]
    {
        let r = client.post(s.d.jsonrpc_url()).json(&body).send().await;
        let e = r.err().unwrap_or_else(|| panic!("{name}: answered over HTTP"));
        assert!(e.is_connect() || e.is_request(), "{name}: {e:?}");
    }
    let ops = s.as_cert(&s.ca.client("ops-console"));
    assert_eq!(ops.call("ListTasks", json!({})).await["totalSize"], 0);
}

#[tokio::test]
async fn a_handshake_that_does_not_finish_in_time_is_closed() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let s = start_with("server:\n  header_read_timeout_ms: 300\n");
    let addr = s.d.url.trim_start_matches("https://").to_owned();
    // Nothing at all, and the first byte of a ClientHello then nothing.
    for opening in [&b""[..], &b"\x16"[..]] {
        let mut c = tokio::net::TcpStream::connect(&addr).await.expect("connect");
        c.write_all(opening).await.expect("write");
        let mut buf = [0u8; 64];
        let closed = tokio::time::timeout(std::time::Duration::from_secs(10), async {
            loop {
                match c.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
        });
        assert!(closed.await.is_ok(), "{opening:?}: the connection is closed by the handshake timeout");
    }
    let bot = s.as_cert(&s.ca.client("ci-bot"));
    assert_eq!(bot.call("ListTasks", json!({})).await["totalSize"], 0, "others are served");
}
