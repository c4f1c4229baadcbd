//! proptest generators of built-in Kubernetes objects (Deployment, Pod, Service, ConfigMap).

use proptest::prelude::*;
use proptest::sample::subsequence;
use serde_json::{Map, Value, json};

/// A random subset of `pool` in random order (unique values, as merge keys must be).
pub fn unique<T: Clone + std::fmt::Debug + 'static>(
    pool: Vec<T>,
    max: usize,
) -> impl Strategy<Value = Vec<T>> {
    let n = pool.len();
    subsequence(pool, 0..=max.min(n)).prop_shuffle()
}

pub fn small_str() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["a", "b", "c", "x", "", "1"]).prop_map(str::to_string)
}

pub fn string_map() -> impl Strategy<Value = Value> {
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

pub fn opt_insert(m: &mut Map<String, Value>, k: &str, v: Option<Value>) {
    if let Some(v) = v {
        m.insert(k.to_string(), v);
    }
}

pub fn metadata() -> impl Strategy<Value = Value> {
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

pub fn env() -> impl Strategy<Value = Value> {
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

pub fn ports() -> impl Strategy<Value = Value> {
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

pub fn container(name: &'static str) -> impl Strategy<Value = Value> {
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

pub fn containers() -> impl Strategy<Value = Value> {
    unique(vec!["web", "sidecar", "init", "proxy"], 4).prop_flat_map(|names| {
        names
            .into_iter()
            .map(container)
            .collect::<Vec<_>>()
            .prop_map(Value::Array)
    })
}

pub fn volumes() -> impl Strategy<Value = Value> {
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

pub fn pod_spec() -> impl Strategy<Value = Value> {
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

pub fn deployment() -> impl Strategy<Value = Value> {
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

pub fn pod() -> impl Strategy<Value = Value> {
    (metadata(), pod_spec()).prop_map(
        |(meta, spec)| json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}),
    )
}

pub fn service() -> impl Strategy<Value = Value> {
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

pub fn config_map() -> impl Strategy<Value = Value> {
    (metadata(), prop::option::of(string_map())).prop_map(|(meta, data)| {
        let mut m = Map::new();
        m.insert("apiVersion".into(), json!("v1"));
        m.insert("kind".into(), json!("ConfigMap"));
        m.insert("metadata".into(), meta);
        opt_insert(&mut m, "data", data);
        Value::Object(m)
    })
}

/// The live object kube-apiserver would hold for `config`: `imagePullPolicy` and port `protocol`
/// defaulted, a label added by another actor, a status.
pub fn defaulted_live(config: &Value) -> Value {
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

/// Containers whose env may repeat a name and whose ports may repeat a number (with or without
/// protocols): lists Kubernetes accepts but merge keys cannot tell apart.
pub fn ambiguous_pod() -> impl Strategy<Value = Value> {
    (
        prop::collection::vec((prop::sample::select(vec!["A", "B"]), small_str()), 0..4),
        prop::collection::vec(
            (
                prop::sample::select(vec![53, 80]),
                prop::option::of(prop::sample::select(vec!["TCP", "UDP"])),
            ),
            0..4,
        ),
    )
        .prop_map(|(env, ports)| {
            let env: Vec<Value> = env
                .into_iter()
                .map(|(n, v)| json!({"name": n, "value": v}))
                .collect();
            let ports: Vec<Value> = ports
                .into_iter()
                .map(|(p, proto)| match proto {
                    Some(pr) => json!({"containerPort": p, "protocol": pr}),
                    None => json!({"containerPort": p}),
                })
                .collect();
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                   "spec": {"containers": [{"name": "c", "env": env, "ports": ports}]}})
        })
}
