//! `fleet template` end to end: the binary prints what `helm template` printed (the render
//! crate's committed helm 3.6.2 goldens) and fails like Helm, naming template and line.

use std::path::{Path, PathBuf};
use std::process::Command;

fn helm_testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../render/testdata/helm")
}

fn fleet(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_fleet"))
        .arg("template")
        .args(args)
        .current_dir(helm_testdata().join("charts"))
        .output()
        .expect("fleet runs")
}

#[test]
fn prints_helm_template_output() {
    let out = fleet(&[
        "basic",
        "--name",
        "rel",
        "--namespace",
        "ns",
        "--kube-version",
        "1.30.0",
    ]);
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want = std::fs::read_to_string(helm_testdata().join("golden/basic.out")).expect("golden");
    assert_eq!(String::from_utf8_lossy(&out.stdout), want);
}

#[test]
fn values_files_and_set_flags() {
    let out = fleet(&[
        "parent",
        "--name",
        "rel",
        "--set",
        "global.env=override,global.shared.b=2",
    ]);
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want = std::fs::read_to_string(helm_testdata().join("golden/parent-global-override.out"))
        .expect("golden");
    assert_eq!(String::from_utf8_lossy(&out.stdout), want);
}

#[test]
fn render_errors_name_template_and_line_and_exit_nonzero() {
    let out = fleet(&["errs", "--name", "rel", "--set", "mode=required"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    let want =
        std::fs::read_to_string(helm_testdata().join("golden/errs-required.err")).expect("golden");
    assert_eq!(err.lines().next(), want.lines().next());
    assert!(err.contains("errs/templates/cm.yaml:7:5"), "{err}");
}

#[test]
fn bad_set_and_missing_chart_fail_cleanly() {
    let out = fleet(&["basic", "--set", "novalue"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim_end(),
        "Error: failed parsing --set data: key \"novalue\" has no value"
    );
    let out = fleet(&["no-such-chart"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such-chart"));
}
