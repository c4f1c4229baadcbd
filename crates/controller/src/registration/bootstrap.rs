//! What registration needs before its first reconcile: the system registration namespace and the
//! two ClusterRoles every grant binds.

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::api::ObjectMeta;
use kube::{Api, Client};

use super::RegistrationOptions;
use super::rbac::{bundle_deployment_cluster_role, content_cluster_role};
use super::write::ensure;

/// Creates (or corrects) the system registration namespace and the ClusterRoles
/// `fleet-bundle-deployment` and `fleet-content`.
pub async fn ensure_bootstrap(
    client: &Client,
    opts: &RegistrationOptions,
) -> Result<(), kube::Error> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    ensure(
        &namespaces,
        &Namespace {
            metadata: ObjectMeta {
                name: Some(opts.system_registration_namespace.clone()),
                ..Default::default()
            },
            ..Default::default()
        },
    )
    .await?;
    let roles: Api<ClusterRole> = Api::all(client.clone());
    ensure(&roles, &bundle_deployment_cluster_role()).await?;
    ensure(&roles, &content_cluster_role()).await?;
    Ok(())
}
