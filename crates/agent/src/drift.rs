//! Drift watches: one watch per kind the agent deployed (not one per object), selecting objects
//! that carry the objectset label render adds. Each watch keeps the objects it sees (without
//! `managedFields`) so the monitor reads live state from memory instead of one GET per object
//! per check; an event on an object some BundleDeployment owns queues that BundleDeployment for
//! a status check (and drift correction when enabled), after the cache holds the new state.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fleet_patch::json::ReadPointer as _;
use futures::StreamExt;
use kube::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher;
use serde_json::Value;
use tokio::sync::Notify;
use tokio::sync::mpsc::UnboundedSender;

use crate::objects::{Downstream, ObjRef};

/// Which BundleDeployment owns each deployed object (shared with the watch tasks).
pub type Owners = Arc<Mutex<Ownership>>;

/// Deployed objects by owning BundleDeployment, both ways, and the resourceVersion each got
/// from the agent's own last apply (the echo of that write on the watch is not news).
#[derive(Default)]
pub struct Ownership {
    owner: HashMap<ObjRef, String>,
    objects: HashMap<String, HashSet<ObjRef>>,
    applied: HashMap<ObjRef, String>,
}

impl Ownership {
    fn claim(&mut self, r: &ObjRef, bd: &str) {
        if let Some(old) = self.owner.insert(r.clone(), bd.to_string())
            && old != bd
            && let Some(objs) = self.objects.get_mut(&old)
        {
            objs.remove(r);
        }
        self.objects
            .entry(bd.to_string())
            .or_default()
            .insert(r.clone());
    }

    fn release_all(&mut self, bd: &str) {
        for r in self.objects.remove(bd).unwrap_or_default() {
            if self.owner.get(&r).is_some_and(|b| b == bd) {
                self.owner.remove(&r);
                self.applied.remove(&r);
            }
        }
    }

    /// The owner to tell about an event on `r` at `rv`; None when nobody owns it, or when
    /// `rv` is what the agent's own apply answered (its monitor already read that state).
    fn notify(&mut self, r: &ObjRef, rv: Option<&str>) -> Option<String> {
        if rv.is_some() && self.applied.get(r).map(String::as_str) == rv {
            self.applied.remove(r);
            return None;
        }
        self.owner.get(r).cloned()
    }
}

/// How long `track` waits for a new kind's first list before the monitor falls back to GETs.
const FIRST_LIST_WAIT: Duration = Duration::from_secs(10);

/// One cached object. A watch keeps its compact JSON and each read decodes it: a decoded
/// `Value` of a small object took about 4.4 KB of heap against its 0.6 KB of JSON, 13 KB for
/// each BundleDeployment of three objects, held for as long as the object lives; the decode is
/// transient and a check reads a handful of objects. A snapshot of apply answers, read once,
/// keeps the values it was given.
#[derive(Debug, Clone)]
enum Cached {
    Json(Box<[u8]>),
    Value(Arc<Value>),
}

impl Cached {
    /// The object; None only if the JSON this cache wrote does not decode (never expected).
    fn value(&self) -> Option<Arc<Value>> {
        match self {
            Cached::Value(v) => Some(v.clone()),
            Cached::Json(j) => serde_json::from_slice(j).ok().map(Arc::new),
        }
    }
}

/// The objects one kind's watch has seen, by (namespace, name), as JSON with apiVersion and
/// kind (converted once per event, not once per read).
#[derive(Default)]
struct KindCache {
    objects: Mutex<HashMap<(String, String), Cached>>,
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
    pub fn get(&self, r: &ObjRef) -> Option<Arc<Value>> {
        match self.lookup(r) {
            Seen::Present(v) => Some(v),
            Seen::Absent | Seen::Unknown => None,
        }
    }

