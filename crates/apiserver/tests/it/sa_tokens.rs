//! Service-account authentication through the real router and authentication layer: the
//! `serviceaccounts/token` subresource (TokenRequest), tokens used as bearer credentials,
//! revocation by deleting or recreating the ServiceAccount / Secret, expiry, audiences, tampering,
//! legacy token Secrets filled in by the server, SelfSubjectReview and TokenReview.

use std::path::Path;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::Request;
use fleet_apiserver::auth::{Authenticator, UserInfo};
use fleet_apiserver::satoken::{ServiceAccountRef, SigningKey};
use fleet_apiserver::serve::with_authentication;
use fleet_apiserver::store::StoreConfig;
use fleet_apiserver::{ApiServer, ApiServerConfig};
use serde_json::{Value, json};

use crate::rest_common::eventually as poll;

const ADMIN: &str = "admin-static-token";

struct Env {
    _dir: tempfile::TempDir,
    key_dir: std::path::PathBuf,
    srv: ApiServer,
    app: Router,
}

async fn start_in(dir: &Path, store: StoreConfig) -> (ApiServer, Router) {
    let mut cfg = ApiServerConfig::with_store(store);
    cfg.service_accounts.key_dir = Some(dir.to_path_buf());
    cfg.service_accounts.ca_pem = Some("-----BEGIN CERTIFICATE-----\ntest\n".into());
    let srv = ApiServer::new(cfg).await.expect("server starts");
    let admin = UserInfo::authenticated("admin", &["system:masters"]);
    let auth = Authenticator::new(vec![(ADMIN.into(), admin)])
        .with_verifier(srv.service_account_authenticator());
    let app = with_authentication(srv.router(), auth);
    (srv, app)
}

async fn env() -> Env {
    let dir = tempfile::tempdir().expect("tempdir");
    let key_dir = dir.path().to_path_buf();
    let (srv, app) = start_in(&key_dir, StoreConfig::in_memory()).await;
    Env {
        _dir: dir,
        key_dir,
        srv,
        app,
    }
}

/// One request with `Authorization: Bearer token` (none when `token` is empty).
async fn call(app: &Router, token: &str, method: &str, uri: &str, body: Value) -> (u16, Value) {
    let mut b = Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", "application/json");
    if !token.is_empty() {
        b = b.header("authorization", format!("Bearer {token}"));
    }
    let body = if body.is_null() {
        Body::empty()
    } else {
        Body::from(body.to_string())
    };
    let (code, bytes) = crate::rest_common::send(app, b.body(body).expect("request")).await;
    (code, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

async fn create_sa(app: &Router, ns: &str, name: &str) -> String {
    let (code, v) = call(
        app,
        ADMIN,
        "POST",
        &format!("/api/v1/namespaces/{ns}/serviceaccounts"),
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}}),
    )
    .await;
    assert_eq!(code, 201, "{v}");
    v["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

async fn delete(app: &Router, path: &str) {
    let (code, v) = call(app, ADMIN, "DELETE", path, Value::Null).await;
    assert_eq!(code, 200, "{v}");
}

async fn token_request(app: &Router, ns: &str, sa: &str, spec: Value) -> (u16, Value) {
    call(
        app,
        ADMIN,
        "POST",
        &format!("/api/v1/namespaces/{ns}/serviceaccounts/{sa}/token"),
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}),
    )
    .await
}

async fn issue(app: &Router, ns: &str, sa: &str) -> String {
    let (code, v) = token_request(app, ns, sa, json!({})).await;
    assert_eq!(code, 201, "{v}");
    v["status"]["token"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

async fn whoami(app: &Router, token: &str) -> (u16, Value) {
    call(
        app,
        token,
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}),
    )
    .await
}

fn assert_unauthorized(code: u16, body: &Value) {
    assert_eq!(code, 401, "{body}");
    assert_eq!(body["kind"], "Status", "{body}");
    assert_eq!(body["reason"], "Unauthorized", "{body}");
    assert_eq!(body["code"], 401, "{body}");
}

