//! `fleet bench agent`: flags and printing only; the measurements are `fleet_agent::bench`.

use std::time::Duration;

use anyhow::Context;
use clap::Args;
use fleet_agent::bench::{self, Requests, median};

/// Flags of `fleet bench agent`.
#[derive(Args, Debug)]
pub struct AgentBenchArgs {
    /// Objects in the bundle applied once and re-synced.
    #[arg(long, default_value_t = 100)]
    objects: usize,
    /// Seconds of idleness over which idle requests are counted.
    #[arg(long, default_value_t = 60)]
    idle_secs: u64,
    /// Runs of the request figures (medians are printed).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// BundleDeployments (two objects each) the agent holds for the memory figure.
    #[arg(long, default_value_t = 50)]
    bundledeployments: usize,
    /// RSS samples, one second apart, once the agent is idle.
    #[arg(long, default_value_t = 5)]
    samples: usize,
    /// Print every request line of each phase (first run).
    #[arg(long)]
    verbose: bool,
}

fn med(rs: &[Requests], f: impl Fn(&Requests) -> u64) -> u64 {
    median(rs.iter().map(f).collect())
}

fn line(what: &str, rs: &[Requests]) {
    println!(
        "{what:<44} total {:>5}  reads {:>5}  watches {:>3}  writes {:>5}",
        med(rs, Requests::total),
        med(rs, |r| r.reads),
        med(rs, |r| r.watches),
        med(rs, |r| r.writes),
    );
}

/// Runs the agent benchmark on `rt` and prints medians.
pub fn run(rt: &tokio::runtime::Runtime, a: AgentBenchArgs) -> anyhow::Result<()> {
    let exe = std::env::current_exe().context("locating the fleet binary")?;
    println!(
        "fleet bench agent: embedded manager and downstream API servers in this process; requests \
         counted at the servers' routers; medians of {} runs",
        a.runs
    );
    let mut figs = Vec::new();
    for i in 0..a.runs.max(1) {
        let f = rt.block_on(bench::measure_requests(
            a.objects,
            Duration::from_secs(a.idle_secs),
            a.verbose && i == 0,
        ))?;
        figs.push(f);
    }
    let pick = |f: fn(&bench::RequestFigures) -> Requests| -> Vec<Requests> {
        figs.iter().map(f).collect()
    };
    let n = a.objects;
    line(
        &format!("apply {n} objects once: downstream"),
        &pick(|f| f.apply_downstream),
    );
    line(
        &format!("apply {n} objects once: upstream"),
        &pick(|f| f.apply_upstream),
    );
    line(
        "restart, nothing changed: downstream",
        &pick(|f| f.resync_downstream),
    );
    line(
        "restart, nothing changed: upstream",
        &pick(|f| f.resync_upstream),
    );
    line(
        &format!("idle {} s: downstream", a.idle_secs),
        &pick(|f| f.idle_downstream),
    );
    line(
        &format!("idle {} s: upstream", a.idle_secs),
        &pick(|f| f.idle_upstream),
    );
    let per_min = |r: &Requests| r.total() as f64 * 60.0 / a.idle_secs.max(1) as f64;
    let ups: Vec<u64> = figs
        .iter()
        .map(|f| per_min(&f.idle_upstream).round() as u64)
        .collect();
    println!("upstream requests per minute when idle: {}", median(ups));
    let rss = rt.block_on(bench::measure_rss(
        &exe,
        a.bundledeployments,
        Duration::from_secs(5),
        a.samples,
    ))?;
    println!(
        "agent RSS idle with {} BundleDeployments ({} objects), median of {} samples: {:.1} MiB",
        a.bundledeployments,
        2 * a.bundledeployments,
        rss.len(),
        median(rss) as f64 / (1024.0 * 1024.0)
    );
    Ok(())
}
