//! `fleet server --simulate-workloads` with real kubectl: Deployments, StatefulSets and
//! DaemonSets roll out, a Job completes, a Pod becomes Ready, a PVC is Bound and a LoadBalancer
//! Service gets an address, as on a healthy cluster; a spec change is observed; once settled the
//! simulator writes nothing more; and without the flag no status is written at all.
//!
//! Skips (with a message) when kubectl is missing; fails instead under CI=true.

use std::time::{Duration, Instant};

use crate::common::Server;
use fleet_testkit::Kubectl;
use serde_json::Value;

/// The store's current revision: the resourceVersion of a list (every write advances it).
fn revision(k: &Kubectl) -> u64 {
    let raw = k.ok(&["get", "--raw", "/api/v1/namespaces/default/configmaps"]);
    let list: Value = serde_json::from_str(&raw).expect("list JSON");
    list.pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .and_then(|s| s.parse().ok())
        .expect("list resourceVersion")
}

/// Objects kubectl has no `create` subcommand for, or needs fields the subcommands do not set.
const MANIFESTS: &str = r#"
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 2
  serviceName: db
  updateStrategy: {type: RollingUpdate}
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: postgres:16}]}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  updateStrategy: {type: RollingUpdate}
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: agent, image: busybox:1.36}]}
"#;

/// Asserts that the store's revision stays at `rev` for `window`: nothing writes any more.
fn assert_quiet(k: &Kubectl, rev: u64, window: Duration, what: &str) {
    let until = Instant::now() + window;
    while Instant::now() < until {
        assert_eq!(revision(k), rev, "{what}: something kept writing");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn simulated_workloads_look_healthy_to_kubectl() {
    let dir = tempfile::tempdir().unwrap();
    // Without controllers: the manager's own writes (its local agent) would count as the simulator's.
    let srv = Server::start_with_flags(
        dir.path(),
        "127.0.0.1:0",
        &["--no-controllers", "--simulate-workloads"],
    );
    let Some(k) = srv.kubectl() else { return };

    k.ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx:1.27",
        "--replicas=2",
    ]);
    k.ok(&["rollout", "status", "deployment/web", "--timeout=20s"]);
    let d = k.json(&["get", "deployment", "web", "--show-managed-fields"]);
    assert_eq!(d["status"]["readyReplicas"], 2, "{d}");
    assert_eq!(
        d["status"]["observedGeneration"],
        d["metadata"]["generation"]
    );
    let conditions = d["status"]["conditions"].as_array().expect("conditions");
    assert!(
        conditions
            .iter()
            .any(|c| c["type"] == "Available" && c["status"] == "True"),
        "{d}"
    );
    assert!(
        conditions.iter().any(|c| c["type"] == "Progressing"
            && c["status"] == "True"
            && c["reason"] == "NewReplicaSetAvailable"),
        "{d}"
    );
    let managers: Vec<&str> = d["metadata"]["managedFields"]
        .as_array()
        .expect("managedFields")
        .iter()
        .filter(|e| e["subresource"] == "status")
        .filter_map(|e| e["manager"].as_str())
        .collect();
    assert_eq!(managers, ["fleet-simulator"], "{d}");

    // A spec change (new generation) is observed and rolled out.
    k.ok(&["scale", "deployment/web", "--replicas=4"]);
    k.ok(&["rollout", "status", "deployment/web", "--timeout=20s"]);
    let d = k.json(&["get", "deployment", "web"]);
    assert_eq!(d["status"]["availableReplicas"], 4, "{d}");
    assert_eq!(
        d["status"]["observedGeneration"],
        d["metadata"]["generation"]
    );

    k.ok(&["create", "job", "once", "--image=busybox:1.36"]);
    k.ok(&[
        "wait",
        "--for=condition=complete",
        "job/once",
        "--timeout=20s",
    ]);
    let j = k.json(&["get", "job", "once"]);
    assert_eq!(j["status"]["succeeded"], 1, "{j}");
    assert!(j["status"]["completionTime"].is_string(), "{j}");

    k.ok(&["run", "solo", "--image=nginx:1.27"]);
    k.ok(&["wait", "--for=condition=Ready", "pod/solo", "--timeout=20s"]);
    let p = k.json(&["get", "pod", "solo"]);
    assert_eq!(p["status"]["phase"], "Running", "{p}");
    assert_eq!(p["status"]["containerStatuses"][0]["ready"], true, "{p}");

    k.ok(&["create", "service", "loadbalancer", "edge", "--tcp=80:8080"]);
    k.ok(&[
        "wait",
        "--for=jsonpath={.status.loadBalancer.ingress[0].ip}=127.0.0.1",
        "service/edge",
        "--timeout=20s",
    ]);

    k.ok_stdin(&["apply", "-f", "-"], MANIFESTS);
    k.ok(&[
        "wait",
        "--for=jsonpath={.status.phase}=Bound",
        "pvc/data",
        "--timeout=20s",
    ]);
    let pvc = k.json(&["get", "pvc", "data"]);
    assert_eq!(pvc["status"]["capacity"]["storage"], "1Gi", "{pvc}");
    k.ok(&["rollout", "status", "statefulset/db", "--timeout=20s"]);
    k.ok(&["rollout", "status", "daemonset/agent", "--timeout=20s"]);

    // Settled: the simulator's own writes trigger nothing further.
    let rev = revision(&k);
    assert_quiet(&k, rev, Duration::from_secs(2), "after settling");
}

#[test]
fn without_the_flag_no_status_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start_with_flags(dir.path(), "127.0.0.1:0", &["--no-controllers"]);
    let Some(k) = srv.kubectl() else { return };
    k.ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx:1.27",
        "--replicas=2",
    ]);
    k.ok(&["create", "job", "once", "--image=busybox:1.36"]);
    k.ok(&["create", "service", "loadbalancer", "edge", "--tcp=80:8080"]);
    k.ok_stdin(&["apply", "-f", "-"], MANIFESTS);
    let rev = revision(&k);
    assert_quiet(
        &k,
        rev,
        Duration::from_secs(2),
        "without --simulate-workloads",
    );
    for (kind, name) in [
        ("deployment", "web"),
        ("job", "once"),
        ("service", "edge"),
        ("pvc", "data"),
        ("statefulset", "db"),
        ("daemonset", "agent"),
    ] {
        let o = k.json(&["get", kind, name]);
        let status = &o["status"];
        assert!(
            status.is_null()
                || status.as_object().is_some_and(|m| m.is_empty())
                || status == &serde_json::json!({"loadBalancer": {}}),
            "{kind}/{name} got a status: {o}"
        );
    }
    let out = k.run(&["rollout", "status", "deployment/web", "--timeout=1s"]);
    assert!(
        !out.status.success(),
        "nothing rolls out without the simulator"
    );
}
