//! TLS beyond the system's defaults: a private CA to trust and a client
//! certificate to present, read from PEM files with errors that name the
//! file at fault; and what a failed handshake was, read from the error's
//! chain (reqwest → hyper → `io::Error` → `rustls::Error`) rather than from
//! its text, so that a certificate problem is not taken for a network one.
//!
//! The server's certificate is checked by rustls-platform-verifier (the
//! verifier reqwest would use): the system's roots, plus the CA files given
//! here. On Linux and the BSDs the system's roots are those
//! rustls-native-certs loads, which are the files `SSL_CERT_FILE` and
//! `SSL_CERT_DIR` name when either is set, and the OS store otherwise; on
//! macOS and Windows those variables play no part.

use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{AlertDescription, CertificateError, InconsistentKeys};
use std::error::Error;
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod probe;
pub use probe::TlsClient;

/// One of the files a client's TLS is set up with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsFile {
    /// CA certificates trusted for the server's certificate.
    CaCert,
    /// The client certificate (chain, leaf first).
    ClientCert,
    /// The client certificate's private key.
    ClientKey,
}

/// The TLS files of a client; none set is the system's roots and no
/// client certificate.
#[derive(Clone, Debug, Default)]
pub struct TlsFiles {
    /// PEM CA certificates, trusted besides the system's roots.
    pub ca_cert: Option<PathBuf>,
    /// A PEM client certificate, with [`TlsFiles::client_key`].
    pub client_cert: Option<PathBuf>,
    /// The client certificate's PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub client_key: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum TlsSetupError {
    /// A file cannot be read.
    #[error("{}: {source}", path.display())]
    Unreadable {
        file: TlsFile,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A file does not hold what it should.
    #[error("{}: {problem}", path.display())]
    BadContent { file: TlsFile, path: PathBuf, problem: String },
    /// The key is not the client certificate's.
    #[error("the key in {} is not the key of the certificate in {}", key.display(), cert.display())]
    KeyMismatch { cert: PathBuf, key: PathBuf },
    /// The client certificate and key, each readable, cannot be used
    /// together (a key type rustls does not take, say).
    #[error("{} and {}: {problem}", cert.display(), key.display())]
    UnusablePair { cert: PathBuf, key: PathBuf, problem: String },
    /// A client certificate without its key, or a key without its certificate.
    #[error("a client certificate needs both its certificate and its key")]
    Incomplete,
    /// The system's trusted roots cannot be loaded.
    #[error("cannot load the system's trusted CA certificates: {0}")]
    Roots(String),
    /// The HTTP client cannot be built for another reason.
    #[error("cannot build the HTTP client: {}", crate::describe(.0))]
    Build(#[source] reqwest::Error),
}

impl TlsFiles {
    /// Builds `builder` with these files: the CA certificates trusted
    /// besides the system's roots (a private CA for one daemon should not
    /// stop the client reaching others), the client certificate presented
    /// when a server asks for one. The TLS configuration is made here, as
    /// reqwest would make it, and handed to reqwest, so that
    /// [`TlsClient::diagnose`] can open a connection with the very same one.
    pub fn build(&self, builder: reqwest::ClientBuilder) -> Result<TlsClient, TlsSetupError> {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let extra_roots = match &self.ca_cert {
            Some(path) => read_ca_certs(path)?,
            None => Vec::new(),
        };
        let verifier =
            rustls_platform_verifier::Verifier::new_with_extra_roots(extra_roots, provider.clone())
                .map_err(|e| TlsSetupError::Roots(e.to_string()))?;
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsSetupError::Roots(e.to_string()))?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier));
        let mut config = match (&self.client_cert, &self.client_key) {
            (Some(cert), Some(key)) => {
                let (chain, private) = read_identity(cert, key)?;
                config.with_client_auth_cert(chain, private).map_err(|e| match e {
                    rustls::Error::InconsistentKeys(InconsistentKeys::KeyMismatch) => {
                        TlsSetupError::KeyMismatch { cert: cert.clone(), key: key.clone() }
                    }
                    rustls::Error::InvalidCertificate(c) => TlsSetupError::BadContent {
                        file: TlsFile::ClientCert,
                        path: cert.clone(),
                        problem: format!("not a certificate rustls accepts ({c:?})"),
                    },
                    // Most likely a key type rustls does not take.
                    r => TlsSetupError::UnusablePair {
                        cert: cert.clone(),
                        key: key.clone(),
                        problem: r.to_string(),
                    },
                })?
            }
            (None, None) => config.with_no_client_auth(),
            _ => return Err(TlsSetupError::Incomplete),
        };
        // The client speaks HTTP/1.1 only (reqwest without its http2 feature).
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let config = Arc::new(config);
        let http =
            builder.tls_backend_preconfigured((*config).clone()).build().map_err(TlsSetupError::Build)?;
        Ok(TlsClient { http, config })
    }
}

