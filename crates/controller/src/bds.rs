//! The BundleDeployment cache: a projection of each BundleDeployment holding only what the
//! reconcilers read, indexed by cluster namespace and by bundle.
//!
//! A manager holds one BundleDeployment per bundle and cluster (50,000 for 50 bundles on 1,000
//! clusters); whole objects (spec with `options` and `stagedOptions`, metadata, status with every
//! resource) cost about 6.7 KiB each. What the reconcilers need is far less: the labels that
//! route events and name owners, the deployment IDs rollout reads, a hash of what the Bundle
//! reconciler writes (to decide "unchanged, do not write"), the resourceVersion an update is
//! conditioned on, and the status parts the summaries read. Strings shared by many
//! BundleDeployments (a bundle's name and IDs, a cluster's namespace) are interned.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use fleet_api::keys::*;
use fleet_api::{BundleDeployment, BundleDeploymentSpec, ModifiedStatus, NonReadyStatus};
use fleet_api::{BundleDeploymentStatus, ResourceCounts};
use fleet_targeting::status::DeploymentFacts;
use kube::runtime::watcher;

/// An interned string (shared by every cached BundleDeployment that holds the same value).
pub type Str = Arc<str>;

/// (namespace, name) of a BundleDeployment.
pub type BdKey = (Str, Str);

/// Fingerprints of what the Bundle reconciler writes into a BundleDeployment, to compare a
/// desired one with the cached one without caching either.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpecHash {
    /// The labels and the spec without `options`, `deploymentID` (which rollout may keep as
    /// the cluster has them while the rest changes) and `valuesHash` (which follows from the
    /// two deployment IDs, each a hash of options with their values: compared apart where
    /// known).
    pub rest: u64,
    /// `spec.options`.
    pub options: u64,
}

/// Feeds serialized bytes into a hasher (no buffer).
struct HashWriter<'a>(&'a mut std::collections::hash_map::DefaultHasher);

impl std::io::Write for HashWriter<'_> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.write(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn hash_json(v: &impl serde::Serialize, h: &mut std::collections::hash_map::DefaultHasher) {
    // The serialized form is what the server stores: equal forms need no write. (No field of a
    // BundleDeployment's spec is a map of unspecified order once Helm values are split out.)
    let _ = serde_json::to_writer(HashWriter(h), v);
}

impl SpecHash {
    /// Hashes a spec and labels (`options`, `deploymentID` and `valuesHash` are taken out and
    /// put back).
    pub fn of(
        spec: &mut BundleDeploymentSpec,
        labels: &Option<BTreeMap<String, String>>,
    ) -> SpecHash {
        let options = std::mem::take(&mut spec.options);
        let id = std::mem::take(&mut spec.deployment_id);
        let values_hash = std::mem::take(&mut spec.values_hash);
        let mut h = std::collections::hash_map::DefaultHasher::new();
        hash_json(&*spec, &mut h);
        hash_json(labels, &mut h);
        let rest = h.finish();
        let mut h = std::collections::hash_map::DefaultHasher::new();
        hash_json(&options, &mut h);
        spec.options = options;
        spec.deployment_id = id;
        spec.values_hash = values_hash;
        SpecHash {
            rest,
            options: h.finish(),
        }
    }

    /// Both fingerprints and a [`values_fingerprint`] in one word, never 0 (0 means "not
    /// known" where these are remembered).
    pub fn with_values(&self, values: u64) -> u64 {
        (self.rest ^ self.options.rotate_left(32) ^ values.rotate_left(16)) | 1
    }
}

/// Fingerprint of a `valuesHash` (0: none), enough to tell whether the options Secret changed.
pub fn values_fingerprint(values_hash: &str) -> u64 {
    if values_hash.is_empty() {
        return 0;
    }
    let mut h = std::collections::hash_map::DefaultHasher::new();
    values_hash.hash(&mut h);
    h.finish() | 1
}

