//! Service-account issuer discovery, as kube-apiserver serves it: the OpenID Connect discovery
//! document at `/.well-known/openid-configuration` and the signing keys at `/openid/v1/jwks`.
//! Why: a relying party outside the cluster (a cloud IAM, a vault, another cluster) can then
//! verify this server's service-account tokens from the issuer URL alone. Who may read them is
//! RBAC's decision: the default `system:service-account-issuer-discovery` ClusterRole is bound to
//! `system:serviceaccounts`, and binding it to `system:unauthenticated` makes them public.

use axum::Extension;
use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;

use crate::state::ApiServer;

/// The discovery document's path.
pub const OPENID_CONFIGURATION_PATH: &str = "/.well-known/openid-configuration";
/// The key set's path.
pub const JWKS_PATH: &str = "/openid/v1/jwks";
/// The media type of the key set (RFC 7517).
const JWKS_MEDIA_TYPE: &str = "application/jwk-set+json";
/// Relying parties may cache both documents for an hour, as kube-apiserver tells them.
const CACHE_CONTROL: &str = "public, max-age=3600";

/// The two endpoints, with and without a trailing slash (the paths the default ClusterRole names).
pub fn routes() -> Router {
    Router::new()
        .route(OPENID_CONFIGURATION_PATH, get(configuration))
        .route("/.well-known/openid-configuration/", get(configuration))
        .route(JWKS_PATH, get(jwks))
        .route("/openid/v1/jwks/", get(jwks))
}

fn respond(media_type: &'static str, body: serde_json::Value) -> Response {
    let mut r = serde_json::to_vec(&body)
        .unwrap_or_default()
        .into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(media_type));
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(CACHE_CONTROL),
    );
    r
}

/// The `jwks_uri` when none is configured: the key set on the host the client reached.
fn default_jwks_uri(req: &Request) -> String {
    let host = req
        .uri()
        .authority()
        .map(|a| a.as_str().to_string())
        .or_else(|| {
            req.headers()
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .map(str::to_string)
        })
        .unwrap_or_else(|| "localhost".to_string());
    format!("https://{host}{JWKS_PATH}")
}

async fn configuration(Extension(srv): Extension<ApiServer>, req: Request) -> Response {
    let cfg = srv.service_account_config();
    let jwks_uri = cfg
        .jwks_uri
        .clone()
        .unwrap_or_else(|| default_jwks_uri(&req));
    respond(
        "application/json",
        json!({
            "issuer": cfg.issuer,
            "jwks_uri": jwks_uri,
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["ES256"],
        }),
    )
}

async fn jwks(Extension(srv): Extension<ApiServer>) -> Response {
    respond(
        JWKS_MEDIA_TYPE,
        json!({"keys": [srv.service_account_key().jwk()]}),
    )
}
