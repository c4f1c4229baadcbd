//! Sprig v3 functions (github.com/Masterminds/sprig/v3 as vendored by Helm 3), minus env/expandenv.

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine as _;
use sha2::Digest as _;

use super::{Map, Ty, i, reg, s};
use crate::fmt::sprint;
use crate::json;
use crate::lex::go_quote;
use crate::value::Value;

mod crypto;
mod date;
mod semver;

/// Go's fmt.Sprintf("%v") via sprig's strval.
pub(crate) fn strval(v: &Value) -> String {
    match v {
        Value::String(s) => s.to_string(),
        other => other.to_go_string(),
    }
}

/// cast.ToInt64 (errors become 0).
pub(crate) fn to_i64(v: &Value) -> i64 {
    match v {
        Value::Int(i) | Value::Int64(i) => *i,
        Value::Float(f) => {
            if f.is_nan() {
                0
            } else {
                *f as i64
            }
        }
        Value::Bool(b) => i64::from(*b),
        Value::String(s) => parse_go_int(s).unwrap_or(0),
        _ => 0,
    }
}

/// strconv.ParseInt(s, 0, 64).
pub(crate) fn parse_go_int(s: &str) -> Option<i64> {
    let (neg, body) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if body.is_empty() {
        return None;
    }
    let (radix, digits) =
        if let Some(r) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
            (16, r)
        } else if let Some(r) = body.strip_prefix("0b").or_else(|| body.strip_prefix("0B")) {
            (2, r)
        } else if let Some(r) = body.strip_prefix("0o").or_else(|| body.strip_prefix("0O")) {
            (8, r)
        } else if body.len() > 1 && body.starts_with('0') {
            (8, &body[1..])
        } else {
            (10, body)
        };
    if radix != 10 && digits.contains('_') {
        // underscores allowed only with base prefix in Go; accept
    }
    let clean: String = if radix != 10 {
        digits.chars().filter(|&c| c != '_').collect()
    } else {
        digits.to_string()
    };
    if clean.is_empty() {
        return None;
    }
    let u = u64::from_str_radix(&clean, radix).ok()?;
    if neg {
        if u > i64::MAX as u64 + 1 {
            return None;
        }
        Some(-(u as i128) as i64)
    } else {
        i64::try_from(u).ok()
    }
}

/// cast.ToFloat64 (errors become 0).
pub(crate) fn to_f64(v: &Value) -> f64 {
    match v {
        Value::Int(i) | Value::Int64(i) => *i as f64,
        Value::Float(f) => *f,
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::String(s) => s.trim().parse::<f64>().unwrap_or(0.0),
        _ => 0.0,
    }
}

/// sprig's strslice: a list of strings from a list (nils dropped) or a single value.
pub(crate) fn strslice(v: &Value) -> Vec<String> {
    match v {
        Value::List(l) => l
            .iter()
            .filter(|e| !matches!(e, Value::Nil))
            .map(strval)
            .collect(),
        Value::Nil => Vec::new(),
        other => vec![strval(other)],
    }
}

fn strs(v: Vec<String>) -> Value {
    Value::from(v.into_iter().map(Value::from).collect::<Vec<_>>())
}

fn empty(v: &Value) -> bool {
    match v {
        // A struct is never empty; a map-like object (Helm's `files`) is when it has no entries.
        Value::Object(o) => o.entry_count() == Some(0),
        v => !v.truthy(),
    }
}

/// The list inside a value for sprig's list functions, or the Go error they raise.
fn as_list<'a>(v: &'a Value, what: &str) -> Result<&'a [Value], String> {
    match v {
        Value::List(l) => Ok(l),
        Value::Nil => {
            Err("runtime error: invalid memory address or nil pointer dereference".into())
        }
        other => Err(format!("Cannot {what} on type {}", other.kind_name())),
    }
}

fn map_of(v: &Value) -> BTreeMap<String, Value> {
    match v {
        Value::Map(m) => (**m).clone(),
        _ => BTreeMap::new(),
    }
}

fn go_split(s: &str, sep: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if sep.is_empty() {
        let mut v: Vec<String> = s.chars().map(|c| c.to_string()).collect();
        if n > 0 && v.len() > n as usize {
            let rest: String = v[n as usize - 1..].concat();
            v.truncate(n as usize - 1);
            v.push(rest);
        }
        return v;
    }
    if n < 0 {
        s.split(sep).map(|x| x.to_string()).collect()
    } else {
        s.splitn(n as usize, sep).map(|x| x.to_string()).collect()
    }
}

fn indexed_map(parts: Vec<String>) -> Value {
    let m: BTreeMap<String, Value> = parts
        .into_iter()
        .enumerate()
        .map(|(k, p)| (format!("_{k}"), Value::from(p)))
        .collect();
    Value::Map(Arc::new(m))
}

/// strings.Title: upper-case the first letter of each word.
fn title(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut prev_sep = true;
    for c in s.chars() {
        if prev_sep && c.is_alphabetic() {
            out.extend(c.to_uppercase());
        } else {
            out.push(c);
        }
        prev_sep = !(c.is_alphanumeric() || c == '_' || c == '\'');
    }
    out
}

fn untitle(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut prev_sep = true;
    for c in s.chars() {
        if prev_sep && c.is_alphabetic() {
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
        prev_sep = c.is_whitespace();
    }
    out
}

fn regex(re: &str) -> Result<regex::Regex, String> {
    regex::Regex::new(re).map_err(|e| {
        format!(
            "error parsing regexp: {}",
            e.to_string().lines().last().unwrap_or("invalid")
        )
    })
}

fn go_regex_split(re: &regex::Regex, s: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if !re.as_str().is_empty() && s.is_empty() {
        return vec![String::new()];
    }
    let mut out = Vec::new();
    let mut beg = 0;
    let mut end = 0;
    let limit = if n < 0 { usize::MAX } else { n as usize };
    for m in re.find_iter(s).take(limit) {
        if n > 0 && out.len() == n as usize - 1 {
            break;
        }
        end = m.start();
        if m.end() != 0 {
            out.push(s[beg..end].to_string());
        }
        beg = m.end();
    }
    if end != s.len() {
        out.push(s[beg..].to_string());
    }
    out
}

/// xstrings-style word splitting for case conversions.
fn words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let chars: Vec<char> = s.chars().collect();
    for (k, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            continue;
        }
        if c.is_uppercase() && !cur.is_empty() {
            let prev = chars[k - 1];
            let next_lower = chars.get(k + 1).is_some_and(|n| n.is_lowercase());
            if prev.is_lowercase() || prev.is_ascii_digit() || (prev.is_uppercase() && next_lower) {
                out.push(std::mem::take(&mut cur));
            }
        }
        cur.push(c);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn snakecase(s: &str) -> String {
    words(s)
        .iter()
        .map(|w| w.to_lowercase())
        .collect::<Vec<_>>()
        .join("_")
}

fn camelcase(s: &str) -> String {
    // xstrings.ToCamelCase: split on '_' and capitalize each part's first letter.
    let mut out = String::new();
    for part in s.split('_') {
        let mut cs = part.chars();
        if let Some(f) = cs.next() {
            out.extend(f.to_uppercase());
            out.push_str(cs.as_str());
        }
    }
    out
}

fn swapcase(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            if c.is_uppercase() {
                c.to_lowercase().collect::<Vec<_>>()
            } else {
                c.to_uppercase().collect::<Vec<_>>()
            }
        })
        .collect()
}

