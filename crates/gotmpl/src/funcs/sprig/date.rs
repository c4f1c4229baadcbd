//! Sprig's date functions with Go's reference-time layouts ("2006-01-02 15:04:05").

use std::sync::Arc;

use jiff::tz::TimeZone;
use jiff::{Timestamp, Zoned};

use super::super::{Map, Ty, reg, s};
use crate::value::{Object, Value};

/// A Go time.Time as templates see it.
#[derive(Debug, Clone)]
pub(crate) struct GoTime(pub Zoned);

impl Object for GoTime {
    fn field(&self, name: &str) -> Option<Value> {
        self.call(name, &[]).and_then(|r| r.ok())
    }
    fn call(&self, method: &str, args: &[Value]) -> Option<Result<Value, String>> {
        let z = &self.0;
        Some(Ok(match method {
            "Year" => Value::Int(z.year() as i64),
            "Month" => Value::Int(z.month() as i64),
            "Day" => Value::Int(z.day() as i64),
            "Hour" => Value::Int(z.hour() as i64),
            "Minute" => Value::Int(z.minute() as i64),
            "Second" => Value::Int(z.second() as i64),
            "Unix" => Value::Int64(z.timestamp().as_second()),
            "UnixNano" => Value::Int64(z.timestamp().as_nanosecond() as i64),
            "String" => Value::from(self.display()),
            "Format" => match args.first() {
                Some(Value::String(l)) => Value::from(format_go(z, l)),
                _ => return Some(Err("wrong number of args for Format: want 1 got 0".into())),
            },
            "UTC" => Value::Object(Arc::new(GoTime(z.with_time_zone(TimeZone::UTC)))),
            _ => return None,
        }))
    }
    fn display(&self) -> String {
        format_go(&self.0, "2006-01-02 15:04:05.999999999 -0700 MST")
    }
    fn type_name(&self) -> String {
        "time.Time".into()
    }
    fn to_json(&self) -> serde_json::Value {
        serde_json::Value::String(format_go(&self.0, "2006-01-02T15:04:05.999999999Z07:00"))
    }
}

fn local_tz() -> TimeZone {
    TimeZone::system()
}

fn zone(name: &str) -> Result<TimeZone, String> {
    match name {
        "" | "UTC" => Ok(TimeZone::UTC),
        "Local" => Ok(local_tz()),
        n => TimeZone::get(n).map_err(|_| format!("unknown time zone {n}")),
    }
}

/// sprig's date argument: time.Time, unix seconds (int), else now.
fn to_time(v: &Value, tz: &TimeZone) -> Zoned {
    match v {
        Value::Object(o) if o.type_name() == "time.Time" => {
            // re-parse from RFC3339 JSON form
            if let serde_json::Value::String(s) = o.to_json()
                && let Ok(ts) = s.parse::<Timestamp>()
            {
                return ts.to_zoned(tz.clone());
            }
            Zoned::now().with_time_zone(tz.clone())
        }
        Value::Int(i) | Value::Int64(i) => Timestamp::from_second(*i)
            .unwrap_or(Timestamp::UNIX_EPOCH)
            .to_zoned(tz.clone()),
        _ => Zoned::now().with_time_zone(tz.clone()),
    }
}

const LONG_MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const LONG_DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Lit(String),
    LongMonth,
    Month,
    NumMonth,
    ZeroMonth,
    LongWeekDay,
    WeekDay,
    Day,
    UnderDay,
    ZeroDay,
    Hour,
    Hour12,
    ZeroHour12,
    Minute,
    ZeroMinute,
    Second,
    ZeroSecond,
    LongYear,
    Year,
    PM,
    Pm,
    Tz,
    NumTz(&'static str),
    Frac(char, usize),
}

