//! Revision-log storage in the spirit of k3s's kine: every write gets the next global revision,
//! which is the object's `metadata.resourceVersion`.
//!
//! CONTRACT (shared by the storage and REST layers; change only together):
//! - Keys are `/{group}/{resource}/{namespace}/{name}`; `group` is `core` for the legacy group and
//!   `namespace` is empty for cluster-scoped objects. A prefix such as `/apps/deployments/` or
//!   `/apps/deployments/ns1/` selects a resource or one namespace of it.
//! - Values are Kubernetes objects as JSON. The store owns `metadata.resourceVersion`: it overwrites
//!   it with the write's revision before persisting, so every value it hands out carries its RV.
//! - Values handed out are `Obj`: the object once serialized (compact JSON, shared, never re-encoded;
//!   kept compressed once the store is large, see `pack.rs`) plus the few parsed fields lists need
//!   to filter without decoding the whole object.
//! - An acknowledged write (the future resolved `Ok`) survives SIGKILL (committed to SQLite WAL).
//! - Events reach watchers in revision order with no gaps; a slow watcher is dropped, never waited on.

mod checkpoint;
mod db;
mod encode;
mod labels;
mod list;
mod pack;
mod watch;
mod writer;

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, OnceLock, mpsc};
use std::time::Duration;

use bytes::Bytes;
use parking_lot::{Mutex, RwLock};
use tokio::sync::oneshot;

pub use labels::Labels;
pub use watch::Watch;
pub(crate) use watch::resource_of;

/// A global revision. Revisions are strictly increasing across all keys and never reused.
pub type Rev = i64;

/// One stored object, serialized once and shared by every reader and watcher.
#[derive(Clone, Debug)]
pub struct Obj {
    body: Body,
    /// The revision that wrote this value (its resourceVersion).
    pub rev: Rev,
    /// `metadata.labels`, parsed once, for label selectors.
    pub labels: Arc<Labels>,
}

/// How an object's JSON is held.
#[derive(Clone, Debug)]
enum Body {
    /// As it is read.
    Plain(Bytes),
    /// Compressed with the store's dictionary (see `pack.rs`).
    Packed(pack::Packed),
}

impl Obj {
    /// An object held as plain JSON (`json` carries `rev` as its resourceVersion).
    pub(crate) fn plain(json: Bytes, rev: Rev, labels: Arc<Labels>) -> Obj {
        Obj {
            body: Body::Plain(json),
            rev,
            labels,
        }
    }

    /// Compact JSON of the object, with `metadata.resourceVersion` equal to `rev`. Shared for an
    /// object held plain; for one held compressed, unpacked into a new buffer unless it was just
    /// unpacked at this revision (then that buffer, shared). Unpacking cannot
    /// fail for an object this process packed; if it ever did, the failure is logged and the
    /// JSON is empty, which every reader refuses as invalid rather than panicking.
    pub fn json(&self) -> Bytes {
        match &self.body {
            Body::Plain(b) => b.clone(),
            Body::Packed(p) => match p.unpack_shared(self.rev) {
                Ok(v) => v,
                Err(e) => {
                    tracing::error!(rev = self.rev, "unpacking a stored object failed: {e}");
                    Bytes::new()
                }
            },
        }
    }

    /// Length of [`Obj::json`], without unpacking it.
    pub fn json_len(&self) -> usize {
        match &self.body {
            Body::Plain(b) => b.len(),
            Body::Packed(p) => p.unpacked_len(self.rev),
        }
    }

    /// Whether the object is held compressed (see `pack.rs`): what tests and memory figures
    /// look at; readers need not care.
    pub fn is_packed(&self) -> bool {
        self.packed().is_some()
    }

    fn packed(&self) -> Option<&pack::Packed> {
        match &self.body {
            Body::Packed(p) => Some(p),
            Body::Plain(_) => None,
        }
    }

    fn with_packed(&self, p: pack::Packed) -> Obj {
        Obj {
            body: Body::Packed(p),
            rev: self.rev,
            labels: self.labels.clone(),
        }
    }
}

/// What happened to a key at one revision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    Added,
    Modified,
    /// The object as it was last stored (its `rev` is the delete's revision for watch output).
    Deleted,
}

