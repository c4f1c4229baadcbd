//! Service-account tokens: ES256 JWTs signed by a key the server keeps in its data dir.
//!
//! Two shapes, as kube-apiserver issues them: legacy token-Secret tokens (issuer
//! `kubernetes/serviceaccount`, flat `kubernetes.io/serviceaccount/*` claims, no expiry) and bound
//! TokenRequest tokens (`iss`, `aud`, `exp`, `iat`, `nbf`, `jti`, `sub` and a nested
//! `kubernetes.io` claim). Verification checks the signature, issuer, audience and lifetime here;
//! whether the ServiceAccount (and Secret) still exist with the same uid is answered by a closure
//! the caller passes, so this module stays independent of the store.

use std::io::Write;
use std::path::{Path, PathBuf};

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::security::auth::UserInfo;
use crate::security::rbac::service_account_user;

/// The issuer of legacy Secret-based tokens (fixed upstream).
pub const LEGACY_ISSUER: &str = "kubernetes/serviceaccount";
/// The group every service account is in.
pub const SERVICE_ACCOUNTS_GROUP: &str = "system:serviceaccounts";
/// The file in the data dir holding the PKCS#8 PEM signing key.
pub const KEY_FILE: &str = "sa-signing-key.pem";
/// TokenRequest's default lifetime (`expirationSeconds` unset).
pub const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
/// The shortest lifetime kube-apiserver accepts for a TokenRequest.
pub const MIN_EXPIRATION_SECONDS: i64 = 600;
/// The longest lifetime kube-apiserver's validation accepts (2^32 seconds).
pub const MAX_EXPIRATION_SECONDS: i64 = 1 << 32;
/// Clock skew tolerated on `nbf`/`iat` (kube-apiserver allows 60 s).
const LEEWAY_SECONDS: i64 = 60;

/// Why a token could not be issued or is not valid.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// Reading or writing the key file failed.
    #[error("service-account signing key {path}: {message}")]
    Key {
        /// The key file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// Signature, format or claim checks failed; the token must be rejected with 401.
    #[error("invalid service-account token: {0}")]
    Invalid(String),
    /// A TokenRequest spec field is invalid (a 400/422 for the caller), naming the field.
    #[error("TokenRequest {field}: {message}")]
    Spec {
        /// The JSON path of the field.
        field: String,
        /// What is wrong with it.
        message: String,
    },
}

/// A `{name, uid}` reference inside the `kubernetes.io` claim.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectRef {
    /// Object name.
    pub name: String,
    /// Object uid; a recreated object has a new one, which invalidates the token.
    pub uid: String,
}

/// The nested `kubernetes.io` claim of bound tokens.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KubernetesClaim {
    /// The service account's namespace.
    pub namespace: String,
    /// The service account.
    pub serviceaccount: ObjectRef,
    /// The Secret the token is bound to, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<ObjectRef>,
    /// The Pod the token is bound to, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<ObjectRef>,
    /// The Node the token is bound to, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<ObjectRef>,
    /// When clients should start refreshing (set on long-lived projected tokens).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warnafter: Option<i64>,
}

/// All claims of either token shape, with the upstream claim names.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// Issuer.
    pub iss: String,
    /// `system:serviceaccount:NS:NAME`.
    pub sub: String,
    /// Audiences (bound tokens only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aud: Option<Vec<String>>,
    /// Expiry, seconds since the epoch (bound tokens only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exp: Option<i64>,
    /// Issued at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iat: Option<i64>,
    /// Not before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nbf: Option<i64>,
    /// Unique token id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jti: Option<String>,
    /// The bound-token claim.
    #[serde(
        default,
        rename = "kubernetes.io",
        skip_serializing_if = "Option::is_none"
    )]
    pub kubernetes: Option<KubernetesClaim>,
    /// Legacy: the service account's namespace.
    #[serde(
        default,
        rename = "kubernetes.io/serviceaccount/namespace",
        skip_serializing_if = "Option::is_none"
    )]
    pub legacy_namespace: Option<String>,
    /// Legacy: the token Secret's name.
    #[serde(
        default,
        rename = "kubernetes.io/serviceaccount/secret.name",
        skip_serializing_if = "Option::is_none"
    )]
    pub legacy_secret_name: Option<String>,
    /// Legacy: the service account's name.
    #[serde(
        default,
        rename = "kubernetes.io/serviceaccount/service-account.name",
        skip_serializing_if = "Option::is_none"
    )]
    pub legacy_service_account_name: Option<String>,
    /// Legacy: the service account's uid.
    #[serde(
        default,
        rename = "kubernetes.io/serviceaccount/service-account.uid",
        skip_serializing_if = "Option::is_none"
    )]
    pub legacy_service_account_uid: Option<String>,
}

