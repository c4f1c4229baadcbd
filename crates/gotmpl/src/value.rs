//! The value model: Go's dynamic `interface{}` values as templates see them.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

pub(crate) use crate::gofmt::{
    float_digits, format_float_e, format_float_f, format_float_g, format_float_gp,
};

/// A Go value as templates see it. Maps iterate in sorted key order like Go's text/template.
#[derive(Clone, Debug)]
pub enum Value {
    /// Go's untyped `nil` (also what a missing map key yields).
    Nil,
    /// Go `bool`.
    Bool(bool),
    /// Go `int`: template constants and what `len`, `int`, `atoi` and `until` produce.
    Int(i64),
    /// Go `int64`: what Helm's `--set` integers (strvals `ParseInt`) and sprig's arithmetic
    /// (`add`, `sub`, `mul`, `max`, `int64`, ...) produce. Behaves exactly like [`Value::Int`]
    /// except for its Go type name (`typeOf`, `kindOf`, `%T`, "wrong type" errors) and where
    /// sprig itself switches on the type (`duration`, `durationRound`).
    Int64(i64),
    /// Go `float64` (every number read from YAML/JSON values).
    Float(f64),
    /// Go `string`.
    String(Arc<str>),
    /// Go `[]interface{}`.
    List(Arc<Vec<Value>>),
    /// Go `map[string]interface{}`.
    Map(Arc<BTreeMap<String, Value>>),
    /// A Go struct/object with fields and methods, e.g. Helm's `.Files`, `.Capabilities.APIVersions`.
    Object(Arc<dyn Object>),
}

/// A host object exposed to templates (Go struct with fields and methods).
pub trait Object: Send + Sync + std::fmt::Debug {
    /// `.Name` field access; None = no such field (an error in Go).
    fn field(&self, name: &str) -> Option<Value>;
    /// `.Get "x"` method call; None = no such method.
    fn call(&self, method: &str, args: &[Value]) -> Option<Result<Value, String>>;
    /// How `{{ . }}` / printf "%v" prints it (Go's String() method), e.g. KubeVersion -> "v1.30.0".
    fn display(&self) -> String;
    /// Go type name for error messages and `typeOf`; objects may override.
    fn type_name(&self) -> String {
        "struct".to_string()
    }
    /// For an object that is a Go map with methods (Helm's `files` from `.Files.Glob`): its
    /// entries sorted by key, so `range`, `index`, `len` and truthiness treat it as the map it
    /// is. None (the default) means a struct.
    fn entries(&self) -> Option<Vec<(String, Value)>> {
        None
    }
    /// Number of entries of a map-like object (`len`, `if`, `empty`, `kindOf`) without building
    /// them; override when [`Object::entries`] is costly. None means a struct.
    fn entry_count(&self) -> Option<usize> {
        self.entries().map(|e| e.len())
    }
    /// JSON form used by `toJson`/`toYaml`; defaults to the display string.
    fn to_json(&self) -> serde_json::Value {
        serde_json::Value::String(self.display())
    }
}

impl From<serde_json::Value> for Value {
    /// Integers become `Int`, other numbers `Float` (use [`Value::from_json_float`] for Helm values).
    fn from(v: serde_json::Value) -> Self {
        Value::from_json_impl(v, false)
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::String(Arc::from(s))
    }
}
impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::String(Arc::from(s))
    }
}
impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}
impl From<i64> for Value {
    fn from(i: i64) -> Self {
        Value::Int(i)
    }
}
impl From<f64> for Value {
    fn from(f: f64) -> Self {
        Value::Float(f)
    }
}
impl From<Vec<Value>> for Value {
    fn from(v: Vec<Value>) -> Self {
        Value::List(Arc::new(v))
    }
}
impl From<BTreeMap<String, Value>> for Value {
    fn from(m: BTreeMap<String, Value>) -> Self {
        Value::Map(Arc::new(m))
    }
}

/// Go's kinds, used by comparisons and `kindOf`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Invalid,
    Bool,
    Int,
    Float,
    String,
    Slice,
    Map,
    Struct,
}

