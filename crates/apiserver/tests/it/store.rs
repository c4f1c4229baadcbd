//! Behaviour of the revision-log store through its public API: revisions, preconditions,
//! consistent paging, watch resume and fan-out, compaction, restart and crash durability.
#![allow(clippy::map_entry)] // the model code reads clearer as if/else on membership

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use fleet_apiserver::store::{Event, EventKind, Obj, Rev, Store, StoreConfig, StoreError};
use proptest::prelude::*;
use serde_json::{Value, json};

fn mem() -> Store {
    Store::open(StoreConfig::in_memory()).expect("open in-memory store")
}

fn obj(name: &str, data: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": "ns", "labels": {"app": "a"}},
           "data": {"v": data}})
}

fn key(i: usize) -> String {
    format!("/core/configmaps/ns/cm-{i:05}")
}

fn rv_of(o: &Obj) -> String {
    let v: Value = serde_json::from_slice(&o.json()).expect("stored JSON parses");
    v["metadata"]["resourceVersion"]
        .as_str()
        .expect("resourceVersion is a string")
        .to_string()
}

fn data_of(o: &Obj) -> String {
    let v: Value = serde_json::from_slice(&o.json()).expect("stored JSON parses");
    v["data"]["v"].as_str().unwrap_or_default().to_string()
}

fn all(_: &str, _: &Obj) -> bool {
    true
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

async fn next_event(w: &mut fleet_apiserver::store::Watch) -> Event {
    tokio::time::timeout(Duration::from_secs(10), w.next())
        .await
        .expect("event within 10s")
        .expect("watch still open")
}

/// The next `n` events of `w` as (kind, revision, data, previous revision and data).
async fn take(
    w: &mut fleet_apiserver::store::Watch,
    n: usize,
) -> Vec<(EventKind, Rev, String, Option<(Rev, String)>)> {
    let mut got = Vec::new();
    for _ in 0..n {
        let e = next_event(w).await;
        got.push((
            e.kind,
            e.obj.rev,
            data_of(&e.obj),
            e.prev.map(|p| (p.rev, data_of(&p))),
        ));
    }
    got
}

#[tokio::test]
async fn create_get_update_delete_sets_resource_version() {
    let s = mem();
    assert_eq!(s.current_rev(), 0);
    let a = s.create(&key(1), obj("cm-1", "x")).await.unwrap();
    assert_eq!(a.rev, 1);
    assert_eq!(rv_of(&a), "1");
    assert_eq!(a.labels.get("app"), Some("a"));
    let got = s.get(&key(1)).unwrap();
    assert_eq!(got.json(), a.json());
    let b = s.update(&key(1), Some(1), obj("cm-1", "y")).await.unwrap();
    assert_eq!(
        (b.rev, rv_of(&b), data_of(&b)),
        (2, "2".to_string(), "y".to_string())
    );
    let d = s.delete(&key(1), None).await.unwrap();
    assert_eq!(
        (d.rev, rv_of(&d), data_of(&d)),
        (3, "3".to_string(), "y".to_string())
    );
    assert!(s.get(&key(1)).is_none());
    assert_eq!(s.current_rev(), 3);
    // Identical label sets are stored once.
    let c = s.create(&key(2), obj("cm-2", "x")).await.unwrap();
    assert!(Arc::ptr_eq(&c.labels, &b.labels));
    // Compact JSON, serialized once.
    assert!(!std::str::from_utf8(&b.json()).unwrap().contains(": "));
}

#[tokio::test]
async fn unwritten_since_tells_which_resources_were_written_after_a_revision() {
    let s = mem();
    let cms = ["/core/configmaps/"];
    let secrets = ["/core/secrets/"];
    assert!(s.unwritten_since(&cms, 0), "nothing written yet");
    s.create(&key(1), obj("cm-1", "x")).await.unwrap();
    assert!(!s.unwritten_since(&cms, 0));
    assert!(s.unwritten_since(&cms, 1));
    assert!(s.unwritten_since(&secrets, 0), "another resource");
    s.update(&key(1), None, obj("cm-1", "y")).await.unwrap();
    assert!(!s.unwritten_since(&cms, 1), "an update counts");
    assert!(!s.unwritten_since(&["/core/secrets/", "/core/configmaps/"], 1));
    s.delete(&key(1), None).await.unwrap();
    assert!(!s.unwritten_since(&cms, 2), "a deletion counts");
    assert!(s.unwritten_since(&cms, 3));
    // A cluster-scoped key: its resource is the prefix before the name.
    s.create(
        "/core/namespaces/ns",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}}),
    )
    .await
    .unwrap();
    assert!(!s.unwritten_since(&["/core/namespaces/"], 3));
    assert!(s.unwritten_since(&cms, 3));
}

