//! The per-cluster agent: registration, deploy, drift, status, heartbeat. Not yet built.

pub mod register;
