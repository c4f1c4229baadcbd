//! Fleet's kustomize post-render of Helm output: the output is injected as
//! `fleet-manifests.yaml`, prepended to the kustomization's resources, and built from the
//! bundle's in-memory files. Checked against the real kustomize when available.

use fleet_render::kustomize::{self, yamlin};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::process::Command;

const HELM_OUTPUT: &str = "---
# Source: app/templates/deploy.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: frontend
spec:
  replicas: 1
  template:
    spec:
      containers:
      - name: php
        image: frontend:v1
---
# Source: app/templates/svc.yaml
apiVersion: v1
kind: Service
metadata:
  name: frontend
spec:
  type: ClusterIP
  ports:
  - port: 80
";

fn bundle() -> BTreeMap<String, Vec<u8>> {
    let mut f = BTreeMap::new();
    let mut add = |k: &str, v: &str| {
        f.insert(k.to_string(), v.as_bytes().to_vec());
    };
    add("fleet.yaml", "kustomize:\n  dir: overlays/prod\n");
    add("Chart.yaml", "apiVersion: v2\nname: app\nversion: 0.1.0\n");
    add(
        "overlays/prod/kustomization.yaml",
        "namePrefix: prod-\ncommonLabels:\n  env: prod\npatchesStrategicMerge:\n- frontend.yaml\nconfigMapGenerator:\n- name: settings\n  literals: [MODE=prod]\n",
    );
    add(
        "overlays/prod/frontend.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: frontend\nspec:\n  replicas: 3\n",
    );
    f
}

fn key(v: &Value) -> String {
    format!("{}/{}", v["kind"], v["metadata"]["name"])
}

#[test]
fn helm_output_is_prepended_and_patched() {
    let objs = kustomize::post_render(&bundle(), "overlays/prod", HELM_OUTPUT)
        .expect("post-render")
        .expect("kustomization present");
    // Accumulation order: Helm output first, then generated objects.
    let keys: Vec<String> = objs.iter().map(key).collect();
    assert_eq!(
        keys,
        vec![
            "\"Deployment\"/\"prod-frontend\"",
            "\"Service\"/\"prod-frontend\"",
            "\"ConfigMap\"/\"prod-settings-2h42td9ggm\""
        ]
    );
    assert_eq!(objs[0]["spec"]["replicas"], json!(3));
    assert_eq!(objs[1]["spec"]["selector"], json!({"env": "prod"}));
}

#[test]
fn no_kustomization_means_no_post_render() {
    let r = kustomize::post_render(&bundle(), "", HELM_OUTPUT).expect("ok");
    assert!(r.is_none());
}

#[test]
fn empty_helm_output_leaves_kustomization_alone() {
    let mut f = bundle();
    f.insert(
        "overlays/prod/kustomization.yaml".into(),
        b"resources:\n- cm.yaml\n".to_vec(),
    );
    f.insert(
        "overlays/prod/cm.yaml".into(),
        b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: only\n".to_vec(),
    );
    let objs = kustomize::post_render(&f, "overlays/prod", "")
        .expect("post-render")
        .expect("present");
    assert_eq!(objs.len(), 1);
    assert_eq!(objs[0]["metadata"]["name"], json!("only"));
}

#[test]
fn matches_real_kustomize_on_the_same_tree() {
    let Some(bin) = fleet_testkit::tools::kustomize() else {
        return;
    };
    // Lay out what Fleet's agent builds: bundle files, fleet-manifests.yaml, and the
    // kustomization with fleet-manifests.yaml first in resources.
    let tmp = tempfile::tempdir().expect("tempdir");
    for (name, content) in bundle() {
        let p = tmp.path().join(&name);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(&p, content).expect("write");
    }
    let dir = tmp.path().join("overlays/prod");
    std::fs::write(dir.join("fleet-manifests.yaml"), HELM_OUTPUT).expect("write");
    let k = std::fs::read_to_string(dir.join("kustomization.yaml")).expect("read");
    std::fs::write(
        dir.join("kustomization.yaml"),
        format!("resources:\n- fleet-manifests.yaml\n{k}"),
    )
    .expect("write");
    let out = Command::new(&bin)
        .arg("build")
        .arg(&dir)
        .output()
        .expect("run kustomize");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("utf8");
    let mut want: Vec<Value> = yamlin::parse_documents(&text, yamlin::Schema::V3)
        .expect("parse")
        .iter()
        .map(|d| d.to_json())
        .collect();
    let mut got = kustomize::post_render(&bundle(), "overlays/prod", HELM_OUTPUT)
        .expect("post-render")
        .expect("present");
    want.sort_by_key(key);
    got.sort_by_key(key);
    assert_eq!(want, got);
}
