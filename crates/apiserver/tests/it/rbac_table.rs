//! Authorization table test: each case is a behaviour from the Kubernetes "Using RBAC
//! Authorization" documentation, checked against a policy written the way the docs' examples are.

use fleet_apiserver::auth::UserInfo;
use fleet_apiserver::rbac::{Attributes, Authorizer, Kind, bootstrap_objects};
use serde_json::{Value, json};

fn role(ns: &str, name: &str, rules: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
           "metadata": {"namespace": ns, "name": name}, "rules": rules})
}

fn cluster_role(name: &str, labels: Value, rules: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
           "metadata": {"name": name, "labels": labels}, "rules": rules})
}

fn binding(ns: &str, name: &str, ref_kind: &str, ref_name: &str, subjects: Value) -> Value {
    let (kind, meta) = if ns.is_empty() {
        ("ClusterRoleBinding", json!({"name": name}))
    } else {
        ("RoleBinding", json!({"namespace": ns, "name": name}))
    };
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": meta,
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": ref_kind, "name": ref_name},
           "subjects": subjects})
}

fn user(name: &str) -> Value {
    json!([{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": name}])
}

fn group(name: &str) -> Value {
    json!([{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": name}])
}

fn policy() -> Authorizer {
    let mut a = Authorizer::new();
    let mut objects = bootstrap_objects();
    objects.extend([
        role("default", "pod-reader",
             json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "watch", "list"]}])),
        cluster_role("secret-reader", json!({}),
             json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "watch", "list"]}])),
        binding("default", "read-pods", "Role", "pod-reader", user("jane")),
        binding("development", "read-secrets", "ClusterRole", "secret-reader", user("dave")),
        binding("", "read-secrets-global", "ClusterRole", "secret-reader", group("manager")),
        role("default", "configmap-updater",
             json!([{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["my-configmap"],
                     "verbs": ["update", "get"]}])),
        binding("default", "cm", "Role", "configmap-updater", user("cmuser")),
        role("default", "pod-and-pod-logs-reader",
             json!([{"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get", "list"]}])),
        binding("default", "logs", "Role", "pod-and-pod-logs-reader", user("logger")),
        cluster_role("bd-status-writer", json!({}),
             json!([{"apiGroups": ["fleet.cattle.io"], "resources": ["bundledeployments/status"],
                     "verbs": ["update", "patch"]},
                    {"apiGroups": ["fleet.cattle.io"], "resources": ["bundledeployments"],
                     "verbs": ["get", "list", "watch"]}])),
        binding("cluster-ns", "agent", "ClusterRole", "bd-status-writer",
                json!([{"kind": "ServiceAccount", "name": "agent"}])),
        binding("cluster-ns", "agent-other-ns", "ClusterRole", "view",
                json!([{"kind": "ServiceAccount", "name": "watcher", "namespace": "other"}])),
        cluster_role("status-reader", json!({}),
             json!([{"apiGroups": ["*"], "resources": ["*/status"], "verbs": ["get"]}])),
        binding("", "status", "ClusterRole", "status-reader", user("auditor")),
        cluster_role("fleet-all", json!({}),
             json!([{"apiGroups": ["fleet.cattle.io"], "resources": ["*"], "verbs": ["*"]}])),
        binding("fleet-default", "fleet-all", "ClusterRole", "fleet-all", user("fleetadmin")),
        cluster_role("monitoring", json!({}), json!([])),
        cluster_role("monitoring-endpoints",
             json!({"rbac.example.com/aggregate-to-monitoring": "true"}),
             json!([{"apiGroups": [""], "resources": ["services", "endpointslices", "pods"],
                     "verbs": ["get", "list", "watch"]}])),
        cluster_role("health-checker", json!({}),
             json!([{"nonResourceURLs": ["/healthz", "/healthz/*"], "verbs": ["get", "post"]}])),
        binding("", "health", "ClusterRole", "health-checker", group("probes")),
        binding("team", "ed", "ClusterRole", "edit", user("ed")),
        binding("team", "viewer", "ClusterRole", "view", user("viewer")),
        binding("team", "ann", "ClusterRole", "admin", user("ann")),
        binding("", "qa-sa-view", "ClusterRole", "view", group("system:serviceaccounts:qa")),
        binding("default", "binder", "ClusterRole", "role-binder", user("binder")),
        cluster_role("role-binder", json!({}),
             json!([{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["rolebindings"],
                     "verbs": ["create"]},
                    {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"],
                     "verbs": ["bind"], "resourceNames": ["secret-reader"]}])),
        binding("default", "escalator", "ClusterRole", "role-escalator", user("escalator")),
        cluster_role("role-escalator", json!({}),
             json!([{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"],
                     "verbs": ["create", "escalate"]}])),
    ]);
    let mut monitoring = None;
    for o in objects {
        if o["metadata"]["name"] == "monitoring" {
            monitoring = Some(o);
            continue;
        }
        a.apply(&o)
            .unwrap_or_else(|e| panic!("fixture {}: {e}", o["metadata"]["name"]));
    }
    // Aggregated role applied after its sources, then with the aggregation rule set.
    let mut m = monitoring.unwrap_or_else(|| panic!("fixture lacks monitoring"));
    m["aggregationRule"] = json!({"clusterRoleSelectors": [
        {"matchLabels": {"rbac.example.com/aggregate-to-monitoring": "true"}}]});
    a.apply(&m).unwrap_or_else(|e| panic!("monitoring: {e}"));
    a.apply(&binding(
        "",
        "mon",
        "ClusterRole",
        "monitoring",
        user("mon"),
    ))
    .unwrap_or_else(|e| panic!("mon binding: {e}"));
    a
}