/// One change, as delivered to watchers. `obj.json` is the object after the change (for Deleted, the
/// last state with resourceVersion set to the delete revision).
#[derive(Clone, Debug)]
pub struct Event {
    pub kind: EventKind,
    pub key: Arc<str>,
    pub obj: Obj,
    /// The previous value, for Modified/Deleted (watch filters need it to emit DELETED when an
    /// object stops matching a selector); also `None` in a replay from the log for a watcher
    /// that said it does not need it ([`Store::watch_nonblocking`]).
    pub prev: Option<Obj>,
}

/// A consistent page of a list.
#[derive(Debug)]
pub struct ListPage {
    /// `(key, value)` in key order.
    pub items: Vec<(Arc<str>, Obj)>,
    /// The revision the whole list (all pages) is read at.
    pub rev: Rev,
    /// Set when more items remain after the last one returned.
    pub more: bool,
    /// How many items remain after this page, when known.
    pub remaining: Option<u64>,
}

/// Storage errors, mapped by the REST layer to Kubernetes Status reasons.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("key {0} already exists")]
    AlreadyExists(String),
    #[error("key {0} not found")]
    NotFound(String),
    /// The key's current revision is not the expected one.
    #[error("key {key} is at revision {current}, not {expected}")]
    Conflict {
        key: String,
        expected: Rev,
        current: Rev,
    },
    /// The requested revision has been compacted (HTTP 410 Gone / Expired).
    #[error("revision {requested} is compacted (oldest available {oldest})")]
    Compacted { requested: Rev, oldest: Rev },
    /// The requested revision is in the future.
    #[error("revision {0} is not yet available")]
    FutureRevision(Rev),
    #[error("storage failure: {0}")]
    Internal(String),
}

/// Whether a commit waits for the disk (SQLite's `PRAGMA synchronous` on the WAL).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StoreSync {
    /// `synchronous=FULL`: every commit fsyncs the WAL before it is acknowledged, so an
    /// acknowledged write survives power loss, as with etcd and kine. The default.
    #[default]
    Full,
    /// `synchronous=NORMAL`: a commit is written to the WAL (the OS page cache) before it is
    /// acknowledged and fsynced only at checkpoints. Survives a crash or SIGKILL of the process;
    /// an OS crash or power loss can lose the last writes (never corrupt the file). One client
    /// writes about twice as fast.
    Normal,
}

impl StoreSync {
    /// The `PRAGMA synchronous` value.
    pub fn pragma(self) -> &'static str {
        match self {
            StoreSync::Full => "FULL",
            StoreSync::Normal => "NORMAL",
        }
    }
}

impl std::str::FromStr for StoreSync {
    type Err = String;
    fn from_str(s: &str) -> Result<StoreSync, String> {
        if s.eq_ignore_ascii_case("full") {
            Ok(StoreSync::Full)
        } else if s.eq_ignore_ascii_case("normal") {
            Ok(StoreSync::Normal)
        } else {
            Err(format!("{s:?} is not a store sync mode (full or normal)"))
        }
    }
}

/// Options for opening a store.
#[derive(Clone, Debug)]
pub struct StoreConfig {
    /// SQLite file; `None` keeps everything in memory (tests).
    pub path: Option<std::path::PathBuf>,
    /// How many past events the watch cache keeps for resuming watches (older RVs get 410).
    pub history: usize,
    /// Whether commits fsync (file stores only).
    pub sync: StoreSync,
    /// How long superseded rows stay in SQLite for paginated lists at past revisions before
    /// compaction removes them (see [`RETENTION`]).
    pub retention: Duration,
    /// Keep objects compressed in memory once the store holds this many (`None`: never); see
    /// [`PACK_FROM`].
    pub pack_from: Option<usize>,
}

impl StoreConfig {
    /// A store kept only in memory (tests), with the default history window.
    pub fn in_memory() -> StoreConfig {
        StoreConfig {
            path: None,
            history: DEFAULT_HISTORY,
            sync: StoreSync::default(),
            retention: RETENTION,
            pack_from: Some(PACK_FROM),
        }
    }
    /// A store persisted in the SQLite file `path`, with the default history window, fsynced
    /// commits and the default retention.
    pub fn file(path: impl Into<std::path::PathBuf>) -> StoreConfig {
        StoreConfig {
            path: Some(path.into()),
            ..StoreConfig::in_memory()
        }
    }
}

impl Default for StoreConfig {
    fn default() -> StoreConfig {
        StoreConfig::in_memory()
    }
}

