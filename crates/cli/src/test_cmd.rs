//! `fleet test [PATH]`: reads a bundle like `fleet apply`, matches it against a hypothetical
//! cluster (name, labels, group), merges the options and prints the objects that would be
//! deployed. Raw-YAML (with overlays) and kustomize bundles render; Helm-chart bundles report
//! that chart rendering is not wired here yet.

use std::collections::BTreeMap;
use std::io::Write;

use anyhow::{Context, bail};
use clap::Args;
use fleet_api::{Bundle, Cluster, ClusterGroup};
use serde_json::{Value, json};
use sha1::{Digest, Sha1};

/// Flags of `fleet test`, as upstream.
#[derive(Args, Debug)]
pub struct TestArgs {
    /// Bundle directory (default `.`).
    pub path: Option<String>,
    /// Alternative fleet.yaml name.
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

/// Everything `fleet test` prints on stdout, plus the matched target name.
pub fn render(a: &TestArgs) -> anyhow::Result<(String, String)> {
    let cwd = std::env::current_dir()?;
    let dir = a.path.clone().unwrap_or_else(|| ".".into());
    let opts = fleet_bundle::ApplyOptions {
        bundle_file: a.bundle_file.clone().unwrap_or_default(),
        ..Default::default()
    };
    let built = fleet_bundle::read::bundle_from_dir(&cwd, "test", &dir, &opts)?
        .context("no resources found in the bundle directory")?;
    let mut bundle: Bundle = built.bundle;
    bundle.metadata.name = Some("test".into());
    bundle.metadata.namespace = Some("fleet-local".into());
    // Matching ignores target restrictions.
    bundle.spec.target_restrictions.clear();

    let labels = crate::apply_cmd::parse_labels(&a.label)?;
    let group_labels = crate::apply_cmd::parse_labels(&a.group_label)?;
    let group = a
        .group
        .clone()
        .or_else(|| (a.label.is_empty() && a.name == "local").then(|| "default".to_string()));
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
    .map_err(anyhow::Error::msg)?;
    let Some(t) = targets.first() else {
        return Ok((String::new(), String::new()));
    };
    let objs = objects(&bundle, &cwd.join(&dir), &t.options)?;
    Ok((stream(&objs)?, t.target_name.clone()))
}

fn objects(
    bundle: &Bundle,
    dir: &std::path::Path,
    opts: &fleet_api::BundleDeploymentOptions,
) -> anyhow::Result<Vec<Value>> {
    let mut files = BTreeMap::new();
    for r in &bundle.spec.resources {
        files.insert(
            r.name.clone(),
            fleet_bundle::read::decode_resource(r).map_err(anyhow::Error::msg)?,
        );
    }
    let chart = opts.helm.as_ref().map(|h| h.chart.as_str()).unwrap_or("");
    let chart_yaml = if chart.is_empty() {
        "Chart.yaml".to_string()
    } else {
        format!("{}/Chart.yaml", chart.trim_end_matches('/'))
    };
    if files.contains_key(&chart_yaml) || files.keys().any(|k| k.starts_with(".chart/")) {
        bail!(
            "this bundle is a Helm chart; `fleet test` renders raw-YAML and kustomize bundles only for now (use `fleet template`)"
        );
    }
    let kdir = opts
        .kustomize
        .as_ref()
        .map(|k| k.dir.clone())
        .unwrap_or_default();
    let kfile = if kdir.is_empty() {
        "kustomization.yaml".to_string()
    } else {
        format!("{}/kustomization.yaml", kdir.trim_end_matches('/'))
    };
    let mut out = if files.contains_key(&kfile) {
        let kd = if kdir.is_empty() {
            dir.to_path_buf()
        } else {
            dir.join(&kdir)
        };
        fleet_render::kustomize::build(&kd).map_err(|e| anyhow::anyhow!("{}: {e}", kd.display()))?
    } else {
        let overlays = opts
            .yaml
            .as_ref()
            .map(|y| y.overlays.clone())
            .unwrap_or_default();
        let chart = fleet_render::rawyaml::prepare(&files, &overlays)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        if !chart.templates.is_empty() {
            bail!(
                "files under templates/ are Helm templates; `fleet test` does not render them yet"
            );
        }
        fleet_render::rawyaml::raw_objects(&chart).map_err(|e| anyhow::anyhow!("{e}"))?
    };
    let set_id = format!("-{}", bundle.metadata.name.as_deref().unwrap_or(""));
    let hash = hex(&Sha1::digest(set_id.as_bytes()));
    for o in &mut out {
        let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut) else {
            continue;
        };
        if !opts.namespace.is_empty() {
            meta.insert("namespace".into(), Value::String(opts.namespace.clone()));
        }
        let labels = meta.entry("labels").or_insert_with(|| json!({}));
        if let Some(l) = labels.as_object_mut() {
            l.insert(
                fleet_api::keys::OBJECTSET_HASH_LABEL.into(),
                Value::String(hash.clone()),
            );
        }
        let ann = meta.entry("annotations").or_insert_with(|| json!({}));
        if let Some(an) = ann.as_object_mut() {
            an.insert(
                fleet_api::keys::OBJECTSET_ID_ANNOTATION.into(),
                Value::String(set_id.clone()),
            );
        }
        fleet_api::fleetyaml::sort_keys(o);
    }
    Ok(out)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn stream(objs: &[Value]) -> anyhow::Result<String> {
    let docs: Vec<String> = objs
        .iter()
        .map(|o| fleet_bundle::export::to_yaml_stream(std::slice::from_ref(o)))
        .collect::<Result<_, _>>()
        .map_err(anyhow::Error::msg)?;
    Ok(docs.join("\n---\n"))
}

/// Runs `fleet test`.
pub fn run(a: TestArgs) -> anyhow::Result<()> {
    let (text, matched) = render(&a)?;
    if !a.quiet {
        if !matched.is_empty() {
            eprintln!("# Matched: {matched}");
        } else {
            eprintln!("# No target matched");
        }
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
        let (out, _) = render(&args(&data.join("single-cluster/manifests"), &[])).unwrap();
        assert_eq!(
            out.trim_end(),
            exp("single-cluster/manifests/test-output.yaml").trim_end()
        );
        for env in ["dev", "test", "prod"] {
            let (out, m) = render(&args(
                &data.join("multi-cluster/manifests"),
                &[&format!("env={env}")],
            ))
            .unwrap();
            assert_eq!(m, env);
            assert_eq!(
                out.trim_end(),
                exp(&format!("multi-cluster/manifests/{env}-output.yaml")).trim_end(),
                "{env}"
            );
            // kustomize: same objects (upstream prints them in another order).
            let (out, _) = render(&args(
                &data.join("multi-cluster/kustomize"),
                &[&format!("env={env}")],
            ))
            .unwrap();
            let mut got: Vec<Value> = serde_saphyr::from_multiple(&out).unwrap();
            let mut want: Vec<Value> = serde_saphyr::from_multiple(&exp(&format!(
                "multi-cluster/kustomize/{env}-output.yaml"
            )))
            .unwrap();
            let key = |v: &Value| format!("{}/{}", v["kind"], v["metadata"]["name"]);
            got.sort_by_key(key);
            want.sort_by_key(key);
            assert_eq!(got, want, "kustomize {env}");
        }
    }
}
