//! The template engine's integration tests (Go text/template and Sprig parity, goldens, real
//! charts), one test binary with a module per area.

mod charts;
mod crypto;
mod delims;
mod engine;
mod gofmt;
mod golden;
mod prop;
mod semver;
mod to_yaml_quoting;
mod yaml_breaks;
