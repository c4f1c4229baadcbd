//! The agent's request budget, counted at the routers of two embedded API servers
//! (`fleet_agent::bench::measure_requests`, the code behind `fleet bench agent`).

use std::time::Duration;

/// A restart with nothing changed writes nothing and reads live state per kind (the drift
/// watches' lists), not one GET per object; an idle agent asks the downstream nothing and the
/// manager at most for a heartbeat.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resync_writes_nothing_and_reads_per_kind_and_idle_is_silent() {
    let objects = 40;
    let f = fleet_agent::bench::measure_requests(objects, Duration::from_secs(5), false)
        .await
        .expect("benchmark run");
    assert!(
        f.apply_downstream.writes >= objects as u64,
        "apply wrote every object: {f:?}"
    );
    assert_eq!(
        f.resync_downstream.writes, 0,
        "re-sync wrote downstream: {f:?}"
    );
    assert_eq!(f.resync_upstream.writes, 0, "re-sync wrote status: {f:?}");
    assert!(
        f.resync_downstream.reads < 10,
        "re-sync read objects one by one: {f:?}"
    );
    assert_eq!(
        f.idle_downstream.total(),
        0,
        "idle downstream requests: {f:?}"
    );
    assert_eq!(f.idle_upstream.reads + f.idle_upstream.watches, 0, "{f:?}");
    assert!(f.idle_upstream.writes <= 1, "idle upstream writes: {f:?}");
}
