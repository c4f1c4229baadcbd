//! Manager controllers on kube-runtime: GitRepo → Bundles → BundleDeployments, with status
//! aggregated back into Bundles, GitRepos, Clusters and ClusterGroups.
//!
//! Everything goes through the Kubernetes API with the given `kube::Client`: one shared watch
//! (reflector cache) per kind, one coalescing work queue per reconciler, and writes only where the
//! desired object differs from the cached one (status included), so a resync that changes nothing
//! writes nothing.

pub mod bds;
pub mod bootstrap;
pub mod bundle;
pub mod cluster;
pub mod conditions;
pub mod context;
pub mod git;
pub mod gitrepo;
pub mod http;
pub mod registration;
pub mod restrictions;
pub mod webhook;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub use context::{Context, Metrics};

/// How the controllers run.
#[derive(Clone, Debug)]
pub struct Options {
    /// Handle only GitRepos, Bundles, Clusters and ClusterGroups labelled
    /// `fleet.cattle.io/shard-ref=<id>`; None: the default shard, objects without that label
    /// (upstream `pkg/sharding`). Clusters and groups of every shard stay in the targeting index.
    pub shard_id: Option<String>,
    /// The controller's own namespace (`cattle-fleet-system` upstream).
    pub system_namespace: String,
    /// Where `/metrics`, `/healthz` and `/readyz` are served (None: not served).
    pub listen: Option<SocketAddr>,
    /// Polling interval of GitRepos that do not set `pollingInterval`.
    pub default_polling_interval: Duration,
    /// Where git checkouts are cached (None: a temporary directory removed on exit).
    pub cache_dir: Option<PathBuf>,
    /// Concurrent writes of all reconciles together (128: with the store's group commit
    /// waiting for more writes, 32 in flight left BD creation waiting on commits).
    pub write_concurrency: usize,
    /// Cluster registration (tokens, grants, manager-initiated imports); None: not run.
    pub registration: Option<registration::RegistrationOptions>,
    /// The manager's own cluster as Cluster `local` in `fleet-local` (None: not registered).
    pub local_cluster: Option<bootstrap::LocalCluster>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            shard_id: None,
            system_namespace: "cattle-fleet-system".into(),
            listen: None,
            default_polling_interval: Duration::from_secs(15),
            cache_dir: None,
            write_concurrency: 128,
            registration: None,
            local_cluster: None,
        }
    }
}

/// Why the controllers stopped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A Kubernetes API call failed.
    #[error("{0}")]
    Kube(#[from] kube::Error),
    /// Local I/O (cache directory, listener).
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Runs every controller until the future is dropped (or a watch fails for good). Bootstraps the
/// workspaces and the `default` ClusterGroup first.
pub async fn run(client: kube::Client, opts: Options) -> Result<(), Error> {
    run_with(client, opts, |_| {}, async {}).await
}

/// [`run`], reporting the bound HTTP address to `on_listen` (tests start on port 0) and starting
/// the controllers only once `leader` resolves (a Lease won, see [`fleet_kube::lease`]). Until
/// then the listener serves `/healthz`, `/metrics` and a not-ready `/readyz`, and nothing is
/// written to the API, so a standby replica is observable but silent.
pub async fn run_with(
    client: kube::Client,
    opts: Options,
    on_listen: impl FnOnce(SocketAddr),
    leader: impl std::future::Future<Output = ()>,
) -> Result<(), Error> {
    let tmp;
    let cache_dir = match &opts.cache_dir {
        Some(d) => {
            std::fs::create_dir_all(d)?;
            d.clone()
        }
        None => {
            tmp = tempfile::Builder::new().prefix("fleet-git-").tempdir()?;
            tmp.path().to_path_buf()
        }
    };
    let (ctx, streams) = Context::start(client, opts.clone(), cache_dir);
    let ctx = Arc::new(ctx);
    let mut tasks = tokio::task::JoinSet::new();
    if let Some(addr) = opts.listen {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        on_listen(listener.local_addr()?);
        let app = http::router(ctx.clone());
        tasks.spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
    }
    leader.await;
    ctx.set_leading();
    bootstrap::run(&ctx.client).await?;
    if let Some(local) = &opts.local_cluster {
        bootstrap::local_cluster(&ctx.client, local).await?;
    }
    if let Some(reg) = opts.registration.clone() {
        let c = ctx.client.clone();
        tasks.spawn(async move {
            if let Err(e) = registration::run(c, reg).await {
                tracing::error!("registration controllers stopped: {e}");
            }
        });
    }
    streams.spawn_all(&mut tasks);
    ctx.wait_ready().await;
    tracing::info!("caches synced; starting controllers");
    tasks.spawn(bundle::controller(ctx.clone()));
    tasks.spawn(gitrepo::controller(ctx.clone()));
    tasks.spawn(cluster::controller(ctx.clone()));
    tasks.spawn(cluster::group_controller(ctx.clone()));
    tasks.spawn(bundle::content_gc(ctx.clone()));
    ctx.set_ready();
    while let Some(r) = tasks.join_next().await {
        if let Err(e) = r {
            tracing::error!("controller task ended: {e}");
        }
    }
    Ok(())
}

/// Short timeout-free delay used for requeues.
pub(crate) fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}
