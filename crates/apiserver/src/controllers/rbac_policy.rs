//! Keeps each server's RBAC policy ([`crate::security::policy::Policy`]) equal to the stored
//! Roles and bindings: bootstraps the default ones, loads the whole policy before the first
//! request, then follows the store's watch, so a binding created by one request grants access to
//! the next within milliseconds (the same "informer lag" clients of kube-apiserver already
//! tolerate).

use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::Value;

use crate::security::rbac::{self, Authorizer, Kind};
use crate::state::ApiServer;
use crate::storage::registry::split_key;
use crate::storage::store::{EventKind, Rev};

/// Storage-key prefix of every RBAC object (all four kinds).
const RBAC_PREFIX: &str = "/rbac.authorization.k8s.io/";

/// Creates every missing default role and binding (as kube-apiserver's RBAC bootstrap does;
/// existing ones, possibly edited by an admin, are left alone), then loads the whole policy
/// synchronously so the first request is already judged by it, and starts following changes.
pub(crate) async fn start(srv: &ApiServer) -> Result<(), crate::state::Error> {
    for obj in rbac::bootstrap_objects() {
        let kind = obj
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let Some(info) = srv.registry().by_kind(rbac::GROUP, "v1", &kind) else {
            return Err(crate::state::Error::Bootstrap(format!(
                "{kind} is not a registered resource"
            )));
        };
        if srv.store().get(&info.key(None, &name)).is_some() {
            continue;
        }
        match srv.create(&info, None, obj, false).await {
            Ok(_) => {}
            Err(e) if e.code == 409 => {}
            Err(e) => {
                return Err(crate::state::Error::Bootstrap(format!(
                    "RBAC default {kind} {name:?}: {e}"
                )));
            }
        }
    }
    let rev = load(srv).map_err(|e| crate::state::Error::Bootstrap(format!("RBAC policy: {e}")))?;
    let follower = srv.clone();
    tokio::spawn(async move { follow(follower, rev).await });
    Ok(())
}

/// Replaces the policy with the store's current RBAC objects; returns the revision read.
fn load(srv: &ApiServer) -> Result<Rev, crate::storage::store::StoreError> {
    let page = srv
        .store()
        .list(RBAC_PREFIX, None, None, None, &|_, _| true)?;
    let mut fresh = Authorizer::new();
    for (key, obj) in &page.items {
        match serde_json::from_slice::<Value>(&obj.json()) {
            Ok(v) => {
                if let Err(e) = fresh.apply(&v) {
                    tracing::warn!(%key, error = %e, "RBAC object ignored");
                }
            }
            Err(e) => tracing::warn!(%key, error = %e, "RBAC object is not JSON"),
        }
    }
    let policy = &srv.inner.authz;
    *policy.authorizer.write() = fresh;
    policy.rev.store(page.rev, Ordering::Release);
    Ok(page.rev)
}

/// Follows RBAC changes from `rev` until the server shuts down; relists when the watch is cut
/// off (fell behind, or history compacted past it).
async fn follow(srv: ApiServer, mut rev: Rev) {
    loop {
        if srv.inner.gc_stop.load(Ordering::Relaxed) {
            return;
        }
        let mut watch = match srv.store().watch(RBAC_PREFIX, rev) {
            Ok(w) => w,
            Err(_) => match load(&srv) {
                Ok(r) => {
                    rev = r;
                    continue;
                }
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                }
            },
        };
        while let Some(ev) = watch.next().await {
            let mut guard = srv.inner.authz.authorizer.write();
            apply_event(&mut guard, ev.kind, &ev.key, &ev.obj.json());
            // Apply what is already queued under the same lock.
            while let Some(Some(ev)) = futures::FutureExt::now_or_never(watch.next()) {
                apply_event(&mut guard, ev.kind, &ev.key, &ev.obj.json());
            }
            drop(guard);
            rev = watch.last_rev();
            srv.inner.authz.rev.store(rev, Ordering::Release);
        }
        if srv.inner.gc_stop.load(Ordering::Relaxed) {
            return;
        }
        // The watch ended (cut off): start over from a fresh list.
        match load(&srv) {
            Ok(r) => rev = r,
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// The RBAC kind a storage key (`/rbac.authorization.k8s.io/rolebindings/ns/name`) holds.
fn kind_of_key(key: &str) -> Option<Kind> {
    let rest = key.strip_prefix(RBAC_PREFIX)?;
    match rest.split('/').next()? {
        "roles" => Some(Kind::Role),
        "clusterroles" => Some(Kind::ClusterRole),
        "rolebindings" => Some(Kind::RoleBinding),
        "clusterrolebindings" => Some(Kind::ClusterRoleBinding),
        _ => None,
    }
}

fn apply_event(a: &mut Authorizer, kind: EventKind, key: &str, json: &[u8]) {
    let Some(k) = kind_of_key(key) else { return };
    let (ns, name) = split_key(key);
    if matches!(kind, EventKind::Deleted) {
        a.remove(k, ns, name);
        return;
    }
    let parsed = serde_json::from_slice::<Value>(json)
        .map_err(|e| e.to_string())
        .and_then(|v| a.apply(&v).map_err(|e| e.to_string()));
    if let Err(e) = parsed {
        // An object that no longer parses must not keep granting what its old version did.
        tracing::warn!(%key, error = %e, "RBAC object ignored");
        a.remove(k, ns, name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_name_their_kind() {
        assert_eq!(
            kind_of_key("/rbac.authorization.k8s.io/rolebindings/a/b"),
            Some(Kind::RoleBinding)
        );
        assert_eq!(
            kind_of_key("/rbac.authorization.k8s.io/clusterroles//x"),
            Some(Kind::ClusterRole)
        );
        assert_eq!(kind_of_key("/core/pods/a/b"), None);
    }
}
