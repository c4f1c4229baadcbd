//! Bytes the BundleDeployment cache holds per BundleDeployment, counted by a global allocator:
//! 50 bundles × 1,000 clusters shaped like `fleet bench controller`'s (no status, as without
//! agents, then with a typical agent status). Run with `--ignored --nocapture` to see figures.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

use fleet_api::BundleDeployment;
use fleet_api::keys::*;
use fleet_controller::bds::BdCache;
use kube::runtime::watcher;
use serde_json::json;

struct Counting;
static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        LIVE.fetch_add(n as isize - l.size() as isize, Ordering::Relaxed);
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static A: Counting = Counting;

fn bd(j: usize, c: usize, status: bool) -> BundleDeployment {
    let id = format!("s-{:060x}:{:064x}", j * 7919, j * 104729);
    let cluster = format!("cluster-{c:04}");
    let cns = format!("cluster-fleet-default-{cluster}-{:012x}", c * 31);
    let mut v = json!({
        "apiVersion": API_VERSION, "kind": "BundleDeployment",
        "metadata": {
            "name": format!("bench-b{j}"), "namespace": cns,
            "uid": format!("{:08x}-0000-4000-8000-{:012x}", j, c),
            "resourceVersion": format!("{}", 100000 + j * 1000 + c),
            "generation": 1,
            "creationTimestamp": "2026-11-26T09:00:00Z",
            "labels": {
                BUNDLE_LABEL: format!("bench-b{j}"), BUNDLE_NAMESPACE_LABEL: "fleet-default",
                CLUSTER_LABEL: cluster, CLUSTER_NAMESPACE_LABEL: "fleet-default",
                CONTENT_NAME_LABEL: format!("s-{:060x}", j * 7919), MANAGED_LABEL: "true",
                REPO_LABEL: "bench", COMMIT_LABEL: format!("{:040x}", 12345),
            },
        },
        "spec": {
            "deploymentID": id, "stagedDeploymentID": id,
            "options": {"defaultNamespace": "bench-target", "helm": {"maxHistory": 5}},
            "stagedOptions": {"defaultNamespace": "bench-target", "helm": {"maxHistory": 5}},
        },
    });
    if status {
        v["status"] = json!({
            "appliedDeploymentID": id, "ready": true, "nonModified": true, "release": format!("bench-target/bench-b{j}-{c}:1"),
            "conditions": [
                {"type": "Installed", "status": "True", "lastUpdateTime": "2026-11-26T09:00:01Z"},
                {"type": "Deployed", "status": "True", "lastUpdateTime": "2026-11-26T09:00:01Z"},
                {"type": "Ready", "status": "True", "lastUpdateTime": "2026-11-26T09:00:01Z"},
                {"type": "Monitored", "status": "True", "lastUpdateTime": "2026-11-26T09:00:01Z"},
            ],
            "display": {"deployed": "True", "monitored": "True", "state": "Ready"},
            "resourceCounts": {"ready": 3, "desiredReady": 3},
            "resources": [
                {"kind": "ConfigMap", "apiVersion": "v1", "namespace": "bench-target", "name": format!("b{j}-o0")},
                {"kind": "Deployment", "apiVersion": "apps/v1", "namespace": "bench-target", "name": format!("b{j}-o1")},
                {"kind": "Service", "apiVersion": "v1", "namespace": "bench-target", "name": format!("b{j}-o2")},
            ],
        });
    }
    serde_json::from_value(v).unwrap()
}

fn per_bd(status: bool) -> f64 {
    let (bundles, clusters) = (50, 1000);
    let before = LIVE.load(Ordering::Relaxed);
    let cache = BdCache::default();
    cache.apply(watcher::Event::Init, |_, _| {});
    for c in 0..clusters {
        for j in 0..bundles {
            cache.apply(watcher::Event::InitApply(bd(j, c, status)), |_, _| {});
        }
    }
    cache.apply(watcher::Event::InitDone, |_, _| {});
    assert_eq!(cache.len(), bundles * clusters);
    let bytes = LIVE.load(Ordering::Relaxed) - before;
    drop(cache);
    bytes as f64 / (bundles * clusters) as f64
}

#[test]
#[ignore = "a measurement (run with --ignored --nocapture)"]
fn bytes_per_bundle_deployment() {
    let whole = {
        let before = LIVE.load(Ordering::Relaxed);
        let v: Vec<BundleDeployment> = (0..1000).map(|c| bd(1, c, false)).collect();
        let b = LIVE.load(Ordering::Relaxed) - before;
        drop(v);
        b as f64 / 1000.0
    };
    let without = per_bd(false);
    let with = per_bd(true);
    println!(
        "whole object (no status, managedFields dropped): {whole:.0} B; cached projection: {without:.0} B without status, {with:.0} B with an agent's status"
    );
    assert!(without < 1024.0 && with < 1024.0);
}
