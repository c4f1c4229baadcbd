//! The bundle reader on fixtures this project writes, modelled on upstream's CLI test assets.

use std::path::Path;

use crate::common::{Server, tgz, write};
use fleet_bundle::{ApplyOptions, BundleError, create_bundles};

fn names(b: &fleet_bundle::BuiltBundle) -> Vec<String> {
    b.bundle
        .spec
        .resources
        .iter()
        .map(|r| r.name.clone())
        .collect()
}

fn apply(
    root: &Path,
    paths: &[&str],
    opts: &ApplyOptions,
) -> Result<Vec<fleet_bundle::BuiltBundle>, BundleError> {
    let paths: Vec<String> = paths.iter().map(|s| s.to_string()).collect();
    create_bundles(root, "repo", &paths, opts)
}

const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n";

#[test]
fn root_and_nested_bundles() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    write(r, "README.md", "hello");
    write(r, "cm.yaml", CM);
    write(r, "app/fleet.yaml", "defaultNamespace: app\n");
    write(r, "app/deploy.yaml", CM);
    write(r, "app/sub/svc.yaml", CM);
    write(r, ".hidden/x.yaml", CM);
    write(r, "app/.secret.yaml", CM);
    let out = apply(r, &[], &ApplyOptions::default()).unwrap();
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].bundle.metadata.name.as_deref(), Some("repo"));
    // The root bundle includes the nested bundle's files, but not hidden ones.
    assert_eq!(
        names(&out[0]),
        [
            "README.md",
            "app/deploy.yaml",
            "app/fleet.yaml",
            "app/sub/svc.yaml",
            "cm.yaml"
        ]
    );
    assert_eq!(out[1].bundle.metadata.name.as_deref(), Some("repo-app"));
    assert_eq!(names(&out[1]), ["deploy.yaml", "sub/svc.yaml"]);
    assert_eq!(out[1].bundle.spec.options.default_namespace, "app");
    assert_eq!(out[1].bundle.spec.targets[0].name, "default");
    assert_eq!(out[1].bundle.spec.targets[0].cluster_group, "default");
    assert_eq!(
        out[1].bundle.metadata.namespace.as_deref(),
        Some("fleet-local")
    );
}

#[test]
fn root_without_yaml_is_not_a_bundle() {
    let t = tempfile::tempdir().unwrap();
    write(t.path(), "README.md", "only docs");
    write(t.path(), "a/fleet.yaml", "");
    write(t.path(), "a/cm.yaml", CM);
    let out = apply(t.path(), &[], &ApplyOptions::default()).unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].bundle.metadata.name.as_deref(), Some("repo-a"));
    let t2 = tempfile::tempdir().unwrap();
    write(t2.path(), "README.md", "x");
    match apply(t2.path(), &[], &ApplyOptions::default()) {
        Err(BundleError::NoResources(p)) => assert_eq!(p, ["."]),
        other => panic!("expected NoResources, got {other:?}"),
    }
}

#[test]
fn fleetignore_rules() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    write(r, "fleet.yaml", "");
    write(r, ".fleetignore", "# comment\n*.txt   \nskipdir/*\n");
    write(r, "a.yaml", CM);
    write(r, "b.txt", "x");
    write(r, "skipdir/c.yaml", CM);
    write(r, "sub/.fleetignore", "only-here.yaml\n");
    write(r, "sub/only-here.yaml", CM);
    write(r, "sub/d.txt", "x");
    write(r, "sub/deeper/only-here.yaml", CM);
    write(r, "sibling/only-here.yaml", CM);
    let out = apply(r, &[], &ApplyOptions::default()).unwrap();
    assert_eq!(names(&out[0]), ["a.yaml", "sibling/only-here.yaml"]);
}

#[test]
fn values_files_are_merged_and_excluded() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    write(
        r,
        "fleet.yaml",
        "helm:\n  chart: chart\n  values:\n    a: 1\n    nested: {x: 1}\n  valuesFiles:\n  - values/prod.yaml\n",
    );
    write(r, "chart/Chart.yaml", "name: c\nversion: 0.1.0\n");
    write(r, "values/prod.yaml", "b: 2\nnested: {y: 2}\n");
    write(
        r,
        "prod.yaml",
        "# same basename as the values file: excluded too\n",
    );
    let out = apply(r, &[], &ApplyOptions::default()).unwrap();
    assert_eq!(names(&out[0]), ["chart/Chart.yaml"]);
    let v = out[0]
        .bundle
        .spec
        .options
        .helm
        .as_ref()
        .unwrap()
        .values
        .clone()
        .unwrap();
    assert_eq!(
        serde_json::Value::Object(v),
        serde_json::json!({"a": 1, "nested": {"x": 1, "y": 2}, "b": 2})
    );
}

