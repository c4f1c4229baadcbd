//! The single writer and its group commit. A file store's writer runs on a thread of its own;
//! an in-memory store's runs in each writing caller, under a lock (see `Backend` in the parent).
//!
//! Requests queue on a channel. The writer takes everything queued (up to [`MAX_BATCH`]), checks
//! each request against the latest state (memory plus the batch's own earlier writes — so
//! preconditions are serialized), assigns consecutive revisions, appends the rows in ONE SQLite
//! transaction and commits once. Only after the commit does it update the in-memory map and
//! history, publish the events and resolve the callers' futures, so an acknowledged write is
//! durable and every reader only ever sees committed data.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use rusqlite::Connection;
use serde_json::Value;
use tokio::sync::oneshot;

use super::checkpoint::{self, Checkpointer};
use super::encode::Encoded;
use super::{Event, EventKind, Obj, Rev, Shared, StoreError, db};

/// Upper bound on writes per transaction (keeps one commit's latency bounded).
pub(crate) const MAX_BATCH: usize = 4_096;
/// How long a commit waits for more writes after one that carried several: each commit of a
/// file store costs an fsync (about 0.1 ms of CPU and 0.2 ms on this machine's disk), and under
/// load writes trickle in (a manager rolling out 2,550 BDs committed 2.7 writes per fsync).
/// A lone write (no concurrency seen) never waits. 2 ms, not 1: at 1,000 clusters × 10 bundles
/// a commit of the 1 ms wait held about five writes and wrote 32 WAL pages; the longer wait cut
/// the manager's CPU of a rollout by a tenth, at the cost of latency-bound chains (registration
/// took about a fifth longer). See docs/scale-journal.md, 2026-12-02.
pub(crate) const COMMIT_DELAY: Duration = Duration::from_millis(2);
/// How often the writer samples revisions and does housekeeping.
pub(crate) const TICK: Duration = Duration::from_secs(1);
/// Ticks a store without writes skips before its next housekeeping: an idle store's expired
/// list snapshots, unwatched hubs and aged revisions wait up to this many seconds more. Why: a
/// process of 10,000 in-memory stores (the scale bench's downstreams) spent 2.6% of its CPU
/// housekeeping stores that had not changed, mostly in cache misses.
const IDLE_TICKS: u32 = 10;

/// Whether this tick does the housekeeping of a store now at `rev`: every tick after a write,
/// else every [`IDLE_TICKS`] + 1 ticks. `housekept` is the revision at the last one and the
/// ticks skipped since.
fn tick_due(housekept: &mut (Rev, u32), rev: Rev) -> bool {
    if housekept.0 == rev && housekept.1 < IDLE_TICKS {
        housekept.1 += 1;
        return false;
    }
    *housekept = (rev, 0);
    true
}
/// Revisions compacted per transaction, so compaction never stalls writes for long.
const COMPACT_CHUNK: Rev = 5_000;

pub(crate) enum Op {
    Create,
    Update(Option<Rev>),
    Delete(Option<Rev>),
}

pub(crate) struct WriteReq {
    pub(crate) key: Box<str>,
    pub(crate) op: Op,
    /// The new value, serialized by the caller (creates and updates).
    pub(crate) value: Option<Encoded>,
    pub(crate) reply: oneshot::Sender<Result<Obj, StoreError>>,
}

pub(crate) enum Msg {
    Write(WriteReq),
    Compact(Rev, oneshot::Sender<Result<Rev, StoreError>>),
    Close(mpsc::SyncSender<()>),
}

pub(crate) struct Writer {
    /// The SQLite log (file stores); an in-memory store keeps no log.
    conn: Option<Connection>,
    shared: Arc<Shared>,
    /// Highest committed revision (the writer is the only one that advances it).
    rev: Rev,
    /// `(when, revision)` samples; compaction targets the newest one older than the retention.
    samples: VecDeque<(Instant, Rev)>,
    /// Compaction wanted up to here; done in chunks between batches.
    compact_goal: Rev,
    /// How far the SQLite log is actually compacted.
    db_compact: Rev,
    last_tick: Instant,
    /// The revision at the last housekeeping, and the ticks skipped since (see [`IDLE_TICKS`]).
    housekept: (Rev, u32),
    retention: Duration,
    /// The WAL checkpoint thread (file stores only).
    checkpointer: Option<Checkpointer>,
    /// Writes committed since the checkpoint thread was last kicked.
    since_kick: u64,
    /// Writes in the last commit (concurrent writers when more than one).
    last_batch: usize,
}

