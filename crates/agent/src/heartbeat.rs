//! Heartbeat (upstream's clusterstatus ticker): `status.agent.lastSeen` and `namespace` on the
//! agent's Cluster, a first time shortly after start and then every check-in interval. While the
//! manager is unreachable it retries with capped backoff and jitter, logging at a capped rate.

use std::time::Duration;

use fleet_api::Cluster;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;

use crate::backoff::{Backoff, RateLimitedLog};
use crate::credential::Upstream;

/// One check-in: a merge patch of `status.agent` (no GET needed; the agent may only patch its
/// Cluster's status).
pub async fn check_in(up: &Upstream, agent_namespace: &str) -> Result<(), kube::Error> {
    let api: Api<Cluster> = Api::namespaced(up.client.clone(), &up.cluster_namespace);
    let now = jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let patch = json!({"status": {"agent": {"lastSeen": now, "namespace": agent_namespace}}});
    api.patch_status(
        &up.cluster_name,
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await?;
    Ok(())
}

/// Runs forever: first check-in after `first`, then every `interval`.
pub async fn run(up: Upstream, agent_namespace: String, first: Duration, interval: Duration) {
    tokio::time::sleep(first).await;
    let mut backoff = Backoff::new(
        Duration::from_secs(1),
        Duration::from_secs(60).min(interval.max(Duration::from_secs(1))),
    );
    let mut log = RateLimitedLog::new(Duration::from_secs(60));
    loop {
        match check_in(&up, &agent_namespace).await {
            Ok(()) => {
                tracing::debug!(cluster = %up.cluster_name, "checked in");
                backoff.reset();
                log.reset();
                tokio::time::sleep(interval).await;
            }
            Err(e) => {
                log.warn(&format!(
                    "check-in of cluster {}/{} failed, retrying: {e}",
                    up.cluster_namespace, up.cluster_name
                ));
                tokio::time::sleep(backoff.next_delay()).await;
            }
        }
    }
}
