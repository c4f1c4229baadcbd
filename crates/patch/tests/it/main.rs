//! Strategic merge and three-way patch tests, one test binary with a module per area.

mod common;
mod kubectl_apply_flow;
mod kubectl_oracle;
mod kustomize_flavour;
mod kustomize_oracle;
mod properties;
mod strategic_cases;
mod three_way;
