//! go-yaml v2's encoder, byte for byte, as both Helm's `toYaml` and `kustomize build` reach it
//! through `sigs.k8s.io/yaml`: the value is turned into JSON, re-read by go-yaml v2 (numbers
//! become ints or floats, see [`number_text`]; strings are folded as [`crate::json_reread`]
//! says) and marshalled again. The output follows go-yaml v2's emitter (libyaml's): keys sorted
//! with its "natural" order, 2-space indentation, sequences not indented under their key,
//! strings quoted only when they would otherwise read back as something else, long plain and
//! quoted strings folded at 80 columns, multi-line or long keys written as `? key`.
//!
//! The emitter works on [`Node`]s, so each caller decides how its numbers print (Helm's
//! template values hold float64s, kustomize's resources JSON numbers). Both tools build with
//! go-yaml v2.4.0, so quoting, folding and document ends are the same for both.

use crate::gofmt::json_float;
use serde_json::{Number, Value};
use std::borrow::Cow;
use std::cmp::Ordering;

/// A value to emit: what go-yaml's encoder sees after the JSON round trip.
#[derive(Debug, Clone, PartialEq)]
pub enum Node<'a> {
    /// `null`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// A number, already in the text go-yaml prints (written plain).
    Number(Cow<'a, str>),
    /// A string (quoted, folded or written as a block as go-yaml chooses).
    Str(&'a str),
    /// A sequence.
    Seq(Vec<Node<'a>>),
    /// A mapping; the emitter writes it in go-yaml's key order, whatever the order here.
    Map(Vec<(&'a str, Node<'a>)>),
}

impl<'a> Node<'a> {
    /// A JSON value as go-yaml sees it after the JSON round trip ([`number_text`] for numbers).
    pub fn from_json(v: &'a Value) -> Node<'a> {
        match v {
            Value::Null => Node::Null,
            Value::Bool(b) => Node::Bool(*b),
            Value::Number(n) => Node::Number(Cow::Owned(number_text(n))),
            Value::String(s) => Node::Str(s),
            Value::Array(a) => Node::Seq(a.iter().map(Node::from_json).collect()),
            Value::Object(m) => Node::Map(
                m.iter()
                    .map(|(k, v)| (k.as_str(), Node::from_json(v)))
                    .collect(),
            ),
        }
    }
}

/// Serialises one document the way go-yaml v2 `Marshal` would.
pub fn emit(node: &Node<'_>) -> String {
    let mut e = Emitter::new();
    e.emit_root(node);
    e.finish();
    e.out
}

/// Serialises one JSON document the way `sigs.k8s.io/yaml.JSONToYAML` would (without the
/// string folding of [`crate::json_reread`], which callers apply to the value first).
pub fn to_yaml(value: &Value) -> String {
    emit(&Node::from_json(value))
}

const BEST_WIDTH: i64 = 80;
const BEST_INDENT: i64 = 2;

/// go-yaml v2's map key order: letters compare as runes, runs of digits compare numerically,
/// and a non-letter sorts before a letter.
pub fn go_key_cmp(a: &str, b: &str) -> Ordering {
    if a == b {
        return Ordering::Equal;
    }
    if go_key_less(a, b) {
        Ordering::Less
    } else {
        Ordering::Greater
    }
}

fn go_key_less(a: &str, b: &str) -> bool {
    if a.is_ascii() && b.is_ascii() {
        // No allocation for the common case: ASCII bytes are runes.
        return key_less_runes(a.as_bytes(), b.as_bytes(), char::from);
    }
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    key_less_runes(&ar, &br, |c| c)
}

/// [`go_key_less`] over two rune sequences (`ch` reads one element as a rune).
fn key_less_runes<T: Copy + PartialEq>(ar: &[T], br: &[T], ch: impl Fn(T) -> char) -> bool {
    let n = ar.len().min(br.len());
    for i in 0..n {
        if ar[i] == br[i] {
            continue;
        }
        let (ac, bc) = (ch(ar[i]), ch(br[i]));
        let al = ac.is_alphabetic();
        let bl = bc.is_alphabetic();
        if al && bl {
            return ac < bc;
        }
        if al || bl {
            return bl;
        }
        let mut an: i64 = 0;
        let mut bn: i64 = 0;
        if ac == '0' || bc == '0' {
            let mut j = i;
            while j > 0 && ch(ar[j - 1]).is_ascii_digit() {
                if ch(ar[j - 1]) != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
                j -= 1;
            }
        }
        let mut ai = i;
        while ai < ar.len() && ch(ar[ai]).is_ascii_digit() {
            an = an
                .wrapping_mul(10)
                .wrapping_add(i64::from(ch(ar[ai]) as u32) - i64::from('0' as u32));
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && ch(br[bi]).is_ascii_digit() {
            bn = bn
                .wrapping_mul(10)
                .wrapping_add(i64::from(ch(br[bi]) as u32) - i64::from('0' as u32));
            bi += 1;
        }
        if an != bn {
            return an < bn;
        }
        if ai != bi {
            return ai < bi;
        }
        return ac < bc;
    }
    ar.len() < br.len()
}

/// go-yaml v2's text for a float: `strconv.FormatFloat(f, 'g', -1, 64)` with YAML's spellings
/// of the non-finite values.
fn yaml_float_text(f: f64) -> String {
    match crate::gofmt::format_float(f, 'g', -1, 64).as_str() {
        "+Inf" => ".inf".into(),
        "-Inf" => "-.inf".into(),
        "NaN" => ".nan".into(),
        s => s.to_string(),
    }
}

/// The text go-yaml v2 prints for a JSON number after the JSON → YAML round trip.
pub fn number_text(n: &Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    let f = n.as_f64().unwrap_or(0.0);
    let Some(json) = json_float(f) else {
        return yaml_float_text(f);
    };
    // go-yaml v2 re-reads the JSON text: integers become ints.
    if let Ok(i) = json.parse::<i64>() {
        return i.to_string();
    }
    if let Ok(u) = json.parse::<u64>() {
        return u.to_string();
    }
    yaml_float_text(json.parse::<f64>().unwrap_or(f))
}

/// Whether go-yaml v2 would read `s`, written plain, as something other than a string
/// (bool, null, int, float, timestamp, merge key) — such strings must be quoted.
pub fn v2_resolves_non_string(s: &str) -> bool {
    if s.is_empty() {
        return true; // null
    }
    match s {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" | "n"
        | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" | "~"
        | "null" | "Null" | "NULL" | ".nan" | ".NaN" | ".NAN" | ".inf" | ".Inf" | ".INF"
        | "+.inf" | "+.Inf" | "+.INF" | "-.inf" | "-.Inf" | "-.INF" | "<<" => return true,
        _ => {}
    }
    let first = s.as_bytes()[0];
    match first {
        b'.' => go_parse_float(s).is_some(),
        b'0'..=b'9' | b'+' | b'-' => {
            if is_go_timestamp(s) {
                return true;
            }
            let plain: String = s.chars().filter(|c| *c != '_').collect();
            if go_parse_int(&plain).is_some() {
                return true;
            }
            if is_yaml_style_float(&plain) && go_parse_float(&plain).is_some() {
                return true;
            }
            // `ParseInt(rest, 2, 64)` / `ParseUint`: a binary number that overflows is a string.
            if let Some(rest) = plain.strip_prefix("0b") {
                return binary_magnitude_bits(rest).is_some_and(|(bits, _)| bits <= 64);
            }
            if let Some(rest) = plain.strip_prefix("-0b") {
                return binary_magnitude_bits(rest).is_some_and(|(bits, power_of_two)| {
                    bits <= 63 || (bits == 64 && power_of_two)
                });
            }
            false
        }
        _ => false,
    }
}

/// The bit length of a binary digit string (leading zeros aside) and whether it is a power of
/// two; `None` when it is empty or holds another character.
fn binary_magnitude_bits(digits: &str) -> Option<(usize, bool)> {
    if digits.is_empty() || !digits.bytes().all(|b| b == b'0' || b == b'1') {
        return None;
    }
    let significant = digits.trim_start_matches('0');
    Some((
        significant.len(),
        significant.len() == 1 + significant[1.min(significant.len())..].matches('0').count(),
    ))
}

/// Go's `underscoreOK`: underscores only between digits (or after a base prefix).
fn underscore_ok(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'-' | b'+')));
    let mut saw = b'^';
    let mut hex = false;
    if b.len() >= i + 2
        && b[i] == b'0'
        && matches!(b[i + 1].to_ascii_lowercase(), b'b' | b'o' | b'x')
    {
        hex = b[i + 1].eq_ignore_ascii_case(&b'x');
        i += 2;
        saw = b'0';
    }
    for &c in &b[i..] {
        if c.is_ascii_digit() || (hex && c.is_ascii_hexdigit()) {
            saw = b'0';
        } else if c == b'_' {
            if saw != b'0' {
                return false;
            }
            saw = b'_';
        } else if saw == b'_' {
            return false;
        } else {
            saw = b'!';
        }
    }
    saw != b'_'
}

/// Go `strconv.ParseInt(s, 0, 64)` / `ParseUint` acceptance (after `_` removal).
fn go_parse_int(s: &str) -> Option<()> {
    let body = s
        .strip_prefix('+')
        .or_else(|| s.strip_prefix('-'))
        .unwrap_or(s);
    if body.is_empty() {
        return None;
    }
    let (digits, radix) =
        if let Some(r) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
            (r, 16)
        } else if let Some(r) = body.strip_prefix("0o").or_else(|| body.strip_prefix("0O")) {
            (r, 8)
        } else if let Some(r) = body.strip_prefix("0b").or_else(|| body.strip_prefix("0B")) {
            (r, 2)
        } else if body.len() > 1 && body.starts_with('0') {
            (&body[1..], 8)
        } else {
            (body, 10)
        };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    // Range: ParseInt fails beyond int64, then ParseUint (no sign) up to uint64.
    let neg = s.starts_with('-');
    match u128::from_str_radix(digits, radix) {
        Ok(v) if neg && v <= (i64::MAX as u128) + 1 => Some(()),
        Ok(v) if !neg && v <= u64::MAX as u128 => Some(()),
        _ => None,
    }
}

