//! YAML in and out with Helm's exact behaviour: `toYaml` is sigs.k8s.io/yaml over go-yaml v2
//! (JSON round trip, go-yaml's key order, quoting rules and 80-column folding), `fromYaml` reads
//! YAML into JSON-shaped values where every number is a float64.

use crate::goyaml;
use crate::json_reread::{Reread, RereadError};
use crate::value::{Value, format_float_g};
use crate::yaml_lines::GoLines;

/// Serializes like Helm's `toYaml` before its trailing-newline trim: sigs.k8s.io/yaml.Marshal,
/// and the empty string when that fails (a key holding U+0085, see [`crate::json_reread`]).
pub fn to_yaml(v: &Value) -> String {
    marshal(v).unwrap_or_default()
}

/// sigs.k8s.io/yaml.Marshal: the value's JSON read back by go-yaml v2 (which folds U+0085 in
/// strings and refuses it in keys), then emitted.
pub fn marshal(v: &Value) -> Result<String, RereadError> {
    let mut j = normalize(v);
    reread_j(&mut Reread::new(), &mut j)?;
    Ok(goyaml::emit(&node(&j)))
}

/// The emitter's view of `j`: numbers in go-yaml's text.
fn node(j: &J) -> goyaml::Node<'_> {
    use goyaml::Node;
    match j {
        J::Null => Node::Null,
        J::Bool(b) => Node::Bool(*b),
        J::Int(i) => Node::Number(i.to_string().into()),
        J::Float(f) => Node::Number(
            if f.is_nan() {
                ".nan".to_string()
            } else if f.is_infinite() {
                if *f > 0.0 { ".inf" } else { "-.inf" }.to_string()
            } else {
                format_float_g(*f, None, false)
            }
            .into(),
        ),
        J::Str(s) => Node::Str(s),
        J::Seq(items) => Node::Seq(items.iter().map(node).collect()),
        J::Map(entries) => Node::Map(entries.iter().map(|(k, v)| (k.as_str(), node(v))).collect()),
    }
}

/// The JSON re-read over `j`, visiting map keys in `encoding/json`'s byte order.
fn reread_j(r: &mut Reread, j: &mut J) -> Result<(), RereadError> {
    match j {
        J::Str(s) => {
            if let Some(folded) = r.value(s)? {
                *s = folded;
            }
        }
        J::Seq(items) => {
            for x in items {
                reread_j(r, x)?;
            }
        }
        J::Map(entries) => {
            let mut order: Vec<usize> = (0..entries.len()).collect();
            order.sort_by(|&a, &b| entries[a].0.cmp(&entries[b].0));
            for i in order {
                r.key(&entries[i].0)?;
                reread_j(r, &mut entries[i].1)?;
            }
        }
        J::Null | J::Bool(_) | J::Int(_) | J::Float(_) => {}
    }
    Ok(())
}

/// The value after Go's JSON round trip: objects become their JSON, and numbers become go-yaml
/// ints (integral, in range) or floats.
#[derive(Debug, Clone)]
enum J {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
    Seq(Vec<J>),
    Map(Vec<(String, J)>),
}

fn normalize(v: &Value) -> J {
    match v {
        Value::Nil => J::Null,
        Value::Bool(b) => J::Bool(*b),
        Value::Int(i) | Value::Int64(i) => J::Int(*i as i128),
        Value::Float(f) => float_j(*f),
        Value::String(s) => J::Str(s.to_string()),
        Value::List(l) => J::Seq(l.iter().map(normalize).collect()),
        Value::Map(m) => {
            // The emitter writes keys in go-yaml's order.
            J::Map(m.iter().map(|(k, v)| (k.clone(), normalize(v))).collect())
        }
        Value::Object(o) => from_json(&o.to_json()),
    }
}

fn from_json(v: &serde_json::Value) -> J {
    match v {
        serde_json::Value::Null => J::Null,
        serde_json::Value::Bool(b) => J::Bool(*b),
        serde_json::Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                J::Int(i as i128)
            } else if let Some(u) = n.as_u64() {
                J::Int(u as i128)
            } else {
                float_j(n.as_f64().unwrap_or(0.0))
            }
        }
        serde_json::Value::String(s) => J::Str(s.clone()),
        serde_json::Value::Array(a) => J::Seq(a.iter().map(from_json).collect()),
        serde_json::Value::Object(o) => {
            J::Map(o.iter().map(|(k, v)| (k.clone(), from_json(v))).collect())
        }
    }
}

