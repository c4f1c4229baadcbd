//! CRUD, patch flavours, errors and bad input, driven through kube-rs and raw HTTP against the
//! in-process router.

use crate::rest_common as common;

use common::*;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"app": "demo"}},
        "data": {"a": "1"}
    }))
    .expect("configmap")
}

#[tokio::test]
async fn configmap_crud_and_conflict() {
    let srv = server().await;
    let api: Api<ConfigMap> = Api::namespaced(client(&srv), "default");
    let created = api
        .create(&PostParams::default(), &cm("demo"))
        .await
        .expect("create");
    let meta = &created.metadata;
    assert!(
        meta.uid.is_some() && meta.creation_timestamp.is_some() && meta.resource_version.is_some()
    );
    let got = api.get("demo").await.expect("get");
    assert_eq!(
        got.data
            .as_ref()
            .and_then(|d| d.get("a"))
            .map(String::as_str),
        Some("1")
    );

    // Update with the current resourceVersion works; the stale one is a 409.
    let mut upd = got.clone();
    upd.data = Some([("a".to_string(), "2".to_string())].into());
    let after = api
        .replace("demo", &PostParams::default(), &upd)
        .await
        .expect("replace");
    assert_ne!(
        after.metadata.resource_version,
        got.metadata.resource_version
    );
    let err = api
        .replace("demo", &PostParams::default(), &upd)
        .await
        .expect_err("stale");
    match err {
        kube::Error::Api(s) => {
            assert_eq!(s.code, 409);
            assert_eq!(s.reason, "Conflict");
        }
        other => panic!("unexpected {other:?}"),
    }

    // Create again: AlreadyExists.
    let err = api
        .create(&PostParams::default(), &cm("demo"))
        .await
        .expect_err("exists");
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 409 && s.reason == "AlreadyExists"),
        "{err:?}"
    );

    // Patches: merge, JSON, strategic.
    let p = api
        .patch(
            "demo",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"b": "x"}})),
        )
        .await
        .expect("merge patch");
    assert_eq!(p.data.as_ref().map(|d| d.len()), Some(2));
    let jp: json_patch::Patch =
        serde_json::from_value(json!([{"op": "replace", "path": "/data/b", "value": "y"}]))
            .unwrap();
    let p = api
        .patch("demo", &PatchParams::default(), &Patch::<()>::Json(jp))
        .await
        .expect("json patch");
    assert_eq!(
        p.data.as_ref().and_then(|d| d.get("b")).map(String::as_str),
        Some("y")
    );
    let p = api
        .patch(
            "demo",
            &PatchParams::default(),
            &Patch::Strategic(json!({"metadata": {"labels": {"extra": "1"}}})),
        )
        .await
        .expect("smp");
    assert_eq!(p.metadata.labels.as_ref().map(|l| l.len()), Some(2));

    // Server-side apply creates and updates, and records managedFields.
    let ssa = PatchParams::apply("tester").force();
    let applied = api
        .patch("applied", &ssa, &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}, "data": {"k": "v"}})))
        .await
        .expect("apply create");
    assert!(applied.metadata.managed_fields.is_some());
    let applied = api
        .patch("applied", &ssa, &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}, "data": {"k": "w"}})))
        .await
        .expect("apply update");
    assert_eq!(
        applied
            .data
            .as_ref()
            .and_then(|d| d.get("k"))
            .map(String::as_str),
        Some("w")
    );

    // Lists with label selectors.
    let l = api
        .list(&ListParams::default().labels("app=demo"))
        .await
        .expect("list");
    assert_eq!(l.items.len(), 1);
    let l = api
        .list(&ListParams::default().labels("app notin (demo)"))
        .await
        .expect("list");
    assert_eq!(l.items.len(), 1, "only `applied` lacks app=demo");
    let l = api
        .list(&ListParams::default().labels("app!=demo"))
        .await
        .expect("list");
    assert_eq!(
        l.items.len(),
        1,
        "`!=` matches the object without the label"
    );
    let l = api
        .list(&ListParams::default().labels("app=demo,app!=demo"))
        .await
        .expect("list");
    assert!(l.items.is_empty());
    let l = api
        .list(&ListParams::default().labels("app=nobody-has-it-yet"))
        .await
        .expect("list");
    assert!(l.items.is_empty());
    // A value asked for while no object had it is found once an object has it (label pairs are
    // shared process-wide; a selector must not depend on which object made a pair first).
    api.patch(
        "applied",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"app": "nobody-has-it-yet"}}})),
    )
    .await
    .expect("label");
    let l = api
        .list(&ListParams::default().labels("app=nobody-has-it-yet"))
        .await
        .expect("list");
    assert_eq!(l.items.len(), 1);
    let l = api
        .list(&ListParams::default().fields("metadata.name=applied"))
        .await
        .expect("list");
    assert_eq!(l.items.len(), 1);

    api.delete("demo", &DeleteParams::default())
        .await
        .expect("delete");
    let err = api.get("demo").await.expect_err("gone");
    assert!(matches!(err, kube::Error::Api(ref s) if s.code == 404 && s.reason == "NotFound"));
}

