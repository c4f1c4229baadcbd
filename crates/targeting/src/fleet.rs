//! [`Fleet`]: the clusters, cluster groups, bundle namespace mappings and namespace labels that
//! targeting reads, indexed (by namespace, name, display name, label and group membership) and
//! kept current one object at a time, so a controller can feed it watch events without rebuilding
//! the indexes for every cluster on each event.
//!
//! Invariant: after any sequence of upserts and removes, every index (and every group's member
//! set) equals what [`Fleet::new`] builds from the same final objects; ids in an index always name
//! a live slot.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use fleet_api::keys::CLUSTER_DISPLAY_NAME_LABEL;
use fleet_api::{Bundle, BundleNamespaceMapping, Cluster, ClusterGroup};
use kube::core::ObjectMeta;
use serde_json::Value;

use crate::Error;
use crate::matcher::{ClusterMatcher, ClusterView};
use crate::selector::{Labels, Selector};

/// Labels of an object without any.
pub(crate) static NO_LABELS: Labels = BTreeMap::new();

pub(crate) fn ns_of(meta: &ObjectMeta) -> &str {
    meta.namespace.as_deref().unwrap_or("")
}

pub(crate) fn name_of(meta: &ObjectMeta) -> &str {
    meta.name.as_deref().unwrap_or("")
}

/// Whether two versions of a Cluster target alike: same name, namespace, labels, annotations,
/// spec and cluster namespace (`status.namespace`). Targeting, rollout and the values templated
/// into BundleDeployments read nothing else of a Cluster.
fn same_targeting(a: &Cluster, b: &Cluster) -> bool {
    let (m, n) = (&a.metadata, &b.metadata);
    m.name == n.name
        && m.namespace == n.namespace
        && labels_of(m) == labels_of(n)
        && m.annotations.as_ref().filter(|x| !x.is_empty())
            == n.annotations.as_ref().filter(|x| !x.is_empty())
        && a.spec == b.spec
        && cluster_namespace(a) == cluster_namespace(b)
}

fn cluster_namespace(c: &Cluster) -> &str {
    c.status.as_ref().map_or("", |s| s.namespace.as_str())
}

fn labels_of(meta: &ObjectMeta) -> &Labels {
    meta.labels.as_ref().unwrap_or(&NO_LABELS)
}

/// Namespace and name of an object: how callers name clusters and groups (ids stay internal).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    /// `metadata.namespace` ("" when absent).
    pub namespace: String,
    /// `metadata.name` ("" when absent).
    pub name: String,
}

impl Key {
    /// A key from its two parts.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Key {
        Key {
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// The key of an object.
    pub fn of(meta: &ObjectMeta) -> Key {
        Key::new(ns_of(meta), name_of(meta))
    }
}

/// Values with stable ids: a removed slot is reused by a later insert, no id ever moves.
struct Slab<T> {
    slots: Vec<Option<T>>,
    free: Vec<usize>,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab {
            slots: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<T> Slab<T> {
    fn insert(&mut self, v: T) -> usize {
        match self.free.pop() {
            Some(i) => {
                self.slots[i] = Some(v);
                i
            }
            None => {
                self.slots.push(Some(v));
                self.slots.len() - 1
            }
        }
    }

    fn remove(&mut self, i: usize) -> Option<T> {
        let v = self.slots.get_mut(i)?.take();
        if v.is_some() {
            self.free.push(i);
        }
        v
    }

    fn get(&self, i: usize) -> Option<&T> {
        self.slots.get(i)?.as_ref()
    }

    fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        self.slots.get_mut(i)?.as_mut()
    }

    fn iter(&self) -> impl Iterator<Item = (usize, &T)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.as_ref().map(|s| (i, s)))
    }

    /// One past the highest id in use (for per-id scratch vectors).
    fn bound(&self) -> usize {
        self.slots.len()
    }

    fn len(&self) -> usize {
        self.slots.len() - self.free.len()
    }
}

struct ClusterSlot {
    cluster: Arc<Cluster>,
    /// Position in (name, namespace) order: ranks grow with that order (see [`Fleet::place`]).
    rank: u64,
    /// Ids of the groups whose selector matches the cluster.
    groups: BTreeSet<usize>,
}

struct GroupSlot {
    group: ClusterGroup,
    /// The compiled selector; `None` for a nil or invalid one (matches nothing).
    selector: Option<Selector>,
    /// Ids of the member clusters.
    members: HashSet<usize>,
}

