//! The Fleet security shape end to end, with real kubectl against `fleet server`: a service
//! account bound only to get/list/watch BundleDeployments in its cluster namespace and to update
//! their `status` gets 403 everywhere else, and its token stops working when the ServiceAccount
//! is deleted or recreated (401). Expired, tampered and wrong-audience tokens are covered by
//! `server_sa_tokens.rs`.
//!
//! Skips (with a message) when kubectl is missing; fails instead under CI=true.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::common::{Server, find_tool};
use fleet_testkit::Kubectl;

/// A kubeconfig for a bearer token, built the way a user would with `kubectl config`.
fn token_kubeconfig(admin: &Kubectl, dir: &Path, server: &str, token: &str) -> Kubectl {
    let path = dir.join("agent.kubeconfig");
    let agent = Kubectl::with_bin(&admin.bin, &path);
    let ca = dir.join("pki/ca.crt");
    let ca = ca.to_string_lossy();
    agent.ok(&[
        "config",
        "set-cluster",
        "fleet",
        &format!("--server={server}"),
        &format!("--certificate-authority={ca}"),
        "--embed-certs=true",
    ]);
    agent.ok(&[
        "config",
        "set-credentials",
        "agent",
        &format!("--token={token}"),
    ]);
    agent.ok(&[
        "config",
        "set-context",
        "agent",
        "--cluster=fleet",
        "--user=agent",
        "--namespace=cluster-a",
    ]);
    agent.ok(&["config", "use-context", "agent"]);
    agent
}

fn bd(name: &str, ns: &str) -> String {
    format!(
        "apiVersion: fleet.cattle.io/v1alpha1\nkind: BundleDeployment\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n  deploymentID: \"s-1:abc\"\n  stagedDeploymentID: \"s-1:abc\"\n"
    )
}

/// Retries `f` for a few seconds: RBAC changes reach the authorizer through a watch, as they
/// reach kube-apiserver's through an informer.
fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    fleet_testkit::eventually(what, Duration::from_secs(10), || {
        if f() {
            Ok(())
        } else {
            Err("not yet".to_string())
        }
    })
}

