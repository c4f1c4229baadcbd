//! JSON patch (RFC 6902) on top of the `json-patch` crate, with failures mapped to [`PatchError`] so the
//! API server can answer `application/json-patch+json` requests with a message naming the operation.

use serde_json::Value;

use crate::PatchError;

/// Applies an RFC 6902 patch (a JSON array of operations) to `original`; the original is untouched when
/// any operation fails (the patch is atomic, as RFC 6902 requires).
pub fn apply(original: &Value, patch: &Value) -> Result<Value, PatchError> {
    let ops: json_patch::Patch =
        serde_json::from_value(patch.clone()).map_err(|e| PatchError::Invalid {
            path: String::new(),
            reason: format!("not a JSON patch (RFC 6902) document: {e}"),
        })?;
    let mut doc = original.clone();
    json_patch::patch(&mut doc, &ops).map_err(|e| PatchError::JsonPatch {
        operation: e.operation,
        path: e.path.to_string(),
        reason: e.kind.to_string(),
    })?;
    Ok(doc)
}

/// Computes an RFC 6902 patch turning `original` into `modified`.
pub fn diff(original: &Value, modified: &Value) -> Value {
    let p = json_patch::diff(original, modified);
    serde_json::to_value(p).unwrap_or(Value::Array(Vec::new()))
}
