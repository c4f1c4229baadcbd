//! Wire types of `fleet.cattle.io/v1alpha1`, field for field as upstream serialises them.
//! Field order follows upstream's Go structs because `deploymentID` hashes the JSON encoding.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Affinity, ResourceRequirements, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Free-form Helm values / template values: any JSON object.
pub type GenericMap = serde_json::Map<String, serde_json::Value>;

/// Drift correction: whether the agent re-applies desired state when live objects drift.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct CorrectDrift {
    #[serde(
        rename = "enabled",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub enabled: bool,
    #[serde(
        rename = "force",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub force: bool,
    #[serde(
        rename = "keepFailHistory",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub keep_fail_history: bool,
}

/// Options for ignoring known differences when computing `nonModified`.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct DiffOptions {
    #[serde(
        rename = "comparePatches",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub compare_patches: Vec<ComparePatch>,
}

/// One resource's fields to ignore when comparing live and desired state.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct ComparePatch {
    #[serde(
        rename = "apiVersion",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub api_version: String,
    #[serde(
        rename = "kind",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub kind: String,
    #[serde(
        rename = "name",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub name: String,
    #[serde(
        rename = "namespace",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub namespace: String,
    #[serde(
        rename = "jsonPointers",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub json_pointers: Vec<String>,
    #[serde(
        rename = "operations",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub operations: Vec<Operation>,
}

/// A JSON-patch-like operation applied before diffing (`remove` or `ignore`).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct Operation {
    #[serde(
        rename = "op",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub op: String,
    #[serde(
        rename = "path",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub path: String,
    #[serde(
        rename = "value",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub value: String,
}

/// Raw-YAML options: overlay directories applied in order.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct YAMLOptions {
    #[serde(
        rename = "overlays",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub overlays: Vec<String>,
}

/// Kustomize options: the directory holding `kustomization.yaml`.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct KustomizeOptions {
    #[serde(
        rename = "dir",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub dir: String,
}

/// How a bundle is rendered and installed as a Helm release.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct HelmOptions {
    /// Values files read by `fleet apply`, merged into `values`.
    #[serde(
        rename = "valuesFiles",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub values_files: Vec<String>,
    #[serde(
        rename = "chart",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub chart: String,
    #[serde(
        rename = "repo",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub repo: String,
    #[serde(
        rename = "releaseName",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub release_name: String,
    #[serde(
        rename = "version",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub version: String,
    #[serde(
        rename = "timeoutSeconds",
        default,
        skip_serializing_if = "crate::serde_util::is_zero",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub timeout_seconds: i64,
    #[schemars(schema_with = "crate::serde_util::preserve_unknown")]
    #[serde(rename = "values", default, skip_serializing_if = "Option::is_none")]
    pub values: Option<GenericMap>,
    #[serde(
        rename = "templateValues",
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub template_values: BTreeMap<String, String>,
    #[serde(
        rename = "valuesFrom",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub values_from: Vec<ValuesFrom>,
    #[serde(
        rename = "force",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub force: bool,
    #[serde(
        rename = "takeOwnership",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub take_ownership: bool,
    #[serde(
        rename = "maxHistory",
        default,
        skip_serializing_if = "crate::serde_util::is_zero",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub max_history: i64,
    #[serde(
        rename = "waitForJobs",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub wait_for_jobs: bool,
    #[serde(
        rename = "atomic",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub atomic: bool,
    #[serde(
        rename = "disablePreProcess",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub disable_pre_process: bool,
    #[serde(
        rename = "disableDNS",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub disable_dns: bool,
    #[serde(
        rename = "skipSchemaValidation",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub skip_schema_validation: bool,
    #[serde(
        rename = "disableDependencyUpdate",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub disable_dependency_update: bool,
}

/// Conditions that do not count against readiness.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct IgnoreOptions {
    #[serde(
        rename = "conditions",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub conditions: Vec<BTreeMap<String, String>>,
}

/// A downstream ConfigMap or Secret key holding extra Helm values.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct ValuesFrom {
    #[serde(
        rename = "configMapKeyRef",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub config_map_key_ref: Option<KeySelector>,
    #[serde(
        rename = "secretKeyRef",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub secret_key_ref: Option<KeySelector>,
}

/// A key in a ConfigMap or Secret, possibly in another namespace.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct KeySelector {
    #[serde(
        rename = "name",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub name: String,
    #[serde(
        rename = "namespace",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub namespace: String,
    #[serde(
        rename = "key",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub key: String,
}

/// A Secret or ConfigMap copied from the bundle namespace to downstream clusters.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct DownstreamResource {
    #[serde(
        rename = "kind",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub kind: String,
    #[serde(
        rename = "name",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub name: String,
}

/// A resource taken over from a deleted bundle.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct OverwrittenResource {
    #[serde(
        rename = "name",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub name: String,
    #[serde(
        rename = "namespace",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub namespace: String,
    #[serde(
        rename = "kind",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub kind: String,
}

