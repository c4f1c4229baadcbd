//! Real kubectl against `fleet server`: service-account tokens behave as on kube-apiserver.
//! `kubectl create token` (also for a namespace's `default` account) prints a token that works as `--token` and in a kubeconfig built the way
//! a user builds one (`kubectl config set-cluster/set-credentials/set-context`); a legacy token
//! Secret gets filled in and its token works; deleting the ServiceAccount (or recreating it),
//! expiry and tampering all end in `error: You must be logged in to the server (Unauthorized)`.
//!
//! Skips (with a message) when kubectl is missing; fails instead under CI=true.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use crate::common::{Server, find_tool};
use fleet_apiserver::satoken::{ServiceAccountRef, SigningKey};
use fleet_apiserver::serviceaccount::DEFAULT_ISSUER;

const UNAUTHORIZED: &str = "error: You must be logged in to the server (Unauthorized)";

struct Kubectl {
    bin: PathBuf,
}

impl Kubectl {
    /// kubectl with `kubeconfig`; extra args follow.
    fn run(&self, kubeconfig: &Path, args: &[&str]) -> Output {
        fleet_testkit::Kubectl::with_bin(&self.bin, kubeconfig).run(args)
    }

    fn ok(&self, kubeconfig: &Path, args: &[&str]) -> String {
        fleet_testkit::Kubectl::with_bin(&self.bin, kubeconfig).ok(args)
    }

    /// Runs a command that must be refused as unauthenticated, exactly as kubectl reports it.
    fn unauthorized(&self, kubeconfig: &Path, args: &[&str]) {
        let out = self.run(kubeconfig, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && stderr.contains(UNAUTHORIZED),
            "kubectl {} should be Unauthorized ({}):\nstdout: {}\nstderr: {stderr}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stdout),
        );
    }
}

/// Builds a token kubeconfig the way a user would: cluster (server URL + CA), credentials
/// (`--token`), context.
fn token_kubeconfig(k: &Kubectl, srv: &Server, path: &Path, token: &str) {
    let ca = srv.dir.join("pki").join("ca.crt");
    let ca = ca.to_str().expect("utf-8 path");
    k.ok(
        path,
        &[
            "config",
            "set-cluster",
            "fleet",
            "--server",
            &srv.url,
            "--certificate-authority",
            ca,
            "--embed-certs=true",
        ],
    );
    k.ok(path, &["config", "set-credentials", "sa", "--token", token]);
    k.ok(
        path,
        &[
            "config",
            "set-context",
            "sa",
            "--cluster",
            "fleet",
            "--user",
            "sa",
        ],
    );
    k.ok(path, &["config", "use-context", "sa"]);
}

fn whoami_json(k: &Kubectl, kc: &Path, token: Option<&str>) -> serde_json::Value {
    let mut args = vec!["auth", "whoami", "-o", "json"];
    let flag;
    if let Some(t) = token {
        flag = format!("--token={t}");
        args.push(&flag);
    }
    serde_json::from_str(&k.ok(kc, &args)).expect("whoami -o json")
}

