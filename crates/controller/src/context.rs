//! Shared state of the controllers: the client, one reflector cache per kind (one watch each,
//! shared by every reconciler), the BundleDeployment cache (a projection, see [`crate::bds`]),
//! the trigger channels that turn an event on one kind into work-queue keys of another, the git
//! fetch cache and the metrics.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use fleet_api::keys::*;
use fleet_api::{
    Bundle, BundleDeployment, BundleNamespaceMapping, Cluster, ClusterGroup, GitRepo,
    GitRepoRestriction, WatchedBd,
};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::Api;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use crate::Options;
use crate::bds::{BdCache, CachedBd};
use crate::git::FetchCache;
use fleet_targeting::Fleet;
use fleet_targeting::fleet::Key;

/// Counters exposed on `/metrics` (and read by tests through it).
#[derive(Default)]
pub struct Metrics {
    /// Every create/update/patch/delete the controllers sent to the API.
    pub writes: AtomicU64,
    /// Reconciles of Bundles.
    pub bundle_reconciles: AtomicU64,
    /// Reconciles of GitRepos.
    pub gitrepo_reconciles: AtomicU64,
    /// Reconciles of Clusters.
    pub cluster_reconciles: AtomicU64,
    /// Reconciles of ClusterGroups.
    pub clustergroup_reconciles: AtomicU64,
    /// `ls-remote` calls.
    pub polls: AtomicU64,
    /// Bundle builds (a repository checkout read into Bundles for one GitRepo).
    pub builds: AtomicU64,
    /// Webhook deliveries received (any outcome).
    pub webhooks: AtomicU64,
}

impl Metrics {
    /// Counts one API write.
    pub fn write(&self) {
        self.writes.fetch_add(1, Ordering::Relaxed);
    }
}

/// Keys pushed into the work queues of the reconcilers by events on related kinds.
pub struct Triggers {
    pub(crate) bundle: UnboundedSender<ObjectRef<Bundle>>,
    pub(crate) gitrepo: UnboundedSender<ObjectRef<GitRepo>>,
    pub(crate) cluster: UnboundedSender<ObjectRef<Cluster>>,
    pub(crate) group: UnboundedSender<ObjectRef<ClusterGroup>>,
}

/// The receiving ends, taken once by each controller.
#[derive(Default)]
pub struct TriggerReceivers {
    pub(crate) bundle: Option<UnboundedReceiver<ObjectRef<Bundle>>>,
    pub(crate) gitrepo: Option<UnboundedReceiver<ObjectRef<GitRepo>>>,
    pub(crate) cluster: Option<UnboundedReceiver<ObjectRef<Cluster>>>,
    pub(crate) group: Option<UnboundedReceiver<ObjectRef<ClusterGroup>>>,
}

/// Reflector caches.
#[derive(Clone)]
pub struct Stores {
    /// GitRepos.
    pub gitrepos: Store<GitRepo>,
    /// Bundles.
    pub bundles: Store<Bundle>,
    /// BundleDeployments: what reconcilers read of them, indexed by bundle and namespace.
    pub bds: Arc<BdCache>,
    /// Clusters.
    pub clusters: Store<Cluster>,
    /// ClusterGroups.
    pub groups: Store<ClusterGroup>,
    /// GitRepoRestrictions (checked by the GitRepo reconciler).
    pub restrictions: Store<GitRepoRestriction>,
}

/// Shared controller state.
pub struct Context {
    /// The Kubernetes client.
    pub client: kube::Client,
    /// Options given to [`crate::run`].
    pub opts: Options,
    /// Reflector caches.
    pub stores: Stores,
    /// Clusters (those with a cluster namespace) and ClusterGroups, indexed for targeting and
    /// updated one object at a time from the watches.
    pub fleet: Arc<RwLock<Fleet>>,
    /// Cross-kind triggers.
    pub triggers: Arc<Triggers>,
    pub(crate) receivers: Mutex<TriggerReceivers>,
    pub(crate) subscriptions: Mutex<Subscriptions>,
    /// Git checkouts, one per (repository, commit).
    pub fetch: FetchCache,
    /// Counters.
    pub metrics: Metrics,
    /// Per-GitRepo polling state (next poll, backoff, last applied), by uid.
    pub(crate) polls: Mutex<HashMap<String, crate::gitrepo::PollState>>,
    /// Contents known to exist (created by us or listed at start).
    pub(crate) contents: Mutex<std::collections::HashSet<String>>,
    /// Wakes the Content garbage collector after BDs changed.
    pub(crate) content_changed: tokio::sync::Notify,
    /// Per Bundle, the fingerprints of the BundleDeployments it wants (see [`DesiredMemo`]).
    desired: Mutex<HashMap<ObjectRef<Bundle>, DesiredMemo>>,
    /// The budget every paced pass (a settled Bundle's, a GitRepo's summary) books from.
    pub(crate) pacer: Pacer,
    /// When each Cluster's status was last written, to space its writes.
    pub(crate) cluster_status_written: StatusWrites,
    /// Bounds the BundleDeployment writes in flight across all reconciles: each needs a
    /// connection, and eight bundles writing 32 each kept 256 TLS connections (with their
    /// buffers) open where 32 keep the API server as busy.
    write_slots: tokio::sync::Semaphore,
    ready: AtomicBool,
    leading: AtomicBool,
    started: Instant,
    /// Turn true once the BundleNamespaceMapping and Namespace watches have listed.
    listed: [tokio::sync::watch::Receiver<bool>; 2],
}

