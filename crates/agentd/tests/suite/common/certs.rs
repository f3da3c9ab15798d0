//! Test certificates made with `rcgen`: a CA, a server certificate for
//! 127.0.0.1 it signs, and client certificates by subject CN, written as
//! PEM files.

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};
use std::path::{Path, PathBuf};

pub struct TestCa {
    pub cert_pem: String,
    issuer: CertifiedIssuer<'static, KeyPair>,
}

/// A certificate and its key, PEM.
pub struct Issued {
    pub cert_pem: String,
    pub key_pem: String,
}

impl Issued {
    /// Certificate then key, as `reqwest::Identity::from_pem` reads them.
    pub fn identity(&self) -> reqwest::Identity {
        reqwest::Identity::from_pem(format!("{}{}", self.cert_pem, self.key_pem).as_bytes())
            .expect("identity")
    }
}

impl TestCa {
    pub fn new(name: &str) -> TestCa {
        let mut p = CertificateParams::new(Vec::<String>::new()).expect("params");
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.distinguished_name.push(DnType::CommonName, name);
        p.key_usages =
            vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
        let issuer = CertifiedIssuer::self_signed(p, KeyPair::generate().expect("key")).expect("CA");
        TestCa { cert_pem: issuer.pem(), issuer }
    }

    /// A server certificate for 127.0.0.1 and localhost.
    pub fn server(&self) -> Issued {
        self.server_for(&["127.0.0.1", "localhost"])
    }

    /// A server certificate for these names (DNS names or IP addresses).
    pub fn server_for(&self, names: &[&str]) -> Issued {
        let mut p = CertificateParams::new(names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>())
            .expect("params");
        p.distinguished_name.push(DnType::CommonName, "agentd test server");
        p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        self.issue(p)
    }

    /// A client certificate with subject CN `cn`.
    pub fn client(&self, cn: &str) -> Issued {
        let mut p = CertificateParams::new(Vec::<String>::new()).expect("params");
        p.distinguished_name.push(DnType::CommonName, cn);
        p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        self.issue(p)
    }

    fn issue(&self, p: CertificateParams) -> Issued {
        let key = KeyPair::generate().expect("key");
        let cert = p.signed_by(&key, &self.issuer).expect("sign");
        Issued { cert_pem: cert.pem(), key_pem: key.serialize_pem() }
    }
}

/// Writes `text` to `dir/name`, returning the path.
pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path
}
