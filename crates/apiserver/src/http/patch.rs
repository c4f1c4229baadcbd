//! PATCH in all four flavours (JSON patch, merge patch, strategic merge patch for built-in kinds,
//! server-side apply) and the `scale` subresource. Every flavour computes a desired object and
//! then goes through the same guaranteed-update path as PUT.

use axum::body::Body;
use axum::http::HeaderMap;
use axum::response::Response;
use bytes::Bytes;
use serde_json::{Map, Value, json};

use crate::http::json_response;
use crate::http::read::convert;
use crate::http::request::{Query, content_type, decode_json_or_yaml, read_body};
use crate::state::ApiServer;
use crate::storage::errors::{ApiError, ApiResult};
use crate::storage::objects::{get_path, meta_mut, meta_str, set_path};
use crate::storage::registry::ResourceInfo;
use crate::write::crud::Written;

/// The patch flavours kube-apiserver accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchType {
    /// `application/json-patch+json` (RFC 6902).
    Json,
    /// `application/merge-patch+json` (RFC 7386).
    Merge,
    /// `application/strategic-merge-patch+json` (built-in kinds only).
    Strategic,
    /// `application/apply-patch+yaml` (server-side apply).
    Apply,
}

impl PatchType {
    /// Maps a Content-Type to a patch type; anything else is 415.
    pub fn from_content_type(ct: &str) -> ApiResult<PatchType> {
        match ct {
            "application/json-patch+json" => Ok(PatchType::Json),
            "application/merge-patch+json" => Ok(PatchType::Merge),
            "application/strategic-merge-patch+json" => Ok(PatchType::Strategic),
            "application/apply-patch+yaml" | "application/apply-patch+json" => Ok(PatchType::Apply),
            other => Err(ApiError::new(
                415,
                "UnsupportedMediaType",
                format!(
                    "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json (got {other:?})"
                ),
            )),
        }
    }
}

fn patch_failed(e: impl std::fmt::Display) -> ApiError {
    ApiError::new(
        422,
        "Invalid",
        format!("the patch could not be applied: {e}"),
    )
}

/// Applies a decoded patch of the given type to `current`.
pub fn apply_patch(
    info: &ResourceInfo,
    pt: PatchType,
    current: &Value,
    patch: &Value,
) -> ApiResult<Value> {
    match pt {
        PatchType::Json => {
            let p: json_patch::Patch = serde_json::from_value(patch.clone())
                .map_err(|e| ApiError::bad_request(format!("invalid JSON patch: {e}")))?;
            let mut doc = current.clone();
            // Operations run one by one so that a `test` for `null` on a missing path passes,
            // as it does in kube-apiserver (kube-runtime's finalizer helper relies on it).
            for op in p.0 {
                if let json_patch::PatchOperation::Test(t) = &op
                    && t.value.is_null()
                    && doc.pointer(t.path.as_str()).is_none()
                {
                    continue;
                }
                json_patch::patch(&mut doc, &[op]).map_err(patch_failed)?;
            }
            Ok(doc)
        }
        PatchType::Merge | PatchType::Apply => {
            if !patch.is_object() {
                return Err(ApiError::bad_request("a merge patch must be a JSON object"));
            }
            let mut doc = current.clone();
            json_patch::merge(&mut doc, patch);
            Ok(doc)
        }
        PatchType::Strategic => {
            if !info.builtin {
                return Err(ApiError::new(
                    415,
                    "UnsupportedMediaType",
                    format!(
                        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml (strategic merge patch is not supported for custom resources {})",
                        info.group_resource()
                    ),
                ));
            }
            if !patch.is_object() {
                return Err(ApiError::bad_request(
                    "a strategic merge patch must be a JSON object",
                ));
            }
            let r = match fleet_patch::strategic::schema_for(&info.api_version(), &info.kind) {
                Some(schema) => fleet_patch::strategic::apply(current, patch, schema),
                None => fleet_patch::strategic::apply_untyped(current, patch),
            };
            r.map_err(patch_failed)
        }
    }
}

