//! `fleet dev`: the whole system on one machine. It starts a manager (`fleet server`), N downstream
//! clusters (`fleet server --no-controllers --simulate-workloads`), registers each through the real
//! flow (`fleet install agent-config`, `fleet install agent-token`, `fleet agent`), points a GitRepo
//! at an example repository (or the user's), and shows progress until every BundleDeployment is
//! Ready. Every piece is a separate process started from this same binary, so what runs here is
//! what runs anywhere; this module only wires them together.

mod example;
mod progress;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use progress::{Progress, Snapshot};

/// Flags of `fleet dev` (the DESIGN.md contract).
#[derive(Args, Debug)]
pub struct DevArgs {
    /// Number of downstream clusters.
    #[arg(long, default_value_t = 3)]
    pub clusters: usize,
    /// Git repository (URL or local directory) for the GitRepo; default: an example repository
    /// written into DIR/repo.
    #[arg(long, value_name = "URL|DIR")]
    pub repo: Option<String>,
    /// Branch of the repository.
    #[arg(long, default_value = "main")]
    pub branch: String,
    /// Paths in the repository to deploy (comma-separated); default: the example's four.
    #[arg(long, value_delimiter = ',')]
    pub paths: Vec<String>,
    /// Where the servers keep their data, kubeconfigs and logs.
    #[arg(long, value_name = "DIR", default_value = "./fleet-dev")]
    pub data_dir: PathBuf,
    /// Exit 0 once every BundleDeployment is Ready (non-zero with the reason if that fails).
    #[arg(long)]
    pub exit_when_ready: bool,
    /// With --exit-when-ready: give up after this many seconds.
    #[arg(long, default_value_t = 300, value_name = "SECS")]
    pub timeout: u64,
}

/// What a later `fleet dev` on the same directory needs to resume: the manager's port (agents hold
/// credentials naming its URL) and the clusters' labels.
#[derive(Serialize, Deserialize, Default)]
struct State {
    manager_port: u16,
    clusters: Vec<ClusterState>,
}

#[derive(Serialize, Deserialize, Clone)]
struct ClusterState {
    name: String,
    port: u16,
    labels: Vec<(String, String)>,
}

/// The workspace the downstream clusters register into.
const WORKSPACE: &str = "fleet-default";
/// The GitRepo `fleet dev` creates.
const GITREPO: &str = "examples";
/// The agent's system namespace on each downstream cluster.
const AGENT_NAMESPACE: &str = "cattle-fleet-system";

/// Runs `fleet dev` until Ctrl-C (or until ready with --exit-when-ready).
pub fn run(args: DevArgs) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(run_async(args))
}

