//! Authentication: who is making a request. Authorization (RBAC) is a separate, later layer that
//! reads the [`UserInfo`] this one leaves in the request's extensions.
//!
//! Why here and not in the REST layer: the identity comes from the TLS connection (a verified
//! client certificate) or a header, and every route, including discovery, needs it; the health and
//! version endpoints stay open, as kube-apiserver's `system:public-info-viewer` role leaves them.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rustls::pki_types::CertificateDer;

/// The group every authenticated user is in, as in Kubernetes.
pub const AUTHENTICATED_GROUP: &str = "system:authenticated";
/// The user name given to requests without credentials (only public paths accept them).
pub const ANONYMOUS_USER: &str = "system:anonymous";
/// The group of requests without credentials.
pub const UNAUTHENTICATED_GROUP: &str = "system:unauthenticated";

/// The authenticated caller, put into every request's extensions for authorization and audit.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct UserInfo {
    /// The user name (client certificate CN, or the token's user).
    pub name: String,
    /// The groups (client certificate O values, or the token's groups), always including
    /// `system:authenticated` for authenticated users.
    pub groups: Vec<String>,
    /// A unique id of the user when the authenticator knows one (a service account's uid, an
    /// impersonated `Impersonate-Uid`); empty otherwise.
    pub uid: String,
    /// Further attributes by key (`Impersonate-Extra-<key>` headers), as kube's `user.Info`
    /// carries them to authorizers, admission and SelfSubjectReview.
    pub extra: std::collections::BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// A user with the given groups plus `system:authenticated`.
    pub fn authenticated(name: impl Into<String>, groups: &[&str]) -> UserInfo {
        let mut groups: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
        if !groups.iter().any(|g| g == AUTHENTICATED_GROUP) {
            groups.push(AUTHENTICATED_GROUP.to_string());
        }
        UserInfo {
            name: name.into(),
            groups,
            ..UserInfo::default()
        }
    }

    /// The identity of a request that presented no credentials.
    pub fn anonymous() -> UserInfo {
        UserInfo {
            name: ANONYMOUS_USER.into(),
            groups: vec![UNAUTHENTICATED_GROUP.into()],
            ..UserInfo::default()
        }
    }

    /// Whether this user is in `group`.
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }
}

/// The identity established by the TLS handshake (a client certificate verified against our CA),
/// attached by the accept loop to every request of that connection. `None`: no certificate.
#[derive(Clone, Debug, Default)]
pub struct PeerIdentity(pub Option<UserInfo>);

/// The user a verified client certificate stands for: CN is the user name, each O is a group.
///
/// The certificate must already be verified (rustls does that during the handshake); this only
/// reads names. Returns `None` when the certificate does not parse or has no CN.
pub fn identity_from_cert(cert: &CertificateDer<'_>) -> Option<UserInfo> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert).ok()?;
    let subject = parsed.subject();
    let name = subject
        .iter_common_name()
        .next()?
        .as_str()
        .ok()?
        .to_string();
    if name.is_empty() {
        return None;
    }
    let groups: Vec<&str> = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok())
        .collect();
    Some(UserInfo::authenticated(name, &groups))
}

/// Verifies bearer tokens that are checked against live state rather than a fixed list
/// (service-account JWTs, see `serviceaccount`).
pub trait TokenVerifier: Send + Sync {
    /// The user `token` stands for if it is valid for one of `audiences` (`None`: the API
    /// server's own); `Err` says why not.
    fn verify_token(&self, token: &str, audiences: Option<&[String]>) -> Result<UserInfo, String>;
}

/// Checks requests' credentials. Cheap to clone (shared).
#[derive(Clone, Default)]
pub struct Authenticator {
    tokens: Arc<Vec<(String, UserInfo)>>,
    verifier: Option<Arc<dyn TokenVerifier>>,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator")
            .field("static_tokens", &self.tokens.len())
            .field("verifier", &self.verifier.is_some())
            .finish()
    }
}

/// Whether a token has the three dot-separated parts of a JWT.
fn looks_like_jwt(token: &str) -> bool {
    token.split('.').count() == 3
}