/// The outcome of one request inside a batch, before commit.
struct Staged {
    reply: oneshot::Sender<Result<Obj, StoreError>>,
    result: Result<usize, StoreError>,
    /// The JSON as logged, which answers the caller of a packed write without unpacking it.
    logged: Option<bytes::Bytes>,
}

impl Writer {
    pub(crate) fn new(
        conn: Option<Connection>,
        shared: Arc<Shared>,
        rev: Rev,
        checkpointer: Option<Checkpointer>,
        retention: Duration,
    ) -> Writer {
        let db_compact = shared.state.read().compact_rev;
        Writer {
            db_compact,
            conn,
            shared,
            rev,
            samples: VecDeque::new(),
            compact_goal: 0,
            last_tick: Instant::now(),
            housekept: (rev, 0),
            retention,
            checkpointer,
            since_kick: 0,
            last_batch: 0,
        }
    }

    pub(crate) fn run(mut self, rx: mpsc::Receiver<Msg>) {
        let mut batch: Vec<WriteReq> = Vec::new();
        loop {
            let wait = if self.compaction_pending() {
                Duration::ZERO
            } else {
                TICK
            };
            let first = match rx.recv_timeout(wait) {
                Ok(m) => Some(m),
                Err(mpsc::RecvTimeoutError::Timeout) => None,
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            };
            let mut control = None;
            match first {
                Some(Msg::Write(w)) => batch.push(w),
                Some(other) => control = Some(other),
                None => {}
            }
            if control.is_none() {
                while batch.len() < MAX_BATCH {
                    match rx.try_recv() {
                        Ok(Msg::Write(w)) => batch.push(w),
                        Ok(other) => {
                            control = Some(other);
                            break;
                        }
                        Err(_) => break,
                    }
                }
            }
            if control.is_none() && !batch.is_empty() && self.last_batch > 1 && self.conn.is_some()
            {
                control = gather(&rx, &mut batch);
            }
            if !batch.is_empty() {
                self.last_batch = batch.len();
                self.commit_batch(&mut batch);
            }
            match control {
                Some(Msg::Close(ack)) => {
                    self.shared.hubs.lock().close();
                    let _ = ack.send(());
                    return;
                }
                Some(Msg::Compact(upto, reply)) => {
                    let _ = reply.send(self.compact_now(upto));
                }
                Some(Msg::Write(_)) | None => {}
            }
            self.housekeeping();
        }
        self.shared.hubs.lock().close();
    }

    /// Commits one write now, in the caller (in-memory stores, see `Backend::Inline`): what
    /// the thread does for a batch of one, then its housekeeping.
    pub(crate) fn write_now(&mut self, req: WriteReq) {
        let mut batch = vec![req];
        self.commit_batch(&mut batch);
        self.housekeeping();
    }

    fn compaction_pending(&self) -> bool {
        self.db_compact < self.compact_goal
    }

    /// Periodic work: WAL checkpoints, revision samples, compaction target, snapshot expiry,
    /// ring pruning, and one compaction chunk when behind.
    pub(crate) fn housekeeping(&mut self) {
        self.checkpoint();
        let now = Instant::now();
        if now.duration_since(self.last_tick) >= TICK {
            self.last_tick = now;
            if tick_due(&mut self.housekept, self.rev) {
                self.tick(now);
            }
        }
        if self.compaction_pending()
            && let Err(e) = self.compact_chunk()
        {
            tracing::warn!("store compaction failed: {e}");
            // Retry at the next sample rather than spinning.
            self.compact_goal = self.db_compact;
        }
        // Without a log a chunk only moves the mark: all of them at once, as the thread's
        // loop (which comes straight back here while compaction is pending) would.
        while self.conn.is_none() && self.compaction_pending() {
            if self.compact_chunk().is_err() {
                break;
            }
        }
    }

    /// Once a tick: a revision sample, the compaction target, snapshot expiry, hub pruning and
    /// the dictionary check.
    fn tick(&mut self, now: Instant) {
        // A sample at the revision of the one before it would never move the compaction
        // target further than that one does: an idle store keeps one sample, not one per
        // second of the retention window.
        if self.samples.back().is_none_or(|&(_, r)| r != self.rev) {
            self.samples.push_back((now, self.rev));
        }
        while let Some(&(t, r)) = self.samples.front() {
            if now.duration_since(t) >= self.retention {
                self.compact_goal = self.compact_goal.max(r);
                self.samples.pop_front();
            } else {
                break;
            }
        }
        self.shared.snapshots.lock().expire(now);
        self.shared.hubs.lock().prune();
        super::pack::train_when_due(&self.shared);
    }

