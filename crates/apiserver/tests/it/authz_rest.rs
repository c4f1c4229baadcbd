//! Authorization through the in-process router, with the identity the authentication layer would
//! attach put on each request directly: the four `authorization.k8s.io` reviews (shapes,
//! validation, answers), 403 Status bodies, impersonation headers, escalation messages, and how
//! quickly a new binding takes effect.

use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::http::Request;
use fleet_apiserver::auth::UserInfo;
use fleet_apiserver::rbac::Attributes;
use fleet_apiserver::{ApiServer, ApiServerConfig};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

fn admin() -> UserInfo {
    UserInfo::authenticated("admin", &["system:masters"])
}

async fn call(
    r: &Router,
    user: &UserInfo,
    method: &str,
    uri: &str,
    body: Option<Value>,
    headers: &[(&str, &str)],
) -> (u16, Value) {
    let mut b = Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", "application/json");
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    let mut req = b
        .body(match body {
            Some(v) => Body::from(v.to_string()),
            None => Body::empty(),
        })
        .expect("request");
    req.extensions_mut().insert(user.clone());
    let resp = r.clone().oneshot(req).await.expect("infallible");
    let code = resp.status().as_u16();
    let bytes = resp
        .into_body()
        .collect()
        .await
        .map(|c| c.to_bytes())
        .unwrap_or_default();
    let v = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    (code, v)
}

async fn setup() -> (ApiServer, Router) {
    // No background `default` ServiceAccounts: `synced` compares the policy's revision with the
    // store's, and writes outside RBAC that land after a test's last RBAC write would make it wait
    // for a revision the policy never sees.
    let mut cfg = ApiServerConfig::in_memory();
    cfg.service_accounts.create_default = false;
    let srv = ApiServer::new(cfg).await.expect("server");
    let r = srv.router();
    let a = admin();
    for ns in ["a", "b"] {
        let (code, body) = call(
            &r,
            &a,
            "POST",
            "/api/v1/namespaces",
            Some(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})),
            &[],
        )
        .await;
        assert_eq!(code, 201, "{body}");
    }
    (srv, r)
}

async fn bind(r: &Router, ns: &str, name: &str, role_kind: &str, role: &str, subject: Value) {
    let (code, body) = call(
        r,
        &admin(),
        "POST",
        &format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings"),
        Some(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
            "subjects": [subject],
        })),
        &[],
    )
    .await;
    assert_eq!(code, 201, "{body}");
}

