//! The renderer's integration tests (Helm, Kustomize, raw YAML, the deploy pipeline), one test
//! binary with a module per area.

mod deploy_pipeline;
mod deploy_props;
mod helm_golden;
mod helm_parity;
mod helm_props;
mod helm_support;
mod kustomize_golden;
mod kustomize_line_breaks;
mod kustomize_postrender;
mod kustomize_props;
mod rawyaml_overlays;