/// A condition the summaries read (`Deployed`, `Installed`, `Monitored`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SummaryCondition {
    /// The condition's type.
    pub type_: Str,
    /// Whether its status is `False`.
    pub is_false: bool,
    /// Its message.
    pub message: Str,
}

/// The parts of a BundleDeployment's status that Bundle, GitRepo and Cluster summaries read.
#[derive(Clone, Debug, PartialEq)]
pub struct BdStatus {
    /// `appliedDeploymentID`.
    pub applied_deployment_id: Str,
    /// `ready`.
    pub ready: bool,
    /// `nonModified`.
    pub non_modified: bool,
    /// The conditions deployment messages and states are made of, in their order.
    pub conditions: Box<[SummaryCondition]>,
    /// `modifiedStatus`.
    pub modified_status: Box<[ModifiedStatus]>,
    /// `nonReadyStatus`.
    pub non_ready_status: Box<[NonReadyStatus]>,
    /// `resourceCounts`.
    pub resource_counts: ResourceCounts,
}

/// The labels a bundle's BundleDeployments share (one copy per bundle and Content).
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct BundleLabels {
    /// Label `fleet.cattle.io/bundle-name`.
    pub bundle: Option<Str>,
    /// Label `fleet.cattle.io/bundle-namespace`.
    pub bundle_namespace: Option<Str>,
    /// Label `fleet.cattle.io/repo-name`.
    pub repo: Option<Str>,
    /// Label `fleet.cattle.io/bundle-content-name` (the Content it deploys).
    pub content: Option<Str>,
}

/// The labels a cluster's BundleDeployments share (one copy per cluster).
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ClusterLabels {
    /// Label `fleet.cattle.io/cluster`.
    pub cluster: Option<Str>,
    /// Label `fleet.cattle.io/cluster-namespace`.
    pub cluster_namespace: Option<Str>,
}

/// What the reconcilers know of one BundleDeployment.
#[derive(Debug)]
pub struct CachedBd {
    /// `metadata.resourceVersion`: an update is conditioned on it.
    pub resource_version: Box<str>,
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
    epoch: u32,
    /// Its bundle's labels.
    pub owner: Arc<BundleLabels>,
    /// Its cluster's labels.
    pub target: Arc<ClusterLabels>,
    /// `spec.deploymentID`.
    pub deployment_id: Str,
    /// `spec.stagedDeploymentID`.
    pub staged_deployment_id: Str,
    /// Fingerprints of its spec and labels.
    pub spec_hash: SpecHash,
    /// [`values_fingerprint`] of `spec.valuesHash`.
    pub values_hash: u64,
    /// What the summaries read of its status (None: no status).
    pub status: Option<Box<BdStatus>>,
}

impl CachedBd {
    /// Its own state inputs.
    pub fn facts(&self) -> Facts<'_> {
        Facts {
            deployment_id: &self.deployment_id,
            staged_deployment_id: &self.staged_deployment_id,
            status: self.status.as_deref(),
        }
    }
}

/// Deployment IDs and a cached status, for `fleet_targeting::status::{state_of, message_of}`
/// (the Bundle reconciler shows its desired IDs with the status the agent last reported).
pub struct Facts<'a> {
    /// `spec.deploymentID`.
    pub deployment_id: &'a str,
    /// `spec.stagedDeploymentID`.
    pub staged_deployment_id: &'a str,
    /// The status, if any.
    pub status: Option<&'a BdStatus>,
}

impl DeploymentFacts for Facts<'_> {
    fn deployment_id(&self) -> &str {
        self.deployment_id
    }
    fn staged_deployment_id(&self) -> &str {
        self.staged_deployment_id
    }
    fn applied_deployment_id(&self) -> &str {
        self.status.map_or("", |s| &s.applied_deployment_id)
    }
    fn ready(&self) -> bool {
        self.status.is_some_and(|s| s.ready)
    }
    fn non_modified(&self) -> bool {
        self.status.is_some_and(|s| s.non_modified)
    }
    fn deployed_false(&self) -> bool {
        self.status.is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| &*c.type_ == "Deployed" && c.is_false)
        })
    }
    fn condition_message(&self, type_: &str) -> &str {
        self.status
            .and_then(|s| s.conditions.iter().find(|c| &*c.type_ == type_))
            .map_or("", |c| &c.message)
    }
}

