//! GitOps end to end with real processes on loopback: `fleet server --no-controllers`, a separate
//! `fleet controller`, `git daemon`, and kubectl creating Clusters (no agent). A commit becomes
//! Bundles identical to `fleet apply -o -` on the same checkout, then BundleDeployments in the
//! right cluster namespaces; label, group, commit, option and deletion changes follow through; a
//! broken fleet.yaml is reported while the other path deploys; two GitRepos on one repository
//! fetch once per commit; a resync with nothing changed writes nothing.
//!
//! Skips (with a message) when kubectl or git is missing; fails instead under CI=true.

use std::time::Duration;

use fleet_api::{Bundle, BundleDeployment, Cluster, ClusterGroup};
use fleet_testkit::{
    FleetController, FleetServer, GitDaemon, GitRepo, Kubectl, eventually, fleet_bin,
};
use serde_json::Value;

mod crash;
mod ha;
mod helm_auth;
mod printers;
mod rollout;
mod tenancy;
mod webhook;

const T: Duration = Duration::from_secs(60);

/// Whether kubectl and git are here; outside CI a test without them skips (the locators
/// already fail the test under `CI=true`).
fn tools_present() -> bool {
    let present =
        fleet_testkit::tools::kubectl().is_some() && fleet_testkit::tools::git().is_some();
    if !present {
        println!("skipping: kubectl or git missing");
    }
    present
}

fn cns(cluster: &str) -> String {
    fleet_api::names::cluster_namespace("fleet-default", cluster)
}

fn get<T: serde::de::DeserializeOwned>(k: &Kubectl, args: &[&str]) -> Result<T, String> {
    let v = k
        .get_json(args)
        .ok_or_else(|| format!("kubectl get {args:?} failed"))?;
    serde_json::from_value(v).map_err(|e| format!("decoding {args:?}: {e}"))
}

fn bd(k: &Kubectl, cluster: &str, name: &str) -> Result<BundleDeployment, String> {
    get(k, &["bundledeployment", name, "-n", &cns(cluster)])
}

fn absent(k: &Kubectl, cluster: &str, name: &str) -> Result<(), String> {
    match bd(k, cluster, name) {
        Ok(_) => Err(format!("{name} still in {cluster}")),
        Err(_) => Ok(()),
    }
}

fn gitrepo(k: &Kubectl, name: &str) -> Result<Value, String> {
    k.get_json(&["gitrepo", name, "-n", "fleet-default"])
        .ok_or_else(|| format!("no gitrepo {name}"))
}