/// The indexes of one namespace.
#[derive(Default)]
struct NsIndex {
    /// Cluster name → id.
    clusters: HashMap<String, usize>,
    /// Cluster name and display name (label) → ids.
    by_name: HashMap<String, HashSet<usize>>,
    /// Label key → value → cluster ids.
    by_label: HashMap<String, HashMap<String, HashSet<usize>>>,
    /// Group name → id.
    groups: HashMap<String, usize>,
}

fn add_id(m: &mut HashMap<String, HashSet<usize>>, k: &str, id: usize) {
    match m.get_mut(k) {
        Some(s) => {
            s.insert(id);
        }
        None => {
            m.insert(k.to_string(), HashSet::from([id]));
        }
    }
}

fn remove_id(m: &mut HashMap<String, HashSet<usize>>, k: &str, id: usize) {
    if let Some(s) = m.get_mut(k) {
        s.remove(&id);
        if s.is_empty() {
            m.remove(k);
        }
    }
}

/// The display name of a cluster when it differs from its name (then it is a second name).
fn alias<'a>(name: &str, labels: &'a Labels) -> Option<&'a str> {
    labels
        .get(CLUSTER_DISPLAY_NAME_LABEL)
        .map(String::as_str)
        .filter(|v| *v != name)
}

impl NsIndex {
    fn index_labels(&mut self, id: usize, name: &str, labels: &Labels) {
        for (k, v) in labels {
            add_id(self.by_label.entry(k.clone()).or_default(), v, id);
        }
        if let Some(a) = alias(name, labels) {
            add_id(&mut self.by_name, a, id);
        }
    }

    fn unindex_labels(&mut self, id: usize, name: &str, labels: &Labels) {
        for (k, v) in labels {
            if let Some(m) = self.by_label.get_mut(k) {
                remove_id(m, v, id);
                if m.is_empty() {
                    self.by_label.remove(k);
                }
            }
        }
        if let Some(a) = alias(name, labels) {
            remove_id(&mut self.by_name, a, id);
        }
    }

    fn is_empty(&self) -> bool {
        self.clusters.is_empty() && self.groups.is_empty()
    }
}

/// Clusters, groups, mappings and namespace labels, indexed for targeting and updated one object
/// at a time. Objects are keyed by (namespace, name): upserting an object with the key of an
/// existing one replaces it.
#[derive(Default)]
pub struct Fleet {
    clusters: Slab<ClusterSlot>,
    groups: Slab<GroupSlot>,
    namespaces: HashMap<String, NsIndex>,
    /// Cluster ids by (name, namespace): the order targets come out in.
    order: BTreeMap<(String, String), usize>,
    mappings: BTreeMap<Key, BundleNamespaceMapping>,
    namespace_labels: BTreeMap<String, Labels>,
    revision: u64,
}

impl Fleet {
    /// Builds the indexes: O(clusters × labels + groups × candidate clusters). Equal to upserting
    /// every object into [`Fleet::default`]; of objects with the same key the last one wins.
    pub fn new(
        clusters: Vec<Cluster>,
        groups: Vec<ClusterGroup>,
        mappings: Vec<BundleNamespaceMapping>,
    ) -> Fleet {
        let mut f = Fleet::default();
        // Clusters first: each group then finds its members through the label index.
        for c in clusters {
            f.upsert_cluster(c);
        }
        for g in groups {
            f.upsert_group(g);
        }
        for m in mappings {
            f.upsert_mapping(m);
        }
        f
    }

