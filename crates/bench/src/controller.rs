//! `fleet bench controller`: the manager's controllers alone, on hand-made Cluster objects (no
//! agents), as issue #12 asks. The manager is a `fleet server --no-controllers` child process
//! and the controllers a `fleet controller` child process beside it (this binary, so the
//! controllers' RSS is their own), polling a git repository the bench writes; N Clusters are
//! created with the admin client. Measured: commit → every BundleDeployment written (and again for a commit that
//! changes every bundle), the manager's writes per BundleDeployment by resource, the writes of a
//! resync with nothing changed (the manager restarted on the same store: every controller
//! relists and reconciles everything), and the RSS of the controllers and of the API server (also
//! per 1,000 clusters: above what the same process holds before any Cluster exists).

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use fleet_api::Cluster;
use futures::StreamExt;
use kube::api::{ListParams, PostParams};
use kube::{Api, Client};
use serde_json::json;

use crate::procfs;
use crate::scale::{
    GITREPO, MIB, Manager, Phase, Tracker, WORKSPACE, apply_gitrepo, git_commit, settle,
    spawn_announced, write_repo,
};

/// What `fleet bench controller` runs.
#[derive(Clone, Debug)]
pub struct ControllerOptions {
    /// This binary (the manager is `EXE server`).
    pub exe: PathBuf,
    /// Hand-made Cluster objects.
    pub clusters: usize,
    /// Bundles in the repository (one directory each).
    pub bundles: usize,
    /// Objects per bundle.
    pub objects: usize,
    /// How long the restarted manager is watched for resync writes.
    pub resync: Duration,
    /// Give up on a phase after this long.
    pub timeout: Duration,
    /// The manager's `--store-sync`.
    pub store_sync: String,
}

