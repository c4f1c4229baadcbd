//! Stored objects kept compressed in memory, with a zstd dictionary trained on the store's own
//! objects.
//!
//! The store keeps the latest JSON of every key in memory, and a fleet's objects are near
//! copies of each other (a BundleDeployment per bundle and cluster differs from the next in a
//! few names and hashes): compressed one by one they shrink about three times, against a
//! dictionary trained on their siblings about nine times. Once a store holds
//! [`StoreConfig::pack_from`](super::StoreConfig) objects, a thread of its own trains a
//! dictionary on a sample of them, publishes it for new writes, and re-packs what is stored; it
//! trains again each time the store has doubled since, so the dictionary follows what the
//! store fills up with. A packed object keeps its dictionary alive, so an old one is freed
//! with the last object packed with it.
//!
//! Objects are packed on the writing caller's thread, before the writer knows the revision: what
//! is compressed is the JSON with an empty resourceVersion, and the digits are spliced back in
//! when it is read.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use bytes::Bytes;
use parking_lot::RwLock;
use zstd::zstd_safe::{CDict, DCtx, DDict};

use super::{Obj, Rev};

/// Compression level with the trained dictionary (zstd's default; on BundleDeployments of
/// 3.4 KiB it packs as fast as level 1 and a fifth smaller).
const LEVEL: i32 = 3;
/// Largest dictionary trained.
const DICT_MAX: usize = 64 * 1024;
/// At most this many objects, and bytes of them, are sampled to train a dictionary (training
/// costs about 0.1 s of CPU per MiB of samples; more samples than this no longer improve it).
const SAMPLES_MAX: usize = 2_000;
const SAMPLE_BYTES_MAX: usize = 4 << 20;
/// A dictionary is trained again when the store has grown this many times since the last
/// (a fleet's store fills with registrations first, then BundleDeployments).
const GROWTH: usize = 2;
/// A packed form is kept only when at most this fraction (in 1/16ths) of the plain size: an
/// object that does not compress (a gzipped Helm release) stays as it is.
const KEEP_SIXTEENTHS: usize = 14;
/// Objects re-packed per hold of the state's write lock.
const REPACK_CHUNK: usize = 256;

/// One trained dictionary, as the decompressor uses it; shared by every object packed with it.
pub(crate) struct Dict {
    ddict: DDict<'static>,
}

impl std::fmt::Debug for Dict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Dict")
    }
}

/// The dictionary new writes are packed with.
struct Current {
    cdict: CDict<'static>,
    dict: Arc<Dict>,
}

/// An object's JSON compressed with a dictionary, its resourceVersion left out.
#[derive(Clone, Debug)]
pub(crate) struct Packed {
    z: Bytes,
    dict: Arc<Dict>,
    /// Where the resourceVersion's digits go (just after its opening quote).
    rv_at: u32,
    /// Length of the JSON without the digits.
    len: u32,
}

/// Slots of [`Packed::unpack_shared`]'s memo of recent unpacks.
const RECENT_SLOTS: usize = 512;
/// Largest JSON the memo keeps, so that it holds at most 8 MiB whatever is read (a list of
/// large objects would otherwise fill every slot with one).
const RECENT_MAX_LEN: usize = 16 * 1024;

/// One recent unpack: the JSON of `z` at `rev`. Holding `z` keeps its allocation alive, so no
/// other packed object can have its address while the slot holds it.
struct Recent {
    rev: Rev,
    z: Bytes,
    json: Bytes,
}

/// The last unpack of each revision modulo [`RECENT_SLOTS`], for all stores of the process: the
/// watchers of one event (a BundleDeployment's agent, the controllers' cache, the garbage
/// collector) and a read soon after a write unpack an object once between them. Bounded at
/// `RECENT_SLOTS` objects of at most `RECENT_MAX_LEN` bytes, unlike keeping the plain JSON in
/// the watch history.
static RECENT: [parking_lot::Mutex<Option<Recent>>; RECENT_SLOTS] =
    [const { parking_lot::Mutex::new(None) }; RECENT_SLOTS];

