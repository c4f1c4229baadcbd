//! The API types' integration tests, one test binary with a module per area.

mod crd_golden;
mod crd_parity;
mod optional_parts;