#[tokio::test]
async fn generation_generate_name_and_status() {
    let srv = server().await;
    let api: Api<Deployment> = Api::namespaced(client(&srv), "default");
    let d: Deployment = serde_json::from_value(json!({
        "metadata": {"generateName": "web-"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
    }))
    .unwrap();
    let created = api
        .create(&PostParams::default(), &d)
        .await
        .expect("create");
    let name = created.metadata.name.clone().expect("generated name");
    assert!(name.starts_with("web-") && name.len() == 9, "{name}");
    assert_eq!(created.metadata.generation, Some(1));

    // Label change: no generation bump. Spec change: bump.
    let p = api
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})),
        )
        .await
        .unwrap();
    assert_eq!(p.metadata.generation, Some(1));
    let p = api
        .patch(&name, &PatchParams::default(), &Patch::Strategic(json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}})))
        .await
        .unwrap();
    assert_eq!(p.metadata.generation, Some(2));
    let containers = &p
        .spec
        .as_ref()
        .unwrap()
        .template
        .spec
        .as_ref()
        .unwrap()
        .containers;
    assert_eq!(
        containers.len(),
        1,
        "strategic merge keeps one container keyed by name"
    );

    // Status goes through /status only, and does not bump generation.
    let p = api
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"replicas": 5}})),
        )
        .await
        .unwrap();
    assert!(
        p.status.as_ref().and_then(|s| s.replicas).is_none(),
        "status ignored on main resource"
    );
    let p = api
        .patch_status(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"replicas": 5}})),
        )
        .await
        .unwrap();
    assert_eq!(p.status.as_ref().and_then(|s| s.replicas), Some(5));
    assert_eq!(p.metadata.generation, Some(2));

    // Scale subresource.
    let s = api.get_scale(&name).await.expect("scale");
    assert_eq!(s.spec.as_ref().and_then(|s| s.replicas), Some(1));
    let s = api
        .patch_scale(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .expect("patch scale");
    assert_eq!(s.spec.as_ref().and_then(|s| s.replicas), Some(3));
    assert_eq!(
        api.get(&name).await.unwrap().spec.unwrap().replicas,
        Some(3)
    );
}

#[tokio::test]
async fn namespaces_and_secrets() {
    let srv = server().await;
    let c = client(&srv);
    let nss: Api<Namespace> = Api::all(c.clone());
    for n in ["default", "kube-system", "kube-public"] {
        let ns = nss.get(n).await.expect("system namespace");
        assert_eq!(ns.status.and_then(|s| s.phase).as_deref(), Some("Active"));
    }
    // Create in a missing namespace: 404.
    let api: Api<ConfigMap> = Api::namespaced(c.clone(), "nope");
    let err = api
        .create(&PostParams::default(), &cm("x"))
        .await
        .expect_err("missing ns");
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 404),
        "{err:?}"
    );

    // stringData becomes base64 data; field selector on type.
    let secrets: Api<Secret> = Api::namespaced(c.clone(), "default");
    let s: Secret = serde_json::from_value(
        json!({"metadata": {"name": "s"}, "type": "example.com/t", "stringData": {"k": "hello"}}),
    )
    .unwrap();
    let s = secrets
        .create(&PostParams::default(), &s)
        .await
        .expect("secret");
    assert_eq!(
        s.data.unwrap().get("k").map(|b| b.0.clone()),
        Some(b"hello".to_vec())
    );
    let l = secrets
        .list(&ListParams::default().fields("type=example.com/t"))
        .await
        .unwrap();
    assert_eq!(l.items.len(), 1);
    let l = secrets
        .list(&ListParams::default().fields("type=Opaque"))
        .await
        .unwrap();
    assert_eq!(l.items.len(), 0);
}

