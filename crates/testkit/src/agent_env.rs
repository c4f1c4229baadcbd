//! A manager and a downstream cluster for agent tests: two `fleet server` processes, the Fleet
//! CRDs on the manager, a Cluster with its namespace, a ServiceAccount there holding exactly the
//! least-privilege RBAC upstream grants an agent, and the `fleet-agent` Secret downstream that
//! carries a kubeconfig for that ServiceAccount. Also the manager's side of a deployment, done by
//! hand until the controllers exist: Bundles from `fleet apply -o -`, BundleDeployments from
//! `fleet target`, Contents built from the Bundle's resources.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use base64::Engine;
use serde_json::{Value, json};

use crate::{FleetProcess, FleetServer, Kubectl};

/// Workspace of the test Cluster.
pub const WORKSPACE: &str = "fleet-default";
/// Name of the test Cluster.
pub const CLUSTER: &str = "c1";
/// Namespace holding the test Cluster's BundleDeployments.
pub const CLUSTER_NAMESPACE: &str = "cluster-fleet-default-c1";
/// The agent's system namespace downstream.
pub const SYSTEM_NAMESPACE: &str = "cattle-fleet-system";

/// The two clusters, their kubectls and the agent's credential.
pub struct AgentEnv {
    /// The `fleet` binary under test.
    pub bin: PathBuf,
    /// Scratch directory.
    pub dir: PathBuf,
    /// The manager.
    pub manager: FleetServer,
    /// The downstream cluster.
    pub downstream: FleetServer,
    /// kubectl as admin on the manager.
    pub up: Kubectl,
    /// kubectl as admin downstream.
    pub down: Kubectl,
    /// Kubeconfig of the agent's ServiceAccount on the manager (what the Secret holds).
    pub agent_kubeconfig: PathBuf,
}

/// The ClusterRole `fleet-bundle-deployment` the agent's account is bound to, as YAML; without
/// `status`, the agent may read BundleDeployments but not write their status (a test takes that
/// right away and gives it back).
pub fn bundle_deployment_role(status: bool) -> String {
    let status_rule = if status {
        "- apiGroups: [fleet.cattle.io]\n  resources: [bundledeployments/status]\n  verbs: [update, patch]\n"
    } else {
        ""
    };
    format!(
        r#"apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {{name: fleet-bundle-deployment}}
rules:
- apiGroups: [fleet.cattle.io]
  resources: [bundledeployments]
  verbs: [get, list, watch]
{status_rule}- apiGroups: [""]
  resources: [secrets, configmaps]
  verbs: [get]
"#
    )
}

fn rbac_yaml() -> String {
    let role = bundle_deployment_role(true);
    format!(
        r#"apiVersion: v1
kind: Namespace
metadata: {{name: {WORKSPACE}}}
---
apiVersion: v1
kind: Namespace
metadata: {{name: {CLUSTER_NAMESPACE}}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {{name: agent, namespace: {CLUSTER_NAMESPACE}}}
---
{role}---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {{name: fleet-content}}
rules:
- apiGroups: [fleet.cattle.io]
  resources: [contents]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: agent, namespace: {CLUSTER_NAMESPACE}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: fleet-bundle-deployment}}
subjects: [{{kind: ServiceAccount, name: agent, namespace: {CLUSTER_NAMESPACE}}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: agent-content}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: fleet-content}}
subjects: [{{kind: ServiceAccount, name: agent, namespace: {CLUSTER_NAMESPACE}}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: agent-cluster-status, namespace: {WORKSPACE}}}
rules:
- apiGroups: [fleet.cattle.io]
  resources: [clusters/status]
  verbs: [patch]
  resourceNames: [{CLUSTER}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: agent-cluster-status, namespace: {WORKSPACE}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: agent-cluster-status}}
subjects: [{{kind: ServiceAccount, name: agent, namespace: {CLUSTER_NAMESPACE}}}]
---
apiVersion: fleet.cattle.io/v1alpha1
kind: Cluster
metadata:
  name: {CLUSTER}
  namespace: {WORKSPACE}
  labels: {{env: test}}
spec: {{}}
"#
    )
}

