//! The built-in kinds, derived from k8s-openapi rather than typed by hand.
//!
//! Each listed type contributes its group, version, kind, plural (URL path segment) and scope from
//! its `k8s_openapi::Resource` constants, and its list kind from `ListableResource`. Subresources
//! come from the type's OpenAPI schema (the `schemars` feature): a kind whose schema has a
//! top-level `status` property gets `/status`, and a kind whose `spec` has a `replicas` property
//! gets `/scale` (that is exactly Deployment, ReplicaSet, StatefulSet and ReplicationController,
//! the kinds kube-apiserver serves `scale` for). Only short names and categories, which k8s-openapi
//! does not carry, come from a small table.

use std::any::TypeId;

use k8s_openapi::schemars::{JsonSchema, SchemaGenerator};
use k8s_openapi::{ListableResource, NamespaceResourceScope, Resource};
use serde_json::Value;

use crate::storage::registry::{ResourceInfo, ScalePaths};

fn entry<T>() -> ResourceInfo
where
    T: Resource + ListableResource + JsonSchema,
    T::Scope: 'static,
{
    let root = SchemaGenerator::default().into_root_schema_for::<T>();
    let root = root.as_value();
    let props = root.get("properties");
    let status = props.and_then(|p| p.get("status")).is_some();
    let spec_has_replicas = props
        .and_then(|p| p.get("spec"))
        .map(|s| resolve(root, s))
        .and_then(|s| s.get("properties"))
        .and_then(|p| p.get("replicas"))
        .is_some();
    let (short_names, categories) = names_for(T::URL_PATH_SEGMENT);
    ResourceInfo {
        group: T::GROUP.to_string(),
        version: T::VERSION.to_string(),
        kind: T::KIND.to_string(),
        list_kind: T::LIST_KIND.to_string(),
        plural: T::URL_PATH_SEGMENT.to_string(),
        singular: T::KIND.to_ascii_lowercase(),
        namespaced: TypeId::of::<T::Scope>() == TypeId::of::<NamespaceResourceScope>(),
        status,
        scale: spec_has_replicas.then(|| ScalePaths {
            spec_replicas: "spec.replicas".into(),
            status_replicas: "status.replicas".into(),
            label_selector: Some("status.selector".into()),
        }),
        short_names: short_names.iter().map(|s| s.to_string()).collect(),
        categories: categories.iter().map(|s| s.to_string()).collect(),
        builtin: true,
        schema: None,
        printer_columns: Vec::new(),
    }
}

/// Follows a `$ref` into the root schema's definitions.
fn resolve<'a>(root: &'a Value, s: &'a Value) -> &'a Value {
    match s.get("$ref").and_then(Value::as_str) {
        Some(r) => {
            let name = r.rsplit('/').next().unwrap_or("");
            root.get("$defs")
                .or_else(|| root.get("definitions"))
                .and_then(|d| d.get(name))
                .unwrap_or(s)
        }
        None => s,
    }
}

/// Short names and categories kubectl knows; not present in k8s-openapi metadata.
fn names_for(plural: &str) -> (&'static [&'static str], &'static [&'static str]) {
    const ALL: &[&str] = &["all"];
    match plural {
        "pods" => (&["po"], ALL),
        "services" => (&["svc"], ALL),
        "deployments" => (&["deploy"], ALL),
        "replicasets" => (&["rs"], ALL),
        "statefulsets" => (&["sts"], ALL),
        "daemonsets" => (&["ds"], ALL),
        "jobs" => (&[], ALL),
        "cronjobs" => (&["cj"], ALL),
        "replicationcontrollers" => (&["rc"], ALL),
        "horizontalpodautoscalers" => (&["hpa"], ALL),
        "configmaps" => (&["cm"], &[]),
        "namespaces" => (&["ns"], &[]),
        "nodes" => (&["no"], &[]),
        "persistentvolumeclaims" => (&["pvc"], &[]),
        "persistentvolumes" => (&["pv"], &[]),
        "serviceaccounts" => (&["sa"], &[]),
        "endpoints" => (&["ep"], &[]),
        "events" => (&["ev"], &[]),
        "limitranges" => (&["limits"], &[]),
        "resourcequotas" => (&["quota"], &[]),
        "componentstatuses" => (&["cs"], &[]),
        "ingresses" => (&["ing"], &[]),
        "networkpolicies" => (&["netpol"], &[]),
        "poddisruptionbudgets" => (&["pdb"], &[]),
        "customresourcedefinitions" => (&["crd", "crds"], &["api-extensions"]),
        "storageclasses" => (&["sc"], &[]),
        "certificatesigningrequests" => (&["csr"], &[]),
        "priorityclasses" => (&["pc"], &[]),
        "prioritylevelconfigurations" => (&[], &[]),
        "mutatingwebhookconfigurations" | "validatingwebhookconfigurations" => {
            (&[], &["api-extensions"])
        }
        "apiservices" => (&[], &["api-extensions"]),
        _ => (&[], &[]),
    }
}

