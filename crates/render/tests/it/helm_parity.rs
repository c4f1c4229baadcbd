//! Parity with the real `helm template` (v3.6.2) on every chart in `../shared/data/charts` and
//! every Helm example in `../shared/data/fleet-examples`: byte-identical output required.

use std::path::{Path, PathBuf};

use crate::helm_support::*;
use fleet_testkit::tools;

fn chart_dirs(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let charts = root.join("charts");
    if let Ok(rd) = std::fs::read_dir(&charts) {
        for e in rd.flatten() {
            if e.path().join("Chart.yaml").is_file() {
                out.push(e.path());
            }
        }
    }
    fn walk(d: &Path, out: &mut Vec<PathBuf>) {
        if d.join("Chart.yaml").is_file() {
            out.push(d.to_path_buf());
            return;
        }
        if let Ok(rd) = std::fs::read_dir(d) {
            for e in rd.flatten() {
                if e.path().is_dir() {
                    walk(&e.path(), out);
                }
            }
        }
    }
    walk(&root.join("fleet-examples"), &mut out);
    out.sort();
    out
}

#[test]
fn shared_charts_render_like_helm() {
    let Some(data) = tools::shared_data() else {
        return;
    };
    let Some(helm) = tools::helm() else {
        skip("helm binary not found (run scripts/install-test-tools)");
        return;
    };
    let dirs = chart_dirs(&data);
    assert!(!dirs.is_empty(), "no charts found under {}", data.display());
    let mut failures = Vec::new();
    for d in &dirs {
        let args: Vec<String> = [
            "rel",
            &d.to_string_lossy(),
            "--namespace",
            "ns",
            "--kube-version",
            "1.30.0",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let want = real(&helm, &args, Path::new("/"));
        let got = ours(&args, Path::new("/"));
        let res = match (&want, &got) {
            (Outcome::Ok(a), Outcome::Ok(o)) => {
                if a == o {
                    Ok(())
                } else {
                    // Helm may be nondeterministic (randAlphaNum...): mask what differs between runs.
                    match real(&helm, &args, Path::new("/")) {
                        Outcome::Ok(b) => compare_masked(a, &b, o),
                        Outcome::Err(e) => Err(format!("second helm run failed: {e}")),
                    }
                }
            }
            (w, g) if w == g => Ok(()),
            (w, g) => {
                let short = |o: &Outcome| {
                    let s = format!("{o:?}");
                    s.chars().take(600).collect::<String>()
                };
                Err(format!("helm: {}\nours: {}", short(w), short(g)))
            }
        };
        match res {
            Ok(()) => eprintln!("ok: {}", d.display()),
            Err(detail) => failures.push(format!("{}: {detail}", d.display())),
        }
    }
    eprintln!(
        "{} of {} charts identical",
        dirs.len() - failures.len(),
        dirs.len()
    );
    assert!(
        failures.is_empty(),
        "differences:\n{}",
        failures.join("\n\n")
    );
}