#[tokio::test]
async fn token_request_issues_a_working_token() {
    let e = env().await;
    let uid = create_sa(&e.app, "default", "agent").await;
    let before = jiff::Timestamp::now().as_second();
    let (code, v) = token_request(&e.app, "default", "agent", json!({})).await;
    assert_eq!(code, 201, "{v}");
    assert_eq!(v["kind"], "TokenRequest");
    assert_eq!(v["apiVersion"], "authentication.k8s.io/v1");
    assert_eq!(v["metadata"]["name"], "agent");
    assert_eq!(v["metadata"]["namespace"], "default");
    assert_eq!(
        v["spec"]["audiences"],
        json!([fleet_apiserver::serviceaccount::DEFAULT_ISSUER])
    );
    assert_eq!(v["spec"]["expirationSeconds"], 3600);
    let exp: jiff::Timestamp = v["status"]["expirationTimestamp"]
        .as_str()
        .unwrap_or_default()
        .parse()
        .expect("RFC 3339 expirationTimestamp");
    let lifetime = exp.as_second() - before;
    assert!((3599..=3602).contains(&lifetime), "{lifetime}");
    let token = v["status"]["token"].as_str().unwrap_or_default();
    assert_eq!(token.split('.').count(), 3, "{token}");

    // The token's claims are the bound-token shape, naming the account's uid.
    let claims = e
        .srv
        .service_account_key()
        .verify(
            token,
            &fleet_apiserver::satoken::VerifyOptions {
                issuer: e.srv.service_account_config().issuer.clone(),
                audiences: e.srv.service_account_config().api_audiences.clone(),
                accept_legacy: false,
                now: before,
            },
        )
        .expect("verifies");
    assert_eq!(claims.service_account_uid, uid);
    assert_eq!(claims.claims.sub, "system:serviceaccount:default:agent");

    let (code, who) = whoami(&e.app, token).await;
    assert_eq!(code, 201, "{who}");
    assert_eq!(who["kind"], "SelfSubjectReview");
    assert_eq!(
        who["status"]["userInfo"]["username"],
        "system:serviceaccount:default:agent"
    );
    assert_eq!(
        who["status"]["userInfo"]["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:default",
            "system:authenticated"
        ])
    );
    // It works for ordinary requests too: discovery is open to every authenticated user, and
    // anything else is refused by RBAC as this service account (authenticated, not authorized).
    let (code, body) = call(&e.app, token, "GET", "/api/v1", Value::Null).await;
    assert_eq!(code, 200, "{body}");
    let (code, list) = call(
        &e.app,
        token,
        "GET",
        "/api/v1/namespaces/default/configmaps",
        Value::Null,
    )
    .await;
    assert_eq!(code, 403, "{list}");
    assert!(
        list["message"]
            .as_str()
            .unwrap_or("")
            .contains("User \"system:serviceaccount:default:"),
        "{list}"
    );

    // --duration
    let (code, v) = token_request(
        &e.app,
        "default",
        "agent",
        json!({"expirationSeconds": 600}),
    )
    .await;
    assert_eq!(code, 201, "{v}");
    assert_eq!(v["spec"]["expirationSeconds"], 600);
}