/// Go `strconv.ParseFloat(s, 64)` acceptance (decimal, hex floats, inf/nan words).
pub(crate) fn go_parse_float(s: &str) -> Option<f64> {
    if s.contains('_') {
        // Go accepts underscores between digits and ignores them.
        return if underscore_ok(s) {
            go_parse_float(&s.replace('_', ""))
        } else {
            None
        };
    }
    let body = s
        .strip_prefix('+')
        .or_else(|| s.strip_prefix('-'))
        .unwrap_or(s);
    let lower = body.to_ascii_lowercase();
    if lower == "inf" || lower == "infinity" || lower == "nan" {
        return Some(0.0);
    }
    if lower.starts_with("0x") {
        // Hex float: requires a 'p' exponent.
        return if lower.contains('p') { Some(0.0) } else { None };
    }
    if !body
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
    {
        return None;
    }
    // Rust accepts the same decimal grammar except it also takes "inf"/"nan" (handled).
    // Out-of-range values fail in Go too (ParseFloat returns an error go-yaml rejects).
    s.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`
fn is_yaml_style_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'-' || b[i] == b'+') {
        i += 1;
    }
    let digits = |i: &mut usize| {
        let st = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - st
    };
    if i < b.len() && b[i] == b'.' {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if i < b.len() && b[i] == b'.' {
            i += 1;
            digits(&mut i);
        }
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'-' || b[i] == b'+') {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// go-yaml's timestamp forms: `YYYY-M-D`, optionally followed by `T`/`t`/space and
/// `h:m:s[.frac]` and (for T/t) a `Z` or `±hh:mm` zone.
pub fn is_go_timestamp(s: &str) -> bool {
    parse_go_timestamp(s).is_some()
}

/// Parsed timestamp fields, used to re-print it as RFC 3339 like Go's `time.Time` JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct GoTimestamp {
    year: i64,
    month: i64,
    day: i64,
    hour: i64,
    min: i64,
    sec: i64,
    frac: String,
    zone: Option<String>,
}

impl GoTimestamp {
    /// RFC 3339 with nanoseconds trimmed, as Go's `time.Time.MarshalJSON` writes it.
    pub fn rfc3339(&self) -> String {
        let frac = self.frac.trim_end_matches('0');
        let frac = if frac.is_empty() {
            String::new()
        } else {
            format!(".{frac}")
        };
        let zone = match &self.zone {
            None => "Z".to_string(),
            Some(z) if z == "Z" || z == "+00:00" || z == "-00:00" => "Z".to_string(),
            Some(z) => z.clone(),
        };
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}{}{}",
            self.year, self.month, self.day, self.hour, self.min, self.sec, frac, zone
        )
    }
}

/// Parses the timestamp forms go-yaml accepts (see [`is_go_timestamp`]).
pub fn parse_go_timestamp(s: &str) -> Option<GoTimestamp> {
    let b = s.as_bytes();
    if b.len() < 5 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return None;
    }
    let year: i64 = s[..4].parse().ok()?;
    let mut i = 5;
    let num = |i: &mut usize, max: usize| -> Option<i64> {
        let st = *i;
        while *i < b.len() && b[*i].is_ascii_digit() && *i - st < max {
            *i += 1;
        }
        if *i == st {
            return None;
        }
        s[st..*i].parse().ok()
    };
    let month = num(&mut i, 2)?;
    if i >= b.len() || b[i] != b'-' {
        return None;
    }
    i += 1;
    let day = num(&mut i, 2)?;
    if !(1..=12).contains(&month) || day < 1 || day > days_in(month, year) {
        return None;
    }
    let mut ts = GoTimestamp {
        year,
        month,
        day,
        hour: 0,
        min: 0,
        sec: 0,
        frac: String::new(),
        zone: None,
    };
    if i == b.len() {
        return Some(ts);
    }
    let sep = b[i];
    if sep != b'T' && sep != b't' && sep != b' ' {
        return None;
    }
    i += 1;
    ts.hour = num(&mut i, 2)?;
    if i >= b.len() || b[i] != b':' {
        return None;
    }
    i += 1;
    ts.min = num(&mut i, 2)?;
    if i >= b.len() || b[i] != b':' {
        return None;
    }
    i += 1;
    ts.sec = num(&mut i, 2)?;
    if ts.hour > 23 || ts.min > 59 || ts.sec > 59 {
        return None;
    }
    if i < b.len() && b[i] == b'.' {
        let st = i + 1;
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == st || i - st > 9 {
            return None;
        }
        ts.frac = s[st..i].to_string();
    }
    if sep == b' ' {
        return (i == b.len()).then_some(ts);
    }
    // T form requires a zone.
    if i < b.len() && b[i] == b'Z' && i + 1 == b.len() {
        ts.zone = Some("Z".into());
        return Some(ts);
    }
    if i + 6 == b.len()
        && (b[i] == b'+' || b[i] == b'-')
        && b[i + 1].is_ascii_digit()
        && b[i + 2].is_ascii_digit()
        && b[i + 3] == b':'
        && b[i + 4].is_ascii_digit()
        && b[i + 5].is_ascii_digit()
    {
        ts.zone = Some(s[i..].to_string());
        return Some(ts);
    }
    None
}

fn days_in(month: i64, year: i64) -> i64 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ => {
            if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 {
                29
            } else {
                28
            }
        }
    }
}

fn is_base60_float(s: &str) -> bool {
    // ^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$
    let b = s.as_bytes();
    if b.is_empty() || !s.contains(':') {
        return false;
    }
    let mut i = 0;
    if b[0] == b'+' || b[0] == b'-' {
        i = 1;
    }
    if i >= b.len() || !b[i].is_ascii_digit() {
        return false;
    }
    i += 1;
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
        i += 1;
    }
    let mut groups = 0;
    while i < b.len() && b[i] == b':' {
        i += 1;
        // [0-5]?[0-9]
        let st = i;
        while i < b.len() && b[i].is_ascii_digit() && i - st < 2 {
            i += 1;
        }
        match i - st {
            1 => {}
            2 if b[st] <= b'5' => {}
            2 => {
                // "[0-5]?" failed: only one digit matched, the next must not be a digit.
                i = st + 1;
                if i < b.len() && b[i].is_ascii_digit() {
                    return false;
                }
            }
            _ => return false,
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

#[derive(Clone, Copy, PartialEq, Debug)]
enum Style {
    Plain,
    Single,
    Double,
    Literal,
}

struct Analysis {
    multiline: bool,
    flow_plain_allowed: bool,
    block_plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

fn at(b: &[u8], i: usize) -> u8 {
    b.get(i).copied().unwrap_or(0)
}

fn width(c: u8) -> usize {
    if c & 0x80 == 0 {
        1
    } else if c & 0xE0 == 0xC0 {
        2
    } else if c & 0xF0 == 0xE0 {
        3
    } else if c & 0xF8 == 0xF0 {
        4
    } else {
        1
    }
}

fn is_printable(b: &[u8], i: usize) -> bool {
    let c = at(b, i);
    let c1 = at(b, i + 1);
    let c2 = at(b, i + 2);
    c == 0x0A
        || (0x20..=0x7E).contains(&c)
        || (c == 0xC2 && c1 >= 0xA0)
        || (c > 0xC2 && c < 0xED)
        || (c == 0xED && c1 < 0xA0)
        || c == 0xEE
        || (c == 0xEF && !(c1 == 0xBB && c2 == 0xBF) && !(c1 == 0xBF && (c2 == 0xBE || c2 == 0xBF)))
}

fn is_space(b: &[u8], i: usize) -> bool {
    at(b, i) == b' '
}

fn is_blank(b: &[u8], i: usize) -> bool {
    matches!(at(b, i), b' ' | b'\t')
}

fn is_break(b: &[u8], i: usize) -> bool {
    let c = at(b, i);
    c == b'\r'
        || c == b'\n'
        || (c == 0xC2 && at(b, i + 1) == 0x85)
        || (c == 0xE2 && at(b, i + 1) == 0x80 && matches!(at(b, i + 2), 0xA8 | 0xA9))
}

fn is_blankz(b: &[u8], i: usize) -> bool {
    is_blank(b, i) || is_break(b, i) || at(b, i) == 0
}

/// go-yaml's `is_bom` looks at the start of the value, not at `i` (an upstream quirk that
/// makes every character of a BOM-prefixed string escaped).
fn starts_with_bom(b: &[u8]) -> bool {
    b.len() >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF
}

/// Whether `value` is a word every style allows as it stands: a letter or digit, then only
/// letters, digits and `-._/` (most keys and values of a manifest). For these [`analyze`]'s scan
/// would find no indicator, space, break or unprintable character.
fn is_plain_word(value: &[u8]) -> bool {
    value.first().is_some_and(u8::is_ascii_alphanumeric)
        && value
            .iter()
            .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'/'))
}

fn analyze(value: &[u8]) -> Analysis {
    if is_plain_word(value) {
        return Analysis {
            multiline: false,
            flow_plain_allowed: true,
            block_plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: true,
        };
    }
    analyze_scan(value)
}

fn analyze_scan(value: &[u8]) -> Analysis {
    if value.is_empty() {
        return Analysis {
            multiline: false,
            flow_plain_allowed: false,
            block_plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: false,
        };
    }
    let mut block_indicators = false;
    let mut flow_indicators = false;
    let mut line_breaks = false;
    let mut special = false;
    let mut leading_space = false;
    let mut leading_break = false;
    let mut trailing_space = false;
    let mut trailing_break = false;
    let mut break_space = false;
    let mut space_break = false;
    let mut previous_space = false;
    let mut previous_break = false;

    if value.len() >= 3 && (value.starts_with(b"---") || value.starts_with(b"...")) {
        block_indicators = true;
        flow_indicators = true;
    }
    let mut preceded_by_ws = true;
    let mut i = 0;
    while i < value.len() {
        let w = width(value[i]);
        let followed_by_ws = i + w >= value.len() || is_blank(value, i + w);
        let c = value[i];
        if i == 0 {
            match c {
                b'#' | b',' | b'[' | b']' | b'{' | b'}' | b'&' | b'*' | b'!' | b'|' | b'>'
                | b'\'' | b'"' | b'%' | b'@' | b'`' => {
                    flow_indicators = true;
                    block_indicators = true;
                }
                b'?' | b':' => {
                    flow_indicators = true;
                    if followed_by_ws {
                        block_indicators = true;
                    }
                }
                b'-' if followed_by_ws => {
                    flow_indicators = true;
                    block_indicators = true;
                }
                _ => {}
            }
        } else {
            match c {
                b',' | b'?' | b'[' | b']' | b'{' | b'}' => flow_indicators = true,
                b':' => {
                    flow_indicators = true;
                    if followed_by_ws {
                        block_indicators = true;
                    }
                }
                b'#' if preceded_by_ws => {
                    flow_indicators = true;
                    block_indicators = true;
                }
                _ => {}
            }
        }
        if !is_printable(value, i) {
            special = true;
        }
        if is_space(value, i) {
            if i == 0 {
                leading_space = true;
            }
            if i + w == value.len() {
                trailing_space = true;
            }
            if previous_break {
                break_space = true;
            }
            previous_space = true;
            previous_break = false;
        } else if is_break(value, i) {
            line_breaks = true;
            if i == 0 {
                leading_break = true;
            }
            if i + w == value.len() {
                trailing_break = true;
            }
            if previous_space {
                space_break = true;
            }
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_ws = is_blankz(value, i);
        i += w;
    }
    let mut a = Analysis {
        multiline: line_breaks,
        flow_plain_allowed: true,
        block_plain_allowed: true,
        single_quoted_allowed: true,
        block_allowed: true,
    };
    if leading_space || leading_break || trailing_space || trailing_break {
        a.flow_plain_allowed = false;
        a.block_plain_allowed = false;
    }
    if trailing_space {
        a.block_allowed = false;
    }
    if break_space {
        a.flow_plain_allowed = false;
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
    }
    if space_break || special {
        a.flow_plain_allowed = false;
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
        a.block_allowed = false;
    }
    if line_breaks {
        a.flow_plain_allowed = false;
        a.block_plain_allowed = false;
    }
    if flow_indicators {
        a.flow_plain_allowed = false;
    }
    if block_indicators {
        a.block_plain_allowed = false;
    }
    a
}

