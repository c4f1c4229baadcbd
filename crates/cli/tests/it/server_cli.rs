//! `fleet server` as a user runs it: the ready line, the kubeconfig and credentials in the data
//! directory, health endpoints without credentials, 401 without them elsewhere, CA reuse across
//! restarts, clean SIGTERM shutdown with a watch open, and clear errors for bad flags.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::{Server, raw};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};

fn anonymous_client(srv: &Server) -> kube::Client {
    let ca = std::fs::read(srv.dir.join("pki/ca.crt")).unwrap();
    let der = rustls_pem_to_der(&ca);
    let mut cfg = kube::Config::new(srv.url.parse().unwrap());
    cfg.root_cert = Some(vec![der]);
    kube::Client::try_from(cfg).unwrap()
}

fn token_client(srv: &Server, token: &str) -> kube::Client {
    let ca = std::fs::read(srv.dir.join("pki/ca.crt")).unwrap();
    let mut cfg = kube::Config::new(srv.url.parse().unwrap());
    cfg.root_cert = Some(vec![rustls_pem_to_der(&ca)]);
    cfg.auth_info.token = Some(token.to_string().into());
    kube::Client::try_from(cfg).unwrap()
}

fn rustls_pem_to_der(pem: &[u8]) -> Vec<u8> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    CertificateDer::from_pem_slice(pem).unwrap().to_vec()
}

#[tokio::test(flavor = "multi_thread")]
async fn serves_with_kubeconfig_and_authenticates() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        for f in [
            "kubeconfig",
            "pki/ca.key",
            "pki/admin.key",
            "pki/admin.token",
        ] {
            let mode = std::fs::metadata(dir.path().join(f))
                .unwrap()
                .permissions()
                .mode()
                & 0o777;
            assert_eq!(mode, 0o600, "{f}");
        }
    }

    // The admin kubeconfig works (client certificate).
    let client = srv.client().await;
    let info = client.apiserver_version().await.expect("/version");
    println!("server version {}", info.git_version);
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("hello".into());
    cms.create(&PostParams::default(), &cm)
        .await
        .expect("create with admin cert");

    // Health and version are open; everything else needs credentials.
    let anon = anonymous_client(&srv);
    for p in ["/healthz", "/readyz", "/livez", "/version"] {
        let (code, body) = raw(&anon, "GET", p, "application/json", vec![]).await;
        assert_eq!(code, 200, "{p}: {body}");
    }
    for p in ["/api", "/api/v1/namespaces/default/configmaps"] {
        let (code, body) = raw(&anon, "GET", p, "application/json", vec![]).await;
        assert_eq!(code, 401, "{p}: {body}");
        assert_eq!(body["kind"], "Status");
        assert_eq!(body["reason"], "Unauthorized");
    }

    // The admin bearer token kept in the data directory works; a wrong one gets 401.
    let token = std::fs::read_to_string(dir.path().join("pki/admin.token")).unwrap();
    let by_token: Api<ConfigMap> = Api::namespaced(token_client(&srv, token.trim()), "default");
    assert!(by_token.get("hello").await.is_ok());
    let bad = token_client(&srv, "not-the-token");
    let (code, _) = raw(
        &bad,
        "GET",
        "/api/v1/namespaces/default/configmaps",
        "application/json",
        vec![],
    )
    .await;
    assert_eq!(code, 401);

    let status = srv.terminate();
    assert!(status.success(), "SIGTERM exit: {status}");
}

#[tokio::test(flavor = "multi_thread")]
async fn restart_keeps_ca_data_and_old_kubeconfig() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    let ca_before = std::fs::read(dir.path().join("pki/ca.crt")).unwrap();
    let kubeconfig_before = std::fs::read_to_string(&srv.kubeconfig).unwrap();
    let port = srv.port();
    let client = srv.client().await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("survivor".into());
    cms.create(&PostParams::default(), &cm).await.unwrap();
    assert!(srv.terminate().success());

    let srv = Server::start_with(dir.path(), &format!("127.0.0.1:{port}"));
    assert_eq!(
        std::fs::read(dir.path().join("pki/ca.crt")).unwrap(),
        ca_before,
        "CA reused"
    );
    // The kubeconfig from the first start still authenticates.
    std::fs::write(dir.path().join("old-kubeconfig"), &kubeconfig_before).unwrap();
    let kc = kube::config::Kubeconfig::read_from(dir.path().join("old-kubeconfig")).unwrap();
    let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(kube::Client::try_from(cfg).unwrap(), "default");
    assert!(
        cms.get("survivor").await.is_ok(),
        "data and credentials survive a restart"
    );
    drop(srv);
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_with_open_watch_exits_promptly() {
    use futures::StreamExt;
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    let client = srv.client().await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let mut stream = cms
        .watch(&Default::default(), "0")
        .await
        .expect("watch")
        .boxed();
    let reader = tokio::spawn(async move { while let Some(_e) = stream.next().await {} });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let t = Instant::now();
    let status = srv.terminate();
    assert!(status.success(), "{status}");
    assert!(
        t.elapsed() < Duration::from_secs(15),
        "shutdown took {:?}",
        t.elapsed()
    );
    let _ = tokio::time::timeout(Duration::from_secs(10), reader).await;
}

#[test]
fn bad_flags_fail_with_a_clear_message() {
    let bin = env!("CARGO_BIN_EXE_fleet");
    let out = Command::new(bin).args(["server"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--data-dir"));

    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(bin)
        .args(["server", "--data-dir"])
        .arg(dir.path())
        .args(["--listen", "nonsense"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--listen") && err.contains("nonsense"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "no ready line on failure");

    // A port already in use.
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = busy.local_addr().unwrap();
    let out = Command::new(bin)
        .args(["server", "--data-dir"])
        .arg(dir.path())
        .args(["--listen", &addr.to_string()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--listen") && err.contains(&addr.to_string()),
        "{err}"
    );

    // A data directory that is a file.
    let file = dir.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let out = Command::new(bin)
        .args(["server", "--data-dir"])
        .arg(&file)
        .args(["--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains(&*file.to_string_lossy()));
}
