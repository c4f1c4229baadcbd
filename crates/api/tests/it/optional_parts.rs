//! Every kind reads like Go's decoder reads it: `spec`, `status` and every optional part may be
//! absent or `null` (as `kubectl get -o yaml` or a hand-written manifest may give them), and the
//! zero value comes back. Serialisation of what was read is unchanged (zero values omitted).

use fleet_api::crds;
use fleet_api::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// Reads `v` as `kind` and writes it back (both must succeed).
pub(crate) fn round_trip(kind: &str, v: Value) -> Result<Value, String> {
    fn rt<T: DeserializeOwned + Serialize>(v: Value) -> Result<Value, String> {
        let t: T = serde_json::from_value(v).map_err(|e| e.to_string())?;
        serde_json::to_value(&t).map_err(|e| e.to_string())
    }
    match kind {
        "Bundle" => rt::<Bundle>(v),
        "BundleDeployment" => rt::<BundleDeployment>(v),
        "BundleNamespaceMapping" => rt::<BundleNamespaceMapping>(v),
        "Cluster" => rt::<Cluster>(v),
        "ClusterGroup" => rt::<ClusterGroup>(v),
        "ClusterRegistration" => rt::<ClusterRegistration>(v),
        "ClusterRegistrationToken" => rt::<ClusterRegistrationToken>(v),
        "Content" => rt::<Content>(v),
        "GitRepo" => rt::<GitRepo>(v),
        "GitRepoRestriction" => rt::<GitRepoRestriction>(v),
        "HelmOp" => rt::<HelmOp>(v),
        "ImageScan" => rt::<ImageScan>(v),
        "Policy" => rt::<Policy>(v),
        "Schedule" => rt::<Schedule>(v),
        k => panic!("kind {k} missing from the table"),
    }
}

fn kinds() -> Vec<String> {
    crds::all().into_iter().map(|c| c.spec.names.kind).collect()
}

fn minimal(kind: &str) -> Value {
    json!({"apiVersion": "fleet.cattle.io/v1alpha1", "kind": kind,
           "metadata": {"name": "x", "namespace": "ns"}})
}

#[test]
fn table_every_kind_reads_with_only_metadata() {
    let kinds = kinds();
    assert_eq!(
        kinds.len(),
        14,
        "a kind was added: extend round_trip's table"
    );
    for kind in &kinds {
        let min = minimal(kind);
        let out = round_trip(kind, min.clone()).unwrap_or_else(|e| panic!("{kind}: {e}"));
        assert_eq!(out["kind"], json!(kind));
        assert_eq!(out["metadata"], min["metadata"], "{kind}");

        // Explicit nulls read as absent and write back the same as the minimal object.
        let mut nulls = min.clone();
        nulls["spec"] = Value::Null;
        nulls["status"] = Value::Null;
        let out2 = round_trip(kind, nulls).unwrap_or_else(|e| panic!("{kind} with nulls: {e}"));
        assert_eq!(out2, out, "{kind}: null spec/status");

        let mut empty = min.clone();
        empty["spec"] = json!({});
        empty["status"] = json!({});
        round_trip(kind, empty).unwrap_or_else(|e| panic!("{kind} with {{}}: {e}"));
    }
}

/// Every property path of `schema` (named properties, reached also through one entry of a map
/// and one item of an array), each as the object holding only that path with `null` at its end.
fn null_paths(schema: &Value, path: &str, depth: usize, out: &mut Vec<(String, Value)>) {
    if depth > 12 {
        return;
    }
    // `key`: a property name, `None` for an array item; `leaf`: whether the part itself may be
    // null (an array element or a map value is not an optional part, so only its fields are).
    let mut wrap = |key: Option<&str>, leaf: bool, s: &Value, p: String| {
        let mut inner = Vec::new();
        null_paths(s, &p, depth + 1, &mut inner);
        if leaf {
            inner.push((p, Value::Null));
        }
        for (p, v) in inner {
            let v = match key {
                Some(k) => json!({ k: v }),
                None => json!([v]),
            };
            out.push((p, v));
        }
    };
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (k, s) in props {
            wrap(Some(k), true, s, format!("{path}.{k}"));
        }
    } else if let Some(ap) = schema.get("additionalProperties").filter(|a| a.is_object()) {
        wrap(Some("k"), false, ap, format!("{path}.k"));
    } else if let Some(items) = schema.get("items") {
        wrap(None, false, items, format!("{path}[]"));
    }
}