    /// A snapshot holding just `objects` (the answers to a deploy's applies, read without
    /// managedFields): their kinds count as listed, so an object of those kinds that is not
    /// among them reads as absent.
    pub fn of_objects(objects: Vec<Value>) -> LiveCache {
        let mut kinds: Kinds = HashMap::new();
        for o in objects {
            let Some(r) = ObjRef::of(&o) else {
                continue;
            };
            let o = Cached::Value(Arc::new(o));
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
                .insert((r.namespace, r.name), o);
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
        // Decoded under the lock: no copy of the JSON to decode outside it.
        let o = kc
            .objects
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(r.namespace.clone(), r.name.clone()))
            .map(Cached::value);
        match o {
            Some(Some(v)) => Seen::Present(v),
            Some(None) => Seen::Unknown,
            None => Seen::Absent,
        }
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
    Present(Arc<Value>),
}

/// The running per-kind watches.
pub struct DriftWatches {
    ds: Downstream,
    owners: Owners,
    tx: UnboundedSender<String>,
    started: HashSet<(String, String)>,
    cache: LiveCache,
}

fn key_of(o: &Watched) -> (String, String) {
    (
        o.meta.namespace.clone().unwrap_or_default(),
        o.meta.name.clone().unwrap_or_default(),
    )
}

/// The object as the monitor reads it: JSON without `managedFields`, with its apiVersion and
/// kind (which a watch event may not carry): the server's text as it came when it has both,
/// else encoded again (kept decoded in the unexpected case that it does not encode).
fn slim(o: Watched, api_version: &str, kind: &str) -> Cached {
    let same_kind =
        o.api_version.as_deref() == Some(api_version) && o.kind.as_deref() == Some(kind);
    if same_kind {
        return Cached::Json(o.json);
    }
    // An object without (or with other) apiVersion and kind: rewritten through a decode.
    let Ok(mut v) = serde_json::from_slice::<serde_json::Map<String, Value>>(&o.json) else {
        return Cached::Json(o.json);
    };
    v.insert("apiVersion".into(), Value::String(api_version.to_string()));
    v.insert("kind".into(), Value::String(kind.to_string()));
    match serde_json::to_vec(&v) {
        Ok(json) => Cached::Json(json.into_boxed_slice()),
        Err(_) => Cached::Value(Arc::new(Value::Object(v))),
    }
}

/// An object as a drift watch decodes it: its JSON text as the server sent it, less the
/// `managedFields` member (often the largest part of an object, and never read here), with the
/// few metadata fields the watcher itself needs beside it. Every write to a deployed object
/// reaches its agent as one of these; building a `Value` tree of each only to encode it again
/// for the cache was the largest single source of the agents' allocations after server-side
/// apply's (about 110 per event).
#[derive(Clone, Debug)]
pub struct Watched {
    meta: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    api_version: Option<String>,
    kind: Option<String>,
    json: Box<[u8]>,
}

/// The members of an object a watcher reads, borrowed from its text where it can be.
#[derive(serde::Deserialize)]
struct Head<'a> {
    #[serde(borrow, rename = "apiVersion")]
    api_version: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    kind: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    metadata: Option<HeadMeta<'a>>,
}

#[derive(serde::Deserialize)]
struct HeadMeta<'a> {
    #[serde(borrow)]
    name: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    namespace: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, rename = "resourceVersion")]
    resource_version: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    uid: Option<std::borrow::Cow<'a, str>>,
    /// Present even when `null` (which `Option` alone would read as absent): cut out all the same.
    #[serde(
        borrow,
        default,
        rename = "managedFields",
        deserialize_with = "present_raw"
    )]
    managed_fields: Option<&'a serde_json::value::RawValue>,
}

fn present_raw<'de: 'a, 'a, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<&'a serde_json::value::RawValue>, D::Error> {
    <&'a serde_json::value::RawValue as serde::Deserialize>::deserialize(d).map(Some)
}

