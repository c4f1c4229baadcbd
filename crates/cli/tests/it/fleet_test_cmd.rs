//! `fleet test` and `fleet target` end to end on the project's own bundle fixtures
//! (`tests/fixtures/fleet-test`): a Helm bundle with per-cluster `${ }` values and
//! targetCustomizations, a chart-less `templates/` bundle, a kustomize bundle, a chart fetched
//! over HTTP (`.chart/<sha>`), and bad input.
//!
//! Outputs are compared with committed goldens (`expected/`, regenerate with
//! `FLEET_REGEN_GOLDENS=1 cargo test -p fleet-cli --test fleet_test_cmd`), and the chart and
//! kustomize parts with what the real helm v3.6.2 and kustomize v4.5.4 binaries produce for the
//! same chart and values (skipped with a message when the tools are missing, failing under
//! `CI=true`).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fleet-test")
}

fn fleet_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fleet"))
        .args(args)
        .current_dir(dir)
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("fleet runs")
}

fn fleet(args: &[&str]) -> Output {
    fleet_in(&fixtures(), args)
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "fleet failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn err(out: &Output) -> String {
    assert!(
        !out.status.success(),
        "fleet unexpectedly succeeded: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn docs(text: &str) -> Vec<Value> {
    serde_saphyr::from_multiple::<Value>(text)
        .expect("valid YAML stream")
        .into_iter()
        .filter(|v| !v.is_null())
        .collect()
}

fn skip(why: &str) {
    assert!(!fleet_testkit::in_ci(), "CI=true but {why}");
    println!("SKIP: {why}");
}

/// Compares with (or, with FLEET_REGEN_GOLDENS=1, writes) `expected/<name>`.
fn golden(name: &str, got: &str) {
    let path = fixtures().join("expected").join(name);
    if std::env::var("FLEET_REGEN_GOLDENS").as_deref() == Ok("1") {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, got).expect("write golden");
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (regenerate with FLEET_REGEN_GOLDENS=1)",
            path.display()
        )
    });
    assert_eq!(got, want, "golden {name}");
}

const PROD: &[&str] = &[
    "test",
    "helm-values",
    "-l",
    "env=prod",
    "-l",
    "region=eu-west",
    "-l",
    "zones=a_b",
    "-l",
    "replicas=3",
];

#[test]
fn helm_bundle_with_per_cluster_values_goldens() {
    let out = fleet(PROD);
    let prod = ok(&out);
    assert!(String::from_utf8_lossy(&out.stderr).contains("# Matched: prod"));
    golden("helm-values-prod.yaml", &prod);
    let objs = docs(&prod);
    let cm = &objs[0];
    assert_eq!(cm["kind"], "ConfigMap");
    assert_eq!(cm["data"]["cluster"], "local");
    assert_eq!(cm["data"]["greeting"], "hello from local in EU-WEST");
    assert_eq!(cm["data"]["zones"], "a,b");
    assert_eq!(cm["data"]["namespace"], "shop-prod", ".Release.Namespace");
    assert!(
        objs.iter()
            .all(|o| o["metadata"]["namespace"] == "shop-prod"),
        "namespace enforced on every object"
    );
    let crd = objs
        .iter()
        .find(|o| o["kind"] == "CustomResourceDefinition")
        .expect("CRD from templates/");
    assert_eq!(
        crd["metadata"]["annotations"]["helm.sh/resource-policy"],
        "keep"
    );
    assert!(
        !prod.contains("gadgets.example.org"),
        "crds/ are not part of the release manifest"
    );
    assert!(!prod.contains("web-migrate"), "hooks are not deployed");
    let dep = objs
        .iter()
        .find(|o| o["kind"] == "Deployment")
        .expect("deployment");
    assert_eq!(
        dep["spec"]["replicas"], 3,
        "templated string became a number"
    );
    assert_eq!(
        dep["spec"]["template"]["spec"]["containers"][0]["image"],
        "example.org/web:2.0"
    );

    let dev = ok(&fleet(&[
        "test",
        "helm-values",
        "-N",
        "dev-7",
        "-l",
        "env=dev",
        "-l",
        "region=us",
    ]));
    golden("helm-values-dev.yaml", &dev);
    let objs = docs(&dev);
    assert_eq!(objs[0]["data"]["cluster"], "dev-7");
    assert_eq!(objs[0]["data"]["greeting"], "hi", "chart default kept");
    assert_eq!(
        objs[0]["metadata"].get("namespace"),
        None,
        "defaultNamespace is the release namespace only"
    );
    assert_eq!(objs[0]["data"]["namespace"], "shop");

    // -q prints the match only.
    let q = fleet(&[
        "test",
        "helm-values",
        "-l",
        "env=dev",
        "-l",
        "region=x",
        "-q",
    ]);
    assert_eq!(ok(&q), "");
    assert!(String::from_utf8_lossy(&q.stderr).contains("# Matched: dev"));
    // No target for this cluster: upstream's error.
    let e = err(&fleet(&["test", "helm-values", "-l", "env=qa"]));
    assert!(e.contains("no match found"), "{e}");
}

