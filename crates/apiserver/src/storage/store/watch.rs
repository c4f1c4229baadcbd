//! Live event fan-out without per-watcher queues.
//!
//! Watchers subscribe to a *hub*: the finest of `/group/resource/namespace/`,
//! `/group/resource/` or the catch-all that their prefix allows, so a namespace-scoped watcher
//! (an agent watching its own namespace) is only woken for its namespace's events. A hub is a
//! shared log of events (one clone of each event per hub: reference counts only, the JSON is
//! shared) plus one cursor per subscriber; a subscriber reads the log through its cursor, so
//! delivery allocates nothing per watcher. Events every subscriber has read are dropped from
//! the front; a subscriber more than the hub's capacity behind is cut off (its `next()` returns
//! `None`) instead of ever slowing the writer. Hubs grow only with the events they hold, so
//! thousands of per-namespace hubs cost almost nothing when idle.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use parking_lot::{Mutex, RwLock};
use tokio::sync::Notify;

use super::{Event, Rev};

/// The prefix of `s` through its `n`-th `/` (`n` = 3: `/group/resource/`, 4: `/group/resource/ns/`),
/// or `None` when `s` has fewer slashes or does not start with one.
pub(crate) fn through_slash(s: &str, n: usize) -> Option<&str> {
    if !s.starts_with('/') {
        return None;
    }
    let (i, _) = s.match_indices('/').nth(n.checked_sub(1)?)?;
    s.get(..=i)
}

/// The part of a key or prefix that names its resource: `/group/resource/`.
pub(crate) fn resource_of(s: &str) -> Option<&str> {
    through_slash(s, 3)
}

struct HubLog {
    /// Sequence number of `events[0]`.
    base: u64,
    events: VecDeque<Event>,
    closed: bool,
}

/// One shared event log and its subscribers.
pub(crate) struct Hub {
    log: RwLock<HubLog>,
    notify: Notify,
    /// Each subscriber's next sequence number; an entry only the hub holds is a gone subscriber.
    cursors: Mutex<Vec<Arc<AtomicU64>>>,
    capacity: usize,
}

impl Hub {
    fn new(capacity: usize) -> Hub {
        Hub {
            log: RwLock::new(HubLog {
                base: 0,
                events: VecDeque::new(),
                closed: false,
            }),
            notify: Notify::new(),
            cursors: Mutex::new(Vec::new()),
            capacity,
        }
    }

    fn subscribe(self: &Arc<Hub>) -> Subscriber {
        // Hold the log lock while registering so the start position and the trim see each other.
        let log = self.log.read();
        let cursor = Arc::new(AtomicU64::new(log.base + log.events.len() as u64));
        self.cursors.lock().push(cursor.clone());
        drop(log);
        Subscriber {
            hub: self.clone(),
            cursor,
        }
    }

    fn has_subscribers(&self) -> bool {
        let mut c = self.cursors.lock();
        c.retain(|a| Arc::strong_count(a) > 1);
        !c.is_empty()
    }

    /// Appends events, drops what every subscriber has read (and whatever exceeds the
    /// capacity: subscribers that far behind are cut off), and wakes the waiting subscribers.
    fn push(&self, events: impl Iterator<Item = Event>) {
        let mut log = self.log.write();
        log.events.extend(events);
        let min = {
            let mut c = self.cursors.lock();
            c.retain(|a| Arc::strong_count(a) > 1);
            c.iter().map(|a| a.load(Ordering::Acquire)).min()
        };
        let end = log.base + log.events.len() as u64;
        let keep_from = min
            .unwrap_or(end)
            .max(end.saturating_sub(self.capacity as u64));
        while log.base < keep_from && log.events.pop_front().is_some() {
            log.base += 1;
        }
        drop(log);
        self.notify.notify_waiters();
    }

    fn close(&self) {
        self.log.write().closed = true;
        self.notify.notify_waiters();
    }
}

/// A reader of one hub.
pub(crate) struct Subscriber {
    hub: Arc<Hub>,
    cursor: Arc<AtomicU64>,
}

impl Subscriber {
    /// Whether every event the hub holds has been read (nothing is waiting for this reader).
    fn caught_up(&self) -> bool {
        let log = self.hub.log.read();
        self.cursor.load(Ordering::Acquire) >= log.base + log.events.len() as u64
    }

