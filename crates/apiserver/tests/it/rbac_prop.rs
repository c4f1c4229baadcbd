//! Property tests: `authorize` never panics on arbitrary policy objects, and the subject-indexed
//! decision equals a naive evaluator that scans every binding (written independently here).

use fleet_apiserver::auth::UserInfo;
use fleet_apiserver::rbac::{Attributes, Authorizer, Kind};
use proptest::prelude::*;
use serde_json::{Value, json};

const NAMESPACES: &[&str] = &["a", "b", "c"];
const USERS: &[&str] = &["u1", "u2", "system:serviceaccount:a:sa"];
const GROUPS: &[&str] = &["g1", "g2", "system:serviceaccounts"];
const VERBS: &[&str] = &["get", "list", "update", "*"];
const API_GROUPS: &[&str] = &["", "apps", "*"];
const RESOURCES: &[&str] = &["pods", "pods/log", "deployments", "*/status", "*"];
const NAMES: &[&str] = &["x", "y"];
const URLS: &[&str] = &["/healthz", "/api/*", "*"];

fn pick(set: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop::sample::select(set).prop_map(str::to_string)
}

fn subset(set: &'static [&'static str]) -> impl Strategy<Value = Vec<String>> {
    prop::sample::subsequence(set, 1..=set.len())
        .prop_map(|v| v.into_iter().map(str::to_string).collect())
}

fn rule(namespaced: bool) -> impl Strategy<Value = Value> {
    let resource = (
        subset(VERBS),
        subset(API_GROUPS),
        subset(RESOURCES),
        prop::option::of(subset(NAMES)),
    )
        .prop_map(|(v, g, r, n)| {
            let mut o = json!({"verbs": v, "apiGroups": g, "resources": r});
            if let Some(n) = n {
                o["resourceNames"] = json!(n);
            }
            o
        });
    let url =
        (subset(VERBS), subset(URLS)).prop_map(|(v, u)| json!({"verbs": v, "nonResourceURLs": u}));
    if namespaced {
        resource.boxed()
    } else {
        prop_oneof![3 => resource, 1 => url].boxed()
    }
}

fn subject() -> impl Strategy<Value = Value> {
    prop_oneof![
        pick(USERS).prop_map(|n| json!({"kind": "User", "name": n})),
        pick(GROUPS).prop_map(|n| json!({"kind": "Group", "name": n})),
        Just(json!({"kind": "ServiceAccount", "name": "sa", "namespace": "a"})),
    ]
}

#[derive(Debug, Clone)]
struct Policy {
    objects: Vec<Value>,
}

fn policy() -> impl Strategy<Value = Policy> {
    let roles = prop::collection::vec(
        (
            pick(NAMESPACES),
            0..3usize,
            prop::collection::vec(rule(true), 1..4),
        ),
        1..6,
    );
    let croles = prop::collection::vec((0..3usize, prop::collection::vec(rule(false), 1..4)), 1..4);
    let rbs = prop::collection::vec(
        (
            pick(NAMESPACES),
            0..6usize,
            any::<bool>(),
            0..3usize,
            prop::collection::vec(subject(), 1..3),
        ),
        2..10,
    );
    let crbs = prop::collection::vec(
        (0..4usize, 0..3usize, prop::collection::vec(subject(), 1..3)),
        1..4,
    );
    (roles, croles, rbs, crbs).prop_map(|(roles, croles, rbs, crbs)| {
        let mut objects = Vec::new();
        for (ns, i, rules) in roles {
            objects.push(json!({"kind": "Role", "metadata": {"namespace": ns, "name": format!("r{i}")}, "rules": rules}));
        }
        for (i, rules) in croles {
            objects.push(json!({"kind": "ClusterRole", "metadata": {"name": format!("c{i}")}, "rules": rules}));
        }
        for (ns, i, to_cluster, r, subjects) in rbs {
            let (k, n) = if to_cluster { ("ClusterRole", format!("c{r}")) } else { ("Role", format!("r{r}")) };
            objects.push(json!({"kind": "RoleBinding", "metadata": {"namespace": ns, "name": format!("b{i}")},
                "roleRef": {"kind": k, "name": n}, "subjects": subjects}));
        }
        for (i, r, subjects) in crbs {
            objects.push(json!({"kind": "ClusterRoleBinding", "metadata": {"name": format!("cb{i}")},
                "roleRef": {"kind": "ClusterRole", "name": format!("c{r}")}, "subjects": subjects}));
        }
        objects
    })
    // Any order: a binding may arrive before its Role, and a Role may change under its bindings.
    .prop_shuffle()
    .prop_map(|objects| Policy { objects })
}

