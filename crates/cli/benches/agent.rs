//! The agent's costs, measured on real processes: a manager `fleet server`, a downstream
//! `fleet server --no-controllers --simulate-workloads` and `fleet agent` between them (all the
//! `fleet` binary this bench is built with). Run with `cargo bench -p fleet-cli --bench agent`
//! (a release build).
//!
//! Requests are counted by two TLS-terminating proxies in this process, one in front of each
//! server: the agent's kubeconfigs (downstream, and the manager's in its `fleet-agent` Secret)
//! name the proxies, so every request the agent sends is counted and nothing else is (the
//! bench's own kubectl calls go to the servers directly). The manager runs without controllers:
//! the bench publishes BundleDeployments and Contents itself, as `fleet target` computes them.
//!
//! Printed: downstream and upstream requests to apply a 100-object bundle once; requests of an
//! agent restart with nothing changed (target: 0 writes); upstream requests per minute when idle
//! (target: the watch and heartbeats only); VmRSS of the agent process idle with 50
//! BundleDeployments (target ≤ 20 MiB).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fleet_testkit::FleetProcess;
use fleet_testkit::agent_env::{self, AgentEnv, CLUSTER_NAMESPACE};
use hyper::body::Incoming;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};

/// Requests one proxy saw, by class.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Requests {
    /// GETs that are not watches (gets and lists).
    reads: u64,
    /// Watch requests (`watch=true`).
    watches: u64,
    /// POST, PUT, PATCH and DELETE.
    writes: u64,
    /// Of all these, requests on the agent's `fleet-agent` Lease (leader election: acquire, and
    /// a GET + PUT per retry period), counted apart from the agent's work as well.
    lease: u64,
    /// The Lease's writes (create, update).
    lease_writes: u64,
}

impl Requests {
    fn total(&self) -> u64 {
        self.reads + self.watches + self.writes
    }

    /// Writes other than the Lease's.
    fn work_writes(&self) -> u64 {
        self.writes.saturating_sub(self.lease_writes)
    }
}

/// Counts of one proxy, with request lines (method and path) for diagnosis.
#[derive(Clone, Default)]
struct Counter {
    inner: Arc<Mutex<(Requests, BTreeMap<String, u64>)>>,
}

impl Counter {
    fn record(&self, method: &http::Method, uri: &http::Uri) {
        let watch = uri
            .query()
            .is_some_and(|q| q.split('&').any(|p| p == "watch=true" || p == "watch=1"));
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if uri.path().contains("/leases/") || uri.path().ends_with("/leases") {
            g.0.lease += 1;
            if !matches!(*method, http::Method::GET | http::Method::HEAD) {
                g.0.lease_writes += 1;
            }
        }
        match *method {
            http::Method::GET if watch => g.0.watches += 1,
            http::Method::GET | http::Method::HEAD => g.0.reads += 1,
            _ => g.0.writes += 1,
        }
        *g.1.entry(format!("{method} {}", uri.path())).or_default() += 1;
    }

    fn get(&self) -> Requests {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).0
    }

    fn lines(&self) -> Vec<(String, u64)> {
        let g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let mut v: Vec<(String, u64)> = g.1.iter().map(|(k, n)| (k.clone(), *n)).collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v
    }

    fn reset(&self) {
        *self.inner.lock().unwrap_or_else(|e| e.into_inner()) = Default::default();
    }
}

/// A TLS-terminating HTTP/1.1 proxy in front of one server: each client connection gets its
/// own connection to the server, requests are forwarded as they are (headers included, so the
/// client's bearer token authenticates it) and counted.
struct Proxy {
    url: String,
    /// The proxy's own certificate (PEM), the CA to put in kubeconfigs that name it.
    cert_pem: String,
    counter: Counter,
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

async fn start_proxy(server_url: &str, server_ca_pem: &str) -> anyhow::Result<Proxy> {
    let target: SocketAddr = server_url.trim_start_matches("https://").parse()?;
    let ck = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()])?;
    let cert_pem = ck.cert.pem();
    let key_pem = ck.signing_key.serialize_pem();
    let mut server_cfg = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from_pem_slice(cert_pem.as_bytes())?],
            PrivateKeyDer::from_pem_slice(key_pem.as_bytes())?,
        )?;
    server_cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server_cfg));
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from_pem_slice(server_ca_pem.as_bytes())?)?;
    let mut client_cfg = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    client_cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    let connector = tokio_rustls::TlsConnector::from(Arc::new(client_cfg));
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("https://{}", listener.local_addr()?);
    let counter = Counter::default();
    let c = counter.clone();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let (acceptor, connector, counter) = (acceptor.clone(), connector.clone(), c.clone());
            tokio::spawn(async move {
                if let Err(e) = serve_one(tcp, acceptor, connector, target, counter).await {
                    eprintln!("proxy connection: {e}");
                }
            });
        }
    });
    Ok(Proxy {
        url,
        cert_pem,
        counter,
    })
}