/// Shared subscriber streams of the primary kinds (taken by each controller).
#[derive(Default)]
pub struct Subscriptions {
    pub(crate) gitrepos: Option<reflector::ReflectHandle<GitRepo>>,
    pub(crate) bundles: Option<reflector::ReflectHandle<Bundle>>,
    pub(crate) clusters: Option<reflector::ReflectHandle<Cluster>>,
    pub(crate) groups: Option<reflector::ReflectHandle<ClusterGroup>>,
}

/// The watch streams (drive them with [`WatchStreams::spawn_all`]).
pub struct WatchStreams {
    streams: Vec<futures::future::BoxFuture<'static, ()>>,
}

impl WatchStreams {
    /// Spawns one task per watch.
    pub fn spawn_all(self, set: &mut tokio::task::JoinSet<()>) {
        for s in self.streams {
            set.spawn(s);
        }
    }
}

fn label<'a>(meta: &'a kube::api::ObjectMeta, k: &str) -> Option<&'a str> {
    meta.labels.as_ref()?.get(k).map(String::as_str)
}

/// Label selector for this shard, as upstream's `sharding.FilterByShardID`: a controller with a
/// shard id sees objects labelled `fleet.cattle.io/shard-ref=<id>`, the default shard (no id)
/// those without the label.
fn shard_selector(opts: &Options) -> watcher::Config {
    let cfg = watcher::Config::default().any_semantic();
    match &opts.shard_id {
        Some(id) => cfg.labels(&format!("{SHARD_REF_LABEL}={id}")),
        None => cfg.labels(&format!("!{SHARD_REF_LABEL}")),
    }
}

/// Whether an object belongs to this controller's shard (see [`shard_selector`]).
pub fn in_shard(opts: &Options, meta: &kube::api::ObjectMeta) -> bool {
    label(meta, SHARD_REF_LABEL) == opts.shard_id.as_deref()
}