impl Packed {
    /// [`Packed::unpack`] as shared bytes, from the memo of recent unpacks when this object was
    /// unpacked at `rev` a moment ago.
    pub(crate) fn unpack_shared(&self, rev: Rev) -> Result<Bytes, String> {
        if self.len as usize > RECENT_MAX_LEN {
            return self.unpack(rev).map(Bytes::from);
        }
        let slot = &RECENT[rev.unsigned_abs() as usize % RECENT_SLOTS];
        if let Some(r) = &*slot.lock()
            && r.rev == rev
            && r.z.as_ptr() == self.z.as_ptr()
            && r.z.len() == self.z.len()
        {
            return Ok(r.json.clone());
        }
        let json = Bytes::from(self.unpack(rev)?);
        let old = slot.lock().replace(Recent {
            rev,
            z: self.z.clone(),
            json: json.clone(),
        });
        drop(old); // freed outside the lock
        Ok(json)
    }

    /// The JSON with `rev` spliced in, in an allocation of exactly its length (a `Bytes` made
    /// from it allocates nothing more).
    pub(crate) fn unpack(&self, rev: Rev) -> Result<Vec<u8>, String> {
        let mut buf = [0u8; 24];
        let digits = super::encode::rev_digits(rev, &mut buf);
        let mut out = self.decompress(digits.len())?;
        let (len, at) = (self.len as usize, self.rv_at as usize);
        out.resize(len + digits.len(), 0);
        out.copy_within(at..len, at + digits.len());
        if let Some(hole) = out.get_mut(at..at + digits.len()) {
            hole.copy_from_slice(digits);
        }
        Ok(out)
    }

    /// The JSON as packed (its resourceVersion empty), in a buffer with room for `extra` more
    /// bytes.
    fn decompress(&self, extra: usize) -> Result<Vec<u8>, String> {
        let len = self.len as usize;
        let mut out = Vec::with_capacity(len + extra);
        DCTX.with(|d| {
            d.borrow_mut()
                .decompress_using_ddict(&mut out, &self.z, &self.dict.ddict)
                .map_err(|code| zstd::zstd_safe::get_error_name(code).to_string())
        })?;
        let at = self.rv_at as usize;
        if out.len() != len || at > len {
            return Err(format!(
                "unpacked {} bytes, expected {len} (resourceVersion at {at})",
                out.len()
            ));
        }
        Ok(out)
    }

    /// Length of the JSON it unpacks to at `rev`.
    pub(crate) fn unpacked_len(&self, rev: Rev) -> usize {
        self.len as usize + digits(rev)
    }

    /// Whether this was packed with `dict`.
    fn packed_with(&self, dict: &Arc<Dict>) -> bool {
        Arc::ptr_eq(&self.dict, dict)
    }

    /// Bytes it holds (tests).
    #[cfg(test)]
    pub(crate) fn packed_len(&self) -> usize {
        self.z.len()
    }
}

thread_local! {
    static CCTX: std::cell::RefCell<zstd::zstd_safe::CCtx<'static>> =
        std::cell::RefCell::new(zstd::zstd_safe::CCtx::create());
    static DCTX: std::cell::RefCell<DCtx<'static>> = std::cell::RefCell::new(DCtx::create());
}

/// Decimal digits of a revision.
pub(crate) fn digits(rev: Rev) -> usize {
    let mut n = 1;
    let mut r = rev.unsigned_abs();
    while r >= 10 {
        r /= 10;
        n += 1;
    }
    n + usize::from(rev < 0)
}

/// A store's dictionaries: the current one, and when to train the next.
pub(crate) struct Packer {
    current: RwLock<Option<Arc<Current>>>,
    /// Train once the store holds this many objects (`None`: never pack).
    from: Option<usize>,
    /// Live objects when the current dictionary was trained (0: none yet).
    trained_at: AtomicUsize,
    training: AtomicBool,
}

impl Packer {
    pub(crate) fn new(from: Option<usize>) -> Packer {
        Packer {
            current: RwLock::new(None),
            from,
            trained_at: AtomicUsize::new(0),
            training: AtomicBool::new(false),
        }
    }

    /// `json` (with an empty resourceVersion whose digits go at `rv_at`) packed with the current
    /// dictionary, or `None` when there is none yet or the object does not compress.
    pub(crate) fn pack(&self, json: &[u8], rv_at: usize) -> Option<Packed> {
        let cur = self.current.read().clone()?;
        pack_with(&cur, json, rv_at)
    }

