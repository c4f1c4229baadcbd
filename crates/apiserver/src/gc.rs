//! Background controllers: the ownerReference garbage collector (background, foreground and
//! orphan propagation), namespace finalization (a deleted namespace is emptied, then removed)
//! and CRD cleanup (a deleted CRD's objects are deleted, then the CRD).
//!
//! It follows the store's global watch and keeps a small index (uid -> key, owner uid ->
//! dependents) so that a deletion costs work proportional to the dependents, not to the store.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::app::ApiServer;
use crate::errors::ApiResult;
use crate::kinds::CRD_CLEANUP;
use crate::ops::{DeleteOpts, FOREGROUND, ORPHAN, Propagation};
use crate::registry::{ResourceInfo, split_key};
use crate::store::{EventKind, Obj};

#[derive(Deserialize, Default)]
struct OwnerRef {
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
    serde_json::from_slice::<MetaOnly>(&obj.json)
        .map(|m| m.metadata)
        .unwrap_or_default()
}

#[derive(Default)]
struct Index {
    uid_to_key: HashMap<String, Arc<str>>,
    key_to_uid: HashMap<Arc<str>, String>,
    owners_of: HashMap<Arc<str>, Vec<String>>,
    dependents: HashMap<String, HashSet<Arc<str>>>,
    /// Objects that need the collector's attention (deleting with GC finalizers, terminating
    /// namespaces and CRDs, dependents whose owners are gone).
    pending: HashSet<Arc<str>>,
}

impl Index {
    fn remove(&mut self, key: &Arc<str>) {
        if let Some(uid) = self.key_to_uid.remove(key)
            && self.uid_to_key.get(&uid) == Some(key)
        {
            self.uid_to_key.remove(&uid);
        }
        if let Some(owners) = self.owners_of.remove(key) {
            for o in owners {
                if let Some(set) = self.dependents.get_mut(&o) {
                    set.remove(key);
                    if set.is_empty() {
                        self.dependents.remove(&o);
                    }
                }
            }
        }
    }

    fn upsert(&mut self, key: Arc<str>, m: &Meta) {
        self.remove(&key);
        if !m.uid.is_empty() {
            self.uid_to_key.insert(m.uid.clone(), key.clone());
            self.key_to_uid.insert(key.clone(), m.uid.clone());
        }
        if !m.owner_references.is_empty() {
            let owners: Vec<String> = m.owner_references.iter().map(|o| o.uid.clone()).collect();
            for o in &owners {
                self.dependents
                    .entry(o.clone())
                    .or_default()
                    .insert(key.clone());
            }
            // Dangling owners (all gone): the dependent must be collected.
            if owners.iter().all(|o| !self.uid_to_key.contains_key(o)) {
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
    // uids first, so that owner existence is known before dependents are judged.
    let metas: Vec<(Arc<str>, Meta)> = page
        .items
        .iter()
        .map(|(k, o)| (k.clone(), meta_of(o)))
        .collect();
    for (k, m) in &metas {
        if !m.uid.is_empty() {
            idx.uid_to_key.insert(m.uid.clone(), k.clone());
        }
    }
    for (k, m) in &metas {
        idx.upsert(k.clone(), m);
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
                apply_event(&mut idx, ev.kind, ev.key, &ev.obj);
                // Drain what is already queued before doing work.
                while let Some(Some(ev)) = futures::FutureExt::now_or_never(watch.next()) {
                    apply_event(&mut idx, ev.kind, ev.key, &ev.obj);
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

fn apply_event(idx: &mut Index, kind: EventKind, key: Arc<str>, obj: &Obj) {
    match kind {
        EventKind::Deleted => {
            let uid = idx.key_to_uid.get(&key).cloned();
            idx.remove(&key);
            idx.pending.remove(&key);
            if let Some(uid) = uid {
                // Every dependent of the deleted owner may now be orphaned; owners waiting for
                // this dependent (foreground) may now proceed.
                if let Some(deps) = idx.dependents.get(&uid) {
                    for d in deps.clone() {
                        idx.pending.insert(d);
                    }
                }
            }
            if let Some(owners) = idx.owners_of.get(&key).cloned() {
                for o in owners {
                    if let Some(k) = idx.uid_to_key.get(&o).cloned() {
                        idx.pending.insert(k);
                    }
                }
            }
        }
        EventKind::Added | EventKind::Modified => {
            let m = meta_of(obj);
            let owners_before = idx.owners_of.get(&key).cloned().unwrap_or_default();
            idx.upsert(key.clone(), &m);
            // An owner in foreground deletion waits for its dependents: re-check it.
            for o in owners_before
                .iter()
                .chain(m.owner_references.iter().map(|r| &r.uid))
            {
                if let Some(k) = idx.uid_to_key.get(o).cloned() {
                    idx.pending.insert(k);
                }
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
        && m.owner_references
            .iter()
            .all(|o| !idx.uid_to_key.contains_key(&o.uid))
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
            if srv.store().get(d).is_none() {
                continue;
            }
            remaining += 1;
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
            let fins = crate::objects::finalizers(cur);
            if !fins.iter().any(|f| f == fin) {
                return Ok(None);
            }
            let mut new = cur.clone();
            let kept: Vec<String> = fins.into_iter().filter(|f| f != fin).collect();
            crate::objects::meta_mut(&mut new).insert("finalizers".into(), json!(kept));
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
            let m = crate::objects::meta_mut(&mut new);
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
            .map_err(|e| crate::errors::ApiError::from_store(e, &info.group, &info.plural, ""))?;
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
            crate::objects::set_path(&mut new, "spec.finalizers", json!(kept));
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
    let v: Value = serde_json::from_slice(&crd.json).unwrap_or(Value::Null);
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
        .map_err(|e| crate::errors::ApiError::from_store(e, group, plural, ""))?;
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