#[tokio::test]
async fn already_exists_not_found_and_conflict() {
    let s = mem();
    s.create(&key(1), obj("cm-1", "x")).await.unwrap();
    assert!(matches!(
        s.create(&key(1), obj("cm-1", "x")).await,
        Err(StoreError::AlreadyExists(k)) if k == key(1)
    ));
    assert!(matches!(
        s.update(&key(2), None, obj("cm-2", "x")).await,
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        s.delete(&key(2), None).await,
        Err(StoreError::NotFound(_))
    ));
    s.update(&key(1), Some(1), obj("cm-1", "y")).await.unwrap();
    match s.update(&key(1), Some(1), obj("cm-1", "z")).await {
        Err(StoreError::Conflict {
            expected: 1,
            current: 2,
            ..
        }) => {}
        other => panic!("expected conflict, got {other:?}"),
    }
    assert!(matches!(
        s.delete(&key(1), Some(1)).await,
        Err(StoreError::Conflict { .. })
    ));
    // Failed writes consume no revision.
    assert_eq!(s.current_rev(), 2);
    // A non-object value is refused with a clear error, not a panic.
    assert!(
        matches!(s.create(&key(3), json!([1, 2])).await, Err(StoreError::Internal(m)) if m.contains("not a JSON object"))
    );
    // Recreate after delete works and gets a fresh revision.
    s.delete(&key(1), Some(2)).await.unwrap();
    let again = s.create(&key(1), obj("cm-1", "w")).await.unwrap();
    assert_eq!(again.rev, 4);
}

#[test]
fn exactly_one_winner_among_concurrent_updaters() {
    rt().block_on(async {
        let s = mem();
        for round in 0..20 {
            let k = key(round);
            let base = s.create(&k, obj("cm", "0")).await.unwrap();
            let mut tasks = Vec::new();
            for i in 0..32 {
                let s = s.clone();
                let k = k.clone();
                tasks.push(tokio::spawn(async move {
                    s.update(&k, Some(base.rev), obj("cm", &i.to_string()))
                        .await
                }));
            }
            let mut wins = 0;
            let mut conflicts = 0;
            for t in tasks {
                match t.await.unwrap() {
                    Ok(_) => wins += 1,
                    Err(StoreError::Conflict { .. }) => conflicts += 1,
                    Err(e) => panic!("unexpected error {e}"),
                }
            }
            assert_eq!((wins, conflicts), (1, 31), "round {round}");
        }
    });
}

#[test]
fn concurrent_writers_get_distinct_consecutive_revisions() {
    rt().block_on(async {
        let s = mem();
        let mut w = s.watch("/", 0).unwrap();
        let mut tasks = Vec::new();
        for t in 0..64 {
            let s = s.clone();
            tasks.push(tokio::spawn(async move {
                let mut revs = Vec::new();
                for i in 0..50 {
                    let o = s.create(&key(t * 1000 + i), obj("cm", "x")).await.unwrap();
                    assert_eq!(rv_of(&o), o.rev.to_string());
                    revs.push(o.rev);
                }
                revs
            }));
        }
        let mut all_revs = Vec::new();
        for t in tasks {
            let revs = t.await.unwrap();
            assert!(
                revs.windows(2).all(|w| w[0] < w[1]),
                "one writer's revisions increase"
            );
            all_revs.extend(revs);
        }
        all_revs.sort();
        assert_eq!(all_revs, (1..=3200).collect::<Vec<Rev>>());
        // The watcher saw every revision once, in order.
        for want in 1..=3200 {
            assert_eq!(next_event(&mut w).await.obj.rev, want);
        }
    });
}

#[tokio::test]
async fn list_pages_prefix_filter_and_limit() {
    let s = mem();
    for i in 0..10 {
        s.create(&key(i), obj("cm", "x")).await.unwrap();
    }
    s.create("/core/configmaps/other/a", obj("a", "x"))
        .await
        .unwrap();
    s.create("/core/configmapsx/ns/a", obj("a", "x"))
        .await
        .unwrap();
    s.create("/core/secrets/ns/a", obj("a", "x")).await.unwrap();
    let page = s
        .list("/core/configmaps/ns/", None, None, None, &all)
        .unwrap();
    assert_eq!(page.items.len(), 10);
    assert!(!page.more);
    assert_eq!(page.rev, 13);
    let page = s.list("/core/configmaps/", None, None, None, &all).unwrap();
    assert_eq!(page.items.len(), 11);
    // Paging.
    let mut seen = Vec::new();
    let mut after: Option<String> = None;
    let mut rev = None;
    loop {
        let p = s
            .list("/core/configmaps/ns/", rev, after.as_deref(), Some(3), &all)
            .unwrap();
        rev = Some(p.rev);
        seen.extend(p.items.iter().map(|(k, _)| k.to_string()));
        if !p.more {
            break;
        }
        after = p.items.last().map(|(k, _)| k.to_string());
    }
    assert_eq!(seen, (0..10).map(key).collect::<Vec<_>>());
    // Filter: only even names, two per page.
    let even = |k: &str, _: &Obj| k.ends_with('0') || k.ends_with('2') || k.ends_with('4');
    let p = s
        .list("/core/configmaps/ns/", None, None, Some(2), &even)
        .unwrap();
    assert_eq!(p.items.len(), 2);
    assert!(p.more);
    // Label filter sees parsed labels.
    let lab = |_: &str, o: &Obj| o.labels.get("app").is_some_and(|v| v == "a");
    assert_eq!(s.list("/", None, None, None, &lab).unwrap().items.len(), 13);
    // Future revision.
    assert!(matches!(
        s.list("/", Some(1000), None, None, &all),
        Err(StoreError::FutureRevision(1000))
    ));
}

