//! Label, annotation, finalizer and secret-type keys shared by every Fleet component; they are
//! part of the wire contract with upstream tooling.

/// Prefix of Fleet's own labels; such labels are always copied from bundles to deployments.
pub const FLEET_LABEL_PREFIX: &str = "fleet.cattle.io/";
/// Prefix of Rancher management labels (kept in templating context).
pub const MANAGEMENT_LABEL_PREFIX: &str = "management.cattle.io/";
/// Label naming the GitRepo that produced a bundle; used for pruning.
pub const REPO_LABEL: &str = "fleet.cattle.io/repo-name";
/// Label holding the git commit a bundle was built from.
pub const COMMIT_LABEL: &str = "fleet.cattle.io/commit";
/// Label on BundleDeployments naming their bundle.
pub const BUNDLE_LABEL: &str = "fleet.cattle.io/bundle-name";
/// Label on BundleDeployments naming their bundle's namespace.
pub const BUNDLE_NAMESPACE_LABEL: &str = "fleet.cattle.io/bundle-namespace";
/// Label on objects Fleet manages.
pub const MANAGED_LABEL: &str = "fleet.cattle.io/managed";
/// Label on BundleDeployments naming the target cluster's namespace.
pub const CLUSTER_NAMESPACE_LABEL: &str = "fleet.cattle.io/cluster-namespace";
/// Label on BundleDeployments naming the target cluster.
pub const CLUSTER_LABEL: &str = "fleet.cattle.io/cluster";
/// Label on BundleDeployments naming their Content (manifest ID), used by Content GC.
pub const CONTENT_NAME_LABEL: &str = "fleet.cattle.io/content-name";
/// Clusters with this label are managed elsewhere and skipped.
pub const CLUSTER_MANAGEMENT_LABEL: &str = "fleet.cattle.io/cluster-management";
/// Label linking a ClusterRegistration to its token.
pub const REGISTRATION_TOKEN_LABEL: &str = "fleet.cattle.io/registration-token";
/// Label of bundles created by a HelmOp.
pub const HELMOP_LABEL: &str = "fleet.cattle.io/fleet-helm-name";
/// Label of the user that created an object.
pub const CREATED_BY_USER_ID_LABEL: &str = "fleet.cattle.io/created-by-user-id";
/// Sharding label: only the controller with this shard id handles the object.
pub const SHARD_REF_LABEL: &str = "fleet.cattle.io/shard-ref";
/// Label marking a BundleDeployment's owned objects.
pub const BUNDLE_DEPLOYMENT_OWNERSHIP_LABEL: &str = "fleet.cattle.io/bundledeployment";
/// Label on internal secrets of bundles.
pub const INTERNAL_SECRET_LABEL: &str = "fleet.cattle.io/bundle-internal-secret";
/// Cluster label whose value also satisfies a target's `clusterName`.
pub const CLUSTER_DISPLAY_NAME_LABEL: &str = "management.cattle.io/cluster-display-name";

/// Annotation on cluster namespaces naming the Cluster's namespace.
pub const CLUSTER_NAMESPACE_ANNOTATION: &str = "fleet.cattle.io/cluster-namespace";
/// Annotation on cluster namespaces naming the Cluster.
pub const CLUSTER_ANNOTATION: &str = "fleet.cattle.io/cluster";
/// Annotation linking a Cluster to its registration.
pub const CLUSTER_REGISTRATION_ANNOTATION: &str = "fleet.cattle.io/cluster-registration";
/// Annotation linking a Cluster to its registration's namespace.
pub const CLUSTER_REGISTRATION_NAMESPACE_ANNOTATION: &str =
    "fleet.cattle.io/cluster-registration-namespace";
/// Label (hash of the object set id) that marks objects a deployment owns.
pub const OBJECTSET_HASH_LABEL: &str = "objectset.rio.cattle.io/hash";
/// Annotation holding the object set id.
pub const OBJECTSET_ID_ANNOTATION: &str = "objectset.rio.cattle.io/id";

/// Finalizer on Bundles.
pub const BUNDLE_FINALIZER: &str = "fleet.cattle.io/bundle-finalizer";
/// Finalizer on BundleDeployments.
pub const BUNDLE_DEPLOYMENT_FINALIZER: &str = "fleet.cattle.io/bundle-deployment-finalizer";
/// Finalizer on Clusters.
pub const CLUSTER_FINALIZER: &str = "fleet.cattle.io/cluster-finalizer";
/// Finalizer on GitRepos.
pub const GITREPO_FINALIZER: &str = "fleet.cattle.io/gitrepo-finalizer";

/// Type of the Secret holding a Bundle's Helm values.
pub const SECRET_TYPE_BUNDLE_VALUES: &str = "fleet.cattle.io/bundle-values/v1alpha1";
/// Type of the Secret holding a BundleDeployment's values.
pub const SECRET_TYPE_BUNDLE_DEPLOYMENT_OPTIONS: &str =
    "fleet.cattle.io/bundle-deployment/v1alpha1";
/// Type of the Secret holding OCI storage credentials.
pub const SECRET_TYPE_OCI_STORAGE: &str = "fleet.cattle.io/bundle-oci-storage/v1alpha1";

/// Default workspace of `fleet apply` and of the local cluster.
pub const DEFAULT_NAMESPACE: &str = "fleet-local";
/// Name of the bootstrap cluster.
pub const LOCAL_CLUSTER_NAME: &str = "local";
/// Name of the default target and cluster group.
pub const DEFAULT_TARGET: &str = "default";
/// Encoding of compressed bundle resources.
pub const ENCODING_BASE64_GZ: &str = "base64+gz";
/// API group of all Fleet kinds.
pub const GROUP: &str = "fleet.cattle.io";
/// API version string of all Fleet kinds.
pub const API_VERSION: &str = "fleet.cattle.io/v1alpha1";
