//! `fleet controller`: the manager controllers against any Kubernetes API (a kubeconfig, or the
//! in-cluster configuration when none is given). Prints `listening <addr>` once the metrics and
//! health listener is bound, waits to win the Lease
//! `fleet-controller-leader-election-shard[-<shard id>]` in the system namespace (upstream's name),
//! then runs until SIGTERM/SIGINT (releasing the Lease) or until leadership is lost (exit 1, as
//! controller-runtime does, so a restarted process starts as a clean standby).

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Args;

/// Flags of `fleet controller`.
#[derive(Args, Debug)]
pub struct ControllerArgs {
    /// Kubeconfig of the cluster to manage (default: in-cluster configuration).
    #[arg(short = 'k', long = "kubeconfig", env = "KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// Handle only objects labelled `fleet.cattle.io/shard-ref=<ID>`.
    #[arg(long = "shard-id")]
    pub shard_id: Option<String>,
    /// The controller's namespace.
    #[arg(long = "system-namespace", default_value = "cattle-fleet-system")]
    pub system_namespace: String,
    /// Address of the `/metrics`, `/healthz` and `/readyz` listener (port 0: any free port).
    #[arg(long = "listen", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Polling interval of GitRepos that set none (Go duration).
    #[arg(long = "default-polling-interval", default_value = "15s")]
    pub default_polling_interval: String,
    /// Leader election timings.
    #[command(flatten)]
    pub election: crate::election::ElectionArgs,
    /// Directory for git checkouts (default: a temporary directory).
    #[arg(long = "cache-dir")]
    pub cache_dir: Option<PathBuf>,
    /// API server URL handed to registering agents (default: the kubeconfig's server).
    #[arg(long = "api-server-url")]
    pub api_server_url: Option<String>,
    /// PEM CA of that API server handed to registering agents (default: the kubeconfig's CA).
    #[arg(long = "api-server-ca-file")]
    pub api_server_ca_file: Option<PathBuf>,
}

/// Upstream's Lease name for the controller of a shard.
pub fn lease_name(shard_id: Option<&str>) -> String {
    match shard_id {
        Some(id) if !id.is_empty() => format!("fleet-controller-leader-election-shard-{id}"),
        _ => "fleet-controller-leader-election-shard".to_string(),
    }
}

/// Runs the controllers until a signal arrives.
pub fn run(a: ControllerArgs) -> anyhow::Result<()> {
    let interval =
        crate::election::go_duration("--default-polling-interval", &a.default_polling_interval)?;
    let timings = a.election.timings()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(async move {
        let cfg = match a.kubeconfig.as_deref() {
            Some(p) => fleet_kube::config_from_kubeconfig(p, None).await?,
            None => kube::Config::infer()
                .await
                .context("in-cluster configuration")?,
        };
        let (mut url, mut ca) = fleet_kube::server_url_and_ca(&cfg);
        if let Some(u) = a.api_server_url {
            url = u;
        }
        if let Some(f) = &a.api_server_ca_file {
            ca = std::fs::read_to_string(f)
                .with_context(|| format!("--api-server-ca-file {}", f.display()))?;
        }
        let client = fleet_kube::client_from_config(cfg)?;
        let mut registration =
            fleet_controller::registration::RegistrationOptions::for_system_namespace(
                &a.system_namespace,
            );
        registration.api_server_url = url;
        registration.api_server_ca = ca;
        crate::election::ensure_namespace(&client, &a.system_namespace).await?;
        let lease = lease_name(a.shard_id.as_deref());
        let identity = fleet_kube::lease::default_identity();
        let mut elector = fleet_kube::lease::LeaderElector::new(
            client.clone(),
            &a.system_namespace,
            &lease,
            &identity,
            timings.clone(),
        );
        let (won_tx, won_rx) = tokio::sync::oneshot::channel::<()>();
        let election = async move {
            elector.acquire().await;
            let _ = won_tx.send(());
            elector.hold().await
        };
        let leader = async move {
            let _ = won_rx.await;
        };
        let release_client = client.clone();
        let system_namespace = a.system_namespace.clone();
        let opts = fleet_controller::Options {
            shard_id: a.shard_id.filter(|s| !s.is_empty()),
            system_namespace: a.system_namespace,
            listen: Some(a.listen),
            default_polling_interval: interval,
            cache_dir: a.cache_dir,
            registration: Some(registration),
            ..Default::default()
        };
        let run = fleet_controller::run_with(
            client,
            opts,
            |addr| {
                let mut o = std::io::stdout().lock();
                let _ = writeln!(o, "listening {addr}");
                let _ = o.flush();
            },
            leader,
        );
        tokio::select! {
            r = run => r.context("controller")?,
            lost = election => anyhow::bail!("{lost}"),
            _ = shutdown() => {
                fleet_kube::lease::LeaderElector::new(
                    release_client,
                    &system_namespace,
                    &lease,
                    &identity,
                    timings,
                )
                .release()
                .await;
            }
        }
        // Give in-flight writes a moment; the work queues resume from the API on restart.
        tokio::time::sleep(Duration::from_millis(10)).await;
        Ok(())
    })
}

async fn shutdown() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(s) => s,
        Err(_) => return std::future::pending().await,
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}
