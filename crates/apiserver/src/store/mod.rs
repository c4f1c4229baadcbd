//! Revision-log storage in the spirit of k3s's kine: every write gets the next global revision,
//! which is the object's `metadata.resourceVersion`.
//!
//! CONTRACT (shared by the storage and REST layers; change only together):
//! - Keys are `/{group}/{resource}/{namespace}/{name}`; `group` is `core` for the legacy group and
//!   `namespace` is empty for cluster-scoped objects. A prefix such as `/apps/deployments/` or
//!   `/apps/deployments/ns1/` selects a resource or one namespace of it.
//! - Values are Kubernetes objects as JSON. The store owns `metadata.resourceVersion`: it overwrites
//!   it with the write's revision before persisting, so every value it hands out carries its RV.
//! - Values handed out are `Obj`: the object once serialized (compact JSON, shared, never re-encoded)
//!   plus the few parsed fields lists need to filter without decoding the whole object.
//! - An acknowledged write (the future resolved `Ok`) survives SIGKILL (committed to SQLite WAL).
//! - Events reach watchers in revision order with no gaps; a slow watcher is dropped, never waited on.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;

/// A global revision. Revisions are strictly increasing across all keys and never reused.
pub type Rev = i64;

/// One stored object, serialized once and shared by every reader and watcher.
#[derive(Clone, Debug)]
pub struct Obj {
    /// Compact JSON of the object, with `metadata.resourceVersion` equal to `rev`.
    pub json: Bytes,
    /// The revision that wrote this value (its resourceVersion).
    pub rev: Rev,
    /// `metadata.labels`, parsed once, for label selectors.
    pub labels: Arc<BTreeMap<String, String>>,
}

/// What happened to a key at one revision.
#[derive(Clone, Debug)]
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
    /// object stops matching a selector).
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
    Conflict { key: String, expected: Rev, current: Rev },
    /// The requested revision has been compacted (HTTP 410 Gone / Expired).
    #[error("revision {requested} is compacted (oldest available {oldest})")]
    Compacted { requested: Rev, oldest: Rev },
    /// The requested revision is in the future.
    #[error("revision {0} is not yet available")]
    FutureRevision(Rev),
    #[error("storage failure: {0}")]
    Internal(String),
}

/// Options for opening a store.
#[derive(Clone, Debug)]
pub struct StoreConfig {
    /// SQLite file; `None` keeps everything in memory (tests).
    pub path: Option<std::path::PathBuf>,
    /// How many past events the watch cache keeps for resuming watches (older RVs get 410).
    pub history: usize,
}