/// Waits until the live policy has caught up with the store (writes are followed by watch).
async fn synced(srv: &ApiServer, r: &Router) {
    // Any write bumps the revision; wait until the policy has seen at least the current one.
    let (_, list) = call(r, &admin(), "GET", "/api/v1/namespaces", None, &[]).await;
    let rv: i64 = list["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .expect("list resourceVersion");
    let deadline = Instant::now() + Duration::from_secs(5);
    while srv.authz().revision() < rv {
        assert!(Instant::now() < deadline, "policy never caught up to {rv}");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

fn ssar(attrs: Value) -> Value {
    json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": attrs})
}

#[tokio::test]
async fn self_subject_access_review_answers_for_the_caller() {
    let (srv, r) = setup().await;
    let bob = UserInfo::authenticated("bob", &[]);
    let uri = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
    let spec =
        json!({"resourceAttributes": {"namespace": "a", "verb": "list", "resource": "pods"}});
    let (code, v) = call(&r, &bob, "POST", uri, Some(ssar(spec.clone())), &[]).await;
    assert_eq!(code, 201, "{v}");
    assert_eq!(v["kind"], "SelfSubjectAccessReview");
    assert_eq!(v["apiVersion"], "authorization.k8s.io/v1");
    assert_eq!(v["spec"], spec);
    assert_eq!(v["status"], json!({"allowed": false}));

    bind(
        &r,
        "a",
        "bob-view",
        "ClusterRole",
        "view",
        json!({"kind": "User", "name": "bob"}),
    )
    .await;
    synced(&srv, &r).await;
    let (_, v) = call(&r, &bob, "POST", uri, Some(ssar(spec)), &[]).await;
    assert_eq!(v["status"]["allowed"], true, "{v}");
    assert_eq!(
        v["status"]["reason"],
        "RBAC: allowed by RoleBinding \"bob-view/a\" of ClusterRole \"view\" to User \"bob\""
    );

    // Non-resource attributes.
    let (_, v) = call(
        &r,
        &bob,
        "POST",
        uri,
        Some(ssar(
            json!({"nonResourceAttributes": {"path": "/apis", "verb": "get"}}),
        )),
        &[],
    )
    .await;
    assert_eq!(v["status"]["allowed"], true, "{v}");
    let (_, v) = call(
        &r,
        &bob,
        "POST",
        uri,
        Some(ssar(
            json!({"nonResourceAttributes": {"path": "/metrics", "verb": "get"}}),
        )),
        &[],
    )
    .await;
    assert_eq!(v["status"]["allowed"], false, "{v}");

    // Exactly one of the two attribute kinds.
    for bad in [
        json!({}),
        json!({"resourceAttributes": {"verb": "get"}, "nonResourceAttributes": {"path": "/x", "verb": "get"}}),
    ] {
        let (code, v) = call(&r, &bob, "POST", uri, Some(ssar(bad)), &[]).await;
        assert_eq!(code, 422, "{v}");
        assert_eq!(
            v["details"]["causes"][0]["field"],
            "spec.resourceAttributes"
        );
    }
    // Reviews are create-only and never stored.
    let (code, _) = call(&r, &admin(), "GET", uri, None, &[]).await;
    assert_eq!(code, 405);
    let (code, _) = call(&r, &bob, "POST", uri, Some(json!("x")), &[]).await;
    assert_eq!(code, 400);
}

#[tokio::test]
async fn subject_access_reviews_need_permission_and_a_subject() {
    let (srv, r) = setup().await;
    bind(
        &r,
        "a",
        "ops-edit",
        "ClusterRole",
        "edit",
        json!({"kind": "Group", "name": "ops"}),
    )
    .await;
    synced(&srv, &r).await;
    let uri = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
    let review = |spec: Value| json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec});
    let create_pods = json!({"namespace": "a", "verb": "create", "resource": "pods"});

    // Asking about others needs `create subjectaccessreviews`.
    let bob = UserInfo::authenticated("bob", &[]);
    let (code, v) = call(
        &r,
        &bob,
        "POST",
        uri,
        Some(review(
            json!({"user": "x", "resourceAttributes": create_pods}),
        )),
        &[],
    )
    .await;
    assert_eq!(code, 403);
    assert_eq!(
        v["message"],
        "subjectaccessreviews.authorization.k8s.io is forbidden: User \"bob\" cannot create resource \"subjectaccessreviews\" in API group \"authorization.k8s.io\" at the cluster scope"
    );

    let (code, v) = call(
        &r,
        &admin(),
        "POST",
        uri,
        Some(review(
            json!({"user": "mallory", "groups": ["ops"], "resourceAttributes": create_pods}),
        )),
        &[],
    )
    .await;
    assert_eq!(code, 201, "{v}");
    assert_eq!(v["status"]["allowed"], true, "{v}");
    let (_, v) = call(
        &r,
        &admin(),
        "POST",
        uri,
        Some(review(
            json!({"user": "mallory", "groups": ["dev"], "resourceAttributes": create_pods}),
        )),
        &[],
    )
    .await;
    assert_eq!(v["status"], json!({"allowed": false}));
    let (code, v) = call(
        &r,
        &admin(),
        "POST",
        uri,
        Some(review(json!({"resourceAttributes": create_pods}))),
        &[],
    )
    .await;
    assert_eq!(code, 422, "{v}");
    assert_eq!(v["details"]["causes"][0]["field"], "spec.user");

    // LocalSubjectAccessReview: the URL's namespace, which the spec may not contradict.
    let local = |ns: &str, spec: Value| {
        (
            format!("/apis/authorization.k8s.io/v1/namespaces/{ns}/localsubjectaccessreviews"),
            json!({"apiVersion": "authorization.k8s.io/v1", "kind": "LocalSubjectAccessReview", "metadata": {"namespace": ns}, "spec": spec}),
        )
    };
    let (u, b) = local(
        "a",
        json!({"groups": ["ops"], "resourceAttributes": {"verb": "create", "resource": "pods"}}),
    );
    let (code, v) = call(&r, &admin(), "POST", &u, Some(b), &[]).await;
    assert_eq!(code, 201, "{v}");
    assert_eq!(v["status"]["allowed"], true, "{v}");
    assert_eq!(v["metadata"]["namespace"], "a");
    let (u, b) = local(
        "b",
        json!({"groups": ["ops"], "resourceAttributes": {"verb": "create", "resource": "pods"}}),
    );
    let (_, v) = call(&r, &admin(), "POST", &u, Some(b), &[]).await;
    assert_eq!(v["status"]["allowed"], false, "{v}");
    let (u, b) = local(
        "b",
        json!({"groups": ["ops"], "resourceAttributes": {"namespace": "a", "verb": "create", "resource": "pods"}}),
    );
    let (code, v) = call(&r, &admin(), "POST", &u, Some(b), &[]).await;
    assert_eq!(code, 400, "{v}");
    let (u, b) = local(
        "a",
        json!({"groups": ["ops"], "nonResourceAttributes": {"verb": "get", "path": "/api"}}),
    );
    let (code, v) = call(&r, &admin(), "POST", &u, Some(b), &[]).await;
    assert_eq!(code, 422, "{v}");
}

#[tokio::test]
async fn self_subject_rules_review_lists_held_rules() {
    let (srv, r) = setup().await;
    let role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "agent", "namespace": "a"},
        "rules": [
            {"apiGroups": ["fleet.cattle.io"], "resources": ["bundledeployments"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": ["fleet.cattle.io"], "resources": ["bundledeployments/status"], "verbs": ["update"]},
        ],
    });
    let (code, v) = call(
        &r,
        &admin(),
        "POST",
        "/apis/rbac.authorization.k8s.io/v1/namespaces/a/roles",
        Some(role),
        &[],
    )
    .await;
    assert_eq!(code, 201, "{v}");
    bind(
        &r,
        "a",
        "agent",
        "Role",
        "agent",
        json!({"kind": "ServiceAccount", "name": "agent", "namespace": "a"}),
    )
    .await;
    synced(&srv, &r).await;
    let agent = UserInfo::authenticated(
        "system:serviceaccount:a:agent",
        &["system:serviceaccounts", "system:serviceaccounts:a"],
    );
    let uri = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews";
    let review = |ns: &str| json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "spec": {"namespace": ns}});
    let (code, v) = call(&r, &agent, "POST", uri, Some(review("a")), &[]).await;
    assert_eq!(code, 201, "{v}");
    let rules = v["status"]["resourceRules"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        rules
            .iter()
            .any(|r| r["resources"] == json!(["bundledeployments"])
                && r["verbs"] == json!(["get", "list", "watch"])),
        "{v}"
    );
    assert!(
        rules.iter().any(|r| r["resources"]
            == json!(["selfsubjectaccessreviews", "selfsubjectrulesreviews"])
            || r["resources"]
                .as_array()
                .is_some_and(|a| a.contains(&json!("selfsubjectaccessreviews")))),
        "{v}"
    );
    assert_eq!(v["status"]["incomplete"], false);
    assert!(
        v["status"]["nonResourceRules"]
            .as_array()
            .is_some_and(|a| !a.is_empty())
    );
    let (_, v) = call(&r, &agent, "POST", uri, Some(review("b")), &[]).await;
    let rules = v["status"]["resourceRules"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        !rules
            .iter()
            .any(|r| r["resources"] == json!(["bundledeployments"])),
        "{v}"
    );

    // The admin holds everything.
    let (_, v) = call(&r, &admin(), "POST", uri, Some(review("a")), &[]).await;
    assert!(
        v["status"]["resourceRules"].as_array().is_some_and(|a| a
            .iter()
            .any(|r| r["verbs"] == json!(["*"]) && r["resources"] == json!(["*"]))),
        "{v}"
    );
}

