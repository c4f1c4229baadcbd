//! Multi-tenancy objects on a separate `fleet controller`: a GitRepoRestriction refuses a
//! GitRepo on a repository it does not allow (`Accepted=False` with upstream's message, no
//! Bundles) and writes its default service account into one it allows; a BundleNamespaceMapping
//! lets a workspace's bundle reach clusters of another namespace chosen by label, and a label
//! change on that namespace takes the BundleDeployment away again.

use fleet_testkit::{FleetController, GitDaemon, GitRepo, Kubectl, eventually, fleet_bin};

use super::T;
use super::ha::server;

fn accepted(k: &Kubectl, ns: &str, name: &str) -> Result<(String, String), String> {
    let g = k
        .get_json(&["gitrepo", name, "-n", ns])
        .ok_or_else(|| format!("no gitrepo {ns}/{name}"))?;
    let c = g["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Accepted"))
        .ok_or_else(|| format!("gitrepo {ns}/{name} has no Accepted condition yet"))?;
    Ok((
        c["status"].as_str().unwrap_or("").to_string(),
        c["message"].as_str().unwrap_or("").to_string(),
    ))
}

fn exists(k: &Kubectl, args: &[&str]) -> Result<(), String> {
    k.get_json(args)
        .map(|_| ())
        .ok_or_else(|| format!("{args:?} not found"))
}

#[test]
fn restrictions_and_namespace_mappings() {
    if !super::tools_present() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let (srv, k) = server(&tmp.path().join("server"));
    let repos = tmp.path().join("repos");
    for name in ["good", "evil"] {
        let repo = GitRepo::init(&repos.join(name));
        repo.write(
            "a/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
        );
        repo.commit("first");
    }
    let daemon = GitDaemon::start(&repos);
    let ctl = FleetController::start(fleet_bin!(), &srv.kubeconfig, &[]);
    ctl.wait_ready(T);

    // GitRepoRestriction: repositories ending in /good only, service account `deployer`.
    k.apply(
        "apiVersion: fleet.cattle.io/v1alpha1\nkind: GitRepoRestriction\nmetadata:\n  name: only-good\n  namespace: fleet-default\ndefaultServiceAccount: deployer\nallowedServiceAccounts: [deployer]\nallowedRepoPatterns: ['/good$']\n",
    );
    for name in ["good", "evil"] {
        k.apply(&format!(
            "apiVersion: fleet.cattle.io/v1alpha1\nkind: GitRepo\nmetadata:\n  name: {name}\n  namespace: fleet-default\nspec:\n  repo: {}\n  branch: main\n  paths: [a]\n",
            daemon.repo_url(name)
        ));
    }
    let evil_url = daemon.repo_url("evil");
    eventually("evil refused", T, || {
        match accepted(&k, "fleet-default", "evil")? {
            (s, m)
                if s == "False"
                    && m == format!(
                        "disallowed repo {evil_url}: {evil_url} not in allowed set [/good$]"
                    ) =>
            {
                Ok(())
            }
            other => Err(format!("Accepted {other:?}")),
        }
    });
    eventually("good deployed with the default service account", T, || {
        exists(&k, &["bundle", "good-a", "-n", "fleet-default"])?;
        let b = k
            .get_json(&["bundle", "good-a", "-n", "fleet-default"])
            .ok_or("no bundle")?;
        match b["spec"]["serviceAccount"].as_str() {
            Some("deployer") => Ok(()),
            other => Err(format!("bundle serviceAccount {other:?}")),
        }
    });
    let g = k
        .get_json(&["gitrepo", "good", "-n", "fleet-default"])
        .expect("gitrepo good");
    assert_eq!(g["spec"]["serviceAccount"], "deployer", "{g}");
    assert!(
        k.get_json(&["bundle", "evil-a", "-n", "fleet-default"])
            .is_none(),
        "a refused GitRepo must not make bundles"
    );
    // Lifting the restriction lets the refused GitRepo through.
    k.ok(&[
        "delete",
        "gitreporestriction",
        "only-good",
        "-n",
        "fleet-default",
    ]);
    eventually("evil accepted once the restriction is gone", T, || {
        exists(&k, &["bundle", "evil-a", "-n", "fleet-default"])
    });

    // BundleNamespaceMapping: bundles of workspace `team` labelled app=web may target clusters
    // of namespaces labelled env=prod.
    k.apply(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: prod-clusters\n  labels:\n    env: prod\n",
    );
    k.apply(
        "apiVersion: fleet.cattle.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: c1\n  namespace: prod-clusters\nspec: {}\n",
    );
    k.apply(
        "apiVersion: fleet.cattle.io/v1alpha1\nkind: BundleNamespaceMapping\nmetadata:\n  name: web-to-prod\n  namespace: team\nbundleSelector:\n  matchLabels:\n    app: web\nnamespaceSelector:\n  matchLabels:\n    env: prod\n",
    );
    k.apply(&format!(
        "apiVersion: fleet.cattle.io/v1alpha1\nkind: GitRepo\nmetadata:\n  name: web\n  namespace: team\n  labels:\n    app: web\nspec:\n  repo: {}\n  branch: main\n  paths: [a]\n  targets:\n  - clusterSelector: {{}}\n",
        daemon.repo_url("good")
    ));
    let cns = fleet_api::names::cluster_namespace("prod-clusters", "c1");
    eventually("the mapped cluster gets the team's bundle", T, || {
        exists(&k, &["bundledeployment", "web-a", "-n", &cns])
    });
    k.ok(&[
        "label",
        "namespace",
        "prod-clusters",
        "env=dev",
        "--overwrite",
    ]);
    eventually(
        "relabelled namespace: the BundleDeployment goes",
        T,
        || match k.get_json(&["bundledeployment", "web-a", "-n", &cns]) {
            None => Ok(()),
            Some(_) => Err("web-a still deployed".into()),
        },
    );
}
