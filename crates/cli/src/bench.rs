//! `fleet bench`: flags only; the benchmarks themselves live in the `fleet-bench` crate.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use fleet_apiserver::store::StoreSync;
use fleet_bench::apiserver::{ApiserverOptions, WatchClientOptions};

/// `fleet bench <target>`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    #[command(subcommand)]
    target: BenchTarget,
}

#[derive(Subcommand, Debug)]
enum BenchTarget {
    /// One commit to thousands of clusters Ready: a real manager process, N real agents with
    /// in-memory downstream clusters; prints the `scale:` line.
    Scale(ScaleArgs),
    /// The manager's controllers alone on hand-made Clusters: commit to every BundleDeployment
    /// written, writes per BundleDeployment, resync writes, RSS; prints the `controller:` line.
    Controller(ControllerArgs),
    /// Throughput, watch fan-out latency, memory and list time of the embedded API server.
    Apiserver(ApiserverArgs),
    /// Internal: the watch fan-out clients, run as a child process by `bench apiserver`.
    #[command(hide = true)]
    WatchClient(WatchClientArgs),
}

/// What `fleet bench apiserver` measures.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum Scenario {
    /// Create and update throughput of 1 KiB objects at 1 and 64 concurrent clients.
    Write,
    /// p50/p99 event delivery latency to 1,000 and 10,000 watchers of one resource.
    Watch,
    /// Time to list 100,000 objects (one request, and pages of 500).
    List,
    /// Resident memory with 1,000,000 stored objects.
    Memory,
    /// TLS handshake plus request rate of 1,000 distinct clients: each has its own client
    /// certificate from the server's CA (CN=user-N, O=group-N), opens a fresh connection, does a
    /// full handshake and one authenticated GET (`/api`); reports connections/s and p50/p99
    /// latency per concurrency level, then the same with TLS 1.3 session resumption (the server
    /// issues session tickets, so a returning client skips the certificate exchange).
    TlsClients,
}

/// Where the benchmark server keeps its data.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum StoreKind {
    /// SQLite (WAL) in a temporary directory, as `fleet server` runs.
    File,
    /// Memory only (no durability): shows the cost of the REST layer alone.
    Memory,
}

#[derive(Args, Debug)]
struct ApiserverArgs {
    /// Scenarios to run (repeatable or comma-separated); all when absent.
    #[arg(long, value_enum, value_delimiter = ',')]
    scenario: Vec<Scenario>,
    /// Repetitions per figure (the median is reported).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Storage backing the benchmark server.
    #[arg(long, value_enum, default_value = "file")]
    store: StoreKind,
    /// Whether each commit fsyncs (file store), as `fleet server --store-sync`.
    #[arg(long, value_name = "full|normal", default_value = "full")]
    store_sync: StoreSync,
    /// Size of each object's payload in bytes.
    #[arg(long, default_value_t = 1024)]
    object_size: usize,
    /// Concurrent client counts for the write scenario.
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 64])]
    clients: Vec<usize>,
    /// Writes per run and client count (create pass; the update pass does as many).
    #[arg(long, default_value_t = 20_000)]
    writes: usize,
    /// Watcher counts for the watch scenario.
    #[arg(long, value_delimiter = ',', default_values_t = [1_000usize, 10_000])]
    watchers: Vec<usize>,
    /// Events per watch run.
    #[arg(long, default_value_t = 20)]
    events: usize,
    /// Pause between watch events, in milliseconds.
    #[arg(long, default_value_t = 100)]
    event_interval_ms: u64,
    /// Objects for the list scenario.
    #[arg(long, default_value_t = 100_000)]
    list_objects: usize,
    /// Objects for the memory scenario.
    #[arg(long, default_value_t = 1_000_000)]
    memory_objects: usize,
    /// Distinct clients (certificates) for the tls-clients scenario.
    #[arg(long, default_value_t = 1_000)]
    tls_clients: usize,
    /// Concurrency levels (connections in flight) for the tls-clients scenario.
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 16, 64])]
    tls_concurrency: Vec<usize>,
}

#[derive(Args, Debug)]
struct WatchClientArgs {
    #[arg(long)]
    url: String,
    #[arg(long)]
    ca_file: PathBuf,
    #[arg(long)]
    token_file: PathBuf,
    #[arg(long)]
    watchers: usize,
    #[arg(long)]
    events: usize,
    #[arg(long)]
    runs: usize,
    #[arg(long)]
    event_interval_ms: u64,
    #[arg(long)]
    object_size: usize,
}

/// Flags of `fleet bench scale` (issue #16).
#[derive(Args, Debug)]
struct ScaleArgs {
    /// Downstream clusters (one agent each).
    #[arg(long, default_value_t = 20)]
    clusters: usize,
    /// Bundles in the git repository (one directory each).
    #[arg(long, default_value_t = 5)]
    bundles: usize,
    /// Objects per bundle (cycling Deployment, Service, ConfigMap).
    #[arg(long, default_value_t = 3)]
    objects: usize,
    /// Update rounds (a commit changing every bundle each); update_s is their median.
    #[arg(long, default_value_t = 1)]
    runs: usize,
    /// The GitRepo's pollingInterval (Go duration).
    #[arg(long, default_value = "1s")]
    polling_interval: String,
    /// Seconds of the idle window after Ready in which writes are counted.
    #[arg(long, default_value_t = 10)]
    idle_secs: u64,
    /// Give up on a phase after this many seconds.
    #[arg(long, default_value_t = 600)]
    timeout: u64,
    /// The manager's `--store-sync`.
    #[arg(long, value_name = "full|normal", default_value = "full")]
    store_sync: String,
}

