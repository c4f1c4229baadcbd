//! Agent-initiated registration end to end, as the seed documents it: a manager `fleet server`
//! and a downstream `fleet server --no-controllers`, real kubectl and the real `fleet install`
//! commands; the registration controller and the agent's `ensure_registered` run in this process
//! (the `fleet controller` / `fleet agent` subcommands call the same functions).
//!
//! Skips (with a message) when kubectl is missing; fails instead under CI=true.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use fleet_agent::register::{AgentCredential, RegisterError, RegisterOptions, ensure_registered};
use fleet_controller::registration::{RegistrationOptions, run};
use fleet_testkit::{FleetServer, Kubectl, eventually_async, fleet_bin};
use serde_json::Value;

const WORKSPACE: &str = "fleet-default";
const AGENT_NS: &str = "cattle-fleet-system";

/// A manager with the Fleet CRDs and the registration controller running, and one downstream.
struct Setup {
    _dir: tempfile::TempDir,
    manager: FleetServer,
    downstream: FleetServer,
    mk: Kubectl,
    dk: Kubectl,
}

fn fleet(args: &[&str]) -> Output {
    Command::new(fleet_bin!())
        .args(args)
        .output()
        .expect("running fleet")
}

fn fleet_ok(args: &[&str]) -> String {
    let out = fleet(args);
    assert!(
        out.status.success(),
        "fleet {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

/// `fleet install ...` without blocking the runtime the controller runs on.
async fn fleet_async(args: &[&str]) -> String {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        fleet_ok(&a)
    })
    .await
    .expect("fleet task")
}

async fn setup() -> Option<Setup> {
    let _ = tracing_subscriber::fmt()
        .with_test_writer()
        .with_env_filter(
            std::env::var("RUST_LOG")
                .unwrap_or_else(|_| "fleet_controller=info,fleet_agent=info".into()),
        )
        .try_init();
    let dir = tempfile::tempdir().expect("tempdir");
    let manager = FleetServer::start(
        fleet_bin!(),
        &dir.path().join("manager"),
        &["--no-controllers"],
    );
    let downstream = FleetServer::start(
        fleet_bin!(),
        &dir.path().join("downstream"),
        &["--no-controllers"],
    );
    let Some(mk) = manager.kubectl() else {
        eprintln!("SKIP: kubectl not found");
        return None;
    };
    let dk = downstream.kubectl().expect("kubectl");
    mk.apply(&fleet_ok(&["install", "controller", "--crds-only"]));
    mk.ok(&["create", "namespace", WORKSPACE]);

    let (url, ca) = server_of(&manager.kubeconfig);
    let opts = RegistrationOptions {
        api_server_url: url,
        api_server_ca: ca,
        // Short enough to watch credential Secrets expire (upstream: 40 minutes).
        credential_secret_ttl: Duration::from_secs(8),
        ..Default::default()
    };
    let client = manager.client().await;
    tokio::spawn(async move {
        if let Err(e) = run(client, opts).await {
            panic!("registration controller: {e}");
        }
    });
    Some(Setup {
        _dir: dir,
        manager,
        downstream,
        mk,
        dk,
    })
}

/// URL and CA of the admin kubeconfig `fleet server` wrote.
fn server_of(kubeconfig: &Path) -> (String, String) {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig).expect("kubeconfig");
    let c = kc.clusters[0].cluster.clone().expect("cluster");
    let ca = c
        .certificate_authority_data
        .map(|d| {
            use base64::Engine;
            String::from_utf8(base64::engine::general_purpose::STANDARD.decode(d).unwrap()).unwrap()
        })
        .unwrap_or_default();
    (c.server.unwrap_or_default(), ca)
}

