//! JSON exactly as Go's encoding/json writes it (sorted keys, HTML-safe escaping, Go float
//! formatting), plus decoding into float64-number values like `json.Unmarshal`.

use std::fmt::Write as _;

pub(crate) use crate::gofmt::json_float as go_json_float;
use crate::value::Value;

/// json.Marshal (html_safe = true) or an Encoder with SetEscapeHTML(false).
/// Returns "" on unsupported values (NaN/Inf), as Helm's toJson does on error.
pub fn to_json(v: &Value, html_safe: bool) -> String {
    let mut out = String::new();
    if write_json(&mut out, v, html_safe, None, 0).is_err() {
        return String::new();
    }
    out
}

/// json.MarshalIndent(v, "", "  ").
pub fn to_json_pretty(v: &Value, html_safe: bool) -> String {
    let mut out = String::new();
    if write_json(&mut out, v, html_safe, Some("  "), 0).is_err() {
        return String::new();
    }
    out
}

fn newline(out: &mut String, indent: Option<&str>, level: usize) {
    if let Some(ind) = indent {
        out.push('\n');
        for _ in 0..level {
            out.push_str(ind);
        }
    }
}

fn write_json(
    out: &mut String,
    v: &Value,
    html: bool,
    indent: Option<&str>,
    level: usize,
) -> Result<(), ()> {
    match v {
        Value::Nil => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) | Value::Int64(i) => {
            let _ = write!(out, "{i}");
        }
        Value::Float(f) => out.push_str(&go_json_float(*f).ok_or(())?),
        Value::String(s) => write_str(out, s, html),
        Value::List(l) => {
            if l.is_empty() {
                out.push_str("[]");
                return Ok(());
            }
            out.push('[');
            for (i, e) in l.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, indent, level + 1);
                write_json(out, e, html, indent, level + 1)?;
            }
            newline(out, indent, level);
            out.push(']');
        }
        Value::Map(m) => {
            if m.is_empty() {
                out.push_str("{}");
                return Ok(());
            }
            out.push('{');
            for (i, (k, e)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, indent, level + 1);
                write_str(out, k, html);
                out.push(':');
                if indent.is_some() {
                    out.push(' ');
                }
                write_json(out, e, html, indent, level + 1)?;
            }
            newline(out, indent, level);
            out.push('}');
        }
        Value::Object(o) => {
            let v = Value::from(o.to_json());
            write_json(out, &v, html, indent, level)?;
        }
    }
    Ok(())
}

fn write_str(out: &mut String, s: &str, html: bool) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' if html => {
                let _ = write!(out, "\\u00{:02x}", c as u32);
            }
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u00{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// JSON that Go's `encoding/json` would refuse, worded as Go words it (templates print it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct JsonError(pub String);

/// json.Unmarshal into interface{}: numbers become float64. Syntax errors are reworded the way
/// Go's encoding/json words them.
pub fn from_json(text: &str) -> Result<Value, JsonError> {
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| JsonError(go_json_error(text, &e)))?;
    Ok(Value::from_json_float(v))
}

/// Go's quoteChar for scanner errors.
fn quote_char(c: char) -> String {
    match c {
        '\'' => "'\\''".to_string(),
        '"' => "'\"'".to_string(),
        c => {
            let q = crate::lex::go_quote(&c.to_string());
            format!("'{}'", &q[1..q.len() - 1])
        }
    }
}

