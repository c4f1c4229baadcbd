//! Assembly of an [`ApiServer`]: opens the store, bootstraps the system namespaces, re-serves
//! persisted CRDs and starts the background controllers (garbage collection, namespace
//! finalization, RBAC policy, service accounts). The TLS/serving layer wraps
//! [`ApiServer::router`].

use std::sync::Arc;

use axum::Router;
use serde_json::{Value, json};

use crate::storage::registry::Registry;
use crate::storage::store::{Store, StoreError};

use crate::state::Inner;
pub use crate::state::{ApiServer, ApiServerConfig, Error, SYSTEM_NAMESPACES};

impl ApiServer {
    /// Opens the store, bootstraps default/kube-system/kube-public (stable uid: created once,
    /// persisted), re-serves persisted CRDs, starts background work (GC, namespace finalization).
    pub async fn new(cfg: ApiServerConfig) -> Result<ApiServer, Error> {
        let store = Store::open(cfg.store.clone())?;
        let sa =
            crate::security::service_accounts::ServiceAccounts::new(cfg.service_accounts.clone())
                .map_err(|e| Error::Bootstrap(e.to_string()))?;
        let inner = Arc::new(Inner {
            store,
            registry: Registry::with_builtins(),
            cfg,
            gc_kick: tokio::sync::Notify::new(),
            gc_stop: std::sync::atomic::AtomicBool::new(false),
            authz: crate::security::policy::Policy::default(),
            sa,
            crd_terminating: Default::default(),
        });
        let server = ApiServer { inner };
        server.bootstrap().await?;
        crate::controllers::rbac_policy::start(&server).await?;
        crate::controllers::gc::spawn(server.clone());
        crate::controllers::service_accounts::spawn(server.clone());
        if server.inner.cfg.simulate_workloads {
            crate::controllers::simulator::spawn(server.clone());
        }
        Ok(server)
    }

    async fn bootstrap(&self) -> Result<(), Error> {
        let ns = self
            .inner
            .registry
            .lookup("", "v1", "namespaces")
            .ok_or_else(|| Error::Bootstrap("namespaces not registered".into()))?;
        for name in SYSTEM_NAMESPACES {
            let key = ns.key(None, name);
            if self.inner.store.get(&key).is_some() {
                continue;
            }
            let obj = json!({
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {
                    "name": name,
                    "uid": uuid::Uuid::new_v4().to_string(),
                    "creationTimestamp": crate::storage::objects::now(),
                    "labels": {"kubernetes.io/metadata.name": name},
                },
                "spec": {"finalizers": ["kubernetes"]},
                "status": {"phase": "Active"},
            });
            match self.inner.store.create(&key, obj).await {
                Ok(_) | Err(StoreError::AlreadyExists(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        // Re-serve persisted CRDs.
        let page = self.inner.store.list(
            "/apiextensions.k8s.io/customresourcedefinitions/",
            None,
            None,
            None,
            &|_, _| true,
        )?;
        for (_, obj) in page.items {
            let Ok(v) = serde_json::from_slice::<Value>(&obj.json()) else {
                continue;
            };
            if v.pointer("/metadata/deletionTimestamp").is_some() {
                continue;
            }
            if let Ok(infos) = crate::storage::crd::infos_from_crd(&v) {
                let name = v
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                self.inner.registry.set_crd(name, infos);
            }
        }
        Ok(())
    }

    /// Every route, plain HTTP (no TLS, no authn; the caller layers those on). Includes
    /// /healthz, /readyz, /livez (kube-apiserver style "ok" bodies, and `?verbose`), /version.
    /// Requests that carry a user (from the authentication layer) are authorized by RBAC, with
    /// impersonation; see [`crate::http::authorize::authorize`].
    pub fn router(&self) -> Router {
        crate::http::wrap(crate::http::shared_router(), axum::Extension(self.clone()))
    }
}