impl Context {
    /// Creates the caches and the watch streams feeding them (not yet running).
    pub fn start(
        client: kube::Client,
        opts: Options,
        cache_dir: PathBuf,
    ) -> (Context, WatchStreams) {
        let (btx, brx) = unbounded_channel();
        let (gtx, grx) = unbounded_channel();
        let (ctx_, crx) = unbounded_channel();
        let (grtx, grrx) = unbounded_channel();
        let triggers = Arc::new(Triggers {
            bundle: btx,
            gitrepo: gtx,
            cluster: ctx_,
            group: grtx,
        });
        let mut streams: Vec<futures::future::BoxFuture<'static, ()>> = Vec::new();
        let shard = shard_selector(&opts);

        let (gitrepos, gw) = reflector::store_shared::<GitRepo>(4096);
        let (bundles, bw) = reflector::store_shared::<Bundle>(4096);
        let bds = Arc::new(BdCache::default());
        let (clusters, cw) = reflector::store_shared::<Cluster>(4096);
        let (groups, grw) = reflector::store_shared::<ClusterGroup>(4096);
        let (restrictions, rw) = reflector::store::<GitRepoRestriction>();
        let subs = Subscriptions {
            gitrepos: gw.subscribe(),
            bundles: bw.subscribe(),
            clusters: cw.subscribe(),
            groups: grw.subscribe(),
        };
        let stores = Stores {
            gitrepos,
            bundles,
            bds,
            clusters,
            groups,
            restrictions,
        };

        // GitRepos: nothing else depends on them.
        let s = watcher(Api::<GitRepo>::all(client.clone()), shard.clone())
            .default_backoff()
            .modify(strip_cached)
            .reflect_shared(gw);
        streams.push(drive(s));

        // Bundles → their GitRepo's status.
        let t = triggers.clone();
        let s = watcher(Api::<Bundle>::all(client.clone()), shard.clone())
            .default_backoff()
            .modify(strip_cached)
            .map_ok(move |ev| {
                ev_objects(&ev, |b: &Bundle| {
                    if let (Some(repo), Some(ns)) =
                        (label(&b.metadata, REPO_LABEL), &b.metadata.namespace)
                    {
                        let _ = t.gitrepo.send(ObjectRef::new(repo).within(ns));
                    }
                });
                ev
            })
            .reflect_shared(bw);
        streams.push(drive(s));

        // BundleDeployments → index; their bundle, cluster and GitRepo. Every shard's BDs: a
        // Cluster's status counts all BDs in its namespace (keys of other shards' bundles find
        // nothing in this shard's caches and are dropped by the controllers).
        let pending = Arc::new(Mutex::new(BdTriggers::default()));
        streams.push(Box::pin(flush_bd_triggers(
            pending.clone(),
            triggers.clone(),
        )));
        let (t, cache) = (pending, stores.bds.clone());
        let s = watcher(
            Api::<WatchedBd>::all(client.clone()),
            watcher::Config::default().any_semantic(),
        )
        .default_backoff()
        .map_ok(move |ev| cache.apply(unwatched(ev), |bd, to_bundle| route_bd(&t, bd, to_bundle)));
        streams.push(drive(s));

        // Clusters → the Fleet index; bundles (when what targeting reads changed); their groups.
        // The index holds the very objects of the cache, so it is fed after the cache: a
        // listed Cluster is in the cache only once the list is done.
        let t = triggers.clone();
        let fleet: Arc<RwLock<Fleet>> = Arc::new(RwLock::new(Fleet::default()));
        let (cstore, bstore, f) = (
            stores.clusters.clone(),
            stores.bundles.clone(),
            fleet.clone(),
        );
        let mut listed = Relist::default();
        let s = watcher(
            Api::<Cluster>::all(client.clone()),
            watcher::Config::default().any_semantic(),
        )
        .default_backoff()
        .modify(strip_cached)
        .reflect_shared(cw)
        .map_ok(move |ev| {
            let mut fl = f.write().unwrap_or_else(|p| p.into_inner());
            let cached = |c: &Cluster| {
                cstore
                    .get(&ObjectRef::from(c))
                    .unwrap_or_else(|| Arc::new(c.clone()))
            };
            match &ev {
                watcher::Event::Init => listed.start(),
                watcher::Event::InitApply(c) => listed.saw(&Key::of(&c.metadata)),
                watcher::Event::InitDone => {
                    for c in cstore.state() {
                        index_cluster(&mut fl, c, false, &bstore, &t);
                    }
                    let gone = listed.unseen(fl.clusters().map(|c| Key::of(&c.metadata)));
                    for k in gone {
                        if let Some(c) = fl.cluster_arc(&k.namespace, &k.name).cloned() {
                            index_cluster(&mut fl, c, true, &bstore, &t);
                        }
                    }
                }
                watcher::Event::Apply(c) => index_cluster(&mut fl, cached(c), false, &bstore, &t),
                watcher::Event::Delete(c) => {
                    index_cluster(&mut fl, Arc::new(c.clone()), true, &bstore, &t)
                }
            }
            drop(fl);
            ev
        });
        streams.push(drive(s));

        // ClusterGroups → the Fleet index; bundles (selector or labels changed); themselves.
        let t = triggers.clone();
        let (old_groups, bstore, f) =
            (stores.groups.clone(), stores.bundles.clone(), fleet.clone());
        let mut listed = Relist::default();
        let s = watcher(
            Api::<ClusterGroup>::all(client.clone()),
            watcher::Config::default().any_semantic(),
        )
        .default_backoff()
        .modify(strip_cached)
        .map_ok(move |ev| {
            let mut fl = f.write().unwrap_or_else(|p| p.into_inner());
            match &ev {
                watcher::Event::Init => listed.start(),
                watcher::Event::InitDone => {
                    let gone = listed.unseen(fl.groups().map(|g| Key::of(&g.metadata)));
                    for k in gone {
                        fl.remove_group(&k.namespace, &k.name);
                    }
                }
                _ => {}
            }
            ev_objects(&ev, |g: &ClusterGroup| {
                let deleted = matches!(ev, watcher::Event::Delete(_));
                let key = Key::of(&g.metadata);
                listed.saw(&key);
                if deleted {
                    fl.remove_group(&key.namespace, &key.name);
                } else {
                    // Its status (and resourceVersion) are the group reconciler's output, not
                    // targeting's input.
                    fl.upsert_group(ClusterGroup {
                        metadata: kube::api::ObjectMeta {
                            name: g.metadata.name.clone(),
                            namespace: g.metadata.namespace.clone(),
                            labels: g.metadata.labels.clone(),
                            ..Default::default()
                        },
                        spec: g.spec.clone(),
                        status: None,
                    });
                }
                let old = old_groups.get(&ObjectRef::from(g));
                let changed = deleted
                    || old.as_ref().is_none_or(|o| {
                        o.spec != g.spec
                            || o.metadata.labels != g.metadata.labels
                            || g.metadata.deletion_timestamp.is_some()
                    });
                if changed {
                    for b in bstore.state() {
                        let _ = t.bundle.send(ObjectRef::from(b.as_ref()));
                    }
                }
            });
            drop(fl);
            ev
        })
        .reflect_shared(grw);
        streams.push(drive(s));

        // GitRepoRestrictions → the GitRepos of their namespace.
        let (t, gstore) = (triggers.clone(), stores.gitrepos.clone());
        let s = watcher(
            Api::<GitRepoRestriction>::all(client.clone()),
            watcher::Config::default().any_semantic(),
        )
        .default_backoff()
        .modify(strip_cached)
        .map_ok(move |ev| {
            ev_objects(&ev, |r: &GitRepoRestriction| {
                for g in gstore.state() {
                    if g.metadata.namespace == r.metadata.namespace {
                        let _ = t.gitrepo.send(ObjectRef::from(g.as_ref()));
                    }
                }
            });
            ev
        })
        .reflect(rw);
        streams.push(drive(s));

        // BundleNamespaceMappings and namespace labels → the Fleet index; bundles. Bundles are
        // not reconciled before both are listed: a mapping not yet known would make its BDs
        // look like orphans.
        let (mappings_listed, mappings_ready) = tokio::sync::watch::channel(false);
        let (namespaces_listed, namespaces_ready) = tokio::sync::watch::channel(false);
        let (t, bstore, f) = (triggers.clone(), stores.bundles.clone(), fleet.clone());
        let mut listed = Relist::default();
        let s = watcher(
            Api::<BundleNamespaceMapping>::all(client.clone()),
            watcher::Config::default().any_semantic(),
        )
        .default_backoff()
        .modify(strip_cached)
        .map_ok(move |ev| {
            let mut fl = f.write().unwrap_or_else(|p| p.into_inner());
            match &ev {
                watcher::Event::Init => listed.start(),
                watcher::Event::InitDone => {
                    let gone = listed.unseen(fl.mappings().map(|m| Key::of(&m.metadata)));
                    for k in gone {
                        fl.remove_mapping(&k.namespace, &k.name);
                    }
                    let _ = mappings_listed.send(true);
                }
                watcher::Event::Delete(m) => {
                    let k = Key::of(&m.metadata);
                    fl.remove_mapping(&k.namespace, &k.name);
                }
                watcher::Event::Apply(m) | watcher::Event::InitApply(m) => {
                    listed.saw(&Key::of(&m.metadata));
                    fl.upsert_mapping(m.clone());
                }
            }
            drop(fl);
            ev_objects(&ev, |m: &BundleNamespaceMapping| {
                for b in bstore.state() {
                    if b.metadata.namespace == m.metadata.namespace {
                        let _ = t.bundle.send(ObjectRef::from(b.as_ref()));
                    }
                }
            });
            ev
        });
        streams.push(drive(s));
        let (t, bstore, f) = (triggers.clone(), stores.bundles.clone(), fleet.clone());
        let s = watcher(
            Api::<Namespace>::all(client.clone()),
            watcher::Config::default().any_semantic(),
        )
        .default_backoff()
        .map_ok(move |ev| {
            let mut fl = f.write().unwrap_or_else(|p| p.into_inner());
            let changed = match &ev {
                watcher::Event::Delete(n) => {
                    fl.remove_namespace(n.metadata.name.as_deref().unwrap_or(""));
                    true
                }
                watcher::Event::Apply(n) | watcher::Event::InitApply(n) => {
                    let name = n.metadata.name.as_deref().unwrap_or("");
                    let before = fl.revision();
                    fl.set_namespace_labels(name, n.metadata.labels.clone().unwrap_or_default());
                    fl.revision() != before
                }
                watcher::Event::InitDone => {
                    let _ = namespaces_listed.send(true);
                    false
                }
                watcher::Event::Init => false,
            };
            // Only mappings select namespaces by label: without one, nothing to retarget.
            if changed && fl.mappings().next().is_some() {
                for b in bstore.state() {
                    let _ = t.bundle.send(ObjectRef::from(b.as_ref()));
                }
            }
            ev
        });
        streams.push(drive(s));

        let write_slots = opts.write_concurrency.max(1);
        let ctx = Context {
            fetch: FetchCache::new(cache_dir),
            client,
            opts,
            stores,
            fleet,
            triggers,
            receivers: Mutex::new(TriggerReceivers {
                bundle: Some(brx),
                gitrepo: Some(grx),
                cluster: Some(crx),
                group: Some(grrx),
            }),
            subscriptions: Mutex::new(subs),
            metrics: Metrics::default(),
            polls: Mutex::new(HashMap::new()),
            contents: Mutex::new(Default::default()),
            content_changed: tokio::sync::Notify::new(),
            desired: Mutex::new(HashMap::new()),
            pacer: Pacer::default(),
            cluster_status_written: StatusWrites::default(),
            write_slots: tokio::sync::Semaphore::new(write_slots),
            ready: AtomicBool::new(false),
            leading: AtomicBool::new(false),
            started: Instant::now(),
            listed: [mappings_ready, namespaces_ready],
        };
        (ctx, WatchStreams { streams })
    }