fn tokenize(layout: &str) -> Vec<Tok> {
    let b = layout.as_bytes();
    let mut out = Vec::new();
    let mut lit = String::new();
    let mut i = 0;
    let starts = |i: usize, p: &str| layout.get(i..).is_some_and(|r| r.starts_with(p));
    while i < b.len() {
        let (tok, n): (Option<Tok>, usize) = match b[i] {
            b'J' if starts(i, "January") => (Some(Tok::LongMonth), 7),
            b'J' if starts(i, "Jan") => (Some(Tok::Month), 3),
            b'M' if starts(i, "Monday") => (Some(Tok::LongWeekDay), 6),
            b'M' if starts(i, "Mon") => (Some(Tok::WeekDay), 3),
            b'M' if starts(i, "MST") => (Some(Tok::Tz), 3),
            b'0' if i + 1 < b.len() && (b'1'..=b'6').contains(&b[i + 1]) => (
                Some(match b[i + 1] {
                    b'1' => Tok::ZeroMonth,
                    b'2' => Tok::ZeroDay,
                    b'3' => Tok::ZeroHour12,
                    b'4' => Tok::ZeroMinute,
                    b'5' => Tok::ZeroSecond,
                    _ => Tok::Year,
                }),
                2,
            ),
            b'1' if starts(i, "15") => (Some(Tok::Hour), 2),
            b'1' => (Some(Tok::NumMonth), 1),
            b'2' if starts(i, "2006") => (Some(Tok::LongYear), 4),
            b'2' => (Some(Tok::Day), 1),
            b'_' if starts(i, "_2") && !starts(i, "_2006") => (Some(Tok::UnderDay), 2),
            b'3' => (Some(Tok::Hour12), 1),
            b'4' => (Some(Tok::Minute), 1),
            b'5' => (Some(Tok::Second), 1),
            b'P' if starts(i, "PM") => (Some(Tok::PM), 2),
            b'p' if starts(i, "pm") => (Some(Tok::Pm), 2),
            b'-' | b'Z' => {
                let z = b[i] == b'Z';
                let pats: [&'static str; 5] = if z {
                    ["Z070000", "Z07:00:00", "Z0700", "Z07:00", "Z07"]
                } else {
                    ["-070000", "-07:00:00", "-0700", "-07:00", "-07"]
                };
                match pats.iter().find(|p| starts(i, p)) {
                    Some(p) => (Some(Tok::NumTz(p)), p.len()),
                    None => (None, 1),
                }
            }
            b'.' | b',' if i + 1 < b.len() && (b[i + 1] == b'0' || b[i + 1] == b'9') => {
                let ch = b[i + 1];
                let mut j = i + 1;
                while j < b.len() && b[j] == ch {
                    j += 1;
                }
                if j < b.len() && b[j].is_ascii_digit() {
                    (None, 1)
                } else {
                    (Some(Tok::Frac(ch as char, j - i - 1)), j - i)
                }
            }
            _ => (None, 1),
        };
        match tok {
            Some(t) => {
                if !lit.is_empty() {
                    out.push(Tok::Lit(std::mem::take(&mut lit)));
                }
                // a fraction token keeps its separator as literal text
                if let Tok::Frac(..) = t {
                    lit.push(b[i] as char);
                    out.push(Tok::Lit(std::mem::take(&mut lit)));
                }
                out.push(t);
                i += n;
            }
            None => {
                let c = layout[i..].chars().next().unwrap_or(' ');
                lit.push(c);
                i += c.len_utf8();
            }
        }
    }
    if !lit.is_empty() {
        out.push(Tok::Lit(lit));
    }
    out
}

