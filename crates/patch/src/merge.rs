//! JSON merge patch (RFC 7386): apply, diff and kubectl's 3-way variant.
//!
//! kubectl (and our agent) use this path for custom resources, which have no strategic-merge metadata:
//! objects merge recursively, `null` deletes, lists are replaced.

use serde_json::{Map, Value};

use crate::PatchError;
use crate::value::{MAX_DEPTH, Path, json_eq};

/// Applies an RFC 7386 merge patch to `original` (what kube-apiserver does for
/// `application/merge-patch+json`).
pub fn apply(original: &Value, patch: &Value) -> Result<Value, PatchError> {
    check_depth(patch, &Path::root())?;
    let mut doc = original.clone();
    json_patch::merge(&mut doc, patch);
    Ok(doc)
}

/// Computes the merge patch that turns `original` into `modified` (`CreateMergePatch`): changed and new
/// fields carry their new value, removed fields `null`, lists are sent whole.
pub fn diff(original: &Value, modified: &Value) -> Result<Value, PatchError> {
    check_depth(original, &Path::root())?;
    check_depth(modified, &Path::root())?;
    Ok(diff_values(original, modified))
}

fn diff_values(original: &Value, modified: &Value) -> Value {
    match (original, modified) {
        (Value::Object(o), Value::Object(m)) => Value::Object(diff_objects(o, m)),
        _ => modified.clone(),
    }
}

fn diff_objects(o: &Map<String, Value>, m: &Map<String, Value>) -> Map<String, Value> {
    let mut patch = Map::new();
    for (k, mv) in m {
        match o.get(k) {
            None => {
                patch.insert(k.clone(), mv.clone());
            }
            Some(ov) => match (ov, mv) {
                (Value::Object(oo), Value::Object(mo)) => {
                    let sub = diff_objects(oo, mo);
                    if !sub.is_empty() {
                        patch.insert(k.clone(), Value::Object(sub));
                    }
                }
                _ => {
                    if !json_eq(ov, mv) {
                        patch.insert(k.clone(), mv.clone());
                    }
                }
            },
        }
    }
    for k in o.keys() {
        if !m.contains_key(k) {
            patch.insert(k.clone(), Value::Null);
        }
    }
    patch
}

/// kubectl's `CreateThreeWayJSONMergePatch(original=last-applied, modified=new config, current=live)`:
/// additions and changes come from `current` → `modified`, deletions only from `original` → `modified`,
/// so fields others set on the live object are kept. `original = None` deletes nothing.
pub fn three_way(
    original: Option<&Value>,
    modified: &Value,
    current: &Value,
) -> Result<Value, PatchError> {
    let empty = Value::Object(Map::new());
    let original = original.unwrap_or(&empty);
    for v in [original, modified, current] {
        check_depth(v, &Path::root())?;
    }
    let changes = keep_or_drop_nulls(&diff_values(current, modified), false);
    let deletions = keep_or_drop_nulls(&diff_values(original, modified), true);
    let mut patch = deletions;
    json_patch::merge(&mut patch, &changes);
    Ok(patch)
}

/// With `keep_null`, keeps only the deletions (nulls) of a merge patch; otherwise only its additions and
/// changes. Empty sub-objects left by filtering vanish, explicitly empty objects in the patch are values.
fn keep_or_drop_nulls(patch: &Value, keep_null: bool) -> Value {
    match patch {
        Value::Object(m) => Value::Object(filter_object(m, keep_null)),
        Value::Null if keep_null => Value::Null,
        _ if keep_null => Value::Object(Map::new()),
        other => other.clone(),
    }
}

fn filter_object(m: &Map<String, Value>, keep_null: bool) -> Map<String, Value> {
    let mut out = Map::new();
    for (k, v) in m {
        match v {
            Value::Null => {
                if keep_null {
                    out.insert(k.clone(), Value::Null);
                }
            }
            Value::Object(sub) if sub.is_empty() => {
                if !keep_null {
                    out.insert(k.clone(), v.clone());
                }
            }
            Value::Object(sub) => {
                let f = filter_object(sub, keep_null);
                if !f.is_empty() {
                    out.insert(k.clone(), Value::Object(f));
                }
            }
            _ => {
                if !keep_null {
                    out.insert(k.clone(), v.clone());
                }
            }
        }
    }
    out
}

/// Rejects documents nested deeper than the recursion limit (the recursive helpers here and in
/// `json_patch::merge` would otherwise be a stack-overflow vector).
fn check_depth(v: &Value, path: &Path<'_>) -> Result<(), PatchError> {
    // Iterative walk: (value, depth).
    let mut stack: Vec<(&Value, usize)> = vec![(v, 0)];
    while let Some((v, d)) = stack.pop() {
        if d > MAX_DEPTH {
            return Err(PatchError::TooDeep {
                path: path.to_string(),
                limit: MAX_DEPTH,
            });
        }
        match v {
            Value::Object(m) => stack.extend(m.values().map(|c| (c, d + 1))),
            Value::Array(a) => stack.extend(a.iter().map(|c| (c, d + 1))),
            _ => {}
        }
    }
    Ok(())
}