#[test]
fn gitops_pipeline() {
    if !tools_present() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let srv = FleetServer::start(
        fleet_bin!(),
        &tmp.path().join("server"),
        &["--no-controllers"],
    );
    let k = srv.kubectl().unwrap();
    let crds = std::process::Command::new(fleet_bin!())
        .args(["install", "crds"])
        .output()
        .unwrap();
    assert!(crds.status.success());
    k.apply(&String::from_utf8_lossy(&crds.stdout));
    eventually("fleet CRDs served", T, || {
        k.get_json(&["gitrepos", "-A"])
            .map(|_| ())
            .ok_or("not yet".to_string())
    });

    // The repository: path a (fleet.yaml + ConfigMap), path b (plain YAML).
    let repos = tmp.path().join("repos");
    let repo = GitRepo::init(&repos.join("app"));
    repo.write("a/fleet.yaml", "defaultNamespace: app-a\n")
        .write(
            "a/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  v: \"1\"\n",
        )
        .write(
            "b/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n",
        );
    let c1 = repo.commit("first");
    let daemon = GitDaemon::start(&repos);
    let url = daemon.repo_url("app");

    let ctl = FleetController::start(fleet_bin!(), &srv.kubeconfig, &[]);
    ctl.wait_ready(T);
    // Bootstrap: workspaces and the default group.
    eventually("bootstrap objects", T, || {
        get::<ClusterGroup>(&k, &["clustergroup", "default", "-n", "fleet-local"]).map(|_| ())
    });
    for (name, env) in [("c1", "dev"), ("c2", "prod")] {
        k.apply(&format!(
            "apiVersion: fleet.cattle.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: {name}\n  namespace: fleet-default\n  labels:\n    env: {env}\nspec: {{}}\n"
        ));
    }

    k.apply(
        "apiVersion: fleet.cattle.io/v1alpha1\nkind: ClusterGroup\nmetadata:\n  name: grp\n  namespace: fleet-default\nspec:\n  selector:\n    matchLabels:\n      env: prod\n"
    );
    let gr = format!(
        "apiVersion: fleet.cattle.io/v1alpha1\nkind: GitRepo\nmetadata:\n  name: gr\n  namespace: fleet-default\nspec:\n  repo: {url}\n  branch: main\n  pollingInterval: 1s\n  paths: [a, b]\n  targets:\n  - name: dev\n    clusterSelector:\n      matchLabels:\n        env: dev\n"
    );
    k.apply(&gr);
    k.apply(&format!(
        "apiVersion: fleet.cattle.io/v1alpha1\nkind: GitRepo\nmetadata:\n  name: gr2\n  namespace: fleet-default\nspec:\n  repo: {url}\n  branch: main\n  pollingInterval: 1s\n  paths: [a]\n  targets:\n  - name: grp\n    clusterGroup: grp\n"
    ));

    // Bundles as `fleet apply -o -` writes them for the same checkout.
    let _: Bundle = eventually("bundle gr-a at the first commit", T, || {
        let b: Bundle = get(&k, &["bundle", "gr-a", "-n", "fleet-default"])?;
        let commit = b
            .metadata
            .labels
            .clone()
            .unwrap_or_default()
            .get("fleet.cattle.io/commit")
            .cloned();
        if commit.as_deref() == Some(c1.as_str()) {
            Ok(b)
        } else {
            Err(format!("commit {commit:?}"))
        }
    });
    let g: fleet_api::GitRepo = get(&k, &["gitrepo", "gr", "-n", "fleet-default"]).unwrap();
    let tf = tmp.path().join("targets.json");
    std::fs::write(
        &tf,
        fleet_controller::gitrepo::targets_file_json(&g).to_string(),
    )
    .unwrap();
    let out = std::process::Command::new(fleet_bin!())
        .current_dir(&repo.dir)
        .args([
            "apply",
            "-o",
            "-",
            "-n",
            "fleet-default",
            "-l",
            "fleet.cattle.io/repo-name=gr",
            "--commit",
            &c1,
            "--targets-file",
        ])
        .arg(&tf)
        .args(["gr", "a", "b"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let docs: Vec<Value> =
        serde_saphyr::from_multiple(&String::from_utf8_lossy(&out.stdout)).unwrap();
    let cli: Vec<Bundle> = docs
        .into_iter()
        .map(|d| serde_json::from_value(d).unwrap())
        .collect();
    assert_eq!(cli.len(), 2);
    for want in &cli {
        let name = want.metadata.name.clone().unwrap();
        let got: Bundle = get(&k, &["bundle", &name, "-n", "fleet-default"]).unwrap();
        assert_eq!(
            got.spec, want.spec,
            "bundle {name} spec differs from fleet apply -o -"
        );
        assert_eq!(
            got.metadata.labels, want.metadata.labels,
            "bundle {name} labels"
        );
    }

    // BundleDeployments with upstream's names, labels and deploymentIDs.
    let d = eventually("gr-a deployed to c1", T, || bd(&k, "c1", "gr-a"));
    eventually("gr-b deployed to c1", T, || bd(&k, "c1", "gr-b"));
    absent(&k, "c2", "gr-a").unwrap();
    let clusters: Vec<Cluster> = ["c1", "c2"]
        .iter()
        .map(|c| get(&k, &["cluster", c, "-n", "fleet-default"]).unwrap())
        .collect();
    let fleet = fleet_targeting::Fleet::new(clusters.clone(), vec![], vec![]);
    let mid = fleet_targeting::manifest_id(&cli[0]);
    let want = fleet_targeting::targets(&cli[0], &fleet, &mid, &mut Default::default()).unwrap();
    assert_eq!(want.len(), 1);
    assert_eq!(d.spec.deployment_id, want[0].deployment_id);
    assert_eq!(d.spec.staged_deployment_id, want[0].deployment_id);
    let l = d.metadata.labels.clone().unwrap();
    for (key, v) in [
        ("fleet.cattle.io/bundle-name", "gr-a"),
        ("fleet.cattle.io/bundle-namespace", "fleet-default"),
        ("fleet.cattle.io/cluster", "c1"),
        ("fleet.cattle.io/cluster-namespace", "fleet-default"),
        ("fleet.cattle.io/managed", "true"),
        ("fleet.cattle.io/repo-name", "gr"),
        ("fleet.cattle.io/content-name", mid.as_str()),
    ] {
        assert_eq!(l.get(key).map(String::as_str), Some(v), "label {key}");
    }
    assert!(
        k.get_json(&["content", &mid]).is_some(),
        "Content {mid} created"
    );
    let ns = k.get_json(&["namespace", &cns("c1")]).unwrap();
    assert_eq!(ns["metadata"]["labels"]["fleet.cattle.io/managed"], "true");
    assert_eq!(
        ns["metadata"]["annotations"]["fleet.cattle.io/cluster"],
        "c1"
    );
    // gr2 targets group grp (env=prod): c2 only.
    eventually("gr2-a deployed to c2", T, || bd(&k, "c2", "gr2-a"));
    absent(&k, "c1", "gr2-a").unwrap();
    // Two GitRepos on one repository and branch: one fetch for the commit.
    eventually("both gitrepos at the first commit", T, || {
        for n in ["gr", "gr2"] {
            let g = gitrepo(&k, n)?;
            if g["status"]["commit"] != c1.as_str() {
                return Err(format!("{n}: {}", g["status"]));
            }
        }
        Ok(())
    });
    assert_eq!(ctl.metric("fleet_controller_git_fetches_total"), 1);

    // A new commit changes the deploymentIDs.
    repo.write(
        "a/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  v: \"2\"\n",
    );
    let c2 = repo.commit("second");
    eventually("new deploymentID on c1", T, || {
        let n = bd(&k, "c1", "gr-a")?;
        if n.spec.deployment_id != d.spec.deployment_id
            && n.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("fleet.cattle.io/commit"))
                == Some(&c2)
        {
            Ok(())
        } else {
            Err(n.spec.deployment_id)
        }
    });
    eventually("both gitrepos at the second commit", T, || {
        for n in ["gr", "gr2"] {
            let g = gitrepo(&k, n)?;
            if g["status"]["commit"] != c2.as_str() {
                return Err(format!("{n}: {}", g["status"]["commit"]));
            }
        }
        Ok(())
    });
    assert_eq!(
        ctl.metric("fleet_controller_git_fetches_total"),
        2,
        "one fetch per commit"
    );
    eventually(
        "the first commit's Content deleted once unreferenced",
        T,
        || match k.get_json(&["content", &mid]) {
            None => Ok(()),
            Some(_) => Err(format!("{mid} still there")),
        },
    );

    // A Cluster label change adds and removes its BundleDeployments.
    k.ok(&[
        "label",
        "cluster",
        "c2",
        "-n",
        "fleet-default",
        "env=dev",
        "--overwrite",
    ]);
    eventually("gr-a added to c2", T, || bd(&k, "c2", "gr-a"));
    eventually("gr2-a removed from c2", T, || absent(&k, "c2", "gr2-a"));

    // A ClusterGroup selector change does the same.
    k.ok(&[
        "patch",
        "clustergroup",
        "grp",
        "-n",
        "fleet-default",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"selector":{"matchLabels":{"env":"dev"}}}}"#,
    ]);
    eventually("gr2-a on c1", T, || bd(&k, "c1", "gr2-a"));
    eventually("gr2-a on c2", T, || bd(&k, "c2", "gr2-a"));

    // Status: Bundle and GitRepo summaries count the BDs (no agent: WaitApplied).
    eventually("gitrepo gr display", T, || {
        let g = gitrepo(&k, "gr")?;
        let s = &g["status"];
        if s["display"]["readyBundleDeployments"] == "0/4" && s["desiredReadyClusters"] == 2 {
            Ok(())
        } else {
            Err(s.to_string())
        }
    });
    eventually("cluster c1 status", T, || {
        let c: Cluster = get(&k, &["cluster", "c1", "-n", "fleet-default"])?;
        let s = c.status.unwrap_or_default();
        if s.namespace == cns("c1")
            && s.display.state == "WaitCheckIn"
            && s.display.ready_bundles == "0/3"
        {
            Ok(())
        } else {
            Err(format!("{:?}", s.display))
        }
    });

    // A resync that changes nothing writes nothing.
    let writes = ctl.settled_writes(Duration::from_secs(1), T);
    let reconciles = ctl.metric("fleet_controller_reconciles_total{kind=\"bundle\"}");
    k.ok(&[
        "label",
        "cluster",
        "c1",
        "-n",
        "fleet-default",
        "unrelated=x",
    ]);
    eventually("bundles reconciled after the label change", T, || {
        let r = ctl.metric("fleet_controller_reconciles_total{kind=\"bundle\"}");
        if r >= reconciles + 3 {
            Ok(())
        } else {
            Err(format!("{r}"))
        }
    });
    let until = std::time::Instant::now() + Duration::from_secs(2);
    while std::time::Instant::now() < until {
        assert_eq!(
            ctl.metric("fleet_controller_api_writes_total"),
            writes,
            "a no-op resync wrote"
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    // keepResources reaches the BundleDeployments.
    k.ok(&[
        "patch",
        "gitrepo",
        "gr",
        "-n",
        "fleet-default",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"keepResources":true}}"#,
    ]);
    eventually("keepResources on gr-a BDs", T, || {
        let n = bd(&k, "c1", "gr-a")?;
        if n.spec.options.keep_resources {
            Ok(())
        } else {
            Err("not yet".into())
        }
    });

    // A broken fleet.yaml in path b: Ready=False naming it; path a still deploys the new commit.
    repo.write("b/fleet.yaml", "defaultNamespace: [unclosed\n");
    let c3 = repo.commit("broken b");
    eventually("gitrepo reports the broken fleet.yaml", T, || {
        let g = gitrepo(&k, "gr")?;
        let ready = g["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .find(|c| c["type"] == "Ready")
            .unwrap_or_default();
        let msg = ready["message"].as_str().unwrap_or("").to_string();
        if ready["status"] == "False" && msg.contains("path b") && msg.contains("fleet.yaml") {
            Ok(())
        } else {
            Err(msg)
        }
    });
    eventually("gr-a at the third commit", T, || {
        let b: Bundle = get(&k, &["bundle", "gr-a", "-n", "fleet-default"])?;
        if b.metadata
            .labels
            .unwrap_or_default()
            .get("fleet.cattle.io/commit")
            == Some(&c3)
        {
            Ok(())
        } else {
            Err("old".into())
        }
    });
    assert!(
        get::<Bundle>(&k, &["bundle", "gr-b", "-n", "fleet-default"]).is_ok(),
        "gr-b kept while its path is broken"
    );

    // Printer columns.
    let table = k.ok(&[
        "get",
        "gitrepos,bundles,clusters,clustergroups,bundledeployments",
        "-A",
    ]);
    for col in [
        "REPO",
        "COMMIT",
        "BUNDLEDEPLOYMENTS-READY",
        "BUNDLES-READY",
        "CLUSTERS-READY",
        "DEPLOYED",
    ] {
        assert!(table.contains(col), "column {col} missing:\n{table}");
    }
    assert!(
        table.contains(&c3),
        "the commit column shows the commit:\n{table}"
    );

    // Deleting a GitRepo deletes its Bundles and their BundleDeployments.
    k.ok(&[
        "delete",
        "gitrepo",
        "gr",
        "-n",
        "fleet-default",
        "--wait=false",
    ]);
    eventually("gr bundles gone", T, || {
        let l = k
            .get_json(&[
                "bundles",
                "-n",
                "fleet-default",
                "-l",
                "fleet.cattle.io/repo-name=gr",
            ])
            .ok_or("list")?;
        if l["items"].as_array().is_some_and(|a| a.is_empty()) {
            Ok(())
        } else {
            Err(format!(
                "{}",
                l["items"].as_array().map(|a| a.len()).unwrap_or(0)
            ))
        }
    });
    eventually("gr BDs gone", T, || {
        absent(&k, "c1", "gr-a")?;
        absent(&k, "c2", "gr-a")?;
        absent(&k, "c1", "gr-b")
    });
    eventually("gitrepo gr gone", T, || match gitrepo(&k, "gr") {
        Ok(_) => Err("still there".to_string()),
        Err(_) => Ok(()),
    });
    bd(&k, "c1", "gr2-a").expect("other GitRepo's BDs stay");
    drop(ctl);
    drop(daemon);
}

