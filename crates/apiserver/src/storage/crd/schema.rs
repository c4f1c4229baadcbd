//! Structural schemas of CustomResourceDefinition versions: pruning of unknown fields, defaulting
//! and validation (type, required, enum, bounds), with the field paths kube-apiserver reports.
//! Custom resources are only as trustworthy as this: controllers deserialize them into typed
//! structs, so a wrong type stored here would break every reader.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde_json::Value;

use crate::storage::errors::Cause;

/// A node of a structural schema.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Structural {
    /// `type` (`object`, `array`, `string`, `integer`, `number`, `boolean`), if given.
    pub ty: Option<String>,
    /// `properties`.
    pub properties: BTreeMap<String, Structural>,
    /// `additionalProperties` as a schema (maps).
    pub additional: Option<Box<Structural>>,
    /// `additionalProperties: true`-like openness without a schema.
    pub additional_any: bool,
    /// `items`.
    pub items: Option<Box<Structural>>,
    /// `required`.
    pub required: Vec<String>,
    /// `enum`.
    pub enum_values: Vec<Value>,
    /// `default`.
    pub default: Option<Value>,
    /// `nullable`.
    pub nullable: bool,
    /// `x-kubernetes-preserve-unknown-fields`.
    pub preserve_unknown: bool,
    /// `x-kubernetes-int-or-string`.
    pub int_or_string: bool,
    /// `x-kubernetes-embedded-resource`.
    pub embedded: bool,
    /// `minimum`/`maximum` for numbers.
    pub minimum: Option<f64>,
    /// `maximum`.
    pub maximum: Option<f64>,
    /// `minLength`/`maxLength` for strings.
    pub min_length: Option<u64>,
    /// `maxLength`.
    pub max_length: Option<u64>,
    /// `minItems`/`maxItems` for arrays.
    pub min_items: Option<u64>,
    /// `maxItems`.
    pub max_items: Option<u64>,
    /// `x-kubernetes-list-type` (`atomic`, `set`, `map`): server-side apply list semantics.
    pub list_type: Option<String>,
    /// `x-kubernetes-list-map-keys`: the key fields of a `map` list.
    pub list_map_keys: Vec<String>,
    /// `x-kubernetes-map-type` (`granular`, `atomic`): server-side apply map semantics.
    pub map_type: Option<String>,
}

impl Structural {
    /// Builds a structural schema from an `openAPIV3Schema` value. Unknown keywords are ignored;
    /// a non-object schema is an error naming its path.
    pub fn from_json(v: &Value, path: &str) -> Result<Structural, Cause> {
        let Some(m) = v.as_object() else {
            return Err(Cause::invalid(path.to_string(), "must be an object"));
        };
        let mut s = Structural {
            ty: m.get("type").and_then(Value::as_str).map(str::to_string),
            nullable: m.get("nullable").and_then(Value::as_bool).unwrap_or(false),
            preserve_unknown: m
                .get("x-kubernetes-preserve-unknown-fields")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            int_or_string: m
                .get("x-kubernetes-int-or-string")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            embedded: m
                .get("x-kubernetes-embedded-resource")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            default: m.get("default").cloned(),
            minimum: m.get("minimum").and_then(Value::as_f64),
            maximum: m.get("maximum").and_then(Value::as_f64),
            min_length: m.get("minLength").and_then(Value::as_u64),
            max_length: m.get("maxLength").and_then(Value::as_u64),
            min_items: m.get("minItems").and_then(Value::as_u64),
            max_items: m.get("maxItems").and_then(Value::as_u64),
            list_type: m
                .get("x-kubernetes-list-type")
                .and_then(Value::as_str)
                .map(str::to_string),
            list_map_keys: m
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            map_type: m
                .get("x-kubernetes-map-type")
                .and_then(Value::as_str)
                .map(str::to_string),
            ..Default::default()
        };
        if let Some(Value::Array(e)) = m.get("enum") {
            s.enum_values = e.clone();
        }
        if let Some(Value::Array(r)) = m.get("required") {
            s.required = r
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect();
        }
        if let Some(Value::Object(props)) = m.get("properties") {
            for (k, pv) in props {
                s.properties.insert(
                    k.clone(),
                    Structural::from_json(pv, &format!("{path}.properties[{k}]"))?,
                );
            }
        }
        match m.get("additionalProperties") {
            Some(Value::Bool(true)) => s.additional_any = true,
            Some(v @ Value::Object(_)) => {
                s.additional = Some(Box::new(Structural::from_json(
                    v,
                    &format!("{path}.additionalProperties"),
                )?))
            }
            _ => {}
        }
        if let Some(items) = m.get("items") {
            s.items = Some(Box::new(Structural::from_json(
                items,
                &format!("{path}.items"),
            )?));
        }
        Ok(s)
    }

