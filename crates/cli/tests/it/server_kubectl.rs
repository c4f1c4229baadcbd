//! Real kubectl drives `fleet server`: create/apply, re-apply with changes (strategic merge for
//! built-ins, 3-way JSON merge patch for custom resources), `get -o yaml`, `get -w`, label/annotate,
//! `patch --type merge|json|strategic`, `delete --wait`, `apply --server-side`, a CRD and a custom
//! resource of it, `api-resources`, `get --raw /readyz`.
//!
//! Skips (with a message) when kubectl is missing; fails instead under CI=true.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use crate::common::Server;
use fleet_testkit::Kubectl;

/// `kubectl apply -f - EXTRA...` of `manifest`, panicking unless it succeeds; returns stdout.
fn apply(k: &Kubectl, manifest: &str, extra: &[&str]) -> String {
    let mut a = vec!["apply", "-f", "-"];
    a.extend(extra);
    k.ok_stdin(&a, manifest)
}

fn setup() -> Option<(tempfile::TempDir, Server, Kubectl)> {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    let k = srv.kubectl()?;
    let version = k.run(&["version", "--client"]);
    println!(
        "kubectl version --client: {}",
        String::from_utf8_lossy(&version.stdout).trim()
    );
    Some((dir, srv, k))
}

const DEPLOY_V1: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
  labels: {app: web, stage: one}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: nginx:1.25
        env: [{name: A, value: "1"}, {name: B, value: "2"}]
      - name: sidecar
        image: busybox:1.36
"#;

// Changes the app image, drops env B and the `stage` label, keeps the sidecar.
const DEPLOY_V2: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
  labels: {app: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: nginx:1.26
        env: [{name: A, value: "1"}]
      - name: sidecar
        image: busybox:1.36
"#;

#[test]
fn kubectl_builtin_workflow() {
    let Some((_dir, _srv, k)) = setup() else {
        return;
    };

    assert_eq!(k.ok(&["get", "--raw", "/readyz"]).trim(), "ok");
    let resources = k.ok(&["api-resources"]);
    for r in [
        "configmaps",
        "namespaces",
        "deployments",
        "customresourcedefinitions",
    ] {
        assert!(
            resources.contains(r),
            "api-resources lacks {r}:\n{resources}"
        );
    }

    // create, then get -o yaml
    k.ok_stdin(
        &["create", "-f", "-"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: demo, namespace: default}\ndata: {k1: v1}\n",
    );
    let yaml = k.ok(&["get", "configmap", "demo", "-o", "yaml"]);
    assert!(
        yaml.contains("name: demo") && yaml.contains("k1: v1") && yaml.contains("resourceVersion:"),
        "{yaml}"
    );

    // apply, then apply again with a change: strategic merge for a built-in kind.
    apply(&k, DEPLOY_V1, &[]);
    let d = k.json(&["get", "deployment", "web"]);
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let out = apply(&k, DEPLOY_V2, &[]);
    assert!(out.contains("configured"), "{out}");
    let d = k.json(&["get", "deployment", "web"]);
    assert_eq!(d["spec"]["replicas"], 3);
    assert!(
        d["metadata"]["labels"].get("stage").is_none(),
        "label removed by 3-way apply: {d}"
    );
    let containers = d["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap();
    assert_eq!(
        containers.len(),
        2,
        "containers merged by name: {containers:?}"
    );
    assert_eq!(containers[0]["image"], "nginx:1.26");
    assert_eq!(
        containers[0]["env"].as_array().unwrap().len(),
        1,
        "env B removed"
    );
    assert_eq!(containers[1]["name"], "sidecar");
    // Unchanged re-apply.
    let out = apply(&k, DEPLOY_V2, &[]);
    assert!(out.contains("unchanged"), "{out}");

    // label / annotate
    k.ok(&["label", "configmap", "demo", "tier=web"]);
    k.ok(&["annotate", "configmap", "demo", "note=hello"]);
    let cm = k.json(&["get", "configmap", "demo"]);
    assert_eq!(cm["metadata"]["labels"]["tier"], "web");
    assert_eq!(cm["metadata"]["annotations"]["note"], "hello");
    k.ok(&["label", "configmap", "demo", "tier-"]);
    let cm = k.json(&["get", "configmap", "demo"]);
    assert!(cm["metadata"]["labels"].get("tier").is_none(), "{cm}");

    // patch --type merge | json | strategic
    k.ok(&[
        "patch",
        "configmap",
        "demo",
        "--type",
        "merge",
        "-p",
        r#"{"data":{"k2":"v2"}}"#,
    ]);
    k.ok(&[
        "patch",
        "configmap",
        "demo",
        "--type",
        "json",
        "-p",
        r#"[{"op":"add","path":"/data/k3","value":"v3"},{"op":"remove","path":"/data/k1"}]"#,
    ]);
    let cm = k.json(&["get", "configmap", "demo"]);
    assert_eq!(cm["data"], serde_json::json!({"k2": "v2", "k3": "v3"}));
    k.ok(&[
        "patch",
        "deployment",
        "web",
        "--type",
        "strategic",
        "-p",
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"busybox:1.37"}]}}}}"#,
    ]);
    let d = k.json(&["get", "deployment", "web"]);
    let containers = d["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap();
    assert_eq!(
        containers.len(),
        2,
        "strategic patch merges containers by name"
    );
    assert_eq!(containers[0]["image"], "nginx:1.26");
    assert_eq!(containers[1]["image"], "busybox:1.37");

    // delete --wait: returns once the object is gone.
    k.ok(&[
        "delete",
        "configmap",
        "demo",
        "--wait=true",
        "--timeout=60s",
    ]);
    let out = k.run(&["get", "configmap", "demo"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("NotFound"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    k.ok(&[
        "delete",
        "deployment",
        "web",
        "--wait=true",
        "--timeout=60s",
    ]);
}

#[test]
fn kubectl_server_side_apply() {
    let Some((_dir, _srv, k)) = setup() else {
        return;
    };
    let v1 = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ssa, namespace: default, labels: {a: '1'}}\ndata: {alpha: '1', beta: '2'}\n";
    let v2 = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ssa, namespace: default, labels: {a: '1'}}\ndata: {alpha: '10', beta: '2'}\n";
    let out = apply(&k, v1, &["--server-side"]);
    assert!(out.contains("serverside-applied"), "{out}");
    apply(&k, v2, &["--server-side"]);
    let cm = k.json(&["get", "configmap", "ssa"]);
    assert_eq!(cm["data"]["alpha"], "10");
    assert_eq!(cm["data"]["beta"], "2");
    assert_eq!(cm["metadata"]["labels"]["a"], "1");
}

const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.fleet.test
spec:
  group: example.fleet.test
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wg]}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
              color: {type: string}
              tags: {type: array, items: {type: string}}