struct Emitter {
    out: String,
    column: i64,
    indent: i64,
    indents: Vec<i64>,
    whitespace: bool,
    indention: bool,
    open_ended: bool,
    flow_level: i64,
    // Context of the node being emitted.
    root_context: bool,
    mapping_context: bool,
    simple_key_context: bool,
}

impl Emitter {
    fn new() -> Self {
        Emitter {
            out: String::new(),
            column: 0,
            indent: -1,
            indents: Vec::new(),
            whitespace: true,
            indention: true,
            open_ended: false,
            flow_level: 0,
            root_context: false,
            mapping_context: false,
            simple_key_context: false,
        }
    }

    fn put(&mut self, c: char) {
        self.out.push(c);
        self.column += 1;
    }

    fn put_break(&mut self) {
        self.out.push('\n');
        self.column = 0;
    }

    /// Copies one UTF-8 character of `s` at `*i` (counts as one column).
    fn write(&mut self, s: &[u8], i: &mut usize) {
        if s[*i].is_ascii() {
            self.out.push(char::from(s[*i]));
            self.column += 1;
            *i += 1;
            return;
        }
        let w = width(s[*i]).min(s.len() - *i);
        // Input is valid UTF-8 and `i` is always on a char boundary.
        self.out
            .push_str(std::str::from_utf8(&s[*i..*i + w]).unwrap_or("\u{FFFD}"));
        self.column += 1;
        *i += w;
    }

