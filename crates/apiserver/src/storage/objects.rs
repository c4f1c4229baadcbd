//! Small helpers over object JSON: server-set metadata, name generation, the spec-change test
//! that drives `metadata.generation`.

use serde_json::{Map, Value};

/// Current time as Kubernetes writes timestamps (RFC 3339, seconds, UTC).
pub fn now() -> String {
    // Every write stamps a time (managedFields, creationTimestamp): format each second once per
    // thread rather than on every call.
    thread_local! {
        static LAST: std::cell::RefCell<(i64, String)> = const { std::cell::RefCell::new((i64::MIN, String::new())) };
    }
    let ts = jiff::Timestamp::now();
    let sec = ts.as_second();
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        if last.0 != sec {
            *last = (sec, ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string());
        }
        last.1.clone()
    })
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

/// A field of `metadata`. Used instead of `Value::pointer` on the write path: a JSON pointer
/// allocates a string per path segment on every call.
pub fn meta_get<'a>(obj: &'a Value, field: &str) -> Option<&'a Value> {
    obj.get("metadata")?.get(field)
}

/// A string field of `metadata`.
pub fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    obj.get("metadata")?.get(field)?.as_str()
}

/// `metadata.finalizers` as strings.
pub fn finalizers(obj: &Value) -> Vec<String> {
    meta_get(obj, "finalizers")
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
pub fn tracks_generation(info: &crate::storage::registry::ResourceInfo) -> bool {
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
    let empty = Map::new();
    let a = old.as_object().unwrap_or(&empty);
    let b = new.as_object().unwrap_or(&empty);
    let counts = |k: &String| !matches!(k.as_str(), "metadata" | "status" | "apiVersion" | "kind");
    // Compared in place, both ways (a key present on one side only is a change).
    let covered = |x: &Map<String, Value>, y: &Map<String, Value>| {
        x.iter()
            .filter(|(k, _)| counts(k))
            .all(|(k, v)| y.get(k) == Some(v))
    };
    !(covered(a, b) && covered(b, a))
}

/// Equality ignoring `metadata.resourceVersion` and `managedFields` timestamps: a write that
/// changes nothing is skipped, as kube-apiserver does.
///
/// Compared in place (no copies): this runs on every update.
pub fn same_object(a: &Value, b: &Value) -> bool {
    let (Some(ma), Some(mb)) = (a.as_object(), b.as_object()) else {
        return a == b;
    };
    // Ownership changes are changes; only managedFields entries' timestamps are not.
    let same_value = |k: &str, v: &Value, w: Option<&Value>| match (k, v, w) {
        ("managedFields", Value::Array(x), Some(Value::Array(y))) => {
            x.len() == y.len() && x.iter().zip(y).all(|(e, f)| same_entry(e, f))
        }
        (_, v, w) => w == Some(v),
    };
    // Same keys (metadata compared separately) with equal values.
    let same_top = |x: &Map<String, Value>, y: &Map<String, Value>| {
        x.iter()
            .filter(|(k, _)| k.as_str() != "metadata")
            .all(|(k, v)| y.get(k) == Some(v))
    };
    if !same_top(ma, mb) || !same_top(mb, ma) {
        return false;
    }
    match (ma.get("metadata"), mb.get("metadata")) {
        (Some(Value::Object(x)), Some(Value::Object(y))) => {
            let same_meta = |x: &Map<String, Value>, y: &Map<String, Value>| {
                x.iter()
                    .filter(|(k, _)| k.as_str() != "resourceVersion")
                    .all(|(k, v)| same_value(k, v, y.get(k)))
            };
            same_meta(x, y) && same_meta(y, x)
        }
        (x, y) => x == y,
    }
}

/// Two managedFields entries are the same if they differ at most in `time`.
fn same_entry(e: &Value, f: &Value) -> bool {
    match (e.as_object(), f.as_object()) {
        (Some(x), Some(y)) => {
            let covered = |x: &Map<String, Value>, y: &Map<String, Value>| {
                x.iter()
                    .filter(|(k, _)| k.as_str() != "time")
                    .all(|(k, v)| y.get(k) == Some(v))
            };
            covered(x, y) && covered(y, x)
        }
        _ => e == f,
    }
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
    fn same_object_ignores_resource_version_and_managed_fields_times_only() {
        let mf = |time: &str, manager: &str| json!([{"manager": manager, "operation": "Apply", "time": time, "fieldsV1": {"f:data": {}}}]);
        let a = json!({"metadata": {"name": "a", "resourceVersion": "1", "managedFields": mf("t1", "m")}, "data": {"x": "1"}});
        let b = json!({"metadata": {"name": "a", "resourceVersion": "2", "managedFields": mf("t2", "m")}, "data": {"x": "1"}});
        assert!(same_object(&a, &b) && same_object(&b, &a));
        // An ownership change alone is a change (server-side apply must store it).
        let owner = json!({"metadata": {"name": "a", "resourceVersion": "2", "managedFields": mf("t1", "other")}, "data": {"x": "1"}});
        assert!(!same_object(&a, &owner) && !same_object(&owner, &a));
        let none = json!({"metadata": {"name": "a", "resourceVersion": "2"}, "data": {"x": "1"}});
        assert!(!same_object(&a, &none) && !same_object(&none, &a));
        let c = json!({"metadata": {"name": "a", "labels": {"l": "v"}}, "data": {"x": "1"}});
        assert!(!same_object(&a, &c) && !same_object(&c, &a));
        let d = json!({"metadata": {"name": "a"}, "data": {"x": "1"}, "extra": null});
        assert!(!same_object(&a, &d) && !same_object(&d, &a));
        let e = json!({"data": {"x": "1"}});
        assert!(!same_object(&a, &e) && !same_object(&e, &a));
        assert!(same_object(&json!(1), &json!(1)) && !same_object(&json!(1), &json!({})));
    }

    #[test]
    fn spec_change_sees_added_and_removed_fields() {
        let a = json!({"kind": "X", "spec": {"x": 1}});
        assert!(spec_changed(
            &a,
            &json!({"kind": "Y", "spec": {"x": 1}, "data": null})
        ));
        assert!(spec_changed(
            &json!({"kind": "Y", "spec": {"x": 1}, "data": null}),
            &a
        ));
        assert!(!spec_changed(&a, &json!({"kind": "Y", "spec": {"x": 1}})));
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