    /// Waits until every cache has its initial list (no reconcile may run on a partial cache:
    /// it would delete "orphans" that are merely not listed yet).
    pub async fn wait_ready(&self) {
        let s = &self.stores;
        let _ = s.gitrepos.wait_until_ready().await;
        let _ = s.bundles.wait_until_ready().await;
        let _ = s.bds.wait_until_ready().await;
        let _ = s.clusters.wait_until_ready().await;
        let _ = s.groups.wait_until_ready().await;
        let _ = s.restrictions.wait_until_ready().await;
        for l in &self.listed {
            let _ = l.clone().wait_for(|done| *done).await;
        }
    }

    pub(crate) fn set_ready(&self) {
        self.ready.store(true, Ordering::Relaxed);
    }

    pub(crate) fn set_leading(&self) {
        self.leading.store(true, Ordering::Relaxed);
    }

    /// Whether this replica leads (holds the Lease, or runs without election).
    pub fn is_leading(&self) -> bool {
        self.leading.load(Ordering::Relaxed)
    }

    /// Whether the caches are synced and the controllers running (`/readyz`).
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Relaxed)
    }

    /// Seconds since start.
    pub fn uptime(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// The fingerprints a bundle's last pass computed for its targets, if they still hold: the
    /// same bundle (uid, generation, labels) at the same Fleet revision has the same targets
    /// in the same order, each wanting the same BundleDeployment. Otherwise an empty memo.
    /// Taken out while a pass runs (a key is never reconciled twice at once).
    pub(crate) fn desired_memo(&self, b: &Bundle, revision: u64, targets: usize) -> DesiredMemo {
        let inputs = DesiredMemo::inputs_of(b, revision);
        let kept = self
            .desired
            .lock()
            .ok()
            .and_then(|mut m| m.remove(&ObjectRef::from(b)));
        match kept {
            Some(m) if m.inputs == inputs && m.hashes.len() == targets => m,
            _ => DesiredMemo {
                inputs,
                hashes: vec![0; targets],
                settled: None,
                booked: None,
            },
        }
    }

    /// Keeps a bundle's memo for its next pass (forgotten with the bundle).
    pub(crate) fn keep_desired_memo(&self, b: &Bundle, memo: DesiredMemo) {
        if let Ok(mut m) = self.desired.lock() {
            m.insert(ObjectRef::from(b), memo);
        }
    }

    /// Waits for one of the write slots (see `write_slots`); the write runs while the permit lives.
    pub(crate) async fn write_slot(&self) -> Option<tokio::sync::SemaphorePermit<'_>> {
        self.write_slots.acquire().await.ok()
    }

    /// How long a pass of `b` must wait because it could only change the Bundle's status: the
    /// last pass with the same inputs found every target promoted and written and no orphan
    /// (see [`DesiredMemo::settled`]). Such passes book their slots from [`Pacer`]; None: run now.
    pub(crate) fn settled_wait(&self, b: &Bundle, revision: u64) -> Option<std::time::Duration> {
        let inputs = DesiredMemo::inputs_of(b, revision);
        let mut m = self.desired.lock().ok()?;
        let memo = m
            .get_mut(&ObjectRef::from(b))
            .filter(|m| m.inputs == inputs)?;
        self.pacer
            .wait(memo.settled?, &mut memo.booked, Instant::now())
    }

    /// Records that the pass of `b` started at `started` left nothing to write.
    pub(crate) fn mark_settled(&self, b: &Bundle, started: Instant) {
        if let Ok(mut m) = self.desired.lock()
            && let Some(memo) = m.get_mut(&ObjectRef::from(b))
        {
            memo.settled = Some((started, started.elapsed()));
            memo.booked = None;
        }
    }

    /// Forgets the memo of a deleted bundle.
    pub(crate) fn forget_desired_memo(&self, b: &ObjectRef<Bundle>) {
        if let Ok(mut m) = self.desired.lock() {
            m.remove(b);
        }
    }
}

