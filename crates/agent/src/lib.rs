//! The per-cluster agent (`fleet agent`): reads its upstream credential from the downstream
//! cluster, watches its namespace's BundleDeployments on the manager, deploys them downstream
//! with server-side apply and Helm-compatible release records, reports status, watches for drift
//! and checks in. It never deletes anything because it lost contact with the manager.
//!
//! Code map: `register` (bootstrap token → credential), `credential` (the `fleet-agent` Secret),
//! `content` (Contents, cached per manifestID), `deploy` (render, ordered apply, prune,
//! uninstall), `release` (Helm release records), `objects` (downstream objects by reference), `values_from` (`helm.valuesFrom`),
//! `monitor` + `readiness` + `diff` (status), `drift` (one watch per kind), `heartbeat`,
//! `backoff` (capped exponential backoff with jitter, rate-limited logs), `agent` (the loop).

pub mod accounts;
pub mod agent;
pub mod backoff;
pub mod bd_watch;
pub mod content;
pub mod credential;
pub mod deploy;
pub mod diff;
pub mod drift;
pub mod heartbeat;
pub mod monitor;
pub mod objects;
pub mod readiness;
pub mod register;
pub mod release;
pub mod values_from;

use std::time::Duration;

/// Upstream's default system namespace of the agent.
pub const DEFAULT_SYSTEM_NAMESPACE: &str = "cattle-fleet-system";
/// Upstream's default check-in interval (`CHECKIN_INTERVAL`).
pub const DEFAULT_CHECKIN_INTERVAL: Duration = Duration::from_secs(15 * 60);
/// The Lease (in the system namespace) that keeps one agent per cluster active, as upstream.
pub const LEASE_NAME: &str = "fleet-agent";
/// Upstream checks in this long after start, then every interval.
pub const FIRST_CHECKIN: Duration = Duration::from_secs(15);

/// How `fleet agent` runs.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// Namespace of the agent in its cluster (holds the `fleet-agent` Secret).
    pub system_namespace: String,
    /// Interval between check-ins (`status.agent.lastSeen`).
    pub checkin_interval: Duration,
}

impl Default for AgentOptions {
    fn default() -> Self {
        AgentOptions {
            system_namespace: DEFAULT_SYSTEM_NAMESPACE.into(),
            checkin_interval: DEFAULT_CHECKIN_INTERVAL,
        }
    }
}

/// Runs the agent against the downstream cluster `downstream` until the process ends: waits for
/// the credential, then runs the heartbeat and the deploy loop.
pub async fn run(downstream: kube::Client, opts: AgentOptions) {
    run_reporting_sync(downstream, opts, None).await
}

/// As [`run`], and sends on `synced` once the agent has listed its BundleDeployments and handled
/// each one the first time: from then on it is only following changes. What waits for a fleet
/// at rest (a benchmark's clock) waits for this.
pub async fn run_reporting_sync(
    downstream: kube::Client,
    opts: AgentOptions,
    synced: Option<tokio::sync::oneshot::Sender<()>>,
) {
    // Registration first: a stored credential that works is kept; otherwise the bootstrap Secret
    // (applied by a user or by the manager) is traded for one. Refusals are retried with backoff,
    // since a new token may be applied at any time.
    let reg = register::RegisterOptions {
        system_namespace: opts.system_namespace.clone(),
        // Looking for a bootstrap Secret is one GET on the agent's own cluster; a short cap lets
        // a token applied later (or a credential written by hand) be picked up within seconds.
        max_backoff: Duration::from_secs(5),
        ..Default::default()
    };
    let mut pause = backoff::Backoff::new(Duration::from_secs(1), Duration::from_secs(60));
    let mut log = backoff::RateLimitedLog::new(Duration::from_secs(30));
    while let Err(e) = register::ensure_registered(downstream.clone(), &reg).await {
        log.warn(&format!("registration: {e}"));
        tokio::time::sleep(pause.next_delay()).await;
    }
    let up = credential::wait_for_credential(&downstream, &opts.system_namespace).await;
    tracing::info!(
        cluster = %up.cluster_name,
        namespace = %up.deployment_namespace,
        "agent credential loaded"
    );
    let first = FIRST_CHECKIN.min(opts.checkin_interval);
    tokio::spawn(heartbeat::run(
        up.clone(),
        opts.system_namespace.clone(),
        first,
        opts.checkin_interval,
    ));
    agent::run(
        up,
        objects::Downstream::new(downstream),
        opts.system_namespace,
        synced,
    )
    .await;
}

/// Parses `CHECKIN_INTERVAL` / `--checkin-interval` (a Go duration such as `15m`).
pub fn parse_duration(s: &str) -> Result<Duration, DurationFlagError> {
    match fleet_api::duration::parse_go_duration(s.trim())? {
        d if d.is_zero() => Err(DurationFlagError::Zero),
        d => Ok(d),
    }
}

/// Why a check-in interval was refused.
#[derive(Debug, thiserror::Error)]
pub enum DurationFlagError {
    /// Not a Go duration.
    #[error("{0}")]
    Invalid(#[from] fleet_api::duration::DurationError),
    /// Zero would check in continuously.
    #[error("must be greater than zero")]
    Zero,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        assert_eq!(parse_duration("15m").unwrap(), Duration::from_secs(900));
        assert_eq!(parse_duration("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert!(parse_duration("5").is_err());
        assert!(parse_duration("5d").is_err());
        assert!(parse_duration("0s").is_err());
    }
}