/// Interned values; those no cached object holds any more are swept when the table doubles.
struct Interner<T: ?Sized> {
    set: HashSet<Arc<T>>,
    sweep_at: usize,
}

impl<T: ?Sized> Default for Interner<T> {
    fn default() -> Self {
        Interner {
            set: HashSet::new(),
            sweep_at: 1024,
        }
    }
}

impl<T: ?Sized + Eq + Hash> Interner<T> {
    /// Drops values no cached object holds any more, once the table has doubled since the last
    /// sweep (a sweep is a pass over the whole table).
    fn sweep_if_full(&mut self) {
        if self.set.len() >= self.sweep_at {
            self.set.retain(|a| Arc::strong_count(a) > 1);
            self.set.shrink_to_fit();
            self.sweep_at = (self.set.len() * 2).max(1024);
        }
    }

    fn get<Q>(&mut self, v: &Q) -> Arc<T>
    where
        Arc<T>: std::borrow::Borrow<Q> + for<'a> From<&'a Q>,
        Q: ?Sized + Eq + Hash,
    {
        if let Some(a) = self.set.get(v) {
            return a.clone();
        }
        self.sweep_if_full();
        let a: Arc<T> = Arc::from(v);
        self.set.insert(a.clone());
        a
    }

    fn put(&mut self, v: T) -> Arc<T>
    where
        T: Sized,
    {
        if let Some(a) = self.set.get(&v) {
            return a.clone();
        }
        self.sweep_if_full();
        let a = Arc::new(v);
        self.set.insert(a.clone());
        a
    }
}

#[derive(Default)]
struct Inner {
    /// By namespace, then name (in name order: summaries list entries in that order).
    by_namespace: HashMap<Str, BTreeMap<Str, Arc<CachedBd>>>,
    /// By bundle namespace and name (labels), in (namespace, name) order: the same objects as
    /// `by_namespace`, so a bundle's summary reads its BDs without a lookup each.
    by_bundle: HashMap<Str, HashMap<Str, BTreeMap<BdKey, Arc<CachedBd>>>>,
    len: usize,
    strings: Interner<str>,
    owners: Interner<BundleLabels>,
    targets: Interner<ClusterLabels>,
    /// Bumped by each (re)list: entries a list did not bring keep an older epoch.
    epoch: u32,
}

/// The BundleDeployment cache (one watch of every BundleDeployment feeds it).
pub struct BdCache {
    inner: RwLock<Inner>,
    listed: tokio::sync::watch::Sender<bool>,
}

impl Default for BdCache {
    fn default() -> Self {
        BdCache {
            inner: RwLock::default(),
            listed: tokio::sync::watch::channel(false).0,
        }
    }
}

const SUMMARY_CONDITIONS: [&str; 3] = ["Deployed", "Installed", "Monitored"];

impl Inner {
    fn opt(&mut self, labels: &Option<BTreeMap<String, String>>, k: &str) -> Option<Str> {
        let v = labels.as_ref()?.get(k)?;
        Some(self.strings.get(v))
    }

    fn project_status(&mut self, s: BundleDeploymentStatus) -> BdStatus {
        let conditions = s
            .conditions
            .into_iter()
            .filter(|c| SUMMARY_CONDITIONS.contains(&c.type_.as_str()))
            .map(|c| SummaryCondition {
                type_: self.strings.get(&c.type_),
                is_false: c.status == "False",
                message: self.strings.get(&c.message),
            })
            .collect();
        BdStatus {
            applied_deployment_id: self.strings.get(&s.applied_deployment_id),
            ready: s.ready,
            non_modified: s.non_modified,
            conditions,
            modified_status: s.modified_status.into_boxed_slice(),
            non_ready_status: s.non_ready_status.into_boxed_slice(),
            resource_counts: s.resource_counts,
        }
    }

