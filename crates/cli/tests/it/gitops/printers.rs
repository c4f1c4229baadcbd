//! `kubectl get gitrepos,bundles,clusters,clustergroups,bundledeployments -A` after the
//! controller settled: each kind's table has upstream's printer columns, and every cell shows the
//! value at the column's JSON path in the object (commit, ready ratios, Ready message...).

use fleet_testkit::{FleetController, GitDaemon, GitRepo, Kubectl, eventually, fleet_bin};
use serde_json::Value;

use super::T;
use super::ha::{bundle_commit, server};

/// One printed row: (column, cell) pairs.
type Row = Vec<(String, String)>;

/// Splits kubectl's multi-kind output into tables: (header, rows).
fn tables(out: &str) -> Vec<(Vec<String>, Vec<Row>)> {
    let mut res = Vec::new();
    for block in out.split("\n\n").filter(|b| !b.trim().is_empty()) {
        let mut lines = block.lines();
        let Some(header) = lines.next() else { continue };
        // Column starts: each header word's offset (headers have no spaces).
        let mut starts = Vec::new();
        let mut prev_space = true;
        for (i, ch) in header.char_indices() {
            if ch != ' ' && prev_space {
                starts.push(i);
            }
            prev_space = ch == ' ';
        }
        let names: Vec<String> = header.split_whitespace().map(str::to_string).collect();
        let rows = lines
            .map(|l| {
                names
                    .iter()
                    .enumerate()
                    .map(|(i, n)| {
                        let from = starts[i].min(l.len());
                        let to = starts.get(i + 1).copied().unwrap_or(l.len()).min(l.len());
                        (n.clone(), l.get(from..to).unwrap_or("").trim().to_string())
                    })
                    .collect()
            })
            .collect();
        res.push((names, rows));
    }
    res
}

fn ready_message(obj: &Value) -> String {
    obj["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"))
        .and_then(|c| c["message"].as_str())
        .unwrap_or("")
        .to_string()
}