macro_rules! table {
    ($($t:path),* $(,)?) => { vec![$(entry::<$t>()),*] };
}

macro_rules! schemas {
    ($($t:path),* $(,)?) => { vec![$(crate::storage::schema::schema_of::<$t>()),*] };
}

/// Calls `$m![...]` with every built-in type, so the resource table and the OpenAPI documents
/// are built from one list.
macro_rules! builtin_types {
    ($m:ident) => {{
    use k8s_openapi::api as a;
    $m![
        a::core::v1::ConfigMap,
        a::core::v1::ComponentStatus,
        a::core::v1::Endpoints,
        a::core::v1::Event,
        a::core::v1::LimitRange,
        a::core::v1::Namespace,
        a::core::v1::Node,
        a::core::v1::PersistentVolume,
        a::core::v1::PersistentVolumeClaim,
        a::core::v1::Pod,
        a::core::v1::PodTemplate,
        a::core::v1::ReplicationController,
        a::core::v1::ResourceQuota,
        a::core::v1::Secret,
        a::core::v1::Service,
        a::core::v1::ServiceAccount,
        a::admissionregistration::v1::MutatingWebhookConfiguration,
        a::admissionregistration::v1::ValidatingWebhookConfiguration,
        a::admissionregistration::v1::ValidatingAdmissionPolicy,
        a::admissionregistration::v1::ValidatingAdmissionPolicyBinding,
        a::apps::v1::ControllerRevision,
        a::apps::v1::DaemonSet,
        a::apps::v1::Deployment,
        a::apps::v1::ReplicaSet,
        a::apps::v1::StatefulSet,
        a::autoscaling::v1::HorizontalPodAutoscaler,
        a::autoscaling::v2::HorizontalPodAutoscaler,
        a::batch::v1::CronJob,
        a::batch::v1::Job,
        a::certificates::v1::CertificateSigningRequest,
        a::coordination::v1::Lease,
        a::discovery::v1::EndpointSlice,
        a::events::v1::Event,
        a::flowcontrol::v1::FlowSchema,
        a::flowcontrol::v1::PriorityLevelConfiguration,
        a::networking::v1::Ingress,
        a::networking::v1::IngressClass,
        a::networking::v1::IPAddress,
        a::networking::v1::NetworkPolicy,
        a::networking::v1::ServiceCIDR,
        a::node::v1::RuntimeClass,
        a::policy::v1::PodDisruptionBudget,
        a::rbac::v1::ClusterRole,
        a::rbac::v1::ClusterRoleBinding,
        a::rbac::v1::Role,
        a::rbac::v1::RoleBinding,
        a::scheduling::v1::PriorityClass,
        a::storage::v1::CSIDriver,
        a::storage::v1::CSINode,
        a::storage::v1::CSIStorageCapacity,
        a::storage::v1::StorageClass,
        a::storage::v1::VolumeAttachment,
        k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
        k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService,
    ]
    }};
}

/// Every built-in resource served by default (the GA versions kube-apiserver 1.33 enables).
/// Computed once per process (schema generation is not free) and cloned per server.
pub fn builtin_resources() -> Vec<ResourceInfo> {
    static TABLE: std::sync::OnceLock<Vec<ResourceInfo>> = std::sync::OnceLock::new();
    TABLE.get_or_init(compute).clone()
}

fn compute() -> Vec<ResourceInfo> {
    builtin_types!(table)
}

/// OpenAPI v3 schemas of every built-in kind, for `/openapi/v3` (see [`crate::http::openapi`]).
pub(crate) fn builtin_schemas() -> Vec<crate::storage::schema::KindSchema> {
    builtin_types!(schemas)
}