/// Pages of one list all come from the same revision while writers change the same keys.
#[test]
fn paging_at_fixed_revision_is_consistent_under_writes() {
    rt().block_on(async {
        for history in [10_000usize, 0] {
            let s = Store::open(StoreConfig {
                path: None,
                history,
                ..StoreConfig::in_memory()
            })
            .unwrap();
            let mut w = s.watch("/", 0).unwrap();
            for i in 0..500 {
                s.create(&key(i), obj("cm", "v0")).await.unwrap();
            }
            let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let writer = {
                let s = s.clone();
                let stop = stop.clone();
                tokio::spawn(async move {
                    let mut n = 0usize;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) && n < 3000 {
                        let k = key(n % 500);
                        if n.is_multiple_of(7) {
                            let _ = s.delete(&k, None).await;
                            let _ = s.create(&k, obj("cm", "again")).await;
                        } else {
                            let _ = s.update(&k, None, obj("cm", &format!("v{n}"))).await;
                        }
                        n += 1;
                    }
                    n
                })
            };
            tokio::time::sleep(Duration::from_millis(20)).await;
            let first = s
                .list("/core/configmaps/", None, None, Some(37), &all)
                .unwrap();
            let rev = first.rev;
            let mut items: Vec<(Arc<str>, Obj)> = first.items;
            let mut more = first.more;
            while more {
                tokio::time::sleep(Duration::from_millis(1)).await;
                let after = items.last().map(|(k, _)| k.to_string());
                let p = s.list(
                    "/core/configmaps/",
                    Some(rev),
                    after.as_deref(),
                    Some(37),
                    &all,
                );
                let p = p.unwrap();
                assert_eq!(p.rev, rev);
                more = p.more;
                items.extend(p.items);
            }
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            let writes = writer.await.unwrap();
            assert!(writes > 0);
            // The state at `rev`, rebuilt from the event stream, is exactly what the pages held.
            let mut model: BTreeMap<String, Rev> = BTreeMap::new();
            for r in 1..=rev {
                let ev = next_event(&mut w).await;
                assert_eq!(ev.obj.rev, r);
                match ev.kind {
                    EventKind::Deleted => model.remove(&*ev.key),
                    _ => model.insert(ev.key.to_string(), ev.obj.rev),
                };
            }
            let listed: BTreeMap<String, Rev> =
                items.iter().map(|(k, o)| (k.to_string(), o.rev)).collect();
            assert_eq!(
                listed.len(),
                items.len(),
                "no key twice (history {history})"
            );
            assert_eq!(
                listed, model,
                "pages match the state at {rev} (history {history})"
            );
            assert!(items.windows(2).all(|p| p[0].0 < p[1].0), "key order");
        }
    });
}

/// A list at a past revision reconstructs exactly the state at that revision.
#[tokio::test]
async fn list_at_past_revision_matches_history() {
    let s = mem();
    let mut states: Vec<BTreeMap<String, String>> = vec![BTreeMap::new()];
    let mut model = BTreeMap::new();
    for n in 0..300usize {
        let k = key(n * 7 % 40);
        if model.contains_key(&k) && n % 3 == 0 {
            s.delete(&k, None).await.unwrap();
            model.remove(&k);
        } else if model.contains_key(&k) {
            s.update(&k, None, obj("cm", &n.to_string())).await.unwrap();
            model.insert(k, n.to_string());
        } else {
            s.create(&k, obj("cm", &n.to_string())).await.unwrap();
            model.insert(k, n.to_string());
        }
        states.push(model.clone());
    }
    for (rev, want) in states.iter().enumerate() {
        let p = s
            .list("/core/", Some(rev as Rev), None, None, &all)
            .unwrap();
        let got: BTreeMap<String, String> = p
            .items
            .iter()
            .map(|(k, o)| (k.to_string(), data_of(o)))
            .collect();
        assert_eq!(&got, want, "state at revision {rev}");
    }
}

/// `Watch::progress` (what bookmarks carry) reaches the store's newest revision only once every
/// event of the watch's prefix up to it was handed out.
#[tokio::test]
async fn watch_progress_claims_only_what_was_handed_out() {
    let s = Store::open(StoreConfig::in_memory()).unwrap();
    let key = |i: usize| format!("/core/configmaps/ns/c{i:02}");
    s.create(&key(0), obj("cm", "x")).await.unwrap();
    let mut w = s.watch("/core/configmaps/", s.current_rev()).unwrap();
    let from = w.last_rev();
    // Writes elsewhere only: the watch has nothing to hand out, so it is at the newest revision.
    for i in 0..5 {
        s.create(&format!("/core/secrets/ns/s{i}"), obj("s", "x"))
            .await
            .unwrap();
    }
    assert_eq!(w.progress(), s.current_rev());
    // An event of its own waits: progress stays before it until it was returned.
    let mine = s.create(&key(1), obj("cm", "y")).await.unwrap();
    s.create("/core/secrets/ns/s9", obj("s", "x"))
        .await
        .unwrap();
    let before = w.progress();
    assert!(
        before >= from && before < mine.rev,
        "{before} before {}",
        mine.rev
    );
    let ev = next_event(&mut w).await;
    assert_eq!(ev.obj.rev, mine.rev);
    assert_eq!(w.progress(), s.current_rev());
}

