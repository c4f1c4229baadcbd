//! `Cluster`, `ClusterGroup`, `ClusterRegistration` and `ClusterRegistrationToken`: the downstream
//! clusters, their grouping and their agents.

use k8s_openapi::api::core::v1::{Affinity, ResourceRequirements, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use super::*;

/// Priority class created for the agent.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PriorityClassSpec {
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_zero",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub value: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preemption_policy: Option<String>,
}

/// Pod disruption budget created for the agent.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodDisruptionBudgetSpec {
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub min_available: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub max_unavailable: String,
}

/// Scheduling objects created for the agent.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AgentSchedulingCustomization {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class: Option<PriorityClassSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_disruption_budget: Option<PodDisruptionBudgetSpec>,
}

/// An environment variable of the agent; `valueFrom` is kept verbatim so that sources newer than our Kubernetes API version (e.g. `fileKeyRef`) are accepted.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AgentEnvVar {
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub name: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub value: String,
    #[schemars(schema_with = "crate::serde_util::preserve_unknown")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_from: Option<GenericMap>,
}

/// A reference to an object in the same namespace, by name.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LocalObjectRef {
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub name: String,
}

/// A downstream cluster: how to reach it and how to run its agent.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, CustomResource)]
#[kube(
    group = "fleet.cattle.io",
    version = "v1alpha1",
    kind = "Cluster",
    namespaced,
    status = "ClusterStatus",
    derive = "Default",
    derive = "PartialEq"
)]
#[kube(printcolumn(
    name = "Bundles-Ready",
    type_ = "string",
    json_path = ".status.display.readyBundles"
))]
#[kube(printcolumn(
    name = "Last-Seen",
    type_ = "string",
    json_path = ".status.agent.lastSeen"
))]
#[kube(printcolumn(
    name = "Status",
    type_ = "string",
    json_path = ".status.conditions[?(@.type==\"Ready\")].message"
))]
#[serde(remote = "Self")]
#[serde(rename_all = "camelCase")]
pub struct ClusterSpec {
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub paused: bool,
    #[serde(
        rename = "clientID",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub client_id: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub kube_config_secret: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub kube_config_secret_namespace: String,
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_zero",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub redeploy_agent_generation: i64,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub agent_env_vars: Vec<AgentEnvVar>,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub agent_namespace: String,
    #[serde(
        rename = "privateRepoURL",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub private_repo_url: String,
    #[schemars(schema_with = "crate::serde_util::preserve_unknown")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template_values: Option<GenericMap>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub agent_tolerations: Vec<Toleration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_affinity: Option<Affinity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_resources: Option<ResourceRequirements>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_network: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_scheduling_customization: Option<AgentSchedulingCustomization>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_pull_secrets: Option<Vec<LocalObjectRef>>,
}

/// Human-readable cluster status.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterDisplay {
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub ready_bundles: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub state: String,
}

/// Agent heartbeat.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AgentStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_seen: Option<Time>,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub namespace: String,
}

/// Observed state of a Cluster.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterStatus {
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub conditions: Vec<Condition>,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub namespace: String,
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub summary: BundleSummary,
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub resource_counts: ResourceCounts,
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub ready_git_repos: i64,
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub desired_ready_git_repos: i64,
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub ready_helm_ops: i64,
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub desired_ready_helm_ops: i64,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub agent_env_vars_hash: String,
    #[serde(
        rename = "agentPrivateRepoURL",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub agent_private_repo_url: String,
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub agent_host_network: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_deployed_generation: Option<i64>,
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub agent_migrated: bool,
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub agent_namespace_migrated: bool,
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub cattle_namespace_migrated: bool,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub agent_affinity_hash: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub agent_resources_hash: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub agent_tolerations_hash: String,
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub agent_config_changed: bool,
    #[serde(
        rename = "apiServerURL",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub api_server_url: String,
    #[serde(
        rename = "apiServerCAHash",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub api_server_ca_hash: String,
    #[serde(
        rename = "agentTLSMode",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub agent_tls_mode: String,
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub display: ClusterDisplay,
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub agent: AgentStatus,
    #[schemars(schema_with = "crate::serde_util::duration_schema")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub garbage_collection_interval: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub agent_scheduling_customization_hash: String,
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub scheduled: bool,
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub active_schedule: bool,
}

/// A named set of clusters chosen by label selector.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, CustomResource)]
#[kube(
    group = "fleet.cattle.io",
    version = "v1alpha1",
    kind = "ClusterGroup",
    namespaced,
    status = "ClusterGroupStatus",
    derive = "Default",
    derive = "PartialEq"
)]
#[kube(printcolumn(
    name = "Clusters-Ready",
    type_ = "string",
    json_path = ".status.display.readyClusters"
))]
#[kube(printcolumn(
    name = "Bundles-Ready",
    type_ = "string",
    json_path = ".status.display.readyBundles"
))]
#[kube(printcolumn(
    name = "Status",
    type_ = "string",
    json_path = ".status.conditions[?(@.type==\"Ready\")].message"
))]
#[serde(remote = "Self")]
#[serde(rename_all = "camelCase")]
pub struct ClusterGroupSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
}

/// Human-readable cluster group status.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterGroupDisplay {
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
    pub ready_bundles: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub state: String,
}

/// Observed state of a ClusterGroup.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterGroupStatus {
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub cluster_count: i64,
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub non_ready_cluster_count: i64,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub non_ready_clusters: Vec<String>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub conditions: Vec<Condition>,
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub summary: BundleSummary,
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub display: ClusterGroupDisplay,
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub resource_counts: ResourceCounts,
}

/// An agent's request to register its cluster.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, CustomResource)]
#[kube(
    group = "fleet.cattle.io",
    version = "v1alpha1",
    kind = "ClusterRegistration",
    namespaced,
    status = "ClusterRegistrationStatus",
    derive = "Default",
    derive = "PartialEq"
)]
#[kube(printcolumn(
    name = "Cluster-Name",
    type_ = "string",
    json_path = ".status.clusterName"
))]
#[kube(printcolumn(name = "Labels", type_ = "string", json_path = ".spec.clusterLabels"))]
#[serde(remote = "Self")]
#[serde(rename_all = "camelCase")]
pub struct ClusterRegistrationSpec {
    #[serde(
        rename = "clientID",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub client_id: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub client_random: String,
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub cluster_labels: BTreeMap<String, String>,
}

/// Result of a registration request.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterRegistrationStatus {
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub cluster_name: String,
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub granted: bool,
}

/// A token agents use to register clusters.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, CustomResource)]
#[kube(
    group = "fleet.cattle.io",
    version = "v1alpha1",
    kind = "ClusterRegistrationToken",
    namespaced,
    status = "ClusterRegistrationTokenStatus",
    derive = "Default",
    derive = "PartialEq"
)]
#[kube(printcolumn(
    name = "Secret-Name",
    type_ = "string",
    json_path = ".status.secretName"
))]
#[serde(remote = "Self")]
#[serde(rename_all = "camelCase")]
pub struct ClusterRegistrationTokenSpec {
    #[schemars(schema_with = "crate::serde_util::duration_schema")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<String>,
}

/// Where the token's credentials are and when it expires.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterRegistrationTokenStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires: Option<Time>,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub secret_name: String,
}