#[tokio::test]
async fn token_request_errors_are_statuses() {
    let e = env().await;
    create_sa(&e.app, "default", "agent").await;

    let (code, v) = token_request(&e.app, "default", "missing", json!({})).await;
    assert_eq!(code, 404, "{v}");
    assert_eq!(v["reason"], "NotFound");
    assert_eq!(v["message"], "serviceaccounts \"missing\" not found");

    let (code, v) =
        token_request(&e.app, "default", "agent", json!({"expirationSeconds": 60})).await;
    assert_eq!(code, 422, "{v}");
    assert_eq!(v["reason"], "Invalid");
    assert_eq!(
        v["details"]["causes"][0]["field"], "spec.expirationSeconds",
        "{v}"
    );
    assert!(
        v["message"]
            .as_str()
            .unwrap_or_default()
            .contains("may not specify a duration less than 10 minutes"),
        "{v}"
    );

    let (code, v) = token_request(
        &e.app,
        "default",
        "agent",
        json!({"expirationSeconds": "soon"}),
    )
    .await;
    assert_eq!(code, 422, "{v}");

    let (code, v) = token_request(
        &e.app,
        "default",
        "agent",
        json!({"boundObjectRef": {"kind": "Secret", "apiVersion": "v1", "name": "nope"}}),
    )
    .await;
    assert_eq!(code, 404, "{v}");

    let (code, v) = token_request(
        &e.app,
        "default",
        "agent",
        json!({"boundObjectRef": {"kind": "ConfigMap", "apiVersion": "v1", "name": "x"}}),
    )
    .await;
    assert_eq!(code, 400, "{v}");

    let (code, v) = call(
        &e.app,
        ADMIN,
        "POST",
        "/api/v1/namespaces/default/serviceaccounts/agent/token",
        json!({"kind": "ConfigMap", "apiVersion": "v1"}),
    )
    .await;
    assert_eq!(code, 400, "{v}");

    let (code, v) = call(
        &e.app,
        ADMIN,
        "GET",
        "/api/v1/namespaces/default/serviceaccounts/agent/token",
        Value::Null,
    )
    .await;
    assert_eq!(code, 405, "{v}");
    // Other kinds have no token subresource.
    let (code, v) = call(
        &e.app,
        ADMIN,
        "POST",
        "/api/v1/namespaces/default/configmaps/x/token",
        json!({}),
    )
    .await;
    assert_eq!(code, 404, "{v}");

    // Without credentials the subresource is 401 like everything else.
    let (code, v) = call(
        &e.app,
        "",
        "POST",
        "/api/v1/namespaces/default/serviceaccounts/agent/token",
        json!({}),
    )
    .await;
    assert_unauthorized(code, &v);
}

#[tokio::test]
async fn deleting_or_recreating_the_service_account_revokes() {
    let e = env().await;
    create_sa(&e.app, "kube-system", "agent").await;
    let token = issue(&e.app, "kube-system", "agent").await;
    assert_eq!(whoami(&e.app, &token).await.0, 201);
    // Writes to other objects, of its kind or another, leave it valid (and its cached check).
    create_sa(&e.app, "kube-system", "other").await;
    assert_eq!(whoami(&e.app, &token).await.0, 201);
    assert_eq!(whoami(&e.app, &token).await.0, 201);

    delete(
        &e.app,
        "/api/v1/namespaces/kube-system/serviceaccounts/agent",
    )
    .await;
    let (code, v) = whoami(&e.app, &token).await;
    assert_unauthorized(code, &v);

    // Same name, new uid: the old token stays dead; a new one works.
    create_sa(&e.app, "kube-system", "agent").await;
    let (code, v) = whoami(&e.app, &token).await;
    assert_unauthorized(code, &v);
    let fresh = issue(&e.app, "kube-system", "agent").await;
    assert_eq!(whoami(&e.app, &fresh).await.0, 201);
}

