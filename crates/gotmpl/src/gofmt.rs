//! Go's `strconv.FormatFloat` and `encoding/json` float text, the one copy the workspace uses
//! wherever output must match what Go prints (templates, YAML, JSON, Helm's `--set` strings,
//! kustomize output): a float printed differently changes rendered manifests and their hashes.

use std::fmt::Write as _;

/// Go's `strconv.FormatFloat(f, fmt, prec, bit_size)` for the formats templates and encoders
/// use: `'e'`, `'E'`, `'f'`, `'g'`, `'G'`; `prec < 0` means the shortest text that reads back as
/// the same value. `bit_size` 32 first rounds `f` to float32 (as Go does for float32 values), so
/// its shortest digits are float32's. Any other format letter prints as `'g'`.
pub fn format_float(f: f64, fmt: char, prec: i32, bit_size: u32) -> String {
    let f = if bit_size == 32 {
        f64::from(f as f32)
    } else {
        f
    };
    let shortest = prec < 0;
    let p = usize::try_from(prec).unwrap_or(0);
    if shortest && bit_size == 32 && f.is_finite() {
        return format_shortest32(f, fmt);
    }
    match fmt {
        'e' | 'E' if shortest => format_float_g_exp(f, fmt == 'E'),
        'e' | 'E' => format_float_e(f, p, fmt == 'E'),
        'f' if shortest => format_float_f_shortest(f),
        'f' => format_float_f(f, p),
        'G' | 'g' if !shortest => format_float_gp(f, p, fmt == 'G'),
        _ => format_float_g(f, None, fmt == 'G'),
    }
}

/// Shortest float32 digits laid out in the requested format.
fn format_shortest32(f: f64, fmt: char) -> String {
    let (neg, digits, dp) = float_digits_bits(f, None, 32);
    layout_shortest(f, neg, &digits, dp, fmt)
}

/// `'e'` with shortest digits.
fn format_float_g_exp(f: f64, upper: bool) -> String {
    if !f.is_finite() {
        return format_float_g(f, None, upper);
    }
    let (neg, digits, dp) = float_digits(f, None);
    layout_shortest(f, neg, &digits, dp, if upper { 'E' } else { 'e' })
}

/// `'f'` with shortest digits.
fn format_float_f_shortest(f: f64) -> String {
    if !f.is_finite() {
        return format_float_g(f, None, false);
    }
    let (neg, digits, dp) = float_digits(f, None);
    layout_shortest(f, neg, &digits, dp, 'f')
}

/// Lays out shortest digits (`digits` × 10^(dp-len)) as Go's `%e`, `%f` or `%g` would.
fn layout_shortest(f: f64, neg: bool, digits: &str, dp: i64, fmt: char) -> String {
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    let exp = dp - 1;
    let use_exp = match fmt {
        'e' | 'E' => true,
        'f' => false,
        _ => !(-4..6).contains(&exp),
    };
    if use_exp {
        let (first, rest) = digits.split_at(1.min(digits.len()));
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        out.push(if matches!(fmt, 'E' | 'G') { 'E' } else { 'e' });
        push_exp(&mut out, if f == 0.0 { 0 } else { exp });
    } else {
        push_fixed(&mut out, digits, dp, None);
    }
    out
}

/// Formats a float like Go's strconv 'g'/'e'/'f' family. `prec` None = shortest.
/// `upper` selects 'G'/'E'.
pub(crate) fn format_float_g(f: f64, prec: Option<usize>, upper: bool) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    let p = prec.map(|p| if p == 0 { 1 } else { p });
    let (neg, mut digits, dp) = float_digits(f, p);
    while digits.len() > 1 && digits.ends_with('0') {
        digits.pop();
    }
    let nd = digits.len() as i64;
    let exp = dp - 1;
    let eprec: i64 = match p {
        None => 6,
        Some(p) => {
            let p = p as i64;
            if p > nd && nd >= dp { nd } else { p }
        }
    };
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if exp < -4 || exp >= eprec {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push(if upper { 'E' } else { 'e' });
        push_exp(&mut out, if f == 0.0 { 0 } else { exp });
    } else {
        let frac = match p {
            None => (nd - dp).max(0) as usize,
            Some(pp) => {
                let pp = pp as i64;
                let pp = if pp > dp { nd } else { pp };
                (pp - dp).max(0) as usize
            }
        };
        push_fixed(&mut out, &digits, dp, Some(frac));
    }
    out
}

fn push_exp(out: &mut String, exp: i64) {
    if exp < 0 {
        out.push('-');
    } else {
        out.push('+');
    }
    let a = exp.abs();
    if a < 10 {
        out.push('0');
    }
    let _ = write!(out, "{a}");
}

