//! A directory → Bundles, as upstream `fleet apply` does it offline.

pub mod chart;
pub mod error;
pub mod export;
pub mod gomatch;
pub mod options;
pub mod paths;
pub mod read;
pub mod semver_req;
pub mod walk;
pub mod yaml;

pub use error::BundleError;
pub use options::{ApplyOptions, Auth};
pub use read::{BuiltBundle, create_bundles};