fn attrs() -> impl Strategy<Value = Attributes> {
    let resource = (
        pick(&["get", "list", "update", "delete"]),
        pick(&["", "apps", "batch"]),
        pick(&["pods", "deployments", "secrets"]),
        pick(&["", "log", "status"]),
        pick(&["", "a", "a", "b", "c", "d"]),
        pick(&["", "x", "x", "y", "z"]),
    )
        .prop_map(|(v, g, r, s, ns, n)| {
            Attributes::resource(&v, &g, &r)
                .subresource(&s)
                .namespace(&ns)
                .name(&n)
        });
    let url = (
        pick(&["get", "post"]),
        pick(&["/healthz", "/api/v1", "/apis", "/api"]),
    )
        .prop_map(|(v, p)| Attributes::non_resource(&v, &p));
    prop_oneof![4 => resource, 1 => url]
}

fn user() -> impl Strategy<Value = UserInfo> {
    (
        pick(USERS),
        prop::sample::subsequence(GROUPS, 0..=GROUPS.len()),
    )
        .prop_map(|(n, g)| UserInfo::authenticated(n, &g))
}

// ---- the naive evaluator: a literal reading of the RBAC documentation ----

fn strs(v: &Value, k: &str) -> Vec<String> {
    v.get(k)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn naive_rule_allows(rule: &Value, a: &Attributes) -> bool {
    let verbs = strs(rule, "verbs");
    if !verbs.iter().any(|v| v == "*" || *v == a.verb) {
        return false;
    }
    if a.resource.is_empty() {
        return strs(rule, "nonResourceURLs").iter().any(|u| {
            u == "*" || *u == a.path || (u.ends_with('*') && a.path.starts_with(&u[..u.len() - 1]))
        });
    }
    let want = if a.subresource.is_empty() {
        a.resource.clone()
    } else {
        format!("{}/{}", a.resource, a.subresource)
    };
    let groups_ok = strs(rule, "apiGroups")
        .iter()
        .any(|g| g == "*" || *g == a.api_group);
    let res_ok = strs(rule, "resources").iter().any(|r| {
        *r == "*"
            || *r == want
            || (!a.subresource.is_empty() && *r == format!("*/{}", a.subresource))
    });
    let names = strs(rule, "resourceNames");
    groups_ok && res_ok && (names.is_empty() || names.contains(&a.name))
}

fn naive(objects: &[Value], user: &UserInfo, a: &Attributes) -> bool {
    let find = |kind: &str, ns: Option<&str>, name: &str| -> Option<Value> {
        objects
            .iter()
            .rev()
            .find(|o| {
                o["kind"] == kind
                    && o["metadata"]["name"] == name
                    && ns.is_none_or(|ns| o["metadata"]["namespace"] == ns)
            })
            .cloned()
    };
    // Later objects with the same identity replace earlier ones, as in a store.
    let mut seen = std::collections::HashSet::new();
    for b in objects.iter().rev() {
        let kind = b["kind"].as_str().unwrap_or("");
        if kind != "RoleBinding" && kind != "ClusterRoleBinding" {
            continue;
        }
        let bns = b["metadata"]["namespace"]
            .as_str()
            .unwrap_or("")
            .to_string();
        if !seen.insert((
            kind.to_string(),
            bns.clone(),
            b["metadata"]["name"].to_string(),
        )) {
            continue;
        }
        if kind == "RoleBinding" && bns != a.namespace {
            continue;
        }
        let applies = b["subjects"].as_array().into_iter().flatten().any(|s| {
            let n = s["name"].as_str().unwrap_or("");
            match s["kind"].as_str().unwrap_or("") {
                "User" => user.name == n,
                "Group" => user.groups.iter().any(|g| g == n),
                "ServiceAccount" => {
                    let sns = s["namespace"]
                        .as_str()
                        .filter(|x| !x.is_empty())
                        .unwrap_or(&bns);
                    user.name == format!("system:serviceaccount:{sns}:{n}")
                }
                _ => false,
            }
        });
        if !applies {
            continue;
        }
        let rk = b["roleRef"]["kind"].as_str().unwrap_or("");
        let rn = b["roleRef"]["name"].as_str().unwrap_or("");
        let role = if rk == "Role" {
            find("Role", Some(&bns), rn)
        } else {
            find("ClusterRole", None, rn)
        };
        if let Some(role) = role
            && role["rules"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|r| naive_rule_allows(r, a))
        {
            return true;
        }
    }
    false
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn indexed_equals_naive(p in policy(), users in prop::collection::vec(user(), 1..4), reqs in prop::collection::vec(attrs(), 1..12)) {
        let mut a = Authorizer::new();
        for o in &p.objects {
            a.apply(o).map_err(|e| TestCaseError::fail(e.to_string()))?;
        }
        for u in &users {
            for r in &reqs {
                let want = naive(&p.objects, u, r);
                prop_assert_eq!(a.authorize(u, r).allowed, want, "user {:?} attrs {:?}", u, r);
                prop_assert_eq!(a.allows(u, r), want, "allows: user {:?} attrs {:?}", u, r);
            }
        }
    }

    #[test]
    fn removal_matches_a_fresh_build(p in policy(), drop in prop::collection::vec(any::<prop::sample::Index>(), 0..4), u in user(), reqs in prop::collection::vec(attrs(), 1..8)) {
        let mut a = Authorizer::new();
        for o in &p.objects {
            a.apply(o).map_err(|e| TestCaseError::fail(e.to_string()))?;
        }
        let mut kept = p.objects.clone();
        for d in drop {
            if kept.is_empty() { break; }
            let o = kept.remove(d.index(kept.len()));
            let kind = Kind::parse(o["kind"].as_str().unwrap_or("")).ok_or_else(|| TestCaseError::fail("kind"))?;
            let ns = o["metadata"]["namespace"].as_str().unwrap_or("");
            let name = o["metadata"]["name"].as_str().unwrap_or("");
            a.remove(kind, ns, name);
            kept.retain(|k| !(k["kind"] == o["kind"] && k["metadata"]["name"] == name && k["metadata"]["namespace"] == o["metadata"]["namespace"]));
        }
        for r in &reqs {
            let want = naive(&kept, &u, r);
            prop_assert_eq!(a.authorize(&u, r).allowed, want);
            prop_assert_eq!(a.allows(&u, r), want);
        }
    }

    #[test]
    fn arbitrary_json_never_panics(v in arb_json(), u in user(), r in attrs()) {
        let mut a = Authorizer::new();
        let _ = a.apply(&v);
        let _ = fleet_apiserver::rbac::validate(&v);
        let _ = a.authorize(&u, &r);
        let _ = a.rules_for(&u, &r.namespace);
        let _ = a.check_role_write(&u, &v);
        let _ = a.check_binding_write(&u, &v);
    }
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        prop::sample::select(vec![
            "Role",
            "ClusterRole",
            "RoleBinding",
            "ClusterRoleBinding",
            "",
            "*",
            "x",
            "ns",
            "ServiceAccount",
            "Group",
            "In",
            "Exists"
        ])
        .prop_map(|s| json!(s)),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop::sample::select(vec![
                        "kind",
                        "metadata",
                        "name",
                        "namespace",
                        "rules",
                        "verbs",
                        "apiGroups",
                        "resources",
                        "resourceNames",
                        "nonResourceURLs",
                        "roleRef",
                        "subjects",
                        "aggregationRule",
                        "clusterRoleSelectors",
                        "matchLabels",
                        "matchExpressions",
                        "labels",
                        "key",
                        "operator",
                        "values"
                    ]),
                    inner
                ),
                0..6
            )
            .prop_map(|kv| Value::Object(
                kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
            )),
        ]
    })
}

/// Guards the equivalence property against vacuity: the generated policies must allow a fair
/// share of the generated requests, or "indexed == naive" would hold trivially.
#[test]
fn generated_policies_allow_a_fair_share() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let (mut allowed, mut total) = (0usize, 0usize);
    for _ in 0..300 {
        let (Ok(p), Ok(u), Ok(r)) = (
            policy().new_tree(&mut runner),
            user().new_tree(&mut runner),
            attrs().new_tree(&mut runner),
        ) else {
            panic!("strategy failed");
        };
        let p = p.current();
        if naive(&p.objects, &u.current(), &r.current()) {
            allowed += 1;
        }
        total += 1;
    }
    println!("{allowed} of {total} generated requests allowed");
    assert!(allowed * 10 >= total, "only {allowed} of {total} allowed");
    assert!(allowed < total, "everything allowed");
}
