//! `fleet bench apiserver`: the API-server figures the README quotes, measured end to end over
//! real HTTPS loopback connections (TLS, HTTP/1.1, authentication, REST, store), never with a
//! timed unit test. Every figure is the median of repeated runs.
//!
//! The server runs in this process. The watch fan-out clients run in a child process (this same
//! binary, `fleet bench watch-client`), because 10,000 watchers need 10,000 client sockets plus
//! 10,000 server sockets, more than one process may open on a typical machine.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use bytes::Bytes;
use fleet_apiserver::pki::Pki;
use fleet_apiserver::server::{Server, ServerConfig, ServerHandle};
use fleet_apiserver::store::StoreSync;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper::{Method, Request, StatusCode, header};
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::AsyncBufReadExt;
use tokio_rustls::TlsConnector;

use crate::procfs::{cpu_seconds, hwm_bytes, rss_bytes};

/// What `fleet bench apiserver` measures.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Scenario {
    /// Create and update throughput of 1 KiB objects at 1 and 64 concurrent clients.
    Write,
    /// p50/p99 event delivery latency to 1,000 and 10,000 watchers of one resource.
    Watch,
    /// Time to list 100,000 objects (one request, and pages of 500).
    List,
    /// Resident memory with 1,000,000 stored objects.
    Memory,
    /// TLS handshake plus request rate of 1,000 distinct clients (fresh connections, then TLS 1.3
    /// session resumption).
    TlsClients,
}

/// Where the benchmark server keeps its data.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum StoreKind {
    /// SQLite (WAL) in a temporary directory, as `fleet server` runs.
    File,
    /// Memory only (no durability): shows the cost of the REST layer alone.
    Memory,
}

/// What `fleet bench apiserver` runs (the CLI's flags, parsed).
#[derive(Clone, Debug)]
pub struct ApiserverOptions {
    /// Scenarios to run; all when empty.
    pub scenario: Vec<Scenario>,
    /// Repetitions per figure (the median is reported).
    pub runs: usize,
    /// Storage backing the benchmark server.
    pub store: StoreKind,
    /// Whether each commit fsyncs (file store).
    pub store_sync: StoreSync,
    /// Size of each object's payload in bytes.
    pub object_size: usize,
    /// Concurrent client counts for the write scenario.
    pub clients: Vec<usize>,
    /// Writes per run and client count.
    pub writes: usize,
    /// Watcher counts for the watch scenario.
    pub watchers: Vec<usize>,
    /// Events per watch run.
    pub events: usize,
    /// Pause between watch events, in milliseconds.
    pub event_interval_ms: u64,
    /// Objects for the list scenario.
    pub list_objects: usize,
    /// Objects for the memory scenario.
    pub memory_objects: usize,
    /// Distinct clients (certificates) for the tls-clients scenario.
    pub tls_clients: usize,
    /// Concurrency levels for the tls-clients scenario.
    pub tls_concurrency: Vec<usize>,
}

/// The watch fan-out child (`fleet bench watch-client`): where the server is and what to do.
#[derive(Clone, Debug)]
pub struct WatchClientOptions {
    /// The server's URL (`https://127.0.0.1:PORT`).
    pub url: String,
    /// File holding the server's CA (PEM).
    pub ca_file: PathBuf,
    /// File holding the admin bearer token.
    pub token_file: PathBuf,
    /// Watchers to open.
    pub watchers: usize,
    /// Events per run.
    pub events: usize,
    /// Runs.
    pub runs: usize,
    /// Pause between events, in milliseconds.
    pub event_interval_ms: u64,
    /// Payload size of the watched object.
    pub object_size: usize,
}

const NS_WRITE: &str = "bench-write";
const NS_FANOUT: &str = "bench-fanout";
const NS_LIST: &str = "bench-list";
const NS_MEMORY: &str = "bench-memory";
/// The data key whose value identifies a watch event (found in the raw line, no JSON decode).
const SEQ_MARKER: &[u8] = b"\"bench-seq\":\"";