    fn write_all(&mut self, s: &str) {
        if s.is_ascii() {
            self.out.push_str(s);
            self.column += s.len() as i64;
            return;
        }
        let b = s.as_bytes();
        let mut i = 0;
        while i < b.len() {
            self.write(b, &mut i);
        }
    }

    fn write_break(&mut self, s: &[u8], i: &mut usize) {
        if s[*i] == b'\n' {
            self.put_break();
            *i += 1;
        } else {
            self.write(s, i);
            self.column = 0;
        }
    }

    fn increase_indent(&mut self, flow: bool, indentless: bool) {
        self.indents.push(self.indent);
        if self.indent < 0 {
            self.indent = if flow { BEST_INDENT } else { 0 };
        } else if !indentless {
            self.indent += BEST_INDENT;
        }
    }

    fn pop_indent(&mut self) {
        self.indent = self.indents.pop().unwrap_or(-1);
    }

    fn write_indent(&mut self) {
        let indent = self.indent.max(0);
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(' ');
        }
        self.whitespace = true;
        self.indention = true;
    }

    fn write_indicator(&mut self, ind: &str, need_ws: bool, is_ws: bool, is_indention: bool) {
        if need_ws && !self.whitespace {
            self.put(' ');
        }
        self.write_all(ind);
        self.whitespace = is_ws;
        self.indention = self.indention && is_indention;
        self.open_ended = false;
    }

    fn emit_root(&mut self, v: &Node<'_>) {
        self.emit_node(v, true, false, false, false);
        // Document end (implicit).
        self.write_indent();
    }

    fn finish(&mut self) {
        if self.open_ended {
            self.write_indicator("...", true, false, false);
            self.write_indent();
        }
    }

    fn emit_node(&mut self, v: &Node<'_>, root: bool, _seq: bool, mapping: bool, simple_key: bool) {
        self.root_context = root;
        self.mapping_context = mapping;
        self.simple_key_context = simple_key;
        match v {
            Node::Null => self.emit_scalar("null", Style::Plain),
            Node::Bool(b) => self.emit_scalar(if *b { "true" } else { "false" }, Style::Plain),
            Node::Number(t) => self.emit_scalar(t, Style::Plain),
            Node::Str(s) => {
                let style = if s.contains('\n') {
                    Style::Literal
                } else if !v2_resolves_non_string(s) && !is_base60_float(s) {
                    Style::Plain
                } else {
                    Style::Double
                };
                self.emit_scalar(s, style)
            }
            Node::Seq(items) => self.emit_sequence(items),
            Node::Map(entries) => self.emit_mapping(entries),
        }
    }

    fn emit_scalar(&mut self, value: &str, requested: Style) {
        let b = value.as_bytes();
        let a = analyze(b);
        let mut style = requested;
        if self.simple_key_context && a.multiline {
            style = Style::Double;
        }
        if style == Style::Plain {
            if (self.flow_level > 0 && !a.flow_plain_allowed)
                || (self.flow_level == 0 && !a.block_plain_allowed)
            {
                style = Style::Single;
            }
            if b.is_empty() && (self.flow_level > 0 || self.simple_key_context) {
                style = Style::Single;
            }
        }
        if style == Style::Single && !a.single_quoted_allowed {
            style = Style::Double;
        }
        if style == Style::Literal
            && (!a.block_allowed || self.flow_level > 0 || self.simple_key_context)
        {
            style = Style::Double;
        }
        self.increase_indent(true, false);
        let allow_breaks = !self.simple_key_context;
        match style {
            Style::Plain => self.write_plain(b, allow_breaks),
            Style::Single => self.write_single(b, allow_breaks),
            Style::Double => self.write_double(b, allow_breaks),
            Style::Literal => self.write_literal(b),
        }
        self.pop_indent();
    }

    fn is_simple_key(&self, key: &str) -> bool {
        !analyze(key.as_bytes()).multiline && key.len() <= 128
    }

    fn emit_mapping(&mut self, map: &[(&str, Node<'_>)]) {
        let mut entries: Vec<&(&str, Node<'_>)> = map.iter().collect();
        entries.sort_by(|a, b| go_key_cmp(a.0, b.0));
        if self.flow_level > 0 || map.is_empty() {
            // Flow mapping (we only produce empty ones: `{}`).
            self.write_indicator("{", true, true, false);
            self.increase_indent(true, false);
            self.flow_level += 1;
            for (idx, (k, v)) in entries.into_iter().enumerate() {
                if idx > 0 {
                    self.write_indicator(",", false, false, false);
                }
                if self.column > BEST_WIDTH {
                    self.write_indent();
                }
                let simple = self.is_simple_key(k);
                if !simple {
                    self.write_indicator("?", true, false, false);
                }
                self.emit_node(&Node::Str(k), false, false, true, simple);
                if simple {
                    self.write_indicator(":", false, false, false);
                } else {
                    if self.column > BEST_WIDTH {
                        self.write_indent();
                    }
                    self.write_indicator(":", true, false, false);
                }
                self.emit_node(v, false, false, true, false);
            }
            self.flow_level -= 1;
            self.pop_indent();
            self.write_indicator("}", false, false, false);
            return;
        }
        self.increase_indent(false, false);
        for (k, v) in entries {
            self.write_indent();
            let simple = self.is_simple_key(k);
            if !simple {
                self.write_indicator("?", true, false, true);
            }
            self.emit_node(&Node::Str(k), false, false, true, simple);
            if simple {
                self.write_indicator(":", false, false, false);
            } else {
                self.write_indent();
                self.write_indicator(":", true, false, true);
            }
            self.emit_node(v, false, false, true, false);
        }
        self.pop_indent();
    }

    fn emit_sequence(&mut self, items: &[Node<'_>]) {
        if self.flow_level > 0 || items.is_empty() {
            self.write_indicator("[", true, true, false);
            self.increase_indent(true, false);
            self.flow_level += 1;
            for (idx, it) in items.iter().enumerate() {
                if idx > 0 {
                    self.write_indicator(",", false, false, false);
                }
                if self.column > BEST_WIDTH {
                    self.write_indent();
                }
                self.emit_node(it, false, true, false, false);
            }
            self.flow_level -= 1;
            self.pop_indent();
            self.write_indicator("]", false, false, false);
            return;
        }
        let indentless = self.mapping_context && !self.indention;
        self.increase_indent(false, indentless);
        for it in items {
            self.write_indent();
            self.write_indicator("-", true, false, true);
            self.emit_node(it, false, true, false, false);
        }
        self.pop_indent();
    }

    fn write_plain(&mut self, v: &[u8], allow_breaks: bool) {
        if !self.whitespace {
            self.put(' ');
        }
        // Without a space or a line break `write_plain_scan` copies the text as it is
        // (ASCII: valid UTF-8, one column per byte).
        if v.is_ascii() && !v.iter().any(|&c| matches!(c, b' ' | b'\r' | b'\n')) {
            self.out
                .push_str(std::str::from_utf8(v).unwrap_or_default());
            self.column += v.len() as i64;
            self.whitespace = false;
            self.indention = false;
            return;
        }
        self.write_plain_scan(v, allow_breaks);
    }

    fn write_plain_scan(&mut self, v: &[u8], allow_breaks: bool) {
        let mut spaces = false;
        let mut breaks = false;
        let mut i = 0;
        while i < v.len() {
            if is_space(v, i) {
                if allow_breaks && !spaces && self.column > BEST_WIDTH && !is_space(v, i + 1) {
                    self.write_indent();
                    i += 1;
                } else {
                    self.write(v, &mut i);
                }
                spaces = true;
            } else if is_break(v, i) {
                if !breaks && v[i] == b'\n' {
                    self.put_break();
                }
                self.write_break(v, &mut i);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.write(v, &mut i);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.whitespace = false;
        self.indention = false;
        // go-yaml v2.3.0 marked a root plain scalar open-ended (a `...` line followed it);
        // v2.4.0, which Helm 3.6.2 and kustomize 4.5.4 build with, does not.
    }

    fn write_single(&mut self, v: &[u8], allow_breaks: bool) {
        self.write_indicator("'", true, false, false);
        let mut spaces = false;
        let mut breaks = false;
        let mut i = 0;
        while i < v.len() {
            if is_space(v, i) {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && i > 0
                    && i < v.len() - 1
                    && !is_space(v, i + 1)
                {
                    self.write_indent();
                    i += 1;
                } else {
                    self.write(v, &mut i);
                }
                spaces = true;
            } else if is_break(v, i) {
                if !breaks && v[i] == b'\n' {
                    self.put_break();
                }
                self.write_break(v, &mut i);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                if v[i] == b'\'' {
                    self.put('\'');
                }
                self.write(v, &mut i);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.write_indicator("'", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_double(&mut self, v: &[u8], allow_breaks: bool) {
        let mut spaces = false;
        self.write_indicator("\"", true, false, false);
        let bom = starts_with_bom(v);
        let mut i = 0;
        while i < v.len() {
            let c = v[i];
            if !is_printable(v, i) || bom || is_break(v, i) || c == b'"' || c == b'\\' {
                let w = width(c).min(v.len() - i);
                let mut r: u32 = match w {
                    1 => u32::from(c & 0x7F),
                    2 => u32::from(c & 0x1F),
                    3 => u32::from(c & 0x0F),
                    _ => u32::from(c & 0x07),
                };
                for k in 1..w {
                    r = (r << 6) + (u32::from(v[i + k]) & 0x3F);
                }
                i += w;
                self.put('\\');
                match r {
                    0x00 => self.put('0'),
                    0x07 => self.put('a'),
                    0x08 => self.put('b'),
                    0x09 => self.put('t'),
                    0x0A => self.put('n'),
                    0x0B => self.put('v'),
                    0x0C => self.put('f'),
                    0x0D => self.put('r'),
                    0x1B => self.put('e'),
                    0x22 => self.put('"'),
                    0x5C => self.put('\\'),
                    0x85 => self.put('N'),
                    0xA0 => self.put('_'),
                    0x2028 => self.put('L'),
                    0x2029 => self.put('P'),
                    _ => {
                        let (ch, n) = if r <= 0xFF {
                            ('x', 2)
                        } else if r <= 0xFFFF {
                            ('u', 4)
                        } else {
                            ('U', 8)
                        };
                        self.put(ch);
                        for k in (0..n).rev() {
                            let d = (r >> (k * 4)) & 0xF;
                            let dc = char::from_digit(d, 16).unwrap_or('0').to_ascii_uppercase();
                            self.put(dc);
                        }
                    }
                }
                spaces = false;
            } else if is_space(v, i) {
                if allow_breaks && !spaces && self.column > BEST_WIDTH && i > 0 && i < v.len() - 1 {
                    self.write_indent();
                    if is_space(v, i + 1) {
                        self.put('\\');
                    }
                    i += 1;
                } else {
                    self.write(v, &mut i);
                }
                spaces = true;
            } else {
                self.write(v, &mut i);
                spaces = false;
            }
        }
        self.write_indicator("\"", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_literal(&mut self, v: &[u8]) {
        self.write_indicator("|", true, false, false);
        // Block scalar hints.
        if is_space(v, 0) || is_break(v, 0) {
            self.write_indicator(&BEST_INDENT.to_string(), false, false, false);
        }
        self.open_ended = false;
        let mut chomp: Option<&str> = None;
        if v.is_empty() {
            chomp = Some("-");
        } else {
            let mut i = v.len() - 1;
            while i > 0 && v[i] & 0xC0 == 0x80 {
                i -= 1;
            }
            if !is_break(v, i) {
                chomp = Some("-");
            } else if i == 0 {
                chomp = Some("+");
                self.open_ended = true;
            } else {
                i -= 1;
                while i > 0 && v[i] & 0xC0 == 0x80 {
                    i -= 1;
                }
                if is_break(v, i) {
                    chomp = Some("+");
                    self.open_ended = true;
                }
            }
        }
        if let Some(c) = chomp {
            // go-yaml sets open_ended for `+` and then clears it again by writing the
            // indicator, so no `...` ever follows; mirror that.
            self.write_indicator(c, false, false, false);
        }
        self.put_break();
        self.indention = true;
        self.whitespace = true;
        let mut breaks = true;
        let mut i = 0;
        while i < v.len() {
            if is_break(v, i) {
                self.write_break(v, &mut i);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.write(v, &mut i);
                self.indention = false;
                breaks = false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sorts_keys_naturally() {
        let mut k = vec!["b", "a10", "a9", "A", "_x", "a:b", "amp", "123"];
        k.sort_by(|a, b| go_key_cmp(a, b));
        assert_eq!(k, vec!["_x", "123", "A", "a:b", "a9", "a10", "amp", "b"]);
    }

    #[test]
    fn basic_document() {
        let v = json!({"kind": "ConfigMap", "apiVersion": "v1", "data": {"a": "1", "b": "yes", "c": "x y"},
            "list": [{"name": "nm", "v": [1, 2]}, []], "e": {}});
        assert_eq!(
            to_yaml(&v),
            "apiVersion: v1\ndata:\n  a: \"1\"\n  b: \"yes\"\n  c: x y\ne: {}\nkind: ConfigMap\nlist:\n- name: nm\n  v:\n  - 1\n  - 2\n- []\n"
        );
    }

    #[test]
    fn strings_quote_like_go_yaml() {
        let cases = [
            ("&amp", "'&amp'"),
            ("a: b", "'a: b'"),
            ("a,b", "a,b"),
            ("2001-12-14", "\"2001-12-14\""),
            (".5", "\".5\""),
            ("1e3", "\"1e3\""),
            ("0777", "\"0777\""),
            ("+1", "\"+1\""),
            ("~", "\"~\""),
            ("", "\"\""),
            (" lead", "' lead'"),
            ("a\tb", "\"a\\tb\""),
            ("it's", "it's"),
            ("?q", "?q"),
            ("- dash", "'- dash'"),
            ("1:20", "\"1:20\""),
            ("\u{feff}x", "\"\\uFEFF\\x78\""),
            ("a\u{1}b", "\"a\\x01b\""),
            ("😀", "\"\\U0001F600\""),
        ];
        for (input, want) in cases {
            let got = to_yaml(&json!({ "k": input }));
            assert_eq!(got, format!("k: {want}\n"), "input {input:?}");
        }
    }

    #[test]
    fn literal_blocks() {
        assert_eq!(to_yaml(&json!({"k": "a\nb\n"})), "k: |\n  a\n  b\n");
        assert_eq!(to_yaml(&json!({"k": "a\nb"})), "k: |-\n  a\n  b\n");
        assert_eq!(to_yaml(&json!({"k": "a\n\n"})), "k: |+\n  a\n\n");
        assert_eq!(to_yaml(&json!({"k": "  a\nb\n"})), "k: |2\n    a\n  b\n");
        assert_eq!(to_yaml(&json!({"k": "a  \nb\n"})), "k: \"a  \\nb\\n\"\n");
    }

    #[test]
    fn folds_long_plain_strings() {
        let s = "this is a very long string that goes on and on and on well past eighty characters for sure yes indeed";
        assert_eq!(
            to_yaml(&json!({ "long": s })),
            "long: this is a very long string that goes on and on and on well past eighty characters\n  for sure yes indeed\n"
        );
    }

    #[test]
    fn numbers_follow_json_round_trip() {
        assert_eq!(number_text(&Number::from_f64(1.0).unwrap()), "1");
        assert_eq!(number_text(&Number::from_f64(1.5).unwrap()), "1.5");
        assert_eq!(number_text(&Number::from_f64(1e21).unwrap()), "1e+21");
        assert_eq!(
            number_text(&Number::from_f64(1.2345678901234568e20).unwrap()),
            "1.2345678901234568e+20"
        );
        assert_eq!(number_text(&Number::from_f64(-0.0).unwrap()), "0");
        assert_eq!(
            number_text(&Number::from_f64(1234567.5).unwrap()),
            "1.2345675e+06"
        );
        assert_eq!(number_text(&Number::from_f64(0.0001).unwrap()), "0.0001");
        assert_eq!(number_text(&Number::from_f64(1e-7).unwrap()), "1e-07");
    }

    proptest::proptest! {
        /// The shortcuts for plain words and plain scalars without spaces agree with the
        /// character-by-character scans they skip.
        #[test]
        fn shortcuts_agree_with_scans(
            value in "[a-z0-9][a-z0-9._/:#,?{}'\"-]{0,8}|[a-zA-Z0-9._/: \t\r\n#,?{}\\[\\]'\"-]{0,12}|[a-z0-9]{1,6}[é\u{85}\u{2028}][a-z]{0,3}",
            column in 0i64..100,
            whitespace: bool,
        ) {
            let (fast, scan) = (analyze(value.as_bytes()), analyze_scan(value.as_bytes()));
            proptest::prop_assert_eq!(
                (fast.multiline, fast.flow_plain_allowed, fast.block_plain_allowed,
                 fast.single_quoted_allowed, fast.block_allowed),
                (scan.multiline, scan.flow_plain_allowed, scan.block_plain_allowed,
                 scan.single_quoted_allowed, scan.block_allowed)
            );
            let start = |e: &mut Emitter| {
                e.out.push_str("k:");
                e.column = column;
                e.whitespace = whitespace;
                e.indent = 2;
            };
            let (mut a, mut b) = (Emitter::new(), Emitter::new());
            start(&mut a);
            start(&mut b);
            a.write_plain(value.as_bytes(), true);
            if !b.whitespace {
                b.put(' ');
            }
            b.write_plain_scan(value.as_bytes(), true);
            proptest::prop_assert_eq!(
                (&a.out, a.column, a.whitespace, a.indention),
                (&b.out, b.column, b.whitespace, b.indention)
            );
        }
    }

    #[test]
    fn resolver_matches_go_yaml() {
        for s in [
            "yes", "Off", "0x1F", "1_000", "-0b11", "1.5", "2001-1-2", ".inf", "<<",
        ] {
            assert!(v2_resolves_non_string(s), "{s}");
        }
        for s in ["yess", "0x", "1.2.3", "2001-13-01", "abc", "-", "1e", "0b2"] {
            assert!(!v2_resolves_non_string(s), "{s}");
        }
    }
}