/// `text` with the member whose value is the slice `value` of it (`"managedFields": value`)
/// cut out, with one neighbouring comma; `None` when the member's key is not spelled plainly
/// (an escaped key), so the caller falls back to a decode.
fn without_member(text: &str, key: &str, value: &str) -> Option<String> {
    let start = (value.as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
    let end = start.checked_add(value.len())?;
    let before = text.get(..start)?.trim_end();
    let before = before.strip_suffix(':')?.trim_end();
    let quoted_len = key.len() + 2;
    let key_start = before.len().checked_sub(quoted_len)?;
    let quoted = before.get(key_start..)?;
    if quoted.strip_prefix('"')?.strip_suffix('"')? != key {
        return None;
    }
    let after = text.get(end..)?;
    let after_trimmed = after.trim_start();
    let (cut_from, cut_to) = if let Some(rest) = after_trimmed.strip_prefix(',') {
        // A member follows: the comma after this one goes with it.
        (key_start, text.len() - rest.len())
    } else {
        // The last member: the comma before it, if any, goes.
        let head = text.get(..key_start)?.trim_end();
        let from = head.strip_suffix(',').map_or(key_start, str::len);
        (from, end)
    };
    let mut out = String::with_capacity(text.len() - (cut_to - cut_from));
    out.push_str(text.get(..cut_from)?);
    out.push_str(text.get(cut_to..)?);
    Some(out)
}

impl<'de> serde::Deserialize<'de> for Watched {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Watched, D::Error> {
        use serde::de::Error as _;
        let raw = <Box<serde_json::value::RawValue> as serde::Deserialize>::deserialize(d)?;
        let text = raw.get();
        if !text.starts_with('{') {
            return Err(D::Error::custom("expected a Kubernetes object"));
        }
        let head: Head<'_> = serde_json::from_str(text).map_err(D::Error::custom)?;
        let meta = head.metadata.as_ref();
        let field = |c: &Option<std::borrow::Cow<'_, str>>| c.as_deref().map(str::to_string);
        let json = match meta.and_then(|m| m.managed_fields) {
            None => text.as_bytes().into(),
            Some(mf) => match without_member(text, "managedFields", mf.get()) {
                Some(t) => t.into_bytes().into_boxed_slice(),
                // An escaped key: decoded without it, and encoded again.
                None => {
                    let live: crate::objects::Live =
                        serde_json::from_str(text).map_err(D::Error::custom)?;
                    serde_json::to_vec(&live.0)
                        .map_err(D::Error::custom)?
                        .into_boxed_slice()
                }
            },
        };
        Ok(Watched {
            meta: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: meta.and_then(|m| field(&m.name)),
                namespace: meta.and_then(|m| field(&m.namespace)),
                resource_version: meta.and_then(|m| field(&m.resource_version)),
                uid: meta.and_then(|m| field(&m.uid)),
                ..Default::default()
            },
            api_version: head.api_version.map(|c| c.into_owned()),
            kind: head.kind.map(|c| c.into_owned()),
            json,
        })
    }
}

impl kube::Resource for Watched {
    type DynamicType = kube::api::ApiResource;
    type Scope = kube::core::DynamicResourceScope;

