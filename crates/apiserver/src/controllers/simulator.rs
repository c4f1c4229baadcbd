//! Simulated workloads, in the manner of kwok: no container runs anywhere, but the status of
//! Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs, Pods, PersistentVolumeClaims and
//! Services of type LoadBalancer is set as a healthy cluster's controllers and kubelet would
//! set it (every replica ready, every Job complete, every claim bound, every load balancer
//! given an address). Why: a server on one machine can then stand in for a downstream cluster,
//! and tools that wait for readiness (`kubectl rollout status`, Helm's `--wait`, Fleet's
//! readiness summary) see what they see on a real cluster. Off unless asked for
//! ([`crate::ApiServerConfig::simulate_workloads`]).
//!
//! How: one watch per kind drives a reconcile function per kind that derives the status the
//! object should have from its spec and generation (keeping the timestamps of conditions that
//! did not change), and writes it through the status subresource as field manager
//! [`FIELD_MANAGER`] only when it differs. Its own writes come back as events whose derived
//! status equals what is stored, so they cause no further write; a spec change bumps the
//! generation, which changes the derived status and is written once. The simulated cluster has
//! one node (DaemonSets schedule one pod).

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use fleet_patch::json::ReadPointer as _;
use futures::StreamExt;
use serde_json::{Map, Value, json};
use tokio::task::JoinSet;

use crate::state::ApiServer;
use crate::storage::errors::ApiResult;
use crate::storage::registry::{ResourceInfo, split_key};
use crate::storage::store::{EventKind, Obj, Rev};

/// The field manager of every status write the simulator makes.
pub const FIELD_MANAGER: &str = "fleet-simulator";
/// The address load balancers and nodes get.
const LOOPBACK: &str = "127.0.0.1";
/// Status writes in flight at once (a burst of thousands of objects is written concurrently,
/// so group commit batches them).
const MAX_IN_FLIGHT: usize = 64;
/// Wait before writing again after a failed write.
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// The kinds the simulator keeps the status of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Deployment,
    ReplicaSet,
    StatefulSet,
    DaemonSet,
    Job,
    Pod,
    PersistentVolumeClaim,
    Service,
}

/// `(group, version, plural, kind)`, the store prefix being `/{group or core}/{plural}/`.
const KINDS: [(&str, &str, &str, Kind); 8] = [
    ("apps", "v1", "deployments", Kind::Deployment),
    ("apps", "v1", "replicasets", Kind::ReplicaSet),
    ("apps", "v1", "statefulsets", Kind::StatefulSet),
    ("apps", "v1", "daemonsets", Kind::DaemonSet),
    ("batch", "v1", "jobs", Kind::Job),
    ("", "v1", "pods", Kind::Pod),
    (
        "",
        "v1",
        "persistentvolumeclaims",
        Kind::PersistentVolumeClaim,
    ),
    ("", "v1", "services", Kind::Service),
];