    /// Builds a Fleet from arbitrary objects (as `kubectl get … -o yaml` prints them, `List`s
    /// already flattened): Clusters, ClusterGroups, BundleNamespaceMappings and Namespaces (their
    /// labels); other kinds are ignored. Objects without a namespace get `default_namespace`.
    pub fn from_objects(
        objects: impl IntoIterator<Item = Value>,
        default_namespace: &str,
    ) -> Result<Fleet, Error> {
        let mut clusters = Vec::new();
        let mut groups = Vec::new();
        let mut mappings = Vec::new();
        let mut ns_labels = Vec::new();
        for (i, v) in objects.into_iter().enumerate() {
            let kind = v.get("kind").and_then(Value::as_str).unwrap_or("");
            let what = |source| Error::Decode {
                index: i,
                kind: kind.to_string(),
                name: v
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
                    .to_string(),
                source,
            };
            match kind {
                "Cluster" => {
                    let mut c: Cluster = decode(&v).map_err(what)?;
                    c.metadata
                        .namespace
                        .get_or_insert_with(|| default_namespace.to_string());
                    clusters.push(c);
                }
                "ClusterGroup" => {
                    let mut g: ClusterGroup = decode(&v).map_err(what)?;
                    g.metadata
                        .namespace
                        .get_or_insert_with(|| default_namespace.to_string());
                    groups.push(g);
                }
                "BundleNamespaceMapping" => {
                    let mut m: BundleNamespaceMapping = decode(&v).map_err(what)?;
                    m.metadata
                        .namespace
                        .get_or_insert_with(|| default_namespace.to_string());
                    mappings.push(m);
                }
                "Namespace" => {
                    let name = v
                        .pointer("/metadata/name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string();
                    let labels: Option<Labels> = match v.pointer("/metadata/labels") {
                        Some(l) => decode(l).map_err(what)?,
                        None => None,
                    };
                    ns_labels.push((name, labels.unwrap_or_default()));
                }
                _ => {}
            }
        }
        let mut f = Fleet::new(clusters, groups, mappings);
        for (n, l) in ns_labels {
            f.set_namespace_labels(&n, l);
        }
        Ok(f)
    }

    /// Adds or replaces a cluster. Its label and name indexes are updated and, when its labels
    /// changed, its group memberships are recomputed against the groups of its namespace only.
    /// Returns the groups whose membership changed (for ClusterGroup status).
    pub fn upsert_cluster(&mut self, cluster: Cluster) -> Vec<Key> {
        self.upsert_cluster_arc(Arc::new(cluster))
    }

    /// [`Self::upsert_cluster`] of a shared Cluster: the index keeps this very `Arc`, so a
    /// caller that caches its Clusters (a controller's reflector) does not hold two copies.
    /// Only what targeting reads counts as a change (see [`same_targeting`]): a Cluster whose
    /// status summaries changed replaces the one held without moving [`Self::revision`].
    pub fn upsert_cluster_arc(&mut self, cluster: Arc<Cluster>) -> Vec<Key> {
        let ns = ns_of(&cluster.metadata).to_string();
        let name = name_of(&cluster.metadata).to_string();
        let idx = self.namespaces.entry(ns.clone()).or_default();
        let id = match idx.clusters.get(&name) {
            Some(&id) => {
                let Some(slot) = self.clusters.get_mut(id) else {
                    return Vec::new();
                };
                if same_targeting(&slot.cluster, &cluster) {
                    slot.cluster = cluster;
                    return Vec::new();
                }
                self.revision += 1;
                let old = labels_of(&slot.cluster.metadata);
                if old == labels_of(&cluster.metadata) {
                    slot.cluster = cluster;
                    return Vec::new();
                }
                idx.unindex_labels(id, &name, old);
                idx.index_labels(id, &name, labels_of(&cluster.metadata));
                slot.cluster = cluster;
                id
            }
            None => {
                self.revision += 1;
                let id = self.clusters.insert(ClusterSlot {
                    cluster,
                    rank: 0,
                    groups: BTreeSet::new(),
                });
                let labels = self
                    .clusters
                    .get(id)
                    .map(|s| labels_of(&s.cluster.metadata))
                    .unwrap_or(&NO_LABELS);
                idx.clusters.insert(name.clone(), id);
                add_id(&mut idx.by_name, &name, id);
                idx.index_labels(id, &name, labels);
                self.place(id, (name, ns));
                id
            }
        };
        self.refresh_cluster_groups(id)
    }

    /// Removes a cluster (no-op when absent). Returns the groups it was a member of.
    pub fn remove_cluster(&mut self, namespace: &str, name: &str) -> Vec<Key> {
        let Some(idx) = self.namespaces.get_mut(namespace) else {
            return Vec::new();
        };
        let Some(id) = idx.clusters.remove(name) else {
            return Vec::new();
        };
        let Some(slot) = self.clusters.remove(id) else {
            return Vec::new();
        };
        self.revision += 1;
        remove_id(&mut idx.by_name, name, id);
        idx.unindex_labels(id, name, labels_of(&slot.cluster.metadata));
        self.order
            .remove(&(name.to_string(), namespace.to_string()));
        if idx.is_empty() {
            self.namespaces.remove(namespace);
        }
        let mut out = Vec::new();
        for g in slot.groups {
            if let Some(gs) = self.groups.get_mut(g) {
                gs.members.remove(&id);
                out.push(Key::of(&gs.group.metadata));
            }
        }
        out
    }

    /// Adds or replaces a cluster group. When its selector changed (or it is new) its members are
    /// recomputed from the label index of its namespace. Returns the clusters whose membership of
    /// this group changed.
    pub fn upsert_group(&mut self, group: ClusterGroup) -> Vec<Key> {
        let ns = ns_of(&group.metadata).to_string();
        let name = name_of(&group.metadata).to_string();
        let idx = self.namespaces.entry(ns).or_default();
        let gid = match idx.groups.get(&name) {
            Some(&gid) => {
                let Some(slot) = self.groups.get_mut(gid) else {
                    return Vec::new();
                };
                if slot.group == group {
                    return Vec::new();
                }
                self.revision += 1;
                let same = slot.group.spec.selector == group.spec.selector;
                slot.selector = compile(&group);
                slot.group = group;
                if same {
                    return Vec::new();
                }
                gid
            }
            None => {
                self.revision += 1;
                let gid = self.groups.insert(GroupSlot {
                    selector: compile(&group),
                    group,
                    members: HashSet::new(),
                });
                idx.groups.insert(name, gid);
                gid
            }
        };
        self.refresh_group_members(gid)
    }

    /// Removes a cluster group (no-op when absent). Returns its former members.
    pub fn remove_group(&mut self, namespace: &str, name: &str) -> Vec<Key> {
        let Some(idx) = self.namespaces.get_mut(namespace) else {
            return Vec::new();
        };
        let Some(gid) = idx.groups.remove(name) else {
            return Vec::new();
        };
        if idx.is_empty() {
            self.namespaces.remove(namespace);
        }
        let Some(slot) = self.groups.remove(gid) else {
            return Vec::new();
        };
        self.revision += 1;
        let mut out = Vec::new();
        for id in slot.members {
            if let Some(cs) = self.clusters.get_mut(id) {
                cs.groups.remove(&gid);
                out.push(Key::of(&cs.cluster.metadata));
            }
        }
        out.sort();
        out
    }

    /// Adds or replaces a bundle namespace mapping.
    pub fn upsert_mapping(&mut self, mapping: BundleNamespaceMapping) {
        let key = Key::of(&mapping.metadata);
        if self.mappings.get(&key) != Some(&mapping) {
            self.revision += 1;
            self.mappings.insert(key, mapping);
        }
    }

    /// Removes a bundle namespace mapping (no-op when absent).
    pub fn remove_mapping(&mut self, namespace: &str, name: &str) {
        if self.mappings.remove(&Key::new(namespace, name)).is_some() {
            self.revision += 1;
        }
    }

    /// Sets the labels of a namespace (mappings select namespaces by them).
    pub fn set_namespace_labels(&mut self, namespace: &str, labels: Labels) {
        if self.namespace_labels.get(namespace) != Some(&labels) {
            self.revision += 1;
            self.namespace_labels.insert(namespace.to_string(), labels);
        }
    }

    /// Forgets a deleted namespace's labels. Its clusters, groups and mappings are removed by
    /// their own delete events.
    pub fn remove_namespace(&mut self, namespace: &str) {
        if self.namespace_labels.remove(namespace).is_some() {
            self.revision += 1;
        }
    }

    /// Bumped by every change of what targeting reads (an upsert of an equal object changes
    /// nothing): targets computed at one revision hold until the revision moves, so a caller
    /// may keep derived results keyed by it.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// The cluster `namespace/name`.
    pub fn cluster(&self, namespace: &str, name: &str) -> Option<&Cluster> {
        self.cluster_arc(namespace, name).map(|c| &**c)
    }

    /// The cluster `namespace/name`, shared (what [`crate::Target`] holds).
    pub fn cluster_arc(&self, namespace: &str, name: &str) -> Option<&Arc<Cluster>> {
        let id = *self.namespaces.get(namespace)?.clusters.get(name)?;
        self.clusters.get(id).map(|s| &s.cluster)
    }

    /// Every cluster, in no particular order.
    pub fn clusters(&self) -> impl Iterator<Item = &Cluster> {
        self.clusters.iter().map(|(_, s)| &*s.cluster)
    }

    /// The clusters of one namespace, in no particular order.
    pub fn clusters_in(&self, namespace: &str) -> impl Iterator<Item = &Cluster> {
        self.namespaces
            .get(namespace)
            .into_iter()
            .flat_map(|idx| idx.clusters.values())
            .filter_map(|id| self.clusters.get(*id).map(|s| &*s.cluster))
    }

    /// How many clusters there are.
    pub fn cluster_count(&self) -> usize {
        self.clusters.len()
    }

    /// The cluster group `namespace/name`.
    pub fn group(&self, namespace: &str, name: &str) -> Option<&ClusterGroup> {
        let gid = *self.namespaces.get(namespace)?.groups.get(name)?;
        self.groups.get(gid).map(|s| &s.group)
    }

    /// Every cluster group, in no particular order.
    pub fn groups(&self) -> impl Iterator<Item = &ClusterGroup> {
        self.groups.iter().map(|(_, s)| &s.group)
    }

    /// The groups cluster `namespace/name` is a member of, in no particular order (empty when the
    /// cluster is unknown).
    pub fn groups_of(&self, namespace: &str, name: &str) -> impl Iterator<Item = &ClusterGroup> {
        self.cluster_id(namespace, name)
            .and_then(|id| self.clusters.get(id))
            .into_iter()
            .flat_map(|s| s.groups.iter())
            .filter_map(|g| self.groups.get(*g).map(|g| &g.group))
    }

    /// The member clusters of group `namespace/name`, in no particular order (empty when the group
    /// is unknown).
    pub fn members(&self, namespace: &str, name: &str) -> impl Iterator<Item = &Cluster> {
        self.namespaces
            .get(namespace)
            .and_then(|idx| idx.groups.get(name))
            .and_then(|gid| self.groups.get(*gid))
            .into_iter()
            .flat_map(|s| s.members.iter())
            .filter_map(|id| self.clusters.get(*id).map(|s| &*s.cluster))
    }

    /// Every bundle namespace mapping, ordered by (namespace, name).
    pub fn mappings(&self) -> impl Iterator<Item = &BundleNamespaceMapping> {
        self.mappings.values()
    }

    /// The labels of a namespace, if set.
    pub fn namespace_labels(&self, namespace: &str) -> Option<&Labels> {
        self.namespace_labels.get(namespace)
    }

    /// The view of cluster `namespace/name` the matcher needs (its labels and its groups).
    pub fn view(&self, namespace: &str, name: &str) -> Option<ClusterView<'_>> {
        self.cluster_id(namespace, name)
            .and_then(|id| self.view_of(id))
    }