#[tokio::test]
async fn pagination_is_consistent() {
    let srv = server().await;
    let api: Api<ConfigMap> = Api::namespaced(client(&srv), "default");
    for i in 0..7 {
        api.create(&PostParams::default(), &cm(&format!("p{i}")))
            .await
            .unwrap();
    }
    let first = api.list(&ListParams::default().limit(3)).await.unwrap();
    assert_eq!(first.items.len(), 3);
    let token = first.metadata.continue_.clone().expect("continue");
    if let Some(r) = first.metadata.remaining_item_count {
        assert_eq!(r, 4);
    }
    // A write between pages is not visible in later pages of the same list.
    api.create(&PostParams::default(), &cm("p99"))
        .await
        .unwrap();
    let mut names: Vec<String> = first
        .items
        .iter()
        .filter_map(|c| c.metadata.name.clone())
        .collect();
    let mut tok = Some(token);
    while let Some(t) = tok {
        let page = api
            .list(&ListParams::default().limit(3).continue_token(&t))
            .await
            .unwrap();
        assert_eq!(
            page.metadata.resource_version,
            first.metadata.resource_version
        );
        names.extend(page.items.iter().filter_map(|c| c.metadata.name.clone()));
        tok = page.metadata.continue_.clone().filter(|s| !s.is_empty());
    }
    assert_eq!(names.len(), 7);
    assert!(!names.contains(&"p99".to_string()));
}

#[tokio::test]
async fn bad_input_gets_status_and_server_keeps_serving() {
    let srv = server().await;
    let r = srv.router();
    let base = "/api/v1/namespaces/default/configmaps";
    let json = Some("application/json");

    let (code, s) = call(&r, "POST", base, json, "{not json").await;
    assert_eq!((code, s["reason"].as_str()), (400, Some("BadRequest")));
    let (code, s) = call(&r, "POST", base, Some("application/yaml"), "a: [unclosed").await;
    assert_eq!((code, s["reason"].as_str()), (400, Some("BadRequest")));
    let (code, s) = call(
        &r,
        "POST",
        base,
        json,
        r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"}}"#,
    )
    .await;
    assert_eq!(
        (code, s["reason"].as_str()),
        (400, Some("BadRequest")),
        "kind mismatch: {s}"
    );
    let (code, s) = call(
        &r,
        "POST",
        base,
        json,
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}"#,
    )
    .await;
    assert_eq!(
        (code, s["reason"].as_str()),
        (422, Some("Invalid")),
        "missing name: {s}"
    );
    assert_eq!(s["details"]["causes"][0]["field"], "metadata.name");
    let (code, s) = call(&r, "POST", base, json, r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","labels":{"a":"not valid!"}}}"#).await;
    assert_eq!(
        (code, s["reason"].as_str()),
        (422, Some("Invalid")),
        "bad label: {s}"
    );
    let (code, s) = call(
        &r,
        "POST",
        base,
        json,
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"UPPER"}}"#,
    )
    .await;
    assert_eq!(code, 422, "{s}");
    let big = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"big"}},"data":{{"a":"{}"}}}}"#,
        "x".repeat(3 * 1024 * 1024 + 10)
    );
    let (code, s) = call(&r, "POST", base, json, &big).await;
    assert_eq!(
        (code, s["reason"].as_str()),
        (413, Some("RequestEntityTooLarge"))
    );
    let (code, s) = call(&r, "GET", "/api/v1/namespaces/default/widgets", None, "").await;
    assert_eq!((code, s["reason"].as_str()), (404, Some("NotFound")));
    let (code, s) = call(
        &r,
        "GET",
        &format!("{base}?labelSelector=a%20in%20(b"),
        None,
        "",
    )
    .await;
    assert_eq!((code, s["reason"].as_str()), (400, Some("BadRequest")));
    let (code, s) = call(
        &r,
        "GET",
        &format!("{base}?fieldSelector=spec.nope%3Dx"),
        None,
        "",
    )
    .await;
    assert_eq!((code, s["reason"].as_str()), (400, Some("BadRequest")));
    let (code, s) = call(&r, "PATCH", &format!("{base}/x"), Some("text/plain"), "{}").await;
    assert_eq!(
        (code, s["reason"].as_str()),
        (415, Some("UnsupportedMediaType"))
    );
    let (code, s) = call(&r, "PUT", base, json, "{}").await;
    assert_eq!(
        (code, s["reason"].as_str()),
        (405, Some("MethodNotAllowed"))
    );
    let (code, s) = call(&r, "GET", &format!("{base}/missing"), None, "").await;
    assert_eq!(
        (code, s["kind"].as_str(), s["reason"].as_str()),
        (404, Some("Status"), Some("NotFound"))
    );
    let (code, _) = call(
        &r,
        "GET",
        &format!("{base}?watch=true&resourceVersion=abc"),
        None,
        "",
    )
    .await;
    assert_eq!(code, 400);

    // Still serving.
    let (code, _) = call(
        &r,
        "POST",
        base,
        json,
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ok"}}"#,
    )
    .await;
    assert_eq!(code, 201);
    let (code, body) = raw(&r, "GET", "/readyz", None, vec![]).await;
    assert_eq!((code, body.as_slice()), (200, b"ok".as_slice()));
}

