//! Clusters by (namespace, clientID), kept from a watch: the registration controller finds a
//! returning cluster without listing every Cluster per request.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use fleet_api::Cluster;
use futures::StreamExt;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use tokio::sync::watch;

type Key = (String, String);

#[derive(Default)]
struct Maps {
    /// (namespace, clientID) → Cluster name.
    by_client: HashMap<Key, String>,
    /// (namespace, name) → clientID, to drop stale entries when a Cluster changes or goes.
    by_name: HashMap<Key, String>,
}

impl Maps {
    fn apply(&mut self, c: &Cluster) {
        self.remove(c);
        let ns = c.namespace().unwrap_or_default();
        let name = c.name_any();
        if c.spec.client_id.is_empty() {
            return;
        }
        self.by_client
            .insert((ns.clone(), c.spec.client_id.clone()), name.clone());
        self.by_name.insert((ns, name), c.spec.client_id.clone());
    }

    fn remove(&mut self, c: &Cluster) {
        let ns = c.namespace().unwrap_or_default();
        let name = c.name_any();
        if let Some(old) = self.by_name.remove(&(ns.clone(), name.clone())) {
            let k = (ns, old);
            if self.by_client.get(&k) == Some(&name) {
                self.by_client.remove(&k);
            }
        }
    }
}

/// The index, shared by the reconcilers; [`ClusterIndex::ready`] resolves after the first list.
#[derive(Clone)]
pub struct ClusterIndex {
    maps: Arc<RwLock<Maps>>,
    ready: watch::Receiver<bool>,
}

impl ClusterIndex {
    /// Starts the watch that feeds the index (runs until the runtime stops).
    pub fn spawn(api: Api<Cluster>) -> ClusterIndex {
        let maps = Arc::new(RwLock::new(Maps::default()));
        let (tx, rx) = watch::channel(false);
        let feed = maps.clone();
        tokio::spawn(async move {
            let mut pending: Option<Maps> = None;
            let mut events = watcher(api, watcher::Config::default())
                .default_backoff()
                .boxed();
            while let Some(ev) = events.next().await {
                let ev = match ev {
                    Ok(ev) => ev,
                    Err(e) => {
                        tracing::debug!(error = %e, "cluster index watch");
                        continue;
                    }
                };
                let mut live = feed.write().unwrap_or_else(|e| e.into_inner());
                match ev {
                    watcher::Event::Init => pending = Some(Maps::default()),
                    watcher::Event::InitApply(c) => {
                        if let Some(p) = pending.as_mut() {
                            p.apply(&c)
                        }
                    }
                    watcher::Event::InitDone => {
                        if let Some(p) = pending.take() {
                            *live = p;
                        }
                        let _ = tx.send(true);
                    }
                    watcher::Event::Apply(c) => live.apply(&c),
                    watcher::Event::Delete(c) => live.remove(&c),
                }
            }
        });
        ClusterIndex { maps, ready: rx }
    }

    /// Waits until the first full list is in.
    pub async fn ready(&self) {
        let mut rx = self.ready.clone();
        let _ = rx.wait_for(|r| *r).await;
    }

    /// The Cluster in `namespace` registered with `client_id`, if the index knows one.
    pub fn find(&self, namespace: &str, client_id: &str) -> Option<String> {
        let maps = self.maps.read().unwrap_or_else(|e| e.into_inner());
        maps.by_client
            .get(&(namespace.to_string(), client_id.to_string()))
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(name: &str, id: &str) -> Cluster {
        let mut c = Cluster::new(name, Default::default());
        c.metadata.namespace = Some("ws".into());
        c.spec.client_id = id.into();
        c
    }

    #[test]
    fn follows_changes_and_deletes() {
        let mut m = Maps::default();
        m.apply(&cluster("a", "id1"));
        assert_eq!(
            m.by_client
                .get(&("ws".into(), "id1".into()))
                .map(String::as_str),
            Some("a")
        );
        m.apply(&cluster("a", "id2"));
        assert!(!m.by_client.contains_key(&("ws".into(), "id1".into())));
        m.remove(&cluster("a", "id2"));
        assert!(m.by_client.is_empty() && m.by_name.is_empty());
    }
}
