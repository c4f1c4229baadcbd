//! Live vs desired: whether a deployed object still holds what the agent applied. Fields the
//! server or other managers added are fine (desired must be contained in live); a difference is
//! reported as the JSON merge patch that would restore desired state, as upstream reports
//! `modifiedStatus[].patch`. `diff.comparePatches` remove JSON pointers from both sides first.

use base64::Engine;
use fleet_api::ComparePatch;
use serde_json::{Map, Value};

use crate::objects::ObjRef;

/// Whether a comparePatch's `name` selects an object named `name`: empty selects all, otherwise
/// the whole name must match it as a regular expression (upstream matches names as regexes; a
/// plain name is a regex matching itself). A pattern that does not compile matches only itself.
pub fn name_matches(pattern: &str, name: &str) -> bool {
    if pattern.is_empty() || pattern == name {
        return true;
    }
    regex::Regex::new(&format!("^(?:{pattern})$")).is_ok_and(|re| re.is_match(name))
}

/// The JSON pointers to ignore for `r` under the bundle's comparePatches (`jsonPointers`, plus
/// `remove` operations' paths).
pub fn ignored_pointers(patches: &[ComparePatch], r: &ObjRef) -> Vec<String> {
    let mut out = Vec::new();
    for p in patches {
        let matches = (p.api_version.is_empty() || p.api_version == r.api_version)
            && (p.kind.is_empty() || p.kind == r.kind)
            && (p.namespace.is_empty() || p.namespace == r.namespace)
            && name_matches(&p.name, &r.name);
        if !matches {
            continue;
        }
        out.extend(p.json_pointers.iter().cloned());
        out.extend(
            p.operations
                .iter()
                .filter(|o| o.op == "remove" || o.op == "ignore")
                .map(|o| o.path.clone()),
        );
    }
    out
}

/// Removes the value at a JSON pointer, if present.
fn remove_pointer(v: &mut Value, ptr: &str) {
    let Some((parent, last)) = ptr.rsplit_once('/') else {
        return;
    };
    let last = last.replace("~1", "/").replace("~0", "~");
    match v.pointer_mut(parent) {
        Some(Value::Object(m)) => {
            m.remove(&last);
        }
        Some(Value::Array(a)) => {
            if let Ok(i) = last.parse::<usize>()
                && i < a.len()
            {
                a.remove(i);
            }
        }
        _ => {}
    }
}

/// The merge patch that turns `live` back into `desired` (only desired's fields are looked at;
/// `metadata.managedFields`, `status` and server-set metadata are not part of desired state).
/// None when live holds everything desired holds.
pub fn drift(desired: &Value, live: &Value, ignore: &[String]) -> Option<Value> {
    let string_data = desired.get("kind").and_then(Value::as_str) == Some("Secret")
        && desired.get("stringData").is_some();
    if ignore.is_empty()
        && !string_data
        && let (Value::Object(d), Value::Object(l)) = (desired, live)
    {
        // Nothing to rewrite: compare in place (this runs for every object at every check).
        return contained_entries(d, l, Some("status"));
    }
    let mut d = desired.clone();
    let mut l = live.clone();
    for p in ignore {
        remove_pointer(&mut d, p);
        remove_pointer(&mut l, p);
    }
    if let Some(m) = d.as_object_mut() {
        m.remove("status");
    }
    fold_string_data(&mut d);
    contained_patch(&d, &l)
}