/// What a Bundle's BundleDeployments hash to, per target ([`crate::bds::SpecHash::with_values`],
/// 0 where not computed yet), so that a pass started by status changes (once a second per
/// bundle during a rollout) compares cached hashes instead of building and serializing a
/// thousand desired objects.
pub(crate) struct DesiredMemo {
    inputs: u64,
    /// By target index.
    pub(crate) hashes: Vec<u64>,
    /// When the last pass that found nothing to write started, and how long it took. With the
    /// same inputs a later pass can only change the Bundle's status: once every target has its
    /// desired BD, BD status changes unlock no rollout step. At 10,000 targets per bundle those
    /// passes, once a second per bundle, were 43% of the manager's CPU.
    settled: Option<(Instant, std::time::Duration)>,
    /// The slot a deferred paced pass booked from the [`Pacer`].
    booked: Option<Instant>,
}

/// Passes that only recompute a summary over many BDs (a Bundle's status once its BDs are all
/// written, a GitRepo's status) run at most this often, and at most once per
/// `PACED_COST_FACTOR` times their own cost, so at 100,000 BDs they take a twentieth of a core.
const PACED_SPACING: std::time::Duration = std::time::Duration::from_secs(1);
const PACED_COST_FACTOR: u32 = 20;

/// The one budget of all paced passes. Each pass of one object keeps [`paced_wait`]'s distance
/// from its own last pass, and every pass also books `PACED_COST_FACTOR` times its last cost
/// after the passes already booked: together, however many bundles and GitRepos there are,
/// they take a twentieth of a core. Paced per object only, ten bundles of 10,000 targets each
/// could take half a core between them while their BDs reported in.
#[derive(Default)]
pub(crate) struct Pacer {
    /// Where the booked slots end.
    next: Mutex<Option<Instant>>,
}

impl Pacer {
    /// How long a paced pass must wait (None: run now, and its slot is booked). `last`: the start
    /// and cost of the object's last paced pass; `booked`: the slot a deferred pass of it booked,
    /// kept by the caller so that the requeued pass runs in its slot instead of booking again.
    pub(crate) fn wait(
        &self,
        last: (Instant, std::time::Duration),
        booked: &mut Option<Instant>,
        now: Instant,
    ) -> Option<std::time::Duration> {
        if let Some(at) = *booked {
            if at <= now {
                *booked = None;
                return None;
            }
            return Some(at - now);
        }
        let own = paced_wait(last, now).unwrap_or_default();
        let mut next = self.next.lock().unwrap_or_else(|p| p.into_inner());
        let at = (now + own).max(next.unwrap_or(now));
        *next = Some(at + last.1.saturating_mul(PACED_COST_FACTOR));
        if at <= now {
            return None;
        }
        *booked = Some(at);
        Some(at - now)
    }
}

/// How long a paced pass must still wait after one that started at `last.0` and took `last.1`
/// (None: run now).
fn paced_wait(last: (Instant, std::time::Duration), now: Instant) -> Option<std::time::Duration> {
    let (at, cost) = last;
    left_of(
        PACED_SPACING.max(cost.saturating_mul(PACED_COST_FACTOR)),
        at,
        now,
    )
}

/// What is left at `now` of `spacing` after `since` (None: nothing).
fn left_of(spacing: Duration, since: Instant, now: Instant) -> Option<Duration> {
    spacing
        .checked_sub(now.saturating_duration_since(since))
        .filter(|w| !w.is_zero())
}

impl DesiredMemo {
    fn inputs_of(b: &Bundle, revision: u64) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        b.metadata.uid.hash(&mut h);
        b.metadata.generation.hash(&mut h);
        b.metadata.labels.hash(&mut h);
        revision.hash(&mut h);
        h.finish()
    }
}