#[tokio::test]
async fn expired_wrong_audience_tampered_and_malformed_tokens_are_401() {
    let e = env().await;
    let uid = create_sa(&e.app, "default", "agent").await;
    let issuer = e.srv.service_account_config().issuer.clone();
    let sa = ServiceAccountRef {
        namespace: "default".into(),
        name: "agent".into(),
        uid,
    };
    // The key in the data dir is the one the server signs with.
    let key = SigningKey::load_or_create(&e.key_dir).expect("key from the data dir");
    let now = jiff::Timestamp::now().as_second();
    let auds = vec![issuer.clone()];
    let good = key
        .sign_bound(&issuer, &sa, &auds, now, 3600, None)
        .expect("sign");
    assert_eq!(whoami(&e.app, &good).await.0, 201);

    let expired = key
        .sign_bound(&issuer, &sa, &auds, now - 7200, 3600, None)
        .expect("sign");
    let wrong_aud = key
        .sign_bound(&issuer, &sa, &["https://elsewhere".into()], now, 3600, None)
        .expect("sign");
    let wrong_issuer = key
        .sign_bound("https://evil", &sa, &auds, now, 3600, None)
        .expect("sign");
    let foreign = SigningKey::generate()
        .expect("key")
        .sign_bound(&issuer, &sa, &auds, now, 3600, None)
        .expect("sign");
    let parts: Vec<&str> = good.split('.').collect();
    let tampered_sig = format!(
        "{}.{}.{}",
        parts[0],
        parts[1],
        parts[2].chars().rev().collect::<String>()
    );
    // A payload naming someone else, re-using the good signature.
    use base64::Engine;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let mut payload: Value =
        serde_json::from_slice(&b64.decode(parts[1]).expect("b64")).expect("json");
    payload["sub"] = json!("system:serviceaccount:kube-system:admin");
    let tampered_payload = format!(
        "{}.{}.{}",
        parts[0],
        b64.encode(payload.to_string()),
        parts[2]
    );
    for (what, t) in [
        ("expired", expired.as_str()),
        ("wrong audience", &wrong_aud),
        ("wrong issuer", &wrong_issuer),
        ("foreign key", &foreign),
        ("tampered signature", &tampered_sig),
        ("tampered payload", &tampered_payload),
        ("three garbage parts", "a.b.c"),
        ("not a jwt", "definitely-not-a-token"),
        ("dots only", ".."),
        ("unicode", "é.ü.ß"),
    ] {
        let (code, v) = whoami(&e.app, t).await;
        assert_eq!(code, 401, "{what}: {v}");
        assert_eq!(v["reason"], "Unauthorized", "{what}: {v}");
    }
    // The server keeps serving.
    assert_eq!(whoami(&e.app, &good).await.0, 201);
    assert_eq!(whoami(&e.app, ADMIN).await.0, 201);
}

#[tokio::test]
async fn legacy_token_secret_is_filled_and_follows_its_objects() {
    let e = env().await;
    let sa_uid = create_sa(&e.app, "default", "agent").await;
    let secret = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "agent-token", "annotations": {"kubernetes.io/service-account.name": "agent"}},
        "type": "kubernetes.io/service-account-token",
    });
    let (code, v) = call(
        &e.app,
        ADMIN,
        "POST",
        "/api/v1/namespaces/default/secrets",
        secret.clone(),
    )
    .await;
    assert_eq!(code, 201, "{v}");
    let get = |app: Router| async move {
        call(
            &app,
            ADMIN,
            "GET",
            "/api/v1/namespaces/default/secrets/agent-token",
            Value::Null,
        )
        .await
    };
    let filled = poll(|| {
        let app = e.app.clone();
        async move { get(app).await.1["data"]["token"].is_string() }
    })
    .await;
    assert!(
        filled,
        "token Secret was never filled: {}",
        get(e.app.clone()).await.1
    );
    let (_, s) = get(e.app.clone()).await;
    use base64::Engine;
    let dec = |v: &Value| {
        String::from_utf8(
            base64::engine::general_purpose::STANDARD
                .decode(v.as_str().unwrap_or_default())
                .unwrap_or_default(),
        )
        .unwrap_or_default()
    };
    assert_eq!(dec(&s["data"]["namespace"]), "default");
    assert_eq!(
        dec(&s["data"]["ca.crt"]),
        "-----BEGIN CERTIFICATE-----\ntest\n"
    );
    assert_eq!(
        s["metadata"]["annotations"]["kubernetes.io/service-account.uid"],
        json!(sa_uid)
    );
    let token = dec(&s["data"]["token"]);
    let (code, who) = whoami(&e.app, &token).await;
    assert_eq!(code, 201, "{who}");
    assert_eq!(
        who["status"]["userInfo"]["username"],
        "system:serviceaccount:default:agent"
    );

    // Deleting the Secret revokes its token; a recreated Secret gets a new token.
    delete(&e.app, "/api/v1/namespaces/default/secrets/agent-token").await;
    let (code, v) = whoami(&e.app, &token).await;
    assert_unauthorized(code, &v);
    let (code, v) = call(
        &e.app,
        ADMIN,
        "POST",
        "/api/v1/namespaces/default/secrets",
        secret,
    )
    .await;
    assert_eq!(code, 201, "{v}");
    let refilled = poll(|| {
        let app = e.app.clone();
        async move { get(app).await.1["data"]["token"].is_string() }
    })
    .await;
    assert!(refilled);
    let new_token = dec(&get(e.app.clone()).await.1["data"]["token"]);
    assert_ne!(new_token, token);
    assert_unauthorized(
        whoami(&e.app, &token).await.0,
        &whoami(&e.app, &token).await.1,
    );
    assert_eq!(whoami(&e.app, &new_token).await.0, 201);

    // Deleting the ServiceAccount deletes its token Secrets and revokes their tokens.
    delete(&e.app, "/api/v1/namespaces/default/serviceaccounts/agent").await;
    assert_eq!(whoami(&e.app, &new_token).await.0, 401);
    let gone = poll(|| {
        let app = e.app.clone();
        async move { get(app).await.0 == 404 }
    })
    .await;
    assert!(gone, "token Secret outlived its ServiceAccount");
}

