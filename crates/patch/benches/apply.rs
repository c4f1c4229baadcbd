//! Benchmarks strategic merge on a realistic Deployment: apply of a kubectl-apply style patch, two-way
//! diff and three-way patch computation. Prints the median time per operation over several samples.
//!
//! Run: `cargo bench -p fleet-patch --bench apply`

use std::hint::black_box;
use std::time::Instant;

use fleet_patch::strategic;
use serde_json::{Value, json};

fn container(name: &str, image: &str, env_count: usize, port: u16) -> Value {
    let env: Vec<Value> = (0..env_count)
        .map(|i| json!({"name": format!("VAR_{i}"), "value": format!("value-{i}")}))
        .collect();
    json!({
        "name": name, "image": image,
        "env": env,
        "ports": [{"containerPort": port, "name": "http"}, {"containerPort": port + 1, "name": "metrics"}],
        "volumeMounts": [{"name": "config", "mountPath": "/etc/config"}, {"name": "data", "mountPath": "/data"}],
        "resources": {"limits": {"cpu": "500m", "memory": "256Mi"}, "requests": {"cpu": "100m"}},
        "args": ["--port", port.to_string()]
    })
}

fn deployment(containers: Vec<Value>) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web", "tier": "frontend"},
                     "annotations": {"a": "b"}},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": containers,
                    "volumes": [{"name": "config", "configMap": {"name": "cfg"}}, {"name": "data", "emptyDir": {}}],
                    "tolerations": [{"key": "dedicated", "operator": "Exists"}]
                }
            }
        }
    })
}

/// Runs `f` in batches and returns the median nanoseconds per call.
fn median_ns(mut f: impl FnMut()) -> f64 {
    let batch = 200;
    for _ in 0..batch {
        f();
    }
    let mut samples: Vec<f64> = (0..25)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..batch {
                f();
            }
            t.elapsed().as_nanos() as f64 / f64::from(batch)
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn main() {
    let schema = strategic::schema_for("apps/v1", "Deployment").expect("Deployment schema");
    let v1 = deployment(vec![
        container("web", "nginx:1.25", 20, 8080),
        container("sidecar", "envoy:1.30", 10, 9000),
    ]);
    let mut live = v1.clone();
    live["status"] = json!({"replicas": 3, "readyReplicas": 3});
    let v2 = deployment(vec![
        container("web", "nginx:1.26", 19, 8090),
        container("sidecar", "envoy:1.30", 10, 9000),
        container("logger", "fluent-bit:3", 5, 2020),
    ]);
    let patch = strategic::three_way(Some(&v1), &v2, &live, schema).expect("three-way");
    let small = json!({"spec": {"replicas": 5}});
    let size = serde_json::to_string(&live).map(|s| s.len()).unwrap_or(0);

    println!("strategic merge on a Deployment ({size} bytes JSON, 2 containers, 30 env vars):");
    let r = median_ns(|| {
        black_box(strategic::apply(black_box(&live), black_box(&patch), schema).ok());
    });
    println!(
        "  apply (kubectl-apply patch: image, env, ports, new container)  median {:>9.1} µs/op",
        r / 1000.0
    );
    let r = median_ns(|| {
        black_box(strategic::apply(black_box(&live), black_box(&small), schema).ok());
    });
    println!(
        "  apply (replicas only)                                          median {:>9.1} µs/op",
        r / 1000.0
    );
    let r = median_ns(|| {
        black_box(strategic::diff(black_box(&v1), black_box(&v2), schema).ok());
    });
    println!(
        "  diff (two-way)                                                 median {:>9.1} µs/op",
        r / 1000.0
    );
    let r = median_ns(|| {
        black_box(strategic::three_way(Some(&v1), black_box(&v2), black_box(&live), schema).ok());
    });
    println!(
        "  three_way (kubectl apply patch)                                median {:>9.1} µs/op",
        r / 1000.0
    );
    // Worst case for list merging: long merge lists (hostile or unusual input).
    let many_env = |n: usize, off: usize| -> Value {
        let env: Vec<Value> = (0..n)
            .map(|i| json!({"name": format!("V{}", i + off), "value": "x"}))
            .collect();
        json!({"spec": {"template": {"spec": {"containers": [{"name": "web", "env": env}]}}}})
    };
    let big = many_env(2000, 0);
    let big_patch = many_env(2000, 1000);
    let t = Instant::now();
    let _ = black_box(strategic::apply(&big, &big_patch, schema));
    println!(
        "  apply (2000 env vars merged with 2000, 1000 new)              single  {:>9.1} µs",
        t.elapsed().as_nanos() as f64 / 1000.0
    );
    let fins: Vec<String> = (0..5000).map(|i| format!("f/{i}")).collect();
    let fins2: Vec<String> = (2500..7500).map(|i| format!("f/{i}")).collect();
    let t = Instant::now();
    let _ = black_box(strategic::apply(
        &json!({"metadata": {"finalizers": fins}}),
        &json!({"metadata": {"finalizers": fins2}}),
        schema,
    ));
    println!(
        "  apply (5000 finalizers union 5000)                             single  {:>9.1} µs",
        t.elapsed().as_nanos() as f64 / 1000.0
    );
    let r = median_ns(|| {
        black_box(live.clone());
    });
    println!(
        "  (baseline: clone of the live object)                           median {:>9.1} µs/op",
        r / 1000.0
    );
}
