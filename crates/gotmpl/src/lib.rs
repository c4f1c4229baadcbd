//! Go `text/template` with sprig and Helm's functions. Knows nothing of Fleet or Kubernetes.
