//! Raw-YAML bundles: overlays (replacement and `_patch` files), manifest selection and
//! decoding, end to end over a bundle's files.

use fleet_render::rawyaml;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;

fn read_tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p
                    .strip_prefix(root)
                    .expect("prefix")
                    .to_string_lossy()
                    .replace('\\', "/");
                out.insert(rel, std::fs::read(&p).expect("read"));
            }
        }
    }
    out
}

fn by_name<'a>(objs: &'a [Value], kind: &str, name: &str) -> Option<&'a Value> {
    objs.iter()
        .find(|o| o["kind"] == json!(kind) && o["metadata"]["name"] == json!(name))
}

fn bundle() -> BTreeMap<String, Vec<u8>> {
    let mut f = BTreeMap::new();
    let mut add = |k: &str, v: &str| {
        f.insert(k.to_string(), v.as_bytes().to_vec());
    };
    add("fleet.yaml", "yaml:\n  overlays: [prod]\n");
    add("README.md", "not a manifest\n");
    add(
        "app/deploy.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n  template:\n    spec:\n      containers:\n      - name: web\n        image: web:1\n      - name: side\n        image: side:1\n",
    );
    add(
        "app/svc.yaml",
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports:\n  - port: 80\n",
    );
    add(
        "app/widget.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  items: [1, 2]\n  keep: true\n",
    );
    add(
        "overlays/prod/app/deploy_patch.yaml",
        "spec:\n  replicas: 3\n  template:\n    spec:\n      containers:\n      - name: web\n        image: web:2\n",
    );
    add(
        "overlays/prod/app/widget_patch.yaml",
        "spec:\n  items: [9]\n  keep: null\n",
    );
    add("overlays/prod/app/svc.yaml", "");
    add(
        "templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n",
    );
    add("nested/fleet.yaml", "namespace: other\n");
    add(
        "nested/skip.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: belongs-to-nested-bundle\n",
    );
    f
}

#[test]
fn overlays_patch_replace_and_select_manifests() {
    let chart = rawyaml::prepare(&bundle(), &["prod".to_string()]).expect("prepare");
    assert_eq!(
        chart
            .templates
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>(),
        vec!["templates/cm.yaml"]
    );
    let names: Vec<&str> = chart.raw_files.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        vec![
            "raw-yaml/app/deploy.yaml",
            "raw-yaml/app/svc.yaml",
            "raw-yaml/app/widget.yaml"
        ]
    );
    let objs = rawyaml::raw_objects(&chart).expect("decode");
    // The empty replacement removed the Service.
    assert!(by_name(&objs, "Service", "web").is_none());
    let d = by_name(&objs, "Deployment", "web").expect("deployment");
    assert_eq!(d["spec"]["replicas"], json!(3));
    // Strategic merge keeps the sidecar and updates the named container.
    let containers = d["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("containers");
    assert_eq!(containers.len(), 2);
    assert_eq!(containers[0]["image"], json!("web:2"));
    // Custom resource: JSON merge patch (list replaced, null deletes).
    let w = by_name(&objs, "Widget", "w").expect("widget");
    assert_eq!(w["spec"], json!({"items": [9]}));
}

#[test]
fn without_overlays_overlay_files_are_dropped() {
    let chart = rawyaml::prepare(&bundle(), &[]).expect("prepare");
    assert!(
        chart
            .raw_files
            .iter()
            .all(|(n, _)| !n.contains("overlays/"))
    );
    let objs = rawyaml::raw_objects(&chart).expect("decode");
    assert!(by_name(&objs, "Service", "web").is_some());
    let d = by_name(&objs, "Deployment", "web").expect("deployment");
    assert_eq!(d["spec"]["replicas"], json!(1));
}

#[test]
fn bad_patch_names_the_file() {
    let mut f = bundle();
    f.insert(
        "overlays/bad/app/deploy_patch.yaml".into(),
        b"spec: [unclosed\n".to_vec(),
    );
    let e = rawyaml::prepare(&f, &["bad".to_string()]).expect_err("must fail");
    assert_eq!(e.file, "overlays/bad/app/deploy_patch.yaml");
    let mut f = bundle();
    f.insert("overlays/bad/missing_patch.yaml".into(), b"a: 1\n".to_vec());
    let e = rawyaml::prepare(&f, &["bad".to_string()]).expect_err("must fail");
    assert!(e.to_string().contains("missing.yaml"), "{e}");
}

#[test]
fn shared_multi_cluster_manifests_example() {
    let Some(shared) = fleet_testkit::tools::shared_data() else {
        return;
    };
    let dir = shared.join("fleet-examples/multi-cluster/manifests");
    let files = read_tree(&dir);
    // prod: servicelb + scale3
    let chart = rawyaml::prepare(&files, &["servicelb".into(), "scale3".into()]).expect("prod");
    let objs = rawyaml::raw_objects(&chart).expect("decode");
    assert_eq!(
        by_name(&objs, "Service", "frontend").expect("svc")["spec"]["type"],
        json!("LoadBalancer")
    );
    assert_eq!(
        by_name(&objs, "Deployment", "frontend").expect("deploy")["spec"]["replicas"],
        json!(3)
    );
    // dev: noreplication empties the slave deployment and points its service at the master.
    let chart = rawyaml::prepare(&files, &["noreplication".into()]).expect("dev");
    let objs = rawyaml::raw_objects(&chart).expect("decode");
    assert!(by_name(&objs, "Deployment", "redis-slave").is_none());
    assert_eq!(
        by_name(&objs, "Service", "redis-slave").expect("svc")["spec"]["selector"]["role"],
        json!("master")
    );
    // README.md and fleet.yaml are not manifests.
    assert!(
        chart
            .raw_files
            .iter()
            .all(|(n, _)| n.ends_with(".yaml") && !n.ends_with("fleet.yaml"))
    );
}
