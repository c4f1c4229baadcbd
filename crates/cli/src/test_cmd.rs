//! `fleet test [PATH]`: reads a bundle like `fleet apply`, matches it against a hypothetical
//! cluster (name, labels, group), merges the options, applies per-cluster values templating
//! (`global.fleet.clusterLabels.*`, `${ }`), and prints the objects an agent would deploy, the
//! way upstream's `yaml.Export` writes objects. The rendering itself is the agent's pipeline,
//! `fleet_render::deploy::render_bundle`, so `fleet test` shows exactly what an agent deploys.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, anyhow, bail};
use clap::Args;
use fleet_api::{Bundle, Cluster, ClusterGroup};
use serde_json::{Value, json};

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
    let release = fleet_render::deploy::Release::template(&name, &mid);
    let objs = fleet_render::deploy::render_bundle(&bundle.spec.resources, &release, &t.options)
        .map_err(|e| {
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
        docs.push(fleet_bundle::export::to_yaml_stream(std::slice::from_ref(
            &v,
        ))?);
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
