//! `fleet bench scale` end to end (issue #16): the real binary starts a manager process,
//! registers 20 in-process agents and rolls 5 bundles out to them. Figures are not asserted; the
//! `scale:` line must be printed last and report every BundleDeployment Ready.

use std::process::Command;

use fleet_testkit::fleet_bin;

/// The value of `key=` in a `scale:` line.
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
}

#[test]
fn twenty_clusters_five_bundles_all_ready() {
    if fleet_testkit::tools::git().is_none() {
        assert!(!fleet_testkit::in_ci(), "git is required under CI=true");
        eprintln!("skipping: git is not installed");
        return;
    }
    let out = Command::new(fleet_bin!())
        .args(["bench", "scale", "--clusters", "20", "--bundles", "5"])
        .args(["--idle-secs", "2", "--timeout", "120"])
        .output()
        .expect("running fleet bench scale");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "fleet bench scale failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    let last = stdout.lines().last().unwrap_or_default();
    assert!(last.starts_with("scale: "), "last line: {last:?}\n{stdout}");
    assert_eq!(field(last, "clusters"), Some("20"), "{last}");
    assert_eq!(field(last, "bundles"), Some("5"), "{last}");
    assert_eq!(field(last, "bundledeployments"), Some("100"), "{last}");
    assert_eq!(field(last, "all_ready"), Some("true"), "{last}");
    for key in [
        "register_s",
        "ready_s",
        "update_s",
        "manager_rss_mib",
        "agents_rss_mib",
        "writes_per_bd",
        "idle_writes_per_min",
    ] {
        let v: f64 = field(last, key)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{key} is not a number in {last}"));
        assert!(v.is_finite() && v >= 0.0, "{key}={v} in {last}");
    }
    // The bench process runs on huge pages, the manager as in production.
    assert!(
        stdout.contains(
            "allocator: bench process thp:always,metadata_thp:always, manager jemalloc defaults"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("registration: 20 agents (100 at most at once)"),
        "{stdout}"
    );
    // The rollout's clock starts on a fleet at rest: every agent synced and checked in.
    assert!(
        stdout.contains("agents: 20 following their BundleDeployments after"),
        "{stdout}"
    );
    // The idle window says what the fleet at rest costs each process, in CPU seconds.
    let idle = stdout
        .lines()
        .find(|l| l.starts_with("idle: "))
        .unwrap_or_else(|| panic!("no idle line\n{stdout}"));
    let cpu: Vec<f64> = idle
        .split_once("cpu: ")
        .map(|(_, rest)| {
            rest.split(',')
                .take(2)
                .filter_map(|part| {
                    part.trim()
                        .strip_suffix(" s")?
                        .rsplit(' ')
                        .next()?
                        .parse()
                        .ok()
                })
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(cpu.len(), 2, "{idle}");
    assert!(cpu.iter().all(|s| s.is_finite() && *s >= 0.0), "{idle}");
    // Each round says how many agents' watches had to list again (a count, whatever it is).
    for round in ["ready", "update"] {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("{round} relists: ")))
            .unwrap_or_else(|| panic!("no {round} relists line\n{stdout}"));
        let n = line
            .split_whitespace()
            .nth(2)
            .and_then(|n| n.parse::<u64>().ok());
        assert!(n.is_some(), "{line}");
    }
}

#[test]
fn field_parsing() {
    let l = "scale: clusters=20 bundles=5 all_ready=true";
    assert_eq!(field(l, "clusters"), Some("20"));
    assert_eq!(field(l, "bundles"), Some("5"));
    assert_eq!(field(l, "all"), None);
}

/// `fleet bench controller` (issue #12) on 50 hand-made Clusters and 4 bundles: every
/// BundleDeployment written in both rounds, and a restarted manager writes nothing at all
/// (a resync that changes nothing must not write).
#[test]
fn controller_bench_writes_every_bundledeployment_and_nothing_on_resync() {
    if fleet_testkit::tools::git().is_none() {
        assert!(!fleet_testkit::in_ci(), "git is required under CI=true");
        eprintln!("skipping: git is not installed");
        return;
    }
    let out = Command::new(fleet_bin!())
        .args(["bench", "controller", "--clusters", "50", "--bundles", "4"])
        .args(["--resync-secs", "5", "--timeout", "120"])
        .output()
        .expect("running fleet bench controller");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "fleet bench controller failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    let last = stdout.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("controller: "),
        "last line: {last:?}\n{stdout}"
    );
    assert_eq!(field(last, "bundledeployments"), Some("200"), "{last}");
    assert_eq!(field(last, "resync_writes"), Some("0"), "{stdout}");
    for key in [
        "written_s",
        "update_s",
        "writes_per_bd",
        "controller_rss_mib",
        "apiserver_rss_mib",
    ] {
        let v: f64 = field(last, key)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{key} is not a number in {last}"));
        assert!(v.is_finite() && v > 0.0, "{key}={v} in {last}");
    }
}