    /// Kicks the checkpoint thread every [`checkpoint::KICK_EVERY_WRITES`] writes, and
    /// checkpoints here, between batches, when the WAL has outgrown what the thread keeps up with.
    fn checkpoint(&mut self) {
        let Some(cp) = &self.checkpointer else {
            return;
        };
        if self.since_kick < checkpoint::KICK_EVERY_WRITES {
            return;
        }
        self.since_kick = 0;
        if cp.wal_too_long()
            && let Some(conn) = &self.conn
        {
            match db::checkpoint(conn) {
                Ok(log) => cp.record(log),
                Err(e) => tracing::warn!("WAL checkpoint failed: {e}"),
            }
        } else {
            cp.kick();
        }
    }

    /// Compacts one chunk towards `compact_goal`.
    fn compact_chunk(&mut self) -> Result<(), StoreError> {
        let from = self.db_compact;
        let to = self
            .compact_goal
            .min(from.saturating_add(COMPACT_CHUNK))
            .min(self.rev);
        if to <= from {
            self.compact_goal = self.compact_goal.min(from);
            return Ok(());
        }
        // Announce first: a list reading the log re-checks the mark after its read, so it can
        // never return rows this compaction has already removed.
        {
            let mut st = self.shared.state.write();
            st.compact_rev = st.compact_rev.max(to);
        }
        let n = match self.conn.as_mut() {
            Some(conn) => db::compact_range(conn, from, to)?,
            None => 0,
        };
        self.db_compact = to;
        tracing::debug!(from, to, deleted = n, "store compacted");
        Ok(())
    }

    pub(crate) fn compact_now(&mut self, upto: Rev) -> Result<Rev, StoreError> {
        self.compact_goal = self.compact_goal.max(upto.min(self.rev));
        while self.compaction_pending() {
            self.compact_chunk()?;
        }
        Ok(self.db_compact)
    }

    /// Validates, persists (one transaction) and applies a batch, then answers its callers.
    fn commit_batch(&mut self, batch: &mut Vec<WriteReq>) {
        let mut staged: Vec<Staged> = Vec::with_capacity(batch.len());
        let mut events: Vec<Event> = Vec::with_capacity(batch.len());
        match self.stage(batch, &mut staged, &mut events) {
            Ok(()) => {
                if let Some(last) = events.last() {
                    self.rev = last.obj.rev;
                }
                {
                    let mut st = self.shared.state.write();
                    for ev in &events {
                        if let Some(resource) = super::resource_of(&ev.key) {
                            match st.resource_revs.get_mut(resource) {
                                Some(r) => *r = ev.obj.rev,
                                None => {
                                    st.resource_revs.insert(resource.into(), ev.obj.rev);
                                }
                            }
                        }
                        match ev.kind {
                            EventKind::Deleted => {
                                st.map.remove(&*ev.key);
                            }
                            EventKind::Added | EventKind::Modified => {
                                st.map.insert(ev.key.clone(), ev.obj.clone());
                            }
                        }
                    }
                    if st.history_cap > 0 {
                        let cap = st.history_cap;
                        let skip = events.len().saturating_sub(cap);
                        for ev in events.iter().skip(skip) {
                            if st.history.len() >= cap {
                                st.history.pop_front();
                            }
                            st.history.push_back(ev.clone());
                        }
                    }
                    st.rev = self.rev;
                }
                self.shared.hubs.lock().publish(&events);
                self.since_kick += events.len() as u64;
                for s in staged {
                    let res = s.result.and_then(|i| {
                        let obj = events
                            .get(i)
                            .map(|e| e.obj.clone())
                            .ok_or_else(|| StoreError::Internal("lost staged write".into()))?;
                        Ok(match s.logged {
                            Some(json) => Obj::plain(json, obj.rev, obj.labels),
                            None => obj,
                        })
                    });
                    let _ = s.reply.send(res);
                }
            }
            Err(e) => {
                let msg = e.to_string();
                for s in staged {
                    let res = match s.result {
                        Ok(_) => Err(StoreError::Internal(msg.clone())),
                        Err(e) => Err(e),
                    };
                    let _ = s.reply.send(res);
                }
                // Requests not yet staged when the failure happened.
                for w in batch.drain(..) {
                    let _ = w.reply.send(Err(StoreError::Internal(msg.clone())));
                }
            }
        }
        batch.clear();
    }

