//! The agent-side render pipeline (`fleet_render::deploy`) on small bundles of each style:
//! raw YAML with overlays, chart-less `templates/`, kustomize, a Helm chart post-rendered by
//! kustomize, and malformed input.

use std::path::{Path, PathBuf};

use fleet_api::{BundleDeploymentOptions, BundleResource};
use fleet_render::deploy::{Release, RenderError, render_bundle};
use serde_json::{Value, json};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/deploy")
        .join(name)
}

/// A fixture directory as bundle resources (`/`-separated relative names), like `fleet apply`
/// stores them.
fn resources(dir: &Path) -> Vec<BundleResource> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<BundleResource>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap();
                let name = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join("/");
                out.push(BundleResource {
                    name,
                    content: std::fs::read_to_string(&p).unwrap(),
                    ..Default::default()
                });
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out
}

fn opts(v: Value) -> BundleDeploymentOptions {
    serde_json::from_value(v).unwrap()
}

fn names(objs: &[Value]) -> Vec<String> {
    objs.iter()
        .map(|o| {
            format!(
                "{}/{}",
                o["kind"].as_str().unwrap_or(""),
                o["metadata"]["name"].as_str().unwrap_or("")
            )
        })
        .collect()
}

/// sha1("-my-bundle"), computed independently (Python's hashlib).
const MY_BUNDLE_HASH: &str = "eced1acd9dea61152cf3ca700b2df3b49be08837";

#[test]
fn raw_yaml_overlay_objectset_labels_and_crd_keep_policy() {
    let res = resources(&fixture("rawyaml"));
    let o = opts(json!({"namespace": "shop", "yaml": {"overlays": ["prod"]}}));
    let objs = render_bundle(&res, &Release::template("my-bundle", "m1"), &o).unwrap();
    // Raw files in name order; the kind-less document is skipped; overlays/ is not deployed.
    assert_eq!(
        names(&objs),
        vec![
            "ConfigMap/app-config",
            "CustomResourceDefinition/widgets.example.com",
            "Service/app"
        ]
    );
    let cm = &objs[0];
    assert_eq!(cm["data"], json!({"size": "large", "color": "blue"}));
    assert_eq!(cm["metadata"]["namespace"], "shop", "namespace is forced");
    assert_eq!(
        cm["metadata"]["labels"],
        json!({"tier": "web", "objectset.rio.cattle.io/hash": MY_BUNDLE_HASH})
    );
    assert_eq!(
        cm["metadata"]["annotations"],
        json!({"objectset.rio.cattle.io/id": "-my-bundle"})
    );
    assert_eq!(
        objs[1]["metadata"]["annotations"]["helm.sh/resource-policy"], "keep",
        "CRDs are kept unless deleteCRDResources"
    );
    assert!(objs[2]["metadata"]["annotations"]["helm.sh/resource-policy"].is_null());

    // Without the overlay and with deleteCRDResources: the base content, no keep policy.
    let o = opts(json!({"defaultNamespace": "d", "deleteCRDResources": true}));
    let objs = render_bundle(&res, &Release::template("my-bundle", "m1"), &o).unwrap();
    assert_eq!(objs[0]["data"]["size"], "small");
    assert!(
        objs[0]["metadata"]["namespace"].is_null(),
        "defaultNamespace is not forced"
    );
    assert!(objs[1]["metadata"]["annotations"]["helm.sh/resource-policy"].is_null());
}

#[test]
fn chart_less_templates_are_rendered_by_helm_and_raw_files_are_not() {
    let res = resources(&fixture("templates"));
    let o = opts(json!({
        "defaultNamespace": "web",
        "helm": {"values": {"greeting": "hello", "extra": ["s1", "s2"]}}
    }));
    let objs = render_bundle(&res, &Release::template("web-app", "abc123"), &o).unwrap();
    // Helm's install order (the hook left out; `List`, an unknown kind, last and flattened),
    // then the raw files, untemplated.
    assert_eq!(
        names(&objs),
        vec![
            "ConfigMap/web-app-settings",
            "Secret/s1",
            "Secret/s2",
            "ServiceAccount/plain-{{ .Values.greeting }}"
        ]
    );
    assert_eq!(
        objs[0]["data"],
        json!({
            "greeting": "hello",
            "chart": "web-app",
            "version": "v0.0.0+abc123",
            "kube": "v1.25.0",
            "namespace": "web"
        })
    );
    for o in &objs {
        assert_eq!(
            o["metadata"]["labels"]["objectset.rio.cattle.io/hash"],
            "0fe1ecc773623002189cd7890656595912b99a5e"
        );
    }

    // The agent passes the cluster's version instead of the template default.
    let mut rel = Release::template("web-app", "abc123");
    rel.kube_version = "v1.30.2".into();
    let objs = render_bundle(&res, &rel, &o).unwrap();
    assert_eq!(objs[0]["data"]["kube"], "v1.30.2");
}