/// goutils.WrapCustom (what sprig's wrap/wrapWith use).
fn wrap_custom(s: &str, width: i64, nl: &str, wrap_long: bool) -> String {
    let nl = if nl.is_empty() { "\n" } else { nl };
    let width = if width < 1 { 1 } else { width as usize };
    let chars: Vec<char> = s.chars().collect();
    let len = chars.len();
    let mut offset = 0usize;
    let mut out = String::new();
    while len - offset > width {
        if chars[offset] == ' ' {
            offset += 1;
            continue;
        }
        let window: String = chars[offset..=(offset + width).min(len - 1)]
            .iter()
            .collect();
        let space = window
            .char_indices()
            .filter(|(_, c)| *c == ' ')
            .map(|(b, _)| window[..b].chars().count())
            .next_back();
        if let Some(sp) = space {
            let sp = if sp > width { width } else { sp };
            out.extend(&chars[offset..offset + sp]);
            out.push_str(nl);
            offset += sp + 1;
        } else if wrap_long {
            out.extend(&chars[offset..offset + width]);
            out.push_str(nl);
            offset += width;
        } else {
            let rest: String = chars[offset + width..].iter().collect();
            match rest.find(' ') {
                Some(b) => {
                    let sp = offset + width + rest[..b].chars().count();
                    out.extend(&chars[offset..sp]);
                    out.push_str(nl);
                    offset = sp + 1;
                }
                None => {
                    out.extend(&chars[offset..]);
                    offset = len;
                }
            }
        }
    }
    if offset < len {
        out.extend(&chars[offset..]);
    }
    out
}

fn deep_merge(dst: &mut BTreeMap<String, Value>, src: &BTreeMap<String, Value>, overwrite: bool) {
    for (k, sv) in src {
        match dst.get_mut(k) {
            Some(dv) => {
                if let (Value::Map(dm), Value::Map(sm)) = (&mut *dv, sv) {
                    deep_merge(Arc::make_mut(dm), sm, overwrite);
                } else if overwrite {
                    // mergo WithOverride: empty source values do not overwrite
                    if !empty(sv) {
                        *dv = sv.clone();
                    }
                } else if empty(dv) && !matches!(dv, Value::Map(_)) {
                    *dv = sv.clone();
                }
            }
            None => {
                dst.insert(k.clone(), sv.clone());
            }
        }
    }
}

fn go_trim(s: &str, cutset: &str) -> String {
    s.trim_matches(|c| cutset.contains(c)).to_string()
}

/// Upper bound on generated list lengths (until/untilStep/seq): Go has none, but an unbounded
/// list from a chart must not take the process down; beyond it the call fails loudly.
const MAX_SEQ: usize = 1_000_000;

fn until_step(start: i64, stop: i64, step: i64) -> Result<Vec<Value>, String> {
    let mut v = Vec::new();
    if step == 0 {
        return Ok(v);
    }
    let mut i = start;
    while (step > 0 && i < stop) || (step < 0 && i > stop) {
        if v.len() >= MAX_SEQ {
            return Err(format!("sequence longer than {MAX_SEQ} elements"));
        }
        v.push(Value::Int(i));
        i = match i.checked_add(step) {
            Some(n) => n,
            None => break,
        };
    }
    Ok(v)
}

/// Output cap for indent/nindent (like repeat's): protects against width × lines blow-ups.
const MAX_OUT: usize = 64 << 20;

fn indent_str(width: i64, text: &str, lead_nl: bool) -> Result<Value, String> {
    let w = width.max(0) as usize;
    let lines = text.bytes().filter(|&b| b == b'\n').count() + 1;
    if w.saturating_mul(lines).saturating_add(text.len()) > MAX_OUT {
        return Err("indent output too large".into());
    }
    let pad = " ".repeat(w);
    let body = format!("{pad}{}", text.replace('\n', &format!("\n{pad}")));
    Ok(Value::from(if lead_nl {
        format!("\n{body}")
    } else {
        body
    }))
}

fn base64_dec(s: &str) -> String {
    match base64::engine::general_purpose::STANDARD.decode(s) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) => e.to_string(),
    }
}

/// Go's math.Round semantics (half away from zero) used by sprig's round.
fn round(x: f64, p: i64, r_opt: f64) -> f64 {
    let pow = 10f64.powi(p as i32);
    let digit = pow * x;
    let (int, frac) = (digit.trunc(), digit.fract());
    let r = if x >= 0.0 {
        if frac >= r_opt { int + 1.0 } else { int }
    } else if -frac >= r_opt {
        int - 1.0
    } else {
        int
    };
    r / pow
}

fn rand_string(count: i64, set: &[u8]) -> String {
    use rand::Rng;
    let mut rng = rand::thread_rng();
    (0..count.clamp(0, 1_000_000))
        .map(|_| set[rng.gen_range(0..set.len())] as char)
        .collect()
}

fn dig(keys: &[Value], default: &Value, m: &Value) -> Result<Value, String> {
    let mut cur = m.clone();
    for k in keys {
        let key = k.as_str().ok_or_else(|| {
            format!(
                "interface conversion: interface {{}} is {}, not string",
                k.type_name()
            )
        })?;
        match &cur {
            Value::Map(mm) => match mm.get(key) {
                Some(v) => cur = v.clone(),
                None => return Ok(default.clone()),
            },
            _ => {
                return Err(format!(
                    "interface conversion: interface {{}} is {}, not map[string]interface {{}}",
                    cur.type_name()
                ));
            }
        }
    }
    Ok(cur)
}