#[tokio::test]
async fn token_secret_for_missing_account_is_deleted_and_annotation_is_required() {
    let e = env().await;
    let (code, v) = call(
        &e.app,
        ADMIN,
        "POST",
        "/api/v1/namespaces/default/secrets",
        json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "orphan", "annotations": {"kubernetes.io/service-account.name": "nobody"}},
            "type": "kubernetes.io/service-account-token",
        }),
    )
    .await;
    assert_eq!(code, 201, "{v}");
    let gone = poll(|| {
        let app = e.app.clone();
        async move {
            call(
                &app,
                ADMIN,
                "GET",
                "/api/v1/namespaces/default/secrets/orphan",
                Value::Null,
            )
            .await
            .0 == 404
        }
    })
    .await;
    assert!(
        gone,
        "a token Secret naming a missing ServiceAccount is deleted"
    );

    let (code, v) = call(
        &e.app,
        ADMIN,
        "POST",
        "/api/v1/namespaces/default/secrets",
        json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "anonymous"},
            "type": "kubernetes.io/service-account-token",
        }),
    )
    .await;
    assert_eq!(code, 422, "{v}");
    assert_eq!(
        v["details"]["causes"][0]["field"],
        "metadata.annotations[kubernetes.io/service-account.name]"
    );

    // Other Secrets are left alone.
    let (code, v) = call(
        &e.app,
        ADMIN,
        "POST",
        "/api/v1/namespaces/default/secrets",
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "plain"}, "stringData": {"a": "b"}}),
    )
    .await;
    assert_eq!(code, 201, "{v}");
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let (code, v) = call(
        &e.app,
        ADMIN,
        "GET",
        "/api/v1/namespaces/default/secrets/plain",
        Value::Null,
    )
    .await;
    assert_eq!(code, 200, "{v}");
    assert!(v["data"].get("token").is_none(), "{v}");
}

#[tokio::test]
async fn secret_bound_token_dies_with_its_secret() {
    let e = env().await;
    create_sa(&e.app, "default", "agent").await;
    let (code, s) = call(
        &e.app,
        ADMIN,
        "POST",
        "/api/v1/namespaces/default/secrets",
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "anchor"}}),
    )
    .await;
    assert_eq!(code, 201, "{s}");
    let uid = s["metadata"]["uid"].as_str().unwrap_or_default();
    let (code, v) = token_request(
        &e.app,
        "default",
        "agent",
        json!({"boundObjectRef": {"kind": "Secret", "apiVersion": "v1", "name": "anchor", "uid": "stale"}}),
    )
    .await;
    assert_eq!(code, 409, "{v}");
    let (code, v) = token_request(
        &e.app,
        "default",
        "agent",
        json!({"boundObjectRef": {"kind": "Secret", "apiVersion": "v1", "name": "anchor"}}),
    )
    .await;
    assert_eq!(code, 201, "{v}");
    assert_eq!(v["spec"]["boundObjectRef"]["uid"], json!(uid));
    let token = v["status"]["token"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert_eq!(whoami(&e.app, &token).await.0, 201);
    delete(&e.app, "/api/v1/namespaces/default/secrets/anchor").await;
    assert_eq!(whoami(&e.app, &token).await.0, 401);
}