/// Options shared by fleet.yaml, Bundle spec, targets and BundleDeployments.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct BundleDeploymentOptions {
    #[serde(rename = "yaml", default, skip_serializing_if = "Option::is_none")]
    pub yaml: Option<YAMLOptions>,
    #[serde(rename = "kustomize", default, skip_serializing_if = "Option::is_none")]
    pub kustomize: Option<KustomizeOptions>,
    #[serde(
        rename = "defaultNamespace",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub default_namespace: String,
    /// Upstream `TargetNamespace`: forces every object into this namespace.
    #[serde(
        rename = "namespace",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub namespace: String,
    #[serde(rename = "helm", default, skip_serializing_if = "Option::is_none")]
    pub helm: Option<HelmOptions>,
    #[serde(
        rename = "serviceAccount",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub service_account: String,
    #[serde(
        rename = "createNamespace",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub create_namespace: Option<bool>,
    #[serde(
        rename = "forceSyncGeneration",
        default,
        skip_serializing_if = "crate::serde_util::is_zero",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub force_sync_generation: i64,
    #[serde(rename = "diff", default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<DiffOptions>,
    #[serde(
        rename = "keepResources",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub keep_resources: bool,
    #[serde(
        rename = "deleteNamespace",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub delete_namespace: bool,
    #[serde(rename = "ignore", default, skip_serializing_if = "Option::is_none")]
    pub ignore: Option<IgnoreOptions>,
    #[serde(
        rename = "correctDrift",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub correct_drift: Option<CorrectDrift>,
    #[serde(
        rename = "namespaceLabels",
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub namespace_labels: BTreeMap<String, String>,
    #[serde(
        rename = "namespaceAnnotations",
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub namespace_annotations: BTreeMap<String, String>,
    #[serde(
        rename = "deleteCRDResources",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub delete_crd_resources: bool,
    #[serde(
        rename = "downstreamResources",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub downstream_resources: Vec<DownstreamResource>,
    #[serde(
        rename = "overwrites",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub overwrites: Vec<OverwrittenResource>,
    #[serde(
        rename = "allowedTargetNamespaceSelector",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub allowed_target_namespace_selector: Option<LabelSelector>,
}

/// A dependency on other bundles, by name or label selector.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct BundleRef {
    #[serde(
        rename = "name",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub name: String,
    #[serde(rename = "selector", default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    #[serde(
        rename = "acceptedStates",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub accepted_states: Vec<String>,
}

/// One file of a bundle.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct BundleResource {
    #[serde(
        rename = "name",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub name: String,
    #[serde(
        rename = "content",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub content: String,
    /// Empty for plain text, `base64+gz` for compressed content.
    #[serde(
        rename = "encoding",
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
        use std::io::Read;
        match self.encoding.as_str() {
            "" => Ok(self.content.clone().into_bytes()),
            "base64+gz" => {
                let gz = base64::engine::general_purpose::STANDARD
                    .decode(&self.content)
                    .map_err(|e| e.to_string())?;
                let mut out = Vec::new();
                flate2::read::GzDecoder::new(&gz[..])
                    .read_to_end(&mut out)
                    .map_err(|e| e.to_string())?;
                Ok(out)
            }
            other => Err(format!("unknown encoding {other:?}")),
        }
    }
}

/// How fast a change is rolled out over targeted clusters.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct RolloutStrategy {
    #[serde(
        rename = "maxUnavailable",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub max_unavailable: Option<IntOrString>,
    #[serde(
        rename = "maxUnavailablePartitions",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub max_unavailable_partitions: Option<IntOrString>,
    #[serde(
        rename = "autoPartitionSize",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub auto_partition_size: Option<IntOrString>,
    #[serde(
        rename = "autoPartitionThreshold",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub auto_partition_threshold: Option<i64>,
    #[serde(rename = "maxNew", default, skip_serializing_if = "Option::is_none")]
    pub max_new: Option<i64>,
    #[serde(
        rename = "partitions",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub partitions: Vec<Partition>,
}

/// A manually defined rollout partition.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct Partition {
    #[serde(
        rename = "name",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub name: String,
    #[serde(
        rename = "maxUnavailable",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub max_unavailable: Option<IntOrString>,
    #[serde(
        rename = "clusterName",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub cluster_name: String,
    #[serde(
        rename = "clusterSelector",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub cluster_selector: Option<LabelSelector>,
    #[serde(
        rename = "clusterGroup",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub cluster_group: String,
    #[serde(
        rename = "clusterGroupSelector",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub cluster_group_selector: Option<LabelSelector>,
}

/// Cluster selection criteria (GitRepo targets, bundle target restrictions, schedule targets).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct GitTarget {
    #[serde(
        rename = "name",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub name: String,
    #[serde(
        rename = "clusterName",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub cluster_name: String,
    #[serde(
        rename = "clusterSelector",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub cluster_selector: Option<LabelSelector>,
    #[serde(
        rename = "clusterGroup",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub cluster_group: String,
    #[serde(
        rename = "clusterGroupSelector",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub cluster_group_selector: Option<LabelSelector>,
}

/// A bundle target: selection criteria plus options that customise deployments to it.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct BundleTarget {
    #[serde(flatten)]
    pub options: BundleDeploymentOptions,
    #[serde(
        rename = "name",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub name: String,
    #[serde(
        rename = "clusterName",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub cluster_name: String,
    #[serde(
        rename = "clusterSelector",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub cluster_selector: Option<LabelSelector>,
    #[serde(
        rename = "clusterGroup",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub cluster_group: String,
    #[serde(
        rename = "clusterGroupSelector",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub cluster_group_selector: Option<LabelSelector>,
    #[serde(
        rename = "doNotDeploy",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub do_not_deploy: bool,
}

