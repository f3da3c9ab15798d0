//! TLS on the listener (rustls), and with `client_ca` mutual TLS: a client
//! must present a certificate issued under that CA, or the handshake fails.
//! The certificate's subject CN or a SAN, per `ClientIdentityRule`, names
//! the principal of every request on the connection.

use crate::auth::PeerIdentity;
use agentd_core::{Principal, PrincipalRole};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::{RootCertStore, ServerConfig};

/// Which name of a client certificate becomes the principal's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CertName {
    /// The subject's common name.
    #[default]
    Cn,
    /// The first DNS name of the subject alternative names.
    Dns,
    /// The first URI SAN (a SPIFFE id, say).
    Uri,
    /// The first e-mail SAN.
    Email,
}

/// How a client certificate maps to a principal: `prefix` + the name,
/// with the role `roles` gives that name, else `role`.
#[derive(Clone, Debug)]
pub struct ClientIdentityRule {
    pub from: CertName,
    pub prefix: String,
    pub role: PrincipalRole,
    pub roles: BTreeMap<String, PrincipalRole>,
}

#[derive(Clone, Debug)]
pub struct TlsSettings {
    pub cert: PathBuf,
    pub key: PathBuf,
    /// CA certificates client certificates must chain to (mutual TLS).
    pub client_ca: Option<PathBuf>,
    pub identity: ClientIdentityRule,
}

/// A listener's TLS: the acceptor, and with mutual TLS the identity rule.
#[derive(Clone)]
pub struct Tls {
    pub(crate) acceptor: TlsAcceptor,
    pub(crate) identity: Option<Arc<ClientIdentityRule>>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls").field("mtls", &self.identity.is_some()).finish_non_exhaustive()
    }
}

impl Tls {
    /// Reads the certificate, key and client CA files; the errors name
    /// the setting and the file.
    pub fn new(s: &TlsSettings) -> Result<Tls, String> {
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&s.cert)
            .and_then(|it| it.collect::<Result<_, _>>())
            .map_err(|e| format!("tls.cert: cannot read {}: {e}", s.cert.display()))?;
        if certs.is_empty() {
            return Err(format!("tls.cert: {} holds no certificate", s.cert.display()));
        }
        let key = PrivateKeyDer::from_pem_file(&s.key)
            .map_err(|e| format!("tls.key: cannot read a private key from {}: {e}", s.key.display()))?;
        let provider = Arc::new(tokio_rustls::rustls::crypto::aws_lc_rs::default_provider());
        let builder = ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("tls: {e}"))?;
        let builder = match &s.client_ca {
            None => builder.with_no_client_auth(),
            Some(path) => {
                let mut roots = RootCertStore::empty();
                let cas = CertificateDer::pem_file_iter(path)
                    .and_then(|it| it.collect::<Result<Vec<_>, _>>())
                    .map_err(|e| format!("tls.client_ca: cannot read {}: {e}", path.display()))?;
                for ca in cas {
                    roots.add(ca).map_err(|e| format!("tls.client_ca: {}: {e}", path.display()))?;
                }
                if roots.is_empty() {
                    return Err(format!("tls.client_ca: {} holds no certificate", path.display()));
                }
                let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                    .build()
                    .map_err(|e| format!("tls.client_ca: {e}"))?;
                builder.with_client_cert_verifier(verifier)
            }
        };
        let mut config = builder
            .with_single_cert(certs, key)
            .map_err(|e| format!("tls.key: does not go with tls.cert: {e}"))?;
        // HTTP/2 (gRPC) and HTTP/1.1 over the same port, as in cleartext.
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Tls {
            acceptor: TlsAcceptor::from(Arc::new(config)),
            identity: s.client_ca.as_ref().map(|_| Arc::new(s.identity.clone())),
        })
    }

    /// Whether client certificates are required.
    pub fn mtls(&self) -> bool {
        self.identity.is_some()
    }
}

/// The principal a verified client certificate names.
pub(crate) fn identify(rule: &ClientIdentityRule, cert: &[u8]) -> PeerIdentity {
    PeerIdentity(name_of(rule.from, cert).map(|name| {
        let role = rule.roles.get(&name).copied().unwrap_or(rule.role);
        Principal::new(format!("{}{name}", rule.prefix), role)
    }))
}

fn name_of(from: CertName, der: &[u8]) -> Result<String, String> {
    use x509_parser::extensions::GeneralName;
    let (_, cert) =
        x509_parser::parse_x509_certificate(der).map_err(|e| format!("the client certificate: {e}"))?;
    let found = match from {
        CertName::Cn => {
            cert.subject().iter_common_name().next().and_then(|cn| cn.as_str().ok()).map(str::to_owned)
        }
        san => {
            let names = cert.subject_alternative_name().ok().flatten();
            names.and_then(|ext| {
                ext.value.general_names.iter().find_map(|n| match (san, n) {
                    (CertName::Dns, GeneralName::DNSName(s))
                    | (CertName::Uri, GeneralName::URI(s))
                    | (CertName::Email, GeneralName::RFC822Name(s)) => Some((*s).to_owned()),
                    _ => None,
                })
            })
        }
    };
    found.filter(|n| !n.is_empty()).ok_or_else(|| {
        let what = match from {
            CertName::Cn => "a subject common name",
            CertName::Dns => "a DNS name",
            CertName::Uri => "a URI name",
            CertName::Email => "an e-mail name",
        };
        format!("the client certificate has no {what} (tls.client_identity.from)")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, DnType, KeyPair, SanType};

    fn cert(cn: Option<&str>, sans: Vec<SanType>) -> Vec<u8> {
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.distinguished_name = rcgen::DistinguishedName::new();
        if let Some(cn) = cn {
            p.distinguished_name.push(DnType::CommonName, cn);
        }
        p.subject_alt_names = sans;
        p.self_signed(&KeyPair::generate().unwrap()).unwrap().der().to_vec()
    }

    fn rule(from: CertName) -> ClientIdentityRule {
        ClientIdentityRule {
            from,
            prefix: "agent:".into(),
            role: PrincipalRole::Agent,
            roles: BTreeMap::from([("ops.example.com".into(), PrincipalRole::Operator)]),
        }
    }

    #[test]
    fn each_kind_of_name_maps_to_a_principal_with_its_role() {
        let der = cert(
            Some("ci-bot"),
            vec![
                SanType::DnsName("ops.example.com".try_into().unwrap()),
                SanType::URI("spiffe://example.com/ci".try_into().unwrap()),
                SanType::Rfc822Name("bot@example.com".try_into().unwrap()),
            ],
        );
        let id = |from| identify(&rule(from), &der).0.unwrap();
        assert_eq!(id(CertName::Cn), Principal::new("agent:ci-bot", PrincipalRole::Agent));
        assert_eq!(id(CertName::Dns), Principal::new("agent:ops.example.com", PrincipalRole::Operator));
        assert_eq!(id(CertName::Uri).id, "agent:spiffe://example.com/ci");
        assert_eq!(id(CertName::Email).id, "agent:bot@example.com");
    }

    #[test]
    fn a_certificate_without_the_name_names_no_one() {
        let der = cert(None, Vec::new());
        for from in [CertName::Cn, CertName::Dns, CertName::Uri, CertName::Email] {
            let e = identify(&rule(from), &der).0.unwrap_err();
            assert!(e.contains("tls.client_identity.from"), "{e}");
        }
    }
}
