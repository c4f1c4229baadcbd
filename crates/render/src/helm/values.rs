//! Helm values: YAML reading with Go/sigs.k8s.io semantics and Helm's coalescing rules.
//!
//! Values are kept as `serde_json::Value` because Helm itself reads YAML through JSON: every
//! number read from YAML is a Go `float64` (an `f64`-backed [`serde_json::Number`]), while
//! integers produced by `--set` are `int64` (an `i64`-backed number). Keeping that distinction
//! is what makes `{{ .Values.x }}` print `1e+06` for a YAML `1000000` like Helm does.

use serde_json::{Map, Number, Value};

message_error! {
    /// Values YAML that Helm would refuse (not YAML, not a mapping), naming the source file.
    ValuesError
}

/// A values table (`map[string]interface{}` in Helm).
pub type Values = Map<String, Value>;

/// Parses a YAML document the way Helm's `yaml.Unmarshal` into `chartutil.Values` does.
///
/// `source` names the file in error messages. An empty document gives an empty table; a
/// document that is not a mapping is an error, as in Helm.
pub fn parse_values_yaml(text: &str, source: &str) -> Result<Values, ValuesError> {
    match parse_yaml_value(text, source)? {
        Value::Null => Ok(Values::new()),
        Value::Object(m) => Ok(m),
        other => Err(format!(
            "{source}: error unmarshaling JSON: json: cannot unmarshal {} into Go value of type chartutil.Values",
            go_json_kind(&other)
        ).into()),
    }
}

/// Parses one YAML document into a JSON value with every number converted to `float64`,
/// as sigs.k8s.io/yaml does (YAML 1.1 booleans and legacy octal included).
pub fn parse_yaml_value(text: &str, source: &str) -> Result<Value, ValuesError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        return Ok(Value::Null);
    }
    // gotmpl's loader resolves scalars and keys like go-yaml v2 (`y:` is the key "true").
    let v = gotmpl::yaml::from_yaml(text).map_err(|e| format!("{source}: {e}"))?;
    Ok(tmpl_to_json(&v))
}

/// Converts a loaded YAML value to JSON keeping float64 numbers float-backed.
fn tmpl_to_json(v: &gotmpl::Value) -> Value {
    use gotmpl::Value as T;
    match v {
        T::Nil => Value::Null,
        T::Bool(b) => Value::Bool(*b),
        T::Int(i) => Value::Number(Number::from(*i)),
        T::Float(f) => Number::from_f64(*f)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        T::String(s) => Value::String(s.to_string()),
        T::List(l) => Value::Array(l.iter().map(tmpl_to_json).collect()),
        T::Map(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), tmpl_to_json(v)))
                .collect(),
        ),
        other => other.to_json(),
    }
}

/// Parses one YAML document keeping YAML's own int/float distinction (go-yaml v2's view before
/// the JSON round trip); used where Helm decodes into typed structs, whose string fields get
/// scalars stringified by sigs.k8s.io/yaml (see [`go_yaml_scalar_string`]).
pub fn parse_yaml_raw(text: &str, source: &str) -> Result<Value, ValuesError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        return Ok(Value::Null);
    }
    let opts = serde_saphyr::options! {
        legacy_octal_numbers: true,
        duplicate_keys: serde_saphyr::options::DuplicateKeyPolicy::LastWins,
    };
    // sigs.k8s.io/yaml reads only the first document of a stream.
    let docs: Vec<Value> = serde_saphyr::from_multiple_with_options(text, opts).map_err(|e| {
        format!(
            "{source}: error converting YAML to JSON: {}",
            go_yaml_error(&e.to_string())
        )
    })?;
    Ok(docs.into_iter().next().unwrap_or(Value::Null))
}