/// Access options for charts of HelmOp-generated bundles.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct BundleHelmOptions {
    #[serde(
        rename = "helmOpSecretName",
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
pub struct BundleSpec {
    #[serde(flatten)]
    pub options: BundleDeploymentOptions,
    #[serde(
        rename = "paused",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub paused: bool,
    #[serde(
        rename = "rolloutStrategy",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub rollout_strategy: Option<RolloutStrategy>,
    #[serde(
        rename = "resources",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub resources: Vec<BundleResource>,
    /// `FirstMatch` (default) or `AllMatches`.
    #[serde(
        rename = "targetCustomizationMode",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub target_customization_mode: String,
    #[serde(
        rename = "targets",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub targets: Vec<BundleTarget>,
    #[serde(
        rename = "targetRestrictions",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub target_restrictions: Vec<GitTarget>,
    #[serde(
        rename = "dependsOn",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub depends_on: Vec<BundleRef>,
    #[serde(
        rename = "contentsId",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub contents_id: String,
    #[serde(
        rename = "helmOpOptions",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub helm_op_options: Option<BundleHelmOptions>,
    #[serde(
        rename = "valuesHash",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub values_hash: String,
}

/// A status condition (wrangler's genericcondition, with lastUpdateTime).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct Condition {
    #[serde(
        rename = "type",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub type_: String,
    #[serde(
        rename = "status",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub status: String,
    #[serde(
        rename = "lastUpdateTime",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub last_update_time: String,
    #[serde(
        rename = "lastTransitionTime",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub last_transition_time: String,
    #[serde(
        rename = "reason",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub reason: String,
    #[serde(
        rename = "message",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub message: String,
}

/// Readiness summary of one downstream object.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct Summary {
    #[serde(
        rename = "state",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub state: String,
    #[serde(
        rename = "error",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub error: bool,
    #[serde(
        rename = "transitioning",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub transitioning: bool,
    #[serde(
        rename = "message",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub message: Vec<String>,
}

/// A downstream object that is not ready.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct NonReadyStatus {
    #[serde(
        rename = "uid",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub uid: String,
    #[serde(
        rename = "kind",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub kind: String,
    #[serde(
        rename = "apiVersion",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub api_version: String,
    #[serde(
        rename = "namespace",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub namespace: String,
    #[serde(
        rename = "name",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub name: String,
    #[serde(
        rename = "summary",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub summary: Summary,
}

/// A downstream object that differs from desired state.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct ModifiedStatus {
    #[serde(
        rename = "kind",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub kind: String,
    #[serde(
        rename = "apiVersion",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub api_version: String,
    #[serde(
        rename = "namespace",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub namespace: String,
    #[serde(
        rename = "name",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub name: String,
    #[serde(
        rename = "missing",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub missing: bool,
    #[serde(
        rename = "exist",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub exist: bool,
    #[serde(
        rename = "delete",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub delete: bool,
    #[serde(
        rename = "patch",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub patch: String,
}

/// A bundle deployment that is not ready, for summaries.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct NonReadyResource {
    #[serde(
        rename = "name",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub name: String,
    #[serde(
        rename = "bundleState",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub bundle_state: String,
    #[serde(
        rename = "message",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub message: String,
    #[serde(
        rename = "modifiedStatus",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub modified_status: Vec<ModifiedStatus>,
    #[serde(
        rename = "nonReadyStatus",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub non_ready_status: Vec<NonReadyStatus>,
}

/// Counts of bundle deployments per state.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct BundleSummary {
    #[serde(
        rename = "notReady",
        default,
        skip_serializing_if = "crate::serde_util::is_zero",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub not_ready: i64,
    #[serde(
        rename = "waitApplied",
        default,
        skip_serializing_if = "crate::serde_util::is_zero",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub wait_applied: i64,
    #[serde(
        rename = "errApplied",
        default,
        skip_serializing_if = "crate::serde_util::is_zero",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub err_applied: i64,
    #[serde(
        rename = "outOfSync",
        default,
        skip_serializing_if = "crate::serde_util::is_zero",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub out_of_sync: i64,
    #[serde(
        rename = "modified",
        default,
        skip_serializing_if = "crate::serde_util::is_zero",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub modified: i64,
    #[serde(rename = "ready", default, deserialize_with = "crate::serde_util::nd")]
    pub ready: i64,
    #[serde(
        rename = "pending",
        default,
        skip_serializing_if = "crate::serde_util::is_zero",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub pending: i64,
    #[serde(
        rename = "desiredReady",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub desired_ready: i64,
    #[serde(
        rename = "nonReadyResources",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub non_ready_resources: Vec<NonReadyResource>,
}

/// Rollout status of one partition.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct PartitionStatus {
    #[serde(
        rename = "name",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub name: String,
    #[serde(
        rename = "count",
        default,
        skip_serializing_if = "crate::serde_util::is_zero",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub count: i64,
    #[serde(
        rename = "maxUnavailable",
        default,
        skip_serializing_if = "crate::serde_util::is_zero",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub max_unavailable: i64,
    #[serde(
        rename = "unavailable",
        default,
        skip_serializing_if = "crate::serde_util::is_zero",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub unavailable: i64,
    #[serde(
        rename = "summary",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub summary: BundleSummary,
}

/// Human-readable bundle status.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct BundleDisplay {
    #[serde(
        rename = "readyClusters",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub ready_clusters: String,
    #[serde(
        rename = "state",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub state: String,
}

/// Identity of a deployed resource (deprecated).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct ResourceKey {
    #[serde(
        rename = "kind",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub kind: String,
    #[serde(
        rename = "apiVersion",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub api_version: String,
    #[serde(
        rename = "namespace",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub namespace: String,
    #[serde(
        rename = "name",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub name: String,
}