    /// Checks and encodes every request and writes the rows in one committed transaction.
    /// `staged[i].result` is the index of its event in `events` or its own error.
    fn stage(
        &mut self,
        batch: &mut Vec<WriteReq>,
        staged: &mut Vec<Staged>,
        events: &mut Vec<Event>,
    ) -> Result<(), StoreError> {
        let tx = match self.conn.as_mut() {
            Some(conn) => Some(
                conn.transaction()
                    .map_err(|e| db::sql_err("beginning transaction", e))?,
            ),
            None => None,
        };
        let st = self.shared.state.read();
        // Latest value of keys written earlier in this batch (None: deleted).
        let mut pending: HashMap<Arc<str>, Option<Obj>> = HashMap::new();
        let mut next = self.rev;
        let mut reqs = std::mem::take(batch).into_iter();
        for req in reqs.by_ref() {
            let WriteReq {
                key,
                op,
                value,
                reply,
            } = req;
            let current: Option<(Arc<str>, Obj)> = match pending.get_key_value(&*key) {
                Some((k, v)) => v.as_ref().map(|o| (k.clone(), o.clone())),
                None => st
                    .map
                    .get_key_value(&*key)
                    .map(|(k, v)| (k.clone(), v.clone())),
            };
            let rev = next + 1;
            let step = apply(&key, op, value, current, rev, tx.is_some());
            let (kind, key_arc, obj, prev, logged) = match step {
                Ok(x) => x,
                Err(e) => {
                    staged.push(Staged {
                        reply,
                        result: Err(e),
                        logged: None,
                    });
                    continue;
                }
            };
            let written = match (tx.as_ref(), &logged) {
                (Some(tx), Some(value)) => {
                    let row = db::Row {
                        id: rev,
                        name: &key_arc,
                        created: matches!(kind, EventKind::Added),
                        deleted: matches!(kind, EventKind::Deleted),
                        prev_revision: prev.as_ref().map_or(0, |p| p.rev),
                        value,
                    };
                    db::insert(tx, &row)
                }
                _ => Ok(()),
            };
            if let Err(e) = written {
                staged.push(Staged {
                    reply,
                    result: Err(e.clone_msg()),
                    logged: None,
                });
                batch.extend(reqs);
                return Err(e);
            }
            next = rev;
            let live = match kind {
                EventKind::Deleted => None,
                _ => Some(obj.clone()),
            };
            pending.insert(key_arc.clone(), live);
            staged.push(Staged {
                reply,
                result: Ok(events.len()),
                logged,
            });
            events.push(Event {
                kind,
                key: key_arc,
                obj,
                prev,
            });
        }
        drop(st);
        if let Some(tx) = tx {
            tx.commit().map_err(|e| db::sql_err("committing", e))?;
        }
        Ok(())
    }
}

impl StoreError {
    /// A copy for reporting one failure to several callers.
    fn clone_msg(&self) -> StoreError {
        StoreError::Internal(self.to_string())
    }
}

/// A staged write: what happened, to which key, the new and the previous object, and (with a
/// log) the JSON to log.
type Applied = (EventKind, Arc<str>, Obj, Option<Obj>, Option<bytes::Bytes>);

/// Checks one request against the key's current value and builds the new stored object (and,
/// with `log`, the JSON the log keeps of it).
fn apply(
    key: &str,
    op: Op,
    value: Option<Encoded>,
    current: Option<(Arc<str>, Obj)>,
    rev: Rev,
    log: bool,
) -> Result<Applied, StoreError> {
    match op {
        Op::Create => {
            if current.is_some() {
                return Err(StoreError::AlreadyExists(key.to_string()));
            }
            let (obj, logged) = finish(key, value, rev, log)?;
            Ok((EventKind::Added, Arc::from(key), obj, None, logged))
        }
        Op::Update(expected) => {
            let Some((k, cur)) = current else {
                return Err(StoreError::NotFound(key.to_string()));
            };
            check_expected(key, expected, &cur)?;
            let (obj, logged) = finish(key, value, rev, log)?;
            Ok((EventKind::Modified, k, obj, Some(cur), logged))
        }
        Op::Delete(expected) => {
            let Some((k, cur)) = current else {
                return Err(StoreError::NotFound(key.to_string()));
            };
            check_expected(key, expected, &cur)?;
            let last: Value = serde_json::from_slice(&cur.json()).map_err(|e| {
                StoreError::Internal(format!("stored value of {key} is not JSON: {e}"))
            })?;
            // Held plain: a deleted object lives only in the watch history.
            let (mut obj, logged) = Encoded::new(key, last, None)?.finish(rev, log);
            obj.labels = cur.labels.clone();
            Ok((EventKind::Deleted, k, obj, Some(cur), logged))
        }
    }
}