    /// Namespaces whose clusters a bundle may target: its own plus mapped ones.
    pub fn namespaces_for(&self, bundle: &Bundle) -> Vec<String> {
        let bns = ns_of(&bundle.metadata);
        let mut out = BTreeSet::from([bns.to_string()]);
        let blabels = labels_of(&bundle.metadata);
        let from = Key::new(bns, "");
        for m in self
            .mappings
            .range(from..)
            .take_while(|(k, _)| k.namespace == bns)
            .map(|(_, m)| m)
        {
            let (Some(bs), Some(nsel)) = (&m.spec.bundle_selector, &m.spec.namespace_selector)
            else {
                continue;
            };
            let (Ok(bs), Ok(nsel)) = (Selector::compile(bs), Selector::compile(nsel)) else {
                continue;
            };
            if !bs.matches(blabels) {
                continue;
            }
            let mut all: BTreeSet<&str> = self
                .namespaces
                .iter()
                .filter(|(_, idx)| !idx.clusters.is_empty())
                .map(|(n, _)| n.as_str())
                .collect();
            all.extend(self.namespace_labels.keys().map(String::as_str));
            for n in all {
                if nsel.matches(self.namespace_labels.get(n).unwrap_or(&NO_LABELS)) {
                    out.insert(n.to_string());
                }
            }
        }
        out.into_iter().collect()
    }

