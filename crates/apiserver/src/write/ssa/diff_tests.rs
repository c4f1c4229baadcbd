//! The joint walk ([`typed::diff_scoped`]) against the whole-set computation it replaces, and
//! the fast `track_update` (entries written back without re-encoding) against the reference one.

use std::sync::Arc;

use proptest::prelude::*;
use serde_json::{Value, json};

use super::typed::tests::arb_json_with;
use super::typed::{Scope, diff_scoped, modified_scoped, to_set_scoped};
use super::*;
use crate::storage::crd::schema::Structural;

/// Object keys the generators use: the fields of the typed shapes below, so that random values
/// hit associative lists, sets, atomic maps and undeclared map entries.
const KEYS: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata",
    "spec",
    "status",
    "template",
    "containers",
    "initContainers",
    "name",
    "image",
    "ports",
    "containerPort",
    "protocol",
    "env",
    "value",
    "volumes",
    "emptyDir",
    "finalizers",
    "labels",
    "data",
    "items",
    "tags",
    "atomic",
    "free",
    "replicas",
];

fn builtin(kind: &str) -> ResourceInfo {
    crate::storage::builtin::builtin_resources()
        .into_iter()
        .find(|r| r.kind == kind)
        .expect("built in")
}

/// A custom resource whose schema has what built-in kinds lack: an atomic map, a map of
/// undeclared entries, a CRD set and a CRD associative list.
fn custom() -> ResourceInfo {
    let schema = json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "atomic": {"type": "object", "x-kubernetes-map-type": "atomic",
                "additionalProperties": {"type": "string"}},
            "labels": {"type": "object", "additionalProperties": {"type": "object",
                "properties": {"value": {"type": "string"}}}},
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "items": {"type": "array", "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {
                    "name": {"type": "string"},
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}
        }},
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
    }});
    let mut info = builtin("ConfigMap");
    info.builtin = false;
    info.status = true;
    info.schema = Some(Arc::new(
        Structural::from_json(&schema, "").expect("valid schema"),
    ));
    info
}

/// The types every case is checked under (untyped included).
fn infos() -> Vec<ResourceInfo> {
    let mut untyped = builtin("ConfigMap");
    untyped.builtin = false;
    untyped.schema = None;
    vec![
        builtin("Pod"),
        builtin("Deployment"),
        builtin("ConfigMap"),
        custom(),
        untyped,
    ]
}

fn arb_container() -> impl Strategy<Value = Value> {
    let port = (
        prop::sample::select(vec![80, 81]),
        prop::option::of(prop::sample::select(vec!["TCP", "UDP"])),
    )
        .prop_map(|(p, proto)| match proto {
            Some(pr) => json!({"containerPort": p, "protocol": pr}),
            None => json!({"containerPort": p}),
        });
    let env = (
        prop::sample::select(vec!["A", "B"]),
        prop::sample::select(vec!["1", "2"]),
    )
        .prop_map(|(n, v)| json!({"name": n, "value": v}));
    (
        prop::sample::select(vec!["a", "b", "c"]),
        prop::option::of(prop::sample::select(vec!["i1", "i2"])),
        prop::option::of(prop::collection::vec(port, 0..3)),
        prop::option::of(prop::collection::vec(env, 0..3)),
        prop::option::of(prop::collection::vec("[xy]", 0..2)),
    )
        .prop_map(|(name, image, ports, env, args)| {
            let mut c = serde_json::Map::new();
            c.insert("name".into(), json!(name));
            if let Some(i) = image {
                c.insert("image".into(), json!(i));
            }
            if let Some(p) = ports {
                c.insert("ports".into(), json!(p));
            }
            if let Some(e) = env {
                c.insert("env".into(), json!(e));
            }
            if let Some(a) = args {
                c.insert("args".into(), json!(a));
            }
            Value::Object(c)
        })
}