async fn run_async(args: DevArgs) -> anyhow::Result<()> {
    if args.clusters == 0 {
        bail!("--clusters must be at least 1");
    }
    std::fs::create_dir_all(&args.data_dir)
        .with_context(|| format!("creating {}", args.data_dir.display()))?;
    let dir = args
        .data_dir
        .canonicalize()
        .with_context(|| format!("resolving {}", args.data_dir.display()))?;
    let exe = std::env::current_exe().context("locating the fleet binary")?;
    let logs = dir.join("logs");
    std::fs::create_dir_all(&logs).context("creating the log directory")?;
    let state_path = dir.join("dev.json");
    let mut state: State = match std::fs::read(&state_path) {
        Ok(b) => serde_json::from_slice(&b)
            .with_context(|| format!("{}: not a fleet dev state file", state_path.display()))?,
        Err(_) => State::default(),
    };
    for i in state.clusters.len()..args.clusters {
        state.clusters.push(ClusterState {
            name: format!("c{}", i + 1),
            port: 0,
            labels: example::cluster_labels(i + 1),
        });
    }
    state.clusters.truncate(args.clusters);

    let started = Instant::now();
    let mut procs = Processes::default();
    let say = |msg: &str| eprintln!("fleet dev: {msg}");

    // The manager keeps its port across runs: registered agents hold its URL.
    let manager_dir = dir.join("manager");
    let manager_url = procs
        .server(
            &exe,
            "manager",
            &manager_dir,
            state.manager_port,
            &[],
            &logs,
        )
        .await?;
    state.manager_port = port_of(&manager_url)?;
    let manager_kubeconfig = manager_dir.join("kubeconfig");
    say(&format!("manager ready at {manager_url}"));

    for c in &mut state.clusters {
        let cdir = dir.join("clusters").join(&c.name);
        let url = procs
            .server(
                &exe,
                &c.name,
                &cdir,
                c.port,
                &["--no-controllers", "--simulate-workloads"],
                &logs,
            )
            .await?;
        c.port = port_of(&url)?;
    }
    std::fs::write(&state_path, serde_json::to_vec_pretty(&state)?)
        .with_context(|| format!("writing {}", state_path.display()))?;

    let manager = fleet_kube::client(Some(&manager_kubeconfig)).await?;
    for c in &state.clusters {
        let kubeconfig = dir.join("clusters").join(&c.name).join("kubeconfig");
        let downstream = fleet_kube::client(Some(&kubeconfig)).await?;
        if !registered(&downstream).await {
            say(&format!(
                "registering {} ({})",
                c.name,
                label_text(&c.labels)
            ));
            register(&exe, &manager_kubeconfig, &downstream, c).await?;
        }
        let k = kubeconfig.to_string_lossy().into_owned();
        procs.spawn(
            &exe,
            &format!("agent-{}", c.name),
            // A short check-in so the dev loop sees every cluster within seconds.
            &["agent", "--kubeconfig", &k, "--checkin-interval", "5s"],
            &logs,
        )?;
    }
    say(&format!("{} agents started", state.clusters.len()));

    let (repo_url, paths) = match &args.repo {
        Some(r) => (repo_url(r)?, args.paths.clone()),
        None => {
            let repo = dir.join("repo");
            example::write_repository(&repo, &args.branch)?;
            let paths = if args.paths.is_empty() {
                example::PATHS.iter().map(|p| p.to_string()).collect()
            } else {
                args.paths.clone()
            };
            (format!("file://{}", repo.display()), paths)
        }
    };
    apply_gitrepo(&manager, &repo_url, &args.branch, &paths).await?;
    say(&format!(
        "GitRepo {WORKSPACE}/{GITREPO} → {repo_url} ({})",
        paths.join(", ")
    ));

    let mut progress = Progress::new(args.clusters);
    let deadline = started + Duration::from_secs(args.timeout);
    let mut ready_reported = false;
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    let mut stop = Box::pin(shutdown_signal());
    loop {
        tokio::select! {
            _ = &mut stop => {
                progress.finish();
                say("stopping");
                procs.stop_all().await;
                return Ok(());
            }
            _ = tick.tick() => {}
        }
        if let Some(name) = procs.exited() {
            progress.finish();
            let tail = procs.log_tail(&name, &logs);
            procs.stop_all().await;
            bail!("{name} exited unexpectedly; last lines of its log:\n{tail}");
        }
        let snap = match Snapshot::take(&manager).await {
            Ok(s) => s,
            Err(e) => {
                progress.note(&format!("reading status from the manager: {e}"));
                continue;
            }
        };
        progress.show(&snap);
        if snap.all_ready(args.clusters) && !ready_reported {
            ready_reported = true;
            progress.finish();
            print_ready(&dir, &state, &snap, started.elapsed(), args.repo.is_none());
            if args.exit_when_ready {
                procs.stop_all().await;
                return Ok(());
            }
            progress = Progress::new(args.clusters);
        } else if !snap.all_ready(args.clusters) {
            ready_reported = false;
        }
        if args.exit_when_ready && Instant::now() > deadline {
            progress.finish();
            procs.stop_all().await;
            bail!(
                "not every BundleDeployment was Ready after {}s: {}",
                args.timeout,
                snap.why_not_ready(args.clusters)
            );
        }
    }
}

