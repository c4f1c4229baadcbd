//! Harness pieces only this crate's tests use.

pub mod kubectl;
pub mod serve_app;
