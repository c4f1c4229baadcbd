//! `fleet test [PATH]`: reads a bundle like `fleet apply`, matches it against a hypothetical
//! cluster (name, labels, group), merges the options, applies per-cluster values templating
//! (`global.fleet.clusterLabels.*`, `${ }`), and prints the objects an agent would deploy:
//! the bundle becomes a Helm chart (its own chart, a fetched `.chart/<sha>` chart, or one
//! synthesised from `templates/` and raw YAML), is rendered by Helm, post-rendered by kustomize
//! when the bundle has a kustomization, gets the raw-YAML objects appended and the objectset
//! labels, and is printed the way upstream's `yaml.Export` writes objects.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, anyhow, bail};
use clap::Args;
use fleet_api::{Bundle, BundleDeploymentOptions, Cluster, ClusterGroup};
use fleet_render::helm::chart::File as ChartFile;
use serde_json::{Value, json};
use sha1::{Digest, Sha1};

/// Flags of `fleet test`, as upstream.
#[derive(Args, Debug)]
pub struct TestArgs {
    /// Bundle directory (default `.`).
    pub path: Option<String>,
    /// Location of the fleet.yaml (instead of `PATH/fleet.yaml`).
    #[arg(short = 'f', long = "file")]
    pub file: Option<String>,
    /// Location of a raw Bundle resource YAML (e.g. `fleet apply -o -` output) to test instead
    /// of reading a directory.
    #[arg(short = 'b', long = "bundle-file")]
    pub bundle_file: Option<String>,
    /// Cluster name of the hypothetical cluster.
    #[arg(
        short = 'N',
        long = "name",
        visible_alias = "cluster-name",
        default_value = "local"
    )]
    pub name: String,
    /// Cluster labels (`k=v`, repeatable or comma-separated).
    #[arg(short = 'l', long = "label")]
    pub label: Vec<String>,
    /// Cluster group the cluster belongs to (default `default` when nothing else selects).
    #[arg(short = 'g', long = "group")]
    pub group: Option<String>,
    /// Labels of that group.
    #[arg(short = 'L', long = "group-label")]
    pub group_label: Vec<String>,
    /// Use this target (by name) instead of matching.
    #[arg(short = 't', long = "target")]
    pub target: Option<String>,
    /// Print nothing but errors.
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
}

/// Kubernetes version upstream's `fleet test` renders for (helmdeployer's template default).
const KUBE_VERSION: &str = "v1.25.0";

/// Everything `fleet test` prints on stdout, plus the matched target name ("" = no match).
pub fn render(a: &TestArgs) -> anyhow::Result<(String, String)> {
    let cwd = std::env::current_dir()?;
    let dir = a.path.clone().unwrap_or_else(|| ".".into());
    let (mut bundle, source) = match &a.bundle_file {
        Some(f) => (read_bundle_file(&cwd.join(f))?, f.clone()),
        None => {
            let opts = fleet_bundle::ApplyOptions {
                bundle_file: a.file.clone().unwrap_or_default(),
                ..Default::default()
            };
            let built = fleet_bundle::read::bundle_from_dir(&cwd, "test", &dir, &opts)?
                .context("no resources found in the bundle directory")?;
            let fy = Path::new(&dir).join(a.file.as_deref().unwrap_or("fleet.yaml"));
            (built.bundle, fy.display().to_string())
        }
    };
    // A directory is read as bundle "test"; a Bundle file keeps its own name, as upstream.
    if a.bundle_file.is_none() || bundle.metadata.name.as_deref().unwrap_or("").is_empty() {
        bundle.metadata.name = Some("test".into());
    }
    bundle.metadata.namespace = Some("fleet-local".into());
    // Matching ignores target restrictions.
    bundle.spec.target_restrictions.clear();

    let labels = crate::apply_cmd::parse_labels(&a.label)?;
    let group_labels = crate::apply_cmd::parse_labels(&a.group_label)?;
    let group = a.group.clone().or_else(|| {
        (a.label.is_empty() && a.group_label.is_empty() && a.target.is_none())
            .then(|| "default".to_string())
    });
    let cluster: Cluster = serde_json::from_value(json!({
        "apiVersion": fleet_api::keys::API_VERSION, "kind": "Cluster",
        "metadata": {"name": a.name, "namespace": "fleet-local", "labels": labels}, "spec": {}
    }))?;
    let groups: Vec<ClusterGroup> = match &group {
        Some(g) => vec![serde_json::from_value(json!({
            "apiVersion": fleet_api::keys::API_VERSION, "kind": "ClusterGroup",
            "metadata": {"name": g, "namespace": "fleet-local", "labels": group_labels}, "spec": {"selector": {}}
        }))?],
        None => vec![],
    };
    if let Some(t) = &a.target {
        bundle.spec.targets.retain(|x| &x.name == t);
        if bundle.spec.targets.is_empty() {
            bail!("target {t:?} not found in the bundle");
        }
        for x in &mut bundle.spec.targets {
            x.cluster_name = a.name.clone();
            x.cluster_selector = None;
            x.cluster_group.clear();
            x.cluster_group_selector = None;
        }
    }
    let fleet = fleet_targeting::Fleet::new(vec![cluster], groups, vec![]);
    let mid = fleet_targeting::manifest_id(&bundle);
    let targets = fleet_targeting::targets(
        &bundle,
        &fleet,
        &mid,
        &mut fleet_targeting::Stats::default(),
    )
    .map_err(|e| anyhow!("{source}: {e}"))?;
    let Some(t) = targets.first() else {
        return Ok((String::new(), String::new()));
    };
    let name = bundle.metadata.name.clone().unwrap_or_default();
    let objs = deploy_objects(&bundle.spec.resources, &name, &mid, &t.options).map_err(|e| {
        let what = a.bundle_file.as_deref().unwrap_or(&dir);
        anyhow!("rendering bundle {what}: {e}")
    })?;
    Ok((stream(&objs)?, t.target_name.clone()))
}

