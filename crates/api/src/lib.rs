//! `fleet.cattle.io/v1alpha1` types, fleet.yaml model, label/annotation keys and naming functions.
//! Pure data and pure functions: this crate does no I/O.

pub mod crds;
pub mod duration;
pub mod fleetyaml;
pub mod gzip;
pub mod keys;
pub mod names;
pub mod paths;
pub mod serde_util;
pub mod state;
// kube printcolumn attributes repeat `type_`, which clippy mistakes for duplicates.
#[allow(clippy::duplicated_attributes)]
pub mod types;
pub mod watched_bd;

pub use types::*;
pub use watched_bd::WatchedBd;
