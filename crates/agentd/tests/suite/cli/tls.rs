//! The client verbs against daemons serving TLS with a certificate of a
//! private CA: `--ca-cert` trusts it, `--client-cert`/`--client-key` answer
//! mutual TLS, and each way the handshake fails is said as what it is
//! (exit 7), not as an unreachable daemon (exit 3). A TLS file that cannot
//! be used is a usage error naming it.

use super::{Out, agentd_env};
use crate::common::certs::{Issued, TestCa, write};
use crate::common::*;
use std::path::{Path, PathBuf};

const USAGE: i32 = 2;
const TLS: i32 = 7;

struct TlsDaemon {
    /// Its URL is `https`.
    d: Daemon,
    ca: TestCa,
    /// The daemon's CA certificate, as a client passes it.
    ca_pem: PathBuf,
    tmp: tempfile::TempDir,
}

/// A daemon whose certificate, issued by a CA of its own, is for `names`;
/// with `mtls` its clients must present a certificate of that CA.
fn tls_daemon(names: &[&str], mtls: bool) -> TlsDaemon {
    let ca = TestCa::new("agentd CLI test CA");
    let server = ca.server_for(names);
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let (cert, key) = (write(dir, "server.pem", &server.cert_pem), write(dir, "server.key", &server.key_pem));
    let ca_pem = write(dir, "ca.pem", &ca.cert_pem);
    let mut yaml = format!("tls:\n  cert: {}\n  key: {}\n", cert.display(), key.display());
    if mtls {
        yaml.push_str(&format!("  client_ca: {}\n", ca_pem.display()));
    }
    let conf = write_config(dir, &yaml);
    let mut d = Daemon::start_in(&dir.join("data"), &["--config", conf.to_str().unwrap()]);
    d.url = d.url.replacen("http://", "https://", 1);
    TlsDaemon { d, ca, ca_pem, tmp }
}

impl TlsDaemon {
    fn dir(&self) -> &Path {
        self.tmp.path()
    }

    /// `cert` as the files a client passes: (certificate, key).
    fn files(&self, name: &str, cert: &Issued) -> (String, String) {
        let c = write(self.dir(), &format!("{name}.pem"), &cert.cert_pem);
        let k = write(self.dir(), &format!("{name}.key"), &cert.key_pem);
        (c.display().to_string(), k.display().to_string())
    }

