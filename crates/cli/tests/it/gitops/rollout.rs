//! A staged rollout that holds a cluster back keeps that cluster's Helm values: a Bundle with
//! values on two clusters whose BundleDeployments report Ready (the test writes their status, as
//! an agent would), `maxUnavailable: 50%` (one of the two at a time), then new values. The promoted
//! BD deploys the new values; the other keeps its deploymentID, and its options Secret keeps the
//! values it deploys now (`values`) beside the new ones (`stagedValues`), with a `valuesHash`
//! over both, so an agent reading that Secret still finds what it deploys.

use std::time::Duration;

use fleet_api::{Bundle, BundleDeployment, Cluster};
use fleet_testkit::{FleetServer, eventually_async, fleet_bin};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

const NS: &str = "fleet-default";

async fn bds(client: &kube::Client) -> Result<Vec<BundleDeployment>, String> {
    let list = Api::<BundleDeployment>::all(client.clone())
        .list(&ListParams::default().labels("fleet.cattle.io/bundle-name=roll"))
        .await
        .map_err(|e| e.to_string())?;
    Ok(list.items)
}

fn secret_key(s: &Secret, k: &str) -> String {
    s.data
        .as_ref()
        .and_then(|d| d.get(k))
        .map(|b| String::from_utf8_lossy(&b.0).into_owned())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_held_back_by_rollout_keeps_its_values() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let srv = FleetServer::start(fleet_bin!(), &tmp.path().join("server"), &[]);
    let client = srv.client().await;
    let bundles: Api<Bundle> = Api::namespaced(client.clone(), NS);
    let clusters: Api<Cluster> = Api::namespaced(client.clone(), NS);
    for name in ["c1", "c2"] {
        let c: Cluster = serde_json::from_value(json!({
            "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": name, "namespace": NS, "labels": {"roll": "yes"}},
            "spec": {}
        }))
        .expect("cluster");
        eventually_async("cluster created", Duration::from_secs(30), || async {
            match clusters.create(&PostParams::default(), &c).await {
                Ok(_) => Ok(()),
                Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
                Err(e) => Err(e.to_string()),
            }
        })
        .await;
    }
    let bundle = |v: &str| -> Bundle {
        serde_json::from_value(json!({
            "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Bundle",
            "metadata": {"name": "roll", "namespace": NS},
            "spec": {
                "resources": [{"name": "cm.yaml", "content": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: roll\n"}],
                "helm": {"values": {"v": v}},
                "rolloutStrategy": {"maxUnavailable": "50%"},
                "targets": [{"name": "all", "clusterSelector": {"matchLabels": {"roll": "yes"}}}],
            }
        }))
        .expect("bundle")
    };
    bundles
        .create(&PostParams::default(), &bundle("one"))
        .await
        .expect("bundle created");

    // Both BDs written; then Ready at their deploymentID, as their agents would report.
    let first = eventually_async("two BundleDeployments", Duration::from_secs(60), || async {
        let items = bds(&client).await?;
        if items.len() == 2 && items.iter().all(|b| !b.spec.deployment_id.is_empty()) {
            Ok(items)
        } else {
            Err(format!("{} BundleDeployments", items.len()))
        }
    })
    .await;
    let old_id = first[0].spec.deployment_id.clone();
    for bd in &first {
        let ns = bd.metadata.namespace.clone().unwrap_or_default();
        let name = bd.metadata.name.clone().unwrap_or_default();
        Api::<BundleDeployment>::namespaced(client.clone(), &ns)
            .patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {
                    "appliedDeploymentID": bd.spec.deployment_id, "ready": true, "nonModified": true,
                }})),
            )
            .await
            .expect("status written");
    }

    // The controllers have seen both Ready once the Bundle's summary counts them.
    let mut b = eventually_async("the bundle Ready on 2", Duration::from_secs(60), || async {
        let b = bundles.get("roll").await.map_err(|e| e.to_string())?;
        let ready = b.status.as_ref().map_or(0, |s| s.summary.ready);
        if ready == 2 {
            Ok(b)
        } else {
            Err(format!("{ready} ready"))
        }
    })
    .await;

    // New values: one cluster at a time.
    b.spec = bundle("two").spec;
    bundles
        .replace("roll", &PostParams::default(), &b)
        .await
        .expect("bundle updated");
    let staged = eventually_async("a staged rollout", Duration::from_secs(60), || async {
        let items = bds(&client).await?;
        let new_ids: Vec<&String> = items
            .iter()
            .map(|b| &b.spec.staged_deployment_id)
            .filter(|id| **id != old_id)
            .collect();
        let held: Vec<&BundleDeployment> = items
            .iter()
            .filter(|b| b.spec.deployment_id == old_id)
            .collect();
        if new_ids.len() == 2 && held.len() == 1 {
            Ok(items)
        } else {
            Err(format!(
                "{} staged at a new ID, {} held at the old one",
                new_ids.len(),
                held.len()
            ))
        }
    })
    .await;
    for bd in &staged {
        let ns = bd.metadata.namespace.clone().unwrap_or_default();
        let name = bd.metadata.name.clone().unwrap_or_default();
        let held = bd.spec.deployment_id == old_id;
        let s = eventually_async("options secret", Duration::from_secs(30), || async {
            Api::<Secret>::namespaced(client.clone(), &ns)
                .get_opt(&name)
                .await
                .map_err(|e| e.to_string())?
                .ok_or_else(|| "absent".to_string())
        })
        .await;
        let (values, staged_values) = (secret_key(&s, "values"), secret_key(&s, "stagedValues"));
        let want_values = if held {
            r#"{"v":"one"}"#
        } else {
            r#"{"v":"two"}"#
        };
        assert_eq!(
            values, want_values,
            "{ns}/{name} (held back: {held}): values"
        );
        assert_eq!(staged_values, r#"{"v":"two"}"#, "{ns}/{name}: stagedValues");
        assert_eq!(
            bd.spec.values_hash,
            fleet_api::names::sha256_hex(format!("{values}{staged_values}").as_bytes()),
            "{ns}/{name}: valuesHash covers both"
        );
        assert!(
            bd.spec
                .options
                .helm
                .as_ref()
                .is_none_or(|h| h.values.is_none()),
            "{ns}/{name}: values are in the Secret, not the spec"
        );
    }
}