#[tokio::test]
async fn watch_resume_replays_missing_events_then_goes_live() {
    let s = mem();
    for i in 0..10 {
        s.create(&key(i), obj("cm", "x")).await.unwrap();
    }
    s.update(&key(3), None, obj("cm", "y")).await.unwrap();
    s.delete(&key(4), None).await.unwrap();
    s.create("/core/secrets/ns/s", obj("s", "x")).await.unwrap();
    let mut w = s.watch("/core/configmaps/", 5).unwrap();
    for want in 6..=12 {
        let ev = next_event(&mut w).await;
        assert_eq!(ev.obj.rev, want);
        match want {
            11 => {
                assert!(matches!(ev.kind, EventKind::Modified));
                assert_eq!(ev.prev.as_ref().map(|p| p.rev), Some(4));
            }
            12 => {
                assert!(matches!(ev.kind, EventKind::Deleted));
                assert_eq!(rv_of(&ev.obj), "12");
                assert_eq!(ev.prev.as_ref().map(|p| p.rev), Some(5));
            }
            _ => assert!(matches!(ev.kind, EventKind::Added)),
        }
    }
    // Rev 13 is a secret: filtered out. Live events continue with no gap or duplicate.
    let live = s.create(&key(20), obj("cm", "live")).await.unwrap();
    assert_eq!(live.rev, 14);
    let ev = next_event(&mut w).await;
    assert_eq!(ev.obj.rev, 14);
    assert_eq!(w.last_rev(), 14);
    // A namespace-scoped watch only sees its namespace.
    let mut nsw = s.watch("/core/configmaps/other/", s.current_rev()).unwrap();
    s.create(&key(21), obj("cm", "x")).await.unwrap();
    s.create("/core/configmaps/other/o", obj("o", "x"))
        .await
        .unwrap();
    assert_eq!(&*next_event(&mut nsw).await.key, "/core/configmaps/other/o");
}

/// Resuming while writers run never loses or duplicates an event.
#[test]
fn watch_started_during_writes_has_no_gaps_or_duplicates() {
    rt().block_on(async {
        let s = mem();
        let writer = {
            let s = s.clone();
            tokio::spawn(async move {
                for i in 0..3000 {
                    s.create(&key(i), obj("cm", "x")).await.unwrap();
                }
            })
        };
        let mut watches = Vec::new();
        while watches.len() < 20 {
            let from = s.current_rev().saturating_sub(5).max(0);
            watches.push((from, s.watch("/core/configmaps/", from).unwrap()));
            tokio::time::sleep(Duration::from_micros(300)).await;
        }
        writer.await.unwrap();
        for (from, mut w) in watches {
            for want in from + 1..=3000 {
                assert_eq!(next_event(&mut w).await.obj.rev, want, "watch from {from}");
            }
        }
    });
}

#[tokio::test]
async fn compacted_for_too_old_revisions() {
    let s = Store::open(StoreConfig {
        path: None,
        history: 5,
        ..StoreConfig::in_memory()
    })
    .unwrap();
    for i in 0..20 {
        s.create(&key(i), obj("cm", "x")).await.unwrap();
    }
    assert_eq!(s.oldest_rev(), 15);
    assert!(s.watch("/", 15).is_ok());
    match s.watch("/", 14) {
        Err(StoreError::Compacted {
            requested: 14,
            oldest: 15,
        }) => {}
        other => panic!("expected Compacted, got {:?}", other.map(|_| ())),
    }
    assert!(matches!(
        s.list("/", Some(3), None, None, &all),
        Err(StoreError::Compacted { .. })
    ));
    assert_eq!(
        s.list("/", Some(16), None, None, &all).unwrap().items.len(),
        16
    );
}

#[tokio::test]
async fn slow_watcher_is_dropped_while_writers_proceed() {
    let s = mem();
    let mut slow = s.watch("/core/configmaps/", 0).unwrap();
    let mut fast = s.watch("/core/configmaps/", 0).unwrap();
    let n = fleet_apiserver::store::WATCH_QUEUE + 100;
    let writer = {
        let s = s.clone();
        tokio::spawn(async move {
            for i in 0..n {
                s.create(&key(i), obj("cm", "x")).await.unwrap();
            }
        })
    };
    let mut got = 0;
    while got < n {
        next_event(&mut fast).await;
        got += 1;
    }
    tokio::time::timeout(Duration::from_secs(30), writer)
        .await
        .expect("writers never block")
        .unwrap();
    // The slow one never read: it was cut off, and says so with None (possibly after nothing).
    let mut delivered = 0;
    while tokio::time::timeout(Duration::from_secs(5), slow.next())
        .await
        .unwrap()
        .is_some()
    {
        delivered += 1;
        assert!(delivered <= n, "a dropped watcher must end");
    }
    assert!(
        delivered < n,
        "the slow watcher was dropped, not served everything"
    );
}