/// The first Bundle of a YAML/JSON file (upstream `fleet test -b`), named after the file on errors.
fn read_bundle_file(path: &Path) -> anyhow::Result<Bundle> {
    let objs = crate::target_cmd::read_objects(path)?;
    let v = objs
        .into_iter()
        .find(|o| o.get("kind").and_then(Value::as_str) == Some("Bundle"))
        .ok_or_else(|| anyhow!("{}: no Bundle found", path.display()))?;
    serde_json::from_value(v).with_context(|| format!("{}: invalid Bundle", path.display()))
}

/// Go's `filepath.Clean` for `/`-separated relative paths, then the leading `/` dropped
/// (upstream's `joinAndClean`).
fn clean_join(dir: &str, file: &str) -> String {
    let joined = if dir.is_empty() {
        file.to_string()
    } else {
        format!("{dir}/{file}")
    };
    let mut out: Vec<&str> = Vec::new();
    for part in joined.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if out.last().is_some_and(|l| *l != "..") {
                    out.pop();
                } else if !joined.starts_with('/') {
                    out.push("..");
                }
            }
            p => out.push(p),
        }
    }
    out.join("/")
}

/// Upstream's bundle style detection: where the chart's Chart.yaml is (if any) and whether
/// the bundle is kustomize-style.
struct Style {
    chart_yaml: Option<String>,
    kustomize: bool,
}

fn determine_style(files: &BTreeMap<String, Vec<u8>>, opts: &BundleDeploymentOptions) -> Style {
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
                format!("{}/", fleet_bundle::chart::checksum_prefix(h)),
            )
        }
    };
    let kdir = opts
        .kustomize
        .as_ref()
        .map(|k| k.dir.as_str())
        .unwrap_or("");
    let kpath = if kdir.is_empty() {
        "kustomization.yaml".to_string()
    } else {
        clean_join(kdir, "kustomization.yaml")
    };
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

/// Go's `filepath.Dir` for `/`-separated paths.
fn parent_dir(p: &str) -> &str {
    p.rsplit_once('/').map(|(d, _)| d).unwrap_or(".")
}

