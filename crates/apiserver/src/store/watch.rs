//! Live event fan-out. One `tokio::sync::broadcast` ring per watched resource (`/group/resource/`)
//! plus one for watchers of wider prefixes: an event is cloned into the ring once (reference
//! counts only, the JSON is shared) and every watcher reads it through its own cursor, so fan-out
//! costs no per-watcher allocation. The ring's capacity is each watcher's queue bound: a watcher
//! that falls that far behind gets `Lagged`, and is cut off instead of slowing the writer.

use std::collections::{HashMap, VecDeque};

use tokio::sync::broadcast;

use super::{Event, Rev};

/// The part of a key or prefix that names its resource: `/group/resource/`, or `None` when the
/// string is shorter than that (such prefixes are served by the catch-all ring).
pub(crate) fn resource_of(s: &str) -> Option<&str> {
    let bytes = s.as_bytes();
    if bytes.first() != Some(&b'/') {
        return None;
    }
    let mut seen = 0;
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'/' {
            seen += 1;
            if seen == 3 {
                return s.get(..=i);
            }
        }
    }
    None
}

/// Broadcast rings, keyed by resource.
pub(crate) struct Hubs {
    /// Per-watcher queue bound (ring capacity).
    capacity: usize,
    /// Watchers whose prefix is shorter than `/group/resource/`.
    all: Option<broadcast::Sender<Event>>,
    by_resource: HashMap<Box<str>, broadcast::Sender<Event>>,
    closed: bool,
}

impl Hubs {
    pub(crate) fn new(capacity: usize) -> Hubs {
        Hubs {
            capacity: capacity.max(16),
            all: None,
            by_resource: HashMap::new(),
            closed: false,
        }
    }

    /// A receiver for every event whose key starts with `prefix` (plus possibly others the
    /// watcher filters out itself). `None` once the store is closed.
    pub(crate) fn subscribe(&mut self, prefix: &str) -> Option<broadcast::Receiver<Event>> {
        if self.closed {
            return None;
        }
        let cap = self.capacity;
        let tx = match resource_of(prefix) {
            Some(res) => {
                if let Some(tx) = self.by_resource.get(res) {
                    tx
                } else {
                    self.by_resource
                        .entry(res.into())
                        .or_insert_with(|| broadcast::channel(cap).0)
                }
            }
            None => self.all.get_or_insert_with(|| broadcast::channel(cap).0),
        };
        Some(tx.subscribe())
    }

    /// Sends committed events, in revision order, to the rings that have receivers.
    pub(crate) fn publish(&mut self, events: &[Event]) {
        for ev in events {
            if let Some(all) = &self.all
                && all.receiver_count() > 0
            {
                let _ = all.send(ev.clone());
            }
            if let Some(res) = resource_of(&ev.key)
                && let Some(tx) = self.by_resource.get(res)
                && tx.receiver_count() > 0
            {
                let _ = tx.send(ev.clone());
            }
        }
    }

    /// Drops rings nobody listens to any more (their buffered events hold memory).
    pub(crate) fn prune(&mut self) {
        self.by_resource.retain(|_, tx| tx.receiver_count() > 0);
        if self.all.as_ref().is_some_and(|tx| tx.receiver_count() == 0) {
            self.all = None;
        }
    }

    /// Ends every watch (their `next()` returns `None` after the buffered events).
    pub(crate) fn close(&mut self) {
        self.closed = true;
        self.all = None;
        self.by_resource.clear();
    }
}

/// A stream of events for one prefix: first the replay of history after the requested
/// revision, then live events. Obtained from `Store::watch`.
pub struct Watch {
    pub(crate) prefix: Box<str>,
    pub(crate) replay: VecDeque<Event>,
    pub(crate) rx: Option<broadcast::Receiver<Event>>,
    /// Live events at or below this revision were already covered by the replay.
    pub(crate) skip_upto: Rev,
    /// Revision of the last event handed out (or the starting revision).
    pub(crate) last: Rev,
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
                Ok(ev) => {
                    if ev.obj.rev <= self.skip_upto || !ev.key.starts_with(&*self.prefix) {
                        continue;
                    }
                    self.skip_upto = ev.obj.rev;
                    self.last = ev.obj.rev;
                    return Some(ev);
                }
                Err(_) => {
                    // Lagged (queue overflow) or closed: this watch is over.
                    self.rx = None;
                    return None;
                }
            }
        }
    }

    /// The revision of the last event delivered (or the starting revision): where a client
    /// would resume.
    pub fn last_rev(&self) -> Rev {
        self.last
    }

    /// The prefix this watch selects.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }
}

#[cfg(test)]
mod tests {
    use super::resource_of;

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