    fn project(&mut self, bd: BundleDeployment) -> Option<(BdKey, CachedBd)> {
        let BundleDeployment {
            metadata: m,
            mut spec,
            status,
        } = bd;
        let key = (
            self.strings.get(m.namespace.as_deref()?),
            self.strings.get(m.name.as_deref()?),
        );
        let l = &m.labels;
        let cached = CachedBd {
            resource_version: m.resource_version.clone().unwrap_or_default().into(),
            deleting: m.deletion_timestamp.is_some(),
            epoch: self.epoch,
            owner: {
                let o = BundleLabels {
                    bundle: self.opt(l, BUNDLE_LABEL),
                    bundle_namespace: self.opt(l, BUNDLE_NAMESPACE_LABEL),
                    repo: self.opt(l, REPO_LABEL),
                    content: self.opt(l, CONTENT_NAME_LABEL),
                };
                self.owners.put(o)
            },
            target: {
                let t = ClusterLabels {
                    cluster: self.opt(l, CLUSTER_LABEL),
                    cluster_namespace: self.opt(l, CLUSTER_NAMESPACE_LABEL),
                };
                self.targets.put(t)
            },
            spec_hash: SpecHash::of(&mut spec, l),
            deployment_id: self.strings.get(&spec.deployment_id),
            staged_deployment_id: self.strings.get(&spec.staged_deployment_id),
            values_hash: values_fingerprint(&spec.values_hash),
            status: status.map(|s| Box::new(self.project_status(s))),
        };
        Some((key, cached))
    }

    fn owner(bd: &CachedBd) -> (Str, Str) {
        let empty = || Str::from("");
        (
            bd.owner.bundle_namespace.clone().unwrap_or_else(empty),
            bd.owner.bundle.clone().unwrap_or_else(empty),
        )
    }

    fn unindex(&mut self, key: &BdKey, old: &CachedBd) {
        let (bns, bn) = Self::owner(old);
        if let Some(names) = self.by_bundle.get_mut(&bns) {
            if let Some(set) = names.get_mut(&bn) {
                set.remove(key);
                if set.is_empty() {
                    names.remove(&bn);
                }
            }
            if names.is_empty() {
                self.by_bundle.remove(&bns);
            }
        }
    }

    fn insert(&mut self, key: BdKey, bd: CachedBd) -> Option<Arc<CachedBd>> {
        let owner = Self::owner(&bd);
        let bd = Arc::new(bd);
        let old = self
            .by_namespace
            .entry(key.0.clone())
            .or_default()
            .insert(key.1.clone(), bd.clone());
        match &old {
            Some(o) if Self::owner(o) == owner => {}
            Some(o) => self.unindex(&key, o),
            None => self.len += 1,
        }
        self.by_bundle
            .entry(owner.0)
            .or_default()
            .entry(owner.1)
            .or_default()
            .insert(key, bd);
        old
    }

    fn remove(&mut self, ns: &str, name: &str) -> Option<(BdKey, Arc<CachedBd>)> {
        let names = self.by_namespace.get_mut(ns)?;
        let (k, old) = names.remove_entry(name)?;
        let key = (self.strings.get(ns), k);
        if names.is_empty() {
            self.by_namespace.remove(ns);
        }
        self.len -= 1;
        self.unindex(&key, &old);
        Some((key, old))
    }
}

