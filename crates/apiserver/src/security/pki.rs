//! The server's own certificate authority, serving certificate, admin credentials and admin
//! kubeconfig.
//!
//! Why: `fleet server` must be reachable by unmodified kubectl, kube-rs and the python client over
//! HTTPS with no manual setup, and a restart must not invalidate kubeconfigs already handed out.
//! So the CA is generated once and kept in the data directory; everything else is derived from it.
//!
//! Files (all mode 0600) under `DIR/pki/`: `ca.crt`, `ca.key`, `admin.crt`, `admin.key`,
//! `admin.token`. The serving certificate is issued fresh at every start (its names depend on the
//! listen address) and kept in memory only.

use std::fs;
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SerialNumber,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The common name of the CA certificate, so a user inspecting a certificate can tell where it
/// came from.
pub const CA_COMMON_NAME: &str = "fleet-server-ca";
/// The admin user's name (client certificate CN), as in kube-apiserver's usual admin kubeconfig.
pub const ADMIN_USER: &str = "admin";
/// The admin user's group; `system:masters` is what RBAC (next issue) treats as superuser.
pub const ADMIN_GROUP: &str = "system:masters";

/// How long a generated CA stays valid.
const CA_VALIDITY_DAYS: i64 = 3650;
/// How long leaf certificates (serving, admin) stay valid.
const LEAF_VALIDITY_DAYS: i64 = 365;

/// Anything that can go wrong creating or loading credentials; always names the file at fault.
#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory at fault.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A file exists but does not hold what it should.
    #[error("{path}: {reason}")]
    Invalid {
        /// The file at fault.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// Certificate generation failed.
    #[error("generating {what}: {source}")]
    Generate {
        /// Which certificate or key.
        what: &'static str,
        /// The underlying error.
        source: rcgen::Error,
    },
    /// Building the TLS configuration failed.
    #[error("TLS configuration: {0}")]
    Tls(String),
}

/// A PEM certificate and its PEM private key, as handed to clients.
#[derive(Clone, Debug)]
pub struct CertAndKey {
    /// PEM-encoded certificate.
    pub cert_pem: String,
    /// PEM-encoded PKCS#8 private key.
    pub key_pem: String,
}

/// The server's credentials: the CA (with its key, to issue certificates), the serving
/// certificate, and the admin user's certificate and bearer token.
pub struct Pki {
    ca_cert_pem: String,
    ca_cert_der: CertificateDer<'static>,
    ca_issuer: Issuer<'static, KeyPair>,
    server: CertAndKey,
    admin: CertAndKey,
    admin_token: String,
}

impl std::fmt::Debug for Pki {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print keys or tokens.
        f.debug_struct("Pki").finish_non_exhaustive()
    }
}

/// Where the credential files live inside a data directory.
#[derive(Clone, Debug)]
pub struct PkiPaths {
    /// `DIR/pki`.
    pub dir: PathBuf,
    /// The CA certificate (PEM).
    pub ca_cert: PathBuf,
    /// The CA private key (PEM).
    pub ca_key: PathBuf,
    /// The admin client certificate (PEM).
    pub admin_cert: PathBuf,
    /// The admin client key (PEM).
    pub admin_key: PathBuf,
    /// The admin bearer token (one line).
    pub admin_token: PathBuf,
}

impl PkiPaths {
    /// The file layout under a data directory.
    pub fn new(data_dir: &Path) -> PkiPaths {
        let dir = data_dir.join("pki");
        PkiPaths {
            ca_cert: dir.join("ca.crt"),
            ca_key: dir.join("ca.key"),
            admin_cert: dir.join("admin.crt"),
            admin_key: dir.join("admin.key"),
            admin_token: dir.join("admin.token"),
            dir,
        }
    }
}

