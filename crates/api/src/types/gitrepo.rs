//! `GitRepo`: a repository to watch, the bundles it yields, and its status.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use super::*;

/// A driven-scan bundle: base directory and optional options file.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BundlePath {
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub base: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub options: String,
}

/// Author and message of image-scan commits.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CommitSpec {
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub author_name: String,
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub author_email: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub message_template: String,
}

/// A git repository whose paths become Bundles.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, CustomResource)]
#[kube(
    group = "fleet.cattle.io",
    version = "v1alpha1",
    kind = "GitRepo",
    namespaced,
    status = "GitRepoStatus",
    derive = "Default",
    derive = "PartialEq"
)]
#[kube(printcolumn(name = "Repo", type_ = "string", json_path = ".spec.repo"))]
#[kube(printcolumn(name = "Commit", type_ = "string", json_path = ".status.commit"))]
#[kube(printcolumn(
    name = "BundleDeployments-Ready",
    type_ = "string",
    json_path = ".status.display.readyBundleDeployments"
))]
#[kube(printcolumn(
    name = "Status",
    type_ = "string",
    json_path = ".status.conditions[?(@.type==\"Ready\")].message"
))]
#[serde(remote = "Self")]
#[serde(rename_all = "camelCase")]
pub struct GitRepoSpec {
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub repo: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub branch: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub revision: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub target_namespace: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub client_secret_name: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub helm_secret_name: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub helm_secret_name_for_paths: String,
    #[serde(
        rename = "helmRepoURLRegex",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub helm_repo_url_regex: String,
    #[schemars(schema_with = "crate::serde_util::bytes_schema")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_bundle: Option<String>,
    #[serde(
        rename = "insecureSkipTLSVerify",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub insecure_skip_tls_verify: bool,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub paths: Vec<String>,
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub paused: bool,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub service_account: String,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub targets: Vec<GitTarget>,
    #[schemars(schema_with = "crate::serde_util::duration_schema")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub polling_interval: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_zero",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub force_sync_generation: i64,
    #[schemars(schema_with = "crate::serde_util::duration_schema")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_scan_interval: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_scan_commit: Option<CommitSpec>,
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub keep_resources: bool,
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub delete_namespace: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correct_drift: Option<CorrectDrift>,
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub disable_polling: bool,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub oci_registry_secret: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub webhook_secret: String,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub bundles: Vec<BundlePath>,
}

/// Human-readable GitRepo/HelmOp status.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct StatusDisplay {
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub ready_bundle_deployments: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub state: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub message: String,
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub error: bool,
}

/// Clusters per resource state.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PerClusterState {
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub ready: Vec<String>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub wait_applied: Vec<String>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub pending: Vec<String>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub modified: Vec<String>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub orphaned: Vec<String>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub missing: Vec<String>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub unknown: Vec<String>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub not_ready: Vec<String>,
}

/// A resource deployed by a GitRepo/HelmOp, with its per-cluster state.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub api_version: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub kind: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub type_: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub id: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub namespace: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub name: String,
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub incomplete_state: bool,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub state: String,
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub error: bool,
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub transitioning: bool,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub message: String,
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub per_cluster_state: PerClusterState,
}

/// Status shared by GitRepo and HelmOp.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct StatusBase {
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub ready_clusters: i64,
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub desired_ready_clusters: i64,
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub summary: BundleSummary,
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub display: StatusDisplay,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub conditions: Vec<Condition>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub resources: Vec<Resource>,
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub resource_counts: ResourceCounts,
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub per_cluster_resource_counts: BTreeMap<String, ResourceCounts>,
}

/// Observed state of a GitRepo.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GitRepoStatus {
    #[serde(flatten)]
    pub base: StatusBase,
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub observed_generation: i64,
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_zero",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub update_generation: i64,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub commit: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub webhook_commit: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_webhook_time: Option<Time>,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub polling_commit: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub git_job_status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_synced_image_scan_time: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_polling_triggered: Option<Time>,
}