/// Writes digits with decimal point at `dp`; `frac` = Some(n) pads/limits to n fraction digits.
fn push_fixed(out: &mut String, digits: &str, dp: i64, frac: Option<usize>) {
    let nd = digits.len() as i64;
    if dp <= 0 {
        out.push('0');
    } else {
        for i in 0..dp {
            out.push(if i < nd {
                digits.as_bytes()[i as usize] as char
            } else {
                '0'
            });
        }
    }
    let want = match frac {
        Some(n) => n as i64,
        None => (nd - dp).max(0),
    };
    let frac_digits: Vec<char> = (dp..dp + want)
        .map(|i| {
            if i < 0 || i >= nd {
                '0'
            } else {
                digits.as_bytes()[i as usize] as char
            }
        })
        .collect();
    if !frac_digits.is_empty() {
        out.push('.');
        out.extend(frac_digits);
    }
}

/// Decimal digits of |f|: (negative, digits without leading zeros, decimal point position).
/// `sig` = Some(n) rounds to n significant digits; None = shortest round-trip digits.
pub(crate) fn float_digits(f: f64, sig: Option<usize>) -> (bool, String, i64) {
    let neg = f.is_sign_negative();
    let a = f.abs();
    if a == 0.0 {
        // Go pads zero to the requested significant digits: `%.2e` of 0 is `0.00e+00`.
        return (neg, "0".repeat(sig.unwrap_or(1).clamp(1, 1100)), 1);
    }
    let s = match sig {
        None => format!("{a:e}"),
        Some(n) => format!("{:.*e}", n.saturating_sub(1).min(1100), a),
    };
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i64 = exp.parse().unwrap_or(0);
    let mut digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    if sig.is_none() {
        while digits.len() > 1 && digits.ends_with('0') {
            digits.pop();
        }
    }
    (neg, digits, exp + 1)
}

/// Go's `%e` with precision (default 6).
pub(crate) fn format_float_e(f: f64, prec: usize, upper: bool) -> String {
    if !f.is_finite() {
        return format_float_g(f, None, upper);
    }
    let (neg, digits, dp) = float_digits(f, Some(prec + 1));
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    out.push_str(&digits[..1]);
    if prec > 0 {
        out.push('.');
        out.push_str(&digits[1..]);
    }
    out.push(if upper { 'E' } else { 'e' });
    push_exp(&mut out, if f == 0.0 { 0 } else { dp - 1 });
    out
}

/// Go's `%f` with precision (default 6).
pub(crate) fn format_float_f(f: f64, prec: usize) -> String {
    if !f.is_finite() {
        return format_float_g(f, None, false);
    }
    let s = format!("{:.*}", prec.min(1100), f.abs());
    let mut out = String::new();
    if f.is_sign_negative() {
        out.push('-');
    }
    out.push_str(&s);
    out
}

/// Go's `%g` with an explicit precision.
pub(crate) fn format_float_gp(f: f64, prec: usize, upper: bool) -> String {
    format_float_g(f, Some(prec), upper)
}

/// Go's float64 JSON text: 'f' format unless tiny/huge, then 'e' with a short exponent.
pub fn json_float(f: f64) -> Option<String> {
    if !f.is_finite() {
        return None;
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let (neg, digits, dp) = float_digits(f, None);
        let mut s = String::new();
        if neg {
            s.push('-');
        }
        s.push_str(&digits[..1]);
        if digits.len() > 1 {
            s.push('.');
            s.push_str(&digits[1..]);
        }
        let e = dp - 1;
        let _ = write!(s, "e{}{}", if e < 0 { '-' } else { '+' }, e.abs());
        // Go pads to two digits then trims "e-0X" to "e-X"; positive exponents keep 2 digits.
        if (0..10).contains(&e) {
            s = s.replacen(&format!("e+{}", e), &format!("e+0{}", e), 1);
        }
        return Some(s);
    }
    if f == 0.0 {
        return Some(if f.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        });
    }
    let (neg, digits, dp) = float_digits(f, None);
    let mut s = String::new();
    if neg {
        s.push('-');
    }
    let nd = digits.len() as i64;
    if dp <= 0 {
        s.push_str("0.");
        for _ in 0..(-dp) {
            s.push('0');
        }
        s.push_str(&digits);
    } else if dp >= nd {
        s.push_str(&digits);
        for _ in 0..(dp - nd) {
            s.push('0');
        }
    } else {
        s.push_str(&digits[..dp as usize]);
        s.push('.');
        s.push_str(&digits[dp as usize..]);
    }
    Some(s)
}

/// Decimal digits of |f| as [`float_digits`], with float32's shortest digits when `bits` is 32.
fn float_digits_bits(f: f64, sig: Option<usize>, bits: u32) -> (bool, String, i64) {
    if bits != 32 || sig.is_some() || f == 0.0 || !f.is_finite() {
        return float_digits(f, sig);
    }
    let neg = f.is_sign_negative();
    let s = format!("{:e}", (f as f32).abs());
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i64 = exp.parse().unwrap_or(0);
    let mut digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    while digits.len() > 1 && digits.ends_with('0') {
        digits.pop();
    }
    (neg, digits, exp + 1)
}
