//! The python `kubernetes` client lists and watches `fleet server` using the kubeconfig it wrote
//! (script: tests-py/list_watch.py). Skips when python3 or the module is missing, except under
//! CI=true.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::Server;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};

fn labeled(name: &str) -> ConfigMap {
    let mut c = ConfigMap::default();
    c.metadata.name = Some(name.into());
    c.metadata.labels = Some([("suite".to_string(), "python".to_string())].into());
    c
}

#[tokio::test(flavor = "multi_thread")]
async fn python_client_lists_and_watches() {
    let Some(py) = fleet_testkit::tools::python_kubernetes() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    let api: Api<ConfigMap> = Api::namespaced(srv.client().await, "default");
    for n in ["p1", "p2"] {
        api.create(&PostParams::default(), &labeled(n))
            .await
            .unwrap();
    }
    // Not labeled: must not show up.
    let mut other = ConfigMap::default();
    other.metadata.name = Some("unlabeled".into());
    api.create(&PostParams::default(), &other).await.unwrap();

    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests-py/list_watch.py");
    let mut child = Command::new(py)
        .arg(&script)
        .arg(&srv.kubeconfig)
        .args(["default", "ADDED:p3", "MODIFIED:p3", "DELETED:p3"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            println!("python: {line}");
            let _ = tx.send(line);
        }
    });
    let next = |what: &str| {
        rx.recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("python: no {what} line"))
    };

    let version = next("VERSION");
    assert!(version.starts_with("VERSION "), "{version}");
    println!(
        "python kubernetes client {}",
        version.trim_start_matches("VERSION ")
    );
    let list = next("LIST");
    let fields: Vec<&str> = list.split_whitespace().collect();
    assert_eq!(fields.first(), Some(&"LIST"), "{list}");
    assert_eq!(&fields[2..], ["p1", "p2"], "{list}");
    assert!(
        fields[1].parse::<u64>().is_ok(),
        "list resourceVersion: {list}"
    );
    assert_eq!(next("WATCHING"), "WATCHING");

    api.create(&PostParams::default(), &labeled("p3"))
        .await
        .unwrap();
    api.patch(
        "p3",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"data": {"a": "b"}})),
    )
    .await
    .unwrap();
    api.delete("p3", &DeleteParams::default()).await.unwrap();

    let status =
        crate::common::wait_timeout(&mut child, Duration::from_secs(90)).expect("python finished");
    assert!(
        status.success(),
        "python list/watch script failed: {status}"
    );
    drop(srv);
}
