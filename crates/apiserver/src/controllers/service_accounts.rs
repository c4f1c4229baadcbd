//! The legacy token-Secret controller (kube-controller-manager's "tokens controller"):
//!
//! - a Secret of type `kubernetes.io/service-account-token` whose annotated ServiceAccount exists
//!   gets annotation `kubernetes.io/service-account.uid` and `data.token` (a legacy JWT),
//!   `data.ca.crt` (the server CA) and `data.namespace`; a token already present is kept;
//! - such a Secret naming a missing ServiceAccount, or one whose uid differs from the recorded
//!   `service-account.uid`, is deleted (create the ServiceAccount first, as upstream documents);
//! - deleting a ServiceAccount deletes its token Secrets;
//! - every active namespace has a ServiceAccount named `default` (kube-controller-manager's
//!   serviceaccounts controller), recreated when deleted, so `kubectl create token default` works.
//!
//! Upstream Fleet's agent registration waits for exactly this filling-in. It follows the store's
//! watches of secrets and serviceaccounts, and writes through the normal write path so every
//! client sees the changes.

use std::time::Duration;

use base64::Engine;
use serde_json::{Map, Value, json};

use crate::security::satoken::ServiceAccountRef;
use crate::security::service_accounts::{SA_NAME_ANNOTATION, SA_UID_ANNOTATION, TOKEN_SECRET_TYPE};
use crate::state::ApiServer;
use crate::state::{Head, head};
use crate::storage::errors::ApiResult;
use crate::storage::registry::split_key;
use crate::storage::store::{EventKind, Obj};
use crate::write::crud::DeleteOpts;

const SECRETS: &str = "/core/secrets/";
const SERVICE_ACCOUNTS: &str = "/core/serviceaccounts/";
const NAMESPACES: &str = "/core/namespaces/";
/// The ServiceAccount every namespace gets.
pub const DEFAULT_SERVICE_ACCOUNT: &str = "default";

