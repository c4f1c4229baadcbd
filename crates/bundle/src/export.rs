//! `fleet apply -o`: objects as YAML the way wrangler's `yaml.Export` writes them — apiVersion
//! and kind set, metadata reduced to name (or generateName)/namespace/labels/annotations (without
//! `kubectl.kubernetes.io/*`), no status, keys sorted, documents separated by `---`.

use serde::Serialize;
use serde_json::Value;

use crate::read::BuiltBundle;

/// Reduces an object to what `yaml.Export` keeps.
pub fn export_value<T: Serialize>(obj: &T) -> Result<Value, serde_json::Error> {
    let mut v = serde_json::to_value(obj)?;
    if let Value::Object(m) = &mut v {
        m.remove("status");
        if let Some(Value::Object(meta)) = m.get_mut("metadata") {
            // generateName is kept only for objects without a name, as upstream does.
            let named = meta
                .get("name")
                .and_then(Value::as_str)
                .is_some_and(|n| !n.is_empty());
            meta.retain(|k, _| match k.as_str() {
                "name" | "namespace" | "labels" | "annotations" => true,
                "generateName" => !named,
                _ => false,
            });
            for key in ["annotations", "labels"] {
                if let Some(Value::Object(a)) = meta.get_mut(key) {
                    a.retain(|k, _| !k.starts_with("kubectl.kubernetes.io/"));
                    if a.is_empty() {
                        meta.remove(key);
                    }
                }
            }
        }
        if m.get("spec")
            .is_some_and(|s| s.as_object().is_some_and(|o| o.is_empty()) || s.is_null())
        {
            m.remove("spec");
        }
    }
    fleet_api::fleetyaml::sort_keys(&mut v);
    Ok(v)
}

/// Why bundles could not be printed as YAML (a value serde cannot represent).
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The object could not be turned into JSON.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    /// The JSON could not be written as YAML.
    #[error("{0}")]
    Yaml(#[from] serde_saphyr::SerializeError),
}

/// Renders values as a YAML stream.
pub fn to_yaml_stream(values: &[Value]) -> Result<String, ExportError> {
    let mut docs = Vec::with_capacity(values.len());
    for v in values {
        // Long single-line strings (deployment IDs, URLs) stay plain scalars, as Go writes them.
        let opts = serde_saphyr::ser_options! { folded_wrap_chars: usize::MAX };
        docs.push(serde_saphyr::to_string_with_options(v, opts)?);
    }
    Ok(docs.join("---\n"))
}

/// Every bundle followed by its ImageScans, as `fleet apply -o -` prints them.
pub fn export_bundles(bundles: &[BuiltBundle]) -> Result<String, ExportError> {
    let mut values = Vec::new();
    for b in bundles {
        values.push(export_value(&b.bundle)?);
        for s in &b.scans {
            values.push(export_value(s)?);
        }
    }
    to_yaml_stream(&values)
}
