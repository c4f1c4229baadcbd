//! Errors of the bundle reader. Every error names the file (and for fleet.yaml the line and key)
//! so that a user can fix the repository without guessing.

use std::path::PathBuf;

/// What went wrong while turning a directory into Bundles.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    /// A YAML file could not be parsed or has a field of the wrong type.
    #[error("{file}:{line}:{column}: key `{key}`: {message}")]
    Yaml {
        /// The file at fault.
        file: PathBuf,
        /// 1-based line (0 when unknown).
        line: u64,
        /// 1-based column (0 when unknown).
        column: u64,
        /// Path of the offending key, e.g. `helm.values` or `targetCustomizations[0].name`.
        key: String,
        /// What the parser said.
        message: String,
    },
    /// fleet.yaml parsed but is semantically invalid.
    #[error("{file}: key `{key}`: {message}")]
    Invalid {
        /// The file at fault.
        file: PathBuf,
        /// The offending key.
        key: String,
        /// Why it is invalid.
        message: String,
    },
    /// A file or directory could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The path at fault.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A remote chart or repository index could not be fetched or resolved.
    #[error("{context}: {message}")]
    Fetch {
        /// Which chart (repo, chart, version) or URL.
        context: String,
        /// Why.
        message: String,
    },
    /// Nothing to deploy.
    #[error("no resource found at the following paths to deploy: {0:?}")]
    NoResources(Vec<String>),
    /// Any other input error (bad glob, bad flag value).
    #[error("{0}")]
    Other(String),
}

impl BundleError {
    /// Wraps an I/O error with its path.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        BundleError::Io {
            path: path.into(),
            source,
        }
    }
}
