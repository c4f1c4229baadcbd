//! The example repository `fleet dev` deploys when no `--repo` is given: raw YAML, a local Helm
//! chart with per-cluster values, a kustomize base with overlays, and a bundle only prod clusters
//! get. The files live beside this module and are embedded in the binary.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, bail};

/// The GitRepo paths of the example, one bundle each.
pub const PATHS: [&str; 4] = ["simple", "helm", "kustomize", "prod-only"];

/// The example's files: (path in the repository, content).
const FILES: &[(&str, &str)] = &[
    ("README.md", include_str!("example/README.md")),
    (
        "simple/fleet.yaml",
        include_str!("example/simple/fleet.yaml"),
    ),
    (
        "simple/configmap.yaml",
        include_str!("example/simple/configmap.yaml"),
    ),
    ("simple/web.yaml", include_str!("example/simple/web.yaml")),
    ("helm/fleet.yaml", include_str!("example/helm/fleet.yaml")),
    ("helm/Chart.yaml", include_str!("example/helm/Chart.yaml")),
    ("helm/values.yaml", include_str!("example/helm/values.yaml")),
    (
        "helm/templates/configmap.yaml",
        include_str!("example/helm/templates/configmap.yaml"),
    ),
    (
        "helm/templates/deployment.yaml",
        include_str!("example/helm/templates/deployment.yaml"),
    ),
    (
        "kustomize/fleet.yaml",
        include_str!("example/kustomize/fleet.yaml"),
    ),
    (
        "kustomize/base/kustomization.yaml",
        include_str!("example/kustomize/base/kustomization.yaml"),
    ),
    (
        "kustomize/base/configmap.yaml",
        include_str!("example/kustomize/base/configmap.yaml"),
    ),
    (
        "kustomize/base/worker.yaml",
        include_str!("example/kustomize/base/worker.yaml"),
    ),
    (
        "kustomize/overlays/dev/kustomization.yaml",
        include_str!("example/kustomize/overlays/dev/kustomization.yaml"),
    ),
    (
        "kustomize/overlays/prod/kustomization.yaml",
        include_str!("example/kustomize/overlays/prod/kustomization.yaml"),
    ),
    (
        "prod-only/fleet.yaml",
        include_str!("example/prod-only/fleet.yaml"),
    ),
    (
        "prod-only/audit.yaml",
        include_str!("example/prod-only/audit.yaml"),
    ),
];

/// Labels of the i-th cluster (1-based): the first of every three is `env=dev`, the others
/// `env=prod`; regions alternate, so selectors on either label pick a real subset.
pub fn cluster_labels(i: usize) -> Vec<(String, String)> {
    let env = if i % 3 == 1 { "dev" } else { "prod" };
    let region = if i % 2 == 1 { "eu" } else { "us" };
    vec![
        ("env".into(), env.into()),
        ("region".into(), region.into()),
        ("fleet-dev/cluster".into(), format!("c{i}")),
    ]
}

/// Writes and commits the example into `dir` unless it already is a git repository (a resumed
/// `fleet dev` keeps the user's edits).
pub fn write_repository(dir: &Path, branch: &str) -> anyhow::Result<()> {
    if dir.join(".git").exists() {
        return Ok(());
    }
    for (rel, content) in FILES {
        let p = dir.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&p, content).with_context(|| format!("writing {}", p.display()))?;
    }
    git(dir, &["init", "-q", "-b", branch])?;
    git(dir, &["add", "-A"])?;
    git(
        dir,
        &[
            "-c",
            "user.name=fleet dev",
            "-c",
            "user.email=fleet-dev@localhost",
            "commit",
            "-q",
            "-m",
            "fleet dev example",
        ],
    )?;
    Ok(())
}

fn git(dir: &Path, args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .context(
            "running git (needed to create the example repository; install git or pass --repo)",
        )?;
    if !out.status.success() {
        bail!(
            "git {} in {}: {}",
            args.join(" "),
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_example_file_is_embedded() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/dev/example");
        let mut on_disk = Vec::new();
        let mut stack = vec![root.clone()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).expect("read_dir").flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else {
                    on_disk.push(
                        p.strip_prefix(&root)
                            .expect("prefix")
                            .to_string_lossy()
                            .into_owned(),
                    );
                }
            }
        }
        on_disk.sort();
        let mut embedded: Vec<String> = FILES.iter().map(|(p, _)| p.to_string()).collect();
        embedded.sort();
        assert_eq!(on_disk, embedded);
    }

    #[test]
    fn labels_give_both_envs_and_regions() {
        let envs: Vec<String> = (1..=3).map(|i| cluster_labels(i)[0].1.clone()).collect();
        assert_eq!(envs, ["dev", "prod", "prod"]);
        let regions: Vec<String> = (1..=3).map(|i| cluster_labels(i)[1].1.clone()).collect();
        assert_eq!(regions, ["eu", "us", "eu"]);
    }
}