/// Starts the simulator task (restarts itself when a watch ends, until shutdown).
pub fn spawn(srv: ApiServer) {
    tokio::spawn(async move {
        loop {
            if let Err(e) = run(&srv).await {
                tracing::debug!(error = %e, "workload simulator restarts");
            }
            if stopping(&srv) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
}

fn stopping(srv: &ApiServer) -> bool {
    srv.inner.gc_stop.load(std::sync::atomic::Ordering::Relaxed)
}

/// The resource of each simulated kind, looked up once per run.
struct Kinds(Vec<(String, Kind, Arc<ResourceInfo>)>);

impl Kinds {
    fn of(&self, key: &str) -> Option<(Kind, &Arc<ResourceInfo>)> {
        self.0
            .iter()
            .find(|(prefix, _, _)| key.starts_with(prefix.as_str()))
            .map(|(_, k, info)| (*k, info))
    }
}

/// Keys whose status must be written, each queued once; keys being written are not started
/// again until their write finishes (and are looked at once more afterwards if they changed
/// meanwhile).
#[derive(Default)]
struct Queue {
    ready: VecDeque<Arc<str>>,
    queued: HashSet<Arc<str>>,
    in_flight: HashSet<Arc<str>>,
    /// Changed while their write was in flight.
    again: HashSet<Arc<str>>,
    /// Failed writes, tried again after [`RETRY_AFTER`].
    retry: HashSet<Arc<str>>,
}

impl Queue {
    fn push(&mut self, key: Arc<str>) {
        if self.in_flight.contains(&key) {
            self.again.insert(key);
        } else if self.queued.insert(key.clone()) {
            self.ready.push_back(key);
        }
    }
}

async fn run(srv: &ApiServer) -> Result<(), String> {
    let mut kinds = Vec::new();
    for (group, version, plural, kind) in KINDS {
        let info = srv
            .registry()
            .lookup(group, version, plural)
            .ok_or_else(|| format!("{plural} is not a registered resource"))?;
        kinds.push((info.prefix(None), kind, info));
    }
    let kinds = Kinds(kinds);
    let mut queue = Queue::default();
    let mut streams = Vec::new();
    for (prefix, _, _) in &kinds.0 {
        let page = srv
            .store()
            .list(prefix, None, None, None, &|_, _| true)
            .map_err(|e| e.to_string())?;
        for (key, obj) in &page.items {
            consider(&kinds, &mut queue, key, obj);
        }
        let watch = srv
            .store()
            .watch(prefix, page.rev)
            .map_err(|e| e.to_string())?;
        // Each watch yields its events, then one `None` when it ends (closed or cut off).
        let events = futures::stream::unfold(Some(watch), |w| async move {
            let mut w = w?;
            match w.next().await {
                Some(ev) => Some((Some(ev), Some(w))),
                None => Some((None, None)),
            }
        });
        streams.push(events.boxed());
    }
    let mut events = futures::stream::select_all(streams);
    let mut writes: JoinSet<(Arc<str>, WriteOutcome)> = JoinSet::new();
    // The revision of each status write whose event has not come back yet: that event is the
    // simulator's own write, already derived from, so it is not decoded again.
    let mut written: HashMap<Arc<str>, Rev> = HashMap::new();
    loop {
        while writes.len() < MAX_IN_FLIGHT {
            let Some(key) = queue.ready.pop_front() else {
                break;
            };
            queue.queued.remove(&key);
            let Some((kind, info)) = kinds.of(&key) else {
                continue;
            };
            queue.in_flight.insert(key.clone());
            let (srv, info) = (srv.clone(), info.clone());
            writes.spawn(async move {
                let done = match write_status(&srv, &info, kind, &key).await {
                    Ok(rev) => Ok(rev),
                    Err(e) if e.code == 404 => Ok(None),
                    Err(e) => {
                        tracing::debug!(key = %key, error = %e, "simulated status write failed; will retry");
                        Err(())
                    }
                };
                (key, done)
            });
        }
        let retry = !queue.retry.is_empty();
        tokio::select! {
            ev = events.next() => {
                let Some(Some(ev)) = ev else { return Err("a watch ended".into()) };
                let own = written.remove(&ev.key) == Some(ev.obj.rev);
                if !own && !matches!(ev.kind, EventKind::Deleted) {
                    consider(&kinds, &mut queue, &ev.key, &ev.obj);
                }
            }
            Some(done) = writes.join_next(), if !writes.is_empty() => {
                let (key, done) = done.map_err(|e| format!("status write task: {e}"))?;
                queue.in_flight.remove(&key);
                match done {
                    Err(()) => {
                        queue.retry.insert(key);
                    }
                    Ok(rev) => {
                        // Changed while in flight: look again unless the stored object is still
                        // the one this write made (its event came back during the write).
                        if queue.again.remove(&key) {
                            if let Some(obj) = srv.store().get(&key)
                                && rev != Some(obj.rev)
                            {
                                consider(&kinds, &mut queue, &key, &obj);
                            }
                        } else if let Some(rev) = rev {
                            written.insert(key, rev);
                        }
                    }
                }
            }
            () = tokio::time::sleep(RETRY_AFTER), if retry => {
                for key in std::mem::take(&mut queue.retry) {
                    queue.push(key);
                }
            }
        }
        if stopping(srv) {
            return Ok(());
        }
    }
}

/// How a status write ended: the revision it stored (None: the object is gone), or failed.
type WriteOutcome = Result<Option<Rev>, ()>;

/// Queues `key` when its stored status is not the simulated one.
fn consider(kinds: &Kinds, queue: &mut Queue, key: &Arc<str>, obj: &Obj) {
    let Some((kind, _)) = kinds.of(key) else {
        return;
    };
    if queue.in_flight.contains(key) {
        queue.again.insert(key.clone());
        return;
    }
    let json = obj.json();
    if kind == Kind::Service && !may_need_lb_status(&json) {
        return;
    }
    let Ok(slim) = serde_json::from_slice::<Slim>(&json) else {
        return;
    };
    if desired_status(kind, &slim.into_value()).is_some() {
        queue.push(key.clone());
    }
}

/// Whether a Service's JSON may need a status written: only a LoadBalancer gets one, and only a
/// Service that had an ingress loses it. Why: most Services are neither, and parsing each of
/// their events (every apply of every agent) was all the simulator did with them.
fn may_need_lb_status(json: &[u8]) -> bool {
    memchr::memmem::find(json, b"LoadBalancer").is_some()
        || memchr::memmem::find(json, b"\"ingress\"").is_some()
}

/// What [`desired_status`] reads of an object, decoded from an event without the rest of its
/// metadata (managedFields, labels, annotations were most of the cost of looking at one).
#[derive(serde::Deserialize)]
struct Slim {
    #[serde(default)]
    metadata: SlimMeta,
    #[serde(default, deserialize_with = "present")]
    spec: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    status: Option<Value>,
}

#[derive(Default, serde::Deserialize)]
struct SlimMeta {
    #[serde(default, deserialize_with = "present")]
    name: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    uid: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    generation: Option<Value>,
    #[serde(default, rename = "deletionTimestamp", deserialize_with = "present")]
    deletion_timestamp: Option<Value>,
}

/// A field that is there, `null` included (`Option<Value>` alone reads `null` as absent).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    <Value as serde::Deserialize>::deserialize(d).map(Some)
}

impl Slim {
    /// The object as [`desired_status`] reads it.
    fn into_value(self) -> Value {
        let mut meta = Map::new();
        let m = self.metadata;
        for (k, v) in [
            ("name", m.name),
            ("uid", m.uid),
            ("generation", m.generation),
            ("deletionTimestamp", m.deletion_timestamp),
        ] {
            if let Some(v) = v {
                meta.insert(k.into(), v);
            }
        }
        let mut o = Map::new();
        o.insert("metadata".into(), Value::Object(meta));
        if let Some(v) = self.spec {
            o.insert("spec".into(), v);
        }
        if let Some(v) = self.status {
            o.insert("status".into(), v);
        }
        Value::Object(o)
    }
}

/// Writes the simulated status of `key` through the status subresource, from the object as it
/// is now (nothing when it already has it); answers the revision stored after it (None only
/// for a dry run, which this never is).
async fn write_status(
    srv: &ApiServer,
    info: &ResourceInfo,
    kind: Kind,
    key: &str,
) -> ApiResult<Option<Rev>> {
    let (ns, name) = split_key(key);
    let ns = info.namespaced.then_some(ns);
    srv.guaranteed_update(info, ns, name, Some("status"), false, |cur| {
        let Some(status) = desired_status(kind, cur) else {
            return Ok(None);
        };
        let mut new = cur.clone();
        if let Some(m) = new.as_object_mut() {
            m.insert("status".into(), status);
        }
        Ok(Some(crate::write::ssa::track_update(
            info,
            Some(cur),
            new,
            FIELD_MANAGER,
            Some("status"),
        )))
    })
    .await
    .map(|w| match w {
        crate::write::crud::Written::Stored(o) => Some(o.rev),
        crate::write::crud::Written::Unstored(_) => None,
    })
}

/// The status `obj` should have, when it differs from the one it has. Objects being deleted
/// keep theirs.
fn desired_status(kind: Kind, obj: &Value) -> Option<Value> {
    if obj.at("/metadata/deletionTimestamp").is_some() {
        return None;
    }
    let current = obj.get("status").cloned().unwrap_or_else(|| json!({}));
    let desired = match kind {
        Kind::Deployment => deployment(obj, &current),
        Kind::ReplicaSet => replica_set(obj),
        Kind::StatefulSet => stateful_set(obj),
        Kind::DaemonSet => daemon_set(obj),
        Kind::Job => job(obj, &current)?,
        Kind::Pod => pod(obj, &current),
        Kind::PersistentVolumeClaim => claim(obj, &current),
        Kind::Service => service(obj, &current)?,
    };
    (desired != current).then_some(desired)
}

fn generation(obj: &Value) -> i64 {
    obj.at("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(1)
}

fn name(obj: &Value) -> &str {
    obj.at("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// `spec.replicas`, defaulted to 1 as kube-apiserver defaults it.
fn replicas(obj: &Value) -> i64 {
    obj.at("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1)
        .max(0)
}

/// Inserts `key: n` unless `n` is 0 (Go's `omitempty` on the status counters).
fn put_count(m: &mut Map<String, Value>, key: &str, n: i64) {
    if n != 0 {
        m.insert(key.into(), json!(n));
    }
}

/// A stable name suffix for a pod template, in the alphabet kube uses for its hashes (kube
/// hashes the Go struct; this hashes the JSON, so the suffixes differ from a real cluster's).
fn template_hash(obj: &Value) -> String {
    let template = obj.at("/spec/template").unwrap_or(&Value::Null);
    let bytes = serde_json::to_vec(template).unwrap_or_default();
    // FNV-1a, 32 bits, as kube's ComputeHash.
    let mut h: u32 = 0x811c_9dc5;
    for b in bytes {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    h.to_string()
        .bytes()
        .map(|b| ALPHANUMS[usize::from(b) % ALPHANUMS.len()] as char)
        .collect()
}

/// A condition of `current.conditions` by type.
fn find_condition<'a>(current: &'a Value, type_: &str) -> Option<&'a Value> {
    current
        .get("conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
}

/// A condition as a controller writes it: the transition time is kept while the status stays
/// the same; `update_field` (Deployments' `lastUpdateTime`, Jobs' `lastProbeTime`) is kept
/// while status, reason and message stay the same.
fn condition(
    current: &Value,
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    update_field: Option<&str>,
) -> Value {
    let old = find_condition(current, type_);
    let field = |c: &Value, f: &str| c.get(f).cloned();
    let same_status = old.is_some_and(|c| c.get("status").and_then(Value::as_str) == Some(status));
    let same_all = same_status
        && old.is_some_and(|c| {
            c.get("reason").and_then(Value::as_str) == Some(reason)
                && c.get("message").and_then(Value::as_str) == Some(message)
        });
    let now = || json!(crate::storage::objects::now());
    let transition = old
        .filter(|_| same_status)
        .and_then(|c| field(c, "lastTransitionTime"))
        .unwrap_or_else(now);
    let mut c = Map::new();
    c.insert("type".into(), json!(type_));
    c.insert("status".into(), json!(status));
    if let Some(f) = update_field {
        let t = old
            .filter(|_| same_all)
            .and_then(|c| field(c, f))
            .unwrap_or_else(now);
        c.insert(f.into(), t);
    }
    c.insert("lastTransitionTime".into(), transition);
    c.insert("reason".into(), json!(reason));
    c.insert("message".into(), json!(message));
    Value::Object(c)
}

fn deployment(obj: &Value, current: &Value) -> Value {
    let r = replicas(obj);
    let mut s = Map::new();
    s.insert("observedGeneration".into(), json!(generation(obj)));
    for f in [
        "replicas",
        "updatedReplicas",
        "readyReplicas",
        "availableReplicas",
    ] {
        put_count(&mut s, f, r);
    }
    let rs = format!("{}-{}", name(obj), template_hash(obj));
    s.insert(
        "conditions".into(),
        json!([
            condition(
                current,
                "Available",
                "True",
                "MinimumReplicasAvailable",
                "Deployment has minimum availability.",
                Some("lastUpdateTime"),
            ),
            condition(
                current,
                "Progressing",
                "True",
                "NewReplicaSetAvailable",
                &format!("ReplicaSet \"{rs}\" has successfully progressed."),
                Some("lastUpdateTime"),
            ),
        ]),
    );
    Value::Object(s)
}

fn replica_set(obj: &Value) -> Value {
    let r = replicas(obj);
    let mut s = Map::new();
    s.insert("replicas".into(), json!(r));
    for f in ["fullyLabeledReplicas", "readyReplicas", "availableReplicas"] {
        put_count(&mut s, f, r);
    }
    s.insert("observedGeneration".into(), json!(generation(obj)));
    Value::Object(s)
}

fn stateful_set(obj: &Value) -> Value {
    let r = replicas(obj);
    let revision = format!("{}-{}", name(obj), template_hash(obj));
    let mut s = Map::new();
    s.insert("observedGeneration".into(), json!(generation(obj)));
    s.insert("replicas".into(), json!(r));
    for f in ["readyReplicas", "currentReplicas", "updatedReplicas"] {
        put_count(&mut s, f, r);
    }
    s.insert("currentRevision".into(), json!(revision));
    s.insert("updateRevision".into(), json!(revision));
    s.insert("collisionCount".into(), json!(0));
    s.insert("availableReplicas".into(), json!(r));
    Value::Object(s)
}

fn daemon_set(obj: &Value) -> Value {
    // One simulated node: one pod, scheduled, up to date, ready.
    let n = 1;
    let mut s = Map::new();
    s.insert("currentNumberScheduled".into(), json!(n));
    s.insert("numberMisscheduled".into(), json!(0));
    s.insert("desiredNumberScheduled".into(), json!(n));
    s.insert("numberReady".into(), json!(n));
    s.insert("observedGeneration".into(), json!(generation(obj)));
    put_count(&mut s, "updatedNumberScheduled", n);
    put_count(&mut s, "numberAvailable", n);
    Value::Object(s)
}

/// A Job runs to completion at once; a suspended Job is left alone (`None`).
fn job(obj: &Value, current: &Value) -> Option<Value> {
    if obj.at("/spec/suspend").and_then(Value::as_bool) == Some(true) {
        return None;
    }
    let completions = obj
        .at("/spec/completions")
        .and_then(Value::as_i64)
        .unwrap_or(1)
        .max(0);
    let now = || json!(crate::storage::objects::now());
    let start = current.get("startTime").cloned().unwrap_or_else(now);
    let end = current.get("completionTime").cloned().unwrap_or_else(now);
    let message = "Reached expected number of succeeded pods";
    let mut s = Map::new();
    s.insert(
        "conditions".into(),
        json!([
            condition(
                current,
                "SuccessCriteriaMet",
                "True",
                "CompletionsReached",
                message,
                Some("lastProbeTime"),
            ),
            condition(
                current,
                "Complete",
                "True",
                "CompletionsReached",
                message,
                Some("lastProbeTime"),
            ),
        ]),
    );
    s.insert("startTime".into(), start);
    s.insert("completionTime".into(), end);
    put_count(&mut s, "succeeded", completions);
    let indexed = obj.at("/spec/completionMode").and_then(Value::as_str) == Some("Indexed");
    if indexed && completions > 0 {
        let indexes = if completions == 1 {
            "0".to_string()
        } else {
            format!("0-{}", completions - 1)
        };
        s.insert("completedIndexes".into(), json!(indexes));
    }
    s.insert("uncountedTerminatedPods".into(), json!({}));
    s.insert("ready".into(), json!(0));
    s.insert("terminating".into(), json!(0));
    Some(Value::Object(s))
}

/// A pod address for `uid`, stable across restarts (10.244.0.0/16, as kind's pod network).
fn pod_ip(obj: &Value) -> String {
    let uid = obj
        .at("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut h: u32 = 0x811c_9dc5;
    for b in uid.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    // Avoid .0 and .255 in the last octet.
    format!("10.244.{}.{}", (h >> 8) & 0xff, 1 + (h & 0xff) % 254)
}

fn pod(obj: &Value, current: &Value) -> Value {
    let now = || json!(crate::storage::objects::now());
    let start = current.get("startTime").cloned().unwrap_or_else(now);
    let statuses = |field: &str, list: &str, init: bool| -> Vec<Value> {
        let old = current.get(field).and_then(Value::as_array);
        obj.at(&format!("/spec/{list}"))
            .and_then(Value::as_array)
            .map(|cs| {
                cs.iter()
                    .map(|c| {
                        let cname = c.get("name").and_then(Value::as_str).unwrap_or("");
                        let image = c.get("image").and_then(Value::as_str).unwrap_or("");
                        let prev = old.and_then(|o| {
                            o.iter().find(|s| {
                                s.get("name").and_then(Value::as_str) == Some(cname)
                                    && s.get("image").and_then(Value::as_str) == Some(image)
                            })
                        });
                        let started = prev
                            .and_then(|p| {
                                p.at("/state/running/startedAt")
                                    .or_else(|| p.at("/state/terminated/startedAt"))
                            })
                            .cloned()
                            .unwrap_or_else(now);
                        let state = if init {
                            let finished = prev
                                .and_then(|p| p.at("/state/terminated/finishedAt"))
                                .cloned()
                                .unwrap_or_else(|| started.clone());
                            json!({"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": started, "finishedAt": finished}})
                        } else {
                            json!({"running": {"startedAt": started}})
                        };
                        json!({
                            "name": cname,
                            "state": state,
                            "lastState": {},
                            "ready": !init,
                            "restartCount": 0,
                            "image": image,
                            "imageID": "",
                            "started": !init,
                        })
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let cond = |t: &str| {
        let mut c = condition(current, t, "True", "", "", None);
        if let Some(m) = c.as_object_mut() {
            m.remove("reason");
            m.remove("message");
            m.insert("lastProbeTime".into(), Value::Null);
        }
        c
    };
    let ip = pod_ip(obj);
    let mut s = Map::new();
    s.insert("phase".into(), json!("Running"));
    s.insert(
        "conditions".into(),
        json!([
            cond("PodReadyToStartContainers"),
            cond("Initialized"),
            cond("Ready"),
            cond("ContainersReady"),
            cond("PodScheduled"),
        ]),
    );
    s.insert("hostIP".into(), json!(LOOPBACK));
    s.insert("hostIPs".into(), json!([{"ip": LOOPBACK}]));
    s.insert("podIP".into(), json!(ip));
    s.insert("podIPs".into(), json!([{ "ip": ip }]));
    s.insert("startTime".into(), start);
    let init = statuses("initContainerStatuses", "initContainers", true);
    if !init.is_empty() {
        s.insert("initContainerStatuses".into(), json!(init));
    }
    s.insert(
        "containerStatuses".into(),
        json!(statuses("containerStatuses", "containers", false)),
    );
    s.insert("qosClass".into(), json!("BestEffort"));
    Value::Object(s)
}

fn claim(obj: &Value, _current: &Value) -> Value {
    let mut s = Map::new();
    s.insert("phase".into(), json!("Bound"));
    if let Some(modes) = obj.at("/spec/accessModes") {
        s.insert("accessModes".into(), modes.clone());
    }
    if let Some(size) = obj.at("/spec/resources/requests/storage") {
        s.insert("capacity".into(), json!({ "storage": size }));
    }
    Value::Object(s)
}

/// A LoadBalancer Service gets an ingress address; a Service that stopped being one loses it;
/// other Services are left alone (`None`).
fn service(obj: &Value, current: &Value) -> Option<Value> {
    let lb = obj.at("/spec/type").and_then(Value::as_str) == Some("LoadBalancer");
    if lb {
        let mut s = current.as_object().cloned().unwrap_or_default();
        s.insert(
            "loadBalancer".into(),
            json!({"ingress": [{"ip": LOOPBACK, "ipMode": "VIP"}]}),
        );
        return Some(Value::Object(s));
    }
    current.at("/loadBalancer/ingress")?;
    let mut s = current.as_object().cloned().unwrap_or_default();
    s.insert("loadBalancer".into(), json!({}));
    Some(Value::Object(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_services_that_may_need_a_status_are_parsed() {
        let cluster_ip = json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "s", "uid": "u"},
            "spec": {"type": "ClusterIP", "ports": [{"port": 80}]}});
        let lb = json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "s", "uid": "u"}, "spec": {"type": "LoadBalancer"}});
        let was_lb = json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "s", "uid": "u"}, "spec": {"type": "ClusterIP"},
            "status": {"loadBalancer": {"ingress": [{"ip": "127.0.0.1"}]}}});
        for (svc, needs) in [(cluster_ip, false), (lb, true), (was_lb, true)] {
            let bytes = serde_json::to_vec(&svc).unwrap();
            assert_eq!(may_need_lb_status(&bytes), needs, "{svc}");
            // The filter never skips a Service that needs a status.
            assert_eq!(
                desired_status(Kind::Service, &svc).is_some(),
                needs,
                "{svc}"
            );
        }
    }

    /// Applying the derived status and deriving again changes nothing: the simulator's own
    /// writes never cause another write.
    fn settles(kind: Kind, obj: Value) -> Value {
        let status = desired_status(kind, &obj).expect("a status to write");
        let mut written = obj.clone();
        written["status"] = status.clone();
        assert_eq!(desired_status(kind, &written), None, "{kind:?} settles");
        status
    }

    #[test]
    fn the_slim_view_derives_what_the_whole_object_does() {
        let meta = json!({"name": "x", "namespace": "d", "uid": "u1", "generation": 3,
            "labels": {"a": "b"}, "annotations": {"c": "d"},
            "managedFields": [{"manager": "m", "operation": "Apply", "fieldsV1": {"f:spec": {}}}]});
        let objects = [
            (
                Kind::Deployment,
                json!({"metadata": meta, "spec": {"replicas": 2, "template": {"a": 1}}}),
            ),
            (
                Kind::Pod,
                json!({"metadata": meta, "spec": {"containers": [{"name": "c", "image": "i"}]}}),
            ),
            (
                Kind::Service,
                json!({"metadata": meta, "spec": {"type": "LoadBalancer"}, "status": null}),
            ),
            (
                Kind::Job,
                json!({"metadata": meta, "spec": {"completions": 2}, "status": {"active": 1}}),
            ),
        ];
        for (kind, obj) in objects {
            let slim: Slim = serde_json::from_value(obj.clone()).expect("decodes");
            assert_eq!(
                desired_status(kind, &slim.into_value()),
                desired_status(kind, &obj),
                "{kind:?}"
            );
        }
        // Being deleted: left alone, which only the kept deletionTimestamp tells.
        let gone = json!({"metadata": {"name": "x", "deletionTimestamp": "2024-01-01T00:00:00Z"}, "spec": {}});
        let slim: Slim = serde_json::from_value(gone).expect("decodes");
        assert_eq!(desired_status(Kind::Deployment, &slim.into_value()), None);
    }

    #[test]
    fn every_kind_settles_after_one_write() {
        let meta = json!({"name": "x", "namespace": "d", "uid": "u1", "generation": 2});
        let d = settles(
            Kind::Deployment,
            json!({"metadata": meta, "spec": {"replicas": 3, "template": {}}}),
        );
        assert_eq!(d["observedGeneration"], 2);
        assert_eq!(d["availableReplicas"], 3);
        settles(Kind::ReplicaSet, json!({"metadata": meta, "spec": {}}));
        settles(
            Kind::StatefulSet,
            json!({"metadata": meta, "spec": {"replicas": 2}}),
        );
        settles(Kind::DaemonSet, json!({"metadata": meta, "spec": {}}));
        let j = settles(
            Kind::Job,
            json!({"metadata": meta, "spec": {"completions": 4, "completionMode": "Indexed"}}),
        );
        assert_eq!(j["completedIndexes"], "0-3");
        settles(
            Kind::Pod,
            json!({"metadata": meta, "spec": {"initContainers": [{"name": "i", "image": "b"}], "containers": [{"name": "c", "image": "a"}]}}),
        );
        settles(
            Kind::PersistentVolumeClaim,
            json!({"metadata": meta, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}),
        );
        settles(
            Kind::Service,
            json!({"metadata": meta, "spec": {"type": "LoadBalancer"}}),
        );
    }

    #[test]
    fn a_spec_change_is_observed_once() {
        let meta = json!({"name": "x", "generation": 1});
        let mut d = json!({"metadata": meta, "spec": {"replicas": 1, "template": {"a": 1}}});
        d["status"] = settles(Kind::Deployment, d.clone());
        let before = d["status"]["conditions"].clone();
        d["metadata"]["generation"] = json!(2);
        d["spec"]["replicas"] = json!(5);
        let s = desired_status(Kind::Deployment, &d).expect("new generation observed");
        assert_eq!(s["observedGeneration"], 2);
        assert_eq!(s["readyReplicas"], 5);
        // Same condition status: the transition time is kept.
        assert_eq!(
            s["conditions"][0]["lastTransitionTime"],
            before[0]["lastTransitionTime"]
        );
    }

    #[test]
    fn left_alone() {
        // Suspended Jobs, plain Services, objects being deleted.
        assert_eq!(
            desired_status(Kind::Job, &json!({"spec": {"suspend": true}})),
            None
        );
        assert_eq!(
            desired_status(Kind::Service, &json!({"spec": {"type": "ClusterIP"}})),
            None
        );
        assert_eq!(
            desired_status(
                Kind::Pod,
                &json!({"metadata": {"deletionTimestamp": "2024-01-01T00:00:00Z"}, "spec": {}})
            ),
            None
        );
        // A Service that stops being a LoadBalancer loses its address.
        let s = desired_status(
            Kind::Service,
            &json!({"spec": {"type": "ClusterIP"}, "status": {"loadBalancer": {"ingress": [{"ip": "127.0.0.1"}]}}}),
        )
        .expect("address removed");
        assert_eq!(s, json!({"loadBalancer": {}}));
    }
}
