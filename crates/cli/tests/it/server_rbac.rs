//! RBAC on the real `fleet server` binary with real kubectl: the admin kubeconfig it writes is
//! allowed everything, a client-certificate user issued by the server's CA (the Fleet agent's
//! service-account name and groups) is refused with kube-apiserver's 403 wording until bound,
//! the binding takes effect, and the policy (default roles included) survives a restart because
//! it lives in the store.
//!
//! Skips (with a message) when kubectl is missing; fails instead under CI=true.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use crate::common::{Server, find_tool};
use fleet_apiserver::pki::Pki;

fn kubectl(bin: &Path, kubeconfig: &Path, args: &[&str]) -> Output {
    fleet_testkit::Kubectl::with_bin(bin, kubeconfig).run(args)
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A kubeconfig for a client certificate issued by the CA in the server's data directory.
fn user_kubeconfig(dir: &Path, url: &str, user: &str, groups: &[&str]) -> PathBuf {
    let pki = Pki::load_or_create(dir, &["127.0.0.1".to_string()]).expect("server PKI");
    let cert = pki.issue_client_cert(user, groups).expect("client cert");
    let base = dir.join(user.replace(':', "_"));
    let (ca, crt, key) = (
        base.with_extension("ca.pem"),
        base.with_extension("crt"),
        base.with_extension("key"),
    );
    std::fs::write(&ca, pki.ca_cert_pem()).expect("write CA");
    std::fs::write(&crt, &cert.cert_pem).expect("write cert");
    std::fs::write(&key, &cert.key_pem).expect("write key");
    let path = base.with_extension("kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {url}\n    certificate-authority: {}\nusers:\n- name: u\n  user:\n    client-certificate: {}\n    client-key: {}\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\n    namespace: default\ncurrent-context: x\n",
            ca.display(),
            crt.display(),
            key.display()
        ),
    )
    .expect("write kubeconfig");
    path
}

fn can_i(bin: &Path, kubeconfig: &Path, args: &[&str]) -> bool {
    let mut all = vec!["auth", "can-i"];
    all.extend_from_slice(args);
    let o = kubectl(bin, kubeconfig, &all);
    let (out, err) = text(&o);
    match (o.status.code(), out.trim()) {
        (Some(0), "yes") => true,
        (Some(1), s) if s.starts_with("no") => false,
        _ => panic!("kubectl {all:?}: {:?} {out:?} {err:?}", o.status),
    }
}

#[test]
fn fleet_server_enforces_rbac() {
    let Some(bin) = find_tool("KUBECTL", "kubectl") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let srv = Server::start(dir.path());
    let admin = srv.kubeconfig.clone();
    let sa = "system:serviceaccount:default:agent";
    let agent = user_kubeconfig(
        dir.path(),
        &srv.url,
        sa,
        &["system:serviceaccounts", "system:serviceaccounts:default"],
    );

    assert!(can_i(&bin, &admin, &["*", "*"]));
    assert!(!can_i(&bin, &agent, &["list", "configmaps"]));
    let o = kubectl(&bin, &agent, &["get", "configmaps"]);
    let (_, err) = text(&o);
    assert!(!o.status.success());
    assert!(
        err.contains(&format!("Error from server (Forbidden): configmaps is forbidden: User \"{sa}\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\"")),
        "{err}"
    );
    // The default ClusterRoles exist and can be bound.
    let o = kubectl(
        &bin,
        &admin,
        &[
            "create",
            "rolebinding",
            "agent-view",
            "--clusterrole=view",
            "--serviceaccount=default:agent",
        ],
    );
    assert!(o.status.success(), "{:?}", text(&o));
    let deadline = Instant::now() + Duration::from_secs(5);
    while !can_i(&bin, &agent, &["list", "configmaps"]) {
        assert!(Instant::now() < deadline, "binding never took effect");
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = kubectl(&bin, &agent, &["get", "configmaps"]);
    assert!(o.status.success(), "{:?}", text(&o));
    assert!(!can_i(&bin, &agent, &["list", "secrets"]));
    assert!(!can_i(
        &bin,
        &agent,
        &["list", "configmaps", "-n", "kube-system"]
    ));

    // The policy is in the store: after a restart it is loaded before the first request.
    let status = srv.terminate();
    assert!(status.success(), "{status:?}");
    let srv = Server::start(dir.path());
    let agent = user_kubeconfig(
        dir.path(),
        &srv.url,
        sa,
        &["system:serviceaccounts", "system:serviceaccounts:default"],
    );
    assert!(can_i(&bin, &agent, &["list", "configmaps"]));
    assert!(!can_i(&bin, &agent, &["list", "secrets"]));
    let roles = kubectl(
        &bin,
        &srv.kubeconfig,
        &["get", "clusterroles", "-o", "name"],
    );
    let (out, _) = text(&roles);
    for r in [
        "cluster-admin",
        "admin",
        "edit",
        "view",
        "system:discovery",
        "system:basic-user",
        "system:public-info-viewer",
    ] {
        assert!(
            out.lines()
                .any(|l| l == format!("clusterrole.rbac.authorization.k8s.io/{r}")),
            "{r} missing:\n{out}"
        );
    }
    let status = srv.terminate();
    assert!(status.success(), "{status:?}");
}