fn read(file: TlsFile, path: &Path) -> Result<Vec<u8>, TlsSetupError> {
    std::fs::read(path).map_err(|source| TlsSetupError::Unreadable { file, path: path.to_owned(), source })
}

fn bad(file: TlsFile, path: &Path, problem: impl Into<String>) -> TlsSetupError {
    TlsSetupError::BadContent { file, path: path.to_owned(), problem: problem.into() }
}

/// The certificates of a PEM file; at least one.
fn read_certs(file: TlsFile, path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsSetupError> {
    let bytes = read(file, path)?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(file, path, format!("not PEM: {}", pem_problem(&e))))?;
    if certs.is_empty() {
        return Err(bad(file, path, "no PEM certificate in it (-----BEGIN CERTIFICATE-----)"));
    }
    Ok(certs)
}

/// The CA certificates of `path`, each one a trust anchor rustls accepts
/// (checked here, where the file can be named, rather than at build).
fn read_ca_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsSetupError> {
    let certs = read_certs(TlsFile::CaCert, path)?;
    let mut store = rustls::RootCertStore::empty();
    for (i, der) in certs.iter().enumerate() {
        store.add(der.clone()).map_err(|e| {
            bad(
                TlsFile::CaCert,
                path,
                format!("certificate {} of the file is not usable as a CA: {e}", i + 1),
            )
        })?;
    }
    Ok(certs)
}

/// The client certificate's chain and its key, each file checked.
fn read_identity(
    cert: &Path,
    key: &Path,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), TlsSetupError> {
    let chain = read_certs(TlsFile::ClientCert, cert)?;
    let key_pem = read(TlsFile::ClientKey, key)?;
    let private = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| match e {
        pem::Error::NoItemsFound => {
            bad(TlsFile::ClientKey, key, "no PEM private key in it (-----BEGIN PRIVATE KEY-----)")
        }
        e => bad(TlsFile::ClientKey, key, format!("not PEM: {}", pem_problem(&e))),
    })?;
    Ok((chain, private))
}

fn pem_problem(e: &pem::Error) -> String {
    match e {
        pem::Error::Io(e) => e.to_string(),
        e => format!("{e:?}"),
    }
}

/// What a failed TLS connection was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TlsFailure {
    /// The server's certificate does not chain to a trusted root.
    UnknownIssuer,
    /// The server's certificate is for other names than the one dialled.
    WrongName {
        /// The host of the URL.
        expected: String,
        /// The names the certificate holds (its SANs), if known.
        presented: Vec<String>,
    },
    /// The server's certificate has expired.
    Expired,
    /// The server's certificate is not valid yet (a clock is wrong?).
    NotValidYet,
    /// Another fault of the server's certificate (revoked, wrong purpose,
    /// bad signature…), as rustls names it.
    BadServerCertificate(String),
    /// The server requires a client certificate and none was sent.
    ClientCertificateRequired,
    /// The server refused the client certificate sent; its TLS alert.
    ClientCertificateRefused(String),
    /// The server did not answer in TLS (a cleartext listener).
    NotTls,
    /// Another TLS failure, as rustls says it.
    Other(String),
}