/// Observed state of a Bundle.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct BundleStatus {
    #[serde(
        rename = "conditions",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub conditions: Vec<Condition>,
    #[serde(
        rename = "summary",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub summary: BundleSummary,
    #[serde(
        rename = "newlyCreated",
        default,
        skip_serializing_if = "crate::serde_util::is_zero",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub newly_created: i64,
    #[serde(
        rename = "unavailable",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub unavailable: i64,
    #[serde(
        rename = "unavailablePartitions",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub unavailable_partitions: i64,
    #[serde(
        rename = "maxUnavailable",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub max_unavailable: i64,
    #[serde(
        rename = "maxUnavailablePartitions",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub max_unavailable_partitions: i64,
    #[serde(
        rename = "partitions",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub partitions: Vec<PartitionStatus>,
    #[serde(
        rename = "display",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub display: BundleDisplay,
    #[serde(
        rename = "resourceKey",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub resource_key: Vec<ResourceKey>,
    #[serde(
        rename = "ociReference",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub oci_reference: String,
    #[serde(
        rename = "observedGeneration",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub observed_generation: i64,
    #[serde(
        rename = "resourcesSha256Sum",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub resources_sha256_sum: String,
}

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
pub struct BundleDeploymentSpec {
    #[serde(
        rename = "paused",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub paused: bool,
    #[serde(
        rename = "stagedOptions",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub staged_options: BundleDeploymentOptions,
    #[serde(
        rename = "stagedDeploymentID",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub staged_deployment_id: String,
    #[serde(
        rename = "options",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub options: BundleDeploymentOptions,
    #[serde(
        rename = "deploymentID",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub deployment_id: String,
    #[serde(
        rename = "dependsOn",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub depends_on: Vec<BundleRef>,
    #[serde(
        rename = "correctDrift",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub correct_drift: Option<CorrectDrift>,
    #[serde(
        rename = "ociContents",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub oci_contents: bool,
    #[serde(
        rename = "helmChartOptions",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub helm_chart_options: Option<BundleHelmOptions>,
    #[serde(
        rename = "valuesHash",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub values_hash: String,
    #[serde(
        rename = "downstreamResourcesGeneration",
        default,
        skip_serializing_if = "crate::serde_util::is_zero",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub downstream_resources_generation: i64,
    #[serde(
        rename = "offSchedule",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub off_schedule: bool,
    #[serde(
        rename = "waitingForValues",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub waiting_for_values: bool,
}

/// A resource deployed by a bundle deployment.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct BundleDeploymentResource {
    #[serde(
        rename = "kind",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub kind: String,
    #[serde(
        rename = "apiVersion",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub api_version: String,
    #[serde(
        rename = "namespace",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub namespace: String,
    #[serde(
        rename = "name",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub name: String,
    #[serde(rename = "createdAt", default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<Time>,
}

/// Human-readable bundle deployment status.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct BundleDeploymentDisplay {
    #[serde(
        rename = "deployed",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub deployed: String,
    #[serde(
        rename = "monitored",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub monitored: String,
    #[serde(
        rename = "state",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub state: String,
}

/// Counts of downstream resources per state.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct ResourceCounts {
    #[serde(rename = "ready", default, deserialize_with = "crate::serde_util::nd")]
    pub ready: i64,
    #[serde(
        rename = "desiredReady",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub desired_ready: i64,
    #[serde(
        rename = "waitApplied",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub wait_applied: i64,
    #[serde(
        rename = "modified",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub modified: i64,
    #[serde(
        rename = "orphaned",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub orphaned: i64,
    #[serde(
        rename = "missing",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub missing: i64,
    #[serde(
        rename = "unknown",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub unknown: i64,
    #[serde(
        rename = "notReady",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub not_ready: i64,
}

/// Observed state of a BundleDeployment, written by the agent.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct BundleDeploymentStatus {
    #[serde(
        rename = "conditions",
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
        rename = "release",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub release: String,
    #[serde(
        rename = "ready",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub ready: bool,
    #[serde(
        rename = "nonModified",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub non_modified: bool,
    #[serde(
        rename = "nonReadyStatus",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub non_ready_status: Vec<NonReadyStatus>,
    #[serde(
        rename = "modifiedStatus",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub modified_status: Vec<ModifiedStatus>,
    #[serde(
        rename = "incompleteState",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub incomplete_state: bool,
    #[serde(
        rename = "display",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub display: BundleDeploymentDisplay,
    #[serde(
        rename = "syncGeneration",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub sync_generation: Option<i64>,
    #[serde(
        rename = "resources",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub resources: Vec<BundleDeploymentResource>,
    #[serde(
        rename = "resourceCounts",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub resource_counts: ResourceCounts,
    #[serde(
        rename = "downstreamResourcesGeneration",
        default,
        skip_serializing_if = "crate::serde_util::is_zero",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub downstream_resources_generation: i64,
}

/// Priority class created for the agent.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct PriorityClassSpec {
    #[serde(
        rename = "value",
        default,
        skip_serializing_if = "crate::serde_util::is_zero",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub value: i64,
    #[serde(
        rename = "preemptionPolicy",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub preemption_policy: Option<String>,
}

/// Pod disruption budget created for the agent.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct PodDisruptionBudgetSpec {
    #[serde(
        rename = "minAvailable",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub min_available: String,
    #[serde(
        rename = "maxUnavailable",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub max_unavailable: String,
}

/// Scheduling objects created for the agent.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct AgentSchedulingCustomization {
    #[serde(
        rename = "priorityClass",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub priority_class: Option<PriorityClassSpec>,
    #[serde(
        rename = "podDisruptionBudget",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub pod_disruption_budget: Option<PodDisruptionBudgetSpec>,
}