/// Basic-auth credentials from `clientSecretName` over smart HTTP (`git http-backend`); a wrong
/// password gives a GitPolling condition saying so, retried with a capped backoff (no storm).
#[test]
fn gitops_basic_auth() {
    if !tools_present() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let srv = FleetServer::start(
        fleet_bin!(),
        &tmp.path().join("server"),
        &["--no-controllers"],
    );
    let k = srv.kubectl().unwrap();
    let crds = std::process::Command::new(fleet_bin!())
        .args(["install", "crds"])
        .output()
        .unwrap();
    assert!(crds.status.success());
    k.apply(&String::from_utf8_lossy(&crds.stdout));
    eventually("fleet CRDs served", T, || {
        k.get_json(&["gitrepos", "-A"])
            .map(|_| ())
            .ok_or("not yet".to_string())
    });
    let repos = tmp.path().join("repos");
    let repo = GitRepo::init(&repos.join("app"));
    repo.write(
        "a/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
    );
    let head = repo.commit("first");
    let http = fleet_testkit::GitHttpServer::start(&repos, "fleet", "s3cret");
    let url = http.repo_url("app");
    let ctl = FleetController::start(fleet_bin!(), &srv.kubeconfig, &[]);
    ctl.wait_ready(T);
    for (name, pw) in [("creds", "s3cret"), ("wrong", "nope")] {
        k.apply(&format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  namespace: fleet-default\ntype: kubernetes.io/basic-auth\nstringData:\n  username: fleet\n  password: {pw}\n"
        ));
    }
    for (name, secret) in [("good", "creds"), ("bad", "wrong")] {
        k.apply(&format!(
            "apiVersion: fleet.cattle.io/v1alpha1\nkind: GitRepo\nmetadata:\n  name: {name}\n  namespace: fleet-default\nspec:\n  repo: {url}\n  branch: main\n  clientSecretName: {secret}\n  pollingInterval: 1h\n  paths: [a]\n"
        ));
    }
    eventually("good: bundle at the commit", T, || {
        let b: Bundle = get(&k, &["bundle", "good-a", "-n", "fleet-default"]).map_err(|e| {
            format!(
                "{e}; gitrepo status {}",
                gitrepo(&k, "good")
                    .map(|g| g["status"].to_string())
                    .unwrap_or_default()
            )
        })?;
        if b.metadata
            .labels
            .unwrap_or_default()
            .get("fleet.cattle.io/commit")
            == Some(&head)
        {
            Ok(())
        } else {
            Err("old".into())
        }
    });
    eventually("bad: authentication failure reported", T, || {
        let g = gitrepo(&k, "bad")?;
        let c = g["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .find(|c| c["type"] == "GitPolling")
            .unwrap_or_default();
        let msg = c["message"].as_str().unwrap_or("").to_string();
        if c["status"] == "False" && msg.contains("authentication failed") {
            Ok(())
        } else {
            Err(g["status"].to_string())
        }
    });
    assert!(
        get::<Bundle>(&k, &["bundle", "bad-a", "-n", "fleet-default"]).is_err(),
        "no bundle without access"
    );
    // No retry storm: over 10 s, a 1 s retry would refuse ~20 requests; the backoff allows a few.
    let before = http.refused.load(std::sync::atomic::Ordering::Relaxed);
    std::thread::sleep(Duration::from_secs(10));
    let after = http.refused.load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        after - before <= 6,
        "{} refused requests in 10 s: a retry storm",
        after - before
    );
    drop(ctl);
}
