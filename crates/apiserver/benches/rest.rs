//! REST-layer benchmarks through the in-process router (no socket, in-memory store): create,
//! get, list (plain and label-selected), patch, and watch fan-out latency. Prints medians.
//!
//! Run: `cargo bench -p fleet-apiserver --bench rest`

use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::http::Request;
use fleet_apiserver::{ApiServer, ApiServerConfig};
use http_body_util::BodyExt;
use tower::ServiceExt;

async fn req(r: &Router, method: &str, uri: &str, ct: Option<&str>, body: Vec<u8>) -> (u16, usize) {
    let mut b = Request::builder().method(method).uri(uri);
    if let Some(ct) = ct {
        b = b.header("content-type", ct);
    }
    let resp = r
        .clone()
        .oneshot(b.body(Body::from(body)).expect("request"))
        .await
        .expect("infallible");
    let code = resp.status().as_u16();
    let n = resp
        .into_body()
        .collect()
        .await
        .map(|c| c.to_bytes().len())
        .unwrap_or(0);
    (code, n)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

fn cm(name: &str, i: usize) -> Vec<u8> {
    format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","labels":{{"app":"bench","shard":"s{}"}}}},"data":{{"key":"{}"}}}}"#,
        i % 10,
        "v".repeat(200)
    )
    .into_bytes()
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let srv = ApiServer::new(ApiServerConfig::in_memory()).await.expect("server");
        let r = srv.router();
        let base = "/api/v1/namespaces/default/configmaps";
        const N: usize = 1000;

        let mut t = Vec::with_capacity(N);
        for i in 0..N {
            let s = Instant::now();
            let (code, _) = req(&r, "POST", base, Some("application/json"), cm(&format!("cm-{i:05}"), i)).await;
            assert_eq!(code, 201);
            t.push(s.elapsed());
        }
        println!("create configmap            median {:>10.1?}  (n={N})", median(t));

        let mut t = Vec::new();
        for i in 0..N {
            let s = Instant::now();
            let (code, _) = req(&r, "GET", &format!("{base}/cm-{i:05}"), None, vec![]).await;
            assert_eq!(code, 200);
            t.push(s.elapsed());
        }
        println!("get configmap               median {:>10.1?}  (n={N})", median(t));

        let mut t = Vec::new();
        for i in 0..N / 2 {
            let s = Instant::now();
            let (code, _) = req(
                &r,
                "PATCH",
                &format!("{base}/cm-{i:05}"),
                Some("application/merge-patch+json"),
                format!(r#"{{"data":{{"n":"{i}"}}}}"#).into_bytes(),
            )
            .await;
            assert_eq!(code, 200);
            t.push(s.elapsed());
        }
        println!("merge-patch configmap       median {:>10.1?}  (n={})", median(t), N / 2);

        let mut t = Vec::new();
        let mut bytes = 0;
        for _ in 0..50 {
            let s = Instant::now();
            let (code, n) = req(&r, "GET", base, None, vec![]).await;
            assert_eq!(code, 200);
            bytes = n;
            t.push(s.elapsed());
        }
        println!("list 1000 configmaps        median {:>10.1?}  ({bytes} bytes)", median(t));

        let mut t = Vec::new();
        for _ in 0..50 {
            let s = Instant::now();
            let (code, _) = req(&r, "GET", &format!("{base}?labelSelector=shard%3Ds3"), None, vec![]).await;
            assert_eq!(code, 200);
            t.push(s.elapsed());
        }
        println!("list labelSelector (100/1k) median {:>10.1?}", median(t));

        let mut t = Vec::new();
        for _ in 0..50 {
            let s = Instant::now();
            let (code, _) = req(&r, "GET", &format!("{base}?limit=100"), None, vec![]).await;
            assert_eq!(code, 200);
            t.push(s.elapsed());
        }
        println!("list limit=100 page         median {:>10.1?}", median(t));

        // Watch fan-out: W watchers; time from the write until every watcher has the event.
        const W: usize = 200;
        let rv = srv_rv(&r, base).await;
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Instant>();
        for _ in 0..W {
            let resp = r
                .clone()
                .oneshot(
                    Request::builder()
                        .uri(format!("{base}?watch=true&resourceVersion={rv}&labelSelector=app%3Dfan"))
                        .body(Body::empty())
                        .expect("request"),
                )
                .await
                .expect("watch");
            let tx = tx.clone();
            tokio::spawn(async move {
                let mut body = resp.into_body();
                while let Some(Ok(f)) = body.frame().await {
                    if f.data_ref().is_some_and(|d| d.ends_with(b"\n")) && tx.send(Instant::now()).is_err() {
                        return;
                    }
                }
            });
        }
        let mut t = Vec::new();
        for i in 0..100 {
            let body = format!(r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"fan-{i}","labels":{{"app":"fan"}}}}}}"#);
            let s = Instant::now();
            let (code, _) = req(&r, "POST", base, Some("application/json"), body.into_bytes()).await;
            assert_eq!(code, 201);
            let mut last = s;
            for _ in 0..W {
                last = tokio::time::timeout(Duration::from_secs(10), rx.recv()).await.ok().flatten().expect("event delivered");
            }
            t.push(last - s);
        }
        println!("watch fan-out to {W} watchers median {:>10.1?}  (write -> last watcher)", median(t));
        srv.shutdown();
    });
}

async fn srv_rv(r: &Router, base: &str) -> String {
    let resp = r
        .clone()
        .oneshot(
            Request::builder()
                .uri(format!("{base}?limit=1"))
                .body(Body::empty())
                .expect("request"),
        )
        .await
        .expect("list");
    let bytes = resp
        .into_body()
        .collect()
        .await
        .map(|c| c.to_bytes())
        .unwrap_or_default();
    let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
    v["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or("0")
        .to_string()
}
