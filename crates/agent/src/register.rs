//! Agent-initiated registration, the agent's half (upstream's `internal/cmd/agent/register`):
//! turn the one-time bootstrap token in `fleet-agent-bootstrap` into the cluster's own
//! least-privilege credential, store it in the `fleet-agent` Secret and forget the token.
//!
//! Everything is read from and written to the agent's system namespace in its own (downstream)
//! cluster; the manager is only dialled, never the other way round.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use base64::Engine;
use fleet_api::keys::REGISTRATION_TOKEN_LABEL;
use fleet_api::names::sha256_hex;
use fleet_api::{BundleDeployment, ClusterRegistration, ClusterRegistrationSpec};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{ListParams, ObjectMeta, PostParams};
use kube::{Api, Client, ResourceExt};
use serde::Deserialize;

/// The agent's system namespace unless configured otherwise.
pub const DEFAULT_SYSTEM_NAMESPACE: &str = "cattle-fleet-system";
/// The Secret holding the agent's credential (kubeconfig for the manager).
pub const CREDENTIAL_SECRET: &str = "fleet-agent";
/// The Secret holding the one-time registration values.
pub const BOOTSTRAP_SECRET: &str = "fleet-agent-bootstrap";
/// The ConfigMap holding the agent's configuration (key `config`, JSON).
pub const CONFIG_MAP: &str = "fleet-agent";
/// Cluster label naming the pod that registered.
pub const CREATED_BY_AGENT_POD_LABEL: &str = "fleet.cattle.io/created-by-agent-pod";

/// How registration waits and where it looks.
#[derive(Clone, Debug)]
pub struct RegisterOptions {
    /// The agent's system namespace in its own cluster (`cattle-fleet-system`).
    pub system_namespace: String,
    /// How often to look for the credential the manager grants (upstream: 2 s).
    pub poll_interval: Duration,
    /// How long to wait for that credential (upstream: 30 min).
    pub timeout: Duration,
    /// Longest pause between looks for a bootstrap Secret that is not there yet.
    pub max_backoff: Duration,
    /// The agent pod's name, recorded as the `created-by-agent-pod` label (upstream: `$HOSTNAME`).
    pub pod_name: Option<String>,
}

impl Default for RegisterOptions {
    fn default() -> Self {
        RegisterOptions {
            system_namespace: DEFAULT_SYSTEM_NAMESPACE.into(),
            poll_interval: Duration::from_secs(2),
            timeout: Duration::from_secs(30 * 60),
            max_backoff: Duration::from_secs(60),
            pod_name: std::env::var("HOSTNAME").ok().filter(|h| !h.is_empty()),
        }
    }
}

/// The agent's credential for the manager, as stored in the `fleet-agent` Secret.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentCredential {
    /// Kubeconfig (YAML) for the manager: the cluster's ServiceAccount token, namespace set to
    /// the deployment namespace.
    pub kubeconfig: String,
    /// The cluster namespace on the manager, holding this cluster's BundleDeployments.
    pub deployment_namespace: String,
    /// The workspace the Cluster lives in.
    pub cluster_namespace: String,
    /// The Cluster's name.
    pub cluster_name: String,
}

/// Why registration failed.
#[derive(Debug, thiserror::Error)]
pub enum RegisterError {
    /// A call to the agent's own cluster failed.
    #[error("downstream cluster: {0}")]
    Downstream(kube::Error),
    /// The manager refused the bootstrap token: it expired or was deleted.
    #[error(
        "registration refused: the manager no longer accepts the bootstrap token of registration token {token:?} in {namespace:?} (the token expired or was deleted; create a new one with `fleet install agent-token`): {source}"
    )]
    TokenRejected {
        /// The ClusterRegistrationToken's name.
        token: String,
        /// The workspace.
        namespace: String,
        /// What the manager answered.
        source: kube::Error,
    },
    /// A call to the manager failed.
    #[error("manager {url}: {source}")]
    Manager {
        /// The manager's URL.
        url: String,
        /// What failed.
        source: kube::Error,
    },
    /// No credential was granted in time.
    #[error(
        "no credential granted within {0:?}: the manager did not grant the ClusterRegistration (is its registration controller running, and is the token still valid?)"
    )]
    Timeout(Duration),
    /// Stored data is malformed (names the Secret/ConfigMap and key).
    #[error("{0}")]
    Invalid(String),
}

/// The agent's configuration (ConfigMap `fleet-agent`, key `config`).
#[derive(Deserialize, Default, Debug)]
struct AgentConfig {
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(rename = "clientID", default)]
    client_id: String,
}