/// Default number of events kept for resuming watches.
pub const DEFAULT_HISTORY: usize = 10_000;
/// How many events one watcher may fall behind before it is cut off.
pub const WATCH_QUEUE: usize = 8_192;
/// A store compresses the objects it keeps in memory once it holds this many. Below, the whole
/// store is a few tens of MiB and what compression saves is not worth its CPU (about 5% of a
/// busy manager's: every write packs, every read unpacks); a process holding thousands of
/// small stores (the benchmark's downstream clusters) spends nothing on dictionaries.
pub const PACK_FROM: usize = 10_000;
/// Superseded rows stay in SQLite this long, so paginated lists at a recent revision can still be
/// served after their in-memory snapshot is gone (kube-apiserver compacts etcd every 5 minutes).
pub const RETENTION: Duration = Duration::from_secs(300);

/// The most recent state, the watch history and the compaction mark, guarded together so that a
/// reader sees a revision, its map and its history consistently.
pub(crate) struct State {
    /// Latest value of every live key. A persistent map: cloning it is O(1), which is how lists
    /// get a consistent snapshot without holding the lock while they iterate.
    pub(crate) map: imbl::OrdMap<Arc<str>, Obj>,
    /// Highest committed revision.
    pub(crate) rev: Rev,
    /// The last `history_cap` events, consecutive revisions, oldest first.
    pub(crate) history: VecDeque<Event>,
    pub(crate) history_cap: usize,
    /// SQLite can answer lists at revisions `>= compact_rev`.
    pub(crate) compact_rev: Rev,
    /// Per resource (`/group/resource/`), the revision of its last write since this store
    /// opened ([`Store::unwritten_since`]).
    pub(crate) resource_revs: HashMap<Box<str>, Rev>,
}

impl State {
    /// Oldest revision a watch can resume from (events after it are all in `history`).
    pub(crate) fn oldest_watchable(&self) -> Rev {
        match self.history.front() {
            Some(ev) => ev.obj.rev - 1,
            None => self.rev,
        }
    }
}

/// Everything the writer thread and the readers share.
pub(crate) struct Shared {
    pub(crate) state: RwLock<State>,
    pub(crate) hubs: Mutex<watch::Hubs>,
    pub(crate) snapshots: Mutex<list::Snapshots>,
    /// Read connection for lists at past revisions (file mode only).
    pub(crate) reader: Option<Mutex<rusqlite::Connection>>,
    /// The dictionary objects are compressed with in memory.
    pub(crate) packer: pack::Packer,
}

/// The storage handle: cheap to clone, shared by every request handler.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    /// What SQLite reported for `PRAGMA synchronous` on the writer's connection (file stores).
    sync: Option<StoreSync>,
    shared: Arc<Shared>,
    backend: Backend,
    /// Permits for [`Store::watch_nonblocking`]'s replays from the log.
    log_replays: tokio::sync::Semaphore,
}

/// How many watches replay from the log at once (each on a blocking thread): the reading is
/// serialized on the one reader connection anyway, and the packing of one replay overlaps the
/// next one's reading; thousands of watchers resuming at once wait for a permit instead of
/// holding a blocking thread each.
const LOG_REPLAYS: usize = 2;

/// The fewest events a watcher resuming from the log may be replayed (see [`Store::watch`]),
/// however few objects its namespace holds.
const MIN_REPLAY: usize = 16;

/// Where the writer runs.
enum Backend {
    /// File stores: a thread of its own, fed by a channel, so that the writes queued while one
    /// transaction commits share the next commit (and its fsync).
    Thread {
        tx: mpsc::Sender<writer::Msg>,
        thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    },
    /// In-memory stores: no commit to wait for, so each write runs in its caller under a
    /// lock, and the periodic housekeeping of every in-memory store of the process is done by
    /// one shared thread ([`housekeeper`]). A thread per store cost its stack and its
    /// allocator cache (most of an idle in-memory server's memory) and a wake-up per write.
    /// `None` once closed.
    Inline(Arc<Mutex<Option<writer::Writer>>>),
}