    /// Checks that every index holds exactly what the stored objects imply (no stale or missing
    /// id, no empty leftover entry, member sets and cluster group sets mirror each other). For
    /// tests; O(everything).
    #[doc(hidden)]
    pub fn check_indexes(&self) -> Result<(), IndexMismatch> {
        let mut want: HashMap<String, NsIndex> = HashMap::new();
        for (id, s) in self.clusters.iter() {
            let meta = &s.cluster.metadata;
            let (n, name) = (ns_of(meta), name_of(meta));
            let idx = want.entry(n.to_string()).or_default();
            idx.clusters.insert(name.to_string(), id);
            add_id(&mut idx.by_name, name, id);
            idx.index_labels(id, name, labels_of(meta));
            for g in &s.groups {
                let ok = self
                    .groups
                    .get(*g)
                    .is_some_and(|gs| gs.members.contains(&id) && ns_of(&gs.group.metadata) == n);
                if !ok {
                    return Err(format!("cluster {n}/{name}: group id {g} does not list it").into());
                }
            }
        }
        for (gid, g) in self.groups.iter() {
            let meta = &g.group.metadata;
            let idx = want.entry(ns_of(meta).to_string()).or_default();
            idx.groups.insert(name_of(meta).to_string(), gid);
            for id in &g.members {
                if !self
                    .clusters
                    .get(*id)
                    .is_some_and(|c| c.groups.contains(&gid))
                {
                    return Err(format!(
                        "group {}: member id {id} does not list it",
                        name_of(meta)
                    )
                    .into());
                }
            }
        }
        if want.len() != self.namespaces.len() {
            return Err(format!(
                "{} namespaces indexed, {} expected",
                self.namespaces.len(),
                want.len()
            )
            .into());
        }
        for (n, w) in &want {
            let Some(got) = self.namespaces.get(n) else {
                return Err(format!("namespace {n} not indexed").into());
            };
            if got.clusters != w.clusters
                || got.by_name != w.by_name
                || got.by_label != w.by_label
                || got.groups != w.groups
            {
                return Err(format!("namespace {n}: indexes differ from the objects").into());
            }
        }
        if self.order.len() != self.clusters.len() {
            return Err("the name order does not list every cluster".into());
        }
        let mut last = None;
        for ((name, n), id) in &self.order {
            let Some(s) = self.clusters.get(*id) else {
                return Err(format!("order: {n}/{name} names a free slot").into());
            };
            if (name_of(&s.cluster.metadata), ns_of(&s.cluster.metadata)) != (name, n) {
                return Err(format!("order: {n}/{name} names another cluster").into());
            }
            if last.is_some_and(|l| l >= s.rank) {
                return Err(format!("order: rank of {n}/{name} out of order").into());
            }
            last = Some(s.rank);
        }
        if self
            .clusters
            .free
            .iter()
            .any(|i| self.clusters.get(*i).is_some())
            || self
                .groups
                .free
                .iter()
                .any(|i| self.groups.get(*i).is_some())
        {
            return Err("a free slot is in use".into());
        }
        Ok(())
    }