#[test]
fn targets_assembly() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    write(r, "cm.yaml", CM);
    write(
        r,
        "fleet.yaml",
        "helm:\n  chart: ./c\n  repo: ''\n  version: 1.0.0\ntargets:\n- clusterName: one\ntargetCustomizations:\n- name: dev\n  clusterSelector: {matchLabels: {env: dev}}\n  helm: {values: {x: 1}}\n- clusterGroup: g\n",
    );
    write(r, "c/Chart.yaml", "name: c\nversion: 1.0.0\n");
    let tf = r.join("targets.json");
    std::fs::write(&tf, r#"{"targets":[{"name":"gr","clusterGroup":"default"}],"targetRestrictions":[{"name":"gr","clusterGroup":"default"}]}"#).unwrap();
    let opts = ApplyOptions {
        targets_file: Some(tf),
        target_namespace: "tns".into(),
        ..Default::default()
    };
    let out = apply(r, &[], &opts).unwrap();
    let s = &out[0].bundle.spec;
    let tn: Vec<_> = s.targets.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tn, ["target000", "dev", "target002", "gr"]);
    assert_eq!(s.target_restrictions.len(), 1);
    // root helm chart/version propagate into target helm blocks
    let h = s.targets[1].options.helm.as_ref().unwrap();
    assert_eq!((h.chart.as_str(), h.version.as_str()), ("./c", "1.0.0"));
    assert!(s.targets.iter().all(|t| t.options.namespace == "tns"));
    assert_eq!(s.options.namespace, "tns");

    // overrideTargets replace the targets file and become restrictions.
    write(r, "fleet.yaml", "overrideTargets:\n- clusterName: only\n");
    let out = apply(r, &[], &opts).unwrap();
    let s = &out[0].bundle.spec;
    assert_eq!(s.targets.len(), 1);
    assert_eq!(s.targets[0].cluster_name, "only");
    assert_eq!(s.target_restrictions[0].cluster_name, "only");
}

#[test]
fn compression_switch_and_binary_files() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    write(r, "cm.yaml", CM);
    std::fs::write(r.join("bin.dat"), [0xff, 0xfe, 0x00]).unwrap();
    let out = apply(r, &[], &ApplyOptions::default()).unwrap();
    let enc: Vec<_> = out[0]
        .bundle
        .spec
        .resources
        .iter()
        .map(|r| r.encoding.as_str())
        .collect();
    assert_eq!(enc, ["base64+gz", ""]);
    let back = fleet_bundle::read::decode_resource(&out[0].bundle.spec.resources[0]).unwrap();
    assert_eq!(back, [0xff, 0xfe, 0x00]);
    // A bundle whose JSON reaches 1,000,000 bytes is re-read compressed.
    write(r, "big.yaml", &"# padding line\n".repeat(70_000));
    let out = apply(r, &[], &ApplyOptions::default()).unwrap();
    assert!(
        out[0]
            .bundle
            .spec
            .resources
            .iter()
            .all(|r| r.encoding == "base64+gz")
    );
    // Just below the switch stays plain.
    write(r, "big.yaml", &"# padding line\n".repeat(10_000));
    let out = apply(r, &[], &ApplyOptions::default()).unwrap();
    let big = out[0]
        .bundle
        .spec
        .resources
        .iter()
        .find(|r| r.name == "big.yaml")
        .unwrap();
    assert_eq!(big.encoding, "");
}

#[test]
fn fleet_yaml_errors_name_file_line_and_key() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    write(r, "cm.yaml", CM);
    write(
        r,
        "fleet.yaml",
        "namespace: x\nhelm:\n  releaseName: r\n  maxHistory: lots\n",
    );
    let err = apply(r, &[], &ApplyOptions::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("fleet.yaml:4:"), "{err}");
    assert!(err.contains("helm.maxHistory"), "{err}");
    write(
        r,
        "fleet.yaml",
        "dependsOn:\n- acceptedStates: [Bogus]\n  name: x\n",
    );
    let err = apply(r, &[], &ApplyOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("dependsOn[0].acceptedStates[0]") && err.contains("Bogus"),
        "{err}"
    );
    write(r, "fleet.yaml", "imageScans:\n- image: x\n");
    let err = apply(r, &[], &ApplyOptions::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("imagescan is disabled"), "{err}");
}

#[cfg(unix)]
#[test]
fn symlinks_must_stay_inside() {
    let t = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let r = t.path();
    write(r, "cm.yaml", CM);
    write(outside.path(), "secret.yaml", CM);
    std::os::unix::fs::symlink(r.join("cm.yaml"), r.join("inside.yaml")).unwrap();
    let out = apply(r, &[], &ApplyOptions::default()).unwrap();
    assert_eq!(names(&out[0]), ["cm.yaml", "inside.yaml"]);
    std::os::unix::fs::symlink(outside.path().join("secret.yaml"), r.join("escape.yaml")).unwrap();
    let err = apply(r, &[], &ApplyOptions::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("escapes"), "{err}");
}

