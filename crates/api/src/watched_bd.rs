//! BundleDeployments as the agent's and the controllers' watches decode them: typed, but with
//! `metadata.managedFields` skipped unread. Neither reads managed fields, and decoding them (a
//! typed entry per field manager, each with its field set as a JSON tree) was a sixth of what
//! decoding a BundleDeployment cost, paid for every event of every BundleDeployment.

use std::collections::BTreeMap;

use crate::{BundleDeployment, BundleDeploymentSpec, BundleDeploymentStatus};
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

    /// A field's value: mostly the first of `choices` (a valid one), else one of the others or
    /// the field left out (None), so that most objects have one or two odd fields.
    fn field(
        choices: Vec<serde_json::Value>,
    ) -> impl proptest::strategy::Strategy<Value = Option<serde_json::Value>> {
        use proptest::prelude::*;
        let n = choices.len();
        let first = choices.first().cloned();
        prop_oneof![
            7 => Just(first),
            3 => (1..=n).prop_map(move |i| choices.get(i).cloned()),
        ]
    }

    /// Managed fields the typed decode refuses (this one does not read them).
    fn bad_managed(m: &Option<serde_json::Value>) -> bool {
        match m {
            None | Some(serde_json::Value::Null) => false,
            Some(serde_json::Value::Array(a)) => a
                .iter()
                .any(|e| e.get("fieldsV1").is_some_and(|f| !f.is_object())),
            Some(_) => true,
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]
        /// A watch drops an event it cannot decode, so an event the typed decode reads must
        /// decode here too, to the same object (and a bad one fail as well, unless only its
        /// managed fields are bad: those are not read).
        #[test]
        fn decodes_whatever_the_typed_object_decodes(
            name in field(vec![json!("b"), json!(null), json!(3), json!({})]),
            namespace in field(vec![json!("n"), json!(null), json!([])]),
            uid in field(vec![json!("u"), json!(null), json!(false)]),
            rv in field(vec![json!("12"), json!(null), json!(12)]),
            generation in field(vec![json!(2), json!(null), json!("2"), json!(-1), json!(1.5)]),
            labels in field(vec![json!({"a": "b"}), json!(null), json!({"a": 1}), json!("x"), json!({})]),
            annotations in field(vec![json!({"c": "d"}), json!(null), json!([1])]),
            finalizers in field(vec![json!(["f"]), json!(null), json!("f"), json!([1])]),
            created in field(vec![json!("2026-11-29T05:00:00Z"), json!(null), json!("not a time"), json!(3)]),
            deleted in field(vec![json!("2026-11-29T05:00:01Z"), json!(null), json!("x")]),
            owners in field(vec![
                json!([{"apiVersion": "v1", "kind": "K", "name": "o", "uid": "x"}]),
                json!(null), json!([{}]), json!("x"),
            ]),
            managed in field(vec![
                json!([{"manager": "m", "operation": "Apply", "fieldsV1": {"f:spec": {}}}]),
                json!(null), json!("garbage"), json!([{"fieldsV1": 3}]),
            ]),
            meta_null in proptest::bool::weighted(0.05),
            spec in field(vec![
                json!({"deploymentID": "s-1:2"}), json!(null), json!({"deploymentID": 3}), json!("x"),
                json!({"options": {"helm": {"values": {"a": [1, {"b": null}]}}}}),
            ]),
            status in field(vec![json!({"ready": true}), json!(null), json!({"ready": "yes"}), json!(3)]),
        ) {
            let mut meta = serde_json::Map::new();
            for (k, v) in [
                ("name", name), ("namespace", namespace), ("uid", uid), ("resourceVersion", rv),
                ("generation", generation), ("labels", labels), ("annotations", annotations),
                ("finalizers", finalizers), ("creationTimestamp", created),
                ("deletionTimestamp", deleted), ("ownerReferences", owners),
                ("managedFields", managed.clone()),
            ] {
                if let Some(v) = v {
                    meta.insert(k.into(), v);
                }
            }
            let mut o = serde_json::Map::new();
            o.insert("apiVersion".into(), json!("fleet.cattle.io/v1alpha1"));
            o.insert("kind".into(), json!("BundleDeployment"));
            let meta = if meta_null { json!(null) } else { serde_json::Value::Object(meta) };
            o.insert("metadata".into(), meta);
            if let Some(v) = spec {
                o.insert("spec".into(), v);
            }
            if let Some(v) = status {
                o.insert("status".into(), v);
            }
            let text = serde_json::Value::Object(o).to_string();
            let typed = serde_json::from_str::<BundleDeployment>(&text);
            let slim = serde_json::from_str::<WatchedBd>(&text);
            match typed {
                Ok(mut t) => {
                    t.metadata.managed_fields = None;
                    let s = slim.map_err(|e| {
                        proptest::test_runner::TestCaseError::fail(format!("{e}: {text}"))
                    })?;
                    proptest::prop_assert_eq!(s.0, t, "{}", text);
                }
                Err(_) if bad_managed(&managed) => {}
                Err(_) => proptest::prop_assert!(slim.is_err(), "decoded a refused object: {}", text),
            }
        }
    }
}
