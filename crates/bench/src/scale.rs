//! `fleet bench scale`: one git commit to every BundleDeployment Ready on N clusters, measured
//! with the real pieces. The manager is a `fleet server` child process (this same binary, so its
//! RSS is its own) polling a git repository the bench writes. N agents run the real agent code
//! (`fleet_agent`) in this process, each registered through a real ClusterRegistrationToken
//! (made by `fleet install agent-token`) and holding its own credential and connections to the
//! manager. Each agent's downstream cluster is the real API server router with in-memory storage
//! and simulated workload status, reached in-process (no socket, no TLS).
//!
//! Writes are counted on the manager's store itself: its resourceVersion is a global revision
//! bumped by every create, update, patch and delete (controllers and agents alike).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use fleet_agent::register::{self, RegisterOptions};
use fleet_api::BundleDeployment;
use fleet_apiserver::{ApiServer, ApiServerConfig};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret, Service};
use kube::api::{DynamicObject, ListParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::watcher;
use kube::{Api, Client, Resource, ResourceExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::procfs;

/// What `fleet bench scale` runs.
#[derive(Clone, Debug)]
pub struct ScaleOptions {
    /// The `fleet` binary, started as the manager (`fleet server`) and for `install agent-token`.
    pub exe: PathBuf,
    /// Downstream clusters, one agent each.
    pub clusters: usize,
    /// Bundles (directories of the repository).
    pub bundles: usize,
    /// Objects per bundle.
    pub objects: usize,
    /// Update rounds.
    pub runs: usize,
    /// The GitRepo's pollingInterval.
    pub polling_interval: String,
    /// Window after Ready in which idle writes are counted.
    pub idle: Duration,
    /// Longest wait for any phase.
    pub timeout: Duration,
    /// The manager's `--store-sync`.
    pub store_sync: String,
}

pub(crate) const WORKSPACE: &str = "fleet-default";
pub(crate) const GITREPO: &str = "bench";
const AGENT_NAMESPACE: &str = "cattle-fleet-system";
/// Downstream namespace of every bundle's objects.
const TARGET_NAMESPACE: &str = "bench";
/// Agents registering at once: the bench admits them in waves, as a real fleet's clusters
/// arrive, so the registration rate measures the manager rather than 10,000 simultaneous TLS
/// handshakes and credential polls (each polls every 200 ms here, up to 2 s apart). When each
/// poll's authorization still walked every registration's RoleBinding, 10,000 at once starved
/// the manager (196 granted in 6 minutes); all at once has not been measured since.
const REGISTER_IN_FLIGHT: usize = 100;
/// Annotation carrying the commit round on every deployed object.
const REV_ANNOTATION: &str = "fleet-bench/rev";
/// Label selecting the bench's objects downstream.
const OBJECT_LABEL: &str = "fleet-bench/object";

/// Runs the benchmark and prints the figures; the `scale:` line comes last.
pub async fn scale(opts: ScaleOptions) -> anyhow::Result<()> {
    if opts.clusters == 0 || opts.bundles == 0 || opts.objects == 0 {
        bail!("--clusters, --bundles and --objects must be at least 1");
    }
    let dir = tempfile::tempdir().context("creating a temporary directory")?;
    let say = |m: &str| eprintln!("bench scale: {m}");
    // The agents' connections to the manager get a thread of their own, as each would have in a
    // process of its own: queued behind thousands of agents' work, their keep-alive pongs were
    // read after the 15 s timeout and every connection was dropped at once.
    fleet_kube::run_connections_on(crate::observer::connections()?);

    // The manager.
    let manager = Manager::start(&opts.exe, dir.path(), &opts.store_sync).await?;
    // On the observer thread, with the tracker and write counters that use it.
    let admin = crate::observer::client(&dir.path().join("manager/kubeconfig")).await?;
    say(&format!("manager ready at {}", manager.url));
    // What each process's allocator was started with, as the kernel holds it: the figures
    // depend on it (see `BENCH_MALLOC_CONF`).
    let conf = |pid: u32| {
        procfs::env_var_pid(pid, MALLOC_CONF)
            .filter(|c| !c.is_empty())
            .unwrap_or_else(|| "jemalloc defaults".into())
    };
    println!(
        "allocator: bench process {}, manager {}",
        conf(std::process::id()),
        conf(manager.pid)
    );

    // One registration token, made by the real `fleet install agent-token`.
    let bootstrap = agent_token(&opts.exe, &dir.path().join("manager/kubeconfig")).await?;

    // Downstream clusters: what one costs is measured on the way.
    let rss0 = procfs::rss_bytes().unwrap_or(0);
    let t = Instant::now();
    let mut downstreams = Vec::with_capacity(opts.clusters);
    let requests = RequestCounter::default();
    for i in 0..opts.clusters {
        downstreams.push(Downstream::new(i, &bootstrap, &requests).await?);
    }
    let rss_downstreams = procfs::rss_bytes().unwrap_or(0);
    let per_ds = rss_downstreams.saturating_sub(rss0) as f64 / opts.clusters as f64 / MIB;
    println!(
        "downstreams: {} in-memory API servers (simulated workloads) in {:.1} s, {per_ds:.2} MiB each",
        opts.clusters,
        t.elapsed().as_secs_f64()
    );

    // Registration: up to REGISTER_IN_FLIGHT agents at once.
    let rev0 = revision(&admin).await?;
    let t = Instant::now();
    let reg = RegisterOptions {
        system_namespace: AGENT_NAMESPACE.into(),
        poll_interval: Duration::from_millis(200),
        timeout: opts.timeout,
        max_backoff: Duration::from_secs(2),
        pod_name: None,
    };
    let mut registrations = futures::stream::iter(downstreams.iter().enumerate().map(|(i, d)| {
        let mut reg = reg.clone();
        reg.pod_name = Some(format!("bench-agent-{i}"));
        let client = d.client.clone();
        tokio::spawn(async move { register::ensure_registered(client, &reg).await })
    }))
    .buffer_unordered(REGISTER_IN_FLIGHT);
    while let Some(r) = registrations.next().await {
        r.context("registration task")?
            .context("registering an agent")?;
    }
    let register_s = t.elapsed().as_secs_f64();
    let rss_registered = procfs::rss_bytes().unwrap_or(0);
    let reg_writes = revision(&admin).await?.saturating_sub(rev0);
    println!(
        "registration: {} agents ({REGISTER_IN_FLIGHT} at most at once) in {register_s:.2} s ({:.0}/s), {:.1} API writes per registration, {}",
        opts.clusters,
        opts.clusters as f64 / register_s,
        reg_writes as f64 / opts.clusters as f64,
        manager.memory()
    );

    // The agents. The clock of a rollout starts on a fleet at rest: every agent following its
    // BundleDeployments and checked in once, so that neither their start (connections, first
    // lists) nor their first check-ins fall into the round.
    let t = Instant::now();
    let mut agents = Vec::with_capacity(downstreams.len());
    let mut synced = Vec::with_capacity(downstreams.len());
    for d in &downstreams {
        let (tx, rx) = tokio::sync::oneshot::channel();
        synced.push(rx);
        agents.push(tokio::spawn(fleet_agent::run_reporting_sync(
            d.client.clone(),
            fleet_agent::AgentOptions {
                system_namespace: AGENT_NAMESPACE.into(),
                ..Default::default()
            },
            Some(tx),
        )));
    }
    tokio::time::timeout(opts.timeout, futures::future::join_all(synced))
        .await
        .context("waiting for every agent to list its BundleDeployments")?;
    let synced_s = t.elapsed().as_secs_f64();
    wait_checked_in(&admin, opts.clusters, opts.timeout).await?;
    let checked_in_s = t.elapsed().as_secs_f64();
    if let Err(e) = settle(&admin, Duration::from_secs(2), opts.timeout).await {
        say(&format!(
            "the fleet did not come to rest before the rollout: {e:#}"
        ));
    }
    println!(
        "agents: {} following their BundleDeployments after {synced_s:.2} s, all checked in after {checked_in_s:.2} s (first check-in {} s after start), at rest after {:.2} s, {}",
        opts.clusters,
        fleet_agent::FIRST_CHECKIN.as_secs(),
        t.elapsed().as_secs_f64(),
        manager.memory()
    );

    let tracker = Tracker::start(admin.clone())?;
    let repo = dir.path().join("repo");
    write_repo(&repo, opts.bundles, opts.objects, 1)?;
    git_commit(&repo, "round 1", true)?;
    let expected = opts.clusters * opts.bundles;

    // Ready: GitRepo created right after the first commit → every BD Ready, objects present.
    let mut phase = Phase::start(&admin, &manager, Some(&tracker)).await?;
    requests.reset();
    let relists = fleet_agent::bd_watch::relists();
    apply_gitrepo(&admin, &repo, opts.bundles, &opts.polling_interval).await?;
    let ready = wait_ready(
        &tracker,
        &downstreams,
        expected,
        1,
        opts.objects * opts.bundles,
        &HashMap::new(),
        opts.timeout,
    )
    .await;
    let mut all_ready = ready.is_ok();
    if let Err(e) = &ready {
        say(&format!("round 1: {e:#}"));
        say(&agents_ended(&mut agents).await);
    }
    let ready_s = ready.as_ref().map(|r| r.secs).unwrap_or(f64::NAN);
    // Status writes that trail the last Ready (aggregates queued at most once a second, a
    // Cluster's once per the controllers' status spacing) belong to the rollout, not to the idle
    // window.
    let quiet = Duration::from_secs(6)
        .max(fleet_controller::cluster::status_spacing(opts.clusters) + Duration::from_secs(1));
    let _ = settle(&admin, quiet, quiet * 5).await;
    let ready_writes = phase.report("ready", &admin, &manager, ready_s).await?;
    requests.print("ready", expected);
    print_relists("ready", relists);
    // Its counting watches end here: left open they would be served every later event too, work
    // charged to the manager in the rounds after.
    drop(phase);
    // What one cluster costs this process, by phase (the tracker's share included).
    let per_cluster =
        |from: u64, to: u64| to.saturating_sub(from) as f64 / opts.clusters as f64 / MIB;
    let rss_ready = procfs::rss_bytes().unwrap_or(0);
    println!(
        "memory per cluster: downstream {per_ds:.2} MiB, registration +{:.2}, agent running with {} bundles +{:.2}, total {:.2} MiB",
        per_cluster(rss_downstreams, rss_registered),
        opts.bundles,
        per_cluster(rss_registered, rss_ready),
        per_cluster(rss0, rss_ready),
    );
    let writes_per_bd = ready_writes as f64 / expected as f64;

    // Idle window: its writes, and the CPU each process takes with the fleet at rest.
    let mut idle = Phase::start(&admin, &manager, Some(&tracker)).await?;
    tokio::time::sleep(opts.idle).await;
    let idle_writes = idle
        .report("idle", &admin, &manager, opts.idle.as_secs_f64())
        .await?;
    drop(idle);
    let idle_per_min = idle_writes as f64 * 60.0 / opts.idle.as_secs_f64().max(0.001);

    // Updates: a commit changing every bundle → all Ready again.
    let mut update_s = Vec::new();
    let mut ids = ready.map(|r| r.ids).unwrap_or_default();
    for round in 2..=(opts.runs.max(1) + 1) {
        if !all_ready {
            break;
        }
        let mut phase = Phase::start(&admin, &manager, Some(&tracker)).await?;
        requests.reset();
        let relists = fleet_agent::bd_watch::relists();
        write_repo(&repo, opts.bundles, opts.objects, round)?;
        git_commit(&repo, &format!("round {round}"), false)?;
        match wait_ready(
            &tracker,
            &downstreams,
            expected,
            round,
            opts.objects * opts.bundles,
            &ids,
            opts.timeout,
        )
        .await
        {
            Ok(r) => {
                phase.report("update", &admin, &manager, r.secs).await?;
                requests.print("update", expected);
                print_relists("update", relists);
                update_s.push(r.secs);
                ids = r.ids;
            }
            Err(e) => {
                say(&format!("update round {round}: {e:#}"));
                say(&agents_ended(&mut agents).await);
                all_ready = false;
            }
        }
    }
    update_s.sort_by(|a, b| a.total_cmp(b));
    let update = update_s
        .get(update_s.len() / 2)
        .copied()
        .unwrap_or(f64::NAN);

    let manager_rss = procfs::hwm_bytes_pid(manager.pid).unwrap_or(0) as f64 / MIB;
    let agents_rss = procfs::hwm_bytes().unwrap_or(0) as f64 / MIB;
    let bds = tracker.count();
    // Agents first, so that none logs the manager going away.
    for a in &agents {
        a.abort();
    }
    tracker.stop();
    manager.stop().await;
    println!(
        "scale: clusters={} bundles={} bundledeployments={} register_s={register_s:.2} ready_s={ready_s:.2} \
         update_s={update:.2} manager_rss_mib={manager_rss:.0} agents_rss_mib={agents_rss:.0} \
         writes_per_bd={writes_per_bd:.2} idle_writes_per_min={idle_per_min:.0} all_ready={all_ready}",
        opts.clusters, opts.bundles, bds,
    );
    if !all_ready {
        bail!("not every BundleDeployment became Ready");
    }
    Ok(())
}

pub(crate) const MIB: f64 = 1024.0 * 1024.0;

/// The agents' BundleDeployment watches that listed again since `from` (see
/// [`fleet_agent::bd_watch::relists`]): a watch that could not resume costs the manager a list.
fn print_relists(phase: &str, from: u64) {
    println!(
        "{phase} relists: {} of the agents' BundleDeployment watches listed again",
        fleet_agent::bd_watch::relists().saturating_sub(from)
    );
}

/// The `fleet server` child.
pub(crate) struct Manager {
    child: tokio::process::Child,
    pub(crate) pid: u32,
    pub(crate) url: String,
    /// Its heap and mapped files, sampled while it runs.
    memory: std::sync::Arc<procfs::PeakSampler>,
}

/// The environment variable jemalloc (as `tikv-jemalloc-sys` builds it) reads its options from.
pub const MALLOC_CONF: &str = "_RJEM_MALLOC_CONF";

/// jemalloc's options for the bench process: its heap on transparent huge pages. The process
/// holds what in production are N agent processes of a few MiB each (8 GiB at 10,000 clusters),
/// and with 4 KiB pages its work per BundleDeployment at 10,000 clusters cost about twice what
/// it did at 1,000: the walks of a page table over gigabytes, which N small processes do not
/// make. The manager is left as it runs in production.
pub const BENCH_MALLOC_CONF: &str = "thp:always,metadata_thp:always";

impl Manager {
    pub(crate) async fn start(exe: &Path, dir: &Path, store_sync: &str) -> anyhow::Result<Manager> {
        Manager::start_with(exe, dir, store_sync, &[]).await
    }

    /// [`Manager::start`] with more `fleet server` flags.
    pub(crate) async fn start_with(
        exe: &Path,
        dir: &Path,
        store_sync: &str,
        extra: &[&str],
    ) -> anyhow::Result<Manager> {
        let data = dir.join("manager");
        let log = std::fs::File::create(dir.join("manager.log")).context("manager log")?;
        let mut cmd = tokio::process::Command::new(exe);
        cmd.arg("server")
            .arg("--data-dir")
            .arg(&data)
            .args(["--listen", "127.0.0.1:0", "--store-sync", store_sync])
            // Only the N benchmarked clusters: no Cluster `local`, no heartbeat of its own
            // (implied without controllers, and refused beside that flag).
            .args(
                (!extra.contains(&"--no-controllers"))
                    .then_some("--no-local-agent")
                    .into_iter()
                    .chain(extra.iter().copied()),
            )
            .stderr(log);
        // The manager keeps jemalloc's defaults whatever the bench process runs with (it runs
        // on huge pages, see `fleet bench scale`), unless asked: a heap profile of the manager
        // alone (a `--features heap-profile` build), say.
        cmd.env_remove(MALLOC_CONF);
        if let Ok(conf) = std::env::var("FLEET_BENCH_MANAGER_MALLOC_CONF") {
            cmd.env(MALLOC_CONF, conf);
        }
        let (child, pid, url) = spawn_announced(cmd, "ready ", "the manager").await?;
        let memory = procfs::PeakSampler::start(pid);
        Ok(Manager {
            child,
            pid,
            url,
            memory,
        })
    }

    /// Its resident memory now and its peak so far: printed at each phase's end, they say in
    /// which phase the peak the `scale:` line reports was reached, and the sampled peaks of its
    /// heap and of its mapped files say in what.
    fn memory(&self) -> String {
        let mib = |b: u64| b as f64 / MIB;
        let (anon, file) = self.memory.peaks();
        format!(
            "manager rss {:.0} MiB (peak so far {:.0} MiB; sampled: anon {:.0}, file {:.0} MiB)",
            mib(procfs::rss_bytes_pid(self.pid).unwrap_or(0)),
            mib(procfs::hwm_bytes_pid(self.pid).unwrap_or(0)),
            mib(anon),
            mib(file)
        )
    }

    pub(crate) async fn stop(mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }
}

/// Spawns `cmd` (stdout piped, killed on drop) and waits up to 60 s for its first stdout line,
/// which must start with `prefix` (`fleet server` announces `ready URL`, `fleet controller`
/// `listening ADDR`); returns the child, its pid and the rest of that line. Later output is
/// drained so the child never blocks on a full pipe.
pub(crate) async fn spawn_announced(
    mut cmd: tokio::process::Command,
    prefix: &str,
    what: &str,
) -> anyhow::Result<(tokio::process::Child, u32, String)> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {what}"))?;
    let pid = child.id().with_context(|| format!("{what}: no pid"))?;
    let stdout = child
        .stdout
        .take()
        .with_context(|| format!("{what}: stdout"))?;
    let mut lines = BufReader::new(stdout).lines();
    let rest = match tokio::time::timeout(Duration::from_secs(60), lines.next_line()).await {
        Ok(Ok(Some(l))) if l.starts_with(prefix) => l[prefix.len()..].to_string(),
        other => bail!("{what} did not start: {other:?}"),
    };
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok((child, pid, rest))
}

/// The manager store's current revision (every write bumps it).
pub(crate) async fn revision(admin: &Client) -> anyhow::Result<u64> {
    let ns: Api<Namespace> = Api::all(admin.clone());
    let list = ns.list(&ListParams::default().limit(1)).await?;
    list.metadata
        .resource_version
        .as_deref()
        .and_then(|v| v.parse().ok())
        .context("the manager's list carries no numeric resourceVersion")
}

/// Waits until `clusters` Clusters carry an agent check-in (`status.agent.lastSeen`). Read in
/// pages, every two seconds: a whole list of 10,000 Clusters at once would weigh on the
/// manager's memory peak, which the bench reports.
async fn wait_checked_in(admin: &Client, clusters: usize, timeout: Duration) -> anyhow::Result<()> {
    let api: Api<fleet_api::Cluster> = Api::namespaced(admin.clone(), WORKSPACE);
    let t = Instant::now();
    loop {
        let mut seen = 0;
        let mut page = ListParams::default().limit(500);
        loop {
            let list = api.list(&page).await?;
            seen += list
                .items
                .iter()
                .filter(|c| {
                    c.status
                        .as_ref()
                        .is_some_and(|s| s.agent.last_seen.is_some())
                })
                .count();
            match list.metadata.continue_.filter(|c| !c.is_empty()) {
                Some(token) => page = page.continue_token(&token),
                None => break,
            }
        }
        if seen >= clusters {
            return Ok(());
        }
        if t.elapsed() > timeout {
            bail!("{seen} of {clusters} agents checked in within {timeout:?}");
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

/// Waits until the store's revision stays put for `quiet`.
pub(crate) async fn settle(
    admin: &Client,
    quiet: Duration,
    timeout: Duration,
) -> anyhow::Result<()> {
    let t = Instant::now();
    let mut last = revision(admin).await?;
    let mut since = Instant::now();
    while t.elapsed() < timeout {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = revision(admin).await?;
        if now != last {
            last = now;
            since = Instant::now();
        } else if since.elapsed() >= quiet {
            return Ok(());
        }
    }
    bail!("the manager kept writing for {timeout:?}")
}

/// Said when a round fails: an agent whose task ended (returned or panicked) stopped following
/// its BundleDeployments, which explains its cluster; none ended points at the manager or at a
/// lost event.
async fn agents_ended(agents: &mut [tokio::task::JoinHandle<()>]) -> String {
    let mut ended = Vec::new();
    for (i, a) in agents.iter_mut().enumerate() {
        if a.is_finished() {
            let how = match a.await {
                Ok(()) => "returned".to_string(),
                Err(e) => e.to_string(),
            };
            ended.push(format!("bench-agent-{i}: {how}"));
        }
    }
    if ended.is_empty() {
        return format!("all {} agent tasks still running", agents.len());
    }
    format!("{} agent tasks ended: {}", ended.len(), ended.join("; "))
}

/// Timing, writes and CPU of one phase.
pub(crate) struct Phase {
    /// Writes by resource of the last report.
    pub(crate) by_resource: HashMap<String, u64>,
    rev: u64,
    writes: WriteCounter,
    manager_cpu: f64,
    own_cpu: f64,
    manager_faults: u64,
    own_faults: u64,
}

impl Phase {
    /// With a running `tracker`, BundleDeployment writes are counted from its watch rather
    /// than from one more watch of their own.
    pub(crate) async fn start(
        admin: &Client,
        manager: &Manager,
        tracker: Option<&Tracker>,
    ) -> anyhow::Result<Phase> {
        let rev = revision(admin).await?;
        Ok(Phase {
            by_resource: HashMap::new(),
            rev,
            writes: WriteCounter::start(admin, rev, tracker).await?,
            manager_cpu: procfs::cpu_seconds_pid(manager.pid),
            own_cpu: procfs::cpu_seconds(),
            manager_faults: procfs::minor_faults_pid(manager.pid),
            own_faults: procfs::minor_faults(),
        })
    }

    /// Prints the phase's line; returns its writes.
    pub(crate) async fn report(
        &mut self,
        name: &str,
        admin: &Client,
        manager: &Manager,
        secs: f64,
    ) -> anyhow::Result<u64> {
        let to = revision(admin).await?;
        let writes = to.saturating_sub(self.rev);
        println!(
            "{name}: {secs:.2} s, {writes} writes to the manager, cpu: manager {:.1} s, agents+downstreams {:.1} s, minor page faults: manager {}, agents+downstreams {}, {}",
            procfs::cpu_seconds_pid(manager.pid) - self.manager_cpu,
            procfs::cpu_seconds() - self.own_cpu,
            procfs::minor_faults_pid(manager.pid).saturating_sub(self.manager_faults),
            procfs::minor_faults().saturating_sub(self.own_faults),
            manager.memory(),
        );
        self.by_resource = self.writes.print(name, to, writes).await;
        self.rev = to;
        Ok(writes)
    }
}

/// The manager's writes by resource, counted by one live watch per watchable resource opened
/// at a phase's start (every create, update, patch and delete is one event), so the breakdown
/// does not depend on how much history the server keeps.
struct WriteCounter {
    revs: Arc<Mutex<HashMap<String, Vec<u64>>>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    /// BundleDeployment writes as the tracker's watch saw them, and the phase's first revision.
    bds: Option<(BdRevisions, u64)>,
}

/// The resource the tracker's watch counts for the write counter.
const BD_RESOURCE: &str = "bundledeployments.fleet.cattle.io";

impl WriteCounter {
    async fn start(
        admin: &Client,
        from: u64,
        tracker: Option<&Tracker>,
    ) -> anyhow::Result<WriteCounter> {
        let discovery = kube::Discovery::new(admin.clone()).run().await?;
        let revs: Arc<Mutex<HashMap<String, Vec<u64>>>> = Arc::default();
        let mut tasks = Vec::new();
        let bds = tracker.map(|t| (t.revisions.clone(), from));
        for group in discovery.groups() {
            for (ar, caps) in group.recommended_resources() {
                if !caps.supports_operation(kube::discovery::verbs::WATCH) {
                    continue;
                }
                let name = if ar.group.is_empty() {
                    ar.plural.clone()
                } else {
                    format!("{}.{}", ar.plural, ar.group)
                };
                if bds.is_some() && name == BD_RESOURCE {
                    continue;
                }
                let url = DynamicObject::url_path(&ar, None);
                let client = admin.clone();
                let revs = revs.clone();
                tasks.push(crate::observer::spawn(async move {
                    let mut since = from.to_string();
                    loop {
                        let wp = WatchParams::default().timeout(290);
                        let Ok(req) = kube::core::Request::new(url.as_str()).watch(&wp, &since)
                        else {
                            return;
                        };
                        // Only the resourceVersion is read: events are not decoded into whole
                        // objects (this runs in the process whose CPU is reported).
                        let Ok(events) = client.request_events::<Revision>(req).await else {
                            return;
                        };
                        let mut events = events.boxed();
                        while let Ok(Some(ev)) = events.try_next().await {
                            let obj = match ev {
                                WatchEvent::Added(o)
                                | WatchEvent::Modified(o)
                                | WatchEvent::Deleted(o) => o,
                                WatchEvent::Bookmark(_) => continue,
                                // History gone: what is lost shows as unattributed.
                                WatchEvent::Error(e) if e.code == 410 => return,
                                // Otherwise resumed (after a pause) from the last
                                // revision seen.
                                WatchEvent::Error(_) => break,
                            };
                            let Some(rv) = obj.metadata.resource_version else {
                                continue;
                            };
                            if let Ok(r) = rv.parse::<u64>() {
                                revs.lock()
                                    .unwrap_or_else(|p| p.into_inner())
                                    .entry(name.clone())
                                    .or_default()
                                    .push(r);
                            }
                            since = rv;
                        }
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                })?);
            }
        }
        Ok(WriteCounter { revs, tasks, bds })
    }

    /// Prints `NAME writes: resource n, ...` for the events up to revision `to`, most first,
    /// and returns those counts. Writes of the phase's `total` (by revision) that no watch
    /// reported (a watch that fell too far behind) are printed as unattributed, never dropped.
    async fn print(&self, name: &str, to: u64, total: u64) -> HashMap<String, u64> {
        // The watches trail the writes a little: wait (briefly) until one has seen `to`.
        let deadline = Instant::now() + Duration::from_secs(3);
        let latest = |v: &Vec<u64>| v.last().copied().unwrap_or(0);
        while Instant::now() < deadline {
            let seen = {
                let revs = self.revs.lock().unwrap_or_else(|p| p.into_inner());
                revs.values().map(latest).max().unwrap_or(0)
            };
            let bds = self.bds.as_ref().map_or(0, |(b, _)| {
                latest(&b.lock().unwrap_or_else(|p| p.into_inner()))
            });
            if seen.max(bds) >= to {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let mut revs = self.revs.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if let Some((bds, from)) = &self.bds {
            let seen = bds.lock().unwrap_or_else(|p| p.into_inner());
            let phase: Vec<u64> = seen.iter().copied().filter(|r| r > from).collect();
            revs.insert(BD_RESOURCE.to_string(), phase);
        }
        let mut counts: Vec<(&String, usize)> = revs
            .iter()
            .map(|(r, v)| (r, v.iter().filter(|x| **x <= to).count()))
            .filter(|(_, n)| *n > 0)
            .collect();
        counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        let mut parts: Vec<String> = counts.iter().map(|(r, n)| format!("{r} {n}")).collect();
        let attributed: u64 = counts.iter().map(|(_, n)| *n as u64).sum();
        if attributed < total {
            parts.push(format!("unattributed {}", total - attributed));
        }
        println!("{name} writes: {}", parts.join(", "));
        counts
            .into_iter()
            .map(|(r, n)| (r.clone(), n as u64))
            .collect()
    }
}

impl Drop for WriteCounter {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// An object as the write counter reads it: its resourceVersion, the rest skipped unparsed.
#[derive(Clone, serde::Deserialize)]
struct Revision {
    #[serde(default)]
    metadata: RevisionMeta,
}

#[derive(Clone, Default, serde::Deserialize)]
struct RevisionMeta {
    #[serde(rename = "resourceVersion")]
    resource_version: Option<String>,
}

/// Runs `fleet install agent-token` against the manager; returns the bootstrap Secret it makes.
async fn agent_token(exe: &Path, kubeconfig: &Path) -> anyhow::Result<Secret> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let out = loop {
        let out = tokio::process::Command::new(exe)
            .args(["install", "agent-token", "-n", WORKSPACE, "--kubeconfig"])
            .arg(kubeconfig)
            .stdin(Stdio::null())
            .output()
            .await
            .context("running fleet install agent-token")?;
        if out.status.success() {
            break out;
        }
        // The CRDs appear as the manager starts its controllers.
        if Instant::now() > deadline {
            bail!(
                "fleet install agent-token: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let docs: Vec<Value> = serde_saphyr::from_multiple(&String::from_utf8_lossy(&out.stdout))
        .context("parsing the agent-token manifest")?;
    let secret = docs
        .into_iter()
        .find(|d| d["kind"] == "Secret" && d["metadata"]["name"] == register::BOOTSTRAP_SECRET)
        .context("the agent-token manifest has no bootstrap Secret")?;
    Ok(serde_json::from_value(secret)?)
}

/// One in-memory downstream cluster and the in-process client its agent uses.
struct Downstream {
    _srv: ApiServer,
    client: Client,
}

impl Downstream {
    /// A fresh API server holding the agent's config (clientID `bench-<i>`) and bootstrap Secret.
    async fn new(
        i: usize,
        bootstrap: &Secret,
        requests: &RequestCounter,
    ) -> anyhow::Result<Downstream> {
        let srv = ApiServer::new(ApiServerConfig {
            simulate_workloads: true,
            ..ApiServerConfig::in_memory()
        })
        .await
        .context("starting an in-memory API server")?;
        let (router, requests) = (srv.router(), requests.clone());
        let counted = tower::service_fn(move |req: http::Request<kube::client::Body>| {
            requests.count(&req);
            tower::ServiceExt::oneshot(router.clone(), req)
        });
        let client = fleet_kube::in_process(counted, "default");
        let pp = PostParams::default();
        let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": AGENT_NAMESPACE}}))?;
        Api::<Namespace>::all(client.clone())
            .create(&pp, &ns)
            .await?;
        let cm: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": register::CONFIG_MAP, "namespace": AGENT_NAMESPACE},
            "data": {"config": json!({"clientID": format!("bench-{i}"), "labels": {"bench": "true"}}).to_string()},
        }))?;
        Api::<ConfigMap>::namespaced(client.clone(), AGENT_NAMESPACE)
            .create(&pp, &cm)
            .await?;
        let mut secret = bootstrap.clone();
        secret.metadata.namespace = Some(AGENT_NAMESPACE.into());
        Api::<Secret>::namespaced(client.clone(), AGENT_NAMESPACE)
            .create(&pp, &secret)
            .await?;
        Ok(Downstream { _srv: srv, client })
    }

    /// Objects of the bench downstream carrying round `rev`.
    async fn objects_at(&self, rev: usize) -> anyhow::Result<usize> {
        let lp = ListParams::default().labels(OBJECT_LABEL);
        let want = format!("r{rev}");
        let mut n = 0;
        for url in [
            ConfigMap::url_path(&(), Some(TARGET_NAMESPACE)),
            Deployment::url_path(&(), Some(TARGET_NAMESPACE)),
            Service::url_path(&(), Some(TARGET_NAMESPACE)),
        ] {
            // Only the annotations are read: objects are not decoded whole (this runs in the
            // process whose CPU is reported).
            let list: AnnotationsList = self
                .client
                .request(kube::core::Request::new(url).list(&lp)?)
                .await?;
            n += list
                .items
                .iter()
                .filter(|o| o.metadata.annotations.get(REV_ANNOTATION) == Some(&want))
                .count();
        }
        Ok(n)
    }
}

/// Requests the agents send their downstream clusters, by verb and resource: what a deploy
/// costs the cluster it deploys to (the bench's own object checks included, one list per kind
/// and cluster at the end of a round).
#[derive(Clone, Default)]
struct RequestCounter(Arc<Mutex<HashMap<String, u64>>>);

impl RequestCounter {
    /// Counts `req` (the downstream's router answers it).
    fn count<B>(&self, req: &http::Request<B>) {
        // The key is built in a reused buffer and copied only the first time it is seen: this
        // runs for every downstream request, in the process whose CPU is reported.
        thread_local! {
            static KEY: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
        }
        KEY.with_borrow_mut(|key| {
            key.clear();
            request_kind_into(key, req.method(), req.uri());
            let mut counts = self.0.lock().unwrap_or_else(|p| p.into_inner());
            match counts.get_mut(key.as_str()) {
                Some(n) => *n += 1,
                None => {
                    counts.insert(key.clone(), 1);
                }
            }
        });
    }

    fn reset(&self) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    /// `NAME downstream requests: n per BD (verb resource n, ...)`, most first.
    fn print(&self, name: &str, bds: usize) {
        let counts = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let total: u64 = counts.values().sum();
        let mut v: Vec<(&String, &u64)> = counts.iter().collect();
        v.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
        let parts: Vec<String> = v.iter().map(|(k, n)| format!("{k} {n}")).collect();
        println!(
            "{name} downstream requests: {:.2} per BD ({})",
            total as f64 / bds.max(1) as f64,
            parts.join(", ")
        );
    }
}

/// [`request_kind_into`] as a new String.
#[cfg(test)]
fn request_kind(method: &http::Method, uri: &http::Uri) -> String {
    let mut key = String::new();
    request_kind_into(&mut key, method, uri);
    key
}

/// Writes into `key` the `VERB resource[/subresource]` of a request (`list`/`watch` for
/// collections, `get` ... for one object; names and namespaces left out), or `METHOD path`
/// for what is not a resource (discovery). The path is split by hand, without allocating:
/// `/api/v1` or `/apis/GROUP/VERSION`, then `[namespaces/NS/]PLURAL[/NAME[/SUB]]`, a
/// Namespace's own path being `namespaces/NAME[/SUB]`.
fn request_kind_into(key: &mut String, method: &http::Method, uri: &http::Uri) {
    use std::fmt::Write as _;
    let path = uri.path();
    let mut segs = path.trim_start_matches('/').split('/');
    let prefix = match segs.next() {
        Some("api") => 1,
        Some("apis") => 2,
        _ => 0,
    };
    if prefix == 0 || segs.by_ref().take(prefix).count() < prefix {
        let _ = write!(key, "{method} {path}");
        return;
    }
    let rest: [Option<&str>; 5] = std::array::from_fn(|_| segs.next());
    let namespaced = rest[0] == Some("namespaces")
        && rest[2].is_some_and(|s| !matches!(s, "status" | "finalize"));
    let (plural, name, sub) = if namespaced {
        (rest[2], rest[3], rest[4])
    } else {
        (rest[0], rest[1], rest[2])
    };
    let Some(plural) = plural.filter(|p| !p.is_empty()) else {
        let _ = write!(key, "{method} {path}");
        return;
    };
    let watch = uri
        .query()
        .is_some_and(|q| q.split('&').any(|p| p == "watch=true" || p == "watch=1"));
    let verb = match (method.as_str(), name.is_some(), watch) {
        ("GET", _, true) => "watch",
        ("GET", false, _) => "list",
        ("GET", true, _) => "get",
        ("POST", _, _) => "create",
        ("PUT", _, _) => "update",
        ("PATCH", _, _) => "patch",
        ("DELETE", _, _) => "delete",
        (m, _, _) => m,
    };
    let _ = match sub {
        Some(sub) => write!(key, "{verb} {plural}/{sub}"),
        None => write!(key, "{verb} {plural}"),
    };
}

/// A list as [`Downstream::objects_at`] reads it: each object's annotations.
#[derive(serde::Deserialize)]
struct AnnotationsList {
    #[serde(default)]
    items: Vec<Annotated>,
}

#[derive(serde::Deserialize)]
struct Annotated {
    #[serde(default)]
    metadata: AnnotatedMeta,
}

#[derive(Default, serde::Deserialize)]
struct AnnotatedMeta {
    #[serde(default)]
    annotations: std::collections::BTreeMap<String, String>,
}

/// Revisions of BundleDeployment writes, shared by the tracker and the write counters.
type BdRevisions = Arc<Mutex<Vec<u64>>>;

/// Every BundleDeployment's deploymentID and whether it is Ready at that ID, kept from a watch.
#[derive(Clone)]
pub(crate) struct Tracker {
    state: Arc<Mutex<HashMap<String, (String, bool)>>>,
    /// The revision of every BD write the watch reported (not the objects of its initial
    /// list): the write counter's count of BundleDeployments.
    revisions: BdRevisions,
    /// When a BD got a new deploymentID (false) or became Ready at it (true), for the timeline.
    transitions: Arc<Mutex<Vec<(Instant, bool)>>>,
    task: Arc<Mutex<Option<tokio::task::JoinHandle<()>>>>,
    admin: Client,
}

impl Tracker {
    pub(crate) fn start(admin: Client) -> anyhow::Result<Tracker> {
        let t = Tracker {
            state: Arc::default(),
            revisions: Arc::default(),
            transitions: Arc::default(),
            task: Arc::default(),
            admin: admin.clone(),
        };
        let state = t.state.clone();
        let transitions = t.transitions.clone();
        let revisions = t.revisions.clone();
        let task = crate::observer::spawn(async move {
            let api: Api<TrackedBd> = Api::all(admin);
            let mut events = watcher(api, watcher::Config::default()).boxed();
            loop {
                match events.try_next().await {
                    Ok(Some(ev)) => {
                        if let watcher::Event::Apply(bd) | watcher::Event::Delete(bd) = &ev
                            && let Some(rv) = bd.metadata.resource_version.as_deref()
                            && let Ok(rv) = rv.parse::<u64>()
                        {
                            revisions.lock().unwrap_or_else(|p| p.into_inner()).push(rv);
                        }
                        let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
                        match ev {
                            watcher::Event::Apply(bd) | watcher::Event::InitApply(bd) => {
                                let (id, ready) = entry(&bd);
                                let old = s.insert(key(&bd), (id.clone(), ready));
                                let same_id = old.as_ref().is_some_and(|(o, _)| *o == id);
                                let mut tr = transitions.lock().unwrap_or_else(|p| p.into_inner());
                                if !same_id && !id.is_empty() {
                                    tr.push((Instant::now(), false));
                                }
                                if ready && !(same_id && old.is_some_and(|(_, r)| r)) {
                                    tr.push((Instant::now(), true));
                                }
                            }
                            watcher::Event::Delete(bd) => {
                                s.remove(&key(&bd));
                            }
                            watcher::Event::Init | watcher::Event::InitDone => {}
                        }
                    }
                    Ok(None) => return,
                    Err(e) => {
                        tracing::debug!("bundledeployment watch: {e}");
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                }
            }
        })?;
        *t.task.lock().unwrap_or_else(|p| p.into_inner()) = Some(task);
        Ok(t)
    }

    pub(crate) fn stop(&self) {
        if let Some(t) = self.task.lock().unwrap_or_else(|p| p.into_inner()).take() {
            t.abort();
        }
    }

    pub(crate) fn count(&self) -> usize {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// `written: 1% a, 50% b, 100% c s; Ready: ...`: when BDs got their new deploymentID and
    /// when they became Ready at it, seconds after `since` (where a round's time goes).
    fn timeline(&self, since: Instant) -> String {
        let tr = self.transitions.lock().unwrap_or_else(|p| p.into_inner());
        let line = |ready: bool| {
            let mut t: Vec<f64> = tr
                .iter()
                .filter(|(at, r)| *r == ready && *at >= since)
                .map(|(at, _)| at.duration_since(since).as_secs_f64())
                .collect();
            t.sort_by(f64::total_cmp);
            let q = |p: f64| {
                let i = ((p * t.len() as f64).ceil() as usize).clamp(1, t.len().max(1)) - 1;
                t.get(i).map_or("-".to_string(), |x| format!("{x:.2}"))
            };
            format!("1% {}, 50% {}, 100% {} s", q(0.01), q(0.5), q(1.0))
        };
        format!("written: {}; Ready: {}", line(false), line(true))
    }

    /// Every BundleDeployment's deploymentID, by `namespace/name`.
    pub(crate) fn ids(&self) -> HashMap<String, String> {
        let s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.iter()
            .map(|(k, (id, _))| (k.clone(), id.clone()))
            .collect()
    }

    /// Whether `expected` BDs exist, each with a deploymentID other than its entry in `before`
    /// (written by the controller; whether an agent applied it does not matter here).
    pub(crate) fn all_written(&self, expected: usize, before: &HashMap<String, String>) -> bool {
        let s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.len() == expected
            && s.iter()
                .all(|(k, (id, _))| !id.is_empty() && before.get(k).is_none_or(|old| old != id))
    }

    /// Why a round did not end: the watch's view against a fresh list (a difference means the
    /// watch missed events), and a few BundleDeployments that are not Ready, with their status.
    async fn diagnose(&self, before: &HashMap<String, String>) -> String {
        let api: Api<TrackedBd> = Api::all(self.admin.clone());
        let list = match api.list(&Default::default()).await {
            Ok(l) => l.items,
            Err(e) => return format!("listing BundleDeployments: {e}"),
        };
        let watched = self.state.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let mut stale = 0;
        let mut not_ready = Vec::new();
        for bd in &list {
            let (id, ready) = entry(bd);
            let k = key(bd);
            if watched.get(&k) != Some(&(id.clone(), ready)) {
                stale += 1;
            }
            if !ready || before.get(&k).is_some_and(|old| *old == id) {
                not_ready.push(bd);
            }
        }
        let mut out = format!(
            "listed {} BundleDeployments, {} not Ready at a new deploymentID, {stale} differ from the watch's view",
            list.len(),
            not_ready.len()
        );
        for bd in not_ready.iter().take(3) {
            let st = bd.status.clone().unwrap_or_default();
            let conds: Vec<String> = st
                .conditions
                .iter()
                .map(|c| format!("{}={} {:?}", c.type_, c.status, c.message))
                .collect();
            out.push_str(&format!(
                "\n  {}: spec {} applied {} ready {} nonModified {} conditions [{}]",
                key(bd),
                bd.spec.deployment_id,
                st.applied_deployment_id,
                st.ready,
                st.non_modified,
                conds.join(", ")
            ));
        }
        out
    }

    /// When `expected` BDs exist and each is Ready at a deploymentID other than its entry in
    /// `before`: their IDs (see [`all_done`]).
    fn all_ready(
        &self,
        expected: usize,
        before: &HashMap<String, String>,
        pending: &mut Vec<String>,
    ) -> Option<HashMap<String, String>> {
        let s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        all_done(&s, expected, before, pending)
    }
}

/// When `state` holds `expected` BDs and each is Ready at a deploymentID other than its entry
/// in `before`: their IDs. `pending` carries, from one poll to the next, the BDs the last pass
/// found not done; a poll drops those now done from its end and stops at the first that is
/// not, so it costs what changed since the last poll. Only once none is left does a pass over
/// all of them decide (all done at one instant, as a single pass decides). Why: a whole pass
/// every 50 ms (100,000 entries, as many lookups in `before`), and then a pass over every BD
/// still pending, ran in the process whose CPU the bench reports (7% of it at 10,000 × 10).
fn all_done(
    state: &HashMap<String, (String, bool)>,
    expected: usize,
    before: &HashMap<String, String>,
    pending: &mut Vec<String>,
) -> Option<HashMap<String, String>> {
    if state.len() != expected {
        pending.clear();
        return None;
    }
    let done = |k: &String, (id, ready): &(String, bool)| {
        *ready && before.get(k).is_none_or(|old| old != id)
    };
    // A key gone from the map is dropped here: the whole pass below judges the rest.
    while let Some(k) = pending.last() {
        if state.get(k).is_some_and(|e| !done(k, e)) {
            return None;
        }
        pending.pop();
    }
    pending.extend(
        state
            .iter()
            .filter(|(k, e)| !done(k, e))
            .map(|(k, _)| k.clone()),
    );
    pending.is_empty().then(|| {
        state
            .iter()
            .map(|(k, (id, _))| (k.clone(), id.clone()))
            .collect()
    })
}

fn key(bd: &TrackedBd) -> String {
    format!("{}/{}", bd.namespace().unwrap_or_default(), bd.name_any())
}

/// (spec.deploymentID, Ready at that ID: applied, `ready` and the Ready condition True).
fn entry(bd: &TrackedBd) -> (String, bool) {
    let id = bd.spec.deployment_id.clone();
    let ready = bd.status.as_ref().is_some_and(|s| {
        !id.is_empty()
            && s.applied_deployment_id == id
            && s.ready
            && s.conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
    });
    (id, ready)
}

/// A BundleDeployment as the tracker reads it: the fields readiness is judged by, and of its
/// metadata only name, namespace and resourceVersion. The tracker runs in the process whose
/// CPU is reported and sees every BD write; decoding whole objects with their managedFields
/// (as `BundleDeployment` does) would charge the agents' side for the measurement.
#[derive(Clone, Debug, serde::Deserialize)]
pub(crate) struct TrackedBd {
    #[serde(deserialize_with = "slim_meta")]
    metadata: kube::api::ObjectMeta,
    #[serde(default)]
    spec: TrackedSpec,
    #[serde(default)]
    status: Option<TrackedStatus>,
}

#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct TrackedSpec {
    #[serde(default, rename = "deploymentID")]
    deployment_id: String,
}

#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct TrackedStatus {
    #[serde(default, rename = "appliedDeploymentID")]
    applied_deployment_id: String,
    #[serde(default)]
    ready: bool,
    #[serde(default)]
    non_modified: bool,
    #[serde(default)]
    conditions: Vec<TrackedCondition>,
}

#[derive(Clone, Debug, Default, serde::Deserialize)]
struct TrackedCondition {
    #[serde(default, rename = "type")]
    type_: String,
    #[serde(default)]
    status: String,
    #[serde(default)]
    message: Option<String>,
}

/// `metadata` with name, namespace and resourceVersion; the rest skipped unparsed.
fn slim_meta<'de, D: serde::Deserializer<'de>>(d: D) -> Result<kube::api::ObjectMeta, D::Error> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Slim {
        name: Option<String>,
        namespace: Option<String>,
        resource_version: Option<String>,
    }
    let s = <Slim as serde::Deserialize>::deserialize(d)?;
    Ok(kube::api::ObjectMeta {
        name: s.name,
        namespace: s.namespace,
        resource_version: s.resource_version,
        ..Default::default()
    })
}

impl Resource for TrackedBd {
    type DynamicType = ();
    type Scope = kube::core::NamespaceResourceScope;

    fn kind(_: &()) -> std::borrow::Cow<'_, str> {
        BundleDeployment::kind(&())
    }
    fn group(_: &()) -> std::borrow::Cow<'_, str> {
        BundleDeployment::group(&())
    }
    fn version(_: &()) -> std::borrow::Cow<'_, str> {
        BundleDeployment::version(&())
    }
    fn plural(_: &()) -> std::borrow::Cow<'_, str> {
        BundleDeployment::plural(&())
    }
    fn meta(&self) -> &kube::api::ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut kube::api::ObjectMeta {
        &mut self.metadata
    }
}

/// What a Ready phase ended with.
struct Ready {
    secs: f64,
    ids: HashMap<String, String>,
}

/// Waits until every BD is Ready at a new deploymentID, then checks every downstream holds
/// every object at round `rev`; the time is when both held.
async fn wait_ready(
    tracker: &Tracker,
    downstreams: &[Downstream],
    expected: usize,
    rev: usize,
    objects: usize,
    before: &HashMap<String, String>,
    timeout: Duration,
) -> anyhow::Result<Ready> {
    let t = Instant::now();
    let mut last = String::new();
    let mut pending = Vec::new();
    while t.elapsed() < timeout {
        if let Some(ids) = tracker.all_ready(expected, before, &mut pending) {
            let bd_secs = t.elapsed().as_secs_f64();
            let counts: Vec<anyhow::Result<usize>> = futures::stream::iter(downstreams)
                .map(|d| d.objects_at(rev))
                .buffer_unordered(32)
                .collect()
                .await;
            let short = counts
                .iter()
                .filter(|c| !matches!(c, Ok(n) if *n == objects))
                .count();
            if short == 0 {
                eprintln!(
                    "bench scale: round {rev}: BundleDeployments Ready after {bd_secs:.2} s, downstream objects checked after {:.2} s",
                    t.elapsed().as_secs_f64()
                );
                eprintln!("bench scale: round {rev}: {}", tracker.timeline(t));
                return Ok(Ready {
                    secs: t.elapsed().as_secs_f64(),
                    ids,
                });
            }
            last = format!("{short} downstream clusters miss objects of round {rev}");
        } else {
            last = format!("{} of {expected} BundleDeployments seen", tracker.count());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let why = tracker.diagnose(before).await;
    bail!("round {rev}: not Ready within {timeout:?}: {last}; {why}")
}

/// Creates the GitRepo polling the bench's repository, every bundle directory a path.
pub(crate) async fn apply_gitrepo(
    admin: &Client,
    repo: &Path,
    bundles: usize,
    polling: &str,
) -> anyhow::Result<()> {
    let paths: Vec<String> = (0..bundles).map(|j| format!("b{j}")).collect();
    let gitrepo = json!({
        "apiVersion": "fleet.cattle.io/v1alpha1",
        "kind": "GitRepo",
        "metadata": {"name": GITREPO, "namespace": WORKSPACE},
        "spec": {
            "repo": format!("file://{}", repo.display()),
            "branch": "main",
            "paths": paths,
            "pollingInterval": polling,
            "targets": [{"clusterSelector": {}}],
        }
    });
    fleet_kube::apply::apply_yaml(admin, &gitrepo.to_string(), "fleet-bench", WORKSPACE)
        .await
        .context("creating the GitRepo")?;
    Ok(())
}

/// Writes every bundle at round `rev` (each object annotated with it).
pub(crate) fn write_repo(
    repo: &Path,
    bundles: usize,
    objects: usize,
    rev: usize,
) -> anyhow::Result<()> {
    for j in 0..bundles {
        let d = repo.join(format!("b{j}"));
        std::fs::create_dir_all(&d).with_context(|| format!("creating {}", d.display()))?;
        std::fs::write(
            d.join("fleet.yaml"),
            format!("defaultNamespace: {TARGET_NAMESPACE}\n"),
        )?;
        // Block YAML, as users write manifests (and as Helm and kubectl print them).
        let docs: Vec<String> = (0..objects)
            .map(|k| gotmpl::goyaml::to_yaml(&object(j, k, rev)))
            .collect();
        std::fs::write(d.join("objects.yaml"), docs.join("---\n"))?;
    }
    Ok(())
}

/// Object `k` of bundle `j`: a ConfigMap, Deployment or Service in turn.
fn object(j: usize, k: usize, rev: usize) -> Value {
    let name = format!("b{j}-o{k}");
    let meta = json!({
        "name": name,
        "labels": {OBJECT_LABEL: "true", "app": name},
        "annotations": {REV_ANNOTATION: format!("r{rev}")},
    });
    match k % 3 {
        0 => json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
                    "data": {"rev": format!("r{rev}"), "bundle": format!("b{j}")}}),
        1 => json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
                    "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                             "template": {"metadata": {"labels": {"app": name}},
                                          "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}}}}),
        _ => json!({"apiVersion": "v1", "kind": "Service", "metadata": meta,
                    "spec": {"selector": {"app": name}, "ports": [{"port": 80, "targetPort": 80}]}}),
    }
}

pub(crate) fn git_commit(repo: &Path, msg: &str, init: bool) -> anyhow::Result<()> {
    let run = |args: &[&str]| -> anyhow::Result<()> {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(repo)
            .stdin(Stdio::null())
            .output()
            .context("running git")?;
        if !out.status.success() {
            bail!(
                "git {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(())
    };
    if init {
        run(&["init", "-q", "-b", "main"])?;
    }
    run(&["add", "-A"])?;
    run(&[
        "-c",
        "user.name=fleet bench",
        "-c",
        "user.email=bench@localhost",
        "commit",
        "-q",
        "-m",
        msg,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_done_decides_on_a_whole_pass_and_polls_only_what_was_left() {
        let entry = |id: &str, ready: bool| (id.to_string(), ready);
        let mut state: HashMap<String, (String, bool)> = HashMap::new();
        state.insert("ns/a".into(), entry("v2", true));
        state.insert("ns/b".into(), entry("v2", false));
        let before: HashMap<String, String> = [("ns/a".to_string(), "v1".to_string())]
            .into_iter()
            .collect();
        let mut pending = Vec::new();
        assert_eq!(
            all_done(&state, 3, &before, &mut pending),
            None,
            "one BD missing"
        );
        assert_eq!(all_done(&state, 2, &before, &mut pending), None);
        assert_eq!(
            pending,
            vec!["ns/b".to_string()],
            "only the BD not Ready is left"
        );
        // a goes back to its old ID: the polls of b alone cannot see it, the whole pass does.
        state.insert("ns/a".into(), entry("v1", true));
        state.insert("ns/b".into(), entry("v2", true));
        assert_eq!(all_done(&state, 2, &before, &mut pending), None);
        assert_eq!(pending, vec!["ns/a".to_string()]);
        // A poll stops at the first BD still not done, from the end of what was left: b is
        // done, but behind a, so it stays until a is done too.
        pending = vec!["ns/b".to_string(), "ns/a".to_string()];
        assert_eq!(all_done(&state, 2, &before, &mut pending), None);
        assert_eq!(
            pending,
            vec!["ns/b".to_string(), "ns/a".to_string()],
            "a is not done: b is not looked at"
        );
        state.insert("ns/a".into(), entry("v3", true));
        let ids = all_done(&state, 2, &before, &mut pending).expect("all Ready at new IDs");
        assert_eq!(ids.get("ns/a").map(String::as_str), Some("v3"));
        assert_eq!(ids.get("ns/b").map(String::as_str), Some("v2"));
    }

    #[test]
    fn the_tracker_judges_a_slim_decode_as_the_whole_object() {
        let bd = |applied: &str, ready: bool, cond: &str| {
            json!({
                "apiVersion": "fleet.cattle.io/v1alpha1",
                "kind": "BundleDeployment",
                "metadata": {
                    "name": "b1", "namespace": "cluster-x", "resourceVersion": "42",
                    "labels": {"fleet.cattle.io/bundle-name": "b1"},
                    "managedFields": [{"manager": "fleet-agent", "operation": "Update",
                        "fieldsV1": {"f:status": {"f:ready": {}}}}]
                },
                "spec": {"deploymentID": "s-1:abc", "options": {"helm": {"values": {"a": 1}}}},
                "status": {"appliedDeploymentID": applied, "ready": ready, "nonModified": true,
                    "conditions": [{"type": "Ready", "status": cond, "message": "m"}],
                    "resources": [{"kind": "ConfigMap", "name": "c"}]}
            })
        };
        for (v, want) in [
            (bd("s-1:abc", true, "True"), true),
            (bd("s-0:old", true, "True"), false),
            (bd("s-1:abc", false, "True"), false),
            (bd("s-1:abc", true, "False"), false),
        ] {
            // The verdict read off the whole object, as the tracker read it before.
            let whole: BundleDeployment = serde_json::from_value(v.clone()).unwrap();
            let st = whole.status.unwrap_or_default();
            let whole_ready = st.applied_deployment_id == whole.spec.deployment_id
                && st.ready
                && st
                    .conditions
                    .iter()
                    .any(|c| c.type_ == "Ready" && c.status == "True");
            assert_eq!(whole_ready, want);
            let slim: TrackedBd = serde_json::from_value(v).unwrap();
            assert_eq!(entry(&slim), (whole.spec.deployment_id, want));
            assert_eq!(key(&slim), "cluster-x/b1");
            assert_eq!(slim.metadata.resource_version.as_deref(), Some("42"));
        }
        // A BD without status (just written by the controller) is not Ready.
        let fresh: TrackedBd = serde_json::from_value(json!({
            "metadata": {"name": "b", "namespace": "n"}, "spec": {"deploymentID": "x"}
        }))
        .unwrap();
        assert_eq!(entry(&fresh), ("x".to_string(), false));
    }

    #[test]
    fn requests_are_counted_by_verb_and_resource() {
        let kind = |m: &str, uri: &str| {
            request_kind(
                &http::Method::from_bytes(m.as_bytes()).unwrap(),
                &uri.parse::<http::Uri>().unwrap(),
            )
        };
        assert_eq!(
            kind("GET", "/api/v1/namespaces/bench/services/b0-o2"),
            "get services"
        );
        assert_eq!(
            kind(
                "GET",
                "/api/v1/namespaces/bench/secrets?labelSelector=owner%3Dhelm"
            ),
            "list secrets"
        );
        assert_eq!(
            kind(
                "GET",
                "/apis/apps/v1/deployments?watch=true&labelSelector=x"
            ),
            "watch deployments"
        );
        assert_eq!(
            kind(
                "PATCH",
                "/apis/apps/v1/namespaces/bench/deployments/d?fieldManager=f"
            ),
            "patch deployments"
        );
        assert_eq!(
            kind("PUT", "/api/v1/namespaces/bench/pods/p/status"),
            "update pods/status"
        );
        assert_eq!(kind("GET", "/api/v1/namespaces/bench"), "get namespaces");
        assert_eq!(
            kind("POST", "/api/v1/namespaces/bench/secrets"),
            "create secrets"
        );
        assert_eq!(kind("GET", "/apis/apps/v1"), "GET /apis/apps/v1");
        assert_eq!(kind("GET", "/api/v1"), "GET /api/v1");
        assert_eq!(kind("GET", "/version"), "GET /version");
        assert_eq!(kind("GET", "/api/v1/namespaces"), "list namespaces");
        assert_eq!(
            kind("PUT", "/api/v1/namespaces/bench/finalize"),
            "update namespaces/finalize"
        );
        assert_eq!(
            kind("GET", "/api/v1/services?watch=1&resourceVersion=3"),
            "watch services"
        );
        assert_eq!(
            kind(
                "GET",
                "/apis/fleet.cattle.io/v1alpha1/namespaces/n/bundledeployments"
            ),
            "list bundledeployments"
        );
    }

    #[test]
    fn objects_cycle_kinds_and_carry_the_round() {
        let kinds: Vec<String> = (0..4)
            .map(|k| object(2, k, 7)["kind"].as_str().unwrap_or("").to_string())
            .collect();
        assert_eq!(kinds, ["ConfigMap", "Deployment", "Service", "ConfigMap"]);
        assert_eq!(
            object(2, 1, 7)["metadata"]["annotations"][REV_ANNOTATION],
            "r7"
        );
        assert_eq!(object(2, 1, 7)["metadata"]["name"], "b2-o1");
    }
}