/// Runs `fleet bench apiserver`: prints one line per figure.
pub async fn apiserver(args: ApiserverOptions) -> anyhow::Result<()> {
    let scenarios: Vec<Scenario> = if args.scenario.is_empty() {
        vec![
            Scenario::Write,
            Scenario::TlsClients,
            Scenario::Watch,
            Scenario::List,
            Scenario::Memory,
        ]
    } else {
        args.scenario.clone()
    };
    let runs = args.runs.max(1);
    let dir = tempfile::tempdir().context("creating a temporary directory")?;
    let data_dir = match args.store {
        StoreKind::File => Some(dir.path().join("server")),
        StoreKind::Memory => None,
    };
    let server = BenchServer::start(data_dir, args.store_sync).await?;
    println!(
        "fleet bench apiserver: {} store, TLS over loopback (HTTP/1.1, bearer token), {} cores, \
         {runs} runs per figure (median shown)",
        match (args.store, args.store_sync) {
            (StoreKind::File, StoreSync::Full) => "SQLite WAL synchronous=FULL (durable)",
            (StoreKind::File, StoreSync::Normal) => "SQLite WAL synchronous=NORMAL",
            (StoreKind::Memory, _) => "in-memory",
        },
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
    );
    println!("rss at start: {}", fmt_bytes(rss_bytes().unwrap_or(0)));
    let target = server.target.clone();
    let mut c = target.connect().await?;
    for ns in [NS_WRITE, NS_FANOUT, NS_LIST, NS_MEMORY] {
        c.create_namespace(ns).await?;
    }

    if scenarios.contains(&Scenario::TlsClients) {
        tls_clients_scenario(&server, &args, runs).await?;
    }
    // Objects stored so far: they count toward the memory scenario's total.
    let mut stored = 0usize;
    if scenarios.contains(&Scenario::Write) {
        stored += write_scenario(&target, &args, runs).await?;
    }
    if scenarios.contains(&Scenario::Watch) {
        watch_scenario(&server, dir.path(), &args, runs).await?;
        stored += args.watchers.len();
    }
    if scenarios.contains(&Scenario::List) || scenarios.contains(&Scenario::Memory) {
        let listed = if scenarios.contains(&Scenario::List) {
            args.list_objects
        } else {
            0
        };
        if listed > 0 {
            let t = Instant::now();
            let done = fill(&target, NS_LIST, "obj", 0, listed, args.object_size, 64).await?;
            let secs = t.elapsed().as_secs_f64();
            println!(
                "list: stored {done} objects in {secs:.1} s ({:.0} creates/s at 64 clients)",
                done as f64 / secs
            );
            list_scenario(&target, listed, runs).await?;
        }
        if scenarios.contains(&Scenario::Memory) {
            memory_scenario(&target, &args, stored + listed).await?;
        }
    }
    drop(c);
    server.stop().await;
    Ok(())
}

/// The in-process server and how to reach it.
struct BenchServer {
    target: Target,
    ca_pem: String,
    token: String,
    url: String,
    handle: ServerHandle,
}

impl BenchServer {
    async fn start(
        data_dir: Option<PathBuf>,
        store_sync: StoreSync,
    ) -> anyhow::Result<BenchServer> {
        let handle = Server::start(ServerConfig {
            data_dir,
            store_sync,
            drain_timeout: Duration::from_secs(2),
            ..ServerConfig::default()
        })
        .await
        .context("starting the API server")?;
        let target = Target::new(handle.addr(), handle.ca_pem(), handle.admin_token())?;
        Ok(BenchServer {
            target,
            ca_pem: handle.ca_pem().to_string(),
            token: handle.admin_token().to_string(),
            url: handle.url().to_string(),
            handle,
        })
    }

    /// The CA, to issue the tls-clients scenario's certificates.
    fn pki(&self) -> &Pki {
        self.handle.pki()
    }

    async fn stop(self) {
        let _ = self.handle.shutdown().await;
    }
}

/// How clients reach the server: address, TLS trust and credentials.
#[derive(Clone)]
struct Target {
    addr: SocketAddr,
    tls: TlsConnector,
    auth: header::HeaderValue,
}

impl Target {
    fn new(addr: SocketAddr, ca_pem: &str, token: &str) -> anyhow::Result<Target> {
        let mut roots = rustls::RootCertStore::empty();
        let ca = CertificateDer::from_pem_slice(ca_pem.as_bytes()).context("CA certificate")?;
        roots.add(ca).context("CA certificate")?;
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let mut cfg = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
        cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Target {
            addr,
            tls: TlsConnector::from(Arc::new(cfg)),
            auth: header::HeaderValue::from_str(&format!("Bearer {token}"))?,
        })
    }

    /// One HTTP/1.1 connection over TLS, as kube-rs opens them.
    async fn connect(&self) -> anyhow::Result<Conn> {
        let tcp = tokio::net::TcpStream::connect(self.addr).await?;
        tcp.set_nodelay(true)?;
        let name = ServerName::try_from("127.0.0.1").map_err(|e| anyhow!("{e}"))?;
        let tls = self.tls.connect(name, tcp).await.context("TLS handshake")?;
        let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(Conn {
            send,
            auth: self.auth.clone(),
        })
    }
}

struct Conn {
    send: SendRequest<Full<Bytes>>,
    auth: header::HeaderValue,
}

impl Conn {
    fn request(
        &self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
    ) -> anyhow::Result<Request<Full<Bytes>>> {
        let mut b = Request::builder()
            .method(method)
            .uri(path)
            .header(header::HOST, "127.0.0.1")
            .header(header::AUTHORIZATION, self.auth.clone())
            .header(header::ACCEPT, "application/json");
        if body.is_some() {
            b = b.header(header::CONTENT_TYPE, "application/json");
        }
        Ok(b.body(Full::new(body.unwrap_or_default()))?)
    }

