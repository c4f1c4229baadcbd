//! CRDs end to end with kube-rs: Established condition, discovery, structural schema (pruning,
//! defaulting, validation with a 422 listing the fields), status subresource, merge patches,
//! 415 for strategic merge on custom resources, deleting a CRD deletes its objects.

use crate::rest_common as common;

use std::time::Duration;

use common::*;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use kube::{CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "example.com",
    version = "v1",
    kind = "Widget",
    namespaced,
    status = "WidgetStatus",
    shortname = "wd"
)]
pub struct WidgetSpec {
    pub size: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
pub struct WidgetStatus {
    pub ready: bool,
}

fn crd_with_schema() -> serde_json::Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "shortNames": ["gd"]},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "required": ["size"], "properties": {
                            "size": {"type": "integer", "minimum": 1},
                            "mode": {"type": "string", "enum": ["fast", "slow"], "default": "slow"},
                            "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                        }},
                        "status": {"type": "object", "properties": {"phase": {"type": "string"}}}
                    }
                }}
            }]
        }
    })
}

#[tokio::test]
async fn derived_crd_established_and_served() {
    let srv = server().await;
    let c = client(&srv);
    let crds: Api<CustomResourceDefinition> = Api::all(c.clone());
    crds.create(&PostParams::default(), &Widget::crd())
        .await
        .expect("create crd");
    let established = await_condition(
        crds.clone(),
        "widgets.example.com",
        conditions::is_crd_established(),
    );
    tokio::time::timeout(Duration::from_secs(30), established)
        .await
        .expect("established in time")
        .expect("ok");

    let api: Api<Widget> = Api::namespaced(c.clone(), "default");
    let w = api
        .create(
            &PostParams::default(),
            &Widget::new(
                "w1",
                WidgetSpec {
                    size: 3,
                    color: None,
                },
            ),
        )
        .await
        .expect("create cr");
    assert_eq!(w.metadata.generation, Some(1));
    let w = api
        .patch_status(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"ready": true}})),
        )
        .await
        .expect("status");
    assert!(w.status.as_ref().is_some_and(|s| s.ready));
    // 3-way merge patch (what kubectl sends for CRs) bumps generation on spec change.
    let w = api
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 4}})),
        )
        .await
        .expect("merge");
    assert_eq!((w.spec.size, w.metadata.generation), (4, Some(2)));
    // Strategic merge is refused for custom resources.
    let err = api
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"size": 5}})),
        )
        .await
        .expect_err("smp on CR");
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 415),
        "{err:?}"
    );

    // Discovery shows the new group.
    let r = srv.router();
    let (_, v) = call(&r, "GET", "/apis/example.com/v1", None, "").await;
    let names: Vec<&str> = v["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|x| x["name"].as_str())
        .collect();
    assert!(
        names.contains(&"widgets") && names.contains(&"widgets/status"),
        "{names:?}"
    );
    let discovery = kube::Discovery::new(c.clone())
        .run()
        .await
        .expect("kube discovery");
    assert!(discovery.has_group("example.com"));
}

#[tokio::test]
async fn schema_prunes_defaults_and_validates() {
    let srv = server().await;
    let r = srv.router();
    let (code, v) = call(
        &r,
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        Some("application/json"),
        &crd_with_schema().to_string(),
    )
    .await;
    assert_eq!(code, 201, "{v}");
    assert_eq!(v["status"]["conditions"][1]["type"], "Established");
    let base = "/apis/example.com/v1/namespaces/default/gadgets";
    let body = json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g1"},
        "spec": {"size": 2, "junk": true, "extra": {"anything": {"goes": 1}}}, "status": {"phase": "set-on-create-ignored"}, "toplevel": 1});
    let (code, v) = call(
        &r,
        "POST",
        base,
        Some("application/json"),
        &body.to_string(),
    )
    .await;
    assert_eq!(code, 201, "{v}");
    assert_eq!(v["spec"]["mode"], "slow", "defaulted");
    assert!(v["spec"].get("junk").is_none(), "pruned");
    assert!(v.get("toplevel").is_none(), "pruned");
    assert_eq!(v["spec"]["extra"]["anything"]["goes"], 1, "preserved");
    assert!(
        v.get("status").is_none(),
        "status dropped on create with status subresource"
    );

    let bad = json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g2"}, "spec": {"size": "big", "mode": "warp"}});
    let (code, v) = call(&r, "POST", base, Some("application/json"), &bad.to_string()).await;
    assert_eq!((code, v["reason"].as_str()), (422, Some("Invalid")), "{v}");
    let fields: Vec<&str> = v["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["field"].as_str())
        .collect();
    assert!(
        fields.contains(&"spec.size") && fields.contains(&"spec.mode"),
        "{fields:?}"
    );
    let missing = json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g3"}, "spec": {}});
    let (code, v) = call(
        &r,
        "POST",
        base,
        Some("application/json"),
        &missing.to_string(),
    )
    .await;
    assert_eq!(code, 422);
    assert_eq!(v["details"]["causes"][0]["reason"], "FieldValueRequired");

    // Bad CRD: name mismatch is a 422.
    let mut bad_crd = crd_with_schema();
    bad_crd["metadata"]["name"] = json!("nope");
    let (code, _) = call(
        &r,
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        Some("application/json"),
        &bad_crd.to_string(),
    )
    .await;
    assert_eq!(code, 422);

    // Deleting the CRD deletes its objects, then stops serving it.
    let (code, _) = call(
        &r,
        "DELETE",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.example.com",
        None,
        "",
    )
    .await;
    assert_eq!(code, 200);
    let gone = eventually(|| {
        let r = r.clone();
        async move {
            let (c1, _) = call(
                &r,
                "GET",
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.example.com",
                None,
                "",
            )
            .await;
            let (c2, _) = call(
                &r,
                "GET",
                "/apis/example.com/v1/namespaces/default/gadgets",
                None,
                "",
            )
            .await;
            c1 == 404 && c2 == 404
        }
    })
    .await;
    assert!(gone, "CRD and its objects removed");
    // Re-creating it starts empty.
    let (code, _) = call(
        &r,
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        Some("application/json"),
        &crd_with_schema().to_string(),
    )
    .await;
    assert_eq!(code, 201);
    let (_, v) = call(&r, "GET", base, None, "").await;
    assert_eq!(v["items"].as_array().map(Vec::len), Some(0));
}