type Sender = hyper::client::conn::http1::SendRequest<Incoming>;

async fn connect(
    connector: &tokio_rustls::TlsConnector,
    target: SocketAddr,
) -> anyhow::Result<Sender> {
    let up = connector
        .connect(
            ServerName::IpAddress(target.ip().into()),
            TcpStream::connect(target).await?,
        )
        .await?;
    let (sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(up)).await?;
    tokio::spawn(conn);
    Ok(sender)
}

async fn serve_one(
    tcp: TcpStream,
    acceptor: tokio_rustls::TlsAcceptor,
    connector: tokio_rustls::TlsConnector,
    target: SocketAddr,
    counter: Counter,
) -> anyhow::Result<()> {
    let tls = acceptor.accept(tcp).await?;
    // The server's side of the connection, opened again when the server closed it (idle).
    let sender: Arc<tokio::sync::Mutex<Option<Sender>>> = Arc::default();
    let svc = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
        let (sender, counter, connector) = (sender.clone(), counter.clone(), connector.clone());
        async move {
            counter.record(req.method(), req.uri());
            let mut s = sender.lock().await;
            if let Some(open) = s.as_mut()
                && (open.is_closed() || open.ready().await.is_err())
            {
                *s = None;
            }
            let open = match s.as_mut() {
                Some(open) => open,
                None => s.insert(connect(&connector, target).await?),
            };
            anyhow::Ok(open.send_request(req).await?)
        }
    });
    hyper::server::conn::http1::Builder::new()
        .serve_connection(hyper_util::rt::TokioIo::new(tls), svc)
        .await?;
    Ok(())
}

/// A kubeconfig naming `url` (trusting `ca_pem`) with a bearer token.
fn kubeconfig(url: &str, ca_pem: &str, token: &str) -> String {
    use base64::Engine;
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {url}\n    certificate-authority-data: {ca}\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\n    namespace: {CLUSTER_NAMESPACE}\ncurrent-context: c\nusers:\n- name: u\n  user:\n    token: {token}\n"
    )
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

/// A Content holding `objects` (one YAML file) and a BundleDeployment `name` deploying it into
/// `ns`; returns both and the deploymentID.
fn deployment(name: &str, ns: &str, objects: &[Value]) -> (Value, Value, String) {
    let yaml: String = objects.iter().map(|o| format!("---\n{o}\n")).collect();
    let resources = json!([{"name": "objects.yaml", "content": yaml}]);
    // Content names must fit 63 characters; a stable name per content is all that is needed.
    let manifest_id = format!(
        "s-{}",
        &fleet_api::names::sha256_hex(resources.to_string().as_bytes())[..40]
    );
    let content = agent_env::content_object(&manifest_id, &resources);
    let id = format!("{manifest_id}:bench");
    let bd = json!({"apiVersion": "fleet.cattle.io/v1alpha1", "kind": "BundleDeployment",
                    "metadata": {"name": name, "namespace": CLUSTER_NAMESPACE},
                    "spec": {"deploymentID": id, "options": {"namespace": ns}}});
    (content, bd, id)
}

fn publish(env: &AgentEnv, items: Vec<Value>) {
    env.up
        .apply(&json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string());
}

/// Waits until every BundleDeployment in `ids` has applied its deploymentID and is Ready.
fn wait_ready(env: &AgentEnv, ids: &BTreeMap<String, String>, limit: Duration) {
    let deadline = Instant::now() + limit;
    loop {
        let list = env
            .up
            .get_json(&["bundledeployments", "-n", CLUSTER_NAMESPACE])
            .unwrap_or(Value::Null);
        let ready = list["items"]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter(|bd| {
                        let name = bd["metadata"]["name"].as_str().unwrap_or("");
                        let st = &bd["status"];
                        ids.get(name)
                            .is_some_and(|id| st["appliedDeploymentID"] == id.as_str())
                            && st["ready"] == true
                            && st["nonModified"] == true
                    })
                    .count()
            })
            .unwrap_or(0);
        if ready == ids.len() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{ready}/{} BundleDeployments Ready after {limit:?}",
            ids.len()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Waits until neither counter moved for `quiet` (bounded by `limit`).
