//! Discovery (`/api`, `/apis`, `/api/v1`, `/apis/G[/V]`), `/version`, `/openapi/v2` and the
//! health endpoints, shaped so kubectl, kube-rs and the python client work unmodified.

use axum::Extension;
use axum::Router;
use axum::extract::RawQuery;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bytes::Bytes;
use serde_json::{Value, json};

use crate::http::json_response;
use crate::state::ApiServer;
use crate::storage::errors::{ApiError, ApiResult};
use crate::storage::registry::ResourceInfo;

fn js(v: Value) -> Response {
    json_response(200, Bytes::from(serde_json::to_vec(&v).unwrap_or_default()))
}

/// Fixed routes; resource paths fall through to the dispatcher.
pub fn routes() -> Router {
    Router::new()
        .route("/version", get(version))
        .route("/version/", get(version))
        .route("/api", get(api_versions))
        .route("/api/", get(api_versions))
        .route("/apis", get(api_groups))
        .route("/apis/", get(api_groups))
        .route("/openapi/v2", get(openapi_v2))
        .route("/openapi/v3", get(crate::http::openapi::index))
        .route(
            "/openapi/v3/{*gv}",
            get(crate::http::openapi::group_version),
        )
        .route("/healthz", get(health))
        .route("/livez", get(health))
        .route("/readyz", get(health))
        .route("/healthz/{check}", get(health_check))
        .route("/livez/{check}", get(health_check))
        .route("/readyz/{check}", get(health_check))
}

async fn version(Extension(srv): Extension<ApiServer>) -> Response {
    let gv = srv.inner.cfg.git_version.clone();
    let minor = gv
        .trim_start_matches('v')
        .split('.')
        .nth(1)
        .unwrap_or("33")
        .to_string();
    js(json!({
        "major": "1",
        "minor": minor,
        "gitVersion": gv,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.24.0",
        "compiler": "gc",
        "platform": format!("{}/{}", std::env::consts::OS, if cfg!(target_arch = "x86_64") { "amd64" } else if cfg!(target_arch = "aarch64") { "arm64" } else { std::env::consts::ARCH }),
    }))
}

async fn api_versions() -> Response {
    js(json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}],
    }))
}

fn group_json(name: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
        .collect();
    let preferred = vs.first().cloned().unwrap_or(json!({}));
    json!({"name": name, "versions": vs, "preferredVersion": preferred})
}

async fn api_groups(Extension(srv): Extension<ApiServer>) -> Response {
    let groups: Vec<Value> = srv
        .registry()
        .groups()
        .into_iter()
        .filter(|(g, _)| !g.is_empty())
        .chain(crate::http::authn_reviews::discovery_groups())
        .map(|(g, vs)| group_json(&g, &vs))
        .collect();
    js(json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}))
}

/// `/apis/G`: one group.
pub fn group(srv: &ApiServer, group: &str) -> ApiResult<Response> {
    match srv
        .registry()
        .groups()
        .into_iter()
        .chain(crate::http::authn_reviews::discovery_groups())
        .find(|(g, _)| g == group && !g.is_empty())
    {
        Some((g, vs)) => {
            let mut v = group_json(&g, &vs);
            v["kind"] = json!("APIGroup");
            v["apiVersion"] = json!("v1");
            Ok(js(v))
        }
        None => Err(ApiError::path_not_found(&format!("/apis/{group}"))),
    }
}

const VERBS: [&str; 8] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

fn resource_entries(info: &ResourceInfo) -> Vec<Value> {
    let mut main = json!({
        "name": info.plural,
        "singularName": info.singular,
        "namespaced": info.namespaced,
        "kind": info.kind,
        "verbs": if crate::storage::review_kinds::is_review(info) { &["create"][..] } else { &VERBS[..] },
    });
    if !info.short_names.is_empty() {
        main["shortNames"] = json!(info.short_names);
    }
    if !info.categories.is_empty() {
        main["categories"] = json!(info.categories);
    }
    let mut out = vec![main];
    if info.status {
        out.push(json!({"name": format!("{}/status", info.plural), "singularName": "", "namespaced": info.namespaced, "kind": info.kind, "verbs": ["get", "patch", "update"]}));
    }
    if info.scale.is_some() {
        out.push(json!({"name": format!("{}/scale", info.plural), "singularName": "", "namespaced": info.namespaced, "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"]}));
    }
    if info.builtin && info.group.is_empty() && info.kind == "Namespace" {
        out.push(json!({"name": "namespaces/finalize", "singularName": "", "namespaced": false, "kind": "Namespace", "verbs": ["update"]}));
    }
    if info.builtin && info.group.is_empty() && info.kind == "ServiceAccount" {
        out.push(json!({"name": "serviceaccounts/token", "singularName": "", "namespaced": true, "group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest", "verbs": ["create"]}));
    }
    out
}

/// `/api/v1` and `/apis/G/V`: the resources of one group version.
pub fn group_version(srv: &ApiServer, group: &str, version: &str) -> ApiResult<Response> {
    let infos = srv.registry().resources(group, version);
    if let Some(resources) = crate::http::authn_reviews::discovery_resources(group, version) {
        return Ok(js(
            json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": format!("{group}/{version}"), "resources": resources}),
        ));
    }
    if infos.is_empty() {
        let p = if group.is_empty() {
            format!("/api/{version}")
        } else {
            format!("/apis/{group}/{version}")
        };
        return Err(ApiError::path_not_found(&p));
    }
    let body = GROUP_VERSION_DOCS.get_or_render(group, version, infos, |infos| {
        let gv = if group.is_empty() {
            version.to_string()
        } else {
            format!("{group}/{version}")
        };
        let resources: Vec<Value> = infos.iter().flat_map(|i| resource_entries(i)).collect();
        Bytes::from(
            serde_json::to_vec(&json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}))
                .unwrap_or_default(),
        )
    });
    Ok(json_response(200, body))
}

