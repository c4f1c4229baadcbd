//! The CustomResourceDefinitions of every Fleet kind, generated from the Rust types so that the
//! schema can never drift from what our code reads and writes.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceSubresourceStatus,
};
use kube::CustomResourceExt;

use crate::types::*;

/// All Fleet CRDs, sorted by name.
pub fn all() -> Vec<CustomResourceDefinition> {
    let mut v = vec![
        Bundle::crd(),
        BundleDeployment::crd(),
        BundleNamespaceMapping::crd(),
        Cluster::crd(),
        ClusterGroup::crd(),
        ClusterRegistration::crd(),
        ClusterRegistrationToken::crd(),
        Content::crd(),
        GitRepo::crd(),
        GitRepoRestriction::crd(),
        HelmOp::crd(),
        ImageScan::crd(),
        Policy::crd(),
        Schedule::crd(),
    ];
    // Upstream declares a status subresource on every kind but Policy, even on the two
    // (BundleNamespaceMapping, GitRepoRestriction) whose Go types have no status field.
    for crd in &mut v {
        let skip_status = crd.spec.names.kind == "Policy";
        for ver in &mut crd.spec.versions {
            // Upstream does not require `spec`: an object with only metadata is valid.
            if let Some(schema) = ver
                .schema
                .as_mut()
                .and_then(|s| s.open_api_v3_schema.as_mut())
            {
                schema.required = None;
            }
            let sub = ver.subresources.get_or_insert_with(Default::default);
            if sub.status.is_none() && !skip_status {
                sub.status = Some(CustomResourceSubresourceStatus(serde_json::json!({})));
            }
        }
    }
    v.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    v
}
