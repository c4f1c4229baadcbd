//! Helm's own template functions (helm.sh/helm/v3/pkg/engine/funcs.go and engine.go).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{Map, Ty, reg, s};
use crate::exec::Ctx;
use crate::json;
use crate::value::Value;
use crate::yaml;

/// Helm's include recursion limit (engine.go recursionMaxNums).
const RECURSION_MAX: usize = 1000;

pub(crate) fn register(m: &mut Map) {
    use Ty::*;
    reg(m, "include", &[Str, Any], None, |ctx, a| {
        include(ctx, s(&a[0]), &a[1])
    });
    reg(m, "tpl", &[Str, Values], None, |ctx, a| {
        tpl(ctx, s(&a[0]), &a[1])
    });
    // Helm wraps the message in markers that its error cleanup later extracts.
    reg(m, "required", &[Str, Any], None, |_, a| match &a[1] {
        Value::Nil => Err(crate::helm::warn_wrap(s(&a[0]))),
        Value::String(x) if x.is_empty() => Err(crate::helm::warn_wrap(s(&a[0]))),
        v => Ok(v.clone()),
    });
    reg(m, "fail", &[Str], None, |_, a| Err(s(&a[0]).to_string()));
    reg(m, "toYaml", &[Any], None, |_, a| {
        let y = yaml::to_yaml(&a[0]);
        Ok(Value::from(y.strip_suffix('\n').unwrap_or(&y).to_string()))
    });
    reg(m, "fromYaml", &[Str], None, |_, a| {
        Ok(match yaml::from_yaml(s(&a[0])) {
            Ok(Value::Map(m)) => Value::Map(m),
            Ok(Value::Nil) => Value::Map(Arc::new(BTreeMap::new())),
            Ok(other) => error_map(format!(
                "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                json_kind(&other)
            )),
            Err(e) => error_map(e.0),
        })
    });
    reg(m, "fromYamlArray", &[Str], None, |_, a| {
        Ok(match yaml::from_yaml(s(&a[0])) {
            Ok(Value::List(l)) => Value::List(l),
            Ok(Value::Nil) => Value::List(Arc::new(Vec::new())),
            Ok(other) => Value::from(vec![Value::from(format!(
                "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go value of type []interface {{}}",
                json_kind(&other)
            ))]),
            Err(e) => Value::from(vec![Value::from(e.0)]),
        })
    });
    reg(m, "toJson", &[Any], None, |_, a| {
        Ok(Value::from(json::to_json(&a[0], true)))
    });
    reg(m, "fromJson", &[Str], None, |_, a| {
        Ok(match json::from_json(s(&a[0])) {
            Ok(Value::Map(m)) => Value::Map(m),
            Ok(Value::Nil) => Value::Map(Arc::new(BTreeMap::new())),
            Ok(other) => error_map(format!(
                "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                json_kind(&other)
            )),
            Err(e) => error_map(e.0),
        })
    });
    reg(m, "fromJsonArray", &[Str], None, |_, a| {
        Ok(match json::from_json(s(&a[0])) {
            Ok(Value::List(l)) => Value::List(l),
            Ok(Value::Nil) => Value::List(Arc::new(Vec::new())),
            Ok(other) => Value::from(vec![Value::from(format!(
                "json: cannot unmarshal {} into Go value of type []interface {{}}",
                json_kind(&other)
            ))]),
            Err(e) => Value::from(vec![Value::from(e.0)]),
        })
    });
    reg(m, "toToml", &[Any], None, |_, a| {
        Ok(Value::from(crate::toml::to_toml(&a[0])))
    });
    // Offline rendering (helm template): lookup always returns an empty map.
    reg(m, "lookup", &[Str, Str, Str, Str], None, |_, _| {
        Ok(Value::Map(Arc::new(BTreeMap::new())))
    });
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Nil => "null",
        Value::Bool(_) => "bool",
        Value::Int(_) | Value::Int64(_) | Value::Float(_) => "number",
        Value::String(_) => "string",
        Value::List(_) => "array",
        Value::Map(_) | Value::Object(_) => "object",
    }
}

fn error_map(e: String) -> Value {
    let mut m = BTreeMap::new();
    m.insert("Error".to_string(), Value::from(e));
    Value::Map(Arc::new(m))
}

fn include(ctx: &mut Ctx<'_>, name: &str, data: &Value) -> Result<Value, String> {
    let n = ctx.include_enter(name);
    if n > RECURSION_MAX {
        ctx.include_leave(name);
        return Err(format!(
            "rendering template has a nested reference name: {name}: unable to execute template"
        ));
    }
    let r = ctx.execute_template(name, data);
    ctx.include_leave(name);
    r.map(Value::from).map_err(|e| e.to_string())
}

/// Helm 3's tpl: renders `text` as the template named by `.Template.Name`, with the chart's
/// templates available for include, and Helm's error cleanup applied.
fn tpl(ctx: &mut Ctx<'_>, text: &str, vals: &Value) -> Result<Value, String> {
    let path_value = |key: &str| -> Result<Value, String> {
        let tmpl = match vals {
            Value::Map(m) => m.get("Template"),
            _ => None,
        };
        match tmpl {
            Some(Value::Map(t)) => match t.get(key) {
                Some(v) if !matches!(v, Value::Map(_)) => Ok(v.clone()),
                _ => Err(format!("\"{key}\" is not a value")),
            },
            _ => Err(format!("\"{key}\" is not a value")),
        }
    };
    let base = path_value("BasePath").map_err(|e| {
        format!("cannot retrieve Template.Basepath from values inside tpl function: {text}: {e}")
    })?;
    let name = path_value("Name").map_err(|e| {
        format!("cannot retrieve Template.Name from values inside tpl function: {text}: {e}")
    })?;
    let name = match name {
        Value::String(n) => n.to_string(),
        other => {
            return Err(format!(
                "interface conversion: interface {{}} is {}, not string",
                other.type_name()
            ));
        }
    };
    let _ = base;
    let mut t = ctx.templates().clone();
    t.parse(&name, text).map_err(|e| {
        format!(
            "error during tpl function execution for {}: {}",
            crate::lex::go_quote(text),
            crate::helm::cleanup_parse_error(&name, &e)
        )
    })?;
    // Helm never renders partials (files whose base name starts with "_").
    if name.rsplit('/').next().unwrap_or("").starts_with('_') {
        return Ok(Value::from(""));
    }
    let shared = std::cell::RefCell::new(crate::exec::Shared::default());
    let out = t
        .execute_shared(&name, vals, &shared, ctx.depth() + 1)
        .map_err(|e| {
            format!(
                "error during tpl function execution for {}: {}",
                crate::lex::go_quote(text),
                crate::helm::cleanup_exec_error(&name, &e)
            )
        })?;
    Ok(Value::from(out.replace("<no value>", "")))
}
