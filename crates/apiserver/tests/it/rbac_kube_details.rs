//! Details kube-apiserver enforces around RBAC and identities, over TLS against a server from
//! `Server::start`: a binding's `roleRef` is immutable (422, kube-apiserver's wording);
//! impersonated `uid` and `extra` are carried in the user info and shown by SelfSubjectReview
//! (`kubectl auth whoami --as --as-uid`, and raw `Impersonate-Extra-*` headers); service-account
//! issuer discovery (`/.well-known/openid-configuration`, `/openid/v1/jwks`) with kube's shapes,
//! media types and authorization.

use std::time::{Duration, Instant};

use fleet_apiserver::server::{Server, ServerConfig, ServerHandle};
use fleet_apiserver::serviceaccount::DEFAULT_ISSUER;
use http_body_util::BodyExt;
use serde_json::{Value, json};

use crate::support::kubectl;

async fn start() -> ServerHandle {
    Server::start(ServerConfig::in_memory())
        .await
        .expect("server starts")
}

/// A client for `h` as the user block `user` describes (`{}`: no credentials).
async fn client_as(h: &ServerHandle, user: &str) -> kube::Client {
    let yaml = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {}\n    certificate-authority-data: {}\nusers:\n- name: u\n  user: {user}\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\n    namespace: default\ncurrent-context: x\n",
        h.url(),
        b64(h.ca_pem()),
    );
    let kc = kube::config::Kubeconfig::from_yaml(&yaml).expect("kubeconfig");
    let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .expect("kubeconfig usable");
    kube::Client::try_from(cfg).expect("client")
}

fn b64(s: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(s)
}

async fn admin(h: &ServerHandle) -> kube::Client {
    client_as(h, &format!("{{token: {}}}", h.admin_token())).await
}

struct Reply {
    code: u16,
    content_type: String,
    cache_control: String,
    body: Value,
}