#[test]
fn kustomize_bundle_builds_the_overlay_dir() {
    let res = resources(&fixture("kustomize"));
    let o = opts(json!({"kustomize": {"dir": "overlays/prod"}}));
    let objs = render_bundle(&res, &Release::template("kust", "m"), &o).unwrap();
    let n = names(&objs);
    // Accumulation order (resources, then generators), as Fleet's embedded kustomize.
    assert_eq!(n.len(), 2, "{n:?}");
    assert_eq!(n[0], "Deployment/prod-web");
    assert!(
        n[1].starts_with("ConfigMap/prod-env-"),
        "generated ConfigMap with hash suffix: {n:?}"
    );
    assert_eq!(objs[1]["data"]["MODE"], "production");
    assert_eq!(objs[0]["spec"]["replicas"], 3, "patch applied");
    assert_eq!(
        objs[0]["metadata"]["labels"]["objectset.rio.cattle.io/hash"],
        "068db6b718c47239ebb95e5101098c6ebf8b8236"
    );
}

#[test]
fn helm_chart_post_rendered_by_kustomize() {
    let res = resources(&fixture("helm-kustomize"));
    let o = opts(json!({
        "helm": {"chart": "chart", "releaseName": "hello", "values": {"replicas": 2}},
        "kustomize": {"dir": "overlay"}
    }));
    let objs = render_bundle(&res, &Release::template("greeter", "m"), &o).unwrap();
    // The Helm output is the first resource of the overlay, then its own resources.
    assert_eq!(
        names(&objs),
        vec!["Deployment/edge-hello", "ConfigMap/edge-extra"]
    );
    assert_eq!(objs[0]["spec"]["replicas"], 2);
    assert_eq!(objs[0]["metadata"]["labels"]["chart"], "greeter-1.2.3");
    assert_eq!(
        objs[0]["metadata"]["labels"]["objectset.rio.cattle.io/hash"],
        "7f32200ce99b6d845aadf7bea04ef85af1de41dc"
    );
}

#[test]
fn gzip_encoded_resources_are_decoded() {
    use base64::Engine;
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: zipped\n")
        .unwrap();
    let res = vec![BundleResource {
        name: "cm.yaml".into(),
        content: base64::engine::general_purpose::STANDARD.encode(gz.finish().unwrap()),
        encoding: "base64+gz".into(),
    }];
    let objs = render_bundle(
        &res,
        &Release::template("b", "m"),
        &BundleDeploymentOptions::default(),
    )
    .unwrap();
    assert_eq!(names(&objs), vec!["ConfigMap/zipped"]);
}

#[test]
fn malformed_input_names_the_file() {
    let bad = |name: &str, content: &str| {
        vec![
            BundleResource {
                name: "good.yaml".into(),
                content: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: g\n".into(),
                ..Default::default()
            },
            BundleResource {
                name: name.into(),
                content: content.into(),
                ..Default::default()
            },
        ]
    };
    let run = |res: Vec<BundleResource>| {
        render_bundle(
            &res,
            &Release::template("b", "m"),
            &BundleDeploymentOptions::default(),
        )
        .unwrap_err()
    };

    // Bad YAML in a raw file.
    let e = run(bad(
        "apps/broken.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [unclosed\n",
    ));
    assert!(matches!(e, RenderError::RawYaml(_)), "{e:?}");
    let msg = e.to_string();
    assert!(msg.contains("apps/broken.yaml"), "{msg}");

    // Bad YAML produced by a template: Helm names the template and the line.
    let e = run(bad(
        "templates/t.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: [b\n",
    ));
    assert!(matches!(e, RenderError::Helm(_)), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.contains("YAML parse error on b/templates/t.yaml") && msg.contains("line 6"),
        "{msg}"
    );

    // A template rendering an object without kind.
    let e = run(bad("templates/k.yaml", "metadata:\n  name: x\n"));
    assert_eq!(
        e.to_string(),
        "b/templates/k.yaml: Object 'Kind' is missing in the rendered manifest"
    );

    // A template that fails to execute.
    let e = run(bad(
        "templates/f.yaml",
        "{{ required \"x is required\" .Values.x }}\n",
    ));
    assert!(matches!(e, RenderError::Helm(_)), "{e:?}");
    assert!(e.to_string().contains("b/templates/f.yaml"), "{e}");

    // An unknown content encoding.
    let mut res = bad("c.yaml", "x");
    res[1].encoding = "zstd".into();
    assert_eq!(
        run(res).to_string(),
        "resource c.yaml: unknown encoding \"zstd\""
    );

    // A broken Chart.yaml.
    let e = run(bad("Chart.yaml", "name: [x\n"));
    assert!(matches!(e, RenderError::Chart(_)), "{e:?}");
    assert!(e.to_string().starts_with("loading chart: "), "{e}");

    // A kustomization naming a missing resource.
    let e = run(bad("kustomization.yaml", "resources:\n- missing.yaml\n"));
    assert!(matches!(e, RenderError::Kustomize(_)), "{e:?}");
    assert!(e.to_string().contains("missing.yaml"), "{e}");
}
