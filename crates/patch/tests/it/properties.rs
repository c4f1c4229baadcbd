//! Property tests: a diff applied to its original reproduces the target for generated objects of several
//! built-in kinds, three-way patches reproduce the new configuration, and no input makes apply/diff panic.

use crate::common::objects::*;
use fleet_patch::strategic::{self, Schema};
use proptest::prelude::*;
use serde_json::{Value, json};

/// Case count: `PROPTEST_CASES` when set (for long soak runs), else the given default.
fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn schema(api_version: &str, kind: &str) -> Schema {
    strategic::schema_for(api_version, kind).unwrap_or_else(|| panic!("no schema for {kind}"))
}

fn check_roundtrip(a: &Value, b: &Value, s: Schema) -> Result<(), TestCaseError> {
    let patch = strategic::diff(a, b, s).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let got = strategic::apply(a, &patch, s)
        .map_err(|e| TestCaseError::fail(format!("{e}; patch {patch}")))?;
    prop_assert_eq!(&got, b, "patch {}", patch);
    // Three-way with live == last-applied is the two-way case.
    let p3 =
        strategic::three_way(Some(a), b, a, s).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let got3 =
        strategic::apply(a, &p3, s).map_err(|e| TestCaseError::fail(format!("{e}; patch {p3}")))?;
    prop_assert_eq!(&got3, b, "three-way patch {}", p3);
    // Diffing equal documents yields an empty patch.
    let empty = strategic::diff(b, b, s).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(empty, json!({}));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(256), ..ProptestConfig::default() })]

    #[test]
    fn deployment_diff_roundtrip(a in deployment(), b in deployment()) {
        check_roundtrip(&a, &b, schema("apps/v1", "Deployment"))?;
    }

    #[test]
    fn pod_diff_roundtrip(a in pod(), b in pod()) {
        check_roundtrip(&a, &b, schema("v1", "Pod"))?;
    }

    #[test]
    fn service_diff_roundtrip(a in service(), b in service()) {
        check_roundtrip(&a, &b, schema("v1", "Service"))?;
    }

    #[test]
    fn configmap_diff_roundtrip(a in config_map(), b in config_map()) {
        check_roundtrip(&a, &b, schema("v1", "ConfigMap"))?;
    }

    #[test]
    fn untyped_diff_roundtrip(a in deployment(), b in deployment()) {
        check_roundtrip(&a, &b, Schema::none())?;
    }

    /// Three-way: the live object carries extra fields (set by others); applying the patch yields the new
    /// configuration on every field the configuration owns.
    #[test]
    fn three_way_reaches_modified(a in deployment(), b in deployment(), extra in string_map()) {
        let s = schema("apps/v1", "Deployment");
        let mut live = a.clone();
        live["status"] = json!({"observed": extra});
        let patch = strategic::three_way(Some(&a), &b, &live, s)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let got = strategic::apply(&live, &patch, s)
            .map_err(|e| TestCaseError::fail(format!("{e}; patch {patch}")))?;
        prop_assert_eq!(&got["spec"], &b["spec"], "patch {}", patch);
        prop_assert_eq!(&got["metadata"], &b["metadata"], "patch {}", patch);
        prop_assert_eq!(&got["status"], &live["status"]);
    }
}

/// Arbitrary JSON biased towards keys strategic merge treats specially.
fn arb_json() -> impl Strategy<Value = Value> {
    let key = prop::sample::select(vec![
        "$patch",
        "$retainKeys",
        "$setElementOrder/containers",
        "$deleteFromPrimitiveList/finalizers",
        "$setElementOrder/finalizers",
        "$deleteFromPrimitiveList/containers",
        "containers",
        "name",
        "ports",
        "containerPort",
        "protocol",
        "env",
        "finalizers",
        "metadata",
        "spec",
        "template",
        "volumes",
        "strategy",
        "replace",
        "delete",
        "merge",
        "x",
    ])
    .prop_map(str::to_string);
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (0..100i64).prop_map(|n| json!(n)),
        prop::sample::select(vec![
            "replace", "delete", "merge", "web", "TCP", "name", "x"
        ])
        .prop_map(|s| json!(s)),
    ];
    leaf.prop_recursive(6, 64, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(key.clone(), inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn wrap(v: Value) -> Value {
    // Put arbitrary content where the schema has metadata so typed paths are exercised.
    json!({"metadata": v.clone(), "spec": {"template": {"spec": v.clone()}, "strategy": v}})
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(512), ..ProptestConfig::default() })]

    /// No input panics apply, diff or three_way (errors are fine).
    #[test]
    fn no_panics(a in arb_json(), b in arb_json(), c in arb_json()) {
        for s in [schema("apps/v1", "Deployment"), schema("v1", "Pod"), Schema::none()] {
            for (x, y) in [(&a, &b), (&wrap(a.clone()), &wrap(b.clone()))] {
                let _ = strategic::apply(x, y, s);
                let _ = strategic::diff(x, y, s);
                let _ = strategic::three_way(Some(x), y, &c, s);
                let _ = strategic::three_way(None, y, x, s);
            }
        }
        let _ = fleet_patch::merge::apply(&a, &b);
        let _ = fleet_patch::merge::three_way(Some(&a), &b, &c);
        let _ = fleet_patch::json::apply(&a, &b);
    }
}