impl Drop for Inner {
    fn drop(&mut self) {
        match &self.backend {
            Backend::Thread { tx, thread } => {
                let (ack, done) = mpsc::sync_channel(1);
                if tx.send(writer::Msg::Close(ack)).is_ok() {
                    let _ = done.recv();
                }
                if let Some(t) = thread.lock().take() {
                    let _ = t.join();
                }
            }
            Backend::Inline(w) => {
                if w.lock().take().is_some() {
                    self.shared.hubs.lock().close();
                }
            }
        }
    }
}

/// The in-memory stores' writers, for [`housekeeper`].
type InlineWriters = Mutex<Vec<std::sync::Weak<Mutex<Option<writer::Writer>>>>>;

/// Registers an in-memory store's writer with the process's housekeeping thread (started on
/// first use), which does every [`writer::TICK`] what a writer thread does between batches.
fn housekeeper(w: &Arc<Mutex<Option<writer::Writer>>>) -> Result<(), StoreError> {
    static WRITERS: OnceLock<Arc<InlineWriters>> = OnceLock::new();
    let mut spawn_error = None;
    let writers = WRITERS.get_or_init(|| {
        let writers: Arc<InlineWriters> = Arc::default();
        let ticked = writers.clone();
        let spawned = std::thread::Builder::new()
            .name("store-housekeeping".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(writer::TICK);
                    // Upgraded outside the list's lock, so a store opening meanwhile waits
                    // for a copy of the list only.
                    let live: Vec<_> = {
                        let mut list = ticked.lock();
                        list.retain(|w| w.strong_count() > 0);
                        list.iter().filter_map(std::sync::Weak::upgrade).collect()
                    };
                    for w in live {
                        if let Some(w) = w.lock().as_mut() {
                            w.housekeeping();
                        }
                    }
                }
            });
        if let Err(e) = spawned {
            spawn_error = Some(e);
        }
        writers
    });
    if let Some(e) = spawn_error {
        return Err(StoreError::Internal(format!(
            "spawning the store housekeeping thread: {e}"
        )));
    }
    writers.lock().push(Arc::downgrade(w));
    Ok(())
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("rev", &self.current_rev())
            .finish()
    }
}

impl Store {
    /// Opens (or creates) the store; a file store spawns its writer thread. path None = in-memory.
    pub fn open(cfg: StoreConfig) -> Result<Store, StoreError> {
        // An in-memory store has no log: nothing reads past revisions back from SQLite without
        // a file (lists at past revisions come from in-memory snapshots), so it would only be
        // written, at a cost on every write and memory growing for the retention window.
        let conn = match &cfg.path {
            Some(p) => Some(db::open_writer(p, cfg.sync)?),
            None => None,
        };
        let (sync, loaded) = match &conn {
            Some(c) => (db::synchronous(c)?, db::load(c)?),
            None => (
                None,
                db::Loaded {
                    items: Vec::new(),
                    rev: 0,
                    compact_rev: 0,
                },
            ),
        };
        let reader = match &cfg.path {
            Some(p) => Some(Mutex::new(db::open_reader(p)?)),
            None => None,
        };
        let mut map = imbl::OrdMap::new();
        for (k, v) in loaded.items {
            map.insert(k, v);
        }
        // The watch history survives a restart (what the log still holds of it), so watchers
        // resume where they were.
        let history: VecDeque<Event> = match &conn {
            Some(c) if cfg.history > 0 => {
                let window = Rev::try_from(cfg.history).unwrap_or(Rev::MAX);
                let after = loaded.rev.saturating_sub(window).max(loaded.compact_rev);
                db::load_history(c, after)?.into()
            }
            _ => VecDeque::new(),
        };
        let shared = Arc::new(Shared {
            state: RwLock::new(State {
                map,
                rev: loaded.rev,
                history,
                history_cap: cfg.history,
                compact_rev: loaded.compact_rev,
                resource_revs: HashMap::new(),
            }),
            hubs: Mutex::new(watch::Hubs::new(WATCH_QUEUE, loaded.rev)),
            snapshots: Mutex::new(list::Snapshots::default()),
            reader,
            packer: pack::Packer::new(cfg.pack_from),
        });
        let checkpointer = match &cfg.path {
            Some(p) => Some(checkpoint::Checkpointer::spawn(p, cfg.sync)?),
            None => None,
        };
        let w = writer::Writer::new(
            conn,
            shared.clone(),
            loaded.rev,
            checkpointer,
            cfg.retention,
        );
        let backend = if cfg.path.is_some() {
            let (tx, rx) = mpsc::channel();
            let thread = std::thread::Builder::new()
                .name("store-writer".into())
                .spawn(move || w.run(rx))
                .map_err(|e| StoreError::Internal(format!("spawning writer thread: {e}")))?;
            Backend::Thread {
                tx,
                thread: Mutex::new(Some(thread)),
            }
        } else {
            let w = Arc::new(Mutex::new(Some(w)));
            housekeeper(&w)?;
            Backend::Inline(w)
        };
        Ok(Store {
            inner: Arc::new(Inner {
                sync,
                shared,
                backend,
                log_replays: tokio::sync::Semaphore::new(LOG_REPLAYS),
            }),
        })
    }

