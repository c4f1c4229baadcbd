//! Serde helpers that give Go's JSON semantics: `null` reads as the zero value and zero values are
//! omitted on output (`omitempty`), so our objects round-trip like upstream's.

use schemars::{Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer};

/// Deserialises `null` (or a missing value) as `T::default()`, like Go's decoder does for non-pointer fields.
pub fn nd<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// Serde impls for types derived with `#[serde(remote = "Self")]` (the derived code then lives in
/// the inherent `T::serialize`/`T::deserialize`): serialisation is the derived one, and `null` or
/// a missing value reads as `T::default()`, as Go's decoder leaves a struct it finds `null` or
/// absent. Used for the `spec` of every kind, which the root struct (derived by kube) requires.
macro_rules! null_as_default {
    ($($t:ty),* $(,)?) => {$(
        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                <$t>::serialize(self, s)
            }
        }

        impl<'de> serde::Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct Derived($t);
                impl<'de> serde::Deserialize<'de> for Derived {
                    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                        <$t>::deserialize(d).map(Derived)
                    }
                }
                Ok(Option::<Derived>::deserialize(d)?.map(|x| x.0).unwrap_or_default())
            }
        }
    )*};
}
pub(crate) use null_as_default;

/// `omitempty` for booleans.
pub fn is_false(b: &bool) -> bool {
    !*b
}

/// `omitempty` for integers.
pub fn is_zero(i: &i64) -> bool {
    *i == 0
}

/// `omitempty` for structs compared with their zero value.
pub fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

/// Schema of free-form maps (Helm values): any object, kept verbatim by the API server.
pub fn preserve_unknown(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "nullable": true,
        "x-kubernetes-preserve-unknown-fields": true
    })
}

/// Schema of Go `metav1.Duration` fields: a string such as `15s` or `1h30m`, validated like upstream.
pub fn duration_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "nullable": true,
        "x-kubernetes-validations": [{
            "rule": "self == '0' || self.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+$')",
            "message": "must be a Go duration such as 15s, 5m or 1h30m"
        }]
    })
}

/// Schema of Go `[]byte` fields: base64 text.
pub fn bytes_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "format": "byte",
        "nullable": true
    })
}