/// Rewords a parser error as go-yaml does (`yaml: line N: message`), keeping the line number
/// that locates the problem.
fn go_yaml_error(e: &str) -> String {
    let first = e.lines().next().unwrap_or(e);
    let rest = first.strip_prefix("error: ").unwrap_or(first);
    if let Some(after) = rest.strip_prefix("line ")
        && let Some((line, tail)) = after.split_once(' ')
        && line.bytes().all(|b| b.is_ascii_digit())
    {
        let msg = tail
            .strip_prefix("column ")
            .and_then(|t| t.split_once(": ").map(|(_, m)| m))
            .unwrap_or(tail);
        return format!("yaml: line {line}: {msg}");
    }
    format!("yaml: {rest}")
}

/// How sigs.k8s.io/yaml v1.2 turns a YAML scalar into a Go string field: ints in decimal,
/// floats with `strconv.FormatFloat(f, 'g', -1, 32)`, bools as `true`/`false`. None for
/// non-scalars (a type error in Helm).
pub fn go_yaml_scalar_string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) if n.is_f64() => Some(gotmpl::gofmt::format_float(
            n.as_f64().unwrap_or(0.0),
            'g',
            -1,
            32,
        )),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Converts every number to an `f64`-backed number (Go's `float64` after a JSON round trip).
pub fn floatify(v: Value) -> Value {
    match v {
        Value::Number(n) => Value::Number(to_float_number(&n)),
        Value::Array(a) => Value::Array(a.into_iter().map(floatify).collect()),
        Value::Object(m) => Value::Object(m.into_iter().map(|(k, v)| (k, floatify(v))).collect()),
        other => other,
    }
}

fn to_float_number(n: &Number) -> Number {
    if n.is_f64() {
        return n.clone();
    }
    let f = n.as_f64().unwrap_or(0.0);
    Number::from_f64(f).unwrap_or_else(|| n.clone())
}

/// The word Go's encoding/json uses for a JSON value's kind in type errors.
pub fn go_json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Helm's `mergeMaps` for `-f` files: later maps win, nested maps merge.
pub fn merge_maps(mut base: Values, over: Values) -> Values {
    for (k, v) in over {
        if let Value::Object(vm) = v {
            if let Some(Value::Object(bm)) = base.remove(&k) {
                base.insert(k, Value::Object(merge_maps(bm, vm)));
            } else {
                base.insert(k, Value::Object(vm));
            }
            continue;
        }
        base.insert(k, v);
    }
    base
}

/// Helm's `CoalesceTables`: merges `src` into `dst`, `dst` being authoritative; a `null` in `dst`
/// for a key that `src` has deletes that key.
pub fn coalesce_tables(dst: &mut Values, src: &Values) {
    for (key, val) in src {
        match dst.get_mut(key) {
            Some(Value::Null) => {
                dst.remove(key);
            }
            None => {
                dst.insert(key.clone(), val.clone());
            }
            Some(dv) => {
                if let Value::Object(sm) = val
                    && let Value::Object(dm) = dv
                {
                    coalesce_tables(dm, sm);
                }
                // Otherwise: dst wins (Helm only logs a warning on type mismatches).
            }
        }
    }
}

/// Helm's `coalesceValues`: merges a chart's default values under the user's values `v`.
pub fn coalesce_chart_values(chart_values: &Values, v: &mut Values) {
    for (key, val) in chart_values {
        match v.get_mut(key) {
            Some(Value::Null) => {
                v.remove(key);
            }
            Some(Value::Object(dest)) => {
                if let Value::Object(src) = val {
                    coalesce_tables(dest, src);
                }
            }
            Some(_) => {}
            None => {
                v.insert(key.clone(), val.clone());
            }
        }
    }
}

/// Helm's `coalesceGlobals`: copies the `global` table of `src` (a parent's values) into
/// `dest` (a subchart's values), parent globals winning.
pub fn coalesce_globals(dest: &mut Values, src: &Values) {
    let mut dg = match dest.get("global") {
        None => Values::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => return,
    };
    let sg = match src.get("global") {
        None => Values::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => return,
    };
    for (key, val) in sg {
        if let Value::Object(vm) = &val {
            let mut vv = vm.clone();
            match dg.get(&key) {
                None => {
                    dg.insert(key, Value::Object(vv));
                }
                Some(Value::Object(destv)) => {
                    coalesce_tables(&mut vv, destv);
                    dg.insert(key, Value::Object(vv));
                }
                Some(_) => {
                    // Conflict: cannot merge map onto non-map; Helm skips the merge but then
                    // still assigns the value.
                    dg.insert(key, Value::Object(vv));
                }
            }
        } else if matches!(dg.get(&key), Some(Value::Object(_))) {
            continue;
        } else {
            dg.insert(key, val);
        }
    }
    dest.insert("global".to_string(), Value::Object(dg));
}

/// `Values.Table("a.b")`: the table at a dotted path, or None when any step is missing or
/// not a table.
pub fn table<'a>(v: &'a Values, path: &str) -> Option<&'a Values> {
    let mut cur = v;
    for part in path.split('.') {
        match cur.get(part) {
            Some(Value::Object(m)) => cur = m,
            _ => return None,
        }
    }
    Some(cur)
}

