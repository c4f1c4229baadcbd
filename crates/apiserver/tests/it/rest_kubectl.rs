//! Real kubectl against the router served over plain HTTP on 127.0.0.1:0. Skips when kubectl is
//! missing (fails under CI=true).

use std::process::Stdio;
use std::time::Duration;

use crate::support::kubectl;

use kubectl::setup;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_apply_get_patch_delete() {
    let Some((_dir, _srv, k)) = setup().await else {
        return;
    };

    assert_eq!(k.ok(&["get", "--raw", "/readyz"]).await.trim(), "ok");
    let res = k.ok(&["api-resources"]).await;
    assert!(
        res.contains("deployments") && res.contains("deploy") && res.contains("apps/v1"),
        "{res}"
    );

    let cm = k.write(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\ndata:\n  a: \"1\"\n  b: \"2\"\n",
    );
    assert!(k.ok(&["apply", "-f", &cm]).await.contains("created"));
    k.write(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\ndata:\n  a: \"9\"\n",
    );
    assert!(k.ok(&["apply", "-f", &cm]).await.contains("configured"));
    let t = k.ok(&["get", "cm"]).await;
    assert!(
        t.starts_with("NAME") && t.contains("AGE") && t.contains("demo"),
        "{t}"
    );
    let y = k.ok(&["get", "cm", "demo", "-o", "yaml"]).await;
    assert!(
        y.contains("a: \"9\"") && !y.contains("b: \"2\""),
        "3-way SMP removed b: {y}"
    );
    k.ok(&["label", "cm", "demo", "team=x"]).await;
    k.ok(&["annotate", "cm", "demo", "note=hi"]).await;
    k.ok(&[
        "patch",
        "cm",
        "demo",
        "--type",
        "merge",
        "-p",
        r#"{"data":{"m":"1"}}"#,
    ])
    .await;
    k.ok(&[
        "patch",
        "cm",
        "demo",
        "--type",
        "json",
        "-p",
        r#"[{"op":"add","path":"/data/j","value":"2"}]"#,
    ])
    .await;
    k.ok(&[
        "patch",
        "cm",
        "demo",
        "--type",
        "strategic",
        "-p",
        r#"{"data":{"s":"3"}}"#,
    ])
    .await;
    let j = k.ok(&["get", "cm", "demo", "-o", "json"]).await;
    let v: serde_json::Value = serde_json::from_str(&j).unwrap();
    assert_eq!(v["metadata"]["labels"]["team"], "x");
    assert_eq!(v["metadata"]["annotations"]["note"], "hi");
    assert_eq!(
        (
            v["data"]["m"].as_str(),
            v["data"]["j"].as_str(),
            v["data"]["s"].as_str()
        ),
        (Some("1"), Some("2"), Some("3"))
    );
    let (ok, _, err) = k
        .run(&[
            "patch",
            "cm",
            "demo",
            "--type",
            "merge",
            "-p",
            r#"{"metadata":{"labels":{"bad":"not valid!"}}}"#,
        ])
        .await;
    assert!(
        !ok && err.contains("is invalid") && err.contains("metadata.labels"),
        "server-side 422: {err}"
    );

    // Deployment: strategic merge on containers.
    let dep = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n      - name: c\n        image: nginx:1\n";
    let f = k.write("dep.yaml", dep);
    k.ok(&["apply", "-f", &f]).await;
    k.write(
        "dep.yaml",
        &dep.replace("nginx:1", "nginx:2")
            .replace("replicas: 1", "replicas: 2"),
    );
    k.ok(&["apply", "-f", &f]).await;
    let img = k.ok(&["get", "deploy", "web", "-o", "jsonpath={.spec.template.spec.containers[0].image} {.spec.replicas} {.metadata.generation}"]).await;
    assert_eq!(img.trim(), "nginx:2 2 2");
    k.ok(&["scale", "deploy", "web", "--replicas=4"]).await;
    assert_eq!(
        k.ok(&["get", "deploy", "web", "-o", "jsonpath={.spec.replicas}"])
            .await
            .trim(),
        "4"
    );

    // Server-side apply.
    let ssa = k.write(
        "ssa.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  k: v\n",
    );
    k.ok(&["apply", "--server-side", "-f", &ssa]).await;
    k.write(
        "ssa.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  k: w\n",
    );
    k.ok(&["apply", "--server-side", "-f", &ssa]).await;
    assert_eq!(
        k.ok(&["get", "cm", "ssa", "-o", "jsonpath={.data.k}"])
            .await,
        "w"
    );

    // delete --wait (field-selector list + watch).
    let d = k
        .ok(&["delete", "cm", "demo", "--wait=true", "--timeout=20s"])
        .await;
    assert!(d.contains("deleted"), "{d}");
    let (ok, _, err) = k.run(&["get", "cm", "demo"]).await;
    assert!(!ok && err.contains("NotFound"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_crd_then_custom_resource_and_watch() {
    let Some((_dir, _srv, k)) = setup().await else {
        return;
    };
    let crd = k.write(
        "crd.yaml",
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gizmos.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gizmos, singular: gizmo, kind: Gizmo, shortNames: [gz]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
              tags: {type: array, items: {type: string}}
"#,
    );
    k.ok(&["apply", "-f", &crd]).await;
    k.ok(&[
        "wait",
        "--for=condition=Established",
        "crd/gizmos.example.com",
        "--timeout=20s",
    ])
    .await;
    let cr = k.write("cr.yaml", "apiVersion: example.com/v1\nkind: Gizmo\nmetadata:\n  name: g\nspec:\n  size: 1\n  tags: [a, b]\n");
    k.ok(&["apply", "-f", &cr]).await;
    k.write(
        "cr.yaml",
        "apiVersion: example.com/v1\nkind: Gizmo\nmetadata:\n  name: g\nspec:\n  size: 2\n",
    );
    k.ok(&["apply", "-f", &cr]).await;
    let v: serde_json::Value =
        serde_json::from_str(&k.ok(&["get", "gz", "g", "-o", "json"]).await).unwrap();
    assert_eq!(v["spec"]["size"], 2);
    assert!(
        v["spec"].get("tags").is_none(),
        "3-way merge patch removed tags: {v}"
    );

    // kubectl explain reads the CRD's schema from /openapi/v3.
    let ex = k.ok(&["explain", "gizmos.spec"]).await;
    assert!(
        ex.contains("KIND:")
            && ex.contains("Gizmo")
            && ex.contains("size")
            && ex.contains("<integer>")
            && ex.contains("<[]string>"),
        "{ex}"
    );

    // get -w sees a later create.
    let mut child = tokio::process::Command::new(&k.bin)
        .arg("--kubeconfig")
        .arg(&k.kubeconfig)
        .arg("--cache-dir")
        .arg(&k.cache)
        .args(["get", "gizmos", "-w"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn kubectl get -w");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let cr2 = k.write(
        "cr2.yaml",
        "apiVersion: example.com/v1\nkind: Gizmo\nmetadata:\n  name: later\nspec:\n  size: 3\n",
    );
    k.ok(&["apply", "-f", &cr2]).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let _ = child.start_kill();
    let out = child.wait_with_output().await.expect("output");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .any(|l| l.split_whitespace().next() == Some("g"))
            && text
                .lines()
                .any(|l| l.split_whitespace().next() == Some("later")),
        "watch output: {text} / {}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Deleting the CRD removes its objects.
    k.ok(&["delete", "-f", &crd, "--wait=true", "--timeout=20s"])
        .await;
    let (ok, _, _) = k.run(&["get", "crd", "gizmos.example.com"]).await;
    assert!(!ok);
}

/// `kubectl get` of built-in kinds shows their own columns, as on kube-apiserver.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_get_prints_builtin_columns() {
    let Some((_dir, _srv, k)) = setup().await else {
        return;
    };
    k.ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx:1.27",
        "--replicas=3",
    ])
    .await;
    let t = k.ok(&["get", "deploy"]).await;
    let header: Vec<&str> = t.lines().next().unwrap_or("").split_whitespace().collect();
    assert_eq!(
        header,
        ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"],
        "{t}"
    );
    assert!(t.lines().nth(1).unwrap_or("").starts_with("web"), "{t}");
    assert!(t.contains("0/3"), "{t}");
    // kubectl explain reads the built-in schemas from /openapi/v3.
    let ex = k.ok(&["explain", "deployment.spec.replicas"]).await;
    assert!(
        ex.contains("GROUP:") && ex.contains("apps") && ex.contains("<integer>"),
        "{ex}"
    );
    let wide = k.ok(&["get", "deploy", "-o", "wide"]).await;
    assert!(
        wide.contains("CONTAINERS") && wide.contains("nginx:1.27") && wide.contains("app=web"),
        "{wide}"
    );

    k.ok(&["create", "service", "clusterip", "web", "--tcp=80:8080"])
        .await;
    let t = k.ok(&["get", "svc", "web"]).await;
    let header: Vec<&str> = t.lines().next().unwrap_or("").split_whitespace().collect();
    assert_eq!(
        header,
        [
            "NAME",
            "TYPE",
            "CLUSTER-IP",
            "EXTERNAL-IP",
            "PORT(S)",
            "AGE"
        ],
        "{t}"
    );
    assert!(t.contains("ClusterIP") && t.contains("80/TCP"), "{t}");

    k.ok(&[
        "create",
        "secret",
        "generic",
        "s",
        "--from-literal=a=1",
        "--from-literal=b=2",
    ])
    .await;
    let t = k.ok(&["get", "secret", "s"]).await;
    let row: Vec<&str> = t.lines().nth(1).unwrap_or("").split_whitespace().collect();
    assert_eq!(row[..3], ["s", "Opaque", "2"], "{t}");

    let t = k.ok(&["get", "ns", "default"]).await;
    assert!(t.contains("STATUS") && t.contains("Active"), "{t}");
}
