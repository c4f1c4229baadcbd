//! Consistent, paginated lists.
//!
//! Every page of one list is read at the same revision. Sources, fastest first:
//! 1. the current map (an O(1) clone of the persistent map, iterated outside the lock);
//! 2. a snapshot of the map kept for a short while after a first page that had more items;
//! 3. the current map with the changes after the revision undone from the watch history;
//! 4. the SQLite log (`id <= rev`), while that revision is not compacted (file mode).
//!
//! Otherwise the revision is Compacted and the client relists.

use std::collections::BTreeMap;
use std::iter::Peekable;
use std::ops::Bound;
use std::sync::Arc;
use std::time::{Duration, Instant};

use imbl::OrdMap;

use super::{EventKind, ListPage, Obj, Rev, Shared, StoreError, db};

/// How many list snapshots are kept at once. Each one shares structure with the live map, but
/// while writes happen it pins the nodes they replaced, so the count is kept small.
const MAX_SNAPSHOTS: usize = 4;
/// How long an unused snapshot is kept (clients page through a list within seconds).
const SNAPSHOT_TTL: Duration = Duration::from_secs(120);

type Map = OrdMap<Arc<str>, Obj>;

/// Items of one page and whether more follow.
pub(crate) type PageItems = (Vec<(Arc<str>, Obj)>, bool);

struct Snap {
    rev: Rev,
    map: Map,
    last_used: Instant,
}

/// Recently listed revisions, for the next pages of those lists.
#[derive(Default)]
pub(crate) struct Snapshots {
    snaps: Vec<Snap>,
}

impl Snapshots {
    fn get(&mut self, rev: Rev) -> Option<Map> {
        let s = self.snaps.iter_mut().find(|s| s.rev == rev)?;
        s.last_used = Instant::now();
        Some(s.map.clone())
    }

    fn put(&mut self, rev: Rev, map: Map) {
        let now = Instant::now();
        if let Some(s) = self.snaps.iter_mut().find(|s| s.rev == rev) {
            s.last_used = now;
            return;
        }
        self.expire(now);
        if self.snaps.len() >= MAX_SNAPSHOTS
            && let Some(lru) = self
                .snaps
                .iter()
                .enumerate()
                .min_by_key(|(_, s)| s.last_used)
                .map(|(i, _)| i)
        {
            self.snaps.swap_remove(lru);
        }
        self.snaps.push(Snap {
            rev,
            map,
            last_used: now,
        });
    }

    /// Drops snapshots unused for [`SNAPSHOT_TTL`], releasing the nodes they pin.
    pub(crate) fn expire(&mut self, now: Instant) {
        self.snaps
            .retain(|s| now.duration_since(s.last_used) < SNAPSHOT_TTL);
    }
}

/// Where a page is read from.
enum Source {
    Map(Map),
    /// The map plus, for keys changed after the revision, their value at the revision.
    Overlay(Map, BTreeMap<Arc<str>, Option<Obj>>),
    Sqlite,
}

pub(crate) fn list(
    shared: &Shared,
    prefix: &str,
    at: Option<Rev>,
    after_key: Option<&str>,
    limit: Option<usize>,
    filter: &dyn Fn(&str, &Obj) -> bool,
) -> Result<ListPage, StoreError> {
    let limit = match limit {
        None | Some(0) => usize::MAX,
        Some(n) => n,
    };
    let (rev, source, fresh) = {
        let st = shared.state.read();
        match at {
            None => (st.rev, Source::Map(st.map.clone()), true),
            Some(r) if r > st.rev => return Err(StoreError::FutureRevision(r)),
            Some(r) if r == st.rev => (r, Source::Map(st.map.clone()), true),
            Some(r) => {
                if let Some(map) = shared.snapshots.lock().get(r) {
                    (r, Source::Map(map), false)
                } else if r >= st.oldest_watchable() {
                    (
                        r,
                        Source::Overlay(st.map.clone(), undo_after(&st.history, r, prefix)),
                        false,
                    )
                } else if shared.reader.is_some() && r >= st.compact_rev {
                    (r, Source::Sqlite, false)
                } else {
                    let oldest = if shared.reader.is_some() {
                        st.compact_rev.min(st.oldest_watchable())
                    } else {
                        st.oldest_watchable()
                    };
                    return Err(StoreError::Compacted {
                        requested: r,
                        oldest,
                    });
                }
            }
        }
    };
    let (items, more) = match &source {
        Source::Map(map) => collect(range(map, prefix, after_key), prefix, limit, filter),
        Source::Overlay(map, overlay) => {
            let merged = Merge {
                base: range(map, prefix, after_key).peekable(),
                over: overlay_range(overlay, prefix, after_key).peekable(),
            };
            collect(merged, prefix, limit, filter)
        }
        Source::Sqlite => {
            let Some(reader) = &shared.reader else {
                return Err(StoreError::Internal("no reader connection".into()));
            };
            let page = db::list_at(&reader.lock(), prefix, rev, after_key, limit, filter)?;
            let compact_rev = shared.state.read().compact_rev;
            if compact_rev > rev {
                // Compaction past `rev` started while we read: the rows may be incomplete.
                return Err(StoreError::Compacted {
                    requested: rev,
                    oldest: compact_rev,
                });
            }
            page
        }
    };
    // Keep the revision's map for the next pages, so they are served from memory too.
    if more
        && fresh
        && let Source::Map(map) = source
    {
        shared.snapshots.lock().put(rev, map);
    }
    Ok(ListPage {
        items,
        rev,
        more,
        remaining: None,
    })
}

