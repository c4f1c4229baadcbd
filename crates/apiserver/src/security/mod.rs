//! Security without state: authentication, the cluster PKI, RBAC evaluation, service-account
//! token signing and settings, and the live RBAC policy type. Imports only [`crate::storage`].

pub mod auth;
pub mod pki;
pub mod policy;
pub mod rbac;
pub mod satoken;
pub mod service_accounts;
