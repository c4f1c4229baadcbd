//! Bootstrap on start, as upstream's bootstrap controller: the workspaces `fleet-local` and
//! `fleet-default`, and the ClusterGroup `default` in `fleet-local` selecting `name=local`.
//! Existing objects are left alone. With [`LocalCluster`], also the manager's own cluster as
//! Cluster `local` (upstream's bootstrap does the same): its kubeconfig in the Secret
//! `local-cluster`, which the import controller uses to write the local agent's bootstrap.

use std::collections::BTreeMap;

use fleet_api::{Cluster, ClusterGroup};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{Api, PostParams};
use serde_json::json;

/// Creates what is missing; an object that already exists is not touched.
pub async fn run(client: &kube::Client) -> Result<(), kube::Error> {
    let nss: Api<Namespace> = Api::all(client.clone());
    for n in ["fleet-local", "fleet-default"] {
        let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": n}}))
            .map_err(kube::Error::SerdeError)?;
        create_absent(&nss, &ns).await?;
    }
    let groups: Api<ClusterGroup> = Api::namespaced(client.clone(), "fleet-local");
    let g: ClusterGroup = serde_json::from_value(json!({
        "apiVersion": fleet_api::keys::API_VERSION, "kind": "ClusterGroup",
        "metadata": {"name": "default", "namespace": "fleet-local"},
        "spec": {"selector": {"matchLabels": {"name": "local"}}}
    }))
    .map_err(kube::Error::SerdeError)?;
    // The CRDs may still be establishing right after `fleet install crds | kubectl apply`.
    let mut delay = std::time::Duration::from_millis(100);
    for _ in 0..50 {
        match create_absent(&groups, &g).await {
            Ok(()) => return Ok(()),
            Err(kube::Error::Api(e)) if e.code == 404 => {
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(std::time::Duration::from_secs(2));
            }
            Err(e) => return Err(e),
        }
    }
    create_absent(&groups, &g).await
}

/// Creates `obj` unless it exists (409 is success).
pub async fn create_absent<K>(api: &Api<K>, obj: &K) -> Result<(), kube::Error>
where
    K: kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.create(&PostParams::default(), obj).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

/// The manager's own cluster, registered as Cluster `local` in `fleet-local` through
/// manager-initiated registration, so a GitRepo in `fleet-local` deploys into the manager itself.
#[derive(Clone, Debug)]
pub struct LocalCluster {
    /// A kubeconfig that reaches the manager's cluster (stored in the Secret `local-cluster`).
    pub kubeconfig: String,
    /// The local agent's system namespace, apart from any agent of a parent manager
    /// (`cattle-fleet-local-system` upstream).
    pub agent_namespace: String,
}

/// The namespace upstream's local agent runs in.
pub const LOCAL_AGENT_NAMESPACE: &str = "cattle-fleet-local-system";

/// Creates the Secret `local-cluster` and the Cluster `local` (labels `name=local`) in
/// `fleet-local` when missing. An existing Cluster is left alone, so a restart neither
/// re-imports nor undoes a user's edits; the Secret is refreshed, since the manager's address
/// or CA may have changed.
pub async fn local_cluster(client: &kube::Client, local: &LocalCluster) -> Result<(), kube::Error> {
    const NS: &str = "fleet-local";
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NS);
    let secret = Secret {
        metadata: kube::api::ObjectMeta {
            name: Some("local-cluster".into()),
            namespace: Some(NS.into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            "value".to_string(),
            ByteString(local.kubeconfig.as_bytes().to_vec()),
        )])),
        ..Default::default()
    };
    let unchanged = secrets
        .get_opt("local-cluster")
        .await?
        .is_some_and(|s| s.data == secret.data);
    if !unchanged {
        secrets
            .patch(
                "local-cluster",
                &kube::api::PatchParams::apply("fleet-bootstrap").force(),
                &kube::api::Patch::Apply(&serde_json::json!({
                    "apiVersion": "v1", "kind": "Secret",
                    "metadata": {"name": "local-cluster", "namespace": NS},
                    "data": secret.data,
                })),
            )
            .await?;
    }
    let cluster: Cluster = serde_json::from_value(json!({
        "apiVersion": fleet_api::keys::API_VERSION, "kind": "Cluster",
        "metadata": {"name": "local", "namespace": NS, "labels": {"name": "local"}},
        "spec": {"kubeConfigSecret": "local-cluster", "agentNamespace": local.agent_namespace}
    }))
    .map_err(kube::Error::SerdeError)?;
    create_absent(&Api::namespaced(client.clone(), NS), &cluster).await
}
