//! Options merge (upstream `options.Merge`) and deployment IDs (`options.DeploymentID`).

use fleet_api::fleetyaml::{go_json_ordered, sort_keys};
use fleet_api::{BundleDeploymentOptions, DiffOptions, HelmOptions, KustomizeOptions, YAMLOptions};

/// Replace-or-append by identity key; entries without a key are always appended.
fn merge_unique<T: Clone>(base: &[T], custom: &[T], key: impl Fn(&T) -> String) -> Vec<T> {
    let mut out = base.to_vec();
    for c in custom {
        let k = key(c);
        match (!k.is_empty())
            .then(|| out.iter().position(|b| key(b) == k))
            .flatten()
        {
            Some(i) => out[i] = c.clone(),
            None => out.push(c.clone()),
        }
    }
    out
}

/// Layers `custom` over `base` with upstream's per-field rules (overwrite if non-empty, deep
/// merge of values, OR of flags, identity-merged lists, appended overlays).
pub fn merge(
    base: &BundleDeploymentOptions,
    custom: &BundleDeploymentOptions,
) -> BundleDeploymentOptions {
    let mut r = base.clone();
    if !custom.default_namespace.is_empty() {
        r.default_namespace = custom.default_namespace.clone();
    }
    if !custom.namespace.is_empty() {
        r.namespace = custom.namespace.clone();
    }
    if !custom.service_account.is_empty() {
        r.service_account = custom.service_account.clone();
    }
    if let Some(ch) = &custom.helm {
        let h = r.helm.get_or_insert_with(HelmOptions::default);
        if ch.timeout_seconds > 0 {
            h.timeout_seconds = ch.timeout_seconds;
        } else if ch.timeout_seconds < 0 {
            h.timeout_seconds = 0;
        }
        match (&mut h.values, &ch.values) {
            (None, v) => h.values = v.clone(),
            (Some(a), Some(b)) => fleet_bundle_merge(a, b),
            _ => {}
        }
        if h.template_values.is_empty() {
            h.template_values = ch.template_values.clone();
        } else {
            for (k, v) in &ch.template_values {
                h.template_values.insert(k.clone(), v.clone());
            }
        }
        if !ch.values_from.is_empty() {
            h.values_from = merge_unique(&h.values_from, &ch.values_from, |v| {
                if let Some(c) = &v.config_map_key_ref {
                    format!("configmap|{}|{}|{}", c.namespace, c.name, c.key)
                } else if let Some(s) = &v.secret_key_ref {
                    format!("secret|{}|{}|{}", s.namespace, s.name, s.key)
                } else {
                    String::new()
                }
            });
        }
        for (dst, src) in [
            (&mut h.repo, &ch.repo),
            (&mut h.chart, &ch.chart),
            (&mut h.version, &ch.version),
            (&mut h.release_name, &ch.release_name),
        ] {
            if !src.is_empty() {
                *dst = src.clone();
            }
        }
        h.force |= ch.force;
        h.atomic |= ch.atomic;
        h.take_ownership |= ch.take_ownership;
        h.disable_pre_process |= ch.disable_pre_process;
        h.wait_for_jobs |= ch.wait_for_jobs;
        h.disable_dns |= ch.disable_dns;
    }
    if let Some(ck) = &custom.kustomize {
        let k = r.kustomize.get_or_insert_with(KustomizeOptions::default);
        if !ck.dir.is_empty() {
            k.dir = ck.dir.clone();
        }
    }
    if let Some(cd) = &custom.diff {
        let d = r.diff.get_or_insert_with(DiffOptions::default);
        d.compare_patches = merge_unique(&d.compare_patches, &cd.compare_patches, |p| {
            format!("{}|{}|{}|{}", p.api_version, p.kind, p.namespace, p.name)
        });
    }
    if let Some(cy) = &custom.yaml {
        let y = r.yaml.get_or_insert_with(YAMLOptions::default);
        y.overlays.extend(cy.overlays.iter().cloned());
    }
    if custom.force_sync_generation > 0 {
        r.force_sync_generation = custom.force_sync_generation;
    }
    r.keep_resources |= custom.keep_resources;
    if custom.correct_drift.is_some() {
        r.correct_drift = custom.correct_drift.clone();
    }
    if !custom.downstream_resources.is_empty() {
        r.downstream_resources =
            merge_unique(&r.downstream_resources, &custom.downstream_resources, |d| {
                format!("{}|{}", d.kind.to_lowercase(), d.name)
            });
    }
    r
}

/// wrangler `data.MergeMaps`: nested maps merge, anything else from `b` wins.
pub fn fleet_bundle_merge(
    a: &mut serde_json::Map<String, serde_json::Value>,
    b: &serde_json::Map<String, serde_json::Value>,
) {
    for (k, v) in b {
        match (a.get_mut(k), v) {
            (Some(serde_json::Value::Object(av)), serde_json::Value::Object(bv)) => {
                fleet_bundle_merge(av, bv)
            }
            _ => {
                a.insert(k.clone(), v.clone());
            }
        }
    }
}