/// Start bound of a page: strictly after `after_key` when it lies inside the prefix range.
fn start<'a>(prefix: &'a str, after_key: Option<&'a str>) -> Bound<&'a str> {
    match after_key {
        Some(a) if a >= prefix => Bound::Excluded(a),
        _ => Bound::Included(prefix),
    }
}

fn range<'a>(
    map: &'a Map,
    prefix: &'a str,
    after_key: Option<&'a str>,
) -> impl Iterator<Item = (&'a Arc<str>, &'a Obj)> + 'a {
    map.range::<_, str>((start(prefix, after_key), Bound::Unbounded))
}

fn overlay_range<'a>(
    overlay: &'a BTreeMap<Arc<str>, Option<Obj>>,
    prefix: &'a str,
    after_key: Option<&'a str>,
) -> impl Iterator<Item = (&'a Arc<str>, &'a Option<Obj>)> + 'a {
    overlay.range::<str, _>((start(prefix, after_key), Bound::Unbounded))
}

/// For each key under `prefix` changed after `rev`, its value at `rev` (`None`: absent then).
/// Walks the history newest-first so the earliest change after `rev` decides.
fn undo_after(
    history: &std::collections::VecDeque<super::Event>,
    rev: Rev,
    prefix: &str,
) -> BTreeMap<Arc<str>, Option<Obj>> {
    let mut overlay = BTreeMap::new();
    for ev in history.iter().rev() {
        if ev.obj.rev <= rev {
            break;
        }
        if !ev.key.starts_with(prefix) {
            continue;
        }
        let before = match ev.kind {
            EventKind::Added => None,
            EventKind::Modified | EventKind::Deleted => ev.prev.clone(),
        };
        overlay.insert(ev.key.clone(), before);
    }
    overlay
}

/// Merges the live map with the undo overlay, in key order, hiding keys absent at the revision.
struct Merge<'a, B, O>
where
    B: Iterator<Item = (&'a Arc<str>, &'a Obj)>,
    O: Iterator<Item = (&'a Arc<str>, &'a Option<Obj>)>,
{
    base: Peekable<B>,
    over: Peekable<O>,
}

impl<'a, B, O> Iterator for Merge<'a, B, O>
where
    B: Iterator<Item = (&'a Arc<str>, &'a Obj)>,
    O: Iterator<Item = (&'a Arc<str>, &'a Option<Obj>)>,
{
    type Item = (&'a Arc<str>, &'a Obj);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let take_over = match (self.base.peek(), self.over.peek()) {
                (None, None) => return None,
                (Some(_), None) => false,
                (None, Some(_)) => true,
                (Some((bk, _)), Some((ok, _))) => {
                    if bk == ok {
                        // The overlay decides this key; skip the live value.
                        self.base.next();
                        true
                    } else {
                        ok < bk
                    }
                }
            };
            if take_over {
                if let Some((k, v)) = self.over.next()
                    && let Some(v) = v
                {
                    return Some((k, v));
                }
            } else {
                return self.base.next();
            }
        }
    }
}

/// Takes up to `limit` items under `prefix` that pass `filter`; `more` when another key under
/// the prefix follows the last one taken.
fn collect<'a>(
    iter: impl Iterator<Item = (&'a Arc<str>, &'a Obj)>,
    prefix: &str,
    limit: usize,
    filter: &dyn Fn(&str, &Obj) -> bool,
) -> PageItems {
    let mut items = Vec::new();
    for (k, v) in iter {
        if !k.starts_with(prefix) {
            return (items, false);
        }
        if items.len() >= limit {
            return (items, true);
        }
        if filter(k, v) {
            items.push((k.clone(), v.clone()));
        }
    }
    (items, false)
}