/// Which object a [`Verified`] token still depends on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectKind {
    /// A core/v1 ServiceAccount.
    ServiceAccount,
    /// A core/v1 Secret.
    Secret,
}

/// A token whose signature, issuer, audience and lifetime are good; it authenticates only once
/// [`Verified::check_objects`] confirms the objects it names still exist with the same uids.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verified {
    /// The decoded claims.
    pub claims: Claims,
    /// The service account's namespace.
    pub namespace: String,
    /// The service account's name.
    pub service_account: String,
    /// The service account uid the token was issued for.
    pub service_account_uid: String,
    /// The Secret the token depends on and its uid (legacy tokens carry no Secret uid: `None`
    /// there means "must exist, any uid").
    pub secret: Option<(String, Option<String>)>,
}

impl Verified {
    /// The user the token stands for: `system:serviceaccount:NS:NAME` in the groups
    /// `system:serviceaccounts`, `system:serviceaccounts:NS` and `system:authenticated`.
    pub fn user(&self) -> UserInfo {
        let ns_group = format!("{SERVICE_ACCOUNTS_GROUP}:{}", self.namespace);
        UserInfo::authenticated(
            service_account_user(&self.namespace, &self.service_account),
            &[SERVICE_ACCOUNTS_GROUP, &ns_group],
        )
    }

    /// Completes authentication: `current_uid(kind, namespace, name)` returns the uid of the live
    /// object (or `None` when it does not exist). A deleted or recreated ServiceAccount or Secret
    /// invalidates the token.
    pub fn check_objects(
        &self,
        current_uid: impl Fn(ObjectKind, &str, &str) -> Option<String>,
    ) -> Result<UserInfo, TokenError> {
        match current_uid(
            ObjectKind::ServiceAccount,
            &self.namespace,
            &self.service_account,
        ) {
            Some(uid) if uid == self.service_account_uid => {}
            Some(_) => {
                return Err(TokenError::Invalid(format!(
                    "service account {}/{} has been recreated (uid mismatch)",
                    self.namespace, self.service_account
                )));
            }
            None => {
                return Err(TokenError::Invalid(format!(
                    "service account {}/{} not found",
                    self.namespace, self.service_account
                )));
            }
        }
        if let Some((name, want_uid)) = &self.secret {
            match (
                current_uid(ObjectKind::Secret, &self.namespace, name),
                want_uid,
            ) {
                (None, _) => {
                    return Err(TokenError::Invalid(format!(
                        "secret {}/{name} not found",
                        self.namespace
                    )));
                }
                (Some(uid), Some(want)) if &uid != want => {
                    return Err(TokenError::Invalid(format!(
                        "secret {}/{name} has been recreated (uid mismatch)",
                        self.namespace
                    )));
                }
                _ => {}
            }
        }
        Ok(self.user())
    }
}

/// What a verifier accepts.
#[derive(Clone, Debug)]
pub struct VerifyOptions {
    /// The issuer of bound tokens (the server's URL or `--service-account-issuer`).
    pub issuer: String,
    /// Audiences the server accepts; a bound token must name at least one.
    pub audiences: Vec<String>,
    /// Whether legacy Secret tokens are accepted.
    pub accept_legacy: bool,
    /// The current time, seconds since the epoch (a parameter so expiry is testable).
    pub now: i64,
}

/// The ServiceAccount a token is issued for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceAccountRef {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Uid of the live object.
    pub uid: String,
}

/// The ES256 key pair service-account tokens are signed with.
pub struct SigningKey {
    encoding: EncodingKey,
    decoding: DecodingKey,
    public_pem: String,
    /// `kid` of every token and of the JWK: kube-apiserver's key id, the unpadded base64url
    /// SHA-256 of the public key's PKIX (SubjectPublicKeyInfo) DER.
    key_id: String,
    /// The public key as a JWK, for `/openid/v1/jwks`.
    jwk: Value,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey").finish_non_exhaustive()
    }
}

fn now_seconds() -> i64 {
    jiff::Timestamp::now().as_second()
}

