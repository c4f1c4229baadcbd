//! A thread of its own for what the bench observes: the BundleDeployment tracker, the write
//! counters and the admin client they use. On the runtime of 10,000 agents these watches were
//! starved, fell behind the manager's watch history and had to list everything again, so a round
//! was timed when the tracker caught up rather than when the last BD became Ready. Here they get
//! their own OS thread, which the kernel schedules beside the agents' workers.

use std::path::Path;
use std::sync::OnceLock;

use anyhow::{Context, anyhow};
use tokio::runtime::Handle;
use tokio::task::JoinHandle;

static HANDLE: OnceLock<Result<Handle, String>> = OnceLock::new();
static CONNECTIONS: OnceLock<Result<Handle, String>> = OnceLock::new();

/// The observer runtime (started on first use, lives as long as the process).
fn handle() -> anyhow::Result<Handle> {
    HANDLE
        .get_or_init(|| own_thread("bench-observer"))
        .clone()
        .map_err(|e| anyhow!(e))
}

/// The runtime the agents' connections to the manager run on (see
/// `fleet_kube::run_connections_on`): an OS thread of its own, as the observer's, so that a
/// connection's pong is read while the agents' runtime is busy, as it would be in a process of
/// its own.
pub(crate) fn connections() -> anyhow::Result<Handle> {
    CONNECTIONS
        .get_or_init(|| own_thread("bench-connections"))
        .clone()
        .map_err(|e| anyhow!(e))
}

/// A current-thread runtime on a new OS thread named `name`, running until the process ends.
fn own_thread(name: &str) -> Result<Handle, String> {
    let (tx, rx) = std::sync::mpsc::channel();
    let what = name.to_string();
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => {
                    let _ = tx.send(Ok(rt.handle().clone()));
                    rt.block_on(std::future::pending::<()>());
                }
                Err(e) => {
                    let _ = tx.send(Err(format!("{what} runtime: {e}")));
                }
            }
        })
        .map_err(|e| format!("{name} thread: {e}"))?;
    rx.recv()
        .map_err(|e| format!("{name} thread: {e}"))
        .and_then(|r| r)
}

/// Runs `f` on the observer thread.
pub(crate) fn spawn<F>(f: F) -> anyhow::Result<JoinHandle<F::Output>>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    Ok(handle()?.spawn(f))
}

/// A client of the kubeconfig whose request queue and connections run on the observer thread
/// (a kube client spawns them on the runtime that builds and first uses it); callers on any
/// runtime only wait for its answers.
pub(crate) async fn client(kubeconfig: &Path) -> anyhow::Result<kube::Client> {
    let path = kubeconfig.to_path_buf();
    spawn(async move {
        let client = fleet_kube::client(Some(&path)).await?;
        // One request from here, so the connection is made on this thread.
        client
            .apiserver_version()
            .await
            .context("the manager's /version")?;
        anyhow::Ok(client)
    })?
    .await
    .context("observer thread")?
}