#[test]
fn globs_labels_and_overrides() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    write(r, "apps/a/cm.yaml", CM);
    write(r, "apps/b/cm.yaml", CM);
    write(
        r,
        "apps/b/fleet.yaml",
        "labels: {team: b}\nname: custom-name\n",
    );
    write(r, "other/cm.yaml", CM);
    let mut opts = ApplyOptions::default();
    opts.labels
        .insert("fleet.cattle.io/commit".into(), "abc".into());
    opts.labels.insert("team".into(), "cli".into());
    opts.paused = true;
    opts.sync_generation = 3;
    opts.service_account = "sa".into();
    let out = apply(r, &["/apps/*"], &opts).unwrap();
    let got: Vec<_> = out
        .iter()
        .map(|b| b.bundle.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(got, ["repo-apps-a", "custom-name"]);
    let l = out[1].bundle.metadata.labels.clone().unwrap();
    assert_eq!(l["team"], "b");
    assert_eq!(l["fleet.cattle.io/commit"], "abc");
    assert!(out[0].bundle.spec.paused);
    assert_eq!(out[0].bundle.spec.options.force_sync_generation, 3);
    assert_eq!(out[0].bundle.spec.options.service_account, "sa");
}

#[test]
fn driven_scan() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    write(r, "k/base/cm.yaml", CM);
    write(r, "k/dev.yaml", "kustomize: {dir: overlays/dev}\n");
    write(r, "k/prod.yaml", "kustomize: {dir: overlays/prod}\n");
    write(r, "k/.fleetignore", "dev.yaml\n");
    let opts = ApplyOptions {
        driven_scan: true,
        ..Default::default()
    };
    let out = apply(r, &["k:dev.yaml", "k:prod.yaml"], &opts).unwrap();
    assert_eq!(out[0].bundle.metadata.name.as_deref(), Some("repo-k-dev"));
    assert_eq!(names(&out[0]), ["base/cm.yaml", "prod.yaml"]);
    assert_eq!(out[1].bundle.metadata.name.as_deref(), Some("repo-k-prod"));
    assert_eq!(names(&out[1]), ["base/cm.yaml"]);
    assert_eq!(
        out[1].bundle.spec.options.kustomize.as_ref().unwrap().dir,
        "overlays/prod"
    );
    assert!(apply(r, &["k:a:b"], &opts).is_err());
}

#[test]
fn remote_chart_from_repository_with_semver_range() {
    let srv = Server::start();
    let chart = tgz(&[
        (
            "mychart/Chart.yaml".into(),
            b"name: mychart\nversion: 1.2.0\n".to_vec(),
        ),
        ("mychart/templates/cm.yaml".into(), CM.as_bytes().to_vec()),
        ("mychart/.helmignore".into(), b"x".to_vec()),
    ]);
    srv.put("/charts/mychart-1.2.0.tgz", chart);
    srv.put(
        "/index.yaml",
        b"apiVersion: v1\nentries:\n  mychart:\n  - version: 1.2.0\n    urls: [charts/mychart-1.2.0.tgz]\n  - version: 1.1.0\n    urls: [charts/missing.tgz]\n  - version: 2.0.0\n    urls: [charts/missing.tgz]\n".to_vec(),
    );
    let t = tempfile::tempdir().unwrap();
    write(
        t.path(),
        "fleet.yaml",
        &format!(
            "helm:\n  chart: mychart\n  repo: {}\n  version: '~1.1 || ^1.2'\n",
            srv.base
        ),
    );
    let out = apply(t.path(), &[], &ApplyOptions::default()).unwrap();
    let h = out[0].bundle.spec.options.helm.clone().unwrap();
    let prefix = fleet_bundle::chart::checksum_prefix(&h);
    assert_eq!(
        names(&out[0]),
        [
            format!("{prefix}/mychart/Chart.yaml"),
            format!("{prefix}/mychart/templates/cm.yaml")
        ]
    );
    // An http(s) tgz chart URL works too, and unreachable charts are clear errors.
    write(
        t.path(),
        "fleet.yaml",
        &format!("helm:\n  chart: {}/charts/mychart-1.2.0.tgz\n", srv.base),
    );
    let out = apply(t.path(), &[], &ApplyOptions::default()).unwrap();
    assert_eq!(out[0].bundle.spec.resources.len(), 2);
    write(
        t.path(),
        "fleet.yaml",
        &format!("helm:\n  chart: {}/charts/nope.tgz\n", srv.base),
    );
    let err = apply(t.path(), &[], &ApplyOptions::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("HTTP 404"), "{err}");
}

#[test]
fn export_yaml_shape() {
    let t = tempfile::tempdir().unwrap();
    write(t.path(), "cm.yaml", CM);
    write(
        t.path(),
        "fleet.yaml",
        "annotations: {a: b, kubectl.kubernetes.io/last-applied-configuration: x}\n",
    );
    let out = apply(t.path(), &[], &ApplyOptions::default()).unwrap();
    let text = fleet_bundle::export::export_bundles(&out).unwrap();
    let v: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
    assert_eq!(v["apiVersion"], "fleet.cattle.io/v1alpha1");
    assert_eq!(v["kind"], "Bundle");
    assert_eq!(v["metadata"]["annotations"], serde_json::json!({"a": "b"}));
    assert!(v.get("status").is_none());
    assert_eq!(v["spec"]["resources"][0]["content"], CM);
}
