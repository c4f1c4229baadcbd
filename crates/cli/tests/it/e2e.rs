//! The end-to-end suite: the whole system as users run it, real processes on loopback. A manager
//! (`fleet server` with its controllers), two downstream clusters (`fleet server --no-controllers
//! --simulate-workloads`) registered through real tokens with `fleet agent`, a `git daemon`, real
//! kubectl and helm. One scenario, in sequence; each check prints its name and duration.
//!
//! Skips (with a message) when kubectl, helm or git is missing; fails instead under CI=true.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use fleet_testkit::cluster::{self, AgentCredential};
use fleet_testkit::{
    FleetProcess, FleetServer, GitDaemon, GitRepo, Kubectl, eventually, fleet_bin, in_ci, tools,
};
use serde_json::Value;

const WS: &str = "fleet-default";
const GITREPO: &str = "e2e";
const T: Duration = Duration::from_secs(60);
/// Every bundle of the repository, by path.
const BUNDLES: [&str; 4] = ["e2e-raw", "e2e-helm", "e2e-kustomize", "e2e-audit"];

/// Runs one named check and prints how long it took.
fn check<R>(name: &str, f: impl FnOnce() -> R) -> R {
    let started = Instant::now();
    let r = f();
    eprintln!("e2e: {name} ok in {:.1}s", started.elapsed().as_secs_f64());
    r
}

/// One downstream cluster: its server, kubectl, agent and the credential registration stored.
struct Downstream {
    server: FleetServer,
    k: Kubectl,
    agent: Option<FleetProcess>,
    cred: Option<AgentCredential>,
}

impl Downstream {
    fn cred(&self) -> &AgentCredential {
        self.cred.as_ref().expect("registered")
    }
    fn ns(&self) -> String {
        self.cred().deployment_namespace.clone()
    }
    fn name(&self) -> String {
        self.cred().cluster_name.clone()
    }
}

fn raw_configmap(version: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: raw-config\ndata:\n  version: \"{version}\"\n"
    )
}

/// The repository: raw YAML, a local Helm chart with per-cluster values, a kustomize base with
/// overlays chosen per cluster, and a bundle only for clusters labelled `audit=on`.
fn write_repository(repo: &GitRepo) {
    repo.write("raw/fleet.yaml", "defaultNamespace: e2e-raw\n")
        .write("raw/configmap.yaml", &raw_configmap("1"))
        .write(
            "raw/web.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n      - name: web\n        image: nginx:1.27\n",
        )
        .write(
            "helm/Chart.yaml",
            "apiVersion: v2\nname: greeter\nversion: 0.1.0\nappVersion: \"1.0\"\n",
        )
        .write("helm/values.yaml", "env: unknown\nreplicas: 1\n")
        .write(
            "helm/templates/configmap.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-config\ndata:\n  env: {{ .Values.env | quote }}\n  replicas: {{ .Values.replicas | quote }}\n",
        )
        .write(
            "helm/fleet.yaml",
            "defaultNamespace: e2e-helm\nhelm:\n  releaseName: greeter\n  values:\n    env: ${ .ClusterLabels.env }\ntargetCustomizations:\n- name: prod\n  clusterSelector:\n    matchLabels:\n      env: prod\n  helm:\n    values:\n      replicas: 2\n",
        )
        .write(
            "kustomize/base/kustomization.yaml",
            "resources:\n- configmap.yaml\n",
        )
        .write(
            "kustomize/base/configmap.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  level: base\n",
        )
        .write(
            "kustomize/overlays/dev/kustomization.yaml",
            "resources:\n- ../../base\nnameSuffix: -dev\n",
        )
        .write(
            "kustomize/overlays/prod/kustomization.yaml",
            "resources:\n- ../../base\nnameSuffix: -prod\n",
        )
        .write(
            "kustomize/fleet.yaml",
            "defaultNamespace: e2e-kustomize\nkustomize:\n  dir: overlays/dev\ntargetCustomizations:\n- name: prod\n  clusterSelector:\n    matchLabels:\n      env: prod\n  kustomize:\n    dir: overlays/prod\n",
        );
    write_audit(repo);
}

