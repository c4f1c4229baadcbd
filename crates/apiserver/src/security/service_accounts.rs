//! Service-account settings and the signing key of one server (shared, immutable).

use std::path::PathBuf;

use crate::security::satoken::{SigningKey, TokenError};

/// The issuer kubeadm and kind clusters use; fixed (not the listen URL) so tokens survive a
/// restart on another port.
pub const DEFAULT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
/// Secret type of legacy service-account token Secrets.
pub const TOKEN_SECRET_TYPE: &str = "kubernetes.io/service-account-token";
/// Annotation naming the ServiceAccount of a token Secret.
pub const SA_NAME_ANNOTATION: &str = "kubernetes.io/service-account.name";
/// Annotation recording the ServiceAccount's uid, filled in by the server.
pub const SA_UID_ANNOTATION: &str = "kubernetes.io/service-account.uid";

/// How service-account tokens are issued and accepted.
#[derive(Clone, Debug)]
pub struct ServiceAccountConfig {
    /// Directory holding `sa-signing-key.pem` (created when missing); `None`: an ephemeral key,
    /// for in-memory servers.
    pub key_dir: Option<PathBuf>,
    /// `iss` of bound tokens (kube-apiserver's `--service-account-issuer`).
    pub issuer: String,
    /// Audiences the API server accepts (kube-apiserver's `--api-audiences`; default: the issuer).
    pub api_audiences: Vec<String>,
    /// The cluster CA certificate (PEM) written to token Secrets' `ca.crt`; `None` leaves it out.
    pub ca_pem: Option<String>,
    /// Whether every namespace gets a `default` ServiceAccount, as on a kube cluster.
    pub create_default: bool,
    /// `jwks_uri` of the issuer discovery document (kube-apiserver's
    /// `--service-account-jwks-uri`); `None`: `/openid/v1/jwks` on the address the client used.
    pub jwks_uri: Option<String>,
}

impl Default for ServiceAccountConfig {
    fn default() -> Self {
        ServiceAccountConfig {
            key_dir: None,
            issuer: DEFAULT_ISSUER.to_string(),
            api_audiences: vec![DEFAULT_ISSUER.to_string()],
            ca_pem: None,
            create_default: true,
            jwks_uri: None,
        }
    }
}

/// The server's service-account state: key plus settings (shared, immutable).
pub(crate) struct ServiceAccounts {
    pub(crate) key: SigningKey,
    pub(crate) cfg: ServiceAccountConfig,
}

impl ServiceAccounts {
    /// Loads (or creates) the key as configured.
    pub(crate) fn new(cfg: ServiceAccountConfig) -> Result<ServiceAccounts, TokenError> {
        let key = match &cfg.key_dir {
            Some(dir) => SigningKey::load_or_create(dir)?,
            None => SigningKey::generate()?,
        };
        Ok(ServiceAccounts { key, cfg })
    }
}