"#;

#[test]
fn kubectl_crd_and_custom_resource() {
    let Some((_dir, _srv, k)) = setup() else {
        return;
    };
    apply(&k, CRD, &[]);
    k.ok(&[
        "wait",
        "--for",
        "condition=established",
        "--timeout=60s",
        "crd/widgets.example.fleet.test",
    ]);
    let resources = k.ok(&["api-resources", "--api-group", "example.fleet.test"]);
    assert!(resources.contains("widgets"), "{resources}");

    let w1 = "apiVersion: example.fleet.test/v1\nkind: Widget\nmetadata: {name: w, namespace: default}\nspec: {size: 1, color: red, tags: [a, b]}\n";
    // Drops `color`: the 3-way JSON merge patch must remove it; replaces the tags list whole.
    let w2 = "apiVersion: example.fleet.test/v1\nkind: Widget\nmetadata: {name: w, namespace: default}\nspec: {size: 2, tags: [c]}\n";
    apply(&k, w1, &[]);
    let out = apply(&k, w2, &[]);
    assert!(out.contains("configured"), "{out}");
    let w = k.json(&["get", "widget", "w"]);
    assert_eq!(
        w["spec"],
        serde_json::json!({"size": 2, "tags": ["c"]}),
        "{w}"
    );
    let short = k.ok(&["get", "wg", "-o", "name"]);
    assert_eq!(short.trim(), "widget.example.fleet.test/w");
    k.ok(&["delete", "widget", "w", "--wait=true", "--timeout=60s"]);
}

