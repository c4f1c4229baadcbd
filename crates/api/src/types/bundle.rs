//! `Bundle`: resources, targets, rollout strategy, and its status.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::*;

/// A dependency on other bundles, by name or label selector.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BundleRef {
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub accepted_states: Vec<String>,
}

/// One file of a bundle.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BundleResource {
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub name: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub content: String,
    /// Empty for plain text, `base64+gz` for compressed content.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub encoding: String,
}

impl BundleResource {
    /// The file's bytes: `content` as is, or un-base64'd and gunzipped for `base64+gz`. The error
    /// is the reason alone; callers name the resource.
    pub fn decode(&self) -> Result<Vec<u8>, String> {
        use base64::Engine;
        match self.encoding.as_str() {
            "" => Ok(self.content.clone().into_bytes()),
            "base64+gz" => {
                let gz = base64::engine::general_purpose::STANDARD
                    .decode(&self.content)
                    .map_err(|e| e.to_string())?;
                crate::gzip::gunzip(&gz).map_err(|e| e.to_string())
            }
            other => Err(format!("unknown encoding {other:?}")),
        }
    }
}

/// How fast a change is rolled out over targeted clusters.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RolloutStrategy {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable_partitions: Option<IntOrString>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_partition_size: Option<IntOrString>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_partition_threshold: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_new: Option<i64>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub partitions: Vec<Partition>,
}

/// A manually defined rollout partition.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Partition {
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub cluster_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_selector: Option<LabelSelector>,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub cluster_group: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_group_selector: Option<LabelSelector>,
}

/// Cluster selection criteria (GitRepo targets, bundle target restrictions, schedule targets).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GitTarget {
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub name: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub cluster_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_selector: Option<LabelSelector>,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub cluster_group: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_group_selector: Option<LabelSelector>,
}

/// A bundle target: selection criteria plus options that customise deployments to it.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BundleTarget {
    #[serde(flatten)]
    pub options: BundleDeploymentOptions,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub name: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub cluster_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_selector: Option<LabelSelector>,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub cluster_group: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_group_selector: Option<LabelSelector>,
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub do_not_deploy: bool,
}

/// Access options for charts of HelmOp-generated bundles.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BundleHelmOptions {
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub helm_op_secret_name: String,
    #[serde(
        rename = "helmOpInsecureSkipTLSVerify",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub helm_op_insecure_skip_tls_verify: bool,
    #[schemars(schema_with = "crate::serde_util::bytes_schema")]
    #[serde(
        rename = "helmOpCABundle",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub helm_op_ca_bundle: Option<String>,
}

/// Desired state of a Bundle: resources, default options and targets.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, CustomResource)]
#[kube(
    group = "fleet.cattle.io",
    version = "v1alpha1",
    kind = "Bundle",
    namespaced,
    status = "BundleStatus",
    derive = "Default",
    derive = "PartialEq"
)]
#[kube(printcolumn(
    name = "BundleDeployments-Ready",
    type_ = "string",
    json_path = ".status.display.readyClusters"
))]
#[kube(printcolumn(
    name = "Status",
    type_ = "string",
    json_path = ".status.conditions[?(@.type==\"Ready\")].message"
))]
#[serde(remote = "Self")]
#[serde(rename_all = "camelCase")]
pub struct BundleSpec {
    #[serde(flatten)]
    pub options: BundleDeploymentOptions,
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub paused: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout_strategy: Option<RolloutStrategy>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub resources: Vec<BundleResource>,
    /// `FirstMatch` (default) or `AllMatches`.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub target_customization_mode: String,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub targets: Vec<BundleTarget>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub target_restrictions: Vec<GitTarget>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub depends_on: Vec<BundleRef>,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub contents_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub helm_op_options: Option<BundleHelmOptions>,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub values_hash: String,
}

/// Counts of bundle deployments per state.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BundleSummary {
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_zero",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub not_ready: i64,
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_zero",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub wait_applied: i64,
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_zero",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub err_applied: i64,
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_zero",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub out_of_sync: i64,
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_zero",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub modified: i64,
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub ready: i64,
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_zero",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub pending: i64,
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub desired_ready: i64,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub non_ready_resources: Vec<NonReadyResource>,
}

/// Rollout status of one partition.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PartitionStatus {
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub name: String,
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_zero",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub count: i64,
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_zero",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub max_unavailable: i64,
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_zero",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub unavailable: i64,
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub summary: BundleSummary,
}

/// Human-readable bundle status.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BundleDisplay {
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub ready_clusters: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub state: String,
}

/// Identity of a deployed resource (deprecated).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ResourceKey {
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
    pub api_version: String,
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
}

/// Observed state of a Bundle.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BundleStatus {
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub conditions: Vec<Condition>,
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub summary: BundleSummary,
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_zero",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub newly_created: i64,
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub unavailable: i64,
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub unavailable_partitions: i64,
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub max_unavailable: i64,
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub max_unavailable_partitions: i64,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub partitions: Vec<PartitionStatus>,
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub display: BundleDisplay,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub resource_key: Vec<ResourceKey>,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub oci_reference: String,
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub observed_generation: i64,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub resources_sha256_sum: String,
}
