//! Go's `fmt` package behaviour for `print`, `println` and `printf` (verbs, flags, widths, and
//! the `%!verb(type=value)` complaints).

use std::fmt::Write as _;

use crate::lex::go_quote;
use crate::value::{Value, format_float_e, format_float_f, format_float_g, format_float_gp};

/// fmt.Sprint: spaces between operands when neither side is a string.
pub(crate) fn sprint(args: &[Value]) -> String {
    let mut out = String::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            let prev_str = matches!(args[i - 1], Value::String(_));
            let cur_str = matches!(a, Value::String(_));
            if !prev_str && !cur_str {
                out.push(' ');
            }
        }
        a.write_go(&mut out);
    }
    out
}

/// fmt.Sprintln: always spaces, plus a newline.
pub(crate) fn sprintln(args: &[Value]) -> String {
    let mut out = String::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        a.write_go(&mut out);
    }
    out.push('\n');
    out
}

#[derive(Default, Clone, Copy)]
struct Flags {
    plus: bool,
    minus: bool,
    sharp: bool,
    space: bool,
    zero: bool,
    width: Option<usize>,
    prec: Option<usize>,
}

/// fmt.Sprintf.
pub(crate) fn sprintf(format: &str, args: &[Value]) -> String {
    let mut out = String::new();
    let mut argi = 0usize;
    let mut reordered = false;
    let b = format.as_bytes();
    let mut i = 0;
    while i < b.len() {
        // copy literal text up to '%'
        let start = i;
        while i < b.len() && b[i] != b'%' {
            i += 1;
        }
        out.push_str(&format[start..i]);
        if i >= b.len() {
            break;
        }
        i += 1; // skip %
        let mut f = Flags::default();
        // flags
        while i < b.len() {
            match b[i] {
                b'#' => f.sharp = true,
                b'0' => f.zero = !f.minus,
                b'+' => f.plus = true,
                b'-' => {
                    f.minus = true;
                    f.zero = false;
                }
                b' ' => f.space = true,
                _ => break,
            }
            i += 1;
        }
        // argument index
        let parse_index = |i: &mut usize, argi: &mut usize, reordered: &mut bool| -> bool {
            if *i < b.len()
                && b[*i] == b'['
                && let Some(close) = format[*i..].find(']')
            {
                let inner = &format[*i + 1..*i + close];
                if let Ok(n) = inner.parse::<usize>()
                    && n >= 1
                {
                    *argi = n - 1;
                    *reordered = true;
                    *i += close + 1;
                    return true;
                }
                *i += close + 1;
                return false;
            }
            true
        };
        let mut good_index = parse_index(&mut i, &mut argi, &mut reordered);
        // width
        if i < b.len() && b[i] == b'*' {
            i += 1;
            match args.get(argi) {
                Some(Value::Int(n) | Value::Int64(n)) if n.unsigned_abs() <= 1_000_000 => {
                    if *n < 0 {
                        f.minus = true;
                        f.zero = false;
                        f.width = Some(n.unsigned_abs() as usize);
                    } else {
                        f.width = Some(*n as usize);
                    }
                }
                _ => out.push_str("%!(BADWIDTH)"),
            }
            argi += 1;
        } else {
            let s = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            if i > s {
                f.width = format[s..i].parse::<usize>().ok().map(|w| w.min(1_000_000));
            }
        }
        // precision
        if i < b.len() && b[i] == b'.' {
            i += 1;
            good_index = parse_index(&mut i, &mut argi, &mut reordered);
            if i < b.len() && b[i] == b'*' {
                i += 1;
                match args.get(argi) {
                    Some(Value::Int(n) | Value::Int64(n)) if (0..=1_000_000).contains(n) => {
                        f.prec = Some(*n as usize)
                    }
                    _ => out.push_str("%!(BADPREC)"),
                }
                argi += 1;
            } else {
                let s = i;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
                f.prec = Some(format[s..i].parse::<usize>().unwrap_or(0).min(1_000_000));
            }
        }
        if !good_index {
            good_index = parse_index(&mut i, &mut argi, &mut reordered);
        }
        if i >= b.len() {
            out.push_str("%!(NOVERB)");
            break;
        }
        let verb = format[i..].chars().next().unwrap_or('%');
        i += verb.len_utf8();
        if verb == '%' {
            out.push('%');
            continue;
        }
        if !good_index {
            let _ = write!(out, "%!{verb}(BADINDEX)");
            continue;
        }
        let Some(arg) = args.get(argi) else {
            let _ = write!(out, "%!{verb}(MISSING)");
            continue;
        };
        argi += 1;
        fmt_arg(&mut out, arg, verb, f);
    }
    if !reordered && argi < args.len() {
        out.push_str("%!(EXTRA ");
        for (k, a) in args[argi..].iter().enumerate() {
            if k > 0 {
                out.push_str(", ");
            }
            match a {
                Value::Nil => out.push_str("<nil>"),
                _ => {
                    let _ = write!(out, "{}=", a.type_name());
                    a.write_go(&mut out);
                }
            }
        }
        out.push(')');
    }
    out
}

