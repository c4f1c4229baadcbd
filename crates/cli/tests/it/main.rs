//! The `fleet` binary's integration tests, one test binary with a module per area.

mod agent;
mod bench_scale;
mod common;
mod dev;
mod e2e;
mod fleet_test_cmd;
mod gitops;
mod managing_fleet;
mod registration;
mod security_fleet_shape;
mod server_bad_input;
mod server_cli;
mod server_concurrency;
mod server_durability;
mod server_kube_rs;
mod server_kubectl;
mod server_python;
mod server_rbac;
mod server_sa_tokens;
mod server_simulate;
mod template_cli;
