//! A downstream cluster registered with a manager the way a user does it: `fleet install
//! agent-config` and `fleet install agent-token` applied with kubectl, then `fleet agent`. Also the
//! agent's stored credential (to check what it may do) and real helm against any cluster.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use base64::Engine;

use crate::{FleetProcess, Kubectl};

/// The agent's system namespace downstream (upstream's default).
pub const AGENT_NAMESPACE: &str = "cattle-fleet-system";

fn fleet_out(bin: &Path, args: &[&str]) -> String {
    crate::agent_env::fleet(bin, Path::new("."), args)
}

/// Applies the agent config (with `labels`, which the Cluster gets) and a fresh registration
/// token from the manager to the downstream cluster, as the seed's registration flow does.
pub fn register(
    bin: &Path,
    manager_kubeconfig: &Path,
    workspace: &str,
    downstream: &Kubectl,
    labels: &[(&str, &str)],
) {
    let mut args = vec!["install".to_string(), "agent-config".to_string()];
    for (k, v) in labels {
        args.push("-l".into());
        args.push(format!("{k}={v}"));
    }
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    downstream.apply(&fleet_out(bin, &a));
    let kc = manager_kubeconfig.to_string_lossy().into_owned();
    downstream.apply(&fleet_out(
        bin,
        &["install", "agent-token", "-k", &kc, "-n", workspace],
    ));
}

/// `fleet agent` against the downstream cluster, checking in every `checkin`.
pub fn start_agent(
    bin: &Path,
    name: &str,
    downstream_kubeconfig: &Path,
    checkin: &str,
) -> FleetProcess {
    let kc = downstream_kubeconfig.to_string_lossy().into_owned();
    FleetProcess::spawn(
        bin,
        name,
        &["agent", "-k", &kc, "--checkin-interval", checkin],
        &agent_env(),
    )
}

/// What registration left downstream in the `fleet-agent` Secret.
#[derive(Clone, Debug)]
pub struct AgentCredential {
    /// The Cluster's name on the manager.
    pub cluster_name: String,
    /// The namespace holding its BundleDeployments on the manager.
    pub deployment_namespace: String,
    /// The agent's kubeconfig for the manager, written to a file.
    pub kubeconfig: PathBuf,
}

/// Reads the `fleet-agent` Secret downstream (`Err` with the reason until registration stored it)
/// and writes its kubeconfig to `dir/<cluster>-agent-kubeconfig`.
pub fn agent_credential(downstream: &Kubectl, dir: &Path) -> Result<AgentCredential, String> {
    let s = downstream
        .get_json(&["secret", "fleet-agent", "-n", AGENT_NAMESPACE])
        .ok_or("no fleet-agent Secret yet")?;
    let field = |k: &str| -> Result<String, String> {
        let b = s["data"][k]
            .as_str()
            .ok_or_else(|| format!("fleet-agent Secret without {k}"))?;
        let raw = base64::engine::general_purpose::STANDARD
            .decode(b)
            .map_err(|e| format!("{k}: {e}"))?;
        String::from_utf8(raw).map_err(|e| format!("{k}: {e}"))
    };
    let cluster_name = field("clusterName")?;
    let kubeconfig = dir.join(format!("{cluster_name}-agent-kubeconfig"));
    std::fs::write(&kubeconfig, field("kubeconfig")?)
        .map_err(|e| format!("writing {}: {e}", kubeconfig.display()))?;
    Ok(AgentCredential {
        cluster_name,
        deployment_namespace: field("deploymentNamespace")?,
        kubeconfig,
    })
}

/// Real helm with `kubeconfig`, its caches under `scratch`; `None` when helm is missing outside
/// CI. Panics with stderr when helm fails.
pub fn helm(kubeconfig: &Path, scratch: &Path, args: &[&str]) -> Option<String> {
    let bin = crate::tools::helm()?;
    let out = Command::new(bin)
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env("HELM_CACHE_HOME", scratch.join("helm-cache"))
        .env("HELM_CONFIG_HOME", scratch.join("helm-config"))
        .env("HELM_DATA_HOME", scratch.join("helm-data"))
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("running helm {args:?}: {e}"));
    assert!(
        out.status.success(),
        "helm {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The environment of a `fleet agent` under test: logs, and a short leader election (upstream's
/// variables), so an agent restarted after SIGKILL takes its Lease over within seconds instead
/// of waiting out the default 30 s lease.
pub fn agent_env() -> [(&'static str, &'static str); 4] {
    [
        ("RUST_LOG", "info"),
        ("CATTLE_ELECTION_LEASE_DURATION", "3s"),
        ("CATTLE_ELECTION_RENEW_DEADLINE", "2s"),
        ("CATTLE_ELECTION_RETRY_PERIOD", "500ms"),
    ]
}
