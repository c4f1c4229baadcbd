//! The API server's integration tests, one test binary with a module per area.

mod authz_kubectl;
mod authz_rest;
mod layers;
mod rbac_kube_details;
mod rbac_prop;
mod rbac_satoken;
mod rbac_table;
mod rest_common;
mod rest_crd;
mod rest_crud;
mod rest_fuzz;
mod rest_kubectl;
mod rest_lifecycle;
mod rest_python;
mod rest_watch;
mod sa_tokens;
mod server_body_limit;
mod server_resumption;
mod server_start;
mod server_tls;
mod simulator;
mod ssa_kubectl;
mod ssa_rest;
mod store;
mod support;
