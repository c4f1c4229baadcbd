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
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    let resources: Vec<Value> = infos.iter().flat_map(|i| resource_entries(i)).collect();
    Ok(js(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}),
    ))
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
