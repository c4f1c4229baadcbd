//! Background controllers: the ownerReference garbage collector (background, foreground and
//! orphan propagation), namespace finalization (a deleted namespace is emptied, then removed)
//! and CRD cleanup (a deleted CRD's objects are deleted, then the CRD).
//!
//! It follows the store's global watch and keeps a small index (dependent -> owners, owner uid ->
//! dependents) of the objects that have owners, so that a deletion costs work proportional to the
//! dependents, not to the store, and an object without owners costs no memory here.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::state::ApiServer;
use crate::storage::errors::ApiResult;
use crate::storage::registry::{ResourceInfo, split_key};
use crate::storage::store::{EventKind, Obj};
use crate::write::crud::{DeleteOpts, FOREGROUND, ORPHAN, Propagation};
use crate::write::strategy::CRD_CLEANUP;

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct OwnerRef {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    uid: String,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Meta {
    #[serde(default)]
    uid: String,
    #[serde(default)]
    owner_references: Vec<OwnerRef>,
    #[serde(default)]
    deletion_timestamp: Option<String>,
    #[serde(default)]
    finalizers: Vec<String>,
}

#[derive(Deserialize, Default)]
struct MetaOnly {
    #[serde(default)]
    metadata: Meta,
}

fn meta_of(obj: &Obj) -> Meta {
    serde_json::from_slice::<MetaOnly>(&obj.json())
        .map(|m| m.metadata)
        .unwrap_or_default()
}

/// Whether a write can matter to the collector. The fields it acts on are looked for in the raw
/// JSON first, so that the common write (no owners, not deleting) costs no decode; a match in
/// some other place only costs the decode.
fn may_concern_gc(obj: &Obj) -> bool {
    use memchr::memmem::find;
    let json = obj.json();
    find(&json, b"\"ownerReferences\"").is_some() || find(&json, b"\"deletionTimestamp\"").is_some()
}

/// One ownerReference as the collector follows it. The owner is found the way kube's collector
/// finds it: by apiVersion, kind and name, in the dependent's namespace for a namespaced kind,
/// and it counts only if the object there has the reference's uid.
#[derive(Clone)]
struct Link {
    /// The owner's store key; `None` when the reference cannot be resolved (unknown kind, or a
    /// namespaced owner named by a cluster-scoped dependent). Such an owner is never judged
    /// absent, as in kube, which cannot verify it either.
    key: Option<Arc<str>>,
    uid: String,
}

fn resolve(srv: &ApiServer, dependent: &str, r: &OwnerRef) -> Link {
    let (group, version) = r
        .api_version
        .split_once('/')
        .unwrap_or(("", r.api_version.as_str()));
    let (dep_ns, _) = split_key(dependent);
    let key = srv
        .registry()
        .by_kind(group, version, &r.kind)
        .filter(|info| !r.name.is_empty() && (!info.namespaced || !dep_ns.is_empty()))
        .map(|info| Arc::from(info.key(Some(dep_ns), &r.name)));
    Link {
        key,
        uid: r.uid.clone(),
    }
}

/// Whether the owner a link names exists (same uid at its coordinates).
fn owner_exists(srv: &ApiServer, link: &Link) -> bool {
    let Some(key) = &link.key else { return true };
    srv.store()
        .get(key)
        .is_some_and(|o| !link.uid.is_empty() && meta_of(&o).uid == link.uid)
}

/// The collector's index. Only objects with ownerReferences are in it, so an object without any
/// costs nothing here however many are stored.
#[derive(Default)]
struct Index {
    /// Owners named by each dependent.
    owners_of: HashMap<Arc<str>, Vec<Link>>,
    /// Dependents by owner uid.
    dependents: HashMap<String, HashSet<Arc<str>>>,
    /// Objects that need the collector's attention (deleting with GC finalizers, terminating
    /// namespaces and CRDs, dependents whose owners are gone).
    pending: HashSet<Arc<str>>,
}

impl Index {
    fn unlink_owners(&mut self, key: &Arc<str>) -> Option<Vec<Link>> {
        let owners = self.owners_of.remove(key)?;
        for o in &owners {
            if let Some(set) = self.dependents.get_mut(&o.uid) {
                set.remove(key);
                if set.is_empty() {
                    self.dependents.remove(&o.uid);
                }
            }
        }
        Some(owners)
    }

    fn upsert(&mut self, srv: &ApiServer, key: Arc<str>, m: &Meta) {
        self.unlink_owners(&key);
        if !m.owner_references.is_empty() {
            let owners: Vec<Link> = m
                .owner_references
                .iter()
                .map(|r| resolve(srv, &key, r))
                .collect();
            for o in &owners {
                self.dependents
                    .entry(o.uid.clone())
                    .or_default()
                    .insert(key.clone());
            }
            // Dangling owners (all gone): the dependent must be collected.
            if !owners.iter().any(|o| owner_exists(srv, o)) {
                self.pending.insert(key.clone());
            }
            self.owners_of.insert(key.clone(), owners);
        }
        let gc_fin = m
            .finalizers
            .iter()
            .any(|f| f == FOREGROUND || f == ORPHAN || f == CRD_CLEANUP);
        if m.deletion_timestamp.is_some() && (gc_fin || key.starts_with("/core/namespaces/")) {
            self.pending.insert(key);
        }
    }

    /// Queues the owners a dependent names (an owner in foreground deletion waits for its
    /// dependents, so a change to one may let it proceed).
    fn queue_owners(&mut self, owners: &[Link]) {
        for k in owners.iter().filter_map(|o| o.key.clone()) {
            self.pending.insert(k);
        }
    }
}

/// Starts the collector task.
pub fn spawn(srv: ApiServer) {
    tokio::spawn(async move {
        loop {
            if run(&srv).await.is_err() {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            if srv.inner.gc_stop.load(std::sync::atomic::Ordering::Relaxed) {
                return;
            }
        }
    });
}

/// One life of the collector: index everything, then follow events until the watch ends.
async fn run(srv: &ApiServer) -> Result<(), ()> {
    let mut idx = Index::default();
    let page = srv
        .store()
        .list("/", None, None, None, &|_, _| true)
        .map_err(|_| ())?;
    for (k, o) in &page.items {
        if may_concern_gc(o) {
            idx.upsert(srv, k.clone(), &meta_of(o));
        }
    }
    let mut watch = srv.store().watch("/", page.rev).map_err(|_| ())?;
    loop {
        process(srv, &mut idx).await;
        let retry = if idx.pending.is_empty() {
            Duration::from_secs(3600)
        } else {
            Duration::from_millis(250)
        };
        tokio::select! {
            ev = watch.next() => {
                let Some(ev) = ev else { return Err(()) };
                apply_event(srv, &mut idx, ev.kind, ev.key, &ev.obj);
                // Drain what is already queued before doing work.
                while let Some(Some(ev)) = futures::FutureExt::now_or_never(watch.next()) {
                    apply_event(srv, &mut idx, ev.kind, ev.key, &ev.obj);
                }
            }
            _ = srv.inner.gc_kick.notified() => {}
            _ = tokio::time::sleep(retry) => {}
        }
        if srv.inner.gc_stop.load(std::sync::atomic::Ordering::Relaxed) {
            return Ok(());
        }
    }
}

fn apply_event(srv: &ApiServer, idx: &mut Index, kind: EventKind, key: Arc<str>, obj: &Obj) {
    match kind {
        EventKind::Deleted => {
            idx.pending.remove(&key);
            if let Some(owners) = idx.unlink_owners(&key) {
                idx.queue_owners(&owners);
            }
            // Every dependent of the deleted owner may now be orphaned; owners waiting for this
            // dependent (foreground) may now proceed.
            if !idx.dependents.is_empty() {
                let uid = meta_of(obj).uid;
                if let Some(deps) = idx.dependents.get(&uid) {
                    idx.pending.extend(deps.iter().cloned());
                }
            }
        }
        EventKind::Added | EventKind::Modified => {
            if !idx.owners_of.contains_key(&key) && !may_concern_gc(obj) {
                return;
            }
            let m = meta_of(obj);
            if let Some(before) = idx.owners_of.get(&key).cloned() {
                idx.queue_owners(&before);
            }
            idx.upsert(srv, key.clone(), &m);
            if let Some(now) = idx.owners_of.get(&key).cloned() {
                idx.queue_owners(&now);
            }
        }
    }
}

fn info_for_key(srv: &ApiServer, key: &str) -> Option<Arc<ResourceInfo>> {
    let mut parts = key.splitn(4, '/');
    parts.next();
    let group = parts.next()?;
    let plural = parts.next()?;
    let group = if group == "core" { "" } else { group };
    srv.registry()
        .all()
        .into_iter()
        .find(|i| i.group == group && i.plural == plural)
}

async fn process(srv: &ApiServer, idx: &mut Index) {
    let keys: Vec<Arc<str>> = idx.pending.drain().collect();
    for key in keys {
        let done = match handle(srv, idx, &key).await {
            Ok(d) => d,
            Err(e) => {
                tracing::debug!(key = %key, error = %e, "garbage collection step failed; will retry");
                false
            }
        };
        if !done {
            idx.pending.insert(key);
        }
    }
}

/// Handles one pending object; `Ok(true)` when nothing is left to do for it.
async fn handle(srv: &ApiServer, idx: &Index, key: &Arc<str>) -> ApiResult<bool> {
    let Some(obj) = srv.store().get(key) else {
        return Ok(true);
    };
    let Some(info) = info_for_key(srv, key) else {
        return Ok(true);
    };
    let m = meta_of(&obj);
    let (ns, name) = split_key(key);
    let ns_opt = if info.namespaced { Some(ns) } else { None };

    // A dependent whose owners are all gone is deleted (background propagation).
    if !m.owner_references.is_empty()
        && m.deletion_timestamp.is_none()
        && !m
            .owner_references
            .iter()
            .any(|r| owner_exists(srv, &resolve(srv, key, r)))
    {
        return delete_ignoring_missing(srv, &info, ns_opt, name, Propagation::Background)
            .await
            .map(|_| true);
    }
    if m.deletion_timestamp.is_none() {
        return Ok(true);
    }
    let mut done = true;
    let deps: Vec<Arc<str>> = idx
        .dependents
        .get(&m.uid)
        .map(|s| s.iter().cloned().collect())
        .unwrap_or_default();
    if m.finalizers.iter().any(|f| f == ORPHAN) {
        for d in &deps {
            remove_owner_ref(srv, d, &m.uid).await?;
        }
        remove_finalizer(srv, &info, ns_opt, name, ORPHAN).await?;
        return Ok(false);
    }
    if m.finalizers.iter().any(|f| f == FOREGROUND) {
        let mut remaining = 0;
        for d in &deps {
            let Some(dep) = srv.store().get(d) else {
                continue;
            };
            remaining += 1;
            // Already being deleted: wait for it, as kube's collector does. Deleting it again
            // would put `foregroundDeletion` back on it after its own pass took it off, and the
            // two passes would rewrite it over and over (making clients' writes conflict).
            if meta_of(&dep).deletion_timestamp.is_some() {
                continue;
            }
            if let Some(dinfo) = info_for_key(srv, d) {
                let (dns, dname) = split_key(d);
                let dns = if dinfo.namespaced { Some(dns) } else { None };
                delete_ignoring_missing(srv, &dinfo, dns, dname, Propagation::Foreground).await?;
            }
        }
        if remaining == 0 {
            remove_finalizer(srv, &info, ns_opt, name, FOREGROUND).await?;
        } else {
            done = false;
        }
    }
    if info.builtin
        && info.group.is_empty()
        && info.kind == "Namespace"
        && !finalize_namespace(srv, name).await?
    {
        done = false;
    }
    if info.builtin
        && info.kind == "CustomResourceDefinition"
        && m.finalizers.iter().any(|f| f == CRD_CLEANUP)
        && !cleanup_crd(srv, &obj).await?
    {
        done = false;
    }
    Ok(done)
}

async fn delete_ignoring_missing(
    srv: &ApiServer,
    info: &ResourceInfo,
    ns: Option<&str>,
    name: &str,
    propagation: Propagation,
) -> ApiResult<()> {
    let opts = DeleteOpts {
        propagation,
        ..DeleteOpts::default()
    };
    match srv.delete(info, ns, name, &opts).await {
        Ok(_) => Ok(()),
        Err(e) if e.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

async fn remove_finalizer(
    srv: &ApiServer,
    info: &ResourceInfo,
    ns: Option<&str>,
    name: &str,
    fin: &str,
) -> ApiResult<()> {
    let r = srv
        .guaranteed_update(info, ns, name, None, false, |cur| {
            let fins = crate::storage::objects::finalizers(cur);
            if !fins.iter().any(|f| f == fin) {
                return Ok(None);
            }
            let mut new = cur.clone();
            let kept: Vec<String> = fins.into_iter().filter(|f| f != fin).collect();
            crate::storage::objects::meta_mut(&mut new).insert("finalizers".into(), json!(kept));
            Ok(Some(new))
        })
        .await;
    match r {
        Ok(_) => Ok(()),
        Err(e) if e.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

async fn remove_owner_ref(srv: &ApiServer, key: &str, owner_uid: &str) -> ApiResult<()> {
    let Some(info) = info_for_key(srv, key) else {
        return Ok(());
    };
    let (ns, name) = split_key(key);
    let ns = if info.namespaced { Some(ns) } else { None };
    let r = srv
        .guaranteed_update(&info, ns, name, None, false, |cur| {
            let Some(refs) = cur
                .pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
            else {
                return Ok(None);
            };
            let kept: Vec<Value> = refs
                .iter()
                .filter(|r| r.get("uid").and_then(Value::as_str) != Some(owner_uid))
                .cloned()
                .collect();
            if kept.len() == refs.len() {
                return Ok(None);
            }
            let mut new = cur.clone();
            let m = crate::storage::objects::meta_mut(&mut new);
            if kept.is_empty() {
                m.remove("ownerReferences");
            } else {
                m.insert("ownerReferences".into(), json!(kept));
            }
            Ok(Some(new))
        })
        .await;
    match r {
        Ok(_) => Ok(()),
        Err(e) if e.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Deletes everything in a terminating namespace; removes it once empty. `Ok(true)` when done.
async fn finalize_namespace(srv: &ApiServer, ns: &str) -> ApiResult<bool> {
    let mut remaining = 0usize;
    let mut seen = HashSet::new();
    for info in srv.registry().all() {
        if !info.namespaced || !seen.insert((info.group.clone(), info.plural.clone())) {
            continue;
        }
        let page = srv
            .store()
            .list(&info.prefix(Some(ns)), None, None, None, &|_, _| true)
            .map_err(|e| {
                crate::storage::errors::ApiError::from_store(e, &info.group, &info.plural, "")
            })?;
        for (key, _) in page.items {
            remaining += 1;
            let (_, name) = split_key(&key);
            delete_ignoring_missing(srv, &info, Some(ns), name, Propagation::Background).await?;
        }
    }
    if remaining > 0 {
        return Ok(false);
    }
    let Some(ns_info) = srv.registry().lookup("", "v1", "namespaces") else {
        return Ok(true);
    };
    let r = srv
        .guaranteed_update(&ns_info, None, ns, Some("finalize"), false, |cur| {
            let fins: Vec<Value> = cur
                .pointer("/spec/finalizers")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            if !fins.iter().any(|f| f == "kubernetes") {
                return Ok(None);
            }
            let kept: Vec<Value> = fins.into_iter().filter(|f| f != "kubernetes").collect();
            let mut new = cur.clone();
            crate::storage::objects::set_path(&mut new, "spec.finalizers", json!(kept));
            Ok(Some(new))
        })
        .await;
    match r {
        Ok(_) => Ok(true),
        Err(e) if e.code == 404 => Ok(true),
        Err(e) => Err(e),
    }
}

/// Deletes every instance of a deleted CRD, then lets the CRD go. `Ok(true)` when done.
async fn cleanup_crd(srv: &ApiServer, crd: &Obj) -> ApiResult<bool> {
    let v: Value = serde_json::from_slice(&crd.json()).unwrap_or(Value::Null);
    let group = v
        .pointer("/spec/group")
        .and_then(Value::as_str)
        .unwrap_or("");
    let plural = v
        .pointer("/spec/names/plural")
        .and_then(Value::as_str)
        .unwrap_or("");
    let name = v
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let info = srv
        .registry()
        .all()
        .into_iter()
        .find(|i| !i.builtin && i.group == group && i.plural == plural);
    let prefix = format!("/{group}/{plural}/");
    let page = srv
        .store()
        .list(&prefix, None, None, None, &|_, _| true)
        .map_err(|e| crate::storage::errors::ApiError::from_store(e, group, plural, ""))?;
    if !page.items.is_empty() {
        if let Some(info) = &info {
            for (key, _) in &page.items {
                let (ns, n) = split_key(key);
                let ns = if info.namespaced { Some(ns) } else { None };
                delete_ignoring_missing(srv, info, ns, n, Propagation::Background).await?;
            }
            return Ok(false);
        }
        // Not served any more: remove the objects directly.
        for (key, _) in &page.items {
            let _ = srv.store().delete(key, None).await;
        }
    }
    let Some(crd_info) =
        srv.registry()
            .lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    else {
        return Ok(true);
    };
    remove_finalizer(srv, &crd_info, None, &name, CRD_CLEANUP).await?;
    Ok(true)
}
