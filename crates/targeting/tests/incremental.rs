//! The incremental `Fleet` index equals a rebuild from scratch: random sequences of upserts and
//! removes of clusters, groups, mappings and namespace labels; after every step the incrementally
//! updated Fleet gives the same group memberships (also checked against a brute-force scan), the
//! same targets for random bundles, and reports exactly the membership changes that happened.

use std::collections::{BTreeMap, BTreeSet};

use fleet_api::keys::{API_VERSION, CLUSTER_DISPLAY_NAME_LABEL};
use fleet_api::{Bundle, BundleNamespaceMapping, Cluster, ClusterGroup};
use fleet_targeting::selector::Selector;
use fleet_targeting::{Fleet, Key, Stats, targets};
use proptest::prelude::*;
use serde_json::{Value, json};

const NAMESPACES: [&str; 3] = ["a", "b", "c"];
const CLUSTERS: [&str; 5] = ["c0", "c1", "c2", "c3", "c4"];
const GROUPS: [&str; 3] = ["g0", "g1", "g2"];

type Labels = BTreeMap<String, String>;

#[derive(Clone, Debug)]
enum Op {
    UpsertCluster(usize, usize, Labels),
    RemoveCluster(usize, usize),
    UpsertGroup(usize, usize, Value, Labels),
    RemoveGroup(usize, usize),
    UpsertMapping(usize, Value, Value),
    RemoveMapping(usize),
    SetNamespaceLabels(usize, Labels),
    RemoveNamespace(usize),
}

fn labels() -> impl Strategy<Value = Labels> {
    proptest::collection::btree_map(
        prop_oneof![
            Just("env".to_string()),
            Just("tier".to_string()),
            Just(CLUSTER_DISPLAY_NAME_LABEL.to_string())
        ],
        prop_oneof![
            Just("x".to_string()),
            Just("y".to_string()),
            Just("c0".to_string()),
            Just("c1".to_string())
        ],
        0..3,
    )
}

