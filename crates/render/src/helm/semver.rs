//! The subset of Masterminds/semver v3 that Helm itself uses on charts: lenient version parsing
//! (`v` prefix, missing minor/patch) and constraint checking (`||`, `,`/space AND, hyphen
//! ranges, `~`, `^`, wildcards, and its rule that prereleases only match constraints that
//! carry a prerelease). Used for `kubeVersion` and dependency `version` matching.

use semver::{BuildMetadata, Prerelease, Version};

/// Parses a version the way Masterminds' `NewVersion` does.
pub fn parse_version(s: &str) -> Option<Version> {
    let s = s.trim();
    let s = s.strip_prefix('v').unwrap_or(s);
    let (core, build) = match s.split_once('+') {
        Some((c, b)) => (c, Some(b)),
        None => (s, None),
    };
    let (core, pre) = match core.split_once('-') {
        Some((c, p)) => (c, Some(p)),
        None => (core, None),
    };
    let mut nums = [0u64; 3];
    let parts: Vec<&str> = core.split('.').collect();
    if parts.is_empty() || parts.len() > 3 {
        return None;
    }
    for (i, p) in parts.iter().enumerate() {
        if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        nums[i] = p.parse().ok()?;
    }
    let mut v = Version::new(nums[0], nums[1], nums[2]);
    if let Some(p) = pre {
        v.pre = Prerelease::new(p).ok()?;
    }
    if let Some(b) = build {
        v.build = BuildMetadata::new(b).ok()?;
    }
    Some(v)
}

/// One parsed version in a constraint, where components may be wildcards.
#[derive(Debug, Clone)]
struct Partial {
    major: Option<u64>,
    minor: Option<u64>,
    patch: Option<u64>,
    pre: Prerelease,
    /// How many components were written.
    given: usize,
}

impl Partial {
    fn parse(s: &str) -> Option<Partial> {
        let s = s.strip_prefix('v').unwrap_or(s);
        let s = s.split_once('+').map(|(c, _)| c).unwrap_or(s);
        let (core, pre) = match s.split_once('-') {
            Some((c, p)) => (c, Prerelease::new(p).ok()?),
            None => (s, Prerelease::EMPTY),
        };
        let parts: Vec<&str> = core.split('.').collect();
        if parts.len() > 3 || parts.iter().any(|p| p.is_empty()) {
            return None;
        }
        let mut out = [None; 3];
        for (i, p) in parts.iter().enumerate() {
            out[i] = match *p {
                "x" | "X" | "*" => None,
                d if d.bytes().all(|b| b.is_ascii_digit()) => Some(d.parse().ok()?),
                _ => return None,
            };
        }
        Some(Partial {
            major: out[0],
            minor: out[1],
            patch: out[2],
            pre,
            given: parts.len(),
        })
    }

    fn dirty(&self) -> bool {
        self.major.is_none()
            || (self.given >= 2 && self.minor.is_none())
            || (self.given >= 3 && self.patch.is_none())
    }

    fn floor(&self) -> Version {
        let mut v = Version::new(
            self.major.unwrap_or(0),
            self.minor.unwrap_or(0),
            self.patch.unwrap_or(0),
        );
        v.pre = self.pre.clone();
        v
    }
}

#[derive(Debug, Clone)]
struct Single {
    op: String,
    v: Partial,
}

/// A parsed constraint: OR of AND groups.
#[derive(Debug, Clone)]
pub struct Constraint {
    groups: Vec<Vec<Single>>,
}

impl Constraint {
    /// Parses a Masterminds constraint string; None if malformed (Helm then treats the
    /// constraint as unsatisfied).
    pub fn parse(s: &str) -> Option<Constraint> {
        let mut groups = Vec::new();
        for g in s.split("||") {
            let g = rewrite_hyphen(g.trim());
            let mut singles = Vec::new();
            for part in g.split(',') {
                // Several constraints may be separated by spaces; an operator may also be
                // followed by a space.
                let mut toks: Vec<String> = Vec::new();
                for t in part.split_whitespace() {
                    if let Some(last) = toks.last_mut()
                        && last.chars().all(|c| "<>=!~^".contains(c))
                    {
                        last.push_str(t);
                        continue;
                    }
                    toks.push(t.to_string());
                }
                if toks.is_empty() {
                    return None;
                }
                for t in toks {
                    singles.push(parse_single(&t)?);
                }
            }
            groups.push(singles);
        }
        Some(Constraint { groups })
    }

    /// Whether `v` satisfies the constraint.
    pub fn check(&self, v: &Version) -> bool {
        self.groups
            .iter()
            .any(|g| g.iter().all(|c| check_single(c, v)))
    }
}

fn rewrite_hyphen(g: &str) -> String {
    let toks: Vec<&str> = g.split_whitespace().collect();
    if toks.len() == 3 && toks[1] == "-" {
        return format!(">={}, <={}", toks[0], toks[2]);
    }
    g.to_string()
}