/// Real `helm template` on the same chart with the values `fleet target` computed for the
/// cluster gives the same objects, once Fleet's post-render additions are applied.
#[test]
fn helm_part_matches_real_helm() {
    let Some(helm) = fleet_testkit::tools::helm() else {
        return skip("helm not installed (scripts/install-test-tools)");
    };
    let tmp = tempfile::tempdir().expect("tmp");
    // fleet apply -o -  →  fleet target with the hypothetical cluster.
    let bundle = ok(&fleet(&["apply", "shop", "helm-values", "-o", "-"]));
    let bundle_file = tmp.path().join("bundle.yaml");
    std::fs::write(&bundle_file, bundle).expect("write bundle");
    let clusters = tmp.path().join("clusters.yaml");
    std::fs::write(
        &clusters,
        "apiVersion: fleet.cattle.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: local\n  namespace: fleet-local\n  labels:\n    env: prod\n    region: eu-west\n    zones: a_b\n    replicas: \"3\"\nspec: {}\n",
    )
    .expect("write clusters");
    let bds = docs(&ok(&fleet(&[
        "target",
        "-b",
        bundle_file.to_str().expect("utf8"),
        "-c",
        clusters.to_str().expect("utf8"),
    ])));
    let bd = bds
        .iter()
        .find(|d| d["kind"] == "BundleDeployment")
        .expect("a BundleDeployment");
    let values = &bd["spec"]["options"]["helm"]["values"];
    assert_eq!(
        values,
        &json!({
            "cluster": "local", "env": "prod", "region": "eu-west", "replicas": 3,
            "image": {"tag": "2.0"}, "greeting": "hello from local in EU-WEST",
            "zones": ["a", "b"]
        }),
        "BundleDeployment carries the rendered values"
    );
    let values_file = tmp.path().join("values.json");
    std::fs::write(&values_file, values.to_string()).expect("write values");
    let out = Command::new(helm)
        .args(["template", "web"])
        .arg(fixtures().join("helm-values/chart"))
        .args([
            "--namespace",
            "shop-prod",
            "--kube-version",
            "v1.25.0",
            "-f",
        ])
        .arg(&values_file)
        .output()
        .expect("helm runs");
    let helm_out = ok(&out);
    let mut want: Vec<Value> = docs(&helm_out)
        .into_iter()
        .filter(|o| o["metadata"]["annotations"].get("helm.sh/hook").is_none())
        .collect();
    for o in &mut want {
        let meta = o["metadata"].as_object_mut().expect("metadata");
        meta.insert("namespace".into(), json!("shop-prod"));
        let labels = meta.entry("labels").or_insert_with(|| json!({}));
        labels["objectset.rio.cattle.io/hash"] = json!("c0fae66aeeea5c9703d7410307d74609c272103d");
        let ann = meta.entry("annotations").or_insert_with(|| json!({}));
        ann["objectset.rio.cattle.io/id"] = json!("-test");
    }
    if let Some(crd) = want
        .iter_mut()
        .find(|o| o["kind"] == "CustomResourceDefinition")
    {
        crd["metadata"]["annotations"]["helm.sh/resource-policy"] = json!("keep");
    }
    let got = docs(&ok(&fleet(PROD)));
    assert_eq!(got, want, "fleet test vs helm template:\n{helm_out}");
}

#[test]
fn chart_less_templates_bundle() {
    let out = ok(&fleet(&[
        "test",
        "templates-only",
        "-g",
        "default",
        "-l",
        "size=xl",
    ]));
    golden("templates-only.yaml", &out);
    let objs = docs(&out);
    assert_eq!(objs.len(), 2, "notes.yaml is not an object: {out}");
    assert_eq!(objs[0]["metadata"]["name"], "test-settings");
    assert_eq!(objs[0]["data"]["chart"], "test", "synthesised Chart.yaml");
    assert_eq!(objs[0]["data"]["synthesized"], "true");
    assert_eq!(objs[0]["data"]["size"], "xl");
    assert_eq!(
        objs[1]["data"]["literal"], "{{ .Values.color }}",
        "raw YAML outside templates/ is not templated"
    );
    // Without the label the cluster is not labelled at all, so no `${ }` processing happens
    // (upstream skips pre-processing for clusters without usable labels).
    let out = ok(&fleet(&["test", "templates-only"]));
    assert_eq!(docs(&out)[0]["data"]["size"], "${ .ClusterLabels.size }");
}