#[tokio::test]
async fn forbidden_status_and_public_paths() {
    let (_srv, r) = setup().await;
    let bob = UserInfo::authenticated("bob", &[]);
    let (code, v) = call(&r, &bob, "GET", "/api/v1/namespaces/a/secrets/s", None, &[]).await;
    assert_eq!(code, 403);
    assert_eq!(
        v,
        json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "secrets \"s\" is forbidden: User \"bob\" cannot get resource \"secrets\" in API group \"\" in the namespace \"a\"",
            "reason": "Forbidden",
            "details": {"name": "s", "kind": "secrets"},
            "code": 403,
        })
    );
    // Discovery is allowed through the default bindings, for authenticated users only.
    for p in [
        "/api",
        "/api/v1",
        "/apis",
        "/apis/apps/v1",
        "/version",
        "/openapi/v2",
    ] {
        let (code, v) = call(&r, &bob, "GET", p, None, &[]).await;
        assert_eq!(code, 200, "{p}: {v}");
    }
    let anon = UserInfo::anonymous();
    for p in ["/healthz", "/livez", "/readyz", "/version"] {
        let (code, v) = call(&r, &anon, "GET", p, None, &[]).await;
        assert_eq!(code, 200, "{p}: {v}");
    }
    let (code, v) = call(&r, &anon, "GET", "/api", None, &[]).await;
    assert_eq!(code, 403, "{v}");
    assert_eq!(
        v["message"],
        "forbidden: User \"system:anonymous\" cannot get path \"/api\""
    );
    // The RBAC objects themselves are protected like any resource.
    let (code, _) = call(
        &r,
        &bob,
        "GET",
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        None,
        &[],
    )
    .await;
    assert_eq!(code, 403);
    // The default policy exists and is visible to the admin.
    let (code, v) = call(
        &r,
        &admin(),
        "GET",
        "/apis/rbac.authorization.k8s.io/v1/clusterroles/cluster-admin",
        None,
        &[],
    )
    .await;
    assert_eq!(code, 200, "{v}");
    let (code, _) = call(
        &r,
        &admin(),
        "GET",
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/system:discovery",
        None,
        &[],
    )
    .await;
    assert_eq!(code, 200);
}

