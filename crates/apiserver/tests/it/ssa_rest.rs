//! Server-side apply over HTTP: option validation, malformed bodies (always a 4xx Status, never a
//! panic or 5xx), field managers derived from the User-Agent, and status-subresource entries.

use crate::rest_common as common;

use axum::Router;
use axum::body::Body;
use axum::http::Request;
use proptest::prelude::*;
use serde_json::{Value, json};

const APPLY: &str = "application/apply-patch+yaml";
const DEPLOYS: &str = "/apis/apps/v1/namespaces/default/deployments";

async fn send(
    router: &Router,
    method: &str,
    uri: &str,
    ct: &str,
    ua: &str,
    body: &str,
) -> (u16, Value) {
    let req = Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", ct)
        .header("user-agent", ua)
        .body(Body::from(body.to_string()))
        .expect("request");
    let (code, bytes) = common::send(router, req).await;
    (code, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

fn deployment(name: &str, replicas: i64) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "x"}},
            "template": {"metadata": {"labels": {"app": "x"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]}}}})
}

fn entry<'a>(obj: &'a Value, manager: &str) -> &'a Value {
    obj["metadata"]["managedFields"]
        .as_array()
        .and_then(|a| a.iter().find(|e| e["manager"] == manager))
        .unwrap_or(&Value::Null)
}

#[tokio::test]
async fn apply_options_and_malformed_bodies_are_4xx() {
    let srv = common::server().await;
    let r = srv.router();
    let uri = format!("{DEPLOYS}/d");
    let body = deployment("d", 1).to_string();
    let (code, st) = send(&r, "PATCH", &uri, APPLY, "curl/8", &body).await;
    assert_eq!(code, 422, "{st}");
    assert_eq!(st["reason"], "Invalid");
    assert_eq!(
        st["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
    );
    let with_mgr = format!("{uri}?fieldManager=m");
    for (bad, want) in [
        ("[1, 2]", 400),
        ("just a string", 400),
        ("{not yaml: [", 400),
        ("null", 400),
        (r#"{"apiVersion": "apps/v1", "kind": "Deployment"}"#, 422),
        (
            r#"{"apiVersion": "apps/v2", "kind": "Deployment", "metadata": {"name": "d"}}"#,
            400,
        ),
        (
            r#"{"apiVersion": "apps/v1", "metadata": {"name": "d"}}"#,
            400,
        ),
        (
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "other"}}"#,
            400,
        ),
        (
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": ["d"]}"#,
            400,
        ),
        (
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "managedFields": [{}]}}"#,
            400,
        ),
        (
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": "c"}}}}"#,
            422,
        ),
        (
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [{"name": "c"}, {"name": "c"}]}}}}"#,
            422,
        ),
    ] {
        let (code, st) = send(&r, "PATCH", &with_mgr, APPLY, "curl/8", bad).await;
        assert_eq!(code, want, "{bad}: {st}");
        assert_eq!(st["kind"], "Status", "{bad}");
    }
    // A long manager name is refused; force on a non-apply patch too.
    let long = format!("{uri}?fieldManager={}", "m".repeat(129));
    let (code, st) = send(&r, "PATCH", &long, APPLY, "curl/8", &body).await;
    assert_eq!(code, 422, "{st}");
    let (code, _) = send(&r, "PATCH", &with_mgr, APPLY, "curl/8", &body).await;
    assert_eq!(code, 201);
    let forced = format!("{uri}?force=true");
    let (code, st) = send(
        &r,
        "PATCH",
        &forced,
        "application/merge-patch+json",
        "curl/8",
        "{}",
    )
    .await;
    assert_eq!(code, 422, "{st}");
}