#[tokio::test]
async fn discovery_and_health() {
    let srv = server().await;
    let r = srv.router();
    let (code, v) = call(&r, "GET", "/version", None, "").await;
    assert_eq!((code, v["major"].as_str()), (200, Some("1")));
    let (_, v) = call(&r, "GET", "/api", None, "").await;
    assert_eq!(v["versions"][0], "v1");
    let (_, v) = call(&r, "GET", "/apis", None, "").await;
    let groups: Vec<&str> = v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|g| g["name"].as_str())
        .collect();
    for g in [
        "apps",
        "batch",
        "networking.k8s.io",
        "policy",
        "rbac.authorization.k8s.io",
        "coordination.k8s.io",
        "apiextensions.k8s.io",
        "storage.k8s.io",
        "autoscaling",
        "admissionregistration.k8s.io",
    ] {
        assert!(groups.contains(&g), "missing group {g}");
    }
    let (_, v) = call(&r, "GET", "/apis/apps/v1", None, "").await;
    let names: Vec<&str> = v["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|g| g["name"].as_str())
        .collect();
    assert!(
        names.contains(&"deployments")
            && names.contains(&"deployments/status")
            && names.contains(&"deployments/scale")
    );
    let (_, v) = call(&r, "GET", "/api/v1", None, "").await;
    let pods = v["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == "pods")
        .unwrap()
        .clone();
    assert_eq!(pods["shortNames"], json!(["po"]));
    assert_eq!(pods["namespaced"], true);
    let (code, body) = raw(&r, "GET", "/readyz?verbose", None, vec![]).await;
    assert_eq!(code, 200);
    assert!(String::from_utf8_lossy(&body).contains("readyz check passed"));
    let req = axum::http::Request::builder()
        .uri("/openapi/v2")
        .header(
            "accept",
            "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
        )
        .body(axum::body::Body::empty())
        .unwrap();
    let resp = tower::ServiceExt::oneshot(r.clone(), req).await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(
        resp.headers().get("content-type").unwrap(),
        "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    );
}

#[tokio::test]
async fn kube_system_uid_is_stable_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = fleet_apiserver::ApiServerConfig::with_store(
        fleet_apiserver::store::StoreConfig::file(dir.path().join("db.sqlite")),
    );
    let uid1 = {
        let srv = fleet_apiserver::ApiServer::new(cfg.clone()).await.unwrap();
        let nss: Api<Namespace> = Api::all(client(&srv));
        let uid = nss.get("kube-system").await.unwrap().metadata.uid.unwrap();
        srv.shutdown();
        uid
    };
    let srv = fleet_apiserver::ApiServer::new(cfg).await.unwrap();
    let nss: Api<Namespace> = Api::all(client(&srv));
    assert_eq!(
        nss.get("kube-system").await.unwrap().metadata.uid.unwrap(),
        uid1
    );
    srv.shutdown();
}

/// ConfigMaps have no `metadata.generation` on kube-apiserver (its strategy never sets one), even
/// when a client sends one; Deployments do.
#[tokio::test]
async fn configmaps_carry_no_generation() {
    let srv = server().await;
    let api: Api<ConfigMap> = Api::namespaced(client(&srv), "default");
    let mut c = cm("nogen");
    c.metadata.generation = Some(7);
    let created = api
        .create(&PostParams::default(), &c)
        .await
        .expect("create");
    assert_eq!(created.metadata.generation, None);
    let p = api
        .patch(
            "nogen",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"x": "y"}})),
        )
        .await
        .expect("patch");
    assert_eq!(p.metadata.generation, None);
}

