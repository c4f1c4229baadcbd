//! Why targeting fails. Messages are upstream's wording (a controller copies them into
//! conditions), so `to_string()` gives exactly the text upstream Fleet reports.

/// A targeting error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `In`/`NotIn` requirement without values.
    #[error("{key}: values must be non-empty for operator {operator}")]
    SelectorValuesRequired {
        /// The requirement's label key.
        key: String,
        /// `In` or `NotIn`.
        operator: String,
    },
    /// `Exists`/`DoesNotExist` requirement with values.
    #[error("{key}: values must be empty for operator {operator}")]
    SelectorValuesForbidden {
        /// The requirement's label key.
        key: String,
        /// `Exists` or `DoesNotExist`.
        operator: String,
    },
    /// An operator Kubernetes does not know.
    #[error("{key}: {operator:?} is not a valid label selector operator")]
    SelectorOperator {
        /// The requirement's label key.
        key: String,
        /// The unknown operator.
        operator: String,
    },
    /// A bundle target whose criteria do not compile.
    #[error("target {name:?}: {source}")]
    Target {
        /// The target's name.
        name: String,
        /// What is wrong with it.
        source: Box<Error>,
    },
    /// A target restriction whose criteria do not compile.
    #[error("target restriction {name:?}: {source}")]
    Restriction {
        /// The restriction's name.
        name: String,
        /// What is wrong with it.
        source: Box<Error>,
    },
    /// A `maxUnavailable`-style value that is neither an integer nor a percentage.
    #[error("invalid maxUnavailable, must be int or percentage: {0}")]
    MaxUnavailable(String),
    /// Per-cluster values processing failed (label substitution or a `${ }` template).
    #[error("{0}")]
    Values(String),
    /// Per-cluster values failed for one cluster of a bundle.
    #[error("bundle {bundle}: cluster {cluster}: {source}")]
    Cluster {
        /// `namespace/name` of the bundle.
        bundle: String,
        /// `namespace/name` of the cluster.
        cluster: String,
        /// What failed.
        source: Box<Error>,
    },
    /// An object given to [`crate::Fleet::from_objects`] that does not decode.
    #[error("object {index} ({kind} {name}): {source}")]
    Decode {
        /// Position of the object in the input.
        index: usize,
        /// Its `kind`.
        kind: String,
        /// Its `metadata.name` (`?` when absent).
        name: String,
        /// The decoding error (names the field at fault).
        source: serde_json::Error,
    },
}
