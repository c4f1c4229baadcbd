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
    if !super::tools_present() {
        return;
    }
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

#[test]
fn shards_handle_only_their_labelled_objects() {
    if !super::tools_present() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let (srv, k) = server(&tmp.path().join("server"));
    let repos = tmp.path().join("repos");
    let repo = GitRepo::init(&repos.join("app"));
    repo.write(
        "a/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
    );
    repo.commit("first");
    let daemon = GitDaemon::start(&repos);
    let url = daemon.repo_url("app");

    let default = FleetController::start(fleet_bin!(), &srv.kubeconfig, &[]);
    let blue = FleetController::start(fleet_bin!(), &srv.kubeconfig, &["--shard-id", "blue"]);
    for c in [&default, &blue] {
        c.wait_ready(T);
    }
    // Each shard elects on its own Lease, so both lead.
    assert!(holder(&k, LEASE).is_some());
    assert!(holder(&k, &format!("{LEASE}-blue")).is_some());

    k.apply("apiVersion: fleet.cattle.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: c1\n  namespace: fleet-default\nspec: {}\n");
    k.apply("apiVersion: fleet.cattle.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: c2\n  namespace: fleet-default\n  labels:\n    fleet.cattle.io/shard-ref: green\nspec: {}\n");
    k.apply(&gitrepo_yaml("plain", &url, ""));
    k.apply(&gitrepo_yaml(
        "blue",
        &url,
        "fleet.cattle.io/shard-ref: blue",
    ));
    k.apply(&gitrepo_yaml(
        "green",
        &url,
        "fleet.cattle.io/shard-ref: green",
    ));
    let c1 = fleet_api::names::cluster_namespace("fleet-default", "c1");
    // The default shard handles `plain` and c1; blue handles `blue` (deploying to c1 too).
    eventually("plain-a deployed to c1", T, || {
        get::<fleet_api::BundleDeployment>(&k, &["bundledeployment", "plain-a", "-n", &c1])
    });
    let bd: fleet_api::BundleDeployment = eventually("blue-a deployed to c1", T, || {
        get(&k, &["bundledeployment", "blue-a", "-n", &c1])
    });
    let shard_of = |labels: Option<std::collections::BTreeMap<String, String>>| {
        labels
            .unwrap_or_default()
            .get("fleet.cattle.io/shard-ref")
            .cloned()
    };
    assert_eq!(shard_of(bd.metadata.labels).as_deref(), Some("blue"));
    let b: fleet_api::Bundle =
        get(&k, &["bundle", "blue-a", "-n", "fleet-default"]).expect("bundle");
    assert_eq!(shard_of(b.metadata.labels).as_deref(), Some("blue"));
    // c1's status (default shard) counts the BDs of both shards in its namespace.
    eventually("c1 counts both bundles", T, || {
        let c: fleet_api::Cluster = get(&k, &["cluster", "c1", "-n", "fleet-default"])?;
        match c.status.map(|s| s.summary.desired_ready) {
            Some(2) => Ok(()),
            other => Err(format!("desiredReady {other:?}")),
        }
    });
    // Each controller cached only its own GitRepo; no controller runs shard green, so the green
    // GitRepo and Cluster stay untouched: no finalizer, no status, no bundle, no namespace.
    assert_eq!(
        default.metric("fleet_controller_cached_objects{kind=\"gitrepo\"}"),
        1
    );
    assert_eq!(
        blue.metric("fleet_controller_cached_objects{kind=\"gitrepo\"}"),
        1
    );
    let green: fleet_api::GitRepo =
        get(&k, &["gitrepo", "green", "-n", "fleet-default"]).expect("green");
    assert!(green.metadata.finalizers.unwrap_or_default().is_empty());
    assert!(green.status.is_none_or(|s| s.commit.is_empty()));
    assert!(get::<fleet_api::Bundle>(&k, &["bundle", "green-a", "-n", "fleet-default"]).is_err());
    let c2: fleet_api::Cluster = get(&k, &["cluster", "c2", "-n", "fleet-default"]).expect("c2");
    assert!(
        c2.status.is_none_or(|s| s.namespace.is_empty()),
        "c2 belongs to shard green"
    );
    assert!(c2.metadata.finalizers.unwrap_or_default().is_empty());
    let plain: fleet_api::GitRepo =
        get(&k, &["gitrepo", "plain", "-n", "fleet-default"]).expect("plain");
    assert!(plain.status.is_some_and(|s| !s.commit.is_empty()));

    // A green controller appears: it picks up its GitRepo and Cluster.
    let _green = FleetController::start(fleet_bin!(), &srv.kubeconfig, &["--shard-id", "green"]);
    let c2ns = fleet_api::names::cluster_namespace("fleet-default", "c2");
    eventually("green-a deployed to c1 and c2", T, || {
        get::<fleet_api::BundleDeployment>(&k, &["bundledeployment", "green-a", "-n", &c1])?;
        get::<fleet_api::BundleDeployment>(&k, &["bundledeployment", "green-a", "-n", &c2ns])
    });
    // The other shards did not pick up c2's BDs from other bundles (they target c2 only once its
    // namespace exists): plain and blue follow through too.
    eventually("plain-a and blue-a reach c2", T, || {
        get::<fleet_api::BundleDeployment>(&k, &["bundledeployment", "plain-a", "-n", &c2ns])?;
        get::<fleet_api::BundleDeployment>(&k, &["bundledeployment", "blue-a", "-n", &c2ns])
    });
}