#[tokio::test]
async fn impersonation_headers() {
    let (srv, r) = setup().await;
    let bob = UserInfo::authenticated("bob", &[]);
    let whoami = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews";
    let review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "spec": {"namespace": "a"}});

    let (code, v) = call(
        &r,
        &bob,
        "POST",
        whoami,
        Some(review.clone()),
        &[("impersonate-group", "x")],
    )
    .await;
    assert_eq!(code, 400, "{v}");

    let cr = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "impersonator"},
        "rules": [
            {"apiGroups": [""], "resources": ["users", "groups", "serviceaccounts"], "verbs": ["impersonate"]},
            {"apiGroups": ["authentication.k8s.io"], "resources": ["userextras/scopes"], "verbs": ["impersonate"]},
        ],
    });
    let (code, v) = call(
        &r,
        &admin(),
        "POST",
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        Some(cr),
        &[],
    )
    .await;
    assert_eq!(code, 201, "{v}");
    let crb = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "bob-impersonator"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "impersonator"},
        "subjects": [{"kind": "User", "name": "bob"}],
    });
    let (code, v) = call(
        &r,
        &admin(),
        "POST",
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        Some(crb),
        &[],
    )
    .await;
    assert_eq!(code, 201, "{v}");
    bind(
        &r,
        "a",
        "agent-view",
        "ClusterRole",
        "view",
        json!({"kind": "ServiceAccount", "name": "agent", "namespace": "a"}),
    )
    .await;
    synced(&srv, &r).await;

    // A service account user gets its groups; an SSAR then answers for it.
    let ssar_uri = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
    let list_pods =
        ssar(json!({"resourceAttributes": {"namespace": "a", "verb": "list", "resource": "pods"}}));
    let (code, v) = call(
        &r,
        &bob,
        "POST",
        ssar_uri,
        Some(list_pods.clone()),
        &[("impersonate-user", "system:serviceaccount:a:agent")],
    )
    .await;
    assert_eq!(code, 201, "{v}");
    assert_eq!(v["status"]["allowed"], true, "{v}");
    // Extras need their own grant; uids too.
    let (code, _) = call(
        &r,
        &bob,
        "POST",
        ssar_uri,
        Some(list_pods.clone()),
        &[
            ("impersonate-user", "alice"),
            ("impersonate-extra-scopes", "view"),
        ],
    )
    .await;
    assert_eq!(code, 201);
    let (code, v) = call(
        &r,
        &bob,
        "POST",
        ssar_uri,
        Some(list_pods.clone()),
        &[
            ("impersonate-user", "alice"),
            ("impersonate-extra-reason", "x"),
        ],
    )
    .await;
    assert_eq!(code, 403, "{v}");
    assert_eq!(
        v["message"],
        "userextras.authentication.k8s.io \"x\" is forbidden: User \"bob\" cannot impersonate resource \"userextras/reason\" in API group \"authentication.k8s.io\" at the cluster scope"
    );
    let (code, v) = call(
        &r,
        &bob,
        "POST",
        ssar_uri,
        Some(list_pods.clone()),
        &[("impersonate-user", "alice"), ("impersonate-uid", "1234")],
    )
    .await;
    assert_eq!(code, 403, "{v}");
    assert_eq!(
        v["details"],
        json!({"group": "authentication.k8s.io", "kind": "uids", "name": "1234"})
    );

    // The impersonated identity is what authorization sees: alice cannot list secrets.
    let (code, v) = call(
        &r,
        &bob,
        "GET",
        "/api/v1/namespaces/a/secrets",
        None,
        &[("impersonate-user", "alice")],
    )
    .await;
    assert_eq!(code, 403);
    assert!(
        v["message"]
            .as_str()
            .is_some_and(|m| m.contains("User \"alice\"")),
        "{v}"
    );
    // Without the grant, nobody impersonates.
    let eve = UserInfo::authenticated("eve", &[]);
    let (code, v) = call(
        &r,
        &eve,
        "GET",
        "/api/v1/namespaces/a/pods",
        None,
        &[("impersonate-user", "system:serviceaccount:a:agent")],
    )
    .await;
    assert_eq!(code, 403);
    assert_eq!(
        v["details"],
        json!({"kind": "serviceaccounts", "name": "agent"})
    );
}