    /// Removes fields the schema does not know, except below `x-kubernetes-preserve-unknown-fields`.
    /// `root` keeps `apiVersion`, `kind` and `metadata`, which every object has.
    pub fn prune(&self, v: &mut Value, root: bool) {
        match v {
            Value::Object(map) => {
                if let Some(add) = &self.additional {
                    for (_, child) in map.iter_mut() {
                        add.prune(child, false);
                    }
                    return;
                }
                let open = self.preserve_unknown || self.additional_any;
                map.retain(|k, _| {
                    open || self.properties.contains_key(k)
                        || (root && (k == "apiVersion" || k == "kind" || k == "metadata"))
                        || (self.embedded && (k == "apiVersion" || k == "kind" || k == "metadata"))
                });
                for (k, child) in map.iter_mut() {
                    if let Some(p) = self.properties.get(k) {
                        p.prune(child, false);
                    }
                }
            }
            Value::Array(items) => {
                if let Some(it) = &self.items {
                    for child in items.iter_mut() {
                        it.prune(child, false);
                    }
                }
            }
            _ => {}
        }
    }

    /// Fills in `default`s of absent properties, recursively (kube-apiserver's defaulting).
    pub fn apply_defaults(&self, v: &mut Value) {
        match v {
            Value::Object(map) => {
                for (k, p) in &self.properties {
                    if !map.contains_key(k)
                        && let Some(d) = &p.default
                    {
                        map.insert(k.clone(), d.clone());
                    }
                }
                for (k, child) in map.iter_mut() {
                    if let Some(p) = self.properties.get(k) {
                        p.apply_defaults(child);
                    } else if let Some(a) = &self.additional {
                        a.apply_defaults(child);
                    }
                }
            }
            Value::Array(items) => {
                if let Some(it) = &self.items {
                    for child in items.iter_mut() {
                        it.apply_defaults(child);
                    }
                }
            }
            _ => {}
        }
    }

    /// Validates a value; every problem becomes a cause with its dotted path.
    pub fn validate(&self, v: &Value, path: &str, causes: &mut Vec<Cause>) {
        self.validate_at(v, &mut path.to_string(), causes);
    }