/// Pod-, Deployment-, ConfigMap- and custom-resource-shaped objects: well-formed associative
/// lists mostly (small key spaces, so items match between old and new), duplicates sometimes.
fn arb_object() -> impl Strategy<Value = Value> {
    let strs = || prop::sample::select(vec!["x", "y", "z"]);
    (
        prop::collection::vec(arb_container(), 0..3),
        prop::collection::btree_map(strs(), strs(), 0..3),
        prop::collection::vec(strs(), 0..3),
        prop::collection::btree_map(strs(), "[a-c]{0,2}", 0..3),
        prop::option::of(arb_json_with(KEYS)),
        0..4u8,
    )
        .prop_map(|(containers, labels, finalizers, data, status, shape)| {
            let meta = json!({"name": "o", "namespace": "ns", "labels": labels,
                "finalizers": finalizers});
            let pod_spec = json!({"containers": containers,
                "volumes": [{"name": "v", "emptyDir": {}}]});
            let mut obj = match shape {
                0 => json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                    "spec": pod_spec}),
                1 => json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
                    "spec": {"replicas": 1, "template": {"metadata": {"labels": labels},
                        "spec": pod_spec}}}),
                2 => json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
                    "data": data}),
                _ => json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
                    "spec": {"atomic": data, "labels": {"l": {"value": "v"}, "m": {}},
                        "tags": finalizers, "items": containers}}),
            };
            if let (Some(s), Some(m)) = (status, obj.as_object_mut()) {
                m.insert("status".into(), s);
            }
            obj
        })
}

/// One edit of a value: the node reached by following `path` (child indices, modulo the
/// number of children; stopping at a leaf) is changed by `op`.
#[derive(Clone, Debug)]
struct Mutation {
    path: Vec<usize>,
    op: u8,
    payload: Value,
}

fn arb_mutation() -> impl Strategy<Value = Mutation> {
    (
        prop::collection::vec(0..8usize, 0..7),
        0..7u8,
        prop_oneof![
            2 => arb_json_with(KEYS),
            1 => arb_container(),
            1 => "[a-c]{0,2}".prop_map(Value::from),
        ],
    )
        .prop_map(|(path, op, payload)| Mutation { path, op, payload })
}

fn mutate(v: &mut Value, m: &Mutation, at: usize) {
    if let Some(&i) = m.path.get(at) {
        let child = match v {
            Value::Object(o) if !o.is_empty() => {
                let n = o.len();
                o.values_mut().nth(i % n)
            }
            Value::Array(a) if !a.is_empty() => {
                let n = a.len();
                a.get_mut(i % n)
            }
            _ => None,
        };
        if let Some(c) = child {
            return mutate(c, m, at + 1);
        }
    }
    let pick = m.path.last().copied().unwrap_or(0);
    let replace = match (m.op, &mut *v) {
        // Replace: a changed leaf, or a type change.
        (0, _) => Some(m.payload.clone()),
        // Insert a field / an item.
        (1, Value::Object(o)) => {
            let k = KEYS[pick % KEYS.len()];
            o.insert(k.into(), m.payload.clone());
            None
        }
        (1, Value::Array(a)) => {
            let i = pick % (a.len() + 1);
            a.insert(i, m.payload.clone());
            None
        }
        // Remove a field / an item.
        (2, Value::Object(o)) if !o.is_empty() => {
            let n = o.len();
            if let Some(k) = o.keys().nth(pick % n).cloned() {
                o.remove(&k);
            }
            None
        }
        (2, Value::Array(a)) if !a.is_empty() => {
            let n = a.len();
            a.remove(pick % n);
            None
        }
        // Reorder.
        (3, Value::Array(a)) => {
            a.reverse();
            None
        }
        (3, Value::Object(o)) => {
            let mut entries: Vec<(String, Value)> = std::mem::take(o).into_iter().collect();
            entries.reverse();
            o.extend(entries);
            None
        }
        // Duplicate an item (an associative list that cannot be keyed any more).
        (4, Value::Array(a)) if !a.is_empty() => {
            let n = a.len();
            if let Some(x) = a.get(pick % n).cloned() {
                a.push(x);
            }
            None
        }
        // Change a leaf in place.
        (4 | 5, Value::String(s)) => {
            s.push('!');
            None
        }
        (4 | 5, Value::Number(n)) => Some(json!(n.as_i64().unwrap_or(0).wrapping_add(1))),
        (4 | 5, Value::Bool(b)) => {
            *b = !*b;
            None
        }
        // Empty a map or list, or null a value.
        (5, Value::Object(o)) => {
            o.clear();
            None
        }
        (5, Value::Array(a)) => {
            a.clear();
            None
        }
        (6, _) => Some(Value::Null),
        _ => Some(m.payload.clone()),
    };
    if let Some(r) = replace {
        *v = r;
    }
}

