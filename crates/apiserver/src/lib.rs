//! A Kubernetes-compatible API server: storage, REST, watch, discovery, CRDs. Knows nothing of Fleet.
pub mod app;
pub mod auth;
pub mod builtin;
pub mod crd;
pub mod discovery;
pub mod errors;
pub mod gc;
pub mod handlers;
pub mod kinds;
pub mod limits;
pub mod objects;
pub mod ops;
pub mod patch;
pub mod pki;
pub mod protobuf;
pub mod rbac;
pub mod registry;
pub mod request;
pub mod satoken;
pub mod selectors;
pub mod serve;
pub mod store;
pub mod table;
pub mod validation;
pub mod watch;

pub use app::{ApiServer, ApiServerConfig, Error};
