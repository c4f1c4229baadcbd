//! YAML in and out with Helm's exact behaviour: `toYaml` is sigs.k8s.io/yaml over go-yaml v2
//! (JSON round trip, go-yaml's key order, quoting rules and 80-column folding), `fromYaml` reads
//! YAML into JSON-shaped values where every number is a float64.

use std::cmp::Ordering;

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
    let mut e = Emitter {
        out: String::new(),
        column: 0,
        skip_nl: false,
    };
    e.node(&j, 0, Ctx::Root);
    // libyaml ends the document on a new line unless the last scalar's own line break left
    // it at column 0 (a literal block ending in U+2028/U+2029 leaves no `\n` after it).
    if !e.out.ends_with(['\n', '\u{2028}', '\u{2029}']) {
        e.out.push('\n');
    }
    Ok(e.out)
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
            let mut entries: Vec<(String, J)> =
                m.iter().map(|(k, v)| (k.clone(), normalize(v))).collect();
            entries.sort_by(|a, b| key_cmp(&a.0, &b.0));
            J::Map(entries)
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
            let mut entries: Vec<(String, J)> =
                o.iter().map(|(k, v)| (k.clone(), from_json(v))).collect();
            entries.sort_by(|a, b| key_cmp(&a.0, &b.0));
            J::Map(entries)
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

/// go-yaml v2's map key order (natural-number aware; non-letters before letters).
pub(crate) fn key_cmp(a: &str, b: &str) -> Ordering {
    if key_less(a, b) {
        Ordering::Less
    } else if key_less(b, a) {
        Ordering::Greater
    } else {
        Ordering::Equal
    }
}

fn key_less(a: &str, b: &str) -> bool {
    if a.is_ascii() && b.is_ascii() {
        // no allocation for the common case: ASCII bytes are chars
        return key_less_slice(a.as_bytes(), b.as_bytes(), |x| x as char);
    }
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    key_less_slice(&ar, &br, |x| x)
}

