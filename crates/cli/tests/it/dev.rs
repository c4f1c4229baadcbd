//! `fleet dev --exit-when-ready`: a manager, three downstream clusters registered through real
//! tokens, agents, the example repository and its GitRepo, all Ready; then a second run on the
//! same directory resumes instead of starting over.

use std::time::{Duration, Instant};

use fleet_testkit::{FleetProcess, Kubectl, fleet_bin, in_ci, tools};

#[test]
fn dev_reaches_ready_and_resumes() {
    if tools::git().is_none() || tools::kubectl().is_none() {
        assert!(!in_ci(), "git and kubectl are required under CI=true");
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("dev");
    let d = dir.to_string_lossy().into_owned();
    let args = [
        "dev",
        "--clusters",
        "3",
        "--data-dir",
        &d,
        "--exit-when-ready",
        "--timeout",
        "240",
    ];

    let started = Instant::now();
    let mut dev = FleetProcess::spawn(fleet_bin!(), "fleet dev", &args, &[]);
    let status = dev.wait(Duration::from_secs(300));
    let took = started.elapsed();
    assert!(
        status.success(),
        "fleet dev failed ({status}):\n{}",
        dev.stderr_text()
    );
    let out = dev.stdout.lock().map(|l| l.join("\n")).unwrap_or_default();
    assert!(
        out.contains("BundleDeployments Ready on 3 clusters"),
        "{out}"
    );
    eprintln!("fleet dev --exit-when-ready: all Ready in {took:?}");

    // The stable output files.
    let manager = dir.join("manager/kubeconfig");
    assert!(manager.is_file());
    for c in ["c1", "c2", "c3"] {
        assert!(
            dir.join("clusters").join(c).join("kubeconfig").is_file(),
            "{c}"
        );
    }

    // Resume on the same directory without --exit-when-ready: it keeps running once Ready, the
    // clusters keep their credentials, and SIGTERM stops everything it started.
    let resume = ["dev", "--clusters", "3", "--data-dir", &d];
    let mut again = FleetProcess::spawn(fleet_bin!(), "fleet dev (resumed)", &resume, &[]);
    again.wait_for_stdout(Duration::from_secs(240), |l| {
        l.contains("BundleDeployments Ready on 3 clusters")
    });
    let text = again.stderr_text();
    assert!(
        !text.contains("registering"),
        "a resumed run reuses the clusters' credentials:\n{text}"
    );

    // Targeting did something: c1 is env=dev, c2 env=prod; prod-only reaches only c2, and the
    // kustomize bundle builds each cluster's own overlay.
    let c1 = Kubectl::new(&dir.join("clusters/c1/kubeconfig")).expect("kubectl");
    let c2 = Kubectl::new(&dir.join("clusters/c2/kubeconfig")).expect("kubectl");
    assert!(
        c2.get_json(&["configmap", "audit-policy", "-n", "fleet-dev-prod"])
            .is_some()
    );
    assert!(
        c1.get_json(&["configmap", "audit-policy", "-n", "fleet-dev-prod"])
            .is_none()
    );
    assert!(
        c1.get_json(&["deployment", "worker-dev", "-n", "fleet-dev-kustomize"])
            .is_some()
    );
    let prod = c2
        .get_json(&["deployment", "worker-prod", "-n", "fleet-dev-kustomize"])
        .expect("prod overlay on c2");
    assert_eq!(prod["spec"]["replicas"], 3);
    // Per-cluster Helm values: the region label of each cluster.
    let cm = c2
        .get_json(&["configmap", "greeter-config", "-n", "fleet-dev-helm"])
        .expect("helm bundle on c2");
    assert_eq!(cm["data"]["region"], "us");

    let status = again.terminate();
    assert!(status.success(), "fleet dev after SIGTERM: {status}");
    for c in ["c1", "c2", "c3"] {
        let kc = dir.join("clusters").join(c).join("kubeconfig");
        let k = Kubectl::new(&kc).expect("kubectl");
        let out = k.run(&["get", "ns", "--request-timeout=2s"]);
        assert!(
            !out.status.success(),
            "{c} still serving after fleet dev stopped"
        );
    }
}
