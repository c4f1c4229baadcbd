//! `run_connections_on` is process-wide, so its test has a process (this test binary) of its own.

use fleet_apiserver::{Server, ServerConfig};
use tokio::runtime::{Builder, Runtime};

fn runtime(name: &str) -> Runtime {
    Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name(name)
        .enable_all()
        .build()
        .expect("runtime")
}

/// A client's connection (its TCP and TLS handshake and then its HTTP/2 task) runs on the runtime
/// given to `run_connections_on`, not on the runtime that sends the request: a process whose own
/// runtime is saturated (10,000 agents in `fleet bench scale`) still reads its pongs in time.
#[test]
fn a_clients_connection_runs_on_the_runtime_it_was_given() {
    let server_rt = runtime("server");
    let srv = server_rt
        .block_on(Server::start(ServerConfig::in_memory()))
        .expect("server starts");

    let connections = runtime("connections");
    assert_eq!(connections.metrics().num_alive_tasks(), 0);
    assert!(fleet_kube::run_connections_on(connections.handle().clone()));
    assert!(
        !fleet_kube::run_connections_on(connections.handle().clone()),
        "set once per process"
    );

    let caller = Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (_client, caller_tasks) = caller.block_on(async {
        let c = fleet_kube::client(Some(srv.kubeconfig_path()))
            .await
            .expect("client");
        let req = http::Request::get("/version")
            .body(kube::client::Body::empty())
            .expect("request");
        let res = c.send(req).await.expect("GET /version");
        assert_eq!(res.status(), http::StatusCode::OK);
        assert_eq!(res.version(), http::Version::HTTP_2);
        let tasks = tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks();
        (c, tasks)
    });
    // Kept while the client lives: the connection's tasks are still running, over there.
    assert!(
        connections.metrics().num_alive_tasks() >= 1,
        "the connection's task runs on the runtime it was given"
    );
    // The caller's runtime holds the client's request buffer (kube-rs's) and nothing else.
    assert_eq!(caller_tasks, 1, "tasks left on the caller's runtime");
}