/// An environment variable of the agent; `valueFrom` is kept verbatim so that sources newer than our Kubernetes API version (e.g. `fileKeyRef`) are accepted.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct AgentEnvVar {
    #[serde(rename = "name", default, deserialize_with = "crate::serde_util::nd")]
    pub name: String,
    #[serde(
        rename = "value",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub value: String,
    #[schemars(schema_with = "crate::serde_util::preserve_unknown")]
    #[serde(rename = "valueFrom", default, skip_serializing_if = "Option::is_none")]
    pub value_from: Option<GenericMap>,
}

/// A reference to an object in the same namespace, by name.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct LocalObjectRef {
    #[serde(rename = "name", default, deserialize_with = "crate::serde_util::nd")]
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
pub struct ClusterSpec {
    #[serde(
        rename = "paused",
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
        rename = "kubeConfigSecret",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub kube_config_secret: String,
    #[serde(
        rename = "kubeConfigSecretNamespace",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub kube_config_secret_namespace: String,
    #[serde(
        rename = "redeployAgentGeneration",
        default,
        skip_serializing_if = "crate::serde_util::is_zero",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub redeploy_agent_generation: i64,
    #[serde(
        rename = "agentEnvVars",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub agent_env_vars: Vec<AgentEnvVar>,
    #[serde(
        rename = "agentNamespace",
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
    #[serde(
        rename = "templateValues",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub template_values: Option<GenericMap>,
    #[serde(
        rename = "agentTolerations",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub agent_tolerations: Vec<Toleration>,
    #[serde(
        rename = "agentAffinity",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub agent_affinity: Option<Affinity>,
    #[serde(
        rename = "agentResources",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub agent_resources: Option<ResourceRequirements>,
    #[serde(
        rename = "hostNetwork",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub host_network: Option<bool>,
    #[serde(
        rename = "agentSchedulingCustomization",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub agent_scheduling_customization: Option<AgentSchedulingCustomization>,
    #[serde(
        rename = "agentPullSecrets",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub agent_pull_secrets: Option<Vec<LocalObjectRef>>,
}

/// Human-readable cluster status.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct ClusterDisplay {
    #[serde(
        rename = "readyBundles",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub ready_bundles: String,
    #[serde(
        rename = "state",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub state: String,
}

/// Agent heartbeat.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct AgentStatus {
    #[serde(rename = "lastSeen", default, skip_serializing_if = "Option::is_none")]
    pub last_seen: Option<Time>,
    #[serde(
        rename = "namespace",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub namespace: String,
}

/// Observed state of a Cluster.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct ClusterStatus {
    #[serde(
        rename = "conditions",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub conditions: Vec<Condition>,
    #[serde(
        rename = "namespace",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub namespace: String,
    #[serde(
        rename = "summary",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub summary: BundleSummary,
    #[serde(
        rename = "resourceCounts",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub resource_counts: ResourceCounts,
    #[serde(
        rename = "readyGitRepos",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub ready_git_repos: i64,
    #[serde(
        rename = "desiredReadyGitRepos",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub desired_ready_git_repos: i64,
    #[serde(
        rename = "readyHelmOps",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub ready_helm_ops: i64,
    #[serde(
        rename = "desiredReadyHelmOps",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub desired_ready_helm_ops: i64,
    #[serde(
        rename = "agentEnvVarsHash",
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
        rename = "agentHostNetwork",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub agent_host_network: bool,
    #[serde(
        rename = "agentDeployedGeneration",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub agent_deployed_generation: Option<i64>,
    #[serde(
        rename = "agentMigrated",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub agent_migrated: bool,
    #[serde(
        rename = "agentNamespaceMigrated",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub agent_namespace_migrated: bool,
    #[serde(
        rename = "cattleNamespaceMigrated",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub cattle_namespace_migrated: bool,
    #[serde(
        rename = "agentAffinityHash",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub agent_affinity_hash: String,
    #[serde(
        rename = "agentResourcesHash",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub agent_resources_hash: String,
    #[serde(
        rename = "agentTolerationsHash",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub agent_tolerations_hash: String,
    #[serde(
        rename = "agentConfigChanged",
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
    #[serde(
        rename = "display",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub display: ClusterDisplay,
    #[serde(rename = "agent", default, deserialize_with = "crate::serde_util::nd")]
    pub agent: AgentStatus,
    #[schemars(schema_with = "crate::serde_util::duration_schema")]
    #[serde(
        rename = "garbageCollectionInterval",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub garbage_collection_interval: Option<String>,
    #[serde(
        rename = "agentSchedulingCustomizationHash",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub agent_scheduling_customization_hash: String,
    #[serde(
        rename = "scheduled",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub scheduled: bool,
    #[serde(
        rename = "activeSchedule",
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
pub struct ClusterGroupSpec {
    #[serde(rename = "selector", default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
}

/// Human-readable cluster group status.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct ClusterGroupDisplay {
    #[serde(
        rename = "readyClusters",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub ready_clusters: String,
    #[serde(
        rename = "readyBundles",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub ready_bundles: String,
    #[serde(
        rename = "state",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub state: String,
}

