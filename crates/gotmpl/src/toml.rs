//! `toToml`: the output of BurntSushi/toml v0.3's encoder, which Helm 3 uses.

use std::fmt::Write as _;

use crate::value::Value;

/// Encodes a map as TOML; on failure returns the error text (as Helm's toToml does).
pub fn to_toml(v: &Value) -> String {
    let mut e = Enc {
        out: String::new(),
        written: false,
    };
    match v {
        Value::Map(_) => match e.table(&[], v) {
            Ok(()) => e.out,
            Err(msg) => msg,
        },
        Value::Nil => String::new(),
        _ => "toml: top-level values must be Go maps or structs".to_string(),
    }
}

struct Enc {
    out: String,
    written: bool,
}

fn is_table(v: &Value) -> bool {
    matches!(v, Value::Map(_))
}

fn is_table_array(v: &Value) -> bool {
    match v {
        Value::List(l) => !l.is_empty() && l.iter().all(is_table),
        _ => false,
    }
}

fn bare(k: &str) -> bool {
    !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn quote_key(k: &str) -> String {
    if bare(k) { k.to_string() } else { quote(k) }
}

fn quote(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '\\' => o.push_str("\\\\"),
            '"' => o.push_str("\\\""),
            '\u{8}' => o.push_str("\\b"),
            '\t' => o.push_str("\\t"),
            '\n' => o.push_str("\\n"),
            '\u{c}' => o.push_str("\\f"),
            '\r' => o.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(o, "\\u{:04X}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

impl Enc {
    fn newline(&mut self) {
        if self.written {
            self.out.push('\n');
        }
    }

    fn w(&mut self, s: &str) {
        self.out.push_str(s);
        self.written = true;
    }

    fn indent(key: &[String]) -> String {
        "  ".repeat(key.len().saturating_sub(1))
    }

    fn table(&mut self, key: &[String], v: &Value) -> Result<(), String> {
        let Value::Map(m) = v else { return Ok(()) };
        // direct values first, then sub-tables (each group in sorted key order)
        for (k, val) in m.iter() {
            if matches!(val, Value::Nil) || is_table(val) || is_table_array(val) {
                continue;
            }
            let mut path = key.to_vec();
            path.push(k.clone());
            let text = self.value(val)?;
            let line = format!("{}{} = {}", Self::indent(&path), quote_key(k), text);
            self.w(&line);
            self.newline();
        }
        for (k, val) in m.iter() {
            let mut path = key.to_vec();
            path.push(k.clone());
            if is_table(val) {
                if path.len() == 1 {
                    self.newline();
                }
                let hdr = format!(
                    "{}[{}]",
                    Self::indent(&path),
                    path.iter()
                        .map(|p| quote_key(p))
                        .collect::<Vec<_>>()
                        .join(".")
                );
                self.w(&hdr);
                self.newline();
                self.table(&path, val)?;
            } else if is_table_array(val)
                && let Value::List(l) = val
            {
                for item in l.iter() {
                    self.newline();
                    let hdr = format!(
                        "{}[[{}]]",
                        Self::indent(&path),
                        path.iter()
                            .map(|p| quote_key(p))
                            .collect::<Vec<_>>()
                            .join(".")
                    );
                    self.w(&hdr);
                    self.newline();
                    self.table(&path, item)?;
                }
            }
        }
        Ok(())
    }

    fn value(&self, v: &Value) -> Result<String, String> {
        Ok(match v {
            Value::Nil => return Err("toml: cannot encode a nil value".into()),
            Value::Bool(b) => b.to_string(),
            Value::Int(i) | Value::Int64(i) => i.to_string(),
            Value::Float(f) => {
                if !f.is_finite() {
                    return Err(format!("toml: cannot encode float {f}"));
                }
                let s = crate::json::go_json_float(*f).unwrap_or_default();
                let s = if s.contains('e') { format!("{f}") } else { s };
                if s.contains('.') { s } else { format!("{s}.0") }
            }
            Value::String(s) => quote(s),
            Value::List(l) => {
                let mut parts = Vec::new();
                let mut kind = None;
                for e in l.iter() {
                    let k = std::mem::discriminant(e);
                    if let Some(prev) = kind
                        && prev != k
                    {
                        return Err("toml: cannot encode array with mixed element types".into());
                    }
                    kind = Some(k);
                    parts.push(self.value(e)?);
                }
                format!("[{}]", parts.join(", "))
            }
            Value::Map(_) => return Err("toml: cannot encode a table inside an array".into()),
            Value::Object(o) => quote(&o.display()),
        })
    }
}
