//! `fleet agent [-k DOWNSTREAM] [--system-namespace NS] [--checkin-interval D]`: runs the
//! per-cluster agent (`fleet_agent::run`) against the downstream cluster the kubeconfig names
//! (in-cluster configuration when none is given), while it holds the `fleet-agent` Lease.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

/// Flags of `fleet agent`.
#[derive(Args, Debug)]
pub struct AgentArgs {
    /// Kubeconfig of the downstream cluster (default: in-cluster / `$KUBECONFIG`).
    #[arg(short = 'k', long = "kubeconfig")]
    pub kubeconfig: Option<PathBuf>,
    /// The agent's namespace in the downstream cluster (holds the `fleet-agent` Secret).
    #[arg(long, default_value = fleet_agent::DEFAULT_SYSTEM_NAMESPACE, env = "NAMESPACE")]
    pub system_namespace: String,
    /// How often to report `status.agent.lastSeen` on the Cluster (Go duration, e.g. `15m`).
    #[arg(long, env = "CHECKIN_INTERVAL", default_value = "15m", value_parser = fleet_agent::parse_duration)]
    pub checkin_interval: std::time::Duration,
    /// Leader election on Lease `fleet-agent` in the system namespace: several replicas may
    /// run, one works, the others take over when it stops renewing.
    #[command(flatten)]
    pub election: crate::election::ElectionArgs,
}

/// Runs the agent until SIGTERM/SIGINT, once it holds the `fleet-agent` Lease; exits with an
/// error if another replica takes the Lease over (a supervisor restarts it as a standby).
pub fn run(a: AgentArgs) -> anyhow::Result<()> {
    let timings = a.election.timings()?;
    crate::allocator::agent_process();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .on_thread_start(crate::allocator::agent_thread)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(async {
        let client = fleet_kube::client(a.kubeconfig.as_deref())
            .await
            .context("downstream cluster")?;
        // Not fatal: the election retries until the downstream answers.
        if let Err(e) = crate::election::ensure_namespace(&client, &a.system_namespace).await {
            tracing::warn!("{e:#}");
        }
        let identity = fleet_kube::lease::default_identity();
        let elector = || {
            fleet_kube::lease::LeaderElector::new(
                client.clone(),
                &a.system_namespace,
                fleet_agent::LEASE_NAME,
                &identity,
                timings.clone(),
            )
        };
        let mut election = elector();
        tokio::select! {
            () = election.acquire() => {}
            _ = tokio::signal::ctrl_c() => return Ok(()),
            _ = terminate() => return Ok(()),
        }
        let opts = fleet_agent::AgentOptions {
            system_namespace: a.system_namespace.clone(),
            checkin_interval: a.checkin_interval,
        };
        let outcome = tokio::select! {
            _ = fleet_agent::run(client.clone(), opts) => Ok(()),
            lost = election.hold() => Err(anyhow::anyhow!("{lost}")),
            _ = tokio::signal::ctrl_c() => Ok(()),
            _ = terminate() => Ok(()),
        };
        if outcome.is_ok() {
            // Hand over at once instead of making a standby wait out the lease duration.
            elector().release().await;
        }
        outcome
    })
}

async fn terminate() {
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(mut s) => {
            s.recv().await;
        }
        Err(_) => std::future::pending().await,
    }
}
