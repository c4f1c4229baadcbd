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
    allocator::agent_process();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .on_thread_start(allocator::agent_thread)
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

/// jemalloc as an idle agent needs it, set in this process only (`fleet server`, whose write
/// path allocates per request, keeps jemalloc's defaults). An agent allocates in short bursts
/// (a deploy, a relist) and then sits idle for minutes, and jemalloc's defaults are made for the
/// opposite: pages freed by a burst are kept dirty for reuse and returned only by later
/// allocation activity that an idle process never has, every thread gets an arena of its own,
/// and each thread's cache keeps freed objects. Idle with 50 BundleDeployments (`cargo bench -p
/// fleet-cli --bench agent`): 5.1 MiB of anonymous memory with the defaults, 3.0 MiB with
/// freed pages returned at once, one arena and no thread caches (the first alone 4.1, the
/// second alone 4.4, both 3.5). A background purging thread instead: 4.7.
mod allocator {
    use std::ffi::{CStr, c_void};

    /// Sets one mallctl value; a name this jemalloc does not know is ignored (the settings
    /// save memory, nothing depends on them).
    fn set<T: Copy>(name: &CStr, value: T) {
        let mut value = value;
        // SAFETY: `name` is NUL-terminated, `value` is a live `T` of the size passed, and each
        // name below takes a value of exactly that type (ssize_t, unsigned, bool).
        let _ = unsafe {
            tikv_jemalloc_sys::mallctl(
                name.as_ptr(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                (&raw mut value).cast::<c_void>(),
                size_of::<T>(),
            )
        };
    }

    /// Freed pages go back to the system at once (dirty and muzzy decay 0) in arena 0, which
    /// every thread of the agent uses, and in any arena made later; the calling (main) thread
    /// gets the per-thread settings too.
    pub fn agent_process() {
        for name in [
            c"arenas.dirty_decay_ms",
            c"arenas.muzzy_decay_ms",
            c"arena.0.dirty_decay_ms",
            c"arena.0.muzzy_decay_ms",
        ] {
            set::<isize>(name, 0);
        }
        agent_thread();
    }

    /// Per thread (the runtime's `on_thread_start`): arena 0 and no thread cache.
    pub fn agent_thread() {
        set::<u32>(c"thread.arena", 0);
        set::<bool>(c"thread.tcache.enabled", false);
    }
}