/// The bootstrap Secret's values.
#[derive(Debug, Clone)]
struct Bootstrap {
    api_server_url: String,
    api_server_ca: String,
    token: String,
    token_name: String,
    cluster_namespace: String,
    system_registration_namespace: String,
}

fn secret_str(s: &Secret, key: &str) -> Option<String> {
    s.data
        .as_ref()
        .and_then(|d| d.get(key))
        .map(|b| String::from_utf8_lossy(&b.0).into_owned())
        .or_else(|| s.string_data.as_ref().and_then(|d| d.get(key)).cloned())
}

fn required(s: &Secret, key: &str) -> Result<String, RegisterError> {
    secret_str(s, key).filter(|v| !v.is_empty()).ok_or_else(|| {
        RegisterError::Invalid(format!(
            "Secret {}/{}: key {key:?} is missing or empty",
            s.namespace().unwrap_or_default(),
            s.name_any()
        ))
    })
}

impl Bootstrap {
    fn from_secret(s: &Secret) -> Result<Bootstrap, RegisterError> {
        Ok(Bootstrap {
            api_server_url: required(s, "apiServerURL")?,
            api_server_ca: secret_str(s, "apiServerCA").unwrap_or_default(),
            token: required(s, "token")?,
            token_name: secret_str(s, "tokenName").unwrap_or_default(),
            cluster_namespace: required(s, "clusterNamespace")?,
            system_registration_namespace: required(s, "systemRegistrationNamespace")?,
        })
    }
}

/// A kubeconfig for `url` with a bearer token and a default namespace.
pub fn kubeconfig_yaml(url: &str, ca_pem: &str, token: &str, namespace: &str) -> String {
    let mut cluster = serde_json::json!({"server": url});
    if !ca_pem.is_empty() {
        cluster["certificate-authority-data"] = base64::engine::general_purpose::STANDARD
            .encode(ca_pem)
            .into();
    }
    let doc = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "cluster", "cluster": cluster}],
        "users": [{"name": "user", "user": {"token": token}}],
        "contexts": [{"name": "default", "context": {"cluster": "cluster", "user": "user", "namespace": namespace}}],
        "current-context": "default",
    });
    serde_saphyr::to_string(&doc).unwrap_or_default()
}

/// The `c-…` Secret the manager writes for a registration: `("c-" + sha256hex(id ‖ random))[:63]`
/// (same as the manager's naming; the agent cannot depend on the controller crate).
pub fn credential_secret_name(client_id: &str, client_random: &str) -> String {
    let mut s = format!(
        "c-{}",
        sha256_hex(format!("{client_id}{client_random}").as_bytes())
    );
    s.truncate(63);
    s
}

async fn client_for(yaml: &str) -> Result<Client, RegisterError> {
    let cfg = fleet_kube::config_from_kubeconfig_yaml(yaml)
        .await
        .map_err(|e| RegisterError::Invalid(format!("kubeconfig: {e}")))?;
    fleet_kube::client_from_config(cfg)
        .map_err(|e| RegisterError::Invalid(format!("kubeconfig: {e}")))
}

impl AgentCredential {
    /// A client for the manager with this credential (default namespace: the deployment namespace).
    pub async fn client(&self) -> Result<Client, RegisterError> {
        client_for(&self.kubeconfig).await
    }

    /// Whether the credential can list its BundleDeployments (what the agent needs first).
    pub async fn verify(&self) -> Result<(), kube::Error> {
        let client = self
            .client()
            .await
            .map_err(|e| kube::Error::Service(Box::new(std::io::Error::other(e.to_string()))))?;
        let api: Api<BundleDeployment> = Api::namespaced(client, &self.deployment_namespace);
        api.list(&ListParams::default().limit(1)).await.map(|_| ())
    }

    /// Reads the credential from the `fleet-agent` Secret (`None` when there is none).
    pub async fn load(
        downstream: &Client,
        system_namespace: &str,
    ) -> Result<Option<AgentCredential>, RegisterError> {
        let api: Api<Secret> = Api::namespaced(downstream.clone(), system_namespace);
        let Some(s) = api
            .get_opt(CREDENTIAL_SECRET)
            .await
            .map_err(RegisterError::Downstream)?
        else {
            return Ok(None);
        };
        Ok(Some(AgentCredential {
            kubeconfig: required(&s, "kubeconfig")?,
            deployment_namespace: required(&s, "deploymentNamespace")?,
            cluster_namespace: required(&s, "clusterNamespace")?,
            cluster_name: required(&s, "clusterName")?,
        }))
    }

