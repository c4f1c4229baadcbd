//! The handle every layer above storage works through: [`ApiServer`] owns the store, the
//! resource table, the live RBAC policy and the service-account key. It is assembled (and its
//! background controllers started) by [`crate::app`]; this module only defines it, so the write
//! path, the controllers and the handlers can all take it without depending on the assembly.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use crate::storage::errors::ApiError;
use crate::storage::registry::Registry;
use crate::storage::store::{Store, StoreConfig, StoreError};

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
    pub service_accounts: crate::security::service_accounts::ServiceAccountConfig,
    /// Set workload status as a healthy cluster would (see [`crate::controllers::simulator`]); off by default,
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
    /// The live RBAC policy (see [`crate::security::policy`]).
    pub(crate) authz: crate::security::policy::Policy,
    /// Service-account signing key and settings.
    pub(crate) sa: crate::security::service_accounts::ServiceAccounts,
    /// Whether a CRD is being deleted, by its store key, as of the revision read: every create
    /// of a custom resource asks, and a CRD's JSON (its schemas) is tens of KiB to parse.
    pub(crate) crd_terminating:
        std::sync::Mutex<HashMap<String, (crate::storage::store::Rev, bool)>>,
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
    /// The live RBAC policy: decisions for callers outside the HTTP path, and its revision.
    pub fn authz(&self) -> &crate::security::policy::Policy {
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
    pub fn store_sync(&self) -> Option<crate::storage::store::StoreSync> {
        self.inner.store.sync_mode()
    }

    /// How many stored objects are held compressed, of how many (walks every key): for tests
    /// and memory figures.
    pub fn store_packed(&self) -> (usize, usize) {
        self.inner.store.packed_count()
    }

    /// Compacts the store's log up to revision `upto` now, as kube-apiserver's periodic etcd
    /// compaction does (the store compacts on its own what is older than
    /// [`crate::storage::store::RETENTION`]): lists and watches from before it answer 410.
    pub async fn compact(
        &self,
        upto: crate::storage::store::Rev,
    ) -> Result<crate::storage::store::Rev, crate::storage::store::StoreError> {
        self.inner.store.compact(upto).await
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

/// The fields of a stored object token checks need; everything else is skipped when parsing.
#[derive(Deserialize, Default)]
pub(crate) struct Head {
    #[serde(default)]
    pub(crate) metadata: HeadMeta,
    #[serde(default, rename = "type")]
    pub(crate) type_: Option<String>,
    #[serde(default)]
    pub(crate) data: Option<HashMap<String, String>>,
}

/// Metadata subset of [`Head`].
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HeadMeta {
    #[serde(default)]
    pub(crate) uid: String,
    #[serde(default)]
    pub(crate) deletion_timestamp: Option<serde_json::Value>,
    #[serde(default)]
    pub(crate) annotations: HashMap<String, String>,
}

impl Head {
    pub(crate) fn deleting(&self) -> bool {
        self.metadata
            .deletion_timestamp
            .as_ref()
            .is_some_and(|v| !v.is_null())
    }
    pub(crate) fn annotation(&self, k: &str) -> Option<&str> {
        self.metadata.annotations.get(k).map(String::as_str)
    }
}

/// Reads `/core/PLURAL/NS/NAME` from the store (an in-memory map lookup plus a small parse).
pub(crate) fn head(srv: &ApiServer, plural: &str, ns: &str, name: &str) -> Option<Head> {
    let obj = srv.store().get(&format!("/core/{plural}/{ns}/{name}"))?;
    serde_json::from_slice::<Head>(&obj.json()).ok()
}
