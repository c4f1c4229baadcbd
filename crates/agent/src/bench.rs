//! `fleet bench agent`: the agent's costs, measured against two embedded API servers (a manager
//! and a downstream cluster) in this process.
//!
//! Requests are counted by a layer around each server's router, on the path the agent's clients
//! take (in-process clients, so every request the agent sends is seen and nothing else is):
//! applying a bundle of N objects once, re-syncing it after a restart with nothing changed, and
//! an idle window. Resident memory is measured on a real `fleet agent` child process (this
//! binary) that holds M BundleDeployments over TLS, read from `/proc/<pid>/status`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use fleet_api::BundleDeployment;
use fleet_apiserver::server::{Server, ServerConfig, ServerHandle};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{DynamicObject, PostParams};
use kube::{Api, Client};
use serde_json::{Value, json};

use crate::credential::Upstream;
use crate::objects::Downstream;

/// Workspace namespace of the benchmark Cluster.
const WORKSPACE: &str = "fleet-default";
/// Namespace of the benchmark Cluster's BundleDeployments.
const CLUSTER_NS: &str = "cluster-fleet-default-bench";
/// Name of the benchmark Cluster.
const CLUSTER: &str = "bench";
/// The agent's system namespace downstream.
const SYSTEM_NS: &str = crate::DEFAULT_SYSTEM_NAMESPACE;

/// Requests one server saw, by class.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Requests {
    /// GETs that are not watches (gets and lists).
    pub reads: u64,
    /// Watch requests (`?watch=true`).
    pub watches: u64,
    /// POST, PUT, PATCH and DELETE.
    pub writes: u64,
}

impl Requests {
    /// All requests.
    pub fn total(&self) -> u64 {
        self.reads + self.watches + self.writes
    }
}

/// A shared request counter with a log of request lines (method and path) for diagnosis.
#[derive(Clone, Default)]
pub struct Counter {
    inner: Arc<Mutex<(Requests, BTreeMap<String, u64>)>>,
}

impl Counter {
    fn record(&self, method: &axum::http::Method, uri: &axum::http::Uri) {
        let watch = uri
            .query()
            .is_some_and(|q| q.split('&').any(|p| p == "watch=true" || p == "watch=1"));
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        match *method {
            axum::http::Method::GET if watch => g.0.watches += 1,
            axum::http::Method::GET | axum::http::Method::HEAD => g.0.reads += 1,
            _ => g.0.writes += 1,
        }
        *g.1.entry(format!("{method} {}", uri.path())).or_default() += 1;
    }

    /// What was counted since the last reset.
    pub fn get(&self) -> Requests {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).0
    }

    /// Request lines since the last reset, most frequent first.
    pub fn lines(&self) -> Vec<(String, u64)> {
        let g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let mut v: Vec<_> = g.1.iter().map(|(k, n)| (k.clone(), *n)).collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v
    }

    /// Starts counting from zero.
    pub fn reset(&self) {
        *self.inner.lock().unwrap_or_else(|e| e.into_inner()) = Default::default();
    }
}

/// An in-process client for `h` whose requests `counter` counts.
pub fn counted_client(h: &ServerHandle, counter: &Counter) -> Client {
    let c = counter.clone();
    let router = h.router().layer(axum::middleware::from_fn(
        move |req: axum::extract::Request, next: axum::middleware::Next| {
            c.record(req.method(), req.uri());
            next.run(req)
        },
    ));
    fleet_kube::in_process(router, "default")
}

/// An uncounted in-process admin client (the benchmark's own setup and polling).
fn admin(h: &ServerHandle) -> Client {
    fleet_kube::in_process(h.router(), "default")
}

async fn start_server() -> anyhow::Result<ServerHandle> {
    Ok(Server::start(ServerConfig::in_memory()).await?)
}

