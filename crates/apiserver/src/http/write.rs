//! POST, PUT, DELETE and DELETE-collection: decode the body, delegate to the write path
//! (`write::crud`), answer with the stored object.

use axum::body::Body;
use axum::http::HeaderMap;
use axum::response::Response;
use bytes::{BufMut, BytesMut};
use serde_json::{Value, json};

use super::json_response;
use super::read::{Selectors, convert};
use crate::http::request::{Query, content_type, decode_object, read_body};
use crate::state::ApiServer;
use crate::storage::errors::{ApiError, ApiResult};
use crate::storage::registry::{ResourceInfo, split_key};
use crate::write::crud::{DeleteOpts, Propagation, Written};

fn respond(info: &ResourceInfo, code: u16, w: Written) -> Response {
    json_response(code, convert(info, &w.into_bytes()))
}

/// POST: create an object in a collection.
pub async fn create(
    srv: &ApiServer,
    info: &ResourceInfo,
    ns: Option<&str>,
    q: &Query,
    headers: &HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    let bytes = read_body(body).await?;
    let obj = decode_object(&bytes, &content_type(headers))?;
    if info.namespaced && ns.is_none() {
        return Err(ApiError::method_not_allowed(format!(
            "POST is not allowed on the cluster-wide {} collection; use /namespaces/{{namespace}}/{}",
            info.plural, info.plural
        )));
    }
    let manager = crate::http::field_manager::manager(q, headers, "CreateOptions")?;
    let obj = crate::write::ssa::track_update(info, None, obj, &manager, None);
    let w = srv.create(info, ns, obj, q.dry_run).await?;
    Ok(respond(info, 201, w))
}

/// PUT: replace an object (or its status / a namespace's finalizers / the scale).
#[allow(clippy::too_many_arguments)]
pub async fn update(
    srv: &ApiServer,
    info: &ResourceInfo,
    ns: Option<&str>,
    name: &str,
    sub: Option<&str>,
    q: &Query,
    headers: &HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    let bytes = read_body(body).await?;
    let media_type = content_type(headers);
    let obj = decode_object(&bytes, &media_type)?;
    crate::write::crud::check_name_matches(&obj, name)?;
    let manager = crate::http::field_manager::manager(q, headers, "UpdateOptions")?;
    if sub == Some("scale") {
        let w =
            crate::http::patch::write_scale(srv, info, ns, name, &obj, q.dry_run, &manager).await?;
        return Ok(json_response(200, w));
    }
    // The decoded body goes to the first attempt as is; a retry after a conflicting concurrent
    // write (rare) decodes it again rather than every request paying for a copy.
    let mut first = Some(obj);
    let w = srv
        .guaranteed_update(info, ns, name, sub, q.dry_run, |cur| {
            let obj = match first.take() {
                Some(o) => o,
                None => decode_object(&bytes, &media_type)?,
            };
            Ok(Some(crate::write::ssa::track_update(
                info,
                Some(cur),
                obj,
                &manager,
                sub,
            )))
        })
        .await?;
    Ok(respond(info, 200, w))
}

/// Reads `DeleteOptions` from the query and an optional JSON body.
async fn delete_opts(q: &Query, body: Body) -> ApiResult<DeleteOpts> {
    let bytes = read_body(body).await?;
    let mut opts = DeleteOpts {
        dry_run: q.dry_run,
        ..DeleteOpts::default()
    };
    let mut policy = q.propagation_policy.clone();
    let mut orphan = q.orphan_dependents;
    if !bytes.iter().all(u8::is_ascii_whitespace) {
        let v: Value = crate::http::request::decode_json_or_yaml(&bytes)?;
        if let Some(p) = v.get("propagationPolicy").and_then(Value::as_str) {
            policy = Some(p.to_string());
        }
        if let Some(o) = v.get("orphanDependents").and_then(Value::as_bool) {
            orphan = Some(o);
        }
        if let Some(u) = v.pointer("/preconditions/uid").and_then(Value::as_str) {
            opts.uid = Some(u.to_string());
        }
        if let Some(r) = v
            .pointer("/preconditions/resourceVersion")
            .and_then(Value::as_str)
        {
            opts.resource_version = Some(crate::write::crud::parse_rv(r)?);
        }
        if let Some(d) = v.get("dryRun").and_then(Value::as_array)
            && d.iter().any(|x| x == "All")
        {
            opts.dry_run = true;
        }
    }
    opts.propagation = match (policy.as_deref(), orphan) {
        (Some("Foreground"), _) => Propagation::Foreground,
        (Some("Orphan"), _) => Propagation::Orphan,
        (Some("Background"), _) => Propagation::Background,
        (Some(other), _) => {
            return Err(ApiError::invalid(
                "meta.k8s.io",
                "DeleteOptions",
                "",
                vec![crate::storage::errors::Cause {
                    field: "propagationPolicy".into(),
                    reason: "FieldValueNotSupported",
                    message: format!(
                        "Unsupported value: {other:?}: supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
                    ),
                }],
            ));
        }
        (None, Some(true)) => Propagation::Orphan,
        (None, _) => Propagation::Background,
    };
    Ok(opts)
}

/// DELETE one object.
pub async fn delete(
    srv: &ApiServer,
    info: &ResourceInfo,
    ns: Option<&str>,
    name: &str,
    q: &Query,
    body: Body,
) -> ApiResult<Response> {
    let opts = delete_opts(q, body).await?;
    let w = srv.delete(info, ns, name, &opts).await?;
    Ok(respond(info, 200, w))
}

/// DELETE a collection (with selectors); answers the list of deleted objects.
pub async fn delete_collection(
    srv: &ApiServer,
    info: &ResourceInfo,
    ns: Option<&str>,
    q: &Query,
    body: Body,
) -> ApiResult<Response> {
    let opts = delete_opts(q, body).await?;
    let sel = Selectors::parse(info, q)?;
    let page = srv
        .store()
        .list(&info.prefix(ns), None, None, None, &|k, o| {
            sel.matches(k, o)
        })
        .map_err(|e| ApiError::from_store(e, &info.group, &info.plural, ""))?;
    let mut out = BytesMut::new();
    out.put_slice(
        format!(
            "{{\"kind\":{},\"apiVersion\":{},\"metadata\":{{\"resourceVersion\":\"{}\"}},\"items\":[",
            json!(info.list_kind),
            json!(info.api_version()),
            page.rev
        )
        .as_bytes(),
    );
    let mut first = true;
    for (key, _) in &page.items {
        let (kns, name) = split_key(key);
        let kns = if info.namespaced { Some(kns) } else { None };
        match srv.delete(info, kns, name, &opts).await {
            Ok(w) => {
                if !first {
                    out.put_u8(b',');
                }
                first = false;
                out.put_slice(&convert(info, &w.into_bytes()));
            }
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    out.put_slice(b"]}");
    Ok(json_response(200, out.freeze()))
}
