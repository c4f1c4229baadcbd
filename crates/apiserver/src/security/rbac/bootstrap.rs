//! The default ClusterRoles and ClusterRoleBindings kube-apiserver creates at startup, so that
//! `kubectl` discovery, `kubectl auth can-i` and the user-facing `admin`/`edit`/`view` roles work
//! on the embedded server as on a real cluster.

use serde_json::{Value, json};

use super::PolicyRule;

const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &["create", "update", "patch", "delete", "deletecollection"];
const READ_WRITE: &[&str] = &[
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
];

/// The label every bootstrap object carries (upstream uses it to find its own defaults).
const BOOTSTRAP_LABEL: (&str, &str) = ("kubernetes.io/bootstrapping", "rbac-defaults");
/// Upstream's "reconcile this object on startup" annotation.
const AUTOUPDATE_ANNOTATION: &str = "rbac.authorization.kubernetes.io/autoupdate";

fn rules_json(rules: &[PolicyRule]) -> Value {
    serde_json::to_value(rules).unwrap_or(Value::Array(Vec::new()))
}

fn metadata(name: &str, extra_labels: &[(&str, &str)]) -> Value {
    let mut labels = serde_json::Map::new();
    labels.insert(BOOTSTRAP_LABEL.0.into(), BOOTSTRAP_LABEL.1.into());
    for (k, v) in extra_labels {
        labels.insert((*k).into(), (*v).into());
    }
    json!({
        "name": name,
        "labels": labels,
        "annotations": {AUTOUPDATE_ANNOTATION: "true"},
    })
}

fn cluster_role(name: &str, labels: &[(&str, &str)], rules: &[PolicyRule]) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": metadata(name, labels),
        "rules": rules_json(rules),
    })
}

fn aggregated_role(name: &str, labels: &[(&str, &str)], aggregate_label: &str) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": metadata(name, labels),
        "aggregationRule": {
            "clusterRoleSelectors": [{"matchLabels": {aggregate_label: "true"}}],
        },
        "rules": [],
    })
}

fn group_binding(role: &str, groups: &[&str]) -> Value {
    let subjects: Vec<Value> = groups
        .iter()
        .map(|g| json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g}))
        .collect();
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": metadata(role, &[]),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": subjects,
    })
}

const AGG_ADMIN: &str = "rbac.authorization.k8s.io/aggregate-to-admin";
const AGG_EDIT: &str = "rbac.authorization.k8s.io/aggregate-to-edit";
const AGG_VIEW: &str = "rbac.authorization.k8s.io/aggregate-to-view";

fn r(verbs: &[&str], group: &str, resources: &[&str]) -> PolicyRule {
    PolicyRule::resource(verbs, &[group], resources)
}

