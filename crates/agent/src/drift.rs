//! Drift watches: one watch per kind the agent deployed (not one per object), selecting objects
//! that carry the objectset label render adds. Each watch keeps the objects it sees (without
//! `managedFields`) so the monitor reads live state from memory instead of one GET per object
//! per check; an event on an object some BundleDeployment owns queues that BundleDeployment for
//! a status check (and drift correction when enabled), after the cache holds the new state.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use kube::Api;
use kube::api::DynamicObject;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher;
use serde_json::Value;
use tokio::sync::Notify;
use tokio::sync::mpsc::UnboundedSender;

use crate::objects::{Downstream, ObjRef};

/// Which BundleDeployment owns each deployed object.
pub type Owners = Arc<Mutex<HashMap<ObjRef, String>>>;

/// How long `track` waits for a new kind's first list before the monitor falls back to GETs.
const FIRST_LIST_WAIT: Duration = Duration::from_secs(10);

/// The objects one kind's watch has seen, by (namespace, name).
#[derive(Default)]
struct KindCache {
    objects: Mutex<HashMap<(String, String), Arc<DynamicObject>>>,
    synced: AtomicBool,
    listed: Notify,
}

/// Each watched kind's cache, by (apiVersion, kind).
type Kinds = HashMap<(String, String), Arc<KindCache>>;

/// Live objects as the drift watches see them, shared with the monitor.
#[derive(Clone, Default)]
pub struct LiveCache {
    kinds: Arc<Mutex<Kinds>>,
}

impl LiveCache {
    /// The live object as last seen by its kind's watch; None when the kind is not watched
    /// (or not listed yet) or the watch has not seen the object (then ask the server).
    pub fn get(&self, r: &ObjRef) -> Option<Value> {
        match self.lookup(r) {
            Seen::Present(v) => Some(v),
            Seen::Absent | Seen::Unknown => None,
        }
    }

    /// A snapshot holding just `objects` (the answers to a deploy's applies): their kinds count
    /// as listed, so an object of those kinds that is not among them reads as absent.
    pub fn of_objects(objects: &[Value]) -> LiveCache {
        let mut kinds: Kinds = HashMap::new();
        for v in objects {
            let (Some(r), Ok(o)) = (
                ObjRef::of(v),
                serde_json::from_value::<DynamicObject>(v.clone()),
            ) else {
                continue;
            };
            let kc = kinds
                .entry((r.api_version.clone(), r.kind.clone()))
                .or_insert_with(|| {
                    let kc = KindCache::default();
                    kc.synced.store(true, Ordering::Release);
                    Arc::new(kc)
                });
            kc.objects
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(key_of(&o), slim(o));
        }
        LiveCache {
            kinds: Arc::new(Mutex::new(kinds)),
        }
    }

    /// What the kind's watch knows of `r`. Absent is authoritative only for objects that would
    /// carry the objectset label (the watch selects on it), such as a release's own objects.
    pub fn lookup(&self, r: &ObjRef) -> Seen {
        let Some(kc) = self
            .kinds
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(r.api_version.clone(), r.kind.clone()))
            .cloned()
        else {
            return Seen::Unknown;
        };
        if !kc.synced.load(Ordering::Acquire) {
            return Seen::Unknown;
        }
        let Some(o) = kc
            .objects
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(r.namespace.clone(), r.name.clone()))
            .cloned()
        else {
            return Seen::Absent;
        };
        let Ok(mut v) = serde_json::to_value(&*o) else {
            return Seen::Unknown;
        };
        // DynamicObject drops these; the monitor compares them with the desired object.
        v["apiVersion"] = Value::String(r.api_version.clone());
        v["kind"] = Value::String(r.kind.clone());
        Seen::Present(v)
    }
}

/// What a watch knows of one object.
#[derive(Debug, Clone, PartialEq)]
pub enum Seen {
    /// The kind is not watched or not listed yet.
    Unknown,
    /// Listed, and no labelled object of that name exists.
    Absent,
    /// The object as last seen.
    Present(Value),
}

/// The running per-kind watches.
pub struct DriftWatches {
    ds: Downstream,
    owners: Owners,
    tx: UnboundedSender<String>,
    started: HashSet<(String, String)>,
    cache: LiveCache,
}

fn key_of(o: &DynamicObject) -> (String, String) {
    (
        o.metadata.namespace.clone().unwrap_or_default(),
        o.metadata.name.clone().unwrap_or_default(),
    )
}

fn slim(mut o: DynamicObject) -> Arc<DynamicObject> {
    o.metadata.managed_fields = None;
    Arc::new(o)
}

impl DriftWatches {
    /// No watches yet; events are sent on `tx` as BundleDeployment names.
    pub fn new(ds: Downstream, owners: Owners, tx: UnboundedSender<String>) -> DriftWatches {
        DriftWatches {
            ds,
            owners,
            tx,
            started: HashSet::new(),
            cache: LiveCache::default(),
        }
    }