    /// Writes the `fleet-agent` Secret (deleted and recreated when present, as upstream does).
    async fn store(
        &self,
        downstream: &Client,
        system_namespace: &str,
    ) -> Result<(), RegisterError> {
        let api: Api<Secret> = Api::namespaced(downstream.clone(), system_namespace);
        let b = |s: &str| ByteString(s.as_bytes().to_vec());
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some(CREDENTIAL_SECRET.into()),
                namespace: Some(system_namespace.into()),
                ..Default::default()
            },
            data: Some(BTreeMap::from([
                ("kubeconfig".to_string(), b(&self.kubeconfig)),
                (
                    "deploymentNamespace".to_string(),
                    b(&self.deployment_namespace),
                ),
                ("clusterNamespace".to_string(), b(&self.cluster_namespace)),
                ("clusterName".to_string(), b(&self.cluster_name)),
            ])),
            ..Default::default()
        };
        delete_if_present(&api, CREDENTIAL_SECRET).await?;
        api.create(&PostParams::default(), &secret)
            .await
            .map_err(RegisterError::Downstream)?;
        Ok(())
    }
}

async fn delete_if_present(api: &Api<Secret>, name: &str) -> Result<(), RegisterError> {
    match api.delete(name, &Default::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(RegisterError::Downstream(e)),
    }
}

fn is_auth_failure(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 401 || s.code == 403)
}

/// Returns a working credential for the manager, registering first when needed:
///
/// - the `fleet-agent` Secret's credential when it can list its BundleDeployments (also when the
///   manager cannot be reached: losing contact is not a reason to register again);
/// - else, with a `fleet-agent-bootstrap` Secret present, registers with it (see [`register`]);
/// - else waits for a bootstrap Secret (capped backoff, logging why).
pub async fn ensure_registered(
    downstream: Client,
    opts: &RegisterOptions,
) -> Result<AgentCredential, RegisterError> {
    let ns = &opts.system_namespace;
    let secrets: Api<Secret> = Api::namespaced(downstream.clone(), ns);
    let mut pause = Duration::from_millis(500);
    loop {
        let stored = AgentCredential::load(&downstream, ns).await?;
        let mut why = format!("no Secret {ns}/{CREDENTIAL_SECRET}");
        if let Some(cred) = stored {
            match cred.verify().await {
                Ok(()) => return Ok(cred),
                Err(e) if is_auth_failure(&e) => {
                    why =
                        format!("the credential in {ns}/{CREDENTIAL_SECRET} no longer works ({e})");
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot reach the manager; keeping the stored credential");
                    return Ok(cred);
                }
            }
        }
        match secrets
            .get_opt(BOOTSTRAP_SECRET)
            .await
            .map_err(RegisterError::Downstream)?
        {
            Some(b) => {
                tracing::info!("registering: {why}");
                return register(&downstream, &Bootstrap::from_secret(&b)?, opts).await;
            }
            None => {
                tracing::info!(
                    "waiting for Secret {ns}/{BOOTSTRAP_SECRET} to register: {why}; retrying in {pause:?}"
                );
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(opts.max_backoff);
            }
        }
    }
}

/// The cluster's identity: the configured clientID, else the uid of `kube-system`.
async fn client_id(downstream: &Client, config: &AgentConfig) -> Result<String, RegisterError> {
    if !config.client_id.is_empty() {
        return Ok(config.client_id.clone());
    }
    let ns: Api<Namespace> = Api::all(downstream.clone());
    let ks = ns
        .get("kube-system")
        .await
        .map_err(RegisterError::Downstream)?;
    ks.uid()
        .ok_or_else(|| RegisterError::Invalid("Namespace kube-system has no uid".into()))
}

async fn agent_config(downstream: &Client, ns: &str) -> Result<AgentConfig, RegisterError> {
    let api: Api<ConfigMap> = Api::namespaced(downstream.clone(), ns);
    let Some(cm) = api
        .get_opt(CONFIG_MAP)
        .await
        .map_err(RegisterError::Downstream)?
    else {
        return Ok(AgentConfig::default());
    };
    let Some(text) = cm.data.as_ref().and_then(|d| d.get("config")) else {
        return Ok(AgentConfig::default());
    };
    serde_json::from_str(text).map_err(|e| {
        RegisterError::Invalid(format!("ConfigMap {ns}/{CONFIG_MAP}: key \"config\": {e}"))
    })
}