/// Starts the controller task (restarts itself when its watches end, until shutdown).
pub fn spawn(srv: ApiServer) {
    tokio::spawn(async move {
        loop {
            if let Err(e) = run(&srv).await {
                tracing::debug!(error = %e, "service-account token controller restarts");
            }
            if srv.inner.gc_stop.load(std::sync::atomic::Ordering::Relaxed) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
}

fn parse(obj: &Obj) -> Head {
    serde_json::from_slice::<Head>(&obj.json()).unwrap_or_default()
}

async fn run(srv: &ApiServer) -> Result<(), String> {
    let page = srv
        .store()
        .list(SECRETS, None, None, None, &|_, _| true)
        .map_err(|e| e.to_string())?;
    let mut secrets = srv
        .store()
        .watch(SECRETS, page.rev)
        .map_err(|e| e.to_string())?;
    let mut accounts = srv
        .store()
        .watch(SERVICE_ACCOUNTS, page.rev)
        .map_err(|e| e.to_string())?;
    let ns_page = srv
        .store()
        .list(NAMESPACES, None, None, None, &|_, _| true)
        .map_err(|e| e.to_string())?;
    let mut namespaces = srv
        .store()
        .watch(NAMESPACES, ns_page.rev)
        .map_err(|e| e.to_string())?;
    for (key, _) in &ns_page.items {
        log(ensure_default(srv, split_key(key).1).await);
    }
    for (key, obj) in &page.items {
        log(sync_secret(srv, key, obj).await);
    }
    loop {
        tokio::select! {
            ev = secrets.next() => {
                let Some(ev) = ev else { return Err("watch ended".into()) };
                if !matches!(ev.kind, EventKind::Deleted) {
                    log(sync_secret(srv, &ev.key, &ev.obj).await);
                }
            }
            ev = accounts.next() => {
                let Some(ev) = ev else { return Err("watch ended".into()) };
                if matches!(ev.kind, EventKind::Deleted) {
                    log(delete_tokens_of(srv, &ev.key, &ev.obj).await);
                    let (ns, name) = split_key(&ev.key);
                    if name == DEFAULT_SERVICE_ACCOUNT {
                        log(ensure_default(srv, ns).await);
                    }
                }
            }
            ev = namespaces.next() => {
                let Some(ev) = ev else { return Err("watch ended".into()) };
                if matches!(ev.kind, EventKind::Added) {
                    log(ensure_default(srv, split_key(&ev.key).1).await);
                }
            }
        }
        if srv.inner.gc_stop.load(std::sync::atomic::Ordering::Relaxed) {
            return Ok(());
        }
    }
}

fn log(r: ApiResult<()>) {
    if let Err(e) = r {
        tracing::debug!(error = %e, "service-account token controller step failed");
    }
}

/// Fills in or deletes one token Secret.
async fn sync_secret(srv: &ApiServer, key: &str, obj: &Obj) -> ApiResult<()> {
    let s = parse(obj);
    if s.type_.as_deref() != Some(TOKEN_SECRET_TYPE) || s.deleting() {
        return Ok(());
    }
    let (ns, name) = split_key(key);
    let Some(sa_name) = s.annotation(SA_NAME_ANNOTATION).filter(|n| !n.is_empty()) else {
        return Ok(());
    };
    let want_uid = s.annotation(SA_UID_ANNOTATION).filter(|u| !u.is_empty());
    let sa = head(srv, "serviceaccounts", ns, sa_name)
        .filter(|sa| want_uid.is_none_or(|u| u == sa.metadata.uid));
    let Some(sa) = sa else {
        return delete_secret(srv, ns, name, &s.metadata.uid).await;
    };
    let sa_ref = ServiceAccountRef {
        namespace: ns.to_string(),
        name: sa_name.to_string(),
        uid: sa.metadata.uid.clone(),
    };
    if !needs_update(srv, &s, &sa_ref) {
        return Ok(());
    }
    let Some(info) = srv.registry().lookup("", "v1", "secrets") else {
        return Ok(());
    };
    let secret_uid = s.metadata.uid.clone();
    let r = srv
        .guaranteed_update(&info, Some(ns), name, None, false, |cur| {
            fill(srv, cur, &secret_uid, &sa_ref, name)
        })
        .await;
    match r {
        Ok(_) => Ok(()),
        Err(e) if e.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

fn needs_update(srv: &ApiServer, s: &Head, sa: &ServiceAccountRef) -> bool {
    let data = s.data.clone().unwrap_or_default();
    let ca_wrong = srv
        .inner
        .sa
        .cfg
        .ca_pem
        .as_deref()
        .is_some_and(|ca| data.get("ca.crt") != Some(&b64(ca)));
    data.get("token").is_none_or(String::is_empty)
        || ca_wrong
        || data.get("namespace") != Some(&b64(&sa.namespace))
        || s.annotation(SA_UID_ANNOTATION) != Some(sa.uid.as_str())
}

/// The desired Secret: the current one with token, ca.crt, namespace and the uid annotation.
fn fill(
    srv: &ApiServer,
    cur: &Value,
    secret_uid: &str,
    sa: &ServiceAccountRef,
    secret_name: &str,
) -> ApiResult<Option<Value>> {
    if cur.pointer("/metadata/uid").and_then(Value::as_str) != Some(secret_uid)
        || cur.pointer("/metadata/deletionTimestamp").is_some()
    {
        return Ok(None);
    }
    let mut new = cur.clone();
    let Some(root) = new.as_object_mut() else {
        return Ok(None);
    };
    let data = root
        .entry("data")
        .or_insert_with(|| Value::Object(Map::new()));
    if !data.is_object() {
        *data = Value::Object(Map::new());
    }
    if let Value::Object(d) = data {
        let has_token = d
            .get("token")
            .and_then(Value::as_str)
            .is_some_and(|t| !t.is_empty());
        if !has_token {
            let token = srv
                .inner
                .sa
                .key
                .sign_legacy(sa, secret_name)
                .map_err(|e| crate::storage::errors::ApiError::internal(e.to_string()))?;
            d.insert("token".into(), json!(b64(&token)));
        }
        if let Some(ca) = &srv.inner.sa.cfg.ca_pem {
            d.insert("ca.crt".into(), json!(b64(ca)));
        }
        d.insert("namespace".into(), json!(b64(&sa.namespace)));
    }
    let meta = crate::storage::objects::meta_mut(&mut new);
    let ann = meta
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()));
    if !ann.is_object() {
        *ann = Value::Object(Map::new());
    }
    if let Value::Object(a) = ann {
        a.insert(SA_NAME_ANNOTATION.into(), json!(sa.name));
        a.insert(SA_UID_ANNOTATION.into(), json!(sa.uid));
    }
    Ok(Some(new))
}

async fn delete_secret(srv: &ApiServer, ns: &str, name: &str, uid: &str) -> ApiResult<()> {
    let Some(info) = srv.registry().lookup("", "v1", "secrets") else {
        return Ok(());
    };
    let opts = DeleteOpts {
        uid: (!uid.is_empty()).then(|| uid.to_string()),
        ..DeleteOpts::default()
    };
    match srv.delete(&info, Some(ns), name, &opts).await {
        Ok(_) => Ok(()),
        // Gone already, or replaced by a new Secret of the same name (its own sync judges it).
        Err(e) if e.code == 404 || e.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Creates the `default` ServiceAccount of an active namespace when it is missing.
async fn ensure_default(srv: &ApiServer, ns: &str) -> ApiResult<()> {
    if !srv.inner.sa.cfg.create_default
        || head(srv, "serviceaccounts", ns, DEFAULT_SERVICE_ACCOUNT).is_some()
    {
        return Ok(());
    }
    let active = head(srv, "namespaces", "", ns).is_some_and(|n| !n.deleting());
    let Some(info) = srv.registry().lookup("", "v1", "serviceaccounts") else {
        return Ok(());
    };
    if !active {
        return Ok(());
    }
    let sa = json!({
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": DEFAULT_SERVICE_ACCOUNT, "namespace": ns},
    });
    match srv.create(&info, Some(ns), sa, false).await {
        Ok(_) => Ok(()),
        // Created meanwhile, or the namespace is going away.
        Err(e) if matches!(e.code, 403 | 404 | 409) => Ok(()),
        Err(e) => Err(e),
    }
}

/// A ServiceAccount was deleted: delete the token Secrets that name it (and its uid, or none).
async fn delete_tokens_of(srv: &ApiServer, sa_key: &str, sa_obj: &Obj) -> ApiResult<()> {
    let (ns, sa_name) = split_key(sa_key);
    let sa_uid = parse(sa_obj).metadata.uid;
    let page = srv
        .store()
        .list(&format!("{SECRETS}{ns}/"), None, None, None, &|_, _| true)
        .map_err(|e| crate::storage::errors::ApiError::from_store(e, "", "secrets", ""))?;
    for (key, obj) in page.items {
        let s = parse(&obj);
        if s.type_.as_deref() != Some(TOKEN_SECRET_TYPE)
            || s.annotation(SA_NAME_ANNOTATION) != Some(sa_name)
        {
            continue;
        }
        if s.annotation(SA_UID_ANNOTATION)
            .is_some_and(|u| !u.is_empty() && u != sa_uid)
        {
            continue;
        }
        let (_, name) = split_key(&key);
        delete_secret(srv, ns, name, &s.metadata.uid).await?;
    }
    Ok(())
}