/// time.Time.Format with a Go layout.
pub(crate) fn format_go(z: &Zoned, layout: &str) -> String {
    let mut o = String::new();
    let toks = tokenize(layout);
    let mut k = 0;
    while k < toks.len() {
        let t = &toks[k];
        match t {
            Tok::Lit(l) => {
                // separator before a '9' fraction is dropped when the fraction is empty
                if let Some(Tok::Frac('9', _)) = toks.get(k + 1) {
                    let frac = frac_digits(z, toks.get(k + 1));
                    if frac.is_empty() {
                        o.push_str(&l[..l.len() - 1]);
                    } else {
                        o.push_str(l);
                    }
                } else {
                    o.push_str(l);
                }
            }
            Tok::LongMonth => o.push_str(LONG_MONTHS[(z.month() as usize).saturating_sub(1) % 12]),
            Tok::Month => {
                o.push_str(&LONG_MONTHS[(z.month() as usize).saturating_sub(1) % 12][..3])
            }
            Tok::NumMonth => o.push_str(&z.month().to_string()),
            Tok::ZeroMonth => o.push_str(&format!("{:02}", z.month())),
            Tok::LongWeekDay => o.push_str(LONG_DAYS[z.weekday().to_sunday_zero_offset() as usize]),
            Tok::WeekDay => {
                o.push_str(&LONG_DAYS[z.weekday().to_sunday_zero_offset() as usize][..3])
            }
            Tok::Day => o.push_str(&z.day().to_string()),
            Tok::UnderDay => o.push_str(&format!("{:>2}", z.day())),
            Tok::ZeroDay => o.push_str(&format!("{:02}", z.day())),
            Tok::Hour => o.push_str(&format!("{:02}", z.hour())),
            Tok::Hour12 => o.push_str(&h12(z.hour()).to_string()),
            Tok::ZeroHour12 => o.push_str(&format!("{:02}", h12(z.hour()))),
            Tok::Minute => o.push_str(&z.minute().to_string()),
            Tok::ZeroMinute => o.push_str(&format!("{:02}", z.minute())),
            Tok::Second => o.push_str(&z.second().to_string()),
            Tok::ZeroSecond => o.push_str(&format!("{:02}", z.second())),
            Tok::LongYear => o.push_str(&format!("{:04}", z.year())),
            Tok::Year => o.push_str(&format!("{:02}", z.year().rem_euclid(100))),
            Tok::PM => o.push_str(if z.hour() >= 12 { "PM" } else { "AM" }),
            Tok::Pm => o.push_str(if z.hour() >= 12 { "pm" } else { "am" }),
            Tok::Tz => {
                let abbr = z.strftime("%Z").to_string();
                if abbr.is_empty() || abbr.starts_with(['+', '-']) {
                    o.push_str(&numeric_tz(z, "-0700"));
                } else {
                    o.push_str(&abbr);
                }
            }
            Tok::NumTz(p) => o.push_str(&numeric_tz(z, p)),
            Tok::Frac(..) => o.push_str(&frac_digits(z, Some(t))),
        }
        k += 1;
    }
    o
}

fn h12(h: i8) -> i8 {
    match h % 12 {
        0 => 12,
        x => x,
    }
}

fn frac_digits(z: &Zoned, t: Option<&Tok>) -> String {
    let Some(Tok::Frac(ch, n)) = t else {
        return String::new();
    };
    let ns = format!("{:09}", z.subsec_nanosecond());
    let mut d = ns[..(*n).min(9)].to_string();
    if *ch == '9' {
        d = ns.trim_end_matches('0').to_string();
        if d.len() > *n {
            d.truncate(*n);
        }
    }
    d
}

fn numeric_tz(z: &Zoned, p: &str) -> String {
    let secs = z.offset().seconds();
    if p.starts_with('Z') && secs == 0 {
        return "Z".into();
    }
    let sign = if secs < 0 { '-' } else { '+' };
    let a = secs.abs();
    let (h, m, s) = (a / 3600, (a / 60) % 60, a % 60);
    let body = &p[1..];
    match body {
        "070000" => format!("{sign}{h:02}{m:02}{s:02}"),
        "07:00:00" => format!("{sign}{h:02}:{m:02}:{s:02}"),
        "0700" => format!("{sign}{h:02}{m:02}"),
        "07:00" => format!("{sign}{h:02}:{m:02}"),
        _ => format!("{sign}{h:02}"),
    }
}

