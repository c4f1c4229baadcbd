//! kubectl's client-side apply bookkeeping: the `last-applied-configuration` annotation and the choice
//! of patch flavour, so the agent (and tests) apply objects exactly as `kubectl apply` would.

use serde_json::{Map, Value};

use crate::strategic::{self, Schema};
use crate::{PatchError, merge};

/// The annotation kubectl stores the applied configuration in; its value is the 3-way "original".
pub const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Which patch flavour an apply patch is, i.e. the Content-Type to send it with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchKind {
    /// Strategic merge patch (built-in kinds).
    Strategic,
    /// JSON merge patch (custom resources, which have no strategic metadata).
    Merge,
}

impl PatchKind {
    /// The HTTP Content-Type a PATCH request with this flavour carries.
    pub fn content_type(self) -> &'static str {
        match self {
            PatchKind::Strategic => "application/strategic-merge-patch+json",
            PatchKind::Merge => "application/merge-patch+json",
        }
    }
}

/// Returns `config` with the last-applied annotation set to `config` itself (without any previous such
/// annotation), serialized as kubectl does: compact JSON, keys sorted, trailing newline.
pub fn with_last_applied(config: &Value) -> Result<Value, PatchError> {
    let Value::Object(obj) = config else {
        return Err(PatchError::Invalid {
            path: String::new(),
            reason: "an applied configuration must be a JSON object".into(),
        });
    };
    let mut bare = obj.clone();
    remove_annotation(&mut bare)?;
    let mut text = sorted(&Value::Object(bare.clone())).to_string();
    text.push('\n');
    if let Some(Value::Object(a)) = bare
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
    {
        a.insert(LAST_APPLIED_ANNOTATION.to_string(), Value::String(text));
    }
    Ok(Value::Object(bare))
}

/// The configuration last applied to `live`, read from its annotation (`None` when absent or empty).
pub fn last_applied(live: &Value) -> Result<Option<Value>, PatchError> {
    let Some(text) = live
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(LAST_APPLIED_ANNOTATION))
    else {
        return Ok(None);
    };
    let path = format!(
        "/metadata/annotations/{}",
        LAST_APPLIED_ANNOTATION.replace('/', "~1")
    );
    let Value::String(text) = text else {
        return Err(PatchError::Invalid {
            path,
            reason: "must be a string".into(),
        });
    };
    if text.trim().is_empty() {
        return Ok(None);
    }
    serde_json::from_str(text)
        .map(Some)
        .map_err(|e| PatchError::Invalid {
            path,
            reason: format!("not valid JSON: {e}"),
        })
}

/// The patch `kubectl apply` sends to turn `live` into `config`: a 3-way patch against the
/// last-applied annotation (which the patch also updates), strategic for built-in kinds and a JSON
/// merge patch otherwise. An empty object means nothing to change.
pub fn patch_for(live: &Value, config: &Value) -> Result<(PatchKind, Value), PatchError> {
    let modified = with_last_applied(config)?;
    let original = last_applied(live)?;
    let api_version = config
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = config.get("kind").and_then(Value::as_str).unwrap_or("");
    match strategic::schema_for(api_version, kind) {
        Some(schema) => Ok((
            PatchKind::Strategic,
            strategic::three_way(original.as_ref(), &modified, live, schema)?,
        )),
        None => Ok((
            PatchKind::Merge,
            merge::three_way(original.as_ref(), &modified, live)?,
        )),
    }
}

/// Applies a patch produced by [`patch_for`] locally (what the API server will compute), e.g. to
/// predict the result or to implement apply against a store directly.
pub fn apply_patch(live: &Value, kind: PatchKind, patch: &Value) -> Result<Value, PatchError> {
    match kind {
        PatchKind::Strategic => {
            let api_version = live.get("apiVersion").and_then(Value::as_str).unwrap_or("");
            let k = live.get("kind").and_then(Value::as_str).unwrap_or("");
            let schema = strategic::schema_for(api_version, k).unwrap_or(Schema::none());
            strategic::apply(live, patch, schema)
        }
        PatchKind::Merge => merge::apply(live, patch),
    }
}

/// Removes a previous last-applied annotation and leaves `metadata.annotations` as an object (`{}` when
/// empty), as kubectl's `GetModifiedConfiguration` does: real annotations read `"annotations":{}`.
fn remove_annotation(obj: &mut Map<String, Value>) -> Result<(), PatchError> {
    let meta = obj
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(meta) = meta else {
        return Err(PatchError::Invalid {
            path: "/metadata".into(),
            reason: "metadata must be an object".into(),
        });
    };
    let ann = meta
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()));
    match ann {
        Value::Object(a) => {
            a.shift_remove(LAST_APPLIED_ANNOTATION);
        }
        Value::Null => *ann = Value::Object(Map::new()),
        _ => {
            return Err(PatchError::Invalid {
                path: "/metadata/annotations".into(),
                reason: "annotations must be an object".into(),
            });
        }
    }
    Ok(())
}

/// A copy with every object's keys in sorted order (Go's encoding/json order for maps).
fn sorted(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .filter_map(|k| m.get(k).map(|x| (k.clone(), sorted(x))))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
        other => other.clone(),
    }
}
