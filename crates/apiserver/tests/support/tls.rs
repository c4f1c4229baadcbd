//! A rustls client trusting the test server's CA (HTTP/1.1 ALPN), optionally presenting a client
//! certificate, shared by the tests that speak TLS to `serve::serve` directly.
#![allow(dead_code)]

use std::sync::Arc;

use fleet_apiserver::pki::{CertAndKey, Pki};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

pub fn client_config(pki: &Pki, cert: Option<&CertAndKey>) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(pki.ca_cert_pem().as_bytes()).unwrap())
        .unwrap();
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let mut cfg = match cert {
        Some(ck) => builder
            .with_client_auth_cert(
                vec![CertificateDer::from_pem_slice(ck.cert_pem.as_bytes()).unwrap()],
                PrivateKeyDer::from_pem_slice(ck.key_pem.as_bytes()).unwrap(),
            )
            .unwrap(),
        None => builder.with_no_client_auth(),
    };
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(cfg)
}