#[tokio::test]
async fn token_review_runs_every_authenticator() {
    let e = env().await;
    create_sa(&e.app, "default", "agent").await;
    let token = issue(&e.app, "default", "agent").await;
    let review = |t: &str, auds: Value| json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": t, "audiences": auds}});
    let path = "/apis/authentication.k8s.io/v1/tokenreviews";
    let (code, v) = call(&e.app, ADMIN, "POST", path, review(&token, Value::Null)).await;
    assert_eq!(code, 201, "{v}");
    assert_eq!(v["kind"], "TokenReview");
    assert_eq!(v["status"]["authenticated"], true, "{v}");
    assert_eq!(
        v["status"]["user"]["username"],
        "system:serviceaccount:default:agent"
    );
    let (_, v) = call(&e.app, ADMIN, "POST", path, review(ADMIN, Value::Null)).await;
    assert_eq!(v["status"]["user"]["username"], "admin", "{v}");
    let (_, v) = call(&e.app, ADMIN, "POST", path, review("x.y.z", Value::Null)).await;
    assert_eq!(v["status"]["authenticated"], false, "{v}");
    assert!(v["status"]["error"].is_string(), "{v}");

    // Audience-bound: valid only for the audiences it names.
    let (_, tr) = token_request(
        &e.app,
        "default",
        "agent",
        json!({"audiences": ["https://vault.example"]}),
    )
    .await;
    let custom = tr["status"]["token"].as_str().unwrap_or_default();
    let (_, v) = call(
        &e.app,
        ADMIN,
        "POST",
        path,
        review(custom, json!(["https://vault.example"])),
    )
    .await;
    assert_eq!(v["status"]["authenticated"], true, "{v}");
    assert_eq!(v["status"]["audiences"], json!(["https://vault.example"]));
    let (_, v) = call(&e.app, ADMIN, "POST", path, review(custom, Value::Null)).await;
    assert_eq!(v["status"]["authenticated"], false, "{v}");
    assert_eq!(whoami(&e.app, custom).await.0, 401);

    let (code, v) = call(
        &e.app,
        ADMIN,
        "POST",
        path,
        json!({"kind": "TokenReview", "spec": {}}),
    )
    .await;
    assert_eq!(code, 400, "{v}");
    let (code, _) = call(&e.app, ADMIN, "GET", path, Value::Null).await;
    assert_eq!(code, 405);
    // Never stored: nothing to list or get.
    let (code, _) = call(&e.app, ADMIN, "GET", &format!("{path}/x"), Value::Null).await;
    assert_eq!(code, 404);
}