impl SigningKey {
    /// Loads `DIR/sa-signing-key.pem`, or generates a P-256 key and writes it there (mode 0600,
    /// written to a temporary file then renamed, so a crash never leaves half a key). Keeping the
    /// key across restarts keeps issued tokens valid.
    pub fn load_or_create(dir: &Path) -> Result<SigningKey, TokenError> {
        let path = dir.join(KEY_FILE);
        let err = |message: String| TokenError::Key {
            path: path.clone(),
            message,
        };
        match std::fs::read_to_string(&path) {
            Ok(pem) => SigningKey::from_pem(&pem).map_err(|e| err(e.to_string())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let key = rcgen::KeyPair::generate().map_err(|e| err(e.to_string()))?;
                let pem = key.serialize_pem();
                std::fs::create_dir_all(dir).map_err(|e| err(e.to_string()))?;
                let tmp = dir.join(format!("{KEY_FILE}.tmp"));
                let mut opts = std::fs::OpenOptions::new();
                opts.write(true).create(true).truncate(true);
                #[cfg(unix)]
                {
                    use std::os::unix::fs::OpenOptionsExt;
                    opts.mode(0o600);
                }
                let mut f = opts.open(&tmp).map_err(|e| err(e.to_string()))?;
                f.write_all(pem.as_bytes())
                    .and_then(|_| f.sync_all())
                    .map_err(|e| err(e.to_string()))?;
                std::fs::rename(&tmp, &path).map_err(|e| err(e.to_string()))?;
                SigningKey::from_pem(&pem).map_err(|e| err(e.to_string()))
            }
            Err(e) => Err(err(e.to_string())),
        }
    }

    /// A fresh in-memory key (servers without a data dir): its tokens die with the process.
    pub fn generate() -> Result<SigningKey, TokenError> {
        let pair = rcgen::KeyPair::generate()
            .map_err(|e| TokenError::Invalid(format!("signing key: {e}")))?;
        SigningKey::from_pem(&pair.serialize_pem())
    }

    /// A key from a PKCS#8 PEM P-256 private key.
    pub fn from_pem(pem: &str) -> Result<SigningKey, TokenError> {
        let bad = |m: String| TokenError::Invalid(format!("signing key: {m}"));
        let pair = rcgen::KeyPair::from_pem(pem).map_err(|e| bad(e.to_string()))?;
        if pair.algorithm() != &rcgen::PKCS_ECDSA_P256_SHA256 {
            return Err(bad("not an ECDSA P-256 key".into()));
        }
        let public_pem = pair.public_key_pem();
        let encoding = EncodingKey::from_ec_pem(pem.as_bytes()).map_err(|e| bad(e.to_string()))?;
        let decoding =
            DecodingKey::from_ec_pem(public_pem.as_bytes()).map_err(|e| bad(e.to_string()))?;
        use base64::Engine;
        use rcgen::PublicKeyData;
        use sha2::Digest;
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let key_id = b64.encode(sha2::Sha256::digest(pair.subject_public_key_info()));
        // The uncompressed point: 0x04, then X and Y (32 bytes each for P-256).
        let point = pair.public_key_raw();
        let (x, y) = match point {
            [4, xy @ ..] if xy.len() == 64 => xy.split_at(32),
            _ => return Err(bad("not an uncompressed P-256 public key".into())),
        };
        // Field order as go-jose writes it (what kube-apiserver serves).
        let jwk = serde_json::json!({
            "use": "sig",
            "kty": "EC",
            "kid": key_id,
            "crv": "P-256",
            "alg": "ES256",
            "x": b64.encode(x),
            "y": b64.encode(y),
        });
        Ok(SigningKey {
            encoding,
            decoding,
            public_pem,
            key_id,
            jwk,
        })
    }

    /// The public key (PEM), for `/openid/v1/jwks` and external verifiers.
    pub fn public_key_pem(&self) -> &str {
        &self.public_pem
    }

    /// The key id tokens carry in their header (`kid`) and the JWK names.
    pub fn key_id(&self) -> &str {
        &self.key_id
    }

    /// The public key as a JSON Web Key (`use`, `kty`, `kid`, `crv`, `alg`, `x`, `y`).
    pub fn jwk(&self) -> &Value {
        &self.jwk
    }