/// The last `/api/v1` or `/apis/G/V` document rendered for each group version, with the
/// resources it was rendered from. Why: every agent reads the discovery of its cluster when it
/// starts, and the built-in resources are one table shared by every API server of the process
/// (`Registry::with_builtins`), so thousands of in-process servers render the same documents;
/// a document is reused only for the very same resources (the same `Arc`s, in the same order),
/// so a CRD served, changed or removed renders it again.
struct GroupVersionDocs(std::sync::Mutex<std::collections::HashMap<(String, String), Rendered>>);

/// A rendered document and the resources it was rendered from.
type Rendered = (Vec<std::sync::Arc<ResourceInfo>>, Bytes);

static GROUP_VERSION_DOCS: std::sync::LazyLock<GroupVersionDocs> =
    std::sync::LazyLock::new(|| GroupVersionDocs(Default::default()));

impl GroupVersionDocs {
    fn get_or_render(
        &self,
        group: &str,
        version: &str,
        infos: Vec<std::sync::Arc<ResourceInfo>>,
        render: impl FnOnce(&[std::sync::Arc<ResourceInfo>]) -> Bytes,
    ) -> Bytes {
        let same = |a: &[std::sync::Arc<ResourceInfo>]| {
            a.len() == infos.len()
                && a.iter()
                    .zip(&infos)
                    .all(|(x, y)| std::sync::Arc::ptr_eq(x, y))
        };
        let key = (group.to_string(), version.to_string());
        let mut docs = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((rendered_from, body)) = docs.get(&key)
            && same(rendered_from)
        {
            return body.clone();
        }
        let body = render(&infos);
        docs.insert(key, (infos, body.clone()));
        body
    }
}

/// kubectl validates with OpenAPI v2 and only needs a well-formed document: an empty protobuf
/// body (a valid empty gnostic Document) makes it skip validation of unknown kinds. JSON callers
/// get a minimal Swagger document.
async fn openapi_v2(headers: HeaderMap) -> Response {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if accept.contains("protobuf") {
        let mut r = (StatusCode::OK, Bytes::new()).into_response();
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/com.github.proto-openapi.spec.v2.v1.0+protobuf"),
        );
        return r;
    }
    js(
        json!({"swagger": "2.0", "info": {"title": "Kubernetes", "version": "v1.33.0"}, "paths": {}, "definitions": {}}),
    )
}

const CHECKS: [&str; 4] = ["ping", "log", "etcd", "poststarthook/crd-informer-synced"];

fn text(code: StatusCode, body: String) -> Response {
    let mut r = (code, body).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r.headers_mut().insert(
        "X-Content-Type-Options",
        HeaderValue::from_static("nosniff"),
    );
    r
}

async fn health(uri: axum::http::Uri, RawQuery(q): RawQuery) -> Response {
    let verbose = q.as_deref().is_some_and(|q| {
        q.split('&')
            .any(|p| p == "verbose" || p.starts_with("verbose="))
    });
    if !verbose {
        return text(StatusCode::OK, "ok".into());
    }
    let name = uri.path().trim_start_matches('/').to_string();
    let mut body = String::new();
    for c in CHECKS {
        body.push_str(&format!("[+]{c} ok\n"));
    }
    body.push_str(&format!("{name} check passed\n"));
    text(StatusCode::OK, body)
}

async fn health_check(axum::extract::Path(check): axum::extract::Path<String>) -> Response {
    if CHECKS
        .iter()
        .any(|c| c.rsplit('/').next() == Some(check.as_str()) || *c == check)
    {
        text(StatusCode::OK, "ok".into())
    } else {
        text(
            StatusCode::NOT_FOUND,
            format!("404 page not found: no health check {check:?}\n"),
        )
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn a_group_version_document_is_reused_only_for_the_same_resources() {
        let docs = GroupVersionDocs(Default::default());
        let builtins = crate::storage::builtin::builtin_resources();
        let a = Arc::new(builtins[0].clone());
        let b = Arc::new(builtins[1].clone());
        let renders = AtomicUsize::new(0);
        let get = |infos: Vec<Arc<ResourceInfo>>| {
            docs.get_or_render("g", "v1", infos, |i| {
                renders.fetch_add(1, Ordering::Relaxed);
                Bytes::from(
                    i.iter()
                        .map(|x| x.plural.as_str())
                        .collect::<Vec<_>>()
                        .join(","),
                )
            })
        };
        let first = get(vec![a.clone(), b.clone()]);
        assert_eq!(get(vec![a.clone(), b.clone()]), first);
        assert_eq!(renders.load(Ordering::Relaxed), 1, "the same Arcs: reused");
        // Another server's resource of equal content, one resource fewer, another order: each
        // renders again, and what it renders is its own list.
        let a2 = Arc::new(builtins[0].clone());
        assert_eq!(get(vec![a2, b.clone()]), first);
        assert_eq!(renders.load(Ordering::Relaxed), 2);
        assert_eq!(get(vec![a.clone()]), Bytes::from(a.plural.clone()));
        assert_eq!(
            get(vec![b.clone(), a.clone()]),
            Bytes::from(format!("{},{}", b.plural, a.plural))
        );
        assert_eq!(renders.load(Ordering::Relaxed), 4);
        // Per group version.
        let other = docs.get_or_render("g", "v2", vec![a.clone()], |_| Bytes::from("v2"));
        assert_eq!(other, Bytes::from("v2"));
    }
}