#[tokio::test]
async fn close_ends_watches_and_refuses_writes() {
    let s = mem();
    let mut w = s.watch("/", 0).unwrap();
    s.create(&key(1), obj("cm", "x")).await.unwrap();
    s.close();
    assert_eq!(next_event(&mut w).await.obj.rev, 1);
    assert!(
        tokio::time::timeout(Duration::from_secs(5), w.next())
            .await
            .unwrap()
            .is_none()
    );
    assert!(matches!(
        s.create(&key(2), obj("cm", "x")).await,
        Err(StoreError::Internal(_))
    ));
    assert!(s.get(&key(1)).is_some(), "reads still work after close");
}

#[tokio::test]
async fn file_backed_restart_keeps_data_and_continues_revisions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/store.db");
    {
        let s = Store::open(StoreConfig::file(&path)).unwrap();
        for i in 0..10 {
            s.create(&key(i), obj("cm", &i.to_string())).await.unwrap();
        }
        s.update(&key(2), Some(3), obj("cm", "updated"))
            .await
            .unwrap();
        s.delete(&key(9), None).await.unwrap(); // rev 12, the newest row is a tombstone
        assert_eq!(s.current_rev(), 12);
    }
    {
        let s = Store::open(StoreConfig::file(&path)).unwrap();
        assert_eq!(s.current_rev(), 12);
        assert_eq!(s.len(), 9);
        let o = s.get(&key(2)).unwrap();
        assert_eq!(
            (o.rev, data_of(&o), rv_of(&o)),
            (11, "updated".into(), "11".into())
        );
        assert_eq!(o.labels.get("app"), Some("a"));
        assert!(s.get(&key(9)).is_none());
        // Compaction removes the tombstone (the newest row); its revision is still never reused.
        s.compact(12).await.unwrap();
        assert_eq!(s.compact_rev(), 12);
    }
    let s = Store::open(StoreConfig::file(&path)).unwrap();
    assert_eq!(s.current_rev(), 12);
    assert_eq!(s.compact_rev(), 12);
    let o = s.create(&key(9), obj("cm", "again")).await.unwrap();
    assert_eq!(o.rev, 13);
    // Watches resume from the revision the store restarted at.
    assert_eq!(s.oldest_rev(), 12);
    let p = s.list("/core/configmaps/", None, None, None, &all).unwrap();
    assert_eq!(p.items.len(), 10);
    assert_eq!(p.rev, 13);
}

/// A watcher of a restarted store resumes from the revision it last saw: the history comes
/// back from the log (kinds, values and previous values as first published), so clients do not
/// all get 410 and relist after a restart.
#[tokio::test]
async fn watch_history_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    {
        let s = Store::open(StoreConfig::file(&path)).unwrap();
        for i in 0..10 {
            s.create(&key(i), obj("cm", &i.to_string())).await.unwrap();
        }
        s.update(&key(2), Some(3), obj("cm", "updated"))
            .await
            .unwrap();
        s.delete(&key(9), None).await.unwrap();
    }
    let s = Store::open(StoreConfig::file(&path)).unwrap();
    assert_eq!(
        s.oldest_rev(),
        0,
        "the whole log is within the history window"
    );
    let mut w = s.watch("/core/configmaps/", 8).unwrap();
    assert_eq!(
        take(&mut w, 4).await,
        vec![
            (EventKind::Added, 9, "8".to_string(), None),
            (EventKind::Added, 10, "9".to_string(), None),
            (
                EventKind::Modified,
                11,
                "updated".to_string(),
                Some((3, "2".to_string()))
            ),
            (
                EventKind::Deleted,
                12,
                "9".to_string(),
                Some((10, "9".to_string()))
            ),
        ]
    );
    // Then live events, with nothing repeated.
    s.create(&key(20), obj("cm", "live")).await.unwrap();
    let e = next_event(&mut w).await;
    assert_eq!((e.kind, e.obj.rev), (EventKind::Added, 13));

    // A smaller window keeps only the newest revisions.
    drop(w);
    drop(s);
    let s = Store::open(StoreConfig {
        path: Some(path),
        history: 2,
        ..StoreConfig::in_memory()
    })
    .unwrap();
    assert_eq!(s.oldest_rev(), 11);
    assert!(matches!(
        s.watch("/core/configmaps/", 10),
        Err(StoreError::Compacted {
            requested: 10,
            oldest: 11
        })
    ));
    // What the window dropped, the log still replays to a watcher of the namespace.
    let mut w = s.watch("/core/configmaps/ns/", 10).unwrap();
    for want in 11..=13 {
        assert_eq!(next_event(&mut w).await.obj.rev, want);
    }
}