/// Deeply nested input is rejected with an error instead of overflowing the stack, on a thread with
/// tokio's default 2 MiB worker stack, even in debug builds (whose frames are largest).
#[test]
fn deep_nesting_is_an_error() {
    let run = || {
        // Alternate objects and merge lists (containers) so every recursive path is exercised.
        let nest = |depth: usize| {
            let mut v = json!(1);
            for i in 0..depth {
                v = if i % 2 == 0 {
                    json!({"containers": [{"name": "x", "env": [{"name": "y", "value": v}]}]})
                } else {
                    json!({"spec": v})
                };
            }
            v
        };
        let pod = schema("v1", "Pod");
        for depth in [10, 40, 200] {
            let v = nest(depth);
            let w = nest(depth);
            let _ = strategic::apply(&w, &v, pod);
            let _ = strategic::apply(&json!({}), &v, Schema::none());
            let _ = strategic::diff(&w, &v, pod);
            let _ = strategic::diff(&json!({}), &v, pod);
            let _ = strategic::three_way(Some(&w), &v, &w, pod);
        }
        let deep = nest(400);
        let err = strategic::apply(&json!({}), &deep, Schema::none()).expect_err("too deep");
        assert!(err.to_string().contains("deeper than"), "{err}");
        assert!(fleet_patch::merge::apply(&json!({}), &deep).is_err());
    };
    let handle = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(run)
        .expect("spawn");
    assert!(handle.join().is_ok(), "deep input overflowed or panicked");
}

/// What kubectl apply of `new` over `live` (created from `old`) must leave: `new`, plus the defaults
/// on items that stay and whose field neither configuration sets, plus the fields others set.
fn expected_after_apply(old: &Value, new: &Value, live: &Value) -> Value {
    let mut want = new.clone();
    let old_cs = old["spec"]["template"]["spec"]["containers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if let Some(cs) = want["spec"]["template"]["spec"]["containers"].as_array_mut() {
        for c in cs {
            let Some(oc) = old_cs.iter().find(|o| o["name"] == c["name"]) else {
                continue;
            };
            if c.get("imagePullPolicy").is_none() {
                c["imagePullPolicy"] = json!("IfNotPresent");
            }
            let old_ports = oc
                .get("ports")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            if let Some(ps) = c.get_mut("ports").and_then(Value::as_array_mut) {
                for p in ps {
                    let Some(op) = old_ports
                        .iter()
                        .find(|o| o["containerPort"] == p["containerPort"])
                    else {
                        continue;
                    };
                    if p.get("protocol").is_none() && op.get("protocol").is_none() {
                        p["protocol"] = json!("TCP");
                    }
                }
            }
        }
    }
    // Others' label survives unless the whole labels map was dropped from the configuration.
    let new_has = new["metadata"].get("labels").is_some();
    let old_has = old["metadata"].get("labels").is_some();
    if new_has || !old_has {
        if !new_has {
            want["metadata"]["labels"] = json!({});
        }
        want["metadata"]["labels"]["injected-by"] = json!("webhook");
    }
    want["status"] = live["status"].clone();
    want
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(256), ..ProptestConfig::default() })]

    /// kubectl apply against a live object with server defaults and others' fields: the result is the
    /// new configuration, defaults kept where neither configuration set the field, others' fields kept.
    #[test]
    fn apply_over_defaulted_live(a in deployment(), b in deployment()) {
        let s = schema("apps/v1", "Deployment");
        let live = defaulted_live(&a);
        let patch = strategic::three_way(Some(&a), &b, &live, s)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let got = strategic::apply(&live, &patch, s)
            .map_err(|e| TestCaseError::fail(format!("{e}; patch {patch}")))?;
        let want = expected_after_apply(&a, &b, &live);
        prop_assert_eq!(&got, &want, "patch {}", patch);
    }
}

/// Upstream orders a replaced list by each merge key's first position, grouping repeated keys.
/// Only the lists in `fields` are regrouped (the ones the patch replaced).
fn group_repeated_keys(pod: &Value, fields: &[&str]) -> Value {
    let mut p = pod.clone();
    if let Some(c) = p["spec"]["containers"].get_mut(0) {
        for (field, key) in [("env", "name"), ("ports", "containerPort")] {
            if !fields.contains(&field) {
                continue;
            }
            if let Some(Value::Array(items)) = c.get_mut(field) {
                let keys: Vec<Value> = items.iter().map(|v| v[key].clone()).collect();
                items.sort_by_key(|v| keys.iter().position(|k| *k == v[key]));
            }
        }
    }
    p
}

/// Which of the container's lists a patch replaces: a list holding `{"$patch": "replace"}`, or all
/// of them when the containers list itself is replaced.
fn replaced_lists(patch: &Value) -> Vec<&'static str> {
    let is_replace = |v: &Value| {
        v.as_array().is_some_and(|a| {
            a.iter()
                .any(|x| x.get("$patch").and_then(Value::as_str) == Some("replace"))
        })
    };
    let containers = &patch["spec"]["containers"];
    if is_replace(containers) {
        return vec!["env", "ports"];
    }
    ["env", "ports"]
        .into_iter()
        .filter(|f| {
            containers
                .as_array()
                .is_some_and(|cs| cs.iter().any(|c| is_replace(&c[*f])))
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(256), ..ProptestConfig::default() })]

    /// Duplicated merge keys still round-trip (the diff falls back to replacing such lists), up to the
    /// grouping of repeated keys upstream applies to replaced lists.
    #[test]
    fn ambiguous_lists_roundtrip(a in ambiguous_pod(), b in ambiguous_pod()) {
        let s = schema("v1", "Pod");
        let patch = strategic::diff(&a, &b, s).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let got = strategic::apply(&a, &patch, s).map_err(|e| TestCaseError::fail(format!("{e}; patch {patch}")))?;
        let b_is_grouped = group_repeated_keys(&b, &["env", "ports"]) == b;
        let want = group_repeated_keys(&b, &replaced_lists(&patch));
        prop_assert_eq!(&got, &want, "patch {} (b grouped: {})", patch, b_is_grouped);
    }
}