/// Brings one Cluster (as cached, or as deleted) into the [`Fleet`] index, and queues what its
/// change concerns: every Bundle when what targeting reads of it changed, its groups when that
/// or its status did.
fn index_cluster(
    fl: &mut Fleet,
    c: Arc<Cluster>,
    deleted: bool,
    bundles: &Store<Bundle>,
    t: &Triggers,
) {
    let key = Key::of(&c.metadata);
    let usable = !deleted
        && c.metadata.deletion_timestamp.is_none()
        && c.status.as_ref().is_some_and(|s| !s.namespace.is_empty());
    let status_changed = fl
        .cluster(&key.namespace, &key.name)
        .is_none_or(|o| o.status != c.status);
    // The index's revision moves exactly when what targeting reads of the fleet changed.
    let revision = fl.revision();
    let mut groups = if usable {
        fl.upsert_cluster_arc(c.clone())
    } else {
        fl.remove_cluster(&key.namespace, &key.name)
    };
    let targeting_changed = fl.revision() != revision;
    if targeting_changed {
        for b in bundles.state() {
            // Bundles of this namespace, and bundles elsewhere (mappings).
            let _ = t.bundle.send(ObjectRef::from(b.as_ref()));
        }
    }
    if status_changed || targeting_changed {
        groups.extend(
            fl.groups_of(&key.namespace, &key.name)
                .map(|g| Key::of(&g.metadata)),
        );
    }
    for g in groups {
        let _ = t.group.send(ObjectRef::new(&g.name).within(&g.namespace));
    }
}

/// How long BundleDeployment events are gathered before their Bundles, GitRepos and Clusters
/// are queued: during a rollout a Cluster's BDs change one after another, and each status
/// derived from them is then written once a second at most instead of once per BD change.
const BD_TRIGGER_WINDOW: std::time::Duration = std::time::Duration::from_secs(1);

/// Keys a BundleDeployment event asks to reconcile, gathered for one window.
#[derive(Default)]
struct BdTriggers {
    bundles: HashSet<ObjectRef<Bundle>>,
    gitrepos: HashSet<ObjectRef<GitRepo>>,
    clusters: HashSet<ObjectRef<Cluster>>,
}

fn route_bd(t: &Mutex<BdTriggers>, bd: &CachedBd, to_bundle: bool) {
    let Ok(mut t) = t.lock() else { return };
    let (o, c) = (&bd.owner, &bd.target);
    if let (Some(b), Some(bns)) = (&o.bundle, &o.bundle_namespace) {
        if to_bundle {
            t.bundles.insert(ObjectRef::new(b).within(bns));
        }
        if let Some(repo) = &o.repo {
            t.gitrepos.insert(ObjectRef::new(repo).within(bns));
        }
    }
    if let (Some(c), Some(cns)) = (&c.cluster, &c.cluster_namespace) {
        t.clusters.insert(ObjectRef::new(c).within(cns));
    }
}

/// Sends the gathered keys to the work queues once per window, each key once.
async fn flush_bd_triggers(pending: Arc<Mutex<BdTriggers>>, t: Arc<Triggers>) {
    loop {
        tokio::time::sleep(BD_TRIGGER_WINDOW).await;
        let batch = match pending.lock() {
            Ok(mut p) => std::mem::take(&mut *p),
            Err(_) => return,
        };
        for b in batch.bundles {
            let _ = t.bundle.send(b);
        }
        for g in batch.gitrepos {
            let _ = t.gitrepo.send(g);
        }
        for c in batch.clusters {
            let _ = t.cluster.send(c);
        }
    }
}

/// Drops what no reconciler reads before an object is cached: `managedFields` is often the
/// largest part of an object (a field tree per writer), and the caches hold every Cluster of
/// the fleet. Writes never send it back: the server keeps its own.
pub(crate) fn strip_cached<K: kube::Resource>(o: &mut K) {
    o.meta_mut().managed_fields = None;
}

/// The keys a (re)list brings: objects deleted while a watch was down are found at the list's
/// end, as those the index holds and the list did not bring.
#[derive(Default)]
struct Relist(Option<HashSet<Key>>);

impl Relist {
    /// A list begins.
    fn start(&mut self) {
        self.0 = Some(HashSet::new());
    }

    /// The list brought `k` (no-op outside a list).
    fn saw(&mut self, k: &Key) {
        if let Some(seen) = self.0.as_mut() {
            seen.insert(k.clone());
        }
    }

    /// The list ended: the keys of `present` it did not bring.
    fn unseen(&mut self, present: impl Iterator<Item = Key>) -> Vec<Key> {
        match self.0.take() {
            Some(seen) => present.filter(|k| !seen.contains(k)).collect(),
            None => Vec::new(),
        }
    }
}

/// A BundleDeployment event as decoded without managed fields, as the cache takes it.
fn unwatched(ev: watcher::Event<WatchedBd>) -> watcher::Event<BundleDeployment> {
    match ev {
        watcher::Event::Apply(b) => watcher::Event::Apply(b.0),
        watcher::Event::Delete(b) => watcher::Event::Delete(b.0),
        watcher::Event::InitApply(b) => watcher::Event::InitApply(b.0),
        watcher::Event::Init => watcher::Event::Init,
        watcher::Event::InitDone => watcher::Event::InitDone,
    }
}

/// Calls `f` on each object an event carries (applied, deleted or listed).
fn ev_objects<K>(ev: &watcher::Event<K>, mut f: impl FnMut(&K)) {
    match ev {
        watcher::Event::Apply(o) | watcher::Event::Delete(o) | watcher::Event::InitApply(o) => f(o),
        watcher::Event::Init | watcher::Event::InitDone => {}
    }
}