/// `Values.PathValue("a.b.c")`: the non-table value at a dotted path.
pub fn path_value<'a>(v: &'a Values, path: &str) -> Option<&'a Value> {
    if path.is_empty() {
        return None;
    }
    let parts: Vec<&str> = path.split('.').collect();
    let (last, init) = parts.split_last()?;
    let t = if init.is_empty() {
        v
    } else {
        table(v, &init.join("."))?
    };
    match t.get(*last) {
        Some(Value::Object(_)) | None => None,
        Some(x) => Some(x),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Values {
        match v {
            Value::Object(m) => m,
            _ => Values::new(),
        }
    }

    #[test]
    fn yaml_numbers_are_floats_and_octal_is_legacy() {
        let v = parse_values_yaml("a: 1\nb: 0777\nc: yes\nd: 1.5\n", "values.yaml").unwrap();
        assert!(v["a"].as_number().is_some_and(|n| n.is_f64()));
        assert_eq!(v["b"].as_f64(), Some(511.0));
        assert_eq!(v["c"], json!(true));
        assert_eq!(v["d"].as_f64(), Some(1.5));
    }

    #[test]
    fn empty_and_non_map_documents() {
        assert!(parse_values_yaml("", "x").unwrap().is_empty());
        assert!(
            parse_values_yaml("# only a comment\n", "x")
                .unwrap()
                .is_empty()
        );
        let e = parse_values_yaml("- a\n", "x.yaml").unwrap_err();
        assert!(e.0.contains("x.yaml") && e.0.contains("array"), "{e}");
        let e = parse_values_yaml("a: [\n", "bad.yaml").unwrap_err();
        assert!(e.0.contains("bad.yaml"), "{e}");
    }

    #[test]
    fn null_deletes_a_default() {
        let chart = obj(json!({"a": 1, "b": {"c": 2, "d": 3}, "e": 4}));
        let mut user = obj(json!({"a": null, "b": {"c": null}, "f": null}));
        coalesce_chart_values(&chart, &mut user);
        assert_eq!(
            Value::Object(user),
            json!({"b": {"d": 3}, "e": 4, "f": null})
        );
    }

    #[test]
    fn globals_flow_down() {
        let parent = obj(json!({"global": {"a": 1, "m": {"x": 1}}}));
        let mut sub = obj(json!({"global": {"a": 2, "b": 3, "m": {"y": 2}}}));
        coalesce_globals(&mut sub, &parent);
        assert_eq!(
            sub["global"],
            json!({"a": 1, "b": 3, "m": {"x": 1, "y": 2}})
        );
    }

    #[test]
    fn path_value_skips_tables() {
        let v = obj(json!({"a": {"b": true, "c": {}}}));
        assert_eq!(path_value(&v, "a.b"), Some(&json!(true)));
        assert_eq!(path_value(&v, "a.c"), None);
        assert_eq!(path_value(&v, "a.x"), None);
        assert_eq!(path_value(&v, ""), None);
    }
}