    fn closed() -> StoreError {
        StoreError::Internal("store is closed".into())
    }

    async fn write(
        &self,
        key: &str,
        op: writer::Op,
        value: Option<serde_json::Value>,
    ) -> Result<Obj, StoreError> {
        let packer = Some(&self.inner.shared.packer);
        let value = value
            .map(|v| encode::Encoded::new(key, v, packer))
            .transpose()?;
        let (reply, rx) = oneshot::channel();
        let req = writer::WriteReq {
            key: key.into(),
            op,
            value,
            reply,
        };
        match &self.inner.backend {
            Backend::Thread { tx, .. } => {
                tx.send(writer::Msg::Write(req))
                    .map_err(|_| Store::closed())?;
            }
            Backend::Inline(w) => match w.lock().as_mut() {
                Some(w) => w.write_now(req),
                None => return Err(Store::closed()),
            },
        }
        rx.await.map_err(|_| Store::closed())?
    }

    /// Creates `key`; AlreadyExists if present. Returns the stored object (with its RV set).
    pub async fn create(&self, key: &str, value: serde_json::Value) -> Result<Obj, StoreError> {
        self.write(key, writer::Op::Create, Some(value)).await
    }

    /// Replaces `key`. `expected = Some(rev)`: Conflict unless the key's current rev == rev.
    /// NotFound if absent.
    pub async fn update(
        &self,
        key: &str,
        expected: Option<Rev>,
        value: serde_json::Value,
    ) -> Result<Obj, StoreError> {
        self.write(key, writer::Op::Update(expected), Some(value))
            .await
    }

    /// Deletes `key` (with optional precondition). Returns the last state, RV = the delete's revision.
    pub async fn delete(&self, key: &str, expected: Option<Rev>) -> Result<Obj, StoreError> {
        self.write(key, writer::Op::Delete(expected), None).await
    }

    /// Latest value, from memory (no SQL on the read path).
    pub fn get(&self, key: &str) -> Option<Obj> {
        self.inner.shared.state.read().map.get(key).cloned()
    }

    /// Whether no key under any of `resources` (`/group/resource/` prefixes) was written after
    /// revision `rev`. Why: a cache of what was read (the service-account token check's) can
    /// stay valid with one hash lookup per resource, where a lookup per key walks the ordered map
    /// (most of that check's cost with 10,000 agents' objects stored).
    pub fn unwritten_since<S: AsRef<str>>(&self, resources: &[S], rev: Rev) -> bool {
        let st = self.inner.shared.state.read();
        resources.iter().all(|r| {
            st.resource_revs
                .get(r.as_ref())
                .is_none_or(|&written| written <= rev)
        })
    }

    /// One page of the keys under `prefix`, in key order, at revision `at` (None = current; the
    /// page's `rev` tells which), starting strictly after `after_key`, at most `limit` items that
    /// pass `filter` (`None` or `Some(0)`: no limit). `at` older than what can be served ->
    /// Compacted; newer than current -> FutureRevision.
    ///
    /// Current-revision pages and pages of a recently started list come from memory; a page at
    /// an older revision whose snapshot has expired is read from SQLite (a blocking read: call
    /// it from `spawn_blocking` if that matters to the caller).
    pub fn list(
        &self,
        prefix: &str,
        at: Option<Rev>,
        after_key: Option<&str>,
        limit: Option<usize>,
        filter: &dyn Fn(&str, &Obj) -> bool,
    ) -> Result<ListPage, StoreError> {
        list::list(&self.inner.shared, prefix, at, after_key, limit, filter)
    }

