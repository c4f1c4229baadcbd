// Shared helpers for the rest_* test modules.
#![allow(dead_code)]

use axum::Router;
use axum::body::Body;
use axum::http::Request;
use fleet_apiserver::{ApiServer, ApiServerConfig};
use http_body_util::BodyExt;
use serde_json::Value;
use tower::ServiceExt;

pub async fn server() -> ApiServer {
    ApiServer::new(ApiServerConfig::in_memory())
        .await
        .expect("server starts")
}

pub fn client(srv: &ApiServer) -> kube::Client {
    kube::Client::new(srv.router(), "default")
}

/// One raw request against the router; returns (status, body bytes).
pub async fn raw(
    router: &Router,
    method: &str,
    uri: &str,
    ct: Option<&str>,
    body: Vec<u8>,
) -> (u16, Vec<u8>) {
    let mut b = Request::builder().method(method).uri(uri);
    if let Some(ct) = ct {
        b = b.header("content-type", ct);
    }
    send(router, b.body(Body::from(body)).expect("request")).await
}

/// Sends `req` through the router (no socket); returns (status, body bytes).
pub async fn send(router: &Router, req: Request<Body>) -> (u16, Vec<u8>) {
    let resp = router.clone().oneshot(req).await.expect("infallible");
    let code = resp.status().as_u16();
    let bytes = resp
        .into_body()
        .collect()
        .await
        .map(|c| c.to_bytes().to_vec())
        .unwrap_or_default();
    (code, bytes)
}

/// A raw request whose body is JSON; returns (status, parsed body or Null).
pub async fn call(
    router: &Router,
    method: &str,
    uri: &str,
    ct: Option<&str>,
    body: &str,
) -> (u16, Value) {
    let (code, bytes) = raw(router, method, uri, ct, body.as_bytes().to_vec()).await;
    (code, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

/// Polls `f` until it returns true (or ~5 s pass).
pub async fn eventually<F, Fut>(mut f: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..100 {
        if f().await {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    false
}