/// The JSON upstream hashes: options without `diff` and `correctDrift`, Go field order, map
/// keys sorted, HTML-escaped, with the encoder's trailing newline.
pub fn options_hash_input(opts: &BundleDeploymentOptions) -> String {
    let mut o = opts.clone();
    o.diff = None;
    o.correct_drift = None;
    if let Some(h) = o.helm.as_mut()
        && let Some(v) = h.values.as_mut()
    {
        let mut val = serde_json::Value::Object(std::mem::take(v));
        sort_keys(&mut val);
        if let serde_json::Value::Object(m) = val {
            *v = m;
        }
    }
    let mut s = go_json_ordered(&o).unwrap_or_default();
    s.push('\n');
    s
}

/// `manifestID:sha256(options)`; diff-only changes keep the ID.
pub fn deployment_id(manifest_id: &str, opts: &BundleDeploymentOptions) -> String {
    fleet_api::names::deployment_id(manifest_id, &options_hash_input(opts))
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleet_api::{ComparePatch, CorrectDrift, DownstreamResource};
    use serde_json::json;

    fn opts(v: serde_json::Value) -> BundleDeploymentOptions {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn merge_table() {
        let base = opts(json!({
            "defaultNamespace": "base", "namespace": "tns", "serviceAccount": "sa",
            "helm": {"values": {"a": {"x": 1, "y": 1}, "keep": true}, "releaseName": "r", "timeoutSeconds": 5, "maxHistory": 3},
            "yaml": {"overlays": ["one"]}, "keepResources": false, "deleteNamespace": true,
            "downstreamResources": [{"kind": "Secret", "name": "s"}],
            "diff": {"comparePatches": [{"kind": "Deployment", "name": "d", "jsonPointers": ["/a"]}]}
        }));
        let custom = opts(json!({
            "defaultNamespace": "custom", "serviceAccount": "",
            "helm": {"values": {"a": {"y": 2}}, "force": true, "timeoutSeconds": 0, "maxHistory": 9},
            "yaml": {"overlays": ["two"]}, "keepResources": true, "deleteNamespace": false,
            "downstreamResources": [{"kind": "secret", "name": "s"}, {"kind": "ConfigMap", "name": "c"}],
            "diff": {"comparePatches": [{"kind": "Deployment", "name": "d", "jsonPointers": ["/b"]}]},
            "correctDrift": {"enabled": true}, "forceSyncGeneration": 2
        }));
        let m = merge(&base, &custom);
        assert_eq!(m.default_namespace, "custom");
        assert_eq!(m.namespace, "tns");
        assert_eq!(m.service_account, "sa");
        let h = m.helm.as_ref().unwrap();
        assert_eq!(
            serde_json::Value::Object(h.values.clone().unwrap()),
            json!({"a": {"x": 1, "y": 2}, "keep": true})
        );
        assert_eq!(h.timeout_seconds, 5);
        assert_eq!(
            h.max_history, 3,
            "maxHistory is not taken from customisations"
        );
        assert!(h.force);
        assert_eq!(h.release_name, "r");
        assert_eq!(m.yaml.as_ref().unwrap().overlays, ["one", "two"]);
        assert!(m.keep_resources);
        assert!(
            m.delete_namespace,
            "deleteNamespace is not taken from customisations"
        );
        assert_eq!(
            m.downstream_resources,
            vec![
                DownstreamResource {
                    kind: "secret".into(),
                    name: "s".into()
                },
                DownstreamResource {
                    kind: "ConfigMap".into(),
                    name: "c".into()
                },
            ]
        );
        assert_eq!(
            m.diff.as_ref().unwrap().compare_patches,
            vec![ComparePatch {
                kind: "Deployment".into(),
                name: "d".into(),
                json_pointers: vec!["/b".into()],
                ..Default::default()
            }]
        );
        assert_eq!(
            m.correct_drift,
            Some(CorrectDrift {
                enabled: true,
                ..Default::default()
            })
        );
        assert_eq!(m.force_sync_generation, 2);
        // A literal "-" is copied (the reset branch upstream is dead code).
        let m = merge(&base, &opts(json!({"defaultNamespace": "-"})));
        assert_eq!(m.default_namespace, "-");
        // Negative timeout resets.
        let m = merge(&base, &opts(json!({"helm": {"timeoutSeconds": -1}})));
        assert_eq!(m.helm.unwrap().timeout_seconds, 0);
    }

    #[test]
    fn deployment_id_ignores_diff_and_drift_and_key_order() {
        let a = opts(json!({"helm": {"values": {"b": 1, "a": "<&>"}}, "namespace": "x"}));
        let mut b = opts(json!({"namespace": "x", "helm": {"values": {"a": "<&>", "b": 1}}}));
        b.diff = Some(DiffOptions {
            compare_patches: vec![ComparePatch {
                kind: "K".into(),
                ..Default::default()
            }],
        });
        b.correct_drift = Some(CorrectDrift {
            enabled: true,
            ..Default::default()
        });
        assert_eq!(deployment_id("s-1", &a), deployment_id("s-1", &b));
        assert_eq!(
            options_hash_input(&a),
            "{\"namespace\":\"x\",\"helm\":{\"values\":{\"a\":\"\\u003c\\u0026\\u003e\",\"b\":1}}}\n"
        );
        let c = opts(json!({"namespace": "y"}));
        assert_ne!(deployment_id("s-1", &a), deployment_id("s-1", &c));
        assert!(deployment_id("s-1", &a).starts_with("s-1:"));
    }
}
