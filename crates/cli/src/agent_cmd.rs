//! `fleet agent [-k DOWNSTREAM] [--system-namespace NS] [--checkin-interval D]`: runs the
//! per-cluster agent (`fleet_agent::run`) against the downstream cluster the kubeconfig names
//! (in-cluster configuration when none is given).

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
}

/// Runs the agent until SIGTERM/SIGINT.
pub fn run(a: AgentArgs) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(async {
        let client = fleet_kube::client(a.kubeconfig.as_deref())
            .await
            .context("downstream cluster")?;
        let opts = fleet_agent::AgentOptions {
            system_namespace: a.system_namespace,
            checkin_interval: a.checkin_interval,
        };
        tokio::select! {
            _ = fleet_agent::run(client, opts) => {}
            _ = tokio::signal::ctrl_c() => {}
            _ = terminate() => {}
        }
        Ok(())
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
