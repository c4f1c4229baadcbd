//! Objects decoded without `metadata.managedFields`.
//!
//! Every write adds or rewrites a managedFields entry, a tree of the fields its writer set, so on
//! an object a controller and an agent both write (a BundleDeployment: spec by the manager, status
//! by the agent) it is often the largest part of the JSON, and decoding it builds a
//! `serde_json::Value` per field. No controller or agent reads it (server-side apply sends only
//! what the writer wants; the server keeps its own entries). [`Slim`] decodes an object with that
//! one key skipped unread, so a watch or list costs what the fields used cost, and the object
//! equals the full decode with `managed_fields: None`.

use std::borrow::Cow;
use std::fmt;

use kube::Resource;
use kube::core::ObjectMeta;
use serde::de::{
    self, DeserializeSeed, Deserializer, IgnoredAny, IntoDeserializer, MapAccess, SeqAccess,
    Visitor,
};
use serde::{Deserialize, Serialize};

/// `K` read without `metadata.managedFields`: watch and list `Api<Slim<K>>`, then take `.0`
/// (or map a watcher's events with [`event`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Slim<K>(pub K);

impl<K: Resource> Resource for Slim<K> {
    type DynamicType = K::DynamicType;
    type Scope = K::Scope;

    fn kind(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::kind(dt)
    }
    fn group(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::group(dt)
    }
    fn version(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::version(dt)
    }
    fn api_version(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::api_version(dt)
    }
    fn plural(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::plural(dt)
    }
    fn meta(&self) -> &ObjectMeta {
        self.0.meta()
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        self.0.meta_mut()
    }
}

impl<'de, K: Deserialize<'de>> Deserialize<'de> for Slim<K> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        K::deserialize(Object(d)).map(Slim)
    }
}

/// A watcher's event on `Slim<K>` as one on `K`.
pub fn event<K>(ev: kube::runtime::watcher::Event<Slim<K>>) -> kube::runtime::watcher::Event<K> {
    use kube::runtime::watcher::Event;
    match ev {
        Event::Apply(o) => Event::Apply(o.0),
        Event::Delete(o) => Event::Delete(o.0),
        Event::Init => Event::Init,
        Event::InitApply(o) => Event::InitApply(o.0),
        Event::InitDone => Event::InitDone,
    }
}

/// A map key, borrowed from the input when it has no escapes (no allocation per key).
enum Key<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl Key<'_> {
    fn as_str(&self) -> &str {
        match self {
            Key::Borrowed(s) => s,
            Key::Owned(s) => s,
        }
    }
}

struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Key<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Key<'de>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Key<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
        Ok(Key::Borrowed(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
        Ok(Key::Owned(v.to_string()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
        Ok(Key::Owned(v))
    }
}

/// Hands `key` to the seed that asked for it.
fn give_key<'de, S: DeserializeSeed<'de>, E: de::Error>(
    seed: S,
    key: Key<'de>,
) -> Result<S::Value, E> {
    match key {
        Key::Borrowed(s) => seed.deserialize(de::value::BorrowedStrDeserializer::<E>::new(s)),
        Key::Owned(s) => seed.deserialize(IntoDeserializer::<E>::into_deserializer(s)),
    }
}

/// Which level of the object a wrapper reads: the object itself (its `metadata` value is read
/// as [`Level::Meta`]) or its metadata (whose `managedFields` is skipped).
#[derive(Clone, Copy)]
enum Level {
    Object,
    Meta,
}

/// The object's deserializer: forwards everything, wrapping maps.
struct Object<D>(D);
/// The metadata's deserializer: forwards everything, wrapping maps and options.
struct Meta<D>(D);

/// Deserializer methods passed through unchanged.
macro_rules! forward {
    ($($m:ident)*) => {$(
        fn $m<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Self::Error> {
            self.0.$m(v)
        }
    )*};
}

macro_rules! wrapper {
    ($name:ident, $level:expr) => {
        impl<'de, D: Deserializer<'de>> Deserializer<'de> for $name<D> {
            type Error = D::Error;

            fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, D::Error> {
                self.0.deserialize_any(Wrap(v, $level))
            }
            fn deserialize_map<V: Visitor<'de>>(self, v: V) -> Result<V::Value, D::Error> {
                self.0.deserialize_map(Wrap(v, $level))
            }
            fn deserialize_struct<V: Visitor<'de>>(
                self,
                name: &'static str,
                fields: &'static [&'static str],
                v: V,
            ) -> Result<V::Value, D::Error> {
                self.0.deserialize_struct(name, fields, Wrap(v, $level))
            }
            fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, D::Error> {
                self.0.deserialize_option(Wrap(v, $level))
            }
            fn deserialize_newtype_struct<V: Visitor<'de>>(
                self,
                name: &'static str,
                v: V,
            ) -> Result<V::Value, D::Error> {
                self.0.deserialize_newtype_struct(name, Wrap(v, $level))
            }
            fn deserialize_unit_struct<V: Visitor<'de>>(
                self,
                name: &'static str,
                v: V,
            ) -> Result<V::Value, D::Error> {
                self.0.deserialize_unit_struct(name, v)
            }
            fn deserialize_tuple<V: Visitor<'de>>(
                self,
                len: usize,
                v: V,
            ) -> Result<V::Value, D::Error> {
                self.0.deserialize_tuple(len, v)
            }
            fn deserialize_tuple_struct<V: Visitor<'de>>(
                self,
                name: &'static str,
                len: usize,
                v: V,
            ) -> Result<V::Value, D::Error> {
                self.0.deserialize_tuple_struct(name, len, v)
            }
            fn deserialize_enum<V: Visitor<'de>>(
                self,
                name: &'static str,
                variants: &'static [&'static str],
                v: V,
            ) -> Result<V::Value, D::Error> {
                self.0.deserialize_enum(name, variants, v)
            }
            fn is_human_readable(&self) -> bool {
                self.0.is_human_readable()
            }
            forward! {
                deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
                deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64
                deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char deserialize_str
                deserialize_string deserialize_bytes deserialize_byte_buf deserialize_unit
                deserialize_seq deserialize_identifier deserialize_ignored_any
            }
        }
    };
}