    /// Sends a request and reads the whole answer.
    async fn call(
        &mut self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
    ) -> anyhow::Result<(StatusCode, Bytes)> {
        let req = self.request(method, path, body)?;
        self.send.ready().await?;
        let resp = self.send.send_request(req).await?;
        let status = resp.status();
        let body = resp.into_body().collect().await?.to_bytes();
        Ok((status, body))
    }

    async fn create_namespace(&mut self, name: &str) -> anyhow::Result<()> {
        let body = serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
        let (status, resp) = self
            .call(
                Method::POST,
                "/api/v1/namespaces",
                Some(body.to_string().into()),
            )
            .await?;
        if !status.is_success() && status != StatusCode::CONFLICT {
            bail!(
                "creating namespace {name}: {status} {}",
                String::from_utf8_lossy(&resp)
            );
        }
        Ok(())
    }
}

/// A ConfigMap whose serialized payload is `size` bytes.
fn config_map(ns: &str, name: &str, size: usize, seq: u64) -> Bytes {
    ConfigMapTemplate::new(ns, size).render(name, None, seq)
}

/// The bench ConfigMap's JSON with holes for its name and sequence number, built once per write
/// stream: a request then costs one buffer copy instead of building and serializing a JSON
/// value, so the client (which shares the CPU with the server) stays lean.
struct ConfigMapTemplate {
    /// Up to the name's opening quote.
    head: &'static str,
    /// After the name (and resourceVersion) up to the sequence number.
    middle: String,
    /// After the sequence number.
    tail: &'static str,
}

impl ConfigMapTemplate {
    fn new(ns: &str, size: usize) -> ConfigMapTemplate {
        // Serialized with serde_json so that any namespace is escaped correctly.
        let ns_json = serde_json::Value::from(ns).to_string();
        ConfigMapTemplate {
            head: r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":""#,
            middle: format!(
                r#","namespace":{ns_json},"labels":{{"app":"bench"}}}},"data":{{"payload":"{}","bench-seq":""#,
                "x".repeat(size)
            ),
            tail: r#""}}"#,
        }
    }