/// encoding/json writes integral floats below 1e21 without exponent; go-yaml then reads them
/// back as integers when they fit in int64/uint64.
fn float_j(f: f64) -> J {
    if f.is_finite() && f.fract() == 0.0 && f.abs() < 1e21 {
        // encoding/json prints the shortest decimal digits, zero-padded: use those, not the
        // exact binary value.
        if let Some(text) = crate::json::go_json_float(f)
            && let Ok(i) = text.parse::<i128>()
            && i >= i64::MIN as i128
            && i <= u64::MAX as i128
        {
            return J::Int(i);
        }
    }
    J::Float(f)
}

fn go_parse_int(s: &str) -> bool {
    let body = s.strip_prefix(['-', '+']).unwrap_or(s);
    if body.is_empty() {
        return false;
    }
    let lower = body.to_ascii_lowercase();
    if let Some(h) = lower.strip_prefix("0x") {
        return !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit());
    }
    if let Some(b) = lower.strip_prefix("0b") {
        return !b.is_empty() && b.chars().all(|c| c == '0' || c == '1');
    }
    if let Some(o) = lower.strip_prefix("0o") {
        return !o.is_empty() && o.chars().all(|c| ('0'..='7').contains(&c));
    }
    if lower.starts_with('0') && lower.len() > 1 {
        return lower.chars().all(|c| ('0'..='7').contains(&c));
    }
    lower.chars().all(|c| c.is_ascii_digit())
}

fn is_yaml_float(s: &str) -> bool {
    // ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$
    let b = s.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'-' || b[i] == b'+') {
        i += 1;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let st = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == st {
            return false;
        }
    } else {
        let st = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == st {
            return false;
        }
        if i < b.len() && b[i] == b'.' {
            i += 1;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
        }
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'-' || b[i] == b'+') {
            i += 1;
        }
        let st = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == st {
            return false;
        }
    }
    i == b.len()
}

/// YAML that sigs.k8s.io/yaml would refuse, worded as go-yaml words it (with its line).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct YamlError(pub String);

/// Parses YAML the way sigs.k8s.io/yaml.Unmarshal does for Helm: go-yaml v2's YAML 1.1
/// resolution (`yes`/`on`/`y` are booleans, `0755` is octal, even for keys), keys turned into
/// strings, then a JSON round trip that makes every number a float64. Only the first document
/// is read, as go-yaml's Unmarshal does.
pub fn from_yaml(text: &str) -> Result<Value, YamlError> {
    let lines = GoLines::new(text);
    let mut c = Composer {
        parser: granit_parser::Parser::new_from_str(lines.text()),
        lines: &lines,
        anchors: std::collections::HashMap::new(),
        depth: 0,
    };
    c.document().map_err(YamlError)
}

struct Composer<'a> {
    parser: granit_parser::Parser<'a, granit_parser::StrInput<'a>>,
    /// go-yaml's line breaks (U+0085, U+2028, U+2029).
    lines: &'a GoLines<'a>,
    anchors: std::collections::HashMap<usize, Value>,
    depth: usize,
}

/// A YAML node before keys are stringified: keeps resolved kinds for key conversion.
fn yaml_err(e: impl std::fmt::Display) -> String {
    format!("error converting YAML to JSON: yaml: {e}")
}