pub(crate) fn register(m: &mut Map) {
    use Ty::*;
    // ---- strings
    reg(m, "upper", &[Str], None, |_, a| {
        Ok(Value::from(s(&a[0]).to_uppercase()))
    });
    reg(m, "lower", &[Str], None, |_, a| {
        Ok(Value::from(s(&a[0]).to_lowercase()))
    });
    reg(m, "title", &[Str], None, |_, a| {
        Ok(Value::from(title(s(&a[0]))))
    });
    reg(m, "untitle", &[Str], None, |_, a| {
        Ok(Value::from(untitle(s(&a[0]))))
    });
    reg(m, "substr", &[Int, Int, Str], None, |_, a| {
        let (start, end, st) = (i(&a[0]), i(&a[1]), s(&a[2]));
        let b = st.as_bytes();
        let r = if start < 0 {
            b.get(..(end.max(0) as usize).min(b.len()))
        } else if end < 0 || end as usize > b.len() {
            b.get((start as usize).min(b.len())..)
        } else {
            b.get(start as usize..end as usize)
        };
        match r {
            Some(x) => Ok(Value::from(String::from_utf8_lossy(x).into_owned())),
            None => Err(format!(
                "runtime error: slice bounds out of range [{start}:{end}]"
            )),
        }
    });
    reg(m, "repeat", &[Int, Str], None, |_, a| {
        let n = i(&a[0]);
        if n < 0 {
            return Err("strings: negative Repeat count".into());
        }
        let st = s(&a[1]);
        if st.len().saturating_mul(n as usize) > 64 << 20 {
            return Err("strings: Repeat output length overflow".into());
        }
        Ok(Value::from(st.repeat(n as usize)))
    });
    reg(m, "trim", &[Str], None, |_, a| {
        Ok(Value::from(s(&a[0]).trim().to_string()))
    });
    reg(m, "trimAll", &[Str, Str], None, |_, a| {
        Ok(Value::from(go_trim(s(&a[1]), s(&a[0]))))
    });
    reg(m, "trimSuffix", &[Str, Str], None, |_, a| {
        Ok(Value::from(
            s(&a[1])
                .strip_suffix(s(&a[0]))
                .unwrap_or(s(&a[1]))
                .to_string(),
        ))
    });
    reg(m, "trimPrefix", &[Str, Str], None, |_, a| {
        Ok(Value::from(
            s(&a[1])
                .strip_prefix(s(&a[0]))
                .unwrap_or(s(&a[1]))
                .to_string(),
        ))
    });
    reg(m, "nospace", &[Str], None, |_, a| {
        Ok(Value::from(
            s(&a[0])
                .chars()
                .filter(|c| !c.is_whitespace())
                .collect::<String>(),
        ))
    });
    reg(m, "trunc", &[Int, Str], None, |_, a| {
        let (c, st) = (i(&a[0]), s(&a[1]));
        let l = st.len() as i64;
        let r = if c < 0 && l + c > 0 {
            st.get((l + c) as usize..)
        } else if c >= 0 && l > c {
            st.get(..c as usize)
        } else {
            Some(st)
        };
        Ok(Value::from(r.map(|x| x.to_string()).unwrap_or_else(|| {
            let b = st.as_bytes();
            let r = if c < 0 {
                &b[(l + c) as usize..]
            } else {
                &b[..c as usize]
            };
            String::from_utf8_lossy(r).into_owned()
        })))
    });
    reg(m, "abbrev", &[Int, Str], None, |_, a| {
        let (w, st) = (i(&a[0]), s(&a[1]));
        if w < 4 {
            return Ok(Value::from(st));
        }
        let chars: Vec<char> = st.chars().collect();
        if chars.len() as i64 <= w {
            return Ok(Value::from(st));
        }
        let mut r: String = chars[..(w - 3) as usize].iter().collect();
        r.push_str("...");
        Ok(Value::from(r))
    });
    reg(m, "abbrevboth", &[Int, Int, Str], None, |_, a| {
        let (left, w, st) = (i(&a[0]), i(&a[1]), s(&a[2]));
        let chars: Vec<char> = st.chars().collect();
        let n = chars.len() as i64;
        if w < 4 || n <= w {
            return Ok(Value::from(st));
        }
        let mut off = left.clamp(0, n);
        if n - off < w - 3 {
            off = n - (w - 3);
        }
        if off <= 4 {
            let mut r: String = chars[..(w - 3) as usize].iter().collect();
            r.push_str("...");
            return Ok(Value::from(r));
        }
        if w < 7 {
            return Ok(Value::from(st));
        }
        if off + w - 3 < n {
            let inner: String = chars[off as usize..].iter().collect();
            let ic: Vec<char> = inner.chars().collect();
            let mut r = String::from("...");
            if ic.len() as i64 > w - 3 {
                r.extend(&ic[..(w - 6) as usize]);
                r.push_str("...");
            } else {
                r.push_str(&inner);
            }
            return Ok(Value::from(r));
        }
        let mut r = String::from("...");
        r.extend(&chars[(n - (w - 3)) as usize..]);
        Ok(Value::from(r))
    });
    reg(m, "initials", &[Str], None, |_, a| {
        Ok(Value::from(
            s(&a[0])
                .split_whitespace()
                .filter_map(|w| w.chars().next())
                .collect::<String>(),
        ))
    });
    reg(m, "wrap", &[Int, Str], None, |_, a| {
        Ok(Value::from(wrap_custom(s(&a[1]), i(&a[0]), "\n", true)))
    });
    reg(m, "wrapWith", &[Int, Str, Str], None, |_, a| {
        Ok(Value::from(wrap_custom(s(&a[2]), i(&a[0]), s(&a[1]), true)))
    });
    reg(m, "contains", &[Str, Str], None, |_, a| {
        Ok(Value::Bool(s(&a[1]).contains(s(&a[0]))))
    });
    reg(m, "hasPrefix", &[Str, Str], None, |_, a| {
        Ok(Value::Bool(s(&a[1]).starts_with(s(&a[0]))))
    });
    reg(m, "hasSuffix", &[Str, Str], None, |_, a| {
        Ok(Value::Bool(s(&a[1]).ends_with(s(&a[0]))))
    });
    reg(m, "quote", &[], Some(Any), |_, a| {
        let v: Vec<String> = a
            .iter()
            .filter(|x| !matches!(x, Value::Nil))
            .map(|x| go_quote(&strval(x)))
            .collect();
        Ok(Value::from(v.join(" ")))
    });
    reg(m, "squote", &[], Some(Any), |_, a| {
        let v: Vec<String> = a
            .iter()
            .filter(|x| !matches!(x, Value::Nil))
            .map(|x| format!("'{}'", strval(x)))
            .collect();
        Ok(Value::from(v.join(" ")))
    });
    reg(m, "cat", &[], Some(Any), |_, a| {
        let v: Vec<Value> = a.into_iter().filter(|x| !matches!(x, Value::Nil)).collect();
        let parts: Vec<String> = v.iter().map(|x| x.to_go_string()).collect();
        Ok(Value::from(parts.join(" ")))
    });
    reg(m, "indent", &[Int, Str], None, |_, a| {
        indent_str(i(&a[0]), s(&a[1]), false)
    });
    reg(m, "nindent", &[Int, Str], None, |_, a| {
        indent_str(i(&a[0]), s(&a[1]), true)
    });
    reg(m, "replace", &[Str, Str, Str], None, |_, a| {
        let (old, new, src) = (s(&a[0]), s(&a[1]), s(&a[2]));
        if old.is_empty() {
            // Go inserts `new` between every rune and at both ends
            let mut out = String::from(new);
            for c in src.chars() {
                out.push(c);
                out.push_str(new);
            }
            return Ok(Value::from(out));
        }
        Ok(Value::from(src.replace(old, new)))
    });
    reg(m, "plural", &[Str, Str, Int], None, |_, a| {
        Ok(if i(&a[2]) == 1 {
            a[0].clone()
        } else {
            a[1].clone()
        })
    });
    reg(m, "snakecase", &[Str], None, |_, a| {
        Ok(Value::from(snakecase(s(&a[0]))))
    });
    reg(m, "camelcase", &[Str], None, |_, a| {
        Ok(Value::from(camelcase(s(&a[0]))))
    });
    reg(m, "kebabcase", &[Str], None, |_, a| {
        Ok(Value::from(snakecase(s(&a[0])).replace('_', "-")))
    });
    reg(m, "swapcase", &[Str], None, |_, a| {
        Ok(Value::from(swapcase(s(&a[0]))))
    });
    reg(m, "shuffle", &[Str], None, |_, a| {
        use rand::seq::SliceRandom;
        let mut c: Vec<char> = s(&a[0]).chars().collect();
        c.shuffle(&mut rand::thread_rng());
        Ok(Value::from(c.into_iter().collect::<String>()))
    });
    reg(m, "toString", &[Any], None, |_, a| {
        Ok(Value::from(strval(&a[0])))
    });
    reg(m, "toStrings", &[Any], None, |_, a| {
        Ok(strs(strslice(&a[0])))
    });
    reg(m, "split", &[Str, Str], None, |_, a| {
        Ok(indexed_map(go_split(s(&a[1]), s(&a[0]), -1)))
    });
    reg(m, "splitList", &[Str, Str], None, |_, a| {
        Ok(strs(go_split(s(&a[1]), s(&a[0]), -1)))
    });
    reg(m, "splitn", &[Str, Int, Str], None, |_, a| {
        Ok(indexed_map(go_split(s(&a[2]), s(&a[0]), i(&a[1]))))
    });
    reg(m, "join", &[Str, Any], None, |_, a| {
        Ok(Value::from(strslice(&a[1]).join(s(&a[0]))))
    });
    reg(m, "sortAlpha", &[Any], None, |_, a| {
        let mut v = strslice(&a[0]);
        v.sort();
        Ok(strs(v))
    });
    reg(m, "b64enc", &[Str], None, |_, a| {
        Ok(Value::from(
            base64::engine::general_purpose::STANDARD.encode(s(&a[0])),
        ))
    });
    reg(m, "b64dec", &[Str], None, |_, a| {
        Ok(Value::from(base64_dec(s(&a[0]))))
    });
    reg(m, "b32enc", &[Str], None, |_, a| {
        Ok(Value::from(base32_encode(s(&a[0]).as_bytes())))
    });
    reg(m, "b32dec", &[Str], None, |_, a| {
        Ok(Value::from(match base32_decode(s(&a[0])) {
            Some(b) => String::from_utf8_lossy(&b).into_owned(),
            None => "illegal base32 data at input byte 0".to_string(),
        }))
    });
    reg(m, "sha1sum", &[Str], None, |_, a| {
        Ok(Value::from(hex(&crypto::sha1(s(&a[0]).as_bytes()))))
    });
    reg(m, "sha256sum", &[Str], None, |_, a| {
        Ok(Value::from(hex(&sha2::Sha256::digest(s(&a[0]).as_bytes()))))
    });
    reg(m, "sha512sum", &[Str], None, |_, a| {
        Ok(Value::from(hex(&sha2::Sha512::digest(s(&a[0]).as_bytes()))))
    });
    reg(m, "adler32sum", &[Str], None, |_, a| {
        Ok(Value::from(adler32(s(&a[0]).as_bytes()).to_string()))
    });

    // ---- regex
    // sprig's regexMatch ignores compile errors (an invalid pattern simply does not match)
    reg(m, "regexMatch", &[Str, Str], None, |_, a| {
        Ok(Value::Bool(
            regex::Regex::new(s(&a[0])).is_ok_and(|re| re.is_match(s(&a[1]))),
        ))
    });
    reg(m, "mustRegexMatch", &[Str, Str], None, |_, a| {
        Ok(Value::Bool(regex(s(&a[0]))?.is_match(s(&a[1]))))
    });
    let find_all = |_: &mut crate::exec::Ctx<'_>, a: Vec<Value>| -> Result<Value, String> {
        let re = regex(s(&a[0]))?;
        let n = i(&a[2]);
        let it = re.find_iter(s(&a[1])).map(|m| Value::from(m.as_str()));
        let v: Vec<Value> = if n < 0 {
            it.collect()
        } else {
            it.take(n as usize).collect()
        };
        Ok(Value::from(v))
    };
    reg(m, "regexFindAll", &[Str, Str, Int], None, find_all);
    reg(m, "mustRegexFindAll", &[Str, Str, Int], None, find_all);
    let find = |_: &mut crate::exec::Ctx<'_>, a: Vec<Value>| -> Result<Value, String> {
        let re = regex(s(&a[0]))?;
        Ok(Value::from(
            re.find(s(&a[1])).map(|m| m.as_str()).unwrap_or(""),
        ))
    };
    reg(m, "regexFind", &[Str, Str], None, find);
    reg(m, "mustRegexFind", &[Str, Str], None, find);
    let repl = |_: &mut crate::exec::Ctx<'_>, a: Vec<Value>| -> Result<Value, String> {
        let re = regex(s(&a[0]))?;
        Ok(Value::from(re.replace_all(s(&a[1]), s(&a[2])).into_owned()))
    };
    reg(m, "regexReplaceAll", &[Str, Str, Str], None, repl);
    reg(m, "mustRegexReplaceAll", &[Str, Str, Str], None, repl);
    let repl_lit = |_: &mut crate::exec::Ctx<'_>, a: Vec<Value>| -> Result<Value, String> {
        let re = regex(s(&a[0]))?;
        Ok(Value::from(
            re.replace_all(s(&a[1]), regex::NoExpand(s(&a[2])))
                .into_owned(),
        ))
    };
    reg(
        m,
        "regexReplaceAllLiteral",
        &[Str, Str, Str],
        None,
        repl_lit,
    );
    reg(
        m,
        "mustRegexReplaceAllLiteral",
        &[Str, Str, Str],
        None,
        repl_lit,
    );
    let split = |_: &mut crate::exec::Ctx<'_>, a: Vec<Value>| -> Result<Value, String> {
        let re = regex(s(&a[0]))?;
        Ok(strs(go_regex_split(&re, s(&a[1]), i(&a[2]))))
    };
    reg(m, "regexSplit", &[Str, Str, Int], None, split);
    reg(m, "mustRegexSplit", &[Str, Str, Int], None, split);
    reg(m, "regexQuoteMeta", &[Str], None, |_, a| {
        Ok(Value::from(regex::escape(s(&a[0]))))
    });

    // ---- defaults / flow
    reg(m, "default", &[Any], Some(Any), |_, a| match a.get(1) {
        Some(g) if !empty(g) => Ok(g.clone()),
        _ => Ok(a[0].clone()),
    });
    reg(m, "empty", &[Any], None, |_, a| {
        Ok(Value::Bool(empty(&a[0])))
    });
    reg(m, "coalesce", &[], Some(Any), |_, a| {
        Ok(a.into_iter().find(|v| !empty(v)).unwrap_or(Value::Nil))
    });
    reg(m, "all", &[], Some(Any), |_, a| {
        Ok(Value::Bool(a.iter().all(|v| !empty(v))))
    });
    reg(m, "any", &[], Some(Any), |_, a| {
        Ok(Value::Bool(a.iter().any(|v| !empty(v))))
    });
    reg(m, "ternary", &[Any, Any, Bool], None, |_, a| {
        Ok(if matches!(a[2], Value::Bool(true)) {
            a[0].clone()
        } else {
            a[1].clone()
        })
    });
    reg(m, "compact", &[Any], None, |_, a| {
        let l = as_list(&a[0], "compact")?;
        Ok(Value::from(
            l.iter().filter(|v| !empty(v)).cloned().collect::<Vec<_>>(),
        ))
    });
    reg(m, "mustCompact", &[Any], None, |_, a| {
        let l = as_list(&a[0], "compact")?;
        Ok(Value::from(
            l.iter().filter(|v| !empty(v)).cloned().collect::<Vec<_>>(),
        ))
    });
    reg(m, "toPrettyJson", &[Any], None, |_, a| {
        Ok(Value::from(json::to_json_pretty(&a[0], true)))
    });
    reg(m, "toRawJson", &[Any], None, |_, a| {
        Ok(Value::from(json::to_json(&a[0], false)))
    });
    reg(m, "mustToJson", &[Any], None, |_, a| {
        Ok(Value::from(json::to_json(&a[0], true)))
    });
    reg(m, "mustToPrettyJson", &[Any], None, |_, a| {
        Ok(Value::from(json::to_json_pretty(&a[0], true)))
    });
    reg(m, "mustToRawJson", &[Any], None, |_, a| {
        Ok(Value::from(json::to_json(&a[0], false)))
    });
    reg(m, "mustFromJson", &[Str], None, |_, a| {
        json::from_json(s(&a[0])).map_err(|e| e.0)
    });
    reg(m, "fromJson_sprig_unused", &[Str], None, |_, a| {
        json::from_json(s(&a[0])).map_err(|e| e.0)
    });
    m.remove("fromJson_sprig_unused");

    // ---- numbers
    reg(m, "add1", &[Any], None, |_, a| {
        Ok(Value::Int64(to_i64(&a[0]).wrapping_add(1)))
    });
    reg(m, "add", &[], Some(Any), |_, a| {
        Ok(Value::Int64(
            a.iter().fold(0i64, |acc, v| acc.wrapping_add(to_i64(v))),
        ))
    });
    reg(m, "sub", &[Any, Any], None, |_, a| {
        Ok(Value::Int64(to_i64(&a[0]).wrapping_sub(to_i64(&a[1]))))
    });
    reg(m, "div", &[Any, Any], None, |_, a| {
        let d = to_i64(&a[1]);
        if d == 0 {
            return Err("runtime error: integer divide by zero".into());
        }
        Ok(Value::Int64(to_i64(&a[0]).wrapping_div(d)))
    });
    reg(m, "mod", &[Any, Any], None, |_, a| {
        let d = to_i64(&a[1]);
        if d == 0 {
            return Err("runtime error: integer divide by zero".into());
        }
        Ok(Value::Int64(to_i64(&a[0]).wrapping_rem(d)))
    });
    reg(m, "mul", &[Any], Some(Any), |_, a| {
        Ok(Value::Int64(
            a.iter().fold(1i64, |acc, v| acc.wrapping_mul(to_i64(v))),
        ))
    });
    let maxf = |_: &mut crate::exec::Ctx<'_>, a: Vec<Value>| -> Result<Value, String> {
        Ok(Value::Int64(a.iter().map(to_i64).max().unwrap_or(0)))
    };
    reg(m, "max", &[Any], Some(Any), maxf);
    reg(m, "biggest", &[Any], Some(Any), maxf);
    reg(m, "min", &[Any], Some(Any), |_, a| {
        Ok(Value::Int64(a.iter().map(to_i64).min().unwrap_or(0)))
    });
    reg(m, "add1f", &[Any], None, |_, a| {
        decimal_op(to_f64(&a[0]), &[Value::Float(1.0)], DecOp::Add)
    });
    reg(m, "addf", &[], Some(Any), |_, a| {
        decimal_op(0.0, &a, DecOp::Add)
    });
    reg(m, "subf", &[Any], Some(Any), |_, a| {
        decimal_op(to_f64(&a[0]), &a[1..], DecOp::Sub)
    });
    reg(m, "divf", &[Any], Some(Any), |_, a| {
        decimal_op(to_f64(&a[0]), &a[1..], DecOp::Div)
    });
    reg(m, "mulf", &[Any], Some(Any), |_, a| {
        decimal_op(to_f64(&a[0]), &a[1..], DecOp::Mul)
    });
    reg(m, "maxf", &[Any], Some(Any), |_, a| {
        Ok(Value::Float(
            a.iter().map(to_f64).fold(f64::NEG_INFINITY, f64::max),
        ))
    });
    reg(m, "minf", &[Any], Some(Any), |_, a| {
        Ok(Value::Float(
            a.iter().map(to_f64).fold(f64::INFINITY, f64::min),
        ))
    });
    reg(m, "floor", &[Any], None, |_, a| {
        Ok(Value::Float(to_f64(&a[0]).floor()))
    });
    reg(m, "ceil", &[Any], None, |_, a| {
        Ok(Value::Float(to_f64(&a[0]).ceil()))
    });
    reg(m, "round", &[Any, Int], Some(Float), |_, a| {
        let r_opt = a.get(2).map(to_f64).unwrap_or(0.5);
        Ok(Value::Float(round(to_f64(&a[0]), i(&a[1]), r_opt)))
    });
    reg(m, "int", &[Any], None, |_, a| Ok(Value::Int(to_i64(&a[0]))));
    reg(m, "int64", &[Any], None, |_, a| {
        Ok(Value::Int64(to_i64(&a[0])))
    });
    reg(m, "float64", &[Any], None, |_, a| {
        Ok(Value::Float(to_f64(&a[0])))
    });
    reg(m, "atoi", &[Str], None, |_, a| {
        Ok(Value::Int(s(&a[0]).parse::<i64>().unwrap_or(0)))
    });
    reg(m, "toDecimal", &[Any], None, |_, a| {
        Ok(Value::Int64(
            i64::from_str_radix(&strval(&a[0]), 8).unwrap_or(0),
        ))
    });
    reg(m, "until", &[Int], None, |_, a| {
        let n = i(&a[0]);
        Ok(Value::from(until_step(0, n, if n < 0 { -1 } else { 1 })?))
    });
    reg(m, "untilStep", &[Int, Int, Int], None, |_, a| {
        Ok(Value::from(until_step(i(&a[0]), i(&a[1]), i(&a[2]))?))
    });
    reg(m, "seq", &[], Some(Int), |_, a| {
        let p: Vec<i64> = a.iter().map(i).collect();
        let (start, end, step) = match p.as_slice() {
            [] => return Ok(Value::from("")),
            [e] => (1, *e, if *e < 1 { -1 } else { 1 }),
            [st, e] => (*st, *e, if e < st { -1 } else { 1 }),
            [st, stp, e, ..] => (*st, *e, *stp),
        };
        if (end < start && step > 0) || (end > start && step < 0) || step == 0 {
            return Ok(Value::from(""));
        }
        let mut v = Vec::new();
        let mut x = start;
        loop {
            if (step > 0 && x > end) || (step < 0 && x < end) {
                break;
            }
            if v.len() >= MAX_SEQ {
                return Err(format!("sequence longer than {MAX_SEQ} elements"));
            }
            v.push(x.to_string());
            x = match x.checked_add(step) {
                Some(n) => n,
                None => break,
            };
        }
        Ok(Value::from(v.join(" ")))
    });

    // ---- lists
    reg(m, "list", &[], Some(Any), |_, a| Ok(Value::from(a)));
    reg(m, "tuple", &[], Some(Any), |_, a| Ok(Value::from(a)));
    for (name, must) in [
        ("append", false),
        ("push", false),
        ("mustAppend", true),
        ("mustPush", true),
    ] {
        let _ = must;
        reg(m, name, &[Any, Any], None, |_, a| {
            let l = as_list(&a[0], "push")?;
            let mut v = l.to_vec();
            v.push(a[1].clone());
            Ok(Value::from(v))
        });
    }
    for name in ["prepend", "mustPrepend"] {
        reg(m, name, &[Any, Any], None, |_, a| {
            let l = as_list(&a[0], "prepend")?;
            let mut v = vec![a[1].clone()];
            v.extend(l.iter().cloned());
            Ok(Value::from(v))
        });
    }
    for name in ["first", "mustFirst"] {
        reg(m, name, &[Any], None, |_, a| {
            Ok(as_list(&a[0], "find first")?
                .first()
                .cloned()
                .unwrap_or(Value::Nil))
        });
    }
    for name in ["last", "mustLast"] {
        reg(m, name, &[Any], None, |_, a| {
            Ok(as_list(&a[0], "find last")?
                .last()
                .cloned()
                .unwrap_or(Value::Nil))
        });
    }
    for name in ["rest", "mustRest"] {
        reg(m, name, &[Any], None, |_, a| {
            let l = as_list(&a[0], "find rest")?;
            if l.is_empty() {
                return Ok(Value::Nil);
            }
            Ok(Value::from(l[1..].to_vec()))
        });
    }
    for name in ["initial", "mustInitial"] {
        reg(m, name, &[Any], None, |_, a| {
            let l = as_list(&a[0], "find initial")?;
            if l.is_empty() {
                return Ok(Value::Nil);
            }
            Ok(Value::from(l[..l.len() - 1].to_vec()))
        });
    }
    for name in ["reverse", "mustReverse"] {
        reg(m, name, &[Any], None, |_, a| {
            let mut v = as_list(&a[0], "find reverse")?.to_vec();
            v.reverse();
            Ok(Value::from(v))
        });
    }
    for name in ["uniq", "mustUniq"] {
        reg(m, name, &[Any], None, |_, a| {
            let l = as_list(&a[0], "find uniq")?;
            let mut v: Vec<Value> = Vec::new();
            for e in l {
                if !v.iter().any(|x| x == e) {
                    v.push(e.clone());
                }
            }
            Ok(Value::from(v))
        });
    }
    for name in ["without", "mustWithout"] {
        reg(m, name, &[Any], Some(Any), |_, a| {
            let l = as_list(&a[0], "find without")?;
            let omit = &a[1..];
            Ok(Value::from(
                l.iter()
                    .filter(|e| !omit.contains(e))
                    .cloned()
                    .collect::<Vec<_>>(),
            ))
        });
    }
    for name in ["has", "mustHas"] {
        reg(m, name, &[Any, Any], None, |_, a| match &a[1] {
            Value::Nil => Ok(Value::Bool(false)),
            Value::List(l) => Ok(Value::Bool(l.contains(&a[0]))),
            other => Err(format!("Cannot find has on type {}", other.kind_name())),
        });
    }
    for name in ["slice", "mustSlice"] {
        reg(m, name, &[Any], Some(Any), |_, a| {
            let l = match &a[0] {
                Value::List(l) => l,
                Value::Nil => {
                    return Err(
                        "runtime error: invalid memory address or nil pointer dereference".into(),
                    );
                }
                other => {
                    return Err(format!(
                        "list should be type of slice or array but {}",
                        other.kind_name()
                    ));
                }
            };
            if l.is_empty() {
                return Ok(Value::Nil);
            }
            let start = a.get(1).map(to_i64).unwrap_or(0);
            let end = a.get(2).map(to_i64).unwrap_or(l.len() as i64);
            if start < 0 || end < start || end as usize > l.len() {
                return Err(format!(
                    "runtime error: slice bounds out of range [{start}:{end}]"
                ));
            }
            Ok(Value::from(l[start as usize..end as usize].to_vec()))
        });
    }
    reg(m, "concat", &[], Some(Any), |_, a| {
        let mut v = Vec::new();
        for l in &a {
            match l {
                Value::List(x) => v.extend(x.iter().cloned()),
                Value::Nil => {}
                other => return Err(format!("Cannot concat type {} as list", other.kind_name())),
            }
        }
        Ok(Value::from(v))
    });
    for name in ["chunk", "mustChunk"] {
        reg(m, name, &[Int, Any], None, |_, a| {
            let size = i(&a[0]);
            let l = as_list(&a[1], "chunk")?;
            if size <= 0 {
                return Err("runtime error: integer divide by zero".into());
            }
            Ok(Value::from(
                l.chunks(size as usize)
                    .map(|c| Value::from(c.to_vec()))
                    .collect::<Vec<_>>(),
            ))
        });
    }

    // ---- dicts
    reg(m, "dict", &[], Some(Any), |_, a| {
        let mut d = BTreeMap::new();
        let mut it = a.chunks(2);
        for pair in &mut it {
            let k = strval(&pair[0]);
            let v = pair.get(1).cloned().unwrap_or(Value::from(""));
            d.insert(k, v);
        }
        Ok(Value::Map(Arc::new(d)))
    });
    reg(m, "get", &[Map, Str], None, |_, a| {
        Ok(match &a[0] {
            Value::Map(d) => d.get(s(&a[1])).cloned().unwrap_or(Value::from("")),
            _ => Value::from(""),
        })
    });
    reg(m, "set", &[Map, Str, Any], None, |_, a| {
        let Value::Map(d) = &a[0] else {
            return Err("assignment to entry in nil map".into());
        };
        let mut d = d.clone();
        Arc::make_mut(&mut d).insert(s(&a[1]).to_string(), a[2].clone());
        Ok(Value::Map(d))
    });
    reg(m, "unset", &[Map, Str], None, |_, a| {
        let Value::Map(d) = &a[0] else {
            return Ok(a[0].clone());
        };
        let mut d = d.clone();
        Arc::make_mut(&mut d).remove(s(&a[1]));
        Ok(Value::Map(d))
    });
    reg(m, "hasKey", &[Map, Str], None, |_, a| {
        Ok(Value::Bool(
            matches!(&a[0], Value::Map(d) if d.contains_key(s(&a[1]))),
        ))
    });
    reg(m, "pluck", &[Str], Some(Map), |_, a| {
        let k = s(&a[0]);
        Ok(Value::from(
            a[1..]
                .iter()
                .filter_map(|d| match d {
                    Value::Map(d) => d.get(k).cloned(),
                    _ => None,
                })
                .collect::<Vec<_>>(),
        ))
    });
    reg(m, "keys", &[], Some(Map), |_, a| {
        let mut v = Vec::new();
        for d in &a {
            if let Value::Map(d) = d {
                v.extend(d.keys().cloned());
            }
        }
        Ok(strs(v))
    });
    reg(m, "values", &[Map], None, |_, a| {
        Ok(Value::from(match &a[0] {
            Value::Map(d) => d.values().cloned().collect::<Vec<_>>(),
            _ => Vec::new(),
        }))
    });
    reg(m, "pick", &[Map], Some(Str), |_, a| {
        let d = map_of(&a[0]);
        let keys: Vec<&str> = a[1..].iter().map(s).collect();
        Ok(Value::Map(Arc::new(
            d.into_iter()
                .filter(|(k, _)| keys.contains(&k.as_str()))
                .collect(),
        )))
    });
    reg(m, "omit", &[Map], Some(Str), |_, a| {
        let d = map_of(&a[0]);
        let keys: Vec<&str> = a[1..].iter().map(s).collect();
        Ok(Value::Map(Arc::new(
            d.into_iter()
                .filter(|(k, _)| !keys.contains(&k.as_str()))
                .collect(),
        )))
    });
    for (name, over) in [
        ("merge", false),
        ("mustMerge", false),
        ("mergeOverwrite", true),
        ("mustMergeOverwrite", true),
    ] {
        reg(m, name, &[Map], Some(Map), move |_, a| {
            let mut d = map_of(&a[0]);
            for src in &a[1..] {
                if let Value::Map(sm) = src {
                    deep_merge(&mut d, sm, over);
                }
            }
            Ok(Value::Map(Arc::new(d)))
        });
    }
    for name in ["deepCopy", "mustDeepCopy"] {
        reg(m, name, &[Any], None, |_, a| Ok(a[0].clone()));
    }
    reg(m, "dig", &[Any], Some(Any), |_, a| {
        if a.len() < 3 {
            return Err(format!(
                "wrong number of args for dig: want at least 3 got {}",
                a.len()
            ));
        }
        let n = a.len();
        dig(&a[..n - 2], &a[n - 2], &a[n - 1])
    });
    reg(m, "deepEqual", &[Any, Any], None, |_, a| {
        Ok(Value::Bool(a[0] == a[1]))
    });

    // ---- reflection
    reg(m, "typeOf", &[Any], None, |_, a| {
        Ok(Value::from(a[0].type_name()))
    });
    reg(m, "typeIs", &[Str, Any], None, |_, a| {
        Ok(Value::Bool(s(&a[0]) == a[1].type_name()))
    });
    reg(m, "typeIsLike", &[Str, Any], None, |_, a| {
        let t = a[1].type_name();
        Ok(Value::Bool(s(&a[0]) == t || s(&a[0]) == format!("*{t}")))
    });
    reg(m, "kindOf", &[Any], None, |_, a| {
        Ok(Value::from(a[0].kind_name()))
    });
    reg(m, "kindIs", &[Str, Any], None, |_, a| {
        Ok(Value::Bool(s(&a[0]) == a[1].kind_name()))
    });

    // ---- paths
    reg(m, "base", &[Str], None, |_, a| {
        Ok(Value::from(path_base(s(&a[0]))))
    });
    reg(m, "dir", &[Str], None, |_, a| {
        Ok(Value::from(path_dir(s(&a[0]))))
    });
    reg(m, "clean", &[Str], None, |_, a| {
        Ok(Value::from(path_clean(s(&a[0]))))
    });
    reg(m, "ext", &[Str], None, |_, a| {
        let b = s(&a[0]);
        let tail = b.rsplit('/').next().unwrap_or("");
        Ok(Value::from(
            tail.rfind('.')
                .map(|k| tail[k..].to_string())
                .unwrap_or_default(),
        ))
    });
    reg(m, "isAbs", &[Str], None, |_, a| {
        Ok(Value::Bool(s(&a[0]).starts_with('/')))
    });
    reg(m, "osBase", &[Str], None, |_, a| {
        Ok(Value::from(path_base(s(&a[0]))))
    });
    reg(m, "osDir", &[Str], None, |_, a| {
        Ok(Value::from(path_dir(s(&a[0]))))
    });
    reg(m, "osClean", &[Str], None, |_, a| {
        Ok(Value::from(path_clean(s(&a[0]))))
    });
    reg(m, "osExt", &[Str], None, |_, a| {
        let b = s(&a[0]);
        let tail = b.rsplit('/').next().unwrap_or("");
        Ok(Value::from(
            tail.rfind('.')
                .map(|k| tail[k..].to_string())
                .unwrap_or_default(),
        ))
    });
    reg(m, "osIsAbs", &[Str], None, |_, a| {
        Ok(Value::Bool(s(&a[0]).starts_with('/')))
    });

    // ---- random / ids
    reg(m, "randAlphaNum", &[Int], None, |_, a| {
        Ok(Value::from(rand_string(
            i(&a[0]),
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
        )))
    });
    reg(m, "randAlpha", &[Int], None, |_, a| {
        Ok(Value::from(rand_string(
            i(&a[0]),
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
        )))
    });
    reg(m, "randNumeric", &[Int], None, |_, a| {
        Ok(Value::from(rand_string(i(&a[0]), b"0123456789")))
    });
    reg(m, "randAscii", &[Int], None, |_, a| {
        let set: Vec<u8> = (32u8..=126).collect();
        Ok(Value::from(rand_string(i(&a[0]), &set)))
    });
    reg(m, "randInt", &[Int, Int], None, |_, a| {
        use rand::Rng;
        let (lo, hi) = (i(&a[0]), i(&a[1]));
        if hi <= lo {
            return Err("invalid argument to Intn".into());
        }
        Ok(Value::Int(rand::thread_rng().gen_range(lo..hi)))
    });
    reg(m, "uuidv4", &[], None, |_, _| {
        Ok(Value::from(uuid::Uuid::new_v4().to_string()))
    });

    // ---- misc
    reg(m, "hello", &[], None, |_, _| Ok(Value::from("Hello!")));
    reg(m, "urlquery_sprig_unused", &[], None, |_, _| Ok(Value::Nil));
    m.remove("urlquery_sprig_unused");
    reg(m, "urlParse", &[Str], None, |_, a| url_parse(s(&a[0])));
    reg(m, "urlJoin", &[Map], None, |_, a| {
        Ok(Value::from(url_join(&map_of(&a[0]))))
    });
    reg(m, "getHostByName", &[Str], None, |_, _| Ok(Value::from("")));
    reg(m, "toJson_sprig_unused", &[Any], None, |_, a| {
        Ok(Value::from(sprint(&a)))
    });
    m.remove("toJson_sprig_unused");

    date::register(m);
    semver::register(m);
    crypto::register(m);
}

