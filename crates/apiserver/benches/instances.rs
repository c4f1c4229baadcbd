//! What one more in-memory API server costs: `fleet bench scale` runs one per simulated cluster
//! in a single process, so at 10,000 clusters every KiB of an idle instance is 10 MiB.
//!
//! Builds N servers (`simulate_workloads`, as the scale bench does), each with its router, and
//! waits for their background work (default ServiceAccounts, RBAC bootstrap) to settle; then
//! prints the growth of the live heap (counted by this binary's allocator, jemalloc as in the
//! `fleet` binary) and of RSS per instance, and how long one took to start.
//!
//! Run: `cargo bench -p fleet-apiserver --bench instances [-- N]` (default 1000).

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::Request;
use fleet_apiserver::{ApiServer, ApiServerConfig};
use http_body_util::BodyExt;
use tower::ServiceExt;

/// jemalloc, counting the bytes currently allocated (the heap the servers hold, without the
/// allocator's own slack that RSS also shows).
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);
static JE: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as isize, Ordering::Relaxed);
        unsafe { JE.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as isize, Ordering::Relaxed);
        unsafe { JE.alloc_zeroed(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as isize, Ordering::Relaxed);
        unsafe { JE.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        LIVE.fetch_add(new as isize - l.size() as isize, Ordering::Relaxed);
        unsafe { JE.realloc(p, l, new) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// `VmRSS` of this process in bytes.
fn rss() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .map_or(0.0, |kib| kib * 1024.0)
}

fn live() -> f64 {
    LIVE.load(Ordering::Relaxed) as f64
}

const MIB: f64 = 1024.0 * 1024.0;

/// Starts one server as `fleet bench scale` does and asks it for a namespace list, so its
/// router has served a request.
async fn start() -> (ApiServer, axum::Router) {
    let srv = ApiServer::new(ApiServerConfig {
        simulate_workloads: true,
        ..ApiServerConfig::in_memory()
    })
    .await
    .expect("server");
    let router = srv.router();
    let resp = router
        .clone()
        .oneshot(
            Request::get("/api/v1/namespaces")
                .body(Body::empty())
                .expect("request"),
        )
        .await
        .expect("infallible");
    assert_eq!(resp.status(), 200);
    let _ = resp.into_body().collect().await;
    (srv, router)
}

fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(1000);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        // One server first, so what every process pays once (tables built on first use, the
        // runtime's threads) is not counted per instance.
        let first = start().await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let (rss0, live0) = (rss(), live());
        let t = Instant::now();
        let mut servers = Vec::with_capacity(n);
        for _ in 0..n {
            servers.push(start().await);
        }
        let took = t.elapsed();
        // Background work (default ServiceAccounts of the system namespaces) settles.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let (rss1, live1) = (rss(), live());
        println!(
            "{n} empty in-memory API servers: heap {:.3} MiB each, RSS {:.3} MiB each, started in {:.2} ms each",
            (live1 - live0) / n as f64 / MIB,
            (rss1 - rss0) / n as f64 / MIB,
            took.as_secs_f64() * 1000.0 / n as f64,
        );
        for (srv, _) in servers.iter().chain(std::iter::once(&first)) {
            srv.shutdown();
        }
    });
}