    /// `obj` packed with the current dictionary when it is held plain and packs (an object read
    /// back from the log), else `obj` as it is.
    pub(crate) fn packed(&self, obj: Obj) -> Obj {
        if obj.is_packed() {
            return obj;
        }
        let Some(cur) = self.current.read().clone() else {
            return obj;
        };
        match with_hole(&obj).and_then(|(hole, at)| pack_with(&cur, &hole, at)) {
            Some(p) => obj.with_packed(p),
            None => obj,
        }
    }

    /// Whether a store of `live` objects should train a (new) dictionary now; if so, the caller
    /// must run [`train`] (the flag stays set until it has).
    pub(crate) fn due(&self, live: usize) -> bool {
        let Some(from) = self.from else {
            return false;
        };
        let at = self.trained_at.load(Ordering::Relaxed);
        let wanted = if at == 0 {
            live >= from.max(1)
        } else {
            live >= at.saturating_mul(GROWTH)
        };
        wanted
            && self
                .training
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
    }

    /// A packer with a dictionary trained on `samples` (tests).
    #[cfg(test)]
    pub(crate) fn trained_on(samples: &[Vec<u8>]) -> Packer {
        let map: imbl::OrdMap<Arc<str>, Obj> = samples
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let obj = Obj::plain(Bytes::from(s.clone()), 1, super::empty_labels());
                (Arc::from(format!("/k/{i:06}")), obj)
            })
            .collect();
        let packer = Packer::new(Some(1));
        let cur = train_on(&map).expect("a dictionary trains on the samples");
        *packer.current.write() = Some(Arc::new(cur));
        packer
    }
}

fn pack_with(cur: &Current, json: &[u8], rv_at: usize) -> Option<Packed> {
    let (rv_at32, len32) = (u32::try_from(rv_at).ok()?, u32::try_from(json.len()).ok()?);
    let mut z = Vec::with_capacity(zstd::zstd_safe::compress_bound(json.len()));
    CCTX.with(|c| {
        c.borrow_mut()
            .compress_using_cdict(&mut z, json, &cur.cdict)
    })
    .ok()?;
    if z.len() * 16 > json.len() * KEEP_SIXTEENTHS {
        return None;
    }
    z.shrink_to_fit();
    Some(Packed {
        z: Bytes::from(z),
        dict: cur.dict.clone(),
        rv_at: rv_at32,
        len: len32,
    })
}

/// The JSON of `obj` with its resourceVersion's digits taken out, and where they were.
fn with_hole(obj: &Obj) -> Option<(Vec<u8>, usize)> {
    if let Some(p) = obj.packed() {
        return Some((p.decompress(0).ok()?, p.rv_at as usize));
    }
    let json = obj.json();
    let needle = format!("\"resourceVersion\":\"{}\"", obj.rev);
    let n = digits(obj.rev);
    // Any occurrence will do: taking the digits out where they are and splicing the same
    // digits back at the same place gives back the same bytes.
    let at = memchr::memmem::find(&json, needle.as_bytes())? + needle.len() - 1 - n;
    let mut hole = Vec::with_capacity(json.len() - n);
    hole.extend_from_slice(json.get(..at)?);
    hole.extend_from_slice(json.get(at + n..)?);
    Some((hole, at))
}

/// Starts [`train`] on a thread of its own when the store has grown enough since the last
/// dictionary (called by the writer's housekeeping, once a second).
pub(crate) fn train_when_due(shared: &Arc<super::Shared>) {
    let live = shared.state.read().map.len();
    if !shared.packer.due(live) {
        return;
    }
    let weak = Arc::downgrade(shared);
    let spawned = std::thread::Builder::new()
        .name("store-dictionary".into())
        .spawn(move || train(&weak));
    if let Err(e) = spawned {
        tracing::warn!("spawning the store's dictionary thread: {e}");
        shared.packer.training.store(false, Ordering::Release);
    }
}