    /// [`Structural::validate`] with the path in one buffer that each level extends and
    /// truncates again. Why: a path string formatted per field was most of validating a valid
    /// object (a BundleDeployment status write checks every field of its status).
    fn validate_at(&self, v: &Value, path: &mut String, causes: &mut Vec<Cause>) {
        if v.is_null() {
            if !self.nullable && self.ty.is_some() && !path.is_empty() {
                causes.push(Cause::invalid(
                    path.to_string(),
                    format!(
                        "Invalid value: \"null\": {path} in body must be of type {}: \"null\"",
                        self.ty.as_deref().unwrap_or("")
                    ),
                ));
            }
            return;
        }
        if self.int_or_string {
            if !(v.is_string() || v.is_i64() || v.is_u64()) {
                causes.push(Cause::invalid(
                    path.to_string(),
                    format!("Invalid value: {v}: {path} in body must be of type integer-or-string"),
                ));
            }
        } else if let Some(ty) = &self.ty {
            let ok = match ty.as_str() {
                "object" => v.is_object(),
                "array" => v.is_array(),
                "string" => v.is_string(),
                "integer" => {
                    v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0)
                }
                "number" => v.is_number(),
                "boolean" => v.is_boolean(),
                _ => true,
            };
            if !ok {
                causes.push(Cause {
                    field: path.to_string(),
                    reason: "FieldValueTypeInvalid",
                    message: format!(
                        "Invalid value: {}: {path} in body must be of type {ty}: {}",
                        json_type_name(v),
                        quote(v)
                    ),
                });
                return;
            }
        }
        if !self.enum_values.is_empty() && !self.enum_values.contains(v) {
            let supported: Vec<String> = self.enum_values.iter().map(quote).collect();
            causes.push(Cause {
                field: path.to_string(),
                reason: "FieldValueNotSupported",
                message: format!(
                    "Unsupported value: {}: supported values: {}",
                    quote(v),
                    supported.join(", ")
                ),
            });
        }
        if let Some(f) = v.as_f64() {
            if let Some(min) = self.minimum.filter(|m| f < *m) {
                causes.push(Cause::invalid(path.to_string(), format!("Invalid value: {v}: {path} in body should be greater than or equal to {min}")));
            }
            if let Some(max) = self.maximum.filter(|m| f > *m) {
                causes.push(Cause::invalid(
                    path.to_string(),
                    format!(
                        "Invalid value: {v}: {path} in body should be less than or equal to {max}"
                    ),
                ));
            }
        }
        if let Some(s) = v.as_str() {
            let n = s.chars().count() as u64;
            if let Some(min) = self.min_length.filter(|m| n < *m) {
                causes.push(Cause::invalid(
                    path.to_string(),
                    format!(
                        "Invalid value: {}: {path} in body should be at least {min} chars long",
                        quote(v)
                    ),
                ));
            }
            if let Some(max) = self.max_length.filter(|m| n > *m) {
                causes.push(Cause {
                    field: path.to_string(),
                    reason: "FieldValueTooLong",
                    message: format!("Too long: may not be more than {max} bytes"),
                });
            }
        }
        match v {
            Value::Object(map) => {
                for r in &self.required {
                    if !map.contains_key(r)
                        || map.get(r).is_some_and(Value::is_null)
                            && !self.properties.get(r).is_some_and(|p| p.nullable)
                    {
                        causes.push(Cause::required(join(path, r)));
                    }
                }
                for (k, child) in map {
                    let Some(schema) = self.properties.get(k).or(self.additional.as_deref()) else {
                        continue;
                    };
                    let len = path.len();
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(k);
                    schema.validate_at(child, path, causes);
                    path.truncate(len);
                }
            }
            Value::Array(items) => {
                let n = items.len() as u64;
                if let Some(min) = self.min_items.filter(|m| n < *m) {
                    causes.push(Cause::invalid(
                        path.to_string(),
                        format!(
                            "Invalid value: {n}: {path} in body should have at least {min} items"
                        ),
                    ));
                }
                if let Some(max) = self.max_items.filter(|m| n > *m) {
                    causes.push(Cause {
                        field: path.to_string(),
                        reason: "FieldValueTooMany",
                        message: format!("Too many: {n}: must have at most {max} items"),
                    });
                }
                if let Some(it) = &self.items {
                    for (i, child) in items.iter().enumerate() {
                        let len = path.len();
                        let _ = write!(path, "[{i}]");
                        it.validate_at(child, path, causes);
                        path.truncate(len);
                    }
                }
            }
            _ => {}
        }
    }

    /// Prunes, defaults and validates a whole custom resource, skipping `metadata`, `apiVersion`
    /// and `kind`, which the generic object checks cover.
    pub fn process(&self, obj: &mut Value) -> Vec<Cause> {
        self.apply_defaults(obj);
        self.prune(obj, true);
        let mut causes = Vec::new();
        if let Value::Object(map) = &*obj {
            for r in &self.required {
                if !map.contains_key(r) {
                    causes.push(Cause::required(r.clone()));
                }
            }
            for (k, child) in map {
                if k == "metadata" || k == "apiVersion" || k == "kind" {
                    continue;
                }
                if let Some(p) = self.properties.get(k) {
                    p.validate(child, k, &mut causes);
                }
            }
        }
        causes
    }

    /// [`Structural::process`] for a write of the status subresource, where everything but
    /// `status` is the stored object (processed when it was written): only `status` is
    /// defaulted, pruned and validated, as kube-apiserver validates a status update against the
    /// status schema alone. A root schema this shortcut does not cover gets the whole process.
    pub fn process_status(&self, obj: &mut Value) -> Vec<Cause> {
        let open = self.preserve_unknown || self.additional_any || self.additional.is_some();
        let (Some(p), false, Value::Object(map)) = (self.properties.get("status"), open, &mut *obj)
        else {
            return self.process(obj);
        };
        let mut causes = Vec::new();
        match map.get_mut("status") {
            Some(status) => {
                p.apply_defaults(status);
                p.prune(status, false);
                p.validate(status, "status", &mut causes);
            }
            None => {
                if let Some(d) = &p.default {
                    let mut status = d.clone();
                    p.apply_defaults(&mut status);
                    p.prune(&mut status, false);
                    p.validate(&status, "status", &mut causes);
                    map.insert("status".into(), status);
                } else if self.required.iter().any(|r| r == "status") {
                    causes.push(Cause::required("status".to_string()));
                }
            }
        }
        causes
    }
}