/// Patches without a resourceVersion never fail with 409 because of a concurrent write: the
/// server derives the patched object again from the new state until its write wins (as
/// kube-apiserver does, without a bound on lost races), so 32 clients patching one object ten
/// times each all land.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_patches_without_resource_version_all_land() {
    let srv = server().await;
    let api: Api<ConfigMap> = Api::namespaced(client(&srv), "default");
    api.create(&PostParams::default(), &cm("contended"))
        .await
        .expect("create");
    let tasks: Vec<_> = (0..32)
        .map(|i| {
            let api = api.clone();
            tokio::spawn(async move {
                for n in 0..10 {
                    api.patch(
                        "contended",
                        &PatchParams::default(),
                        &Patch::Merge(
                            json!({"metadata": {"labels": {format!("l{i}"): n.to_string()}}}),
                        ),
                    )
                    .await?;
                }
                Ok::<_, kube::Error>(())
            })
        })
        .collect();
    for t in tasks {
        t.await
            .expect("task")
            .expect("patch without resourceVersion");
    }
    let labels = api
        .get("contended")
        .await
        .expect("get")
        .metadata
        .labels
        .unwrap_or_default();
    for i in 0..32 {
        assert_eq!(labels.get(&format!("l{i}")).map(String::as_str), Some("9"));
    }
}