    /// The watches' view of live objects.
    pub fn cache(&self) -> &LiveCache {
        &self.cache
    }

    /// A function recording that `bd` owns one object, called by a deploy before each apply:
    /// an event on the object from then on queues `bd` for a check, and the check reads the
    /// cache, which the watch updates before sending. Without it, a status written by a
    /// controller while the rest of the bundle was still being applied arrived for an object of
    /// nobody's, was dropped, and the check after the deploy kept the applies' answers
    /// (without that status) for good. `track` replaces these claims with the full set.
    pub fn claimer(&self, bd: &str) -> impl Fn(&ObjRef) + Send + Sync + use<> {
        let owners = self.owners.clone();
        let bd = bd.to_string();
        move |r: &ObjRef| {
            owners
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(r.clone(), bd.clone());
        }
    }

    /// Records that `bd` owns `objs` and makes sure their kinds are watched; a kind watched for
    /// the first time is waited for until its first list is in the cache (bounded). Returns the
    /// kinds (apiVersion, kind) listed by this call: their cache is newer than anything the
    /// caller wrote before.
    pub async fn track(&mut self, bd: &str, objs: &[ObjRef]) -> HashSet<(String, String)> {
        {
            let mut o = self.owners.lock().unwrap_or_else(|e| e.into_inner());
            o.retain(|_, b| b != bd);
            for r in objs {
                o.insert(r.clone(), bd.to_string());
            }
        }
        let mut new = Vec::new();
        let mut listed_now = HashSet::new();
        for r in objs {
            let key = (r.api_version.clone(), r.kind.clone());
            if self.started.contains(&key) {
                continue;
            }
            let Ok(kind) = self.ds.kind(&r.api_version, &r.kind).await else {
                continue;
            };
            self.started.insert(key.clone());
            listed_now.insert(key.clone());
            let kc = Arc::new(KindCache::default());
            self.cache
                .kinds
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(key, kc.clone());
            new.push(kc.clone());
            let api: Api<DynamicObject> = Api::all_with(self.ds.client.clone(), &kind.resource);
            let cfg = watcher::Config::default().labels(fleet_api::keys::OBJECTSET_HASH_LABEL);
            let owners = self.owners.clone();
            let tx = self.tx.clone();
            let (api_version, kind_name) = (r.api_version.clone(), r.kind.clone());
            tokio::spawn(async move {
                let mut s = watcher(api, cfg).default_backoff().boxed();
                // A (re-)list is collected aside and replaces the cache when complete.
                let mut relist: Option<HashMap<(String, String), Arc<DynamicObject>>> = None;
                let mut initial = true;
                while let Some(ev) = s.next().await {
                    let (k, notify) = match ev {
                        Ok(watcher::Event::Init) => {
                            relist = Some(HashMap::new());
                            continue;
                        }
                        Ok(watcher::Event::InitApply(o)) => {
                            let k = key_of(&o);
                            relist
                                .get_or_insert_with(HashMap::new)
                                .insert(k.clone(), slim(o));
                            if initial {
                                continue;
                            }
                            (k, true)
                        }
                        Ok(watcher::Event::InitDone) => {
                            if let Some(m) = relist.take() {
                                *kc.objects.lock().unwrap_or_else(|e| e.into_inner()) = m;
                            }
                            initial = false;
                            kc.synced.store(true, Ordering::Release);
                            kc.listed.notify_waiters();
                            continue;
                        }
                        Ok(watcher::Event::Apply(o)) => {
                            let k = key_of(&o);
                            kc.objects
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .insert(k.clone(), slim(o));
                            (k, true)
                        }
                        Ok(watcher::Event::Delete(o)) => {
                            let k = key_of(&o);
                            kc.objects
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .remove(&k);
                            (k, true)
                        }
                        Err(e) => {
                            tracing::debug!("drift watch {api_version} {kind_name}: {e}");
                            continue;
                        }
                    };
                    if !notify {
                        continue;
                    }
                    let r = ObjRef {
                        api_version: api_version.clone(),
                        kind: kind_name.clone(),
                        namespace: k.0,
                        name: k.1,
                    };
                    let owner = owners
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .get(&r)
                        .cloned();
                    if let Some(bd) = owner
                        && tx.send(bd).is_err()
                    {
                        return;
                    }
                }
            });
        }
        for kc in new {
            let listed = kc.listed.notified();
            if kc.synced.load(Ordering::Acquire) {
                continue;
            }
            let _ = tokio::time::timeout(FIRST_LIST_WAIT, listed).await;
        }
        listed_now
    }

    /// Forgets a BundleDeployment's objects (uninstalled).
    pub fn forget(&mut self, bd: &str) {
        self.owners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|_, b| b != bd);
    }
}
