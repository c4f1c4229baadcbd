//! The agent namespace's ServiceAccounts as a watch keeps them: whether the account a bundle
//! deploys as exists is read from memory, as upstream's agent reads it from its cached client,
//! instead of one GET per deploy (a fifth of a first install's requests to its cluster besides
//! the objects themselves).

use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::Api;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};

/// A watched view of one namespace's ServiceAccounts; the watch ends when this is dropped.
pub struct Accounts {
    store: Store<ServiceAccount>,
    namespace: String,
    task: tokio::task::JoinHandle<()>,
}

impl Accounts {
    /// Starts watching `namespace`'s ServiceAccounts through `client`.
    pub fn watch(client: kube::Client, namespace: &str) -> Accounts {
        let (store, writer) = reflector::store();
        let api: Api<ServiceAccount> = Api::namespaced(client, namespace);
        let task = tokio::spawn(
            reflector::reflector(writer, watcher(api, watcher::Config::default()))
                .default_backoff()
                .for_each(|ev| {
                    if let Err(e) = ev {
                        tracing::debug!("service account watch: {e}");
                    }
                    futures::future::ready(())
                }),
        );
        Accounts {
            store,
            namespace: namespace.to_string(),
            task,
        }
    }

    /// Whether account `name` exists, once the watch has listed; None before (then ask the
    /// server).
    pub fn exists(&self, name: &str) -> Option<bool> {
        self.store.wait_until_ready().now_or_never()?.ok()?;
        let key = ObjectRef::new(name).within(&self.namespace);
        Some(self.store.get(&key).is_some())
    }
}

impl Drop for Accounts {
    fn drop(&mut self) {
        self.task.abort();
    }
}
