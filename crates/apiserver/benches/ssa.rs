//! Field-tracking overhead of the write path (harness = false):
//! `cargo bench -p fleet-apiserver --bench ssa`.
//!
//! Prints the median microseconds per call of what every write now adds: `track_update` for an
//! update of the main resource and for a `/status` write, and `apply` (a server-side apply
//! changing the spec / every data value), for a Deployment with 10 containers and a ConfigMap
//! with 200 keys; and `track_update` for the write shape of `fleet bench apiserver --scenario
//! write` (a ConfigMap with a label and a 1 KiB payload whose `bench-seq` value changes, PUT by
//! the manager that created it). For scale it also prints a plain `serde_json` decode of the
//! same object, which every write already pays. Environment: SSA_BENCH_RUNS (default 15),
//! SSA_BENCH_ITERS (default 300).

use std::hint::black_box;
use std::time::Instant;

use fleet_apiserver::builtin::builtin_resources;
use fleet_apiserver::registry::ResourceInfo;
use fleet_apiserver::ssa;
use serde_json::{Value, json};

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn info(kind: &str) -> ResourceInfo {
    match builtin_resources().into_iter().find(|r| r.kind == kind) {
        Some(i) => i,
        None => {
            eprintln!("{kind} is not built in");
            std::process::exit(1);
        }
    }
}

fn deployment(replicas: i64) -> Value {
    let containers: Vec<Value> = (0..10)
        .map(|i| {
            json!({"name": format!("c{i}"), "image": format!("registry/app{i}:1.0"),
                "args": ["--port", "8080"],
                "env": (0..5).map(|e| json!({"name": format!("E{e}"), "value": "v"})).collect::<Vec<_>>(),
                "ports": [{"containerPort": 8080 + i, "protocol": "TCP"}],
                "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}})
        })
        .collect();
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "default", "labels": {"app": "x", "tier": "web"}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "x"}},
            "template": {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": containers}}}})
}

fn configmap(v: &str) -> Value {
    let data: serde_json::Map<String, Value> = (0..200)
        .map(|i| (format!("key-{i}"), json!(format!("{v}-{i}"))))
        .collect();
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "d", "namespace": "default"}, "data": data})
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(|a, b| a.total_cmp(b));
    xs.get(xs.len() / 2).copied().unwrap_or(0.0)
}

fn time(runs: usize, iters: usize, mut f: impl FnMut()) -> f64 {
    let mut per_run = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        for _ in 0..iters {
            f();
        }
        per_run.push(t.elapsed().as_secs_f64() * 1e6 / iters as f64);
    }
    median(per_run)
}

fn bench(label: &str, info: &ResourceInfo, v1: Value, v2: Value, runs: usize, iters: usize) {
    let live = match ssa::apply(info, None, &v1, "d", "applier", false, None) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("{label}: apply failed: {}", e.message);
            std::process::exit(1);
        }
    };
    let mut updated = live.clone();
    if let (Some(dst), Some(src)) = (updated.as_object_mut(), v2.as_object()) {
        for (k, v) in src {
            if k != "metadata" {
                dst.insert(k.clone(), v.clone());
            }
        }
    }
    let bytes = serde_json::to_vec(&live).unwrap_or_default();
    let decode = time(runs, iters, || {
        black_box(serde_json::from_slice::<Value>(black_box(&bytes)).ok());
    });
    let update = time(runs, iters, || {
        black_box(ssa::track_update(
            info,
            Some(black_box(&live)),
            updated.clone(),
            "editor",
            None,
        ));
    });
    // A status write (the hot path of controllers): only `status` is compared.
    let mut with_status = live.clone();
    if let Some(m) = with_status.as_object_mut() {
        m.insert(
            "status".into(),
            json!({"observedGeneration": 1, "readyReplicas": 1}),
        );
    }
    let mut status_changed = with_status.clone();
    if let Some(m) = status_changed.as_object_mut() {
        m.insert(
            "status".into(),
            json!({"observedGeneration": 2, "readyReplicas": 2}),
        );
    }
    let status = time(runs, iters, || {
        black_box(ssa::track_update(
            info,
            Some(black_box(&with_status)),
            status_changed.clone(),
            "controller",
            Some("status"),
        ));
    });
    let apply = time(runs, iters, || {
        black_box(
            ssa::apply(
                info,
                Some(black_box(&live)),
                &v2,
                "d",
                "applier",
                false,
                None,
            )
            .ok(),
        );
    });
    println!(
        "{label:<28} object {:>6} B   decode {decode:>7.1} µs   update {update:>7.1} µs   status update {status:>7.1} µs   apply {apply:>7.1} µs",
        bytes.len()
    );
}

/// The object `fleet bench apiserver --scenario write` PUTs: `seq` changes on every update.
fn bench_configmap(seq: u64, rv: Option<u64>) -> Value {
    let mut meta = json!({"name": "bench-0", "namespace": "bench", "labels": {"app": "bench"}});
    if let (Some(rv), Some(m)) = (rv, meta.as_object_mut()) {
        m.insert("resourceVersion".into(), json!(rv.to_string()));
    }
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
        "data": {"payload": "x".repeat(1024), "bench-seq": seq.to_string()}})
}

fn bench_write_shape(runs: usize, iters: usize) {
    let info = info("ConfigMap");
    let mut created = ssa::track_update(&info, None, bench_configmap(0, None), "fleet", None);
    // What the store adds to a created object.
    if let Some(m) = created.get_mut("metadata").and_then(Value::as_object_mut) {
        m.insert("uid".into(), json!("0b5c6a1e-7a59-4f0e-9d3e-2f4f6f1c9a10"));
        m.insert("resourceVersion".into(), json!("1"));
        m.insert("creationTimestamp".into(), json!("2026-01-01T00:00:00Z"));
    }
    let live = created;
    let mut seq = 1u64;
    let update = time(runs, iters, || {
        seq += 1;
        let new = bench_configmap(seq, Some(1));
        black_box(ssa::track_update(
            &info,
            Some(black_box(&live)),
            new,
            "fleet",
            None,
        ));
    });
    // The body's own construction, included above, for scale.
    let build = time(runs, iters, || {
        seq += 1;
        black_box(bench_configmap(seq, Some(1)));
    });
    println!(
        "{:<28} update {update:>7.1} µs   (of which building the body {build:>5.1} µs)",
        "ConfigMap write (1 KiB)"
    );
}

fn main() {
    let runs = env_usize("SSA_BENCH_RUNS", 15);
    let iters = env_usize("SSA_BENCH_ITERS", 300);
    println!("median of {runs} runs x {iters} calls");
    bench(
        "Deployment (10 containers)",
        &info("Deployment"),
        deployment(1),
        deployment(2),
        runs,
        iters,
    );
    bench(
        "ConfigMap (200 keys)",
        &info("ConfigMap"),
        configmap("a"),
        configmap("b"),
        runs,
        iters,
    );
    bench_write_shape(runs, iters);
}
