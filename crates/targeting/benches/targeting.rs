//! Targeting throughput: 10,000 clusters, 100 ClusterGroups, 100 bundles. Prints medians of
//! bundle×cluster evaluations per second (matching only, and with options + deployment IDs), the
//! cost of per-cluster `${ }` values templating (median per BundleDeployment), and the cost of
//! keeping the index current: one Cluster label update (incremental) against a full rebuild.

use std::time::Instant;

use fleet_api::{Bundle, Cluster, ClusterGroup};
use fleet_targeting::{Fleet, Stats, manifest_id, targets};
use serde_json::json;

const ENVS: [&str; 4] = ["dev", "test", "prod", "stage"];

/// Cluster `i` of the world; `shard` is normally `i % 100` (the bench's updates move it).
fn cluster(i: usize, shard: usize) -> Cluster {
    serde_json::from_value(json!({
        "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Cluster",
        "metadata": {"name": format!("c{i:05}"), "namespace": "fleet-default",
            "labels": {"env": ENVS[i % 4], "region": format!("r{}", i % 20), "shard": format!("s{shard}")}},
        "spec": {}
    }))
    .expect("cluster")
}

fn world() -> (Vec<Cluster>, Vec<ClusterGroup>, Vec<Bundle>) {
    let envs = ENVS;
    let clusters: Vec<Cluster> = (0..10_000).map(|i| cluster(i, i % 100)).collect();
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
    (clusters, groups, bundles)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let (clusters, groups, bundles) = world();
    let mut rebuild = Vec::new();
    for _ in 0..5 {
        let (c, g) = (clusters.clone(), groups.clone());
        let t = Instant::now();
        let f = Fleet::new(c, g, vec![]);
        rebuild.push(t.elapsed().as_secs_f64() * 1e3);
        drop(f);
    }
    println!(
        "index rebuild (Fleet::new, 10,000 clusters, 100 groups): median {:.1} ms",
        median(rebuild)
    );
    let mut fleet = Fleet::new(clusters, groups, vec![]);

    let ids: Vec<String> = bundles.iter().map(manifest_id).collect();
    let pairs = (bundles.len() * fleet.cluster_count()) as f64;
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

    // One Cluster label update: cluster i moves to another shard, so it leaves one group and
    // joins another (objects prepared outside the timed loop).
    const UPDATES: usize = 1_000;
    let mut per_update = Vec::new();
    for round in 0..7 {
        let moved: Vec<Cluster> = (0..UPDATES)
            .map(|k| {
                let i = (round * UPDATES + k) * 7 % 10_000;
                cluster(i, (i + round + 1) % 100)
            })
            .collect();
        let t = Instant::now();
        let mut changed = 0;
        for c in moved {
            changed += fleet.upsert_cluster(c).len();
        }
        per_update.push(t.elapsed().as_secs_f64() * 1e6 / UPDATES as f64);
        assert_eq!(
            changed,
            2 * UPDATES,
            "each update leaves one group and joins one"
        );
    }
    println!(
        "one Cluster label update (upsert_cluster, 10,000 clusters, 100 groups indexed): median {:.2} us",
        median(per_update)
    );
}