#[derive(Clone, Copy)]
enum DecOp {
    Add,
    Sub,
    Mul,
    Div,
}

/// A decimal m × 10^e (shopspring/decimal, which sprig's *f functions use), from a float's
/// shortest representation.
fn to_dec(f: f64) -> Option<(i128, i32)> {
    if !f.is_finite() {
        return None;
    }
    let (neg, digits, dp) = crate::value::float_digits(f, None);
    let m: i128 = digits.parse().ok()?;
    let e = (dp - digits.len() as i64) as i32;
    Some((if neg { -m } else { m }, e))
}

fn pow10(n: u32) -> Option<i128> {
    10i128.checked_pow(n)
}

fn dec_apply(a: (i128, i32), b: (i128, i32), op: DecOp) -> Result<Option<(i128, i32)>, String> {
    let (ma, ea) = a;
    let (mb, eb) = b;
    Ok(match op {
        DecOp::Add | DecOp::Sub => {
            let e = ea.min(eb);
            let (Some(fa), Some(fb)) = (pow10((ea - e) as u32), pow10((eb - e) as u32)) else {
                return Ok(None);
            };
            let (Some(xa), Some(xb)) = (ma.checked_mul(fa), mb.checked_mul(fb)) else {
                return Ok(None);
            };
            let m = match op {
                DecOp::Add => xa.checked_add(xb),
                _ => xa.checked_sub(xb),
            };
            m.map(|m| (m, e))
        }
        DecOp::Mul => ma.checked_mul(mb).map(|m| (m, ea + eb)),
        DecOp::Div => {
            if mb == 0 {
                return Err("decimal division by 0".into());
            }
            // round half away from zero to 16 decimal places
            let s = ea - eb + 16;
            let (num, den) = if s >= 0 {
                match pow10(s as u32).and_then(|p| ma.checked_mul(p)) {
                    Some(n) => (n, mb),
                    None => return Ok(None),
                }
            } else {
                match pow10((-s) as u32).and_then(|p| mb.checked_mul(p)) {
                    Some(d) => (ma, d),
                    None => return Ok(None),
                }
            };
            let q = num / den;
            let r = num % den;
            let q = if r.unsigned_abs() * 2 >= den.unsigned_abs() {
                if (num < 0) != (den < 0) { q - 1 } else { q + 1 }
            } else {
                q
            };
            Some((q, -16))
        }
    })
}