#[test]
fn kustomize_bundle() {
    let out = ok(&fleet(&["test", "kustomize", "-l", "env=prod"]));
    golden("kustomize-prod.yaml", &out);
    let out_default = ok(&fleet(&["test", "kustomize", "-l", "env=dev"]));
    golden("kustomize-default.yaml", &out_default);

    let Some(kustomize) = fleet_testkit::tools::kustomize() else {
        return skip("kustomize not installed (scripts/install-test-tools)");
    };
    for (dir, text) in [
        ("kustomize/overlays/prod", &out),
        ("kustomize", &out_default),
    ] {
        let built = Command::new(&kustomize)
            .arg("build")
            .arg(fixtures().join(dir))
            .output()
            .expect("kustomize runs");
        let key = |v: &Value| format!("{}/{}", v["kind"], v["metadata"]["name"]);
        let mut want = docs(&ok(&built));
        for o in &mut want {
            let meta = o["metadata"].as_object_mut().expect("metadata");
            meta.insert("namespace".into(), json!("kz"));
            let labels = meta.entry("labels").or_insert_with(|| json!({}));
            labels["objectset.rio.cattle.io/hash"] =
                json!("c0fae66aeeea5c9703d7410307d74609c272103d");
            let ann = meta.entry("annotations").or_insert_with(|| json!({}));
            ann["objectset.rio.cattle.io/id"] = json!("-test");
        }
        let mut got = docs(text);
        // kustomize's CLI sorts (legacy order); Fleet's embedded kustomize keeps build order.
        want.sort_by_key(key);
        got.sort_by_key(key);
        assert_eq!(got, want, "{dir}");
    }
}

/// Serves one file over HTTP on 127.0.0.1 (any path), for `helm.chart: http://...`.
fn serve_once(body: Vec<u8>) -> (String, std::thread::JoinHandle<()>) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/web-0.3.0.tgz", l.local_addr().expect("addr"));
    let h = std::thread::spawn(move || {
        if let Ok((mut s, _)) = l.accept() {
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/gzip\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = s.write_all(head.as_bytes());
            let _ = s.write_all(&body);
        }
    });
    (url, h)
}

#[test]
fn fetched_chart_renders_like_local_chart() {
    let tmp = tempfile::tempdir().expect("tmp");
    fleet_testkit::fs::copy_dir(
        &fixtures().join("helm-values/chart"),
        &tmp.path().join("pkg/web"),
    );
    let tgz = tmp.path().join("web-0.3.0.tgz");
    let st = Command::new("tar")
        .arg("-czf")
        .arg(&tgz)
        .arg("-C")
        .arg(tmp.path().join("pkg"))
        .arg("web")
        .status();
    if !st.is_ok_and(|s| s.success()) {
        return skip("tar could not build the chart archive");
    }
    let (url, server) = serve_once(std::fs::read(&tgz).expect("tgz"));
    let values = "  releaseName: web\n  values:\n    cluster: ${ .ClusterName }\n    replicas: 2\n";
    let remote = tmp.path().join("remote");
    std::fs::create_dir_all(&remote).expect("mkdir");
    std::fs::write(
        remote.join("fleet.yaml"),
        format!("namespace: ns\nhelm:\n  chart: {url}\n{values}"),
    )
    .expect("fleet.yaml");
    let local = tmp.path().join("local");
    fleet_testkit::fs::copy_dir(&fixtures().join("helm-values/chart"), &local.join("chart"));
    std::fs::write(
        local.join("fleet.yaml"),
        format!("namespace: ns\nhelm:\n  chart: ./chart\n{values}"),
    )
    .expect("fleet.yaml");
    let got = ok(&fleet_in(
        tmp.path(),
        &["test", "remote", "-g", "default", "-l", "a=b"],
    ));
    server.join().expect("server thread");
    let want = ok(&fleet_in(
        tmp.path(),
        &["test", "local", "-g", "default", "-l", "a=b"],
    ));
    assert_eq!(got, want);
    assert!(got.contains("cluster: local"), "{got}");
}

