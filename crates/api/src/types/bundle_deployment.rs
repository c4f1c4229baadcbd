//! `BundleDeployment`: one bundle on one cluster, and what the agent reports back.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::*;

/// What one cluster should deploy: current and staged options.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, CustomResource)]
#[kube(
    group = "fleet.cattle.io",
    version = "v1alpha1",
    kind = "BundleDeployment",
    namespaced,
    status = "BundleDeploymentStatus",
    derive = "Default",
    derive = "PartialEq"
)]
#[kube(printcolumn(
    name = "Deployed",
    type_ = "string",
    json_path = ".status.display.deployed"
))]
#[kube(printcolumn(
    name = "Monitored",
    type_ = "string",
    json_path = ".status.display.monitored"
))]
#[kube(printcolumn(
    name = "Status",
    type_ = "string",
    json_path = ".status.conditions[?(@.type==\"Ready\")].message"
))]
#[serde(remote = "Self")]
#[serde(rename_all = "camelCase")]
pub struct BundleDeploymentSpec {
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub paused: bool,
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub staged_options: BundleDeploymentOptions,
    #[serde(
        rename = "stagedDeploymentID",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub staged_deployment_id: String,
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub options: BundleDeploymentOptions,
    #[serde(
        rename = "deploymentID",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub deployment_id: String,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub depends_on: Vec<BundleRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correct_drift: Option<CorrectDrift>,
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub oci_contents: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub helm_chart_options: Option<BundleHelmOptions>,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub values_hash: String,
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_zero",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub downstream_resources_generation: i64,
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub off_schedule: bool,
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub waiting_for_values: bool,
}

/// A resource deployed by a bundle deployment.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BundleDeploymentResource {
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<Time>,
}

/// Human-readable bundle deployment status.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BundleDeploymentDisplay {
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub deployed: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub monitored: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub state: String,
}

/// Counts of downstream resources per state.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ResourceCounts {
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub ready: i64,
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub desired_ready: i64,
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub wait_applied: i64,
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub modified: i64,
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub orphaned: i64,
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub missing: i64,
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub unknown: i64,
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub not_ready: i64,
}

/// Observed state of a BundleDeployment, written by the agent.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BundleDeploymentStatus {
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub conditions: Vec<Condition>,
    #[serde(
        rename = "appliedDeploymentID",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub applied_deployment_id: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub release: String,
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub ready: bool,
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub non_modified: bool,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub non_ready_status: Vec<NonReadyStatus>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub modified_status: Vec<ModifiedStatus>,
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub incomplete_state: bool,
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub display: BundleDeploymentDisplay,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_generation: Option<i64>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub resources: Vec<BundleDeploymentResource>,
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub resource_counts: ResourceCounts,
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_zero",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub downstream_resources_generation: i64,
}
