//! Helm values kept out of the Bundle object (upstream `pkg/helmvalues`): a Secret named like the
//! bundle holds `values.yaml` (root values) and one key per target name, and `spec.valuesHash`
//! is sha256 of the Go JSON encoding of that map.

use std::collections::BTreeMap;

use fleet_api::Bundle;
use fleet_api::fleetyaml::go_json;

/// Values of the bundle and its targets, keyed as in the values Secret; empty when none.
pub fn extract_values(bundle: &Bundle) -> Result<(String, BTreeMap<String, Vec<u8>>), String> {
    let mut data = BTreeMap::new();
    if let Some(v) = bundle
        .spec
        .options
        .helm
        .as_ref()
        .and_then(|h| h.values.as_ref())
        .filter(|v| !v.is_empty())
    {
        data.insert(
            "values.yaml".to_string(),
            go_json(v).map_err(|e| e.to_string())?.into_bytes(),
        );
    }
    for t in &bundle.spec.targets {
        let Some(v) = t
            .options
            .helm
            .as_ref()
            .and_then(|h| h.values.as_ref())
            .filter(|v| !v.is_empty())
        else {
            continue;
        };
        if t.name.is_empty() {
            return Err("target name is required".into());
        }
        data.insert(
            t.name.clone(),
            go_json(v).map_err(|e| e.to_string())?.into_bytes(),
        );
    }
    if data.is_empty() {
        return Ok((String::new(), data));
    }
    Ok((hash_values(&data), data))
}

/// sha256 of `json.Marshal(map[string][]byte)`: sorted keys, base64 values.
pub fn hash_values(data: &BTreeMap<String, Vec<u8>>) -> String {
    use base64::Engine;
    let m: BTreeMap<&String, String> = data
        .iter()
        .map(|(k, v)| (k, base64::engine::general_purpose::STANDARD.encode(v)))
        .collect();
    let json = go_json(&m).unwrap_or_default();
    fleet_api::names::sha256_hex(json.as_bytes())
}

/// Removes values from the bundle (they live in the Secret).
pub fn clear_values(bundle: &mut Bundle) {
    if let Some(h) = bundle.spec.options.helm.as_mut() {
        h.values = None;
    }
    for t in &mut bundle.spec.targets {
        if let Some(h) = t.options.helm.as_mut() {
            h.values = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extract_hash_and_clear() {
        let mut b: Bundle = serde_json::from_value(serde_json::json!({
            "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Bundle", "metadata": {"name": "b"},
            "spec": {"helm": {"values": {"z": 1, "a": "<"}}, "targets": [{"name": "dev", "helm": {"values": {"x": true}}}, {"name": "none"}]}
        }))
        .unwrap();
        let (h, d) = extract_values(&b).unwrap();
        assert_eq!(d["values.yaml"], br#"{"a":"\u003c","z":1}"#);
        assert_eq!(d["dev"], br#"{"x":true}"#);
        assert_eq!(d.len(), 2);
        // {"dev":"eyJ4Ijp0cnVlfQ==","values.yaml":"..."} hashed.
        assert_eq!(h, hash_values(&d));
        assert_eq!(h.len(), 64);
        clear_values(&mut b);
        assert!(b.spec.options.helm.as_ref().unwrap().values.is_none());
        assert_eq!(extract_values(&b).unwrap().0, "");
    }
}