/// What an agent deploys for a bundle's resources with these (per-cluster) options, as
/// upstream's helmdeployer renders it in template mode (`fleet test`).
pub fn deploy_objects(
    resources: &[fleet_api::BundleResource],
    bundle_id: &str,
    manifest_id: &str,
    opts: &BundleDeploymentOptions,
) -> anyhow::Result<Vec<Value>> {
    let mut files = BTreeMap::new();
    for r in resources {
        let data = fleet_bundle::read::decode_resource(r)
            .map_err(|e| anyhow!("resource {}: {e}", r.name))?;
        files.insert(r.name.clone(), data);
    }
    let style = determine_style(&files, opts);
    let helm = opts.helm.clone().unwrap_or_default();

    // The bundle as a chart: the chart directory moved to the root, or templates/ and raw
    // YAML of a raw-YAML bundle; nothing for a kustomize bundle.
    let mut chart_files: Vec<(String, Vec<u8>)> = Vec::new();
    if let Some(cy) = &style.chart_yaml {
        let from = parent_dir(cy);
        let prefix = if from == "." {
            String::new()
        } else {
            format!("{from}/")
        };
        for (n, d) in &files {
            if let Some(rest) = n.strip_prefix(&prefix) {
                chart_files.push((rest.to_string(), d.clone()));
            }
        }
    } else if !style.kustomize {
        let overlays = opts
            .yaml
            .as_ref()
            .map(|y| y.overlays.clone())
            .unwrap_or_default();
        let layout =
            fleet_render::rawyaml::prepare(&files, &overlays).map_err(|e| anyhow!("{e}"))?;
        chart_files.extend(layout.templates);
        chart_files.extend(layout.raw_files);
    }
    if style.chart_yaml.is_none() {
        let chart_name = bundle_id.rsplit('/').next().unwrap_or(bundle_id);
        chart_files.push((
            "Chart.yaml".into(),
            format!("apiVersion: v2\nname: {chart_name}\nversion: v0.0.0+{manifest_id}\n")
                .into_bytes(),
        ));
    }
    let raw_files: Vec<(String, Vec<u8>)> = chart_files
        .iter()
        .filter(|(n, _)| n.starts_with("raw-yaml/"))
        .cloned()
        .collect();
    let mut chart = fleet_render::helm::chart::load_files(
        chart_files
            .into_iter()
            .map(|(name, data)| ChartFile {
                name,
                data: Arc::from(data),
            })
            .collect(),
    )
    .map_err(|e| anyhow!("loading chart: {e}"))?;
    let ann = &mut chart.metadata.annotations;
    ann.insert(
        "fleet.cattle.io/service-account".into(),
        opts.service_account.clone(),
    );
    ann.insert("fleet.cattle.io/bundle-id".into(), bundle_id.into());
    ann.insert("fleet.cattle.io/agent-namespace".into(), String::new());
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
        fleet_api::names::helm_release_name(bundle_id)
    } else {
        helm.release_name.clone()
    };
    let values = match fleet_render::helm::values::floatify(Value::Object(
        helm.values.clone().unwrap_or_default(),
    )) {
        Value::Object(m) => m,
        _ => Default::default(),
    };
    let topts = fleet_render::helm::TemplateOptions {
        release_name,
        namespace,
        kube_version: Some(KUBE_VERSION.into()),
        ..Default::default()
    };
    let rendered =
        fleet_render::helm::template(&chart, &values, &topts).map_err(|e| anyhow!("{e}"))?;

    // Helm's release manifest: hooks are not part of it.
    let mut manifest = String::new();
    let mut objs = Vec::new();
    for doc in fleet_render::helm::manifests::split_manifests(&rendered) {
        let source = doc
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("# Source: "))
            .unwrap_or("")
            .to_string();
        let mut found = Vec::new();
        for node in fleet_render::kustomize::yamlin::parse_documents(
            &doc,
            fleet_render::kustomize::yamlin::Schema::V11,
        )
        .map_err(|e| anyhow!("{source}: line {}: {}", e.line, e.msg))?
        {
            push_objects(node.to_json(), &source, &mut found)?;
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
        let kdir = opts
            .kustomize
            .as_ref()
            .map(|k| k.dir.as_str())
            .unwrap_or("");
        let text = if objs.is_empty() {
            ""
        } else {
            manifest.as_str()
        };
        if let Some(k) = fleet_render::kustomize::post_render(&files, kdir, text)
            .map_err(|e| anyhow!("kustomize: {e}"))?
        {
            objs = k;
        }
    }

    // Raw YAML files of the chart, not templated.
    let raw = fleet_render::rawyaml::RawYamlChart {
        templates: Vec::new(),
        raw_files,
    };
    objs.extend(fleet_render::rawyaml::raw_objects(&raw).map_err(|e| anyhow!("{e}"))?);

    let set_id = fleet_api::names::safe_concat_name(&["", bundle_id]);
    let hash = hex(&Sha1::digest(set_id.as_bytes()));
    for o in &mut objs {
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
    Ok(objs)
}

/// Whether a rendered object is a Helm hook (not part of the release manifest).
fn is_hook(o: &Value) -> bool {
    o.pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .is_some_and(|a| a.contains_key("helm.sh/hook"))
}