    /// The body for object `name` (a DNS-1123 name: nothing to escape) carrying `seq`, with
    /// `metadata.resourceVersion` when given (an update's precondition, as kubectl sends it).
    fn render(&self, name: &str, rv: Option<u64>, seq: u64) -> Bytes {
        use std::io::Write as _;
        let mut out = Vec::with_capacity(self.head.len() + name.len() + self.middle.len() + 64);
        out.extend_from_slice(self.head.as_bytes());
        out.extend_from_slice(name.as_bytes());
        out.push(b'"');
        if let Some(rv) = rv {
            let _ = write!(out, r#","resourceVersion":"{rv}""#);
        }
        out.extend_from_slice(self.middle.as_bytes());
        let _ = write!(out, "{seq}");
        out.extend_from_slice(self.tail.as_bytes());
        Bytes::from(out)
    }
}

/// `metadata.resourceVersion` of a written object, found in the raw answer (the bench objects
/// carry no other field of that name).
fn find_rv(body: &[u8]) -> Option<u64> {
    const RV: &[u8] = b"\"resourceVersion\":\"";
    let at = memchr::memmem::find(body, RV)? + RV.len();
    let rest = body.get(at..)?;
    let end = rest.iter().position(|b| *b == b'"')?;
    std::str::from_utf8(rest.get(..end)?).ok()?.parse().ok()
}

/// Writes `count` objects named `{prefix}-{i}` (i from `start`) with `clients` connections; for
/// `update`, replaces existing ones instead. With `rvs`, every write records the object's new
/// resourceVersion at its index and an update sends the recorded one as its precondition (a
/// conflict then fails the run), as `kubectl replace` does. Returns the successful writes;
/// failures abort.
// The knobs of one write stream are all independent numbers; a struct would only rename them.
#[allow(clippy::too_many_arguments)]
async fn drive_writes(
    target: &Target,
    ns: &str,
    prefix: &str,
    start: usize,
    count: usize,
    size: usize,
    clients: usize,
    update: bool,
    rvs: Option<Arc<Vec<AtomicU64>>>,
) -> anyhow::Result<usize> {
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..clients.max(1) {
        let target = target.clone();
        let next = next.clone();
        let rvs = rvs.clone();
        let (ns, prefix) = (ns.to_string(), prefix.to_string());
        tasks.push(tokio::spawn(async move {
            let template = ConfigMapTemplate::new(&ns, size);
            let collection = format!("/api/v1/namespaces/{ns}/configmaps");
            let mut conn = target.connect().await?;
            let mut done = 0usize;
            let mut name = String::new();
            let mut path = String::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= count {
                    break;
                }
                name.clear();
                {
                    use std::fmt::Write as _;
                    let _ = write!(name, "{prefix}-{}", start + i);
                }
                // Updates change the content (a no-op update writes nothing, as in Kubernetes).
                let seq = if update { (i + count) as u64 } else { i as u64 };
                let slot = rvs.as_ref().and_then(|r| r.get(i));
                let rv = slot
                    .map(|a| a.load(Ordering::Relaxed))
                    .filter(|rv| update && *rv > 0);
                let body = template.render(&name, rv, seq);
                path.clear();
                path.push_str(&collection);
                let method = if update {
                    path.push('/');
                    path.push_str(&name);
                    Method::PUT
                } else {
                    Method::POST
                };
                let (status, resp) = conn.call(method, &path, Some(body)).await?;
                if !status.is_success() {
                    bail!("{path}: {status} {}", String::from_utf8_lossy(&resp));
                }
                if let Some(slot) = slot {
                    slot.store(find_rv(&resp).unwrap_or(0), Ordering::Relaxed);
                }
                done += 1;
            }
            Ok::<usize, anyhow::Error>(done)
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await??;
    }
    Ok(total)
}

async fn fill(
    target: &Target,
    ns: &str,
    prefix: &str,
    start: usize,
    count: usize,
    size: usize,
    clients: usize,
) -> anyhow::Result<usize> {
    drive_writes(target, ns, prefix, start, count, size, clients, false, None).await
}

/// Returns how many objects it left in the store.
async fn write_scenario(
    target: &Target,
    args: &ApiserverOptions,
    runs: usize,
) -> anyhow::Result<usize> {
    let mut stored = 0;
    for &clients in &args.clients {
        // One client is slow by nature (one request in flight): fewer writes keep runs short.
        let writes = if clients == 1 {
            (args.writes / 4).max(1)
        } else {
            args.writes
        };
        let mut creates = Vec::new();
        let mut updates = Vec::new();
        // Process CPU time (server and client together) per write: steadier than the rate on a
        // shared machine, where other processes take turns on the same cores.
        let mut create_cpu = Vec::new();
        let mut update_cpu = Vec::new();
        // Cores kept busy (CPU seconds per wall second): below the core count means the write
        // path waits on something other than CPU.
        let mut create_busy = Vec::new();
        let mut update_busy = Vec::new();
        for run in 0..runs {
            let prefix = format!("c{clients}-r{run}");
            let rvs: Arc<Vec<AtomicU64>> =
                Arc::new((0..writes).map(|_| AtomicU64::new(0)).collect());
            for update in [false, true] {
                let (t, cpu) = (Instant::now(), cpu_seconds());
                let n = drive_writes(
                    target,
                    NS_WRITE,
                    &prefix,
                    0,
                    writes,
                    args.object_size,
                    clients,
                    update,
                    Some(rvs.clone()),
                )
                .await?;
                let wall = t.elapsed().as_secs_f64();
                let rate = n as f64 / wall;
                let cpu_s = cpu_seconds() - cpu;
                let cpu_us = cpu_s * 1e6 / n.max(1) as f64;
                let busy = cpu_s / wall.max(1e-9);
                if update {
                    updates.push(rate);
                    update_cpu.push(cpu_us);
                    update_busy.push(busy);
                } else {
                    creates.push(rate);
                    create_cpu.push(cpu_us);
                    create_busy.push(busy);
                    stored += n;
                }
            }
        }
        println!(
            "write: {clients:>3} clients, {} B objects, {writes} writes/run: create {} writes/s, \
             update {} writes/s; cpu per write: create {:.0} us, update {:.0} us; \
             cores busy: create {:.1}, update {:.1}   (runs: create {}; update {})",
            args.object_size,
            fmt_rate(median(&mut creates.clone())),
            fmt_rate(median(&mut updates.clone())),
            median(&mut create_cpu.clone()),
            median(&mut update_cpu.clone()),
            median(&mut create_busy),
            median(&mut update_busy),
            list_rates(&creates),
            list_rates(&updates),
        );
    }
    Ok(stored)
}

async fn list_scenario(target: &Target, objects: usize, runs: usize) -> anyhow::Result<()> {
    let mut conn = target.connect().await?;
    let path = format!("/api/v1/namespaces/{NS_LIST}/configmaps");
    let mut whole = Vec::new();
    let mut bytes = 0usize;
    for _ in 0..runs {
        let t = Instant::now();
        let (status, body) = conn.call(Method::GET, &path, None).await?;
        if !status.is_success() {
            bail!("{path}: {status}");
        }
        whole.push(t.elapsed().as_secs_f64());
        bytes = body.len();
        let n = memchr::memmem::find_iter(&body, SEQ_MARKER).count();
        if n != objects {
            bail!("{path}: listed {n} objects, expected {objects}");
        }
    }
    let mut paged = Vec::new();
    let mut pages = 0;
    for _ in 0..runs {
        let t = Instant::now();
        let mut cont = String::new();
        let mut n = 0usize;
        pages = 0;
        loop {
            let mut p = format!("{path}?limit=500");
            if !cont.is_empty() {
                p.push_str("&continue=");
                p.push_str(&cont);
            }
            let (status, body) = conn.call(Method::GET, &p, None).await?;
            if !status.is_success() {
                bail!("{p}: {status} {}", String::from_utf8_lossy(&body));
            }
            pages += 1;
            let v: serde_json::Value = serde_json::from_slice(&body)?;
            n += v["items"].as_array().map(|a| a.len()).unwrap_or(0);
            match v["metadata"]["continue"].as_str() {
                Some(c) if !c.is_empty() => cont = percent_encode(c),
                _ => break,
            }
        }
        if n != objects {
            bail!("paged list returned {n} objects, expected {objects}");
        }
        paged.push(t.elapsed().as_secs_f64());
    }
    println!(
        "list: {objects} objects ({}): one request {:.3} s, pages of 500 ({pages} requests) {:.3} s   \
         (runs: {}; {})",
        fmt_bytes(bytes as u64),
        median(&mut whole.clone()),
        median(&mut paged.clone()),
        list_secs(&whole),
        list_secs(&paged),
    );
    Ok(())
}

/// One client of the tls-clients scenario: its TLS configurations with its own certificate.
struct TlsClient {
    /// Resumption disabled: every connection is a full handshake.
    full: Arc<rustls::ClientConfig>,
    /// Resumption enabled (rustls's in-memory session store, per client).
    resume: Arc<rustls::ClientConfig>,
}

/// Connects with `cfg`, does one GET of `/api` over HTTP/1.1 and checks it succeeds; returns
/// whether the handshake was a resumption.
async fn tls_client_get(addr: SocketAddr, cfg: Arc<rustls::ClientConfig>) -> anyhow::Result<bool> {
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    tcp.set_nodelay(true)?;
    let name = ServerName::try_from("127.0.0.1").map_err(|e| anyhow!("{e}"))?;
    let tls = TlsConnector::from(cfg)
        .connect(name, tcp)
        .await
        .context("TLS handshake")?;
    let resumed = tls.get_ref().1.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
    let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await?;
    let conn = tokio::spawn(conn);
    let req = Request::builder()
        .method(Method::GET)
        .uri("/api")
        .header(header::HOST, "127.0.0.1")
        .header(header::ACCEPT, "application/json")
        .body(Full::new(Bytes::new()))?;
    let resp = send.send_request(req).await?;
    let status = resp.status();
    let body = resp.into_body().collect().await?.to_bytes();
    if status != StatusCode::OK {
        bail!("GET /api: {status} {}", String::from_utf8_lossy(&body));
    }
    drop(send);
    let _ = conn.await;
    Ok(resumed)
}

/// Every client connects once (at most `concurrency` at a time); returns connections/s, the
/// sorted latencies (ns) and how many handshakes were resumptions.
async fn tls_client_pass(
    addr: SocketAddr,
    configs: &[Arc<rustls::ClientConfig>],
    concurrency: usize,
) -> anyhow::Result<(f64, Vec<u64>, usize)> {
    let next = Arc::new(AtomicUsize::new(0));
    let configs: Arc<Vec<Arc<rustls::ClientConfig>>> = Arc::new(configs.to_vec());
    let t = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..concurrency.max(1) {
        let (next, configs) = (next.clone(), configs.clone());
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            let mut resumed = 0usize;
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(cfg) = configs.get(i) else { break };
                let t0 = Instant::now();
                if tls_client_get(addr, cfg.clone()).await? {
                    resumed += 1;
                }
                lat.push(t0.elapsed().as_nanos() as u64);
            }
            Ok::<_, anyhow::Error>((lat, resumed))
        }));
    }
    let mut lat = Vec::with_capacity(configs.len());
    let mut resumed = 0;
    for task in tasks {
        let (l, r) = task.await??;
        lat.extend(l);
        resumed += r;
    }
    let rate = lat.len() as f64 / t.elapsed().as_secs_f64();
    lat.sort_unstable();
    Ok((rate, lat, resumed))
}