fn key_in(ns: &str, name: &str) -> String {
    format!("/core/configmaps/{ns}/{name}")
}

/// In file mode a watcher resumes from a revision the in-memory history has dropped: the log
/// replays its prefix's events (with their previous values) until compaction passes it, and up
/// to a history's worth of them; the history is the whole store's, so on a busy store a watcher
/// of a quiet namespace would otherwise get 410 and relist after a few seconds' delay.
#[tokio::test]
async fn file_backed_watch_resumes_from_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(StoreConfig {
        path: Some(dir.path().join("store.db")),
        history: 4,
        ..StoreConfig::in_memory()
    })
    .unwrap();
    for i in 0..3 {
        s.create(&key_in("a", &format!("a{i}")), obj("cm", "1"))
            .await
            .unwrap();
    }
    let busy = |from: usize, n: usize| {
        let s = s.clone();
        async move {
            for i in from..from + n {
                s.create(&key_in("b", &format!("b{i}")), obj("cm", "x"))
                    .await
                    .unwrap();
            }
        }
    };
    busy(0, 20).await;
    assert_eq!(
        s.update(&key_in("a", "a1"), None, obj("cm", "2"))
            .await
            .unwrap()
            .rev,
        24
    );
    s.delete(&key_in("a", "a2"), None).await.unwrap(); // 25
    busy(20, 10).await; // up to 35: the history holds 32..=35

    let mut w = s.watch("/core/configmaps/a/", 2).unwrap();
    // a2 created, a1 updated, a2 deleted.
    assert_eq!(
        take(&mut w, 3).await,
        vec![
            (EventKind::Added, 3, "1".into(), None),
            (EventKind::Modified, 24, "2".into(), Some((2, "1".into()))),
            (EventKind::Deleted, 25, "1".into(), Some((3, "1".into()))),
        ]
    );
    // A request handler's watch reads the log on a blocking thread: the same events, and
    // without previous values when the watcher said it needs none.
    let mut bare = s
        .watch_nonblocking("/core/configmaps/a/", 2, false)
        .await
        .unwrap();
    assert_eq!(
        take(&mut bare, 3).await,
        vec![
            (EventKind::Added, 3, "1".into(), None),
            (EventKind::Modified, 24, "2".into(), None),
            (EventKind::Deleted, 25, "1".into(), None),
        ]
    );
    let mut full = s
        .watch_nonblocking("/core/configmaps/a/", 23, true)
        .await
        .unwrap();
    assert_eq!(
        take(&mut full, 2).await,
        vec![
            (EventKind::Modified, 24, "2".into(), Some((2, "1".into()))),
            (EventKind::Deleted, 25, "1".into(), Some((3, "1".into()))),
        ]
    );
    // Then live events, nothing repeated.
    s.create(&key_in("a", "a3"), obj("cm", "3")).await.unwrap();
    let e = next_event(&mut w).await;
    assert_eq!((e.kind, e.obj.rev), (EventKind::Added, 36));

    // A watcher of the whole resource that far behind relists (410): its catching up would
    // cost more than a list.
    assert!(matches!(
        s.watch("/core/configmaps/", 30),
        Err(StoreError::Compacted { requested: 30, .. })
    ));
    // So does one of a namespace with more than a history's worth (4) of events to catch up on
    // in the log: c0..c5 are 37..=42, then the history holds 43..=46.
    for i in 0..6 {
        s.create(&key_in("c", &format!("c{i}")), obj("cm", "1"))
            .await
            .unwrap();
    }
    busy(30, 4).await;
    assert!(matches!(
        s.watch("/core/configmaps/c/", 36),
        Err(StoreError::Compacted { requested: 36, .. })
    ));
    assert!(
        s.watch("/core/configmaps/c/", 38).is_ok(),
        "four to catch up on"
    );

    // Compaction ends it: from before the mark 410, from the mark on the log still serves.
    s.compact(24).await.unwrap();
    assert!(matches!(
        s.watch("/core/configmaps/a/", 2),
        Err(StoreError::Compacted {
            requested: 2,
            oldest: 24
        })
    ));
    let mut w = s.watch("/core/configmaps/a/", 24).unwrap();
    let e = next_event(&mut w).await;
    assert_eq!((e.kind, e.obj.rev), (EventKind::Deleted, 25));
    let e = next_event(&mut w).await;
    assert_eq!((e.kind, e.obj.rev), (EventKind::Added, 36));
}