/// sprig's execDecimalOp: exact decimal arithmetic, converted back to float64 at the end;
/// falls back to float math if the decimal would not fit in 128 bits.
fn decimal_op(first: f64, rest: &[Value], op: DecOp) -> Result<Value, String> {
    let mut acc = to_dec(first);
    let mut facc = first;
    for v in rest {
        let x = to_f64(v);
        facc = match op {
            DecOp::Add => facc + x,
            DecOp::Sub => facc - x,
            DecOp::Mul => facc * x,
            DecOp::Div => {
                if x == 0.0 {
                    return Err("decimal division by 0".into());
                }
                facc / x
            }
        };
        acc = match (acc, to_dec(x)) {
            (Some(a), Some(b)) => dec_apply(a, b, op)?,
            _ => None,
        };
    }
    Ok(Value::Float(match acc {
        Some((m, e)) => format!("{m}e{e}").parse::<f64>().unwrap_or(facc),
        None => facc,
    }))
}

pub(crate) fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        s.push_str(&format!("{x:02x}"));
    }
    s
}

fn adler32(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for &x in data {
        a = (a + x as u32) % 65521;
        b = (b + a) % 65521;
    }
    (b << 16) | a
}

const B32: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

fn base32_encode(data: &[u8]) -> String {
    let mut out = String::new();
    for chunk in data.chunks(5) {
        let mut buf = [0u8; 5];
        buf[..chunk.len()].copy_from_slice(chunk);
        let n = u64::from_be_bytes([0, 0, 0, buf[0], buf[1], buf[2], buf[3], buf[4]]);
        let chars = match chunk.len() {
            1 => 2,
            2 => 4,
            3 => 5,
            4 => 7,
            _ => 8,
        };
        for k in 0..8 {
            if k < chars {
                out.push(B32[((n >> (35 - k * 5)) & 31) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn base32_decode(s: &str) -> Option<Vec<u8>> {
    let s = s.trim_end_matches('=');
    let mut bits: u64 = 0;
    let mut nbits = 0;
    let mut out = Vec::new();
    for c in s.bytes() {
        let v = B32.iter().position(|&x| x == c)? as u64;
        bits = (bits << 5) | v;
        nbits += 5;
        if nbits >= 8 {
            nbits -= 8;
            out.push(((bits >> nbits) & 0xff) as u8);
        }
    }
    Some(out)
}

/// Go's path.Clean.
pub(crate) fn path_clean(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let rooted = p.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|l| *l != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            s => parts.push(s),
        }
    }
    let j = parts.join("/");
    if rooted {
        format!("/{j}")
    } else if j.is_empty() {
        ".".into()
    } else {
        j
    }
}

fn path_base(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let t = p.trim_end_matches('/');
    if t.is_empty() {
        return "/".into();
    }
    t.rsplit('/').next().unwrap_or(t).to_string()
}

fn path_dir(p: &str) -> String {
    let dir = match p.rfind('/') {
        Some(k) => &p[..=k],
        None => "",
    };
    path_clean(dir)
}

fn url_parse(u: &str) -> Result<Value, String> {
    let mut m = BTreeMap::new();
    let (scheme, rest) = match u.find("://") {
        Some(k) => (&u[..k], &u[k + 3..]),
        None => ("", u),
    };
    let (rest, fragment) = rest.split_once('#').unwrap_or((rest, ""));
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (authority, path) = if scheme.is_empty() {
        ("", rest)
    } else {
        match rest.find('/') {
            Some(k) => (&rest[..k], &rest[k..]),
            None => (rest, ""),
        }
    };
    let (userinfo, host) = match authority.rfind('@') {
        Some(k) => (&authority[..k], &authority[k + 1..]),
        None => ("", authority),
    };
    m.insert("scheme".into(), Value::from(scheme));
    m.insert("host".into(), Value::from(host));
    m.insert(
        "hostname".into(),
        Value::from(host.rsplit_once(':').map(|x| x.0).unwrap_or(host)),
    );
    m.insert("path".into(), Value::from(path));
    m.insert("query".into(), Value::from(query));
    m.insert("opaque".into(), Value::from(""));
    m.insert("fragment".into(), Value::from(fragment));
    m.insert("userinfo".into(), Value::from(userinfo));
    Ok(Value::Map(Arc::new(m)))
}

fn url_join(d: &BTreeMap<String, Value>) -> String {
    let g = |k: &str| d.get(k).map(strval).unwrap_or_default();
    let mut out = String::new();
    if !g("scheme").is_empty() {
        out.push_str(&g("scheme"));
        out.push(':');
    }
    if !g("host").is_empty() || !g("userinfo").is_empty() {
        out.push_str("//");
        if !g("userinfo").is_empty() {
            out.push_str(&g("userinfo"));
            out.push('@');
        }
        out.push_str(&g("host"));
    }
    out.push_str(&g("path"));
    if !g("query").is_empty() {
        out.push('?');
        out.push_str(&g("query"));
    }
    if !g("fragment").is_empty() {
        out.push('#');
        out.push_str(&g("fragment"));
    }
    out
}
