//! Bootstrap on start, as upstream's bootstrap controller: the workspaces `fleet-local` and
//! `fleet-default`, and the ClusterGroup `default` in `fleet-local` selecting `name=local`.
//! Existing objects are left alone.

use fleet_api::ClusterGroup;
use k8s_openapi::api::core::v1::Namespace;
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