impl BdCache {
    fn read(&self) -> RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Applies one watch event; `route` is called with each object that changed (the new one,
    /// or the last cached one if deleted) and whether its Bundle has not seen the change: a
    /// status (or deletion) the Bundle reconciler did not write. A (re)list that ends drops the
    /// objects it did not bring, routed as deleted; the first marks the cache listed.
    pub fn apply(
        &self,
        ev: watcher::Event<BundleDeployment>,
        mut route: impl FnMut(&CachedBd, bool),
    ) {
        let mut g = self.write();
        match ev {
            watcher::Event::Init => g.epoch = g.epoch.wrapping_add(1),
            watcher::Event::InitApply(bd) | watcher::Event::Apply(bd) => {
                let Some((key, new)) = g.project(bd) else {
                    return;
                };
                let to_bundle = match g.by_namespace.get(&key.0).and_then(|n| n.get(&key.1)) {
                    Some(old) => old.status != new.status || old.deleting != new.deleting,
                    // Created: by its Bundle (which counted it) unless it already has a status.
                    None => new.status.is_some(),
                };
                route(&new, to_bundle);
                g.insert(key, new);
            }
            watcher::Event::Delete(bd) => {
                let m = &bd.metadata;
                let (Some(ns), Some(name)) = (m.namespace.as_deref(), m.name.as_deref()) else {
                    return;
                };
                if let Some((_, old)) = g.remove(ns, name) {
                    route(&old, true);
                }
            }
            watcher::Event::InitDone => {
                let epoch = g.epoch;
                let gone: Vec<(Str, Str)> = g
                    .by_namespace
                    .iter()
                    .flat_map(|(ns, names)| {
                        names
                            .iter()
                            .filter(|(_, bd)| bd.epoch != epoch)
                            .map(|(n, _)| (ns.clone(), n.clone()))
                    })
                    .collect();
                for (ns, name) in gone {
                    if let Some((_, old)) = g.remove(&ns, &name) {
                        route(&old, true);
                    }
                }
                g.by_namespace.shrink_to_fit();
                drop(g);
                self.listed.send_replace(true);
            }
        }
    }

    /// Waits for the first complete list.
    pub async fn wait_until_ready(&self) {
        let _ = self.listed.subscribe().wait_for(|l| *l).await;
    }

    /// The cached BundleDeployment `namespace/name`.
    pub fn get(&self, namespace: &str, name: &str) -> Option<Arc<CachedBd>> {
        self.read().by_namespace.get(namespace)?.get(name).cloned()
    }

    /// Keys of the BDs of a bundle (by their bundle labels), in (namespace, name) order.
    pub fn of_bundle(&self, namespace: &str, name: &str) -> Vec<BdKey> {
        let g = self.read();
        g.by_bundle
            .get(namespace)
            .and_then(|n| n.get(name))
            .map(|s| s.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// The BDs of a bundle with their keys, in (namespace, name) order: a summary over 10,000
    /// of them does not take the lock and look each up.
    pub fn of_bundle_with(&self, namespace: &str, name: &str) -> Vec<(BdKey, Arc<CachedBd>)> {
        let g = self.read();
        g.by_bundle
            .get(namespace)
            .and_then(|n| n.get(name))
            .map(|s| s.iter().map(|(k, bd)| (k.clone(), bd.clone())).collect())
            .unwrap_or_default()
    }

    /// The BDs in a namespace (a cluster namespace), in name order.
    pub fn in_namespace(&self, namespace: &str) -> Vec<(Str, Arc<CachedBd>)> {
        let g = self.read();
        g.by_namespace
            .get(namespace)
            .map(|s| s.iter().map(|(n, bd)| (n.clone(), bd.clone())).collect())
            .unwrap_or_default()
    }

    /// Names of the Contents the cached BDs deploy.
    pub fn contents(&self) -> HashSet<Str> {
        let g = self.read();
        g.by_namespace
            .values()
            .flat_map(|n| n.values())
            .filter_map(|bd| bd.owner.content.clone())
            .collect()
    }

    /// How many BundleDeployments are cached.
    pub fn len(&self) -> usize {
        self.read().len
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bd(
        ns: &str,
        name: &str,
        bundle: &str,
        rv: &str,
        status: serde_json::Value,
    ) -> BundleDeployment {
        serde_json::from_value(json!({
            "apiVersion": API_VERSION, "kind": "BundleDeployment",
            "metadata": {"name": name, "namespace": ns, "resourceVersion": rv, "labels": {
                BUNDLE_LABEL: bundle, BUNDLE_NAMESPACE_LABEL: "fleet-default",
                CLUSTER_LABEL: "c", CLUSTER_NAMESPACE_LABEL: "fleet-default",
            }},
            "spec": {"deploymentID": "d1", "stagedDeploymentID": "d1", "options": {"namespace": "x"}},
            "status": status,
        }))
        .unwrap()
    }

    #[test]
    fn indexes_routes_and_relists() {
        let c = BdCache::default();
        let routed = std::cell::RefCell::new(Vec::new());
        let mut r = |b: &CachedBd, to_bundle: bool| {
            routed
                .borrow_mut()
                .push((b.resource_version.to_string(), to_bundle))
        };
        c.apply(watcher::Event::Init, &mut r);
        c.apply(
            watcher::Event::InitApply(bd("ns1", "a", "a", "1", json!(null))),
            &mut r,
        );
        c.apply(
            watcher::Event::InitApply(bd("ns2", "a", "a", "2", json!(null))),
            &mut r,
        );
        c.apply(watcher::Event::InitDone, &mut r);
        assert_eq!(c.len(), 2);
        assert_eq!(c.of_bundle("fleet-default", "a").len(), 2);
        // A status change reaches the Bundle; a spec-only change does not.
        c.apply(
            watcher::Event::Apply(bd("ns1", "a", "a", "3", json!({"ready": true}))),
            &mut r,
        );
        c.apply(
            watcher::Event::Apply(bd("ns1", "a", "a", "4", json!({"ready": true}))),
            &mut r,
        );
        assert_eq!(
            routed.borrow()[2..],
            [("3".into(), true), ("4".into(), false)]
        );
        let got = c.get("ns1", "a").unwrap();
        assert!(got.status.as_ref().unwrap().ready);
        assert_eq!(&*got.resource_version, "4");
        // A relabelled BD moves to its new bundle.
        c.apply(
            watcher::Event::Apply(bd("ns1", "a", "b", "5", json!(null))),
            &mut r,
        );
        assert_eq!(c.of_bundle("fleet-default", "a").len(), 1);
        assert_eq!(c.of_bundle("fleet-default", "b").len(), 1);
        // A relist drops what it did not bring.
        c.apply(watcher::Event::Init, &mut r);
        c.apply(
            watcher::Event::InitApply(bd("ns1", "a", "b", "5", json!(null))),
            &mut r,
        );
        c.apply(watcher::Event::InitDone, &mut r);
        assert_eq!(c.len(), 1);
        assert!(c.get("ns2", "a").is_none());
        assert!(c.of_bundle("fleet-default", "a").is_empty());
        assert_eq!(c.in_namespace("ns1").len(), 1);
        c.apply(
            watcher::Event::Delete(bd("ns1", "a", "b", "6", json!(null))),
            &mut r,
        );
        assert!(c.is_empty());
        assert!(c.of_bundle("fleet-default", "b").is_empty());
    }

    #[test]
    fn spec_hash_sees_options_apart() {
        let mut a = bd("ns", "a", "a", "1", json!(null));
        let h = SpecHash::of(&mut a.spec, &a.metadata.labels);
        assert_eq!(a.spec.deployment_id, "d1");
        let mut b = a.clone();
        b.spec.options.namespace = "y".into();
        b.spec.deployment_id = "d2".into();
        let hb = SpecHash::of(&mut b.spec, &b.metadata.labels);
        assert_eq!(h.rest, hb.rest);
        assert_ne!(h.options, hb.options);
        b.spec.staged_deployment_id = "d2".into();
        assert_ne!(SpecHash::of(&mut b.spec, &b.metadata.labels).rest, h.rest);
        // valuesHash is compared apart (an unpromoted BD's follows from values not cached).
        let mut c = a.clone();
        c.spec.values_hash = "abc".into();
        let hc = SpecHash::of(&mut c.spec, &c.metadata.labels);
        assert_eq!(hc, h);
        assert_eq!(c.spec.values_hash, "abc");
    }
}
