//! Lifecycle: finalizers and deletionTimestamp, ownerReference garbage collection (background,
//! foreground, orphan), namespace deletion, and a kube-runtime Controller using the finalizer
//! helper.

use crate::rest_common as common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::*;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::finalizer::{Event as FinalizerEvent, finalizer};
use kube::runtime::watcher;
use serde_json::json;

fn cm(name: &str, owner: Option<&ConfigMap>) -> ConfigMap {
    let mut v = json!({"metadata": {"name": name}, "data": {"a": "1"}});
    if let Some(o) = owner {
        v["metadata"]["ownerReferences"] = json!([{
            "apiVersion": "v1", "kind": "ConfigMap", "name": o.metadata.name, "uid": o.metadata.uid, "blockOwnerDeletion": true
        }]);
    }
    serde_json::from_value(v).unwrap()
}

async fn exists(api: &Api<ConfigMap>, name: &str) -> bool {
    api.get_opt(name).await.unwrap().is_some()
}

#[tokio::test]
async fn finalizers_hold_deletion() {
    let srv = server().await;
    let api: Api<ConfigMap> = Api::namespaced(client(&srv), "default");
    let mut c = cm("held", None);
    c.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    api.create(&PostParams::default(), &c).await.unwrap();
    api.delete("held", &DeleteParams::default()).await.unwrap();
    let got = api.get("held").await.expect("still there");
    assert!(got.metadata.deletion_timestamp.is_some());
    // Adding a new finalizer while deleting is refused.
    let err = api
        .patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": ["example.com/hold", "x.io/new"]}})),
        )
        .await
        .expect_err("no new finalizers");
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 403),
        "{err:?}"
    );
    api.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert!(!exists(&api, "held").await);
}