async fn tls_clients_scenario(
    server: &BenchServer,
    args: &ApiserverOptions,
    runs: usize,
) -> anyhow::Result<()> {
    let n = args.tls_clients.max(1);
    let t = Instant::now();
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(server.ca_pem.as_bytes()).context("CA certificate")?)?;
    let roots = Arc::new(roots);
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut clients = Vec::with_capacity(n);
    for i in 0..n {
        let ck = server
            .pki()
            .issue_client_cert(&format!("user-{i}"), &[&format!("group-{i}")])?;
        let chain = vec![CertificateDer::from_pem_slice(ck.cert_pem.as_bytes())?];
        let key = rustls::pki_types::PrivateKeyDer::from_pem_slice(ck.key_pem.as_bytes())?;
        let mut resume = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots.clone())
            .with_client_auth_cert(chain, key)?;
        resume.alpn_protocols = vec![b"http/1.1".to_vec()];
        let mut full = resume.clone();
        full.resumption = rustls::client::Resumption::disabled();
        clients.push(TlsClient {
            full: Arc::new(full),
            resume: Arc::new(resume),
        });
    }
    println!(
        "tls-clients: {n} client certificates (CN=user-N, O=group-N) issued in {:.1} s; each \
         connection: TCP + TLS 1.3 handshake + one authenticated GET /api (HTTP/1.1)",
        t.elapsed().as_secs_f64()
    );
    let addr = server.target.addr;
    let full: Vec<_> = clients.iter().map(|c| c.full.clone()).collect();
    let resume: Vec<_> = clients.iter().map(|c| c.resume.clone()).collect();
    // Every client holds a session ticket before the resumption passes.
    tls_client_pass(addr, &resume, 16).await?;
    for (label, configs) in [("full handshake", &full), ("resumed session", &resume)] {
        for &c in &args.tls_concurrency {
            let (mut rates, mut p50s, mut p99s) = (Vec::new(), Vec::new(), Vec::new());
            let mut cpus = Vec::new();
            let mut resumed_total = 0;
            for _ in 0..runs {
                let cpu = cpu_seconds();
                let (rate, lat, resumed) = tls_client_pass(addr, configs, c).await?;
                cpus.push((cpu_seconds() - cpu) * 1e6 / lat.len().max(1) as f64);
                rates.push(rate);
                p50s.push(percentile(&lat, 0.50));
                p99s.push(percentile(&lat, 0.99));
                resumed_total += resumed;
            }
            println!(
                "tls-clients: {label}, {c:>3} concurrent: {} connections/s (handshake + GET), \
                 p50 {:.2} ms, p99 {:.2} ms; cpu {:.0} us per connection (client and server); \
                 resumed {resumed_total}/{}   (runs: {})",
                fmt_rate(median(&mut rates.clone())),
                median(&mut p50s),
                median(&mut p99s),
                median(&mut cpus),
                n * runs,
                list_rates(&rates),
            );
        }
    }
    Ok(())
}