/// The default roles and bindings, as JSON objects ready to create at first start:
/// `cluster-admin` (bound to `system:masters`), the aggregated `admin`/`edit`/`view` with their
/// `system:aggregate-to-*` rule sets, `system:discovery` and `system:basic-user` (bound to
/// `system:authenticated`), `system:public-info-viewer` (bound to `system:authenticated` and
/// `system:unauthenticated`) and `system:service-account-issuer-discovery` (bound to
/// `system:serviceaccounts`).
pub fn bootstrap_objects() -> Vec<Value> {
    let discovery_urls = [
        "/api",
        "/api/*",
        "/apis",
        "/apis/*",
        "/healthz",
        "/livez",
        "/openapi",
        "/openapi/*",
        "/readyz",
        "/version",
        "/version/",
    ];
    let public_info_urls = ["/healthz", "/livez", "/readyz", "/version", "/version/"];
    let view_rules = vec![
        r(
            READ,
            "",
            &[
                "pods",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/status",
                "endpoints",
                "persistentvolumeclaims",
                "persistentvolumeclaims/status",
                "configmaps",
            ],
        ),
        r(
            READ,
            "",
            &[
                "limitranges",
                "resourcequotas",
                "bindings",
                "events",
                "pods/status",
                "resourcequotas/status",
                "namespaces/status",
                "replicationcontrollers/status",
                "pods/log",
            ],
        ),
        r(READ, "", &["namespaces"]),
        r(READ, "discovery.k8s.io", &["endpointslices"]),
        r(
            READ,
            "apps",
            &[
                "controllerrevisions",
                "statefulsets",
                "statefulsets/status",
                "statefulsets/scale",
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/status",
                "deployments/scale",
                "replicasets",
                "replicasets/status",
                "replicasets/scale",
            ],
        ),
        r(
            READ,
            "autoscaling",
            &[
                "horizontalpodautoscalers",
                "horizontalpodautoscalers/status",
            ],
        ),
        r(
            READ,
            "batch",
            &["jobs", "cronjobs", "cronjobs/status", "jobs/status"],
        ),
        r(
            READ,
            "extensions",
            &[
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
                "ingresses",
                "ingresses/status",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
                "replicationcontrollers/scale",
                "networkpolicies",
            ],
        ),
        r(
            READ,
            "policy",
            &["poddisruptionbudgets", "poddisruptionbudgets/status"],
        ),
        r(
            READ,
            "networking.k8s.io",
            &["networkpolicies", "ingresses", "ingresses/status"],
        ),
    ];
    let edit_rules = vec![
        r(
            READ,
            "",
            &[
                "pods/attach",
                "pods/proxy",
                "pods/exec",
                "pods/portforward",
                "secrets",
                "services/proxy",
            ],
        ),
        r(&["impersonate"], "", &["serviceaccounts"]),
        r(
            WRITE,
            "",
            &[
                "pods",
                "pods/attach",
                "pods/proxy",
                "pods/exec",
                "pods/portforward",
            ],
        ),
        r(&["create"], "", &["pods/eviction"]),
        r(
            WRITE,
            "",
            &[
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/proxy",
                "persistentvolumeclaims",
                "configmaps",
                "secrets",
                "events",
            ],
        ),
        r(&["create"], "", &["serviceaccounts/token"]),
        r(
            WRITE,
            "apps",
            &[
                "statefulsets",
                "statefulsets/scale",
                "daemonsets",
                "deployments",
                "deployments/scale",
                "deployments/rollback",
                "replicasets",
                "replicasets/scale",
            ],
        ),
        r(WRITE, "autoscaling", &["horizontalpodautoscalers"]),
        r(WRITE, "batch", &["jobs", "cronjobs"]),
        r(
            WRITE,
            "extensions",
            &[
                "daemonsets",
                "deployments",
                "deployments/scale",
                "deployments/rollback",
                "ingresses",
                "replicasets",
                "replicasets/scale",
                "replicationcontrollers/scale",
                "networkpolicies",
            ],
        ),
        r(WRITE, "policy", &["poddisruptionbudgets"]),
        r(
            WRITE,
            "networking.k8s.io",
            &["networkpolicies", "ingresses"],
        ),
        r(READ_WRITE, "discovery.k8s.io", &["endpointslices"]),
    ];
    let admin_rules = vec![
        r(
            &["create"],
            "authorization.k8s.io",
            &["localsubjectaccessreviews"],
        ),
        r(
            READ_WRITE,
            "rbac.authorization.k8s.io",
            &["roles", "rolebindings"],
        ),
    ];
    vec![
        cluster_role(
            "cluster-admin",
            &[],
            &[
                PolicyRule::resource(&["*"], &["*"], &["*"]),
                PolicyRule::non_resource(&["*"], &["*"]),
            ],
        ),
        aggregated_role("admin", &[], AGG_ADMIN),
        aggregated_role("edit", &[(AGG_ADMIN, "true")], AGG_EDIT),
        aggregated_role("view", &[(AGG_EDIT, "true")], AGG_VIEW),
        cluster_role(
            "system:aggregate-to-admin",
            &[(AGG_ADMIN, "true")],
            &admin_rules,
        ),
        cluster_role(
            "system:aggregate-to-edit",
            &[(AGG_EDIT, "true")],
            &edit_rules,
        ),
        cluster_role(
            "system:aggregate-to-view",
            &[(AGG_VIEW, "true")],
            &view_rules,
        ),
        cluster_role(
            "system:discovery",
            &[],
            &[PolicyRule::non_resource(&["get"], &discovery_urls)],
        ),
        cluster_role(
            "system:basic-user",
            &[],
            &[
                r(
                    &["create"],
                    "authorization.k8s.io",
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                ),
                r(
                    &["create"],
                    "authentication.k8s.io",
                    &["selfsubjectreviews"],
                ),
            ],
        ),
        cluster_role(
            "system:public-info-viewer",
            &[],
            &[PolicyRule::non_resource(&["get"], &public_info_urls)],
        ),
        cluster_role(
            "system:service-account-issuer-discovery",
            &[],
            &[PolicyRule::non_resource(
                &["get"],
                &[
                    "/.well-known/openid-configuration",
                    "/.well-known/openid-configuration/",
                    "/openid/v1/jwks",
                    "/openid/v1/jwks/",
                ],
            )],
        ),
        group_binding("cluster-admin", &["system:masters"]),
        group_binding("system:discovery", &["system:authenticated"]),
        group_binding("system:basic-user", &["system:authenticated"]),
        group_binding(
            "system:service-account-issuer-discovery",
            &["system:serviceaccounts"],
        ),
        group_binding(
            "system:public-info-viewer",
            &["system:authenticated", "system:unauthenticated"],
        ),
    ]
}
