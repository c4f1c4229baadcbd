//! YAML in and out with Helm's exact behaviour: `toYaml` is sigs.k8s.io/yaml over go-yaml v2
//! (JSON round trip, go-yaml's key order, quoting rules and 80-column folding), `fromYaml` reads
//! YAML into JSON-shaped values where every number is a float64.

use std::cmp::Ordering;

use crate::value::{Value, format_float_g};

/// Serializes like Helm's `toYaml` before its trailing-newline trim (sigs.k8s.io/yaml.Marshal).
pub fn to_yaml(v: &Value) -> String {
    let j = normalize(v);
    let mut e = Emitter {
        out: String::new(),
        column: 0,
    };
    e.node(&j, 0, Ctx::Root);
    if !e.out.ends_with('\n') {
        e.out.push('\n');
    }
    e.out
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
        Value::Int(i) => J::Int(*i as i128),
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
        let i = f as i128;
        if i >= i64::MIN as i128 && i <= u64::MAX as i128 {
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
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    let mut i = 0;
    while i < ar.len() && i < br.len() {
        if ar[i] == br[i] {
            i += 1;
            continue;
        }
        let al = ar[i].is_alphabetic();
        let bl = br[i].is_alphabetic();
        if al && bl {
            return ar[i] < br[i];
        }
        if al || bl {
            return bl;
        }
        let mut an: i64 = 0;
        let mut bn: i64 = 0;
        if ar[i] == '0' || br[i] == '0' {
            let mut j = i;
            while j > 0 {
                j -= 1;
                if !ar[j].is_ascii_digit() {
                    break;
                }
                if ar[j] != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let mut ai = i;
        while ai < ar.len() && ar[ai].is_ascii_digit() {
            an = an.wrapping_mul(10).wrapping_add(ar[ai] as i64 - '0' as i64);
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && br[bi].is_ascii_digit() {
            bn = bn.wrapping_mul(10).wrapping_add(br[bi] as i64 - '0' as i64);
            bi += 1;
        }
        if an != bn {
            return an < bn;
        }
        if ai != bi {
            return ai < bi;
        }
        return ar[i] < br[i];
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
        self.out.push('\n');
        self.column = 0;
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
                    if !(first && ctx == Ctx::SeqItem) && !(first && ctx == Ctx::Root) {
                        if !(first && ctx == Ctx::MapValue) {
                            self.newline();
                        }
                        self.indent_to(indent);
                    } else if first && ctx == Ctx::Root {
                        // at column 0 already
                    }
                    first = false;
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
                self.newline();
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
                self.newline();
                breaks = true;
            } else {
                if breaks {
                    self.indent_to(indent);
                    breaks = false;
                }
                self.put(c.encode_utf8(&mut buf));
            }
        }
        // the emitter leaves the cursor after the content; a following key starts a new line
        if !breaks {
            // content ended without newline: nothing extra
        } else {
            // ended with a line break: undo the column-0 newline so the caller's newline is the
            // only one (libyaml does not write an extra break after block scalars)
            if self.out.ends_with('\n') {
                self.out.pop();
                self.column = 0;
            }
        }
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

/// go-yaml v2's timestamp formats (only checked for strings starting with a digit).
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    // must start with YYYY-M-D
    let mut i = 0;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    if i != 4 || b.get(4) != Some(&b'-') {
        return false;
    }
    let formats = [
        "%Y-%m-%dT%H:%M:%S%.f%:z",
        "%Y-%m-%dt%H:%M:%S%.f%:z",
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%d",
    ];
    let _ = formats;
    // Accept the shapes go-yaml accepts: date, or date + [Tt ] + time with optional fraction/zone.
    let date_end = s.find(['T', 't', ' ']).unwrap_or(s.len());
    let date = &s[..date_end];
    let parts: Vec<&str> = date.split('-').collect();
    if parts.len() != 3
        || parts[0].len() != 4
        || !(1..=2).contains(&parts[1].len())
        || !(1..=2).contains(&parts[2].len())
        || !parts.iter().all(|p| p.bytes().all(|c| c.is_ascii_digit()))
    {
        return false;
    }
    let (Ok(m), Ok(d)) = (parts[1].parse::<u32>(), parts[2].parse::<u32>()) else {
        return false;
    };
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return false;
    }
    if date_end == s.len() {
        return true;
    }
    let rest = s[date_end + 1..].trim_start_matches(' ');
    // H:M:S[.frac][zone]
    let mut it = rest.splitn(3, ':');
    let (Some(h), Some(mi), Some(sec)) = (it.next(), it.next(), it.next()) else {
        return false;
    };
    if !(1..=2).contains(&h.len()) || !h.bytes().all(|c| c.is_ascii_digit()) {
        return false;
    }
    if mi.len() != 2 || !mi.bytes().all(|c| c.is_ascii_digit()) {
        return false;
    }
    if sec.len() < 2 || !sec.as_bytes()[..2].iter().all(|c| c.is_ascii_digit()) {
        return false;
    }
    let mut tail = &sec[2..];
    if let Some(f) = tail.strip_prefix('.') {
        let n = f.bytes().take_while(|c| c.is_ascii_digit()).count();
        tail = &f[n..];
    }
    let tail = tail.trim_start_matches(' ');
    if tail.is_empty() || tail == "Z" {
        return true;
    }
    let z = tail.strip_prefix(['+', '-']).unwrap_or("x");
    let zb = z.as_bytes();
    matches!(zb.len(), 1 | 2 | 4 | 5)
        && (z.bytes().all(|c| c.is_ascii_digit()) || (zb.len() == 5 && zb[2] == b':'))
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
                '?' | ':' => {
                    if followed_by_ws {
                        block_ind = true;
                    }
                }
                '-' => {
                    if followed_by_ws {
                        block_ind = true;
                    }
                }
                _ => {}
            }
        } else {
            match c {
                ':' => {
                    if followed_by_ws {
                        block_ind = true;
                    }
                }
                '#' => {
                    if preceded_by_ws {
                        block_ind = true;
                    }
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

/// Parses YAML the way sigs.k8s.io/yaml.Unmarshal does for Helm (numbers become float64).
pub fn from_yaml(text: &str) -> Result<Value, String> {
    let opts = serde_saphyr::options! { legacy_octal_numbers: true };
    let docs: Vec<serde_json::Value> = serde_saphyr::from_multiple_with_options(text, opts)
        .map_err(|e| format!("error converting YAML to JSON: yaml: {e}"))?;
    let first = docs.into_iter().next().unwrap_or(serde_json::Value::Null);
    Ok(Value::from_json_float(first))
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
