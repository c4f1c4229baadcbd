//! The field manager of a write, from the request's `fieldManager` parameter or User-Agent, as
//! kube-apiserver derives it (the server-side apply code records whatever name this returns).

use axum::http::HeaderMap;

use crate::http::request::Query;
use crate::storage::errors::{ApiError, ApiResult, Cause};

/// The longest field manager name kube-apiserver accepts.
const MAX_MANAGER_LEN: usize = 128;

/// The field manager of a write: the `fieldManager` parameter, else the program name of the
/// User-Agent (`kubectl/v1.33.0 (linux/amd64) ...` → `kubectl`), as kube-apiserver derives it.
/// An explicit name must be at most 128 printable characters (422 otherwise).
pub fn manager(q: &Query, headers: &HeaderMap, options_kind: &str) -> ApiResult<String> {
    if let Some(m) = q.field_manager.as_deref().filter(|m| !m.is_empty()) {
        let bad = if m.len() > MAX_MANAGER_LEN {
            Some(Cause {
                field: "fieldManager".into(),
                reason: "FieldValueTooLong",
                message: format!("Too long: may not be more than {MAX_MANAGER_LEN} bytes"),
            })
        } else if m.chars().any(|c| c.is_control()) {
            Some(Cause::invalid(
                "fieldManager",
                format!("Invalid value: {m:?}: must only contain printable characters"),
            ))
        } else {
            None
        };
        if let Some(c) = bad {
            return Err(ApiError::invalid("meta.k8s.io", options_kind, "", vec![c]));
        }
        return Ok(m.to_string());
    }
    let ua = headers
        .get(axum::http::header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let prefix = ua.split('/').next().unwrap_or("");
    Ok(prefix.chars().take(MAX_MANAGER_LEN).collect())
}

/// Validates the query of an apply: `fieldManager` is required (422 as kube-apiserver).
pub fn apply_manager(q: &Query, headers: &HeaderMap) -> ApiResult<String> {
    if q.field_manager.as_deref().is_none_or(str::is_empty) {
        return Err(ApiError::invalid(
            "meta.k8s.io",
            "PatchOptions",
            "",
            vec![Cause {
                field: "fieldManager".into(),
                reason: "FieldValueRequired",
                message: "Required value: is required for apply patch".into(),
            }],
        ));
    }
    manager(q, headers, "PatchOptions")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn managers_default_to_the_user_agent_program() {
        let mut h = HeaderMap::new();
        h.insert(
            axum::http::header::USER_AGENT,
            axum::http::HeaderValue::from_static("kubectl/v1.33.0 (linux/amd64) kubernetes/abc"),
        );
        let q = Query::default();
        assert_eq!(manager(&q, &h, "UpdateOptions").expect("ok"), "kubectl");
        h.insert(
            axum::http::header::USER_AGENT,
            axum::http::HeaderValue::from_static("Mozilla/5.0 (X11)"),
        );
        assert_eq!(manager(&q, &h, "UpdateOptions").expect("ok"), "Mozilla");
        let q = Query {
            field_manager: Some("kubectl-edit".into()),
            ..Query::default()
        };
        assert_eq!(
            manager(&q, &h, "UpdateOptions").expect("ok"),
            "kubectl-edit"
        );
        let q = Query {
            field_manager: Some("x".repeat(129)),
            ..Query::default()
        };
        assert_eq!(
            manager(&q, &h, "UpdateOptions").expect_err("long").code,
            422
        );
        let q = Query::default();
        assert_eq!(apply_manager(&q, &h).expect_err("required").code, 422);
    }
}