#[tokio::test]
async fn crds_are_served_again_after_restart() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = fleet_apiserver::ApiServerConfig::with_store(
        fleet_apiserver::store::StoreConfig::file(dir.path().join("db")),
    );
    {
        let srv = fleet_apiserver::ApiServer::new(cfg.clone()).await.unwrap();
        let crds: Api<CustomResourceDefinition> = Api::all(client(&srv));
        crds.create(&PostParams::default(), &Widget::crd())
            .await
            .unwrap();
        let api: Api<Widget> = Api::namespaced(client(&srv), "default");
        api.create(
            &PostParams::default(),
            &Widget::new(
                "keep",
                WidgetSpec {
                    size: 1,
                    color: None,
                },
            ),
        )
        .await
        .unwrap();
        srv.shutdown();
    }
    let srv = fleet_apiserver::ApiServer::new(cfg).await.unwrap();
    let api: Api<Widget> = Api::namespaced(client(&srv), "default");
    assert_eq!(api.get("keep").await.unwrap().spec.size, 1);
    api.delete("keep", &DeleteParams::default()).await.unwrap();
    srv.shutdown();
}

/// kube-apiserver refuses new objects of a CRD that is being deleted; the server remembers the
/// answer per CRD revision (every create asks), so the refusal must follow the CRD's changes.
#[tokio::test]
async fn create_refused_while_crd_terminating() {
    let srv = server().await;
    let c = client(&srv);
    let crds: Api<CustomResourceDefinition> = Api::all(c.clone());
    let mut crd = Widget::crd();
    crd.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    crds.create(&PostParams::default(), &crd).await.unwrap();
    let api: Api<Widget> = Api::namespaced(c.clone(), "default");
    let widget = |name: &str| {
        Widget::new(
            name,
            WidgetSpec {
                size: 1,
                color: None,
            },
        )
    };
    api.create(&PostParams::default(), &widget("before"))
        .await
        .expect("created while the CRD is live");

    crds.delete("widgets.example.com", &DeleteParams::default())
        .await
        .unwrap();
    let deleting = crds.get("widgets.example.com").await.unwrap();
    assert!(deleting.metadata.deletion_timestamp.is_some());
    let err = api
        .create(&PostParams::default(), &widget("during"))
        .await
        .expect_err("refused while terminating");
    match err {
        kube::Error::Api(s) => {
            assert_eq!(s.code, 405, "{s:?}");
            assert!(
                s.message
                    .contains("create not allowed while custom resource definition is terminating"),
                "{}",
                s.message
            );
        }
        e => panic!("{e:?}"),
    }

    // Released: the CRD goes, and a new one of the same name serves creates again.
    crds.patch(
        "widgets.example.com",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    let gone = eventually(|| {
        let crds = crds.clone();
        async move { crds.get_opt("widgets.example.com").await.unwrap().is_none() }
    })
    .await;
    assert!(gone, "CRD removed once its finalizer is dropped");
    crds.create(&PostParams::default(), &Widget::crd())
        .await
        .unwrap();
    let created = eventually(|| {
        let api = api.clone();
        async move {
            api.create(&PostParams::default(), &widget("after"))
                .await
                .is_ok()
        }
    })
    .await;
    assert!(created, "a re-created CRD serves creates");
}