/// Runs the benchmark; prints a line per phase and last the `controller:` line.
pub async fn controller(opts: ControllerOptions) -> anyhow::Result<()> {
    if opts.clusters == 0 || opts.bundles == 0 || opts.objects == 0 {
        bail!("--clusters, --bundles and --objects must be at least 1");
    }
    let dir = tempfile::tempdir().context("creating a temporary directory")?;
    let say = |m: &str| eprintln!("bench controller: {m}");
    let kubeconfig = dir.path().join("manager/kubeconfig");
    let manager =
        Manager::start_with(&opts.exe, dir.path(), &opts.store_sync, SERVER_FLAGS).await?;
    let admin = crate::observer::client(&kubeconfig).await?;
    install_crds(&admin).await?;
    let ctl = Controllers::start(&opts.exe, dir.path(), &kubeconfig).await?;
    wait_workspace(&admin, opts.timeout).await?;
    say(&format!("manager ready at {}", manager.url));
    let rss_empty = procfs::rss_bytes_pid(manager.pid).unwrap_or(0) as f64 / MIB;
    let ctl_rss_empty = procfs::rss_bytes_pid(ctl.pid).unwrap_or(0) as f64 / MIB;

    // The clusters, and their namespaces (the Cluster controller's work, not measured).
    let t = Instant::now();
    create_clusters(&admin, opts.clusters).await?;
    wait_namespaces(&admin, opts.clusters, opts.timeout).await?;
    println!(
        "clusters: {} Cluster objects and their namespaces in {:.1} s",
        opts.clusters,
        t.elapsed().as_secs_f64()
    );

    let expected = opts.clusters * opts.bundles;
    let tracker = Tracker::start(admin.clone())?;
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).context("creating the repository")?;
    write_repo(&repo, opts.bundles, opts.objects, 1)?;
    git_commit(&repo, "round 1", true)?;

    // Round 1: the GitRepo appears (its first poll fetches the commit).
    let mut phase = Phase::start(&admin, &manager, Some(&tracker)).await?;
    let t = Instant::now();
    apply_gitrepo(&admin, &repo, opts.bundles, "1s").await?;
    let written_s = wait_written(&tracker, expected, &HashMap::new(), opts.timeout).await?;
    let w1 = phase
        .report("written", &admin, &manager, t.elapsed().as_secs_f64())
        .await?;
    drop(phase);
    let rss = procfs::rss_bytes_pid(manager.pid).unwrap_or(0) as f64 / MIB;
    let ctl_rss = procfs::rss_bytes_pid(ctl.pid).unwrap_or(0) as f64 / MIB;
    let ctl_cpu_round1 = procfs::cpu_seconds_pid(ctl.pid);

    // Round 2: a commit changing every bundle.
    let before = tracker.ids();
    write_repo(&repo, opts.bundles, opts.objects, 2)?;
    let mut phase = Phase::start(&admin, &manager, Some(&tracker)).await?;
    let t = Instant::now();
    git_commit(&repo, "round 2", false)?;
    let update_s = wait_written(&tracker, expected, &before, opts.timeout).await?;
    let w2 = phase
        .report("update", &admin, &manager, t.elapsed().as_secs_f64())
        .await?;
    drop(phase);
    let ctl_cpu_round2 = procfs::cpu_seconds_pid(ctl.pid) - ctl_cpu_round1;
    tracker.stop();
    // Let trailing status writes of round 2 land before the restart: a Cluster's status may
    // wait after its previous write up to the controllers' spacing, four times that while BDs
    // wait for an agent, as they all do here. That long, then quiet for 6 s (the controller's
    // Lease renewals every 10 s rule out a longer quiet window).
    let spacing = fleet_controller::cluster::status_spacing(opts.clusters)
        * fleet_controller::cluster::ROLLOUT_SPACING_FACTOR;
    tokio::time::sleep(spacing).await;
    settle(&admin, Duration::from_secs(6), opts.timeout).await?;

    // Resync: the same store, a new manager process; every controller starts from a full list.
    ctl.stop().await;
    manager.stop().await;
    let manager =
        Manager::start_with(&opts.exe, dir.path(), &opts.store_sync, SERVER_FLAGS).await?;
    let admin = crate::observer::client(&kubeconfig).await?;
    let mut resync = Phase::start(&admin, &manager, None).await?;
    let ctl = Controllers::start(&opts.exe, dir.path(), &kubeconfig).await?;
    tokio::time::sleep(opts.resync).await;
    // The new controller's Lease (acquired, then renewed every retry period) is leader
    // election's heartbeat, not the controllers' work: counted apart.
    let all_writes = resync
        .report("resync", &admin, &manager, opts.resync.as_secs_f64())
        .await?;
    let lease_writes = resync
        .by_resource
        .get("leases.coordination.k8s.io")
        .copied()
        .unwrap_or(0);
    let resync_writes = all_writes.saturating_sub(lease_writes);
    let rss_after = procfs::rss_bytes_pid(ctl.pid).unwrap_or(0) as f64 / MIB;
    drop(resync);
    ctl.stop().await;
    manager.stop().await;

    let per_bd = |w: u64| w as f64 / expected as f64;
    println!(
        "controller: clusters={} bundles={} bundledeployments={expected} written_s={written_s:.2} \
         update_s={update_s:.2} writes_per_bd={:.2} update_writes_per_bd={:.2} resync_writes={resync_writes} resync_lease_writes={lease_writes} \
         controller_rss_mib={ctl_rss:.0} empty_controller_rss_mib={ctl_rss_empty:.0} \
         rss_mib_per_1000_clusters={:.1} resynced_controller_rss_mib={rss_after:.0} \
         apiserver_rss_mib={rss:.0} empty_apiserver_rss_mib={rss_empty:.0} \
         controller_cpu_s={ctl_cpu_round1:.1} update_controller_cpu_s={ctl_cpu_round2:.1}",
        opts.clusters,
        opts.bundles,
        per_bd(w1),
        per_bd(w2),
        (ctl_rss - ctl_rss_empty).max(0.0) / opts.clusters as f64 * 1000.0,
    );
    Ok(())
}

/// The API server alone: its controllers run in their own process.
const SERVER_FLAGS: &[&str] = &["--no-controllers"];

/// `fleet controller` against the bench's API server, a child process of its own.
struct Controllers {
    child: tokio::process::Child,
    pid: u32,
}

