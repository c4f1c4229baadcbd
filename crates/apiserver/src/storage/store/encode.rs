//! Serializing an object for storage in two steps, so that the expensive one runs on the
//! caller's thread: [`Encoded::new`] serializes everything but the resourceVersion (which only
//! the single writer thread can know) and [`Encoded::finish`] splices the revision in. The writer
//! is the one serial stage of every write; keeping JSON serialization (and freeing the decoded
//! value) off it lets the request threads do that work in parallel.

use std::io::Write as _;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::pack::{Packed, Packer};
use super::{Body, Obj, Rev, StoreError, empty_labels, intern_labels};

/// An object serialized as compact JSON with a hole for `metadata.resourceVersion`.
#[derive(Debug)]
pub(crate) struct Encoded {
    /// The JSON, with the resourceVersion's string value empty (`""`).
    json: Vec<u8>,
    /// Byte offset just after the opening quote of that empty string.
    rv_at: usize,
    /// `metadata.labels`, parsed once here for label selectors.
    labels: Arc<super::Labels>,
    /// The JSON compressed with the store's dictionary, when it has one and it pays.
    packed: Option<Packed>,
}

impl Encoded {
    /// Serializes `value` as the store keeps it: exactly `serde_json::to_vec` of the object with
    /// `metadata.resourceVersion` set (an existing resourceVersion keeps its place among the
    /// metadata fields, a missing one is appended), the revision itself left out; compressed too
    /// when a `packer` is given and has a dictionary.
    pub(crate) fn new(
        key: &str,
        mut value: Value,
        packer: Option<&Packer>,
    ) -> Result<Encoded, StoreError> {
        let Some(top) = value.as_object_mut() else {
            return Err(StoreError::Internal(format!(
                "value for {key} is not a JSON object"
            )));
        };
        let meta = top
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        let Some(meta) = meta.as_object_mut() else {
            return Err(StoreError::Internal(format!(
                "metadata of {key} is not a JSON object"
            )));
        };
        meta.insert("resourceVersion".to_string(), Value::String(String::new()));
        let labels = match meta.get("labels").and_then(Value::as_object) {
            Some(l) if !l.is_empty() => intern_labels(super::Labels::from_pairs(
                l.iter()
                    .filter_map(|(k, v)| v.as_str().map(|v| (k.as_str(), v))),
            )),
            _ => empty_labels(),
        };
        let mut json = Vec::with_capacity(1024);
        let mut rv_at = None;
        write_object(&mut json, top, &mut |json, k, v| match (k, v) {
            ("metadata", Value::Object(meta)) => write_object(json, meta, &mut |json, mk, mv| {
                if mk == "resourceVersion" {
                    json.push(b'"');
                    rv_at = Some(json.len());
                    json.push(b'"');
                    Ok(())
                } else {
                    serde_json::to_writer(json, mv)
                }
            }),
            _ => serde_json::to_writer(json, v),
        })
        .map_err(|e| StoreError::Internal(format!("serializing {key}: {e}")))?;
        let rv_at = rv_at.ok_or_else(|| {
            StoreError::Internal(format!("serializing {key}: resourceVersion went missing"))
        })?;
        drop(value);
        let packed = packer.and_then(|p| p.pack(&json, rv_at));
        Ok(Encoded {
            json,
            rv_at,
            labels,
            packed,
        })
    }

    /// The stored object at revision `rev`, and with `log`, its JSON as the log keeps it (the
    /// same bytes as the object's when it is held plain).
    pub(crate) fn finish(&self, rev: Rev, log: bool) -> (Obj, Option<bytes::Bytes>) {
        let (body, logged) = match &self.packed {
            Some(p) => (
                Body::Packed(p.clone()),
                log.then(|| bytes::Bytes::from(self.spliced(rev))),
            ),
            None => {
                let json = bytes::Bytes::from(self.spliced(rev));
                (Body::Plain(json.clone()), log.then_some(json))
            }
        };
        let obj = Obj {
            body,
            rev,
            labels: self.labels.clone(),
        };
        (obj, logged)
    }

    /// The JSON with `rev` spliced in, in an allocation of exactly its length: stored objects
    /// stay in memory for their lifetime, and a few spare bytes can move an object into the
    /// allocator's next size class (up to 256 bytes more per object at 1.5 KiB); a `Bytes` made
    /// from a `Vec` with spare capacity also costs an extra allocation.
    fn spliced(&self, rev: Rev) -> Vec<u8> {
        let mut buf = [0u8; 24];
        let digits = rev_digits(rev, &mut buf);
        let (head, tail) = self.json.split_at(self.rv_at.min(self.json.len()));
        let mut json = Vec::with_capacity(self.json.len() + digits.len());
        json.extend_from_slice(head);
        json.extend_from_slice(digits);
        json.extend_from_slice(tail);
        json
    }
}

/// The decimal digits of `rev`, written into `buf` (no allocation: every write and every read
/// of a packed object splices them).
pub(crate) fn rev_digits(rev: Rev, buf: &mut [u8; 24]) -> &[u8] {
    let n = {
        let mut cur = std::io::Cursor::new(&mut buf[..]);
        let _ = write!(cur, "{rev}");
        usize::try_from(cur.position()).unwrap_or(0)
    };
    buf.get(..n).unwrap_or_default()
}

/// Writes one member's value (given its key) into the output.
type WriteValue<'a> = dyn FnMut(&mut Vec<u8>, &str, &Value) -> Result<(), serde_json::Error> + 'a;

