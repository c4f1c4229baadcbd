//! `POST /api/v1/namespaces/NS/serviceaccounts/NAME/token`: the TokenRequest subresource
//! (`kubectl create token`). The request is never stored; the answer is the TokenRequest with
//! `status.token` and `status.expirationTimestamp`, as kube-apiserver returns it (201).

use axum::body::Body;
use axum::http::HeaderMap;
use axum::response::Response;
use bytes::Bytes;
use serde_json::{Value, json};

use crate::http::json_response;
use crate::http::request::{content_type, decode_object, read_body};
use crate::security::satoken::{ServiceAccountRef, TokenError};
use crate::state::ApiServer;
use crate::state::head;
use crate::storage::errors::{ApiError, ApiResult, Cause};

/// The API group of TokenRequest.
pub const GROUP: &str = "authentication.k8s.io";

fn str_at<'a>(v: &'a Value, ptr: &str) -> Option<&'a str> {
    v.pointer(ptr)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// Serves one TokenRequest for service account `ns/name`.
pub async fn create(
    srv: &ApiServer,
    ns: &str,
    name: &str,
    headers: &HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    let bytes = read_body(body).await?;
    let req = if bytes.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        decode_object(&bytes, &content_type(headers))?
    };
    if let Some(kind) = str_at(&req, "/kind")
        && kind != "TokenRequest"
    {
        return Err(ApiError::bad_request(format!(
            "the body of a serviceaccounts/token request must be a TokenRequest, not {kind}"
        )));
    }
    if let Some(av) = str_at(&req, "/apiVersion")
        && av != "authentication.k8s.io/v1"
    {
        return Err(ApiError::bad_request(format!(
            "TokenRequest apiVersion {av:?} is not served; use authentication.k8s.io/v1"
        )));
    }
    if let Some(n) = str_at(&req, "/metadata/name")
        && n != name
    {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({n}) does not match the name on the URL ({name})"
        )));
    }
    if let Some(n) = str_at(&req, "/metadata/namespace")
        && n != ns
    {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    let sa = head(srv, "serviceaccounts", ns, name)
        .ok_or_else(|| ApiError::not_found("", "serviceaccounts", name))?;
    let sa_ref = ServiceAccountRef {
        namespace: ns.to_string(),
        name: name.to_string(),
        uid: sa.metadata.uid.clone(),
    };
    let mut spec = match req.get("spec") {
        None | Some(Value::Null) => json!({}),
        Some(s @ Value::Object(_)) => s.clone(),
        Some(_) => {
            return Err(invalid(name, Cause::invalid("spec", "must be an object")));
        }
    };
    let cfg = &srv.inner.sa.cfg;
    let no_audiences = match spec.get("audiences") {
        None | Some(Value::Null) => true,
        Some(Value::Array(a)) => a.is_empty(),
        Some(_) => false,
    };
    if no_audiences {
        spec["audiences"] = json!(cfg.api_audiences);
    }
    if let Some(b) = spec.get("boundObjectRef").filter(|b| !b.is_null()) {
        let filled = bind(srv, ns, name, b)?;
        spec["boundObjectRef"] = filled;
    }
    let now = jiff::Timestamp::now().as_second();
    let status = srv
        .inner
        .sa
        .key
        .token_request_status(&cfg.issuer, &sa_ref, &spec, now)
        .map_err(|e| match e {
            TokenError::Spec { field, message } => invalid(name, Cause::invalid(field, message)),
            other => ApiError::internal(other.to_string()),
        })?;
    if spec.get("expirationSeconds").is_none_or(Value::is_null) {
        spec["expirationSeconds"] = json!(crate::security::satoken::DEFAULT_EXPIRATION_SECONDS);
    }
    let out = json!({
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {
            "name": name,
            "namespace": ns,
            "creationTimestamp": crate::storage::objects::now(),
        },
        "spec": spec,
        "status": status,
    });
    Ok(json_response(
        201,
        Bytes::from(serde_json::to_vec(&out).unwrap_or_default()),
    ))
}

fn invalid(name: &str, cause: Cause) -> ApiError {
    ApiError::invalid(GROUP, "TokenRequest", name, vec![cause])
}

/// Checks `boundObjectRef` against the live object and fills in its uid, as kube-apiserver does:
/// a missing object is 404, a stale uid 409, an unsupported kind 400.
fn bind(srv: &ApiServer, ns: &str, sa_name: &str, b: &Value) -> ApiResult<Value> {
    let kind = str_at(b, "/kind").unwrap_or("");
    let name = str_at(b, "/name").unwrap_or("");
    let api_version = str_at(b, "/apiVersion").unwrap_or("v1");
    if name.is_empty() {
        return Err(invalid(
            sa_name,
            Cause::required("spec.boundObjectRef.name"),
        ));
    }
    let (plural, obj_ns) = match (api_version, kind) {
        ("v1", "Pod") => ("pods", ns),
        ("v1", "Secret") => ("secrets", ns),
        ("v1", "Node") => ("nodes", ""),
        _ => {
            return Err(ApiError::bad_request(format!(
                "cannot bind token for serviceaccount {sa_name:?} to object of type {api_version}, Kind={kind}"
            )));
        }
    };
    let o = head(srv, plural, obj_ns, name).ok_or_else(|| ApiError::not_found("", plural, name))?;
    if let Some(uid) = str_at(b, "/uid")
        && uid != o.metadata.uid
    {
        return Err(ApiError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {kind} {name:?}: the UID in the bound object reference ({uid}) does not match the UID in record. The object might have been deleted and then recreated"
            ),
        )
        .with_details("", kind, name));
    }
    Ok(json!({"kind": kind, "apiVersion": "v1", "name": name, "uid": o.metadata.uid}))
}