impl Controllers {
    async fn start(
        exe: &std::path::Path,
        dir: &std::path::Path,
        kubeconfig: &std::path::Path,
    ) -> anyhow::Result<Controllers> {
        let log = std::fs::File::create(dir.join("controller.log")).context("controller log")?;
        let mut cmd = tokio::process::Command::new(exe);
        cmd.arg("controller")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .arg("--cache-dir")
            .arg(dir.join("controller-cache"))
            .args(["--listen", "127.0.0.1:0"])
            .stderr(log);
        let (child, pid, _addr) = spawn_announced(cmd, "listening ", "the controller").await?;
        Ok(Controllers { child, pid })
    }

    /// SIGTERM, so the controller releases its Lease and a new one leads at once.
    async fn stop(mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &self.pid.to_string()])
            .status();
        if tokio::time::timeout(Duration::from_secs(10), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.start_kill();
            let _ = self.child.wait().await;
        }
    }
}

/// Fleet's CRDs, as `fleet install crds | kubectl apply -f -` installs them on any cluster.
async fn install_crds(admin: &Client) -> anyhow::Result<()> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let api: Api<CustomResourceDefinition> = Api::all(admin.clone());
    for crd in fleet_api::crds::all() {
        match api.create(&PostParams::default(), &crd).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => return Err(e).context("installing Fleet's CRDs"),
        }
    }
    Ok(())
}

/// Waits for the controllers' bootstrap to create the workspace the Clusters go in.
async fn wait_workspace(admin: &Client, timeout: Duration) -> anyhow::Result<()> {
    let nss: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(admin.clone());
    let deadline = Instant::now() + timeout;
    while nss.get_opt(WORKSPACE).await?.is_none() {
        if Instant::now() > deadline {
            bail!("namespace {WORKSPACE} not created by the controllers within {timeout:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// Creates `n` Clusters in the workspace (32 requests in flight), labelled so targets could pick.
async fn create_clusters(admin: &Client, n: usize) -> anyhow::Result<()> {
    let api: Api<Cluster> = Api::namespaced(admin.clone(), WORKSPACE);
    let results: Vec<anyhow::Result<()>> = futures::stream::iter(0..n)
        .map(|i| {
            let api = api.clone();
            async move {
                let c: Cluster = serde_json::from_value(json!({
                    "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Cluster",
                    "metadata": {"name": format!("c{i:05}"), "namespace": WORKSPACE,
                        "labels": {"env": if i % 2 == 0 { "prod" } else { "dev" }}},
                    "spec": {}
                }))?;
                api.create(&PostParams::default(), &c)
                    .await
                    .with_context(|| format!("creating Cluster c{i:05}"))?;
                Ok(())
            }
        })
        .buffer_unordered(32)
        .collect()
        .await;
    results.into_iter().collect()
}

/// Waits until every Cluster has its namespace in `status.namespace`.
async fn wait_namespaces(admin: &Client, n: usize, timeout: Duration) -> anyhow::Result<()> {
    let api: Api<Cluster> = Api::namespaced(admin.clone(), WORKSPACE);
    let t = Instant::now();
    loop {
        let list = api.list(&ListParams::default()).await?;
        let done = list
            .items
            .iter()
            .filter(|c| c.status.as_ref().is_some_and(|s| !s.namespace.is_empty()))
            .count();
        if done == n {
            return Ok(());
        }
        if t.elapsed() > timeout {
            bail!("{done} of {n} Clusters have a namespace after {timeout:?}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits until every BundleDeployment carries a new deploymentID; returns the seconds taken.
async fn wait_written(
    tracker: &Tracker,
    expected: usize,
    before: &HashMap<String, String>,
    timeout: Duration,
) -> anyhow::Result<f64> {
    let t = Instant::now();
    while t.elapsed() < timeout {
        if tracker.all_written(expected, before) {
            return Ok(t.elapsed().as_secs_f64());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    bail!(
        "{} of {expected} BundleDeployments written after {timeout:?} (GitRepo {WORKSPACE}/{GITREPO})",
        tracker.count()
    )
}