impl Pki {
    /// Loads the CA and admin credentials from `data_dir`, generating whatever is missing, and
    /// issues a serving certificate for `hosts` (plus localhost and the loopback addresses).
    ///
    /// A CA found on disk is always reused, so kubeconfigs written earlier stay valid.
    pub fn load_or_create(data_dir: &Path, hosts: &[String]) -> Result<Pki, PkiError> {
        let paths = PkiPaths::new(data_dir);
        create_private_dir(data_dir)?;
        create_private_dir(&paths.dir)?;

        let ca_exists = paths.ca_cert.exists() || paths.ca_key.exists();
        let (ca_cert_pem, ca_issuer) = if ca_exists {
            load_ca(&paths)?
        } else {
            let (cert_pem, key_pem, issuer) = generate_ca()?;
            write_private(&paths.ca_key, key_pem.as_bytes())?;
            write_private(&paths.ca_cert, cert_pem.as_bytes())?;
            (cert_pem, issuer)
        };
        let ca_cert_der = CertificateDer::from_pem_slice(ca_cert_pem.as_bytes()).map_err(|e| {
            PkiError::Invalid {
                path: paths.ca_cert.clone(),
                reason: format!("not a PEM certificate: {e}"),
            }
        })?;

        // Reuse the admin certificate only when it was issued by this CA (a replaced CA
        // invalidates it) and still parses.
        let admin = match load_pair(&paths.admin_cert, &paths.admin_key)? {
            Some(pair) if ca_exists && issued_by(&pair.cert_pem, &ca_cert_der) => pair,
            _ => {
                let pair = issue_client(&ca_issuer, ADMIN_USER, &[ADMIN_GROUP])?;
                write_private(&paths.admin_key, pair.key_pem.as_bytes())?;
                write_private(&paths.admin_cert, pair.cert_pem.as_bytes())?;
                pair
            }
        };

        let admin_token = match read_optional(&paths.admin_token)? {
            Some(t) if !t.trim().is_empty() => t.trim().to_string(),
            _ => {
                let token = random_token()?;
                write_private(&paths.admin_token, format!("{token}\n").as_bytes())?;
                token
            }
        };

        let server = issue_server(&ca_issuer, hosts)?;
        Ok(Pki {
            ca_cert_pem,
            ca_cert_der,
            ca_issuer,
            server,
            admin,
            admin_token,
        })
    }

    /// Credentials that live only in memory (benchmarks and tests that need no data directory).
    pub fn ephemeral(hosts: &[String]) -> Result<Pki, PkiError> {
        let (ca_cert_pem, _key, ca_issuer) = generate_ca()?;
        let ca_cert_der = CertificateDer::from_pem_slice(ca_cert_pem.as_bytes())
            .map_err(|e| PkiError::Tls(format!("generated CA does not parse: {e}")))?;
        let admin = issue_client(&ca_issuer, ADMIN_USER, &[ADMIN_GROUP])?;
        let server = issue_server(&ca_issuer, hosts)?;
        Ok(Pki {
            ca_cert_pem,
            ca_cert_der,
            ca_issuer,
            server,
            admin,
            admin_token: random_token()?,
        })
    }

    /// The CA certificate (PEM), for clients' trust stores.
    pub fn ca_cert_pem(&self) -> &str {
        &self.ca_cert_pem
    }

    /// The CA certificate (DER), e.g. for `kube::Config::root_cert`.
    pub fn ca_cert_der(&self) -> &CertificateDer<'static> {
        &self.ca_cert_der
    }

    /// The admin client certificate and key.
    pub fn admin(&self) -> &CertAndKey {
        &self.admin
    }

    /// The admin bearer token.
    pub fn admin_token(&self) -> &str {
        &self.admin_token
    }

    /// The serving certificate and key.
    pub fn server(&self) -> &CertAndKey {
        &self.server
    }

    /// Issues a client certificate for `user` in `groups` (CN and O; at most two groups), signed
    /// by the CA. Used for extra users in tests today and for agents' credentials later.
    pub fn issue_client_cert(&self, user: &str, groups: &[&str]) -> Result<CertAndKey, PkiError> {
        issue_client(&self.ca_issuer, user, groups)
    }

    /// The rustls configuration for serving: our certificate, h2 and HTTP/1.1 via ALPN, and
    /// client certificates that are optional but, when presented, must chain to our CA.
    pub fn server_tls_config(&self) -> Result<Arc<rustls::ServerConfig>, PkiError> {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(self.ca_cert_der.clone())
            .map_err(|e| PkiError::Tls(format!("CA certificate rejected: {e}")))?;
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            Arc::new(roots),
            provider.clone(),
        )
        .allow_unauthenticated()
        .build()
        .map_err(|e| PkiError::Tls(format!("client verifier: {e}")))?;
        let chain = vec![
            CertificateDer::from_pem_slice(self.server.cert_pem.as_bytes())
                .map_err(|e| PkiError::Tls(format!("serving certificate: {e}")))?,
        ];
        let key = PrivateKeyDer::from_pem_slice(self.server.key_pem.as_bytes())
            .map_err(|e| PkiError::Tls(format!("serving key: {e}")))?;
        let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| PkiError::Tls(e.to_string()))?
            .with_client_cert_verifier(verifier)
            .with_single_cert(chain, key)
            .map_err(|e| PkiError::Tls(e.to_string()))?;
        cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        // Stateless TLS 1.3 session tickets (as Go's crypto/tls issues by default): a returning
        // client resumes without the certificate exchange, however many clients there are (the
        // default stateful cache holds 256 sessions). Resumed sessions keep the client's
        // certificate, so x509 identities still apply.
        cfg.ticketer = rustls::crypto::aws_lc_rs::Ticketer::new()
            .map_err(|e| PkiError::Tls(format!("session ticketer: {e}")))?;
        Ok(Arc::new(cfg))
    }

    /// A kubeconfig for the admin user (client certificate) against `server_url`.
    pub fn admin_kubeconfig(&self, server_url: &str) -> String {
        kubeconfig(server_url, &self.ca_cert_pem, &self.admin)
    }

    /// Writes the admin kubeconfig to `path` (mode 0600, atomically).
    pub fn write_admin_kubeconfig(&self, path: &Path, server_url: &str) -> Result<(), PkiError> {
        write_private(path, self.admin_kubeconfig(server_url).as_bytes())
    }
}

