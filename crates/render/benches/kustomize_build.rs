//! Kustomize build time for a 500-resource, three-level overlay stack, ours vs the real
//! kustomize v4.5.4 binary measured in the same run.
//!
//! Run: `cargo bench -p fleet-render --bench kustomize_build`. Prints medians (ms) and the
//! ratio real/ours. The real binary is found like the tests do (FLEET_KUSTOMIZE_BIN, then
//! $FLEET_TOOLS_DIR/bin, then ~/.cache/fleet-tools/bin); without it only our time prints.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const RESOURCES: usize = 500;
const RUNS: usize = 15;
/// The real binary takes seconds per build on this stack; fewer runs keep the bench short.
const REAL_RUNS: usize = 5;

fn write(p: &Path, s: &str) {
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).expect("mkdir");
    }
    std::fs::write(p, s).expect("write");
}

/// base: 500 resources (deployments, services, configmaps, service accounts) + generators;
/// mid: namespace, prefix, labels, annotations, strategic patches;
/// top: suffix, images, replicas, JSON patches, generator merge.
fn make_stack(root: &Path) -> PathBuf {
    let base = root.join("base");
    let mut res = String::new();
    let mut files = Vec::new();
    for i in 0..RESOURCES {
        let kind = i % 4;
        let name = format!("app{:03}", i / 4);
        let doc = match kind {
            0 => format!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  labels:\n    app: {name}\nspec:\n  replicas: 1\n  selector:\n    matchLabels:\n      app: {name}\n  template:\n    metadata:\n      labels:\n        app: {name}\n    spec:\n      serviceAccountName: {name}\n      containers:\n      - name: main\n        image: registry.example.com/team/{name}:1.0.0\n        args: [\"--port=8080\", \"--verbose\"]\n        envFrom:\n        - configMapRef:\n            name: {name}\n        - secretRef:\n            name: shared-secret\n        resources:\n          limits:\n            cpu: 500m\n            memory: 256Mi\n      volumes:\n      - name: cfg\n        configMap:\n          name: shared-config\n"
            ),
            1 => format!(
                "apiVersion: v1\nkind: Service\nmetadata:\n  name: {name}\nspec:\n  selector:\n    app: {name}\n  ports:\n  - name: http\n    port: 80\n    targetPort: 8080\n"
            ),
            2 => format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  LOG_LEVEL: info\n  description: \"configuration for {name}, a service that is part of the benchmark stack\"\n  config.json: '{{\"name\": \"{name}\", \"replicas\": 1, \"features\": [\"a\", \"b\"]}}'\n"
            ),
            _ => format!("apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: {name}\n"),
        };
        let file = format!("r{i:03}.yaml");
        write(&base.join(&file), &doc);
        files.push(file);
    }
    let _ = writeln!(res, "resources:");
    for f in &files {
        let _ = writeln!(res, "- {f}");
    }
    res.push_str("configMapGenerator:\n- name: shared-config\n  literals:\n  - A=1\n  - B=2\nsecretGenerator:\n- name: shared-secret\n  literals:\n  - token=abc\n");
    write(&base.join("kustomization.yaml"), &res);

    let mid = root.join("mid");
    write(
        &mid.join("kustomization.yaml"),
        "namespace: bench\nnamePrefix: mid-\ncommonLabels:\n  stack: bench\ncommonAnnotations:\n  owner: perf-team\nresources:\n- ../base\npatchesStrategicMerge:\n- patch.yaml\n",
    );
    write(
        &mid.join("patch.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app000\nspec:\n  template:\n    spec:\n      containers:\n      - name: main\n        env:\n        - name: EXTRA\n          value: \"1\"\n",
    );
    let top = root.join("top");
    write(
        &top.join("kustomization.yaml"),
        "nameSuffix: -v2\nresources:\n- ../mid\nimages:\n- name: registry.example.com/team/app001\n  newTag: 2.0.0\nreplicas:\n- name: app002\n  count: 3\npatches:\n- target:\n    kind: Deployment\n    labelSelector: app=app003\n  patch: |-\n    - op: replace\n      path: /spec/replicas\n      value: 5\nconfigMapGenerator:\n- name: shared-config\n  namespace: bench\n  behavior: merge\n  literals:\n  - C=3\n",
    );
    top
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn kustomize_bin() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("FLEET_KUSTOMIZE_BIN") {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    let tools = std::env::var("FLEET_TOOLS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/fleet-tools")
        });
    Some(tools.join("bin/kustomize")).filter(|p| p.is_file())
}

fn main() {
    // `cargo test --benches` passes --bench-less args; run anyway but quickly.
    let quick = std::env::args().any(|a| a == "--test");
    let runs = if quick { 1 } else { RUNS };
    let tmp = tempfile::tempdir().expect("tempdir");
    let top = make_stack(tmp.path());

    let out = fleet_render::kustomize::build_yaml(&top).expect("our build");
    let docs = out.matches("\n---\n").count() + 1;
    for _ in 0..2.min(runs) {
        let _ = fleet_render::kustomize::build_yaml(&top).expect("warmup");
    }
    let mut ours = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        let s = fleet_render::kustomize::build_yaml(&top).expect("build");
        ours.push(t.elapsed());
        std::hint::black_box(s);
    }
    let ours_med = median(ours);
    println!(
        "kustomize build, {docs} resources (500 + 2 generated), 3-level overlay stack: ours median {:.2} ms over {runs} runs",
        ours_med.as_secs_f64() * 1e3
    );
    let Some(bin) = kustomize_bin() else {
        println!("real kustomize not found: ratio unavailable (run scripts/install-test-tools)");
        return;
    };
    let mut real = Vec::new();
    let mut real_out = Vec::new();
    for _ in 0..REAL_RUNS.min(runs) {
        let t = Instant::now();
        let o = Command::new(&bin)
            .arg("build")
            .arg(&top)
            .output()
            .expect("run kustomize");
        real.push(t.elapsed());
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        real_out = o.stdout;
    }
    let real_med = median(real);
    let identical = real_out == out.as_bytes();
    println!(
        "real kustomize v4.5.4 (process incl. startup) median {:.2} ms over {} runs; ratio real/ours = {:.1}x; output byte-identical: {identical}",
        real_med.as_secs_f64() * 1e3,
        REAL_RUNS.min(runs),
        real_med.as_secs_f64() / ours_med.as_secs_f64()
    );
    assert!(
        identical,
        "benchmark output differs from the real kustomize"
    );
}
