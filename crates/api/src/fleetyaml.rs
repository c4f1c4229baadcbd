//! The `fleet.yaml` model and Go-compatible JSON encoding helpers.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{BundleSpec, BundleTarget, GitTarget, ImageScanSpec};

/// Contents of a `fleet.yaml`: bundle spec keys at the root plus naming, labels and target helpers.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct FleetYaml {
    /// Overrides the generated bundle name (used verbatim).
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub name: String,
    /// Labels added to the bundle.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub labels: BTreeMap<String, String>,
    /// Annotations added to the bundle (fleet.yaml is also read as ObjectMeta upstream).
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub annotations: BTreeMap<String, String>,
    /// Everything a Bundle spec holds.
    // The strict derived reader (see `serde_util::null_as_default`).
    #[serde(flatten, deserialize_with = "BundleSpec::deserialize")]
    pub spec: BundleSpec,
    /// Per-cluster customisations, appended after `targets`.
    #[serde(
        rename = "targetCustomizations",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub target_customizations: Vec<BundleTarget>,
    /// Image scans created next to the bundle.
    #[serde(
        rename = "imageScans",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub image_scans: Vec<ImageScanYaml>,
    /// Replaces the GitRepo's targets (and becomes the target restrictions).
    #[serde(
        rename = "overrideTargets",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub override_targets: Vec<GitTarget>,
}

/// An image scan declared in fleet.yaml.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct ImageScanYaml {
    /// Optional name; generated when empty.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub name: String,
    /// The scan itself.
    // The strict derived reader (see `serde_util::null_as_default`).
    #[serde(flatten, deserialize_with = "ImageScanSpec::deserialize")]
    pub spec: ImageScanSpec,
}

/// Serialises like Go's `encoding/json`: struct fields in declaration order, map keys sorted,
/// `<`, `>`, `&`, U+2028 and U+2029 escaped. Hashes (deploymentID, valuesHash) depend on it.
pub fn go_json<T: Serialize>(v: &T) -> Result<String, serde_json::Error> {
    let mut value = serde_json::to_value(v)?;
    sort_keys(&mut value);
    let s = serde_json::to_string(&value)?;
    Ok(go_escape(&s))
}

/// Like [`go_json`] but keeps the order of object keys as serialised (struct order); only
/// free-form maps must be sorted beforehand with [`sort_keys`].
pub fn go_json_ordered<T: Serialize>(v: &T) -> Result<String, serde_json::Error> {
    Ok(go_escape(&serde_json::to_string(v)?))
}

/// Sorts every object's keys recursively (Go sorts map keys when encoding).
pub fn sort_keys(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(m) => {
            m.sort_keys();
            for (_, x) in m.iter_mut() {
                sort_keys(x);
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(sort_keys),
        _ => {}
    }
}

fn go_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_json_escapes_and_sorts() {
        let v = serde_json::json!({"b": "<&>", "a": 1});
        assert_eq!(go_json(&v).unwrap(), r#"{"a":1,"b":"\u003c\u0026\u003e"}"#);
    }

    #[test]
    fn fleet_yaml_null_fields_are_zero() {
        let y: FleetYaml = serde_json::from_value(serde_json::json!({
            "name": null, "defaultNamespace": null, "helm": {"releaseName": "x", "values": {"a": 1}},
            "targetCustomizations": [{"name": "dev", "clusterSelector": {"matchLabels": {"env": "dev"}}}]
        }))
        .unwrap();
        assert_eq!(y.name, "");
        assert_eq!(y.spec.options.helm.as_ref().unwrap().release_name, "x");
        assert_eq!(y.target_customizations[0].name, "dev");
    }
}