async fn memory_scenario(
    target: &Target,
    args: &ApiserverOptions,
    others: usize,
) -> anyhow::Result<()> {
    let want = args.memory_objects.saturating_sub(others);
    let t = Instant::now();
    let done = fill(target, NS_MEMORY, "obj", 0, want, args.object_size, 64).await?;
    let secs = t.elapsed().as_secs_f64();
    let total = done + others;
    // Let the allocator settle and the store finish background work before sampling.
    tokio::time::sleep(Duration::from_secs(2)).await;
    println!(
        "memory: {total} objects stored ({done} created in {secs:.0} s, {:.0}/s); rss {} (peak {})",
        done as f64 / secs,
        fmt_bytes(rss_bytes().unwrap_or(0)),
        fmt_bytes(hwm_bytes().unwrap_or(0)),
    );
    Ok(())
}

async fn watch_scenario(
    server: &BenchServer,
    dir: &std::path::Path,
    args: &ApiserverOptions,
    runs: usize,
) -> anyhow::Result<()> {
    let ca_file = dir.join("ca.crt");
    let token_file = dir.join("token");
    std::fs::write(&ca_file, &server.ca_pem)?;
    std::fs::write(&token_file, &server.token)?;
    let exe = std::env::current_exe().context("locating the fleet binary")?;
    for &watchers in &args.watchers {
        let out = tokio::process::Command::new(&exe)
            .args(["bench", "watch-client", "--url", &server.url])
            .arg("--ca-file")
            .arg(&ca_file)
            .arg("--token-file")
            .arg(&token_file)
            .args(["--watchers", &watchers.to_string()])
            .args(["--events", &args.events.to_string()])
            .args(["--runs", &runs.to_string()])
            .args(["--event-interval-ms", &args.event_interval_ms.to_string()])
            .args(["--object-size", &args.object_size.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::inherit())
            .stderr(Stdio::inherit())
            .status()
            .await
            .context("running the watch clients")?;
        if !out.success() {
            bail!("watch clients for {watchers} watchers failed: {out}");
        }
        println!(
            "rss (server process) after {watchers} watchers: {}",
            fmt_bytes(rss_bytes().unwrap_or(0))
        );
    }
    Ok(())
}

/// The child process: opens the watchers, writes events, measures delivery latency.
/// Runs the watch fan-out child: opens the watchers, writes events, prints the latency line.
pub async fn watch_client(args: WatchClientOptions) -> anyhow::Result<()> {
    let ca = std::fs::read_to_string(&args.ca_file)?;
    let token = std::fs::read_to_string(&args.token_file)?;
    let authority = args.url.trim_start_matches("https://");
    let addr: SocketAddr = authority
        .parse()
        .with_context(|| format!("--url {}", args.url))?;
    let target = Target::new(addr, &ca, token.trim())?;

    let mut writer = target.connect().await?;
    let name = format!("fanout-{}", args.watchers);
    let obj_path = format!("/api/v1/namespaces/{NS_FANOUT}/configmaps/{name}");
    let (status, body) = writer
        .call(
            Method::POST,
            &format!("/api/v1/namespaces/{NS_FANOUT}/configmaps"),
            Some(config_map(NS_FANOUT, &name, args.object_size, 0)),
        )
        .await?;
    if !status.is_success() {
        bail!(
            "creating {name}: {status} {}",
            String::from_utf8_lossy(&body)
        );
    }

    // seq -> send time (ns since `base`); seq 0 is the warm-up event.
    let total_events = 1 + args.events * args.runs;
    let base = Instant::now();
    let sent: Arc<Vec<AtomicU64>> =
        Arc::new((0..=total_events).map(|_| AtomicU64::new(0)).collect());
    let (lat_tx, mut lat_rx) = tokio::sync::mpsc::unbounded_channel::<(u64, u64)>();

    // Open the watchers, at most 256 handshakes at a time.
    let t_connect = Instant::now();
    let opened = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicUsize::new(0));
    let gate = Arc::new(tokio::sync::Semaphore::new(256));
    let (ready_tx, mut ready_rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    // Every watcher watches the whole resource in the namespace, as an informer does.
    let watch_path =
        format!("/api/v1/namespaces/{NS_FANOUT}/configmaps?watch=true&timeoutSeconds=3600");
    for _ in 0..args.watchers {
        let target = target.clone();
        let path = watch_path.clone();
        let gate = gate.clone();
        let sent = sent.clone();
        let lat_tx = lat_tx.clone();
        let ready_tx = ready_tx.clone();
        let opened = opened.clone();
        let failed = failed.clone();
        tokio::spawn(async move {
            let resp = {
                let _permit = gate.acquire().await;
                let result = async {
                    let mut conn = target.connect().await?;
                    let req = conn.request(Method::GET, &path, None)?;
                    conn.send.ready().await?;
                    let resp = conn.send.send_request(req).await?;
                    if !resp.status().is_success() {
                        bail!("watch: {}", resp.status());
                    }
                    Ok::<_, anyhow::Error>((conn, resp))
                }
                .await;
                match result {
                    Ok(r) => r,
                    Err(e) => {
                        if failed.fetch_add(1, Ordering::Relaxed) == 0 {
                            eprintln!("watch-client: a watcher failed to open: {e:#}");
                        }
                        let _ = ready_tx.send(());
                        return;
                    }
                }
            };
            opened.fetch_add(1, Ordering::Relaxed);
            let _ = ready_tx.send(());
            let (_conn, resp) = resp;
            let stream = http_body_util::BodyStream::new(resp.into_body());
            let reader = tokio_util_reader(stream);
            let mut lines = reader.lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let now = base.elapsed().as_nanos() as u64;
                if let Some(seq) = find_seq(line.as_bytes()) {
                    let t0 = sent
                        .get(seq as usize)
                        .map(|a| a.load(Ordering::Acquire))
                        .unwrap_or(0);
                    let _ = lat_tx.send((seq, now.saturating_sub(t0)));
                }
            }
        });
    }
    drop(ready_tx);
    for _ in 0..args.watchers {
        if ready_rx.recv().await.is_none() {
            break;
        }
    }
    let connect_secs = t_connect.elapsed().as_secs_f64();
    let open = opened.load(Ordering::Relaxed);
    if open == 0 {
        bail!("no watcher could be opened");
    }

    // Warm-up: one event every watcher must see before measuring (the watch is registered).
    let update = |seq: u64| {
        sent[seq as usize].store(base.elapsed().as_nanos() as u64, Ordering::Release);
        config_map(NS_FANOUT, &name, args.object_size, seq)
    };
    let body = update(0);
    let (status, resp) = writer.call(Method::PUT, &obj_path, Some(body)).await?;
    if !status.is_success() {
        bail!("update: {status} {}", String::from_utf8_lossy(&resp));
    }
    let mut seen0 = 0;
    let warm_deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while seen0 < open {
        match tokio::time::timeout_at(warm_deadline, lat_rx.recv()).await {
            Ok(Some((0, _))) => seen0 += 1,
            Ok(Some(_)) => {}
            _ => break,
        }
    }

    let mut p50s = Vec::new();
    let mut p99s = Vec::new();
    let mut maxes = Vec::new();
    let mut missing_total = 0usize;
    for run in 0..args.runs {
        let first = 1 + (run * args.events) as u64;
        for e in 0..args.events as u64 {
            let body = update(first + e);
            let (status, resp) = writer.call(Method::PUT, &obj_path, Some(body)).await?;
            if !status.is_success() {
                bail!("update: {status} {}", String::from_utf8_lossy(&resp));
            }
            tokio::time::sleep(Duration::from_millis(args.event_interval_ms)).await;
        }
        let expected = seen0 * args.events;
        let mut lat = Vec::with_capacity(expected);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while lat.len() < expected {
            match tokio::time::timeout_at(deadline, lat_rx.recv()).await {
                Ok(Some((seq, ns))) if seq >= first && seq < first + args.events as u64 => {
                    lat.push(ns)
                }
                Ok(Some(_)) => {}
                _ => break,
            }
        }
        missing_total += expected - lat.len();
        lat.sort_unstable();
        p50s.push(percentile(&lat, 0.50));
        p99s.push(percentile(&lat, 0.99));
        maxes.push(lat.last().copied().unwrap_or(0) as f64 / 1e6);
    }
    println!(
        "watch: {open}/{} watchers (opened in {connect_secs:.1} s, {seen0} confirmed), {} events x {} runs, \
         {} ms apart: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; undelivered {missing_total}   (runs p99: {})",
        args.watchers,
        args.events,
        args.runs,
        args.event_interval_ms,
        median(&mut p50s.clone()),
        median(&mut p99s.clone()),
        median(&mut maxes.clone()),
        p99s.iter()
            .map(|v| format!("{v:.1}"))
            .collect::<Vec<_>>()
            .join(", "),
    );
    Ok(())
}