impl Value {
    /// Converts JSON the way Go's `json.Unmarshal` into `interface{}` does: every number is float64.
    /// Helm values (read through sigs.k8s.io/yaml) have this shape.
    pub fn from_json_float(v: serde_json::Value) -> Value {
        Value::from_json_impl(v, true)
    }

    fn from_json_impl(v: serde_json::Value, all_float: bool) -> Value {
        match v {
            serde_json::Value::Null => Value::Nil,
            serde_json::Value::Bool(b) => Value::Bool(b),
            serde_json::Value::Number(n) => {
                if !all_float && let Some(i) = n.as_i64() {
                    return Value::Int(i);
                }
                if !all_float && let Some(u) = n.as_u64() {
                    return Value::Float(u as f64);
                }
                Value::Float(n.as_f64().unwrap_or(0.0))
            }
            serde_json::Value::String(s) => Value::String(Arc::from(s)),
            serde_json::Value::Array(a) => Value::List(Arc::new(
                a.into_iter()
                    .map(|x| Value::from_json_impl(x, all_float))
                    .collect(),
            )),
            serde_json::Value::Object(o) => Value::Map(Arc::new(
                o.into_iter()
                    .map(|(k, x)| (k, Value::from_json_impl(x, all_float)))
                    .collect(),
            )),
        }
    }

    /// The JSON form (what `toJson` marshals); floats that are whole numbers stay floats in JSON
    /// text only when fractional, matching Go's encoding/json output for float64.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Nil => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Int(i) | Value::Int64(i) => serde_json::Value::from(*i),
            Value::Float(f) => {
                if f.fract() == 0.0 && f.abs() < 9.007_199_254_740_992e15 {
                    serde_json::Value::from(*f as i64)
                } else {
                    serde_json::Number::from_f64(*f)
                        .map(serde_json::Value::Number)
                        .unwrap_or(serde_json::Value::Null)
                }
            }
            Value::String(s) => serde_json::Value::String(s.to_string()),
            Value::List(l) => serde_json::Value::Array(l.iter().map(|v| v.to_json()).collect()),
            Value::Map(m) => {
                serde_json::Value::Object(m.iter().map(|(k, v)| (k.clone(), v.to_json())).collect())
            }
            Value::Object(o) => o.to_json(),
        }
    }

    /// A string value.
    pub fn str(s: &str) -> Value {
        Value::String(Arc::from(s))
    }

    /// A Go `int64` (what Helm's `--set`/strvals integers are), as opposed to a Go `int`.
    pub fn int64(i: i64) -> Value {
        Value::Int64(i)
    }

    /// The integer inside an `int` or `int64`, for code that treats Go's integer kinds alike.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) | Value::Int64(i) => Some(*i),
            _ => None,
        }
    }

    /// Go's truth: false, 0, nil, empty string/list/map are false.
    pub fn truthy(&self) -> bool {
        match self {
            Value::Nil => false,
            Value::Bool(b) => *b,
            Value::Int(i) | Value::Int64(i) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::String(s) => !s.is_empty(),
            Value::List(l) => !l.is_empty(),
            Value::Map(m) => !m.is_empty(),
            Value::Object(o) => o.entry_count().is_none_or(|n| n > 0),
        }
    }

    pub(crate) fn kind(&self) -> Kind {
        match self {
            Value::Nil => Kind::Invalid,
            Value::Bool(_) => Kind::Bool,
            Value::Int(_) | Value::Int64(_) => Kind::Int,
            Value::Float(_) => Kind::Float,
            Value::String(_) => Kind::String,
            Value::List(_) => Kind::Slice,
            Value::Map(_) => Kind::Map,
            Value::Object(o) if o.entry_count().is_some() => Kind::Map,
            Value::Object(_) => Kind::Struct,
        }
    }

    /// Go's `reflect.Kind` name (sprig `kindOf`).
    pub fn kind_name(&self) -> &'static str {
        match self {
            Value::Nil => "invalid",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Int64(_) => "int64",
            Value::Float(_) => "float64",
            Value::String(_) => "string",
            Value::List(_) => "slice",
            Value::Map(_) => "map",
            Value::Object(o) if o.entry_count().is_some() => "map",
            Value::Object(_) => "struct",
        }
    }

    /// Go's `%T` (sprig `typeOf`).
    pub fn type_name(&self) -> String {
        match self {
            Value::Nil => "<nil>".into(),
            Value::Bool(_) => "bool".into(),
            Value::Int(_) => "int".into(),
            Value::Int64(_) => "int64".into(),
            Value::Float(_) => "float64".into(),
            Value::String(_) => "string".into(),
            Value::List(_) => "[]interface {}".into(),
            Value::Map(_) => "map[string]interface {}".into(),
            Value::Object(o) => o.type_name(),
        }
    }

    /// The string inside, if this is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// Go's `fmt.Sprint` of this single value (`%v`).
    pub fn to_go_string(&self) -> String {
        let mut s = String::new();
        self.write_go(&mut s);
        s
    }

    /// Appends Go's `%v` formatting.
    pub fn write_go(&self, out: &mut String) {
        match self {
            Value::Nil => out.push_str("<nil>"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Int(i) | Value::Int64(i) => {
                let _ = write!(out, "{i}");
            }
            Value::Float(f) => out.push_str(&format_float_g(*f, None, false)),
            Value::String(s) => out.push_str(s),
            Value::List(l) => {
                out.push('[');
                for (i, v) in l.iter().enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    v.write_go(out);
                }
                out.push(']');
            }
            Value::Map(m) => {
                out.push_str("map[");
                for (i, (k, v)) in m.iter().enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    out.push_str(k);
                    out.push(':');
                    v.write_go(out);
                }
                out.push(']');
            }
            Value::Object(o) => out.push_str(&o.display()),
        }
    }

    /// Number of elements for `len`; None if the value has no length.
    pub fn len(&self) -> Option<usize> {
        match self {
            Value::String(s) => Some(s.len()),
            Value::List(l) => Some(l.len()),
            Value::Map(m) => Some(m.len()),
            Value::Object(o) => o.entry_count(),
            _ => None,
        }
    }

    /// True when `len` is zero (for values with a length).
    pub fn is_empty(&self) -> bool {
        self.len() == Some(0)
    }
}