/// Creates `obj` (JSON with apiVersion and kind) with the dynamic API, retrying while its kind
/// is not served yet (CRDs just created).
async fn create(client: &Client, obj: Value) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let o: DynamicObject = serde_json::from_value(obj.clone())?;
        let r = crate::objects::ObjRef::of(&obj)
            .ok_or_else(|| anyhow::anyhow!("object without apiVersion, kind or name"))?;
        let ds = Downstream::new(client.clone());
        let res = match ds.api(&r).await {
            Ok(api) => api.create(&PostParams::default(), &o).await.map(drop),
            Err(e) => Err(e),
        };
        match res {
            Ok(()) => return Ok(()),
            Err(kube::Error::Api(s)) if s.code == 409 => return Ok(()),
            Err(e) if Instant::now() > deadline => {
                return Err(anyhow::anyhow!("creating {r}: {e}"));
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// The manager's side: Fleet CRDs, the workspace and cluster namespaces and the Cluster.
async fn prepare_manager(up: &Client) -> anyhow::Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(up.clone());
    for c in fleet_api::crds::all() {
        match crds.create(&PostParams::default(), &c).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => return Err(e.into()),
        }
    }
    for ns in [WORKSPACE, CLUSTER_NS] {
        create(
            up,
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        )
        .await?;
    }
    create(
        up,
        json!({"apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Cluster",
               "metadata": {"name": CLUSTER, "namespace": WORKSPACE}, "spec": {}}),
    )
    .await
}