fn wait_quiet(a: &Counter, b: &Counter, quiet: Duration, limit: Duration) {
    let deadline = Instant::now() + limit;
    let mut last = (a.get(), b.get());
    let mut since = Instant::now();
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        let now = (a.get(), b.get());
        if now != last {
            last = now;
            since = Instant::now();
        } else if since.elapsed() >= quiet {
            return;
        }
    }
}

fn line(what: &str, r: Requests) {
    println!(
        "{what:<44} total {:>5}  reads {:>5}  watches {:>3}  writes {:>5}  (Lease requests {:>3}; writes besides the Lease {:>5})",
        r.total(),
        r.reads,
        r.watches,
        r.writes,
        r.lease,
        r.work_writes()
    );
}

fn show(verbose: bool, phase: &str, c: &Counter) {
    if verbose {
        eprintln!("-- {phase}");
        for (l, n) in c.lines() {
            eprintln!("{n:6} {l}");
        }
    }
}

/// A `kB` line of `/proc/<pid>/status` (`VmRSS:`, `RssAnon:`, `Threads:` ...).
fn status_field(pid: u32, key: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Starts `fleet agent`; `FLEET_BENCH_AGENT_WRAPPER` (words separated by spaces) runs it under
/// a tool, e.g. `valgrind --tool=callgrind` for `scripts/gen-link-order`.
fn start_agent(env: &AgentEnv, kubeconfig: &Path) -> FleetProcess {
    let kc = kubeconfig.to_string_lossy().into_owned();
    let bin = env.bin.to_string_lossy().into_owned();
    let wrapper = std::env::var("FLEET_BENCH_AGENT_WRAPPER").unwrap_or_default();
    let mut words: Vec<&str> = wrapper.split_whitespace().collect();
    let agent = ["agent", "-k", &kc];
    let Some(tool) = words.first().copied() else {
        return FleetProcess::spawn(&env.bin, "fleet agent", &agent, &[("RUST_LOG", "warn")]);
    };
    words.remove(0);
    words.push(&bin);
    words.extend(agent);
    FleetProcess::spawn(
        Path::new(tool),
        "fleet agent",
        &words,
        &[("RUST_LOG", "warn")],
    )
}

fn main() -> anyhow::Result<()> {
    // `cargo bench` passes `--bench`; any other argument (as `cargo test --benches` passes)
    // is not a request to measure.
    if std::env::args().any(|a| a == "--list") {
        return Ok(());
    }
    let verbose = std::env::var_os("FLEET_BENCH_VERBOSE").is_some();
    let idle_secs: u64 = std::env::var("FLEET_BENCH_IDLE_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let tmp = tempfile::tempdir()?;
    let bin = Path::new(env!("CARGO_BIN_EXE_fleet"));
    let Some(env) = AgentEnv::start(bin, tmp.path(), &["--simulate-workloads"]) else {
        println!("agent bench skipped: kubectl not found");
        return Ok(());
    };
    let read = |p: &Path| std::fs::read_to_string(p);
    let up_proxy = rt.block_on(start_proxy(
        &env.manager.url,
        &read(&env.manager.dir.join("pki/ca.crt"))?,
    ))?;
    let ds_proxy = rt.block_on(start_proxy(
        &env.downstream.url,
        &read(&env.downstream.dir.join("pki/ca.crt"))?,
    ))?;
    // The agent's manager credential (a ServiceAccount token), pointed at the proxy.
    let agent_kc = read(&env.agent_kubeconfig)?;
    let token = agent_kc
        .lines()
        .find_map(|l| l.trim().strip_prefix("token:"))
        .map(|t| t.trim().to_string())
        .ok_or_else(|| anyhow::anyhow!("no token in the agent kubeconfig"))?;
    env.write_agent_secret(&kubeconfig(&up_proxy.url, &up_proxy.cert_pem, &token));
    let admin_token = read(&env.downstream.dir.join("pki/admin.token"))?;
    let ds_kc = tmp.path().join("downstream-via-proxy");
    std::fs::write(
        &ds_kc,
        kubeconfig(&ds_proxy.url, &ds_proxy.cert_pem, admin_token.trim()),
    )?;
    let (up_n, ds_n) = (&up_proxy.counter, &ds_proxy.counter);
    let quiet = Duration::from_secs(3);
    println!(
        "fleet agent bench: real processes (manager, downstream --simulate-workloads, agent); \
         requests counted by TLS proxies in front of each server"
    );

    // Apply a 100-object bundle once.
    let objects = 100;
    let (content, bd, id) = deployment(
        "bench-app",
        "bench-app",
        &bundle_objects(objects, "bench-app"),
    );
    let mut ids = BTreeMap::from([("bench-app".to_string(), id)]);
    let mut agent = start_agent(&env, &ds_kc);
    wait_quiet(up_n, ds_n, quiet, Duration::from_secs(60));
    up_n.reset();
    ds_n.reset();
    publish(&env, vec![content, bd]);
    wait_ready(&env, &ids, Duration::from_secs(120));
    wait_quiet(up_n, ds_n, quiet, Duration::from_secs(60));
    line(
        &format!("apply {objects} objects once: downstream"),
        ds_n.get(),
    );
    line(
        &format!("apply {objects} objects once: upstream"),
        up_n.get(),
    );
    show(verbose, "apply: downstream", ds_n);
    show(verbose, "apply: upstream", up_n);

    // Restart with nothing changed.
    agent.kill();
    up_n.reset();
    ds_n.reset();
    let mut agent2 = start_agent(&env, &ds_kc);
    let deadline = Instant::now() + Duration::from_secs(30);
    while up_n.get().watches == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    wait_quiet(up_n, ds_n, quiet, Duration::from_secs(60));
    let (rs_down, rs_up) = (ds_n.get(), up_n.get());
    line("restart, nothing changed: downstream", rs_down);
    line("restart, nothing changed: upstream", rs_up);
    show(verbose, "re-sync: downstream", ds_n);
    show(verbose, "re-sync: upstream", up_n);

    // Idle.
    up_n.reset();
    ds_n.reset();
    std::thread::sleep(Duration::from_secs(idle_secs));
    line(&format!("idle {idle_secs} s: downstream"), ds_n.get());
    line(&format!("idle {idle_secs} s: upstream"), up_n.get());
    show(verbose, "idle: upstream", up_n);
    println!(
        "upstream requests per minute when idle: {:.1}",
        up_n.get().total() as f64 * 60.0 / idle_secs.max(1) as f64
    );

    // 50 BundleDeployments: the 100-object one is replaced by 50 of two objects each.
    let mut items = Vec::new();
    ids.clear();
    for i in 0..50 {
        let ns = format!("app-{i}");
        let (c, b, id) = deployment(&format!("b{i}"), &ns, &bundle_objects(2, &ns));
        items.push(c);
        items.push(b);
        ids.insert(format!("b{i}"), id);
    }
    env.up.ok(&[
        "delete",
        "bundledeployment",
        "bench-app",
        "-n",
        CLUSTER_NAMESPACE,
    ]);
    publish(&env, items);
    wait_ready(&env, &ids, Duration::from_secs(300));
    wait_quiet(up_n, ds_n, quiet, Duration::from_secs(60));
    let pid = agent2.child.id();
    let mut samples = Vec::new();
    for _ in 0..5 {
        samples.push(status_field(pid, "VmRSS:"));
        std::thread::sleep(Duration::from_secs(1));
    }
    samples.sort_unstable();
    println!(
        "agent {pid}: RssAnon {} kB, RssFile {} kB, threads {}",
        status_field(pid, "RssAnon:"),
        status_field(pid, "RssFile:"),
        status_field(pid, "Threads:")
    );
    println!(
        "agent RSS idle with 50 BundleDeployments (100 objects), median of 5 samples: {:.1} MiB",
        samples[samples.len() / 2] as f64 / 1024.0
    );
    if let Ok(s) = std::env::var("ZZ_HOLD") {
        std::thread::sleep(Duration::from_secs(s.parse().unwrap_or(0)));
    }
    // A graceful stop: an instrumented build writes its profile at exit (scripts/gen-link-order).
    agent2.terminate();
    Ok(())
}
