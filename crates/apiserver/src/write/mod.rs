//! The write path: every create, update and delete goes through [`crud`] (validation, per-kind
//! [`strategy`], RBAC escalation checks, optimistic concurrency), and server-side apply through
//! [`ssa`]. Imports only [`crate::state`] and the layers below.

pub(crate) mod crud;
pub(crate) mod rbac_escalation;
pub mod ssa;
pub(crate) mod strategy;
