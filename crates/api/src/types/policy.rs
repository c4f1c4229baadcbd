//! `BundleNamespaceMapping`, `GitRepoRestriction` and `Policy`: what may be deployed where.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Lets bundles in one namespace target clusters in other namespaces.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, CustomResource)]
#[kube(
    group = "fleet.cattle.io",
    version = "v1alpha1",
    kind = "BundleNamespaceMapping",
    namespaced,
    no_spec,
    derive = "Default",
    derive = "PartialEq"
)]
#[serde(rename_all = "camelCase")]
pub struct BundleNamespaceMappingFields {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle_selector: Option<LabelSelector>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<LabelSelector>,
}

/// Restricts what GitRepos in a namespace may use (deprecated for Policy).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, CustomResource)]
#[kube(
    group = "fleet.cattle.io",
    version = "v1alpha1",
    kind = "GitRepoRestriction",
    namespaced,
    no_spec,
    derive = "Default",
    derive = "PartialEq"
)]
#[kube(printcolumn(
    name = "Default-ServiceAccount",
    type_ = "string",
    json_path = ".defaultServiceAccount"
))]
#[kube(printcolumn(
    name = "Allowed-ServiceAccounts",
    type_ = "string",
    json_path = ".allowedServiceAccounts"
))]
#[serde(rename_all = "camelCase")]
pub struct GitRepoRestrictionFields {
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub default_service_account: String,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub allowed_service_accounts: Vec<String>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub allowed_repo_patterns: Vec<String>,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub default_client_secret_name: String,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub allowed_client_secret_names: Vec<String>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub allowed_target_namespaces: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_target_namespace_selector: Option<LabelSelector>,
}

/// Policy rules for GitRepos.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GitRepoPolicySpec {
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub default_service_account: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub default_client_secret_name: String,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub allowed_client_secret_names: Vec<String>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub allowed_repo_patterns: Vec<String>,
}

/// Policy rules for HelmOps.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct HelmOpPolicySpec {
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub default_service_account: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub default_helm_secret_name: String,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub allowed_helm_secret_names: Vec<String>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub allowed_helm_repo_patterns: Vec<String>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub allowed_chart_patterns: Vec<String>,
}

/// Namespace-wide rules for service accounts, secrets and repos.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, CustomResource)]
#[kube(
    group = "fleet.cattle.io",
    version = "v1alpha1",
    kind = "Policy",
    plural = "policies",
    namespaced,
    no_spec,
    derive = "Default",
    derive = "PartialEq"
)]
#[serde(rename_all = "camelCase")]
pub struct PolicyFields {
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub require_service_account: bool,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub allowed_service_accounts: Vec<String>,
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub allow_namespace_creation: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_repo: Option<GitRepoPolicySpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub helm_op: Option<HelmOpPolicySpec>,
}