/// Flags of `fleet bench controller` (issue #12).
#[derive(Args, Debug)]
struct ControllerArgs {
    /// Hand-made Cluster objects.
    #[arg(long, default_value_t = 1000)]
    clusters: usize,
    /// Bundles in the git repository (one directory each).
    #[arg(long, default_value_t = 50)]
    bundles: usize,
    /// Objects per bundle (cycling Deployment, Service, ConfigMap).
    #[arg(long, default_value_t = 3)]
    objects: usize,
    /// Seconds the restarted manager is watched for resync writes.
    #[arg(long, default_value_t = 15)]
    resync_secs: u64,
    /// Give up on a phase after this many seconds.
    #[arg(long, default_value_t = 600)]
    timeout: u64,
    /// The manager's `--store-sync`.
    #[arg(long, value_name = "full|normal", default_value = "full")]
    store_sync: String,
}

/// Runs `fleet bench ...`.
pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    if matches!(args.target, BenchTarget::Scale(_)) {
        on_huge_pages()?;
    }
    fleet_bench::raise_fd_limit();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    match args.target {
        BenchTarget::Apiserver(a) => rt.block_on(fleet_bench::apiserver::apiserver(a.into())),
        BenchTarget::WatchClient(a) => rt.block_on(fleet_bench::apiserver::watch_client(a.into())),
        BenchTarget::Controller(a) => {
            let exe = std::env::current_exe().context("locating the fleet binary")?;
            rt.block_on(fleet_bench::controller::controller(
                fleet_bench::controller::ControllerOptions {
                    exe,
                    clusters: a.clusters,
                    bundles: a.bundles,
                    objects: a.objects,
                    resync: std::time::Duration::from_secs(a.resync_secs),
                    timeout: std::time::Duration::from_secs(a.timeout),
                    store_sync: a.store_sync,
                },
            ))
        }
        BenchTarget::Scale(a) => {
            let exe = std::env::current_exe().context("locating the fleet binary")?;
            rt.block_on(fleet_bench::scale::scale(
                fleet_bench::scale::ScaleOptions {
                    exe,
                    clusters: a.clusters,
                    bundles: a.bundles,
                    objects: a.objects,
                    runs: a.runs,
                    polling_interval: a.polling_interval,
                    idle: std::time::Duration::from_secs(a.idle_secs),
                    timeout: std::time::Duration::from_secs(a.timeout),
                    store_sync: a.store_sync,
                },
            ))
        }
    }
}

/// Runs this command again with [`fleet_bench::scale::BENCH_MALLOC_CONF`] unless jemalloc was
/// given options already (which are then kept): jemalloc reads them once, as the process starts.
fn on_huge_pages() -> anyhow::Result<()> {
    use fleet_bench::scale::{BENCH_MALLOC_CONF, MALLOC_CONF};
    use std::os::unix::process::CommandExt as _;
    if std::env::var_os(MALLOC_CONF).is_some() {
        return Ok(());
    }
    let exe = std::env::current_exe().context("locating the fleet binary")?;
    let err = std::process::Command::new(exe)
        .args(std::env::args_os().skip(1))
        .env(MALLOC_CONF, BENCH_MALLOC_CONF)
        .exec();
    Err(anyhow::Error::new(err).context("running fleet bench scale again on huge pages"))
}

impl From<Scenario> for fleet_bench::apiserver::Scenario {
    fn from(s: Scenario) -> Self {
        use fleet_bench::apiserver::Scenario as S;
        match s {
            Scenario::Write => S::Write,
            Scenario::Watch => S::Watch,
            Scenario::List => S::List,
            Scenario::Memory => S::Memory,
            Scenario::TlsClients => S::TlsClients,
        }
    }
}

impl From<ApiserverArgs> for ApiserverOptions {
    fn from(a: ApiserverArgs) -> Self {
        ApiserverOptions {
            scenario: a.scenario.into_iter().map(Into::into).collect(),
            runs: a.runs,
            store: match a.store {
                StoreKind::File => fleet_bench::apiserver::StoreKind::File,
                StoreKind::Memory => fleet_bench::apiserver::StoreKind::Memory,
            },
            store_sync: a.store_sync,
            object_size: a.object_size,
            clients: a.clients,
            writes: a.writes,
            watchers: a.watchers,
            events: a.events,
            event_interval_ms: a.event_interval_ms,
            list_objects: a.list_objects,
            memory_objects: a.memory_objects,
            tls_clients: a.tls_clients,
            tls_concurrency: a.tls_concurrency,
        }
    }
}

impl From<WatchClientArgs> for WatchClientOptions {
    fn from(a: WatchClientArgs) -> Self {
        WatchClientOptions {
            url: a.url,
            ca_file: a.ca_file,
            token_file: a.token_file,
            watchers: a.watchers,
            events: a.events,
            runs: a.runs,
            event_interval_ms: a.event_interval_ms,
            object_size: a.object_size,
        }
    }
}
