//! The agent-side render pipeline: a Bundle's resources plus one target's
//! `BundleDeploymentOptions` → the Kubernetes objects the agent deploys, in order.
//!
//! This lives here (not in the CLI) so that `fleet test` and the agent run exactly the same
//! code. It follows upstream's helmdeployer: the bundle becomes a Helm chart (its own chart,
//! a fetched `.chart/<sha>` chart, or one synthesised from `templates/` and raw YAML), is
//! rendered by Helm, post-rendered by kustomize when the bundle has a kustomization, gets the
//! raw-YAML objects appended, and every object gets the objectset labels and the CRD keep
//! policy.

use std::collections::BTreeMap;
use std::sync::Arc;

use fleet_api::{BundleDeploymentOptions, BundleResource};
use fleet_patch::json::ReadPointer as _;
use serde_json::{Value, json};
use sha1::{Digest, Sha1};

use crate::helm::HelmError;
use crate::helm::chart::{File as ChartFile, Metadata};
use crate::kustomize::KustomizeError;
use crate::kustomize::yamlin::{self, Schema};
use crate::rawyaml::{self, RawYamlChart, RawYamlError};

/// Kubernetes version upstream's helmdeployer renders for in template mode (`fleet test`),
/// where no cluster is there to ask.
pub const TEMPLATE_KUBE_VERSION: &str = "v1.25.0";