impl<'a> Composer<'a> {
    fn next(&mut self) -> Result<Option<granit_parser::Event<'a>>, String> {
        match self.parser.next_event() {
            None => Ok(None),
            Some(Ok((ev, span))) => self.lines.event(ev, &span).map(Some).map_err(yaml_err),
            Some(Err(e)) => Err(yaml_err(e)),
        }
    }

    fn document(&mut self) -> Result<Value, String> {
        use granit_parser::Event;
        loop {
            match self.next()? {
                None | Some(Event::StreamEnd) => return Ok(Value::Nil),
                Some(Event::DocumentStart(..)) => break,
                Some(_) => {}
            }
        }
        let Some(ev) = self.next_node_event()? else {
            return Ok(Value::Nil);
        };
        if matches!(ev, Event::DocumentEnd) {
            return Ok(Value::Nil);
        }
        self.node(ev)
    }

    fn next_node_event(&mut self) -> Result<Option<granit_parser::Event<'a>>, String> {
        use granit_parser::Event;
        loop {
            match self.next()? {
                Some(
                    ev @ (Event::Scalar(..)
                    | Event::SequenceStart(..)
                    | Event::MappingStart(..)
                    | Event::Alias(..)
                    | Event::SequenceEnd
                    | Event::MappingEnd
                    | Event::DocumentStart(..)
                    | Event::DocumentEnd
                    | Event::StreamEnd),
                ) => return Ok(Some(ev)),
                // anchors metadata, comments: presentation only
                Some(_) => continue,
                None => return Ok(None),
            }
        }
    }

    fn node(&mut self, ev: granit_parser::Event<'a>) -> Result<Value, String> {
        use granit_parser::Event;
        self.depth += 1;
        if self.depth > 10_000 {
            return Err(yaml_err("exceeded max depth"));
        }
        let r = match ev {
            Event::Scalar(v, style, anchor, tag) => {
                let val = resolve_scalar(&v, style, tag.as_deref())?;
                if anchor != 0 {
                    self.anchors.insert(anchor, val.clone());
                }
                Ok(val)
            }
            Event::Alias(id) => self
                .anchors
                .get(&id)
                .cloned()
                .ok_or_else(|| yaml_err("unknown anchor")),
            Event::SequenceStart(_, anchor, _) => {
                let mut items = Vec::new();
                loop {
                    let Some(ev) = self.next_node_event()? else {
                        return Err(yaml_err("unexpected end of stream"));
                    };
                    if matches!(ev, Event::SequenceEnd) {
                        break;
                    }
                    items.push(self.node(ev)?);
                }
                let v = Value::from(items);
                if anchor != 0 {
                    self.anchors.insert(anchor, v.clone());
                }
                Ok(v)
            }
            Event::MappingStart(_, anchor, _) => {
                let mut m: std::collections::BTreeMap<String, Value> =
                    std::collections::BTreeMap::new();
                let mut merged: Vec<std::collections::BTreeMap<String, Value>> = Vec::new();
                loop {
                    let Some(kev) = self.next_node_event()? else {
                        return Err(yaml_err("unexpected end of stream"));
                    };
                    if matches!(kev, Event::MappingEnd) {
                        break;
                    }
                    let is_merge = matches!(&kev, Event::Scalar(k, granit_parser::ScalarStyle::Plain, _, None) if k == "<<");
                    let key = self.node(kev)?;
                    let Some(vev) = self.next_node_event()? else {
                        return Err(yaml_err("unexpected end of stream"));
                    };
                    let val = self.node(vev)?;
                    if is_merge {
                        match val {
                            Value::Map(mm) => merged.push((*mm).clone()),
                            Value::List(l) => {
                                for x in l.iter() {
                                    match x {
                                        Value::Map(mm) => merged.push((**mm).clone()),
                                        _ => {
                                            return Err(yaml_err(
                                                "map merge requires map or sequence of maps as the value",
                                            ));
                                        }
                                    }
                                }
                            }
                            _ => {
                                return Err(yaml_err(
                                    "map merge requires map or sequence of maps as the value",
                                ));
                            }
                        }
                        continue;
                    }
                    m.insert(key_string(&key)?, val);
                }
                for mm in merged {
                    for (k, v) in mm {
                        m.entry(k).or_insert(v);
                    }
                }
                let v = Value::Map(std::sync::Arc::new(m));
                if anchor != 0 {
                    self.anchors.insert(anchor, v.clone());
                }
                Ok(v)
            }
            _ => Err(yaml_err("unexpected event")),
        };
        self.depth -= 1;
        r
    }
}

/// sigs.k8s.io/yaml turns non-string keys into their JSON/Go string form.
fn key_string(k: &Value) -> Result<String, String> {
    Ok(match k {
        Value::String(s) => s.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Nil => "null".to_string(),
        Value::Float(f) => {
            if f.fract() == 0.0 && f.abs() < 1e21 {
                format!("{}", *f as i128)
            } else {
                format_float_g(*f, None, false)
            }
        }
        Value::Int(i) | Value::Int64(i) => i.to_string(),
        _ => return Err("error converting YAML to JSON: yaml: invalid map key".into()),
    })
}

