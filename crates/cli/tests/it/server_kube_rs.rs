//! kube-rs drives `fleet server` through the kubeconfig it writes: `Api<T>` CRUD with conflicts,
//! `watcher` + `reflector`, `await_condition` on a CRD's Established condition, and a `Controller`
//! reconcile loop using the `finalizer` helper.

use std::sync::Arc;
use std::time::Duration;

use crate::common::Server;
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::finalizer::{Event as FinalizerEvent, finalizer};
use kube::runtime::wait::{await_condition, conditions};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use kube::{CustomResource, CustomResourceExt, Resource, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

fn cm(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    let mut c = ConfigMap::default();
    c.metadata.name = Some(name.into());
    c.metadata.labels = Some([("suite".to_string(), "kube-rs".to_string())].into());
    c.data = Some(
        data.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    c
}

async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while tokio::time::Instant::now() < deadline {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("timed out waiting for {what}");
}

#[tokio::test(flavor = "multi_thread")]
async fn api_crud_and_conflicts() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    let client = srv.client().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");

    let created = api
        .create(&PostParams::default(), &cm("a", &[("k", "1")]))
        .await
        .unwrap();
    let rv1: u64 = created.resource_version().unwrap().parse().unwrap();
    assert!(created.uid().is_some());
    let err = api
        .create(&PostParams::default(), &cm("a", &[]))
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 409),
        "{err}"
    );

    let got = api.get("a").await.unwrap();
    assert_eq!(got.data.as_ref().unwrap()["k"], "1");

    // replace with the current RV works; with a stale RV it is a 409 Conflict.
    let mut upd = got.clone();
    upd.data = Some([("k".to_string(), "2".to_string())].into());
    let replaced = api
        .replace("a", &PostParams::default(), &upd)
        .await
        .unwrap();
    assert!(replaced.resource_version().unwrap().parse::<u64>().unwrap() > rv1);
    let err = api
        .replace("a", &PostParams::default(), &upd)
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 409 && s.reason == "Conflict"),
        "{err}"
    );

    // patches: merge, JSON, server-side apply
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"data": {"m": "x"}})),
    )
    .await
    .unwrap();
    let jp: json_patch::Patch = serde_json::from_value(serde_json::json!([
        {"op": "replace", "path": "/data/k", "value": "3"}
    ]))
    .unwrap();
    api.patch("a", &PatchParams::default(), &Patch::<()>::Json(jp))
        .await
        .unwrap();
    let ssa = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"s": "y"}});
    api.patch(
        "a",
        &PatchParams::apply("fleet-test").force(),
        &Patch::Apply(ssa),
    )
    .await
    .unwrap();
    let got = api.get("a").await.unwrap();
    let data = got.data.unwrap();
    assert_eq!(
        (data["k"].as_str(), data["m"].as_str(), data["s"].as_str()),
        ("3", "x", "y")
    );

    // list with a label selector, then delete
    api.create(&PostParams::default(), &cm("b", &[]))
        .await
        .unwrap();
    let list = api
        .list(&ListParams::default().labels("suite=kube-rs"))
        .await
        .unwrap();
    assert_eq!(list.items.len(), 2);
    let list = api
        .list(&ListParams::default().labels("suite=other"))
        .await
        .unwrap();
    assert!(list.items.is_empty());
    api.delete("a", &DeleteParams::default()).await.unwrap();
    let err = api.get("a").await.unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 404),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn watcher_and_reflector_follow_changes() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    let client = srv.client().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    for i in 0..5 {
        api.create(&PostParams::default(), &cm(&format!("pre-{i}"), &[]))
            .await
            .unwrap();
    }
    let (reader, writer) = reflector::store::<ConfigMap>();
    let stream = reflector(
        writer,
        watcher(
            api.clone(),
            watcher::Config::default().labels("suite=kube-rs"),
        ),
    )
    .applied_objects()
    .boxed();
    let drain = tokio::spawn(async move {
        let mut s = stream;
        while let Some(ev) = s.next().await {
            if let Err(e) = ev {
                eprintln!("watcher error: {e}");
            }
        }
    });
    tokio::time::timeout(Duration::from_secs(30), reader.wait_until_ready())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(reader.state().len(), 5);

    api.create(&PostParams::default(), &cm("live", &[("v", "1")]))
        .await
        .unwrap();
    api.patch(
        "pre-0",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"data": {"v": "2"}})),
    )
    .await
    .unwrap();
    api.delete("pre-1", &DeleteParams::default()).await.unwrap();
    eventually("reflector to see the create, update and delete", || {
        let r = reader.clone();
        async move {
            let names: Vec<String> = r.state().iter().map(|o| o.name_any()).collect();
            let updated = r.state().iter().any(|o| {
                o.name_any() == "pre-0"
                    && o.data
                        .as_ref()
                        .is_some_and(|d| d.get("v").map(String::as_str) == Some("2"))
            });
            names.len() == 5
                && names.contains(&"live".to_string())
                && !names.contains(&"pre-1".to_string())
                && updated
        }
    })
    .await;
    drain.abort();
}

