//! The JSON re-read inside `sigs.k8s.io/yaml`: Helm's `toYaml` and `kustomize build` both turn a
//! value into JSON with Go's `encoding/json` and read that text back with go-yaml v2 before
//! emitting YAML. `encoding/json` escapes every line break but U+0085 (NEL), so a NEL reaches
//! go-yaml raw inside a double-quoted scalar, where go-yaml reads it as a line break:
//!
//! - in a string, the break folds like any line break of a quoted scalar: blanks around it go,
//!   one break becomes a space, `n` breaks in a row become `n - 1` newlines;
//! - after a break the scanner is at column 0, so `---` or `...` followed by a blank there is a
//!   document marker: "found unexpected document indicator";
//! - a key holding a NEL spans two lines and cannot be a flow key: "did not find expected ','
//!   or '}'" (Helm's `toYaml` then prints nothing, kustomize fails).
//!
//! Error lines are go-yaml's: the JSON text is one line plus one per NEL before the fault, in
//! `encoding/json`'s order (map keys sorted by bytes).

use std::borrow::Cow;
use std::fmt;

const NEL: char = '\u{85}';

/// go-yaml's error from reading the JSON text back; displays as go-yaml prints it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RereadError {
    /// The line go-yaml names.
    pub line: usize,
    /// go-yaml's message.
    pub msg: &'static str,
}

impl fmt::Display for RereadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "yaml: line {}: {}", self.line, self.msg)
    }
}

impl std::error::Error for RereadError {}

/// Walks one JSON document's strings in `encoding/json` order, counting the lines raw NELs
/// start (error lines depend on every NEL before the fault).
#[derive(Debug, Default)]
pub struct Reread {
    /// 0-based line of go-yaml's scanner.
    line: usize,
}

impl Reread {
    /// A reader at the start of a document.
    pub fn new() -> Self {
        Self::default()
    }

    /// A string value as go-yaml reads it back (`None`: unchanged, the common case).
    pub fn value(&mut self, s: &str) -> Result<Option<String>, RereadError> {
        if !s.contains(NEL) {
            return Ok(None);
        }
        self.fold(s).map(Some)
    }

    /// A map key: read like a value, and refused when it spans lines.
    pub fn key(&mut self, k: &str) -> Result<(), RereadError> {
        if !k.contains(NEL) {
            return Ok(());
        }
        self.fold(k)?;
        // A parser error: go-yaml names the 0-based line of the ':' that follows the key.
        Err(RereadError {
            line: self.line,
            msg: "did not find expected ',' or '}'",
        })
    }

    /// go-yaml v2's `yaml_parser_scan_flow_scalar` over the JSON string's raw characters: the
    /// only raw blank is the space and the only raw break is NEL (everything else is escaped
    /// or is content).
    fn fold(&mut self, s: &str) -> Result<String, RereadError> {
        let chars: Vec<char> = s.chars().collect();
        let mut out = String::with_capacity(s.len());
        let mut i = 0;
        let mut column0 = false;
        while i < chars.len() {
            if column0 && is_document_marker(&chars[i..]) {
                // A scanner error: go-yaml names the 1-based line.
                return Err(RereadError {
                    line: self.line + 1,
                    msg: "found unexpected document indicator",
                });
            }
            while i < chars.len() && chars[i] != ' ' && chars[i] != NEL {
                out.push(chars[i]);
                i += 1;
            }
            let mut whitespace = 0;
            let mut breaks = 0;
            column0 = false;
            while i < chars.len() && (chars[i] == ' ' || chars[i] == NEL) {
                if chars[i] == NEL {
                    breaks += 1;
                    self.line += 1;
                    column0 = true;
                } else {
                    if breaks == 0 {
                        whitespace += 1;
                    }
                    column0 = false;
                }
                i += 1;
            }
            match breaks {
                0 => out.extend(std::iter::repeat_n(' ', whitespace)),
                1 => out.push(' '),
                n => out.extend(std::iter::repeat_n('\n', n - 1)),
            }
        }
        Ok(out)
    }
}

/// `---` or `...` followed by a blank, a break or the end of the buffer (the closing quote
/// that follows the string is none of these).
fn is_document_marker(rest: &[char]) -> bool {
    rest.len() >= 4
        && (rest[..3] == ['-', '-', '-'] || rest[..3] == ['.', '.', '.'])
        && matches!(rest[3], ' ' | NEL)
}

/// Applies the re-read to a JSON value in place (`kustomize build` does it to every
/// resource it prints).
pub fn reread_json(v: &mut serde_json::Value) -> Result<(), RereadError> {
    Reread::new().json(v)
}

impl Reread {
    fn json(&mut self, v: &mut serde_json::Value) -> Result<(), RereadError> {
        match v {
            serde_json::Value::String(s) => {
                if let Some(folded) = self.value(s)? {
                    *s = folded;
                }
            }
            serde_json::Value::Array(a) => {
                for x in a {
                    self.json(x)?;
                }
            }
            serde_json::Value::Object(m) => {
                // encoding/json writes keys sorted by bytes, whatever the map's own order.
                let mut keys: Vec<String> = m.keys().cloned().collect();
                keys.sort();
                for k in keys {
                    self.key(&k)?;
                    if let Some(x) = m.get_mut(&k) {
                        self.json(x)?;
                    }
                }
            }
            serde_json::Value::Null | serde_json::Value::Bool(_) | serde_json::Value::Number(_) => {
            }
        }
        Ok(())
    }
}

/// Convenience for one string outside a document (the line count starts at 0).
pub fn reread_str(s: &str) -> Result<Cow<'_, str>, RereadError> {
    Ok(match Reread::new().value(s)? {
        Some(f) => Cow::Owned(f),
        None => Cow::Borrowed(s),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_like_a_quoted_scalar() {
        assert_eq!(reread_str("x\u{85}y").unwrap(), "x y");
        assert_eq!(reread_str("x\u{85}").unwrap(), "x ");
        assert_eq!(reread_str(" \u{85} x").unwrap(), " x");
        assert_eq!(reread_str("a\u{85}\u{85}b").unwrap(), "a\nb");
        assert_eq!(reread_str("a \u{85}  \u{85} \u{85}b").unwrap(), "a\n\nb");
        assert_eq!(reread_str("\u{85}\u{85}").unwrap(), "\n");
        assert_eq!(
            reread_str("a\n\u{85}b\u{2028}\u{85}c").unwrap(),
            "a\n b\u{2028} c"
        );
        assert_eq!(reread_str("a\u{85}---b").unwrap(), "a ---b");
        assert_eq!(reread_str("a\u{85} ... b").unwrap(), "a ... b");
        assert!(matches!(reread_str("plain"), Ok(Cow::Borrowed("plain"))));
    }

    #[test]
    fn document_marker_after_a_break() {
        let e = reread_str("a\u{85}--- b").unwrap_err();
        assert_eq!(
            e.to_string(),
            "yaml: line 2: found unexpected document indicator"
        );
    }

    #[test]
    fn keys_with_nel_fail_on_the_line_go_yaml_names() {
        // Observed with kustomize 4.5.4 (see render's kustomize_golden line-break tests).
        let mut v = serde_json::json!({"a": "x\u{85}y", "b": {"k\u{85}\u{85}\u{85}": 1}});
        assert_eq!(
            reread_json(&mut v).unwrap_err().to_string(),
            "yaml: line 4: did not find expected ',' or '}'"
        );
        let mut v = serde_json::json!({"k\u{85}y": 2});
        assert_eq!(
            reread_json(&mut v).unwrap_err().to_string(),
            "yaml: line 1: did not find expected ',' or '}'"
        );
    }
}
