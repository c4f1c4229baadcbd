//! Fleet managing Fleet: manager A; cluster B runs its own manager (`fleet server` with
//! controllers, so its local agent and Cluster `local`) and is registered to A with `fleet agent`;
//! cluster C (`fleet server --no-controllers`) is registered to B. A GitRepo on A deploys to B,
//! GitRepos on B deploy to C and to B itself. B's two agents (A's in `cattle-fleet-system`, B's
//! own in `cattle-fleet-local-system`) keep to their own releases.

use std::path::PathBuf;
use std::time::Duration;

use fleet_testkit::cluster;
use fleet_testkit::{
    FleetServer, GitDaemon, GitRepo, Kubectl, eventually, fleet_bin, in_ci, tools,
};
use serde_json::Value;

const T: Duration = Duration::from_secs(90);
const LOCAL_AGENT_NAMESPACE: &str = "cattle-fleet-local-system";

fn gitrepo(name: &str, ns: &str, url: &str, path: &str, targets: &str) -> String {
    format!(
        "apiVersion: fleet.cattle.io/v1alpha1\nkind: GitRepo\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n  repo: {url}\n  branch: main\n  pollingInterval: 1s\n  paths: [{path}]\n{targets}"
    )
}

fn configmap(k: &Kubectl, ns: &str, name: &str) -> Result<Value, String> {
    k.get_json(&["configmap", name, "-n", ns])
        .ok_or_else(|| format!("no ConfigMap {ns}/{name}"))
}

fn absent(k: &Kubectl, ns: &str, name: &str) -> Result<(), String> {
    match k.get_json(&["configmap", name, "-n", ns]) {
        None => Ok(()),
        Some(_) => Err(format!("ConfigMap {ns}/{name} still there")),
    }
}

/// Every BundleDeployment on `k` is Ready at its current deploymentID; returns how many.
fn all_bds_ready(k: &Kubectl) -> Result<usize, String> {
    let l = k.json(&["get", "bundledeployments", "-A"]);
    let items = l["items"].as_array().cloned().unwrap_or_default();
    for b in &items {
        let s = &b["status"];
        if s["appliedDeploymentID"] != b["spec"]["deploymentID"] || s["ready"] != true {
            return Err(format!("{} not ready: {s}", b["metadata"]["name"]));
        }
    }
    Ok(items.len())
}

/// The agent namespaces recorded on the Helm release records in namespace `ns` of `k`.
fn release_agents(k: &Kubectl, ns: &str) -> Vec<String> {
    let l = k.json(&["get", "secrets", "-n", ns, "-l", "owner=helm"]);
    let mut v: Vec<String> = l["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter_map(|s| {
            s["metadata"]["labels"]
                .as_object()?
                .iter()
                .find(|(k, _)| k.ends_with("agent-namespace"))
                .and_then(|(_, v)| v.as_str().map(str::to_string))
        })
        .collect();
    v.sort();
    v.dedup();
    v
}

