//! `ImageScan`: image tag policies that update a Git repository.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::*;

/// Secret with registry credentials.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ImageScanSecretRef {
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub name: String,
}

/// Pick the highest tag in a semver range.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SemVerPolicy {
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub range: String,
}

/// Pick tags by alphabetical order.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AlphabeticalPolicy {
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub order: String,
}

/// How the latest image tag is chosen.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ImagePolicyChoice {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semver: Option<SemVerPolicy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
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
#[serde(rename_all = "camelCase")]
pub struct ImageScanSpec {
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub tag_name: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub gitrepo_name: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub image: String,
    #[schemars(schema_with = "crate::serde_util::duration_schema")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<ImageScanSecretRef>,
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_false",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub suspend: bool,
    #[serde(default, deserialize_with = "crate::serde_util::nd")]
    pub policy: ImagePolicyChoice,
}

/// Latest image found by a scan.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ImageScanStatus {
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_zero",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub observed_generation: i64,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_scan_time: Option<Time>,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub latest_image: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub latest_tag: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub latest_digest: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nd"
    )]
    pub canonical_image_name: String,
}
