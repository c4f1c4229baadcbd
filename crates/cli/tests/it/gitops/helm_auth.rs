//! Helm repository credentials in GitRepo builds: a chart behind basic auth is fetched with the
//! GitRepo's `helmSecretName` (a wrong password is an error naming the path; once the Secret is
//! fixed the next poll rebuilds, with no new commit) or with `helmSecretNameForPaths`
//! (`secrets-path.yaml`, credentials per bundle path). As upstream, credentials go only to
//! repositories matching `helmRepoURLRegex`.

use fleet_testkit::helmrepo::HelmRepo;
use fleet_testkit::{FleetController, GitDaemon, GitRepo, Kubectl, eventually, fleet_bin};

use super::T;
use super::ha::server;

fn condition(k: &Kubectl, name: &str, kind: &str) -> Result<(String, String), String> {
    let g = k
        .get_json(&["gitrepo", name, "-n", "fleet-default"])
        .ok_or_else(|| format!("no gitrepo {name}"))?;
    let c = g["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == kind))
        .ok_or_else(|| format!("gitrepo {name} has no {kind} condition yet"))?;
    Ok((
        c["status"].as_str().unwrap_or("").to_string(),
        c["message"].as_str().unwrap_or("").to_string(),
    ))
}

/// The names of the resources of bundle `name` (chart files under their checksum prefix).
fn bundle_resources(k: &Kubectl, name: &str) -> Result<Vec<String>, String> {
    let b = k
        .get_json(&["bundle", name, "-n", "fleet-default"])
        .ok_or_else(|| format!("no bundle {name}"))?;
    Ok(b["spec"]["resources"]
        .as_array()
        .map(|rs| {
            rs.iter()
                .filter_map(|r| r["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default())
}

fn gitrepo_yaml(name: &str, url: &str, secret_field: &str, secret: &str) -> String {
    format!(
        "apiVersion: fleet.cattle.io/v1alpha1\nkind: GitRepo\nmetadata:\n  name: {name}\n  namespace: fleet-default\nspec:\n  repo: {url}\n  branch: main\n  paths: [c]\n  {secret_field}: {secret}\n  helmRepoURLRegex: 'http://127\\.0\\.0\\.1:'\n  pollingInterval: 1s\n"
    )
}

#[test]
fn helm_secrets_reach_chart_fetches() {
    if !super::tools_present() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let (srv, k) = server(&tmp.path().join("server"));
    let helm = HelmRepo::start(
        "reader",
        "s3cret",
        "demo",
        "0.1.0",
        &[(
            "cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\n",
        )],
    );
    let repos = tmp.path().join("repos");
    let repo = GitRepo::init(&repos.join("app"));
    repo.write(
        "c/fleet.yaml",
        &format!(
            "helm:\n  repo: {}\n  chart: demo\n  version: 0.1.0\n",
            helm.url
        ),
    );
    repo.commit("chart");
    let daemon = GitDaemon::start(&repos);
    let url = daemon.repo_url("app");
    let ctl = FleetController::start(fleet_bin!(), &srv.kubeconfig, &[]);
    ctl.wait_ready(T);

    // helmSecretName with a wrong password: the build fails, naming the path.
    let secret = |password: &str| {
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: helm-creds\n  namespace: fleet-default\ntype: kubernetes.io/basic-auth\nstringData:\n  username: reader\n  password: {password}\n"
        )
    };
    k.apply(&secret("wrong"));
    k.apply(&gitrepo_yaml(
        "charts",
        &url,
        "helmSecretName",
        "helm-creds",
    ));
    eventually("the refused fetch is reported", T, || {
        match condition(&k, "charts", "Stalled")? {
            (s, m) if s == "True" && m.contains("path c") && m.contains("401") => Ok(()),
            other => Err(format!("Stalled {other:?}")),
        }
    });
    assert!(helm.refused() > 0, "the chart repository saw no request");
    assert!(
        k.get_json(&["bundle", "charts-c", "-n", "fleet-default"])
            .is_none()
    );

    // The right password: the next poll sees the Secret changed and the chart comes in.
    k.apply(&secret("s3cret"));
    eventually("bundle charts-c holds the chart", T, || {
        let names = bundle_resources(&k, "charts-c")
            .map_err(|e| format!("{e}; Stalled {:?}", condition(&k, "charts", "Stalled")))?;
        match names.iter().any(|n| n.ends_with("demo/templates/cm.yaml")) {
            true => Ok(()),
            false => Err(format!("resources {names:?}")),
        }
    });

    // helmSecretNameForPaths: credentials chosen by bundle path.
    k.apply(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: helm-by-path\n  namespace: fleet-default\nstringData:\n  secrets-path.yaml: |\n    c:\n      username: reader\n      password: s3cret\n",
    );
    k.apply(&gitrepo_yaml(
        "bypath",
        &url,
        "helmSecretNameForPaths",
        "helm-by-path",
    ));
    eventually("bundle bypath-c holds the chart", T, || {
        let names = bundle_resources(&k, "bypath-c")?;
        match names.iter().any(|n| n.ends_with("demo/templates/cm.yaml")) {
            true => Ok(()),
            false => Err(format!("resources {names:?}")),
        }
    });
}
