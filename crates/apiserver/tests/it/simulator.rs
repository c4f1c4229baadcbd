//! The workload simulator at scale, in process: thousands of objects settle with exactly one
//! status write each (no write loops, no redundant writes), and a spec change of one object is
//! observed with one more write.

use std::time::{Duration, Instant};

use fleet_apiserver::{ApiServer, ApiServerConfig};
use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

const N: usize = 2_000;

async fn simulated() -> ApiServer {
    let mut cfg = ApiServerConfig::in_memory();
    cfg.simulate_workloads = true;
    ApiServer::new(cfg).await.expect("server starts")
}

/// The store's revision, as a list reports it.
async fn revision(api: &Api<Pod>) -> u64 {
    api.list_metadata(&ListParams::default().limit(1))
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap()
        .parse()
        .unwrap()
}

async fn until(what: &str, mut done: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !done().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_objects_settle_with_one_write_each() {
    let srv = simulated().await;
    let client = kube::Client::new(srv.router(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    // The server's own start-up writes (a `default` ServiceAccount per system namespace) are
    // done before counting.
    let accounts: Api<ServiceAccount> = Api::all(client.clone());
    until("the default service accounts", async || {
        accounts
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len()
            == fleet_apiserver::app::SYSTEM_NAMESPACES.len()
    })
    .await;
    let before = revision(&pods).await;
    let t = Instant::now();
    futures::stream::iter(0..N)
        .map(|i| {
            let (pods, deployments) = (pods.clone(), deployments.clone());
            async move {
                if i % 2 == 0 {
                    let p: Pod = serde_json::from_value(json!({
                        "metadata": {"name": format!("p{i}")},
                        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
                    }))
                    .unwrap();
                    pods.create(&PostParams::default(), &p).await.map(|_| ())
                } else {
                    let d: Deployment = serde_json::from_value(json!({
                        "metadata": {"name": format!("d{i}")},
                        "spec": {
                            "replicas": 2,
                            "selector": {"matchLabels": {"app": "x"}},
                            "template": {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
                        },
                    }))
                    .unwrap();
                    deployments
                        .create(&PostParams::default(), &d)
                        .await
                        .map(|_| ())
                }
            }
        })
        .buffer_unordered(32)
        .for_each(|r| async { r.expect("create") })
        .await;
    until("every object to get its simulated status", async || {
        let ready_pods = pods
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .iter()
            .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
            .count();
        let ready_deployments = deployments
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .iter()
            .filter(|d| d.status.as_ref().and_then(|s| s.ready_replicas) == Some(2))
            .count();
        ready_pods + ready_deployments == N
    })
    .await;
    println!("{N} objects created and settled in {:?}", t.elapsed());
    // One create and one status write per object, nothing else.
    let after = revision(&pods).await;
    assert_eq!(after - before, 2 * N as u64);

    // A spec change is observed once.
    deployments
        .patch(
            "d1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .unwrap();
    until("the new generation to be observed", async || {
        let d = deployments.get("d1").await.unwrap();
        d.status.and_then(|s| s.ready_replicas) == Some(3)
    })
    .await;
    assert_eq!(revision(&pods).await, after + 2);
    srv.shutdown();
}