/// Turns a body stream into an `AsyncBufRead` so watch lines can be read as they arrive.
fn tokio_util_reader(
    stream: http_body_util::BodyStream<hyper::body::Incoming>,
) -> impl tokio::io::AsyncBufRead + Unpin {
    use futures::TryStreamExt;
    let bytes = stream
        .try_filter_map(|frame| futures::future::ready(Ok(frame.into_data().ok())))
        .map_err(std::io::Error::other);
    tokio::io::BufReader::new(tokio_util::io::StreamReader::new(bytes))
}

/// The `bench-seq` value in a raw watch line.
fn find_seq(line: &[u8]) -> Option<u64> {
    let at = memchr::memmem::find(line, SEQ_MARKER)? + SEQ_MARKER.len();
    let rest = line.get(at..)?;
    let end = rest.iter().position(|b| *b == b'"')?;
    std::str::from_utf8(rest.get(..end)?).ok()?.parse().ok()
}

/// The q-quantile of sorted nanosecond samples, in milliseconds.
fn percentile(sorted: &[u64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let idx = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted.get(idx.min(sorted.len() - 1)).copied().unwrap_or(0) as f64 / 1e6
}

fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let mid = v.len() / 2;
    if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    }
}

fn fmt_rate(r: f64) -> String {
    format!("{r:.0}")
}

