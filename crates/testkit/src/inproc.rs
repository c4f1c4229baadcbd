//! A whole API server started in-process through the one library call
//! (`fleet_apiserver::server::Server::start`), with a kube client speaking HTTPS to it as the
//! admin. Tests that need a real server without a child process start here.

use fleet_apiserver::server::{Server, ServerConfig, ServerHandle};

/// An in-memory server on a free loopback port and an admin kube client for it. The server stops
/// when the handle drops.
pub async fn start() -> (ServerHandle, kube::Client) {
    start_with(ServerConfig::in_memory()).await
}

/// [`start`] with a caller's configuration (a data directory, workload simulation, ...).
pub async fn start_with(cfg: ServerConfig) -> (ServerHandle, kube::Client) {
    let handle = Server::start(cfg)
        .await
        .unwrap_or_else(|e| panic!("starting an in-process server: {e}"));
    let client = client(&handle).await;
    (handle, client)
}

/// An admin kube client for a running server (client-certificate user from its kubeconfig).
pub async fn client(handle: &ServerHandle) -> kube::Client {
    let cfg = fleet_kube::config_from_kubeconfig_yaml(handle.kubeconfig())
        .await
        .unwrap_or_else(|e| panic!("kubeconfig of {}: {e}", handle.url()));
    fleet_kube::client_from_config(cfg)
        .unwrap_or_else(|e| panic!("client for {}: {e}", handle.url()))
}
