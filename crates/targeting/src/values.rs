//! Per-cluster Helm values pre-processing: `global.fleet.clusterLabels.<label>` strings become the
//! cluster's label value. (`${ }` Go templating needs custom delimiters in `gotmpl`; values that
//! use it are left as written until the engine offers them.)

use std::collections::BTreeMap;

use fleet_api::BundleDeploymentOptions;
use fleet_api::keys::{FLEET_LABEL_PREFIX, MANAGEMENT_LABEL_PREFIX};

/// Prefix that marks a value to be replaced by a cluster label.
pub const CLUSTER_LABEL_PREFIX: &str = "global.fleet.clusterLabels.";
const MAX_DEPTH: usize = 50;

/// Whether a label key is visible to values processing.
pub fn usable_label(k: &str) -> bool {
    !k.contains("cattle.io/")
        || k.starts_with(FLEET_LABEL_PREFIX)
        || k.starts_with(MANAGEMENT_LABEL_PREFIX)
}

/// Labels usable in values: keys containing `cattle.io/` are dropped, except Fleet's and
/// Rancher management's own.
pub fn template_labels(labels: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    labels
        .iter()
        .filter(|(k, _)| {
            !k.contains("cattle.io/")
                || k.starts_with(FLEET_LABEL_PREFIX)
                || k.starts_with(MANAGEMENT_LABEL_PREFIX)
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Whether the options' values depend on the cluster (so a deployment ID cannot be shared).
pub fn depends_on_cluster(opts: &BundleDeploymentOptions) -> bool {
    let Some(h) = &opts.helm else { return false };
    if !h.template_values.is_empty() {
        return true;
    }
    h.values.as_ref().is_some_and(|v| {
        let s = serde_json::to_string(v).unwrap_or_default();
        s.contains(CLUSTER_LABEL_PREFIX) || s.contains("${")
    })
}

/// Upstream `preprocessHelmValues` (label substitution part). Errors on absurdly deep values.
pub fn preprocess(
    opts: &mut BundleDeploymentOptions,
    cluster_labels: &BTreeMap<String, String>,
) -> Result<(), String> {
    let labels = template_labels(cluster_labels);
    if labels.is_empty() {
        return Ok(());
    }
    let Some(h) = opts.helm.as_mut() else {
        // Upstream quirk: options of labelled clusters always carry a (possibly empty) helm block.
        opts.helm = Some(Default::default());
        return Ok(());
    };
    let values = h.values.get_or_insert_with(Default::default);
    if h.template_values.is_empty() && values.is_empty() {
        return Ok(());
    }
    substitute(values, &labels, 0)
}

fn substitute(
    m: &mut serde_json::Map<String, serde_json::Value>,
    labels: &BTreeMap<String, String>,
    depth: usize,
) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!(
            "maximum recursion depth of {MAX_DEPTH} exceeded for cluster label prefix processing, too many nested values"
        ));
    }
    for (_, v) in m.iter_mut() {
        match v {
            serde_json::Value::String(s) => {
                if let Some(label) = s.strip_prefix(CLUSTER_LABEL_PREFIX) {
                    *s = labels.get(label).cloned().unwrap_or_default();
                }
            }
            serde_json::Value::Object(o) => substitute(o, labels, depth + 1)?,
            serde_json::Value::Array(a) => {
                for item in a {
                    if let serde_json::Value::Object(o) = item {
                        substitute(o, labels, depth + 1)?;
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cluster_labels_substituted() {
        let mut o: BundleDeploymentOptions = serde_json::from_value(json!({"helm": {"values": {
            "region": "global.fleet.clusterLabels.region",
            "missing": "global.fleet.clusterLabels.nope",
            "list": [{"env": "global.fleet.clusterLabels.env"}, "global.fleet.clusterLabels.env"],
            "hidden": "global.fleet.clusterLabels.foo.cattle.io/x",
            "mgmt": "global.fleet.clusterLabels.management.cattle.io/cluster-display-name"
        }}}))
        .unwrap();
        let labels: BTreeMap<String, String> = [
            ("region", "eu"),
            ("env", "prod"),
            ("foo.cattle.io/x", "secret"),
            ("management.cattle.io/cluster-display-name", "pretty"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        preprocess(&mut o, &labels).unwrap();
        let v = serde_json::Value::Object(o.helm.unwrap().values.unwrap());
        assert_eq!(
            v,
            json!({"region": "eu", "missing": "", "list": [{"env": "prod"}, "global.fleet.clusterLabels.env"], "hidden": "", "mgmt": "pretty"})
        );
    }

    #[test]
    fn no_labels_no_change_and_helm_quirk() {
        let mut o = BundleDeploymentOptions::default();
        preprocess(&mut o, &BTreeMap::new()).unwrap();
        assert!(o.helm.is_none());
        preprocess(
            &mut o,
            &[("a".to_string(), "b".to_string())].into_iter().collect(),
        )
        .unwrap();
        assert!(o.helm.is_some());
    }
}