/// nil, `{}`, matchLabels, matchExpressions (some invalid: In without values).
fn selector() -> impl Strategy<Value = Value> {
    let key = prop_oneof![Just("env"), Just("tier")];
    let val = prop_oneof![Just("x"), Just("y")];
    prop_oneof![
        Just(Value::Null),
        Just(json!({})),
        (key.clone(), val.clone()).prop_map(|(k, v)| json!({"matchLabels": {k: v}})),
        (
            key.clone(),
            val.clone(),
            key.clone(),
            val.clone(),
            key.clone()
        )
            .prop_map(|(k1, v1, k2, v2, _)| json!({"matchLabels": {k1: v1, k2: v2}})),
        (
            key,
            prop_oneof![
                Just("In"),
                Just("NotIn"),
                Just("Exists"),
                Just("DoesNotExist")
            ],
            proptest::collection::vec(val, 0..3)
        )
            .prop_map(|(k, op, vs)| {
                let vs = if op == "Exists" || op == "DoesNotExist" {
                    Value::Null
                } else {
                    json!(vs)
                };
                json!({"matchExpressions": [{"key": k, "operator": op, "values": vs}]})
            }),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let ns = 0..NAMESPACES.len();
    let c = 0..CLUSTERS.len();
    let g = 0..GROUPS.len();
    prop_oneof![
        4 => (ns.clone(), c.clone(), labels()).prop_map(|(n, c, l)| Op::UpsertCluster(n, c, l)),
        1 => (ns.clone(), c).prop_map(|(n, c)| Op::RemoveCluster(n, c)),
        2 => (ns.clone(), g.clone(), selector(), labels())
            .prop_map(|(n, g, s, l)| Op::UpsertGroup(n, g, s, l)),
        1 => (ns.clone(), g).prop_map(|(n, g)| Op::RemoveGroup(n, g)),
        1 => (0..2usize, selector(), selector()).prop_map(|(m, b, n)| Op::UpsertMapping(m, b, n)),
        1 => (0..2usize).prop_map(Op::RemoveMapping),
        1 => (ns.clone(), labels()).prop_map(|(n, l)| Op::SetNamespaceLabels(n, l)),
        1 => ns.prop_map(Op::RemoveNamespace),
    ]
}

/// One random bundle target.
fn target() -> impl Strategy<Value = Value> {
    let name = prop_oneof![Just(""), Just("c0"), Just("c1"), Just("c3"), Just("x")];
    let group = prop_oneof![Just(""), Just("g0"), Just("g1"), Just("g2")];
    let gsel = prop_oneof![
        Just(Value::Null),
        Just(json!({"matchLabels": {"tier": "x"}}))
    ];
    (name, group, gsel, selector(), any::<bool>()).prop_map(|(n, g, gs, cs, values)| {
        let mut t = json!({"name": format!("t-{n}-{g}")});
        if !n.is_empty() {
            t["clusterName"] = json!(n);
        }
        if !g.is_empty() {
            t["clusterGroup"] = json!(g);
        }
        if !gs.is_null() {
            t["clusterGroupSelector"] = gs;
        }
        if !cs.is_null() {
            t["clusterSelector"] = cs;
        }
        if values {
            t["helm"] = json!({"values": {"who": "${ .ClusterName }", "env": "global.fleet.clusterLabels.env"}});
        }
        t
    })
}

fn bundle() -> impl Strategy<Value = Bundle> {
    (
        proptest::collection::vec(target(), 1..4),
        prop_oneof![Just("x"), Just("y")],
    )
        .prop_map(|(ts, app)| {
            serde_json::from_value(json!({
                "apiVersion": API_VERSION, "kind": "Bundle",
                "metadata": {"name": "b", "namespace": "a", "labels": {"env": app}},
                "spec": {"resources": [{"name": "cm.yaml", "content": "x"}], "targets": ts}
            }))
            .expect("bundle")
        })
}

/// The objects the Fleet should hold: the model the incremental index is compared against.
#[derive(Default)]
struct Model {
    clusters: BTreeMap<Key, Cluster>,
    groups: BTreeMap<Key, ClusterGroup>,
    mappings: BTreeMap<Key, BundleNamespaceMapping>,
    ns_labels: BTreeMap<String, Labels>,
}

impl Model {
    fn rebuild(&self) -> Fleet {
        let mut f = Fleet::new(
            self.clusters.values().cloned().collect(),
            self.groups.values().cloned().collect(),
            self.mappings.values().cloned().collect(),
        );
        for (n, l) in &self.ns_labels {
            f.set_namespace_labels(n, l.clone());
        }
        f
    }

    /// Group → members by scanning every cluster (no index).
    fn brute_members(&self) -> BTreeMap<Key, BTreeSet<Key>> {
        let mut out = BTreeMap::new();
        for (gk, g) in &self.groups {
            let sel = g
                .spec
                .selector
                .as_ref()
                .and_then(|s| Selector::compile(s).ok());
            let members = self
                .clusters
                .iter()
                .filter(|(ck, c)| {
                    ck.namespace == gk.namespace
                        && sel.as_ref().is_some_and(|s| {
                            s.matches(c.metadata.labels.as_ref().unwrap_or(&Labels::new()))
                        })
                })
                .map(|(ck, _)| ck.clone())
                .collect();
            out.insert(gk.clone(), members);
        }
        out
    }
}

fn members(f: &Fleet, k: &Key) -> BTreeSet<Key> {
    f.members(&k.namespace, &k.name)
        .map(|c| Key::of(&c.metadata))
        .collect()
}

fn groups_of(f: &Fleet, k: &Key) -> BTreeSet<Key> {
    f.groups_of(&k.namespace, &k.name)
        .map(|g| Key::of(&g.metadata))
        .collect()
}

/// What targeting yields, comparable: (cluster, target name, deployment ID) or the error.
fn outcome(b: &Bundle, f: &Fleet) -> Result<Vec<(Key, String, String)>, String> {
    targets(b, f, "s-x", &mut Stats::default()).map(|ts| {
        ts.into_iter()
            .map(|t| (Key::of(&t.cluster.metadata), t.target_name, t.deployment_id))
            .collect()
    })
}

fn apply(f: &mut Fleet, m: &mut Model, op: &Op) -> Result<(), TestCaseError> {
    match op {
        Op::UpsertCluster(n, c, l) => {
            let key = Key::new(NAMESPACES[*n], CLUSTERS[*c]);
            let before = groups_of(f, &key);
            let cl: Cluster = serde_json::from_value(json!({
                "apiVersion": API_VERSION, "kind": "Cluster",
                "metadata": {"name": key.name, "namespace": key.namespace, "labels": l},
                "spec": {}
            }))
            .expect("cluster");
            m.clusters.insert(key.clone(), cl.clone());
            let changed: BTreeSet<Key> = f.upsert_cluster(cl).into_iter().collect();
            let after = groups_of(f, &key);
            prop_assert_eq!(
                changed,
                before
                    .symmetric_difference(&after)
                    .cloned()
                    .collect::<BTreeSet<_>>()
            );
        }
        Op::RemoveCluster(n, c) => {
            let key = Key::new(NAMESPACES[*n], CLUSTERS[*c]);
            let before = groups_of(f, &key);
            m.clusters.remove(&key);
            let changed: BTreeSet<Key> = f
                .remove_cluster(&key.namespace, &key.name)
                .into_iter()
                .collect();
            prop_assert_eq!(changed, before);
            prop_assert!(f.cluster(&key.namespace, &key.name).is_none());
        }
        Op::UpsertGroup(n, g, sel, l) => {
            let key = Key::new(NAMESPACES[*n], GROUPS[*g]);
            let before = members(f, &key);
            let gr: ClusterGroup = serde_json::from_value(json!({
                "apiVersion": API_VERSION, "kind": "ClusterGroup",
                "metadata": {"name": key.name, "namespace": key.namespace, "labels": l},
                "spec": {"selector": sel}
            }))
            .expect("group");
            m.groups.insert(key.clone(), gr.clone());
            let changed: BTreeSet<Key> = f.upsert_group(gr).into_iter().collect();
            let after = members(f, &key);
            prop_assert_eq!(
                changed,
                before
                    .symmetric_difference(&after)
                    .cloned()
                    .collect::<BTreeSet<_>>()
            );
        }
        Op::RemoveGroup(n, g) => {
            let key = Key::new(NAMESPACES[*n], GROUPS[*g]);
            let before = members(f, &key);
            m.groups.remove(&key);
            let changed: BTreeSet<Key> = f
                .remove_group(&key.namespace, &key.name)
                .into_iter()
                .collect();
            prop_assert_eq!(changed, before);
        }
        Op::UpsertMapping(i, bs, ns) => {
            let mp: BundleNamespaceMapping = serde_json::from_value(json!({
                "apiVersion": API_VERSION, "kind": "BundleNamespaceMapping",
                "metadata": {"name": format!("m{i}"), "namespace": "a"},
                "bundleSelector": bs, "namespaceSelector": ns
            }))
            .expect("mapping");
            m.mappings.insert(Key::of(&mp.metadata), mp.clone());
            f.upsert_mapping(mp);
        }
        Op::RemoveMapping(i) => {
            m.mappings.remove(&Key::new("a", format!("m{i}")));
            f.remove_mapping("a", &format!("m{i}"));
        }
        Op::SetNamespaceLabels(n, l) => {
            m.ns_labels.insert(NAMESPACES[*n].to_string(), l.clone());
            f.set_namespace_labels(NAMESPACES[*n], l.clone());
        }
        Op::RemoveNamespace(n) => {
            m.ns_labels.remove(NAMESPACES[*n]);
            f.remove_namespace(NAMESPACES[*n]);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn incremental_equals_rebuild(
        ops in proptest::collection::vec(op(), 1..40),
        bundles in proptest::collection::vec(bundle(), 1..4),
    ) {
        let mut f = Fleet::default();
        let mut m = Model::default();
        for op in &ops {
            apply(&mut f, &mut m, op)?;
            prop_assert_eq!(f.check_indexes(), Ok(()));
            let r = m.rebuild();
            let brute = m.brute_members();
            prop_assert_eq!(f.cluster_count(), m.clusters.len());
            let got: BTreeSet<Key> = f.clusters().map(|c| Key::of(&c.metadata)).collect();
            prop_assert_eq!(&got, &m.clusters.keys().cloned().collect::<BTreeSet<_>>());
            for ns in NAMESPACES {
                let got: BTreeSet<Key> = f.clusters_in(ns).map(|c| Key::of(&c.metadata)).collect();
                let want: BTreeSet<Key> = m.clusters.keys().filter(|k| k.namespace == ns).cloned().collect();
                prop_assert_eq!(got, want);
            }
            for (gk, want) in &brute {
                prop_assert_eq!(&members(&f, gk), want, "members of {:?}", gk);
                prop_assert_eq!(&members(&r, gk), want, "members of {:?} (rebuilt)", gk);
            }
            for ck in m.clusters.keys() {
                let want: BTreeSet<Key> = brute.iter().filter(|(_, ms)| ms.contains(ck)).map(|(g, _)| g.clone()).collect();
                prop_assert_eq!(&groups_of(&f, ck), &want, "groups of {:?}", ck);
                prop_assert_eq!(&groups_of(&r, ck), &want);
            }
            for b in &bundles {
                prop_assert_eq!(f.namespaces_for(b), r.namespaces_for(b));
                prop_assert_eq!(outcome(b, &f), outcome(b, &r));
            }
        }
    }
}

/// `from_objects` reads what `kubectl get clusters,clustergroups,… -o yaml` prints (a Cluster
/// without a spec included), defaults the namespace, and names the object it cannot decode.
#[test]
fn from_objects_builds_and_names_bad_objects() {
    let objs = vec![
        json!({"apiVersion": API_VERSION, "kind": "Cluster", "metadata": {"name": "c1", "labels": {"env": "x"}}}),
        json!({"apiVersion": API_VERSION, "kind": "ClusterGroup", "metadata": {"name": "g", "namespace": "n"}, "spec": {"selector": {}}}),
        json!({"apiVersion": API_VERSION, "kind": "Cluster", "metadata": {"name": "c2", "namespace": "n"}, "spec": {}}),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n", "labels": {"team": "t"}}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ignored"}}),
    ];
    let f = Fleet::from_objects(objs, "dflt").expect("objects");
    assert!(f.cluster("dflt", "c1").is_some());
    let m: Vec<_> = f.members("n", "g").map(|c| Key::of(&c.metadata)).collect();
    assert_eq!(m, [Key::new("n", "c2")]);
    assert_eq!(
        f.namespace_labels("n").map(|l| l["team"].as_str()),
        Some("t")
    );
    let err = Fleet::from_objects(
        vec![json!({"apiVersion": API_VERSION, "kind": "Cluster", "metadata": {"name": "bad"}, "spec": {"paused": "yes"}})],
        "dflt",
    )
    .err()
    .expect("error");
    assert!(
        err.to_string().starts_with("object 0 (Cluster bad): "),
        "{err}"
    );
}
