//! YAML reading with the scalar rules of the Go libraries kustomize uses, keeping line
//! numbers so errors can point at the offending line.
//!
//! Resources are read by kyaml with go-yaml v3 rules (`yes`/`on` stay strings, `0777`
//! is octal, timestamps become RFC 3339 strings after the JSON round trip). The
//! kustomization file is read through `sigs.k8s.io/yaml` with go-yaml v2 (YAML 1.1)
//! rules, where `yes`, `on`, `y` are booleans.

use super::goyaml::parse_go_timestamp;
use gotmpl::yaml_lines::GoLines;
use serde_json::{Map, Number, Value};
use serde_saphyr::granit_parser::{Event, Parser, ScalarStyle};
use std::collections::HashMap;
use std::fmt;

/// Which Go YAML library's implicit typing to apply to plain scalars.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schema {
    /// go-yaml v3 (kyaml): resources.
    V3,
    /// go-yaml v2 / YAML 1.1 (`sigs.k8s.io/yaml`): kustomization files.
    V11,
}

/// A parsed YAML node with its 1-based source line.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// 1-based line where the node starts.
    pub line: usize,
    /// The node's value.
    pub v: YVal,
}

/// Node contents; mappings keep source order and string keys.
#[derive(Clone, Debug, PartialEq)]
pub enum YVal {
    /// `null`, `~` or empty.
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer or float, already in JSON form.
    Num(Number),
    /// A string (including timestamps, rendered RFC 3339).
    Str(String),
    /// A sequence.
    Seq(Vec<Node>),
    /// A mapping with its keys in source order.
    Map(Vec<(String, Node)>),
}

/// A YAML syntax or typing error, with its position.
#[derive(Clone, Debug, PartialEq)]
pub struct YamlError {
    /// 1-based line (0 if unknown).
    pub line: usize,
    /// What went wrong.
    pub msg: String,
}

impl fmt::Display for YamlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.msg)
    }
}

impl std::error::Error for YamlError {}

impl Node {
    /// Converts to JSON, the form kustomize processes resources in.
    pub fn to_json(&self) -> Value {
        self.clone().into_json()
    }

    /// Converts to JSON as [`Node::to_json`], moving the strings instead of copying them.
    pub fn into_json(self) -> Value {
        match self.v {
            YVal::Null => Value::Null,
            YVal::Bool(b) => Value::Bool(b),
            YVal::Num(n) => Value::Number(n),
            YVal::Str(s) => Value::String(s),
            YVal::Seq(items) => Value::Array(items.into_iter().map(Node::into_json).collect()),
            YVal::Map(entries) => {
                let mut m = Map::with_capacity(entries.len());
                for (k, v) in entries {
                    m.insert(k, v.into_json());
                }
                Value::Object(m)
            }
        }
    }