/// A kubeconfig with one cluster, one user (client certificate) and one current context.
///
/// Every value is base64 or a URL, so plain formatting yields valid YAML.
pub fn kubeconfig(server_url: &str, ca_pem: &str, user: &CertAndKey) -> String {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s.as_bytes());
    format!(
        "apiVersion: v1\n\
         kind: Config\n\
         clusters:\n\
         - name: fleet\n  \
           cluster:\n    \
             server: {server_url}\n    \
             certificate-authority-data: {ca}\n\
         users:\n\
         - name: admin\n  \
           user:\n    \
             client-certificate-data: {cert}\n    \
             client-key-data: {key}\n\
         contexts:\n\
         - name: fleet\n  \
           context:\n    \
             cluster: fleet\n    \
             user: admin\n\
         current-context: fleet\n",
        ca = b64(ca_pem),
        cert = b64(&user.cert_pem),
        key = b64(&user.key_pem),
    )
}

/// The URL clients should use for a bound address: an unspecified address (0.0.0.0, ::) is
/// reachable through loopback, which the serving certificate always names.
pub fn server_url(addr: SocketAddr) -> String {
    let ip = match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    match ip {
        IpAddr::V4(ip) => format!("https://{ip}:{}", addr.port()),
        IpAddr::V6(ip) => format!("https://[{ip}]:{}", addr.port()),
    }
}

fn now() -> time::OffsetDateTime {
    time::OffsetDateTime::now_utc()
}

fn random_bytes<const N: usize>() -> Result<[u8; N], PkiError> {
    let mut buf = [0u8; N];
    rustls::crypto::aws_lc_rs::default_provider()
        .secure_random
        .fill(&mut buf)
        .map_err(|_| PkiError::Tls("the system random source failed".into()))?;
    Ok(buf)
}

fn random_serial() -> Result<SerialNumber, PkiError> {
    let mut bytes = random_bytes::<16>()?;
    // Positive, non-zero leading byte, as RFC 5280 asks.
    bytes[0] = (bytes[0] & 0x7f) | 0x01;
    Ok(SerialNumber::from_slice(&bytes))
}

fn random_token() -> Result<String, PkiError> {
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(random_bytes::<32>()?))
}

fn ca_params() -> Result<CertificateParams, PkiError> {
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, CA_COMMON_NAME);
    params.distinguished_name = dn;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params.not_before = now() - time::Duration::hours(1);
    params.not_after = now() + time::Duration::days(CA_VALIDITY_DAYS);
    params.serial_number = Some(random_serial()?);
    Ok(params)
}

fn generate_ca() -> Result<(String, String, Issuer<'static, KeyPair>), PkiError> {
    let key = KeyPair::generate().map_err(|source| PkiError::Generate {
        what: "CA key",
        source,
    })?;
    let params = ca_params()?;
    let cert = params
        .self_signed(&key)
        .map_err(|source| PkiError::Generate {
            what: "CA certificate",
            source,
        })?;
    let key_pem = key.serialize_pem();
    Ok((cert.pem(), key_pem, Issuer::new(params, key)))
}

fn load_ca(paths: &PkiPaths) -> Result<(String, Issuer<'static, KeyPair>), PkiError> {
    let cert_pem = read_required(&paths.ca_cert)?;
    let key_pem = read_required(&paths.ca_key)?;
    let key = KeyPair::from_pem(&key_pem).map_err(|e| PkiError::Invalid {
        path: paths.ca_key.clone(),
        reason: format!("not a PEM private key: {e}"),
    })?;
    let issuer = Issuer::from_ca_cert_pem(&cert_pem, key).map_err(|e| PkiError::Invalid {
        path: paths.ca_cert.clone(),
        reason: format!("not a CA certificate: {e}"),
    })?;
    Ok((cert_pem, issuer))
}