fn join(path: &str, k: &str) -> String {
    if path.is_empty() {
        k.to_string()
    } else {
        format!("{path}.{k}")
    }
}

fn json_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "\"null\"",
        Value::Bool(_) => "\"boolean\"",
        Value::Number(n) if n.is_f64() => "\"number\"",
        Value::Number(_) => "\"integer\"",
        Value::String(_) => "\"string\"",
        Value::Array(_) => "\"array\"",
        Value::Object(_) => "\"object\"",
    }
}

fn quote(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Structural {
        Structural::from_json(
            &json!({
                "type": "object",
                "properties": {
                    "spec": {
                        "type": "object",
                        "required": ["size"],
                        "properties": {
                            "size": {"type": "integer", "minimum": 1},
                            "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
                            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                            "tags": {"type": "array", "items": {"type": "string"}},
                            "labels": {"type": "object", "additionalProperties": {"type": "string"}}
                        }
                    },
                    "status": {"type": "object", "properties": {"ok": {"type": "boolean"}}}
                }
            }),
            "",
        )
        .unwrap()
    }

    #[test]
    fn a_status_write_is_processed_as_the_whole_object_is() {
        let with_default = Structural::from_json(
            &json!({"type": "object", "required": ["status"], "properties": {
                "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
                "status": {"type": "object", "default": {"phase": "new"}, "properties": {
                    "phase": {"type": "string", "enum": ["new", "done"]},
                    "n": {"type": "integer", "minimum": 0, "default": 0}}}}}),
            "",
        )
        .unwrap();
        let statuses = [
            None,
            Some(json!({"ok": true})),
            Some(json!({"ok": "yes", "junk": {"a": 1}})),
            Some(json!(null)),
            Some(json!(3)),
            Some(json!({"phase": "done", "n": -1})),
            Some(json!({"phase": "other", "extra": [1, 2]})),
        ];
        for s in [schema(), with_default] {
            // As stored: the whole object processed once.
            let mut stored = json!({"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "n"},
                "spec": {"size": 2, "junk": 1}});
            let _ = s.process(&mut stored);
            for st in &statuses {
                let mut o = stored.clone();
                if let (Some(st), Some(m)) = (st, o.as_object_mut()) {
                    m.insert("status".into(), st.clone());
                }
                let (mut whole, mut only) = (o.clone(), o);
                let (cw, co) = (s.process(&mut whole), s.process_status(&mut only));
                assert_eq!(whole, only, "{st:?}");
                let msgs = |c: &[Cause]| c.iter().map(|c| format!("{c:?}")).collect::<Vec<_>>();
                assert_eq!(msgs(&cw), msgs(&co), "{st:?}");
            }
        }
    }

    #[test]
    fn prunes_defaults_and_validates() {
        let s = schema();
        let mut o = json!({"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "n"},
            "spec": {"size": 2, "junk": 1, "free": {"any": {"thing": 1}}, "labels": {"a": "b"}}, "top": 1});
        let c = s.process(&mut o);
        assert!(c.is_empty(), "{c:?}");
        assert_eq!(o["spec"]["mode"], "a");
        assert!(o["spec"].get("junk").is_none());
        assert!(o.get("top").is_none());
        assert_eq!(o["spec"]["free"]["any"]["thing"], 1);
        assert_eq!(o["metadata"]["name"], "n");

        let mut bad = json!({"spec": {"size": "big", "mode": "z", "tags": [1]}});
        let c = s.process(&mut bad);
        let fields: Vec<&str> = c.iter().map(|c| c.field.as_str()).collect();
        assert!(fields.contains(&"spec.size"), "{fields:?}");
        assert!(fields.contains(&"spec.mode"));
        assert!(fields.contains(&"spec.tags[0]"));

        let mut missing = json!({"spec": {}});
        let c = s.process(&mut missing);
        assert_eq!(c[0].field, "spec.size");
        assert_eq!(c[0].reason, "FieldValueRequired");
    }
}