#[test]
fn kubectl_get_watch_sees_changes() {
    let Some((_dir, _srv, k)) = setup() else {
        return;
    };
    k.ok_stdin(
        &["create", "-f", "-"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: watched, namespace: default}\n",
    );
    let mut child = k
        .command(&[
            "get",
            "configmap",
            "watched",
            "-w",
            "-o",
            "jsonpath={.metadata.labels.step}{\"\\n\"}",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    // The initial state, then each change.
    let first = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("initial watch line");
    assert_eq!(first, "");
    for step in ["one", "two"] {
        k.ok(&[
            "label",
            "--overwrite",
            "configmap",
            "watched",
            &format!("step={step}"),
        ]);
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("watch line for {step}"));
        assert_eq!(line, step);
    }
    let _ = child.kill();
    let _ = child.wait();
}

const SMP_V1: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: smp, namespace: default}
spec:
  selector: {matchLabels: {app: smp}}
  template:
    metadata: {labels: {app: smp}}
    spec:
      containers:
      - name: app
        image: nginx:1.25
        env: [{name: KEEP, value: "1"}, {name: DROP, value: "2"}]
        ports: [{containerPort: 80, protocol: TCP, name: http}, {containerPort: 9090, protocol: TCP, name: metrics}]
"#;

// A container added, an env var removed, a port changed (9090 -> 9191).
const SMP_V2: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: smp, namespace: default}
spec:
  selector: {matchLabels: {app: smp}}
  template:
    metadata: {labels: {app: smp}}
    spec:
      containers:
      - name: app
        image: nginx:1.25
        env: [{name: KEEP, value: "1"}]
        ports: [{containerPort: 80, protocol: TCP, name: http}, {containerPort: 9191, protocol: TCP, name: metrics}]
      - name: sidecar
        image: busybox:1.36
"#;

/// kubectl's client-side apply sends a strategic merge patch computed from last-applied, the new
/// file and the live object; the server must merge it as Kubernetes documents: containers by name,
/// ports by containerPort(+protocol), env by name, removed fields gone, fields others set kept.
#[test]
fn kubectl_reapply_merges_strategically() {
    let Some((_dir, _srv, k)) = setup() else {
        return;
    };
    apply(&k, SMP_V1, &[]);
    // Someone else (not in the applied file) sets fields the next apply must keep.
    k.ok(&[
        "patch", "deployment", "smp", "--type", "strategic", "-p",
        r#"{"metadata":{"labels":{"owner":"ops"}},"spec":{"template":{"spec":{"containers":[{"name":"app","resources":{"limits":{"memory":"64Mi"}}}]}}}}"#,
    ]);
    apply(&k, SMP_V2, &[]);
    let d = k.json(&["get", "deployment", "smp"]);
    let containers = d["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("containers");
    let names: Vec<&str> = containers
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(
        names,
        ["app", "sidecar"],
        "containers merged by name, sidecar added: {d}"
    );
    let app = &containers[0];
    assert_eq!(
        app["env"],
        serde_json::json!([{"name": "KEEP", "value": "1"}]),
        "env DROP removed"
    );
    let ports: Vec<i64> = app["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .filter_map(|p| p["containerPort"].as_i64())
        .collect();
    assert_eq!(
        ports,
        [80, 9191],
        "port 9090 replaced by 9191, 80 kept: {app}"
    );
    assert_eq!(
        app["resources"]["limits"]["memory"], "64Mi",
        "a field set by someone else is kept"
    );
    assert_eq!(
        d["metadata"]["labels"]["owner"], "ops",
        "a label set by someone else is kept"
    );
}

/// kubectl's typed `create` subcommands send protobuf bodies.
#[test]
fn kubectl_create_subcommands_send_protobuf() {
    let Some((_dir, _srv, k)) = setup() else {
        return;
    };
    k.ok(&["create", "namespace", "pb"]);
    k.ok(&[
        "-n",
        "pb",
        "create",
        "configmap",
        "cm",
        "--from-literal=a=b",
    ]);
    k.ok(&[
        "-n",
        "pb",
        "create",
        "secret",
        "generic",
        "s",
        "--from-literal=x=y",
    ]);
    k.ok(&[
        "-n",
        "pb",
        "create",
        "deployment",
        "web",
        "--image=nginx",
        "--replicas=0",
        "--port=80",
    ]);
    k.ok(&["-n", "pb", "create", "serviceaccount", "robot"]);
    assert_eq!(
        k.json(&["-n", "pb", "get", "configmap", "cm"])["data"]["a"],
        "b"
    );
    assert_eq!(
        k.json(&["-n", "pb", "get", "secret", "s"])["data"]["x"],
        "eQ=="
    );
    let d = k.json(&["-n", "pb", "get", "deployment", "web"]);
    assert_eq!(
        d["spec"]["replicas"], 0,
        "a pointer field's zero survives protobuf: {d}"
    );
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"],
        80
    );
}