fn leaf_params(sans: Vec<String>, cn: &str) -> Result<CertificateParams, PkiError> {
    let mut params = CertificateParams::new(sans).map_err(|source| PkiError::Generate {
        what: "certificate names",
        source,
    })?;
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, cn);
    params.distinguished_name = dn;
    params.not_before = now() - time::Duration::hours(1);
    params.not_after = now() + time::Duration::days(LEAF_VALIDITY_DAYS);
    params.serial_number = Some(random_serial()?);
    params.use_authority_key_identifier_extension = true;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    Ok(params)
}

/// The names the serving certificate covers: loopback always, `kubernetes.default.svc` style
/// names (what in-cluster clients expect), and every requested host.
fn server_names(hosts: &[String]) -> Vec<String> {
    let mut names: Vec<String> = [
        "localhost",
        "127.0.0.1",
        "::1",
        "kubernetes",
        "kubernetes.default",
        "kubernetes.default.svc",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for h in hosts {
        let h = h.trim().trim_start_matches('[').trim_end_matches(']');
        let unspecified = h
            .parse::<IpAddr>()
            .map(|ip| ip.is_unspecified())
            .unwrap_or(false);
        if !h.is_empty() && !unspecified && !names.iter().any(|n| n == h) {
            names.push(h.to_string());
        }
    }
    names
}

fn issue_server(ca: &Issuer<'_, KeyPair>, hosts: &[String]) -> Result<CertAndKey, PkiError> {
    let key = KeyPair::generate().map_err(|source| PkiError::Generate {
        what: "serving key",
        source,
    })?;
    let mut params = leaf_params(server_names(hosts), "fleet-server")?;
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let cert = params
        .signed_by(&key, ca)
        .map_err(|source| PkiError::Generate {
            what: "serving certificate",
            source,
        })?;
    Ok(CertAndKey {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

fn issue_client(
    ca: &Issuer<'_, KeyPair>,
    user: &str,
    groups: &[&str],
) -> Result<CertAndKey, PkiError> {
    let key = KeyPair::generate().map_err(|source| PkiError::Generate {
        what: "client key",
        source,
    })?;
    let mut params = leaf_params(Vec::new(), user)?;
    // rcgen's DistinguishedName holds one value per attribute type; the second group goes in
    // under the same OID (2.5.4.10, organizationName) spelled as a custom type, so the subject
    // carries two O attributes, as `kubectl`/openssl-made certificates can.
    match groups {
        [] => {}
        [g] => params.distinguished_name.push(DnType::OrganizationName, *g),
        [g1, g2] => {
            params
                .distinguished_name
                .push(DnType::OrganizationName, *g1);
            params
                .distinguished_name
                .push(DnType::CustomDnType(vec![2, 5, 4, 10]), *g2);
        }
        _ => {
            return Err(PkiError::Tls(format!(
                "client certificate for {user}: at most two groups are supported, got {}",
                groups.len()
            )));
        }
    }
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let cert = params
        .signed_by(&key, ca)
        .map_err(|source| PkiError::Generate {
            what: "client certificate",
            source,
        })?;
    Ok(CertAndKey {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

/// Whether `cert_pem` parses and names our CA as issuer (same subject and a valid signature).
fn issued_by(cert_pem: &str, ca_der: &CertificateDer<'_>) -> bool {
    let Ok(der) = CertificateDer::from_pem_slice(cert_pem.as_bytes()) else {
        return false;
    };
    let Ok((_, cert)) = x509_parser::parse_x509_certificate(&der) else {
        return false;
    };
    let Ok((_, ca)) = x509_parser::parse_x509_certificate(ca_der) else {
        return false;
    };
    cert.issuer() == ca.subject()
        && cert.verify_signature(Some(ca.public_key())).is_ok()
        && cert.validity().is_valid()
}

fn load_pair(cert: &Path, key: &Path) -> Result<Option<CertAndKey>, PkiError> {
    match (read_optional(cert)?, read_optional(key)?) {
        (Some(cert_pem), Some(key_pem)) => Ok(Some(CertAndKey { cert_pem, key_pem })),
        _ => Ok(None),
    }
}

fn read_required(path: &Path) -> Result<String, PkiError> {
    fs::read_to_string(path).map_err(|source| PkiError::Io {
        path: path.to_path_buf(),
        source,
    })
}

fn read_optional(path: &Path) -> Result<Option<String>, PkiError> {
    match fs::read_to_string(path) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(PkiError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

fn create_private_dir(dir: &Path) -> Result<(), PkiError> {
    let mut b = fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(dir).map_err(|source| PkiError::Io {
        path: dir.to_path_buf(),
        source,
    })
}

/// Writes a file readable by its owner only, atomically (temp file + rename), so a crash never
/// leaves a half-written key or kubeconfig behind.
pub fn write_private(path: &Path, data: &[u8]) -> Result<(), PkiError> {
    let io = |source| PkiError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{file_name}.tmp"));
    let _ = fs::remove_file(&tmp);
    let mut opts = fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts.open(&tmp).map_err(io)?;
    f.write_all(data).map_err(io)?;
    f.sync_all().map_err(io)?;
    drop(f);
    fs::rename(&tmp, path).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ca_is_reused_and_admin_cert_chains_to_it() {
        let dir = tempfile::tempdir().unwrap();
        let first = Pki::load_or_create(dir.path(), &["127.0.0.1".into()]).unwrap();
        let second = Pki::load_or_create(dir.path(), &["example.test".into()]).unwrap();
        assert_eq!(first.ca_cert_pem(), second.ca_cert_pem());
        assert_eq!(first.admin().cert_pem, second.admin().cert_pem);
        assert_eq!(first.admin_token(), second.admin_token());
        assert!(issued_by(&second.admin().cert_pem, second.ca_cert_der()));
        assert!(issued_by(&second.server().cert_pem, second.ca_cert_der()));
        // The serving certificate is issued per start for the requested names.
        assert_ne!(first.server().cert_pem, second.server().cert_pem);
    }

    #[cfg(unix)]
    #[test]
    fn files_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let pki = Pki::load_or_create(dir.path(), &[]).unwrap();
        let kc = dir.path().join("kubeconfig");
        pki.write_admin_kubeconfig(&kc, "https://127.0.0.1:1")
            .unwrap();
        let p = PkiPaths::new(dir.path());
        for f in [
            &p.ca_cert,
            &p.ca_key,
            &p.admin_cert,
            &p.admin_key,
            &p.admin_token,
            &kc,
        ] {
            let mode = fs::metadata(f).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{}", f.display());
        }
    }

    #[test]
    fn replaced_ca_reissues_admin_cert() {
        let dir = tempfile::tempdir().unwrap();
        let first = Pki::load_or_create(dir.path(), &[]).unwrap();
        let p = PkiPaths::new(dir.path());
        fs::remove_file(&p.ca_cert).unwrap();
        fs::remove_file(&p.ca_key).unwrap();
        let second = Pki::load_or_create(dir.path(), &[]).unwrap();
        assert_ne!(first.ca_cert_pem(), second.ca_cert_pem());
        assert!(issued_by(&second.admin().cert_pem, second.ca_cert_der()));
        assert!(!issued_by(&first.admin().cert_pem, second.ca_cert_der()));
    }

    #[test]
    fn corrupt_ca_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        Pki::load_or_create(dir.path(), &[]).unwrap();
        let p = PkiPaths::new(dir.path());
        fs::write(&p.ca_key, "garbage").unwrap();
        let err = Pki::load_or_create(dir.path(), &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("ca.key"), "{err}");
        fs::write(&p.ca_cert, "garbage").unwrap();
        fs::remove_file(&p.ca_key).unwrap();
        let err = Pki::load_or_create(dir.path(), &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("ca.key"), "{err}");
    }

    #[test]
    fn server_names_cover_loopback_and_hosts() {
        let names = server_names(&["0.0.0.0".into(), "[::]".into(), "fleet.example".into()]);
        assert!(names.contains(&"127.0.0.1".to_string()));
        assert!(names.contains(&"fleet.example".to_string()));
        assert!(!names.iter().any(|n| n == "0.0.0.0" || n == "::"));
    }

    #[test]
    fn url_for_unspecified_is_loopback() {
        assert_eq!(
            server_url("0.0.0.0:6443".parse().unwrap()),
            "https://127.0.0.1:6443"
        );
        assert_eq!(server_url("[::]:1".parse().unwrap()), "https://[::1]:1");
        assert_eq!(
            server_url("10.1.2.3:5".parse().unwrap()),
            "https://10.1.2.3:5"
        );
    }

    #[test]
    fn tls_config_builds() {
        let pki = Pki::ephemeral(&[]).unwrap();
        let cfg = pki.server_tls_config().unwrap();
        assert_eq!(cfg.alpn_protocols.len(), 2);
        assert!(
            pki.admin_kubeconfig("https://127.0.0.1:1")
                .contains("client-key-data: ")
        );
    }
}