fn bad_verb(out: &mut String, v: &Value, verb: char) {
    match v {
        Value::Nil => {
            let _ = write!(out, "%!{verb}(<nil>)");
        }
        _ => {
            let _ = write!(out, "%!{verb}({}=", v.type_name());
            v.write_go(out);
            out.push(')');
        }
    }
}

fn pad(out: &mut String, s: &str, f: Flags) {
    let n = s.chars().count();
    let w = f.width.unwrap_or(0);
    if n >= w {
        out.push_str(s);
        return;
    }
    let fill = w - n;
    if f.minus {
        out.push_str(s);
        out.extend(std::iter::repeat_n(' ', fill));
    } else if f.zero {
        // zero padding goes after the sign
        let (sign, rest) = if s.starts_with(['-', '+', ' ']) {
            s.split_at(1)
        } else {
            ("", s)
        };
        out.push_str(sign);
        out.extend(std::iter::repeat_n('0', fill));
        out.push_str(rest);
    } else {
        out.extend(std::iter::repeat_n(' ', fill));
        out.push_str(s);
    }
}

fn pad_spaces(out: &mut String, s: &str, f: Flags) {
    let f2 = Flags { zero: false, ..f };
    pad(out, s, f2)
}

fn fmt_int(i: i64, verb: char, f: Flags) -> Option<String> {
    let neg = i < 0;
    let u = i.unsigned_abs();
    let mut digits = match verb {
        'd' | 'v' => u.to_string(),
        'b' => format!("{u:b}"),
        'o' | 'O' => format!("{u:o}"),
        'x' => format!("{u:x}"),
        'X' => format!("{u:X}"),
        _ => return None,
    };
    if let Some(p) = f.prec {
        if p == 0 && u == 0 {
            digits.clear();
        }
        while digits.len() < p {
            digits.insert(0, '0');
        }
    }
    let mut prefix = String::new();
    if f.sharp || verb == 'O' {
        match verb {
            'b' if f.sharp => prefix.push_str("0b"),
            'o' if f.sharp && !digits.starts_with('0') => prefix.push('0'),
            'O' => prefix.push_str("0o"),
            'x' if f.sharp => prefix.push_str("0x"),
            'X' if f.sharp => prefix.push_str("0X"),
            _ => {}
        }
    }
    let sign = if neg {
        "-"
    } else if f.plus {
        "+"
    } else if f.space {
        " "
    } else {
        ""
    };
    Some(format!("{sign}{prefix}{digits}"))
}

fn fmt_float(x: f64, verb: char, f: Flags) -> String {
    let mut s = match verb {
        'e' | 'E' => format_float_e(x, f.prec.unwrap_or(6), verb == 'E'),
        'f' | 'F' => format_float_f(x, f.prec.unwrap_or(6)),
        'g' | 'G' => match f.prec {
            Some(p) => format_float_gp(x, p, verb == 'G'),
            None => format_float_g(x, None, verb == 'G'),
        },
        _ => format_float_g(x, None, false),
    };
    if f.sharp && verb != 'v' && !s.contains('.') && x.is_finite() {
        // %#g keeps a decimal point
        if let Some(epos) = s.find(['e', 'E']) {
            s.insert(epos, '.');
        } else {
            s.push('.');
        }
    }
    if (f.plus || f.space) && !s.starts_with('-') {
        s.insert(0, if f.plus { '+' } else { ' ' });
    }
    s
}

