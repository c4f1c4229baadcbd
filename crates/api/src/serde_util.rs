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