impl std::fmt::Display for TlsFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TlsFailure::UnknownIssuer => {
                f.write_str("the server's certificate is not trusted (unknown issuer)")
            }
            TlsFailure::WrongName { expected, presented } if presented.is_empty() => {
                write!(f, "the server's certificate is not for {expected}")
            }
            TlsFailure::WrongName { expected, presented } => {
                write!(f, "the server's certificate is for {}, not {expected}", presented.join(", "))
            }
            TlsFailure::Expired => f.write_str("the server's certificate has expired"),
            TlsFailure::NotValidYet => f.write_str("the server's certificate is not valid yet"),
            TlsFailure::BadServerCertificate(what) => {
                write!(f, "the server's certificate is not valid: {what}")
            }
            TlsFailure::ClientCertificateRequired => f.write_str("the server requires a client certificate"),
            TlsFailure::ClientCertificateRefused(alert) => {
                write!(f, "the server refused the client certificate ({alert})")
            }
            TlsFailure::NotTls => f.write_str("the server did not answer in TLS"),
            TlsFailure::Other(what) => write!(f, "the TLS handshake failed: {what}"),
        }
    }
}

/// The TLS failure behind `e`, if there is one in its chain.
pub fn tls_failure(e: &(dyn Error + 'static)) -> Option<TlsFailure> {
    rustls_error(e).map(classify)
}

fn classify(e: &rustls::Error) -> TlsFailure {
    use rustls::Error as E;
    match e {
        E::InvalidCertificate(c) => match c {
            CertificateError::UnknownIssuer => TlsFailure::UnknownIssuer,
            CertificateError::NotValidForNameContext { expected, presented } => TlsFailure::WrongName {
                expected: expected.to_str().into_owned(),
                presented: presented.iter().map(|p| san_text(p)).collect(),
            },
            CertificateError::NotValidForName => {
                TlsFailure::WrongName { expected: String::new(), presented: vec![] }
            }
            CertificateError::Expired | CertificateError::ExpiredContext { .. } => TlsFailure::Expired,
            CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                TlsFailure::NotValidYet
            }
            other => TlsFailure::BadServerCertificate(format!("{other:?}")),
        },
        E::AlertReceived(AlertDescription::CertificateRequired) => TlsFailure::ClientCertificateRequired,
        E::AlertReceived(
            a @ (AlertDescription::BadCertificate
            | AlertDescription::UnsupportedCertificate
            | AlertDescription::CertificateRevoked
            | AlertDescription::CertificateExpired
            | AlertDescription::CertificateUnknown
            | AlertDescription::UnknownCA
            | AlertDescription::AccessDenied),
        ) => TlsFailure::ClientCertificateRefused(format!("{a:?}")),
        E::InvalidMessage(rustls::InvalidMessage::InvalidContentType) => TlsFailure::NotTls,
        other => TlsFailure::Other(other.to_string()),
    }
}

/// `DnsName("a.example")` (how webpki lists a certificate's names) as
/// `a.example`; anything else as it is.
fn san_text(presented: &str) -> String {
    let inner = presented.split_once('(').and_then(|(_, rest)| rest.strip_suffix(')'));
    inner.map_or(presented, |s| s.trim_matches('"')).to_owned()
}

/// The `rustls::Error` in `e`'s chain. A TLS stream reports it inside an
/// `io::Error`, whose `source()` skips the error it wraps (it returns that
/// error's own source), so each `io::Error` is opened with `get_ref`.
fn rustls_error<'a>(e: &'a (dyn Error + 'static)) -> Option<&'a rustls::Error> {
    let mut next = Some(e);
    while let Some(e) = next {
        if let Some(r) = e.downcast_ref::<rustls::Error>() {
            return Some(r);
        }
        if let Some(inner) = e.downcast_ref::<std::io::Error>().and_then(std::io::Error::get_ref)
            && let Some(r) = rustls_error(inner)
        {
            return Some(r);
        }
        next = e.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn a_rustls_error_is_found_inside_an_io_error() {
        let e = Outer(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer),
        ));
        assert_eq!(tls_failure(&e), Some(TlsFailure::UnknownIssuer));
        let e =
            Outer(std::io::Error::other(rustls::Error::AlertReceived(AlertDescription::CertificateRequired)));
        assert_eq!(tls_failure(&e), Some(TlsFailure::ClientCertificateRequired));
        assert_eq!(tls_failure(&Outer(std::io::Error::other("connection reset"))), None);
    }

    #[test]
    fn names_are_shown_without_their_kind() {
        assert_eq!(san_text("DnsName(\"agentd.internal\")"), "agentd.internal");
        assert_eq!(san_text("IpAddress(10.0.0.1)"), "10.0.0.1");
        assert_eq!(san_text("DirectoryName"), "DirectoryName");
    }
}