fn fmt_arg(out: &mut String, v: &Value, verb: char, f: Flags) {
    match verb {
        'v' => {
            if f.sharp {
                let s = go_syntax(v);
                return pad_spaces(out, &s, f);
            }
            match v {
                Value::Int(i) | Value::Int64(i) => {
                    let s = fmt_int(*i, 'd', f).unwrap_or_default();
                    pad(out, &s, f)
                }
                Value::Float(x) => {
                    let s = fmt_float(*x, 'g', Flags { prec: f.prec, ..f });
                    pad(out, &s, f)
                }
                Value::List(l) => {
                    let mut s = String::from("[");
                    for (k, e) in l.iter().enumerate() {
                        if k > 0 {
                            s.push(' ');
                        }
                        fmt_arg(&mut s, e, 'v', Flags { width: None, ..f });
                    }
                    s.push(']');
                    pad_spaces(out, &s, f)
                }
                Value::Map(m) => {
                    let mut s = String::from("map[");
                    for (k, (key, e)) in m.iter().enumerate() {
                        if k > 0 {
                            s.push(' ');
                        }
                        s.push_str(key);
                        s.push(':');
                        fmt_arg(&mut s, e, 'v', Flags { width: None, ..f });
                    }
                    s.push(']');
                    pad_spaces(out, &s, f)
                }
                Value::String(st) => fmt_str(out, st, f),
                _ => pad_spaces(out, &v.to_go_string(), f),
            }
        }
        's' => match v {
            Value::String(s) => fmt_str(out, s, f),
            Value::Object(o) => fmt_str(out, &o.display(), f),
            Value::List(l) => {
                let mut s = String::from("[");
                for (k, e) in l.iter().enumerate() {
                    if k > 0 {
                        s.push(' ');
                    }
                    fmt_arg(&mut s, e, 's', Flags { width: None, ..f });
                }
                s.push(']');
                pad_spaces(out, &s, f)
            }
            Value::Map(m) => {
                let mut s = String::from("map[");
                for (k, (key, e)) in m.iter().enumerate() {
                    if k > 0 {
                        s.push(' ');
                    }
                    s.push_str(key);
                    s.push(':');
                    fmt_arg(&mut s, e, 's', Flags { width: None, ..f });
                }
                s.push(']');
                pad_spaces(out, &s, f)
            }
            _ => bad_verb(out, v, verb),
        },
        'q' => match v {
            Value::String(s) => {
                let q = if f.sharp && !s.contains('`') {
                    format!("`{s}`")
                } else {
                    go_quote(s)
                };
                pad_spaces(out, &q, f)
            }
            Value::Object(o) => pad_spaces(out, &go_quote(&o.display()), f),
            Value::Int(i) | Value::Int64(i) => {
                let c = u32::try_from(*i)
                    .ok()
                    .and_then(char::from_u32)
                    .unwrap_or('\u{FFFD}');
                let q = match c {
                    '\'' => "'\\''".to_string(),
                    '"' => "'\"'".to_string(),
                    c => {
                        let s = go_quote(&c.to_string());
                        format!("'{}'", &s[1..s.len() - 1])
                    }
                };
                pad_spaces(out, &q, f)
            }
            Value::List(l) => {
                let mut s = String::from("[");
                for (k, e) in l.iter().enumerate() {
                    if k > 0 {
                        s.push(' ');
                    }
                    fmt_arg(&mut s, e, 'q', Flags { width: None, ..f });
                }
                s.push(']');
                pad_spaces(out, &s, f)
            }
            _ => bad_verb(out, v, verb),
        },
        'd' | 'b' | 'o' | 'O' | 'x' | 'X' | 'c' | 'U' => match v {
            Value::Int(i) | Value::Int64(i) => {
                if verb == 'c' {
                    let c = u32::try_from(*i)
                        .ok()
                        .and_then(char::from_u32)
                        .unwrap_or('\u{FFFD}');
                    return pad_spaces(out, &c.to_string(), f);
                }
                if verb == 'U' {
                    let s = format!("U+{:04X}", i);
                    return pad_spaces(out, &s, f);
                }
                let s = fmt_int(*i, verb, f).unwrap_or_default();
                if f.prec.is_some() {
                    pad_spaces(out, &s, f)
                } else {
                    pad(out, &s, f)
                }
            }
            Value::String(s) if verb == 'x' || verb == 'X' => {
                let mut h = String::new();
                for (k, byte) in s.bytes().enumerate() {
                    if f.space && k > 0 {
                        h.push(' ');
                    }
                    if f.sharp && (k == 0 || f.space) {
                        h.push_str(if verb == 'x' { "0x" } else { "0X" });
                    }
                    if verb == 'x' {
                        let _ = write!(h, "{byte:02x}");
                    } else {
                        let _ = write!(h, "{byte:02X}");
                    }
                }
                pad_spaces(out, &h, f)
            }
            Value::Float(x) if verb == 'b' || verb == 'x' || verb == 'X' => {
                // Rare: hexadecimal float; fall back to %g-ish with p exponent via Rust.
                let _ = x;
                bad_verb(out, v, verb)
            }
            Value::List(l) => {
                let mut s = String::from("[");
                for (k, e) in l.iter().enumerate() {
                    if k > 0 {
                        s.push(' ');
                    }
                    fmt_arg(&mut s, e, verb, Flags { width: None, ..f });
                }
                s.push(']');
                pad_spaces(out, &s, f)
            }
            Value::Map(m) => {
                let mut s = String::from("map[");
                for (k, (key, e)) in m.iter().enumerate() {
                    if k > 0 {
                        s.push(' ');
                    }
                    s.push_str(key);
                    s.push(':');
                    fmt_arg(&mut s, e, verb, Flags { width: None, ..f });
                }
                s.push(']');
                pad_spaces(out, &s, f)
            }
            _ => bad_verb(out, v, verb),
        },
        'e' | 'E' | 'f' | 'F' | 'g' | 'G' => match v {
            Value::Float(x) => {
                let s = fmt_float(*x, verb, f);
                pad(out, &s, f)
            }
            Value::List(l) => {
                let mut s = String::from("[");
                for (k, e) in l.iter().enumerate() {
                    if k > 0 {
                        s.push(' ');
                    }
                    fmt_arg(&mut s, e, verb, Flags { width: None, ..f });
                }
                s.push(']');
                pad_spaces(out, &s, f)
            }
            _ => bad_verb(out, v, verb),
        },
        't' => match v {
            Value::Bool(b) => pad_spaces(out, if *b { "true" } else { "false" }, f),
            _ => bad_verb(out, v, verb),
        },
        'T' => pad_spaces(out, &v.type_name(), f),
        _ => bad_verb(out, v, verb),
    }
}