/// time.ParseInLocation with a Go layout.
pub(crate) fn parse_go(layout: &str, value: &str, tz: &TimeZone) -> Result<Zoned, String> {
    let err = || {
        format!(
            "parsing time {} as {}: cannot parse {} as {}",
            crate::lex::go_quote(value),
            crate::lex::go_quote(layout),
            crate::lex::go_quote(value),
            crate::lex::go_quote(layout)
        )
    };
    let toks = tokenize(layout);
    let (mut year, mut month, mut day, mut hour, mut min, mut sec, mut nanos) =
        (0i64, 1i64, 1i64, 0i64, 0i64, 0i64, 0i64);
    let mut pm: Option<bool> = None;
    let mut offset: Option<i32> = None;
    let mut rest = value;
    let take_num = |rest: &mut &str, min: usize, max: usize| -> Option<i64> {
        let n = rest
            .bytes()
            .take(max)
            .take_while(|b| b.is_ascii_digit())
            .count();
        if n < min {
            return None;
        }
        let v = rest[..n].parse().ok()?;
        *rest = &rest[n..];
        Some(v)
    };
    for t in &toks {
        match t {
            Tok::Lit(l) => {
                rest = rest.strip_prefix(l.as_str()).ok_or_else(err)?;
            }
            Tok::LongYear => year = take_num(&mut rest, 4, 4).ok_or_else(err)?,
            Tok::Year => {
                let y = take_num(&mut rest, 2, 2).ok_or_else(err)?;
                year = if y >= 69 { 1900 + y } else { 2000 + y };
            }
            Tok::ZeroMonth => month = take_num(&mut rest, 2, 2).ok_or_else(err)?,
            Tok::NumMonth => month = take_num(&mut rest, 1, 2).ok_or_else(err)?,
            Tok::LongMonth | Tok::Month => {
                let idx = LONG_MONTHS
                    .iter()
                    .position(|mn| {
                        let cand = if *t == Tok::LongMonth { *mn } else { &mn[..3] };
                        rest.len() >= cand.len() && rest[..cand.len()].eq_ignore_ascii_case(cand)
                    })
                    .ok_or_else(err)?;
                let len = if *t == Tok::LongMonth {
                    LONG_MONTHS[idx].len()
                } else {
                    3
                };
                rest = &rest[len..];
                month = idx as i64 + 1;
            }
            Tok::LongWeekDay | Tok::WeekDay => {
                let idx = LONG_DAYS
                    .iter()
                    .position(|d| {
                        let cand = if *t == Tok::LongWeekDay { *d } else { &d[..3] };
                        rest.len() >= cand.len() && rest[..cand.len()].eq_ignore_ascii_case(cand)
                    })
                    .ok_or_else(err)?;
                let len = if *t == Tok::LongWeekDay {
                    LONG_DAYS[idx].len()
                } else {
                    3
                };
                rest = &rest[len..];
            }
            Tok::ZeroDay => day = take_num(&mut rest, 2, 2).ok_or_else(err)?,
            Tok::Day => day = take_num(&mut rest, 1, 2).ok_or_else(err)?,
            Tok::UnderDay => {
                rest = rest.strip_prefix(' ').unwrap_or(rest);
                day = take_num(&mut rest, 1, 2).ok_or_else(err)?;
            }
            Tok::Hour => hour = take_num(&mut rest, 2, 2).ok_or_else(err)?,
            Tok::Hour12 => hour = take_num(&mut rest, 1, 2).ok_or_else(err)?,
            Tok::ZeroHour12 => hour = take_num(&mut rest, 2, 2).ok_or_else(err)?,
            Tok::Minute => min = take_num(&mut rest, 1, 2).ok_or_else(err)?,
            Tok::ZeroMinute => min = take_num(&mut rest, 2, 2).ok_or_else(err)?,
            Tok::Second => sec = take_num(&mut rest, 1, 2).ok_or_else(err)?,
            Tok::ZeroSecond => {
                sec = take_num(&mut rest, 2, 2).ok_or_else(err)?;
                // Go accepts a fractional second after seconds even when the layout lacks one
                if rest.starts_with('.')
                    && rest[1..].starts_with(|c: char| c.is_ascii_digit())
                    && !layout.contains(".0")
                    && !layout.contains(".9")
                {
                    let n = rest[1..].bytes().take_while(|b| b.is_ascii_digit()).count();
                    let digits = &rest[1..1 + n];
                    nanos = format!("{:0<9}", &digits[..n.min(9)]).parse().unwrap_or(0);
                    rest = &rest[1 + n..];
                }
            }
            Tok::PM | Tok::Pm => {
                let p = rest.get(..2).ok_or_else(err)?;
                pm = Some(p.eq_ignore_ascii_case("PM"));
                if !p.eq_ignore_ascii_case("PM") && !p.eq_ignore_ascii_case("AM") {
                    return Err(err());
                }
                rest = &rest[2..];
            }
            Tok::Tz => {
                let n = rest.bytes().take_while(|b| b.is_ascii_uppercase()).count();
                if n < 3 {
                    return Err(err());
                }
                if &rest[..n] == "UTC" || &rest[..n] == "GMT" {
                    offset = Some(0);
                }
                rest = &rest[n..];
            }
            Tok::NumTz(p) => {
                if p.starts_with('Z') && rest.starts_with('Z') {
                    rest = &rest[1..];
                    offset = Some(0);
                    continue;
                }
                let sign = match rest.as_bytes().first() {
                    Some(b'+') => 1,
                    Some(b'-') => -1,
                    _ => return Err(err()),
                };
                rest = &rest[1..];
                let h = take_num(&mut rest, 2, 2).ok_or_else(err)?;
                let mut m = 0;
                if p.contains(':') {
                    rest = rest.strip_prefix(':').ok_or_else(err)?;
                }
                if p.len() > 3 {
                    m = take_num(&mut rest, 2, 2).ok_or_else(err)?;
                }
                offset = Some(sign * (h * 3600 + m * 60) as i32);
            }
            Tok::Frac(_, _) => {
                let n = rest.bytes().take_while(|b| b.is_ascii_digit()).count();
                let digits = &rest[..n];
                nanos = format!("{:0<9}", &digits[..n.min(9)]).parse().unwrap_or(0);
                rest = &rest[n..];
            }
        }
    }
    if !rest.is_empty() {
        return Err(format!(
            "parsing time {}: extra text: {}",
            crate::lex::go_quote(value),
            crate::lex::go_quote(rest)
        ));
    }
    if let Some(p) = pm {
        if p && hour < 12 {
            hour += 12;
        } else if !p && hour == 12 {
            hour = 0;
        }
    }
    let dt = jiff::civil::DateTime::new(
        year as i16,
        month as i8,
        day as i8,
        hour as i8,
        min as i8,
        sec as i8,
        nanos as i32,
    )
    .map_err(|_| {
        format!(
            "parsing time {}: day out of range",
            crate::lex::go_quote(value)
        )
    })?;
    let z = match offset {
        Some(o) => {
            let off = jiff::tz::Offset::from_seconds(o).map_err(|e| e.to_string())?;
            let ts = off.to_timestamp(dt).map_err(|e| e.to_string())?;
            ts.to_zoned(TimeZone::fixed(off))
        }
        None => dt.to_zoned(tz.clone()).map_err(|e| e.to_string())?,
    };
    Ok(z)
}