/// `n` objects for namespace `ns`: ConfigMaps and Services, alternately.
fn bundle_objects(n: usize, ns: &str) -> Vec<Value> {
    (0..n)
        .map(|i| {
            if i % 2 == 0 {
                json!({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": format!("cm-{i}"), "namespace": ns},
                       "data": {"index": i.to_string(), "payload": "x".repeat(200)}})
            } else {
                json!({"apiVersion": "v1", "kind": "Service",
                       "metadata": {"name": format!("svc-{i}"), "namespace": ns},
                       "spec": {"selector": {"app": format!("a{i}")},
                                "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}})
            }
        })
        .collect()
}

/// Publishes a BundleDeployment `name` whose Content holds `objects` (one YAML file), deploying
/// into `ns` (created downstream by the caller). Returns its deploymentID.
async fn publish(up: &Client, name: &str, ns: &str, objects: &[Value]) -> anyhow::Result<String> {
    let yaml: Vec<String> = objects
        .iter()
        .map(|o| serde_json::to_string(o).map(|s| format!("---\n{s}\n")))
        .collect::<Result<_, _>>()?;
    let resources = json!([{"name": "objects.yaml", "content": yaml.concat()}]);
    let mut raw = serde_json::to_vec(&json!({ "resources": resources }))?;
    raw.push(b'\n');
    // A Content name must fit 63 characters (the manifestIDs Fleet writes do); the benchmark's
    // only need is a stable name per content.
    let manifest_id = format!("s-{}", &fleet_api::names::sha256_hex(&raw)[..40]);
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(&raw)?;
    let content = base64::engine::general_purpose::STANDARD.encode(enc.finish()?);
    create(
        up,
        json!({"apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Content",
               "metadata": {"name": manifest_id}, "content": content}),
    )
    .await?;
    let id = format!("{manifest_id}:bench");
    create(
        up,
        json!({"apiVersion": "fleet.cattle.io/v1alpha1", "kind": "BundleDeployment",
               "metadata": {"name": name, "namespace": CLUSTER_NS},
               "spec": {"deploymentID": id, "options": {"namespace": ns}}}),
    )
    .await?;
    Ok(id)
}

/// Whether every named BundleDeployment has applied its deploymentID and is Ready.
async fn all_ready(up: &Client, ids: &BTreeMap<String, String>) -> anyhow::Result<bool> {
    let api: Api<BundleDeployment> = Api::namespaced(up.clone(), CLUSTER_NS);
    let list = api.list(&Default::default()).await?;
    let mut ready = 0;
    for bd in list.items {
        let name = bd.metadata.name.clone().unwrap_or_default();
        let Some(id) = ids.get(&name) else { continue };
        let st = bd.status.unwrap_or_default();
        if &st.applied_deployment_id == id && st.ready && st.non_modified {
            ready += 1;
        }
    }
    Ok(ready == ids.len())
}

async fn wait_ready(
    up: &Client,
    ids: &BTreeMap<String, String>,
    limit: Duration,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + limit;
    while !all_ready(up, ids).await? {
        if Instant::now() > deadline {
            anyhow::bail!("bundledeployments not Ready within {limit:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

/// Waits until neither counter moved for `quiet` (bounded by `limit`).
async fn wait_quiet(a: &Counter, b: &Counter, quiet: Duration, limit: Duration) {
    let deadline = Instant::now() + limit;
    let mut last = (a.get(), b.get());
    let mut since = Instant::now();
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = (a.get(), b.get());
        if now != last {
            last = now;
            since = Instant::now();
        } else if since.elapsed() >= quiet {
            return;
        }
    }
}

/// Starts the agent on a runtime of its own (so that stopping it stops every task it spawned).
fn start_agent(up: &Client, ds: &Client) -> anyhow::Result<tokio::runtime::Runtime> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let upstream = Upstream {
        client: up.clone(),
        deployment_namespace: CLUSTER_NS.into(),
        cluster_namespace: WORKSPACE.into(),
        cluster_name: CLUSTER.into(),
    };
    let ds = Downstream::new(ds.clone());
    rt.spawn(crate::heartbeat::run(
        upstream.clone(),
        SYSTEM_NS.into(),
        crate::FIRST_CHECKIN,
        crate::DEFAULT_CHECKIN_INTERVAL,
    ));
    rt.spawn(crate::agent::run(upstream, ds, SYSTEM_NS.into()));
    Ok(rt)
}

/// Requests of one run of the request benchmark.
#[derive(Debug, Clone, Copy)]
pub struct RequestFigures {
    /// Downstream requests to apply the bundle once (until Ready and quiet).
    pub apply_downstream: Requests,
    /// Upstream requests for that.
    pub apply_upstream: Requests,
    /// Downstream requests of a restart with nothing changed.
    pub resync_downstream: Requests,
    /// Upstream requests of that restart.
    pub resync_upstream: Requests,
    /// Downstream requests during the idle window.
    pub idle_downstream: Requests,
    /// Upstream requests during the idle window.
    pub idle_upstream: Requests,
}

/// One run: a bundle of `objects` objects applied once, the agent restarted with nothing
/// changed, then `idle` of nothing happening. `verbose` prints the request lines of each phase.
pub async fn measure_requests(
    objects: usize,
    idle: Duration,
    verbose: bool,
) -> anyhow::Result<RequestFigures> {
    fleet_kube::install_crypto_provider();
    let manager = start_server().await?;
    let downstream = start_server().await?;
    let (up_admin, ds_admin) = (admin(&manager), admin(&downstream));
    prepare_manager(&up_admin).await?;
    create(
        &ds_admin,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench-app"}}),
    )
    .await?;
    let (up_n, ds_n) = (Counter::default(), Counter::default());
    let (up_c, ds_c) = (
        counted_client(&manager, &up_n),
        counted_client(&downstream, &ds_n),
    );
    let id = publish(
        &up_admin,
        "bench-app",
        "bench-app",
        &bundle_objects(objects, "bench-app"),
    )
    .await?;
    let ids = BTreeMap::from([("bench-app".to_string(), id)]);
    let show = |phase: &str, c: &Counter| {
        if verbose {
            eprintln!("-- {phase}");
            for (l, n) in c.lines() {
                eprintln!("{n:6} {l}");
            }
        }
    };

    let quiet = Duration::from_secs(3);
    let agent = start_agent(&up_c, &ds_c)?;
    wait_ready(&up_admin, &ids, Duration::from_secs(120)).await?;
    wait_quiet(&up_n, &ds_n, quiet, Duration::from_secs(60)).await;
    let (apply_upstream, apply_downstream) = (up_n.get(), ds_n.get());
    show("apply: downstream", &ds_n);
    show("apply: upstream", &up_n);
    agent.shutdown_background();

    up_n.reset();
    ds_n.reset();
    let agent = start_agent(&up_c, &ds_c)?;
    // The restart is done when the agent has listed its BundleDeployments and gone quiet.
    let deadline = Instant::now() + Duration::from_secs(30);
    while up_n.get().watches == 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    wait_quiet(&up_n, &ds_n, quiet, Duration::from_secs(60)).await;
    let (resync_upstream, resync_downstream) = (up_n.get(), ds_n.get());
    show("re-sync: downstream", &ds_n);
    show("re-sync: upstream", &up_n);

    up_n.reset();
    ds_n.reset();
    tokio::time::sleep(idle).await;
    let (idle_upstream, idle_downstream) = (up_n.get(), ds_n.get());
    show("idle: downstream", &ds_n);
    show("idle: upstream", &up_n);
    agent.shutdown_background();
    manager.shutdown().await?;
    downstream.shutdown().await?;
    Ok(RequestFigures {
        apply_downstream,
        apply_upstream,
        resync_downstream,
        resync_upstream,
        idle_downstream,
        idle_upstream,
    })
}

/// Resident memory of a real `fleet agent` process (`fleet` is the binary to run) holding
/// `bds` BundleDeployments of two objects each, once all are Ready and it has been idle for
/// `settle`: `samples` readings one second apart, in bytes.
pub async fn measure_rss(
    fleet: &Path,
    bds: usize,
    settle: Duration,
    samples: usize,
) -> anyhow::Result<Vec<u64>> {
    fleet_kube::install_crypto_provider();
    let manager = start_server().await?;
    let downstream = start_server().await?;
    let (up, ds) = (admin(&manager), admin(&downstream));
    prepare_manager(&up).await?;
    let mut ids = BTreeMap::new();
    for i in 0..bds {
        let ns = format!("app-{i}");
        create(
            &ds,
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        )
        .await?;
        let name = format!("b{i}");
        let id = publish(&up, &name, &ns, &bundle_objects(2, &ns)).await?;
        ids.insert(name, id);
    }
    // The agent reaches the manager over TLS with the manager's kubeconfig, as the Secret says.
    let b = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    create(
        &ds,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SYSTEM_NS}}),
    )
    .await?;
    create(
        &ds,
        json!({"apiVersion": "v1", "kind": "Secret",
               "metadata": {"name": crate::credential::AGENT_SECRET, "namespace": SYSTEM_NS},
               "data": {"kubeconfig": b(manager.kubeconfig()),
                        "deploymentNamespace": b(CLUSTER_NS),
                        "clusterNamespace": b(WORKSPACE),
                        "clusterName": b(CLUSTER)}}),
    )
    .await?;
    let mut child = std::process::Command::new(fleet)
        .arg("agent")
        .arg("-k")
        .arg(downstream.kubeconfig_path())
        .env("RUST_LOG", "warn")
        .stdin(std::process::Stdio::null())
        .spawn()?;
    let pid = child.id();
    let res = async {
        wait_ready(&up, &ids, Duration::from_secs(300)).await?;
        tokio::time::sleep(settle).await;
        let mut v = Vec::new();
        for i in 0..samples {
            v.push(rss_of(pid)?);
            if i == 0 {
                println!(
                    "agent process {pid}: RssAnon {} kB, RssFile {} kB, threads {}",
                    status_kb(pid, "RssAnon:")?,
                    status_kb(pid, "RssFile:")?,
                    status_kb(pid, "Threads:")?
                );
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        anyhow::Ok(v)
    }
    .await;
    let _ = child.kill();
    let _ = child.wait();
    manager.shutdown().await?;
    downstream.shutdown().await?;
    res
}

/// VmRSS of a process, in bytes.
pub fn rss_of(pid: u32) -> anyhow::Result<u64> {
    status_kb(pid, "VmRSS:").map(|kb| kb * 1024)
}

/// A `kB` line of `/proc/<pid>/status` (`VmRSS:`, `RssAnon:`, `RssFile:`), in kB.
pub fn status_kb(pid: u32, key: &str) -> anyhow::Result<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    s.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .ok_or_else(|| anyhow::anyhow!("/proc/{pid}/status has no {key}"))
}

/// The median of some numbers (the upper middle one for an even count; 0 when empty).
pub fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}
