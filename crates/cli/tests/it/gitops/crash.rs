//! SIGKILL of `fleet server` (with its in-process controllers) in the middle of rolling one Bundle
//! out to 1,000 hand-made Clusters, then a restart on the same data directory and port: the set of
//! BundleDeployments converges to exactly the targets, none missing, none extra, one Content.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use fleet_api::{Bundle, BundleDeployment, Cluster};
use fleet_testkit::{FleetServer, fleet_bin};
use futures::StreamExt;
use kube::api::{Api, ListParams, PostParams};

const CLUSTERS: usize = 1000;

async fn wait<T>(
    what: &str,
    timeout: Duration,
    mut f: impl AsyncFnMut() -> Result<T, String>,
) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        match f().await {
            Ok(v) => return v,
            Err(e) if Instant::now() >= deadline => panic!("{what}: not within {timeout:?}: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

async fn bd_namespaces(client: &kube::Client) -> Result<Vec<String>, String> {
    let bds: Api<BundleDeployment> = Api::all(client.clone());
    let list = bds
        .list_metadata(&ListParams::default())
        .await
        .map_err(|e| e.to_string())?;
    Ok(list
        .items
        .into_iter()
        .map(|m| m.metadata.namespace.unwrap_or_default())
        .collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigkill_during_a_rollout_of_1000_bundledeployments_converges() {
    let started = Instant::now();
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("server");
    // `normal`: a commit survives a crash of the process (this test's SIGKILL), not power loss.
    let args = ["--store-sync", "normal"];
    let mut srv = FleetServer::start(fleet_bin!(), &dir, &args);
    let port = srv.port();
    let client = srv.client().await;
    let bundles: Api<Bundle> = Api::namespaced(client.clone(), "fleet-default");
    let bundle: Bundle = serde_json::from_value(serde_json::json!({
        "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Bundle",
        "metadata": {"name": "crash", "namespace": "fleet-default"},
        "spec": {
            "resources": [{"name": "cm.yaml", "content": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: crash\n"}],
            "targets": [{"name": "all", "clusterSelector": {"matchLabels": {"crash": "yes"}}}],
        }
    }))
    .expect("bundle");
    // The server bootstraps its CRDs and workspaces: retry until the Bundle is accepted.
    wait(
        "bundle created",
        Duration::from_secs(30),
        async || match bundles.create(&PostParams::default(), &bundle).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
            Err(e) => Err(e.to_string()),
        },
    )
    .await;
    let clusters: Api<Cluster> = Api::namespaced(client.clone(), "fleet-default");
    let names: Vec<String> = (0..CLUSTERS).map(|i| format!("c{i:04}")).collect();
    let created: Vec<Result<(), String>> = futures::stream::iter(names.iter().cloned())
        .map(|name| {
            let clusters = clusters.clone();
            async move {
                let c: Cluster = serde_json::from_value(serde_json::json!({
                    "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Cluster",
                    "metadata": {"name": name, "namespace": "fleet-default", "labels": {"crash": "yes"}},
                    "spec": {}
                }))
                .map_err(|e| e.to_string())?;
                clusters
                    .create(&PostParams::default(), &c)
                    .await
                    .map(|_| ())
                    .map_err(|e| format!("creating cluster {name}: {e}"))
            }
        })
        .buffer_unordered(32)
        .collect()
        .await;
    for r in created {
        r.expect("cluster created");
    }
    println!("{CLUSTERS} clusters created after {:?}", started.elapsed());

    // Kill in the middle of the rollout.
    let before = wait("rollout under way", Duration::from_secs(120), async || {
        let n = bd_namespaces(&client).await?.len();
        if n >= 100 {
            Ok(n)
        } else {
            Err(format!("{n} BundleDeployments"))
        }
    })
    .await;
    srv.process.kill();
    println!(
        "SIGKILL with {before} of {CLUSTERS} BundleDeployments listed, after {:?}",
        started.elapsed()
    );
    drop(client);

    let srv = FleetServer::start_on(fleet_bin!(), &dir, &format!("127.0.0.1:{port}"), &args);
    let client = srv.client().await;
    let want: BTreeSet<String> = names
        .iter()
        .map(|n| fleet_api::names::cluster_namespace("fleet-default", n))
        .collect();
    let restarted = Instant::now();
    wait(
        "BundleDeployments converge",
        Duration::from_secs(60),
        async || {
            let got = bd_namespaces(&client).await?;
            let set: BTreeSet<String> = got.iter().cloned().collect();
            if got.len() == CLUSTERS && set == want {
                Ok(())
            } else {
                Err(format!(
                    "{} BundleDeployments in {} namespaces; missing {}, extra {}",
                    got.len(),
                    set.len(),
                    want.difference(&set).count(),
                    set.difference(&want).count()
                ))
            }
        },
    )
    .await;
    println!(
        "converged {:?} after the restart ({:?} in all)",
        restarted.elapsed(),
        started.elapsed()
    );

    // Every BD is the bundle's, at the bundle's deploymentID; one Content; every Cluster has
    // exactly its namespace.
    let b = Api::<Bundle>::namespaced(client.clone(), "fleet-default")
        .get("crash")
        .await
        .expect("bundle");
    let bds = Api::<BundleDeployment>::all(client.clone())
        .list(&ListParams::default())
        .await
        .expect("list bds");
    let ids: BTreeSet<String> = bds
        .items
        .iter()
        .map(|bd| bd.spec.deployment_id.clone())
        .collect();
    assert_eq!(ids.len(), 1, "one deploymentID for one bundle: {ids:?}");
    for bd in &bds.items {
        assert_eq!(bd.metadata.name.as_deref(), Some("crash"));
        let labels = bd.metadata.labels.clone().unwrap_or_default();
        assert_eq!(
            labels
                .get("fleet.cattle.io/bundle-name")
                .map(String::as_str),
            Some("crash")
        );
    }
    let id = ids.into_iter().next().unwrap_or_default();
    let manifest = id.split(':').next().unwrap_or_default().to_string();
    let contents: Api<kube::api::DynamicObject> = Api::all_with(
        client.clone(),
        &kube::api::ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk("fleet.cattle.io", "v1alpha1", "Content"),
            "contents",
        ),
    );
    let cl = contents
        .list_metadata(&ListParams::default())
        .await
        .expect("contents");
    let cnames: Vec<String> = cl
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    assert_eq!(cnames, [manifest], "exactly the bundle's Content");
    let summary = b.status.map(|s| s.summary.desired_ready).unwrap_or(0);
    wait(
        "bundle status counts every target",
        Duration::from_secs(30),
        async || {
            let b = Api::<Bundle>::namespaced(client.clone(), "fleet-default")
                .get("crash")
                .await
                .map_err(|e| e.to_string())?;
            match b.status.map(|s| s.summary.desired_ready) {
                Some(n) if n == CLUSTERS as i64 => Ok(()),
                other => Err(format!("desiredReady {other:?} (was {summary})")),
            }
        },
    )
    .await;
    let cs = Api::<Cluster>::namespaced(client.clone(), "fleet-default")
        .list(&ListParams::default())
        .await
        .expect("clusters");
    let cns: BTreeSet<String> = cs
        .items
        .iter()
        .filter_map(|c| c.status.as_ref().map(|s| s.namespace.clone()))
        .collect();
    assert_eq!(cns, want, "each cluster has its own namespace");
}