/// Every property path of every kind's schema may be `null` (each path on its own, its parents
/// present): the object reads. Upstream's Go types accept all of them.
#[test]
fn every_optional_part_may_be_null() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for crd in crds::all() {
        let kind = crd.spec.names.kind.clone();
        for ver in &crd.spec.versions {
            let schema = ver
                .schema
                .as_ref()
                .and_then(|s| s.open_api_v3_schema.as_ref())
                .map(|s| serde_json::to_value(s).expect("schema"))
                .expect("schema");
            let mut paths = Vec::new();
            null_paths(&schema, "", 0, &mut paths);
            for (path, mut obj) in paths {
                if path.starts_with(".metadata") || path == ".apiVersion" || path == ".kind" {
                    continue;
                }
                obj["apiVersion"] = json!("fleet.cattle.io/v1alpha1");
                obj["kind"] = json!(kind);
                obj["metadata"] = json!({"name": "x", "namespace": "ns"});
                checked += 1;
                if let Err(e) = round_trip(&kind, obj) {
                    failures.push(format!("{kind}{path}: {e}"));
                }
            }
        }
    }
    assert!(checked > 1000, "only {checked} paths");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// What `kubectl get clusters -o yaml` may print for a Cluster created without a spec.
#[test]
fn cluster_without_spec_from_yaml() {
    let text = "apiVersion: fleet.cattle.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: c1\n  namespace: fleet-default\n  labels: {env: dev}\n";
    let c: Cluster = serde_saphyr::from_str(text).expect("cluster");
    assert_eq!(c.spec, ClusterSpec::default());
    assert!(c.status.is_none());
    let c: Cluster = serde_json::from_value(json!({
        "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Cluster",
        "metadata": {"name": "c1"}, "spec": {"paused": null, "agentEnvVars": null}, "status": {"display": null}
    }))
    .expect("cluster with null parts");
    assert!(!c.spec.paused);
}

/// A malformed spec still fails (null-tolerance is not error-tolerance), also where a spec is
/// flattened into another (HelmOp and fleet.yaml embed a Bundle spec).
#[test]
fn malformed_specs_still_fail() {
    let bad = json!({"apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Cluster",
                     "metadata": {"name": "c"}, "spec": {"paused": "yes"}});
    assert!(serde_json::from_value::<Cluster>(bad).is_err());
    let bad = json!({"apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Cluster",
                     "metadata": {"name": "c"}, "spec": "text"});
    assert!(serde_json::from_value::<Cluster>(bad).is_err());
    let bad = json!({"apiVersion": "fleet.cattle.io/v1alpha1", "kind": "HelmOp",
                     "metadata": {"name": "h"}, "spec": {"paused": "yes"}});
    assert!(serde_json::from_value::<HelmOp>(bad).is_err());
    let ok = json!({"apiVersion": "fleet.cattle.io/v1alpha1", "kind": "HelmOp",
                    "metadata": {"name": "h"}, "spec": {"paused": true, "namespace": "n"}});
    let h: HelmOp = serde_json::from_value(ok).expect("helmop");
    assert!(h.spec.bundle.paused);
    // fleet.yaml flattens a Bundle spec too.
    let bad = json!({"helm": {"timeoutSeconds": "notanumber"}});
    assert!(serde_json::from_value::<fleetyaml::FleetYaml>(bad).is_err());
}
