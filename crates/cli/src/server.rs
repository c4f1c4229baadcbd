//! `fleet server`: the embedded Kubernetes-compatible API server over HTTPS, with its own CA and an
//! admin kubeconfig in the data directory. Parses flags, starts [`fleet_apiserver::Server`],
//! prints the `ready` line and stops on SIGTERM/SIGINT.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use fleet_apiserver::server::{Server, ServerConfig, StartError};
use fleet_apiserver::store::{RETENTION, StoreSync};

/// Flags of `fleet server` (the DESIGN.md contract).
#[derive(Args, Debug)]
pub struct ServerArgs {
    /// Directory for the store, the CA and the admin kubeconfig (created when missing).
    #[arg(long, value_name = "DIR")]
    pub data_dir: PathBuf,
    /// Address to listen on; port 0 picks a free port (the `ready` line shows it).
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:6443")]
    pub listen: String,
    /// Serve the API only, without the manager controllers.
    #[arg(long)]
    pub no_controllers: bool,
    /// Set the status of Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs, Pods,
    /// PersistentVolumeClaims and LoadBalancer Services as a healthy cluster would. Simulated:
    /// no container runs.
    #[arg(long)]
    pub simulate_workloads: bool,
    /// Whether each commit waits for the disk: `full` fsyncs every commit (an acknowledged write
    /// survives power loss, as with etcd); `normal` survives a crash of the process only, and
    /// one client writes about twice as fast.
    #[arg(long, value_name = "full|normal", default_value = "full")]
    pub store_sync: StoreSync,
    /// How long superseded revisions stay in the store, for paginated lists at a past revision.
    #[arg(long, value_name = "SECONDS", default_value_t = RETENTION.as_secs())]
    pub store_retention_secs: u64,
    /// Address of the controllers' listener: git push webhooks at `/`, `/metrics`, `/healthz`,
    /// `/readyz` (as `fleet controller --listen`); off when unset.
    #[arg(long, value_name = "HOST:PORT", conflicts_with = "no_controllers")]
    pub controller_listen: Option<std::net::SocketAddr>,
    /// Do not register the server itself as Cluster `local` in `fleet-local` nor run its local
    /// agent (upstream's `bootstrap.localAgentDisabled`).
    #[arg(long, conflicts_with = "no_controllers")]
    pub no_local_agent: bool,
}

/// Runs the server until SIGTERM/SIGINT.
pub fn run(args: ServerArgs) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(serve_until_signal(args))
}

async fn serve_until_signal(args: ServerArgs) -> anyhow::Result<()> {
    let cfg = ServerConfig {
        data_dir: Some(args.data_dir.clone()),
        listen: args.listen.clone(),
        store_sync: args.store_sync,
        store_retention: Duration::from_secs(args.store_retention_secs),
        simulate_workloads: args.simulate_workloads,
        ..ServerConfig::default()
    };
    let server = Server::start(cfg).await.map_err(|e| match e {
        StartError::BadListen { .. } | StartError::Listen { .. } => {
            anyhow::Error::new(e).context(format!("--listen {}", args.listen))
        }
        e => anyhow::Error::new(e).context(format!("--data-dir {}", args.data_dir.display())),
    })?;
    let controllers = if args.no_controllers {
        None
    } else {
        Some(
            start_controllers(
                &server,
                &args.data_dir,
                args.controller_listen,
                !args.no_local_agent,
            )
            .await?,
        )
    };
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "ready {}", server.url()).context("writing the ready line")?;
        out.flush().context("writing the ready line")?;
    }
    fleet_apiserver::serve::shutdown_signal().await;
    for task in controllers.into_iter().flatten() {
        task.abort();
    }
    server.shutdown().await.context("serving")
}

/// The manager in the same process: Fleet's CRDs are installed (server-side apply, so an upgrade
/// updates them), then the controllers and the registration controllers run against the server
/// through an in-process client, the same code `fleet controller` runs against any Kubernetes.
/// With `local_agent`, the server is also its own Cluster `local` in `fleet-local`, imported
/// through its admin kubeconfig, and the local agent runs here (upstream runs it as a Deployment
/// in `cattle-fleet-local-system`); it registers with its own credential like any agent.
async fn start_controllers(
    server: &fleet_apiserver::ServerHandle,
    data_dir: &std::path::Path,
    listen: Option<std::net::SocketAddr>,
    local_agent: bool,
) -> anyhow::Result<Vec<tokio::task::JoinHandle<()>>> {
    let client = fleet_kube::in_process(server.router(), "default");
    let api: kube::Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        kube::Api::all(client.clone());
    let pp = kube::api::PatchParams::apply("fleet-server").force();
    for crd in fleet_api::crds::all() {
        let name = crd.metadata.name.clone().unwrap_or_default();
        api.patch(&name, &pp, &kube::api::Patch::Apply(&crd))
            .await
            .with_context(|| format!("installing the CRD {name}"))?;
    }
    let mut registration =
        fleet_controller::registration::RegistrationOptions::for_system_namespace(
            "cattle-fleet-system",
        );
    registration.api_server_url = server.url().to_string();
    registration.api_server_ca = server.ca_pem().to_string();
    let agent_namespace = fleet_controller::bootstrap::LOCAL_AGENT_NAMESPACE;
    let opts = fleet_controller::Options {
        cache_dir: Some(data_dir.join("git-cache")),
        registration: Some(registration),
        listen,
        local_cluster: local_agent.then(|| fleet_controller::bootstrap::LocalCluster {
            kubeconfig: server.kubeconfig().to_string(),
            agent_namespace: agent_namespace.to_string(),
        }),
        ..Default::default()
    };
    let mut tasks = vec![tokio::spawn(async move {
        let on_listen = |a| tracing::info!("controllers listening on http://{a}");
        if let Err(e) = fleet_controller::run_with(client.clone(), opts, on_listen, async {}).await
        {
            tracing::error!("manager controllers stopped: {e}");
        }
    })];
    if local_agent {
        let downstream = fleet_kube::in_process(server.router(), "default");
        let opts = fleet_agent::AgentOptions {
            system_namespace: agent_namespace.to_string(),
            ..Default::default()
        };
        tasks.push(tokio::spawn(fleet_agent::run(downstream, opts)));
    }
    Ok(tasks)
}
