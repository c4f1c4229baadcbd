//! `fleet apply` (offline) on a repository of 1,000 bundles: directory walk, fleet.yaml parsing,
//! resource collection and YAML export. Prints medians.

use std::time::Instant;

use fleet_bundle::{ApplyOptions, create_bundles};

fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    for i in 0..1000 {
        let d = root.join(format!("apps/app{i:04}"));
        std::fs::create_dir_all(d.join("manifests")).expect("mkdir");
        std::fs::write(
            d.join("fleet.yaml"),
            format!("defaultNamespace: app{i}\nhelm:\n  releaseName: app{i}\n  values:\n    replicas: 2\ntargetCustomizations:\n- name: prod\n  clusterSelector:\n    matchLabels: {{env: prod}}\n  helm:\n    values: {{replicas: 5}}\n"),
        )
        .expect("write");
        for f in ["deployment", "service", "configmap"] {
            std::fs::write(
                d.join("manifests").join(format!("{f}.yaml")),
                format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {f}-{i}\ndata:\n  key: value-{i}\n  padding: {}\n", "x".repeat(200)),
            )
            .expect("write");
        }
        std::fs::write(d.join("README.md"), "docs\n").expect("write");
    }
    let opts = ApplyOptions::default();
    let mut read = Vec::new();
    let mut export = Vec::new();
    let mut n = 0;
    for _ in 0..5 {
        let t = Instant::now();
        let bundles = create_bundles(root, "bench", &["apps/*".to_string()], &opts).expect("apply");
        read.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        let text = fleet_bundle::export::export_bundles(&bundles).expect("export");
        export.push(t.elapsed().as_secs_f64());
        n = bundles.len();
        assert!(text.len() > n);
    }
    read.sort_by(|a, b| a.total_cmp(b));
    export.sort_by(|a, b| a.total_cmp(b));
    println!(
        "fleet apply: read {n} bundles (5 files each): median {:.1} ms",
        read[2] * 1e3
    );
    println!(
        "fleet apply -o: export {n} bundles to YAML: median {:.1} ms",
        export[2] * 1e3
    );
}