fn check_expected(key: &str, expected: Option<Rev>, cur: &Obj) -> Result<(), StoreError> {
    match expected {
        Some(exp) if exp != cur.rev => Err(StoreError::Conflict {
            key: key.to_string(),
            expected: exp,
            current: cur.rev,
        }),
        _ => Ok(()),
    }
}

/// Adds to `batch` what arrives within [`COMMIT_DELAY`] (up to [`MAX_BATCH`]); returns a control
/// message that arrived meanwhile (it ends the wait).
fn gather(rx: &mpsc::Receiver<Msg>, batch: &mut Vec<WriteReq>) -> Option<Msg> {
    let until = Instant::now() + COMMIT_DELAY;
    while batch.len() < MAX_BATCH {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        match rx.recv_timeout(left) {
            Ok(Msg::Write(w)) => batch.push(w),
            Ok(other) => return Some(other),
            // A closed channel is seen by the next receive of the main loop.
            Err(_) => break,
        }
    }
    None
}

/// The stored object for a create or update at `rev` (and with `log`, the JSON to log).
fn finish(
    key: &str,
    value: Option<Encoded>,
    rev: Rev,
    log: bool,
) -> Result<(Obj, Option<bytes::Bytes>), StoreError> {
    value
        .map(|v| v.finish(rev, log))
        .ok_or_else(|| StoreError::Internal(format!("no value to write for {key}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn housekeeping_runs_every_tick_after_writes_and_seldom_when_idle() {
        let mut h = (5, 0);
        assert!(tick_due(&mut h, 6), "a write since the last one");
        assert!(tick_due(&mut h, 7));
        let idle: Vec<bool> = (0..2 * (IDLE_TICKS + 1))
            .map(|_| tick_due(&mut h, 7))
            .collect();
        let due: Vec<usize> = (0..idle.len()).filter(|&i| idle[i]).collect();
        let every = IDLE_TICKS as usize + 1;
        assert_eq!(due, vec![every - 1, 2 * every - 1], "{idle:?}");
        assert!(tick_due(&mut h, 8), "a write ends the idle spell at once");
    }

    fn req(key: &str) -> WriteReq {
        let (reply, _) = oneshot::channel();
        WriteReq {
            key: key.into(),
            op: Op::Delete(None),
            value: None,
            reply,
        }
    }

    fn keys(batch: &[WriteReq]) -> Vec<&str> {
        batch.iter().map(|w| &*w.key).collect()
    }

    #[test]
    fn a_commit_gathers_writes_until_the_delay_or_a_control_message() {
        let (tx, rx) = mpsc::channel();
        let mut batch = vec![req("/a")];
        tx.send(Msg::Write(req("/b"))).unwrap();
        tx.send(Msg::Write(req("/c"))).unwrap();
        let (ack, _) = mpsc::sync_channel(1);
        tx.send(Msg::Close(ack)).unwrap();
        tx.send(Msg::Write(req("/d"))).unwrap();
        // Writes before the control message join the batch; the control message ends the wait
        // and is handed back; what follows it stays queued for the next round.
        let control = gather(&rx, &mut batch);
        assert!(matches!(control, Some(Msg::Close(_))));
        assert_eq!(keys(&batch), ["/a", "/b", "/c"]);
        assert!(matches!(rx.try_recv(), Ok(Msg::Write(w)) if &*w.key == "/d"));

        // Nothing arrives: the batch is committed as it is once the delay is over.
        let t = Instant::now();
        assert!(gather(&rx, &mut batch).is_none());
        assert!(t.elapsed() >= COMMIT_DELAY);
        assert_eq!(batch.len(), 3);

        // No writer left: no wait.
        drop(tx);
        assert!(gather(&rx, &mut batch).is_none());
        assert_eq!(batch.len(), 3);
    }

    #[test]
    fn a_commit_gathers_at_most_a_full_batch() {
        let (tx, rx) = mpsc::channel();
        let mut batch: Vec<WriteReq> = (0..MAX_BATCH - 1).map(|i| req(&format!("/{i}"))).collect();
        tx.send(Msg::Write(req("/last"))).unwrap();
        tx.send(Msg::Write(req("/next"))).unwrap();
        assert!(gather(&rx, &mut batch).is_none());
        assert_eq!(batch.len(), MAX_BATCH);
        assert!(matches!(rx.try_recv(), Ok(Msg::Write(w)) if &*w.key == "/next"));
    }
}
