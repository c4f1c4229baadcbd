//! `/openapi/v3`: one OpenAPI 3.0 document per group-version, with the schema of every kind it
//! serves under `components.schemas`, tagged `x-kubernetes-group-version-kind`. This is what
//! `kubectl explain` reads. Built-in schemas come from k8s-openapi (schemars, generated once per
//! process); a CRD's come from its `openAPIV3Schema`, with `apiVersion`, `kind` and `metadata`
//! added as kube-apiserver does.
//!
//! Each kind gets one path, `.../{name}`, with only a `get` operation tagged with its
//! group-version-kind: that is how `kubectl explain` maps a resource to its schema. There are no
//! PATCH operations on purpose: kubectl decides from a PATCH operation whether to compute
//! strategic merge patches from OpenAPI v3, and without one it keeps using its compiled-in patch
//! metadata, which is exact for the built-in kinds.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use axum::Extension;
use axum::extract::Path;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::{Map, Value, json};

use crate::http::json_response;
use crate::state::ApiServer;
use crate::storage::errors::ApiError;

use crate::storage::schema::{get_path, gv_path, gvk};

/// A document and the hash clients cache it under.
struct Doc {
    body: Bytes,
    hash: String,
}

/// Paths and schemas of one group-version.
#[derive(Default)]
struct Parts {
    paths: Map<String, Value>,
    schemas: Map<String, Value>,
}

fn doc(parts: Parts) -> Doc {
    let Parts { paths, schemas } = parts;
    let v = json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.33.0"},
        "paths": paths,
        "components": {"schemas": schemas},
    });
    let body = Bytes::from(serde_json::to_vec(&v).unwrap_or_default());
    // A cache key for clients (kubectl keys its disk cache by this URL), not a security check.
    let mut h = std::hash::DefaultHasher::new();
    std::hash::Hash::hash(&body[..], &mut h);
    let hash = format!("{:016X}", std::hash::Hasher::finish(&h));
    Doc { body, hash }
}

/// The built-in documents by group-version path, generated on first use.
fn builtin_docs() -> &'static BTreeMap<String, Doc> {
    static DOCS: OnceLock<BTreeMap<String, Doc>> = OnceLock::new();
    DOCS.get_or_init(|| {
        let mut by_gv: BTreeMap<String, Parts> = BTreeMap::new();
        for k in crate::storage::builtin::builtin_schemas() {
            let e = by_gv.entry(k.gv_path).or_default();
            e.schemas.extend(k.components);
            e.paths.extend(k.paths);
        }
        by_gv.into_iter().map(|(gv, s)| (gv, doc(s))).collect()
    })
}

/// `io.k8s.apimachinery.pkg.apis.meta.v1.*` schemas (ObjectMeta and what it refers to), which
/// every CRD document needs for `metadata`.
fn meta_schemas() -> &'static Map<String, Value> {
    static META: OnceLock<Map<String, Value>> = OnceLock::new();
    META.get_or_init(|| {
        let mut out = Map::new();
        for k in crate::storage::builtin::builtin_schemas() {
            if k.gv_path != "api/v1" {
                continue;
            }
            for (name, s) in k.components {
                if name.starts_with("io.k8s.apimachinery.pkg.apis.meta.v1.") {
                    out.insert(name, s);
                }
            }
        }
        out
    })
}

/// `io.cattle.fleet.v1alpha1.GitRepo` for group `fleet.cattle.io`: kube-apiserver's name for a
/// CRD kind's schema (reversed group, version, kind).
fn crd_schema_name(group: &str, version: &str, kind: &str) -> String {
    let mut parts: Vec<&str> = group.split('.').collect();
    parts.reverse();
    format!("{}.{version}.{kind}", parts.join("."))
}