#[tokio::test]
async fn escalation_is_checked_on_every_rbac_write() {
    let (srv, r) = setup().await;
    let role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "rbac", "namespace": "a"},
        "rules": [
            {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"], "verbs": ["create", "get", "list", "update", "patch", "delete"]},
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]},
        ],
    });
    let (code, v) = call(
        &r,
        &admin(),
        "POST",
        "/apis/rbac.authorization.k8s.io/v1/namespaces/a/roles",
        Some(role),
        &[],
    )
    .await;
    assert_eq!(code, 201, "{v}");
    bind(
        &r,
        "a",
        "carol",
        "Role",
        "rbac",
        json!({"kind": "User", "name": "carol"}),
    )
    .await;
    synced(&srv, &r).await;
    let carol = UserInfo::authenticated("carol", &[]);
    let uri = "/apis/rbac.authorization.k8s.io/v1/namespaces/a/roles";
    let mk = |verbs: Value, resources: Value| {
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "r", "namespace": "a"},
            "rules": [{"apiGroups": [""], "resources": resources, "verbs": verbs}],
        })
    };
    let (code, v) = call(
        &r,
        &carol,
        "POST",
        uri,
        Some(mk(json!(["get"]), json!(["configmaps"]))),
        &[],
    )
    .await;
    assert_eq!(code, 201, "{v}");
    // Update (PUT) and patch that widen the role are refused too.
    let (code, v) = call(
        &r,
        &carol,
        "PUT",
        &format!("{uri}/r"),
        Some(mk(json!(["get", "list"]), json!(["configmaps"]))),
        &[],
    )
    .await;
    assert_eq!(code, 403, "{v}");
    assert_eq!(
        v["message"],
        "roles.rbac.authorization.k8s.io \"r\" is forbidden: user \"carol\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"configmaps\"], Verbs:[\"list\"]}"
    );
    assert_eq!(
        v["details"],
        json!({"group": "rbac.authorization.k8s.io", "kind": "roles", "name": "r"})
    );
    let mut req_patch = Request::builder()
        .method("PATCH")
        .uri(format!("{uri}/r"))
        .header("content-type", "application/merge-patch+json")
        .body(Body::from(
            json!({"rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]})
                .to_string(),
        ))
        .expect("request");
    req_patch.extensions_mut().insert(carol.clone());
    let resp = r.clone().oneshot(req_patch).await.expect("infallible");
    assert_eq!(resp.status().as_u16(), 403);
    // Invalid rules: 422 naming the field, before permissions.
    let (code, v) = call(&r, &carol, "POST", uri, Some(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "bad", "namespace": "a"},
        "rules": [{"apiGroups": [""], "resources": ["secrets"]}],
    })), &[]).await;
    assert_eq!(code, 422, "{v}");
    assert_eq!(v["details"]["causes"][0]["field"], "rules[0].verbs");
    // A binding to a role that does not exist cannot be checked against held rules.
    let (code, v) = call(&r, &carol, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/a/rolebindings", Some(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "x"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "missing"},
        "subjects": [{"kind": "User", "name": "dave"}],
    })), &[]).await;
    assert_eq!(code, 403, "{v}");
    // The unchanged role still grants only configmaps get.
    let (_, v) = call(&r, &admin(), "GET", &format!("{uri}/r"), None, &[]).await;
    assert_eq!(v["rules"][0]["verbs"], json!(["get"]));
}

