//! Time of the agent-side render pipeline (`deploy::render_bundle`) for a 300-file bundle in
//! each style the agent meets most: chart-less (`templates/` + raw YAML with an overlay) and
//! kustomize (the same objects listed in a kustomization with a name prefix and labels).
//!
//! Run: `cargo bench -p fleet-render --bench deploy_render`. Prints medians (ms).

use std::time::{Duration, Instant};

use fleet_api::{BundleDeploymentOptions, BundleResource};
use fleet_render::deploy::{Release, render_bundle};

const FILES: usize = 300;
const RUNS: usize = 15;

fn res(name: String, content: String) -> BundleResource {
    BundleResource {
        name,
        content,
        ..Default::default()
    }
}

fn object(i: usize, templated: bool) -> String {
    let image = if templated {
        "{{ .Values.image }}".to_string()
    } else {
        "nginx:1.25".to_string()
    };
    match i % 3 {
        0 => format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app{i}\n  labels:\n    app: app{i}\nspec:\n  replicas: 2\n  selector:\n    matchLabels:\n      app: app{i}\n  template:\n    metadata:\n      labels:\n        app: app{i}\n    spec:\n      containers:\n      - name: main\n        image: {image}\n        ports:\n        - containerPort: 8080\n"
        ),
        1 => format!(
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: app{i}\nspec:\n  selector:\n    app: app{i}\n  ports:\n  - name: http\n    port: 80\n    targetPort: 8080\n"
        ),
        _ => format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app{i}\ndata:\n  mode: production\n  image: \"{image}\"\n"
        ),
    }
}

/// Half templates, half raw files, plus an overlay patching ten of the raw files.
fn chartless() -> (Vec<BundleResource>, BundleDeploymentOptions) {
    let mut out = Vec::new();
    for i in 0..FILES {
        if i % 2 == 0 {
            out.push(res(format!("templates/t{i:03}.yaml"), object(i, true)));
        } else {
            out.push(res(format!("raw/r{i:03}.yaml"), object(i, false)));
        }
    }
    for i in (1..FILES).step_by(2).take(10) {
        out.push(res(
            format!("overlays/prod/raw/r{i:03}_patch.yaml"),
            "metadata:\n  annotations:\n    env: prod\n".into(),
        ));
    }
    let opts = serde_json::from_value(serde_json::json!({
        "namespace": "shop",
        "yaml": {"overlays": ["prod"]},
        "helm": {"values": {"image": "nginx:1.27"}}
    }))
    .expect("options");
    (out, opts)
}

fn kustomize() -> (Vec<BundleResource>, BundleDeploymentOptions) {
    let mut out = Vec::new();
    let mut k = String::from("namePrefix: prod-\ncommonLabels:\n  team: web\nresources:\n");
    for i in 0..FILES {
        let n = format!("r{i:03}.yaml");
        k.push_str(&format!("- {n}\n"));
        out.push(res(n, object(i, false)));
    }
    out.push(res("kustomization.yaml".into(), k));
    (out, BundleDeploymentOptions::default())
}

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1000.0
}

fn main() {
    let release = Release::template("bench", "m");
    for (label, (bundle, opts)) in [("chart-less", chartless()), ("kustomize", kustomize())] {
        let mut times = Vec::with_capacity(RUNS);
        let mut count = 0;
        for _ in 0..RUNS {
            let t = Instant::now();
            let objs = render_bundle(&bundle, &release, &opts).expect("render");
            times.push(t.elapsed());
            count = objs.len();
        }
        println!(
            "deploy_render {label:<10} {FILES} files -> {count} objects: median {:.2} ms ({RUNS} runs)",
            median(times)
        );
    }
}
