//! Two replicas: Lease leader election between `fleet controller` processes (only the leader
//! writes; SIGKILL of the leader hands over within the lease time) and `--shard-id` (each
//! controller handles only the objects labelled for its shard; the default shard the unlabelled).

use std::time::{Duration, Instant};

use fleet_testkit::{
    FleetController, FleetServer, GitDaemon, GitRepo, Kubectl, eventually, fleet_bin,
};

use super::{T, get};

/// `fleet server --no-controllers` with the CRDs installed by `fleet install crds | kubectl apply`.
pub fn server(dir: &std::path::Path) -> (FleetServer, Kubectl) {
    let srv = FleetServer::start(fleet_bin!(), dir, &["--no-controllers"]);
    let k = srv.kubectl().expect("kubectl");
    let crds = std::process::Command::new(fleet_bin!())
        .args(["install", "crds"])
        .output()
        .expect("fleet install crds");
    assert!(crds.status.success());
    k.apply(&String::from_utf8_lossy(&crds.stdout));
    eventually("fleet CRDs served", T, || {
        k.get_json(&["gitrepos", "-A"])
            .map(|_| ())
            .ok_or("not yet".to_string())
    });
    (srv, k)
}

/// The commit label of bundle `name` in fleet-default.
pub fn bundle_commit(k: &Kubectl, name: &str) -> Result<String, String> {
    let b: fleet_api::Bundle = get(k, &["bundle", name, "-n", "fleet-default"])?;
    b.metadata
        .labels
        .unwrap_or_default()
        .get("fleet.cattle.io/commit")
        .cloned()
        .ok_or_else(|| format!("bundle {name} has no commit label"))
}

fn gitrepo_yaml(name: &str, url: &str, labels: &str) -> String {
    format!(
        "apiVersion: fleet.cattle.io/v1alpha1\nkind: GitRepo\nmetadata:\n  name: {name}\n  namespace: fleet-default\n  labels: {{{labels}}}\nspec:\n  repo: {url}\n  branch: main\n  pollingInterval: 1s\n  paths: [a]\n  targets:\n  - clusterSelector: {{}}\n"
    )
}

const LEASE: &str = "fleet-controller-leader-election-shard";

fn holder(k: &Kubectl, lease: &str) -> Option<String> {
    let v = k.get_json(&["lease", lease, "-n", "cattle-fleet-system"])?;
    v["spec"]["holderIdentity"]
        .as_str()
        .map(str::to_string)
        .filter(|h| !h.is_empty())
}

#[test]
fn leader_election_hands_over_on_sigkill() {
    let (Some(_), Some(_)) = (fleet_testkit::tools::kubectl(), fleet_testkit::tools::git()) else {
        assert!(
            !fleet_testkit::in_ci(),
            "kubectl and git are required under CI"
        );
        println!("skipping: kubectl or git missing");
        return;
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let (srv, k) = server(&tmp.path().join("server"));
    let repos = tmp.path().join("repos");
    let repo = GitRepo::init(&repos.join("app"));
    repo.write(
        "a/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  v: \"1\"\n",
    );
    let c1 = repo.commit("first");
    let daemon = GitDaemon::start(&repos);
    let url = daemon.repo_url("app");

    // Short timings so the test is quick; the defaults are upstream's chart values (30s/25s/10s).
    let election = [
        "--lease-duration",
        "3s",
        "--renew-deadline",
        "2s",
        "--retry-period",
        "500ms",
    ];
    let mut a = FleetController::start(fleet_bin!(), &srv.kubeconfig, &election);
    eventually("a leads", T, || match a.metric("fleet_controller_leader") {
        1 => Ok(()),
        v => Err(format!("leader={v}")),
    });
    let a_identity = holder(&k, LEASE).expect("the lease names its holder");
    let b = FleetController::start(fleet_bin!(), &srv.kubeconfig, &election);
    k.apply("apiVersion: fleet.cattle.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: c1\n  namespace: fleet-default\nspec: {}\n");
    k.apply(&gitrepo_yaml("gr", &url, ""));
    eventually("gr-a at the first commit", T, || {
        match bundle_commit(&k, "gr-a")? {
            c if c == c1 => Ok(()),
            c => Err(format!("commit {c}")),
        }
    });
    let ns = fleet_api::names::cluster_namespace("fleet-default", "c1");
    eventually("gr-a deployed to c1", T, || {
        get::<fleet_api::BundleDeployment>(&k, &["bundledeployment", "gr-a", "-n", &ns])
    });
    // Only the leader wrote; the standby serves its listener but is not ready and silent.
    assert!(a.metric("fleet_controller_api_writes_total") > 0);
    assert_eq!(b.metric("fleet_controller_leader"), 0);
    assert_eq!(b.metric("fleet_controller_api_writes_total"), 0);
    assert_eq!(b.get("/readyz").0, 503);
    assert_eq!(holder(&k, LEASE).as_deref(), Some(a_identity.as_str()));

    // SIGKILL the leader (no release), then commit and add a GitRepo while nobody leads.
    a.process.kill();
    let killed = Instant::now();
    repo.write(
        "a/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  v: \"2\"\n",
    );
    let c2 = repo.commit("second");
    k.apply(&gitrepo_yaml("gr2", &url, ""));
    eventually("b takes over", T, || {
        match b.metric("fleet_controller_leader") {
            1 => Ok(()),
            v => Err(format!("leader={v}")),
        }
    });
    let takeover = killed.elapsed();
    println!("takeover after SIGKILL: {takeover:?} (lease duration 3s, retry period 500ms)");
    // Within the lease duration, plus one retry period and the first observation's lag.
    assert!(takeover < Duration::from_secs(5), "{takeover:?}");
    let b_identity = holder(&k, LEASE).expect("holder");
    assert_ne!(b_identity, a_identity);
    let lease = k
        .get_json(&["lease", LEASE, "-n", "cattle-fleet-system"])
        .expect("lease");
    assert_eq!(lease["spec"]["leaseTransitions"], 1, "{lease}");
    eventually("gr-a at the second commit", T, || {
        match bundle_commit(&k, "gr-a")? {
            c if c == c2 => Ok(()),
            c => Err(format!("commit {c}")),
        }
    });
    eventually("gr2-a deployed to c1", T, || {
        get::<fleet_api::BundleDeployment>(&k, &["bundledeployment", "gr2-a", "-n", &ns])
    });
    assert!(b.metric("fleet_controller_api_writes_total") > 0);
    eventually("b ready", T, || match b.get("/readyz") {
        (200, _) => Ok(()),
        (c, body) => Err(format!("{c} {body}")),
    });
}
