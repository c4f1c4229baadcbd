//! Store benchmark (harness = false): `cargo bench -p fleet-apiserver --bench store`.
//!
//! Prints medians over repeated runs of: write throughput for 1 KiB objects at 1 and 64
//! concurrent writers (SQLite file, WAL, in both sync modes: FULL, the default, and NORMAL), list
//! time for 100,000 objects, watch fan-out delivery latency (p50/p99) with 1,000 and 10,000
//! watchers, the process RSS after storing 1,000,000 objects (then after reopening them; held
//! plain: the padded objects would compress a hundredfold), and what keeping objects compressed
//! costs (`pack`: updates/s and reads/s of 20,000 BundleDeployment-shaped objects, held plain and
//! held packed).
//!
//! Environment: STORE_BENCH_RUNS (default 5), STORE_BENCH_RSS_OBJECTS (default 1000000),
//! STORE_BENCH_SKIP (comma list of: writes,list,watch,rss,pack).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use fleet_apiserver::store::{Obj, Store, StoreConfig, StoreSync};
use serde_json::{Value, json};

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn skipped(what: &str) -> bool {
    std::env::var("STORE_BENCH_SKIP").is_ok_and(|v| v.split(',').any(|s| s.trim() == what))
}

/// A BundleDeployment-like object of about 1 KiB of JSON.
fn object(ns: &str, name: &str) -> Value {
    let mut v = json!({
        "apiVersion": "fleet.cattle.io/v1alpha1",
        "kind": "BundleDeployment",
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": {
                "fleet.cattle.io/bundle-name": "bench",
                "fleet.cattle.io/cluster": ns,
            },
            "uid": "0b8c3cd5-5a59-4ac6-9f0e-6f3b6a1c9a11",
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": {"deploymentID": "s-abcdef0123456789:0123456789abcdef", "options": {}},
        "status": {"ready": true, "nonModified": true},
    });
    let len = serde_json::to_vec(&v).map(|b| b.len()).unwrap_or(0);
    v["spec"]["padding"] = Value::String("x".repeat(1024usize.saturating_sub(len + 14)));
    v
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted.get(i).copied().unwrap_or(0)
}