    fn kind(dt: &Self::DynamicType) -> std::borrow::Cow<'_, str> {
        dt.kind.as_str().into()
    }
    fn group(dt: &Self::DynamicType) -> std::borrow::Cow<'_, str> {
        dt.group.as_str().into()
    }
    fn version(dt: &Self::DynamicType) -> std::borrow::Cow<'_, str> {
        dt.version.as_str().into()
    }
    fn plural(dt: &Self::DynamicType) -> std::borrow::Cow<'_, str> {
        dt.plural.as_str().into()
    }
    fn meta(&self) -> &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
        &self.meta
    }
    fn meta_mut(&mut self) -> &mut k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
        &mut self.meta
    }
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
                .claim(r, &bd);
        }
    }

    /// A function recording the answer to the agent's own apply of an object: the watch event
    /// carrying that same resourceVersion then queues no check, since the check after the
    /// deploy reads that answer. (Each such echo queued a check of the whole BundleDeployment
    /// that found nothing new: three per deploy of a three-object bundle.)
    pub fn apply_recorder(&self) -> impl Fn(&ObjRef, &Value) + Send + Sync + use<> {
        let owners = self.owners.clone();
        move |r: &ObjRef, live: &Value| {
            let Some(rv) = live.at("/metadata/resourceVersion").and_then(Value::as_str) else {
                return;
            };
            owners
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .applied
                .insert(r.clone(), rv.to_string());
        }
    }

    /// Records that `bd` owns `objs` and makes sure their kinds are watched; a kind watched for
    /// the first time is waited for until its first list is in the cache (bounded). Returns the
    /// kinds (apiVersion, kind) listed by this call: their cache is newer than anything the
    /// caller wrote before.
    pub async fn track(&mut self, bd: &str, objs: &[ObjRef]) -> HashSet<(String, String)> {
        {
            let mut o = self.owners.lock().unwrap_or_else(|e| e.into_inner());
            let kept: HashMap<ObjRef, String> = objs
                .iter()
                .filter_map(|r| o.applied.get(r).map(|rv| (r.clone(), rv.clone())))
                .collect();
            o.release_all(bd);
            for r in objs {
                o.claim(r, bd);
            }
            o.applied.extend(kept);
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
            let api: Api<Watched> = Api::all_with(self.ds.client.clone(), &kind.resource);
            let cfg = watcher::Config::default().labels(fleet_api::keys::OBJECTSET_HASH_LABEL);
            let owners = self.owners.clone();
            let tx = self.tx.clone();
            let (api_version, kind_name) = (r.api_version.clone(), r.kind.clone());
            tokio::spawn(async move {
                let mut s = watcher(api, cfg).default_backoff().boxed();
                // A (re-)list is collected aside and replaces the cache when complete.
                let mut relist: Option<HashMap<(String, String), Cached>> = None;
                let mut initial = true;
                while let Some(ev) = s.next().await {
                    let (k, rv) = match ev {
                        Ok(watcher::Event::Init) => {
                            relist = Some(HashMap::new());
                            continue;
                        }
                        Ok(watcher::Event::InitApply(o)) => {
                            let k = key_of(&o);
                            let v = slim(o, &api_version, &kind_name);
                            relist.get_or_insert_with(HashMap::new).insert(k.clone(), v);
                            if initial {
                                continue;
                            }
                            (k, None)
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
                            let rv = o.meta.resource_version.clone();
                            let v = slim(o, &api_version, &kind_name);
                            kc.objects
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .insert(k.clone(), v);
                            (k, rv)
                        }
                        Ok(watcher::Event::Delete(o)) => {
                            let k = key_of(&o);
                            kc.objects
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .remove(&k);
                            (k, None)
                        }
                        Err(e) => {
                            tracing::debug!("drift watch {api_version} {kind_name}: {e}");
                            continue;
                        }
                    };
                    let r = ObjRef {
                        api_version: api_version.clone(),
                        kind: kind_name.clone(),
                        namespace: k.0,
                        name: k.1,
                    };
                    let owner = owners
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .notify(&r, rv.as_deref());
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
            .release_all(bd);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cached JSON of an object as a watch event carries it (`text`), decoded.
    fn cached(text: &str, api_version: &str, kind: &str) -> Value {
        let o: Watched = serde_json::from_str(text).unwrap();
        let c = slim(o, api_version, kind);
        assert!(matches!(c, Cached::Json(_)), "kept as JSON");
        (*c.value().unwrap()).clone()
    }

    #[test]
    fn a_watched_object_is_kept_whole_but_for_its_managed_fields() {
        let text = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"n","resourceVersion":"7","uid":"u","labels":{"a":"b"},"managedFields":[{"manager":"m","operation":"Apply","fieldsType":"FieldsV1","fieldsV1":{"f:data":{}}}]},"data":{"k":"v"}}"#;
        let o: Watched = serde_json::from_str(text).unwrap();
        assert_eq!(key_of(&o), ("n".to_string(), "c".to_string()));
        assert_eq!(
            kube::ResourceExt::resource_version(&o).as_deref(),
            Some("7")
        );
        let Cached::Json(json) = slim(o, "v1", "ConfigMap") else {
            panic!("kept as JSON")
        };
        assert_eq!(
            std::str::from_utf8(&json).unwrap(),
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"n","resourceVersion":"7","uid":"u","labels":{"a":"b"}},"data":{"k":"v"}}"#,
            "the server's text, less managedFields"
        );
        // Where managedFields sits among metadata's members, with or without spaces.
        let want = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "uid": "u"}});
        for text in [
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"managedFields":[],"name":"c","uid":"u"}}"#,
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","managedFields":[{}],"uid":"u"}}"#,
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","uid":"u","managedFields":{"x":[1]}}}"#,
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","managedFields":null,"uid":"u"}}"#,
            "{ \"apiVersion\" : \"v1\", \"kind\":\"ConfigMap\",\n \"metadata\" : { \"name\": \"c\" , \"uid\":\"u\" ,\n  \"managedFields\" :\t[ ] } }",
            // An escaped key: found by the decode instead.
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","managed\u0046ields":[],"uid":"u"}}"#,
        ] {
            assert_eq!(cached(text, "v1", "ConfigMap"), want, "{text}");
        }
        assert_eq!(
            cached(
                r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"managedFields":[]}}"#,
                "v1",
                "ConfigMap"
            ),
            serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}),
            "the only member"
        );
        // An event without (or with another) apiVersion and kind gets the watched kind's.
        assert_eq!(
            cached(
                r#"{"metadata":{"name":"c","uid":"u","managedFields":[]}}"#,
                "v1",
                "ConfigMap"
            ),
            want
        );
        // Not an object: an error, not a panic.
        for bad in [
            "[1]",
            "[]",
            "\"x\"",
            "null",
            r#"{"metadata":"x"}"#,
            r#"{"metadata":{"name":1}}"#,
            r#"{"metadata":{"managedFields":[1}}"#,
        ] {
            assert!(serde_json::from_str::<Watched>(bad).is_err(), "{bad}");
        }
    }

    proptest::proptest! {
        /// Whatever an object holds and wherever its managedFields sit, the cached JSON
        /// decodes to what a full decode without managedFields gives.
        #[test]
        fn the_cached_json_equals_the_decoded_object_less_managed_fields(
            before in proptest::collection::vec(("[a-zA-Z\"\\\\ ]{1,6}", "[a-z0-9 \"\\\\,:{}]{0,6}"), 0..4),
            after in proptest::collection::vec(("[a-zA-Z]{1,6}", proptest::num::i64::ANY), 0..4),
            managed in proptest::option::of("[a-z:{},\\[\\]]{0,8}"),
            spaces in proptest::bool::ANY,
        ) {
            let mut meta = serde_json::Map::new();
            for (k, v) in &before {
                meta.insert(format!("b{k}"), Value::String(v.clone()));
            }
            let mut text_meta: Vec<String> = meta
                .iter()
                .map(|(k, v)| format!("{}:{}", serde_json::to_string(k).unwrap(), serde_json::to_string(v).unwrap()))
                .collect();
            if let Some(m) = &managed {
                text_meta.push(format!("\"managedFields\":{}", serde_json::to_string(&serde_json::json!([{"fieldsV1": m}])).unwrap()));
            }
            for (k, v) in &after {
                text_meta.push(format!("\"a{k}\":{v}"));
            }
            let sep = if spaces { " ,\n " } else { "," };
            let text = format!(
                "{{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{{{}}},\"data\":{{\"k\":\"v\"}}}}",
                text_meta.join(sep)
            );
            let full = serde_json::from_str::<crate::objects::Live>(&text).unwrap();
            let got = cached(&text, "v1", "ConfigMap");
            proptest::prop_assert_eq!(got, Value::Object(full.0));
        }
    }

    fn cm(name: &str) -> ObjRef {
        ObjRef {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: "n".into(),
            name: name.into(),
        }
    }

    #[test]
    fn the_echo_of_an_own_apply_is_no_news_other_events_are() {
        let mut o = Ownership::default();
        o.claim(&cm("a"), "bd");
        o.applied.insert(cm("a"), "7".into());
        assert_eq!(o.notify(&cm("a"), Some("7")), None, "echo of the apply");
        assert_eq!(o.notify(&cm("a"), Some("7")).as_deref(), Some("bd"));
        assert_eq!(o.notify(&cm("a"), Some("8")).as_deref(), Some("bd"));
        assert_eq!(o.notify(&cm("a"), None).as_deref(), Some("bd"));
        assert_eq!(o.notify(&cm("b"), Some("7")), None, "nobody's");
    }

    #[test]
    fn claims_move_between_bundle_deployments_and_are_released() {
        let mut o = Ownership::default();
        o.claim(&cm("a"), "one");
        o.claim(&cm("b"), "one");
        o.claim(&cm("a"), "two");
        o.release_all("one");
        assert_eq!(o.notify(&cm("a"), None).as_deref(), Some("two"));
        assert_eq!(o.notify(&cm("b"), None), None);
        o.release_all("two");
        assert_eq!(o.notify(&cm("a"), None), None);
    }
}