/// Registers with the bootstrap values: creates a ClusterRegistration with the bootstrap token,
/// waits for the granted `c-…` credential, verifies it, stores it in `fleet-agent` and deletes
/// the bootstrap Secret.
async fn register(
    downstream: &Client,
    b: &Bootstrap,
    opts: &RegisterOptions,
) -> Result<AgentCredential, RegisterError> {
    let ns = &opts.system_namespace;
    let config = agent_config(downstream, ns).await?;
    let client_id = client_id(downstream, &config).await?;
    let client_random = format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    );
    let bootstrap_client = client_for(&kubeconfig_yaml(
        &b.api_server_url,
        &b.api_server_ca,
        &b.token,
        &b.cluster_namespace,
    ))
    .await?;
    let manager = |source| RegisterError::Manager {
        url: b.api_server_url.clone(),
        source,
    };
    let rejected = |source| RegisterError::TokenRejected {
        token: b.token_name.clone(),
        namespace: b.cluster_namespace.clone(),
        source,
    };

    let mut labels = config.labels.clone();
    if let Some(pod) = &opts.pod_name {
        labels.insert(CREATED_BY_AGENT_POD_LABEL.into(), pod.clone());
    }
    let mut request = ClusterRegistration::new(
        "",
        ClusterRegistrationSpec {
            client_id: client_id.clone(),
            client_random: client_random.clone(),
            cluster_labels: labels,
        },
    );
    request.metadata = ObjectMeta {
        generate_name: Some("request-".into()),
        namespace: Some(b.cluster_namespace.clone()),
        labels: (!b.token_name.is_empty()).then(|| {
            BTreeMap::from([(REGISTRATION_TOKEN_LABEL.to_string(), b.token_name.clone())])
        }),
        ..Default::default()
    };
    let requests: Api<ClusterRegistration> =
        Api::namespaced(bootstrap_client.clone(), &b.cluster_namespace);
    let created = match requests.create(&PostParams::default(), &request).await {
        Ok(c) => c,
        Err(kube::Error::Api(e)) if e.code == 401 => return Err(rejected(kube::Error::Api(e))),
        Err(e) => return Err(manager(e)),
    };
    tracing::info!(registration = %created.name_any(), namespace = %b.cluster_namespace, %client_id, "created cluster registration; waiting for its credential");

    let name = credential_secret_name(&client_id, &client_random);
    let creds: Api<Secret> = Api::namespaced(bootstrap_client, &b.system_registration_namespace);
    let deadline = Instant::now() + opts.timeout;
    let granted = loop {
        match creds.get(&name).await {
            Ok(s) => break s,
            Err(kube::Error::Api(e)) if e.code == 401 => return Err(rejected(kube::Error::Api(e))),
            // Not granted yet (the Secret, or the Role that lets us read it, is still coming).
            Err(kube::Error::Api(e)) if e.code == 404 || e.code == 403 => {}
            Err(e) => tracing::debug!(error = %e, "waiting for the registration credential"),
        }
        if Instant::now() >= deadline {
            return Err(RegisterError::Timeout(opts.timeout));
        }
        tokio::time::sleep(opts.poll_interval).await;
    };

    let cred = AgentCredential {
        kubeconfig: kubeconfig_yaml(
            &b.api_server_url,
            &b.api_server_ca,
            &required(&granted, "token")?,
            &required(&granted, "deploymentNamespace")?,
        ),
        deployment_namespace: required(&granted, "deploymentNamespace")?,
        cluster_namespace: required(&granted, "clusterNamespace")?,
        cluster_name: required(&granted, "clusterName")?,
    };
    // RBAC written just before the credential may take a moment to apply everywhere.
    let verify_deadline = Instant::now() + Duration::from_secs(30).min(opts.timeout);
    loop {
        match cred.verify().await {
            Ok(()) => break,
            Err(e) if Instant::now() < verify_deadline => {
                tracing::debug!(error = %e, "the new credential cannot list BundleDeployments yet");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => return Err(manager(e)),
        }
    }
    cred.store(downstream, ns).await?;
    let secrets: Api<Secret> = Api::namespaced(downstream.clone(), ns);
    delete_if_present(&secrets, BOOTSTRAP_SECRET).await?;
    tracing::info!(cluster = %cred.cluster_name, namespace = %cred.cluster_namespace, "registered");
    Ok(cred)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn kubeconfig_parses_with_namespace_and_token() {
        let y = kubeconfig_yaml("https://127.0.0.1:1", "", "tok", "cluster-ns");
        let cfg = fleet_kube::config_from_kubeconfig_yaml(&y).await.unwrap();
        assert_eq!(cfg.default_namespace, "cluster-ns");
        assert_eq!(cfg.cluster_url.to_string(), "https://127.0.0.1:1/");
    }

    #[test]
    fn credential_secret_name_matches_upstream_shape() {
        let n = credential_secret_name("id", "rand");
        assert_eq!(n.len(), 63);
        assert_eq!(&n[2..], &sha256_hex(b"idrand")[..61]);
    }
}