fn key_less_slice<T: Copy + PartialEq>(ar: &[T], br: &[T], ch: impl Fn(T) -> char) -> bool {
    let mut i = 0;
    while i < ar.len() && i < br.len() {
        if ar[i] == br[i] {
            i += 1;
            continue;
        }
        let (ca, cb) = (ch(ar[i]), ch(br[i]));
        let al = ca.is_alphabetic();
        let bl = cb.is_alphabetic();
        if al && bl {
            return ca < cb;
        }
        if al || bl {
            return bl;
        }
        let mut an: i64 = 0;
        let mut bn: i64 = 0;
        if ca == '0' || cb == '0' {
            let mut j = i;
            while j > 0 {
                j -= 1;
                let cj = ch(ar[j]);
                if !cj.is_ascii_digit() {
                    break;
                }
                if cj != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let mut ai = i;
        while ai < ar.len() && ch(ar[ai]).is_ascii_digit() {
            an = an
                .wrapping_mul(10)
                .wrapping_add(ch(ar[ai]) as i64 - '0' as i64);
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && ch(br[bi]).is_ascii_digit() {
            bn = bn
                .wrapping_mul(10)
                .wrapping_add(ch(br[bi]) as i64 - '0' as i64);
            bi += 1;
        }
        if an != bn {
            return an < bn;
        }
        if ai != bi {
            return ai < bi;
        }
        return ca < cb;
    }
    ar.len() < br.len()
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Ctx {
    Root,
    MapValue,
    SeqItem,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Style {
    Plain,
    Single,
    Double,
    Literal,
}

struct Emitter {
    out: String,
    column: usize,
    skip_nl: bool,
}

const BEST_WIDTH: usize = 80;

impl Emitter {
    fn put(&mut self, s: &str) {
        for c in s.chars() {
            if c == '\n' {
                self.column = 0;
            } else {
                self.column += 1;
            }
        }
        self.out.push_str(s);
    }

    fn newline(&mut self) {
        if self.skip_nl {
            self.skip_nl = false;
            return;
        }
        self.out.push('\n');
        self.column = 0;
    }

    /// A line break taken from the scalar itself (libyaml's `write_break`): `\n` is written as
    /// the emitter's newline, any other break character (`\r`, U+0085, U+2028, U+2029) as
    /// itself, and either way a new line starts.
    fn write_break(&mut self, c: char) {
        if c == '\n' {
            self.newline();
        } else {
            let mut buf = [0u8; 4];
            self.out.push_str(c.encode_utf8(&mut buf));
            self.column = 0;
        }
    }

    fn indent_to(&mut self, n: usize) {
        for _ in 0..n {
            self.out.push(' ');
        }
        self.column += n;
    }

    /// Emits node `v`; the cursor is right after "key:" / "- " / at line start (root).
    /// `indent` is the indentation of the node's own block content.
    fn node(&mut self, v: &J, indent: usize, ctx: Ctx) {
        match v {
            J::Map(entries) if !entries.is_empty() => {
                let mut first = true;
                if ctx == Ctx::MapValue {
                    self.newline();
                }
                for (k, val) in entries {
                    // the first key follows "- " (sequence item) or starts the document
                    if !first {
                        self.newline();
                        self.indent_to(indent);
                    } else if ctx == Ctx::MapValue {
                        self.indent_to(indent);
                    }
                    first = false;
                    if !is_simple_key(k) {
                        // libyaml's complex key: `? key` and `: value` on lines of their own,
                        // both laid out like a sequence item's content.
                        self.put("? ");
                        self.scalar_str(k, indent + 2, false);
                        self.newline();
                        self.indent_to(indent);
                        self.put(":");
                        self.seq_item(val, indent);
                        continue;
                    }
                    self.scalar_str(k, indent, true);
                    self.put(":");
                    match val {
                        J::Map(m) if !m.is_empty() => self.node(val, indent + 2, Ctx::MapValue),
                        J::Seq(s) if !s.is_empty() => {
                            // sequences are not indented under their key
                            for item in s {
                                self.newline();
                                self.indent_to(indent);
                                self.put("-");
                                self.seq_item(item, indent);
                            }
                        }
                        _ => {
                            self.put(" ");
                            self.scalar(val, indent + 2);
                        }
                    }
                }
            }
            J::Seq(items) if !items.is_empty() => {
                let mut first = true;
                for item in items {
                    if !(first && (ctx == Ctx::Root || ctx == Ctx::SeqItem)) {
                        self.newline();
                        self.indent_to(indent);
                    }
                    first = false;
                    self.put("-");
                    self.seq_item(item, indent);
                }
            }
            _ => {
                if ctx == Ctx::MapValue {
                    self.put(" ");
                }
                self.scalar(v, indent + if ctx == Ctx::Root { 0 } else { 2 });
            }
        }
    }

    /// After "-": emits a sequence item whose dash is at column `indent`.
    fn seq_item(&mut self, item: &J, indent: usize) {
        match item {
            J::Map(m) if !m.is_empty() => {
                self.put(" ");
                self.node(item, indent + 2, Ctx::SeqItem);
            }
            J::Seq(s) if !s.is_empty() => {
                self.put(" ");
                self.node(item, indent + 2, Ctx::SeqItem);
            }
            _ => {
                self.put(" ");
                self.scalar(item, indent + 2);
            }
        }
    }

    fn scalar(&mut self, v: &J, indent: usize) {
        match v {
            J::Null => self.put("null"),
            J::Bool(b) => self.put(if *b { "true" } else { "false" }),
            J::Int(i) => self.put(&i.to_string()),
            J::Float(f) => {
                let s = if f.is_nan() {
                    ".nan".to_string()
                } else if f.is_infinite() {
                    if *f > 0.0 {
                        ".inf".into()
                    } else {
                        "-.inf".into()
                    }
                } else {
                    format_float_g(*f, None, false)
                };
                self.put(&s)
            }
            J::Str(s) => self.scalar_str(s, indent, false),
            J::Map(_) => self.put("{}"),
            J::Seq(_) => self.put("[]"),
        }
    }

    /// A string scalar; `indent` is the indentation for continuation lines / block content.
    fn scalar_str(&mut self, s: &str, indent: usize, simple_key: bool) {
        let style = select_style(s, simple_key);
        match style {
            Style::Plain => self.write_plain(s, indent, !simple_key),
            Style::Single => self.write_single(s, indent, !simple_key),
            Style::Double => self.write_double(s, indent, !simple_key),
            Style::Literal => self.write_literal(s, indent),
        }
    }

    fn write_indent(&mut self, indent: usize) {
        self.newline();
        self.indent_to(indent);
    }

    fn write_plain(&mut self, s: &str, indent: usize, allow_breaks: bool) {
        let chars: Vec<char> = s.chars().collect();
        let mut spaces = false;
        let mut buf = [0u8; 4];
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && chars.get(i + 1).is_some_and(|&n| n != ' ')
                {
                    self.write_indent(indent);
                } else {
                    self.put(" ");
                }
                spaces = true;
            } else {
                self.put(c.encode_utf8(&mut buf));
                spaces = false;
            }
        }
    }

    fn write_single(&mut self, s: &str, indent: usize, allow_breaks: bool) {
        self.put("'");
        let chars: Vec<char> = s.chars().collect();
        let mut spaces = false;
        let mut breaks = false;
        let mut buf = [0u8; 4];
        let n = chars.len();
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && i > 0
                    && i + 1 < n
                    && chars.get(i + 1).is_some_and(|&x| x != ' ')
                {
                    self.write_indent(indent);
                } else {
                    self.put(" ");
                }
                spaces = true;
            } else if is_break(c) {
                if !breaks && c == '\n' {
                    self.newline();
                }
                self.write_break(c);
                breaks = true;
            } else {
                if breaks {
                    self.indent_to(indent);
                }
                if c == '\'' {
                    self.put("'");
                }
                self.put(c.encode_utf8(&mut buf));
                spaces = false;
                breaks = false;
            }
        }
        self.put("'");
    }

    fn write_double(&mut self, s: &str, indent: usize, allow_breaks: bool) {
        self.put("\"");
        let chars: Vec<char> = s.chars().collect();
        let n = chars.len();
        let mut spaces = false;
        let mut buf = [0u8; 4];
        for (i, &c) in chars.iter().enumerate() {
            if !is_printable(c) || c == '\u{FEFF}' || is_break(c) || c == '"' || c == '\\' {
                let esc = match c {
                    '\0' => "\\0".to_string(),
                    '\u{7}' => "\\a".into(),
                    '\u{8}' => "\\b".into(),
                    '\t' => "\\t".into(),
                    '\n' => "\\n".into(),
                    '\u{b}' => "\\v".into(),
                    '\u{c}' => "\\f".into(),
                    '\r' => "\\r".into(),
                    '\u{1b}' => "\\e".into(),
                    '"' => "\\\"".into(),
                    '\\' => "\\\\".into(),
                    '\u{85}' => "\\N".into(),
                    '\u{a0}' => "\\_".into(),
                    '\u{2028}' => "\\L".into(),
                    '\u{2029}' => "\\P".into(),
                    c if (c as u32) <= 0xff => format!("\\x{:02X}", c as u32),
                    c if (c as u32) <= 0xffff => format!("\\u{:04X}", c as u32),
                    c => format!("\\U{:08X}", c as u32),
                };
                self.put(&esc);
                spaces = false;
            } else if c == ' ' {
                if allow_breaks && !spaces && self.column > BEST_WIDTH && i != 0 && i + 1 != n {
                    self.write_indent(indent);
                    if chars.get(i + 1) == Some(&' ') {
                        self.put("\\");
                    }
                } else {
                    self.put(" ");
                }
                spaces = true;
            } else {
                self.put(c.encode_utf8(&mut buf));
                spaces = false;
            }
        }
        self.put("\"");
    }

    fn write_literal(&mut self, s: &str, indent: usize) {
        self.put("|");
        let first = s.chars().next();
        if first.is_some_and(|c| c == ' ' || is_break(c)) {
            self.put("2");
        }
        let chars: Vec<char> = s.chars().collect();
        let chomp = match chars.last() {
            None => "-",
            Some(&l) if !is_break(l) => "-",
            Some(_) if chars.len() == 1 => "+",
            Some(_) => {
                if is_break(chars[chars.len() - 2]) {
                    "+"
                } else {
                    ""
                }
            }
        };
        self.put(chomp);
        self.newline();
        let mut breaks = true;
        let mut buf = [0u8; 4];
        for &c in &chars {
            if is_break(c) {
                self.write_break(c);
                breaks = true;
            } else {
                if breaks {
                    self.indent_to(indent);
                    breaks = false;
                }
                self.put(c.encode_utf8(&mut buf));
            }
        }
        // libyaml does not write another line break after a block scalar that ended with one
        self.skip_nl = breaks;
    }
}

fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// libyaml's is_printable (with unicode output enabled).
fn is_printable(c: char) -> bool {
    let u = c as u32;
    u == 0x0A
        || (0x20..=0x7E).contains(&u)
        || u == 0x85
        || (0xA0..=0xD7FF).contains(&u)
        || (0xE000..=0xFFFD).contains(&u) && u != 0xFEFF
}

/// Whether go-yaml v2 would resolve this plain scalar to something other than a string.
pub(crate) fn resolves_non_string(s: &str) -> bool {
    match s {
        "" | "~" | "null" | "Null" | "NULL" => return true,
        "y" | "Y" | "yes" | "Yes" | "YES" | "n" | "N" | "no" | "No" | "NO" | "true" | "True"
        | "TRUE" | "false" | "False" | "FALSE" | "on" | "On" | "ON" | "off" | "Off" | "OFF" => {
            return true;
        }
        ".nan" | ".NaN" | ".NAN" | ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF"
        | "-.inf" | "-.Inf" | "-.INF" | "<<" => return true,
        _ => {}
    }
    let Some(first) = s.chars().next() else {
        return true;
    };
    if !(first.is_ascii_digit() || first == '-' || first == '+' || first == '.') {
        return false;
    }
    let plain: String = s.chars().filter(|&c| c != '_').collect();
    if go_parse_int(&plain) {
        return true;
    }
    if is_yaml_float(&plain) {
        return true;
    }
    if let Some(r) = plain.strip_prefix("0b")
        && !r.is_empty()
        && r.chars().all(|c| c == '0' || c == '1')
    {
        return true;
    }
    if let Some(r) = plain.strip_prefix("-0b")
        && !r.is_empty()
        && r.chars().all(|c| c == '0' || c == '1')
    {
        return true;
    }
    if is_timestamp(s) {
        return true;
    }
    // base 60 floats (go-yaml's isBase60Float) are also quoted
    is_base60_float(s)
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

fn is_base60_float(s: &str) -> bool {
    // ^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$
    let b = s.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'-' || b[i] == b'+') {
        i += 1;
    }
    if !(i < b.len() && b[i].is_ascii_digit()) {
        return false;
    }
    i += 1;
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
        i += 1;
    }
    let mut groups = 0;
    while i < b.len() && b[i] == b':' {
        i += 1;
        let st = i;
        while i < b.len() && b[i].is_ascii_digit() && i - st < 2 {
            i += 1;
        }
        let g = &s[st..i];
        if g.is_empty() || (g.len() == 2 && g.as_bytes()[0] > b'5') {
            return false;
        }
        groups += 1;
    }
    if groups == 0 {
        return false;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
            i += 1;
        }
    }
    i == b.len()
}

