//! Go `time.ParseDuration`, one parser for every duration Fleet reads: a token's `ttl`
//! (`"1440m"`, `"12h"`), a GitRepo's `pollingInterval`, the agent's `CHECKIN_INTERVAL` and the
//! controller's election flags.

use std::time::Duration;

/// A duration Go's `time.ParseDuration` would refuse, or a negative one (every duration Fleet
/// reads is a length of time).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DurationError(String);

/// Parses a Go duration string (`1h30m`, `1.5h`, `500ms`, `0`).
pub fn parse_go_duration(s: &str) -> Result<Duration, DurationError> {
    parse(s).map_err(DurationError)
}

fn parse(s: &str) -> Result<Duration, String> {
    let orig = s;
    let s = s.strip_prefix('+').unwrap_or(s);
    if s.starts_with('-') {
        return Err(format!("duration {orig:?} is negative"));
    }
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    if s.is_empty() {
        return Err(format!("invalid duration {orig:?}"));
    }
    let mut rest = s;
    let mut total = 0f64;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if num_len == 0 {
            return Err(format!("invalid duration {orig:?}"));
        }
        let n: f64 = rest[..num_len]
            .parse()
            .map_err(|_| format!("invalid duration {orig:?}"))?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "" => return Err(format!("missing unit in duration {orig:?}")),
            u => return Err(format!("unknown unit {u:?} in duration {orig:?}")),
        };
        rest = &rest[unit_len..];
        total += n * unit;
    }
    if !total.is_finite() || total > 1e11 {
        return Err(format!("duration {orig:?} is out of range"));
    }
    Ok(Duration::from_secs_f64(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        for (s, secs) in [
            ("0", 0.0),
            ("0s", 0.0),
            ("1440m", 86400.0),
            ("12h", 43200.0),
            ("1h30m", 5400.0),
            ("1.5h", 5400.0),
            ("2s", 2.0),
            ("500ms", 0.5),
        ] {
            assert_eq!(parse_go_duration(s).unwrap().as_secs_f64(), secs, "{s}");
        }
        for bad in ["", "12", "h", "1x", "-1h", "1h-"] {
            assert!(parse_go_duration(bad).is_err(), "{bad}");
        }
    }
}
