//! Background controllers started with each server: garbage collection and namespace
//! finalization ([`gc`]), the RBAC policy follower, service accounts and token Secrets, and the
//! workload simulator. They write through [`crate::write`]; they import nothing from
//! [`crate::http`].

pub(crate) mod gc;
pub(crate) mod rbac_policy;
pub(crate) mod service_accounts;
pub(crate) mod simulator;