/// Observed state of a ClusterGroup.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct ClusterGroupStatus {
    #[serde(
        rename = "clusterCount",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub cluster_count: i64,
    #[serde(
        rename = "nonReadyClusterCount",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub non_ready_cluster_count: i64,
    #[serde(
        rename = "nonReadyClusters",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub non_ready_clusters: Vec<String>,
    #[serde(
        rename = "conditions",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub conditions: Vec<Condition>,
    #[serde(
        rename = "summary",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub summary: BundleSummary,
    #[serde(
        rename = "display",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub display: ClusterGroupDisplay,
    #[serde(
        rename = "resourceCounts",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub resource_counts: ResourceCounts,
}

/// A driven-scan bundle: base directory and optional options file.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct BundlePath {
    #[serde(
        rename = "base",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub base: String,
    #[serde(
        rename = "options",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub options: String,
}

/// Author and message of image-scan commits.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct CommitSpec {
    #[serde(
        rename = "authorName",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub author_name: String,
    #[serde(
        rename = "authorEmail",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub author_email: String,
    #[serde(
        rename = "messageTemplate",
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
pub struct GitRepoSpec {
    #[serde(
        rename = "repo",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub repo: String,
    #[serde(
        rename = "branch",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub branch: String,
    #[serde(
        rename = "revision",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub revision: String,
    #[serde(
        rename = "targetNamespace",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub target_namespace: String,
    #[serde(
        rename = "clientSecretName",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub client_secret_name: String,
    #[serde(
        rename = "helmSecretName",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub helm_secret_name: String,
    #[serde(
        rename = "helmSecretNameForPaths",
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
    #[serde(rename = "caBundle", default, skip_serializing_if = "Option::is_none")]
    pub ca_bundle: Option<String>,
    #[serde(
        rename = "insecureSkipTLSVerify",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub insecure_skip_tls_verify: bool,
    #[serde(
        rename = "paths",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub paths: Vec<String>,
    #[serde(
        rename = "paused",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub paused: bool,
    #[serde(
        rename = "serviceAccount",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub service_account: String,
    #[serde(
        rename = "targets",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub targets: Vec<GitTarget>,
    #[schemars(schema_with = "crate::serde_util::duration_schema")]
    #[serde(
        rename = "pollingInterval",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub polling_interval: Option<String>,
    #[serde(
        rename = "forceSyncGeneration",
        default,
        skip_serializing_if = "crate::serde_util::is_zero",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub force_sync_generation: i64,
    #[schemars(schema_with = "crate::serde_util::duration_schema")]
    #[serde(
        rename = "imageScanInterval",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub image_scan_interval: Option<String>,
    #[serde(
        rename = "imageScanCommit",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub image_scan_commit: Option<CommitSpec>,
    #[serde(
        rename = "keepResources",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub keep_resources: bool,
    #[serde(
        rename = "deleteNamespace",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub delete_namespace: bool,
    #[serde(
        rename = "correctDrift",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub correct_drift: Option<CorrectDrift>,
    #[serde(
        rename = "disablePolling",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub disable_polling: bool,
    #[serde(
        rename = "ociRegistrySecret",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub oci_registry_secret: String,
    #[serde(
        rename = "webhookSecret",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub webhook_secret: String,
    #[serde(
        rename = "bundles",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub bundles: Vec<BundlePath>,
}

/// Human-readable GitRepo/HelmOp status.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct StatusDisplay {
    #[serde(
        rename = "readyBundleDeployments",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub ready_bundle_deployments: String,
    #[serde(
        rename = "state",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub state: String,
    #[serde(
        rename = "message",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub message: String,
    #[serde(
        rename = "error",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub error: bool,
}

/// Clusters per resource state.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct PerClusterState {
    #[serde(
        rename = "ready",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub ready: Vec<String>,
    #[serde(
        rename = "waitApplied",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub wait_applied: Vec<String>,
    #[serde(
        rename = "pending",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub pending: Vec<String>,
    #[serde(
        rename = "modified",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub modified: Vec<String>,
    #[serde(
        rename = "orphaned",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub orphaned: Vec<String>,
    #[serde(
        rename = "missing",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub missing: Vec<String>,
    #[serde(
        rename = "unknown",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub unknown: Vec<String>,
    #[serde(
        rename = "notReady",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub not_ready: Vec<String>,
}

/// A resource deployed by a GitRepo/HelmOp, with its per-cluster state.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct Resource {
    #[serde(
        rename = "apiVersion",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub api_version: String,
    #[serde(
        rename = "kind",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub kind: String,
    #[serde(
        rename = "type",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub type_: String,
    #[serde(
        rename = "id",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub id: String,
    #[serde(
        rename = "namespace",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub namespace: String,
    #[serde(
        rename = "name",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub name: String,
    #[serde(
        rename = "incompleteState",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub incomplete_state: bool,
    #[serde(
        rename = "state",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub state: String,
    #[serde(
        rename = "error",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub error: bool,
    #[serde(
        rename = "transitioning",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub transitioning: bool,
    #[serde(
        rename = "message",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub message: String,
    #[serde(
        rename = "perClusterState",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub per_cluster_state: PerClusterState,
}

/// Status shared by GitRepo and HelmOp.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct StatusBase {
    #[serde(
        rename = "readyClusters",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub ready_clusters: i64,
    #[serde(
        rename = "desiredReadyClusters",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub desired_ready_clusters: i64,
    #[serde(
        rename = "summary",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub summary: BundleSummary,
    #[serde(
        rename = "display",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub display: StatusDisplay,
    #[serde(
        rename = "conditions",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub conditions: Vec<Condition>,
    #[serde(
        rename = "resources",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub resources: Vec<Resource>,
    #[serde(
        rename = "resourceCounts",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub resource_counts: ResourceCounts,
    #[serde(
        rename = "perClusterResourceCounts",
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub per_cluster_resource_counts: BTreeMap<String, ResourceCounts>,
}

