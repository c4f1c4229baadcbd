//! The generated CRDs are pinned byte for byte to `golden/crds.json`: every JSON field name of
//! every kind is in their schemas, so a refactoring of the types (module split, `rename_all`)
//! that changed a single name, or a schema, fails here. A deliberate change to the types
//! regenerates the file with `FLEET_REGEN_GOLDEN=1 cargo test -p fleet-api --test it`.

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde_json::{Map, Value, json};

use crate::optional_parts::round_trip;

fn golden_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it/golden/crds.json")
}

#[test]
fn generated_crds_match_the_golden_file() {
    let crds = fleet_api::crds::all();
    let mut got = serde_json::to_string_pretty(&crds).expect("CRDs serialize");
    got.push('\n');
    let path = golden_path();
    if std::env::var("FLEET_REGEN_GOLDEN").as_deref() == Ok("1") {
        std::fs::write(&path, &got).expect("write golden");
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if got != want {
        let line = got
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| got.lines().count().min(want.lines().count()));
        panic!(
            "generated CRDs differ from {} at line {}:\n  got:  {:?}\n  want: {:?}",
            path.display(),
            line + 1,
            got.lines().nth(line),
            want.lines().nth(line)
        );
    }
}

/// A value for `schema` with every property present and no zero values (so nothing is omitted
/// on the way back out).
fn full(schema: &Value, depth: usize) -> Value {
    if schema.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
        return json!(1);
    }
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    let ty = schema.get("type").and_then(Value::as_str).unwrap_or("");
    match ty {
        "string" => match schema.get("format").and_then(Value::as_str) {
            Some("date-time") => json!("2024-01-02T03:04:05Z"),
            _ => json!("x"),
        },
        "integer" => json!(1),
        "number" => json!(1.5),
        "boolean" => json!(true),
        "array" => match schema.get("items") {
            Some(items) if depth < 12 => json!([full(items, depth + 1)]),
            _ => json!([]),
        },
        _ => {
            let mut m = Map::new();
            if depth >= 12 {
                return Value::Object(m);
            }
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (k, s) in props {
                    m.insert(k.clone(), full(s, depth + 1));
                }
            } else if let Some(ap) = schema.get("additionalProperties").filter(|a| a.is_object()) {
                m.insert("k".into(), full(ap, depth + 1));
            } else {
                m.insert("k".into(), json!("v"));
            }
            Value::Object(m)
        }
    }
}

/// Every object-key path of `v` (`.spec.helm.releaseName`; array items as `[]`).
fn key_paths(v: &Value, path: &str, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = format!("{path}.{k}");
                key_paths(x, &p, out);
                out.insert(p);
            }
        }
        Value::Array(a) => {
            for x in a {
                key_paths(x, &format!("{path}[]"), out);
            }
        }
        _ => {}
    }
}

/// Serde reads and writes every field under the name the schema gives it: a fully populated
/// object of each kind (every property of its schema set) comes back with every key.
#[test]
fn every_schema_field_round_trips_under_its_name() {
    for crd in fleet_api::crds::all() {
        let kind = crd.spec.names.kind.clone();
        let crd = serde_json::to_value(&crd).expect("CRD serializes");
        let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
        let mut obj = full(schema, 0);
        obj["apiVersion"] = json!("fleet.cattle.io/v1alpha1");
        obj["kind"] = json!(kind);
        obj["metadata"] = json!({"name": "x", "namespace": "ns"});
        let back = round_trip(&kind, obj.clone()).unwrap_or_else(|e| panic!("{kind}: {e}"));
        let (mut want, mut got) = (BTreeSet::new(), BTreeSet::new());
        key_paths(&obj, "", &mut want);
        key_paths(&back, "", &mut got);
        let lost: Vec<_> = want.difference(&got).collect();
        assert!(
            lost.is_empty(),
            "{kind}: keys lost on the round trip: {lost:?}"
        );
    }
}