/// go-yaml v2's timestamp check: "2006-1-2T15:4:5.999999999Z07:00" (also with 't'),
/// "2006-1-2 15:4:5.999999999" and "2006-1-2", as Go's time.Parse accepts them.
fn is_timestamp(s: &str) -> bool {
    fn num(s: &str, min: usize, max: usize) -> Option<(u32, &str)> {
        let n = s
            .bytes()
            .take(max)
            .take_while(|b| b.is_ascii_digit())
            .count();
        if n < min {
            return None;
        }
        Some((s[..n].parse().ok()?, &s[n..]))
    }
    let Some((_, r)) = num(s, 4, 4) else {
        return false;
    };
    let Some(r) = r.strip_prefix('-') else {
        return false;
    };
    let Some((m, r)) = num(r, 1, 2) else {
        return false;
    };
    let Some(r) = r.strip_prefix('-') else {
        return false;
    };
    let Some((d, r)) = num(r, 1, 2) else {
        return false;
    };
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return false;
    }
    if r.is_empty() {
        return true;
    }
    let (zone_required, r) = match r.as_bytes()[0] {
        b'T' | b't' => (true, &r[1..]),
        b' ' => (false, &r[1..]),
        _ => return false,
    };
    let Some((h, r)) = num(r, 1, 2) else {
        return false;
    };
    let Some(r) = r.strip_prefix(':') else {
        return false;
    };
    let Some((mi, r)) = num(r, 1, 2) else {
        return false;
    };
    let Some(r) = r.strip_prefix(':') else {
        return false;
    };
    let Some((se, mut r)) = num(r, 1, 2) else {
        return false;
    };
    if h > 23 || mi > 59 || se > 59 {
        return false;
    }
    if let Some(f) = r.strip_prefix('.') {
        let n = f.bytes().take_while(|b| b.is_ascii_digit()).count();
        if n == 0 {
            return false;
        }
        r = &f[n..];
    }
    if !zone_required {
        return r.is_empty();
    }
    if r == "Z" {
        return true;
    }
    let b = r.as_bytes();
    b.len() == 6
        && (b[0] == b'+' || b[0] == b'-')
        && b[1].is_ascii_digit()
        && b[2].is_ascii_digit()
        && b[3] == b':'
        && b[4].is_ascii_digit()
        && b[5].is_ascii_digit()
}