impl Authenticator {
    /// An authenticator accepting verified client certificates and the given static bearer tokens.
    pub fn new(tokens: Vec<(String, UserInfo)>) -> Authenticator {
        Authenticator {
            tokens: Arc::new(tokens),
            verifier: None,
        }
    }

    /// Also accepts JWT bearer tokens `verifier` vouches for (tried before the static tokens).
    pub fn with_verifier(mut self, verifier: Arc<dyn TokenVerifier>) -> Authenticator {
        self.verifier = Some(verifier);
        self
    }

    /// Runs a token through every authenticator, as TokenReview does; `audiences` restricts
    /// service-account tokens to those audiences. `Err` says why the token is not valid.
    pub fn review_token(
        &self,
        token: &str,
        audiences: Option<&[String]>,
    ) -> Result<UserInfo, String> {
        let mut why = "invalid bearer token".to_string();
        if looks_like_jwt(token)
            && let Some(v) = &self.verifier
        {
            match v.verify_token(token, audiences) {
                Ok(u) => return Ok(u),
                Err(e) => why = e,
            }
        }
        self.static_token(token).ok_or(why)
    }

    /// The user a bearer token belongs to: a service-account JWT the verifier accepts, else a
    /// static token.
    pub fn authenticate_token(&self, token: &str) -> Option<UserInfo> {
        match self.review_token(token, None) {
            Ok(u) => Some(u),
            Err(why) => {
                tracing::debug!(reason = %why, "bearer token rejected");
                None
            }
        }
    }

    /// A static token's user. Compares in constant time so response timing does not reveal how
    /// much of a guessed token matched.
    fn static_token(&self, token: &str) -> Option<UserInfo> {
        let mut found = None;
        for (t, user) in self.tokens.iter() {
            if constant_time_eq(t.as_bytes(), token.as_bytes()) {
                found = Some(user.clone());
            }
        }
        found
    }

    /// Decides who made a request: a valid bearer token, else a verified client certificate.
    /// An error means credentials were presented but are not valid (always 401, even on public
    /// paths, as kube-apiserver does); `Ok(None)` means no credentials at all.
    pub fn authenticate(
        &self,
        authorization: Option<&HeaderValue>,
        peer: Option<&PeerIdentity>,
    ) -> Result<Option<UserInfo>, InvalidCredentials> {
        if let Some(value) = authorization {
            let token = value
                .to_str()
                .ok()
                .and_then(bearer_token)
                .ok_or(InvalidCredentials)?;
            return self
                .authenticate_token(token)
                .map(Some)
                .ok_or(InvalidCredentials);
        }
        Ok(peer.and_then(|p| p.0.clone()))
    }
}

/// Credentials were presented but are not valid (unknown token, malformed header).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid credentials")]
pub struct InvalidCredentials;

/// The token in an `Authorization: Bearer <token>` header value (scheme case-insensitive).
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, rest) = value.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let token = rest.trim();
    (!token.is_empty()).then_some(token)
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Paths where a request without credentials goes on as `system:anonymous` (and RBAC decides)
/// instead of getting 401: health and version, which the default policy allows to
/// `system:unauthenticated`, and service-account issuer discovery, which it does not until an
/// administrator binds `system:service-account-issuer-discovery` to that group.
pub fn is_public_path(path: &str) -> bool {
    const PUBLIC: [&str; 6] = [
        "/healthz",
        "/readyz",
        "/livez",
        "/version",
        "/.well-known/openid-configuration",
        "/openid/v1/jwks",
    ];
    PUBLIC.iter().any(|p| {
        path == *p
            || path
                .strip_prefix(p)
                .is_some_and(|rest| rest.starts_with('/'))
    })
}

/// The 401 answer, a Kubernetes `Status` like kube-apiserver's.
pub fn unauthorized() -> Response {
    let body = serde_json::json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "Unauthorized",
        "reason": "Unauthorized",
        "code": 401
    });
    let mut resp = (StatusCode::UNAUTHORIZED, Body::from(body.to_string())).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// axum middleware: authenticates the request, stores its [`UserInfo`] in the extensions, and