/// Why a bundle could not be rendered; every variant names the bundle file (or rendered
/// template) at fault so a user can fix the repository.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// A bundle resource could not be decoded (bad base64/gzip or an unknown encoding).
    #[error("resource {name}: {msg}")]
    Decode {
        /// The resource's bundle-relative name.
        name: String,
        /// What went wrong.
        msg: String,
    },
    /// Raw-YAML preparation (overlays, `_patch` files) or parsing of a raw file failed.
    #[error("{0}")]
    RawYaml(#[from] RawYamlError),
    /// The (own or synthesised) chart could not be loaded, e.g. a bad `Chart.yaml`.
    #[error("loading chart: {0}")]
    Chart(#[from] crate::helm::chart::ChartError),
    /// Helm failed to render a template.
    #[error("{0}")]
    Helm(#[from] HelmError),
    /// A rendered template is not valid YAML.
    #[error("{file}: line {line}: {msg}")]
    Yaml {
        /// The template that produced the document (`<chart>/templates/x.yaml`).
        file: String,
        /// 1-based line within the rendered document (0 if unknown).
        line: usize,
        /// The parser's message.
        msg: String,
    },
    /// A rendered document is a list or a scalar instead of an object.
    #[error("{file}: expected a Kubernetes object, got {got}")]
    NotAnObject {
        /// The template that produced the document.
        file: String,
        /// `a list` or `a scalar`.
        got: &'static str,
    },
    /// A rendered object has no `kind`.
    #[error("{file}: Object 'Kind' is missing in the rendered manifest")]
    MissingKind {
        /// The template that produced the object.
        file: String,
    },
    /// The kustomize post-render failed.
    #[error("kustomize: {0}")]
    Kustomize(#[from] KustomizeError),
}

/// Who the rendered objects belong to and what the target cluster looks like: the inputs of
/// a render besides the bundle's content and options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Release {
    /// The bundle's name (`fleet.cattle.io/bundle-id`); names the objectset and, unless the
    /// options set one, the Helm release.
    pub bundle_id: String,
    /// The bundle's manifest id; becomes the synthesised chart's version (`v0.0.0+<id>`).
    pub manifest_id: String,
    /// Kubernetes version reported to templates (`.Capabilities.KubeVersion`).
    pub kube_version: String,
    /// The agent's namespace (`fleet.cattle.io/agent-namespace` chart annotation); empty in
    /// template mode.
    pub agent_namespace: String,
}

impl Release {
    /// The inputs upstream's `fleet test` uses: template mode, no agent namespace, and
    /// helmdeployer's default Kubernetes version.
    pub fn template(bundle_id: &str, manifest_id: &str) -> Release {
        Release {
            bundle_id: bundle_id.into(),
            manifest_id: manifest_id.into(),
            kube_version: TEMPLATE_KUBE_VERSION.into(),
            agent_namespace: String::new(),
        }
    }
}

/// The bundle resource's bytes, undoing Fleet's `base64+gz` content encoding.
pub fn decode_resource(r: &BundleResource) -> Result<Vec<u8>, RenderError> {
    r.decode().map_err(|msg| RenderError::Decode {
        name: r.name.clone(),
        msg,
    })
}

/// Go's `filepath.Clean` of the joined path, then the leading `/` dropped (upstream's
/// `joinAndClean`); an empty result stays empty.
fn clean_join(dir: &str, file: &str) -> String {
    let joined = if dir.is_empty() {
        file.to_string()
    } else {
        format!("{dir}/{file}")
    };
    let cleaned = fleet_api::paths::clean(&joined);
    match cleaned.strip_prefix('/') {
        Some(rest) => rest.to_string(),
        None if cleaned == "." => String::new(),
        None => cleaned,
    }
}

/// How a bundle is deployed, as upstream's style detection decides it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Style {
    /// Path of the chart's `Chart.yaml` among the bundle files, if the bundle is a chart.
    pub chart_yaml: Option<String>,
    /// Whether the bundle is kustomize-style (`<kustomize.dir>/kustomization.yaml` exists).
    pub kustomize: bool,
}

/// Upstream's bundle style detection: where the chart's Chart.yaml is (if any) and whether
/// the bundle is kustomize-style. A bundle that is neither is raw YAML.
pub fn determine_style(files: &BTreeMap<String, Vec<u8>>, opts: &BundleDeploymentOptions) -> Style {
    let (chart_path, external) = match &opts.helm {
        None => ("Chart.yaml".to_string(), String::new()),
        Some(h) => {
            let p = if h.chart.is_empty() {
                &h.repo
            } else {
                &h.chart
            };
            (
                clean_join(p, "Chart.yaml"),
                format!("{}/", fleet_api::names::chart_prefix(h)),
            )
        }
    };
    let kpath = clean_join(kustomize_dir(opts), "kustomization.yaml");
    let mut st = Style {
        chart_yaml: None,
        kustomize: false,
    };
    for name in files.keys() {
        if name.is_empty() {
            continue;
        }
        if *name == chart_path {
            st.chart_yaml = Some(chart_path.clone());
        } else if !external.is_empty()
            && let Some(rest) = name.strip_prefix(&external)
        {
            let parts: Vec<&str> = rest.split('/').collect();
            if parts == ["Chart.yaml"] || (parts.len() == 2 && parts[1] == "Chart.yaml") {
                st.chart_yaml = Some(name.clone());
            }
        } else if *name == kpath {
            st.kustomize = true;
        }
    }
    st
}

/// The `kustomize.dir` option ("" = bundle root).
fn kustomize_dir(opts: &BundleDeploymentOptions) -> &str {
    opts.kustomize
        .as_ref()
        .map(|k| k.dir.as_str())
        .unwrap_or("")
}

/// Go's `filepath.Dir` for `/`-separated paths.
fn parent_dir(p: &str) -> &str {
    p.rsplit_once('/').map(|(d, _)| d).unwrap_or(".")
}

/// A file's path in the chart and its bytes.
type NamedFile = (String, Vec<u8>);

/// The bundle as chart files: the chart directory moved to the root, or `templates/` and raw
/// YAML of a raw-YAML bundle (nothing for a kustomize bundle) with the metadata of the chart
/// synthesised for it (upstream makes that chart in code, so no `Chart.yaml` is read).
fn chart_files(
    files: &BTreeMap<String, Vec<u8>>,
    style: &Style,
    release: &Release,
    opts: &BundleDeploymentOptions,
) -> Result<(Vec<NamedFile>, Option<Metadata>), RenderError> {
    let mut out: Vec<NamedFile> = Vec::new();
    if let Some(cy) = &style.chart_yaml {
        let from = parent_dir(cy);
        let prefix = if from == "." {
            String::new()
        } else {
            format!("{from}/")
        };
        for (n, d) in files {
            if let Some(rest) = n.strip_prefix(&prefix) {
                out.push((rest.to_string(), d.clone()));
            }
        }
    } else {
        if !style.kustomize {
            let overlays = opts
                .yaml
                .as_ref()
                .map(|y| y.overlays.as_slice())
                .unwrap_or(&[]);
            let layout = rawyaml::prepare(files, overlays)?;
            out.extend(layout.templates);
            out.extend(layout.raw_files);
        }
        let id = &release.bundle_id;
        let chart_name = id.rsplit('/').next().unwrap_or(id);
        let metadata = Metadata {
            api_version: "v2".into(),
            name: chart_name.into(),
            version: format!("v0.0.0+{}", release.manifest_id),
            ..Default::default()
        };
        return Ok((out, Some(metadata)));
    }
    Ok((out, None))
}

/// Renders a bundle's resources for one target, the way upstream's helmdeployer does:
/// returns the objects the agent deploys, in deployment order (Helm's manifest order, or the
/// kustomize post-render's accumulation order, then the raw-YAML files), each carrying the
/// objectset hash label and id annotation. Helm hooks are left out, as they are not part of
/// a release's manifest.
pub fn render_bundle(
    resources: &[BundleResource],
    release: &Release,
    opts: &BundleDeploymentOptions,
) -> Result<Vec<Value>, RenderError> {
    let mut files = BTreeMap::new();
    for r in resources {
        files.insert(r.name.clone(), decode_resource(r)?);
    }
    let style = determine_style(&files, opts);
    let helm = opts.helm.clone().unwrap_or_default();

    let (chart_files, metadata) = chart_files(&files, &style, release, opts)?;
    let raw_files: Vec<(String, Vec<u8>)> = chart_files
        .iter()
        .filter(|(n, _)| n.starts_with("raw-yaml/"))
        .cloned()
        .collect();
    let mut chart = crate::helm::chart::load_files_with(
        chart_files
            .into_iter()
            .map(|(name, data)| ChartFile {
                name,
                data: Arc::from(data),
            })
            .collect(),
        metadata,
    )?;
    let ann = &mut chart.metadata.annotations;
    ann.insert(
        "fleet.cattle.io/service-account".into(),
        opts.service_account.clone(),
    );
    ann.insert(
        "fleet.cattle.io/bundle-id".into(),
        release.bundle_id.clone(),
    );
    ann.insert(
        "fleet.cattle.io/agent-namespace".into(),
        release.agent_namespace.clone(),
    );
    ann.insert(
        "fleet.cattle.io/keep-resources".into(),
        opts.keep_resources.to_string(),
    );

    let namespace = if !opts.namespace.is_empty() {
        opts.namespace.clone()
    } else {
        opts.default_namespace.clone()
    };
    let release_name = if helm.release_name.is_empty() {
        fleet_api::names::helm_release_name(&release.bundle_id)
    } else {
        helm.release_name.clone()
    };
    let values =
        match crate::helm::values::floatify(Value::Object(helm.values.clone().unwrap_or_default()))
        {
            Value::Object(m) => m,
            _ => Default::default(),
        };
    let topts = crate::helm::TemplateOptions {
        release_name,
        namespace,
        kube_version: Some(release.kube_version.clone()),
        ..Default::default()
    };
    let rendered = crate::helm::template(&chart, &values, &topts)?;

    // Helm's release manifest: hooks are not part of it.
    let mut manifest = String::new();
    let mut objs = Vec::new();
    for doc in crate::helm::manifests::split_manifests(&rendered) {
        let source = doc
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("# Source: "))
            .unwrap_or("")
            .to_string();
        let mut found = Vec::new();
        let nodes = yamlin::parse_documents(&doc, Schema::V11).map_err(|e| RenderError::Yaml {
            file: source.clone(),
            line: e.line,
            msg: e.msg,
        })?;
        for node in nodes {
            push_objects(node.into_json(), &source, &mut found)?;
        }
        if found.iter().any(is_hook) {
            continue;
        }
        manifest.push_str("---\n");
        manifest.push_str(&doc);
        manifest.push('\n');
        objs.extend(found);
    }

    // Kustomize post-render when the bundle holds a kustomization.
    let kustomizable = files.keys().any(|n| {
        n.ends_with("kustomization.yaml")
            || n.ends_with("kustomization.yml")
            || n.ends_with("Kustomization")
    });
    if kustomizable {
        let text = if objs.is_empty() {
            ""
        } else {
            manifest.as_str()
        };
        if let Some(k) = crate::kustomize::post_render(&files, kustomize_dir(opts), text)? {
            objs = k;
        }
    }

    // Raw YAML files of the chart, not templated.
    let raw = RawYamlChart {
        templates: Vec::new(),
        raw_files,
    };
    objs.extend(rawyaml::raw_objects(&raw)?);

    apply_objectset(&mut objs, &release.bundle_id, opts);
    Ok(objs)
}