/// Observed state of a GitRepo.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct GitRepoStatus {
    #[serde(flatten)]
    pub base: StatusBase,
    #[serde(
        rename = "observedGeneration",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub observed_generation: i64,
    #[serde(
        rename = "updateGeneration",
        default,
        skip_serializing_if = "crate::serde_util::is_zero",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub update_generation: i64,
    #[serde(
        rename = "commit",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub commit: String,
    #[serde(
        rename = "webhookCommit",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub webhook_commit: String,
    #[serde(
        rename = "lastWebhookTime",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub last_webhook_time: Option<Time>,
    #[serde(
        rename = "pollingCommit",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub polling_commit: String,
    #[serde(
        rename = "gitJobStatus",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub git_job_status: String,
    #[serde(
        rename = "lastSyncedImageScanTime",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub last_synced_image_scan_time: Option<Time>,
    #[serde(
        rename = "lastPollingTriggered",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub last_polling_triggered: Option<Time>,
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
pub struct ClusterRegistrationSpec {
    #[serde(
        rename = "clientID",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub client_id: String,
    #[serde(
        rename = "clientRandom",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub client_random: String,
    #[serde(
        rename = "clusterLabels",
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub cluster_labels: BTreeMap<String, String>,
}

/// Result of a registration request.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct ClusterRegistrationStatus {
    #[serde(
        rename = "clusterName",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub cluster_name: String,
    #[serde(
        rename = "granted",
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
pub struct ClusterRegistrationTokenSpec {
    #[schemars(schema_with = "crate::serde_util::duration_schema")]
    #[serde(rename = "ttl", default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<String>,
}

/// Where the token's credentials are and when it expires.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct ClusterRegistrationTokenStatus {
    #[serde(rename = "expires", default, skip_serializing_if = "Option::is_none")]
    pub expires: Option<Time>,
    #[serde(
        rename = "secretName",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub secret_name: String,
}

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
pub struct BundleNamespaceMappingFields {
    #[serde(
        rename = "bundleSelector",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub bundle_selector: Option<LabelSelector>,
    #[serde(
        rename = "namespaceSelector",
        default,
        skip_serializing_if = "Option::is_none"
    )]
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
pub struct GitRepoRestrictionFields {
    #[serde(
        rename = "defaultServiceAccount",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub default_service_account: String,
    #[serde(
        rename = "allowedServiceAccounts",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub allowed_service_accounts: Vec<String>,
    #[serde(
        rename = "allowedRepoPatterns",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub allowed_repo_patterns: Vec<String>,
    #[serde(
        rename = "defaultClientSecretName",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub default_client_secret_name: String,
    #[serde(
        rename = "allowedClientSecretNames",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub allowed_client_secret_names: Vec<String>,
    #[serde(
        rename = "allowedTargetNamespaces",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub allowed_target_namespaces: Vec<String>,
    #[serde(
        rename = "allowedTargetNamespaceSelector",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub allowed_target_namespace_selector: Option<LabelSelector>,
}

/// Policy rules for GitRepos.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct GitRepoPolicySpec {
    #[serde(
        rename = "defaultServiceAccount",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub default_service_account: String,
    #[serde(
        rename = "defaultClientSecretName",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub default_client_secret_name: String,
    #[serde(
        rename = "allowedClientSecretNames",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub allowed_client_secret_names: Vec<String>,
    #[serde(
        rename = "allowedRepoPatterns",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub allowed_repo_patterns: Vec<String>,
}

/// Policy rules for HelmOps.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct HelmOpPolicySpec {
    #[serde(
        rename = "defaultServiceAccount",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub default_service_account: String,
    #[serde(
        rename = "defaultHelmSecretName",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub default_helm_secret_name: String,
    #[serde(
        rename = "allowedHelmSecretNames",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub allowed_helm_secret_names: Vec<String>,
    #[serde(
        rename = "allowedHelmRepoPatterns",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub allowed_helm_repo_patterns: Vec<String>,
    #[serde(
        rename = "allowedChartPatterns",
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
pub struct PolicyFields {
    #[serde(
        rename = "requireServiceAccount",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub require_service_account: bool,
    #[serde(
        rename = "allowedServiceAccounts",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub allowed_service_accounts: Vec<String>,
    #[serde(
        rename = "allowNamespaceCreation",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub allow_namespace_creation: bool,
    #[serde(rename = "gitRepo", default, skip_serializing_if = "Option::is_none")]
    pub git_repo: Option<GitRepoPolicySpec>,
    #[serde(rename = "helmOp", default, skip_serializing_if = "Option::is_none")]
    pub helm_op: Option<HelmOpPolicySpec>,
}

/// How many bundle deployments reference a Content.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct ContentStatus {
    #[serde(
        rename = "referenceCount",
        default,
        skip_serializing_if = "crate::serde_util::is_zero",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub reference_count: i64,
}

/// Deduplicated, gzip-compressed bundle resources, named by sha256.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, CustomResource)]
#[kube(
    group = "fleet.cattle.io",
    version = "v1alpha1",
    kind = "Content",
    no_spec,
    status = "ContentStatus",
    derive = "Default",
    derive = "PartialEq"
)]
pub struct ContentFields {
    #[schemars(schema_with = "crate::serde_util::bytes_schema")]
    #[serde(rename = "content", default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(
        rename = "sha256sum",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub sha256sum: String,
}