fn write_audit(repo: &GitRepo) {
    repo.write(
        "audit/fleet.yaml",
        "defaultNamespace: e2e-audit\ntargetCustomizations:\n- name: no-audit\n  clusterSelector:\n    matchExpressions:\n    - key: audit\n      operator: NotIn\n      values: [\"on\"]\n  doNotDeploy: true\n",
    )
    .write(
        "audit/policy.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: audit-policy\ndata:\n  retention: 30d\n",
    );
}

fn bd(mk: &Kubectl, ns: &str, name: &str) -> Option<Value> {
    mk.get_json(&["bundledeployment", name, "-n", ns])
}

/// Ready at its current deploymentID: applied by the agent, ready, not modified.
fn bd_ready(mk: &Kubectl, ns: &str, name: &str) -> Result<Value, String> {
    let b = bd(mk, ns, name).ok_or_else(|| format!("no BundleDeployment {ns}/{name}"))?;
    let s = &b["status"];
    // `display` feeds the DEPLOYED and MONITORED printer columns, as upstream's manager sets it.
    if s["appliedDeploymentID"] == b["spec"]["deploymentID"]
        && s["ready"] == true
        && s["nonModified"] == true
        && s["display"]["deployed"] == "True"
        && s["display"]["monitored"] == "True"
        && s["display"]["state"] == "Ready"
    {
        Ok(b)
    } else {
        Err(format!(
            "{ns}/{name}: spec {} status {s}",
            b["spec"]["deploymentID"]
        ))
    }
}

fn configmap(k: &Kubectl, ns: &str, name: &str) -> Result<Value, String> {
    k.get_json(&["configmap", name, "-n", ns])
        .ok_or_else(|| format!("no ConfigMap {ns}/{name}"))
}

fn raw_version(k: &Kubectl) -> Result<String, String> {
    let cm = configmap(k, "e2e-raw", "raw-config")?;
    Ok(cm["data"]["version"].as_str().unwrap_or("").to_string())
}

fn wait_raw_version(what: &str, d: &Downstream, mk: &Kubectl, version: &str) {
    eventually(what, T, || {
        bd_ready(mk, &d.ns(), "e2e-raw")?;
        match raw_version(&d.k)? {
            v if v == version => Ok(()),
            v => Err(format!("version {v}")),
        }
    });
}

/// Every BundleDeployment of the GitRepo, as `namespace/name`, with duplicates kept.
fn gitrepo_bds(mk: &Kubectl) -> Vec<String> {
    let l = mk
        .get_json(&[
            "bundledeployments",
            "-A",
            "-l",
            &format!("fleet.cattle.io/repo-name={GITREPO}"),
        ])
        .unwrap_or_default();
    let mut v: Vec<String> = l["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|b| {
            format!(
                "{}/{}",
                b["metadata"]["namespace"].as_str().unwrap_or(""),
                b["metadata"]["name"].as_str().unwrap_or("")
            )
        })
        .collect();
    v.sort();
    v
}