/// Upstream's objectset bookkeeping: the hash label and id annotation by which the agent
/// finds (and prunes) what it deployed, the CRD keep policy unless `deleteCRDResources`,
/// and the forced target namespace.
fn apply_objectset(objs: &mut [Value], bundle_id: &str, opts: &BundleDeploymentOptions) {
    let set_id = fleet_api::names::safe_concat_name(&["", bundle_id]);
    let hash = hex(&Sha1::digest(set_id.as_bytes()));
    for o in objs {
        let is_crd = o.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition");
        let Some(meta) = o
            .as_object_mut()
            .map(|m| m.entry("metadata").or_insert_with(|| json!({})))
            .and_then(Value::as_object_mut)
        else {
            continue;
        };
        let labels = meta.entry("labels").or_insert_with(|| json!({}));
        if !labels.is_object() {
            *labels = json!({});
        }
        if let Some(l) = labels.as_object_mut() {
            l.insert(
                fleet_api::keys::OBJECTSET_HASH_LABEL.into(),
                Value::String(hash.clone()),
            );
        }
        let ann = meta.entry("annotations").or_insert_with(|| json!({}));
        if !ann.is_object() {
            *ann = json!({});
        }
        if let Some(an) = ann.as_object_mut() {
            an.insert(
                fleet_api::keys::OBJECTSET_ID_ANNOTATION.into(),
                Value::String(set_id.clone()),
            );
            if is_crd && !opts.delete_crd_resources {
                an.insert("helm.sh/resource-policy".into(), json!("keep"));
            }
        }
        if !opts.namespace.is_empty() {
            meta.insert("namespace".into(), Value::String(opts.namespace.clone()));
        }
    }
}