fn u(name: &str) -> UserInfo {
    UserInfo::authenticated(name, &[])
}

fn ug(name: &str, groups: &[&str]) -> UserInfo {
    UserInfo::authenticated(name, groups)
}

fn sa(ns: &str, name: &str) -> UserInfo {
    let g = format!("system:serviceaccounts:{ns}");
    UserInfo::authenticated(
        format!("system:serviceaccount:{ns}:{name}"),
        &["system:serviceaccounts", &g],
    )
}

fn res(verb: &str, group: &str, resource: &str, ns: &str) -> Attributes {
    Attributes::resource(verb, group, resource).namespace(ns)
}

enum Check {
    Authz(UserInfo, Attributes),
    RoleWrite(UserInfo, Value),
    BindingWrite(UserInfo, Value),
}

struct Case {
    doc: &'static str,
    check: Check,
    allowed: bool,
}

fn case(doc: &'static str, user: UserInfo, attrs: Attributes, allowed: bool) -> Case {
    Case {
        doc,
        check: Check::Authz(user, attrs),
        allowed,
    }
}

fn cases() -> Vec<Case> {
    let pods_in = |ns: &str| res("get", "", "pods", ns);
    vec![
        case(
            "Role grants within its namespace",
            u("jane"),
            pods_in("default"),
            true,
        ),
        case(
            "Role verbs listed are granted (list)",
            u("jane"),
            res("list", "", "pods", "default"),
            true,
        ),
        case(
            "Role verbs not listed are denied (delete)",
            u("jane"),
            res("delete", "", "pods", "default"),
            false,
        ),
        case(
            "Role does not grant in another namespace",
            u("jane"),
            pods_in("kube-system"),
            false,
        ),
        case(
            "Role does not grant cluster-wide lists",
            u("jane"),
            res("list", "", "pods", ""),
            false,
        ),
        case(
            "Role does not grant other resources",
            u("jane"),
            res("get", "", "secrets", "default"),
            false,
        ),
        case(
            "apiGroups must match (apps/pods is not core pods)",
            u("jane"),
            res("get", "apps", "pods", "default"),
            false,
        ),
        case(
            "RoleBinding to ClusterRole grants in the binding's namespace",
            u("dave"),
            res("get", "", "secrets", "development"),
            true,
        ),
        case(
            "RoleBinding to ClusterRole grants nothing in other namespaces",
            u("dave"),
            res("get", "", "secrets", "default"),
            false,
        ),
        case(
            "RoleBinding to ClusterRole grants nothing cluster-wide",
            u("dave"),
            res("list", "", "secrets", ""),
            false,
        ),
        case(
            "ClusterRoleBinding grants in every namespace (group subject)",
            ug("bob", &["manager"]),
            res("get", "", "secrets", "anything"),
            true,
        ),
        case(
            "ClusterRoleBinding grants cluster-wide lists",
            ug("bob", &["manager"]),
            res("list", "", "secrets", ""),
            true,
        ),
        case(
            "Group subject: users outside the group are denied",
            u("bob"),
            res("get", "", "secrets", "anything"),
            false,
        ),
        case(
            "resourceNames: the named object is allowed",
            u("cmuser"),
            res("update", "", "configmaps", "default").name("my-configmap"),
            true,
        ),
        case(
            "resourceNames: other objects are denied",
            u("cmuser"),
            res("update", "", "configmaps", "default").name("other"),
            false,
        ),
        case(
            "resourceNames: list (no name) is denied",
            u("cmuser"),
            res("get", "", "configmaps", "default"),
            false,
        ),
        case(
            "subresource listed explicitly (pods/log)",
            u("logger"),
            res("get", "", "pods", "default")
                .subresource("log")
                .name("p"),
            true,
        ),
        case(
            "parent resource does not grant subresource (pods/exec)",
            u("logger"),
            res("get", "", "pods", "default")
                .subresource("exec")
                .name("p"),
            false,
        ),
        case(
            "subresource rule (jane has pods, not pods/log)",
            u("jane"),
            res("get", "", "pods", "default")
                .subresource("log")
                .name("p"),
            false,
        ),
        case(
            "bundledeployments/status grants the status subresource",
            sa("cluster-ns", "agent"),
            res(
                "patch",
                "fleet.cattle.io",
                "bundledeployments",
                "cluster-ns",
            )
            .subresource("status")
            .name("bd"),
            true,
        ),
        case(
            "bundledeployments/status does not grant the main resource",
            sa("cluster-ns", "agent"),
            res(
                "update",
                "fleet.cattle.io",
                "bundledeployments",
                "cluster-ns",
            )
            .name("bd"),
            false,
        ),
        case(
            "ServiceAccount subject defaults to the binding's namespace",
            sa("cluster-ns", "agent"),
            res("get", "fleet.cattle.io", "bundledeployments", "cluster-ns"),
            true,
        ),
        case(
            "ServiceAccount of same name in another namespace is not the subject",
            sa("other-ns", "agent"),
            res("get", "fleet.cattle.io", "bundledeployments", "cluster-ns"),
            false,
        ),
        case(
            "ServiceAccount grant does not cross namespaces",
            sa("cluster-ns", "agent"),
            res("get", "fleet.cattle.io", "bundledeployments", "other-ns"),
            false,
        ),
        case(
            "ServiceAccount subject with explicit namespace",
            sa("other", "watcher"),
            res("list", "", "pods", "cluster-ns"),
            true,
        ),
        case(
            "Group system:serviceaccounts:NS covers all SAs of a namespace",
            sa("qa", "any"),
            res("list", "apps", "deployments", "prod"),
            true,
        ),
        case(
            "*/status matches any status subresource",
            u("auditor"),
            res("get", "apps", "deployments", "x")
                .subresource("status")
                .name("d"),
            true,
        ),
        case(
            "*/status does not match the resource itself",
            u("auditor"),
            res("get", "apps", "deployments", "x").name("d"),
            false,
        ),
        case(
            "resources * and verbs * within a group",
            u("fleetadmin"),
            res(
                "deletecollection",
                "fleet.cattle.io",
                "gitrepos",
                "fleet-default",
            ),
            true,
        ),
        case(
            "resources * covers subresources",
            u("fleetadmin"),
            res("update", "fleet.cattle.io", "bundles", "fleet-default")
                .subresource("status")
                .name("b"),
            true,
        ),
        case(
            "group wildcard is limited to the listed group",
            u("fleetadmin"),
            res("get", "", "pods", "fleet-default"),
            false,
        ),
        case(
            "aggregation: aggregated rules keep their apiGroups",
            u("mon"),
            res("list", "discovery.k8s.io", "endpointslices", "x").namespace("x"),
            false,
        ),
        case(
            "aggregation: aggregated rule grants",
            u("mon"),
            res("list", "", "endpointslices", "x"),
            true,
        ),
        case(
            "aggregation: unlabelled roles are not aggregated",
            u("mon"),
            res("get", "", "secrets", "x"),
            false,
        ),
        case(
            "nonResourceURLs exact path",
            ug("p", &["probes"]),
            Attributes::non_resource("get", "/healthz"),
            true,
        ),
        case(
            "nonResourceURLs prefix wildcard",
            ug("p", &["probes"]),
            Attributes::non_resource("post", "/healthz/etcd"),
            true,
        ),
        case(
            "nonResourceURLs other paths denied",
            ug("p", &["probes"]),
            Attributes::non_resource("get", "/metrics"),
            false,
        ),
        case(
            "system:discovery lets authenticated users read /apis",
            u("nobody"),
            Attributes::non_resource("get", "/apis/apps/v1"),
            true,
        ),
        case(
            "system:public-info-viewer lets anonymous read /version",
            UserInfo::anonymous(),
            Attributes::non_resource("get", "/version"),
            true,
        ),
        case(
            "anonymous may not read /apis",
            UserInfo::anonymous(),
            Attributes::non_resource("get", "/apis"),
            false,
        ),
        case(
            "system:basic-user: create selfsubjectaccessreviews",
            u("nobody"),
            res(
                "create",
                "authorization.k8s.io",
                "selfsubjectaccessreviews",
                "",
            ),
            true,
        ),
        case(
            "no binding, no access",
            u("nobody"),
            pods_in("default"),
            false,
        ),
        case(
            "system:masters is always allowed",
            ug("root", &["system:masters"]),
            res("delete", "", "nodes", ""),
            true,
        ),
        case(
            "default view role: read pods",
            u("viewer"),
            res("list", "", "pods", "team"),
            true,
        ),
        case(
            "default view role: secrets are not viewable",
            u("viewer"),
            res("get", "", "secrets", "team"),
            false,
        ),
        case(
            "default view role: no writes",
            u("viewer"),
            res("create", "", "configmaps", "team"),
            false,
        ),
        case(
            "default edit role: write deployments (aggregated from view+edit)",
            u("ed"),
            res("create", "apps", "deployments", "team"),
            true,
        ),
        case(
            "default edit role: read (via view aggregated into edit)",
            u("ed"),
            res("watch", "batch", "jobs", "team"),
            true,
        ),
        case(
            "default edit role: no roles/rolebindings",
            u("ed"),
            res(
                "create",
                "rbac.authorization.k8s.io",
                "rolebindings",
                "team",
            ),
            false,
        ),
        case(
            "default admin role: rolebindings in the namespace",
            u("ann"),
            res(
                "create",
                "rbac.authorization.k8s.io",
                "rolebindings",
                "team",
            ),
            true,
        ),
        case(
            "default admin role: includes edit rules via aggregation chain",
            u("ann"),
            res("delete", "", "secrets", "team"),
            true,
        ),
        case(
            "default admin role: nothing outside the namespace",
            u("ann"),
            res("delete", "", "secrets", "prod"),
            false,
        ),
        Case {
            doc: "escalation: cannot create a Role granting what you do not hold",
            check: Check::RoleWrite(
                u("jane"),
                role(
                    "default",
                    "more",
                    json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]),
                ),
            ),
            allowed: false,
        },
        Case {
            doc: "escalation: may create a Role granting a subset of what you hold",
            check: Check::RoleWrite(
                u("jane"),
                role(
                    "default",
                    "less",
                    json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]),
                ),
            ),
            allowed: true,
        },
        Case {
            doc: "escalation: held rules are per namespace",
            check: Check::RoleWrite(
                u("jane"),
                role(
                    "other",
                    "less",
                    json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]),
                ),
            ),
            allowed: false,
        },
        Case {
            doc: "escalation: the escalate verb allows granting more",
            check: Check::RoleWrite(
                u("escalator"),
                role(
                    "default",
                    "big",
                    json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]),
                ),
            ),
            allowed: true,
        },
        Case {
            doc: "escalation: aggregationRule needs cluster-admin",
            check: Check::RoleWrite(
                u("ann"),
                json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "agg"},
                "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]}}),
            ),
            allowed: false,
        },
        Case {
            doc: "bind verb on the named ClusterRole allows binding it",
            check: Check::BindingWrite(
                u("binder"),
                binding("default", "b", "ClusterRole", "secret-reader", user("x")),
            ),
            allowed: true,
        },
        Case {
            doc: "bind limited by resourceNames: other roles cannot be bound",
            check: Check::BindingWrite(
                u("binder"),
                binding("default", "b", "ClusterRole", "edit", user("x")),
            ),
            allowed: false,
        },
        Case {
            doc: "binding a role whose permissions you hold is allowed without bind",
            check: Check::BindingWrite(
                u("jane"),
                binding("default", "b", "Role", "pod-reader", user("x")),
            ),
            allowed: true,
        },
        Case {
            doc: "admin may bind view in its namespace (holds all of view there)",
            check: Check::BindingWrite(
                u("ann"),
                binding("team", "b", "ClusterRole", "view", user("x")),
            ),
            allowed: true,
        },
        Case {
            doc: "admin may not bind cluster-admin",
            check: Check::BindingWrite(
                u("ann"),
                binding("team", "b", "ClusterRole", "cluster-admin", user("x")),
            ),
            allowed: false,
        },
        Case {
            doc: "system:masters may grant anything",
            check: Check::BindingWrite(
                ug("root", &["system:masters"]),
                binding("", "b", "ClusterRole", "cluster-admin", user("x")),
            ),
            allowed: true,
        },
    ]
}

