//! BundleDeployments as the agent's watch decodes them: typed, but with `metadata.managedFields`
//! skipped unread. The agent never reads managed fields, and decoding them (a typed entry per
//! field manager, each with its field set as a JSON tree) was a sixth of what decoding a
//! BundleDeployment cost.

use std::collections::BTreeMap;

use fleet_api::{BundleDeployment, BundleDeploymentSpec, BundleDeploymentStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use kube::core::NamespaceResourceScope;

/// A BundleDeployment decoded without its managed fields.
#[derive(Clone, Debug)]
pub struct WatchedBd(pub BundleDeployment);

impl kube::Resource for WatchedBd {
    type DynamicType = ();
    type Scope = NamespaceResourceScope;

    fn kind(dt: &()) -> std::borrow::Cow<'_, str> {
        BundleDeployment::kind(dt)
    }
    fn group(dt: &()) -> std::borrow::Cow<'_, str> {
        BundleDeployment::group(dt)
    }
    fn version(dt: &()) -> std::borrow::Cow<'_, str> {
        BundleDeployment::version(dt)
    }
    fn plural(dt: &()) -> std::borrow::Cow<'_, str> {
        BundleDeployment::plural(dt)
    }
    fn meta(&self) -> &ObjectMeta {
        &self.0.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.0.metadata
    }
}

/// `ObjectMeta` but `managedFields` (an unknown field here, so skipped).
#[derive(serde::Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Meta {
    annotations: Option<BTreeMap<String, String>>,
    creation_timestamp: Option<Time>,
    deletion_grace_period_seconds: Option<i64>,
    deletion_timestamp: Option<Time>,
    finalizers: Option<Vec<String>>,
    generate_name: Option<String>,
    generation: Option<i64>,
    labels: Option<BTreeMap<String, String>>,
    name: Option<String>,
    namespace: Option<String>,
    owner_references: Option<Vec<OwnerReference>>,
    resource_version: Option<String>,
    self_link: Option<String>,
    uid: Option<String>,
}

#[derive(serde::Deserialize)]
struct Raw {
    #[serde(default)]
    metadata: Meta,
    #[serde(default)]
    spec: BundleDeploymentSpec,
    #[serde(default)]
    status: Option<BundleDeploymentStatus>,
}

impl<'de> serde::Deserialize<'de> for WatchedBd {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<WatchedBd, D::Error> {
        let Raw {
            metadata: m,
            spec,
            status,
        } = Raw::deserialize(d)?;
        Ok(WatchedBd(BundleDeployment {
            metadata: ObjectMeta {
                annotations: m.annotations,
                creation_timestamp: m.creation_timestamp,
                deletion_grace_period_seconds: m.deletion_grace_period_seconds,
                deletion_timestamp: m.deletion_timestamp,
                finalizers: m.finalizers,
                generate_name: m.generate_name,
                generation: m.generation,
                labels: m.labels,
                managed_fields: None,
                name: m.name,
                namespace: m.namespace,
                owner_references: m.owner_references,
                resource_version: m.resource_version,
                self_link: m.self_link,
                uid: m.uid,
            },
            spec,
            status,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decodes_as_the_typed_object_does_but_managed_fields() {
        let v = json!({
            "apiVersion": "fleet.cattle.io/v1alpha1",
            "kind": "BundleDeployment",
            "metadata": {
                "name": "b", "namespace": "n", "uid": "u", "resourceVersion": "7", "generation": 2,
                "labels": {"a": "b"}, "annotations": {"c": "d"}, "finalizers": ["f"],
                "creationTimestamp": "2026-11-29T05:00:00Z",
                "ownerReferences": [{"apiVersion": "v1", "kind": "K", "name": "o", "uid": "x"}],
                "managedFields": [{"manager": "m", "operation": "Apply", "fieldsV1": {"f:spec": {}}}]
            },
            "spec": {"deploymentID": "s-1:2", "options": {"defaultNamespace": "x"}},
            "status": {"ready": true, "appliedDeploymentID": "s-1:2"}
        });
        let mut typed: BundleDeployment = serde_json::from_value(v.clone()).unwrap();
        assert!(typed.metadata.managed_fields.is_some());
        typed.metadata.managed_fields = None;
        let slim: WatchedBd = serde_json::from_value(v).unwrap();
        assert_eq!(slim.0, typed);
        for bad in [json!([1]), json!({"metadata": "x"}), json!({"spec": 3})] {
            assert!(
                serde_json::from_value::<WatchedBd>(bad.clone()).is_err(),
                "{bad}"
            );
        }
    }
}