/// Whether a rendered object is a Helm hook (not part of the release manifest).
fn is_hook(o: &Value) -> bool {
    o.at("/metadata/annotations")
        .and_then(Value::as_object)
        .is_some_and(|a| a.contains_key("helm.sh/hook"))
}

/// Upstream's `yaml.ToObjects` for one document: empty documents are skipped, `*List` kinds
/// flattened, and an object without kind is an error.
fn push_objects(v: Value, source: &str, out: &mut Vec<Value>) -> Result<(), RenderError> {
    match &v {
        Value::Null => return Ok(()),
        Value::Object(m) if m.is_empty() => return Ok(()),
        Value::Object(_) => {}
        other => {
            return Err(RenderError::NotAnObject {
                file: source.into(),
                got: match other {
                    Value::Array(_) => "a list",
                    _ => "a scalar",
                },
            });
        }
    }
    let kind = v.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind.is_empty() {
        return Err(RenderError::MissingKind {
            file: source.into(),
        });
    }
    if kind.ends_with("List") && v.get("items").is_some_and(Value::is_array) {
        if let Value::Object(mut m) = v
            && let Some(Value::Array(items)) = m.remove("items")
        {
            for it in items {
                push_objects(it, source, out)?;
            }
        }
        return Ok(());
    }
    out.push(v);
    Ok(())
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_join_like_go() {
        assert_eq!(clean_join("", "Chart.yaml"), "Chart.yaml");
        assert_eq!(clean_join("./chart/", "Chart.yaml"), "chart/Chart.yaml");
        assert_eq!(clean_join("a/../b", "Chart.yaml"), "b/Chart.yaml");
        assert_eq!(clean_join("../x", "k.yaml"), "../x/k.yaml");
        assert_eq!(clean_join("/abs", "k.yaml"), "abs/k.yaml");
        assert_eq!(clean_join("/../abs", "k.yaml"), "abs/k.yaml");
        assert_eq!(clean_join("a", ".."), "");
        assert_eq!(clean_join("", "/"), "");
    }

    fn files(names: &[&str]) -> BTreeMap<String, Vec<u8>> {
        names.iter().map(|n| (n.to_string(), Vec::new())).collect()
    }

    #[test]
    fn style_detection() {
        let opts = BundleDeploymentOptions::default();
        assert_eq!(
            determine_style(&files(&["Chart.yaml", "templates/a.yaml"]), &opts),
            Style {
                chart_yaml: Some("Chart.yaml".into()),
                kustomize: false
            }
        );
        assert_eq!(
            determine_style(&files(&["kustomization.yaml", "a.yaml"]), &opts),
            Style {
                chart_yaml: None,
                kustomize: true
            }
        );
        assert_eq!(
            determine_style(&files(&["a.yaml", "sub/Chart.yaml"]), &opts),
            Style {
                chart_yaml: None,
                kustomize: false
            },
            "a Chart.yaml below the root is not the chart without helm.chart"
        );
        let opts: BundleDeploymentOptions = serde_json::from_value(json!({
            "helm": {"chart": "./sub"}, "kustomize": {"dir": "ov"}
        }))
        .unwrap();
        assert_eq!(
            determine_style(&files(&["sub/Chart.yaml", "ov/kustomization.yaml"]), &opts),
            Style {
                chart_yaml: Some("sub/Chart.yaml".into()),
                kustomize: true
            }
        );
        let opts: BundleDeploymentOptions = serde_json::from_value(json!({
            "helm": {"chart": "c", "repo": "https://r", "version": "1"}
        }))
        .unwrap();
        let Some(h) = &opts.helm else {
            panic!("helm options parsed");
        };
        let fetched = format!("{}/c/Chart.yaml", fleet_api::names::chart_prefix(h));
        assert_eq!(
            determine_style(&files(&[&fetched]), &opts).chart_yaml,
            Some(fetched)
        );
    }

    #[test]
    fn list_kinds_are_flattened_and_kindless_objects_rejected() {
        let mut out = Vec::new();
        push_objects(
            json!({"kind": "List", "items": [
                {"kind": "ConfigMap", "metadata": {"name": "a"}},
                {"kind": "ConfigMap", "metadata": {"name": "b"}}
            ]}),
            "s",
            &mut out,
        )
        .unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(out[1]["metadata"]["name"], "b");
        push_objects(Value::Null, "s", &mut out).unwrap();
        assert_eq!(out.len(), 2);
        let e = push_objects(json!({"metadata": {}}), "t/x.yaml", &mut out).unwrap_err();
        assert_eq!(
            e.to_string(),
            "t/x.yaml: Object 'Kind' is missing in the rendered manifest"
        );
        let e = push_objects(json!([1]), "t/y.yaml", &mut out).unwrap_err();
        assert_eq!(
            e.to_string(),
            "t/y.yaml: expected a Kubernetes object, got a list"
        );
    }

    #[test]
    fn decode_rejects_unknown_encoding_and_bad_base64() {
        let r = |enc: &str, content: &str| BundleResource {
            name: "a.yaml".into(),
            content: content.into(),
            encoding: enc.into(),
        };
        assert_eq!(decode_resource(&r("", "x: 1")).unwrap(), b"x: 1");
        let e = decode_resource(&r("zstd", "x")).unwrap_err().to_string();
        assert_eq!(e, "resource a.yaml: unknown encoding \"zstd\"");
        let e = decode_resource(&r("base64+gz", "!!!"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("resource a.yaml: "), "{e}");
    }
}