    /// `agentd ARGS --url <https url>` with `env`.
    fn agentd(&self, args: &[&str], env: &[(&str, &str)]) -> Out {
        agentd_env(&self.d.url, args, env)
    }
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// A failed handshake: exit 7 and `says` on stderr, nothing on stdout.
fn assert_tls(out: &Out, says: &[&str]) {
    assert_eq!(out.code, TLS, "{out:?}");
    for s in says {
        assert!(out.stderr.contains(s), "stderr lacks {s:?}: {out:?}");
    }
    assert!(!out.stderr.contains("could not reach"), "not said as unreachable: {out:?}");
    assert_eq!(out.stdout, "", "{out:?}");
}

#[test]
fn a_private_ca_is_trusted_with_ca_cert_and_named_without_it() {
    let t = tls_daemon(&["127.0.0.1", "localhost"], false);
    // Without it: the roots the system trusts, here pinned to another CA's
    // file (SSL_CERT_FILE) so the machine's own store cannot matter.
    let other = write(t.dir(), "other-ca.pem", &TestCa::new("another CA").cert_pem);
    let system = [("SSL_CERT_FILE", path(&other))];
    let out = t.agentd(&["send", "hello"], &system);
    assert_tls(
        &out,
        &["TLS: the daemon's certificate at https://", "not trusted (unknown issuer)", "--ca-cert"],
    );

    let ca = path(&t.ca_pem);
    let out = t.agentd(&["send", "--ca-cert", ca, "hello"], &system);
    assert_eq!((out.code, out.stdout.as_str()), (0, "echo: hello\n"), "{out:?}");
    let out = t.agentd(&["tasks", "list"], &[("AGENTD_CA_CERT", ca), system[0]]);
    assert_eq!(out.code, 0, "AGENTD_CA_CERT is --ca-cert: {out:?}");

    // --ca-cert of another CA: trusted neither by it nor by the system.
    let out = t.agentd(&["tasks", "list", "--ca-cert", path(&other)], &system);
    assert_tls(&out, &["not trusted (unknown issuer)", &format!("neither by --ca-cert {}", path(&other))]);

    // Where the system's roots are rustls-native-certs' (Linux, the BSDs),
    // SSL_CERT_FILE names them, as docs/security.md says.
    #[cfg(all(unix, not(target_vendor = "apple"), not(target_os = "android")))]
    {
        let out = t.agentd(&["tasks", "list"], &[("SSL_CERT_FILE", ca)]);
        assert_eq!(out.code, 0, "SSL_CERT_FILE is honoured: {out:?}");
    }
}

#[test]
fn a_daemon_requiring_a_client_certificate_says_so_and_takes_one() {
    let t = tls_daemon(&["127.0.0.1", "localhost"], true);
    let ca = path(&t.ca_pem);
    let out = t.agentd(&["tasks", "list", "--ca-cert", ca], &[]);
    assert_tls(
        &out,
        &["TLS: the daemon at https://", "requires a client certificate", "--client-cert", "--client-key"],
    );

    let (cert, key) = t.files("ci-bot", &t.ca.client("ci-bot"));
    let out =
        t.agentd(&["send", "--ca-cert", ca, "--client-cert", &cert, "--client-key", &key, "hello"], &[]);
    assert_eq!((out.code, out.stdout.as_str()), (0, "echo: hello\n"), "{out:?}");
    let env =
        [("AGENTD_CA_CERT", ca), ("AGENTD_CLIENT_CERT", cert.as_str()), ("AGENTD_CLIENT_KEY", key.as_str())];
    let out = t.agentd(&["tasks", "list"], &env);
    assert_eq!(out.code, 0, "the variables are the flags: {out:?}");

    // A certificate of a CA the daemon does not accept: refused, and named.
    let (cert, key) = t.files("stranger", &TestCa::new("another CA").client("ci-bot"));
    let out =
        t.agentd(&["tasks", "list", "--ca-cert", ca, "--client-cert", &cert, "--client-key", &key], &[]);
    assert_tls(&out, &["refused the client certificate", &cert]);
}

#[test]
fn an_http_url_to_a_tls_daemon_is_told_to_use_https() {
    let t = tls_daemon(&["127.0.0.1"], false);
    let plain = t.d.url.replacen("https://", "http://", 1);
    let out = agentd_env(&plain, &["tasks", "list", "--ca-cert", path(&t.ca_pem)], &[]);
    assert_tls(&out, &[&format!("{plain} answered in TLS"), &format!("Use an https:// --url: {}", t.d.url)]);
}

#[test]
fn a_certificate_for_another_name_names_both() {
    let t = tls_daemon(&["agentd.internal"], false);
    let out = t.agentd(&["tasks", "list", "--ca-cert", path(&t.ca_pem)], &[]);
    assert_tls(&out, &["TLS: the daemon's certificate is for agentd.internal, not 127.0.0.1"]);
}

#[test]
fn unusable_tls_files_are_usage_errors_naming_them() {
    // Files are read before anything is sent: no daemon is needed.
    let url = "https://127.0.0.1:9";
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let ca = TestCa::new("agentd CLI test CA");
    let (alice, bob) = (ca.client("alice"), ca.client("bob"));
    let ca_pem = write(dir, "ca.pem", &ca.cert_pem);
    let not_pem = write(dir, "notes.txt", "not a certificate\n");
    let alice_pem = write(dir, "alice.pem", &alice.cert_pem);
    let bob_key = write(dir, "bob.key", &bob.key_pem);
    let missing = dir.join("missing.pem");
    let cases: [(&[&str], &[&str]); 6] = [
        (&["--ca-cert", path(&missing)], &["--ca-cert", path(&missing), "cannot read it"]),
        (&["--ca-cert", path(&not_pem)], &["--ca-cert", path(&not_pem), "no PEM certificate"]),
        (
            &["--client-cert", path(&not_pem), "--client-key", path(&bob_key)],
            &["--client-cert", path(&not_pem), "no PEM certificate"],
        ),
        (
            &["--client-cert", path(&alice_pem), "--client-key", path(&ca_pem)],
            &["--client-key", path(&ca_pem), "no PEM private key"],
        ),
        (
            &["--client-cert", path(&alice_pem), "--client-key", path(&bob_key)],
            &[&format!(
                "--client-key {} is not the key of --client-cert {}",
                path(&bob_key),
                path(&alice_pem)
            )],
        ),
        (&["--client-cert", path(&alice_pem)], &["--client-cert needs its key", "--client-key"]),
    ];
    for (flags, says) in cases {
        let mut args = vec!["tasks", "list"];
        args.extend_from_slice(flags);
        let out = agentd_env(url, &args, &[]);
        assert_eq!(out.code, USAGE, "{flags:?}: {out:?}");
        for s in says {
            assert!(out.stderr.contains(s), "{flags:?}: stderr lacks {s:?}: {out:?}");
        }
    }
}

/// What the CLI does when the HTTP client loses the cause of a failure (in
/// TLS 1.3 a refusal of the client's certificate can reach its connection
/// before the request does, which then fails as "not ready"): a connection
/// of its own with the same configuration reads the refusal as it is.
#[tokio::test]
async fn a_diagnosis_reads_the_refusal_a_request_can_lose() {
    use agentd_client::{TlsFailure, TlsFiles};
    let t = tls_daemon(&["127.0.0.1"], true);
    let url = reqwest::Url::parse(&t.d.url).expect("url");
    let diagnose = |client_cert: Option<(String, String)>| {
        let (client_cert, client_key) = client_cert.map(|(c, k)| (c.into(), k.into())).unzip();
        let files = TlsFiles { ca_cert: Some(t.ca_pem.clone()), client_cert, client_key };
        let client = files.build(reqwest::Client::builder()).expect("client");
        let url = url.clone();
        async move { client.diagnose(&url).await }
    };
    assert_eq!(diagnose(None).await, Some(TlsFailure::ClientCertificateRequired));
    let stranger = t.files("stranger", &TestCa::new("another CA").client("ci-bot"));
    assert!(
        matches!(diagnose(Some(stranger)).await, Some(TlsFailure::ClientCertificateRefused(_))),
        "a certificate of another CA is refused"
    );
    assert_eq!(diagnose(Some(t.files("ci-bot", &t.ca.client("ci-bot")))).await, None, "the handshake holds");
    let plain = reqwest::Url::parse(&t.d.url.replacen("https://", "http://", 1)).expect("url");
    let client = TlsFiles::default().build(reqwest::Client::builder()).expect("client");
    assert_eq!(client.diagnose(&plain).await, None, "an http URL has no TLS to diagnose");
    assert!(client.speaks_tls(&plain).await, "the TLS listener, whichever scheme the URL names");
    let cleartext = Daemon::start(&[]);
    let cleartext = reqwest::Url::parse(&cleartext.url).expect("url");
    assert!(!client.speaks_tls(&cleartext).await, "a cleartext daemon is not taken for one speaking TLS");
}