#[test]
fn a_manages_b_which_manages_c_and_itself() {
    if tools::kubectl().is_none() || tools::git().is_none() {
        assert!(!in_ci(), "kubectl and git are required under CI=true");
        println!("skipping: kubectl or git missing");
        return;
    }
    let bin = fleet_bin!();
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir: PathBuf = tmp.path().to_path_buf();

    let a = FleetServer::start(bin, &dir.join("a"), &[]);
    let b = FleetServer::start(bin, &dir.join("b"), &[]);
    let c = FleetServer::start(bin, &dir.join("c"), &["--no-controllers"]);
    let (ak, bk, ck) = (
        a.kubectl().expect("kubectl"),
        b.kubectl().expect("kubectl"),
        c.kubectl().expect("kubectl"),
    );

    // Each manager registers itself as Cluster `local`, through its own local agent.
    for (name, k) in [("A", &ak), ("B", &bk)] {
        eventually(&format!("{name}'s local agent registered"), T, || {
            let cl = k
                .get_json(&["clusters.fleet.cattle.io", "local", "-n", "fleet-local"])
                .ok_or("no Cluster local")?;
            if cl["metadata"]["labels"]["name"] != "local" {
                return Err(format!("labels: {cl}"));
            }
            if cl["status"]["agent"]["lastSeen"].is_null() || cl["status"]["namespace"].is_null() {
                return Err(format!("not checked in: {}", cl["status"]));
            }
            k.get_json(&["secret", "fleet-agent", "-n", LOCAL_AGENT_NAMESPACE])
                .ok_or("no fleet-agent Secret")?;
            Ok(())
        });
        eventually("the local bootstrap Secret removed", T, || {
            match k.get_json(&[
                "secret",
                "fleet-agent-bootstrap",
                "-n",
                LOCAL_AGENT_NAMESPACE,
            ]) {
                None => Ok(()),
                Some(_) => Err("still there".to_string()),
            }
        });
    }

    // B registers to A and C to B, as a user registers any cluster.
    cluster::register(bin, &a.kubeconfig, "fleet-default", &bk, &[("tier", "b")]);
    let _agent_b = cluster::start_agent(bin, "agent of B (to A)", &b.kubeconfig, "2s");
    cluster::register(bin, &b.kubeconfig, "fleet-default", &ck, &[("tier", "c")]);
    let _agent_c = cluster::start_agent(bin, "agent of C (to B)", &c.kubeconfig, "2s");
    let cred_b = eventually("B registered to A", T, || {
        cluster::agent_credential(&bk, &dir)
    });
    let cred_c = eventually("C registered to B", T, || {
        cluster::agent_credential(&ck, &dir)
    });
    assert!(
        ak.get_json(&[
            "clusters.fleet.cattle.io",
            &cred_b.cluster_name,
            "-n",
            "fleet-default"
        ])
        .is_some()
    );
    assert!(
        bk.get_json(&[
            "clusters.fleet.cattle.io",
            &cred_c.cluster_name,
            "-n",
            "fleet-default"
        ])
        .is_some()
    );

    let repos = dir.join("repos");
    let repo = GitRepo::init(&repos.join("layers"));
    repo.write("to-b/fleet.yaml", "defaultNamespace: layer-a\n")
        .write(
            "to-b/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-a\ndata:\n  by: a\n",
        )
        .write("to-c/fleet.yaml", "defaultNamespace: layer-b\n")
        .write(
            "to-c/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-b\ndata:\n  by: b\n",
        );
    repo.commit("layers");
    let daemon = GitDaemon::start(&repos);
    let url = daemon.repo_url("layers");
    let everyone = "  targets:\n  - clusterSelector: {}\n";

    // A → B; B → C (fleet-default) and B → B (fleet-local, the default group `local`).
    ak.apply(&gitrepo("a-to-b", "fleet-default", &url, "to-b", everyone));
    bk.apply(&gitrepo("b-to-c", "fleet-default", &url, "to-c", everyone));
    bk.apply(&gitrepo("b-to-b", "fleet-local", &url, "to-c", ""));

    eventually("A's bundle on B", T, || configmap(&bk, "layer-a", "from-a"));
    eventually("B's bundle on C", T, || configmap(&ck, "layer-b", "from-b"));
    eventually("B's bundle on B itself", T, || {
        configmap(&bk, "layer-b", "from-b")
    });
    assert!(
        configmap(&ck, "layer-a", "from-a").is_err(),
        "A reaches C only through B"
    );
    eventually("every BundleDeployment on A Ready", T, || {
        all_bds_ready(&ak)
    });
    let on_b = eventually(
        "every BundleDeployment on B Ready",
        T,
        || match all_bds_ready(&bk)? {
            2 => Ok(2),
            n => Err(format!("{n} BundleDeployments, expected 2 (C and local)")),
        },
    );
    assert_eq!(on_b, 2);

    // B's two agents each record their own releases, in their own agent namespace.
    assert_eq!(
        release_agents(&bk, "layer-a"),
        vec![cluster::AGENT_NAMESPACE.to_string()]
    );
    assert_eq!(
        release_agents(&bk, "layer-b"),
        vec![LOCAL_AGENT_NAMESPACE.to_string()]
    );

    // Removing B's own GitRepo uninstalls only what B's local agent deployed on B.
    bk.ok(&["delete", "gitrepo", "b-to-b", "-n", "fleet-local"]);
    eventually("B's own bundle uninstalled from B", T, || {
        absent(&bk, "layer-b", "from-b")
    });
    configmap(&bk, "layer-a", "from-a").expect("A's bundle on B untouched");
    configmap(&ck, "layer-b", "from-b").expect("B's bundle on C untouched");
    eventually("A's BundleDeployment still Ready", T, || all_bds_ready(&ak));
}