    fn sign(&self, claims: &Claims) -> Result<String, TokenError> {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.key_id.clone());
        jsonwebtoken::encode(&header, claims, &self.encoding)
            .map_err(|e| TokenError::Invalid(format!("signing: {e}")))
    }

    /// A legacy token for a `kubernetes.io/service-account-token` Secret: no expiry, valid while
    /// the Secret and the ServiceAccount (same uid) exist.
    pub fn sign_legacy(
        &self,
        sa: &ServiceAccountRef,
        secret_name: &str,
    ) -> Result<String, TokenError> {
        self.sign(&Claims {
            iss: LEGACY_ISSUER.into(),
            sub: service_account_user(&sa.namespace, &sa.name),
            legacy_namespace: Some(sa.namespace.clone()),
            legacy_secret_name: Some(secret_name.into()),
            legacy_service_account_name: Some(sa.name.clone()),
            legacy_service_account_uid: Some(sa.uid.clone()),
            ..Default::default()
        })
    }

    /// A bound token (TokenRequest): audience-bound, expiring at `now + expiration_seconds`,
    /// optionally bound to a Secret (or Pod/Node) whose deletion revokes it.
    pub fn sign_bound(
        &self,
        issuer: &str,
        sa: &ServiceAccountRef,
        audiences: &[String],
        now: i64,
        expiration_seconds: i64,
        bound: Option<BoundObject>,
    ) -> Result<String, TokenError> {
        let mut k = KubernetesClaim {
            namespace: sa.namespace.clone(),
            serviceaccount: ObjectRef {
                name: sa.name.clone(),
                uid: sa.uid.clone(),
            },
            secret: None,
            pod: None,
            node: None,
            warnafter: None,
        };
        match bound {
            Some(BoundObject::Secret(r)) => k.secret = Some(r),
            Some(BoundObject::Pod(r)) => k.pod = Some(r),
            Some(BoundObject::Node(r)) => k.node = Some(r),
            None => {}
        }
        self.sign(&Claims {
            iss: issuer.into(),
            sub: service_account_user(&sa.namespace, &sa.name),
            aud: Some(audiences.to_vec()),
            exp: Some(now.saturating_add(expiration_seconds)),
            iat: Some(now),
            nbf: Some(now),
            jti: Some(uuid::Uuid::new_v4().to_string()),
            kubernetes: Some(k),
            ..Default::default()
        })
    }

    /// Checks signature, issuer, audience, lifetime and claim shape. The result still has to
    /// pass [`Verified::check_objects`].
    pub fn verify(&self, token: &str, opts: &VerifyOptions) -> Result<Verified, TokenError> {
        let mut v = Validation::new(Algorithm::ES256);
        // Lifetime and audience are checked below against `opts.now`, so tests can move time.
        v.validate_exp = false;
        v.validate_nbf = false;
        v.validate_aud = false;
        v.required_spec_claims.clear();
        let data = jsonwebtoken::decode::<Claims>(token, &self.decoding, &v)
            .map_err(|e| TokenError::Invalid(e.to_string()))?;
        let c = data.claims;
        let bad = |m: &str| Err(TokenError::Invalid(m.into()));
        if c.iss == LEGACY_ISSUER {
            if !opts.accept_legacy {
                return bad("legacy service-account tokens are not accepted");
            }
            let (Some(ns), Some(name), Some(uid), Some(secret)) = (
                c.legacy_namespace.clone(),
                c.legacy_service_account_name.clone(),
                c.legacy_service_account_uid.clone(),
                c.legacy_secret_name.clone(),
            ) else {
                return bad("legacy token lacks kubernetes.io/serviceaccount claims");
            };
            if c.sub != service_account_user(&ns, &name) {
                return bad("sub does not match the service-account claims");
            }
            return Ok(Verified {
                claims: c,
                namespace: ns,
                service_account: name,
                service_account_uid: uid,
                secret: Some((secret, None)),
            });
        }
        if c.iss != opts.issuer {
            return Err(TokenError::Invalid(format!("unknown issuer {:?}", c.iss)));
        }
        let Some(k) = c.kubernetes.clone() else {
            return bad("token lacks the kubernetes.io claim");
        };
        let aud = c.aud.as_deref().unwrap_or(&[]);
        if !aud.iter().any(|a| opts.audiences.contains(a)) {
            return bad("token audiences are not accepted by this server");
        }
        let Some(exp) = c.exp else {
            return bad("bound token has no exp");
        };
        if opts.now >= exp {
            return bad("token has expired");
        }
        if c.nbf.is_some_and(|nbf| opts.now + LEEWAY_SECONDS < nbf) {
            return bad("token is not valid yet (nbf)");
        }
        if c.iat.is_some_and(|iat| opts.now + LEEWAY_SECONDS < iat) {
            return bad("token is issued in the future (iat)");
        }
        if c.sub != service_account_user(&k.namespace, &k.serviceaccount.name) {
            return bad("sub does not match the kubernetes.io claim");
        }
        Ok(Verified {
            namespace: k.namespace.clone(),
            service_account: k.serviceaccount.name.clone(),
            service_account_uid: k.serviceaccount.uid.clone(),
            secret: k
                .secret
                .as_ref()
                .map(|s| (s.name.clone(), Some(s.uid.clone()))),
            claims: c,
        })
    }

    /// Verification and object checks in one call, at the current time.
    pub fn authenticate(
        &self,
        token: &str,
        issuer: &str,
        audiences: &[String],
        current_uid: impl Fn(ObjectKind, &str, &str) -> Option<String>,
    ) -> Result<UserInfo, TokenError> {
        let v = self.verify(
            token,
            &VerifyOptions {
                issuer: issuer.into(),
                audiences: audiences.to_vec(),
                accept_legacy: true,
                now: now_seconds(),
            },
        )?;
        v.check_objects(current_uid)
    }

    /// Serves the `serviceaccounts/token` subresource: reads a TokenRequest's `spec`
    /// (`audiences`, default `[issuer]`; `expirationSeconds`, default 3600, at least 600;
    /// `boundObjectRef` to a Secret/Pod/Node) and returns its `status` (`token`,
    /// `expirationTimestamp`).
    pub fn token_request_status(
        &self,
        issuer: &str,
        sa: &ServiceAccountRef,
        spec: &Value,
        now: i64,
    ) -> Result<Value, TokenError> {
        let spec_err = |field: &str, message: String| TokenError::Spec {
            field: format!("spec.{field}"),
            message,
        };
        let audiences = match spec.get("audiences") {
            None | Some(Value::Null) => vec![issuer.to_string()],
            Some(Value::Array(a)) => {
                let mut out = Vec::with_capacity(a.len());
                for (i, x) in a.iter().enumerate() {
                    match x.as_str() {
                        Some(s) if !s.is_empty() => out.push(s.to_string()),
                        _ => {
                            return Err(spec_err(
                                &format!("audiences[{i}]"),
                                "must be a non-empty string".into(),
                            ));
                        }
                    }
                }
                if out.is_empty() {
                    vec![issuer.to_string()]
                } else {
                    out
                }
            }
            Some(_) => return Err(spec_err("audiences", "must be a list of strings".into())),
        };
        let expiration = match spec.get("expirationSeconds") {
            None | Some(Value::Null) => DEFAULT_EXPIRATION_SECONDS,
            Some(v) => v
                .as_i64()
                .ok_or_else(|| spec_err("expirationSeconds", "must be an integer".into()))?,
        };
        if expiration < MIN_EXPIRATION_SECONDS {
            return Err(spec_err(
                "expirationSeconds",
                format!(
                    "Invalid value: {expiration}: may not specify a duration less than 10 minutes"
                ),
            ));
        }
        if expiration > MAX_EXPIRATION_SECONDS {
            return Err(spec_err(
                "expirationSeconds",
                format!(
                    "Invalid value: {expiration}: may not specify a duration larger than 2^32 seconds"
                ),
            ));
        }
        let bound = match spec.get("boundObjectRef") {
            None | Some(Value::Null) => None,
            Some(b) => {
                let name = b.get("name").and_then(Value::as_str).unwrap_or("");
                let uid = b.get("uid").and_then(Value::as_str).unwrap_or("");
                if name.is_empty() {
                    return Err(spec_err("boundObjectRef.name", "Required value".into()));
                }
                let r = ObjectRef {
                    name: name.into(),
                    uid: uid.into(),
                };
                match b.get("kind").and_then(Value::as_str).unwrap_or("") {
                    "Secret" => Some(BoundObject::Secret(r)),
                    "Pod" => Some(BoundObject::Pod(r)),
                    "Node" => Some(BoundObject::Node(r)),
                    other => {
                        return Err(spec_err(
                            "boundObjectRef.kind",
                            format!(
                                "Unsupported value: {other:?}: supported values: \"Pod\", \"Secret\", \"Node\""
                            ),
                        ));
                    }
                }
            }
        };
        let token = self.sign_bound(issuer, sa, &audiences, now, expiration, bound)?;
        let exp = jiff::Timestamp::from_second(now.saturating_add(expiration))
            .map_err(|e| spec_err("expirationSeconds", e.to_string()))?;
        Ok(serde_json::json!({
            "token": token,
            "expirationTimestamp": exp.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
        }))
    }
}

/// The object a bound token is tied to (TokenRequest `boundObjectRef`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BoundObject {
    /// A Secret: deleting it revokes the token (checked by [`Verified::check_objects`]).
    Secret(ObjectRef),
    /// A Pod (recorded in the claim; pod liveness is not checked by this module).
    Pod(ObjectRef),
    /// A Node (recorded in the claim).
    Node(ObjectRef),
}
