//! Real kubectl against the router served over plain HTTP on 127.0.0.1:0, shared by the
//! kubectl test modules. Skips when kubectl is missing (fails under CI=true).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use fleet_apiserver::{ApiServer, ApiServerConfig};

/// Real kubectl (see `fleet_testkit::tools`): `None` after printing why it is missing, or a
/// panic under `CI=true`.
pub fn kubectl_bin() -> Option<PathBuf> {
    fleet_testkit::tools::kubectl()
}

pub struct Kubectl {
    pub bin: PathBuf,
    pub kubeconfig: PathBuf,
    pub cache: PathBuf,
    pub dir: PathBuf,
}

impl Kubectl {
    pub async fn run(&self, args: &[&str]) -> (bool, String, String) {
        let out = tokio::process::Command::new(&self.bin)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(&self.cache)
            .args(args)
            .current_dir(&self.dir)
            .output()
            .await
            .expect("run kubectl");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    pub async fn ok(&self, args: &[&str]) -> String {
        let (ok, out, err) = self.run(args).await;
        assert!(ok, "kubectl {args:?} failed:\nstdout: {out}\nstderr: {err}");
        out
    }

    pub fn write(&self, name: &str, content: &str) -> String {
        let p = self.dir.join(name);
        std::fs::write(&p, content).expect("write manifest");
        p.to_string_lossy().into_owned()
    }
}

pub async fn start(dir: &Path) -> (ApiServer, Kubectl) {
    let bin = kubectl_bin().expect("checked by caller");
    let srv = ApiServer::new(ApiServerConfig::in_memory())
        .await
        .expect("server");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let router = srv.router();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://{addr}\nusers:\n- name: u\n  user: {{}}\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\n    namespace: default\ncurrent-context: x\n"
        ),
    )
    .expect("kubeconfig");
    let k = Kubectl {
        bin,
        kubeconfig,
        cache: dir.join("cache"),
        dir: dir.to_path_buf(),
    };
    (srv, k)
}

/// Whether kubectl is there; outside CI a missing one skips the test with a message.
pub fn have_kubectl() -> bool {
    kubectl_bin().is_some()
}

/// A fresh in-process server and kubectl for it in a temporary directory; `None` (the test
/// skips) when kubectl is missing outside CI.
pub async fn setup() -> Option<(tempfile::TempDir, ApiServer, Kubectl)> {
    if !have_kubectl() {
        return None;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let (srv, k) = start(dir.path()).await;
    Some((dir, srv, k))
}