fn rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// Writes `total` new objects with `writers` concurrent tasks; returns writes per second.
async fn write_burst(store: &Store, writers: usize, total: usize, tag: &str) -> f64 {
    let per = total / writers;
    let start = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..writers {
        let s = store.clone();
        let tag = tag.to_string();
        tasks.push(tokio::spawn(async move {
            for i in 0..per {
                let ns = format!("cluster-{}", (w * per + i) % 1000);
                let name = format!("{tag}-{w}-{i}");
                let key = format!("/fleet.cattle.io/bundledeployments/{ns}/{name}");
                if let Err(e) = s.create(&key, object(&ns, &name)).await {
                    eprintln!("write failed: {e}");
                    return;
                }
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
    (per * writers) as f64 / start.elapsed().as_secs_f64()
}

async fn bench_writes(runs: usize) {
    for sync in [StoreSync::Full, StoreSync::Normal] {
        bench_writes_with(runs, sync).await;
    }
}

async fn bench_writes_with(runs: usize, sync: StoreSync) {
    let sync_name = sync.pragma();
    for (writers, total) in [(1usize, 1_000usize), (64, 20_000)] {
        let mut rates = Vec::new();
        for _ in 0..runs {
            let Ok(dir) = tempfile::tempdir() else { return };
            let cfg = StoreConfig {
                sync,
                ..StoreConfig::file(dir.path().join("s.db"))
            };
            let Ok(store) = Store::open(cfg) else {
                return;
            };
            rates.push(write_burst(&store, writers, total, "w").await);
        }
        println!(
            "writes/s, 1 KiB objects, {writers:>2} concurrent writers, SQLite WAL synchronous={sync_name}: \
             median {:.0} (runs {runs}, {total} writes each)",
            median(rates)
        );
    }
    let mut rates = Vec::new();
    for _ in 0..runs {
        let Ok(store) = Store::open(StoreConfig::in_memory()) else {
            return;
        };
        rates.push(write_burst(&store, 64, 50_000, "m").await);
    }
    println!(
        "writes/s, 1 KiB objects, 64 concurrent writers, in-memory SQLite (no fsync): median {:.0}",
        median(rates)
    );
}

async fn bench_list(runs: usize) {
    let Ok(store) = Store::open(StoreConfig::in_memory()) else {
        return;
    };
    write_burst(&store, 50, 100_000, "l").await;
    let prefix = "/fleet.cattle.io/bundledeployments/";
    let all = |_: &str, _: &Obj| true;
    let mut full = Vec::new();
    let mut paged = Vec::new();
    let mut labelled = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        let n = store
            .list(prefix, None, None, None, &all)
            .map(|p| p.items.len())
            .unwrap_or(0);
        full.push(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(n, 100_000);

        let t = Instant::now();
        let mut count = 0;
        let mut after: Option<Arc<str>> = None;
        let mut rev = None;
        loop {
            let Ok(p) = store.list(prefix, rev, after.as_deref(), Some(500), &all) else {
                break;
            };
            rev = Some(p.rev);
            count += p.items.len();
            after = p.items.last().map(|(k, _)| k.clone());
            if !p.more {
                break;
            }
        }
        paged.push(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(count, 100_000);

        let sel = |_: &str, o: &Obj| {
            o.labels
                .get("fleet.cattle.io/cluster")
                .is_some_and(|c| c == "cluster-7")
        };
        let t = Instant::now();
        let n = store
            .list(prefix, None, None, None, &sel)
            .map(|p| p.items.len())
            .unwrap_or(0);
        labelled.push(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(n, 100);
    }
    println!(
        "list 100,000 objects, one page: median {:.1} ms",
        median(full)
    );
    println!(
        "list 100,000 objects, pages of 500 at one revision: median {:.1} ms",
        median(paged)
    );
    println!(
        "list 100,000 objects with a label selector (100 match): median {:.1} ms",
        median(labelled)
    );
}

/// `watchers` watch; one writer issues `events` writes `gap` apart. Returns (p50, p99) in µs of
/// the delay from issuing a write to each watcher receiving its event.
async fn fan_out(watchers: usize, events: usize, gap: Duration, per_namespace: bool) -> (u64, u64) {
    let Ok(store) = Store::open(StoreConfig::in_memory()) else {
        return (0, 0);
    };
    let prefix = "/fleet.cattle.io/bundledeployments/";
    let base = store.current_rev();
    let issued: Arc<Vec<AtomicU64>> = Arc::new((0..=events).map(|_| AtomicU64::new(0)).collect());
    let epoch = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..watchers {
        let p = if per_namespace {
            format!("{prefix}cluster-{w}/")
        } else {
            prefix.to_string()
        };
        let Ok(mut watch) = store.watch(&p, base) else {
            return (0, 0);
        };
        let issued = issued.clone();
        let expect = if per_namespace {
            events / watchers
        } else {
            events
        };
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::with_capacity(expect);
            while lat.len() < expect {
                let Some(ev) = watch.next().await else { break };
                let now = epoch.elapsed().as_nanos() as u64;
                let idx = usize::try_from(ev.obj.rev - base).unwrap_or(0);
                let t0 = issued.get(idx).map_or(now, |a| a.load(Ordering::Acquire));
                lat.push(now.saturating_sub(t0) / 1_000);
            }
            lat
        }));
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    for i in 1..=events {
        let ns = if per_namespace { i % watchers } else { 0 };
        let name = format!("e-{i}");
        let key = format!("{prefix}cluster-{ns}/{name}");
        if let Some(a) = issued.get(i) {
            a.store(epoch.elapsed().as_nanos() as u64, Ordering::Release);
        }
        if store
            .create(&key, object(&format!("cluster-{ns}"), &name))
            .await
            .is_err()
        {
            break;
        }
        tokio::time::sleep(gap).await;
    }
    let mut all = Vec::new();
    let mut short = 0;
    for t in tasks {
        if let Ok(l) = t.await {
            all.extend(l);
        } else {
            short += 1;
        }
    }
    let expected = if per_namespace {
        events
    } else {
        events * watchers
    };
    if all.len() < expected || short > 0 {
        println!(
            "  (only {} of {expected} deliveries: watchers were cut off)",
            all.len()
        );
    }
    all.sort_unstable();
    (percentile(&all, 0.5), percentile(&all, 0.99))
}

async fn bench_watch(runs: usize) {
    for per_namespace in [false, true] {
        for watchers in [1_000usize, 10_000] {
            let (events, gap) = if per_namespace {
                (watchers * 2, Duration::from_micros(200))
            } else {
                (100, Duration::from_millis(10))
            };
            let mut p50 = Vec::new();
            let mut p99 = Vec::new();
            for _ in 0..runs.min(3) {
                let (a, b) = fan_out(watchers, events, gap, per_namespace).await;
                p50.push(a as f64);
                p99.push(b as f64);
            }
            let what = if per_namespace {
                "each on its own namespace"
            } else {
                "all on one resource (every watcher gets every event)"
            };
            println!(
                "watch fan-out, {watchers:>5} watchers {what}, {events} events {} apart: \
                 delivery p50 {:.2} ms, p99 {:.2} ms (medians of {} runs)",
                humantime(gap),
                median(p50) / 1e3,
                median(p99) / 1e3,
                runs.min(3)
            );
        }
    }
}

fn humantime(d: Duration) -> String {
    if d.as_millis() > 0 {
        format!("{} ms", d.as_millis())
    } else {
        format!("{} µs", d.as_micros())
    }
}

async fn bench_rss(objects: usize) {
    let Ok(dir) = tempfile::tempdir() else { return };
    let path = dir.path().join("rss.db");
    let before = rss_mib();
    {
        let cfg = StoreConfig {
            pack_from: None,
            ..StoreConfig::file(&path)
        };
        let Ok(store) = Store::open(cfg) else {
            return;
        };
        let t = Instant::now();
        let rate = write_burst(&store, 256, objects, "r").await;
        println!(
            "stored {} objects of 1 KiB in {:.1} s ({rate:.0} writes/s at 256 writers)",
            store.len(),
            t.elapsed().as_secs_f64()
        );
        println!(
            "RSS after storing {} objects: {:.0} MiB (process start of this phase: {before:.0} MiB)",
            store.len(),
            rss_mib()
        );
    }
    let t = Instant::now();
    let cfg = StoreConfig {
        pack_from: None,
        ..StoreConfig::file(&path)
    };
    let Ok(store) = Store::open(cfg) else {
        return;
    };
    println!(
        "reopen {} objects from SQLite: {:.1} s; RSS now {:.0} MiB",
        store.len(),
        t.elapsed().as_secs_f64(),
        rss_mib()
    );
}

/// A BundleDeployment as the manager stores it (labels, managedFields, status), about 2.7 KiB,
/// differing from its siblings in names, uids and hashes as a fleet's do.
fn bundle_deployment(i: usize, commit: &str) -> Value {
    let h = |salt: u64| {
        format!(
            "{:016x}",
            (i as u64 ^ salt).wrapping_mul(0x9e37_79b9_7f4a_7c15)
        )
    };
    let cluster = format!("cluster-{}", &h(1)[..12]);
    let bundle = format!("bench-b{}", i % 10);
    let content = format!("s-{}{}{}", h(2), h(3), h(4));
    let id = format!("{content}:{}{}{}{}", h(5), h(6), h(7), h(8));
    let fields = json!({"f:metadata": {"f:labels": {"f:fleet.cattle.io/bundle-name": {},
        "f:fleet.cattle.io/cluster": {}, "f:fleet.cattle.io/commit": {}}},
        "f:spec": {"f:deploymentID": {}, "f:options": {"f:defaultNamespace": {}, "f:helm": {}}}});
    let cond = |t: &str| {
        json!({"type": t, "status": "True",
        "lastUpdateTime": "2026-11-27T06:49:12Z", "lastTransitionTime": "2026-11-27T06:49:12Z"})
    };
    json!({
        "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "BundleDeployment",
        "metadata": {
            "labels": {"fleet.cattle.io/bundle-name": bundle, "fleet.cattle.io/cluster": cluster,
                       "fleet.cattle.io/commit": commit, "fleet.cattle.io/content-name": content},
            "name": bundle,
            "namespace": format!("cluster-fleet-default-{cluster}-{}", &h(9)[..12]),
            "managedFields": [{"manager": "fleetcontroller", "operation": "Update",
                "apiVersion": "fleet.cattle.io/v1alpha1", "time": "2026-11-27T06:49:11Z",
                "fieldsType": "FieldsV1", "fieldsV1": fields}],
            "uid": format!("{}-{}-{}", &h(10)[..8], &h(11)[..4], &h(12)[..12]),
            "creationTimestamp": "2026-11-27T06:49:11Z", "generation": 1,
        },
        "spec": {"deploymentID": id, "stagedDeploymentID": id,
                 "options": {"defaultNamespace": "bench", "helm": {}}},
        "status": {"conditions": [cond("Deployed"), cond("Installed"), cond("Ready")],
                   "appliedDeploymentID": id, "ready": true, "nonModified": true,
                   "display": {"deployed": "True", "state": "Ready"},
                   "resources": [{"kind": "ConfigMap", "apiVersion": "v1", "namespace": "bench",
                                  "name": format!("{bundle}-o0")}]}
    })
}

/// Updates/s (64 writers) and reads/s (`get` and the JSON) of `n` BundleDeployments, in a store
/// that keeps them plain and in one that keeps them packed.
async fn bench_pack(runs: usize) {
    const N: usize = 20_000;
    for (what, pack_from) in [("plain", None), ("packed", Some(1_000))] {
        let (mut updates, mut reads) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            let Ok(store) = Store::open(StoreConfig {
                pack_from,
                ..StoreConfig::in_memory()
            }) else {
                return;
            };
            let key = |i: usize| format!("/fleet.cattle.io/bundledeployments/ns/bd-{i:06}");
            for i in 0..N {
                if store
                    .create(&key(i), bundle_deployment(i, "c1"))
                    .await
                    .is_err()
                {
                    return;
                }
            }
            let deadline = Instant::now() + Duration::from_secs(60);
            while pack_from.is_some() && store.packed_count().0 < N * 9 / 10 {
                if Instant::now() > deadline {
                    eprintln!("pack: objects were not packed within 60 s");
                    return;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let t = Instant::now();
            let mut tasks = Vec::new();
            for w in 0..64 {
                let s = store.clone();
                tasks.push(tokio::spawn(async move {
                    for i in (w..N).step_by(64) {
                        let v = bundle_deployment(i, "c2");
                        let key = format!("/fleet.cattle.io/bundledeployments/ns/bd-{i:06}");
                        if s.update(&key, None, v).await.is_err() {
                            return;
                        }
                    }
                }));
            }
            for t in tasks {
                let _ = t.await;
            }
            updates.push(N as f64 / t.elapsed().as_secs_f64());
            let t = Instant::now();
            let mut bytes = 0;
            for i in 0..N {
                bytes += store.get(&key(i)).map_or(0, |o| o.json().len());
            }
            std::hint::black_box(bytes);
            reads.push(N as f64 / t.elapsed().as_secs_f64());
        }
        println!(
            "pack: {N} BundleDeployments held {what}: updates/s at 64 writers median {:.0}, \
             get + JSON median {:.0}/s",
            median(updates),
            median(reads)
        );
    }
}

fn main() {
    let runs = env_usize("STORE_BENCH_RUNS", 5).max(1);
    let Ok(rt) = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    else {
        eprintln!("cannot start tokio");
        return;
    };
    rt.block_on(async {
        if !skipped("writes") {
            bench_writes(runs).await;
        }
        if !skipped("list") {
            bench_list(runs).await;
        }
        if !skipped("watch") {
            bench_watch(runs).await;
        }
        if !skipped("pack") {
            bench_pack(runs).await;
        }
        if !skipped("rss") {
            bench_rss(env_usize("STORE_BENCH_RSS_OBJECTS", 1_000_000)).await;
        }
    });
}