    fn cluster_id(&self, namespace: &str, name: &str) -> Option<usize> {
        self.namespaces.get(namespace)?.clusters.get(name).copied()
    }

    pub(crate) fn id_bound(&self) -> usize {
        self.clusters.bound()
    }

    /// Cluster `id` with its rank in (name, namespace) order.
    pub(crate) fn ranked(&self, id: usize) -> Option<(u64, &Arc<Cluster>)> {
        self.clusters.get(id).map(|s| (s.rank, &s.cluster))
    }

    /// Inserts cluster `id` into the (name, namespace) order and gives it a rank between its
    /// neighbours'. Ranks leave gaps of [`RANK_STEP`], so an insert renumbers every cluster
    /// (O(n)) only when it lands between two adjacent ranks: targets then sort by an integer
    /// instead of comparing names, and no update re-ranks.
    fn place(&mut self, id: usize, key: (String, String)) {
        use std::ops::Bound::{Excluded, Unbounded};
        let rank = |id: &usize| self.clusters.get(*id).map(|s| s.rank);
        let lo = self
            .order
            .range(..&key)
            .next_back()
            .and_then(|(_, i)| rank(i));
        let hi = self
            .order
            .range((Excluded(&key), Unbounded))
            .next()
            .and_then(|(_, i)| rank(i));
        let r = match (lo, hi) {
            (None, None) => Some(RANK_BASE),
            (Some(l), None) => l.checked_add(RANK_STEP),
            (None, Some(h)) => h.checked_sub(RANK_STEP),
            (Some(l), Some(h)) => (h - l >= 2).then(|| l + (h - l) / 2),
        };
        self.order.insert(key, id);
        match r {
            Some(r) => {
                if let Some(s) = self.clusters.get_mut(id) {
                    s.rank = r;
                }
            }
            None => {
                let mut r = RANK_BASE;
                for i in self.order.values() {
                    if let Some(s) = self.clusters.get_mut(*i) {
                        s.rank = r;
                    }
                    r = r.saturating_add(RANK_STEP);
                }
            }
        }
    }