/// A Helm chart deployed directly from a repository.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, CustomResource)]
#[kube(
    group = "fleet.cattle.io",
    version = "v1alpha1",
    kind = "HelmOp",
    namespaced,
    status = "HelmOpStatus",
    derive = "Default",
    derive = "PartialEq"
)]
#[kube(printcolumn(name = "Repo", type_ = "string", json_path = ".spec.helm.repo"))]
#[kube(printcolumn(name = "Chart", type_ = "string", json_path = ".spec.helm.chart"))]
#[kube(printcolumn(name = "Version", type_ = "string", json_path = ".status.version"))]
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
pub struct HelmOpSpec {
    // The derived (strict) reader: `BundleSpec`'s own impl reads `null` as empty, which through
    // `flatten` would also turn a malformed bundle spec into an empty one.
    #[serde(flatten, deserialize_with = "BundleSpec::deserialize")]
    pub bundle: BundleSpec,
    #[serde(
        rename = "labels",
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub labels: BTreeMap<String, String>,
    #[schemars(schema_with = "crate::serde_util::duration_schema")]
    #[serde(
        rename = "pollingInterval",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub polling_interval: Option<String>,
    #[serde(
        rename = "helmSecretName",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub helm_secret_name: String,
    #[serde(
        rename = "insecureSkipTLSVerify",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub insecure_skip_tls_verify: bool,
}

/// Observed state of a HelmOp.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct HelmOpStatus {
    #[serde(flatten)]
    pub base: StatusBase,
    #[serde(
        rename = "lastPollingTriggered",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub last_polling_triggered: Option<Time>,
    #[serde(
        rename = "version",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub version: String,
}

/// Secret with registry credentials.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct ImageScanSecretRef {
    #[serde(
        rename = "name",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub name: String,
}

/// Pick the highest tag in a semver range.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct SemVerPolicy {
    #[serde(
        rename = "range",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub range: String,
}

/// Pick tags by alphabetical order.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct AlphabeticalPolicy {
    #[serde(
        rename = "order",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub order: String,
}

/// How the latest image tag is chosen.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct ImagePolicyChoice {
    #[serde(rename = "semver", default, skip_serializing_if = "Option::is_none")]
    pub semver: Option<SemVerPolicy>,
    #[serde(
        rename = "alphabetical",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub alphabetical: Option<AlphabeticalPolicy>,
}

/// Scans an image registry and commits newer tags to git.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, CustomResource)]
#[kube(
    group = "fleet.cattle.io",
    version = "v1alpha1",
    kind = "ImageScan",
    namespaced,
    status = "ImageScanStatus",
    derive = "Default",
    derive = "PartialEq"
)]
#[kube(printcolumn(name = "Repository", type_ = "string", json_path = ".spec.image"))]
#[kube(printcolumn(name = "Latest", type_ = "string", json_path = ".status.latestTag"))]
#[serde(remote = "Self")]
pub struct ImageScanSpec {
    #[serde(
        rename = "tagName",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub tag_name: String,
    #[serde(
        rename = "gitrepoName",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub gitrepo_name: String,
    #[serde(
        rename = "image",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub image: String,
    #[schemars(schema_with = "crate::serde_util::duration_schema")]
    #[serde(rename = "interval", default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<String>,
    #[serde(rename = "secretRef", default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<ImageScanSecretRef>,
    #[serde(
        rename = "suspend",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub suspend: bool,
    #[serde(rename = "policy", default, deserialize_with = "crate::serde_util::nd")]
    pub policy: ImagePolicyChoice,
}

/// Latest image found by a scan.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct ImageScanStatus {
    #[serde(
        rename = "observedGeneration",
        default,
        skip_serializing_if = "crate::serde_util::is_zero",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub observed_generation: i64,
    #[serde(
        rename = "conditions",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub conditions: Vec<Condition>,
    #[serde(
        rename = "lastScanTime",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub last_scan_time: Option<Time>,
    #[serde(
        rename = "latestImage",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub latest_image: String,
    #[serde(
        rename = "latestTag",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub latest_tag: String,
    #[serde(
        rename = "latestDigest",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub latest_digest: String,
    #[serde(
        rename = "canonicalImageName",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub canonical_image_name: String,
}

/// Clusters a schedule applies to.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct ScheduleTargets {
    #[serde(
        rename = "clusters",
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
pub struct ScheduleSpec {
    #[serde(
        rename = "schedule",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub schedule: String,
    #[schemars(schema_with = "crate::serde_util::duration_schema")]
    #[serde(rename = "duration", default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<String>,
    #[serde(
        rename = "location",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub location: String,
    #[serde(
        rename = "targets",
        default,
        deserialize_with = "crate::serde_util::nd"
    )]
    pub targets: ScheduleTargets,
}

/// Whether a schedule is active and what it matches.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct ScheduleStatus {
    #[serde(
        rename = "conditions",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub conditions: Vec<Condition>,
    #[serde(
        rename = "active",
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub active: bool,
    #[serde(
        rename = "nextStartTime",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub next_start_time: Option<Time>,
    #[serde(
        rename = "matchingClusters",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub matching_clusters: Vec<String>,
}

// Spec types read `"spec": null` (and a missing spec) as the zero value, as Go's decoder does.
crate::serde_util::null_as_default!(
    BundleSpec,
    BundleDeploymentSpec,
    ClusterSpec,
    ClusterGroupSpec,
    GitRepoSpec,
    ClusterRegistrationSpec,
    ClusterRegistrationTokenSpec,
    HelmOpSpec,
    ImageScanSpec,
    ScheduleSpec,
);