/// Trains a dictionary on a sample of the store's objects, publishes it, and re-packs every
/// stored object with it. Runs on a thread of its own (it takes up to a second of CPU at a
/// quarter of a million objects); holds the state's lock only to take snapshots and, briefly per
/// chunk, to swap re-packed objects in.
pub(crate) fn train(shared: &std::sync::Weak<super::Shared>) {
    let Some(s) = shared.upgrade() else {
        return;
    };
    let packer = &s.packer;
    let snapshot = s.state.read().map.clone();
    let live = snapshot.len();
    let trained = train_on(&snapshot);
    drop(snapshot);
    packer.trained_at.store(live.max(1), Ordering::Relaxed);
    let cur = match trained {
        Ok(cur) => Arc::new(cur),
        Err(e) => {
            tracing::debug!("no dictionary trained on {live} objects: {e}");
            packer.training.store(false, Ordering::Release);
            return;
        }
    };
    *packer.current.write() = Some(cur.clone());
    drop(s);
    repack(shared, &cur);
    if let Some(s) = shared.upgrade() {
        s.packer.training.store(false, Ordering::Release);
    }
}

fn train_on(map: &imbl::OrdMap<Arc<str>, Obj>) -> Result<Current, String> {
    let step = map.len().div_ceil(SAMPLES_MAX).max(1);
    let mut data = Vec::new();
    let mut sizes = Vec::new();
    for (_, obj) in map.iter().step_by(step) {
        if data.len() >= SAMPLE_BYTES_MAX {
            break;
        }
        let json = obj.json();
        data.extend_from_slice(&json);
        sizes.push(json.len());
    }
    let size = (data.len() / 16).clamp(1024, DICT_MAX);
    let dict = zstd::dict::from_continuous(&data, &sizes, size).map_err(|e| e.to_string())?;
    let cdict = CDict::try_create(&dict, LEVEL).ok_or("zstd could not load the dictionary")?;
    let ddict = DDict::try_create(&dict).ok_or("zstd could not load the dictionary")?;
    Ok(Current {
        cdict,
        dict: Arc::new(Dict { ddict }),
    })
}