fn parse_single(t: &str) -> Option<Single> {
    let ops = ["~>", ">=", "=>", "<=", "=<", "!=", ">", "<", "=", "~", "^"];
    for op in ops {
        if let Some(rest) = t.strip_prefix(op) {
            return Some(Single {
                op: op.to_string(),
                v: Partial::parse(rest.trim())?,
            });
        }
    }
    Some(Single {
        op: String::new(),
        v: Partial::parse(t)?,
    })
}

fn check_single(c: &Single, v: &Version) -> bool {
    // Masterminds: a prerelease version only satisfies constraints that name a prerelease.
    if !v.pre.is_empty() && c.v.pre.is_empty() {
        return false;
    }
    let floor = c.v.floor();
    let cmp_core = |a: &Version| {
        let mut x = a.clone();
        x.build = BuildMetadata::EMPTY;
        x
    };
    let v = cmp_core(v);
    match c.op.as_str() {
        "" | "=" => {
            if c.v.dirty() {
                within_wildcard(&c.v, &v)
            } else {
                v == floor
            }
        }
        "!=" => {
            if c.v.dirty() {
                !within_wildcard(&c.v, &v)
            } else {
                v != floor
            }
        }
        ">" => {
            if c.v.dirty() {
                // ">1.2.x" means above the whole 1.2 range.
                v >= upper_of_wildcard(&c.v)
            } else {
                v > floor
            }
        }
        ">=" | "=>" => v >= floor,
        "<" => v < floor,
        "<=" | "=<" => {
            if c.v.dirty() {
                v < upper_of_wildcard(&c.v)
            } else {
                v <= floor
            }
        }
        "~" | "~>" => {
            if v < floor {
                return false;
            }
            match (c.v.major, c.v.minor) {
                (None, _) => true,
                (Some(ma), None) => v.major == ma,
                (Some(ma), Some(mi)) => {
                    if c.v.given == 1 {
                        v.major == ma
                    } else {
                        v.major == ma && v.minor == mi
                    }
                }
            }
        }
        "^" => {
            if v < floor {
                return false;
            }
            match (c.v.major, c.v.minor, c.v.patch) {
                (None, _, _) => true,
                (Some(0), Some(0), Some(p)) if c.v.given == 3 => {
                    v.major == 0 && v.minor == 0 && v.patch == p
                }
                (Some(0), Some(mi), _) if c.v.given >= 2 => v.major == 0 && v.minor == mi,
                (Some(ma), _, _) => v.major == ma,
            }
        }
        _ => false,
    }
}

fn within_wildcard(p: &Partial, v: &Version) -> bool {
    if let Some(m) = p.major
        && v.major != m
    {
        return false;
    }
    if let Some(m) = p.minor
        && v.minor != m
    {
        return false;
    }
    if let Some(m) = p.patch
        && v.patch != m
    {
        return false;
    }
    true
}

fn upper_of_wildcard(p: &Partial) -> Version {
    match (p.major, p.minor) {
        (None, _) => Version::new(u64::MAX, 0, 0),
        (Some(ma), None) => Version::new(ma.saturating_add(1), 0, 0),
        (Some(ma), Some(mi)) => Version::new(ma, mi.saturating_add(1), 0),
    }
}

/// Helm's `chartutil.IsCompatibleRange`.
pub fn is_compatible_range(constraint: &str, ver: &str) -> bool {
    let Some(v) = parse_version(ver) else {
        return false;
    };
    let Some(c) = Constraint::parse(constraint) else {
        return false;
    };
    c.check(&v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        assert_eq!(parse_version("v1.30.0").unwrap(), Version::new(1, 30, 0));
        assert_eq!(parse_version("1.2").unwrap(), Version::new(1, 2, 0));
        assert!(parse_version("1.2.3-rc.1").is_some());
        assert!(parse_version("abc").is_none());
        assert!(parse_version("").is_none());
    }

    #[test]
    fn constraints() {
        assert!(is_compatible_range(">=1.19.0-0", "v1.30.0"));
        assert!(is_compatible_range(">= 1.16.0-0 < 2.0.0", "1.30.0"));
        assert!(!is_compatible_range("<1.16.0", "1.30.0"));
        assert!(is_compatible_range("~1.2.0", "1.2.9"));
        assert!(!is_compatible_range("~1.2.0", "1.3.0"));
        assert!(is_compatible_range("^1.2.0", "1.9.0"));
        assert!(!is_compatible_range("^1.2.0", "2.0.0"));
        assert!(is_compatible_range("1.2.x", "1.2.7"));
        assert!(is_compatible_range("*", "3.4.5"));
        assert!(!is_compatible_range("*", "3.4.5-rc1"));
        assert!(is_compatible_range("1.0.0 - 2.0.0", "1.5.0"));
        assert!(is_compatible_range("<1.0.0 || >=3.0.0", "3.1.0"));
        assert!(is_compatible_range("0.1.0", "0.1.0"));
        assert!(!is_compatible_range("", "0.1.0"));
    }
}