/// Writes a JSON object as serde_json's compact form does, with `value` writing each value.
fn write_object(
    out: &mut Vec<u8>,
    map: &Map<String, Value>,
    value: &mut WriteValue<'_>,
) -> Result<(), serde_json::Error> {
    out.push(b'{');
    for (i, (k, v)) in map.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        serde_json::to_writer(&mut *out, k)?;
        out.push(b':');
        value(out, k, v)?;
    }
    out.push(b'}');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// What the store wrote before the split: set the field, serialize the whole value.
    fn reference(mut v: Value, rev: Rev) -> Vec<u8> {
        let top = v.as_object_mut().expect("object");
        let meta = top.entry("metadata").or_insert_with(|| json!({}));
        meta.as_object_mut()
            .expect("metadata object")
            .insert("resourceVersion".into(), json!(rev.to_string()));
        serde_json::to_vec(&v).expect("serializable")
    }

    fn arb_leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            "\\PC{0,12}".prop_map(Value::from),
            "[\"\\\\\u{0}-\u{1f}a-z]{0,6}".prop_map(Value::from),
        ]
    }

    fn arb_value() -> impl Strategy<Value = Value> {
        arb_leaf().prop_recursive(4, 32, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::from),
                prop::collection::vec(("[a-zA-Z\"\\\\./-]{0,8}", inner), 0..5)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    fn arb_object() -> impl Strategy<Value = Value> {
        (
            prop::collection::vec(("[a-zA-Z\"]{0,8}", arb_value()), 0..5),
            prop::option::of(prop::collection::vec(
                (
                    prop_oneof![
                        Just("resourceVersion".to_string()),
                        Just("labels".to_string()),
                        "[a-z\"]{0,8}"
                    ],
                    arb_value(),
                ),
                0..6,
            )),
            any::<bool>(),
        )
            .prop_map(|(top, meta, meta_first)| {
                let mut m = Map::new();
                let meta = meta.map(|kv| Value::Object(kv.into_iter().collect()));
                if meta_first && let Some(meta) = &meta {
                    m.insert("metadata".into(), meta.clone());
                }
                for (k, v) in top {
                    if k != "metadata" {
                        m.insert(k, v);
                    }
                }
                if !meta_first && let Some(meta) = meta {
                    m.insert("metadata".into(), meta);
                }
                Value::Object(m)
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        /// Splitting changes nothing about the bytes stored: any object, any metadata (an
        /// existing resourceVersion of any type, labels of any shape, keys needing escapes).
        #[test]
        fn split_encoding_equals_whole_serialization(v in arb_object(), rev in 0..Rev::MAX) {
            let enc = Encoded::new("k", v.clone(), None).expect("an object encodes");
            let raw = enc.spliced(rev);
            prop_assert_eq!(raw.capacity(), raw.len(), "no spare capacity is kept");
            let obj = enc.finish(rev, false).0;
            prop_assert_eq!(obj.rev, rev);
            let want = reference(v, rev);
            let json = obj.json();
            prop_assert_eq!(json.as_ref(), want.as_slice());
            prop_assert_eq!(obj.json_len(), want.len());
        }
    }

    /// A packer trained on BundleDeployment-shaped objects.
    fn packer() -> &'static Packer {
        static P: std::sync::OnceLock<Packer> = std::sync::OnceLock::new();
        P.get_or_init(|| {
            let samples: Vec<Vec<u8>> = (0..300)
                .map(|i| reference(crate::storage::store::pack::tests::bd(i, "c0"), 5))
                .collect();
            Packer::trained_on(&samples)
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1_000))]

        /// Packing changes nothing about the bytes handed out or logged, whether an object
        /// compresses or not.
        #[test]
        fn packed_encoding_equals_whole_serialization(v in arb_object(), rev in 0..Rev::MAX) {
            let enc = Encoded::new("k", v.clone(), Some(packer())).expect("an object encodes");
            let (obj, logged) = enc.finish(rev, true);
            let want = reference(v, rev);
            let json = obj.json();
            prop_assert_eq!(json.as_ref(), want.as_slice());
            prop_assert_eq!(obj.json_len(), want.len());
            let logged = logged.expect("logged");
            prop_assert_eq!(logged.as_ref(), want.as_slice());
        }

        /// Objects like the ones the dictionary was trained on are packed, and read back exactly.
        #[test]
        fn objects_like_the_samples_are_packed(i in 0usize..1 << 40, commit in "[0-9a-f]{40}", rev in 0..Rev::MAX) {
            let v = crate::storage::store::pack::tests::bd(i, &commit);
            let (obj, _) = Encoded::new("k", v.clone(), Some(packer())).expect("encodes").finish(rev, false);
            let packed = obj.packed().expect("packed");
            prop_assert!(packed.packed_len() * 4 < obj.json_len(), "{} of {}", packed.packed_len(), obj.json_len());
            let json = obj.json();
            let want = reference(v, rev);
            prop_assert_eq!(json.as_ref(), want.as_slice());
        }
    }

    #[test]
    fn labels_are_parsed_and_non_objects_refused() {
        let v =
            json!({"kind": "ConfigMap", "metadata": {"name": "a", "labels": {"app": "x", "n": 1}}});
        let obj = Encoded::new("k", v, None)
            .expect("encodes")
            .finish(7, false)
            .0;
        assert_eq!(obj.labels.get("app"), Some("x"));
        assert_eq!(
            obj.labels.len(),
            1,
            "non-string label values are not selectable"
        );
        assert_eq!(
            std::str::from_utf8(&obj.json()).expect("utf8"),
            r#"{"kind":"ConfigMap","metadata":{"name":"a","labels":{"app":"x","n":1},"resourceVersion":"7"}}"#
        );
        assert!(Encoded::new("k", json!([1]), None).is_err());
        assert!(Encoded::new("k", json!({"metadata": "x"}), None).is_err());
    }
}
