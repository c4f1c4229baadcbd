//! `authentication.k8s.io/v1` SelfSubjectReview (`kubectl auth whoami`) and TokenReview: virtual,
//! create-only resources. Nothing is stored; the answer is computed from the request's
//! authenticated user, or from running a presented token through the server's authenticators.

use axum::extract::Request;
use axum::http::Method;
use axum::response::Response;
use bytes::Bytes;
use serde_json::{Value, json};

use crate::http::json_response;
use crate::http::request::{ResourcePath, content_type, decode_object, read_body};
use crate::security::auth::{Authenticator, UserInfo};
use crate::state::ApiServer;
use crate::storage::errors::{ApiError, ApiResult};

/// The API group served here.
pub const GROUP: &str = "authentication.k8s.io";
/// The one version served.
pub const VERSION: &str = "v1";

/// `(group, versions)` for `/apis` discovery.
pub fn discovery_groups() -> Vec<(String, Vec<String>)> {
    vec![(GROUP.to_string(), vec![VERSION.to_string()])]
}

/// The APIResource entries of `authentication.k8s.io/v1`, or `None` for another group version.
pub fn discovery_resources(group: &str, version: &str) -> Option<Vec<Value>> {
    (group == GROUP && version == VERSION).then(|| {
        ["selfsubjectreviews", "tokenreviews"]
            .iter()
            .zip(["SelfSubjectReview", "TokenReview"])
            .map(|(plural, kind)| {
                json!({"name": plural, "singularName": kind.to_ascii_lowercase(), "namespaced": false, "kind": kind, "verbs": ["create"]})
            })
            .collect()
    })
}

/// Whether `rp` is one of this module's resources (the dispatcher hands those here).
pub fn handles(rp: &ResourcePath) -> bool {
    rp.group == GROUP
}

/// `authentication.k8s.io/v1` `UserInfo`: `uid` and `extra` only when set (Go's `omitempty`).
fn user_json(u: &UserInfo) -> Value {
    let mut v = json!({"username": u.name});
    if !u.uid.is_empty() {
        v["uid"] = json!(u.uid);
    }
    v["groups"] = json!(u.groups);
    if !u.extra.is_empty() {
        v["extra"] = json!(u.extra);
    }
    v
}

/// Serves a request for `/apis/authentication.k8s.io/v1/...`.
pub async fn serve(_srv: &ApiServer, rp: ResourcePath, req: Request) -> ApiResult<Response> {
    let path = req.uri().path().to_string();
    let kind = match (rp.version.as_str(), rp.plural.as_str()) {
        (VERSION, "selfsubjectreviews") => "SelfSubjectReview",
        (VERSION, "tokenreviews") => "TokenReview",
        _ => return Err(ApiError::path_not_found(&path)),
    };
    if rp.namespace.is_some() || rp.name.is_some() || rp.sub.is_some() {
        return Err(ApiError::path_not_found(&path));
    }
    if req.method() != Method::POST {
        return Err(ApiError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource ({} {})",
            req.method(),
            path
        )));
    }
    let user = req
        .extensions()
        .get::<UserInfo>()
        .cloned()
        .unwrap_or_else(UserInfo::anonymous);
    let authenticator = req.extensions().get::<Authenticator>().cloned();
    let ct = content_type(req.headers());
    let bytes = read_body(req.into_body()).await?;
    let body = if bytes.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        decode_object(&bytes, &ct)?
    };
    if let Some(k) = body.get("kind").and_then(Value::as_str)
        && !k.is_empty()
        && k != kind
    {
        return Err(ApiError::bad_request(format!(
            "the body of this request must be a {kind}, not {k}"
        )));
    }
    let mut meta = body.get("metadata").cloned().unwrap_or_else(|| json!({}));
    if let Some(m) = meta.as_object_mut() {
        m.insert(
            "creationTimestamp".into(),
            json!(crate::storage::objects::now()),
        );
    }
    let out = if kind == "SelfSubjectReview" {
        json!({
            "kind": kind,
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": meta,
            "status": {"userInfo": user_json(&user)},
        })
    } else {
        let spec = body.get("spec").cloned().unwrap_or_else(|| json!({}));
        let token = spec.get("token").and_then(Value::as_str).unwrap_or("");
        if token.is_empty() {
            return Err(ApiError::bad_request(
                "token is required for TokenReview in authentication",
            ));
        }
        let audiences: Option<Vec<String>> = match spec.get("audiences") {
            Some(Value::Array(a)) if !a.is_empty() => Some(
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect(),
            ),
            _ => None,
        };
        let result = match &authenticator {
            Some(a) => a.review_token(token, audiences.as_deref()),
            None => Err("no authenticator is configured".to_string()),
        };
        let status = match result {
            Ok(u) => {
                let mut st = json!({"authenticated": true, "user": user_json(&u)});
                if let Some(a) = &audiences {
                    st["audiences"] = json!(a);
                }
                st
            }
            Err(e) => json!({"authenticated": false, "user": {}, "error": e}),
        };
        json!({
            "kind": kind,
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": meta,
            "spec": spec,
            "status": status,
        })
    };
    Ok(json_response(
        201,
        Bytes::from(serde_json::to_vec(&out).unwrap_or_default()),
    ))
}