/// Go's time.Duration.String().
pub(crate) fn go_duration(nanos: i128) -> String {
    if nanos == 0 {
        return "0s".into();
    }
    let neg = nanos < 0;
    let u = nanos.unsigned_abs();
    let mut out = String::new();
    if u < 1_000_000_000 {
        let (unit, div) = if u < 1_000 {
            ("ns", 1u128)
        } else if u < 1_000_000 {
            ("µs", 1_000)
        } else {
            ("ms", 1_000_000)
        };
        out.push_str(&frac_str(u, div));
        out.push_str(unit);
    } else {
        let secs_total = u / 1_000_000_000;
        let h = secs_total / 3600;
        let m = (secs_total / 60) % 60;
        let rem = u % 60_000_000_000;
        if h > 0 {
            out.push_str(&format!("{h}h"));
        }
        if h > 0 || m > 0 {
            out.push_str(&format!("{m}m"));
        }
        out.push_str(&frac_str(rem, 1_000_000_000));
        out.push('s');
    }
    if neg {
        out.insert(0, '-');
    }
    out
}

fn frac_str(v: u128, div: u128) -> String {
    let whole = v / div;
    let frac = v % div;
    if frac == 0 {
        return whole.to_string();
    }
    let width = div.to_string().len() - 1;
    let f = format!("{:0width$}", frac, width = width);
    format!("{whole}.{}", f.trim_end_matches('0'))
}

