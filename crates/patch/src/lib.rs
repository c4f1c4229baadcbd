//! Strategic merge patch, JSON patch, merge patch and 3-way merge, shared by the API server and renderers.
//!
//! One crate computes and applies every patch flavour Kubernetes speaks so that the embedded API server
//! (PATCH requests), the agent (apply of rendered objects) and kustomize (patchesStrategicMerge) all agree
//! on the result.
//!
//! - [`strategic`]: strategic merge patch (`application/strategic-merge-patch+json`) with the merge keys
//!   and patch strategies of the built-in kinds, generated from Kubernetes' OpenAPI spec.
//! - [`merge`]: JSON merge patch (RFC 7386), the path kubectl takes for custom resources.
//! - [`json`]: JSON patch (RFC 6902).
//! - [`apply`]: kubectl's client-side apply (last-applied annotation, patch flavour choice).

pub mod apply;
pub mod json;
pub mod merge;
pub mod strategic;
mod table;
mod value;

/// Why a patch could not be applied or computed; every message names the JSON path at fault so a user
/// (or an API client reading a 422/400 body) can find the offending field.
#[derive(Debug, thiserror::Error)]
pub enum PatchError {
    /// The patch (or an input document) does not have the shape the operation needs.
    #[error("{path}: {reason}")]
    Invalid {
        /// JSON pointer of the offending value ("" for the document root).
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A list item of a merge-strategy list lacks its merge key, so it cannot be matched.
    #[error("{path}: list item does not contain the merge key {key:?}")]
    MissingMergeKey {
        /// JSON pointer of the list item.
        path: String,
        /// The merge key the schema declares for that list.
        key: String,
    },
    /// A `$patch` directive value that strategic merge does not know.
    #[error("{path}: unknown patch directive $patch: {value}")]
    UnknownDirective {
        /// JSON pointer of the object carrying the directive.
        path: String,
        /// The directive value as JSON.
        value: String,
    },
    /// A `$retainKeys` directive that is malformed or contradicted by the patch.
    #[error("{path}: invalid $retainKeys: {reason}")]
    RetainKeys {
        /// JSON pointer of the object carrying the directive.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// A `$setElementOrder` list that is malformed or disagrees with its patch list.
    #[error("{path}: invalid $setElementOrder: {reason}")]
    ElementOrder {
        /// JSON pointer of the directive.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// An RFC 6902 operation failed.
    #[error("json patch operation {operation} at {path:?}: {reason}")]
    JsonPatch {
        /// Zero-based index of the failing operation.
        operation: usize,
        /// JSON pointer the operation targeted.
        path: String,
        /// Why it failed (e.g. path missing, test failed).
        reason: String,
    },
    /// Documents nest deeper than we are willing to recurse (guards the stack against hostile input).
    #[error("{path}: document nests deeper than {limit} levels")]
    TooDeep {
        /// JSON pointer where the limit was hit.
        path: String,
        /// The nesting limit.
        limit: usize,
    },
}