#[test]
fn rbac_documentation_table() {
    let a = policy();
    let cases = cases();
    assert!(cases.len() >= 40, "only {} cases", cases.len());
    let mut failures = Vec::new();
    for c in &cases {
        let d = match &c.check {
            Check::Authz(user, attrs) => {
                let d = a.authorize(user, attrs);
                if a.allows(user, attrs) != d.allowed {
                    failures.push(format!("{}: allows() disagrees with authorize()", c.doc));
                }
                d
            }
            Check::RoleWrite(user, obj) => a
                .check_role_write(user, obj)
                .unwrap_or_else(|e| panic!("{}: {e}", c.doc)),
            Check::BindingWrite(user, obj) => a
                .check_binding_write(user, obj)
                .unwrap_or_else(|e| panic!("{}: {e}", c.doc)),
        };
        if d.allowed != c.allowed {
            failures.push(format!(
                "{}: want allowed={}, got {:?}",
                c.doc, c.allowed, d
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    println!("{} RBAC cases pass", cases.len());
}

#[test]
fn removing_a_binding_revokes_access() {
    let mut a = policy();
    let attrs = res("get", "", "pods", "default");
    assert!(a.authorize(&u("jane"), &attrs).allowed);
    a.remove(Kind::RoleBinding, "default", "read-pods");
    assert!(!a.authorize(&u("jane"), &attrs).allowed);
}

#[test]
fn removing_an_aggregated_source_shrinks_the_aggregate() {
    let mut a = policy();
    let attrs = res("list", "", "services", "x");
    assert!(a.authorize(&u("mon"), &attrs).allowed);
    a.remove(Kind::ClusterRole, "", "monitoring-endpoints");
    assert!(!a.authorize(&u("mon"), &attrs).allowed);
}

#[test]
fn decisions_name_the_binding_and_the_refusal() {
    let a = policy();
    let d = a.authorize(&u("jane"), &res("get", "", "pods", "default"));
    assert!(
        d.reason.contains("read-pods") && d.reason.contains("pod-reader"),
        "{}",
        d.reason
    );
    let d = a.authorize(&u("jane"), &res("get", "", "secrets", "default"));
    assert!(d.reason.contains("User \"jane\" cannot get resource \"secrets\" in API group \"\" in the namespace \"default\""), "{}", d.reason);
    let d = a.can_grant(
        &u("jane"),
        &[fleet_apiserver::rbac::PolicyRule::resource(
            &["get"],
            &[""],
            &["secrets"],
        )],
        "default",
    );
    assert!(d.reason.contains("Resources:[\"secrets\"]"), "{}", d.reason);
}

#[test]
fn rules_review_lists_cluster_and_namespace_rules() {
    let a = policy();
    let set = a.rules_for(&u("jane"), "default");
    assert!(set.rules.iter().any(|r| r.resources == ["pods"]));
    assert!(
        set.rules
            .iter()
            .any(|r| r.non_resource_urls.iter().any(|x| x == "/apis"))
    );
    let status = set.review_status();
    assert_eq!(status["incomplete"], false);
    assert!(
        status["resourceRules"]
            .as_array()
            .is_some_and(|v| !v.is_empty())
    );
    let other = a.rules_for(&u("jane"), "other");
    assert!(!other.rules.iter().any(|r| r.resources == ["pods"]));
}

#[test]
fn invalid_objects_name_the_field() {
    let mut a = Authorizer::new();
    let e = a
        .apply(&role(
            "ns",
            "r",
            json!([{"apiGroups": [""], "resources": ["pods"], "verbs": []}]),
        ))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.contains("rules[0].verbs"), "{e}");
    let e = a
        .apply(&role(
            "ns",
            "r",
            json!([{"nonResourceURLs": ["/x"], "verbs": ["get"]}]),
        ))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        e.contains("namespaced rules cannot apply to non-resource URLs"),
        "{e}"
    );
    let e = a
        .apply(&binding(
            "ns",
            "b",
            "Role",
            "r",
            json!([{"kind": "Robot", "name": "x"}]),
        ))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.contains("subjects[0].kind"), "{e}");
    let e = a
        .apply(&binding("", "b", "Role", "r", user("x")))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.contains("roleRef.kind"), "{e}");
}