    /// Events for keys under `prefix` with revision > `after`: replayed from the in-memory history,
    /// and for a namespace's prefix in file mode from the SQLite log for what the history no
    /// longer holds (as etcd serves a watch from any revision after its compaction). Compacted if
    /// `after` is older than what can be replayed (caller answers 410 Gone).
    ///
    /// Why the log: the history is the last [`DEFAULT_HISTORY`] events of the whole store, a few
    /// seconds when 10,000 agents write, so an agent's watch renewed a little late got 410 and
    /// relisted although nothing of its namespace had left the history's time span. A watcher
    /// of a whole resource that far behind has more to catch up on than a relist costs.
    ///
    /// The log is read here, a blocking SQLite read: an async caller that may resume from an
    /// old revision uses [`Store::watch_nonblocking`].
    pub fn watch(&self, prefix: &str, after: Rev) -> Result<Watch, StoreError> {
        self.watch_with(prefix, after, true)
    }

    /// [`Store::watch`] for a request handler: a replay from the log runs on a blocking thread
    /// (at most [`LOG_REPLAYS`] at once), so the runtime's workers keep serving. Why: when
    /// 10,000 agents' watches resumed from the log within seconds of each other, the reads ran
    /// on the manager's two workers, both blocked on the reader's lock, HTTP/2 pings went
    /// unanswered for 15 s and every agent's connection was dropped as dead. `with_prev: false`
    /// (a watcher whose selector does not depend on an object's content) reads no previous
    /// values from the log.
    pub async fn watch_nonblocking(
        &self,
        prefix: &str,
        after: Rev,
        with_prev: bool,
    ) -> Result<Watch, StoreError> {
        // Checked without the lock held across the await: should the history move on between
        // this check and the watch, the watch reads the log inline, once.
        if !self.replays_from_log(prefix, after) {
            return self.watch_with(prefix, after, with_prev);
        }
        let _permit = self
            .inner
            .log_replays
            .acquire()
            .await
            .map_err(|_| Self::closed())?;
        let store = self.clone();
        let prefix = prefix.to_string();
        tokio::task::spawn_blocking(move || store.watch_with(&prefix, after, with_prev))
            .await
            .map_err(|e| StoreError::Internal(format!("replaying the log: {e}")))?
    }

    /// Whether a watch of `prefix` from `after` would read the log (see [`Store::watch`]).
    fn replays_from_log(&self, prefix: &str, after: Rev) -> bool {
        let shared = &self.inner.shared;
        shared.reader.is_some()
            && watch::through_slash(prefix, 4).is_some()
            && after < shared.state.read().oldest_watchable()
    }

    fn watch_with(&self, prefix: &str, after: Rev, with_prev: bool) -> Result<Watch, StoreError> {
        let shared = &self.inner.shared;
        // Subscribe before reading history: an event published in between is then seen twice
        // (dropped by `skip_upto`), never missed.
        let (rx, published) = {
            let mut hubs = shared.hubs.lock();
            (hubs.subscribe(prefix), hubs.published())
        };
        let st = shared.state.read();
        let oldest = st.oldest_watchable();
        // The log holds every revision after the compaction mark: it replays `(after, oldest]`.
        let from_log = after < oldest;
        // `/group/resource/namespace/...`: the prefix of a namespace's hub (see `watch.rs`).
        let namespaced = watch::through_slash(prefix, 4).is_some();
        if from_log && (shared.reader.is_none() || !namespaced || after < st.compact_rev) {
            return Err(StoreError::Compacted {
                requested: after,
                oldest: self.oldest_for(&st, namespaced),
            });
        }
        // A replay costs its events, the relist it spares the prefix's live objects: the log
        // replays at most as many events as the prefix holds objects (or `MIN_REPLAY`), and
        // never more than a history's worth; a watcher further behind relists.
        let limit = if from_log {
            let live = st
                .map
                .range::<_, str>((
                    std::ops::Bound::Included(prefix),
                    std::ops::Bound::Unbounded,
                ))
                .take_while(|(k, _)| k.starts_with(prefix))
                .take(st.history_cap)
                .count();
            live.max(MIN_REPLAY).min(st.history_cap)
        } else {
            0
        };
        let newest = st.history.back().map_or(st.rev, |e| e.obj.rev);
        // History revisions are consecutive: jump straight to the first one after `after`.
        let start = match st.history.front() {
            Some(front) => usize::try_from(after + 1 - front.obj.rev).unwrap_or(0),
            None => 0,
        };
        let mut replay: VecDeque<Event> = st
            .history
            .iter()
            .skip(start)
            .filter(|e| e.obj.rev > after && e.key.starts_with(prefix))
            .cloned()
            .collect();
        drop(st);
        if from_log {
            let logged = match &shared.reader {
                Some(reader) => {
                    db::log_between(&reader.lock(), prefix, after, oldest, limit, with_prev)?
                }
                None => None,
            };
            // Compaction announces its mark before deleting: re-checked after the read, a mark
            // past `after` means rows may be missing.
            let (compact_rev, oldest) = {
                let st = shared.state.read();
                (st.compact_rev, self.oldest_for(&st, namespaced))
            };
            let Some(events) = logged.filter(|_| after >= compact_rev) else {
                // Compacted meanwhile, or more than a history's worth of events: relist.
                return Err(StoreError::Compacted {
                    requested: after,
                    oldest,
                });
            };
            // The log's JSON is plain: packed as the history's is, a replay waiting to be sent
            // takes a fraction of the memory (thousands of agents may resume at once).
            for ev in events.into_iter().rev() {
                replay.push_front(Event {
                    obj: shared.packer.packed(ev.obj),
                    prev: ev.prev.map(|p| shared.packer.packed(p)),
                    ..ev
                });
            }
        }
        Ok(Watch {
            prefix: prefix.into(),
            replay,
            rx,
            skip_upto: newest.max(after),
            last: after,
            published,
        })
    }