fn is_void(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// A Secret's `stringData` is write-only: the server folds it into `data` (base64).
fn fold_string_data(d: &mut Value) {
    if d.get("kind").and_then(Value::as_str) != Some("Secret") {
        return;
    }
    let Some(m) = d.as_object_mut() else { return };
    let Some(Value::Object(sd)) = m.remove("stringData") else {
        return;
    };
    let data = m.entry("data").or_insert_with(|| Value::Object(Map::new()));
    if let Some(data) = data.as_object_mut() {
        for (k, v) in sd {
            let s = v.as_str().unwrap_or("").as_bytes().to_vec();
            data.insert(
                k,
                Value::String(base64::engine::general_purpose::STANDARD.encode(s)),
            );
        }
    }
}

/// [`contained_patch`] of two objects, leaving out desired's key `skip`.
fn contained_entries(
    d: &Map<String, Value>,
    l: &Map<String, Value>,
    skip: Option<&str>,
) -> Option<Value> {
    let mut patch = Map::new();
    for (k, dv) in d {
        if skip == Some(k.as_str()) {
            continue;
        }
        match l.get(k) {
            Some(lv) => {
                if let Some(p) = contained_patch(dv, lv) {
                    patch.insert(k.clone(), p);
                }
            }
            // The server drops empty maps and lists and nulls: not drift.
            None if is_void(dv) => {}
            None => {
                patch.insert(k.clone(), dv.clone());
            }
        }
    }
    (!patch.is_empty()).then_some(Value::Object(patch))
}

fn contained_patch(desired: &Value, live: &Value) -> Option<Value> {
    match (desired, live) {
        (Value::Object(d), Value::Object(l)) => contained_entries(d, l, None),
        (Value::Array(d), Value::Array(l)) => {
            let same = d.len() == l.len()
                && d.iter()
                    .zip(l)
                    .all(|(a, b)| contained_patch(a, b).is_none());
            (!same).then(|| desired.clone())
        }
        (Value::Number(a), Value::Number(b)) if a.as_f64() == b.as_f64() => None,
        _ if desired == live => None,
        _ => Some(desired.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compare_patch_names_are_anchored_regexes() {
        assert!(name_matches("", "x"));
        assert!(name_matches("web", "web"));
        assert!(!name_matches("web", "web-2"));
        assert!(name_matches("web-.*", "web-2"));
        assert!(!name_matches("web-.*", "api-web-2"));
        assert!(name_matches("(", "("));
        assert!(!name_matches("(", "x"));
    }
    use serde_json::json;

    #[test]
    fn added_fields_are_fine_changed_fields_are_a_patch() {
        let desired = json!({"spec": {"ports": [{"port": 80}]}, "metadata": {"name": "s"}});
        let live = json!({"spec": {"ports": [{"port": 80, "protocol": "TCP"}], "clusterIP": "10.0.0.1"},
                          "metadata": {"name": "s", "uid": "u"}});
        assert_eq!(drift(&desired, &live, &[]), None);
        let edited = json!({"spec": {"ports": [{"port": 81, "protocol": "TCP"}]}, "metadata": {"name": "s"}});
        assert_eq!(
            drift(&desired, &edited, &[]),
            Some(json!({"spec": {"ports": [{"port": 80}]}}))
        );
    }

    #[test]
    fn desired_status_is_not_compared() {
        let desired = json!({"metadata": {"name": "d"}, "status": {"replicas": 3}});
        let live = json!({"metadata": {"name": "d"}, "status": {"replicas": 1}});
        assert_eq!(drift(&desired, &live, &[]), None);
        let live = json!({"metadata": {"name": "e"}, "status": {"replicas": 1}});
        assert_eq!(
            drift(&desired, &live, &[]),
            Some(json!({"metadata": {"name": "d"}}))
        );
    }

    #[test]
    fn server_normalisations_are_not_drift() {
        let desired = json!({"kind": "Secret", "metadata": {"annotations": {}, "labels": {"a": "b"}},
                             "stringData": {"k": "v"}});
        let live =
            json!({"kind": "Secret", "metadata": {"labels": {"a": "b"}}, "data": {"k": "dg=="}});
        assert_eq!(drift(&desired, &live, &[]), None);
        let edited =
            json!({"kind": "Secret", "metadata": {"labels": {"a": "b"}}, "data": {"k": "eA=="}});
        assert!(drift(&desired, &edited, &[]).is_some());
    }

    #[test]
    fn compare_patches_ignore_pointers() {
        let r = ObjRef {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: "n".into(),
            name: "c".into(),
        };
        let cp: Vec<ComparePatch> = serde_json::from_value(json!([
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "namespace": "n", "jsonPointers": ["/data/k"]},
            {"kind": "Secret", "jsonPointers": ["/data"]}
        ]))
        .unwrap();
        let ptrs = ignored_pointers(&cp, &r);
        assert_eq!(ptrs, vec!["/data/k".to_string()]);
        let desired = json!({"data": {"k": "a", "j": "b"}});
        let live = json!({"data": {"k": "edited", "j": "b"}});
        assert_eq!(drift(&desired, &live, &ptrs), None);
        assert!(drift(&desired, &live, &[]).is_some());
    }
}