/// How long a new binding takes to affect decisions (the policy follows the store's watch).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bindings_take_effect_within_milliseconds() {
    let (srv, r) = setup().await;
    let user = UserInfo::authenticated("lag", &[]);
    let attrs = Attributes::resource("list", "", "pods").namespace("a");
    let mut worst = Duration::ZERO;
    for i in 0..20 {
        let name = format!("b{i}");
        let start = Instant::now();
        bind(
            &r,
            "a",
            &name,
            "ClusterRole",
            "view",
            json!({"kind": "User", "name": "lag"}),
        )
        .await;
        let written = Instant::now();
        while !srv.authz().read().authorize(&user, &attrs).allowed {
            assert!(
                written.elapsed() < Duration::from_secs(2),
                "binding {name} never took effect"
            );
            tokio::task::yield_now().await;
        }
        worst = worst.max(written.elapsed());
        let _ = start;
        let (code, _) = call(
            &r,
            &admin(),
            "DELETE",
            &format!("/apis/rbac.authorization.k8s.io/v1/namespaces/a/rolebindings/{name}"),
            None,
            &[],
        )
        .await;
        assert_eq!(code, 200);
        let deleted = Instant::now();
        while srv.authz().read().authorize(&user, &attrs).allowed {
            assert!(
                deleted.elapsed() < Duration::from_secs(2),
                "deleting {name} never revoked access"
            );
            tokio::task::yield_now().await;
        }
        worst = worst.max(deleted.elapsed());
    }
    println!("worst lag between a binding write and its effect: {worst:?}");
    assert!(worst < Duration::from_millis(500), "{worst:?}");
}
