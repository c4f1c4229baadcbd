//! Helm (Masterminds semver) version constraints on top of the `semver` crate: `||` alternatives,
//! comma- or space-separated AND, hyphen ranges, `!=`, `x` wildcards, bare versions meaning `=`,
//! and lenient versions (`v` prefix, missing minor/patch).

use semver::{Version, VersionReq};

/// A parsed constraint: OR of AND-groups.
#[derive(Debug, Clone)]
pub struct Constraint {
    groups: Vec<Vec<Term>>,
}

#[derive(Debug, Clone)]
enum Term {
    Req(VersionReq),
    Not(Version),
}

/// Parses a version leniently, as Masterminds' `NewVersion` does.
pub fn lenient_version(s: &str) -> Option<Version> {
    let s = s.trim();
    let s = s.strip_prefix('v').unwrap_or(s);
    if let Ok(v) = Version::parse(s) {
        return Some(v);
    }
    let (core, rest) = match s.find(['-', '+']) {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, ""),
    };
    let parts: Vec<&str> = core.split('.').collect();
    if parts.is_empty()
        || parts.len() > 3
        || parts
            .iter()
            .any(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()))
    {
        return None;
    }
    let mut full: Vec<String> = parts
        .iter()
        .map(|p| p.trim_start_matches('0').to_string())
        .map(|p| if p.is_empty() { "0".into() } else { p })
        .collect();
    while full.len() < 3 {
        full.push("0".into());
    }
    Version::parse(&format!("{}{}", full.join("."), rest)).ok()
}

impl Constraint {
    /// Parses a Helm version constraint such as `>= 1.2, < 2 || 3.x`.
    pub fn parse(input: &str) -> Result<Constraint, String> {
        let mut groups = Vec::new();
        for alt in input.split("||") {
            let mut terms = Vec::new();
            let tokens = tokenize(alt);
            let mut i = 0;
            while i < tokens.len() {
                // hyphen range: A - B
                if i + 2 < tokens.len() && tokens[i + 1] == "-" {
                    terms.push(Term::Req(req(&format!(">={}", tokens[i]))?));
                    terms.push(Term::Req(req(&format!("<={}", tokens[i + 2]))?));
                    i += 3;
                    continue;
                }
                terms.push(term(&tokens[i])?);
                i += 1;
            }
            if terms.is_empty() {
                terms.push(Term::Req(VersionReq::STAR));
            }
            groups.push(terms);
        }
        Ok(Constraint { groups })
    }

    /// Whether `v` satisfies the constraint.
    pub fn matches(&self, v: &Version) -> bool {
        self.groups.iter().any(|g| {
            g.iter().all(|t| match t {
                Term::Req(r) => r.matches(v),
                Term::Not(n) => v != n,
            })
        })
    }
}

/// Splits on commas and whitespace, joining an operator with the version after it.
fn tokenize(s: &str) -> Vec<String> {
    let raw: Vec<&str> = s
        .split([',', ' ', '\t'])
        .filter(|t| !t.is_empty())
        .collect();
    let mut out: Vec<String> = Vec::new();
    let mut pending_op: Option<String> = None;
    for t in raw {
        if t.chars().all(|c| "<>=!~^".contains(c)) && t != "-" {
            pending_op = Some(t.to_string());
            continue;
        }
        match pending_op.take() {
            Some(op) => out.push(format!("{op}{t}")),
            None => out.push(t.to_string()),
        }
    }
    out
}

fn req(s: &str) -> Result<VersionReq, String> {
    // Strip a `v` prefix after the operator.
    let op_len = s.find(|c: char| !"<>=~^".contains(c)).unwrap_or(s.len());
    let (op, ver) = s.split_at(op_len);
    let ver = ver.strip_prefix('v').unwrap_or(ver);
    VersionReq::parse(&format!("{op}{ver}"))
        .map_err(|e| format!("invalid version constraint {s:?}: {e}"))
}

fn term(t: &str) -> Result<Term, String> {
    if let Some(v) = t.strip_prefix("!=") {
        return lenient_version(v)
            .map(Term::Not)
            .ok_or_else(|| format!("invalid version {v:?}"));
    }
    let starts_with_op = t.starts_with(['<', '>', '=', '~', '^']);
    if starts_with_op {
        let t = t.replacen("==", "=", 1);
        return req(&t).map(Term::Req);
    }
    // Bare version: exact unless it contains wildcards.
    let v = t.strip_prefix('v').unwrap_or(t);
    if v == "*" || v.eq_ignore_ascii_case("x") {
        return Ok(Term::Req(VersionReq::STAR));
    }
    if v.split('.').any(|p| p == "x" || p == "X" || p == "*") || v.split('.').count() < 3 {
        let norm: Vec<&str> = v
            .split('.')
            .map(|p| if p == "x" || p == "X" { "*" } else { p })
            .collect();
        return req(&format!("={}", norm.join("."))).map(Term::Req);
    }
    req(&format!("={v}")).map(Term::Req)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(c: &str, v: &str) -> bool {
        Constraint::parse(c)
            .unwrap()
            .matches(&lenient_version(v).unwrap())
    }

    #[test]
    fn table() {
        assert!(m("1.2.3", "1.2.3"));
        assert!(!m("1.2.3", "1.2.4"));
        assert!(m(">= 1.2, < 2.0", "1.5.0"));
        assert!(!m(">= 1.2, < 2.0", "2.0.0"));
        assert!(m(">=1.2 <2.0", "1.9.9"));
        assert!(m("~1.2.0", "1.2.9"));
        assert!(!m("~1.2.0", "1.3.0"));
        assert!(m("^1.2.0", "1.9.0"));
        assert!(m("1.2.x", "1.2.7"));
        assert!(!m("1.2.x", "1.3.0"));
        assert!(m("1.0 - 1.4", "1.3.0"));
        assert!(!m("1.0 - 1.4", "1.5.0"));
        assert!(m("< 1 || > 3", "4.0.0"));
        assert!(!m("< 1 || > 3", "2.0.0"));
        assert!(m("!=1.2.3", "1.2.4"));
        assert!(!m("!=1.2.3", "1.2.3"));
        assert!(m("*", "0.1.0"));
        assert!(m("v1.2.3", "v1.2.3"));
        assert!(!m("*", "1.0.0-rc1"));
        assert_eq!(lenient_version("v2"), Version::parse("2.0.0").ok());
        assert_eq!(
            lenient_version("1.2-beta"),
            Version::parse("1.2.0-beta").ok()
        );
        assert!(Constraint::parse(">=garbage").is_err());
    }

    proptest::proptest! {
        #[test]
        fn never_panics(s in "[0-9vx*.<>=!~^|, -]{0,24}") {
            if let Ok(c) = Constraint::parse(&s) {
                let _ = c.matches(&Version::new(1, 2, 3));
            }
            let _ = lenient_version(&s);
        }
    }
}
