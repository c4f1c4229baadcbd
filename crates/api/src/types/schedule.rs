//! `Schedule`: time windows in which clusters accept deployments.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::*;

/// Clusters a schedule applies to.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleTargets {
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub clusters: Vec<GitTarget>,
}

/// Time windows in which matching clusters accept deployments.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, CustomResource)]
#[kube(
    group = "fleet.cattle.io",
    version = "v1alpha1",
    kind = "Schedule",
    namespaced,
    status = "ScheduleStatus",
    derive = "Default",
    derive = "PartialEq"
)]
#[kube(printcolumn(name = "Schedule", type_ = "string", json_path = ".spec.schedule"))]
#[kube(printcolumn(name = "Duration", type_ = "string", json_path = ".spec.duration"))]
#[kube(printcolumn(name = "Active", type_ = "string", json_path = ".status.active"))]
#[kube(printcolumn(
    name = "NextStart",
    type_ = "string",
    json_path = ".status.nextStartTime"
))]
#[serde(remote = "Self")]
#[serde(rename_all = "camelCase")]
pub struct ScheduleSpec {
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub schedule: String,
    #[schemars(schema_with = "crate::serde_util::duration_schema")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub location: String,
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub targets: ScheduleTargets,
}

/// Whether a schedule is active and what it matches.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleStatus {
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub conditions: Vec<Condition>,
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub active: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_start_time: Option<Time>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub matching_clusters: Vec<String>,
}