    /// The next event of the hub; `None` when cut off (fell behind) or closed. Cancel-safe:
    /// the cursor only moves when an event is returned.
    pub(crate) async fn recv(&mut self) -> Option<Event> {
        loop {
            let notified = self.hub.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let log = self.hub.log.read();
                let cur = self.cursor.load(Ordering::Acquire);
                if cur < log.base {
                    return None; // its events were dropped: it fell too far behind
                }
                let idx = usize::try_from(cur - log.base).unwrap_or(usize::MAX);
                if let Some(ev) = log.events.get(idx) {
                    self.cursor.store(cur + 1, Ordering::Release);
                    return Some(ev.clone());
                }
                if log.closed {
                    return None;
                }
            }
            notified.await;
        }
    }
}

/// All hubs, keyed by the prefix they serve (`""` = catch-all).
pub(crate) struct Hubs {
    /// Per-watcher queue bound (events a subscriber may fall behind).
    capacity: usize,
    hubs: HashMap<Box<str>, Arc<Hub>>,
    closed: bool,
    /// The highest revision whose events have all been handed to their hubs: a watcher that
    /// has read everything its hub holds has seen every event of its prefix up to here.
    published: Arc<AtomicI64>,
}

impl Hubs {
    /// Hubs whose subscribers may fall `capacity` events behind, for a store at revision `rev`.
    pub(crate) fn new(capacity: usize, rev: Rev) -> Hubs {
        Hubs {
            capacity: capacity.max(16),
            hubs: HashMap::new(),
            closed: false,
            published: Arc::new(AtomicI64::new(rev)),
        }
    }

    /// The revision up to which every committed event has reached its hubs (see [`Watch::progress`]).
    pub(crate) fn published(&self) -> Arc<AtomicI64> {
        self.published.clone()
    }

    /// The hub a watcher of `prefix` reads: every event under `prefix` passes through it.
    fn hub_key(prefix: &str) -> &str {
        through_slash(prefix, 4)
            .or_else(|| resource_of(prefix))
            .unwrap_or("")
    }

    /// A subscription receiving (at least) every event whose key starts with `prefix`, from
    /// now on. `None` once the store is closed.
    pub(crate) fn subscribe(&mut self, prefix: &str) -> Option<Subscriber> {
        if self.closed {
            return None;
        }
        let key = Self::hub_key(prefix);
        let hub = match self.hubs.get(key) {
            Some(h) => h.clone(),
            None => {
                let h = Arc::new(Hub::new(self.capacity));
                self.hubs.insert(key.into(), h.clone());
                h
            }
        };
        Some(hub.subscribe())
    }

    /// Sends committed events, in revision order, to the hubs that serve their keys.
    pub(crate) fn publish(&mut self, events: &[Event]) {
        let last = events.last().map(|e| e.obj.rev);
        self.push_to_hubs(events);
        // After the pushes: whoever reads this revision finds its events in the hubs.
        if let Some(rev) = last {
            self.published.fetch_max(rev, Ordering::Release);
        }
    }

    fn push_to_hubs(&mut self, events: &[Event]) {
        if self.hubs.is_empty() {
            return;
        }
        // Group the batch per hub, so each hub is locked and woken once per batch.
        let mut per_hub: Vec<(Arc<Hub>, Vec<usize>)> = Vec::new();
        let mut slot: HashMap<*const Hub, usize> = HashMap::new();
        for (i, ev) in events.iter().enumerate() {
            let keys = [Some(""), resource_of(&ev.key), through_slash(&ev.key, 4)];
            for k in keys.into_iter().flatten() {
                if let Some(h) = self.hubs.get(k) {
                    let n = *slot.entry(Arc::as_ptr(h)).or_insert_with(|| {
                        per_hub.push((h.clone(), Vec::new()));
                        per_hub.len() - 1
                    });
                    if let Some((_, idx)) = per_hub.get_mut(n) {
                        idx.push(i);
                    }
                }
            }
        }
        for (hub, idx) in per_hub {
            hub.push(idx.into_iter().filter_map(|i| events.get(i).cloned()));
        }
    }

    /// Drops hubs nobody listens to any more (their buffered events hold memory).
    pub(crate) fn prune(&mut self) {
        self.hubs.retain(|_, h| h.has_subscribers());
    }

    /// Ends every watch (their `next()` returns `None` after the buffered events).
    pub(crate) fn close(&mut self) {
        self.closed = true;
        for h in self.hubs.values() {
            h.close();
        }
        self.hubs.clear();
    }
}