fn poll(mut f: impl FnMut() -> bool) -> bool {
    for _ in 0..100 {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

#[test]
fn kubectl_service_account_tokens() {
    let dir = tempfile::tempdir().expect("tempdir");
    let srv = Server::start(dir.path());
    let Some(bin) = find_tool("KUBECTL", "kubectl") else {
        return;
    };
    let k = Kubectl { bin };
    let admin = srv.kubeconfig.clone();
    let work = tempfile::tempdir().expect("tempdir");

    k.ok(&admin, &["create", "namespace", "team"]);
    // As on a kube cluster, every namespace has a `default` ServiceAccount to mint tokens for.
    let mut default_token = String::new();
    assert!(
        poll(|| {
            let out = k.run(&admin, &["create", "token", "default", "-n", "team"]);
            default_token = String::from_utf8_lossy(&out.stdout).trim().to_string();
            out.status.success()
        }),
        "kubectl create token default -n team never succeeded"
    );
    let who = whoami_json(&k, &admin, Some(&default_token));
    assert_eq!(
        who["status"]["userInfo"]["username"],
        "system:serviceaccount:team:default"
    );
    k.ok(&admin, &["create", "serviceaccount", "agent", "-n", "team"]);
    // RBAC: the agent may read ConfigMaps in its namespace (the binding names the account, so it
    // also applies to a later account of the same name).
    k.ok(
        &admin,
        &[
            "create",
            "role",
            "cm-reader",
            "--verb=get,list",
            "--resource=configmaps",
            "-n",
            "team",
        ],
    );
    k.ok(
        &admin,
        &[
            "create",
            "rolebinding",
            "agent-cm",
            "--role=cm-reader",
            "--serviceaccount=team:agent",
            "-n",
            "team",
        ],
    );
    k.ok(
        &admin,
        &[
            "create",
            "configmap",
            "cfg",
            "-n",
            "team",
            "--from-literal=a=b",
        ],
    );

    // kubectl create token [--duration]
    let token = k
        .ok(
            &admin,
            &[
                "create",
                "token",
                "agent",
                "-n",
                "team",
                "--duration",
                "15m",
            ],
        )
        .trim()
        .to_string();
    assert_eq!(token.split('.').count(), 3, "{token}");
    let short = k.run(
        &admin,
        &["create", "token", "agent", "-n", "team", "--duration", "1m"],
    );
    assert!(
        String::from_utf8_lossy(&short.stderr)
            .contains("may not specify a duration less than 10 minutes"),
        "{short:?}"
    );
    let missing = k.run(&admin, &["create", "token", "nobody", "-n", "team"]);
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("serviceaccounts \"nobody\" not found"),
        "{missing:?}"
    );

    // The token as --token, and in a kubeconfig built from it and the CA.
    let who = whoami_json(&k, &admin, Some(&token));
    assert_eq!(
        who["status"]["userInfo"]["username"], "system:serviceaccount:team:agent",
        "{who}"
    );
    assert_eq!(
        who["status"]["userInfo"]["groups"],
        serde_json::json!([
            "system:serviceaccounts",
            "system:serviceaccounts:team",
            "system:authenticated"
        ])
    );
    let kc = work.path().join("sa.kubeconfig");
    token_kubeconfig(&k, &srv, &kc, &token);
    let who = whoami_json(&k, &kc, None);
    assert_eq!(
        who["status"]["userInfo"]["username"],
        "system:serviceaccount:team:agent"
    );
    let names = k.ok(&kc, &["get", "configmaps", "-n", "team", "-o", "name"]);
    assert!(names.contains("configmap/cfg"), "{names}");

    // A legacy token Secret gets token, ca.crt and namespace; its token works.
    let secret = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: agent-token\n  namespace: team\n  annotations:\n    kubernetes.io/service-account.name: agent\ntype: kubernetes.io/service-account-token\n";
    let manifest = work.path().join("secret.yaml");
    std::fs::write(&manifest, secret).expect("write manifest");
    k.ok(
        &admin,
        &["apply", "-f", manifest.to_str().expect("utf-8 path")],
    );
    let template = "-o=go-template={{.data.token | base64decode}}";
    let mut legacy = String::new();
    assert!(
        poll(|| {
            let out = k.run(
                &admin,
                &["get", "secret", "agent-token", "-n", "team", template],
            );
            legacy = String::from_utf8_lossy(&out.stdout).trim().to_string();
            out.status.success() && legacy.split('.').count() == 3
        }),
        "the token Secret was never filled: {legacy}"
    );
    let ca_in_secret = k.ok(
        &admin,
        &[
            "get",
            "secret",
            "agent-token",
            "-n",
            "team",
            "-o=go-template={{index .data \"ca.crt\" | base64decode}}",
        ],
    );
    let ca_file = std::fs::read_to_string(srv.dir.join("pki").join("ca.crt")).expect("CA file");
    assert_eq!(ca_in_secret.trim(), ca_file.trim());
    let ns_in_secret = k.ok(
        &admin,
        &[
            "get",
            "secret",
            "agent-token",
            "-n",
            "team",
            "-o=go-template={{.data.namespace | base64decode}}",
        ],
    );
    assert_eq!(ns_in_secret, "team");
    let legacy_kc = work.path().join("legacy.kubeconfig");
    token_kubeconfig(&k, &srv, &legacy_kc, &legacy);
    let names = k.ok(
        &legacy_kc,
        &["get", "configmaps", "-n", "team", "-o", "name"],
    );
    assert!(names.contains("configmap/cfg"), "{names}");

    // An already-expired bound token, signed with the key from the data dir.
    let uid = k.ok(
        &admin,
        &[
            "get",
            "serviceaccount",
            "agent",
            "-n",
            "team",
            "-o=jsonpath={.metadata.uid}",
        ],
    );
    let key = SigningKey::load_or_create(&srv.dir).expect("signing key in the data dir");
    let sa = ServiceAccountRef {
        namespace: "team".into(),
        name: "agent".into(),
        uid: uid.trim().to_string(),
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default();
    let aud = vec![DEFAULT_ISSUER.to_string()];
    let fresh = key
        .sign_bound(DEFAULT_ISSUER, &sa, &aud, now, 3600, None)
        .expect("sign");
    let expired = key
        .sign_bound(DEFAULT_ISSUER, &sa, &aud, now - 7200, 3600, None)
        .expect("sign");
    let flag = |t: &str| format!("--token={t}");
    k.ok(&kc, &["get", "configmaps", "-n", "team", &flag(&fresh)]);
    k.unauthorized(&kc, &["get", "configmaps", "-n", "team", &flag(&expired)]);

    // Malformed, tampered and wrong-audience tokens; the server keeps serving.
    let wrong_aud = k
        .ok(
            &admin,
            &[
                "create",
                "token",
                "agent",
                "-n",
                "team",
                "--audience",
                "https://vault.example",
            ],
        )
        .trim()
        .to_string();
    let mut tampered = token.clone();
    tampered.truncate(token.len() - 4);
    tampered.push_str("AAAA");
    for bad in ["a.b.c", "garbage", &tampered, &wrong_aud] {
        k.unauthorized(&kc, &["get", "configmaps", "-n", "team", &flag(bad)]);
    }
    k.ok(&admin, &["get", "--raw", "/readyz"]);

    // Deleting the ServiceAccount revokes every token, and its token Secret goes.
    k.ok(&admin, &["delete", "serviceaccount", "agent", "-n", "team"]);
    k.unauthorized(&kc, &["get", "configmaps", "-n", "team"]);
    k.unauthorized(&legacy_kc, &["get", "configmaps", "-n", "team"]);
    assert!(
        poll(|| !k
            .run(&admin, &["get", "secret", "agent-token", "-n", "team"])
            .status
            .success()),
        "the token Secret outlived its ServiceAccount"
    );

    // Recreated with the same name: old tokens stay dead, new ones work.
    k.ok(&admin, &["create", "serviceaccount", "agent", "-n", "team"]);
    k.unauthorized(&kc, &["get", "configmaps", "-n", "team"]);
    k.unauthorized(&kc, &["get", "configmaps", "-n", "team", &flag(&fresh)]);
    let renewed = k
        .ok(&admin, &["create", "token", "agent", "-n", "team"])
        .trim()
        .to_string();
    k.ok(&kc, &["get", "configmaps", "-n", "team", &flag(&renewed)]);
    assert_eq!(srv.terminate().code(), Some(0));
}
