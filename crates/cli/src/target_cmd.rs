//! `fleet target --bundle-file B [--clusters-file C]`: prints, as YAML, the BundleDeployments the
//! bundles in B would produce for the Clusters and ClusterGroups in C (multi-document YAML or a
//! `List`, as `kubectl get clusters,clustergroups -o yaml` prints).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use fleet_api::Bundle;
use serde_json::Value;

/// Flags of `fleet target`.
#[derive(Args, Debug)]
pub struct TargetArgs {
    /// File with one or more Bundles (YAML or JSON, e.g. `fleet apply -o -` output).
    #[arg(short = 'b', long = "bundle-file")]
    pub bundle_file: PathBuf,
    /// File with Cluster, ClusterGroup, BundleNamespaceMapping and Namespace objects.
    #[arg(short = 'c', long = "clusters-file")]
    pub clusters_file: Option<PathBuf>,
    /// Namespace for bundles that have none.
    #[arg(
        short = 'n',
        long = "namespace",
        env = "NAMESPACE",
        default_value = "fleet-local"
    )]
    pub namespace: String,
}

/// Reads every object of a YAML stream, flattening `List`s.
pub fn read_objects(path: &Path) -> anyhow::Result<Vec<Value>> {
    let text = std::fs::read_to_string(path).with_context(|| path.display().to_string())?;
    let docs: Vec<Value> = fleet_bundle::yaml::from_multiple(path, &text)?;
    let mut out = Vec::new();
    for d in docs {
        if d.get("kind")
            .and_then(Value::as_str)
            .is_some_and(|k| k.ends_with("List"))
        {
            out.extend(
                d.get("items")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default(),
            );
        } else if !d.is_null() {
            out.push(d);
        }
    }
    Ok(out)
}

fn decode<T: serde::de::DeserializeOwned>(v: Value, path: &Path, i: usize) -> anyhow::Result<T> {
    let kind = v
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_string();
    let name = v
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_string();
    serde_json::from_value(v)
        .with_context(|| format!("{}: object {i} ({kind} {name})", path.display()))
}

/// Computes the BundleDeployments as exported YAML.
pub fn render(args: &TargetArgs) -> anyhow::Result<String> {
    let mut bundles: Vec<Bundle> = Vec::new();
    for (i, v) in read_objects(&args.bundle_file)?.into_iter().enumerate() {
        if v.get("kind").and_then(Value::as_str) == Some("Bundle") {
            bundles.push(decode(v, &args.bundle_file, i)?);
        }
    }
    if bundles.is_empty() {
        anyhow::bail!("{}: no Bundle found", args.bundle_file.display());
    }
    let fleet = match &args.clusters_file {
        Some(cf) => fleet_targeting::Fleet::from_objects(read_objects(cf)?, &args.namespace)
            .map_err(|e| anyhow::anyhow!("{}: {e}", cf.display()))?,
        None => fleet_targeting::Fleet::default(),
    };
    let mut values = Vec::new();
    for mut b in bundles {
        if b.metadata.namespace.is_none() {
            b.metadata.namespace = Some(args.namespace.clone());
        }
        let mid = fleet_targeting::manifest_id(&b);
        let name = b.metadata.name.clone().unwrap_or_default();
        let ts = fleet_targeting::targets(&b, &fleet, &mid, &mut fleet_targeting::Stats::default())
            .map_err(|e| anyhow::anyhow!("bundle {name}: {e}"))?;
        for t in &ts {
            let bd = fleet_targeting::bundle_deployment(&b, &t.cluster, t, &mid);
            values.push(fleet_bundle::export::export_value(&bd)?);
        }
    }
    Ok(fleet_bundle::export::to_yaml_stream(&values)?)
}

/// Runs `fleet target`.
pub fn run(args: TargetArgs) -> anyhow::Result<()> {
    let text = render(&args)?;
    let mut o = std::io::stdout().lock();
    o.write_all(text.as_bytes())?;
    o.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLUSTERS: &str = "apiVersion: v1\nkind: List\nitems:\n\
- {apiVersion: fleet.cattle.io/v1alpha1, kind: Cluster, metadata: {name: dev1, namespace: fleet-local, labels: {env: dev}}, spec: {}}\n\
- {apiVersion: fleet.cattle.io/v1alpha1, kind: Cluster, metadata: {name: prod1, namespace: fleet-local, labels: {env: prod, region: eu}}, spec: {}}\n\
- {apiVersion: fleet.cattle.io/v1alpha1, kind: Cluster, metadata: {name: nospec, namespace: fleet-local, labels: {env: test}}}\n\
---\n\
apiVersion: fleet.cattle.io/v1alpha1\nkind: ClusterGroup\nmetadata: {name: default, namespace: fleet-local}\nspec: {selector: {matchLabels: {env: prod}}}\n";

    #[test]
    fn bundle_deployments_for_clusters() {
        let t = tempfile::tempdir().unwrap();
        let bf = t.path().join("b.yaml");
        std::fs::write(
            &bf,
            "apiVersion: fleet.cattle.io/v1alpha1\nkind: Bundle\nmetadata: {name: app, namespace: fleet-local}\nspec:\n  resources: [{name: cm.yaml, content: x}]\n  helm: {values: {region: global.fleet.clusterLabels.region}}\n  targets:\n  - {name: dev, clusterName: dev1}\n  - {name: default, clusterGroup: default}\n",
        )
        .unwrap();
        let cf = t.path().join("c.yaml");
        std::fs::write(&cf, CLUSTERS).unwrap();
        let out = render(&TargetArgs {
            bundle_file: bf.clone(),
            clusters_file: Some(cf),
            namespace: "fleet-local".into(),
        })
        .unwrap();
        let docs: Vec<Value> = serde_saphyr::from_multiple(&out).unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0]["kind"], "BundleDeployment");
        assert_eq!(
            docs[0]["metadata"]["namespace"],
            fleet_api::names::cluster_namespace("fleet-local", "dev1")
        );
        assert_eq!(
            docs[1]["metadata"]["labels"]["fleet.cattle.io/cluster"],
            "prod1"
        );
        assert_eq!(docs[1]["spec"]["options"]["helm"]["values"]["region"], "eu");
        assert_eq!(docs[0]["spec"]["options"]["helm"]["values"]["region"], "");
        let id = docs[1]["spec"]["deploymentID"].as_str().unwrap();
        assert!(id.starts_with("s-") && id.contains(':'));
        // No clusters file: nothing to target.
        let out = render(&TargetArgs {
            bundle_file: bf,
            clusters_file: None,
            namespace: "fleet-local".into(),
        })
        .unwrap();
        assert!(out.trim().is_empty());
    }
}
