//! RBAC authorization end to end with real kubectl over TLS: an in-process server started by
//! `Server::start` (the authentication and TLS layers `fleet server` uses), an admin kubeconfig and per-user client
//! certificates issued by the server's CA. Covers `kubectl auth can-i` (yes/no exit codes, `--as`,
//! `--as-group`, `--list`), kube-apiserver-worded 403s, escalation prevention, impersonation, and
//! the Fleet agent shape (one custom resource type in one namespace plus its status).
//!
//! Bindings created by one kubectl call are seen by the next after the policy's watch catches up
//! (milliseconds), so checks after a grant retry briefly, as against kube-apiserver.
//!
//! Skips (with a message) when kubectl is missing; fails instead under CI=true.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use base64::Engine;
use fleet_apiserver::pki::CertAndKey;
use fleet_apiserver::server::{Server, ServerConfig, ServerHandle};

use crate::support::kubectl;
use kubectl::{have_kubectl, kubectl_bin};

struct Cluster {
    srv: ServerHandle,
    dir: tempfile::TempDir,
    bin: PathBuf,
}

/// kubectl as one user.
struct Kube {
    bin: PathBuf,
    kubeconfig: PathBuf,
    cache: PathBuf,
    dir: PathBuf,
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Kube {
    async fn run(&self, args: &[&str]) -> Out {
        self.run_stdin(args, None).await
    }

    async fn run_stdin(&self, args: &[&str], stdin: Option<&str>) -> Out {
        use tokio::io::AsyncWriteExt;
        let mut cmd = tokio::process::Command::new(&self.bin);
        cmd.env("KUBECONFIG", &self.kubeconfig)
            .env_remove("KUBERNETES_SERVICE_HOST")
            .arg("--cache-dir")
            .arg(&self.cache)
            .arg("--request-timeout=30s")
            .args(args)
            .current_dir(&self.dir)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn().expect("spawn kubectl");
        let mut input = child.stdin.take().expect("stdin");
        if let Some(s) = stdin {
            input.write_all(s.as_bytes()).await.expect("write stdin");
        }
        drop(input);
        let out = child.wait_with_output().await.expect("kubectl output");
        Out {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    async fn ok(&self, args: &[&str]) -> String {
        let o = self.run(args).await;
        assert_eq!(
            o.code, 0,
            "kubectl {args:?} failed:\nstdout: {}\nstderr: {}",
            o.stdout, o.stderr
        );
        o.stdout
    }

    /// `kubectl create -f -` with `yaml`.
    async fn create(&self, yaml: &str) -> Out {
        self.run_stdin(&["create", "-f", "-"], Some(yaml)).await
    }

    async fn create_ok(&self, yaml: &str) {
        let o = self.create(yaml).await;
        assert_eq!(
            o.code, 0,
            "create failed:\n{yaml}\nstdout: {}\nstderr: {}",
            o.stdout, o.stderr
        );
    }

    /// Expects a refusal whose stderr contains `want`.
    async fn refused(&self, args: &[&str], want: &str) {
        let o = self.run(args).await;
        assert_ne!(
            o.code, 0,
            "kubectl {args:?} unexpectedly succeeded: {}",
            o.stdout
        );
        assert!(
            o.stderr.contains(want),
            "kubectl {args:?}: stderr lacks {want:?}:\n{}",
            o.stderr
        );
    }

    /// `kubectl auth can-i ARGS`: true for "yes" (exit 0), false for "no" (exit 1).
    async fn can_i(&self, args: &[&str]) -> bool {
        let mut all = vec!["auth", "can-i"];
        all.extend_from_slice(args);
        let o = self.run(&all).await;
        match (o.code, o.stdout.trim()) {
            (0, "yes") => true,
            (1, s) if s.starts_with("no") => false,
            _ => panic!(
                "kubectl {all:?}: exit {} stdout {:?} stderr {:?}",
                o.code, o.stdout, o.stderr
            ),
        }
    }

    /// Retries `can_i` until it answers `want` (the policy follows writes within milliseconds;
    /// kube-apiserver clients retry the same way after a grant).
    async fn eventually_can_i(&self, args: &[&str], want: bool) {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if self.can_i(args).await == want {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "kubectl auth can-i {args:?} never answered {want}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s.as_bytes())
}

impl Cluster {
    async fn start() -> Cluster {
        let bin = kubectl_bin().expect("checked by caller");
        let srv = Server::start(ServerConfig::in_memory())
            .await
            .expect("server");
        Cluster {
            srv,
            dir: tempfile::tempdir().expect("tempdir"),
            bin,
        }
    }

    fn kube(&self, file: &str, cert: &CertAndKey) -> Kube {
        let dir: &Path = self.dir.path();
        let kubeconfig = dir.join(file);
        let cfg = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:{}\n    certificate-authority-data: {}\nusers:\n- name: u\n  user:\n    client-certificate-data: {}\n    client-key-data: {}\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\n    namespace: default\ncurrent-context: x\n",
            self.srv.addr().port(),
            b64(self.srv.ca_pem()),
            b64(&cert.cert_pem),
            b64(&cert.key_pem),
        );
        std::fs::write(&kubeconfig, cfg).expect("kubeconfig");
        Kube {
            bin: self.bin.clone(),
            kubeconfig,
            cache: dir.join(format!("cache-{file}")),
            dir: dir.to_path_buf(),
        }
    }

    fn admin(&self) -> Kube {
        self.kube("admin.kubeconfig", self.srv.pki().admin())
    }

    /// kubectl as a client-certificate user (CN=`name`, O=each group).
    fn user(&self, name: &str, groups: &[&str]) -> Kube {
        let cert = self
            .srv
            .pki()
            .issue_client_cert(name, groups)
            .expect("client cert");
        let file = format!("{}.kubeconfig", name.replace(':', "_"));
        self.kube(&file, &cert)
    }
}

fn role_binding(ns: &str, name: &str, role_kind: &str, role: &str, subject: &str) -> String {
    format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: {name}\n  namespace: {ns}\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: {role_kind}\n  name: {role}\nsubjects:\n{subject}"
    )
}

fn user_subject(name: &str) -> String {
    format!("- apiGroup: rbac.authorization.k8s.io\n  kind: User\n  name: {name}\n")
}

fn group_subject(name: &str) -> String {
    format!("- apiGroup: rbac.authorization.k8s.io\n  kind: Group\n  name: {name}\n")
}

fn namespaces(admin_yaml: &[&str]) -> String {
    admin_yaml
        .iter()
        .map(|n| format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {n}\n"))
        .collect::<Vec<_>>()
        .join("---\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn can_i_for_admin_bound_and_unbound_users() {
    if !have_kubectl() {
        return;
    }
    let c = Cluster::start().await;
    let admin = c.admin();
    admin.create_ok(&namespaces(&["a", "b"])).await;

    // The admin (system:masters) may do anything.
    assert!(admin.can_i(&["create", "pods", "-n", "a"]).await);
    assert!(admin.can_i(&["*", "*"]).await);
    assert!(admin.can_i(&["get", "/healthz"]).await);

    // An unbound user may do nothing but discovery and self reviews.
    let bob = c.user("bob", &[]);
    assert!(!bob.can_i(&["list", "pods", "-n", "a"]).await);
    assert!(!bob.can_i(&["create", "deployments.apps", "-n", "a"]).await);
    assert!(bob.can_i(&["get", "/api"]).await);
    assert!(bob.can_i(&["get", "/version"]).await);
    assert!(!bob.can_i(&["get", "/metrics"]).await);
    assert!(
        bob.can_i(&["create", "selfsubjectaccessreviews.authorization.k8s.io"])
            .await
    );

    // Bound to `view` in a: reads there, nowhere else, and no writes.
    admin
        .create_ok(&role_binding(
            "a",
            "bob-view",
            "ClusterRole",
            "view",
            &user_subject("bob"),
        ))
        .await;
    bob.eventually_can_i(&["list", "pods", "-n", "a"], true)
        .await;
    assert!(bob.can_i(&["get", "deployments.apps", "-n", "a"]).await);
    assert!(bob.can_i(&["watch", "configmaps", "-n", "a"]).await);
    assert!(!bob.can_i(&["list", "pods", "-n", "b"]).await);
    assert!(!bob.can_i(&["list", "pods", "--all-namespaces"]).await);
    assert!(!bob.can_i(&["create", "pods", "-n", "a"]).await);
    assert!(!bob.can_i(&["get", "secrets", "-n", "a"]).await);
    // kubectl get works where the binding allows it.
    bob.ok(&["get", "configmaps", "-n", "a"]).await;

    // Removing the binding revokes access.
    admin
        .ok(&["delete", "rolebinding", "bob-view", "-n", "a"])
        .await;
    bob.eventually_can_i(&["list", "pods", "-n", "a"], false)
        .await;

    // A group binding applies to members (the O of their certificate).
    admin
        .create_ok(&role_binding(
            "b",
            "team-edit",
            "ClusterRole",
            "edit",
            &group_subject("team"),
        ))
        .await;
    let tess = c.user("tess", &["team"]);
    tess.eventually_can_i(&["create", "deployments.apps", "-n", "b"], true)
        .await;
    assert!(!tess.can_i(&["create", "deployments.apps", "-n", "a"]).await);
    // `edit` does not include RBAC.
    assert!(
        !tess
            .can_i(&[
                "create",
                "rolebindings.rbac.authorization.k8s.io",
                "-n",
                "b"
            ])
            .await
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn can_i_as_and_list() {
    if !have_kubectl() {
        return;
    }
    let c = Cluster::start().await;
    let admin = c.admin();
    admin.create_ok(&namespaces(&["a"])).await;
    admin
        .create_ok(&role_binding(
            "a",
            "alice-view",
            "ClusterRole",
            "view",
            &user_subject("alice"),
        ))
        .await;
    admin
        .create_ok(&role_binding(
            "a",
            "ops-edit",
            "ClusterRole",
            "edit",
            &group_subject("ops"),
        ))
        .await;

    // The admin may impersonate anyone: --as and --as-group answer for that user.
    admin
        .eventually_can_i(&["list", "pods", "-n", "a", "--as", "alice"], true)
        .await;
    assert!(
        !admin
            .can_i(&["create", "pods", "-n", "a", "--as", "alice"])
            .await
    );
    assert!(
        !admin
            .can_i(&["list", "pods", "-n", "a", "--as", "mallory"])
            .await
    );
    admin
        .eventually_can_i(
            &[
                "create",
                "pods",
                "-n",
                "a",
                "--as",
                "mallory",
                "--as-group",
                "ops",
            ],
            true,
        )
        .await;
    assert!(
        !admin
            .can_i(&[
                "create",
                "pods",
                "-n",
                "a",
                "--as",
                "mallory",
                "--as-group",
                "dev"
            ])
            .await
    );

    // --list prints the rules alice holds in the namespace, one row per resource.
    let out = admin
        .ok(&["auth", "can-i", "--list", "-n", "a", "--as", "alice"])
        .await;
    let header = out.lines().next().unwrap_or("");
    for col in ["Resources", "Non-Resource URLs", "Resource Names", "Verbs"] {
        assert!(header.contains(col), "header {header:?}");
    }
    let row = |name: &str| {
        out.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .map(str::to_string)
    };
    let pods = row("pods").unwrap_or_else(|| panic!("no pods row:\n{out}"));
    assert!(pods.contains("[get list watch]"), "{pods}");
    let ssar = row("selfsubjectaccessreviews.authorization.k8s.io")
        .unwrap_or_else(|| panic!("no selfsubjectaccessreviews row:\n{out}"));
    assert!(ssar.contains("[create]"), "{ssar}");
    assert!(
        out.lines()
            .any(|l| l.contains("[/api/*]") && l.contains("[get]")),
        "no discovery URL row:\n{out}"
    );
    assert!(
        row("secrets").is_none(),
        "view must not list secrets:\n{out}"
    );

    // The user's own --list, through a client certificate.
    let alice = c.user("alice", &[]);
    let own = alice.ok(&["auth", "can-i", "--list", "-n", "a"]).await;
    assert!(
        own.lines()
            .any(|l| l.starts_with("pods ") && l.contains("[get list watch]")),
        "{own}"
    );
    // Elsewhere she holds only the cluster-wide defaults.
    let other = alice
        .ok(&["auth", "can-i", "--list", "-n", "default"])
        .await;
    assert!(!other.lines().any(|l| l.starts_with("pods ")), "{other}");

    // The review endpoints are discoverable as create-only resources.
    let res = admin
        .ok(&[
            "api-resources",
            "--api-group=authorization.k8s.io",
            "-o",
            "wide",
        ])
        .await;
    for r in [
        "selfsubjectaccessreviews",
        "subjectaccessreviews",
        "localsubjectaccessreviews",
        "selfsubjectrulesreviews",
    ] {
        let line = res
            .lines()
            .find(|l| l.split_whitespace().next() == Some(r))
            .unwrap_or_else(|| panic!("{r} not in api-resources:\n{res}"));
        // Wide output's VERBS column: `create` and nothing else.
        assert_eq!(line.split_whitespace().last(), Some("create"), "{line}");
        assert!(!line.contains("get") && !line.contains("list"), "{line}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forbidden_bodies_and_impersonation() {
    if !have_kubectl() {
        return;
    }
    let c = Cluster::start().await;
    let admin = c.admin();
    admin.create_ok(&namespaces(&["a"])).await;
    let bob = c.user("bob", &[]);

    bob.refused(
        &["get", "secrets", "-n", "a"],
        "Error from server (Forbidden): secrets is forbidden: User \"bob\" cannot list resource \"secrets\" in API group \"\" in the namespace \"a\"",
    )
    .await;
    bob.refused(
        &["get", "secret", "s1", "-n", "a"],
        "secrets \"s1\" is forbidden: User \"bob\" cannot get resource \"secrets\" in API group \"\" in the namespace \"a\"",
    )
    .await;
    bob.refused(
        &["get", "namespaces"],
        "namespaces is forbidden: User \"bob\" cannot list resource \"namespaces\" in API group \"\" at the cluster scope",
    )
    .await;
    bob.refused(
        &["get", "--raw", "/metrics"],
        "forbidden: User \"bob\" cannot get path \"/metrics\"",
    )
    .await;

    // Impersonation needs the `impersonate` verb on the user, each group, ...
    bob.refused(
        &["get", "pods", "-n", "a", "--as", "alice"],
        "users \"alice\" is forbidden: User \"bob\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope",
    )
    .await;
    bob.refused(
        &["get", "pods", "-n", "a", "--as", "system:serviceaccount:a:agent"],
        "serviceaccounts \"agent\" is forbidden: User \"bob\" cannot impersonate resource \"serviceaccounts\" in API group \"\" in the namespace \"a\"",
    )
    .await;
    admin
        .create_ok(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: impersonate-alice\nrules:\n- apiGroups: [\"\"]\n  resources: [users]\n  verbs: [impersonate]\n  resourceNames: [alice]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: bob-impersonates-alice\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: impersonate-alice\nsubjects:\n- apiGroup: rbac.authorization.k8s.io\n  kind: User\n  name: bob\n",
        )
        .await;
    admin
        .create_ok(&role_binding(
            "a",
            "alice-view",
            "ClusterRole",
            "view",
            &user_subject("alice"),
        ))
        .await;
    // Now bob acts as alice, with alice's permissions (and not his own lack of them).
    bob.eventually_can_i(&["list", "pods", "-n", "a", "--as", "alice"], true)
        .await;
    bob.ok(&["get", "pods", "-n", "a", "--as", "alice"]).await;
    bob.refused(
        &["get", "secrets", "-n", "a", "--as", "alice"],
        "secrets is forbidden: User \"alice\" cannot list resource \"secrets\" in API group \"\" in the namespace \"a\"",
    )
    .await;
    // ... but not as anyone else, nor with groups he may not impersonate.
    bob.refused(
        &["get", "pods", "-n", "a", "--as", "carol"],
        "users \"carol\" is forbidden: User \"bob\" cannot impersonate resource \"users\"",
    )
    .await;
    bob.refused(
        &["get", "pods", "-n", "a", "--as", "alice", "--as-group", "system:masters"],
        "groups \"system:masters\" is forbidden: User \"bob\" cannot impersonate resource \"groups\" in API group \"\" at the cluster scope",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn escalation_needs_escalate_or_bind() {
    if !have_kubectl() {
        return;
    }
    let c = Cluster::start().await;
    let admin = c.admin();
    admin.create_ok(&namespaces(&["a"])).await;
    admin
        .create_ok(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: rbac-writer\n  namespace: a\nrules:\n- apiGroups: [rbac.authorization.k8s.io]\n  resources: [roles, rolebindings]\n  verbs: [create, get, list, update, patch, delete]\n- apiGroups: [\"\"]\n  resources: [configmaps]\n  verbs: [get, list]\n",
        )
        .await;
    admin
        .create_ok(&role_binding(
            "a",
            "carol-rbac",
            "Role",
            "rbac-writer",
            &user_subject("carol"),
        ))
        .await;
    let carol = c.user("carol", &[]);
    carol
        .eventually_can_i(
            &["create", "roles.rbac.authorization.k8s.io", "-n", "a"],
            true,
        )
        .await;

    // Granting what she holds is fine.
    carol
        .create_ok("apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: cm-reader\n  namespace: a\nrules:\n- apiGroups: [\"\"]\n  resources: [configmaps]\n  verbs: [get]\n")
        .await;
    // A malformed role is 422 before any permission question.
    let o = carol
        .create("apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: bad\n  namespace: a\nrules:\n- apiGroups: [\"\"]\n  resources: [configmaps]\n")
        .await;
    assert_ne!(o.code, 0);
    assert!(
        o.stderr.contains("is invalid") && o.stderr.contains("rules[0].verbs"),
        "{}",
        o.stderr
    );
    // Granting more than she holds is refused, naming what is missing.
    let secret_reader = "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: secret-reader\n  namespace: a\nrules:\n- apiGroups: [\"\"]\n  resources: [secrets]\n  verbs: [get]\n";
    let o = carol.create(secret_reader).await;
    assert_ne!(o.code, 0);
    assert!(
        o.stderr.contains("Error from server (Forbidden)")
            && o.stderr.contains(
                "roles.rbac.authorization.k8s.io \"secret-reader\" is forbidden: user \"carol\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held"
            )
            && o.stderr.contains("secrets"),
        "{}",
        o.stderr
    );
    // Binding a role with more than she holds, likewise.
    let bind_admin = role_binding(
        "a",
        "dave-admin",
        "ClusterRole",
        "admin",
        &user_subject("dave"),
    );
    let o = carol.create(&bind_admin).await;
    assert_ne!(o.code, 0);
    assert!(
        o.stderr
            .contains("rolebindings.rbac.authorization.k8s.io \"dave-admin\" is forbidden")
            && o.stderr
                .contains("is attempting to grant RBAC permissions not currently held"),
        "{}",
        o.stderr
    );
    // Binding a role she fully holds is fine.
    carol
        .create_ok(&role_binding(
            "a",
            "dave-cm",
            "Role",
            "cm-reader",
            &user_subject("dave"),
        ))
        .await;

    // With `escalate` on roles she may write any role ...
    admin
        .create_ok("apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: escalator\n  namespace: a\nrules:\n- apiGroups: [rbac.authorization.k8s.io]\n  resources: [roles]\n  verbs: [escalate]\n- apiGroups: [rbac.authorization.k8s.io]\n  resources: [clusterroles]\n  verbs: [bind]\n  resourceNames: [admin]\n")
        .await;
    admin
        .create_ok(&role_binding(
            "a",
            "carol-escalator",
            "Role",
            "escalator",
            &user_subject("carol"),
        ))
        .await;
    carol
        .eventually_can_i(
            &["escalate", "roles.rbac.authorization.k8s.io", "-n", "a"],
            true,
        )
        .await;
    carol.create_ok(secret_reader).await;
    // ... and with `bind` on the `admin` ClusterRole she may bind it (only it).
    carol.create_ok(&bind_admin).await;
    let o = carol
        .create(&role_binding(
            "a",
            "dave-edit",
            "ClusterRole",
            "edit",
            &user_subject("dave"),
        ))
        .await;
    assert_ne!(
        o.code, 0,
        "binding edit without holding it or bind on it must fail"
    );
    assert!(o.stderr.contains("not currently held"), "{}", o.stderr);
    // Still no cluster-wide RBAC writes.
    let o = carol
        .create("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: x\nrules: []\n")
        .await;
    assert!(
        o.stderr.contains("clusterroles.rbac.authorization.k8s.io is forbidden: User \"carol\" cannot create resource \"clusterroles\" in API group \"rbac.authorization.k8s.io\" at the cluster scope"),
        "{}",
        o.stderr
    );
}

const CRD: &str = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: bundledeployments.fleet.cattle.io\nspec:\n  group: fleet.cattle.io\n  names:\n    kind: BundleDeployment\n    plural: bundledeployments\n    singular: bundledeployment\n    listKind: BundleDeploymentList\n  scope: Namespaced\n  versions:\n  - name: v1alpha1\n    served: true\n    storage: true\n    subresources:\n      status: {}\n    schema:\n      openAPIV3Schema:\n        type: object\n        x-kubernetes-preserve-unknown-fields: true\n";

fn bundle_deployment(ns: &str) -> String {
    format!(
        "apiVersion: fleet.cattle.io/v1alpha1\nkind: BundleDeployment\nmetadata:\n  name: bd\n  namespace: {ns}\nspec:\n  deploymentID: one\n"
    )
}

/// The Fleet agent's shape: a service account (here a client-certificate user with the service
/// account's name and groups) bound to read one custom resource type in its namespace and update
/// its status, and nothing else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleet_agent_shape() {
    if !have_kubectl() {
        return;
    }
    let c = Cluster::start().await;
    let admin = c.admin();
    admin.create_ok(&namespaces(&["a", "b"])).await;
    admin.create_ok(CRD).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while admin
        .run(&["get", "bundledeployments", "-n", "a"])
        .await
        .code
        != 0
    {
        assert!(Instant::now() < deadline, "CRD never served");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    admin.create_ok(&bundle_deployment("a")).await;
    admin.create_ok(&bundle_deployment("b")).await;
    admin
        .create_ok("apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  namespace: a\nstringData:\n  k: v\n")
        .await;
    admin
        .create_ok(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: agent\n  namespace: a\nrules:\n- apiGroups: [fleet.cattle.io]\n  resources: [bundledeployments]\n  verbs: [get, list, watch]\n- apiGroups: [fleet.cattle.io]\n  resources: [bundledeployments/status]\n  verbs: [update, patch]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: agent\n  namespace: a\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: agent\nsubjects:\n- kind: ServiceAccount\n  name: agent\n  namespace: a\n",
        )
        .await;
    let sa = "system:serviceaccount:a:agent";
    let agent = c.user(sa, &["system:serviceaccounts", "system:serviceaccounts:a"]);
    agent
        .eventually_can_i(
            &["list", "bundledeployments.fleet.cattle.io", "-n", "a"],
            true,
        )
        .await;

    // Allowed: read the type in its namespace (get, list, watch) and write its status.
    assert!(
        agent
            .ok(&["get", "bundledeployments", "-n", "a"])
            .await
            .contains("bd")
    );
    agent
        .ok(&["get", "--raw", "/apis/fleet.cattle.io/v1alpha1/namespaces/a/bundledeployments?watch=1&timeoutSeconds=1"])
        .await;
    // The agent reads the object and writes back its status (PUT on `/status`; `kubectl patch
    // --subresource` would first GET `/status`, which this role does not grant, as on kube).
    let mut bd: serde_json::Value = serde_json::from_str(
        &agent
            .ok(&["get", "bundledeployment", "bd", "-n", "a", "-o", "json"])
            .await,
    )
    .expect("json");
    bd["status"] = serde_json::json!({"ready": true});
    bd["spec"]["deploymentID"] = serde_json::json!("ignored-by-status");
    let o = agent
        .run_stdin(
            &["replace", "--subresource=status", "-f", "-"],
            Some(&bd.to_string()),
        )
        .await;
    assert_eq!(o.code, 0, "status update failed: {}", o.stderr);
    let status = admin
        .ok(&[
            "get",
            "bundledeployment",
            "bd",
            "-n",
            "a",
            "-o",
            "jsonpath={.status.ready}",
        ])
        .await;
    assert_eq!(status.trim(), "true");
    assert!(
        agent
            .can_i(&[
                "update",
                "bundledeployments.fleet.cattle.io",
                "--subresource=status",
                "-n",
                "a"
            ])
            .await
    );

    // 403 on every other namespace ...
    let who = format!("User \"{sa}\"");
    agent
        .refused(
            &["get", "bundledeployments", "-n", "b"],
            &format!("bundledeployments.fleet.cattle.io is forbidden: {who} cannot list resource \"bundledeployments\" in API group \"fleet.cattle.io\" in the namespace \"b\""),
        )
        .await;
    agent
        .refused(
            &["get", "bundledeployment", "bd", "-n", "b"],
            &format!("bundledeployments.fleet.cattle.io \"bd\" is forbidden: {who} cannot get resource \"bundledeployments\""),
        )
        .await;
    agent
        .refused(
            &["get", "bundledeployments", "--all-namespaces"],
            &format!("{who} cannot list resource \"bundledeployments\" in API group \"fleet.cattle.io\" at the cluster scope"),
        )
        .await;
    agent
        .refused(
            &["get", "--raw", "/apis/fleet.cattle.io/v1alpha1/namespaces/b/bundledeployments?watch=1&timeoutSeconds=1"],
            "Forbidden",
        )
        .await;
    let mut other: serde_json::Value = serde_json::from_str(
        &admin
            .ok(&["get", "bundledeployment", "bd", "-n", "b", "-o", "json"])
            .await,
    )
    .expect("json");
    other["status"] = serde_json::json!({"ready": true});
    let o = agent
        .run_stdin(
            &["replace", "--subresource=status", "-f", "-"],
            Some(&other.to_string()),
        )
        .await;
    assert!(
        o.code != 0 && o.stderr.contains(&format!("bundledeployments.fleet.cattle.io \"bd\" is forbidden: {who} cannot update resource \"bundledeployments/status\" in API group \"fleet.cattle.io\" in the namespace \"b\"")),
        "{}",
        o.stderr
    );
    // ... on Secrets (even in its own namespace) ...
    agent
        .refused(
            &["get", "secret", "creds", "-n", "a"],
            &format!("secrets \"creds\" is forbidden: {who} cannot get resource \"secrets\" in API group \"\" in the namespace \"a\""),
        )
        .await;
    agent
        .refused(
            &["get", "secrets", "-n", "a"],
            &format!("{who} cannot list resource \"secrets\""),
        )
        .await;
    // ... and on spec updates, deletes and creates.
    agent
        .refused(
            &["patch", "bundledeployment", "bd", "-n", "a", "--type=merge", "-p", "{\"spec\":{\"deploymentID\":\"two\"}}"],
            &format!("bundledeployments.fleet.cattle.io \"bd\" is forbidden: {who} cannot patch resource \"bundledeployments\" in API group \"fleet.cattle.io\" in the namespace \"a\""),
        )
        .await;
    agent
        .refused(
            &["delete", "bundledeployment", "bd", "-n", "a"],
            &format!("{who} cannot delete resource \"bundledeployments\""),
        )
        .await;
    let o = agent
        .create(&bundle_deployment("a").replace("name: bd", "name: bd2"))
        .await;
    assert!(
        o.stderr.contains(&format!(
            "{who} cannot create resource \"bundledeployments\""
        )),
        "{}",
        o.stderr
    );
    let spec = admin
        .ok(&[
            "get",
            "bundledeployment",
            "bd",
            "-n",
            "a",
            "-o",
            "jsonpath={.spec.deploymentID}",
        ])
        .await;
    assert_eq!(spec.trim(), "one");
}