fn has_void(s: &Set) -> bool {
    s.children
        .values()
        .any(|c| (!c.member && c.children.is_empty()) || has_void(c))
}

/// The definition: whole field sets of both sides, diffed, plus the modified leaves; voids
/// (which only ever encode an empty list's field and which `strip` prunes) dropped.
fn reference(old: &Value, new: &Value, ty: &Ty<'_>, scope: Scope<'_>) -> (Set, Set) {
    let os = to_set_scoped(old, ty, false, scope).unwrap_or_default();
    let ns = to_set_scoped(new, ty, false, scope).unwrap_or_default();
    let mut changed = ns.difference(&os);
    changed.union_with(&modified_scoped(old, new, ty, scope));
    let mut removed = os.difference(&ns);
    changed.prune();
    removed.prune();
    (changed, removed)
}

fn check_diff(old: &Value, new: &Value) -> Result<(), TestCaseError> {
    for info in infos() {
        let ty = Ty::root(&info);
        for scope in [Scope::All, Scope::Only("status"), Scope::Except("status")] {
            let (c, r) = diff_scoped(old, new, &ty, scope)
                .map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
            let (rc, rr) = reference(old, new, &ty, scope);
            prop_assert!(!has_void(&c) && !has_void(&r), "void node in {c:?} / {r:?}");
            prop_assert_eq!(
                &c,
                &rc,
                "changed, {} {:?}: {} -> {}",
                info.kind,
                scope,
                old,
                new
            );
            prop_assert_eq!(
                &r,
                &rr,
                "removed, {} {:?}: {} -> {}",
                info.kind,
                scope,
                old,
                new
            );
        }
    }
    Ok(())
}

fn arb_value() -> impl Strategy<Value = Value> {
    prop_oneof![arb_object(), arb_json_with(KEYS)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(3000)
    ))]

    /// (a) Unrelated pairs: type changes at every level, lists keyed on one side only.
    #[test]
    fn joint_walk_equals_whole_sets_on_random_pairs(old in arb_value(), new in arb_value()) {
        check_diff(&old, &new)?;
        check_diff(&new, &old)?;
    }

    /// (b) What writes look like: `new` is `old` with a few edits.
    #[test]
    fn joint_walk_equals_whole_sets_on_edits(
        old in arb_value(),
        edits in prop::collection::vec(arb_mutation(), 1..4),
    ) {
        let mut new = old.clone();
        for m in &edits {
            mutate(&mut new, m, 0);
        }
        check_diff(&old, &new)?;
        check_diff(&new, &old)?;
        check_diff(&old, &old)?;
    }
}

/// A write: who, through which endpoint, what edits.
#[derive(Clone, Debug)]
struct Write {
    manager: usize,
    status: bool,
    edits: Vec<Mutation>,
    /// Send the object back without `managedFields` (as a client building it afresh does).
    drop_managed: bool,
}

fn arb_write() -> impl Strategy<Value = Write> {
    (
        0..3usize,
        prop::bool::weighted(0.3),
        prop::collection::vec(arb_mutation(), 0..3),
        prop::bool::weighted(0.3),
    )
        .prop_map(|(manager, status, edits, drop_managed)| Write {
            manager,
            status,
            edits,
            drop_managed,
        })
}