/// Schemas of every served CRD version, grouped by group-version path.
fn crd_schemas(srv: &ApiServer) -> BTreeMap<String, Parts> {
    let mut out: BTreeMap<String, Parts> = BTreeMap::new();
    let Ok(page) = srv.store().list(
        "/apiextensions.k8s.io/customresourcedefinitions/",
        None,
        None,
        None,
        &|_, _| true,
    ) else {
        return out;
    };
    for (_, obj) in page.items {
        let Ok(crd) = serde_json::from_slice::<Value>(&obj.json()) else {
            continue;
        };
        let group = crd
            .pointer("/spec/group")
            .and_then(Value::as_str)
            .unwrap_or("");
        let kind = crd
            .pointer("/spec/names/kind")
            .and_then(Value::as_str)
            .unwrap_or("");
        let plural = crd
            .pointer("/spec/names/plural")
            .and_then(Value::as_str)
            .unwrap_or("");
        let namespaced = crd.pointer("/spec/scope").and_then(Value::as_str) != Some("Cluster");
        if group.is_empty() || kind.is_empty() || plural.is_empty() {
            continue;
        }
        for v in crd
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if v.get("served").and_then(Value::as_bool) != Some(true) {
                continue;
            }
            let Some(version) = v.get("name").and_then(Value::as_str) else {
                continue;
            };
            let mut schema = v
                .pointer("/schema/openAPIV3Schema")
                .cloned()
                .filter(Value::is_object)
                .unwrap_or_else(
                    || json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
                );
            if let Some(m) = schema.as_object_mut() {
                let props = m.entry("properties").or_insert_with(|| json!({}));
                if let Some(p) = props.as_object_mut() {
                    p.insert("apiVersion".into(), json!({"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"}));
                    p.insert("kind".into(), json!({"type": "string", "description": "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"}));
                    p.insert("metadata".into(), json!({"allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}], "description": "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"}));
                }
                m.insert(
                    "x-kubernetes-group-version-kind".into(),
                    gvk(group, version, kind),
                );
            }
            let entry = out.entry(gv_path(group, version)).or_default();
            if entry.schemas.is_empty() {
                entry.schemas.extend(meta_schemas().clone());
            }
            let name = crd_schema_name(group, version, kind);
            let (path, item) = get_path(group, version, kind, plural, namespaced, &name);
            entry.paths.insert(path, item);
            entry.schemas.insert(name, schema);
        }
    }
    out
}

/// `GET /openapi/v3`: the group-versions and where their documents are.
pub async fn index(Extension(srv): Extension<ApiServer>) -> Response {
    let mut paths = Map::new();
    for (gv, d) in builtin_docs() {
        paths.insert(gv.clone(), url(gv, &d.hash));
    }
    for (gv, s) in crd_schemas(&srv) {
        let d = doc(s);
        paths.insert(gv.clone(), url(&gv, &d.hash));
    }
    let body = serde_json::to_vec(&json!({"paths": paths})).unwrap_or_default();
    json_response(200, Bytes::from(body))
}

fn url(gv: &str, hash: &str) -> Value {
    json!({"serverRelativeURL": format!("/openapi/v3/{gv}?hash={hash}")})
}

/// `GET /openapi/v3/api/v1`, `GET /openapi/v3/apis/GROUP/VERSION`: one document.
pub async fn group_version(
    Extension(srv): Extension<ApiServer>,
    Path(gv): Path<String>,
) -> Response {
    let gv = gv.trim_end_matches('/');
    if let Some(d) = builtin_docs().get(gv) {
        return json_response(200, d.body.clone());
    }
    match crd_schemas(&srv).remove(gv) {
        Some(s) => json_response(200, doc(s).body),
        None => ApiError::new(
            404,
            "NotFound",
            format!("the server could not find the requested resource: /openapi/v3/{gv}"),
        )
        .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_documents_name_every_kind() {
        let docs = builtin_docs();
        let apps: Value = serde_json::from_slice(&docs["apis/apps/v1"].body).unwrap();
        let d = &apps["components"]["schemas"]["io.k8s.api.apps.v1.Deployment"];
        assert_eq!(
            d["x-kubernetes-group-version-kind"],
            json!([{"group": "apps", "kind": "Deployment", "version": "v1"}])
        );
        assert!(
            apps["components"]["schemas"]["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]
                ["replicas"]
                .is_object()
        );
        let core: Value = serde_json::from_slice(&docs["api/v1"].body).unwrap();
        assert!(core["components"]["schemas"]["io.k8s.api.core.v1.ConfigMap"].is_object());
        // Every $ref resolves inside its own document.
        for (gv, d) in docs {
            let v: Value = serde_json::from_slice(&d.body).unwrap();
            let schemas = &v["components"]["schemas"];
            let text = String::from_utf8_lossy(&d.body);
            for r in text.split("\"$ref\":\"#/components/schemas/").skip(1) {
                let name = r.split('"').next().unwrap_or("");
                assert!(schemas.get(name).is_some(), "{gv}: dangling $ref {name}");
            }
        }
    }

    #[test]
    fn crd_names() {
        assert_eq!(
            crd_schema_name("fleet.cattle.io", "v1alpha1", "GitRepo"),
            "io.cattle.fleet.v1alpha1.GitRepo"
        );
    }
}
