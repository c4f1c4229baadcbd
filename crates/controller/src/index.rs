//! Index of BundleDeployments by bundle and by cluster namespace, kept current from the watch
//! events, so a Bundle or Cluster reconcile looks up its BDs instead of scanning every BD.

use std::collections::{BTreeSet, HashMap};
use std::sync::RwLock;

use fleet_api::BundleDeployment;
use fleet_api::keys::{BUNDLE_LABEL, BUNDLE_NAMESPACE_LABEL};
use kube::runtime::watcher;

/// (namespace, name) of a BundleDeployment.
pub type BdKey = (String, String);

#[derive(Default)]
struct Inner {
    by_bundle: HashMap<(String, String), BTreeSet<BdKey>>,
    by_namespace: HashMap<String, BTreeSet<String>>,
    owner: HashMap<BdKey, (String, String)>,
}

/// BundleDeployments by (bundle namespace, bundle name) and by namespace.
#[derive(Default)]
pub struct BdIndex {
    inner: RwLock<Inner>,
}

fn key(bd: &BundleDeployment) -> Option<(BdKey, (String, String))> {
    let m = &bd.metadata;
    let k = (m.namespace.clone()?, m.name.clone()?);
    let l = m.labels.as_ref();
    let b = (
        l.and_then(|l| l.get(BUNDLE_NAMESPACE_LABEL))
            .cloned()
            .unwrap_or_default(),
        l.and_then(|l| l.get(BUNDLE_LABEL))
            .cloned()
            .unwrap_or_default(),
    );
    Some((k, b))
}

impl Inner {
    fn add(&mut self, bd: &BundleDeployment) {
        let Some((k, b)) = key(bd) else { return };
        self.remove(&k);
        self.by_bundle
            .entry(b.clone())
            .or_default()
            .insert(k.clone());
        self.by_namespace
            .entry(k.0.clone())
            .or_default()
            .insert(k.1.clone());
        self.owner.insert(k, b);
    }

    fn remove(&mut self, k: &BdKey) {
        if let Some(b) = self.owner.remove(k) {
            if let Some(s) = self.by_bundle.get_mut(&b) {
                s.remove(k);
                if s.is_empty() {
                    self.by_bundle.remove(&b);
                }
            }
            if let Some(s) = self.by_namespace.get_mut(&k.0) {
                s.remove(&k.1);
                if s.is_empty() {
                    self.by_namespace.remove(&k.0);
                }
            }
        }
    }
}

impl BdIndex {
    /// Applies one watch event (a relist starts over).
    pub fn apply(&self, ev: &watcher::Event<BundleDeployment>) {
        let mut g = self.inner.write().unwrap_or_else(|p| p.into_inner());
        match ev {
            watcher::Event::Init => *g = Inner::default(),
            watcher::Event::InitApply(bd) | watcher::Event::Apply(bd) => g.add(bd),
            watcher::Event::Delete(bd) => {
                if let Some((k, _)) = key(bd) {
                    g.remove(&k)
                }
            }
            watcher::Event::InitDone => {}
        }
    }

    /// BDs of a bundle.
    pub fn of_bundle(&self, namespace: &str, name: &str) -> Vec<BdKey> {
        let g = self.inner.read().unwrap_or_else(|p| p.into_inner());
        g.by_bundle
            .get(&(namespace.to_string(), name.to_string()))
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Names of the BDs in a namespace (a cluster namespace).
    pub fn in_namespace(&self, namespace: &str) -> Vec<String> {
        let g = self.inner.read().unwrap_or_else(|p| p.into_inner());
        g.by_namespace
            .get(namespace)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }
}