fn label_text(labels: &[(String, String)]) -> String {
    labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The port of `https://host:port`.
fn port_of(url: &str) -> anyhow::Result<u16> {
    url.rsplit(':')
        .next()
        .and_then(|p| p.trim_end_matches('/').parse().ok())
        .with_context(|| format!("no port in {url}"))
}

/// A directory becomes a `file://` URL; anything else is used as given.
fn repo_url(r: &str) -> anyhow::Result<String> {
    if r.contains("://") || r.contains('@') {
        return Ok(r.to_string());
    }
    let p = Path::new(r)
        .canonicalize()
        .with_context(|| format!("--repo {r}: not a URL and not a directory"))?;
    Ok(format!("file://{}", p.display()))
}

/// Whether the downstream cluster already holds the agent's credential from an earlier run.
async fn registered(downstream: &kube::Client) -> bool {
    let secrets: kube::Api<k8s_openapi::api::core::v1::Secret> =
        kube::Api::namespaced(downstream.clone(), AGENT_NAMESPACE);
    matches!(secrets.get_opt("fleet-agent").await, Ok(Some(_)))
}

/// The seed's registration flow, done as a user would with kubectl: the agent config and an
/// agent token, generated by `fleet install`, applied to the downstream cluster.
async fn register(
    exe: &Path,
    manager_kubeconfig: &Path,
    downstream: &kube::Client,
    c: &ClusterState,
) -> anyhow::Result<()> {
    let mut config_args: Vec<String> = vec!["install".into(), "agent-config".into()];
    for (k, v) in &c.labels {
        config_args.push("-l".into());
        config_args.push(format!("{k}={v}"));
    }
    let config = output(exe, &config_args).await?;
    let token = output(
        exe,
        &[
            "install".into(),
            "agent-token".into(),
            "--kubeconfig".into(),
            manager_kubeconfig.to_string_lossy().into_owned(),
            "-n".into(),
            WORKSPACE.into(),
        ],
    )
    .await?;
    for manifest in [config, token] {
        fleet_kube::apply::apply_yaml(downstream, &manifest, "fleet-dev", "default")
            .await
            .with_context(|| format!("registering {}: applying the agent manifests", c.name))?;
    }
    Ok(())
}

/// Runs `fleet ARGS...` and returns its stdout, or its stderr as the error.
async fn output(exe: &Path, args: &[String]) -> anyhow::Result<String> {
    let out = Command::new(exe)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .await
        .with_context(|| format!("running fleet {}", args.join(" ")))?;
    if !out.status.success() {
        bail!(
            "fleet {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Creates or updates the GitRepo (server-side apply, so a resumed run converges to the flags).
async fn apply_gitrepo(
    manager: &kube::Client,
    repo: &str,
    branch: &str,
    paths: &[String],
) -> anyhow::Result<()> {
    let gitrepo = serde_json::json!({
        "apiVersion": "fleet.cattle.io/v1alpha1",
        "kind": "GitRepo",
        "metadata": {"name": GITREPO, "namespace": WORKSPACE},
        "spec": {
            "repo": repo,
            "branch": branch,
            "paths": paths,
            "pollingInterval": "5s",
            "targets": [{"clusterSelector": {}}],
        }
    });
    let yaml = serde_json::to_string(&gitrepo)?;
    // The CRDs are installed by the manager as it starts; wait for discovery to show them.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match fleet_kube::apply::apply_yaml(manager, &yaml, "fleet-dev", WORKSPACE).await {
            Ok(_) => return Ok(()),
            Err(e) if Instant::now() < deadline => {
                tracing::debug!("GitRepo not applied yet: {e}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => return Err(e).context("creating the GitRepo on the manager"),
        }
    }
}

fn print_ready(dir: &Path, state: &State, snap: &Snapshot, took: Duration, example: bool) {
    println!(
        "\nAll {} BundleDeployments Ready on {} clusters in {:.1}s (commit {}).\n",
        snap.bundle_deployments,
        state.clusters.len(),
        took.as_secs_f64(),
        snap.commit_short()
    );
    println!(
        "manager:  export KUBECONFIG={}",
        dir.join("manager/kubeconfig").display()
    );
    for c in &state.clusters {
        let labels: Vec<String> = c.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        println!(
            "{}:       {} ({})",
            c.name,
            dir.join("clusters")
                .join(&c.name)
                .join("kubeconfig")
                .display(),
            labels.join(",")
        );
    }
    println!("\nTry next:");
    println!(
        "  KUBECONFIG={} kubectl get gitrepos,bundles,clusters -A",
        dir.join("manager/kubeconfig").display()
    );
    if example {
        println!(
            "  cd {} && edit helm/values.yaml && git commit -am change   # watch it roll out",
            dir.join("repo").display()
        );
    }
    println!(
        "  KUBECONFIG={} kubectl get deploy,cm -A   # what the agent deployed (workloads are simulated: no container runs)",
        dir.join("clusters/c1/kubeconfig").display()
    );
}

/// Resolves on Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => {
                    let _ = ctrl_c.await;
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}

/// The child processes `fleet dev` started; all of them are stopped when it ends.
#[derive(Default)]
struct Processes {
    children: Vec<(String, Child)>,
}

impl Processes {
    /// Starts `fleet server` on `port` (0: any) and waits for its `ready <url>` line.
    async fn server(
        &mut self,
        exe: &Path,
        name: &str,
        data_dir: &Path,
        port: u16,
        extra: &[&str],
        logs: &Path,
    ) -> anyhow::Result<String> {
        let listen = format!("127.0.0.1:{port}");
        let d = data_dir.to_string_lossy().into_owned();
        let mut args = vec![
            "server",
            "--data-dir",
            d.as_str(),
            "--listen",
            listen.as_str(),
        ];
        args.extend_from_slice(extra);
        let log = std::fs::File::create(logs.join(format!("{name}.log")))
            .with_context(|| format!("creating the log of {name}"))?;
        let mut child = Command::new(exe)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {name}"))?;
        let stdout = child.stdout.take().context("server stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let ready = tokio::time::timeout(Duration::from_secs(60), lines.next_line()).await;
        let url = match ready {
            Ok(Ok(Some(line))) if line.starts_with("ready ") => {
                line.trim_start_matches("ready ").to_string()
            }
            other => {
                let _ = child.kill().await;
                bail!(
                    "{name} did not start ({other:?}); see {}",
                    logs.join(format!("{name}.log")).display()
                );
            }
        };
        // Keep draining stdout so the server never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        self.children.push((name.to_string(), child));
        Ok(url)
    }

    /// Starts a long-running `fleet` subcommand with its output in `logs/NAME.log`.
    fn spawn(&mut self, exe: &Path, name: &str, args: &[&str], logs: &Path) -> anyhow::Result<()> {
        let log = std::fs::File::create(logs.join(format!("{name}.log")))
            .with_context(|| format!("creating the log of {name}"))?;
        let err = log.try_clone().context("log file")?;
        let child = Command::new(exe)
            .args(args)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {name}"))?;
        self.children.push((name.to_string(), child));
        Ok(())
    }

    /// The name of a child that has exited, if any.
    fn exited(&mut self) -> Option<String> {
        self.children
            .iter_mut()
            .find_map(|(n, c)| matches!(c.try_wait(), Ok(Some(_))).then_some(n))
            .map(|n| n.clone())
    }

    fn log_tail(&self, name: &str, logs: &Path) -> String {
        let text = std::fs::read_to_string(logs.join(format!("{name}.log"))).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// SIGTERM to every child (agents first, the manager last), then SIGKILL after a grace period.
    async fn stop_all(&mut self) {
        for (_, c) in self.children.iter().rev() {
            if let Some(pid) = c.id() {
                let _ = Command::new("kill")
                    .arg("-TERM")
                    .arg(pid.to_string())
                    .status()
                    .await;
            }
        }
        for (_, c) in self.children.iter_mut().rev() {
            if tokio::time::timeout(Duration::from_secs(10), c.wait())
                .await
                .is_err()
            {
                let _ = c.kill().await;
            }
        }
        self.children.clear();
    }
}