#[tokio::test]
async fn managers_come_from_field_manager_or_user_agent() {
    let srv = common::server().await;
    let r = srv.router();
    let body = deployment("d", 1).to_string();
    let (code, created) = send(
        &r,
        "POST",
        DEPLOYS,
        "application/json",
        "Mozilla/5.0 (X11; Linux x86_64)",
        &body,
    )
    .await;
    assert_eq!(code, 201, "{created}");
    let e = entry(&created, "Mozilla");
    assert_eq!(e["operation"], "Update");
    assert_eq!(e["fieldsV1"]["f:spec"]["f:replicas"], json!({}));
    let (code, patched) = send(
        &r,
        "PATCH",
        &format!("{DEPLOYS}/d?fieldManager=scaler"),
        "application/merge-patch+json",
        "kubectl/v1.33.0",
        r#"{"spec": {"replicas": 3}}"#,
    )
    .await;
    assert_eq!(code, 200, "{patched}");
    assert_eq!(
        entry(&patched, "scaler")["fieldsV1"],
        json!({"f:spec": {"f:replicas": {}}})
    );
    assert!(
        entry(&patched, "Mozilla")["fieldsV1"]["f:spec"]
            .get("f:replicas")
            .is_none()
    );

    // Applying replicas now conflicts with the updater, named with its apiVersion.
    let (code, st) = send(
        &r,
        "PATCH",
        &format!("{DEPLOYS}/d?fieldManager=applier"),
        APPLY,
        "kubectl/v1.33.0",
        &deployment("d", 5).to_string(),
    )
    .await;
    assert_eq!(code, 409, "{st}");
    assert_eq!(st["reason"], "Conflict");
    assert_eq!(
        st["details"]["causes"][0],
        json!({"reason": "FieldManagerConflict", "message": "conflict with \"scaler\" using apps/v1", "field": ".spec.replicas"})
    );

    // So does a scale write, on the object's own fields.
    let (code, st) = send(
        &r,
        "PATCH",
        &format!("{DEPLOYS}/d/scale?fieldManager=hpa"),
        "application/merge-patch+json",
        "x",
        r#"{"spec": {"replicas": 4}}"#,
    )
    .await;
    assert_eq!(code, 200, "{st}");
    let (_, obj) = send(
        &r,
        "GET",
        &format!("{DEPLOYS}/d"),
        "application/json",
        "x",
        "",
    )
    .await;
    let e = entry(&obj, "hpa");
    assert_eq!(e["subresource"], "scale");
    assert_eq!(e["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
    assert!(
        entry(&obj, "scaler").is_null(),
        "scaler lost its only field"
    );
    let patched = obj;

    // A status write records the subresource.
    let mut with_status = patched.clone();
    with_status["status"] = json!({"replicas": 3});
    let (code, st) = send(
        &r,
        "PUT",
        &format!("{DEPLOYS}/d/status"),
        "application/json",
        "controller/1.0",
        &with_status.to_string(),
    )
    .await;
    assert_eq!(code, 200, "{st}");
    let e = entry(&st, "controller");
    assert_eq!(e["subresource"], "status");
    assert_eq!(e["fieldsV1"], json!({"f:status": {"f:replicas": {}}}));
    // A status apply too, with operation Apply.
    let (code, st) = send(
        &r,
        "PATCH",
        &format!("{DEPLOYS}/d/status?fieldManager=ctl&force=true"),
        APPLY,
        "x",
        r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "status": {"readyReplicas": 1}}"#,
    )
    .await;
    assert_eq!(code, 200, "{st}");
    assert_eq!(st["status"]["readyReplicas"], 1);
    let e = entry(&st, "ctl");
    assert_eq!(
        (e["operation"].as_str(), e["subresource"].as_str()),
        (Some("Apply"), Some("status"))
    );
    assert_eq!(e["fieldsV1"], json!({"f:status": {"f:readyReplicas": {}}}));
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i32>().prop_map(Value::from),
        "[a-z]{0,4}".prop_map(Value::from),
    ];
    leaf.prop_recursive(5, 40, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map(
                prop_oneof![
                    Just("name".to_string()),
                    Just("containers".to_string()),
                    Just("env".to_string()),
                    Just("ports".to_string()),
                    Just("template".to_string()),
                    Just("spec".to_string()),
                    Just("labels".to_string()),
                    Just("finalizers".to_string()),
                    "[a-z]{1,3}"
                ],
                inner,
                0..4
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    /// Any apply body, against an existing object or none, is answered with a 2xx or a 4xx Status.
    #[test]
    fn random_apply_bodies_never_5xx(spec in arb_json(), meta in arb_json(), existing in any::<bool>()) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("rt");
        rt.block_on(async {
            let srv = common::server().await;
            let r = srv.router();
            if existing {
                let (code, _) = send(&r, "POST", DEPLOYS, "application/json", "t", &deployment("d", 1).to_string()).await;
                assert_eq!(code, 201);
            }
            let mut body = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": spec});
            if existing && body["metadata"].is_object() {
                body["metadata"]["name"] = json!("d");
            }
            let (code, st) = send(&r, "PATCH", &format!("{DEPLOYS}/d?fieldManager=p"), APPLY, "t", &body.to_string()).await;
            assert!(code < 500, "{code} {st} for {body}");
            if code >= 400 {
                assert_eq!(st["kind"], "Status");
            }
        });
    }
}