fn drive<S, T, E>(s: S) -> futures::future::BoxFuture<'static, ()>
where
    S: futures::Stream<Item = Result<T, E>> + Send + 'static,
    E: std::fmt::Display,
{
    Box::pin(async move {
        let mut s = std::pin::pin!(s);
        while let Some(r) = s.next().await {
            if let Err(e) = r {
                tracing::warn!("watch error: {e}");
            }
        }
    })
}

/// How one reconciler's work queue runs.
pub(crate) struct QueueConfig<K> {
    /// Name in logs (`<kind> reconcile: <error>`).
    pub kind: &'static str,
    /// Coalescing window for repeated keys, whatever queued them.
    pub debounce: std::time::Duration,
    /// A further window for keys queued by triggers (events of related kinds): a rollout's
    /// BundleDeployment changes queue their Bundle and GitRepo hundreds of times a second, while
    /// an object's own change (a new GitRepo, a Bundle written from a commit) should start at
    /// once rather than wait out a window, so a kind can debounce only its triggers.
    pub trigger_debounce: std::time::Duration,
    /// Keys reconciled at once.
    pub concurrency: u16,
    /// Ignore events that change only the status (the reconciler's own status writes): with
    /// `Some(f)`, the object is reconciled when its spec (generation) or metadata changes, when
    /// `f` (a hash of the status fields the reconciler reads as input) changes, or when a
    /// trigger asks. Without it, every event is reconciled.
    pub skip_status_only: Option<fn(&K) -> u64>,
}

/// For [`QueueConfig::skip_status_only`]: the reconciler reads no status field as input.
pub(crate) fn no_status_input<K>(_: &K) -> u64 {
    0
}

/// What a status-only change leaves as it was: generation and the metadata reconcilers read.
fn spec_fingerprint(meta: &kube::api::ObjectMeta) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    meta.uid.hash(&mut h); // a deleted and re-created object is new
    meta.generation.hash(&mut h);
    meta.labels.hash(&mut h);
    meta.annotations.hash(&mut h);
    meta.finalizers.hash(&mut h);
    meta.deletion_timestamp.is_some().hash(&mut h);
    h.finish()
}

/// Runs one kube-runtime Controller over a kind's shared subscription and its trigger channel
/// (the common setup of every reconciler: one work queue that coalesces repeated keys; errors are
/// logged and the key retried after 5 s). Returns when the streams end, or at once when the
/// subscription or channel was already taken.
pub(crate) async fn run_queue<K, R, Fut>(
    ctx: Arc<Context>,
    parts: (
        Option<reflector::ReflectHandle<K>>,
        Option<UnboundedReceiver<ObjectRef<K>>>,
    ),
    store: Store<K>,
    cfg: QueueConfig<K>,
    reconcile: R,
) where
    K: kube::Resource
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone + std::fmt::Debug + Unpin,
    R: FnMut(Arc<K>, Arc<Context>) -> Fut,
    Fut: std::future::Future<
            Output = Result<kube::runtime::controller::Action, crate::bundle::ReconcileError>,
        > + Send
        + 'static,
{
    use kube::runtime::controller::{Action, Config, Controller};
    use kube::runtime::scheduler::ScheduleRequest;
    let (Some(sub), Some(rx)) = parts else {
        return;
    };
    let kind = cfg.kind;
    // (spec fingerprint, status input) per object last let through.
    let mut seen: std::collections::HashMap<ObjectRef<K>, (u64, u64)> = Default::default();
    let skip_status_only = cfg.skip_status_only;
    // Deleted objects' fingerprints are forgotten once the map doubles since the last sweep.
    let cached = store.clone();
    let mut sweep_at = 1024;
    let sub = sub.filter(move |o: &Arc<K>| {
        let pass = match skip_status_only {
            None => true,
            Some(status_input) => {
                let fp = (spec_fingerprint(o.meta()), status_input(o));
                if seen.len() >= sweep_at {
                    seen.retain(|k, _| cached.get(k).is_some());
                    sweep_at = (seen.len() * 2).max(1024);
                }
                seen.insert(ObjectRef::from_obj(o.as_ref()), fp) != Some(fp)
            }
        };
        futures::future::ready(pass)
    });
    // Without a window the triggers go straight to the controller (no timer per trigger).
    let triggers = crate::gitrepo::channel_stream(rx);
    let triggers = if cfg.trigger_debounce.is_zero() {
        triggers.left_stream()
    } else {
        kube::runtime::scheduler::debounced_scheduler(
            triggers.map(|message| ScheduleRequest {
                message,
                run_at: tokio::time::Instant::now(),
            }),
            cfg.trigger_debounce,
        )
        .right_stream()
    };
    Controller::for_shared_stream(sub, store)
        .reconcile_on(triggers)
        .with_config(
            Config::default()
                .debounce(cfg.debounce)
                .concurrency(cfg.concurrency),
        )
        .run(
            reconcile,
            move |_obj: Arc<K>, e: &crate::bundle::ReconcileError, _ctx: Arc<Context>| {
                tracing::warn!("{kind} reconcile: {e}");
                Action::requeue(crate::secs(5))
            },
            ctx,
        )
        .for_each(|_| futures::future::ready(()))
        .await;
}