/// A stream of events for one prefix: first the replay of history after the requested
/// revision, then live events. Obtained from `Store::watch`.
pub struct Watch {
    pub(crate) prefix: Box<str>,
    pub(crate) replay: VecDeque<Event>,
    pub(crate) rx: Option<Subscriber>,
    /// Live events at or below this revision were already covered by the replay.
    pub(crate) skip_upto: Rev,
    /// Revision of the last event handed out (or the starting revision).
    pub(crate) last: Rev,
    /// The store's published revision ([`Hubs::published`]).
    pub(crate) published: Arc<AtomicI64>,
}

impl Watch {
    /// Next event; `None` when the store closed or this watcher fell behind and was cut off
    /// (the REST layer then ends the HTTP stream; clients re-watch and may get 410 and relist).
    pub async fn next(&mut self) -> Option<Event> {
        if let Some(ev) = self.replay.pop_front() {
            self.last = ev.obj.rev;
            return Some(ev);
        }
        let rx = self.rx.as_mut()?;
        loop {
            match rx.recv().await {
                Some(ev) => {
                    if ev.obj.rev <= self.skip_upto || !ev.key.starts_with(&*self.prefix) {
                        continue;
                    }
                    self.skip_upto = ev.obj.rev;
                    self.last = ev.obj.rev;
                    return Some(ev);
                }
                None => {
                    // Cut off (fell behind) or closed: this watch is over.
                    self.rx = None;
                    return None;
                }
            }
        }
    }

    /// The revision of the last event delivered, the starting revision, or a later one
    /// [`Watch::progress`] found fully delivered: where a client would resume.
    pub fn last_rev(&self) -> Rev {
        self.last
    }

    /// The revision up to which this watch has handed out every event of its prefix: the
    /// store's latest published revision when nothing is waiting for it, else the last event it
    /// returned. What a bookmark may carry, so that a client whose resources are quiet resumes
    /// from a recent revision instead of one the history has long dropped (410 and a relist).
    /// Never goes back: later events all come after it.
    pub fn progress(&mut self) -> Rev {
        // Read before looking at the hub: every event up to `published` is already in it.
        let published = self.published.load(Ordering::Acquire);
        let idle = self.replay.is_empty() && self.rx.as_ref().is_some_and(Subscriber::caught_up);
        if idle {
            self.last = self.last.max(published);
        }
        self.last
    }

    /// The prefix this watch selects.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }
}

#[cfg(test)]
mod tests {
    use super::{Hubs, resource_of, through_slash};
    use proptest::prelude::*;

    #[test]
    fn hub_keys() {
        assert_eq!(
            Hubs::hub_key("/apps/deployments/ns/"),
            "/apps/deployments/ns/"
        );
        assert_eq!(
            Hubs::hub_key("/apps/deployments/ns/x"),
            "/apps/deployments/ns/"
        );
        assert_eq!(Hubs::hub_key("/apps/deployments/"), "/apps/deployments/");
        assert_eq!(Hubs::hub_key("/apps/deployments/n"), "/apps/deployments/");
        assert_eq!(Hubs::hub_key("/apps/"), "");
        assert_eq!(Hubs::hub_key("/"), "");
        assert_eq!(Hubs::hub_key(""), "");
    }

    proptest! {
        /// Whatever the string, the hub of a prefix always sees every key under that prefix.
        #[test]
        fn hub_of_prefix_covers_its_keys(prefix in "[/a-c]{0,10}", rest in "[/a-c]{0,10}") {
            let key = format!("{prefix}{rest}");
            let hub = Hubs::hub_key(&prefix);
            let key_hubs = ["", resource_of(&key).unwrap_or(""), through_slash(&key, 4).unwrap_or("")];
            prop_assert!(key_hubs.contains(&hub), "{key} does not reach hub {hub} of {prefix}");
            for n in 0..6 {
                if let Some(p) = through_slash(&key, n) {
                    prop_assert!(key.starts_with(p) && p.ends_with('/'));
                    prop_assert_eq!(p.matches('/').count(), n);
                }
            }
        }
    }

    #[test]
    fn resource_prefixes() {
        assert_eq!(
            resource_of("/apps/deployments/ns/x"),
            Some("/apps/deployments/")
        );
        assert_eq!(
            resource_of("/apps/deployments/"),
            Some("/apps/deployments/")
        );
        assert_eq!(resource_of("/apps/deployments"), None);
        assert_eq!(resource_of("/"), None);
        assert_eq!(resource_of(""), None);
        assert_eq!(resource_of("apps/x/y/"), None);
    }
}