/// go-yaml v2's resolve for a scalar, producing JSON-shaped values (numbers are float64).
fn resolve_scalar(
    v: &str,
    style: granit_parser::ScalarStyle,
    tag: Option<&granit_parser::Tag>,
) -> Result<Value, String> {
    if let Some(t) = tag
        && t.is_yaml_core_schema()
    {
        return Ok(match t.suffix() {
            "str" => Value::str(v),
            "null" => Value::Nil,
            "bool" => Value::Bool(matches!(
                v,
                "true" | "True" | "TRUE" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" | "y" | "Y"
            )),
            "int" | "float" => match resolve_plain(v) {
                Value::String(_) => {
                    return Err(yaml_err(format!("cannot decode !!{} `{v}`", t.suffix())));
                }
                x => x,
            },
            "binary" => Value::str(v),
            _ => resolve_plain(v),
        });
    }
    if style != granit_parser::ScalarStyle::Plain || tag.is_some() {
        return Ok(Value::str(v));
    }
    Ok(resolve_plain(v))
}

fn resolve_plain(v: &str) -> Value {
    match v {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Nil,
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            return Value::Bool(true);
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            return Value::Bool(false);
        }
        ".nan" | ".NaN" | ".NAN" => return Value::Float(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Value::Float(f64::INFINITY);
        }
        "-.inf" | "-.Inf" | "-.INF" => return Value::Float(f64::NEG_INFINITY),
        _ => {}
    }
    let first = v.as_bytes()[0];
    if first == b'.' {
        // go-yaml v2 tries `strconv.ParseFloat` on the text as written.
        return match crate::goyaml::go_parse_float(v) {
            Some(f) => Value::Float(f),
            None => Value::str(v),
        };
    }
    if first.is_ascii_digit() || first == b'-' || first == b'+' {
        let plain: String = v.chars().filter(|&c| c != '_').collect();
        if go_parse_int(&plain)
            && let Some(i) = parse_int_value(&plain)
        {
            return Value::Float(i);
        }
        // Out of range (`1e310`): Go's `strconv.ParseFloat` fails with ErrRange, so go-yaml keeps
        // the text as a string where Rust would give infinity.
        if is_yaml_float(&plain)
            && let Ok(f) = plain.parse::<f64>()
            && f.is_finite()
        {
            return Value::Float(f);
        }
    }
    Value::str(v)
}

/// Numeric value of a Go base-0 integer literal (as float64, like JSON decoding yields).
fn parse_int_value(s: &str) -> Option<f64> {
    let (neg, body) = match s.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let lower = body.to_ascii_lowercase();
    let (radix, digits) = if let Some(h) = lower.strip_prefix("0x") {
        (16, h.to_string())
    } else if let Some(b) = lower.strip_prefix("0b") {
        (2, b.to_string())
    } else if let Some(o) = lower.strip_prefix("0o") {
        (8, o.to_string())
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, lower[1..].to_string())
    } else {
        (10, lower.clone())
    };
    let u = u128::from_str_radix(&digits, radix).ok()?;
    let f = u as f64;
    Some(if neg { -f } else { f })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::map_of;

    #[test]
    fn out_of_range_floats_stay_strings() {
        assert!(matches!(resolve_plain("1e310"), Value::String(_)));
        assert!(matches!(resolve_plain("-1e310"), Value::String(_)));
        assert!(matches!(resolve_plain("1e300"), Value::Float(_)));
        let v = from_yaml("{1e310: null}").expect("parses");
        assert_eq!(to_yaml(&v), "1e310: null\n");
    }

    #[test]
    fn key_order() {
        let mut v = vec!["b", "a10", "a2", "_x", "A", "a"];
        v.sort_by(|a, b| goyaml::go_key_cmp(a, b));
        assert_eq!(v, vec!["_x", "A", "a", "a2", "a10", "b"]);
    }

    #[test]
    fn quoting() {
        let m = map_of([
            ("b".into(), Value::str("yes")),
            ("e".into(), Value::str("")),
            ("c".into(), Value::str("a: b")),
            ("n".into(), Value::str("1.0")),
            ("m".into(), Value::str("a\nb\n")),
            ("t".into(), Value::str("2001-12-14")),
            ("x".into(), Value::str("0755")),
        ]);
        assert_eq!(
            to_yaml(&m),
            "b: \"yes\"\nc: 'a: b'\ne: \"\"\nm: |\n  a\n  b\n\"n\": \"1.0\"\nt: \"2001-12-14\"\nx: \"0755\"\n"
        );
    }
}
