//! `kustomize build` parity: our output must be byte-identical to real kustomize v4.5.4.
//!
//! - `corpus_matches_goldens`: the project's own kustomizations against committed goldens
//!   (regenerate with `scripts/regen-kustomize-goldens`); needs no tools.
//! - `corpus_matches_real_binary` / `shared_data_matches_real_binary`: run the real binary
//!   at test time (skipped with a message when it or `../shared` is absent, failing under
//!   `CI=true`).
//! - `bad_kustomizations_name_file_and_field`: error cases must fail, naming file and field.

use fleet_render::kustomize;
use fleet_testkit::tools::{self, skip};
use std::path::{Path, PathBuf};
use std::process::Command;

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn testdata() -> PathBuf {
    crate_dir().join("testdata/kustomize")
}

fn real_build(bin: &Path, dir: &Path) -> Result<String, String> {
    let out = Command::new(bin)
        .arg("build")
        .arg(dir)
        .output()
        .map_err(|e| format!("running {}: {e}", bin.display()))?;
    if out.status.success() {
        String::from_utf8(out.stdout).map_err(|e| e.to_string())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

fn cases() -> Vec<String> {
    let text = std::fs::read_to_string(testdata().join("cases.txt")).expect("cases.txt");
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

fn first_diff(a: &str, b: &str) -> String {
    for (i, (x, y)) in a.lines().zip(b.lines()).enumerate() {
        if x != y {
            return format!("line {}: want {x:?}, got {y:?}", i + 1);
        }
    }
    format!(
        "lengths differ: want {} bytes, got {} bytes",
        a.len(),
        b.len()
    )
}

#[test]
fn corpus_matches_goldens() {
    let cases = cases();
    assert!(cases.len() >= 10, "corpus too small");
    let mut failures = Vec::new();
    for case in &cases {
        let golden = testdata()
            .join("goldens")
            .join(format!("{}.yaml", case.replace('/', "__")));
        let want = std::fs::read_to_string(&golden)
            .unwrap_or_else(|e| panic!("{}: {e}", golden.display()));
        match kustomize::build_yaml(&testdata().join(case)) {
            Ok(got) if got == want => {}
            Ok(got) => failures.push(format!("{case}: {}", first_diff(&want, &got))),
            Err(e) => failures.push(format!("{case}: error {e}")),
        }
    }
    assert!(
        failures.is_empty(),
        "golden mismatches:\n{}",
        failures.join("\n")
    );
    println!("{} kustomize goldens match", cases.len());
}

#[test]
fn corpus_matches_real_binary() {
    let Some(bin) = tools::kustomize() else {
        return skip("kustomize binary not found (run scripts/install-test-tools)");
    };
    for case in cases() {
        let dir = testdata().join(&case);
        let want =
            real_build(&bin, &dir).unwrap_or_else(|e| panic!("{case}: real kustomize failed: {e}"));
        let got = kustomize::build_yaml(&dir).unwrap_or_else(|e| panic!("{case}: {e}"));
        assert!(want == got, "{case}: {}", first_diff(&want, &got));
    }
}

fn kustomization_dirs(root: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(root) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            kustomization_dirs(&p, out);
        } else if matches!(
            p.file_name().and_then(|n| n.to_str()),
            Some("kustomization.yaml" | "kustomization.yml" | "Kustomization")
        ) && let Some(parent) = p.parent()
        {
            out.push(parent.to_path_buf());
        }
    }
}

#[test]
fn shared_data_matches_real_binary() {
    let Some(shared) = tools::shared_data() else {
        return;
    };
    let Some(bin) = tools::kustomize() else {
        return skip("kustomize binary not found (run scripts/install-test-tools)");
    };
    let mut dirs = Vec::new();
    for sub in ["fleet-examples", "fleet-cli-assets"] {
        kustomization_dirs(&shared.join(sub), &mut dirs);
    }
    assert!(
        !dirs.is_empty(),
        "no kustomization directories under {}",
        shared.display()
    );
    let (mut same, mut both_fail) = (0, 0);
    for dir in &dirs {
        let ours = kustomize::build_yaml(dir);
        match (real_build(&bin, dir), ours) {
            (Ok(want), Ok(got)) => {
                assert!(
                    want == got,
                    "{}: {}",
                    dir.display(),
                    first_diff(&want, &got)
                );
                same += 1;
            }
            (Err(_), Err(_)) => both_fail += 1,
            (Ok(_), Err(e)) => panic!("{}: real kustomize succeeds, we fail: {e}", dir.display()),
            (Err(e), Ok(_)) => panic!("{}: real kustomize fails ({e}), we succeed", dir.display()),
        }
    }
    println!(
        "shared data: {same} kustomizations byte-identical, {both_fail} rejected by both (of {})",
        dirs.len()
    );
}

#[test]
fn bad_kustomizations_name_file_and_field() {
    let root = testdata().join("errors");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("errors dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    names.sort();
    assert!(names.len() >= 10);
    let bin = tools::kustomize();
    for case in names {
        let build_dir = match std::fs::read_to_string(case.join("build-dir")) {
            Ok(sub) => case.join(sub.trim()),
            Err(_) => case.clone(),
        };
        let expect = std::fs::read_to_string(case.join("expect.txt")).expect("expect.txt");
        let err = match kustomize::build_yaml(&build_dir) {
            Ok(out) => panic!("{}: expected an error, got output:\n{out}", case.display()),
            Err(e) => e.to_string(),
        };
        for want in expect.lines().filter(|l| !l.is_empty()) {
            assert!(
                err.contains(want),
                "{}: error {err:?} does not mention {want:?}",
                case.display()
            );
        }
        // The real binary must reject it too, unless we refuse something kustomize accepts.
        if let Some(bin) = &bin
            && !case.join("fleet-only").exists()
        {
            assert!(
                real_build(bin, &build_dir).is_err(),
                "{}: real kustomize accepts this case",
                case.display()
            );
        }
    }
}

#[test]
fn in_memory_tree_builds_like_disk() {
    // The agent renders from bundle contents held in memory; same result as from disk.
    let case = testdata().join("generators");
    let mut mem = kustomize::MemFs::new();
    let mut stack = vec![case.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(&case).expect("prefix");
                mem.insert(
                    Path::new("/bundle").join(rel),
                    std::fs::read(&p).expect("read"),
                );
            }
        }
    }
    let from_mem =
        kustomize::build_with(&mem, Path::new("/bundle/overlay")).expect("in-memory build");
    let from_disk = kustomize::build(&case.join("overlay")).expect("disk build");
    assert_eq!(from_mem, from_disk);
}