fn ready_condition(g: &Value) -> Value {
    g["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .find(|c| c["type"] == "Ready")
        .unwrap_or_default()
}

fn uid(v: &Value) -> String {
    v["metadata"]["uid"].as_str().unwrap_or("").to_string()
}

fn assert_forbidden(k: &Kubectl, args: &[&str]) {
    let out = k.run(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("forbidden"),
        "kubectl {args:?} with the agent's credential must be forbidden (403): status {}, stderr {err}",
        out.status
    );
}

#[test]
fn end_to_end() {
    if tools::kubectl().is_none() || tools::git().is_none() || tools::helm().is_none() {
        assert!(!in_ci(), "kubectl, git and helm are required under CI=true");
        println!("skipping: kubectl, git or helm missing");
        return;
    }
    let bin = fleet_bin!();
    let started = Instant::now();
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir: PathBuf = tmp.path().to_path_buf();

    let (mut manager, mk, mut clusters, repo, _daemon) = check("setup", || {
        let manager = FleetServer::start(bin, &dir.join("manager"), &[]);
        let mk = manager.kubectl().expect("kubectl");
        let clusters: BTreeMap<&str, Downstream> = ["dev", "prod"]
            .into_iter()
            .map(|n| {
                let server = FleetServer::start(
                    bin,
                    &dir.join(n),
                    &["--no-controllers", "--simulate-workloads"],
                );
                let k = server.kubectl().expect("kubectl");
                (
                    n,
                    Downstream {
                        server,
                        k,
                        agent: None,
                        cred: None,
                    },
                )
            })
            .collect();
        let repos = dir.join("repos");
        let repo = GitRepo::init(&repos.join("app"));
        write_repository(&repo);
        repo.commit("first");
        let daemon = GitDaemon::start(&repos);
        (manager, mk, clusters, repo, daemon)
    });

    check("registration", || {
        // The manager installs its CRDs and workspaces as it starts.
        eventually("the fleet-default workspace", T, || {
            mk.get_json(&["namespace", WS])
                .map(|_| ())
                .ok_or("not yet".to_string())
        });
        for (name, d) in clusters.iter_mut() {
            let labels: &[(&str, &str)] = match *name {
                "prod" => &[("env", "prod"), ("audit", "on")],
                _ => &[("env", "dev")],
            };
            cluster::register(bin, &manager.kubeconfig, WS, &d.k, labels);
            d.agent = Some(cluster::start_agent(
                bin,
                &format!("agent {name}"),
                &d.server.kubeconfig,
                "2s",
            ));
        }
        for (name, d) in clusters.iter_mut() {
            let cred = eventually(&format!("{name} registered"), T, || {
                cluster::agent_credential(&d.k, &dir)
            });
            let c = eventually(&format!("Cluster of {name}"), T, || {
                mk.get_json(&["clusters.fleet.cattle.io", &cred.cluster_name, "-n", WS])
                    .ok_or("not yet".to_string())
            });
            assert_eq!(c["metadata"]["labels"]["env"], *name, "{c:#}");
            let ks = d.k.json(&["get", "namespace", "kube-system"]);
            assert_eq!(c["spec"]["clientID"], ks["metadata"]["uid"], "{c:#}");
            eventually(
                &format!("{name}'s bootstrap Secret removed"),
                T,
                || match d.k.get_json(&[
                    "secret",
                    "fleet-agent-bootstrap",
                    "-n",
                    cluster::AGENT_NAMESPACE,
                ]) {
                    None => Ok(()),
                    Some(_) => Err("still there".to_string()),
                },
            );
            d.cred = Some(cred);
        }
        let all = mk.json(&["get", "clusters.fleet.cattle.io", "-n", WS]);
        assert_eq!(
            all["items"].as_array().map(Vec::len),
            Some(2),
            "one Cluster per downstream: {all:#}"
        );
    });
    let (dev, prod) = (&clusters["dev"], &clusters["prod"]);

    check("agent credential confined to its namespace", || {
        let ak = Kubectl::new(&dev.cred().kubeconfig).expect("kubectl");
        ak.ok(&["get", "bundledeployments", "-n", &dev.ns()]);
        assert_forbidden(&ak, &["get", "bundledeployments", "-n", &prod.ns()]);
        assert_forbidden(&ak, &["get", "secrets", "-n", WS]);
        assert_forbidden(&ak, &["get", "secrets", "-n", &dev.ns()]);
        assert_forbidden(&ak, &["get", "gitrepos.fleet.cattle.io", "-n", WS]);
        assert_forbidden(&ak, &["get", "bundledeployments", "-A"]);
        assert_forbidden(&ak, &["get", "namespaces"]);
        assert_forbidden(&ak, &["get", "clusterroles"]);
    });

    check("raw YAML, Helm and kustomize bundles deployed", || {
        mk.apply(&format!(
            "apiVersion: fleet.cattle.io/v1alpha1\nkind: GitRepo\nmetadata:\n  name: {GITREPO}\n  namespace: {WS}\nspec:\n  repo: {}\n  branch: main\n  pollingInterval: 1s\n  paths: [raw, helm, kustomize, audit]\n  targets:\n  - clusterSelector: {{}}\n",
            _daemon.repo_url("app")
        ));
        for d in [dev, prod] {
            for b in ["e2e-raw", "e2e-helm", "e2e-kustomize"] {
                eventually(&format!("{b} Ready on {}", d.name()), T, || {
                    bd_ready(&mk, &d.ns(), b)
                });
            }
            configmap(&d.k, "e2e-raw", "raw-config").expect("raw ConfigMap");
            d.k.json(&["get", "deployment", "web", "-n", "e2e-raw"]);
            configmap(&d.k, "e2e-helm", "greeter-config").expect("helm ConfigMap");
        }
        eventually("e2e-audit Ready on prod", T, || {
            bd_ready(&mk, &prod.ns(), "e2e-audit")
        });
        configmap(&prod.k, "e2e-audit", "audit-policy").expect("audit on prod");
        let table = mk.ok(&["get", "bundledeployments", "-n", &prod.ns()]);
        let row = table
            .lines()
            .find(|l| l.starts_with("e2e-raw "))
            .unwrap_or_default()
            .split_whitespace()
            .collect::<Vec<_>>();
        assert_eq!(
            row.get(1..3),
            Some(&["True", "True"][..]),
            "DEPLOYED and MONITORED columns:\n{table}"
        );
        assert!(
            bd(&mk, &dev.ns(), "e2e-audit").is_none(),
            "audit is prod-only"
        );
        assert!(configmap(&dev.k, "e2e-audit", "audit-policy").is_err());
    });

    check("per-cluster values", || {
        for (d, env, replicas) in [(dev, "dev", "1"), (prod, "prod", "2")] {
            let cm = configmap(&d.k, "e2e-helm", "greeter-config").expect("helm ConfigMap");
            assert_eq!(cm["data"]["env"], env, "${{ .ClusterLabels.env }}: {cm:#}");
            assert_eq!(
                cm["data"]["replicas"], replicas,
                "targetCustomizations: {cm:#}"
            );
            configmap(&d.k, "e2e-kustomize", &format!("settings-{env}"))
                .expect("the cluster's own kustomize overlay");
            let other = if env == "dev" { "prod" } else { "dev" };
            assert!(configmap(&d.k, "e2e-kustomize", &format!("settings-{other}")).is_err());
        }
    });

    check("a new commit rolls out", || {
        repo.write("raw/configmap.yaml", &raw_configmap("2"));
        repo.commit("version 2");
        for d in [dev, prod] {
            wait_raw_version(&format!("version 2 on {}", d.name()), d, &mk, "2");
        }
    });

    check("retargeting by label", || {
        let name = dev.name();
        mk.ok(&[
            "label",
            "clusters.fleet.cattle.io",
            &name,
            "-n",
            WS,
            "audit=on",
        ]);
        eventually("e2e-audit added to dev", T, || {
            bd_ready(&mk, &dev.ns(), "e2e-audit")?;
            configmap(&dev.k, "e2e-audit", "audit-policy")
        });
        mk.ok(&[
            "label",
            "clusters.fleet.cattle.io",
            &name,
            "-n",
            WS,
            "audit-",
        ]);
        eventually("e2e-audit removed from dev and uninstalled", T, || {
            if bd(&mk, &dev.ns(), "e2e-audit").is_some() {
                return Err("BundleDeployment still there".to_string());
            }
            match configmap(&dev.k, "e2e-audit", "audit-policy") {
                Ok(_) => Err("audit-policy still deployed on dev".to_string()),
                Err(_) => Ok(()),
            }
        });
        bd_ready(&mk, &prod.ns(), "e2e-audit").expect("prod keeps audit");
    });

    check("drift reported and corrected", || {
        dev.k.ok(&[
            "patch",
            "configmap",
            "raw-config",
            "-n",
            "e2e-raw",
            "--type",
            "merge",
            "-p",
            r#"{"data":{"version":"drifted"}}"#,
        ]);
        eventually("BundleDeployment Modified naming raw-config", T, || {
            let b = bd(&mk, &dev.ns(), "e2e-raw").ok_or("no BD")?;
            let s = &b["status"];
            let named = s["modifiedStatus"]
                .as_array()
                .is_some_and(|m| m.iter().any(|m| m["name"] == "raw-config"));
            let ready = ready_condition(&b);
            let msg = ready["message"].as_str().unwrap_or("");
            if s["nonModified"] != true
                && named
                && ready["status"] == "False"
                && msg.contains("e2e-raw/raw-config modified")
            {
                Ok(())
            } else {
                Err(s.to_string())
            }
        });
        mk.ok(&[
            "patch",
            "gitrepo",
            GITREPO,
            "-n",
            WS,
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"correctDrift":{"enabled":true}}}"#,
        ]);
        wait_raw_version("correctDrift restores raw-config", dev, &mk, "2");
    });

    check(
        "a broken fleet.yaml reported by name while the rest deploys",
        || {
            repo.write("audit/fleet.yaml", "defaultNamespace: [unclosed\n")
                .write("raw/configmap.yaml", &raw_configmap("3"));
            repo.commit("broken audit, version 3");
            eventually("the GitRepo names the broken fleet.yaml", T, || {
                let g = mk.json(&["get", "gitrepo", GITREPO, "-n", WS]);
                let c = ready_condition(&g);
                let msg = c["message"].as_str().unwrap_or("").to_string();
                if c["status"] == "False" && msg.contains("audit") && msg.contains("fleet.yaml") {
                    Ok(())
                } else {
                    Err(g["status"].to_string())
                }
            });
            for d in [dev, prod] {
                wait_raw_version(&format!("version 3 on {}", d.name()), d, &mk, "3");
            }
            configmap(&prod.k, "e2e-audit", "audit-policy")
                .expect("the broken bundle keeps running");
            write_audit(&repo);
            repo.commit("audit fixed");
            eventually("the GitRepo Ready again", T, || {
                let g = mk.json(&["get", "gitrepo", GITREPO, "-n", WS]);
                let c = ready_condition(&g);
                if c["status"] == "True" {
                    Ok(())
                } else {
                    Err(g["status"].to_string())
                }
            });
        },
    );

    check("an agent offline and back", || {
        let d = clusters.get_mut("dev").expect("dev");
        let ns = d.ns();
        let name = d.name();
        if let Some(mut a) = d.agent.take() {
            a.kill();
        }
        let applied = bd(&mk, &ns, "e2e-raw").expect("BD")["status"]["appliedDeploymentID"].clone();
        let helm_uid = uid(&configmap(&d.k, "e2e-helm", "greeter-config").expect("helm ConfigMap"));
        repo.write("raw/configmap.yaml", &raw_configmap("4"));
        repo.commit("version 4");
        eventually(
            "version 4 targeted at dev while its agent is down",
            T,
            || {
                let b = bd(&mk, &ns, "e2e-raw").ok_or("no BD")?;
                if b["spec"]["deploymentID"] != applied {
                    Ok(())
                } else {
                    let g = mk
                        .get_json(&["gitrepo", GITREPO, "-n", WS])
                        .unwrap_or_default();
                    Err(format!(
                        "BD spec {}; GitRepo status {}",
                        b["spec"], g["status"]
                    ))
                }
            },
        );
        // Nothing applied and nothing deleted while offline.
        assert_eq!(raw_version(&d.k).as_deref(), Ok("3"));
        assert_eq!(
            uid(&configmap(&d.k, "e2e-helm", "greeter-config").expect("helm ConfigMap kept")),
            helm_uid
        );
        d.k.json(&["get", "deployment", "web", "-n", "e2e-raw"]);
        d.agent = Some(cluster::start_agent(
            bin,
            "agent dev (restarted)",
            &d.server.kubeconfig,
            "2s",
        ));
        wait_raw_version(&format!("version 4 on {name}"), d, &mk, "4");
        assert_eq!(
            uid(&configmap(&d.k, "e2e-helm", "greeter-config").expect("helm ConfigMap kept")),
            helm_uid
        );
    });
    let (dev, prod) = (&clusters["dev"], &clusters["prod"]);

    let expected_bds = {
        let mut v: Vec<String> = BUNDLES
            .iter()
            .map(|b| format!("{}/{b}", prod.ns()))
            .chain(BUNDLES[..3].iter().map(|b| format!("{}/{b}", dev.ns())))
            .collect();
        v.sort();
        v
    };

    check("manager SIGKILLed and restarted mid-rollout", || {
        let before: Vec<(String, String)> = [dev, prod]
            .iter()
            .map(|d| {
                let cm = configmap(&d.k, "e2e-helm", "greeter-config").expect("helm ConfigMap");
                (d.name(), uid(&cm))
            })
            .collect();
        let port = manager.port();
        repo.write("raw/configmap.yaml", &raw_configmap("5"));
        let commit = repo.commit("version 5");
        eventually("the rollout of version 5 started", T, || {
            let b = mk.json(&["get", "bundle", "e2e-raw", "-n", WS]);
            if b["metadata"]["labels"]["fleet.cattle.io/commit"] == commit.as_str() {
                Ok(())
            } else {
                Err(b["metadata"]["labels"].to_string())
            }
        });
        manager.process.kill();
        manager =
            FleetServer::start_on(bin, &dir.join("manager"), &format!("127.0.0.1:{port}"), &[]);
        for d in [dev, prod] {
            wait_raw_version(&format!("version 5 on {}", d.name()), d, &mk, "5");
        }
        eventually(
            "exactly the expected BundleDeployments, all Ready",
            T,
            || {
                let got = gitrepo_bds(&mk);
                if got != expected_bds {
                    return Err(format!("{got:?}"));
                }
                for id in &got {
                    let (ns, name) = id.split_once('/').unwrap_or_default();
                    bd_ready(&mk, ns, name)?;
                }
                Ok(())
            },
        );
        for (d, (name, old_uid)) in [dev, prod].iter().zip(before) {
            let cm = configmap(&d.k, "e2e-helm", "greeter-config").expect("helm ConfigMap");
            assert_eq!(
                uid(&cm),
                old_uid,
                "{name}: the Helm ConfigMap was deleted and recreated"
            );
        }
    });

    check("helm list on a downstream", || {
        let out = cluster::helm(&prod.server.kubeconfig, &dir, &["list", "-A", "-o", "json"])
            .expect("helm");
        let list: Value = serde_json::from_str(&out).expect("helm list JSON");
        let releases: Vec<(String, String)> = list
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|r| {
                (
                    r["name"].as_str().unwrap_or("").to_string(),
                    r["namespace"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect();
        assert!(
            releases.contains(&("greeter".to_string(), "e2e-helm".to_string())),
            "{out}"
        );
        assert_eq!(releases.len(), 4, "one release per bundle on prod: {out}");
        for r in list.as_array().into_iter().flatten() {
            assert_eq!(r["status"], "deployed", "{r}");
        }
    });

    check("deleting the GitRepo", || {
        mk.ok(&["delete", "gitrepo", GITREPO, "-n", WS]);
        eventually("Bundles and BundleDeployments removed", T, || {
            let b = mk
                .get_json(&[
                    "bundles",
                    "-n",
                    WS,
                    "-l",
                    &format!("fleet.cattle.io/repo-name={GITREPO}"),
                ])
                .ok_or("list")?;
            let n = b["items"].as_array().map_or(0, Vec::len);
            let bds = gitrepo_bds(&mk);
            if n == 0 && bds.is_empty() {
                Ok(())
            } else {
                Err(format!("{n} bundles, BDs {bds:?}"))
            }
        });
        for d in [dev, prod] {
            eventually(&format!("objects uninstalled from {}", d.name()), T, || {
                for (ns, n) in [("e2e-raw", "raw-config"), ("e2e-helm", "greeter-config")] {
                    if configmap(&d.k, ns, n).is_ok() {
                        return Err(format!("{ns}/{n} still there"));
                    }
                }
                if d.k
                    .get_json(&["deployment", "web", "-n", "e2e-raw"])
                    .is_some()
                {
                    return Err("deployment web still there".into());
                }
                Ok(())
            });
        }
        let out =
            cluster::helm(&prod.server.kubeconfig, &dir, &["list", "-A", "-q"]).expect("helm");
        assert!(out.trim().is_empty(), "releases left: {out}");
    });

    eprintln!(
        "e2e: all checks ok in {:.1}s",
        started.elapsed().as_secs_f64()
    );
}