/// Upstream's `yaml.ToObjects` for one document: empty documents are skipped, `*List` kinds
/// flattened, and an object without kind is an error.
fn push_objects(v: Value, source: &str, out: &mut Vec<Value>) -> anyhow::Result<()> {
    match &v {
        Value::Null => return Ok(()),
        Value::Object(m) if m.is_empty() => return Ok(()),
        Value::Object(_) => {}
        other => bail!(
            "{source}: expected a Kubernetes object, got {}",
            match other {
                Value::Array(_) => "a list",
                _ => "a scalar",
            }
        ),
    }
    let kind = v.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind.is_empty() {
        bail!("{source}: Object 'Kind' is missing in the rendered manifest");
    }
    if kind.ends_with("List")
        && let Some(Value::Array(items)) = v.get("items")
    {
        for it in items.clone() {
            push_objects(it, source, out)?;
        }
        return Ok(());
    }
    out.push(v);
    Ok(())
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Upstream's `yaml.Export`: each object cleaned for export, documents joined by `\n---\n`.
fn stream(objs: &[Value]) -> anyhow::Result<String> {
    let mut docs = Vec::with_capacity(objs.len());
    for o in objs {
        let has_name = ["name", "generateName"].iter().any(|k| {
            o.pointer(&format!("/metadata/{k}"))
                .and_then(Value::as_str)
                .is_some_and(|s| !s.is_empty())
        });
        if !has_name {
            bail!(
                "either name or generateName must be set on obj: {} {}",
                o.get("apiVersion").and_then(Value::as_str).unwrap_or(""),
                o.get("kind").and_then(Value::as_str).unwrap_or("")
            );
        }
        let v = fleet_bundle::export::export_value(o)?;
        docs.push(
            fleet_bundle::export::to_yaml_stream(std::slice::from_ref(&v))
                .map_err(anyhow::Error::msg)?,
        );
    }
    Ok(docs.join("\n---\n"))
}

/// Runs `fleet test`.
pub fn run(a: TestArgs) -> anyhow::Result<()> {
    let (text, matched) = render(&a)?;
    if matched.is_empty() {
        bail!("no match found");
    }
    eprintln!("# Matched: {matched}");
    if !a.quiet {
        let mut o = std::io::stdout().lock();
        o.write_all(text.as_bytes())?;
        o.flush()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(path: &std::path::Path, labels: &[&str]) -> TestArgs {
        TestArgs {
            path: Some(path.display().to_string()),
            file: None,
            bundle_file: None,
            name: "local".into(),
            label: labels.iter().map(|s| s.to_string()).collect(),
            group: None,
            group_label: vec![],
            target: None,
            quiet: false,
        }
    }

    #[test]
    fn raw_yaml_with_overlays_on_own_fixture() {
        let t = tempfile::tempdir().unwrap();
        let w = |p: &str, c: &str| {
            let f = t.path().join(p);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, c).unwrap();
        };
        w(
            "fleet.yaml",
            "namespace: app\ntargetCustomizations:\n- name: prod\n  clusterSelector: {matchLabels: {env: prod}}\n  yaml: {overlays: [big]}\n",
        );
        w(
            "cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  size: small\n",
        );
        w("notes.yaml", "just: data\n");
        w("overlays/big/cm_patch.yaml", "data:\n  size: big\n");
        let (out, matched) = render(&args(t.path(), &["env=prod"])).unwrap();
        assert_eq!(matched, "prod");
        let docs: Vec<Value> = serde_saphyr::from_multiple(&out).unwrap();
        assert_eq!(docs.len(), 1, "{out}");
        assert_eq!(docs[0]["data"]["size"], "big");
        assert_eq!(docs[0]["metadata"]["namespace"], "app");
        assert_eq!(
            docs[0]["metadata"]["annotations"]["objectset.rio.cattle.io/id"],
            "-test"
        );
        assert_eq!(
            docs[0]["metadata"]["labels"]["objectset.rio.cattle.io/hash"],
            "c0fae66aeeea5c9703d7410307d74609c272103d"
        );
        let (out, matched) = render(&args(t.path(), &["env=dev"])).unwrap();
        assert_eq!(
            (out.is_empty(), matched.as_str()),
            (true, ""),
            "no target for a labelled cluster without group"
        );
    }

    #[test]
    fn fleet_examples_goldens() {
        let data = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/data/fleet-examples");
        if !data.is_dir() {
            assert_ne!(
                std::env::var("CI").as_deref(),
                Ok("true"),
                "{} is required under CI",
                data.display()
            );
            println!("skipping: {} absent", data.display());
            return;
        }
        let exp = |p: &str| std::fs::read_to_string(data.join("tests/expected").join(p)).unwrap();
        // Offline examples (helm-external and helm-kustomize fetch charts from the internet).
        for ex in ["manifests", "kustomize", "helm"] {
            let (out, m) = render(&args(&data.join("single-cluster").join(ex), &[])).unwrap();
            assert_eq!(m, "default");
            assert_eq!(
                out.trim_end(),
                exp(&format!("single-cluster/{ex}/test-output.yaml")).trim_end(),
                "single-cluster/{ex}"
            );
            for env in ["dev", "test", "prod"] {
                let (out, m) = render(&args(
                    &data.join("multi-cluster").join(ex),
                    &[&format!("env={env}")],
                ))
                .unwrap();
                assert_eq!(m, env);
                assert_eq!(
                    out.trim_end(),
                    exp(&format!("multi-cluster/{ex}/{env}-output.yaml")).trim_end(),
                    "multi-cluster/{ex} {env}"
                );
            }
        }
    }
}