wrapper!(Object, Level::Object);
wrapper!(Meta, Level::Meta);

/// A visitor whose maps are read through [`Fields`].
struct Wrap<V>(V, Level);

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrap<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(f)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.0.visit_map(Fields {
            map,
            level: self.1,
            meta_next: false,
        })
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.0.visit_seq(seq)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        match self.1 {
            Level::Object => self.0.visit_some(Object(d)),
            Level::Meta => self.0.visit_some(Meta(d)),
        }
    }
    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.0.visit_none()
    }
    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.0.visit_unit()
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        match self.1 {
            Level::Object => self.0.visit_newtype_struct(Object(d)),
            Level::Meta => self.0.visit_newtype_struct(Meta(d)),
        }
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<V::Value, E> {
        self.0.visit_bool(v)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<V::Value, E> {
        self.0.visit_i64(v)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<V::Value, E> {
        self.0.visit_u64(v)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<V::Value, E> {
        self.0.visit_f64(v)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<V::Value, E> {
        self.0.visit_str(v)
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<V::Value, E> {
        self.0.visit_borrowed_str(v)
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<V::Value, E> {
        self.0.visit_string(v)
    }
}

/// The fields of the object (its `metadata` read as metadata) or of its metadata (without
/// `managedFields`).
struct Fields<A> {
    map: A,
    level: Level,
    /// The value about to be read is the object's `metadata`.
    meta_next: bool,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Fields<A> {
    type Error = A::Error;

    fn next_key_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, A::Error> {
        loop {
            let Some(key) = self.map.next_key_seed(KeySeed)? else {
                return Ok(None);
            };
            match self.level {
                Level::Object => {
                    self.meta_next = key.as_str() == "metadata";
                    return give_key(seed, key).map(Some);
                }
                Level::Meta if key.as_str() == "managedFields" => {
                    self.map.next_value::<IgnoredAny>()?;
                }
                Level::Meta => return give_key(seed, key).map(Some),
            }
        }
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, A::Error> {
        if std::mem::take(&mut self.meta_next) {
            self.map.next_value_seed(MetaSeed(seed))
        } else {
            self.map.next_value_seed(seed)
        }
    }

    fn size_hint(&self) -> Option<usize> {
        self.map.size_hint()
    }
}

/// Reads the value the seed wants as metadata.
struct MetaSeed<S>(S);

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for MetaSeed<S> {
    type Value = S::Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<S::Value, D::Error> {
        self.0.deserialize(Meta(d))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use serde_json::{Value, json};

    fn full<K: serde::de::DeserializeOwned + Resource>(s: &str) -> K {
        let mut o: K = serde_json::from_str(s).expect("full decode");
        o.meta_mut().managed_fields = None;
        o
    }

    fn with_managed_fields() -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "a",
                "namespace": "ns",
                "labels": {"managedFields": "kept: a label, not the field"},
                "managedFields": [{
                    "manager": "kubectl",
                    "operation": "Apply",
                    "apiVersion": "v1",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:data": {"f:x": {}}}
                }],
                "resourceVersion": "7"
            },
            "data": {"managedFields": "kept: data, not metadata", "x": "1"}
        })
    }

    #[test]
    fn equals_the_full_decode_without_managed_fields() {
        let s = with_managed_fields().to_string();
        let slim: Slim<ConfigMap> = serde_json::from_str(&s).unwrap();
        assert_eq!(slim.0, full::<ConfigMap>(&s));
        assert!(slim.0.metadata.managed_fields.is_none());
        assert_eq!(slim.0.metadata.resource_version.as_deref(), Some("7"));
        let data = slim.0.data.unwrap();
        assert_eq!(data["managedFields"], "kept: data, not metadata");
        assert!(
            slim.0
                .metadata
                .labels
                .unwrap()
                .contains_key("managedFields")
        );
    }

    #[test]
    fn escaped_keys_and_any_field_order() {
        // `\u0061` spells "a": the keys are the same once unescaped, so they are treated alike.
        let s = r#"{"data":{"x":"1"},"metad\u0061ta":{"managedFi\u0065lds":[{"manager":"m"}],"name":"a"},"kind":"ConfigMap","apiVersion":"v1"}"#;
        let slim: Slim<ConfigMap> = serde_json::from_str(s).unwrap();
        assert_eq!(slim.0, full::<ConfigMap>(s));
        assert_eq!(slim.0.metadata.name.as_deref(), Some("a"));
    }

    #[test]
    fn through_a_watch_event_and_a_list() {
        let obj = with_managed_fields();
        let ev = json!({"type": "MODIFIED", "object": obj}).to_string();
        let e: kube::core::WatchEvent<Slim<ConfigMap>> = serde_json::from_str(&ev).unwrap();
        let kube::core::WatchEvent::Modified(o) = e else {
            panic!("not a Modified event")
        };
        assert_eq!(o.0, full::<ConfigMap>(&obj.to_string()));
        // The object before the type: serde buffers it, and the buffered form is read the same.
        let ev = json!({"object": obj, "type": "ADDED"}).to_string();
        let e: kube::core::WatchEvent<Slim<ConfigMap>> = serde_json::from_str(&ev).unwrap();
        assert!(
            matches!(e, kube::core::WatchEvent::Added(o) if o.0.metadata.managed_fields.is_none())
        );
        let list = json!({"metadata": {"resourceVersion": "9"}, "items": [obj, obj]}).to_string();
        let l: kube::core::ObjectList<Slim<ConfigMap>> = serde_json::from_str(&list).unwrap();
        assert_eq!(l.items.len(), 2);
        assert!(
            l.items
                .iter()
                .all(|o| o.0.metadata.managed_fields.is_none())
        );
    }

    #[test]
    fn malformed_input_is_an_error_as_for_the_full_decode() {
        for s in [
            "",
            "null",
            "[]",
            "{\"metadata\": 3}",
            "{\"metadata\": {\"managedFields\": [}}",
            "{\"metadata\": {\"managedFields\": [], \"name\": 2}}",
            "{\"metadata\": {\"name\": \"a\"}, \"data\": {\"x\": 1}}",
            "{\"metadata\": {\"name\": \"a\"",
        ] {
            assert!(
                serde_json::from_str::<ConfigMap>(s).is_err(),
                "{s}: full decode"
            );
            assert!(
                serde_json::from_str::<Slim<ConfigMap>>(s).is_err(),
                "{s}: accepted"
            );
        }
        // What is skipped is not read, so only its JSON syntax is checked (a managedFields that
        // is not a list of entries does not matter here, as it is never looked at).
        let s = r#"{"metadata": {"managedFields": 1, "name": "a"}}"#;
        assert!(serde_json::from_str::<Slim<ConfigMap>>(s).is_ok());
    }

    #[test]
    fn metadata_null_or_absent() {
        for s in [r#"{"metadata":null}"#, r#"{}"#, r#"{"metadata":{}}"#] {
            let slim: Result<Slim<ConfigMap>, _> = serde_json::from_str(s);
            let plain: Result<ConfigMap, _> = serde_json::from_str(s);
            assert_eq!(slim.is_ok(), plain.is_ok(), "{s}");
            if let (Ok(a), Ok(b)) = (slim, plain) {
                assert_eq!(a.0, b);
            }
        }
    }

    proptest::proptest! {
        /// Any object: the slim decode equals the full one with managedFields dropped.
        #[test]
        fn any_object_decodes_as_the_full_decode(
            name in "[a-z]{1,8}",
            labels in proptest::collection::btree_map("[a-zA-Z]{1,12}", "[a-z0-9]{0,6}", 0..4),
            data in proptest::collection::btree_map("[a-zA-Z]{1,12}", "[ -~]{0,12}", 0..4),
            managers in proptest::collection::vec("[a-z-]{1,10}", 0..3),
            meta_first in proptest::bool::ANY,
        ) {
            let entries: Vec<Value> = managers
                .iter()
                .map(|m| json!({"manager": m, "operation": "Update", "fieldsV1": {"f:data": {}}}))
                .collect();
            let meta = json!({"name": name, "labels": labels, "managedFields": entries});
            let s = if meta_first {
                format!(r#"{{"metadata":{meta},"apiVersion":"v1","kind":"ConfigMap","data":{}}}"#, json!(data))
            } else {
                format!(r#"{{"apiVersion":"v1","kind":"ConfigMap","data":{},"metadata":{meta}}}"#, json!(data))
            };
            let slim: Slim<ConfigMap> = serde_json::from_str(&s).unwrap();
            proptest::prop_assert_eq!(slim.0, full::<ConfigMap>(&s));
        }
    }
}
