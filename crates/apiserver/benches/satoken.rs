//! Per-request cost of service-account authentication (harness = false):
//! `cargo bench -p fleet-apiserver --bench satoken`.
//!
//! An in-memory server with 1,000 ServiceAccounts (and a legacy token Secret for one of them);
//! prints the median nanoseconds per `Authenticator::authenticate_token` for a bound token
//! (signature cache warm: store lookups only), a legacy Secret token, the static admin token, and
//! the uncached ES256 verification that a cache miss costs. Environment: SATOKEN_BENCH_RUNS
//! (default 15), SATOKEN_BENCH_ITERS (calls per run, default 20000).

use std::hint::black_box;
use std::time::{Duration, Instant};

use fleet_apiserver::auth::{Authenticator, UserInfo};
use fleet_apiserver::satoken::VerifyOptions;
use fleet_apiserver::{ApiServer, ApiServerConfig};
use serde_json::{Value, json};
use tower::ServiceExt;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

async fn post(app: &axum::Router, uri: &str, body: Value) -> Value {
    let req = axum::http::Request::builder()
        .method("POST")
        .uri(uri)
        .header("content-type", "application/json")
        .body(axum::body::Body::from(body.to_string()))
        .unwrap_or_default();
    let Ok(resp) = app.clone().oneshot(req).await;
    let bytes = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .map(|c| c.to_bytes())
        .unwrap_or_default();
    serde_json::from_slice(&bytes).unwrap_or(Value::Null)
}

fn median_ns(runs: usize, iters: usize, mut f: impl FnMut() -> bool) -> f64 {
    let mut samples: Vec<f64> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..iters {
                if !black_box(f()) {
                    eprintln!("authentication unexpectedly failed");
                    std::process::exit(1);
                }
            }
            t.elapsed().as_nanos() as f64 / iters as f64
        })
        .collect();
    samples.sort_by(|a, b| a.total_cmp(b));
    samples[samples.len() / 2]
}

fn main() {
    let runs = env_usize("SATOKEN_BENCH_RUNS", 15);
    let iters = env_usize("SATOKEN_BENCH_ITERS", 20000);
    let rt = tokio::runtime::Runtime::new().unwrap_or_else(|e| {
        eprintln!("runtime: {e}");
        std::process::exit(1)
    });
    let (srv, token, legacy) = rt.block_on(async {
        let srv = ApiServer::new(ApiServerConfig::in_memory())
            .await
            .unwrap_or_else(|e| {
                eprintln!("server: {e}");
                std::process::exit(1)
            });
        let app = srv.router();
        for i in 0..1000 {
            post(
                &app,
                "/api/v1/namespaces/default/serviceaccounts",
                json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": format!("agent-{i}")}}),
            )
            .await;
        }
        let tr = post(
            &app,
            "/api/v1/namespaces/default/serviceaccounts/agent-500/token",
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}),
        )
        .await;
        let token = tr["status"]["token"].as_str().unwrap_or_default().to_string();
        post(
            &app,
            "/api/v1/namespaces/default/secrets",
            json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
                "metadata": {"name": "agent-7-token", "annotations": {"kubernetes.io/service-account.name": "agent-7"}}}),
        )
        .await;
        let mut legacy = String::new();
        for _ in 0..200 {
            let s = srv.router().oneshot(
                axum::http::Request::builder()
                    .uri("/api/v1/namespaces/default/secrets/agent-7-token")
                    .body(axum::body::Body::empty())
                    .unwrap_or_default(),
            );
            let Ok(resp) = s.await;
            let bytes = http_body_util::BodyExt::collect(resp.into_body())
                .await
                .map(|c| c.to_bytes())
                .unwrap_or_default();
            let v: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            if let Some(t) = v["data"]["token"].as_str() {
                use base64::Engine;
                legacy = String::from_utf8(
                    base64::engine::general_purpose::STANDARD
                        .decode(t)
                        .unwrap_or_default(),
                )
                .unwrap_or_default();
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        (srv, token, legacy)
    });
    if token.is_empty() || legacy.is_empty() {
        eprintln!("could not obtain tokens");
        std::process::exit(1);
    }
    let admin = UserInfo::authenticated("admin", &["system:masters"]);
    let auth = Authenticator::new(vec![("static-admin-token-0123456789".into(), admin)])
        .with_verifier(srv.service_account_authenticator());

    let bound = median_ns(runs, iters, || auth.authenticate_token(&token).is_some());
    let legacy_ns = median_ns(runs, iters, || auth.authenticate_token(&legacy).is_some());
    let static_ns = median_ns(runs, iters, || {
        auth.authenticate_token("static-admin-token-0123456789")
            .is_some()
    });
    let cfg = srv.service_account_config();
    let opts = VerifyOptions {
        issuer: cfg.issuer.clone(),
        audiences: cfg.api_audiences.clone(),
        accept_legacy: true,
        now: jiff::Timestamp::now().as_second(),
    };
    let key = srv.service_account_key();
    let verify = median_ns(runs, (iters / 10).max(1), || {
        key.verify(&token, &opts).is_ok()
    });
    println!("satoken: {runs} runs, median ns per call (1000 ServiceAccounts in the store)");
    println!("  bound token, signature cached (store uid checks):  {bound:>9.0} ns");
    println!("  legacy Secret token, signature cached:            {legacy_ns:>9.0} ns");
    println!("  static admin token:                               {static_ns:>9.0} ns");
    println!("  ES256 verify on a cache miss (no store checks):   {verify:>9.0} ns");
    srv.shutdown();
}
