//! Pure targeting: which clusters a bundle goes to, with which options, in which rollout partition.

pub mod error;
pub mod fleet;
pub mod matcher;
pub mod options;
pub mod rollout;
pub mod selector;
pub mod status;
pub mod target;
pub mod values;

pub use error::Error;
pub use fleet::{Fleet, Key};
pub use target::{
    Stats, Target, bundle_deployment, bundle_deployment_namespace, manifest_id, targets,
};
