//! Bundle + options → Kubernetes objects: Helm charts, kustomize, raw-YAML overlays.
pub mod deploy;
pub mod helm;
pub mod kustomize;
pub mod rawyaml;