#[tokio::test]
async fn garbage_collection_policies() {
    let srv = server().await;
    let api: Api<ConfigMap> = Api::namespaced(client(&srv), "default");

    // Background.
    let owner = api
        .create(&PostParams::default(), &cm("owner", None))
        .await
        .unwrap();
    api.create(&PostParams::default(), &cm("child", Some(&owner)))
        .await
        .unwrap();
    api.delete("owner", &DeleteParams::background())
        .await
        .unwrap();
    assert!(
        eventually(|| {
            let a = api.clone();
            async move { !exists(&a, "child").await }
        })
        .await,
        "background GC"
    );

    // Foreground: the owner waits for the dependent (held by a finalizer) to go.
    let owner = api
        .create(&PostParams::default(), &cm("fowner", None))
        .await
        .unwrap();
    let mut child = cm("fchild", Some(&owner));
    child.metadata.finalizers = Some(vec!["example.com/slow".into()]);
    api.create(&PostParams::default(), &child).await.unwrap();
    api.delete("fowner", &DeleteParams::foreground())
        .await
        .unwrap();
    assert!(
        eventually(|| {
            let a = api.clone();
            async move {
                a.get("fchild")
                    .await
                    .map(|c| c.metadata.deletion_timestamp.is_some())
                    .unwrap_or(false)
            }
        })
        .await
    );
    let o = api.get("fowner").await.expect("owner waits");
    assert!(
        o.metadata
            .finalizers
            .unwrap_or_default()
            .contains(&"foregroundDeletion".to_string())
    );
    api.patch(
        "fchild",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .expect("removing the child's finalizer");
    assert!(
        eventually(|| {
            let a = api.clone();
            async move { !exists(&a, "fowner").await }
        })
        .await,
        "foreground completes"
    );

    // Orphan: the dependent stays, without the owner reference.
    let owner = api
        .create(&PostParams::default(), &cm("oowner", None))
        .await
        .unwrap();
    api.create(&PostParams::default(), &cm("ochild", Some(&owner)))
        .await
        .unwrap();
    api.delete("oowner", &DeleteParams::orphan()).await.unwrap();
    assert!(
        eventually(|| {
            let a = api.clone();
            async move { !exists(&a, "oowner").await }
        })
        .await
    );
    let c = api.get("ochild").await.expect("orphan kept");
    assert!(c.metadata.owner_references.unwrap_or_default().is_empty());
}

/// Many clients patch the finalizers and labels of dependents while their owners are deleted in
/// the foreground: the collector writes each dependent once (marking it for deletion) rather than
/// over and over, so a patch without a resourceVersion precondition never ends in 409 Conflict,
/// and the writes counted are the clients' plus a few per owner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finalizer_patches_race_foreground_deletion_without_conflicts() {
    const PAIRS: usize = 6;
    const CLIENTS: usize = 8;
    const LABEL_WRITES: usize = 25;
    let srv = server().await;
    let api: Api<ConfigMap> = Api::namespaced(client(&srv), "default");
    for i in 0..PAIRS {
        let owner = api
            .create(&PostParams::default(), &cm(&format!("lo{i}"), None))
            .await
            .unwrap();
        let mut child = cm(&format!("lc{i}"), Some(&owner));
        child.metadata.finalizers =
            Some((0..CLIENTS).map(|c| format!("example.com/f{c}")).collect());
        api.create(&PostParams::default(), &child).await.unwrap();
    }
    let start = revision(&api).await;
    let conflicts = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for i in 0..PAIRS {
        let a = api.clone();
        tasks.push(tokio::spawn(async move {
            a.delete(&format!("lo{i}"), &DeleteParams::foreground())
                .await
                .map(|_| ())
        }));
        for c in 0..CLIENTS {
            let a = api.clone();
            let conflicts = conflicts.clone();
            tasks.push(tokio::spawn(async move {
                let name = format!("lc{i}");
                let conflict = |e: &kube::Error| matches!(e, kube::Error::Api(s) if s.code == 409);
                // Label writes while the collector works on the owner, then this client's
                // finalizer goes (a strategic merge patch deletes just that list item).
                for n in 0..LABEL_WRITES {
                    let label =
                        json!({"metadata": {"labels": {format!("client-{c}"): n.to_string()}}});
                    match a
                        .patch(&name, &PatchParams::default(), &Patch::Merge(label))
                        .await
                    {
                        Ok(_) => {}
                        Err(e) if conflict(&e) => {
                            conflicts.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => return Err(e),
                    }
                }
                let drop_mine = json!({"metadata": {"$deleteFromPrimitiveList/finalizers": [format!("example.com/f{c}")]}});
                match a
                    .patch(&name, &PatchParams::default(), &Patch::Strategic(drop_mine))
                    .await
                {
                    Ok(_) => Ok(()),
                    Err(e) if conflict(&e) => {
                        conflicts.fetch_add(1, Ordering::Relaxed);
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            }));
        }
    }
    for t in tasks {
        t.await.unwrap().expect("request");
    }
    assert_eq!(
        conflicts.load(Ordering::Relaxed),
        0,
        "409 Conflict for patches without a resourceVersion"
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let left = api.list(&Default::default()).await.unwrap().items.len();
        if left == 0 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{left} owners or dependents left"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    // Every client write, plus per pair: the owner marked, the child marked and its
    // foregroundDeletion finalizer removed, the owner's finalizer removed (it goes).
    let client_writes = PAIRS * CLIENTS * (LABEL_WRITES + 1);
    let writes = (revision(&api).await - start) as usize;
    assert!(
        writes <= client_writes + 4 * PAIRS,
        "{writes} writes for {client_writes} client writes and {PAIRS} foreground deletions: \
         the collector rewrites dependents"
    );
}

/// The store's revision, as a list reports it.
async fn revision(api: &Api<ConfigMap>) -> u64 {
    api.list_metadata(&kube::api::ListParams::default().limit(1))
        .await
        .unwrap()
        .metadata
        .resource_version
        .and_then(|rv| rv.parse().ok())
        .expect("list resourceVersion")
}

/// Owners are found as kube's collector finds them: by apiVersion, kind and name in the
/// dependent's namespace (or cluster scope), and only an object with the reference's uid counts.
#[tokio::test]
async fn owner_references_resolve_by_coordinates() {
    let srv = server().await;
    let c = client(&srv);
    let nss: Api<Namespace> = Api::all(c.clone());
    let other: Namespace = serde_json::from_value(json!({"metadata": {"name": "other"}})).unwrap();
    nss.create(&PostParams::default(), &other).await.unwrap();
    let default_ns = nss.get("default").await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(c.clone(), "default");
    let api_other: Api<ConfigMap> = Api::namespaced(c.clone(), "other");
    let owner = api
        .create(&PostParams::default(), &cm("real", None))
        .await
        .unwrap();
    let uid = owner.metadata.uid.clone().unwrap();
    let with_ref = |name: &str, api_version: &str, kind: &str, owner: &str, uid: &str| {
        serde_json::from_value::<ConfigMap>(json!({
            "metadata": {"name": name, "ownerReferences": [{
                "apiVersion": api_version, "kind": kind, "name": owner, "uid": uid
            }]},
        }))
        .unwrap()
    };
    let pp = PostParams::default();
    api.create(&pp, &with_ref("good", "v1", "ConfigMap", "real", &uid))
        .await
        .unwrap();
    api.create(
        &pp,
        &with_ref(
            "wrong-uid",
            "v1",
            "ConfigMap",
            "real",
            "0b6f2a6e-0000-4000-8000-000000000000",
        ),
    )
    .await
    .unwrap();
    api_other
        .create(&pp, &with_ref("cross-ns", "v1", "ConfigMap", "real", &uid))
        .await
        .unwrap();
    api.create(
        &pp,
        &with_ref("unknown-kind", "example.com/v1", "Nope", "real", &uid),
    )
    .await
    .unwrap();
    let ns_uid = default_ns.metadata.uid.clone().unwrap();
    api.create(
        &pp,
        &with_ref("cluster-owner", "v1", "Namespace", "default", &ns_uid),
    )
    .await
    .unwrap();

    // The two whose owner is absent are collected ...
    assert!(
        eventually(|| {
            let (a, b) = (api.clone(), api_other.clone());
            async move { !exists(&a, "wrong-uid").await && !exists(&b, "cross-ns").await }
        })
        .await,
        "dependents of absent owners are collected"
    );
    // ... the others stay (the collector has had its chance: it handled the two above).
    tokio::time::sleep(Duration::from_millis(500)).await;
    for name in ["good", "unknown-kind", "cluster-owner"] {
        assert!(exists(&api, name).await, "{name} must stay");
    }
    // Deleting the owner collects its real dependent, and only it.
    api.delete("real", &DeleteParams::background())
        .await
        .unwrap();
    assert!(
        eventually(|| {
            let a = api.clone();
            async move { !exists(&a, "good").await }
        })
        .await,
        "the real dependent follows its owner"
    );
    assert!(exists(&api, "unknown-kind").await);
    assert!(exists(&api, "cluster-owner").await);
}

#[tokio::test]
async fn namespace_deletion_empties_then_removes() {
    let srv = server().await;
    let c = client(&srv);
    let nss: Api<Namespace> = Api::all(c.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "doomed"}})).unwrap();
    nss.create(&PostParams::default(), &ns).await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(c.clone(), "doomed");
    let mut held = cm("held", None);
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    api.create(&PostParams::default(), &held).await.unwrap();
    api.create(&PostParams::default(), &cm("free", None))
        .await
        .unwrap();
    nss.delete("doomed", &DeleteParams::default())
        .await
        .unwrap();
    let n = nss.get("doomed").await.unwrap();
    assert_eq!(
        n.status.and_then(|s| s.phase).as_deref(),
        Some("Terminating")
    );
    // Creating in a terminating namespace is forbidden.
    let err = api
        .create(&PostParams::default(), &cm("late", None))
        .await
        .expect_err("terminating");
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 403),
        "{err:?}"
    );
    assert!(
        eventually(|| {
            let a = api.clone();
            async move { !exists(&a, "free").await }
        })
        .await
    );
    assert!(
        nss.get_opt("doomed").await.unwrap().is_some(),
        "held by the finalizer of `held`"
    );
    api.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert!(
        eventually(|| {
            let n = nss.clone();
            async move { n.get_opt("doomed").await.unwrap().is_none() }
        })
        .await
    );
}