/// PATCH handler.
#[allow(clippy::too_many_arguments)]
pub async fn patch(
    srv: &ApiServer,
    info: &ResourceInfo,
    ns: Option<&str>,
    name: &str,
    sub: Option<&str>,
    q: &Query,
    headers: &HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    let pt = PatchType::from_content_type(&content_type(headers))?;
    let bytes = read_body(body).await?;
    let patch: Value = match pt {
        PatchType::Apply => decode_json_or_yaml(&bytes)?,
        _ => serde_json::from_slice(&bytes)
            .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?,
    };
    if pt == PatchType::Apply {
        let manager = crate::http::field_manager::apply_manager(q, headers)?;
        if sub.is_none() && srv.store().get(&info.key(ns, name)).is_none() {
            let obj = crate::write::ssa::apply(info, None, &patch, name, &manager, q.force, None)?;
            match srv.create(info, ns, obj, q.dry_run).await {
                Ok(w) => return Ok(json_response(201, convert(info, &w.into_bytes()))),
                // Created concurrently: apply to it like to any existing object.
                Err(e) if e.reason == "AlreadyExists" => {}
                Err(e) => return Err(e),
            }
        }
        let w = srv
            .guaranteed_update(info, ns, name, sub, q.dry_run, |cur| {
                Ok(Some(crate::write::ssa::apply(
                    info,
                    Some(cur),
                    &patch,
                    name,
                    &manager,
                    q.force,
                    sub,
                )?))
            })
            .await?;
        return Ok(json_response(200, convert(info, &w.into_bytes())));
    }
    if q.force {
        return Err(ApiError::invalid(
            "meta.k8s.io",
            "PatchOptions",
            "",
            vec![crate::storage::errors::Cause {
                field: "force".into(),
                reason: "FieldValueForbidden",
                message: "Forbidden: may not be specified for non-apply patch".into(),
            }],
        ));
    }
    let manager = crate::http::field_manager::manager(q, headers, "PatchOptions")?;
    if sub == Some("scale") {
        let key = info.key(ns, name);
        let Some(cur) = srv.store().get(&key) else {
            return Err(ApiError::not_found(&info.group, &info.plural, name));
        };
        let v: Value =
            serde_json::from_slice(&cur.json()).map_err(|e| ApiError::internal(e.to_string()))?;
        let scale = scale_of(info, &v);
        let scale_info = scale_resource_info();
        let patched = apply_patch(&scale_info, pt, &scale, &patch)?;
        let out = write_scale(srv, info, ns, name, &patched, q.dry_run, &manager).await?;
        return Ok(json_response(200, out));
    }
    let w = srv
        .guaranteed_update(info, ns, name, sub, q.dry_run, |cur| {
            let new = apply_patch(info, pt, cur, &patch)?;
            Ok(Some(crate::write::ssa::track_update(
                info,
                Some(cur),
                new,
                &manager,
                sub,
            )))
        })
        .await?;
    Ok(json_response(200, convert(info, &w.into_bytes())))
}

fn scale_resource_info() -> ResourceInfo {
    ResourceInfo {
        group: "autoscaling".into(),
        version: "v1".into(),
        kind: "Scale".into(),
        list_kind: "ScaleList".into(),
        plural: "scale".into(),
        singular: "scale".into(),
        namespaced: true,
        status: false,
        scale: None,
        short_names: vec![],
        categories: vec![],
        builtin: true,
        schema: None,
        printer_columns: vec![],
    }
}

/// The `autoscaling/v1 Scale` view of an object.
pub fn scale_of(info: &ResourceInfo, obj: &Value) -> Value {
    let Some(paths) = &info.scale else {
        return json!({});
    };
    let spec = get_path(obj, &paths.spec_replicas)
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let status = get_path(obj, &paths.status_replicas)
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let selector = if info.builtin {
        obj.pointer("/spec/selector/matchLabels")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_default()
    } else {
        paths
            .label_selector
            .as_deref()
            .and_then(|p| get_path(obj, p))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let meta = obj.get("metadata").cloned().unwrap_or(json!({}));
    let mut m = Map::new();
    for f in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = meta.get(f) {
            m.insert(f.into(), v.clone());
        }
    }
    let mut status_obj = json!({"replicas": status});
    if !selector.is_empty() {
        status_obj["selector"] = json!(selector);
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": Value::Object(m),
        "spec": {"replicas": spec},
        "status": status_obj,
    })
}

/// Writes `spec.replicas` of a Scale into the object; answers the new Scale.
pub async fn write_scale(
    srv: &ApiServer,
    info: &ResourceInfo,
    ns: Option<&str>,
    name: &str,
    scale: &Value,
    dry_run: bool,
    manager: &str,
) -> ApiResult<Bytes> {
    let Some(paths) = info.scale.clone() else {
        return Err(ApiError::path_not_found("scale"));
    };
    let replicas = scale
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .ok_or_else(|| {
            ApiError::invalid(
                "autoscaling",
                "Scale",
                name,
                vec![crate::storage::errors::Cause::required("spec.replicas")],
            )
        })?;
    if replicas < 0 {
        return Err(ApiError::invalid(
            "autoscaling",
            "Scale",
            name,
            vec![crate::storage::errors::Cause::invalid(
                "spec.replicas",
                format!("Invalid value: {replicas}: must be greater than or equal to 0"),
            )],
        ));
    }
    let rv = meta_str(scale, "resourceVersion").map(str::to_string);
    let w = srv
        .guaranteed_update(info, ns, name, None, dry_run, |cur| {
            let mut new = cur.clone();
            set_path(&mut new, &paths.spec_replicas, json!(replicas));
            if let Some(rv) = &rv {
                meta_mut(&mut new).insert("resourceVersion".into(), json!(rv));
            }
            Ok(Some(crate::write::ssa::track_update(
                info,
                Some(cur),
                new,
                manager,
                Some("scale"),
            )))
        })
        .await?;
    let v: Value = match w {
        Written::Stored(o) => {
            serde_json::from_slice(&o.json()).map_err(|e| ApiError::internal(e.to_string()))?
        }
        Written::Unstored(v) => v,
    };
    Ok(Bytes::from(
        serde_json::to_vec(&scale_of(info, &v)).unwrap_or_default(),
    ))
}
