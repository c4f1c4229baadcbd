//! Wire types of `fleet.cattle.io/v1alpha1`, field for field as upstream serialises them.
//! Field order follows upstream's Go structs because `deploymentID` hashes the JSON encoding.
//!
//! One module per kind group. Every struct is `rename_all = "camelCase"`; a `rename` on a field
//! marks a real exception to it (upstream's `ID`, `URL`, `TLS`... spellings).

mod bundle;
mod bundle_deployment;
mod cluster;
mod gitrepo;
mod helmop;
mod imagescan;
mod options;
mod policy;
mod schedule;
mod status;

pub use bundle::*;
pub use bundle_deployment::*;
pub use cluster::*;
pub use gitrepo::*;
pub use helmop::*;
pub use imagescan::*;
pub use options::*;
pub use policy::*;
pub use schedule::*;
pub use status::*;

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
