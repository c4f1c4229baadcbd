//! The python `kubernetes` client lists, creates and watches against the router over plain
//! HTTP. Skips when python3 or the package is missing (fails under CI=true).

use std::time::Duration;

use fleet_apiserver::{ApiServer, ApiServerConfig};

const SCRIPT: &str = r#"
import sys, threading, time
from kubernetes import client, config, watch
config.load_kube_config(config_file=sys.argv[1])
v1 = client.CoreV1Api()
names = [n.metadata.name for n in v1.list_namespace().items]
assert "kube-system" in names, names
v1.create_namespaced_config_map("default", {"metadata": {"name": "py1", "labels": {"a": "b"}}, "data": {"k": "v"}})
cms = v1.list_namespaced_config_map("default", label_selector="a=b").items
assert [c.metadata.name for c in cms] == ["py1"], cms
rv = v1.list_namespaced_config_map("default").metadata.resource_version
def later():
    time.sleep(0.5)
    v1.create_namespaced_config_map("default", {"metadata": {"name": "py2"}})
threading.Thread(target=later).start()
seen = []
w = watch.Watch()
for ev in w.stream(v1.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=10):
    seen.append((ev["type"], ev["object"].metadata.name))
    if ev["object"].metadata.name == "py2":
        w.stop()
assert ("ADDED", "py2") in seen, seen
try:
    v1.read_namespaced_config_map("missing", "default")
    raise SystemExit("expected 404")
except client.exceptions.ApiException as e:
    assert e.status == 404, e.status
print("python-ok")
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_client_lists_and_watches() {
    let Some(py) = fleet_testkit::tools::python_kubernetes() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let srv = ApiServer::new(ApiServerConfig::in_memory()).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = srv.router();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    let kc = dir.path().join("kubeconfig");
    std::fs::write(
        &kc,
        format!("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://{addr}\nusers:\n- name: u\n  user: {{}}\ncontexts:\n- name: x\n  context: {{cluster: c, user: u}}\ncurrent-context: x\n"),
    )
    .unwrap();
    let script = dir.path().join("t.py");
    std::fs::write(&script, SCRIPT).unwrap();
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::process::Command::new(&py)
            .arg(&script)
            .arg(&kc)
            .output(),
    )
    .await
    .expect("python finished")
    .expect("python ran");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("python-ok"),
        "stdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
