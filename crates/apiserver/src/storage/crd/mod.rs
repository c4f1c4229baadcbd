//! CustomResourceDefinitions: turning a CRD object into served resource entries, validating it,
//! and computing the status (`acceptedNames`, `NamesAccepted`, `Established`) clients wait for.

pub mod schema;

use std::sync::Arc;

use serde_json::{Value, json};

use crate::storage::errors::Cause;
use crate::storage::registry::{PrinterColumn, ResourceInfo, ScalePaths};
use schema::Structural;

fn s<'a>(v: &'a Value, ptr: &str) -> Option<&'a str> {
    v.pointer(ptr).and_then(Value::as_str)
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Validates a CRD and derives the resource entries of its served versions (storage version
/// first, so it is the preferred version in discovery).
pub fn infos_from_crd(crd: &Value) -> Result<Vec<ResourceInfo>, Vec<Cause>> {
    let mut causes = Vec::new();
    let group = s(crd, "/spec/group").unwrap_or("");
    let plural = s(crd, "/spec/names/plural").unwrap_or("");
    let kind = s(crd, "/spec/names/kind").unwrap_or("");
    let scope = s(crd, "/spec/scope").unwrap_or("");
    let name = s(crd, "/metadata/name").unwrap_or("");
    if group.is_empty() {
        causes.push(Cause::required("spec.group"));
    } else if !group.contains('.') {
        causes.push(Cause::invalid(
            "spec.group",
            format!("Invalid value: {group:?}: should be a domain with at least one dot"),
        ));
    }
    if plural.is_empty() {
        causes.push(Cause::required("spec.names.plural"));
    } else if crate::storage::validation::dns1123_label(plural).is_err() {
        causes.push(Cause::invalid(
            "spec.names.plural",
            format!("Invalid value: {plural:?}: a lowercase RFC 1123 label is required"),
        ));
    }
    if kind.is_empty() {
        causes.push(Cause::required("spec.names.kind"));
    }
    if !group.is_empty() && !plural.is_empty() && name != format!("{plural}.{group}") {
        causes.push(Cause::invalid(
            "metadata.name",
            format!("Invalid value: {name:?}: must be spec.names.plural+\".\"+spec.group"),
        ));
    }
    let namespaced = match scope {
        "Namespaced" => true,
        "Cluster" => false,
        "" => {
            causes.push(Cause::required("spec.scope"));
            true
        }
        other => {
            causes.push(Cause {
                field: "spec.scope".into(),
                reason: "FieldValueNotSupported",
                message: format!(
                    "Unsupported value: {other:?}: supported values: \"Cluster\", \"Namespaced\""
                ),
            });
            true
        }
    };
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if versions.is_empty() {
        causes.push(Cause::required("spec.versions"));
    }
    let storage_count = versions
        .iter()
        .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .count();
    if !versions.is_empty() && storage_count != 1 {
        causes.push(Cause::invalid(
            "spec.versions",
            "Invalid value: must have exactly one version marked as storage version",
        ));
    }
    let singular = s(crd, "/spec/names/singular")
        .map(str::to_string)
        .unwrap_or_else(|| kind.to_ascii_lowercase());
    let list_kind = s(crd, "/spec/names/listKind")
        .map(str::to_string)
        .unwrap_or_else(|| format!("{kind}List"));
    let short_names = strings(crd.pointer("/spec/names/shortNames"));
    let categories = strings(crd.pointer("/spec/names/categories"));
    let mut infos = Vec::new();
    for (i, v) in versions.iter().enumerate() {
        let vname = v.get("name").and_then(Value::as_str).unwrap_or("");
        if vname.is_empty() {
            causes.push(Cause::required(format!("spec.versions[{i}].name")));
            continue;
        }
        let schema_json = v.pointer("/schema/openAPIV3Schema");
        let schema = match schema_json {
            Some(sj) => match Structural::from_json(
                sj,
                &format!("spec.versions[{i}].schema.openAPIV3Schema"),
            ) {
                Ok(st) => Some(Arc::new(st)),
                Err(c) => {
                    causes.push(c);
                    None
                }
            },
            None => {
                causes.push(Cause::required(format!(
                    "spec.versions[{i}].schema.openAPIV3Schema"
                )));
                None
            }
        };
        if v.get("served").and_then(Value::as_bool) != Some(true) {
            continue;
        }
        let status = v
            .pointer("/subresources/status")
            .is_some_and(|x| !x.is_null());
        let scale = v
            .pointer("/subresources/scale")
            .filter(|x| x.is_object())
            .map(|sc| ScalePaths {
                spec_replicas: s(sc, "/specReplicasPath")
                    .unwrap_or(".spec.replicas")
                    .trim_start_matches('.')
                    .to_string(),
                status_replicas: s(sc, "/statusReplicasPath")
                    .unwrap_or(".status.replicas")
                    .trim_start_matches('.')
                    .to_string(),
                label_selector: s(sc, "/labelSelectorPath")
                    .map(|p| p.trim_start_matches('.').to_string()),
            });
        let printer_columns = v
            .get("additionalPrinterColumns")
            .and_then(Value::as_array)
            .map(|cols| {
                cols.iter()
                    .map(|c| PrinterColumn {
                        name: c
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                        kind: c
                            .get("type")
                            .and_then(Value::as_str)
                            .unwrap_or("string")
                            .to_string(),
                        json_path: c
                            .get("jsonPath")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let info = ResourceInfo {
            group: group.to_string(),
            version: vname.to_string(),
            kind: kind.to_string(),
            list_kind: list_kind.clone(),
            plural: plural.to_string(),
            singular: singular.clone(),
            namespaced,
            status,
            scale,
            short_names: short_names.clone(),
            categories: categories.clone(),
            builtin: false,
            schema,
            printer_columns,
        };
        if v.get("storage").and_then(Value::as_bool) == Some(true) {
            infos.insert(0, info);
        } else {
            infos.push(info);
        }
    }
    if causes.is_empty() {
        Ok(infos)
    } else {
        Err(causes)
    }
}

/// Sets `status.acceptedNames`, `status.storedVersions` and the `NamesAccepted`/`Established`
/// conditions, keeping earlier transition times when a condition does not change.
pub fn set_status(crd: &mut Value) {
    let names = crd.pointer("/spec/names").cloned().unwrap_or(json!({}));
    let mut accepted = names.clone();
    if let Some(m) = accepted.as_object_mut() {
        let kind = m
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        m.entry("singular")
            .or_insert_with(|| json!(kind.to_ascii_lowercase()));
        m.entry("listKind")
            .or_insert_with(|| json!(format!("{kind}List")));
    }
    let storage: Vec<String> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
                .filter_map(|v| v.get("name").and_then(Value::as_str).map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let old = crd.get("status").cloned().unwrap_or(json!({}));
    let mut stored = strings(old.get("storedVersions"));
    for v in storage {
        if !stored.contains(&v) {
            stored.push(v);
        }
    }
    let now = crate::storage::objects::now();
    let old_time = |t: &str| -> String {
        old.get("conditions")
            .and_then(Value::as_array)
            .and_then(|cs| {
                cs.iter()
                    .find(|c| c.get("type").and_then(Value::as_str) == Some(t))
            })
            .filter(|c| c.get("status").and_then(Value::as_str) == Some("True"))
            .and_then(|c| c.get("lastTransitionTime").and_then(Value::as_str))
            .map(str::to_string)
            .unwrap_or_else(|| now.clone())
    };
    let status = json!({
        "acceptedNames": accepted,
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": old_time("NamesAccepted")},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": old_time("Established")},
        ],
        "storedVersions": stored,
    });
    if let Some(m) = crd.as_object_mut() {
        m.insert("status".into(), status);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]},
                "versions": [
                    {"name": "v1beta1", "served": true, "storage": false, "schema": {"openAPIV3Schema": {"type": "object"}}},
                    {"name": "v1", "served": true, "storage": true, "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.size", "statusReplicasPath": ".status.size"}},
                     "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object"}}}}}
                ]
            }
        })
    }

    #[test]
    fn infos() {
        let i = infos_from_crd(&crd()).unwrap();
        assert_eq!(i.len(), 2);
        assert_eq!(i[0].version, "v1");
        assert!(i[0].status);
        assert_eq!(
            i[0].scale.as_ref().map(|s| s.spec_replicas.as_str()),
            Some("spec.size")
        );
        assert_eq!(i[0].singular, "widget");
        assert_eq!(i[0].list_kind, "WidgetList");
        assert!(!i[1].status);
    }

    #[test]
    fn bad_crd() {
        let mut c = crd();
        c["metadata"]["name"] = json!("wrong");
        c["spec"]["scope"] = json!("Galaxy");
        let causes = infos_from_crd(&c).unwrap_err();
        assert_eq!(causes.len(), 2);
    }

    #[test]
    fn status() {
        let mut c = crd();
        set_status(&mut c);
        assert_eq!(c["status"]["conditions"][1]["type"], "Established");
        assert_eq!(c["status"]["acceptedNames"]["listKind"], "WidgetList");
        assert_eq!(c["status"]["storedVersions"], json!(["v1"]));
    }
}