    /// The durability of commits as SQLite reports it for the writer's connection (`PRAGMA
    /// synchronous`, read back when the store opened); `None` for an in-memory store.
    pub fn sync_mode(&self) -> Option<StoreSync> {
        self.inner.sync
    }

    /// Highest committed revision.
    pub fn current_rev(&self) -> Rev {
        self.inner.shared.state.read().rev
    }

    /// Oldest revision any watch can resume from (one of a namespace may resume from the log's,
    /// see [`Store::watch`]).
    pub fn oldest_rev(&self) -> Rev {
        self.inner.shared.state.read().oldest_watchable()
    }

    /// The oldest revision a watch of `prefix` can resume from: the history's, or for a
    /// namespace's prefix in file mode the log's when older.
    fn oldest_for(&self, st: &State, namespaced: bool) -> Rev {
        let oldest = st.oldest_watchable();
        match self.inner.shared.reader {
            Some(_) if namespaced => st.compact_rev.min(oldest),
            _ => oldest,
        }
    }

    /// Oldest revision a list can still be served at (older pages get Compacted).
    pub fn compact_rev(&self) -> Rev {
        self.inner.shared.state.read().compact_rev
    }

    /// Number of live keys.
    pub fn len(&self) -> usize {
        self.inner.shared.state.read().map.len()
    }

    /// How many live objects are held compressed, and how many there are (walks every key).
    pub fn packed_count(&self) -> (usize, usize) {
        let map = self.inner.shared.state.read().map.clone();
        (map.values().filter(|o| o.is_packed()).count(), map.len())
    }

    /// Whether no key is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Compacts the SQLite log now, up to `upto` (clamped to the current revision): superseded
    /// rows and tombstones at or below it are deleted and lists below it answer Compacted.
    /// Runs on the writer thread; returns the new compaction revision. The writer also does this
    /// on its own every few seconds for revisions older than [`RETENTION`].
    pub async fn compact(&self, upto: Rev) -> Result<Rev, StoreError> {
        match &self.inner.backend {
            Backend::Thread { tx, .. } => {
                let (reply, rx) = oneshot::channel();
                tx.send(writer::Msg::Compact(upto, reply))
                    .map_err(|_| Store::closed())?;
                rx.await.map_err(|_| Store::closed())?
            }
            Backend::Inline(w) => match w.lock().as_mut() {
                Some(w) => w.compact_now(upto),
                None => Err(Store::closed()),
            },
        }
    }

    /// Flushes and stops the writer, and ends every watch. Later writes fail with Internal.
    /// Blocks until the writer thread has exited (it finishes the writes already queued).
    pub fn close(&self) {
        match &self.inner.backend {
            Backend::Thread { tx, .. } => {
                let (ack, done) = mpsc::sync_channel(1);
                if tx.send(writer::Msg::Close(ack)).is_ok() {
                    let _ = done.recv();
                }
            }
            Backend::Inline(w) => {
                if w.lock().take().is_some() {
                    self.inner.shared.hubs.lock().close();
                }
            }
        }
    }
}