#[tokio::test]
async fn discovery_lists_the_token_subresource_and_review_resources() {
    let e = env().await;
    let (code, v) = call(&e.app, ADMIN, "GET", "/api/v1", Value::Null).await;
    assert_eq!(code, 200);
    let tok = v["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| r["name"] == "serviceaccounts/token")
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(tok["verbs"], json!(["create"]), "{v}");
    assert_eq!(tok["kind"], "TokenRequest");
    assert_eq!(tok["group"], "authentication.k8s.io");

    let (_, v) = call(&e.app, ADMIN, "GET", "/apis", Value::Null).await;
    assert!(
        v["groups"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|g| g["name"] == "authentication.k8s.io"),
        "{v}"
    );
    let (code, v) = call(
        &e.app,
        ADMIN,
        "GET",
        "/apis/authentication.k8s.io/v1",
        Value::Null,
    )
    .await;
    assert_eq!(code, 200, "{v}");
    let names: Vec<&str> = v["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert_eq!(names, ["selfsubjectreviews", "tokenreviews"]);
    let (code, _) = call(
        &e.app,
        ADMIN,
        "GET",
        "/apis/authentication.k8s.io",
        Value::Null,
    )
    .await;
    assert_eq!(code, 200);
}

#[tokio::test]
async fn tokens_survive_a_restart_with_the_same_data_dir() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = StoreConfig::file(dir.path().join("store.db"));
    let token = {
        let (srv, app) = start_in(dir.path(), store.clone()).await;
        create_sa(&app, "default", "agent").await;
        let t = issue(&app, "default", "agent").await;
        srv.shutdown();
        t
    };
    // Let the closed store's writer finish.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let (_srv, app) = start_in(dir.path(), store).await;
    let (code, v) = whoami(&app, &token).await;
    assert_eq!(code, 201, "{v}");
    // An in-memory server (no key dir) has its own key: the token is foreign there.
    let other = ApiServer::new(ApiServerConfig::in_memory())
        .await
        .expect("server");
    let auth = Authenticator::default().with_verifier(other.service_account_authenticator());
    assert!(auth.authenticate_token(&token).is_none());
}

#[test]
fn arbitrary_bearer_strings_never_panic() {
    use proptest::prelude::*;
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let srv = rt
        .block_on(ApiServer::new(ApiServerConfig::in_memory()))
        .expect("server");
    let auth =
        Arc::new(Authenticator::default().with_verifier(srv.service_account_authenticator()));
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(256));
    runner
        .run(
            &(
                "[A-Za-z0-9_\\-]{0,40}",
                "[A-Za-z0-9_\\-=]{0,200}",
                ".{0,60}",
            ),
            |(a, b, c)| {
                for t in [format!("{a}.{b}.{c}"), format!("{a}.{b}"), c.clone()] {
                    prop_assert!(auth.authenticate_token(&t).is_none());
                }
                Ok(())
            },
        )
        .expect("no token is accepted and nothing panics");
}

#[tokio::test]
async fn every_namespace_gets_a_default_service_account() {
    let e = env().await;
    let get_default = |app: Router, ns: &'static str| async move {
        call(
            &app,
            ADMIN,
            "GET",
            &format!("/api/v1/namespaces/{ns}/serviceaccounts/default"),
            Value::Null,
        )
        .await
    };
    let present = |ns: &'static str| {
        let app = e.app.clone();
        move || {
            let app = app.clone();
            async move { get_default(app, ns).await.0 == 200 }
        }
    };
    assert!(poll(present("default")).await, "bootstrap namespace");
    let (code, v) = call(
        &e.app,
        ADMIN,
        "POST",
        "/api/v1/namespaces",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fresh"}}),
    )
    .await;
    assert_eq!(code, 201, "{v}");
    assert!(poll(present("fresh")).await, "new namespace");
    let token = issue(&e.app, "fresh", "default").await;
    assert_eq!(whoami(&e.app, &token).await.0, 201);

    // Deleted: recreated with a new uid; the old token is revoked.
    let old_uid = get_default(e.app.clone(), "fresh").await.1["metadata"]["uid"].clone();
    delete(&e.app, "/api/v1/namespaces/fresh/serviceaccounts/default").await;
    let recreated = poll(|| {
        let app = e.app.clone();
        let old_uid = old_uid.clone();
        async move {
            let (code, v) = get_default(app, "fresh").await;
            code == 200 && v["metadata"]["uid"] != old_uid
        }
    })
    .await;
    assert!(recreated, "default ServiceAccount recreated");
    assert_eq!(whoami(&e.app, &token).await.0, 401);

    // A deleted namespace still goes away (its default account is not recreated).
    delete(&e.app, "/api/v1/namespaces/fresh").await;
    let gone = poll(|| {
        let app = e.app.clone();
        async move {
            call(&app, ADMIN, "GET", "/api/v1/namespaces/fresh", Value::Null)
                .await
                .0
                == 404
        }
    })
    .await;
    assert!(gone, "namespace finalization completes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_service_account_with_a_file_store() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_srv, app) = start_in(dir.path(), StoreConfig::file(dir.path().join("store.db"))).await;
    let present = poll(|| {
        let app = app.clone();
        async move {
            call(
                &app,
                ADMIN,
                "GET",
                "/api/v1/namespaces/default/serviceaccounts/default",
                Value::Null,
            )
            .await
            .0 == 200
        }
    })
    .await;
    assert!(present, "default ServiceAccount with a file-backed store");
}
