//! The one home of test support for every crate's integration tests: finding the oracle tools
//! (with the CI rule), starting `fleet` processes, driving real kubectl, git fixtures and a git
//! server, a Helm chart repository behind basic auth, an in-process server with a kube client, TLS clients with per-user certificates, and
//! waiting on conditions with a deadline instead of sleeping.
//!
//! Used only as a dev-dependency. Panics are the point here: a failed setup fails the test.

pub mod agent_env;
pub mod cluster;
pub mod controller;
pub mod fs;
pub mod git;
pub mod githttp;
pub mod helmrepo;
#[cfg(feature = "server")]
pub mod inproc;
pub mod kubectl;
pub mod process;
#[cfg(feature = "server")]
pub mod tls;
pub mod tools;
pub mod wait;

pub use controller::FleetController;
pub use git::{GitDaemon, GitRepo};
pub use githttp::GitHttpServer;
pub use kubectl::Kubectl;
pub use process::{FleetProcess, FleetServer};
pub use tools::{find_tool, in_ci};
pub use wait::{eventually, eventually_async};

/// The `fleet` binary built for the calling crate's integration tests (only crates with the
/// binary, i.e. `fleet-cli`, have it).
#[macro_export]
macro_rules! fleet_bin {
    () => {
        ::std::path::Path::new(env!("CARGO_BIN_EXE_fleet"))
    };
}