/// answers 401 when it has invalid credentials, or none on a non-public path.
///
/// Install with `router.layer(axum::middleware::from_fn_with_state(authenticator, authenticate))`.
pub async fn authenticate(
    State(auth): State<Authenticator>,
    mut req: Request,
    next: Next,
) -> Response {
    let result = auth.authenticate(
        req.headers().get(header::AUTHORIZATION),
        req.extensions().get(),
    );
    let user = match result {
        Ok(Some(user)) => user,
        Ok(None) if is_public_path(req.uri().path()) => UserInfo::anonymous(),
        Ok(None) | Err(InvalidCredentials) => return unauthorized(),
    };
    req.extensions_mut().insert(user);
    // TokenReview runs presented tokens through the same authenticators.
    req.extensions_mut().insert(auth);
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_paths() {
        for p in [
            "/healthz",
            "/readyz",
            "/livez",
            "/version",
            "/healthz/ping",
            "/readyz/etcd",
        ] {
            assert!(is_public_path(p), "{p}");
        }
        for p in ["/", "/api", "/healthzx", "/versions", "/api/v1/healthz"] {
            assert!(!is_public_path(p), "{p}");
        }
    }

    #[test]
    fn bearer_parsing() {
        assert_eq!(bearer_token("Bearer abc"), Some("abc"));
        assert_eq!(bearer_token("bearer   abc "), Some("abc"));
        assert_eq!(bearer_token("Basic abc"), None);
        assert_eq!(bearer_token("Bearer "), None);
        assert_eq!(bearer_token(""), None);
    }

    #[test]
    fn token_and_peer_precedence() {
        let admin = UserInfo::authenticated("admin", &["system:masters"]);
        let auth = Authenticator::new(vec![("s3cret".into(), admin.clone())]);
        let peer = PeerIdentity(Some(UserInfo::authenticated("bob", &[])));
        let good = HeaderValue::from_static("Bearer s3cret");
        let bad = HeaderValue::from_static("Bearer s3crex");
        assert_eq!(
            auth.authenticate(Some(&good), None),
            Ok(Some(admin.clone()))
        );
        assert_eq!(
            auth.authenticate(Some(&bad), Some(&peer)),
            Err(InvalidCredentials)
        );
        assert_eq!(
            auth.authenticate(None, Some(&peer)).unwrap().unwrap().name,
            "bob"
        );
        assert_eq!(auth.authenticate(None, None), Ok(None));
        assert!(admin.in_group(AUTHENTICATED_GROUP));
    }

    struct OneToken;
    impl TokenVerifier for OneToken {
        fn verify_token(&self, token: &str, _: Option<&[String]>) -> Result<UserInfo, String> {
            match token {
                "good.jwt.sig" => Ok(UserInfo::authenticated("system:serviceaccount:a:b", &[])),
                "x.y.z" => Err("refused".into()),
                other => panic!("only JWT-shaped tokens reach the verifier, got {other:?}"),
            }
        }
    }

    #[test]
    fn verifier_runs_before_static_tokens() {
        let admin = UserInfo::authenticated("admin", &["system:masters"]);
        let auth = Authenticator::new(vec![("x.y.z".into(), admin.clone())])
            .with_verifier(Arc::new(OneToken));
        assert_eq!(
            auth.authenticate_token("good.jwt.sig").map(|u| u.name),
            Some("system:serviceaccount:a:b".to_string())
        );
        // A JWT-shaped static token still works when the verifier refuses it.
        assert_eq!(auth.authenticate_token("x.y.z"), Some(admin));
        assert_eq!(
            auth.review_token("nope", None),
            Err("invalid bearer token".into())
        );
        let hv = HeaderValue::from_static("Bearer good.jwt.sig");
        assert!(auth.authenticate(Some(&hv), None).is_ok());
    }

    #[test]
    fn cert_identity() {
        let pki = crate::security::pki::Pki::ephemeral(&[]).unwrap();
        let ck = pki.issue_client_cert("alice", &["dev", "ops"]).unwrap();
        let der = CertificateDer::from_pem_slice(ck.cert_pem.as_bytes()).unwrap();
        let user = identity_from_cert(&der).unwrap();
        assert_eq!(user.name, "alice");
        assert_eq!(user.groups, vec!["dev", "ops", AUTHENTICATED_GROUP]);
        assert_eq!(
            identity_from_cert(&CertificateDer::from(vec![1u8, 2, 3])),
            None
        );
    }

    use rustls::pki_types::pem::PemObject;
}
