//! Targeting throughput: 10,000 clusters, 100 ClusterGroups, 100 bundles. Prints medians of
//! bundle×cluster evaluations per second (matching only, and with options + deployment IDs), and
//! the cost of per-cluster `${ }` values templating (median per BundleDeployment).

use std::time::Instant;

use fleet_api::{Bundle, Cluster, ClusterGroup};
use fleet_targeting::{Fleet, Stats, manifest_id, targets};
use serde_json::json;

fn world() -> (Fleet, Vec<Bundle>) {
    let envs = ["dev", "test", "prod", "stage"];
    let clusters: Vec<Cluster> = (0..10_000)
        .map(|i| {
            serde_json::from_value(json!({
                "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Cluster",
                "metadata": {"name": format!("c{i:05}"), "namespace": "fleet-default",
                    "labels": {"env": envs[i % 4], "region": format!("r{}", i % 20), "shard": format!("s{}", i % 100)}},
                "spec": {}
            }))
            .expect("cluster")
        })
        .collect();
    let groups: Vec<ClusterGroup> = (0..100)
        .map(|g| {
            serde_json::from_value(json!({
                "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "ClusterGroup",
                "metadata": {"name": format!("g{g}"), "namespace": "fleet-default", "labels": {"tier": if g % 2 == 0 { "gold" } else { "silver" }}},
                "spec": {"selector": {"matchLabels": {"shard": format!("s{g}")}}}
            }))
            .expect("group")
        })
        .collect();
    let bundles: Vec<Bundle> = (0..100)
        .map(|b| {
            let target = match b % 4 {
                0 => json!({"name": "all", "clusterSelector": {}}),
                1 => json!({"name": "env", "clusterSelector": {"matchLabels": {"env": envs[b % 4]}}}),
                2 => json!({"name": "group", "clusterGroup": format!("g{b}")}),
                _ => json!({"name": "expr", "clusterSelector": {"matchExpressions": [{"key": "region", "operator": "In", "values": ["r1", "r2", "r3"]}]}}),
            };
            serde_json::from_value(json!({
                "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Bundle",
                "metadata": {"name": format!("b{b}"), "namespace": "fleet-default"},
                "spec": {
                    "resources": [{"name": "cm.yaml", "content": format!("kind: ConfigMap\nname: b{b}\n")}],
                    "helm": {"values": {"replicas": 2, "image": "nginx"}},
                    "targets": [
                        {"name": "prod-custom", "clusterSelector": {"matchLabels": {"env": "prod"}}, "helm": {"values": {"replicas": 5}}},
                        target
                    ],
                    "targetRestrictions": [{"name": "r", "clusterSelector": {}}]
                }
            }))
            .expect("bundle")
        })
        .collect();
    (Fleet::new(clusters, groups, vec![]), bundles)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let t0 = Instant::now();
    let (fleet, bundles) = world();
    println!(
        "setup (index 10,000 clusters, 100 groups): {:.1} ms",
        t0.elapsed().as_secs_f64() * 1e3
    );
    let ids: Vec<String> = bundles.iter().map(manifest_id).collect();
    let pairs = (bundles.len() * fleet.clusters.len()) as f64;
    let mut rates = Vec::new();
    let mut bds = 0;
    let mut evaluated = 0;
    for _ in 0..7 {
        let t = Instant::now();
        let mut st = Stats::default();
        bds = 0;
        for (b, id) in bundles.iter().zip(&ids) {
            bds += targets(b, &fleet, id, &mut st).expect("targets").len();
        }
        rates.push(pairs / t.elapsed().as_secs_f64());
        evaluated = st.evaluated;
    }
    println!(
        "targeting 100 bundles x 10,000 clusters: median {:.0} bundle x cluster evaluations/s ({} BundleDeployments, {} candidate clusters examined per pass)",
        median(rates),
        bds,
        evaluated
    );

    // Per-cluster values templating: every cluster gets its own rendered values.
    let templated: Bundle = serde_json::from_value(json!({
        "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Bundle",
        "metadata": {"name": "tpl", "namespace": "fleet-default"},
        "spec": {
            "resources": [{"name": "cm.yaml", "content": "kind: ConfigMap\n"}],
            "helm": {
                "values": {
                    "cluster": "${ .ClusterName }",
                    "env": "${ .ClusterLabels.env | upper }",
                    "region": "global.fleet.clusterLabels.region",
                    "image": {"repository": "nginx", "tag": "1.25"},
                    "replicas": 2,
                    "ingress": {"host": "app.${ .ClusterLabels.region }.example.org"}
                },
                "templateValues": {"shard": "${ .ClusterLabels.shard }"}
            },
            "targets": [{"name": "all", "clusterSelector": {}}]
        }
    }))
    .expect("bundle");
    let id = manifest_id(&templated);
    let mut per_bd = Vec::new();
    let mut n = 0;
    for _ in 0..5 {
        let t = Instant::now();
        n = targets(&templated, &fleet, &id, &mut Stats::default())
            .expect("targets")
            .len();
        per_bd.push(t.elapsed().as_secs_f64() * 1e6 / n as f64);
    }
    println!(
        "per-cluster ${{ }} values templating, 1 bundle x {n} clusters: median {:.1} us per BundleDeployment",
        median(per_bd)
    );
}
