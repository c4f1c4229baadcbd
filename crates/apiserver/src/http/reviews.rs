//! `authorization.k8s.io/v1` reviews: SelfSubjectAccessReview, SubjectAccessReview,
//! LocalSubjectAccessReview and SelfSubjectRulesReview. They are virtual resources: a POST is
//! answered with the request plus a `status` computed from the live RBAC policy, nothing is
//! stored, and discovery lists them with the single verb `create`, as kube-apiserver does. Why:
//! `kubectl auth can-i` (and `--list`, `--as`) and controllers that check permissions before
//! acting use exactly these.

use axum::body::Body;
use axum::http::{HeaderMap, Method};
use axum::response::Response;
use bytes::Bytes;
use serde_json::{Map, Value, json};

use crate::security::auth::UserInfo;
use crate::security::rbac::Attributes;
use crate::state::ApiServer;
use crate::storage::errors::{ApiError, ApiResult, Cause};
use crate::storage::registry::ResourceInfo;

use crate::storage::review_kinds::{GROUP, VERSION};

fn str_at<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

fn invalid(info: &ResourceInfo, field: &str, message: &str) -> ApiError {
    ApiError::invalid(
        GROUP,
        &info.kind,
        "",
        vec![Cause::invalid(field, message.to_string())],
    )
}

/// The request attributes a review's `spec` describes, or a 422 naming the field at fault.
fn spec_attributes(info: &ResourceInfo, spec: &Value) -> ApiResult<Attributes> {
    let res = spec.get("resourceAttributes").filter(|v| !v.is_null());
    let non = spec.get("nonResourceAttributes").filter(|v| !v.is_null());
    match (res, non) {
        (Some(r), None) => {
            if !r.is_object() {
                return Err(invalid(
                    info,
                    "spec.resourceAttributes",
                    "must be an object",
                ));
            }
            Ok(Attributes {
                verb: str_at(r, "/verb").into(),
                api_group: str_at(r, "/group").into(),
                resource: str_at(r, "/resource").into(),
                subresource: str_at(r, "/subresource").into(),
                namespace: str_at(r, "/namespace").into(),
                name: str_at(r, "/name").into(),
                path: String::new(),
            })
        }
        (None, Some(n)) => {
            if !n.is_object() {
                return Err(invalid(
                    info,
                    "spec.nonResourceAttributes",
                    "must be an object",
                ));
            }
            Ok(Attributes::non_resource(
                str_at(n, "/verb"),
                str_at(n, "/path"),
            ))
        }
        _ => Err(invalid(
            info,
            "spec.resourceAttributes",
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )),
    }
}

fn string_list(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The `status` of an access review: `allowed`, plus `reason` when allowed (which binding), as
/// kube-apiserver's RBAC answers (a plain denial has no reason).
fn access_status(srv: &ApiServer, user: &UserInfo, attrs: &Attributes) -> Value {
    let d = crate::http::authorize::decide(srv, user, attrs);
    let mut status = Map::new();
    status.insert("allowed".into(), Value::Bool(d.allowed));
    if d.allowed && !d.reason.is_empty() {
        status.insert("reason".into(), Value::String(d.reason));
    }
    Value::Object(status)
}

/// Answers a request to a review resource: POST computes the review, any other method is 405.
/// `user` is the (possibly impersonated) caller; `None` means an in-process caller without
/// authentication, which cannot ask about "itself".
pub async fn handle(
    srv: &ApiServer,
    info: &ResourceInfo,
    ns: Option<&str>,
    method: &Method,
    user: Option<&UserInfo>,
    headers: &HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    if method != Method::POST {
        return Err(ApiError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource ({method} {})",
            info.group_resource()
        )));
    }
    let bytes = crate::http::request::read_body(body).await?;
    let mut obj =
        crate::http::request::decode_object(&bytes, &crate::http::request::content_type(headers))?;
    let kind = str_at(&obj, "/kind");
    if !kind.is_empty() && kind != info.kind {
        return Err(ApiError::bad_request(format!(
            "the body is a {kind:?}, but the URL is for {:?}",
            info.kind
        )));
    }
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    let self_user = || {
        user.cloned().ok_or_else(|| {
            ApiError::forbidden(
                "a self review needs an authenticated user, and this request has none",
            )
        })
    };
    let status = match info.kind.as_str() {
        "SelfSubjectAccessReview" => {
            let attrs = spec_attributes(info, &spec)?;
            access_status(srv, &self_user()?, &attrs)
        }
        "SubjectAccessReview" | "LocalSubjectAccessReview" => {
            let mut attrs = spec_attributes(info, &spec)?;
            if info.kind == "LocalSubjectAccessReview" {
                let Some(ns) = ns else {
                    return Err(ApiError::bad_request("namespace is required on this type"));
                };
                if spec
                    .get("nonResourceAttributes")
                    .is_some_and(|v| !v.is_null())
                {
                    return Err(invalid(
                        info,
                        "spec.nonResourceAttributes",
                        "disallowed on this kind of request",
                    ));
                }
                if attrs.namespace.is_empty() {
                    attrs.namespace = ns.to_string();
                } else if attrs.namespace != ns {
                    return Err(ApiError::bad_request(format!(
                        "spec.resourceAttributes.namespace must match namespace: {ns}"
                    )));
                }
            }
            let name = str_at(&spec, "/user").to_string();
            let groups = string_list(spec.get("groups"));
            if name.is_empty() && groups.is_empty() {
                return Err(invalid(
                    info,
                    "spec.user",
                    "at least one of user or group must be specified",
                ));
            }
            let extra = spec
                .get("extra")
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| (k.clone(), string_list(Some(v))))
                        .collect()
                })
                .unwrap_or_default();
            let user = UserInfo {
                name,
                groups,
                uid: str_at(&spec, "/uid").to_string(),
                extra,
            };
            access_status(srv, &user, &attrs)
        }
        _ => {
            // SelfSubjectRulesReview
            let namespace = str_at(&spec, "/namespace");
            let user = self_user()?;
            srv.inner
                .authz
                .read()
                .rules_for(&user, namespace)
                .review_status()
        }
    };
    if let Some(m) = obj.as_object_mut() {
        m.insert("apiVersion".into(), json!(format!("{GROUP}/{VERSION}")));
        m.insert("kind".into(), json!(info.kind));
        let meta = m.entry("metadata").or_insert_with(|| json!({}));
        if let Some(meta) = meta.as_object_mut() {
            meta.entry("creationTimestamp").or_insert(Value::Null);
            if let Some(ns) = ns {
                meta.insert("namespace".into(), json!(ns));
            }
        }
        m.insert("status".into(), status);
    }
    let body = serde_json::to_vec(&obj).map_err(|e| ApiError::internal(e.to_string()))?;
    Ok(crate::http::json_response(201, Bytes::from(body)))
}
