//! Kubernetes `Status` errors. Every failure a client sees is a `meta/v1 Status` with the HTTP code
//! and `reason` kube-apiserver would use, because clients (kubectl, kube-rs, client-go, python)
//! branch on `reason`/`code`, not on the message text.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use crate::storage::store::StoreError;

/// One field-level problem inside an `Invalid` (422) error; becomes a `details.causes` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cause {
    /// Dotted JSON path of the offending field, e.g. `metadata.labels`.
    pub field: String,
    /// Upstream cause type, e.g. `FieldValueInvalid`, `FieldValueRequired`.
    pub reason: &'static str,
    /// Human-readable explanation.
    pub message: String,
}

impl Cause {
    /// A `FieldValueInvalid` cause: the most common validation failure.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Cause {
        Cause {
            field: field.into(),
            reason: "FieldValueInvalid",
            message: message.into(),
        }
    }
    /// A `FieldValueRequired` cause for a missing mandatory field.
    pub fn required(field: impl Into<String>) -> Cause {
        Cause {
            field: field.into(),
            reason: "FieldValueRequired",
            message: "Required value".into(),
        }
    }
}

/// An API error, rendered as a Kubernetes `Status` object.
#[derive(Clone, Debug)]
pub struct ApiError {
    /// HTTP status code (also `Status.code`).
    pub code: u16,
    /// `Status.reason` (`NotFound`, `AlreadyExists`, `Conflict`, `Invalid`, ...).
    pub reason: &'static str,
    /// `Status.message`.
    pub message: String,
    /// `Status.details`, boxed to keep `Result<_, ApiError>` small on the hot path.
    pub details: Option<Box<Details>>,
}

/// `Status.details`: which object the error is about and the field-level causes.
#[derive(Clone, Debug, Default)]
pub struct Details {
    /// `details.name`.
    pub name: Option<String>,
    /// API group of the object concerned (`""` for core).
    pub group: Option<String>,
    /// Resource (plural) or kind of the object concerned.
    pub kind: Option<String>,
    /// `details.causes`.
    pub causes: Vec<Cause>,
}

/// Result type of every REST operation.
pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    /// A bare error with a code, reason and message.
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }
    /// Attaches `details` (name, group, resource) like kube-apiserver does for object errors.
    pub fn with_details(mut self, group: &str, resource: &str, name: &str) -> ApiError {
        let d = self.details.get_or_insert_with(Default::default);
        d.group = Some(group.to_string());
        d.kind = Some(resource.to_string());
        d.name = Some(name.to_string());
        self
    }
    /// 404 for a named object: message `<resource>.<group> "<name>" not found`.
    pub fn not_found(group: &str, resource: &str, name: &str) -> ApiError {
        ApiError::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", qualified(group, resource)),
        )
        .with_details(group, resource, name)
    }
    /// 404 for a path that names no resource at all.
    pub fn path_not_found(path: &str) -> ApiError {
        ApiError::new(
            404,
            "NotFound",
            format!("the server could not find the requested resource ({path})"),
        )
    }
    /// 409 AlreadyExists for a create of an existing name.
    pub fn already_exists(group: &str, resource: &str, name: &str) -> ApiError {
        ApiError::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", qualified(group, resource)),
        )
        .with_details(group, resource, name)
    }
    /// 409 Conflict for a stale resourceVersion.
    pub fn conflict(group: &str, resource: &str, name: &str) -> ApiError {
        ApiError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again",
                qualified(group, resource)
            ),
        )
        .with_details(group, resource, name)
    }
    /// 422 Invalid listing every field problem, message formatted like kube-apiserver's.
    pub fn invalid(group: &str, kind: &str, name: &str, causes: Vec<Cause>) -> ApiError {
        let list: Vec<String> = causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect();
        let what = qualified(group, kind);
        let msg = if list.len() == 1 {
            format!("{what} \"{name}\" is invalid: {}", list.join(", "))
        } else {
            format!("{what} \"{name}\" is invalid: [{}]", list.join(", "))
        };
        let mut e = ApiError::new(422, "Invalid", msg);
        e.details = Some(Box::new(Details {
            name: Some(name.to_string()),
            group: Some(group.to_string()),
            kind: Some(kind.to_string()),
            causes,
        }));
        e
    }
    /// 400 BadRequest (malformed body, bad selector, bad query parameter).
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(400, "BadRequest", message)
    }
    /// 405 MethodNotAllowed for a verb the resource does not support.
    pub fn method_not_allowed(message: impl Into<String>) -> ApiError {
        ApiError::new(405, "MethodNotAllowed", message)
    }
    /// 415 UnsupportedMediaType for a body/patch type the endpoint does not accept.
    pub fn unsupported_media_type(content_type: &str) -> ApiError {
        ApiError::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml (got {content_type:?})"
            ),
        )
    }
    /// 413 RequestEntityTooLarge for bodies over the limit.
    pub fn too_large(limit: usize) -> ApiError {
        ApiError::new(
            413,
            "RequestEntityTooLarge",
            format!("Request entity too large: limit is {limit}"),
        )
    }
    /// 410 Expired/Gone for a compacted resourceVersion.
    pub fn gone(message: impl Into<String>) -> ApiError {
        ApiError::new(410, "Expired", message)
    }
    /// 403 Forbidden (e.g. create in a terminating namespace).
    pub fn forbidden(message: impl Into<String>) -> ApiError {
        ApiError::new(403, "Forbidden", message)
    }
    /// 500 InternalError: a storage failure, never a client mistake.
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(500, "InternalError", message)
    }
    /// 504 Timeout for operations that could not finish in time.
    pub fn timeout(message: impl Into<String>) -> ApiError {
        ApiError::new(504, "Timeout", message)
    }

    /// Maps a storage error for an object identified by (group, resource, name).
    pub fn from_store(e: StoreError, group: &str, resource: &str, name: &str) -> ApiError {
        match e {
            StoreError::AlreadyExists(_) => ApiError::already_exists(group, resource, name),
            StoreError::NotFound(_) => ApiError::not_found(group, resource, name),
            StoreError::Conflict { .. } => ApiError::conflict(group, resource, name),
            StoreError::Compacted { requested, oldest } => {
                ApiError::gone(format!("too old resource version: {requested} ({oldest})"))
            }
            StoreError::FutureRevision(r) => {
                ApiError::timeout(format!("Too large resource version: {r}, current: unknown"))
            }
            StoreError::Internal(m) => ApiError::internal(m),
        }
    }

    /// The `Status` object as JSON.
    pub fn to_status(&self) -> Value {
        serde_json::to_value(self.status_body()).unwrap_or_default()
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.code, self.reason, self.message)
    }
}