    /// The view of a target's cluster: by the id it was targeted with while that id still
    /// holds the same cluster object, else by name.
    pub fn target_view(&self, t: &crate::Target) -> Option<ClusterView<'_>> {
        match self.clusters.get(t.cluster_id) {
            Some(s) if Arc::ptr_eq(&s.cluster, &t.cluster) => self.view_of(t.cluster_id),
            _ => self.view(
                t.cluster.metadata.namespace.as_deref().unwrap_or(""),
                t.cluster.metadata.name.as_deref().unwrap_or(""),
            ),
        }
    }

    pub(crate) fn view_of(&self, id: usize) -> Option<ClusterView<'_>> {
        let s = self.clusters.get(id)?;
        let meta = &s.cluster.metadata;
        Some(ClusterView {
            name: name_of(meta),
            labels: labels_of(meta),
            groups: s
                .groups
                .iter()
                .filter_map(|g| self.groups.get(*g))
                .map(|g| (name_of(&g.group.metadata), labels_of(&g.group.metadata)))
                .collect(),
        })
    }

    /// Ids of clusters in namespace `n` that might match `m` (a superset; the matcher decides),
    /// each pushed once (`seen` is indexed by id).
    pub(crate) fn candidates(
        &self,
        m: &ClusterMatcher,
        n: &str,
        seen: &mut [bool],
        out: &mut Vec<usize>,
    ) {
        let Some(idx) = self.namespaces.get(n) else {
            return;
        };
        let mut push = |i: usize| {
            if let Some(s) = seen.get_mut(i)
                && !*s
            {
                *s = true;
                out.push(i);
            }
        };
        if let Some(cn) = &m.cluster_name {
            idx.by_name
                .get(cn)
                .into_iter()
                .flatten()
                .for_each(|i| push(*i));
        } else if let Some(g) = &m.cluster_group {
            idx.groups
                .get(g)
                .and_then(|gid| self.groups.get(*gid))
                .into_iter()
                .flat_map(|s| s.members.iter())
                .for_each(|i| push(*i));
        } else if let Some((k, v)) = m.cluster_selector.as_ref().and_then(|s| s.index_key()) {
            idx.by_label
                .get(k)
                .and_then(|vs| vs.get(v))
                .into_iter()
                .flatten()
                .for_each(|i| push(*i));
        } else {
            idx.clusters.values().for_each(|i| push(*i));
        }
    }

    /// Recomputes which groups of its namespace cluster `id` belongs to; returns the groups that
    /// gained or lost it.
    fn refresh_cluster_groups(&mut self, id: usize) -> Vec<Key> {
        let Some(slot) = self.clusters.get(id) else {
            return Vec::new();
        };
        let meta = &slot.cluster.metadata;
        let labels = labels_of(meta);
        let now: BTreeSet<usize> = self
            .namespaces
            .get(ns_of(meta))
            .into_iter()
            .flat_map(|idx| idx.groups.values())
            .copied()
            .filter(|g| {
                self.groups
                    .get(*g)
                    .and_then(|g| g.selector.as_ref())
                    .is_some_and(|s| s.matches(labels))
            })
            .collect();
        let Some(slot) = self.clusters.get_mut(id) else {
            return Vec::new();
        };
        let before = std::mem::replace(&mut slot.groups, now);
        let mut out = Vec::new();
        for g in before.symmetric_difference(&slot.groups) {
            if let Some(gs) = self.groups.get_mut(*g) {
                if slot.groups.contains(g) {
                    gs.members.insert(id);
                } else {
                    gs.members.remove(&id);
                }
                out.push(Key::of(&gs.group.metadata));
            }
        }
        out
    }

    /// Recomputes the members of group `gid` through the label index; returns the clusters that
    /// joined or left it.
    fn refresh_group_members(&mut self, gid: usize) -> Vec<Key> {
        let Some(slot) = self.groups.get(gid) else {
            return Vec::new();
        };
        let mut now = HashSet::new();
        if let (Some(sel), Some(idx)) = (
            &slot.selector,
            self.namespaces.get(ns_of(&slot.group.metadata)),
        ) {
            let cands: Box<dyn Iterator<Item = &usize>> = match sel.index_key() {
                Some((k, v)) => Box::new(
                    idx.by_label
                        .get(k)
                        .and_then(|vs| vs.get(v))
                        .into_iter()
                        .flatten(),
                ),
                None => Box::new(idx.clusters.values()),
            };
            for &id in cands {
                if let Some(c) = self.clusters.get(id)
                    && sel.matches(labels_of(&c.cluster.metadata))
                {
                    now.insert(id);
                }
            }
        }
        let Some(slot) = self.groups.get_mut(gid) else {
            return Vec::new();
        };
        let before = std::mem::replace(&mut slot.members, now);
        let mut out = Vec::new();
        for id in before.symmetric_difference(&slot.members) {
            if let Some(cs) = self.clusters.get_mut(*id) {
                if slot.members.contains(id) {
                    cs.groups.insert(gid);
                } else {
                    cs.groups.remove(&gid);
                }
                out.push(Key::of(&cs.cluster.metadata));
            }
        }
        out.sort();
        out
    }
}

