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

/// Reads a JSON pointer (RFC 6901) as `Value::pointer` does, without allocating. Why:
/// `serde_json`'s unescapes every segment into two new strings, and the agent and the
/// workload simulator read a few pointers of every object they check, thousands per second.
pub trait ReadPointer {
    /// The value at `pointer` ("" is the whole value), or None.
    fn at(&self, pointer: &str) -> Option<&Value>;
}

impl ReadPointer for Value {
    fn at(&self, pointer: &str) -> Option<&Value> {
        if pointer.contains('~') {
            return self.pointer(pointer); // escaped segments: the general path
        }
        if pointer.is_empty() {
            return Some(self);
        }
        let rest = pointer.strip_prefix('/')?;
        rest.split('/').try_fold(self, |v, seg| match v {
            Value::Object(m) => m.get(seg),
            Value::Array(a) => array_index(seg).and_then(|i| a.get(i)),
            _ => None,
        })
    }
}

/// An array index as RFC 6901 spells it: digits, without a leading zero (but "0").
fn array_index(seg: &str) -> Option<usize> {
    if seg.is_empty() || (seg.len() > 1 && seg.starts_with('0')) || seg.starts_with('+') {
        return None;
    }
    seg.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::ReadPointer;
    use serde_json::json;

    #[test]
    fn reads_what_serde_json_reads() {
        let v = json!({"a": {"b/c": 1, "d~e": 2, "l": [10, 11, {"x": true}], "": 3}, "0": 4});
        for p in [
            "",
            "/",
            "/a",
            "/a/b~1c",
            "/a/d~0e",
            "/a/l",
            "/a/l/0",
            "/a/l/2/x",
            "/a/l/01",
            "/a/l/3",
            "/a/l/-",
            "/a/l/+1",
            "/a/",
            "/0",
            "a",
            "/a/l/2/x/y",
            "/nope/x",
        ] {
            assert_eq!(v.at(p), v.pointer(p), "{p}");
        }
    }

    proptest::proptest! {
        /// Any pointer over segments drawn from the keys, indexes and escapes above.
        #[test]
        fn any_pointer_reads_as_serde_json_reads(
            segs in proptest::collection::vec(
                proptest::sample::select(vec![
                    "a", "b~1c", "d~0e", "l", "0", "1", "2", "01", "-", "x", "", "~", "~2",
                ]),
                0..5,
            ),
            lead in proptest::bool::ANY,
        ) {
            let v = json!({"a": {"b/c": 1, "d~e": 2, "l": [10, 11, {"x": true}], "": 3}, "0": 4});
            let p = segs.join("/");
            let p = if lead { format!("/{p}") } else { p };
            proptest::prop_assert_eq!(v.at(&p), v.pointer(&p));
        }
    }
}