#[test]
fn service_account_sees_only_its_bundledeployments() {
    let Some(bin) = find_tool("KUBECTL", "kubectl") else {
        if crate::common::in_ci() {
            panic!("kubectl not found and CI=true");
        }
        println!("skipping: kubectl not found (set KUBECTL)");
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let srv = Server::start(dir.path());
    let admin = Kubectl::with_bin(&bin, &srv.kubeconfig);

    // The Fleet CRDs, two cluster namespaces, a BundleDeployment in each, and a Secret.
    let crds = Command::new(env!("CARGO_BIN_EXE_fleet"))
        .args(["install", "crds"])
        .output()
        .expect("fleet install crds");
    assert!(crds.status.success());
    let out = admin.run_stdin(
        &["apply", "-f", "-"],
        &String::from_utf8_lossy(&crds.stdout),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    admin.ok(&[
        "wait",
        "--for=condition=Established",
        "crd/bundledeployments.fleet.cattle.io",
        "--timeout=30s",
    ]);
    admin.ok(&["create", "namespace", "cluster-a"]);
    admin.ok(&["create", "namespace", "cluster-b"]);
    admin.apply(&bd("app", "cluster-a"));
    admin.apply(&bd("app", "cluster-b"));
    admin.ok(&[
        "create",
        "secret",
        "generic",
        "creds",
        "-n",
        "cluster-a",
        "--from-literal=k=v",
    ]);

    // The agent's identity and its least-privilege role, as upstream Fleet's registration makes.
    admin.ok(&["create", "serviceaccount", "agent", "-n", "cluster-a"]);
    admin.apply(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: agent\n  namespace: cluster-a\nrules:\n- apiGroups: [fleet.cattle.io]\n  resources: [bundledeployments]\n  verbs: [get, list, watch]\n- apiGroups: [fleet.cattle.io]\n  resources: [bundledeployments/status]\n  verbs: [get, update, patch]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: agent\n  namespace: cluster-a\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: agent\nsubjects:\n- kind: ServiceAccount\n  name: agent\n  namespace: cluster-a\n",
    );
    let token = admin
        .ok(&["create", "token", "agent", "-n", "cluster-a"])
        .trim()
        .to_string();
    assert_eq!(token.split('.').count(), 3, "a JWT: {token}");
    let agent = token_kubeconfig(&admin, dir.path(), &srv.url, &token);

    // Allowed: list/get/watch BundleDeployments in its own namespace, and update their status
    // (`kubectl patch --subresource=status` reads the status first, hence `get` on it too).
    eventually("the agent can list its BundleDeployments", || {
        agent
            .run(&["get", "bundledeployments", "-o", "name"])
            .status
            .success()
    });
    assert!(
        agent
            .ok(&["get", "bundledeployments", "-o", "name"])
            .contains("app")
    );
    agent.ok(&["get", "bundledeployment", "app", "-o", "yaml"]);
    agent.ok(&[
        "patch",
        "bundledeployment",
        "app",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"ready":true}}"#,
    ]);
    let ready = admin.ok(&[
        "get",
        "bundledeployment",
        "app",
        "-n",
        "cluster-a",
        "-o",
        "jsonpath={.status.ready}",
    ]);
    assert_eq!(ready, "true");

    // Refused: other namespaces, Secrets, spec updates, deletes, creates.
    let user = "system:serviceaccount:cluster-a:agent";
    let err = agent.fails(&["get", "bundledeployments", "-n", "cluster-b"]);
    assert!(
        err.contains("Forbidden")
            && err.contains(&format!("User \"{user}\" cannot list resource \"bundledeployments\" in API group \"fleet.cattle.io\" in the namespace \"cluster-b\"")),
        "{err}"
    );
    let err = agent.fails(&["get", "bundledeployment", "app", "-n", "cluster-b"]);
    assert!(err.contains("Forbidden"), "{err}");
    let err = agent.fails(&["get", "bundledeployments", "--all-namespaces"]);
    assert!(err.contains("Forbidden"), "{err}");
    let err = agent.fails(&["get", "secrets"]);
    assert!(
        err.contains("Forbidden") && err.contains("cannot list resource \"secrets\""),
        "{err}"
    );
    let err = agent.fails(&["get", "secret", "creds"]);
    assert!(err.contains("Forbidden"), "{err}");
    let err = agent.fails(&[
        "patch",
        "bundledeployment",
        "app",
        "--type=merge",
        "-p",
        r#"{"spec":{"deploymentID":"evil"}}"#,
    ]);
    assert!(
        err.contains("Forbidden") && err.contains("cannot patch resource \"bundledeployments\""),
        "{err}"
    );
    let err = agent.fails(&[
        "patch",
        "bundledeployment",
        "app",
        "-n",
        "cluster-b",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"ready":true}}"#,
    ]);
    assert!(err.contains("Forbidden"), "{err}");
    let err = agent.fails(&["delete", "bundledeployment", "app"]);
    assert!(err.contains("Forbidden"), "{err}");
    let out = agent.run_stdin(&["apply", "-f", "-"], &bd("new", "cluster-a"));
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Forbidden"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let spec = admin.ok(&[
        "get",
        "bundledeployment",
        "app",
        "-n",
        "cluster-a",
        "-o",
        "jsonpath={.spec.deploymentID}",
    ]);
    assert_eq!(spec, "s-1:abc", "the refused spec patch changed nothing");

    // kubectl auth can-i agrees, for the agent itself and through impersonation by the admin.
    assert_eq!(
        agent
            .ok(&["auth", "can-i", "list", "bundledeployments"])
            .trim(),
        "yes"
    );
    let out = agent.run(&["auth", "can-i", "list", "secrets"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "no");
    let out = admin.run(&[
        "auth",
        "can-i",
        "update",
        "bundledeployments",
        "--subresource=status",
        "-n",
        "cluster-b",
        &format!("--as={user}"),
    ]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "no");

    // Deleting the ServiceAccount makes its token 401.
    admin.ok(&["delete", "serviceaccount", "agent", "-n", "cluster-a"]);
    eventually("the deleted service account's token is refused", || {
        let out = agent.run(&["get", "bundledeployments"]);
        !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("Unauthorized")
    });
    // Recreating it (new uid) does not revive the old token.
    admin.ok(&["create", "serviceaccount", "agent", "-n", "cluster-a"]);
    std::thread::sleep(Duration::from_millis(300));
    let err = agent.fails(&["get", "bundledeployments"]);
    assert!(err.contains("Unauthorized"), "{err}");
}
