//! A Kubernetes-compatible API server: storage, REST, watch, discovery, CRDs. Knows nothing of Fleet.
//!
//! Layers, lowest first; a module only imports from its own layer or those below it (see
//! `ARCHITECTURE.md`):
//!
//! 1. [`storage`]: the store, the resource table (built-ins and CRDs), object metadata, errors.
//! 2. [`security`]: authentication, PKI, RBAC evaluation, service-account tokens, the live policy.
//! 3. [`state`]: the [`ApiServer`] handle the layers above work through.
//! 4. [`write`]: the write path (create/update/delete with per-kind strategies, server-side apply).
//! 5. [`controllers`]: background work (garbage collection and namespaces, RBAC policy,
//!    service accounts, the workload simulator).
//! 6. [`http`]: routing, handlers, watch, discovery, OpenAPI, authorization middleware, TLS serving.
//! 7. [`app`] and [`server`]: assembly.

/// Defines an error type carrying a message that must print exactly as the tool it mirrors
/// prints it (Helm, kube-apiserver): typed at the API, verbatim in `Display`.
macro_rules! message_error {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
        #[error("{0}")]
        pub struct $name(pub String);

        impl From<String> for $name {
            fn from(message: String) -> Self {
                $name(message)
            }
        }

        impl From<&str> for $name {
            fn from(message: &str) -> Self {
                $name(message.to_string())
            }
        }
    };
}

pub mod app;
pub(crate) mod controllers;
pub(crate) mod http;
pub mod security;
pub mod server;
pub(crate) mod state;
pub mod storage;
pub(crate) mod write;

pub use app::{ApiServer, ApiServerConfig, Error};
pub use server::{Server, ServerConfig, ServerHandle, StartError};
pub use storage::store::StoreSync;

// The paths other crates use, kept where they were before the layering.
pub use http::request::{Query, ResourcePath, Target, parse_path};
pub use http::serve;
pub use security::service_accounts as serviceaccount;
pub use security::{auth, pki, rbac, satoken};
pub use storage::{builtin, registry, store};
pub use write::ssa;