impl PartialEq for Value {
    /// Deep equality (reflect.DeepEqual-like; Int and Float never equal each other).
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Value::Nil, Value::Nil) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Int64(a), Value::Int64(b)) => a == b,
            (Value::Float(a), Value::Float(b)) => a == b,
            (Value::String(a), Value::String(b)) => a == b,
            (Value::List(a), Value::List(b)) => a == b,
            (Value::Map(a), Value::Map(b)) => a == b,
            (Value::Object(a), Value::Object(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

/// Helper for building maps.
pub fn map_of<I: IntoIterator<Item = (String, Value)>>(it: I) -> Value {
    Value::Map(Arc::new(it.into_iter().collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_float_formatting() {
        assert_eq!(Value::Float(1e6).to_go_string(), "1e+06");
        assert_eq!(Value::Float(100000.0).to_go_string(), "100000");
        assert_eq!(Value::Float(1.5).to_go_string(), "1.5");
        assert_eq!(Value::Float(0.0001).to_go_string(), "0.0001");
        assert_eq!(Value::Float(0.00001).to_go_string(), "1e-05");
        assert_eq!(Value::Float(123456789.0).to_go_string(), "1.23456789e+08");
        assert_eq!(Value::Float(-2.0).to_go_string(), "-2");
        assert_eq!(format_float_e(1234.5678, 6, false), "1.234568e+03");
        assert_eq!(format_float_f(2.46913, 2), "2.47");
        assert_eq!(format_float_gp(2.46913, 3, false), "2.47");
        assert_eq!(format_float_gp(1e6, 3, false), "1e+06");
    }

    #[test]
    fn go_map_formatting() {
        let m = map_of([
            ("b".into(), Value::Nil),
            ("a".into(), Value::Float(1.0)),
            (
                "c".into(),
                Value::from(vec![Value::Int(1), Value::str("x")]),
            ),
        ]);
        assert_eq!(m.to_go_string(), "map[a:1 b:<nil> c:[1 x]]");
    }
}
