//! Server-side apply with real kubectl: ownership, pruning of dropped fields, conflicts,
//! `--force-conflicts`, `--show-managed-fields`, and per-key merging of a CRD's list-map.
//! Skips when kubectl is missing (fails under CI=true).

use std::time::Duration;

use crate::support::kubectl;

use kubectl::{Kubectl, setup};

const DEPLOY: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app: web
    team: a
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: app
        image: nginx:1
        env:
        - {name: E1, value: one}
        - {name: E2, value: two}
      - name: sidecar
        image: busybox
";

async fn jsonpath(k: &Kubectl, what: &[&str], path: &str) -> String {
    let mut args: Vec<&str> = vec!["get"];
    args.extend_from_slice(what);
    let p = format!("jsonpath={path}");
    args.extend_from_slice(&["-o", &p]);
    k.ok(&args).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_apply_ownership_with_kubectl() {
    let Some((dir, _srv, k)) = setup().await else {
        return;
    };
    let f = k.write("dep.yaml", DEPLOY);
    let out = k.ok(&["apply", "--server-side", "-f", &f]).await;
    assert!(out.contains("serverside-applied"), "{out}");

    // Managed fields as kubectl shows them.
    let y = k
        .ok(&[
            "get",
            "deploy",
            "web",
            "-o",
            "yaml",
            "--show-managed-fields",
        ])
        .await;
    for want in [
        "manager: kubectl",
        "operation: Apply",
        "fieldsType: FieldsV1",
        "f:replicas: {}",
        "k:{\"name\":\"app\"}:",
        "k:{\"name\":\"E2\"}:",
        "f:team: {}",
    ] {
        assert!(y.contains(want), "missing {want:?} in\n{y}");
    }
    let plain = k.ok(&["get", "deploy", "web", "-o", "yaml"]).await;
    assert!(!plain.contains("managedFields"), "{plain}");

    // Applying again without a label, an env entry and a container removes them.
    k.write(
        "dep.yaml",
        &DEPLOY
            .replace("    team: a\n", "")
            .replace("        - {name: E2, value: two}\n", "")
            .replace("      - name: sidecar\n        image: busybox\n", ""),
    );
    k.ok(&["apply", "--server-side", "-f", &f]).await;
    assert_eq!(
        jsonpath(&k, &["deploy", "web"], "{.metadata.labels}").await,
        r#"{"app":"web"}"#
    );
    assert_eq!(
        jsonpath(
            &k,
            &["deploy", "web"],
            "{.spec.template.spec.containers[*].name} {.spec.template.spec.containers[0].env[*].name}"
        )
        .await,
        "app E1"
    );

    // A second manager changing replicas conflicts, with kube's message.
    let other = k.write(
        "other.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 5\n",
    );
    let (ok, _, err) = k
        .run(&[
            "apply",
            "--server-side",
            "--field-manager",
            "other",
            "-f",
            &other,
        ])
        .await;
    assert!(!ok);
    assert!(
        err.contains(r#"Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas"#),
        "{err}"
    );
    assert!(
        err.contains("--force-conflicts"),
        "kubectl's conflict help: {err}"
    );
    assert_eq!(
        jsonpath(&k, &["deploy", "web"], "{.spec.replicas}").await,
        "2"
    );
    // The same value is no conflict: it makes "other" a co-owner.
    k.write(
        "same.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  labels:\n    app: web\n",
    );
    let same = dir.path().join("same.yaml").to_string_lossy().into_owned();
    k.ok(&[
        "apply",
        "--server-side",
        "--field-manager",
        "co",
        "-f",
        &same,
    ])
    .await;

    // --force-conflicts takes ownership.
    k.ok(&[
        "apply",
        "--server-side",
        "--field-manager",
        "other",
        "--force-conflicts",
        "-f",
        &other,
    ])
    .await;
    assert_eq!(
        jsonpath(&k, &["deploy", "web"], "{.spec.replicas}").await,
        "5"
    );
    let mf = jsonpath(&k, &["deploy", "web"], "{.metadata.managedFields}").await;
    let mf: serde_json::Value = serde_json::from_str(&mf).expect("managedFields JSON");
    let entry = |m: &str| {
        mf.as_array()
            .and_then(|a| a.iter().find(|e| e["manager"] == m))
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(
        entry("other")["fieldsV1"]["f:spec"]["f:replicas"],
        serde_json::json!({})
    );
    assert!(
        entry("kubectl")["fieldsV1"]["f:spec"]
            .get("f:replicas")
            .is_none()
    );
    assert_eq!(
        entry("co")["fieldsV1"]["f:metadata"]["f:labels"]["f:app"],
        serde_json::json!({})
    );

    // kubectl (re)applying its file without replicas now leaves them to "other".
    k.write("dep.yaml", &DEPLOY.replace("  replicas: 2\n", ""));
    k.ok(&["apply", "--server-side", "-f", &f]).await;
    assert_eq!(
        jsonpath(&k, &["deploy", "web"], "{.spec.replicas}").await,
        "5"
    );

    // Other writes record their manager with operation Update.
    k.ok(&["label", "deploy", "web", "tier=front"]).await;
    let mf = jsonpath(&k, &["deploy", "web"], "{.metadata.managedFields}").await;
    let mf: serde_json::Value = serde_json::from_str(&mf).expect("managedFields JSON");
    let label = mf
        .as_array()
        .and_then(|a| a.iter().find(|e| e["manager"] == "kubectl-label"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(label["operation"], "Update");
    assert_eq!(label["apiVersion"], "apps/v1");
    assert_eq!(
        label["fieldsV1"],
        serde_json::json!({"f:metadata": {"f:labels": {"f:tier": {}}}})
    );
}

const CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
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
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    port: {type: integer}
              tags:
                type: array
                x-kubernetes-list-type: set
                items: {type: string}
              args:
                type: array
                items: {type: string}
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_apply_merges_crd_list_maps_per_key() {
    let Some((_dir, _srv, k)) = setup().await else {
        return;
    };
    let crd = k.write("crd.yaml", CRD);
    k.ok(&["apply", "--server-side", "-f", &crd]).await;
    let mut ready = false;
    for _ in 0..50 {
        let (ok, _, _) = k.run(&["get", "widgets"]).await;
        if ok {
            ready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(ready, "widgets never served");
    let a = k.write(
        "a.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  ports:\n  - {name: http, port: 80}\n  tags: [blue]\n  args: [a1]\n",
    );
    let b = k.write(
        "b.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  ports:\n  - {name: metrics, port: 9090}\n  tags: [red]\n",
    );
    k.ok(&["apply", "--server-side", "--field-manager", "a", "-f", &a])
        .await;
    k.ok(&["apply", "--server-side", "--field-manager", "b", "-f", &b])
        .await;
    assert_eq!(
        jsonpath(
            &k,
            &["widget", "w"],
            "{.spec.ports[*].name} {.spec.tags} {.spec.args}"
        )
        .await,
        r#"http metrics ["blue","red"] ["a1"]"#
    );
    let y = k
        .ok(&["get", "widget", "w", "-o", "yaml", "--show-managed-fields"])
        .await;
    assert!(
        y.contains("k:{\"name\":\"metrics\"}:") && y.contains("v:\"red\": {}"),
        "{y}"
    );
    // An atomic list (the CRD default) owned by "a" conflicts when "b" changes it.
    k.write(
        "b.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  ports:\n  - {name: metrics, port: 9090}\n  tags: [red]\n  args: [b1]\n",
    );
    let (ok, _, err) = k
        .run(&["apply", "--server-side", "--field-manager", "b", "-f", &b])
        .await;
    assert!(
        !ok && err.contains(r#"conflict with "a": .spec.args"#),
        "{err}"
    );
    // "a" drops its port and tag: only b's remain.
    k.write(
        "a.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  args: [a1]\n",
    );
    k.ok(&["apply", "--server-side", "--field-manager", "a", "-f", &a])
        .await;
    assert_eq!(
        jsonpath(&k, &["widget", "w"], "{.spec.ports[*].name} {.spec.tags}").await,
        r#"metrics ["red"]"#
    );
}
