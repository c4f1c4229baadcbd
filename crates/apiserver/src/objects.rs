//! Small helpers over object JSON: server-set metadata, name generation, the spec-change test
//! that drives `metadata.generation`.

use serde_json::{Map, Value};

/// Current time as Kubernetes writes timestamps (RFC 3339, seconds, UTC).
pub fn now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// A random 5-character suffix from kube-apiserver's alphabet (no vowels, no ambiguous digits).
pub fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let bytes = uuid::Uuid::new_v4().into_bytes();
    bytes
        .iter()
        .take(5)
        .map(|b| ALPHABET[(*b as usize) % ALPHABET.len()] as char)
        .collect()
}

/// `metadata` as a mutable map, created if absent or not an object.
pub fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.is_object() {
        *obj = Value::Object(Map::new());
    }
    let Value::Object(root) = obj else {
        unreachable!("just made an object")
    };
    let m = root
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !m.is_object() {
        *m = Value::Object(Map::new());
    }
    match m {
        Value::Object(map) => map,
        _ => unreachable!("just made an object"),
    }
}

/// A string field of `metadata`.
pub fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    obj.get("metadata")?.get(field)?.as_str()
}

/// `metadata.finalizers` as strings.
pub fn finalizers(obj: &Value) -> Vec<String> {
    obj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Whether objects of this resource carry `metadata.generation`: custom resources always; of the
/// built-ins only those whose kube-apiserver strategy sets it (workloads and other kinds with a
/// spec that a controller observes). ConfigMaps, Secrets, Services, Namespaces, RBAC objects and
/// the like have none on kube-apiserver, so they have none here.
pub fn tracks_generation(info: &crate::registry::ResourceInfo) -> bool {
    if !info.builtin {
        return true;
    }
    matches!(
        (info.group.as_str(), info.plural.as_str()),
        ("", "pods" | "replicationcontrollers" | "podtemplates")
            | (
                "apps",
                "deployments" | "replicasets" | "statefulsets" | "daemonsets"
            )
            | ("batch", "jobs" | "cronjobs")
            | ("policy", "poddisruptionbudgets")
            | (
                "networking.k8s.io",
                "ingresses" | "ingressclasses" | "networkpolicies"
            )
            | ("apiextensions.k8s.io", "customresourcedefinitions")
            | (
                "admissionregistration.k8s.io",
                "validatingwebhookconfigurations"
                    | "mutatingwebhookconfigurations"
                    | "validatingadmissionpolicies"
                    | "validatingadmissionpolicybindings"
                    | "mutatingadmissionpolicies"
                    | "mutatingadmissionpolicybindings"
            )
            | (
                "flowcontrol.apiserver.k8s.io",
                "flowschemas" | "prioritylevelconfigurations"
            )
    )
}

/// Whether anything other than metadata and status differs (what bumps `metadata.generation`).
pub fn spec_changed(old: &Value, new: &Value) -> bool {
    let strip = |v: &Value| -> Map<String, Value> {
        v.as_object()
            .map(|m| {
                m.iter()
                    .filter(|(k, _)| {
                        !matches!(k.as_str(), "metadata" | "status" | "apiVersion" | "kind")
                    })
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default()
    };
    strip(old) != strip(new)
}

/// Equality ignoring `metadata.resourceVersion` and `managedFields` timestamps: a write that
/// changes nothing is skipped, as kube-apiserver does.
pub fn same_object(a: &Value, b: &Value) -> bool {
    let mut a = a.clone();
    let mut b = b.clone();
    for v in [&mut a, &mut b] {
        if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("resourceVersion");
            // Ownership changes are changes; only the entries' timestamps are not.
            if let Some(Value::Array(entries)) = m.get_mut("managedFields") {
                for e in entries.iter_mut() {
                    if let Some(e) = e.as_object_mut() {
                        e.remove("time");
                    }
                }
            }
        }
    }
    a == b
}

/// Reads a dotted path (`spec.replicas`).
pub fn get_path<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = obj;
    for seg in path.trim_start_matches('.').split('.') {
        cur = cur.get(seg)?;
    }
    Some(cur)
}

/// Writes a dotted path, creating objects on the way.
pub fn set_path(obj: &mut Value, path: &str, value: Value) {
    let segs: Vec<&str> = path.trim_start_matches('.').split('.').collect();
    let mut cur = obj;
    for (i, seg) in segs.iter().enumerate() {
        if !cur.is_object() {
            *cur = Value::Object(Map::new());
        }
        let Value::Object(m) = cur else { return };
        if i + 1 == segs.len() {
            m.insert(seg.to_string(), value);
            return;
        }
        cur = m
            .entry(seg.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn spec_change_ignores_metadata_and_status() {
        let a = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"x": 1}, "status": {"y": 1}});
        let b = json!({"metadata": {"labels": {"a": "2"}}, "spec": {"x": 1}, "status": {"y": 2}});
        assert!(!spec_changed(&a, &b));
        let c = json!({"spec": {"x": 2}});
        assert!(spec_changed(&a, &c));
    }

    #[test]
    fn paths_and_suffix() {
        let mut o = json!({});
        set_path(&mut o, "spec.replicas", json!(3));
        assert_eq!(get_path(&o, ".spec.replicas"), Some(&json!(3)));
        assert_eq!(random_suffix().len(), 5);
        assert!(now().ends_with('Z'));
    }
}