/// Parses Go duration strings like "1h30m", "-2.5s".
pub(crate) fn parse_duration(s: &str) -> Result<i128, String> {
    let err = || format!("time: invalid duration {}", crate::lex::go_quote(s));
    let (neg, mut rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(err());
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let n = rest
            .bytes()
            .take_while(|b| b.is_ascii_digit() || *b == b'.')
            .count();
        if n == 0 {
            return Err(err());
        }
        let num: f64 = rest[..n].parse().map_err(|_| err())?;
        rest = &rest[n..];
        let u = rest
            .bytes()
            .take_while(|b| !b.is_ascii_digit() && *b != b'.')
            .count();
        let unit = &rest[..u];
        rest = &rest[u..];
        let mult = match unit {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            "" => {
                return Err(format!(
                    "time: missing unit in duration {}",
                    crate::lex::go_quote(s)
                ));
            }
            _ => {
                return Err(format!(
                    "time: unknown unit {} in duration {}",
                    crate::lex::go_quote(unit),
                    crate::lex::go_quote(s)
                ));
            }
        };
        total += num * mult;
    }
    Ok(if neg { -(total as i128) } else { total as i128 })
}

fn time_val(z: Zoned) -> Value {
    Value::Object(Arc::new(GoTime(z)))
}

pub(crate) fn register(m: &mut Map) {
    use Ty::*;
    reg(m, "now", &[], None, |_, _| {
        Ok(time_val(Zoned::now().with_time_zone(local_tz())))
    });
    reg(m, "date", &[Str, Any], None, |_, a| {
        Ok(Value::from(format_go(
            &to_time(&a[1], &local_tz()),
            s(&a[0]),
        )))
    });
    for name in ["dateInZone", "date_in_zone"] {
        reg(m, name, &[Str, Any, Str], None, |_, a| {
            let tz = zone(s(&a[2])).unwrap_or(TimeZone::UTC);
            Ok(Value::from(format_go(&to_time(&a[1], &tz), s(&a[0]))))
        });
    }
    reg(m, "htmlDate", &[Any], None, |_, a| {
        Ok(Value::from(format_go(
            &to_time(&a[0], &local_tz()),
            "2006-01-02",
        )))
    });
    reg(m, "htmlDateInZone", &[Any, Str], None, |_, a| {
        let tz = zone(s(&a[1])).unwrap_or(TimeZone::UTC);
        Ok(Value::from(format_go(&to_time(&a[0], &tz), "2006-01-02")))
    });
    reg(m, "dateModify", &[Str, Any], None, |_, a| {
        let t = to_time(&a[1], &local_tz());
        match parse_duration(s(&a[0])) {
            Ok(d) => Ok(time_val(
                t.checked_add(jiff::SignedDuration::from_nanos(d as i64))
                    .unwrap_or(t.clone()),
            )),
            Err(_) => Ok(time_val(t)),
        }
    });
    reg(m, "mustDateModify", &[Str, Any], None, |_, a| {
        let t = to_time(&a[1], &local_tz());
        let d = parse_duration(s(&a[0]))?;
        Ok(time_val(
            t.checked_add(jiff::SignedDuration::from_nanos(d as i64))
                .map_err(|e| e.to_string())?,
        ))
    });
    reg(m, "ago", &[Any], None, |_, a| {
        let t = to_time(&a[0], &local_tz());
        let secs = Timestamp::now().as_second() - t.timestamp().as_second();
        Ok(Value::from(go_duration(secs as i128 * 1_000_000_000)))
    });
    // sprig accepts only string and int64 here; a Go `int` (template constant) or float64
    // (any number from values) yields 0s, exactly as Helm renders it.
    reg(m, "duration", &[Any], None, |_, a| {
        let n = match &a[0] {
            Value::String(st) => st.parse::<i64>().unwrap_or(0),
            Value::Int64(n) => *n,
            _ => 0,
        };
        Ok(Value::from(go_duration(n as i128 * 1_000_000_000)))
    });
    reg(m, "durationRound", &[Any], None, |_, a| {
        let nanos: i128 = match &a[0] {
            Value::String(st) => parse_duration(st).unwrap_or(0),
            // sprig switches on the dynamic type: only int64 counts (a Go `int` is 0).
            Value::Int64(n) => i128::from(*n),
            Value::Object(o) if o.type_name() == "time.Time" => {
                let t = to_time(&a[0], &local_tz());
                Timestamp::now().as_nanosecond() - t.timestamp().as_nanosecond()
            }
            _ => 0,
        };
        let u = nanos.unsigned_abs();
        let (sec, min, hour, day, month, year) = (
            1_000_000_000u128,
            60_000_000_000u128,
            3_600_000_000_000u128,
            86_400_000_000_000u128,
            2_592_000_000_000_000u128,
            31_536_000_000_000_000u128,
        );
        let r = if u > year {
            format!("{}y", u / year)
        } else if u > month {
            format!("{}mo", u / month)
        } else if u > day {
            format!("{}d", u / day)
        } else if u > hour {
            format!("{}h", u / hour)
        } else if u > min {
            format!("{}m", u / min)
        } else if u > sec {
            format!("{}s", u / sec)
        } else {
            "0s".into()
        };
        Ok(Value::from(r))
    });
    reg(m, "toDate", &[Str, Str], None, |_, a| {
        Ok(match parse_go(s(&a[0]), s(&a[1]), &local_tz()) {
            Ok(z) => time_val(z),
            Err(_) => time_val(
                Timestamp::from_second(-62135596800)
                    .unwrap_or(Timestamp::UNIX_EPOCH)
                    .to_zoned(TimeZone::UTC),
            ),
        })
    });
    reg(m, "mustToDate", &[Str, Str], None, |_, a| {
        Ok(time_val(parse_go(s(&a[0]), s(&a[1]), &local_tz())?))
    });
    reg(m, "unixEpoch", &[Any], None, |_, a| {
        Ok(Value::from(
            to_time(&a[0], &TimeZone::UTC)
                .timestamp()
                .as_second()
                .to_string(),
        ))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts() {
        let z = parse_go("2006-01-02 15:04:05", "2021-03-04 05:06:07", &TimeZone::UTC).unwrap();
        assert_eq!(
            format_go(&z, "Jan 2, 2006 at 3:04pm (MST)"),
            "Mar 4, 2021 at 5:06am (UTC)"
        );
        assert_eq!(
            format_go(&z, "2006-01-02T15:04:05Z07:00"),
            "2021-03-04T05:06:07Z"
        );
        assert_eq!(format_go(&z, "Monday 02/01/06"), "Thursday 04/03/21");
        assert_eq!(go_duration(90 * 1_000_000_000), "1m30s");
        assert_eq!(go_duration(3600 * 1_000_000_000), "1h0m0s");
        assert_eq!(go_duration(1_500_000), "1.5ms");
        assert_eq!(parse_duration("1h30m").unwrap(), 5_400_000_000_000);
    }
}