fn fmt_str(out: &mut String, s: &str, f: Flags) {
    match f.prec {
        Some(p) => {
            let t: String = s.chars().take(p).collect();
            pad_spaces(out, &t, f)
        }
        None => pad_spaces(out, s, f),
    }
}

/// Go's `%#v` for our value model.
fn go_syntax(v: &Value) -> String {
    match v {
        Value::Nil => "<nil>".into(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) | Value::Int64(i) => i.to_string(),
        Value::Float(x) => {
            let s = format_float_g(*x, None, false);
            if s.contains(['.', 'e', 'I', 'N']) {
                s
            } else {
                s.to_string()
            }
        }
        Value::String(s) => go_quote(s),
        Value::List(l) => {
            let inner: Vec<String> = l.iter().map(go_syntax).collect();
            format!("[]interface {{}}{{{}}}", inner.join(", "))
        }
        Value::Map(m) => {
            let inner: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{}:{}", go_quote(k), go_syntax(v)))
                .collect();
            format!("map[string]interface {{}}{{{}}}", inner.join(", "))
        }
        Value::Object(o) => o.display(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: &str) -> Value {
        Value::str(x)
    }

    #[test]
    fn verbs() {
        assert_eq!(sprintf("%d-%s", &[Value::Int(5), s("x")]), "5-x");
        assert_eq!(sprintf("%05d", &[Value::Int(-42)]), "-0042");
        assert_eq!(sprintf("%-5s|", &[s("ab")]), "ab   |");
        assert_eq!(sprintf("%5.1f", &[Value::Float(2.46913)]), "  2.5");
        assert_eq!(
            sprintf(
                "%x %X %o %b",
                &[
                    Value::Int(255),
                    Value::Int(255),
                    Value::Int(8),
                    Value::Int(5)
                ]
            ),
            "ff FF 10 101"
        );
        assert_eq!(sprintf("%q", &[s("a\"b")]), "\"a\\\"b\"");
        assert_eq!(sprintf("%d", &[Value::Float(80.0)]), "%!d(float64=80)");
        assert_eq!(sprintf("%s", &[Value::Int(1)]), "%!s(int=1)");
        assert_eq!(sprintf("%d %d", &[Value::Int(1)]), "1 %!d(MISSING)");
        assert_eq!(
            sprintf("%d", &[Value::Int(1), s("x")]),
            "1%!(EXTRA string=x)"
        );
        assert_eq!(sprintf("%v", &[Value::Nil]), "<nil>");
        assert_eq!(sprintf("%t", &[Value::Bool(true)]), "true");
        assert_eq!(sprintf("%e", &[Value::Float(1234.5678)]), "1.234568e+03");
        assert_eq!(sprintf("%g", &[Value::Float(1e6)]), "1e+06");
        assert_eq!(sprintf("%c", &[Value::Int(65)]), "A");
        assert_eq!(sprintf("100%%", &[]), "100%");
        assert_eq!(sprintf("%.2s", &[s("hello")]), "he");
        assert_eq!(sprintf("%+d", &[Value::Int(3)]), "+3");
        assert_eq!(sprintf("%#x", &[Value::Int(255)]), "0xff");
        assert_eq!(sprintf("%x", &[s("hi")]), "6869");
        assert_eq!(sprintf("%6.2f%%", &[Value::Float(99.5)]), " 99.50%");
    }

    #[test]
    fn sprint_spacing() {
        assert_eq!(sprint(&[Value::Int(1), Value::Int(2)]), "1 2");
        assert_eq!(sprint(&[s("a"), Value::Int(2), s("b")]), "a2b");
        assert_eq!(sprintln(&[s("a"), s("b")]), "a b\n");
    }
}