fn at(obj: &Value, path: &[&str]) -> String {
    let mut v = obj;
    for p in path {
        v = &v[*p];
    }
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The cell as kubectl prints an absent value.
fn cell(v: String) -> String {
    if v.is_empty() { "<none>".into() } else { v }
}

fn check(k: &Kubectl, out: &str) -> Result<(), String> {
    let tables = tables(out);
    let expected: [(&str, &[&str]); 5] = [
        (
            "gitrepo",
            &[
                "NAMESPACE",
                "NAME",
                "REPO",
                "COMMIT",
                "BUNDLEDEPLOYMENTS-READY",
                "STATUS",
            ],
        ),
        (
            "bundle",
            &["NAMESPACE", "NAME", "BUNDLEDEPLOYMENTS-READY", "STATUS"],
        ),
        (
            "cluster",
            &["NAMESPACE", "NAME", "BUNDLES-READY", "LAST-SEEN", "STATUS"],
        ),
        (
            "clustergroup",
            &[
                "NAMESPACE",
                "NAME",
                "CLUSTERS-READY",
                "BUNDLES-READY",
                "STATUS",
            ],
        ),
        (
            "bundledeployment",
            &["NAMESPACE", "NAME", "DEPLOYED", "MONITORED", "STATUS"],
        ),
    ];
    if tables.len() != expected.len() {
        return Err(format!("{} tables in\n{out}", tables.len()));
    }
    for ((kind, cols), (header, rows)) in expected.iter().zip(&tables) {
        let got: Vec<&str> = header
            .iter()
            .map(String::as_str)
            .filter(|h| *h != "AGE")
            .collect();
        if got != *cols {
            return Err(format!("{kind} columns {got:?}, want {cols:?}"));
        }
        for row in rows {
            let get = |c: &str| {
                row.iter()
                    .find(|(n, _)| n == c)
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default()
            };
            let (ns, name) = (get("NAMESPACE"), get("NAME"));
            let name = name.rsplit('/').next().unwrap_or("").to_string();
            let obj = k
                .get_json(&[kind, &name, "-n", &ns])
                .ok_or_else(|| format!("{kind} {ns}/{name}"))?;
            let want: Vec<(&str, String)> = match *kind {
                "gitrepo" => vec![
                    ("REPO", at(&obj, &["spec", "repo"])),
                    ("COMMIT", at(&obj, &["status", "commit"])),
                    (
                        "BUNDLEDEPLOYMENTS-READY",
                        at(&obj, &["status", "display", "readyBundleDeployments"]),
                    ),
                    ("STATUS", ready_message(&obj)),
                ],
                "bundle" => vec![
                    (
                        "BUNDLEDEPLOYMENTS-READY",
                        at(&obj, &["status", "display", "readyClusters"]),
                    ),
                    ("STATUS", ready_message(&obj)),
                ],
                "cluster" => vec![
                    (
                        "BUNDLES-READY",
                        at(&obj, &["status", "display", "readyBundles"]),
                    ),
                    ("LAST-SEEN", at(&obj, &["status", "agent", "lastSeen"])),
                    ("STATUS", ready_message(&obj)),
                ],
                "clustergroup" => vec![
                    (
                        "CLUSTERS-READY",
                        at(&obj, &["status", "display", "readyClusters"]),
                    ),
                    (
                        "BUNDLES-READY",
                        at(&obj, &["status", "display", "readyBundles"]),
                    ),
                    ("STATUS", ready_message(&obj)),
                ],
                _ => vec![
                    ("DEPLOYED", at(&obj, &["status", "display", "deployed"])),
                    ("MONITORED", at(&obj, &["status", "display", "monitored"])),
                    ("STATUS", ready_message(&obj)),
                ],
            };
            for (col, v) in want {
                let shown = get(col);
                if shown != cell(v.clone()) && shown != v {
                    return Err(format!(
                        "{kind} {ns}/{name} {col}: shown {shown:?}, object has {v:?}"
                    ));
                }
            }
        }
    }
    Ok(())
}

#[test]
fn kubectl_get_shows_upstream_printer_columns() {
    if !super::tools_present() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let (srv, k) = server(&tmp.path().join("server"));
    let repos = tmp.path().join("repos");
    let repo = GitRepo::init(&repos.join("app"));
    repo.write(
        "a/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
    );
    let c1 = repo.commit("first");
    let daemon = GitDaemon::start(&repos);
    let url = daemon.repo_url("app");
    let ctl = FleetController::start(fleet_bin!(), &srv.kubeconfig, &[]);
    ctl.wait_ready(T);
    for name in ["c1", "c2"] {
        k.apply(&format!("apiVersion: fleet.cattle.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: {name}\n  namespace: fleet-default\n  labels:\n    env: dev\nspec: {{}}\n"));
    }
    k.apply("apiVersion: fleet.cattle.io/v1alpha1\nkind: ClusterGroup\nmetadata:\n  name: dev\n  namespace: fleet-default\nspec:\n  selector:\n    matchLabels:\n      env: dev\n");
    k.apply(&format!("apiVersion: fleet.cattle.io/v1alpha1\nkind: GitRepo\nmetadata:\n  name: gr\n  namespace: fleet-default\nspec:\n  repo: {url}\n  branch: main\n  paths: [a]\n  targets:\n  - clusterGroup: dev\n"));
    eventually("gr-a at the commit", T, || {
        match bundle_commit(&k, "gr-a")? {
            c if c == c1 => Ok(()),
            c => Err(c),
        }
    });
    // Settled: the group counts both clusters and the GitRepo both BundleDeployments.
    eventually("statuses settled", T, || {
        let g = k
            .get_json(&["clustergroup", "dev", "-n", "fleet-default"])
            .ok_or("group")?;
        let r = k
            .get_json(&["gitrepo", "gr", "-n", "fleet-default"])
            .ok_or("gitrepo")?;
        if g["status"]["clusterCount"] == 2
            && r["status"]["display"]["readyBundleDeployments"] == "0/2"
        {
            Ok(())
        } else {
            Err(format!(
                "group {} gitrepo {}",
                g["status"], r["status"]["display"]
            ))
        }
    });
    ctl.settled_writes(std::time::Duration::from_secs(2), T);
    let out = k.ok(&[
        "get",
        "gitrepos,bundles,clusters,clustergroups,bundledeployments",
        "-A",
    ]);
    println!("{out}");
    check(&k, &out).unwrap_or_else(|e| panic!("{e}\n{out}"));
    // The values the columns show are the upstream ones for this state (no agent yet).
    assert!(out.contains(&c1), "the commit column");
    assert!(
        out.contains("0/2"),
        "BundleDeployments-Ready of the GitRepo"
    );
}