#[test]
fn bad_input_names_the_file() {
    let e = err(&fleet(&[
        "test",
        "bad-values",
        "-g",
        "default",
        "-l",
        "a=b",
    ]));
    assert!(e.contains("bad-values/fleet.yaml"), "{e}");
    assert!(
        e.contains(
            r#"executing "values" at <.ClusterLabels.zone>: map has no entry for key "zone""#
        ),
        "{e}"
    );
    assert!(e.contains("cluster fleet-local/local"), "{e}");

    let e = err(&fleet(&["test", "bad-template"]));
    assert!(e.contains("bad-template"), "{e}");
    assert!(
        e.contains("execution error at (test/templates/broken.yaml:6:8): x is required"),
        "{e}"
    );

    let e = err(&fleet(&["test", "bad-yaml"]));
    assert!(e.contains("test/templates/x.yaml"), "{e}");
    assert!(e.contains("line 6"), "{e}");

    let e = err(&fleet(&["test", "helm-values", "-t", "nope"]));
    assert!(e.contains(r#"target "nope" not found"#), "{e}");
}

/// Helm output post-rendered by kustomize: the same as running real helm, injecting its output
/// as `fleet-manifests.yaml` first in the overlay's resources, and running real kustomize.
#[test]
fn helm_output_post_rendered_by_kustomize() {
    let out = ok(&fleet(&[
        "test",
        "helm-kustomize",
        "-g",
        "default",
        "-l",
        "team=blue",
    ]));
    golden("helm-kustomize.yaml", &out);
    let objs = docs(&out);
    assert_eq!(
        objs[0]["spec"]["type"], "NodePort",
        "overlay patched the chart's Service"
    );
    assert_eq!(objs[0]["metadata"]["labels"]["owner"], "blue");

    let (Some(helm), Some(kustomize)) = (
        fleet_testkit::tools::helm(),
        fleet_testkit::tools::kustomize(),
    ) else {
        return skip("helm or kustomize not installed (scripts/install-test-tools)");
    };
    let tmp = tempfile::tempdir().expect("tmp");
    let overlay = tmp.path().join("overlay");
    fleet_testkit::fs::copy_dir(&fixtures().join("helm-kustomize/overlay"), &overlay);
    let rendered = ok(&Command::new(helm)
        .args(["template", "app"])
        .arg(fixtures().join("helm-kustomize/chart"))
        .args([
            "--namespace",
            "hk",
            "--kube-version",
            "v1.25.0",
            "--set",
            "owner=blue",
        ])
        .output()
        .expect("helm runs"));
    std::fs::write(overlay.join("fleet-manifests.yaml"), rendered).expect("write");
    let k = std::fs::read_to_string(overlay.join("kustomization.yaml")).expect("read");
    std::fs::write(
        overlay.join("kustomization.yaml"),
        k.replace("resources:\n", "resources:\n- fleet-manifests.yaml\n"),
    )
    .expect("write");
    let mut want = docs(&ok(&Command::new(kustomize)
        .arg("build")
        .arg(&overlay)
        .output()
        .expect("kustomize runs")));
    for o in &mut want {
        let meta = o["metadata"].as_object_mut().expect("metadata");
        meta.insert("namespace".into(), json!("hk"));
        meta.entry("labels").or_insert_with(|| json!({}))["objectset.rio.cattle.io/hash"] =
            json!("c0fae66aeeea5c9703d7410307d74609c272103d");
        meta.entry("annotations").or_insert_with(|| json!({}))["objectset.rio.cattle.io/id"] =
            json!("-test");
    }
    let key = |v: &Value| format!("{}/{}", v["kind"], v["metadata"]["name"]);
    let mut got = objs;
    want.sort_by_key(key);
    got.sort_by_key(key);
    assert_eq!(got, want);
}

/// `-b` reads a Bundle resource (keeping its name for the objectset ID); `-f` names another
/// fleet.yaml, as upstream's flags do.
#[test]
fn bundle_file_and_fleet_yaml_flags() {
    let tmp = tempfile::tempdir().expect("tmp");
    let bundle = tmp.path().join("bundle.yaml");
    ok(&fleet(&[
        "apply",
        "shop",
        "helm-values",
        "-o",
        bundle.to_str().expect("utf8"),
    ]));
    let mut args = vec!["test", "-b", bundle.to_str().expect("utf8")];
    args.extend_from_slice(&PROD[2..]);
    let from_file = docs(&ok(&fleet(&args)));
    let from_dir = docs(&ok(&fleet(PROD)));
    assert_eq!(from_file.len(), from_dir.len());
    for (f, d) in from_file.iter().zip(&from_dir) {
        assert_eq!(f["spec"], d["spec"]);
        assert_eq!(f["data"], d["data"]);
        assert_eq!(
            f["metadata"]["annotations"]["objectset.rio.cattle.io/id"],
            "-shop-helm-values"
        );
    }

    fleet_testkit::fs::copy_dir(&fixtures().join("helm-values"), &tmp.path().join("hv"));
    std::fs::rename(
        tmp.path().join("hv/fleet.yaml"),
        tmp.path().join("hv/other.yaml"),
    )
    .expect("rename");
    let mut args = vec!["test", "hv", "-f", "other.yaml"];
    args.extend_from_slice(&PROD[2..]);
    assert_eq!(
        ok(&fleet_in(tmp.path(), &args)),
        ok(&fleet(PROD)),
        "-f names the fleet.yaml"
    );
    let e = err(&fleet_in(tmp.path(), &["test", "-b", "missing.yaml"]));
    assert!(e.contains("missing.yaml"), "{e}");
}