/// The shared empty label set: most objects have no labels, and they then cost no allocation.
fn empty_labels() -> Arc<Labels> {
    static EMPTY: OnceLock<Arc<Labels>> = OnceLock::new();
    EMPTY.get_or_init(|| Arc::new(Labels::default())).clone()
}

/// `metadata.labels` of serialized JSON, shared-empty when there are none.
pub(crate) fn labels_from_json(json: &[u8]) -> Result<Arc<Labels>, serde_json::Error> {
    Ok(intern_labels(Labels::from_map(&db::parse_labels(json)?)))
}

/// How many distinct label sets the interner remembers before it forgets unused ones.
const INTERN_CAP: usize = 1 << 16;

/// Shares one `Arc` among objects with identical labels (all pods of a deployment, all objects
/// of one bundle and cluster, ...): a label map costs several hundred bytes, which would
/// otherwise be paid per object. Sets nobody uses any more are forgotten when the table fills.
pub(crate) fn intern_labels(labels: Labels) -> Arc<Labels> {
    static TABLE: OnceLock<Mutex<LabelInterner>> = OnceLock::new();
    if labels.is_empty() {
        return empty_labels();
    }
    TABLE
        .get_or_init(|| Mutex::new(LabelInterner::new(INTERN_CAP)))
        .lock()
        .intern(labels)
}

/// The label sets [`intern_labels`] shares, at most `cap` of them.
struct LabelInterner {
    sets: std::collections::HashSet<Arc<Labels>>,
    cap: usize,
    /// New sets refused since the last sweep of a full table.
    refused: usize,
    /// Sweeps so far (tests check they stay rare).
    sweeps: usize,
}

impl LabelInterner {
    fn new(cap: usize) -> LabelInterner {
        LabelInterner {
            sets: Default::default(),
            cap,
            refused: 0,
            sweeps: 0,
        }
    }

    fn intern(&mut self, labels: Labels) -> Arc<Labels> {
        if let Some(shared) = self.sets.get(&labels) {
            return shared.clone();
        }
        let shared = Arc::new(labels);
        if self.sets.len() >= self.cap {
            // A sweep costs the whole table: one per cap/4 refusals keeps interning amortised
            // O(1) when every set is still in use (distinct labels per object, e.g. one set per
            // BundleDeployment), where a sweep per new set made each write scan the table.
            self.refused += 1;
            if self.refused < (self.cap / 4).max(1) {
                return shared;
            }
            self.refused = 0;
            self.sweeps += 1;
            self.sets.retain(|a| Arc::strong_count(a) > 1);
        }
        if self.sets.len() < self.cap {
            self.sets.insert(shared.clone());
        }
        shared
    }
}

#[cfg(test)]
mod interner_tests {
    use super::*;
    use std::collections::BTreeMap;

    fn set(i: usize) -> Labels {
        Labels::from_map(&BTreeMap::from([("n".to_string(), i.to_string())]))
    }

    #[test]
    fn a_full_table_of_sets_in_use_is_not_swept_per_new_set() {
        let mut t = LabelInterner::new(64);
        let held: Vec<_> = (0..64 + 160).map(|i| t.intern(set(i))).collect();
        assert!(
            t.sweeps <= 10,
            "{} sweeps for 160 sets past the cap",
            t.sweeps
        );
        // Shared while in the table; equal either way.
        assert!(Arc::ptr_eq(&t.intern(set(3)), &held[3]));
        assert_eq!(*t.intern(set(200)), set(200));
    }

    #[test]
    fn unused_sets_are_forgotten_when_the_table_fills() {
        let mut t = LabelInterner::new(64);
        for i in 0..64 {
            drop(t.intern(set(i)));
        }
        for _ in 0..17 {
            t.intern(set(1000));
        }
        for i in 2000..2016 {
            t.intern(set(i));
        }
        assert_eq!(t.sweeps, 1);
        assert!(t.sets.len() < 64, "unused sets dropped: {}", t.sets.len());
        let (a, b) = (t.intern(set(1000)), t.intern(set(1000)));
        assert!(Arc::ptr_eq(&a, &b), "interned again after the sweep");
    }
}
