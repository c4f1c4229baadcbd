//! rustls clients for tests that speak TLS to a server directly: trusting the test CA, offering
//! an ALPN protocol, optionally presenting a per-user client certificate issued by the server's
//! `Pki`.

use std::sync::Arc;

use fleet_apiserver::pki::{CertAndKey, Pki};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The HTTP/1.1 client for `pki`'s server, presenting `cert` when given.
pub fn client_config(pki: &Pki, cert: Option<&CertAndKey>) -> Arc<rustls::ClientConfig> {
    Arc::new(client_config_for(pki.ca_cert_pem(), cert, b"http/1.1"))
}

/// A client trusting the CA in `ca_pem` (which may not be the server's) and offering `alpn`.
pub fn client_config_for(
    ca_pem: &str,
    cert: Option<&CertAndKey>,
    alpn: &[u8],
) -> rustls::ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(ca_pem.as_bytes()).expect("test CA is PEM"))
        .expect("test CA is a certificate");
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("default protocol versions")
        .with_root_certificates(roots);
    let mut cfg = match cert {
        Some(ck) => builder
            .with_client_auth_cert(
                vec![
                    CertificateDer::from_pem_slice(ck.cert_pem.as_bytes())
                        .expect("client certificate is PEM"),
                ],
                PrivateKeyDer::from_pem_slice(ck.key_pem.as_bytes()).expect("client key is PEM"),
            )
            .expect("client certificate and key match"),
        None => builder.with_no_client_auth(),
    };
    cfg.alpn_protocols = vec![alpn.to_vec()];
    cfg
}