fn agent_opts() -> RegisterOptions {
    RegisterOptions {
        poll_interval: Duration::from_millis(200),
        timeout: Duration::from_secs(60),
        max_backoff: Duration::from_secs(1),
        pod_name: Some("fleet-agent-test-pod".into()),
        ..Default::default()
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// kubectl with a credential's kubeconfig.
fn agent_kubectl(dir: &Path, name: &str, cred: &AgentCredential) -> Kubectl {
    let p: PathBuf = dir.join(name);
    std::fs::write(&p, &cred.kubeconfig).expect("write kubeconfig");
    Kubectl::new(&p).expect("kubectl")
}

fn assert_forbidden(k: &Kubectl, args: &[&str]) {
    let out = k.run(args);
    assert!(
        !out.status.success() && stderr(&out).contains("forbidden"),
        "kubectl {args:?} must be forbidden; status {}, stdout {}, stderr {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        stderr(&out)
    );
}

fn clusters(mk: &Kubectl) -> Vec<Value> {
    mk.get_json(&["clusters.fleet.cattle.io", "-n", WORKSPACE])
        .and_then(|v| v["items"].as_array().cloned())
        .unwrap_or_default()
}

fn bundle_deployment(name: &str, ns: &str) -> String {
    format!(
        "apiVersion: fleet.cattle.io/v1alpha1\nkind: BundleDeployment\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n  deploymentID: s-1:abc\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn seed_flow_registers_a_cluster_with_least_privilege_and_reregisters_to_the_same_cluster() {
    let Some(s) = setup().await else { return };
    let dir = s.manager.dir.parent().expect("parent").to_path_buf();

    // The seed's flow, step by step.
    s.dk.apply(&fleet_ok(&["install", "agent-config", "-l", "env=prod"]));
    let kc = s.manager.kubeconfig.to_string_lossy().into_owned();
    let token = fleet_async(&["install", "agent-token", "-k", &kc]).await;
    std::fs::write(dir.join("token"), &token).expect("write token");
    s.dk.ok(&["apply", "-f", &dir.join("token").to_string_lossy()]);
    let downstream = s.downstream.client().await;
    let cred = ensure_registered(downstream.clone(), &agent_opts())
        .await
        .expect("registration");

    // A Cluster with env=prod, identified by the downstream's kube-system uid.
    let ks_uid =
        s.dk.get_json(&["namespace", "kube-system"])
            .expect("kube-system")["metadata"]["uid"]
            .as_str()
            .expect("uid")
            .to_string();
    let all = clusters(&s.mk);
    assert_eq!(all.len(), 1, "{all:#?}");
    let cluster = &all[0];
    assert_eq!(cluster["metadata"]["name"], cred.cluster_name);
    assert_eq!(cluster["metadata"]["labels"]["env"], "prod");
    assert_eq!(
        cluster["metadata"]["labels"]["fleet.cattle.io/created-by-agent-pod"],
        "fleet-agent-test-pod"
    );
    assert_eq!(cluster["spec"]["clientID"], ks_uid.as_str());
    assert_eq!(cred.cluster_namespace, WORKSPACE);
    assert_eq!(
        cred.deployment_namespace,
        fleet_api::names::cluster_namespace(WORKSPACE, &cred.cluster_name)
    );

    // The bootstrap token is forgotten; the credential is stored.
    assert!(
        s.dk.get_json(&["secret", "-n", AGENT_NS, "fleet-agent-bootstrap"])
            .is_none()
    );
    let stored =
        s.dk.get_json(&["secret", "-n", AGENT_NS, "fleet-agent"])
            .expect("fleet-agent Secret");
    for key in [
        "kubeconfig",
        "deploymentNamespace",
        "clusterNamespace",
        "clusterName",
    ] {
        assert!(stored["data"][key].is_string(), "key {key} in {stored:#}");
    }
    // Running again uses the stored credential (no second registration).
    let again = ensure_registered(downstream.clone(), &agent_opts())
        .await
        .expect("stored credential");
    assert_eq!(again, cred);

    // Least privilege, checked with kubectl and the agent's own credential.
    let ns = cred.deployment_namespace.clone();
    s.mk.apply(&bundle_deployment("bd1", &ns));
    let other_ns = fleet_api::names::cluster_namespace(WORKSPACE, "other");
    s.mk.ok(&["create", "namespace", &other_ns]);
    s.mk.apply(&bundle_deployment("bd-other", &other_ns));
    let ak = agent_kubectl(&dir, "agent-kubeconfig", &cred);
    let listed = ak.ok(&["get", "bundledeployments", "-n", &ns, "-o", "name"]);
    assert!(listed.contains("bd1"), "{listed}");
    assert_eq!(
        ak.ok(&["auth", "can-i", "watch", "bundledeployments", "-n", &ns])
            .trim(),
        "yes"
    );
    // Status writes go through kube-rs as the agent makes them: a patch without a GET (kubectl
    // patch reads the subresource first, which the role rightly does not allow).
    let agent = cred.client().await.expect("agent client");
    let pp = kube::api::PatchParams::default();
    kube::Api::<fleet_api::BundleDeployment>::namespaced(agent.clone(), &ns)
        .patch_status(
            "bd1",
            &pp,
            &kube::api::Patch::Merge(serde_json::json!({"status": {"ready": true}})),
        )
        .await
        .expect("the agent patches its BundleDeployment's status");
    kube::Api::<fleet_api::Cluster>::namespaced(agent.clone(), WORKSPACE)
        .patch_status(
            &cred.cluster_name,
            &pp,
            &kube::api::Patch::Merge(
                serde_json::json!({"status": {"agent": {"namespace": AGENT_NS}}}),
            ),
        )
        .await
        .expect("the agent patches its Cluster's status");
    let bd =
        s.mk.get_json(&["bundledeployment", "-n", &ns, "bd1"])
            .expect("bd1");
    assert_eq!(bd["status"]["ready"], true);
    let other_cluster = kube::Api::<fleet_api::Cluster>::namespaced(agent.clone(), WORKSPACE)
        .patch_status(
            "some-other-cluster",
            &pp,
            &kube::api::Patch::Merge(serde_json::json!({"status": {}})),
        )
        .await;
    assert!(
        matches!(&other_cluster, Err(kube::Error::Api(e)) if e.code == 403),
        "another Cluster's status is not the agent's: {other_cluster:?}"
    );
    assert_forbidden(
        &ak,
        &[
            "patch",
            "bundledeployment",
            "bd1",
            "-n",
            &ns,
            "--type=merge",
            "-p",
            r#"{"spec":{"paused":true}}"#,
        ],
    );
    assert_forbidden(&ak, &["get", "bundledeployments", "-n", &other_ns]);
    assert_forbidden(&ak, &["get", "secrets", "-n", WORKSPACE]);
    assert_forbidden(&ak, &["get", "secrets", "-n", &ns]);
    assert_forbidden(&ak, &["get", "bundles.fleet.cattle.io", "-n", WORKSPACE]);
    assert_forbidden(&ak, &["get", "gitrepos.fleet.cattle.io", "-n", WORKSPACE]);
    assert_forbidden(&ak, &["get", "clusters.fleet.cattle.io", "-n", WORKSPACE]);
    assert_forbidden(&ak, &["get", "bundledeployments", "-A"]);
    assert_forbidden(&ak, &["get", "namespaces"]);
    assert_forbidden(&ak, &["get", "clusterroles"]);
    assert_forbidden(&ak, &["get", "contents.fleet.cattle.io"]);
    assert_forbidden(
        &ak,
        &["get", "secrets", "-n", "cattle-fleet-clusters-system"],
    );

    // Re-registration: the credential is deleted and a new token applied.
    s.dk.ok(&["delete", "secret", "-n", AGENT_NS, "fleet-agent"]);
    let token2 = fleet_async(&["install", "agent-token", "-k", &kc]).await;
    s.dk.apply(&token2);
    let cred2 = ensure_registered(downstream.clone(), &agent_opts())
        .await
        .expect("re-registration");
    assert_eq!(
        cred2.cluster_name, cred.cluster_name,
        "same kube-system uid, same Cluster"
    );
    assert_eq!(clusters(&s.mk).len(), 1, "no second Cluster");
    assert_ne!(cred2.kubeconfig, cred.kubeconfig);
    let ak2 = agent_kubectl(&dir, "agent-kubeconfig-2", &cred2);
    ak2.ok(&["get", "bundledeployments", "-n", &ns]);
    // The old ServiceAccount is gone: its token no longer authenticates.
    let old = ak.clone();
    eventually_async(
        "the old credential stops authenticating",
        Duration::from_secs(30),
        || {
            let old = old.clone();
            let ns = ns.clone();
            async move {
                let out = tokio::task::spawn_blocking(move || {
                    old.run(&["get", "bundledeployments", "-n", &ns])
                })
                .await
                .expect("kubectl task");
                if !out.status.success() && stderr(&out).contains("Unauthorized") {
                    Ok(())
                } else {
                    Err(format!("status {}, stderr {}", out.status, stderr(&out)))
                }
            }
        },
    )
    .await;
    let regs =
        s.mk.get_json(&["clusterregistrations.fleet.cattle.io", "-n", WORKSPACE])
            .expect("registrations");
    assert_eq!(
        regs["items"].as_array().map(Vec::len),
        Some(1),
        "older registration removed: {regs:#}"
    );

    // Credential Secrets are handed out once and then expire.
    let mk = s.mk.clone();
    eventually_async("credential Secrets expire", Duration::from_secs(30), || {
        let mk = mk.clone();
        async move {
            let left = tokio::task::spawn_blocking(move || {
                mk.get_json(&["secrets", "-n", "cattle-fleet-clusters-system"])
                    .and_then(|v| {
                        v["items"].as_array().map(|i| {
                            i.iter()
                                .filter(|s| s["type"] == "fleet.cattle.io/agent-credential")
                                .count()
                        })
                    })
            })
            .await
            .expect("kubectl task");
            if left == Some(0) {
                Ok(())
            } else {
                Err(format!("{left:?} left"))
            }
        }
    })
    .await;
    ak2.ok(&["get", "bundledeployments", "-n", &ns]);

    // Deleting a registration revokes what it granted.
    let reg = regs["items"][0]["metadata"]["name"]
        .as_str()
        .expect("name")
        .to_string();
    s.mk.ok(&[
        "delete",
        "clusterregistrations.fleet.cattle.io",
        "-n",
        WORKSPACE,
        &reg,
    ]);
    eventually_async(
        "a deleted registration's credential stops authenticating",
        Duration::from_secs(30),
        || {
            let k = ak2.clone();
            let ns = ns.clone();
            async move {
                let out = tokio::task::spawn_blocking(move || {
                    k.run(&["get", "bundledeployments", "-n", &ns])
                })
                .await
                .expect("kubectl task");
                if !out.status.success() && stderr(&out).contains("Unauthorized") {
                    Ok(())
                } else {
                    Err(format!("status {}, stderr {}", out.status, stderr(&out)))
                }
            }
        },
    )
    .await;
    let crb =
        s.mk.get_json(&["clusterrolebinding", &format!("{reg}-content")]);
    assert!(crb.is_none(), "the content binding is revoked too: {crb:?}");

    // A stored credential that stopped working is replaced once a bootstrap Secret is back.
    let token3 = fleet_async(&["install", "agent-token", "-k", &kc]).await;
    s.dk.apply(&token3);
    let cred3 = ensure_registered(downstream.clone(), &agent_opts())
        .await
        .expect("re-registration after revocation");
    assert_eq!(cred3.cluster_name, cred.cluster_name);
    assert_ne!(cred3.kubeconfig, cred2.kubeconfig);
    let ak3 = agent_kubectl(&dir, "agent-kubeconfig-3", &cred3);
    ak3.ok(&["get", "bundledeployments", "-n", &ns]);
    assert_eq!(clusters(&s.mk).len(), 1, "still one Cluster");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_expired_token_is_deleted_and_refused_while_ttl_zero_stays() {
    let Some(s) = setup().await else { return };
    let kc = s.manager.kubeconfig.to_string_lossy().into_owned();
    let forever = fleet_async(&["install", "agent-token", "-k", &kc, "-t", "0"]).await;
    assert!(forever.contains("fleet-agent-bootstrap"));
    let short = fleet_async(&["install", "agent-token", "-k", &kc, "--ttl", "3s"]).await;
    let tokens =
        s.mk.get_json(&["clusterregistrationtokens.fleet.cattle.io", "-n", WORKSPACE])
            .expect("tokens");
    let items = tokens["items"].as_array().cloned().unwrap_or_default();
    assert_eq!(items.len(), 2, "{tokens:#}");
    let short_name = items
        .iter()
        .find(|t| t["spec"]["ttl"] == "3s")
        .and_then(|t| t["metadata"]["name"].as_str())
        .expect("the 3s token")
        .to_string();
    let forever_name = items
        .iter()
        .find(|t| t["metadata"]["name"] != short_name.as_str())
        .and_then(|t| t["metadata"]["name"].as_str())
        .expect("the forever token")
        .to_string();

    let mk = s.mk.clone();
    let n = short_name.clone();
    eventually_async(
        "the expired token is deleted",
        Duration::from_secs(30),
        || {
            let mk = mk.clone();
            let n = n.clone();
            async move {
                let gone = tokio::task::spawn_blocking(move || {
                    mk.get_json(&[
                        "clusterregistrationtokens.fleet.cattle.io",
                        "-n",
                        WORKSPACE,
                        &n,
                    ])
                    .is_none()
                })
                .await
                .expect("kubectl task");
                if gone {
                    Ok(())
                } else {
                    Err("still there".into())
                }
            }
        },
    )
    .await;

    // Registering with it is refused, and says why.
    s.dk.apply(&short);
    let err = ensure_registered(s.downstream.client().await, &agent_opts())
        .await
        .expect_err("an expired token must not register");
    assert!(matches!(err, RegisterError::TokenRejected { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("expired or was deleted") && msg.contains(&short_name),
        "{msg}"
    );
    assert!(clusters(&s.mk).is_empty());
    // The bootstrap Secret stays for a retry with a new token.
    assert!(
        s.dk.get_json(&["secret", "-n", AGENT_NS, "fleet-agent-bootstrap"])
            .is_some()
    );

    // The TTL-0 token is still there, with no expiry.
    let t =
        s.mk.get_json(&[
            "clusterregistrationtokens.fleet.cattle.io",
            "-n",
            WORKSPACE,
            &forever_name,
        ])
        .expect("the ttl-0 token stays");
    assert!(t["status"]["expires"].is_null(), "{t:#}");
    assert_eq!(t["status"]["secretName"], forever_name.as_str());
}

#[test]
fn install_manifests_apply_cleanly_to_fleet_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = FleetServer::start(fleet_bin!(), &dir.path().join("s"), &["--no-controllers"]);
    let Some(k) = server.kubectl() else {
        eprintln!("SKIP: kubectl not found");
        return;
    };
    let crds_only = fleet_ok(&["install", "controller", "--crds-only"]);
    let docs: Vec<Value> = serde_saphyr::from_multiple(&crds_only).expect("yaml");
    assert!(!docs.is_empty());
    assert!(
        docs.iter().all(|d| d["kind"] == "CustomResourceDefinition"),
        "--crds-only prints only CRDs"
    );
    let all = fleet_ok(&[
        "install",
        "controller",
        "--controller-image",
        "example/fleet:1",
        "--system-namespace",
        "fleet-sys",
    ]);
    k.apply(&all);
    let dep = k
        .get_json(&["deployment", "-n", "fleet-sys", "fleet-controller"])
        .expect("Deployment");
    assert_eq!(
        dep["spec"]["template"]["spec"]["containers"][0]["image"],
        "example/fleet:1"
    );
    assert_eq!(
        dep["spec"]["template"]["spec"]["containers"][0]["args"][0],
        "controller"
    );
    // Applying twice is a no-op, as kubectl users expect.
    k.apply(&all);
    let cfg = fleet_ok(&[
        "install",
        "agent-config",
        "-l",
        "env=prod",
        "-l",
        "tier=edge",
    ]);
    k.apply(&cfg);
    let cm = k
        .get_json(&["configmap", "-n", AGENT_NS, "fleet-agent"])
        .expect("ConfigMap");
    let config: Value =
        serde_json::from_str(cm["data"]["config"].as_str().expect("config")).expect("json");
    assert_eq!(config["labels"]["tier"], "edge");
    let bad = fleet(&["install", "agent-config", "-l", "novalue"]);
    assert!(
        !bad.status.success() && stderr(&bad).contains("KEY=VALUE"),
        "{}",
        stderr(&bad)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn manager_initiated_registration_reaches_an_agent_already_waiting() {
    let Some(s) = setup().await else { return };
    // The agent is up before anything tells it how to register.
    let downstream = s.downstream.client().await;
    let agent = tokio::spawn(async move { ensure_registered(downstream, &agent_opts()).await });

    let kc = s.downstream.kubeconfig.to_string_lossy().into_owned();
    s.mk.ok(&[
        "create",
        "secret",
        "generic",
        "downstream-kubeconfig",
        "-n",
        WORKSPACE,
        &format!("--from-file=value={kc}"),
    ]);
    s.mk.apply(&format!(
        "apiVersion: fleet.cattle.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: imported\n  namespace: {WORKSPACE}\n  labels:\n    env: edge\nspec:\n  kubeConfigSecret: downstream-kubeconfig\n"
    ));
    let cred = tokio::time::timeout(Duration::from_secs(60), agent)
        .await
        .expect("the waiting agent registers within 60s")
        .expect("agent task")
        .expect("registration");
    assert_eq!(cred.cluster_name, "imported");
    let all = clusters(&s.mk);
    assert_eq!(
        all.len(),
        1,
        "the imported Cluster is reused, no second one: {all:#?}"
    );
    assert!(
        all[0]["spec"]["clientID"]
            .as_str()
            .is_some_and(|id| !id.is_empty())
    );
    assert_eq!(all[0]["status"]["agentDeployedGeneration"], 0);
    let ak = agent_kubectl(
        s.manager.dir.parent().expect("parent"),
        "imported-kubeconfig",
        &cred,
    );
    ak.ok(&["get", "bundledeployments", "-n", &cred.deployment_namespace]);
    assert!(
        s.dk.get_json(&["secret", "-n", AGENT_NS, "fleet-agent-bootstrap"])
            .is_none()
    );
}