fn go_json_error(text: &str, e: &serde_json::Error) -> String {
    if e.is_eof() {
        // Go feeds a space at end of input: inside a literal or number that is the error
        let t = text;
        let alpha = t.len() - t.trim_end_matches(|c: char| c.is_ascii_alphabetic()).len();
        let tail = &t[t.len() - alpha..];
        if !tail.is_empty()
            && let Some(l) = ["true", "false", "null"]
                .into_iter()
                .find(|l| l.starts_with(tail) && l.len() > tail.len())
        {
            return format!(
                "invalid character ' ' in literal {l} (expecting {})",
                quote_char(l.as_bytes()[tail.len()] as char)
            );
        }
        if t.ends_with('-') && !t.ends_with("e-") && !t.ends_with("E-") {
            return "invalid character ' ' in numeric literal".into();
        }
        if t.ends_with('.') {
            return "invalid character ' ' after decimal point in numeric literal".into();
        }
        if t.ends_with(['e', 'E', '+', '-']) {
            return "invalid character ' ' in exponent of numeric literal".into();
        }
        return "unexpected end of JSON input".into();
    }
    // serde_json reports 1-based line/column of the offending character
    let line_start: usize = text
        .split_inclusive('\n')
        .take(e.line().saturating_sub(1))
        .map(|l| l.len())
        .sum();
    let rest = text.get(line_start..).unwrap_or("");
    let col = e.column().saturating_sub(1);
    let Some((off, c)) = rest.char_indices().nth(col) else {
        return "unexpected end of JSON input".into();
    };
    let msg = e.to_string();
    let what = if msg.starts_with("expected `:`") {
        "after object key".to_string()
    } else if msg.starts_with("expected `,` or `}`") {
        "after object key:value pair".to_string()
    } else if msg.starts_with("expected `,` or `]`") {
        "after array element".to_string()
    } else if msg.starts_with("trailing characters") {
        "after top-level value".to_string()
    } else if msg.starts_with("key must be a string") {
        "looking for beginning of object key string".to_string()
    } else if msg.starts_with("expected ident") {
        // inside true/false/null: find the literal and the expected letter
        let before = &rest[..off];
        let start = before
            .rfind(|ch: char| !ch.is_ascii_alphabetic())
            .map(|k| k + 1)
            .unwrap_or(0);
        let typed = &before[start..];
        let lit = ["true", "false", "null"]
            .into_iter()
            .find(|l| l.starts_with(typed));
        match lit {
            Some(l) if typed.len() < l.len() => {
                format!(
                    "in literal {l} (expecting {})",
                    quote_char(l.as_bytes()[typed.len()] as char)
                )
            }
            _ => "looking for beginning of value".to_string(),
        }
    } else if msg.starts_with("invalid number") || msg.starts_with("number out of range") {
        "in numeric literal".to_string()
    } else if msg.starts_with("control character") {
        "in string literal".to_string()
    } else if msg.starts_with("invalid escape") {
        "in string escape code".to_string()
    } else {
        "looking for beginning of value".to_string()
    };
    format!("invalid character {} {what}", quote_char(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats() {
        assert_eq!(go_json_float(1e6).as_deref(), Some("1000000"));
        assert_eq!(go_json_float(1.5).as_deref(), Some("1.5"));
        assert_eq!(go_json_float(1e21).as_deref(), Some("1e+21"));
        assert_eq!(go_json_float(1e-7).as_deref(), Some("1e-7"));
        assert_eq!(go_json_float(0.000001).as_deref(), Some("0.000001"));
    }

    #[test]
    fn go_error_texts() {
        let e = |t: &str| from_json(t).err().map(|e| e.0).unwrap_or_default();
        assert_eq!(
            e("{\"a\": }"),
            "invalid character '}' looking for beginning of value"
        );
        assert_eq!(
            e("not json"),
            "invalid character 'o' in literal null (expecting 'u')"
        );
        assert_eq!(e("{\"a\" 1}"), "invalid character '1' after object key");
        assert_eq!(e("[1 2]"), "invalid character '2' after array element");
        assert_eq!(e("{\"a\": 1"), "unexpected end of JSON input");
        assert_eq!(e("1 2"), "invalid character '2' after top-level value");
    }

    #[test]
    fn html_escape() {
        assert_eq!(
            to_json(&Value::str("<a&b>"), true),
            "\"\\u003ca\\u0026b\\u003e\""
        );
        assert_eq!(to_json(&Value::str("<a>"), false), "\"<a>\"");
    }
}