/// Servers of one process share their route table (and their built-in resource table, and
/// their RBAC rule lists); what each one serves stays its own.
#[tokio::test]
async fn servers_in_one_process_stay_apart() {
    let (a, b) = (server().await, server().await);
    let (ra, rb) = (a.router(), b.router());
    let body = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"only-a"}}"#;
    let (code, _) = call(
        &ra,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        Some("application/json"),
        body,
    )
    .await;
    assert_eq!(code, 201);
    let path = "/api/v1/namespaces/default/configmaps/only-a";
    assert_eq!(call(&ra, "GET", path, None, "").await.0, 200);
    assert_eq!(call(&rb, "GET", path, None, "").await.0, 404);
    // A CRD served by one server is not served by the other (its resource table was copied).
    let crd = r#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
        "metadata":{"name":"widgets.example.com"},
        "spec":{"group":"example.com","scope":"Namespaced",
          "names":{"plural":"widgets","singular":"widget","kind":"Widget"},
          "versions":[{"name":"v1","served":true,"storage":true,
            "schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}"#;
    let (code, _) = call(
        &ra,
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        Some("application/json"),
        crd,
    )
    .await;
    assert_eq!(code, 201);
    let widgets = "/apis/example.com/v1/namespaces/default/widgets";
    let mut served = false;
    for _ in 0..100 {
        if call(&ra, "GET", widgets, None, "").await.0 == 200 {
            served = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(served, "the CRD is served by the server it was created on");
    assert_eq!(call(&rb, "GET", widgets, None, "").await.0, 404);
    assert_eq!(
        call(&rb, "GET", "/apis/example.com/v1", None, "").await.0,
        404
    );
    // Fixed routes answer per server too, and keep their 405.
    let (code, groups) = call(&ra, "GET", "/apis", None, "").await;
    assert_eq!(code, 200);
    assert!(groups.to_string().contains("example.com"));
    let (code, groups) = call(&rb, "GET", "/apis", None, "").await;
    assert_eq!(code, 200);
    assert!(!groups.to_string().contains("example.com"));
    assert_eq!(
        call(&rb, "POST", "/version", Some("application/json"), "{}")
            .await
            .0,
        405
    );
    // The built-in RBAC roles are there in both.
    for r in [&ra, &rb] {
        let (code, role) = call(
            r,
            "GET",
            "/apis/rbac.authorization.k8s.io/v1/clusterroles/admin",
            None,
            "",
        )
        .await;
        assert_eq!(code, 200);
        assert_eq!(role["metadata"]["name"], "admin");
    }
}

/// A store large enough to keep its objects compressed answers every read with the bytes the
/// write answered with: GET, LIST, a watch's initial events, and after a PATCH and a DELETE.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_packed_store_serves_the_json_it_was_given() {
    use fleet_apiserver::store::StoreConfig;
    use fleet_apiserver::{ApiServer, ApiServerConfig};
    let srv = ApiServer::new(ApiServerConfig::with_store(StoreConfig {
        pack_from: Some(100),
        ..StoreConfig::in_memory()
    }))
    .await
    .expect("server starts");
    let r = srv.router();
    let mut written = std::collections::BTreeMap::new();
    for i in 0..150 {
        let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("cm-{i:03}"), "namespace": "default",
                         "labels": {"app": "packed", "n": i.to_string()}},
            "data": {"config.yaml": format!("replicas: {i}\nimage: nginx:1.{i}\n")}});
        let (code, bytes) = raw(
            &r,
            "POST",
            "/api/v1/namespaces/default/configmaps",
            Some("application/json"),
            body.to_string().into_bytes(),
        )
        .await;
        assert_eq!(code, 201, "{}", String::from_utf8_lossy(&bytes));
        written.insert(format!("cm-{i:03}"), bytes);
    }
    // Every object, once a dictionary is trained and what is stored re-packed.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let (packed, all) = srv.store_packed();
        if packed == all {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{packed} of {all} packed"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    for (name, bytes) in &written {
        let uri = format!("/api/v1/namespaces/default/configmaps/{name}");
        let (code, got) = raw(&r, "GET", &uri, None, Vec::new()).await;
        assert_eq!(code, 200);
        assert_eq!(&got, bytes, "GET {name}");
    }
    let (code, list) = call(&r, "GET", "/api/v1/namespaces/default/configmaps", None, "").await;
    assert_eq!(code, 200);
    // Every object read back, parsed, equals the one written.
    let all_as_written = |objs: &[serde_json::Value], how: &str| {
        assert_eq!(objs.len(), written.len(), "{how}");
        for o in objs {
            let name = o["metadata"]["name"].as_str().expect("name");
            let want: serde_json::Value = serde_json::from_slice(&written[name]).expect("JSON");
            assert_eq!(o, &want, "{how} {name}");
        }
    };
    all_as_written(list["items"].as_array().expect("items"), "LIST");
    let (code, stream) = raw(
        &r,
        "GET",
        "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1",
        None,
        Vec::new(),
    )
    .await;
    assert_eq!(code, 200);
    let added: Vec<serde_json::Value> = stream
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice::<serde_json::Value>(l).expect("one event per line"))
        .filter(|e| e["type"] == "ADDED")
        .map(|e| e["object"].clone())
        .collect();
    all_as_written(&added, "watch");
    let (code, patched) = call(
        &r,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/cm-007",
        Some("application/merge-patch+json"),
        r#"{"data":{"extra":"1"}}"#,
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(patched["data"]["extra"], "1");
    assert_eq!(
        patched["data"]["config.yaml"],
        "replicas: 7\nimage: nginx:1.7\n"
    );
    let (_, got) = call(
        &r,
        "GET",
        "/api/v1/namespaces/default/configmaps/cm-007",
        None,
        "",
    )
    .await;
    assert_eq!(got, patched);
    let (code, gone) = call(
        &r,
        "DELETE",
        "/api/v1/namespaces/default/configmaps/cm-008",
        None,
        "",
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(
        gone["data"]["config.yaml"],
        "replicas: 8\nimage: nginx:1.8\n"
    );
}

/// Deployment `name` of namespace `default` as the server sends it, its order of fields kept.
async fn stored(c: &kube::Client, name: &str) -> serde_json::Value {
    let req = kube::core::Request::new("/apis/apps/v1/namespaces/default/deployments")
        .get(name, &Default::default())
        .expect("request");
    serde_json::from_str(&c.request_text(req).await.expect("get")).expect("json")
}

/// The object as stored, field order kept, without what every write changes (its
/// resourceVersion and what its managedFields hold) and without its status.
async fn stored_but_status(c: &kube::Client, name: &str) -> (String, serde_json::Value) {
    let mut v = stored(c, name).await;
    let status = v
        .as_object_mut()
        .and_then(|o| o.shift_remove("status"))
        .unwrap_or_default();
    if let Some(m) = v.get_mut("metadata").and_then(|m| m.as_object_mut()) {
        m.shift_remove("resourceVersion");
        // Where the managed fields are is kept, not what they hold.
        if let Some(mf) = m.get_mut("managedFields") {
            *mf = serde_json::Value::Null;
        }
    }
    (v.to_string(), status)
}

#[tokio::test]
async fn a_status_write_changes_the_status_alone_and_keeps_the_order_of_fields() {
    let srv = server().await;
    let c = client(&srv);
    let api: Api<Deployment> = Api::namespaced(c.clone(), "default");
    let d: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web", "labels": {"app": "web"}, "annotations": {"a": "1"}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
    }))
    .unwrap();
    api.create(&PostParams::default(), &d)
        .await
        .expect("create");
    let (before, _) = stored_but_status(&c, "web").await;
    // A status alone (the common case), twice: the first adds a status, the second changes it.
    for replicas in [5, 6] {
        api.patch_status(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"replicas": replicas}})),
        )
        .await
        .expect("status patch");
        let (after, status) = stored_but_status(&c, "web").await;
        assert_eq!(after, before, "only the status changed, in place");
        assert_eq!(status["replicas"], json!(replicas));
    }
    // Anything else a status write carries is dropped, labels and spec alike.
    api.patch_status(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}, "spec": {"replicas": 9}, "status": {"replicas": 7}})),
    )
    .await
    .expect("status patch");
    let (after, status) = stored_but_status(&c, "web").await;
    assert_eq!(after, before, "labels and spec are not a status write's");
    assert_eq!(status["replicas"], json!(7));
    // A read-modify-write of the whole object through /status (its resourceVersion a
    // precondition), then one that also sends other fields in an order of its own: the stored
    // order stands.
    for (replicas, reorder) in [(8, false), (9, true)] {
        let mut cur = stored(&c, "web").await;
        cur["status"]["replicas"] = json!(replicas);
        if let Some(m) = cur["metadata"].as_object_mut() {
            if reorder {
                let name = m.shift_remove("name").expect("name");
                m.insert("name".into(), name);
            } else {
                // The resourceVersion first: where a client puts it does not matter.
                let rv = m.shift_remove("resourceVersion").expect("resourceVersion");
                m.shift_insert(0, "resourceVersion".into(), rv);
            }
        }
        let body = serde_json::to_vec(&cur).expect("body");
        let req = kube::core::Request::new("/apis/apps/v1/namespaces/default/deployments")
            .replace_subresource("status", "web", &PostParams::default(), body)
            .expect("request");
        c.request::<Deployment>(req).await.expect("status replace");
        let (after, status) = stored_but_status(&c, "web").await;
        assert_eq!(
            after, before,
            "the stored order stands (reordered: {reorder})"
        );
        assert_eq!(status["replicas"], json!(replicas));
    }
}