/// Runs `fleet args...` and returns stdout, panicking with stderr on failure.
pub fn fleet(bin: &Path, cwd: &Path, args: &[&str]) -> String {
    let out = Command::new(bin)
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("running fleet {args:?}: {e}"));
    assert!(
        out.status.success(),
        "fleet {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

impl AgentEnv {
    /// Starts both servers and prepares the manager, the Cluster and the agent credential.
    /// `downstream_extra` are extra `fleet server` flags for the downstream cluster. None when
    /// kubectl is missing outside CI.
    pub fn start(bin: &Path, dir: &Path, downstream_extra: &[&str]) -> Option<AgentEnv> {
        let manager = FleetServer::start(bin, &dir.join("manager"), &["--no-controllers"]);
        let mut extra = vec!["--no-controllers"];
        extra.extend_from_slice(downstream_extra);
        let downstream = FleetServer::start(bin, &dir.join("downstream"), &extra);
        let up = manager.kubectl()?;
        let down = downstream.kubectl()?;
        up.apply(&fleet(bin, dir, &["install", "crds"]));
        up.ok(&[
            "wait",
            "--for=condition=Established",
            "crd/bundledeployments.fleet.cattle.io",
            "crd/contents.fleet.cattle.io",
            "crd/clusters.fleet.cattle.io",
        ]);
        up.apply(&rbac_yaml());
        let token = up
            .ok(&[
                "create",
                "token",
                "agent",
                "-n",
                CLUSTER_NAMESPACE,
                "--duration",
                "24h",
            ])
            .trim()
            .to_string();
        let admin = std::fs::read_to_string(&manager.kubeconfig).expect("manager kubeconfig");
        let ca = admin
            .lines()
            .find_map(|l| l.trim().strip_prefix("certificate-authority-data:"))
            .expect("CA in the admin kubeconfig")
            .trim()
            .to_string();
        let kubeconfig = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: manager\n  cluster:\n    server: {}\n    certificate-authority-data: {ca}\ncontexts:\n- name: agent\n  context:\n    cluster: manager\n    user: agent\n    namespace: {CLUSTER_NAMESPACE}\ncurrent-context: agent\nusers:\n- name: agent\n  user:\n    token: {token}\n",
            manager.url
        );
        let agent_kubeconfig = dir.join("agent-kubeconfig");
        std::fs::write(&agent_kubeconfig, &kubeconfig).expect("writing the agent kubeconfig");
        let env = AgentEnv {
            bin: bin.to_path_buf(),
            dir: dir.to_path_buf(),
            manager,
            downstream,
            up,
            down,
            agent_kubeconfig,
        };
        env.write_agent_secret(&kubeconfig);
        Some(env)
    }

    /// Creates the system namespace and the `fleet-agent` Secret downstream (upstream's shape).
    pub fn write_agent_secret(&self, kubeconfig: &str) {
        let b = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let secret = json!({
            "apiVersion": "v1", "kind": "List", "items": [
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SYSTEM_NAMESPACE}},
                {"apiVersion": "v1", "kind": "Secret",
                 "metadata": {"name": "fleet-agent", "namespace": SYSTEM_NAMESPACE},
                 "data": {
                    "kubeconfig": b(kubeconfig),
                    "deploymentNamespace": b(CLUSTER_NAMESPACE),
                    "clusterNamespace": b(WORKSPACE),
                    "clusterName": b(CLUSTER),
                 }}
            ]
        });
        self.down.apply(&secret.to_string());
    }

    /// Starts `fleet agent` against the downstream cluster.
    pub fn start_agent(&self, extra: &[&str]) -> FleetProcess {
        let kc = self.downstream.kubeconfig.to_string_lossy().into_owned();
        let mut args = vec!["agent", "-k", kc.as_str()];
        args.extend_from_slice(extra);
        FleetProcess::spawn(
            &self.bin,
            "fleet agent",
            &args,
            &crate::cluster::agent_env(),
        )
    }

    /// kubectl with the agent's own credential on the manager.
    pub fn agent_kubectl(&self) -> Option<Kubectl> {
        Kubectl::new(&self.agent_kubeconfig)
    }

    /// The Bundle `fleet apply -o -` builds from `bundle_dir` (named `name`), as JSON.
    pub fn bundle(&self, bundle_dir: &Path, name: &str) -> Value {
        let yaml = fleet(
            &self.bin,
            bundle_dir,
            &["apply", "-n", WORKSPACE, "-o", "-", name, "."],
        );
        let path = self.dir.join(format!("bundle-{name}.yaml"));
        std::fs::write(&path, &yaml).expect("writing the bundle");
        let v = self.up.ok(&[
            "create",
            "--dry-run=client",
            "-o",
            "json",
            "-f",
            &path.to_string_lossy(),
        ]);
        let v: Value = serde_json::from_str(&v).expect("bundle JSON");
        match v.get("items").and_then(Value::as_array) {
            Some(items) => items
                .iter()
                .find(|o| o["kind"] == "Bundle")
                .cloned()
                .expect("a Bundle in fleet apply's output"),
            None => v,
        }
    }

    /// The BundleDeployment `fleet target` computes for the test Cluster, plus its Content.
    pub fn deployment_of(&self, bundle: &Value) -> (Value, Value) {
        let bpath = self.dir.join("target-bundle.json");
        std::fs::write(&bpath, bundle.to_string()).expect("writing the bundle");
        let cpath = self.dir.join("target-clusters.yaml");
        let cluster = self
            .up
            .ok(&["get", "cluster", CLUSTER, "-n", WORKSPACE, "-o", "yaml"]);
        // Bundles without targets go to the `default` cluster group, which holds every cluster.
        let group = format!(
            "---\napiVersion: fleet.cattle.io/v1alpha1\nkind: ClusterGroup\nmetadata:\n  name: default\n  namespace: {WORKSPACE}\nspec:\n  selector: {{}}\n"
        );
        std::fs::write(&cpath, format!("{cluster}{group}")).expect("writing the cluster");
        let out = fleet(
            &self.bin,
            &self.dir,
            &[
                "target",
                "-b",
                &bpath.to_string_lossy(),
                "-c",
                &cpath.to_string_lossy(),
            ],
        );
        let opath = self.dir.join("target-out.yaml");
        std::fs::write(&opath, out).expect("writing fleet target output");
        let v = self.up.ok(&[
            "create",
            "--dry-run=client",
            "-o",
            "json",
            "-f",
            &opath.to_string_lossy(),
        ]);
        let v: Value = serde_json::from_str(&v).expect("target JSON");
        let mut bd = match v.get("items").and_then(Value::as_array) {
            Some(items) => items
                .iter()
                .find(|o| o["kind"] == "BundleDeployment")
                .cloned()
                .expect("a BundleDeployment in fleet target's output"),
            None => v,
        };
        bd["metadata"]["namespace"] = json!(CLUSTER_NAMESPACE);
        if let Some(m) = bd["metadata"].as_object_mut() {
            m.remove("creationTimestamp");
        }
        let id = bd["spec"]["deploymentID"]
            .as_str()
            .expect("deploymentID")
            .to_string();
        let manifest_id = id.split(':').next().unwrap_or("").to_string();
        let content = content_object(&manifest_id, &bundle["spec"]["resources"]);
        (bd, content)
    }

    /// Writes a Content and a BundleDeployment to the manager (apply: create or update).
    pub fn publish(&self, bd: &Value, content: &Value) {
        self.up.apply(&content.to_string());
        self.up.apply(&bd.to_string());
    }

    /// A BundleDeployment's status on the manager (Null when it has none or is gone).
    pub fn bd_status(&self, name: &str) -> Value {
        self.up
            .get_json(&["bundledeployment", name, "-n", CLUSTER_NAMESPACE])
            .map(|v| v["status"].clone())
            .unwrap_or(Value::Null)
    }

    /// Real helm against the downstream cluster; None when helm is missing outside CI.
    pub fn helm(&self, args: &[&str]) -> Option<String> {
        crate::cluster::helm(&self.downstream.kubeconfig, &self.dir, args)
    }
}

