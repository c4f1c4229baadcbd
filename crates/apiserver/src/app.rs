//! `ApiServer`: owns the store and the resource table, bootstraps the system namespaces, re-serves
//! persisted CRDs and starts the background controllers (garbage collection, namespace
//! finalization). The TLS/serving layer wraps [`ApiServer::router`].

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use serde_json::{Value, json};

use crate::errors::ApiError;
use crate::registry::Registry;
use crate::store::{Store, StoreConfig, StoreError};

/// Settings of the embedded API server.
#[derive(Clone, Debug)]
pub struct ApiServerConfig {
    /// Storage settings (file or memory, watch history length).
    pub store: StoreConfig,
    /// How often an idle watch with `allowWatchBookmarks` gets a BOOKMARK.
    pub bookmark_interval: Duration,
    /// Watch duration when the client gives no `timeoutSeconds` (kube-apiserver: 30-60 min).
    pub default_watch_timeout: Duration,
    /// Reported by `/version` (`gitVersion`).
    pub git_version: String,
    /// Service-account token signing key location, issuer, audiences and CA.
    pub service_accounts: crate::serviceaccount::ServiceAccountConfig,
    /// Set workload status as a healthy cluster would (see [`crate::simulator`]); off by default,
    /// since on a real cluster's stand-in nothing else may write status unasked.
    pub simulate_workloads: bool,
}

impl ApiServerConfig {
    /// In-memory store (tests, throwaway servers).
    pub fn in_memory() -> ApiServerConfig {
        ApiServerConfig::with_store(StoreConfig::in_memory())
    }

    /// Defaults around a given store configuration.
    pub fn with_store(store: StoreConfig) -> ApiServerConfig {
        ApiServerConfig {
            store,
            bookmark_interval: Duration::from_secs(30),
            default_watch_timeout: Duration::from_secs(1800),
            git_version: "v1.33.0-fleet".to_string(),
            service_accounts: Default::default(),
            simulate_workloads: false,
        }
    }
}

/// Errors opening the API server.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The store could not be opened or read.
    #[error("store: {0}")]
    Store(#[from] StoreError),
    /// Bootstrapping the system namespaces or CRDs failed.
    #[error("bootstrap: {0}")]
    Bootstrap(String),
}

impl From<ApiError> for Error {
    fn from(e: ApiError) -> Error {
        Error::Bootstrap(e.to_string())
    }
}

/// Shared state of one API server instance.
pub(crate) struct Inner {
    pub(crate) store: Store,
    pub(crate) registry: Registry,
    pub(crate) cfg: ApiServerConfig,
    /// Wakes the garbage collector / namespace controller early.
    pub(crate) gc_kick: tokio::sync::Notify,
    /// Set by [`ApiServer::shutdown`] to stop background work.
    pub(crate) gc_stop: std::sync::atomic::AtomicBool,
    /// The live RBAC policy (see `authz.rs`).
    pub(crate) authz: crate::authz::Policy,
    /// Service-account signing key and settings.
    pub(crate) sa: crate::serviceaccount::ServiceAccounts,
}

/// The embedded Kubernetes-compatible API server (cheap to clone).
#[derive(Clone)]
pub struct ApiServer {
    pub(crate) inner: Arc<Inner>,
}

/// Namespaces that exist from the start, as in every Kubernetes cluster.
pub const SYSTEM_NAMESPACES: [&str; 4] =
    ["default", "kube-system", "kube-public", "kube-node-lease"];

impl ApiServer {
    /// Opens the store, bootstraps default/kube-system/kube-public (stable uid: created once,
    /// persisted), re-serves persisted CRDs, starts background work (GC, namespace finalization).
    pub async fn new(cfg: ApiServerConfig) -> Result<ApiServer, Error> {
        let store = Store::open(cfg.store.clone())?;
        let sa = crate::serviceaccount::ServiceAccounts::new(cfg.service_accounts.clone())
            .map_err(|e| Error::Bootstrap(e.to_string()))?;
        let inner = Arc::new(Inner {
            store,
            registry: Registry::with_builtins(),
            cfg,
            gc_kick: tokio::sync::Notify::new(),
            gc_stop: std::sync::atomic::AtomicBool::new(false),
            authz: crate::authz::Policy::default(),
            sa,
        });
        let server = ApiServer { inner };
        server.bootstrap().await?;
        crate::authz::start(&server).await?;
        crate::gc::spawn(server.clone());
        crate::serviceaccount::controller::spawn(server.clone());
        if server.inner.cfg.simulate_workloads {
            crate::simulator::spawn(server.clone());
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
                    "creationTimestamp": crate::objects::now(),
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
            let Ok(v) = serde_json::from_slice::<Value>(&obj.json) else {
                continue;
            };
            if v.pointer("/metadata/deletionTimestamp").is_some() {
                continue;
            }
            if let Ok(infos) = crate::crd::infos_from_crd(&v) {
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
    /// impersonation; see [`crate::authz::authorize`].
    pub fn router(&self) -> Router {
        crate::handlers::router(self.clone()).layer(axum::middleware::from_fn_with_state(
            self.clone(),
            crate::authz::authorize,
        ))
    }

    /// The live RBAC policy: decisions for callers outside the HTTP path, and its revision.
    pub fn authz(&self) -> &crate::authz::Policy {
        &self.inner.authz
    }

    /// Stops background work and closes the store (ends every watch). Requests after this fail.
    pub fn shutdown(&self) {
        self.inner
            .gc_stop
            .store(true, std::sync::atomic::Ordering::Relaxed);
        self.inner.gc_kick.notify_one();
        self.inner.store.close();
    }

    /// How the store commits, as SQLite reports it (`None` for an in-memory store).
    pub fn store_sync(&self) -> Option<crate::store::StoreSync> {
        self.inner.store.sync_mode()
    }

    /// The store, for in-crate background work and tests.
    pub(crate) fn store(&self) -> &Store {
        &self.inner.store
    }

    /// The resource table.
    pub(crate) fn registry(&self) -> &Registry {
        &self.inner.registry
    }
}
