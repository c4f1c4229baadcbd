//! A Kubernetes-compatible API server: storage, REST, watch, discovery, CRDs. Knows nothing of Fleet.
pub mod store;