impl Context {
    /// Takes a kind's shared subscription and trigger receiver (each controller takes its own once).
    pub(crate) fn take_queue<K: kube::Resource + Clone>(
        &self,
        sub: impl FnOnce(&mut Subscriptions) -> Option<reflector::ReflectHandle<K>>,
        rx: impl FnOnce(&mut TriggerReceivers) -> Option<UnboundedReceiver<ObjectRef<K>>>,
    ) -> (
        Option<reflector::ReflectHandle<K>>,
        Option<UnboundedReceiver<ObjectRef<K>>>,
    )
    where
        K::DynamicType: Eq + std::hash::Hash + Clone,
    {
        (
            self.subscriptions.lock().ok().and_then(|mut s| sub(&mut s)),
            self.receivers.lock().ok().and_then(|mut r| rx(&mut r)),
        )
    }
}

/// When each Cluster's status was last written, by (namespace, name): a Cluster's status is
/// written at most once per spacing. Entries older than the spacing are dropped as the map is
/// swept, so it holds only the clusters written recently.
#[derive(Default)]
pub(crate) struct StatusWrites(Mutex<HashMap<(String, String), Instant>>);

impl StatusWrites {
    /// How long a write at `now` must wait to be `spacing` after the last one; None: write
    /// now, and `now` is remembered as the last write.
    pub(crate) fn book(
        &self,
        (ns, name): (&str, &str),
        spacing: Duration,
        now: Instant,
    ) -> Option<Duration> {
        let mut m = self.0.lock().ok()?;
        let key = (ns.to_string(), name.to_string());
        if let Some(wait) = m.get(&key).and_then(|last| left_of(spacing, *last, now)) {
            return Some(wait);
        }
        if m.len() >= 1024 && m.len().is_power_of_two() {
            m.retain(|_, t| now.saturating_duration_since(*t) < spacing);
        }
        m.insert(key, now);
        None
    }

    /// What [`Self::book`] would answer at `now`, without remembering anything: whether a
    /// Cluster's summary is worth computing yet.
    pub(crate) fn wait(
        &self,
        (ns, name): (&str, &str),
        spacing: Duration,
        now: Instant,
    ) -> Option<Duration> {
        let m = self.0.lock().ok()?;
        left_of(spacing, *m.get(&(ns.to_string(), name.to_string()))?, now)
    }
}

#[cfg(test)]
mod tests {
    use super::{Pacer, StatusWrites, paced_wait};
    use std::time::{Duration, Instant};

    #[test]
    fn a_clusters_status_writes_are_spaced_and_a_peek_books_nothing() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let w = StatusWrites::default();
        let c = ("fleet-default", "c1");
        // Never written: no wait, and a peek does not count as a write.
        assert_eq!(w.wait(c, s(5), t0), None);
        assert_eq!(w.wait(c, s(5), t0), None);
        assert_eq!(w.book(c, s(5), t0), None);
        // Written at t0: both tell the rest of the spacing; only a booking ends it.
        assert_eq!(w.wait(c, s(5), t0 + s(2)), Some(s(3)));
        assert_eq!(w.book(c, s(5), t0 + s(2)), Some(s(3)));
        assert_eq!(w.wait(("fleet-default", "c2"), s(5), t0 + s(2)), None);
        // A longer spacing (a rollout's) waits longer after the same write.
        assert_eq!(w.wait(c, s(20), t0 + s(5)), Some(s(15)));
        assert_eq!(w.wait(c, s(5), t0 + s(5)), None);
        assert_eq!(w.book(c, s(5), t0 + s(5)), None);
        assert_eq!(w.wait(c, s(5), t0 + s(6)), Some(s(4)));
    }

    #[test]
    fn paced_passes_of_all_objects_share_one_budget() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let pacer = Pacer::default();
        let (mut a, mut b) = (None, None);
        // Two objects whose last passes (2 s ago) cost 100 ms each: the first runs now and books
        // 2 s; the second waits for the end of that slot.
        let last = (t0, ms(100));
        let now = t0 + ms(2000);
        assert_eq!(pacer.wait(last, &mut a, now), None);
        assert_eq!(pacer.wait(last, &mut b, now), Some(ms(2000)));
        // Asked again before its slot (a new trigger), it waits out the same slot.
        assert_eq!(pacer.wait(last, &mut b, now + ms(500)), Some(ms(1500)));
        // In its slot it runs, without booking again.
        assert_eq!(pacer.wait(last, &mut b, now + ms(2000)), None);
        assert_eq!(b, None);
        // The first object's next pass comes after the second's slot (6 s), although its own
        // spacing (2 s after its pass at 2 s) ends at 4 s.
        let a_last = (now, ms(100));
        assert_eq!(pacer.wait(a_last, &mut a, now + ms(2000)), Some(ms(2000)));
        // Cheap passes hardly book anything: a second apart, as before.
        let cheap = Pacer::default();
        let mut c = None;
        assert_eq!(cheap.wait((t0, ms(1)), &mut c, t0 + ms(1000)), None);
        assert_eq!(
            cheap.wait((t0, ms(1)), &mut None, t0 + ms(1000)),
            Some(ms(20))
        );
    }

    #[test]
    fn paced_passes_wait_a_second_or_twenty_times_their_cost() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        // A cheap pass: a second from its start.
        assert_eq!(paced_wait((t0, ms(5)), t0 + ms(300)), Some(ms(700)));
        assert_eq!(paced_wait((t0, ms(5)), t0 + ms(1000)), None);
        // A 200 ms pass: four seconds.
        assert_eq!(paced_wait((t0, ms(200)), t0 + ms(1000)), Some(ms(3000)));
        assert_eq!(paced_wait((t0, ms(200)), t0 + ms(4000)), None);
    }
}