fn clock(n: usize) -> impl FnOnce() -> String {
    move || format!("2026-01-01T00:00:{:02}Z", n % 60)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(1000)
    ))]

    /// Sequences of writes by 1–3 managers (main resource and `/status`): the fast path writes
    /// byte-identical objects to the reference path, at every step.
    #[test]
    fn track_update_equals_reference(
        first in arb_object(),
        writes in prop::collection::vec(arb_write(), 1..8),
    ) {
        for info in [builtin("Pod"), builtin("Deployment"), builtin("ConfigMap"), custom()] {
            let mut live = track_update_with(&info, None, first.clone(), "creator", None,
                clock(0), true);
            for (n, w) in writes.iter().enumerate() {
                let mut new = live.clone();
                for m in &w.edits {
                    // Edits of metadata.managedFields itself are requests too.
                    mutate(&mut new, m, 0);
                }
                if w.drop_managed
                    && let Some(m) = new.get_mut("metadata").and_then(Value::as_object_mut)
                {
                    m.remove("managedFields");
                }
                let manager = ["alpha", "beta", "gamma"][w.manager];
                let sub = w.status.then_some("status");
                let fast = track_update_with(&info, Some(&live), new.clone(), manager, sub,
                    clock(n + 1), false);
                let slow = track_update_with(&info, Some(&live), new, manager, sub,
                    clock(n + 1), true);
                let (f, s) = (
                    serde_json::to_string(&fast).unwrap_or_default(),
                    serde_json::to_string(&slow).unwrap_or_default(),
                );
                prop_assert_eq!(f, s, "{} write {} by {}", info.kind, n, manager);
                live = fast;
            }
        }
    }
}

#[test]
fn too_deep_values_fall_back_to_whole_sets() {
    let info = builtin("ConfigMap");
    let ty = Ty::root(&info);
    let mut deep = json!("leaf");
    for _ in 0..250 {
        deep = json!({ "a": deep });
    }
    let old = json!({"metadata": {"name": "x"}, "data": {"k": "1"}, "deep": deep});
    let new = json!({"metadata": {"name": "x"}, "data": {"k": "2"}});
    assert!(diff_scoped(&old, &new, &ty, Scope::All).is_err());
    assert!(diff_scoped(&new, &old, &ty, Scope::All).is_err());
    for (a, b) in [(&old, &new), (&new, &old)] {
        let fast = compare(a, b, &ty, &info, None);
        let slow = compare_with(a, b, &ty, &info, None, true);
        assert_eq!(fast.changed, slow.changed);
        assert_eq!(fast.removed, slow.removed);
    }
}