fn list_rates(v: &[f64]) -> String {
    v.iter()
        .map(|r| format!("{r:.0}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn list_secs(v: &[f64]) -> String {
    v.iter()
        .map(|r| format!("{r:.3}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn fmt_bytes(b: u64) -> String {
    const MIB: f64 = 1024.0 * 1024.0;
    if b as f64 >= 1024.0 * MIB {
        format!("{:.2} GiB", b as f64 / (1024.0 * MIB))
    } else {
        format!("{:.1} MiB", b as f64 / MIB)
    }
}

/// Percent-encodes a continue token for a query string.
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seq_is_found_in_a_watch_line() {
        let line = br#"{"type":"MODIFIED","object":{"data":{"bench-seq":"42","payload":"x"}}}"#;
        assert_eq!(find_seq(line), Some(42));
        assert_eq!(find_seq(b"{}"), None);
        assert_eq!(find_seq(br#"{"bench-seq":"4"#), None);
    }

    #[test]
    fn medians_and_percentiles() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        let s: Vec<u64> = (1..=100).map(|i| i * 1_000_000).collect();
        assert_eq!(percentile(&s, 0.99), 99.0);
        assert!(percentile(&[], 0.5).is_nan());
    }

    #[test]
    fn templated_bodies_are_the_expected_config_map() {
        let body = config_map("bench-write", "c64-r0-7", 16, 42);
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            v,
            serde_json::json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "c64-r0-7", "namespace": "bench-write", "labels": {"app": "bench"}},
                "data": {"payload": "x".repeat(16), "bench-seq": "42"},
            })
        );
        assert_eq!(find_seq(&body), Some(42));
    }

    #[test]
    fn continue_tokens_are_encoded() {
        assert_eq!(percent_encode("a+b/c="), "a%2Bb%2Fc%3D");
    }
}