/// A Content object as the manager writes it: `content` = base64(gzip(`{"resources":[...]}` +
/// newline)), named by the manifestID.
pub fn content_object(manifest_id: &str, resources: &Value) -> Value {
    let mut json = serde_json::to_vec(&json!({"resources": resources})).expect("resources JSON");
    json.push(b'\n');
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(&json).expect("gzip");
    let gz = enc.finish().expect("gzip");
    json!({
        "apiVersion": "fleet.cattle.io/v1alpha1",
        "kind": "Content",
        "metadata": {"name": manifest_id},
        "content": base64::engine::general_purpose::STANDARD.encode(gz),
    })
}

/// Whether every field of `expected` is in `actual` (objects recursively, lists element-wise
/// with equal length): what a deployed object must hold of the rendered one.
pub fn json_contains(actual: &Value, expected: &Value) -> Result<(), String> {
    match (actual, expected) {
        (Value::Object(a), Value::Object(e)) => {
            for (k, ev) in e {
                let av = a.get(k).ok_or_else(|| format!("missing key {k:?}"))?;
                json_contains(av, ev).map_err(|m| format!("{k}: {m}"))?;
            }
            Ok(())
        }
        (Value::Array(a), Value::Array(e)) if a.len() == e.len() => {
            for (i, (av, ev)) in a.iter().zip(e).enumerate() {
                json_contains(av, ev).map_err(|m| format!("[{i}]: {m}"))?;
            }
            Ok(())
        }
        _ if actual == expected => Ok(()),
        _ => Err(format!("{actual} != {expected}")),
    }
}