#[tokio::test]
async fn controller_with_finalizer_helper() {
    let srv = server().await;
    let c = client(&srv);
    let api: Api<ConfigMap> = Api::namespaced(c.clone(), "default");
    let applied = Arc::new(AtomicUsize::new(0));
    let cleaned = Arc::new(AtomicUsize::new(0));
    struct Ctx {
        api: Api<ConfigMap>,
        applied: Arc<AtomicUsize>,
        cleaned: Arc<AtomicUsize>,
    }
    let ctx = Arc::new(Ctx {
        api: api.clone(),
        applied: applied.clone(),
        cleaned: cleaned.clone(),
    });
    async fn reconcile(
        obj: Arc<ConfigMap>,
        ctx: Arc<Ctx>,
    ) -> Result<Action, kube::runtime::finalizer::Error<std::convert::Infallible>> {
        let a = ctx.applied.clone();
        let cl = ctx.cleaned.clone();
        finalizer(&ctx.api, "example.com/cleanup", obj, |ev| async move {
            match ev {
                FinalizerEvent::Apply(_) => a.fetch_add(1, Ordering::SeqCst),
                FinalizerEvent::Cleanup(_) => cl.fetch_add(1, Ordering::SeqCst),
            };
            Ok(Action::await_change())
        })
        .await
    }
    fn error_policy(
        _: Arc<ConfigMap>,
        _: &kube::runtime::finalizer::Error<std::convert::Infallible>,
        _: Arc<Ctx>,
    ) -> Action {
        Action::requeue(Duration::from_millis(100))
    }
    let ctrl = tokio::spawn(
        Controller::new(api.clone(), watcher::Config::default())
            .run(reconcile, error_policy, ctx)
            .for_each(|_| async {}),
    );
    api.create(&PostParams::default(), &cm("managed", None))
        .await
        .unwrap();
    assert!(
        eventually(|| {
            let a = api.clone();
            async move {
                a.get("managed")
                    .await
                    .map(|c| {
                        c.metadata
                            .finalizers
                            .unwrap_or_default()
                            .contains(&"example.com/cleanup".to_string())
                    })
                    .unwrap_or(false)
            }
        })
        .await,
        "finalizer added"
    );
    assert!(
        eventually(|| {
            let n = applied.load(Ordering::SeqCst);
            async move { n >= 1 }
        })
        .await
    );
    api.delete("managed", &DeleteParams::default())
        .await
        .unwrap();
    assert!(
        eventually(|| {
            let a = api.clone();
            async move { !exists(&a, "managed").await }
        })
        .await,
        "cleanup ran and object went"
    );
    assert!(cleaned.load(Ordering::SeqCst) >= 1);
    ctrl.abort();
}