/// A watcher of a namespace is replayed from the log at most as many events as the namespace
/// holds objects (16 at least): further behind, the relist costs less than the replay. At
/// 10,000 agents each renewed watch replaying both rounds' status writes of its ten
/// BundleDeployments cost the manager more CPU than the relists it spared.
#[tokio::test]
async fn a_replay_from_the_log_costs_no_more_than_a_relist() {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(StoreConfig {
        path: Some(dir.path().join("store.db")),
        history: 40,
        ..StoreConfig::in_memory()
    })
    .unwrap();
    let one = key_in("one", "o");
    let from = s.create(&one, obj("cm", "0")).await.unwrap().rev;
    for i in 1..=20 {
        s.update(&one, None, obj("cm", &i.to_string()))
            .await
            .unwrap();
    }
    for i in 0..40 {
        s.create(&key_in("b", &format!("b{i}")), obj("cm", "x"))
            .await
            .unwrap();
    }
    // Twenty changes of one object: 410, the relist sends one.
    assert!(matches!(
        s.watch_nonblocking("/core/configmaps/one/", from, false)
            .await,
        Err(StoreError::Compacted { .. })
    ));
    // The last sixteen: replayed.
    let mut w = s
        .watch_nonblocking("/core/configmaps/one/", from + 4, false)
        .await
        .unwrap();
    let got = take(&mut w, 16).await;
    assert_eq!(got.first().map(|e| e.1), Some(from + 5));
    assert_eq!(got.last().map(|e| e.1), Some(from + 20));
}

/// In file mode, a list at a past revision is served from the SQLite log once history and
/// snapshots no longer cover it, and answers Compacted after compaction.
#[tokio::test]
async fn file_backed_list_at_old_revision_reads_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let s = Store::open(StoreConfig {
        path: Some(path),
        history: 3,
        ..StoreConfig::in_memory()
    })
    .unwrap();
    let mut states = vec![BTreeMap::new()];
    let mut model = BTreeMap::new();
    for n in 0..120usize {
        let k = key(n * 5 % 17);
        if model.contains_key(&k) && n % 4 == 0 {
            s.delete(&k, None).await.unwrap();
            model.remove(&k);
        } else if model.contains_key(&k) {
            s.update(&k, None, obj("cm", &n.to_string())).await.unwrap();
            model.insert(k, n.to_string());
        } else {
            s.create(&k, obj("cm", &n.to_string())).await.unwrap();
            model.insert(k, n.to_string());
        }
        states.push(model.clone());
    }
    let check = |from: usize| {
        for (rev, want) in states.iter().enumerate().skip(from) {
            // Page through in pages of 4 at that revision.
            let mut got = BTreeMap::new();
            let mut after: Option<String> = None;
            loop {
                let p = s
                    .list("/core/", Some(rev as Rev), after.as_deref(), Some(4), &all)
                    .unwrap();
                assert_eq!(p.rev, rev as Rev);
                for (k, o) in &p.items {
                    assert!(o.rev <= rev as Rev);
                    got.insert(k.to_string(), data_of(o));
                }
                if !p.more {
                    break;
                }
                after = p.items.last().map(|(k, _)| k.to_string());
            }
            assert_eq!(&got, want, "state at revision {rev}");
        }
    };
    check(0);
    s.compact(60).await.unwrap();
    check(60);
    assert!(matches!(
        s.list("/core/", Some(59), None, None, &all),
        Err(StoreError::Compacted {
            requested: 59,
            oldest: 60
        })
    ));
    // Live keys all still load after compaction.
    drop(s);
    let dir_path = dir.path().join("store.db");
    let s = Store::open(StoreConfig::file(dir_path)).unwrap();
    let live: BTreeMap<String, String> = s
        .list("/core/", None, None, None, &all)
        .unwrap()
        .items
        .iter()
        .map(|(k, o)| (k.to_string(), data_of(o)))
        .collect();
    assert_eq!(&live, states.last().unwrap());
}