/// A custom resource managed by the test controller.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "example.fleet.test",
    version = "v1",
    kind = "Gadget",
    namespaced,
    status = "GadgetStatus"
)]
pub struct GadgetSpec {
    /// Copied into the child ConfigMap.
    pub message: String,
}

/// Status written by the controller.
#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
pub struct GadgetStatus {
    pub observed: Option<String>,
}

const FINALIZER: &str = "example.fleet.test/cleanup";

struct Ctx {
    client: kube::Client,
}

#[derive(Debug)]
enum ReconcileError {
    Kube(kube::Error),
    Finalizer(String),
}

impl std::error::Error for ReconcileError {}

impl std::fmt::Display for ReconcileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReconcileError::Kube(e) => write!(f, "kube: {e}"),
            ReconcileError::Finalizer(e) => write!(f, "finalizer: {e}"),
        }
    }
}

async fn reconcile(g: Arc<Gadget>, ctx: Arc<Ctx>) -> Result<Action, ReconcileError> {
    let ns = g.namespace().unwrap_or_else(|| "default".into());
    let gadgets: Api<Gadget> = Api::namespaced(ctx.client.clone(), &ns);
    let cms: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &ns);
    finalizer(&gadgets, FINALIZER, g, |event| async {
        match event {
            FinalizerEvent::Apply(g) => {
                let child = format!("{}-child", g.name_any());
                let body = serde_json::json!({
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": child},
                    "data": {"message": g.spec.message},
                });
                cms.patch(
                    &child,
                    &PatchParams::apply("gadget-controller").force(),
                    &Patch::Apply(body),
                )
                .await
                .map_err(ReconcileError::Kube)?;
                let status = serde_json::json!({"status": {"observed": g.spec.message}});
                gadgets
                    .patch_status(
                        &g.name_any(),
                        &PatchParams::default(),
                        &Patch::Merge(status),
                    )
                    .await
                    .map_err(ReconcileError::Kube)?;
                Ok(Action::await_change())
            }
            FinalizerEvent::Cleanup(g) => {
                let child = format!("{}-child", g.name_any());
                match cms.delete(&child, &DeleteParams::default()).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(s)) if s.code == 404 => {}
                    Err(e) => return Err(ReconcileError::Kube(e)),
                }
                Ok(Action::await_change())
            }
        }
    })
    .await
    .map_err(|e| ReconcileError::Finalizer(e.to_string()))
}

fn error_policy(_g: Arc<Gadget>, e: &ReconcileError, _ctx: Arc<Ctx>) -> Action {
    eprintln!("reconcile error: {e}");
    Action::requeue(Duration::from_millis(200))
}

#[tokio::test(flavor = "multi_thread")]
async fn crd_established_and_controller_with_finalizer() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    let client = srv.client().await;

    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = Gadget::crd();
    let name = crd.name_any();
    crds.create(&PostParams::default(), &crd).await.unwrap();
    tokio::time::timeout(
        Duration::from_secs(30),
        await_condition(crds.clone(), &name, conditions::is_crd_established()),
    )
    .await
    .expect("CRD Established within 30 s")
    .unwrap();

    let gadgets: Api<Gadget> = Api::namespaced(client.clone(), "default");
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let ctx = Arc::new(Ctx {
        client: client.clone(),
    });
    let controller = tokio::spawn(
        Controller::new(gadgets.clone(), watcher::Config::default())
            .run(reconcile, error_policy, ctx)
            .for_each(|_| futures::future::ready(())),
    );

    gadgets
        .create(
            &PostParams::default(),
            &Gadget::new(
                "g1",
                GadgetSpec {
                    message: "hello".into(),
                },
            ),
        )
        .await
        .unwrap();
    eventually("child ConfigMap, finalizer and status", || {
        let (gadgets, cms) = (gadgets.clone(), cms.clone());
        async move {
            let Ok(g) = gadgets.get("g1").await else {
                return false;
            };
            let child = cms.get_opt("g1-child").await.ok().flatten();
            g.finalizers().iter().any(|f| f == FINALIZER)
                && g.status.as_ref().and_then(|s| s.observed.as_deref()) == Some("hello")
                && child
                    .and_then(|c| c.data)
                    .is_some_and(|d| d.get("message").map(String::as_str) == Some("hello"))
        }
    })
    .await;
    let g = gadgets.get("g1").await.unwrap();
    assert_eq!(
        g.meta().generation,
        Some(1),
        "status writes do not bump generation"
    );

    // Deleting runs Cleanup, which removes the child, then the finalizer, then the object.
    gadgets
        .delete("g1", &DeleteParams::default())
        .await
        .unwrap();
    eventually("gadget and child gone", || {
        let (gadgets, cms) = (gadgets.clone(), cms.clone());
        async move {
            gadgets.get_opt("g1").await.ok().flatten().is_none()
                && cms.get_opt("g1-child").await.ok().flatten().is_none()
        }
    })
    .await;
    controller.abort();
}
