//! `Server::start`: a whole server from code. Several run side by side in one process (memory and
//! data directory), each reachable through the kubeconfig it writes; the store's sync mode is the
//! one configured (FULL unless asked otherwise); shutdown closes the store and a restart on the
//! same data directory keeps data and credentials.

use fleet_apiserver::server::{KUBECONFIG_FILE, Server, ServerConfig, StartError};
use fleet_apiserver::store::StoreSync;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};

async fn kube_client(kubeconfig: &std::path::Path) -> kube::Client {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig).expect("kubeconfig parses");
    let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .expect("kubeconfig usable");
    kube::Client::try_from(cfg).expect("client")
}

fn cm(name: &str) -> ConfigMap {
    let mut c = ConfigMap::default();
    c.metadata.name = Some(name.into());
    c.data = Some([("k".to_string(), "v".to_string())].into());
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_and_file_servers_run_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    let mem = Server::start(ServerConfig::in_memory()).await.unwrap();
    let file = Server::start(ServerConfig::with_data_dir(dir.path()))
        .await
        .unwrap();
    assert_ne!(mem.url(), file.url());
    assert!(mem.url().starts_with("https://127.0.0.1:"), "{}", mem.url());
    assert_eq!(file.kubeconfig_path(), dir.path().join(KUBECONFIG_FILE));
    assert_eq!(
        std::fs::read_to_string(file.kubeconfig_path()).unwrap(),
        file.kubeconfig()
    );
    let mem_kubeconfig = mem.kubeconfig_path().to_path_buf();
    assert!(mem_kubeconfig.is_file());
    assert!(mem.kubeconfig().contains(mem.url()));

    // Each over TLS with its own admin kubeconfig; the stores are separate.
    let on_mem: Api<ConfigMap> =
        Api::namespaced(kube_client(mem.kubeconfig_path()).await, "default");
    let on_file: Api<ConfigMap> =
        Api::namespaced(kube_client(file.kubeconfig_path()).await, "default");
    on_mem
        .create(&PostParams::default(), &cm("a"))
        .await
        .unwrap();
    on_file
        .create(&PostParams::default(), &cm("b"))
        .await
        .unwrap();
    assert!(on_mem.get_opt("b").await.unwrap().is_none());
    assert!(on_file.get_opt("a").await.unwrap().is_none());

    // The bare router: an in-process client without TLS or credentials.
    let in_process: Api<ConfigMap> =
        Api::namespaced(kube::Client::new(mem.router(), "default"), "default");
    assert!(in_process.get("a").await.is_ok());

    // A client trusting one server's CA does not trust the other's.
    assert_ne!(mem.ca_pem(), file.ca_pem());

    mem.shutdown().await.unwrap();
    assert!(
        !mem_kubeconfig.exists(),
        "an in-memory server's kubeconfig goes with it"
    );
    assert!(
        on_file.get("b").await.is_ok(),
        "the other server still serves"
    );
    file.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_sync_is_full_by_default_and_normal_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let full = Server::start(ServerConfig::with_data_dir(dir.path().join("full")))
        .await
        .unwrap();
    assert_eq!(full.api().store_sync(), Some(StoreSync::Full));
    let normal = Server::start(ServerConfig {
        store_sync: StoreSync::Normal,
        ..ServerConfig::with_data_dir(dir.path().join("normal"))
    })
    .await
    .unwrap();
    assert_eq!(normal.api().store_sync(), Some(StoreSync::Normal));
    let mem = Server::start(ServerConfig::in_memory()).await.unwrap();
    assert_eq!(mem.api().store_sync(), None, "nothing to sync in memory");
    for s in [full, normal, mem] {
        s.shutdown().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_closes_the_store_and_a_restart_keeps_data_and_credentials() {
    let dir = tempfile::tempdir().unwrap();
    let first = Server::start(ServerConfig::with_data_dir(dir.path()))
        .await
        .unwrap();
    let addr = first.addr();
    let old_kubeconfig = dir.path().join("old-kubeconfig");
    std::fs::write(&old_kubeconfig, first.kubeconfig()).unwrap();
    let api: Api<ConfigMap> =
        Api::namespaced(kube_client(first.kubeconfig_path()).await, "default");
    api.create(&PostParams::default(), &cm("kept"))
        .await
        .unwrap();
    let store_api = first.api().clone();
    first.shutdown().await.unwrap();
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "nothing listens after shutdown"
    );
    // The store is closed: the API server refuses writes.
    let closed: Api<ConfigMap> =
        Api::namespaced(kube::Client::new(store_api.router(), "default"), "default");
    assert!(
        closed
            .create(&PostParams::default(), &cm("late"))
            .await
            .is_err()
    );
    drop(store_api);

    let second = Server::start(ServerConfig {
        listen: addr.to_string(),
        ..ServerConfig::with_data_dir(dir.path())
    })
    .await
    .unwrap();
    assert_eq!(second.addr(), addr);
    // The kubeconfig handed out by the first run still works against the second.
    let api: Api<ConfigMap> = Api::namespaced(kube_client(&old_kubeconfig).await, "default");
    assert!(api.get("kept").await.is_ok());
    assert!(api.get_opt("late").await.unwrap().is_none());
    second.shutdown().await.unwrap();
}

#[tokio::test]
async fn bad_listen_addresses_are_named() {
    for (listen, want) in [("nonsense", "HOST:PORT"), ("h:99999", "99999")] {
        let err = Server::start(ServerConfig {
            listen: listen.into(),
            ..ServerConfig::in_memory()
        })
        .await
        .expect_err(listen);
        assert!(matches!(err, StartError::BadListen { .. }), "{err:?}");
        let msg = err.to_string();
        assert!(msg.contains(listen) && msg.contains(want), "{msg}");
    }
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = busy.local_addr().unwrap().to_string();
    let err = Server::start(ServerConfig {
        listen: addr.clone(),
        ..ServerConfig::in_memory()
    })
    .await
    .expect_err("port in use");
    assert!(matches!(err, StartError::Listen { .. }), "{err:?}");
    assert!(err.to_string().contains(&addr), "{err}");
}