/// Acknowledged writes survive SIGKILL: a child process writes and reports each ack; the parent
/// kills it mid-stream and checks every acknowledged write is there after reopening.
#[test]
fn acknowledged_writes_survive_sigkill() {
    use std::io::{BufRead, BufReader};
    if std::env::var_os("FLEET_STORE_CRASH_CHILD").is_some() {
        return; // the child runs `crash_child` instead
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let exe = std::env::current_exe().unwrap();
    let mut child = std::process::Command::new(exe)
        .args([
            "--exact",
            "store::crash_child",
            "--nocapture",
            "--test-threads=1",
            "--include-ignored",
        ])
        .env("FLEET_STORE_CRASH_CHILD", &path)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let mut acked = Vec::new();
    for line in BufReader::new(out).lines() {
        let line = line.unwrap();
        if let Some(rest) = line.strip_prefix("acked ") {
            let mut parts = rest.split(' ');
            let k = parts.next().unwrap().to_string();
            let rev: Rev = parts.next().unwrap().parse().unwrap();
            acked.push((k, rev));
            if acked.len() == 2000 {
                child.kill().unwrap(); // SIGKILL
                break;
            }
        }
    }
    let _ = child.wait();
    assert_eq!(
        acked.len(),
        2000,
        "child acknowledged writes before being killed"
    );
    let s = Store::open(StoreConfig::file(&path)).unwrap();
    for (k, rev) in &acked {
        let o = s.get(k).unwrap_or_else(|| panic!("acknowledged {k} lost"));
        assert_eq!(o.rev, *rev);
    }
    assert!(s.current_rev() >= acked.iter().map(|a| a.1).max().unwrap());
}

#[test]
#[ignore = "run as a child process by acknowledged_writes_survive_sigkill"]
fn crash_child() {
    use std::io::Write;
    let Some(path) = std::env::var_os("FLEET_STORE_CRASH_CHILD") else {
        return;
    };
    rt().block_on(async {
        let s = Store::open(StoreConfig::file(std::path::PathBuf::from(path))).unwrap();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        for t in 0..16 {
            let s = s.clone();
            let tx = tx.clone();
            tokio::spawn(async move {
                for i in 0.. {
                    let k = format!("/core/configmaps/ns/t{t}-{i}");
                    let o = s.create(&k, obj("cm", "x")).await.unwrap();
                    if tx.send((k, o.rev)).is_err() {
                        return;
                    }
                }
            });
        }
        let mut stdout = std::io::stdout();
        while let Some((k, rev)) = rx.recv().await {
            writeln!(stdout, "acked {k} {rev}").unwrap();
            stdout.flush().unwrap();
        }
    });
}

#[derive(Clone, Debug)]
enum ModelOp {
    Create(usize, u8),
    Update(usize, Option<i8>, u8),
    Delete(usize, Option<i8>),
}

fn op_strategy() -> impl Strategy<Value = ModelOp> {
    prop_oneof![
        (0..8usize, any::<u8>()).prop_map(|(k, v)| ModelOp::Create(k, v)),
        (0..8usize, proptest::option::of(-2..2i8), any::<u8>())
            .prop_map(|(k, e, v)| ModelOp::Update(k, e, v)),
        (0..8usize, proptest::option::of(-2..2i8)).prop_map(|(k, e)| ModelOp::Delete(k, e)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    /// Against a model: results, errors, revisions (+1 per successful write, equal to the
    /// resourceVersion), get, list, and the watch stream all agree.
    #[test]
    fn store_matches_model(ops in proptest::collection::vec(op_strategy(), 1..60)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let s = mem();
            let mut w = s.watch("/", 0).unwrap();
            let mut model: BTreeMap<String, (Rev, u8)> = BTreeMap::new();
            let mut rev: Rev = 0;
            for op in ops {
                match op {
                    ModelOp::Create(k, v) => {
                        let r = s.create(&key(k), obj("cm", &v.to_string())).await;
                        if let std::collections::btree_map::Entry::Vacant(e) = model.entry(key(k)) {
                            let o = r.unwrap();
                            rev += 1;
                            prop_assert_eq!(o.rev, rev);
                            prop_assert_eq!(rv_of(&o), rev.to_string());
                            e.insert((rev, v));
                        } else {
                            prop_assert!(matches!(r, Err(StoreError::AlreadyExists(_))));
                        }
                    }
                    ModelOp::Update(k, e, v) => {
                        let cur = model.get(&key(k)).map(|c| c.0);
                        let expected = e.map(|d| cur.unwrap_or(1) + Rev::from(d.signum()));
                        let r = s.update(&key(k), expected, obj("cm", &v.to_string())).await;
                        match (cur, expected) {
                            (None, _) => prop_assert!(matches!(r, Err(StoreError::NotFound(_)))),
                            (Some(c), Some(x)) if x != c => prop_assert!(matches!(r, Err(StoreError::Conflict { .. })), "expected conflict"),
                            _ => {
                                let o = r.unwrap();
                                rev += 1;
                                prop_assert_eq!(o.rev, rev);
                                prop_assert_eq!(rv_of(&o), rev.to_string());
                                model.insert(key(k), (rev, v));
                            }
                        }
                    }
                    ModelOp::Delete(k, e) => {
                        let cur = model.get(&key(k)).map(|c| c.0);
                        let expected = e.map(|d| cur.unwrap_or(1) + Rev::from(d.signum()));
                        let r = s.delete(&key(k), expected).await;
                        match (cur, expected) {
                            (None, _) => prop_assert!(matches!(r, Err(StoreError::NotFound(_)))),
                            (Some(c), Some(x)) if x != c => prop_assert!(matches!(r, Err(StoreError::Conflict { .. })), "expected conflict"),
                            _ => {
                                let o = r.unwrap();
                                rev += 1;
                                prop_assert_eq!(o.rev, rev);
                                model.remove(&key(k));
                            }
                        }
                    }
                }
                prop_assert_eq!(s.current_rev(), rev);
            }
            for k in 0..8 {
                let got = s.get(&key(k)).map(|o| (o.rev, data_of(&o)));
                let want = model.get(&key(k)).map(|(r, v)| (*r, v.to_string()));
                prop_assert_eq!(got, want);
            }
            let listed: Vec<(String, Rev)> = s.list("/core/", None, None, None, &all).unwrap()
                .items.iter().map(|(k, o)| (k.to_string(), o.rev)).collect();
            let want: Vec<(String, Rev)> = model.iter().map(|(k, (r, _))| (k.clone(), *r)).collect();
            prop_assert_eq!(listed, want);
            for want in 1..=rev {
                prop_assert_eq!(next_event(&mut w).await.obj.rev, want);
            }
            Ok(())
        })?;
    }
}