/// libyaml's `yaml_emitter_check_simple_key` for a string key: one line, at most 128 bytes.
fn is_simple_key(k: &str) -> bool {
    k.len() <= 128 && !analyze(k).multiline
}

/// go-yaml's style choice for a string: quote when it would not read back as the same string.
fn select_style(s: &str, simple_key: bool) -> Style {
    let requested = if s.contains('\n') {
        Style::Literal
    } else if !resolves_non_string(s) {
        Style::Plain
    } else {
        Style::Double
    };
    let a = analyze(s);
    let mut style = requested;
    if simple_key && a.multiline {
        style = Style::Double;
    }
    if style == Style::Plain {
        if !a.block_plain_allowed {
            style = Style::Single;
        }
        if s.is_empty() && simple_key {
            style = Style::Single;
        }
    }
    if style == Style::Single && !a.single_quoted_allowed {
        style = Style::Double;
    }
    if style == Style::Literal && (!a.block_allowed || simple_key) {
        style = Style::Double;
    }
    style
}

struct Analysis {
    multiline: bool,
    block_plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

/// libyaml's yaml_emitter_analyze_scalar (block context).
fn analyze(s: &str) -> Analysis {
    if s.is_empty() {
        return Analysis {
            multiline: false,
            block_plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: false,
        };
    }
    let mut block_ind = s.starts_with("---") || s.starts_with("...");
    let mut line_breaks = false;
    let mut special = false;
    let mut leading_space = false;
    let mut leading_break = false;
    let mut trailing_space = false;
    let mut trailing_break = false;
    let mut break_space = false;
    let mut space_break = false;
    let mut prev_space = false;
    let mut prev_break = false;
    let mut preceded_by_ws = true;
    let chars: Vec<char> = s.chars().collect();
    let n = chars.len();
    for (i, &c) in chars.iter().enumerate() {
        let followed_by_ws =
            i + 1 >= n || matches!(chars[i + 1], ' ' | '\t') || is_break(chars[i + 1]);
        if i == 0 {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => block_ind = true,
                '?' | ':' if followed_by_ws => {
                    block_ind = true;
                }
                '-' if followed_by_ws => {
                    block_ind = true;
                }
                _ => {}
            }
        } else {
            match c {
                ':' if followed_by_ws => {
                    block_ind = true;
                }
                '#' if preceded_by_ws => {
                    block_ind = true;
                }
                _ => {}
            }
        }
        if !is_printable(c) || c == '\u{FEFF}' {
            special = true;
        }
        if c == ' ' {
            if i == 0 {
                leading_space = true;
            }
            if i + 1 == n {
                trailing_space = true;
            }
            if prev_break {
                break_space = true;
            }
            prev_space = true;
            prev_break = false;
        } else if is_break(c) {
            line_breaks = true;
            if i == 0 {
                leading_break = true;
            }
            if i + 1 == n {
                trailing_break = true;
            }
            if prev_space {
                space_break = true;
            }
            prev_space = false;
            prev_break = true;
        } else {
            prev_space = false;
            prev_break = false;
        }
        preceded_by_ws = matches!(c, ' ' | '\t' | '\0') || is_break(c);
    }
    let mut a = Analysis {
        multiline: line_breaks,
        block_plain_allowed: true,
        single_quoted_allowed: true,
        block_allowed: true,
    };
    if leading_space || leading_break || trailing_space || trailing_break {
        a.block_plain_allowed = false;
    }
    if trailing_space {
        a.block_allowed = false;
    }
    if break_space {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
    }
    if space_break || special {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
        a.block_allowed = false;
    }
    if line_breaks {
        a.block_plain_allowed = false;
    }
    if block_ind {
        a.block_plain_allowed = false;
    }
    a
}

/// Parses YAML the way sigs.k8s.io/yaml.Unmarshal does for Helm: go-yaml v2's YAML 1.1
/// resolution (`yes`/`on`/`y` are booleans, `0755` is octal, even for keys), keys turned into
/// strings, then a JSON round trip that makes every number a float64. Only the first document
/// is read, as go-yaml's Unmarshal does.
pub fn from_yaml(text: &str) -> Result<Value, String> {
    let lines = GoLines::new(text);
    let mut c = Composer {
        parser: granit_parser::Parser::new_from_str(lines.text()),
        lines: &lines,
        anchors: std::collections::HashMap::new(),
        depth: 0,
    };
    c.document()
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
    if first.is_ascii_digit() || first == b'-' || first == b'+' || first == b'.' {
        let plain: String = v.chars().filter(|&c| c != '_').collect();
        if go_parse_int(&plain)
            && let Some(i) = parse_int_value(&plain)
        {
            return Value::Float(i);
        }
        if is_yaml_float(&plain)
            && let Ok(f) = plain.parse::<f64>()
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
    fn key_order() {
        let mut v = vec!["b", "a10", "a2", "_x", "A", "a"];
        v.sort_by(|a, b| key_cmp(a, b));
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