#[test]
fn entries_nobody_changed_are_written_back_as_they_were() {
    let info = builtin("ConfigMap");
    let cm = |seq: u64| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "ns", "labels": {"bench-seq": seq.to_string()}},
            "data": {"payload": "x".repeat(1024), "bench-seq": seq.to_string()}})
    };
    let live = track_update_with(&info, None, cm(0), "bench", None, clock(0), false);
    let other = json!({"manager": "other", "operation": "Update", "apiVersion": "v1",
        "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {"f:annotations": {"f:a": {}}}}});
    let mut live = live;
    if let Some(Value::Array(mf)) = live.pointer_mut("/metadata/managedFields") {
        mf.push(other.clone());
    }
    let entries = decode_managed_keep(&live, true, None).expect("entries");
    assert!(entries.iter().all(|e| e.source.is_some()), "canonical");
    // A write that only touches `data`: the other manager's entry (metadata only) is not even
    // decoded, the writer's own is.
    let mut me = entries[0].clone();
    me.set = Set::new();
    let lazy = decode_managed_keep(&live, true, Some((&me, &["f:data"]))).expect("entries");
    assert_eq!(
        lazy.iter().map(|e| e.lazy).collect::<Vec<_>>(),
        vec![false, true]
    );
    assert!(lazy[1].set.is_empty() && lazy[1].source == Some(1));
    let out = track_update_with(&info, Some(&live), cm(1), "bench", None, clock(1), false);
    let mf = out["metadata"]["managedFields"]
        .as_array()
        .expect("entries");
    assert_eq!(mf.len(), 2);
    assert_eq!(mf[0]["time"], "2026-01-01T00:00:01Z");
    assert_eq!(mf[1], other);
    let slow = track_update_with(&info, Some(&live), cm(1), "bench", None, clock(1), true);
    assert_eq!(
        serde_json::to_string(&out).unwrap_or_default(),
        serde_json::to_string(&slow).unwrap_or_default()
    );
}

#[test]
fn non_canonical_fields_v1_is_re_encoded() {
    for (raw, canonical) in [
        (json!({}), true),
        (json!({"f:a": {}, "f:b": {".": {}, "f:c": {}}}), true),
        (json!({"f:b": {}, "f:a": {}}), false),
        (json!({"f:a": {".": {}}}), false),
        (json!({".": {}, "f:a": {}}), false),
        (json!({"f:a": {"f:c": {}, ".": {}}}), false),
        (json!({"k:{\"b\":1,\"a\":2}": {}}), false),
        (json!({"k:{\"a\":2,\"b\":1}": {}}), true),
        (json!({"k:{ \"a\":2}": {}}), false),
    ] {
        let (set, c) = Set::from_fields_v1_canonical(&raw).expect("valid");
        assert_eq!(c, canonical, "{raw}");
        assert_eq!(Set::is_canonical_fields_v1(&raw), canonical, "{raw}");
        if c {
            assert_eq!(set.to_fields_v1(), raw);
            assert_eq!(
                serde_json::to_string(&set.to_fields_v1()).unwrap_or_default(),
                serde_json::to_string(&raw).unwrap_or_default()
            );
        }
    }
}

proptest! {
    /// The decode-free canonicality check agrees with the decoder, on random `FieldsV1`-ish
    /// JSON (mostly invalid or non-canonical) and on real encodings (always canonical).
    #[test]
    fn canonical_check_agrees_with_the_decoder(
        raw in arb_json_with(&[".", "f:a", "f:b", "k:{\"a\":1}", "k:{\"a\": 1}", "v:\"x\"",
            "v:\"x\" ", "i:0", "i:01", "x"]),
        v in arb_value(),
    ) {
        let decoded = Set::from_fields_v1_canonical(&raw).is_ok_and(|(_, c)| c);
        prop_assert_eq!(Set::is_canonical_fields_v1(&raw), decoded, "{}", raw);
        let info = builtin("Pod");
        let set = to_set_scoped(&v, &Ty::root(&info), false, Scope::All).expect("lenient");
        let mut set = set;
        set.prune();
        prop_assert!(Set::is_canonical_fields_v1(&set.to_fields_v1()));
    }
}

/// More update managers than are kept: the entries left undecoded are decoded for the merge,
/// and the result is still the reference one.
#[test]
fn capping_many_managers_equals_reference() {
    let info = builtin("ConfigMap");
    let mut obj = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "ns"}, "data": {}});
    for n in 0..14 {
        let mut new = obj.clone();
        // Alternately `data` and `metadata`: each write leaves half the entries undecoded.
        let at = if n % 2 == 0 { "/data" } else { "/metadata" };
        if let Some(d) = new.pointer_mut(at).and_then(Value::as_object_mut) {
            d.insert(format!("k{n}"), json!(n.to_string()));
        }
        let manager = format!("writer-{n:02}");
        let fast = track_update_with(
            &info,
            Some(&obj),
            new.clone(),
            &manager,
            None,
            clock(n),
            false,
        );
        let slow = track_update_with(&info, Some(&obj), new, &manager, None, clock(n), true);
        assert_eq!(
            serde_json::to_string(&fast).unwrap_or_default(),
            serde_json::to_string(&slow).unwrap_or_default(),
            "write {n}"
        );
        obj = fast;
    }
    let mf = obj["metadata"]["managedFields"]
        .as_array()
        .expect("entries");
    assert!(
        mf.iter().any(|e| e["manager"] == "ancient-changes"),
        "{mf:?}"
    );
}