/// Rank of the first cluster; clusters added before or after it step by [`RANK_STEP`].
const RANK_BASE: u64 = 1 << 62;
/// Gap between the ranks of clusters appended in order (2^38 appends fit either side).
const RANK_STEP: u64 = 1 << 24;

/// The compiled selector of a group: nil matches nothing, `{}` everything, an invalid one nothing.
fn compile(g: &ClusterGroup) -> Option<Selector> {
    Selector::compile(g.spec.selector.as_ref()?).ok()
}

fn decode<T: serde::de::DeserializeOwned>(v: &Value) -> Result<T, serde_json::Error> {
    T::deserialize(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cluster(name: &str) -> Cluster {
        serde_json::from_value(
            json!({"apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": name, "namespace": "n"}, "spec": {}}),
        )
        .expect("cluster")
    }

    /// Inserts that keep landing between the same two neighbours exhaust the gap between their
    /// ranks and renumber; the order stays by name, before and after.
    #[test]
    fn ranks_follow_names_through_renumbering() {
        let mut f = Fleet::default();
        f.upsert_cluster(cluster("a"));
        f.upsert_cluster(cluster("b"));
        let mut names = vec!["a".to_string(), "b".to_string()];
        for k in 1..80 {
            let n = format!("a{}", "z".repeat(k));
            f.upsert_cluster(cluster(&n));
            names.push(n);
            assert_eq!(f.check_indexes(), Ok(()), "after {k} inserts");
        }
        // Prepends and appends beyond the first rank too.
        for k in 0..5 {
            f.upsert_cluster(cluster(&format!("0{k}")));
            f.upsert_cluster(cluster(&format!("c{k}")));
        }
        f.remove_cluster("n", "az");
        assert_eq!(f.check_indexes(), Ok(()));
        let mut by_rank: Vec<(u64, String)> = (0..f.id_bound())
            .filter_map(|i| f.ranked(i))
            .map(|(r, c)| (r, name_of(&c.metadata).to_string()))
            .collect();
        by_rank.sort();
        let got: Vec<String> = by_rank.into_iter().map(|(_, n)| n).collect();
        let mut want: Vec<String> = f
            .clusters()
            .map(|c| name_of(&c.metadata).to_string())
            .collect();
        want.sort();
        assert_eq!(got, want);
    }

    /// The revision moves with every change targeting can see, and only then: an equal
    /// upsert, or a Cluster whose status summaries alone changed, keeps it.
    #[test]
    fn revision_moves_only_on_change() {
        let mut f = Fleet::default();
        let r0 = f.revision();
        f.upsert_cluster(cluster("a"));
        let r1 = f.revision();
        assert!(r1 > r0, "new cluster");
        f.upsert_cluster(cluster("a"));
        assert_eq!(f.revision(), r1, "equal cluster");
        let mut reported = cluster("a");
        reported.metadata.resource_version = Some("7".into());
        reported.status.get_or_insert_default().summary.ready = 3;
        let reported = Arc::new(reported);
        f.upsert_cluster_arc(reported.clone());
        assert_eq!(f.revision(), r1, "status summaries changed");
        let held = f.cluster_arc("n", "a").expect("cluster a is indexed");
        assert!(Arc::ptr_eq(held, &reported), "the newest object is held");
        let mut moved = (*reported).clone();
        moved.status.get_or_insert_default().namespace = "cluster-elsewhere".into();
        f.upsert_cluster(moved);
        let r1 = f.revision();
        assert!(r1 > r0 + 1, "cluster namespace changed");
        let mut labelled = cluster("a");
        labelled.metadata.labels = Some([("env".to_string(), "x".to_string())].into());
        f.upsert_cluster(labelled);
        let r2 = f.revision();
        assert!(r2 > r1, "labels changed");
        f.set_namespace_labels("n", Labels::new());
        let r3 = f.revision();
        assert!(r3 > r2, "namespace labels new");
        f.set_namespace_labels("n", Labels::new());
        assert_eq!(f.revision(), r3, "namespace labels equal");
        f.remove_cluster("n", "missing");
        assert_eq!(f.revision(), r3, "nothing removed");
        f.remove_cluster("n", "a");
        assert!(f.revision() > r3, "cluster removed");
    }
}

/// What [`Fleet::check_indexes`] found out of step: the index and the difference.
#[doc(hidden)]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct IndexMismatch(pub String);

impl From<String> for IndexMismatch {
    fn from(message: String) -> Self {
        IndexMismatch(message)
    }
}

impl From<&str> for IndexMismatch {
    fn from(message: &str) -> Self {
        IndexMismatch(message.to_string())
    }
}