/// Packs every stored object not yet packed with `cur`, swapping each in only if its key still
/// holds the same revision (a write since the snapshot has packed its own value).
///
/// Each chunk reads a snapshot of its own, taken after the previous chunk was swapped in: one
/// snapshot held for the whole pass kept every object it replaced alive until the end, so the
/// store was held twice over at the peak (a retrain at 10,000 clusters re-packs ~200,000 objects).
fn repack(shared: &std::sync::Weak<super::Shared>, cur: &Arc<Current>) {
    use std::ops::Bound;
    let mut chunk: Vec<(Arc<str>, Obj)> = Vec::with_capacity(REPACK_CHUNK);
    let mut after: Option<Arc<str>> = None;
    loop {
        let Some(snapshot) = shared.upgrade().map(|s| s.state.read().map.clone()) else {
            return;
        };
        let from = after.take().map_or(Bound::Unbounded, Bound::Excluded);
        let mut end = true;
        for (key, obj) in snapshot.range((from, Bound::Unbounded)) {
            after = Some(key.clone());
            if obj.packed().is_some_and(|p| p.packed_with(&cur.dict)) {
                continue;
            }
            let Some((hole, at)) = with_hole(obj) else {
                continue;
            };
            let Some(p) = pack_with(cur, &hole, at) else {
                continue;
            };
            chunk.push((key.clone(), obj.with_packed(p)));
            if chunk.len() >= REPACK_CHUNK {
                end = false;
                break;
            }
        }
        drop(snapshot);
        let Some(s) = shared.upgrade() else {
            return;
        };
        let mut st = s.state.write();
        for (key, obj) in chunk.drain(..) {
            if st.map.get(&key).is_some_and(|o| o.rev == obj.rev) {
                st.map.insert(key, obj);
            }
        }
        if end {
            return;
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::super::{Store, StoreConfig};
    use super::*;
    use serde_json::{Value, json};
    use std::collections::BTreeMap;
    use std::time::{Duration, Instant};

    #[test]
    fn digits_counts_the_decimal_form() {
        for r in [0, 1, 9, 10, 99, 100, 12345, Rev::MAX, -1, -10] {
            assert_eq!(digits(r), r.to_string().len(), "{r}");
        }
    }

    /// A BundleDeployment-shaped object: what a fleet's store mostly holds.
    pub(crate) fn bd(i: usize, commit: &str) -> Value {
        let cluster = format!("cluster-{:012x}", i.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        json!({
            "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "BundleDeployment",
            "metadata": {
                "name": format!("bench-b{}", i % 10),
                "namespace": format!("cluster-fleet-default-{cluster}-{:012x}", i * 7919),
                "labels": {"fleet.cattle.io/bundle-name": format!("bench-b{}", i % 10),
                           "fleet.cattle.io/cluster": cluster, "fleet.cattle.io/commit": commit},
                "uid": format!("{:08x}-b737-4a20-9809-{:012x}", i, i * 31),
            },
            "spec": {"deploymentID": format!("s-{commit}{i:x}:{:064x}", i * 104_729),
                     "options": {"defaultNamespace": "bench", "helm": {}}},
            "status": {"conditions": [{"type": "Ready", "status": "True",
                                       "lastUpdateTime": "2026-11-27T06:49:12Z"}],
                       "display": {"state": "Ready"}}
        })
    }

    /// The JSON the store must hand out for `v` written at `rev` (as `serde_json` writes it
    /// with the resourceVersion set).
    fn reference(mut v: Value, rev: Rev) -> Vec<u8> {
        v["metadata"]["resourceVersion"] = json!(rev.to_string());
        serde_json::to_vec(&v).expect("serializable")
    }

    fn key(i: usize) -> String {
        format!("/fleet.cattle.io/bundledeployments/ns/bd-{i:05}")
    }

    /// Waits until every stored object is packed with the current dictionary (or `deadline`).
    #[tokio::test]
    async fn a_repack_of_many_chunks_packs_every_object_once() {
        let store = Store::open(StoreConfig {
            pack_from: Some(4 * REPACK_CHUNK),
            ..StoreConfig::in_memory()
        })
        .expect("store");
        let mut want = BTreeMap::new();
        for i in 0..(4 * REPACK_CHUNK + 7) {
            let o = store.create(&key(i), bd(i, "c1")).await.expect("create");
            want.insert(key(i), o.json());
        }
        wait_packed(&store, "after a repack of five chunks");
        let (packed, all) = store.packed_count();
        assert_eq!((packed, all), (want.len(), want.len()));
        for (k, j) in &want {
            assert_eq!(store.get(k).expect("present").json(), *j, "{k}");
        }
    }

    fn wait_packed(store: &Store, why: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let shared = &store.inner.shared;
            let cur = shared.packer.current.read().clone();
            // Packed with the current dictionary, or not worth packing with it.
            let done = cur.is_some_and(|cur| {
                !shared.packer.training.load(Ordering::Acquire)
                    && shared.state.read().map.values().all(|o| {
                        o.packed().is_some_and(|p| p.packed_with(&cur.dict))
                            || with_hole(o).is_some_and(|(h, at)| pack_with(&cur, &h, at).is_none())
                    })
            });
            if done {
                return;
            }
            assert!(Instant::now() < deadline, "not all packed: {why}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn sizes(store: &Store) -> (usize, usize) {
        let st = store.inner.shared.state.read();
        let plain = st.map.values().map(Obj::json_len).sum();
        let held = st
            .map
            .values()
            .map(|o| o.packed().map_or(o.json_len(), Packed::packed_len))
            .sum();
        (plain, held)
    }

    /// Events a watch replays from the log (plain JSON there) are packed like the history's,
    /// and read back the same bytes the writes returned.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn events_replayed_from_the_log_are_packed() {
        let dir = tempfile::tempdir().expect("dir");
        let store = Store::open(StoreConfig {
            path: Some(dir.path().join("store.db")),
            history: 32,
            pack_from: Some(100),
            ..StoreConfig::in_memory()
        })
        .expect("store");
        for i in 0..300 {
            store.create(&key(i), bd(i, "c1")).await.expect("create");
        }
        wait_packed(&store, "after the first dictionary");
        let from = store.current_rev();
        let mut written = Vec::new();
        for i in 0..40 {
            let o = store
                .update(&key(i), None, bd(i, "c2"))
                .await
                .expect("update");
            written.push(o.json());
        }
        // The first 8 come from the log, the other 32 from the history.
        let mut watch = store
            .watch("/fleet.cattle.io/bundledeployments/ns/", from)
            .expect("watch");
        for (i, want) in written.iter().enumerate() {
            let ev = tokio::time::timeout(Duration::from_secs(10), watch.next())
                .await
                .expect("event in time")
                .expect("watch open");
            assert!(ev.obj.packed().is_some(), "event {i} held packed");
            assert!(ev.prev.as_ref().is_some_and(|p| p.packed().is_some()));
            assert_eq!(ev.obj.json(), *want, "event {i}");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_grown_store_packs_what_it_holds_and_hands_out_the_same_bytes() {
        let store = Store::open(StoreConfig {
            pack_from: Some(100),
            ..StoreConfig::in_memory()
        })
        .expect("store");
        let mut want = BTreeMap::new();
        for i in 0..300 {
            let o = store.create(&key(i), bd(i, "c1")).await.expect("create");
            assert_eq!(o.json(), reference(bd(i, "c1"), o.rev));
            want.insert(key(i), o.json());
        }
        // Content unlike the rest is packed too (base64 compresses by a quarter).
        let noise: String = (0..4000u64)
            .map(|i| char::from(b'a' + (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 59) as u8))
            .collect();
        let blob = json!({"kind": "Secret", "metadata": {"name": "x"}, "data": {"v": noise}});
        let o = store
            .create("/core/secrets/ns/x", blob)
            .await
            .expect("create");
        want.insert("/core/secrets/ns/x".into(), o.json());

        wait_packed(&store, "after the first dictionary");
        for (k, j) in &want {
            assert_eq!(store.get(k).expect("present").json(), *j, "{k}");
        }
        let (plain, held) = sizes(&store);
        assert!(held * 3 < plain, "held {held} bytes for {plain}");

        // Writes with a dictionary are packed by the writer and read back exactly, through
        // get, list, watch and the answer to the write itself.
        let from = store.current_rev();
        let mut watch = store.watch("/fleet.cattle.io/", from).expect("watch");
        for i in 0..50 {
            let o = store
                .update(&key(i), None, bd(i, "c2"))
                .await
                .expect("update");
            assert!(o.packed().is_some(), "written packed");
            let want = reference(bd(i, "c2"), o.rev);
            assert_eq!(o.json(), want);
            assert_eq!(o.json_len(), want.len());
            assert_eq!(store.get(&key(i)).expect("present").json(), want);
            let ev = tokio::time::timeout(Duration::from_secs(10), watch.next())
                .await
                .expect("event in time")
                .expect("watch open");
            assert_eq!(ev.obj.json(), want);
            assert_eq!(ev.prev.expect("previous").json(), want_prev(&want, i));
        }
        let page = store
            .list("/fleet.cattle.io/", None, None, None, &|_, _| true)
            .expect("list");
        for (k, o) in &page.items {
            let got: Value = serde_json::from_slice(&o.json()).expect("JSON");
            assert_eq!(
                got["metadata"]["resourceVersion"],
                json!(o.rev.to_string()),
                "{k}"
            );
        }
        let gone = store.delete(&key(0), None).await.expect("delete");
        let got: Value = serde_json::from_slice(&gone.json()).expect("JSON");
        assert_eq!(
            got["metadata"]["resourceVersion"],
            json!(gone.rev.to_string())
        );
        assert_eq!(got["spec"], bd(0, "c2")["spec"]);
    }

    #[test]
    fn what_does_not_compress_is_not_packed() {
        let samples: Vec<Vec<u8>> = (0..300).map(|i| reference(bd(i, "c0"), 5)).collect();
        let packer = Packer::trained_on(&samples);
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let noise: Vec<u8> = (0..4096)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x.to_le_bytes()[0]
            })
            .collect();
        assert!(packer.pack(&noise, 10).is_none());
        assert!(packer.pack(&samples[0], 10).is_some());
    }

    #[test]
    fn a_repeated_unpack_shares_the_first_and_never_mixes_objects_up() {
        let samples: Vec<Vec<u8>> = (0..300).map(|i| reference(bd(i, "c0"), 5)).collect();
        let packer = Packer::trained_on(&samples);
        // Revisions far from the small ones other tests use, and two of them sharing a slot.
        let rev: Rev = 7_000_000_000;
        let colliding = rev + RECENT_SLOTS as Rev;
        let pack = |i: usize, at: Rev| {
            let plain = Obj::plain(
                Bytes::from(reference(bd(i, "c9"), at)),
                at,
                super::super::empty_labels(),
            );
            let (hole, rv_at) = with_hole(&plain).expect("a resourceVersion");
            packer.pack(&hole, rv_at).expect("packs")
        };
        let (a, b) = (pack(1, rev), pack(2, rev));
        // The memo is shared with tests running beside this one, which may take the slot
        // between two calls: sharing must show within a few tries.
        let shared = (0..5).any(|_| {
            let first = a.unpack_shared(rev).expect("unpacks");
            let second = a.unpack_shared(rev).expect("unpacks");
            assert_eq!(first, second);
            first.as_ptr() == second.as_ptr()
        });
        assert!(
            shared,
            "a second unpack at the same revision unpacked again"
        );
        // Another object at the same revision, the same object at another revision of the
        // same slot, and a fresh copy of the same bytes: each gets its own JSON.
        for _ in 0..3 {
            assert_eq!(
                a.unpack_shared(rev).expect("unpacks"),
                reference(bd(1, "c9"), rev)
            );
            assert_eq!(
                b.unpack_shared(rev).expect("unpacks"),
                reference(bd(2, "c9"), rev)
            );
            assert_eq!(
                a.unpack_shared(colliding).expect("unpacks"),
                reference(bd(1, "c9"), colliding)
            );
        }
        let copy = Packed {
            z: Bytes::from(a.z.to_vec()),
            ..a.clone()
        };
        assert_eq!(
            copy.unpack_shared(rev).expect("unpacks"),
            reference(bd(1, "c9"), rev)
        );
        // An object larger than the memo keeps is unpacked each time, and right.
        let mut big = bd(3, "c9");
        big["spec"]["pad"] = json!("x".repeat(2 * RECENT_MAX_LEN));
        let want = reference(big.clone(), rev);
        let plain = Obj::plain(Bytes::from(want.clone()), rev, super::super::empty_labels());
        let (hole, rv_at) = with_hole(&plain).expect("a resourceVersion");
        let big = packer.pack(&hole, rv_at).expect("packs");
        let (first, second) = (
            big.unpack_shared(rev).expect("unpacks"),
            big.unpack_shared(rev).expect("unpacks"),
        );
        assert_eq!((&first[..], &second[..]), (&want[..], &want[..]));
        assert_ne!(first.as_ptr(), second.as_ptr(), "kept by the memo");
    }

    /// The previous value of key `i` in the test above: its first version (revision i + 1).
    fn want_prev(_now: &[u8], i: usize) -> Vec<u8> {
        reference(bd(i, "c1"), Rev::try_from(i).unwrap_or(0) + 1)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_file_store_logs_plain_json_and_packs_again_after_a_restart() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cfg = StoreConfig {
            pack_from: Some(100),
            ..StoreConfig::file(dir.path().join("s.db"))
        };
        let mut want = BTreeMap::new();
        {
            let store = Store::open(cfg.clone()).expect("store");
            for i in 0..200 {
                let o = store.create(&key(i), bd(i, "c1")).await.expect("create");
                want.insert(key(i), o.json());
            }
            wait_packed(&store, "before the restart");
            for i in 0..20 {
                let o = store
                    .update(&key(i), None, bd(i, "c2"))
                    .await
                    .expect("update");
                // Answered with the JSON it logged; held packed.
                assert!(o.packed().is_none());
                let held = store.get(&key(i)).expect("present");
                assert!(held.packed().is_some());
                assert_eq!(held.json(), o.json());
                want.insert(key(i), o.json());
            }
            store.close();
        }
        let store = Store::open(cfg).expect("reopen");
        for (k, j) in &want {
            assert_eq!(store.get(k).expect("present").json(), *j, "{k}");
        }
        wait_packed(&store, "after the restart");
        for (k, j) in &want {
            assert_eq!(store.get(k).expect("present").json(), *j, "{k}");
        }
    }
}