    /// Looks up a key in a mapping node.
    pub fn get(&self, key: &str) -> Option<&Node> {
        match &self.v {
            YVal::Map(e) => e.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// A short name of the node's type for error messages.
    pub fn type_name(&self) -> &'static str {
        match self.v {
            YVal::Null => "null",
            YVal::Bool(_) => "bool",
            YVal::Num(_) => "number",
            YVal::Str(_) => "string",
            YVal::Seq(_) => "sequence",
            YVal::Map(_) => "mapping",
        }
    }
}

/// Parses every non-empty document of a YAML stream.
pub fn parse_documents(text: &str, schema: Schema) -> Result<Vec<Node>, YamlError> {
    let mut b = Builder {
        schema,
        anchors: HashMap::new(),
        stack: Vec::new(),
        docs: Vec::new(),
    };
    if let Some(events) = super::block_yaml::events(text) {
        for (ev, line) in events {
            b.event(ev, line)?;
        }
        return Ok(b.docs);
    }
    // go-yaml also breaks lines at U+0085, U+2028 and U+2029.
    let lines = GoLines::new(text);
    let parser = Parser::new_from_str(lines.text());
    for ev in parser {
        let (ev, span) = ev.map_err(|e| YamlError {
            line: e.marker().line(),
            msg: e.info(),
        })?;
        let ev = lines.event(ev, &span).map_err(|msg| YamlError {
            line: span.start.line(),
            msg,
        })?;
        b.event(ev, span.start.line())?;
    }
    Ok(b.docs)
}

enum Frame {
    Seq {
        line: usize,
        anchor: usize,
        items: Vec<Node>,
    },
    Map {
        line: usize,
        anchor: usize,
        entries: Vec<(String, Node)>,
        merged: Vec<(String, Node)>,
        pending_key: Option<Node>,
        /// The pending key was a plain, untagged `<<` (a merge key, not the string).
        pending_merge: bool,
    },
}

struct Builder {
    schema: Schema,
    anchors: HashMap<usize, Node>,
    stack: Vec<Frame>,
    docs: Vec<Node>,
}

impl Builder {
    fn event(&mut self, ev: Event<'_>, line: usize) -> Result<(), YamlError> {
        match ev {
            Event::Scalar(text, style, anchor, tag) => {
                let tag_suffix = tag.as_ref().map(|t| {
                    if t.handle() == "tag:yaml.org,2002:" || t.original_handle() == "!!" {
                        format!("!!{}", t.suffix())
                    } else {
                        format!("{}{}", t.handle(), t.suffix())
                    }
                });
                let is_merge = style == ScalarStyle::Plain && tag.is_none() && text == "<<";
                let v = self.resolve(&text, style, tag_suffix.as_deref(), line)?;
                let node = Node { line, v };
                if anchor != 0 {
                    self.anchors.insert(anchor, node.clone());
                }
                self.push_node(node, is_merge)
            }
            Event::Alias(id) => {
                let node = self.anchors.get(&id).cloned().ok_or_else(|| YamlError {
                    line,
                    msg: "unknown anchor".into(),
                })?;
                self.push(node)
            }
            Event::SequenceStart(_, anchor, _) => {
                self.stack.push(Frame::Seq {
                    line,
                    anchor,
                    items: Vec::new(),
                });
                Ok(())
            }
            Event::MappingStart(_, anchor, _) => {
                self.stack.push(Frame::Map {
                    line,
                    anchor,
                    entries: Vec::new(),
                    merged: Vec::new(),
                    pending_key: None,
                    pending_merge: false,
                });
                Ok(())
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let node = match self.stack.pop() {
                    Some(Frame::Seq {
                        line,
                        anchor,
                        items,
                    }) => {
                        let n = Node {
                            line,
                            v: YVal::Seq(items),
                        };
                        if anchor != 0 {
                            self.anchors.insert(anchor, n.clone());
                        }
                        n
                    }
                    Some(Frame::Map {
                        line,
                        anchor,
                        mut entries,
                        merged,
                        ..
                    }) => {
                        // Keys from `<<` merges fill in what the mapping does not set itself.
                        for (mk, mv) in merged {
                            if !entries.iter().any(|(ek, _)| *ek == mk) {
                                entries.push((mk, mv));
                            }
                        }
                        let n = Node {
                            line,
                            v: YVal::Map(entries),
                        };
                        if anchor != 0 {
                            self.anchors.insert(anchor, n.clone());
                        }
                        n
                    }
                    None => {
                        return Err(YamlError {
                            line,
                            msg: "unbalanced collection end".into(),
                        });
                    }
                };
                self.push(node)
            }
            Event::DocumentStart(..) => {
                self.anchors.clear();
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn push(&mut self, node: Node) -> Result<(), YamlError> {
        self.push_node(node, false)
    }

    fn push_node(&mut self, node: Node, is_merge: bool) -> Result<(), YamlError> {
        match self.stack.last_mut() {
            None => {
                if !matches!(node.v, YVal::Null) {
                    self.docs.push(node);
                }
                Ok(())
            }
            Some(Frame::Seq { items, .. }) => {
                items.push(node);
                Ok(())
            }
            Some(Frame::Map {
                entries,
                merged,
                pending_key,
                pending_merge,
                ..
            }) => match pending_key.take() {
                None => {
                    *pending_key = Some(node);
                    *pending_merge = is_merge;
                    Ok(())
                }
                Some(key) => {
                    let kline = key.line;
                    let k = match key.v {
                        YVal::Str(s) => s,
                        YVal::Null => "null".to_string(),
                        YVal::Bool(b) => b.to_string(),
                        YVal::Num(n) => n.to_string(),
                        YVal::Seq(_) | YVal::Map(_) => {
                            return Err(YamlError {
                                line: kline,
                                msg: "mapping keys must be scalars".into(),
                            });
                        }
                    };
                    if *pending_merge {
                        // Merge key: earlier explicit keys win, merged ones fill in.
                        let sources: Vec<Node> = match node.v {
                            YVal::Map(_) => vec![node],
                            YVal::Seq(items) => items,
                            _ => {
                                return Err(YamlError {
                                    line: kline,
                                    msg: "merge key `<<` needs a mapping or list of mappings"
                                        .into(),
                                });
                            }
                        };
                        for src in sources {
                            if let YVal::Map(es) = src.v {
                                for (mk, mv) in es {
                                    if !merged.iter().any(|(ek, _)| *ek == mk) {
                                        merged.push((mk, mv));
                                    }
                                }
                            }
                        }
                        return Ok(());
                    }
                    if entries.iter().any(|(ek, _)| *ek == k) {
                        return Err(YamlError {
                            line: kline,
                            msg: format!("mapping key {k:?} already defined"),
                        });
                    }
                    entries.push((k, node));
                    Ok(())
                }
            },
        }
    }

    fn resolve(
        &self,
        text: &str,
        style: ScalarStyle,
        tag: Option<&str>,
        line: usize,
    ) -> Result<YVal, YamlError> {
        let err = |msg: String| YamlError { line, msg };
        match tag {
            Some("!!str") | Some("!!binary") => return Ok(YVal::Str(text.to_string())),
            Some("!!null") => return Ok(YVal::Null),
            Some("!!bool") => {
                return match resolve_plain(text, self.schema) {
                    YVal::Bool(b) => Ok(YVal::Bool(b)),
                    _ => Err(err(format!("cannot decode {text:?} as a bool"))),
                };
            }
            Some("!!int") | Some("!!float") => {
                return match resolve_plain(text, self.schema) {
                    v @ YVal::Num(_) => Ok(v),
                    _ => Err(err(format!("cannot decode {text:?} as a number"))),
                };
            }
            Some("!!timestamp") | Some("!!map") | Some("!!seq") | None => {}
            Some(_) => {
                // Custom tags are kept as plain values, as kyaml does.
            }
        }
        if style != ScalarStyle::Plain {
            return Ok(YVal::Str(text.to_string()));
        }
        if is_non_finite_word(text) {
            return Err(err(format!(
                "unsupported value {text:?}: NaN and infinity cannot be encoded as JSON"
            )));
        }
        Ok(resolve_plain(text, self.schema))
    }
}

/// Implicit typing of a plain scalar.
pub fn resolve_plain(s: &str, schema: Schema) -> YVal {
    match s {
        "" | "~" | "null" | "Null" | "NULL" => return YVal::Null,
        "true" | "True" | "TRUE" => return YVal::Bool(true),
        "false" | "False" | "FALSE" => return YVal::Bool(false),
        _ => {}
    }
    if schema == Schema::V11 {
        match s {
            "y" | "Y" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" => return YVal::Bool(true),
            "n" | "N" | "no" | "No" | "NO" | "off" | "Off" | "OFF" => return YVal::Bool(false),
            _ => {}
        }
    }
    match s {
        ".nan" | ".NaN" | ".NAN" => return num_f(f64::NAN, s),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => return num_f(f64::INFINITY, s),
        "-.inf" | "-.Inf" | "-.INF" => return num_f(f64::NEG_INFINITY, s),
        _ => {}
    }
    let first = s.as_bytes().first().copied().unwrap_or(0);
    match first {
        b'.' => {
            if let Some(f) = parse_decimal_float(s) {
                return num_f(f, s);
            }
        }
        b'0'..=b'9' | b'+' | b'-' => {
            if let Some(ts) = parse_go_timestamp(s) {
                return YVal::Str(ts.rfc3339());
            }
            let plain: String = s.chars().filter(|c| *c != '_').collect();
            if let Some(v) = parse_go_int(&plain) {
                return v;
            }
            if is_float_syntax(&plain)
                && let Some(f) = parse_decimal_float(&plain)
            {
                return num_f(f, s);
            }
        }
        _ => {}
    }
    YVal::Str(s.to_string())
}

fn num_f(f: f64, original: &str) -> YVal {
    // Non-finite floats cannot be held in JSON; `Builder::resolve` rejects them first.
    Number::from_f64(f).map_or_else(|| YVal::Str(original.to_string()), YVal::Num)
}

/// `.inf`/`.nan` spellings, which kustomize cannot encode as JSON.
fn is_non_finite_word(s: &str) -> bool {
    let t = s.trim_start_matches(['+', '-']);
    matches!(t, ".nan" | ".NaN" | ".NAN" | ".inf" | ".Inf" | ".INF")
}

fn parse_go_int(s: &str) -> Option<YVal> {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if body.is_empty() {
        return None;
    }
    let (digits, radix) = if let Some(r) = body.strip_prefix("0x").or(body.strip_prefix("0X")) {
        (r, 16)
    } else if let Some(r) = body.strip_prefix("0o").or(body.strip_prefix("0O")) {
        (r, 8)
    } else if let Some(r) = body.strip_prefix("0b").or(body.strip_prefix("0B")) {
        (r, 2)
    } else if body.len() > 1 && body.starts_with('0') {
        (&body[1..], 8)
    } else {
        (body, 10)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let v = u128::from_str_radix(digits, radix).ok()?;
    if neg {
        if v <= i64::MAX as u128 + 1 {
            let i = (v as i128).checked_neg()?;
            return i64::try_from(i).ok().map(|i| YVal::Num(Number::from(i)));
        }
        return None;
    }
    if v <= i64::MAX as u128 {
        return Some(YVal::Num(Number::from(v as i64)));
    }
    if v <= u64::MAX as u128 {
        return Some(YVal::Num(Number::from(v as u64)));
    }
    None
}

fn is_float_syntax(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'-' || b[i] == b'+') {
        i += 1;
    }
    let st = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let int_digits = i - st;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let fs = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if int_digits == 0 && i == fs {
            return false;
        }
    } else if int_digits == 0 {
        return false;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'-' || b[i] == b'+') {
            i += 1;
        }
        let es = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == es {
            return false;
        }
    }
    i == b.len()
}

fn parse_decimal_float(s: &str) -> Option<f64> {
    if !s
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
    {
        return None;
    }
    s.parse::<f64>().ok().filter(|f| f.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn v3_scalars_like_kyaml() {
        let docs = parse_documents(
            "a: yes\nb: 0777\nc: 0o17\nd: 0x1F\ne: 1e3\nf: ~\ng: on\nh: 1_000\ni: 2001-12-14\nj: .5\nk: '1'\nl: 12345678901234567890\n",
            Schema::V3,
        )
        .unwrap();
        assert_eq!(
            docs[0].to_json(),
            json!({"a":"yes","b":511,"c":15,"d":31,"e":1000.0,"f":null,"g":"on","h":1000,
                   "i":"2001-12-14T00:00:00Z","j":0.5,"k":"1","l":12345678901234567890u64})
        );
    }

    #[test]
    fn v11_booleans() {
        let docs = parse_documents("a: yes\nb: off\nc: y\n", Schema::V11).unwrap();
        assert_eq!(docs[0].to_json(), json!({"a": true, "b": false, "c": true}));
    }

    #[test]
    fn anchors_merge_and_empty_docs() {
        let docs = parse_documents(
            "---\n---\nbase: &b {x: 1, y: 2}\nother:\n  <<: *b\n  y: 3\n---\nz: 1\n",
            Schema::V3,
        )
        .unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(
            docs[0].to_json(),
            json!({"base": {"x":1,"y":2}, "other": {"y":3,"x":1}})
        );
    }

    #[test]
    fn errors_carry_lines() {
        let e = parse_documents("a: 1\nb: [\n", Schema::V3).unwrap_err();
        assert!(e.line >= 2, "{e}");
        let e = parse_documents("a: 1\na: 2\n", Schema::V3).unwrap_err();
        assert_eq!(e.line, 2);
    }
}
