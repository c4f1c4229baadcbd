//! Manager reconcilers (GitRepo → Bundle → BundleDeployment, status aggregation). Not yet built.

pub mod registration;