async fn call(
    client: &kube::Client,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> Reply {
    let mut b = axum::http::Request::builder().method(method).uri(path);
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    let body = match body {
        Some(v) => {
            b = b.header("content-type", "application/json");
            kube::client::Body::from(v.to_string().into_bytes())
        }
        None => kube::client::Body::empty(),
    };
    let resp = client.send(b.body(body).unwrap()).await.expect("sent");
    let header = |n: &str| {
        resp.headers()
            .get(n)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let (content_type, cache_control) = (header("content-type"), header("cache-control"));
    let code = resp.status().as_u16();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    let body = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    Reply {
        code,
        content_type,
        cache_control,
        body,
    }
}

/// Retries `check` until it holds (RBAC changes reach the policy through its watch).
async fn eventually(what: &str, mut check: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !check().await {
        assert!(Instant::now() < deadline, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

const RBAC: &str = "/apis/rbac.authorization.k8s.io/v1";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binding_role_ref_is_immutable() {
    let h = start().await;
    let c = admin(&h).await;
    let rb = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "rb", "namespace": "default"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "a"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "jane"}],
    });
    let r = call(
        &c,
        "POST",
        &format!("{RBAC}/namespaces/default/rolebindings"),
        &[],
        Some(rb.clone()),
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.body);
    let crb = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "crb"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "jane"}],
    });
    let r = call(
        &c,
        "POST",
        &format!("{RBAC}/clusterrolebindings"),
        &[],
        Some(crb),
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.body);

    // PUT with another role.
    let mut changed = rb.clone();
    changed["roleRef"]["name"] = json!("b");
    let url = format!("{RBAC}/namespaces/default/rolebindings/rb");
    let r = call(&c, "PUT", &url, &[], Some(changed)).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(r.body["reason"], "Invalid");
    assert_eq!(
        r.body["message"],
        "RoleBinding.rbac.authorization.k8s.io \"rb\" is invalid: roleRef: Invalid value: \
         rbac.RoleRef{APIGroup:\"rbac.authorization.k8s.io\", Kind:\"Role\", Name:\"b\"}: \
         cannot change roleRef"
    );
    assert_eq!(r.body["details"]["causes"][0]["field"], "roleRef");
    assert_eq!(
        r.body["details"]["causes"][0]["reason"],
        "FieldValueInvalid"
    );

    // A merge patch of a ClusterRoleBinding's role, and server-side apply, likewise.
    let url = format!("{RBAC}/clusterrolebindings/crb");
    let patch = json!({"roleRef": {"name": "edit"}});
    let r = call(
        &c,
        "PATCH",
        &url,
        &[("content-type", "application/merge-patch+json")],
        Some(patch),
    )
    .await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "ClusterRoleBinding.rbac.authorization.k8s.io \"crb\" is invalid: roleRef: Invalid \
         value: rbac.RoleRef{APIGroup:\"rbac.authorization.k8s.io\", Kind:\"ClusterRole\", \
         Name:\"edit\"}: cannot change roleRef"
    );
    let mut applied = rb.clone();
    applied["roleRef"]["kind"] = json!("ClusterRole");
    let r = call(
        &c,
        "PATCH",
        "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings/rb?fieldManager=t&force=true",
        &[("content-type", "application/apply-patch+yaml")],
        Some(applied),
    )
    .await;
    assert_eq!(r.code, 422, "{}", r.body);

    // Other fields still change.
    let r = call(
        &c,
        "PATCH",
        &url,
        &[("content-type", "application/merge-patch+json")],
        Some(json!({"subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "joe"}]})),
    )
    .await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["subjects"][0]["name"], "joe");
    assert_eq!(r.body["roleRef"]["name"], "view");

    // kubectl reports it as kube-apiserver's error.
    if !kubectl::have_kubectl() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let k = kubectl::Kubectl {
        bin: kubectl::kubectl_bin().unwrap(),
        kubeconfig: h.kubeconfig_path().to_path_buf(),
        cache: dir.path().join("cache"),
        dir: dir.path().to_path_buf(),
    };
    k.ok(&[
        "create",
        "rolebinding",
        "kb",
        "--clusterrole=view",
        "--user=jane",
    ])
    .await;
    let (ok, _, err) = k
        .run(&[
            "create",
            "rolebinding",
            "kb",
            "--clusterrole=edit",
            "--user=jane",
            "--dry-run=client",
            "-o",
            "yaml",
        ])
        .await;
    assert!(ok, "{err}");
    let manifest = k.write(
        "kb.yaml",
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: kb, namespace: default}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}\nsubjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: jane}]\n",
    );
    let (ok, _, err) = k.run(&["replace", "-f", &manifest]).await;
    assert!(!ok);
    assert!(
        err.contains("The RoleBinding \"kb\" is invalid: roleRef: Invalid value: rbac.RoleRef{APIGroup:\"rbac.authorization.k8s.io\", Kind:\"ClusterRole\", Name:\"edit\"}: cannot change roleRef"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn impersonated_uid_and_extra_reach_self_subject_review() {
    let h = start().await;
    let c = admin(&h).await;
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let r = call(
        &c,
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        &[
            ("Impersonate-User", "jane"),
            ("Impersonate-Group", "devs"),
            ("Impersonate-Uid", "1234-abcd"),
            ("Impersonate-Extra-Scopes", "view"),
            ("Impersonate-Extra-Scopes", "edit"),
            ("Impersonate-Extra-acme.com%2Fproject", "p1"),
        ],
        Some(review.clone()),
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(
        r.body["status"]["userInfo"],
        json!({
            "username": "jane",
            "uid": "1234-abcd",
            "groups": ["devs", "system:authenticated"],
            "extra": {"acme.com/project": ["p1"], "scopes": ["view", "edit"]},
        })
    );
    // Without impersonation: no uid or extra is made up.
    let r = call(
        &c,
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        &[],
        Some(review),
    )
    .await;
    assert_eq!(
        r.body["status"]["userInfo"],
        json!({"username": "admin", "groups": ["system:masters", "system:authenticated"]})
    );

    // kubectl has --as-uid (and no flag for extras).
    if !kubectl::have_kubectl() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let k = kubectl::Kubectl {
        bin: kubectl::kubectl_bin().unwrap(),
        kubeconfig: h.kubeconfig_path().to_path_buf(),
        cache: dir.path().join("cache"),
        dir: dir.path().to_path_buf(),
    };
    let out = k
        .ok(&[
            "auth",
            "whoami",
            "--as=jane",
            "--as-uid=1234-abcd",
            "-o",
            "json",
        ])
        .await;
    let v: Value = serde_json::from_str(&out).expect("whoami JSON");
    assert_eq!(v["status"]["userInfo"]["username"], "jane", "{v}");
    assert_eq!(v["status"]["userInfo"]["uid"], "1234-abcd", "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_account_issuer_discovery() {
    let h = start().await;
    let c = admin(&h).await;

    let r = call(&c, "GET", "/.well-known/openid-configuration", &[], None).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.content_type, "application/json");
    assert_eq!(r.cache_control, "public, max-age=3600");
    let jwks_uri = format!("{}/openid/v1/jwks", h.url());
    assert_eq!(
        r.body,
        json!({
            "issuer": DEFAULT_ISSUER,
            "jwks_uri": jwks_uri,
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["ES256"],
        })
    );
    let r = call(&c, "GET", "/openid/v1/jwks", &[], None).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.content_type, "application/jwk-set+json");
    assert_eq!(r.cache_control, "public, max-age=3600");
    let keys = r.body["keys"].as_array().expect("keys");
    assert_eq!(keys.len(), 1, "{}", r.body);
    let jwk = &keys[0];
    for (field, want) in [
        ("use", "sig"),
        ("kty", "EC"),
        ("crv", "P-256"),
        ("alg", "ES256"),
    ] {
        assert_eq!(jwk[field], want, "{jwk}");
    }
    // Trailing slashes, as the default ClusterRole names them.
    let r = call(&c, "GET", "/openid/v1/jwks/", &[], None).await;
    assert_eq!(r.code, 200);

    // A service account's token names the key by kid and verifies with the published key.
    let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "reader"}});
    let r = call(
        &c,
        "POST",
        "/api/v1/namespaces/default/serviceaccounts",
        &[],
        Some(sa),
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.body);
    let tr = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}});
    let r = call(
        &c,
        "POST",
        "/api/v1/namespaces/default/serviceaccounts/reader/token",
        &[],
        Some(tr),
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.body);
    let token = r.body["status"]["token"]
        .as_str()
        .expect("token")
        .to_string();
    let header = jsonwebtoken::decode_header(&token).expect("JWT header");
    assert_eq!(header.kid.as_deref(), jwk["kid"].as_str());
    let key = jsonwebtoken::DecodingKey::from_ec_components(
        jwk["x"].as_str().unwrap(),
        jwk["y"].as_str().unwrap(),
    )
    .expect("JWK is a usable key");
    let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::ES256);
    validation.set_issuer(&[DEFAULT_ISSUER]);
    validation.set_audience(&[DEFAULT_ISSUER]);
    jsonwebtoken::decode::<Value>(&token, &key, &validation).expect("verifies with the JWKS");

    // Service accounts may read both documents; other users and anonymous requests may not.
    let as_sa = client_as(&h, &format!("{{token: {token}}}")).await;
    for path in ["/.well-known/openid-configuration", "/openid/v1/jwks"] {
        let r = call(&as_sa, "GET", path, &[], None).await;
        assert_eq!(r.code, 200, "{path}: {}", r.body);
    }
    let bob = h.pki().issue_client_cert("bob", &[]).unwrap();
    let as_bob = client_as(
        &h,
        &format!(
            "{{client-certificate-data: {}, client-key-data: {}}}",
            b64(&bob.cert_pem),
            b64(&bob.key_pem)
        ),
    )
    .await;
    let anonymous = client_as(&h, "{}").await;
    let r = call(&as_bob, "GET", "/openid/v1/jwks", &[], None).await;
    assert_eq!(r.code, 403, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "forbidden: User \"bob\" cannot get path \"/openid/v1/jwks\""
    );
    let r = call(
        &anonymous,
        "GET",
        "/.well-known/openid-configuration",
        &[],
        None,
    )
    .await;
    assert_eq!(r.code, 403, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "forbidden: User \"system:anonymous\" cannot get path \"/.well-known/openid-configuration\""
    );

    // Binding the role to system:unauthenticated makes them public (kube's documented recipe).
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "oidc-reviewer"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:service-account-issuer-discovery"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:unauthenticated"}],
    });
    let r = call(
        &c,
        "POST",
        &format!("{RBAC}/clusterrolebindings"),
        &[],
        Some(binding),
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.body);
    eventually("anonymous discovery after the binding", async || {
        call(&anonymous, "GET", "/openid/v1/jwks", &[], None)
            .await
            .code
            == 200
    })
    .await;
}