impl std::error::Error for ApiError {}

/// The `Status` a client gets for an error (the one definition of its fields and their
/// order), serialized straight from borrowed fields (every 404 a client's existence check
/// gets is one of these).
#[derive(serde::Serialize)]
struct StatusBody<'a> {
    kind: &'static str,
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    metadata: Empty,
    status: &'static str,
    message: &'a str,
    reason: &'static str,
    code: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    details: Option<DetailsBody<'a>>,
}

#[derive(serde::Serialize)]
struct Empty {}

#[derive(serde::Serialize)]
struct DetailsBody<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    group: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<&'a str>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    causes: Vec<CauseBody<'a>>,
}

#[derive(serde::Serialize)]
struct CauseBody<'a> {
    reason: &'static str,
    message: &'a str,
    field: &'a str,
}

impl ApiError {
    /// The `Status` as compact JSON (what [`ApiError::to_status`] holds).
    pub fn status_json(&self) -> Vec<u8> {
        serde_json::to_vec(&self.status_body()).unwrap_or_default()
    }

    fn status_body(&self) -> StatusBody<'_> {
        let details = self.details.as_deref().and_then(|d| {
            let body = DetailsBody {
                name: d.name.as_deref(),
                group: d.group.as_deref(),
                kind: d.kind.as_deref(),
                causes: d
                    .causes
                    .iter()
                    .map(|c| CauseBody {
                        reason: c.reason,
                        message: &c.message,
                        field: &c.field,
                    })
                    .collect(),
            };
            let empty = body.name.is_none()
                && body.group.is_none()
                && body.kind.is_none()
                && body.causes.is_empty();
            (!empty).then_some(body)
        });
        StatusBody {
            kind: "Status",
            api_version: "v1",
            metadata: Empty {},
            status: "Failure",
            message: &self.message,
            reason: self.reason,
            code: self.code,
            details,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = self.status_json();
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut resp = (code, body).into_response();
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        resp
    }
}

fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_status_shape() {
        let s = ApiError::not_found("apps", "deployments", "web").to_status();
        assert_eq!(s["code"], 404);
        assert_eq!(s["reason"], "NotFound");
        assert_eq!(s["message"], "deployments.apps \"web\" not found");
        assert_eq!(s["details"]["kind"], "deployments");
    }

    /// A 422 with two causes.
    fn invalid_config_map() -> ApiError {
        ApiError::invalid(
            "",
            "ConfigMap",
            "x",
            vec![
                Cause::invalid("metadata.name", "bad"),
                Cause::required("data"),
            ],
        )
    }

    #[test]
    fn the_status_bytes_keep_their_fields_and_order() {
        let mut bare_details = ApiError::new(409, "Conflict", "x");
        bare_details.details = Some(Box::default());
        for (e, want) in [
            (
                ApiError::not_found("apps", "deployments", "web"),
                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"deployments.apps \"web\" not found","reason":"NotFound","code":404,"details":{"name":"web","group":"apps","kind":"deployments"}}"#,
            ),
            (
                bare_details,
                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"x","reason":"Conflict","code":409}"#,
            ),
            (
                invalid_config_map(),
                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"ConfigMap \"x\" is invalid: [metadata.name: bad, data: Required value]","reason":"Invalid","code":422,"details":{"name":"x","group":"","kind":"ConfigMap","causes":[{"reason":"FieldValueInvalid","message":"bad","field":"metadata.name"},{"reason":"FieldValueRequired","message":"Required value","field":"data"}]}}"#,
            ),
        ] {
            assert_eq!(String::from_utf8(e.status_json()).unwrap(), want);
            assert_eq!(e.to_status(), serde_json::from_str::<Value>(want).unwrap());
        }
    }

    #[test]
    fn invalid_lists_causes() {
        let s = invalid_config_map().to_status();
        assert_eq!(s["code"], 422);
        assert_eq!(s["details"]["causes"].as_array().map(|a| a.len()), Some(2));
        assert!(
            s["message"]
                .as_str()
                .unwrap_or("")
                .contains("metadata.name: bad")
        );
    }
}
