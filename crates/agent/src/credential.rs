//! The agent's upstream credential: Secret `fleet-agent` in its system namespace downstream, in
//! upstream's shape (keys `kubeconfig`, `deploymentNamespace`, `clusterNamespace`, `clusterName`).
//! The agent talks to the manager only with the kubeconfig held there. Registration (which
//! creates the Secret from a bootstrap token) slots in before [`wait_for_credential`].

use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use kube::Api;

use crate::backoff::Backoff;

/// Name of the Secret holding the agent's upstream credential.
pub const AGENT_SECRET: &str = "fleet-agent";

/// What the agent knows about its place upstream, read from the `fleet-agent` Secret.
#[derive(Clone)]
pub struct Upstream {
    /// Client for the manager, built only from the Secret's kubeconfig.
    pub client: kube::Client,
    /// The cluster namespace holding this cluster's BundleDeployments.
    pub deployment_namespace: String,
    /// The workspace namespace holding the Cluster object.
    pub cluster_namespace: String,
    /// The Cluster's name.
    pub cluster_name: String,
}

/// Why the Secret did not give a usable credential.
#[derive(Debug, thiserror::Error)]
pub enum CredentialError {
    /// The Secret does not exist (yet).
    #[error("secret {namespace}/{AGENT_SECRET} not found")]
    Missing {
        /// The system namespace searched.
        namespace: String,
    },
    /// The Secret lacks a key or a key is not UTF-8.
    #[error("secret {namespace}/{AGENT_SECRET}: key {key:?} {why}")]
    BadKey {
        /// The system namespace.
        namespace: String,
        /// The key at fault.
        key: &'static str,
        /// What is wrong with it.
        why: &'static str,
    },
    /// The kubeconfig in the Secret could not be used.
    #[error("secret {namespace}/{AGENT_SECRET}: key \"kubeconfig\": {source}")]
    Kubeconfig {
        /// The system namespace.
        namespace: String,
        /// What fleet-kube reported.
        source: fleet_kube::Error,
    },
    /// The downstream API could not be read.
    #[error("reading secret {namespace}/{AGENT_SECRET} downstream: {source}")]
    Downstream {
        /// The system namespace.
        namespace: String,
        /// The API error.
        source: kube::Error,
    },
}

fn key<'a>(s: &'a Secret, ns: &str, key: &'static str) -> Result<&'a str, CredentialError> {
    let bad = |why| CredentialError::BadKey {
        namespace: ns.to_string(),
        key,
        why,
    };
    let v = s
        .data
        .as_ref()
        .and_then(|d| d.get(key))
        .ok_or_else(|| bad("is missing"))?;
    std::str::from_utf8(&v.0).map_err(|_| bad("is not UTF-8"))
}

/// Reads the `fleet-agent` Secret once and builds the upstream client from it.
pub async fn read_credential(
    downstream: &kube::Client,
    system_namespace: &str,
) -> Result<Upstream, CredentialError> {
    let api: Api<Secret> = Api::namespaced(downstream.clone(), system_namespace);
    let secret = api
        .get_opt(AGENT_SECRET)
        .await
        .map_err(|source| CredentialError::Downstream {
            namespace: system_namespace.to_string(),
            source,
        })?
        .ok_or_else(|| CredentialError::Missing {
            namespace: system_namespace.to_string(),
        })?;
    let ns = system_namespace;
    let kubeconfig = key(&secret, ns, "kubeconfig")?;
    let deployment_namespace = key(&secret, ns, "deploymentNamespace")?.to_string();
    let cluster_namespace = key(&secret, ns, "clusterNamespace")?.to_string();
    let cluster_name = key(&secret, ns, "clusterName")?.to_string();
    let kube_err = |source| CredentialError::Kubeconfig {
        namespace: ns.to_string(),
        source,
    };
    let mut cfg = fleet_kube::config_from_kubeconfig_yaml(kubeconfig)
        .await
        .map_err(kube_err)?;
    cfg.default_namespace = deployment_namespace.clone();
    let client = fleet_kube::client_from_config(cfg).map_err(kube_err)?;
    Ok(Upstream {
        client,
        deployment_namespace,
        cluster_namespace,
        cluster_name,
    })
}

/// Waits until the `fleet-agent` Secret exists and holds a usable credential, retrying with
/// capped exponential backoff and logging why (at most every `log_every`).
pub async fn wait_for_credential(downstream: &kube::Client, system_namespace: &str) -> Upstream {
    let mut backoff = Backoff::new(Duration::from_millis(250), Duration::from_secs(30));
    let mut log = crate::backoff::RateLimitedLog::new(Duration::from_secs(30));
    loop {
        match read_credential(downstream, system_namespace).await {
            Ok(u) => return u,
            Err(e) => {
                log.warn(&format!("waiting for the agent credential: {e}"));
                tokio::time::sleep(backoff.next_delay()).await;
            }
        }
    }
}
