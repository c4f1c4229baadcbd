//! Bundle + options → Kubernetes objects: Helm charts, kustomize, raw-YAML overlays.