#[test]
fn changing_an_aggregated_source_updates_the_aggregate() {
    let mut a = policy();
    let attrs = res("get", "", "configmaps", "x");
    assert!(!a.authorize(&u("mon"), &attrs).allowed);
    // New label-selected role: aggregated in.
    a.apply(&cluster_role(
        "monitoring-configmaps",
        json!({"rbac.example.com/aggregate-to-monitoring": "true"}),
        json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]),
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(a.authorize(&u("mon"), &attrs).allowed);
    // Label removed: aggregated out again.
    a.apply(&cluster_role(
        "monitoring-configmaps",
        json!({}),
        json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]),
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(!a.authorize(&u("mon"), &attrs).allowed);
}

/// Registration's shape: one shared service account, one Role and RoleBinding per cluster, each
/// granting `get` on one Secret. Each poll is allowed for its own Secret only, and the decision
/// follows the Role when it arrives after its binding or later grants more than names.
#[test]
fn many_bindings_limited_to_named_objects() {
    let mut a = Authorizer::new();
    let token_user = sa("fleet-clusters", "import-token");
    let subject =
        json!([{"kind": "ServiceAccount", "name": "import-token", "namespace": "fleet-clusters"}]);
    let get_secret = |name: &str| {
        Attributes::resource("get", "", "secrets")
            .namespace("fleet-clusters")
            .name(name)
    };
    for i in 0..500 {
        let b = binding(
            "fleet-clusters",
            &format!("request-{i}"),
            "Role",
            &format!("request-{i}"),
            subject.clone(),
        );
        let r = role(
            "fleet-clusters",
            &format!("request-{i}"),
            json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"],
                    "resourceNames": [format!("c-{i}")]}]),
        );
        // Half the bindings arrive before their Role, as watch events may.
        let (first, second) = if i % 2 == 0 { (b, r) } else { (r, b) };
        a.apply(&first).unwrap_or_else(|e| panic!("{e}"));
        a.apply(&second).unwrap_or_else(|e| panic!("{e}"));
    }
    for i in [0, 1, 250, 499] {
        let own = get_secret(&format!("c-{i}"));
        assert!(a.allows(&token_user, &own), "c-{i}");
        let d = a.authorize(&token_user, &own);
        assert!(
            d.allowed && d.reason.contains(&format!("request-{i}")),
            "{}",
            d.reason
        );
    }
    assert!(!a.allows(&token_user, &get_secret("c-500")));
    assert!(!a.allows(&token_user, &get_secret("")));
    assert!(!a.allows(&u("someone-else"), &get_secret("c-3")));
    let review = a.rules_for(&token_user, "fleet-clusters");
    assert_eq!(review.rules.len(), 500);

    // The Role widens to every Secret: the binding now allows any name.
    a.apply(&role(
        "fleet-clusters",
        "request-7",
        json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]),
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(a.allows(&token_user, &get_secret("anything")));
    // Narrowed again, then removed: back to its own name, then to nothing.
    a.apply(&role(
        "fleet-clusters",
        "request-7",
        json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"], "resourceNames": ["c-7"]}]),
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(!a.allows(&token_user, &get_secret("anything")));
    assert!(a.allows(&token_user, &get_secret("c-7")));
    a.remove(Kind::Role, "fleet-clusters", "request-7");
    assert!(!a.allows(&token_user, &get_secret("c-7")));
    let review = a.rules_for(&token_user, "fleet-clusters");
    assert_eq!(review.missing_roles.len(), 1, "{:?}", review.missing_roles);
    // Removing a binding revokes its name only.
    a.remove(Kind::RoleBinding, "fleet-clusters", "request-8");
    assert!(!a.allows(&token_user, &get_secret("c-8")));
    assert!(a.allows(&token_user, &get_secret("c-9")));
}
