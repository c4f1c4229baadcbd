//! Property tests: a diff applied to its original reproduces the target for generated objects of several
//! built-in kinds, three-way patches reproduce the new configuration, and no input makes apply/diff panic.

use fleet_patch::strategic::{self, Schema};
use proptest::prelude::*;
use proptest::sample::subsequence;
use serde_json::{Map, Value, json};

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

/// A random subset of `pool` in random order (unique values, as merge keys must be).
fn unique<T: Clone + std::fmt::Debug + 'static>(
    pool: Vec<T>,
    max: usize,
) -> impl Strategy<Value = Vec<T>> {
    let n = pool.len();
    subsequence(pool, 0..=max.min(n)).prop_shuffle()
}

fn small_str() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["a", "b", "c", "x", "", "1"]).prop_map(str::to_string)
}

fn string_map() -> impl Strategy<Value = Value> {
    prop::collection::btree_map(
        prop::sample::select(vec!["app", "tier", "team", "env", "k8s.io/x"]),
        small_str(),
        0..4,
    )
    .prop_map(|m| {
        Value::Object(
            m.into_iter()
                .map(|(k, v)| (k.to_string(), Value::String(v)))
                .collect(),
        )
    })
}

fn opt_insert(m: &mut Map<String, Value>, k: &str, v: Option<Value>) {
    if let Some(v) = v {
        m.insert(k.to_string(), v);
    }
}

fn metadata() -> impl Strategy<Value = Value> {
    (
        prop::option::of(string_map()),
        prop::option::of(string_map()),
        prop::option::of(unique(vec!["f/a", "f/b", "f/c", "f/d"], 4)),
        prop::option::of(unique(vec!["u1", "u2", "u3"], 3)),
    )
        .prop_map(|(labels, annotations, finalizers, owners)| {
            let mut m = Map::new();
            m.insert("name".into(), json!("obj"));
            opt_insert(&mut m, "labels", labels);
            opt_insert(&mut m, "annotations", annotations);
            opt_insert(&mut m, "finalizers", finalizers.map(|f| json!(f)));
            opt_insert(
                &mut m,
                "ownerReferences",
                owners.map(|o| {
                    Value::Array(
                        o.into_iter()
                            .map(|u| json!({"uid": u, "kind": "X", "name": u}))
                            .collect(),
                    )
                }),
            );
            Value::Object(m)
        })
}

fn env() -> impl Strategy<Value = Value> {
    unique(vec!["A", "B", "C", "D"], 4).prop_flat_map(|names| {
        let n = names.len();
        (
            Just(names),
            prop::collection::vec((small_str(), any::<bool>()), n),
        )
            .prop_map(|(names, vals)| {
                Value::Array(
                    names
                        .into_iter()
                        .zip(vals)
                        .map(|(n, (v, from))| {
                            if from {
                                json!({"name": n, "valueFrom": {"secretKeyRef": {"name": v, "key": "k"}}})
                            } else {
                                json!({"name": n, "value": v})
                            }
                        })
                        .collect(),
                )
            })
    })
}

fn ports() -> impl Strategy<Value = Value> {
    unique(vec![80, 443, 8080, 9090], 4).prop_flat_map(|ports| {
        let n = ports.len();
        (
            Just(ports),
            prop::collection::vec(
                prop::option::of(prop::sample::select(vec!["TCP", "UDP"])),
                n,
            ),
        )
            .prop_map(|(ports, protos)| {
                Value::Array(
                    ports
                        .into_iter()
                        .zip(protos)
                        .map(|(p, proto)| match proto {
                            Some(pr) => json!({"containerPort": p, "protocol": pr}),
                            None => json!({"containerPort": p}),
                        })
                        .collect(),
                )
            })
    })
}

fn container(name: &'static str) -> impl Strategy<Value = Value> {
    (
        prop::option::of(prop::sample::select(vec!["nginx", "redis", "busybox:1"])),
        prop::option::of(env()),
        prop::option::of(ports()),
        prop::option::of(unique(vec!["/a", "/b", "/c"], 3)),
        prop::option::of(prop::collection::vec(small_str(), 0..3)),
        prop::option::of(string_map()),
    )
        .prop_map(move |(image, env, ports, mounts, args, limits)| {
            let mut m = Map::new();
            m.insert("name".into(), json!(name));
            opt_insert(&mut m, "image", image.map(|i| json!(i)));
            opt_insert(&mut m, "env", env);
            opt_insert(&mut m, "ports", ports);
            opt_insert(
                &mut m,
                "volumeMounts",
                mounts.map(|ms| {
                    Value::Array(
                        ms.into_iter()
                            .map(|p| json!({"name": "v", "mountPath": p}))
                            .collect(),
                    )
                }),
            );
            opt_insert(&mut m, "args", args.map(|a| json!(a)));
            opt_insert(&mut m, "resources", limits.map(|l| json!({"limits": l})));
            Value::Object(m)
        })
}

fn containers() -> impl Strategy<Value = Value> {
    unique(vec!["web", "sidecar", "init", "proxy"], 4).prop_flat_map(|names| {
        names
            .into_iter()
            .map(container)
            .collect::<Vec<_>>()
            .prop_map(Value::Array)
    })
}

