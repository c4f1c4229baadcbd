//! Function registry: Go's builtins, sprig v3 and Helm's own functions.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use crate::exec::Ctx;
use crate::fmt::{sprint, sprintf, sprintln};
use crate::value::{Kind, Value};

mod helm;
mod sprig;

/// A template function body. It receives the execution context (for include/tpl) and the
/// already type-checked arguments; an `Err` becomes Go's `error calling NAME: ...`.
pub type FuncFn = Arc<dyn Fn(&mut Ctx<'_>, Vec<Value>) -> Result<Value, String> + Send + Sync>;

/// Go parameter types the executor checks arguments against (Go's reflect-based validation),
/// so type errors read like Helm's (`wrong type for value; expected string; got float64`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    /// `interface{}`
    Any,
    /// `string`
    Str,
    /// `int`
    Int,
    /// `float64`
    Float,
    /// `bool`
    Bool,
    /// `[]interface{}`
    List,
    /// `map[string]interface{}`
    Map,
    /// Helm's `chartutil.Values`
    Values,
}

impl Ty {
    pub(crate) fn can_be_nil(self) -> bool {
        matches!(self, Ty::Any | Ty::List | Ty::Map | Ty::Values)
    }
    pub(crate) fn go_name(self) -> &'static str {
        match self {
            Ty::Any => "interface {}",
            Ty::Str => "string",
            Ty::Int => "int",
            Ty::Float => "float64",
            Ty::Bool => "bool",
            Ty::List => "[]interface {}",
            Ty::Map => "map[string]interface {}",
            Ty::Values => "chartutil.Values",
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Special {
    None,
    And,
    Or,
    /// Go mutates the map passed as first argument (sprig's set/unset/merge*); the executor
    /// propagates the change to every variable and dot that referred to that map.
    Mutates,
}

/// A registered function with its Go signature.
#[derive(Clone)]
pub(crate) struct Func {
    pub params: Vec<Ty>,
    pub variadic: Option<Ty>,
    pub f: FuncFn,
    pub special: Special,
}

impl Func {
    pub(crate) fn param(&self, i: usize) -> Ty {
        self.params
            .get(i)
            .copied()
            .or(self.variadic)
            .unwrap_or(Ty::Any)
    }
}

pub(crate) type Map = HashMap<String, Func>;

/// Registers a function.
pub(crate) fn reg<F>(m: &mut Map, name: &str, params: &[Ty], variadic: Option<Ty>, f: F)
where
    F: Fn(&mut Ctx<'_>, Vec<Value>) -> Result<Value, String> + Send + Sync + 'static,
{
    m.insert(
        name.to_string(),
        Func {
            params: params.to_vec(),
            variadic,
            f: Arc::new(f),
            special: Special::None,
        },
    );
}

/// The default function map, built once.
pub(crate) fn default_funcs() -> Arc<Map> {
    static FUNCS: OnceLock<Arc<Map>> = OnceLock::new();
    FUNCS
        .get_or_init(|| {
            let mut m = Map::new();
            // Go looks up user functions before its builtins, so sprig's `slice` wins.
            builtins(&mut m);
            sprig::register(&mut m);
            helm::register(&mut m);
            // sprig's deprecated spellings
            for (alias, target) in [
                ("trimall", "trimAll"),
                ("date_modify", "dateModify"),
                ("must_date_modify", "mustDateModify"),
            ] {
                if let Some(f) = m.get(target).cloned() {
                    m.insert(alias.to_string(), f);
                }
            }
            for name in [
                "set",
                "unset",
                "merge",
                "mustMerge",
                "mergeOverwrite",
                "mustMergeOverwrite",
            ] {
                if let Some(f) = m.get_mut(name) {
                    f.special = Special::Mutates;
                }
            }
            Arc::new(m)
        })
        .clone()
}

/// String argument (validated by the executor; never panics).
pub(crate) fn s(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

/// Int argument (validated by the executor).
pub(crate) fn i(v: &Value) -> i64 {
    match v {
        Value::Int(i) | Value::Int64(i) => *i,
        Value::Float(f) => *f as i64,
        _ => 0,
    }
}

fn builtins(m: &mut Map) {
    use Ty::*;
    m.insert(
        "and".into(),
        Func {
            params: vec![Any],
            variadic: Some(Any),
            f: Arc::new(|_, a| Ok(a.into_iter().last().unwrap_or(Value::Nil))),
            special: Special::And,
        },
    );
    m.insert(
        "or".into(),
        Func {
            params: vec![Any],
            variadic: Some(Any),
            f: Arc::new(|_, a| Ok(a.into_iter().last().unwrap_or(Value::Nil))),
            special: Special::Or,
        },
    );
    reg(m, "not", &[Any], None, |_, a| {
        Ok(Value::Bool(!a[0].truthy()))
    });
    reg(m, "len", &[Any], None, |_, a| match &a[0] {
        Value::Nil => Err("len of nil pointer".into()),
        v => v
            .len()
            .map(|n| Value::Int(n as i64))
            .ok_or_else(|| format!("len of type {}", v.type_name())),
    });
    reg(m, "index", &[Any], Some(Any), |_, a| {
        let mut it = a.into_iter();
        let mut item = it.next().unwrap_or(Value::Nil);
        for idx in it {
            item = index_one(&item, &idx)?;
        }
        Ok(item)
    });
    reg(m, "slice", &[Any], Some(Any), |_, a| go_slice(&a));
    reg(m, "print", &[], Some(Any), |_, a| {
        Ok(Value::from(sprint(&a)))
    });
    reg(m, "println", &[], Some(Any), |_, a| {
        Ok(Value::from(sprintln(&a)))
    });
    reg(m, "printf", &[Str], Some(Any), |_, a| {
        Ok(Value::from(sprintf(s(&a[0]), &a[1..])))
    });
    reg(m, "html", &[], Some(Any), |_, a| {
        Ok(Value::from(html_escape(&eval_args(&a))))
    });
    reg(m, "js", &[], Some(Any), |_, a| {
        Ok(Value::from(js_escape(&eval_args(&a))))
    });
    reg(m, "urlquery", &[], Some(Any), |_, a| {
        Ok(Value::from(query_escape(&eval_args(&a))))
    });
    reg(m, "call", &[Any], Some(Any), |_, a| {
        Err(format!("non-function of type {}", a[0].type_name()))
    });
    reg(m, "eq", &[Any], Some(Any), |_, a| {
        if a.len() < 2 {
            return Err("missing argument for comparison".into());
        }
        for b in &a[1..] {
            if go_eq(&a[0], b)? {
                return Ok(Value::Bool(true));
            }
        }
        Ok(Value::Bool(false))
    });
    reg(m, "ne", &[Any, Any], None, |_, a| {
        Ok(Value::Bool(!go_eq(&a[0], &a[1])?))
    });
    reg(m, "lt", &[Any, Any], None, |_, a| {
        Ok(Value::Bool(go_lt(&a[0], &a[1])?))
    });
    reg(m, "le", &[Any, Any], None, |_, a| {
        Ok(Value::Bool(go_lt(&a[0], &a[1])? || go_eq(&a[0], &a[1])?))
    });
    reg(m, "gt", &[Any, Any], None, |_, a| {
        Ok(Value::Bool(!(go_lt(&a[0], &a[1])? || go_eq(&a[0], &a[1])?)))
    });
    reg(m, "ge", &[Any, Any], None, |_, a| {
        Ok(Value::Bool(!go_lt(&a[0], &a[1])?))
    });
}

/// Go's evalArgs for html/js/urlquery: a lone string as is, else fmt.Sprint.
fn eval_args(a: &[Value]) -> String {
    if a.len() == 1
        && let Value::String(s) = &a[0]
    {
        return s.to_string();
    }
    sprint(a)
}

fn index_one(item: &Value, idx: &Value) -> Result<Value, String> {
    match item {
        Value::Nil => Err("index of untyped nil".into()),
        Value::List(l) => {
            let x = index_int(idx, "slice/array")?;
            if x < 0 || x as usize >= l.len() {
                return Err(format!("index out of range: {x}"));
            }
            Ok(l[x as usize].clone())
        }
        Value::String(s) => {
            let x = index_int(idx, "string")?;
            if x < 0 || x as usize >= s.len() {
                return Err(format!("index out of range: {x}"));
            }
            Ok(Value::Int(s.as_bytes()[x as usize] as i64))
        }
        Value::Map(m) => match idx {
            Value::String(k) => Ok(m.get(&**k).cloned().unwrap_or(Value::Nil)),
            Value::Nil => Ok(Value::Nil),
            other => Err(format!(
                "value has type {}; should be string",
                other.type_name()
            )),
        },
        Value::Object(o) => match idx {
            // A map-like object (Helm's `files`) is indexed by key like a Go map.
            Value::String(k) if o.entry_count().is_some() => Ok(o
                .entries()
                .and_then(|e| e.into_iter().find(|(ek, _)| **ek == **k))
                .map(|(_, v)| v)
                .unwrap_or(Value::Nil)),
            Value::String(k) => Ok(o.field(k).unwrap_or(Value::Nil)),
            other => Err(format!("can't index item of type {}", other.type_name())),
        },
        other => Err(format!("can't index item of type {}", other.type_name())),
    }
}

fn index_int(idx: &Value, what: &str) -> Result<i64, String> {
    match idx {
        Value::Int(i) | Value::Int64(i) => Ok(*i),
        Value::Nil => Err(format!("cannot index {what} with nil")),
        other => Err(format!(
            "cannot index {what} with type {}",
            other.type_name()
        )),
    }
}

fn go_slice(a: &[Value]) -> Result<Value, String> {
    let item = &a[0];
    let idx: Vec<i64> = a[1..]
        .iter()
        .map(|v| index_int(v, "slice/array"))
        .collect::<Result<_, _>>()?;
    if idx.len() > 3 {
        return Err(format!("too many slice indexes: {}", idx.len()));
    }
    let (len, cap) = match item {
        Value::Nil => return Err("slice of untyped nil".into()),
        Value::String(s) => {
            if idx.len() == 3 {
                return Err("cannot 3-index slice a string".into());
            }
            (s.len(), s.len())
        }
        Value::List(l) => (l.len(), l.len()),
        other => return Err(format!("can't slice item of type {}", other.type_name())),
    };
    let mut ix = [0i64, len as i64, cap as i64];
    for (k, v) in idx.iter().enumerate() {
        if *v < 0 || *v as usize > cap {
            return Err(format!("index out of range: {v}"));
        }
        ix[k] = *v;
    }
    if ix[0] > ix[1] {
        return Err(format!("invalid slice index: {} > {}", ix[0], ix[1]));
    }
    if idx.len() == 3 && ix[1] > ix[2] {
        return Err(format!("invalid slice index: {} > {}", ix[1], ix[2]));
    }
    match item {
        Value::String(s) => s
            .get(ix[0] as usize..ix[1] as usize)
            .map(Value::from)
            .ok_or_else(|| "slice splits a UTF-8 sequence".to_string()),
        Value::List(l) => Ok(Value::from(l[ix[0] as usize..ix[1] as usize].to_vec())),
        _ => Err("can't slice".into()),
    }
}

/// Go 1.18+ `eq` for two values.
pub(crate) fn go_eq(a: &Value, b: &Value) -> Result<bool, String> {
    let (ka, kb) = (a.kind(), b.kind());
    if ka != kb {
        if ka != Kind::Invalid && kb != Kind::Invalid {
            return Err("incompatible types for comparison".into());
        }
        return Ok(false);
    }
    Ok(match (a, b) {
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x) | Value::Int64(x), Value::Int(y) | Value::Int64(y)) => x == y,
        (Value::Float(x), Value::Float(y)) => x == y,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Nil, Value::Nil) => true,
        (Value::List(_), _) | (Value::Map(_), _) => {
            return Err(format!(
                "non-comparable type {}: {}",
                a.to_go_string(),
                a.type_name()
            ));
        }
        (Value::Object(x), Value::Object(y)) => Arc::ptr_eq(x, y),
        _ => false,
    })
}

/// Go's `lt`.
pub(crate) fn go_lt(a: &Value, b: &Value) -> Result<bool, String> {
    let basic = |v: &Value| {
        matches!(
            v.kind(),
            Kind::Bool | Kind::Int | Kind::Float | Kind::String
        )
    };
    if !basic(a) || !basic(b) {
        return Err("invalid type for comparison".into());
    }
    if a.kind() != b.kind() {
        return Err("incompatible types for comparison".into());
    }
    match (a, b) {
        (Value::Int(x) | Value::Int64(x), Value::Int(y) | Value::Int64(y)) => Ok(x < y),
        (Value::Float(x), Value::Float(y)) => Ok(x < y),
        (Value::String(x), Value::String(y)) => Ok(x < y),
        _ => Err("invalid type for comparison".into()),
    }
}

/// Go's template.HTMLEscapeString.
pub(crate) fn html_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => o.push_str("&#34;"),
            '\'' => o.push_str("&#39;"),
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '\0' => o.push('\u{FFFD}'),
            c => o.push(c),
        }
    }
    o
}

/// Go's template.JSEscapeString.
pub(crate) fn js_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => o.push_str("\\\\"),
            '\'' => o.push_str("\\'"),
            '"' => o.push_str("\\\""),
            '<' => o.push_str("\\u003C"),
            '>' => o.push_str("\\u003E"),
            '&' => o.push_str("\\u0026"),
            '=' => o.push_str("\\u003D"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04X}", c as u32)),
            c if !c.is_ascii() && !crate::lex::is_go_printable(c) => {
                o.push_str(&format!("\\u{:04X}", c as u32))
            }
            c => o.push(c),
        }
    }
    o
}

/// Go's url.QueryEscape.
pub(crate) fn query_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                o.push(b as char)
            }
            b' ' => o.push('+'),
            _ => o.push_str(&format!("%{b:02X}")),
        }
    }
    o
}
