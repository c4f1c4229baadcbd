//! `Content` (stored bundle resources) and `HelmOp` (a Helm chart deployed without a Git
//! repository).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use super::*;

/// How many bundle deployments reference a Content.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ContentStatus {
    #[serde(
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
#[serde(rename_all = "camelCase")]
pub struct ContentFields {
    #[schemars(schema_with = "crate::serde_util::bytes_schema")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(
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
#[serde(rename_all = "camelCase")]
pub struct HelmOpSpec {
    // The derived (strict) reader: `BundleSpec`'s own impl reads `null` as empty, which through
    // `flatten` would also turn a malformed bundle spec into an empty one.
    #[serde(flatten, deserialize_with = "BundleSpec::deserialize")]
    pub bundle: BundleSpec,
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub labels: BTreeMap<String, String>,
    #[schemars(schema_with = "crate::serde_util::duration_schema")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub polling_interval: Option<String>,
    #[serde(
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
#[serde(rename_all = "camelCase")]
pub struct HelmOpStatus {
    #[serde(flatten)]
    pub base: StatusBase,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_polling_triggered: Option<Time>,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub version: String,
}