fn volumes() -> impl Strategy<Value = Value> {
    unique(vec!["v1", "v2", "v3"], 3).prop_flat_map(|names| {
        let n = names.len();
        (Just(names), prop::collection::vec(0..3u8, n)).prop_map(|(names, kinds)| {
            Value::Array(
                names
                    .into_iter()
                    .zip(kinds)
                    .map(|(n, k)| match k {
                        0 => json!({"name": n, "emptyDir": {}}),
                        1 => json!({"name": n, "configMap": {"name": "cm"}}),
                        _ => json!({"name": n, "secret": {"secretName": "s", "optional": true}}),
                    })
                    .collect(),
            )
        })
    })
}

fn pod_spec() -> impl Strategy<Value = Value> {
    (
        containers(),
        prop::option::of(volumes()),
        prop::option::of(
            prop::collection::vec(prop::sample::select(vec!["a", "b"]), 0..3).prop_map(|ks| {
                json!(
                    ks.into_iter()
                        .map(|k| json!({"key": k, "operator": "Exists"}))
                        .collect::<Vec<_>>()
                )
            }),
        ),
        prop::option::of(string_map()),
        prop::option::of(unique(vec!["reg1", "reg2"], 2)),
    )
        .prop_map(|(containers, volumes, tolerations, node_selector, pull)| {
            let mut m = Map::new();
            m.insert("containers".into(), containers);
            opt_insert(&mut m, "volumes", volumes);
            opt_insert(&mut m, "tolerations", tolerations);
            opt_insert(&mut m, "nodeSelector", node_selector);
            opt_insert(
                &mut m,
                "imagePullSecrets",
                pull.map(|p| Value::Array(p.into_iter().map(|n| json!({"name": n})).collect())),
            );
            Value::Object(m)
        })
}

fn deployment() -> impl Strategy<Value = Value> {
    (
        metadata(),
        prop::option::of(0..5u32),
        prop::option::of(prop_oneof![
            Just(json!({"type": "Recreate"})),
            Just(json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}})),
            Just(json!({"type": "RollingUpdate"})),
        ]),
        string_map(),
        pod_spec(),
    )
        .prop_map(|(meta, replicas, strategy, labels, spec)| {
            let mut s = Map::new();
            opt_insert(&mut s, "replicas", replicas.map(|r| json!(r)));
            opt_insert(&mut s, "strategy", strategy);
            s.insert("selector".into(), json!({"matchLabels": labels.clone()}));
            s.insert(
                "template".into(),
                json!({"metadata": {"labels": labels}, "spec": spec}),
            );
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": s})
        })
}

fn pod() -> impl Strategy<Value = Value> {
    (metadata(), pod_spec()).prop_map(
        |(meta, spec)| json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}),
    )
}

fn service() -> impl Strategy<Value = Value> {
    (
        metadata(),
        string_map(),
        unique(vec![80, 443, 53], 3),
        prop::option::of(prop::sample::select(vec!["ClusterIP", "NodePort"])),
    )
        .prop_map(|(meta, selector, ports, ty)| {
            let ports: Vec<Value> = ports
                .into_iter()
                .map(|p| json!({"port": p, "targetPort": p + 8000}))
                .collect();
            let mut s = Map::new();
            s.insert("selector".into(), selector);
            s.insert("ports".into(), Value::Array(ports));
            opt_insert(&mut s, "type", ty.map(|t| json!(t)));
            json!({"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": s})
        })
}

fn config_map() -> impl Strategy<Value = Value> {
    (metadata(), prop::option::of(string_map())).prop_map(|(meta, data)| {
        let mut m = Map::new();
        m.insert("apiVersion".into(), json!("v1"));
        m.insert("kind".into(), json!("ConfigMap"));
        m.insert("metadata".into(), meta);
        opt_insert(&mut m, "data", data);
        Value::Object(m)
    })
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

/// Deeply nested input is rejected with an error instead of overflowing the stack.
#[test]
fn deep_nesting_is_an_error() {
    let mut v = json!(1);
    for _ in 0..1000 {
        let mut m = Map::new();
        m.insert("a".into(), v);
        v = Value::Object(m);
    }
    let err = strategic::apply(&json!({}), &v, Schema::none()).expect_err("too deep");
    assert!(err.to_string().contains("deeper than"), "{err}");
    assert!(fleet_patch::merge::apply(&json!({}), &v).is_err());
    // Dropping a deep serde_json value recurses too; unnest iteratively to stay within the stack.
    let mut cur = v;
    while let Value::Object(mut m) = cur {
        cur = m.remove("a").unwrap_or(Value::Null);
    }
}

/// The live object kube-apiserver would hold for `config`: `imagePullPolicy` and port `protocol`
/// defaulted, a label added by another actor, a status.
fn defaulted_live(config: &Value) -> Value {
    let mut live = config.clone();
    live["metadata"]["labels"]["injected-by"] = json!("webhook");
    live["status"] = json!({"replicas": 1});
    if let Some(cs) = live["spec"]["template"]["spec"]["containers"].as_array_mut() {
        for c in cs {
            c["imagePullPolicy"] = json!("IfNotPresent");
            if let Some(ps) = c.get_mut("ports").and_then(Value::as_array_mut) {
                for p in ps {
                    if p.get("protocol").is_none() {
                        p["protocol"] = json!("TCP");
                    }
                }
            }
        }
    }
    live
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
