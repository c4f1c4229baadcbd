//! Render throughput of the podinfo chart (../shared/data/charts/podinfo) on one thread,
//! compared with the real `helm template` binary measured in the same run.
//!
//!   cargo bench -p fleet-render --bench helm_render
//!
//! Prints medians: ours (chart already loaded, and load+render from disk), helm per run, and
//! the ratio.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fleet_render::helm::{TemplateOptions, Values, load, template};

/// CPU time consumed by this thread: unlike wall time it does not grow when other processes
/// compete for the cores, so it measures single-core throughput on a busy machine.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we pass and has no other effects.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn helm_bin() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("FLEET_HELM_BIN") {
        return Some(PathBuf::from(p));
    }
    let tools = std::env::var("FLEET_TOOLS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/fleet-tools")
        });
    let p = tools.join("bin/helm");
    p.is_file().then_some(p)
}

fn main() {
    let chart_dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/charts/podinfo");
    if !chart_dir.join("Chart.yaml").is_file() {
        println!("SKIP: {} is absent", chart_dir.display());
        return;
    }
    let opts = TemplateOptions {
        release_name: "rel".into(),
        namespace: "ns".into(),
        kube_version: Some("1.30.0".into()),
        ..Default::default()
    };
    let vals = Values::new();
    let chart = load(&chart_dir).expect("podinfo loads");
    let out = template(&chart, &vals, &opts).expect("podinfo renders");
    println!("podinfo output: {} bytes", out.len());

    // Warm up, then time batches of renders; report the median per-render time.
    for _ in 0..50 {
        let _ = template(&chart, &vals, &opts);
    }
    let batch = 50;
    let mut samples = Vec::new();
    let mut cpu_samples = Vec::new();
    for _ in 0..30 {
        let t = Instant::now();
        let c = thread_cpu();
        for _ in 0..batch {
            std::hint::black_box(template(&chart, &vals, &opts).expect("renders"));
        }
        cpu_samples.push((thread_cpu() - c) / batch);
        samples.push(t.elapsed() / batch);
    }
    let ours = median(samples);
    let ours_cpu = median(cpu_samples);
    println!(
        "ours (loaded chart): median {:.1} us/render wall = {:.0} renders/s; {:.1} us CPU = {:.0} renders per CPU-second (one core)",
        ours.as_secs_f64() * 1e6,
        1.0 / ours.as_secs_f64(),
        ours_cpu.as_secs_f64() * 1e6,
        1.0 / ours_cpu.as_secs_f64()
    );

    let mut samples = Vec::new();
    for _ in 0..30 {
        let t = Instant::now();
        for _ in 0..10 {
            let c = load(&chart_dir).expect("loads");
            std::hint::black_box(template(&c, &vals, &opts).expect("renders"));
        }
        samples.push(t.elapsed() / 10);
    }
    let ours_disk = median(samples);
    println!(
        "ours (load from disk + render): median {:.1} us = {:.0} renders/s",
        ours_disk.as_secs_f64() * 1e6,
        1.0 / ours_disk.as_secs_f64()
    );

    let Some(helm) = helm_bin() else {
        println!("helm binary not found: no ratio (run scripts/install-test-tools)");
        return;
    };
    let mut samples = Vec::new();
    for _ in 0..15 {
        let t = Instant::now();
        let st = std::process::Command::new(&helm)
            .args(["template", "rel"])
            .arg(&chart_dir)
            .args(["--namespace", "ns", "--kube-version", "1.30.0"])
            .output()
            .expect("helm runs");
        assert!(st.status.success(), "helm failed");
        samples.push(t.elapsed());
    }
    let helm_t = median(samples);
    println!(
        "helm template: median {:.1} ms/run",
        helm_t.as_secs_f64() * 1e3
    );
    println!(
        "ratio (wall, same run): ours is {:.0}x faster per render (loaded), {:.0}x (from disk)",
        helm_t.as_secs_f64() / ours.as_secs_f64(),
        helm_t.as_secs_f64() / ours_disk.as_secs_f64()
    );
    println!(
        "load average during the run: {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
}
