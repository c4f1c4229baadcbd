//! Masterminds/semver v3.1.1 versions and constraints, the semver that Helm 3.6 (chart
//! `kubeVersion`, dependency and repository-index version ranges) and sprig v3 (`semver`,
//! `semverCompare`) use. One copy for the whole workspace, because Helm charts, Fleet's chart
//! resolution and template functions must agree on what `>=1.19-0` or `~1.2` means.
//!
//! Behaviour kept on purpose, even where it differs from the SemVer spec or from Cargo's `semver`:
//! - versions are lenient: optional `v`, missing minor/patch (`1.2` = `1.2.0`), leading zeros in
//!   the numeric core, but a numeric prerelease part with a leading zero is rejected;
//! - a prerelease version only satisfies a constraint whose own version carries a prerelease
//!   (except exact `!=1.2.3`, which Masterminds does not guard);
//! - a constraint with missing or wildcard parts (`1.2`, `1.x`, `*`) is a range: `=1.2` and a
//!   bare `1.2` mean `~1.2`, `<=1.2` admits `1.2.9`, `>1.2` needs minor 3 or more;
//! - `^0.0.3` checks only major 0 and patch 3 (Masterminds' v3.1.1 quirk);
//! - AND-ed constraints may be separated by commas, spaces or nothing (`>=1<2`), `||` separates
//!   alternatives, `a - b` is `>= a, <= b`, and an empty constraint is an error.

use std::cmp::Ordering;
use std::fmt;
use std::sync::LazyLock;

use regex::Regex;

/// Why a version or constraint did not parse; texts are Masterminds' error strings, which Helm
/// and sprig show to users verbatim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SemverError(String);

impl fmt::Display for SemverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SemverError {}

impl From<SemverError> for String {
    fn from(e: SemverError) -> String {
        e.0
    }
}

/// A parsed version (Masterminds' `*semver.Version`). Equality and ordering ignore build
/// metadata and the original text, as Masterminds' `Compare` does.
#[derive(Debug, Clone)]
pub struct Version {
    major: u64,
    minor: u64,
    patch: u64,
    pre: String,
    metadata: String,
    original: String,
}

fn ident_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-'
}

/// Dot-separated non-empty identifiers of `[0-9A-Za-z-]` (the shape the version grammar allows).
fn dotted_idents(s: &str) -> bool {
    s.split('.')
        .all(|p| !p.is_empty() && p.bytes().all(ident_char))
}

fn parse_u64(s: &str) -> Result<u64, SemverError> {
    s.parse::<u64>().map_err(|_| {
        SemverError(format!(
            "Error parsing version segment: strconv.ParseUint: parsing {s:?}: value out of range"
        ))
    })
}

impl Version {
    /// Masterminds' `NewVersion`: the lenient parse every Helm and sprig entry point uses.
    pub fn parse(v: &str) -> Result<Version, SemverError> {
        let invalid = || SemverError("Invalid Semantic Version".into());
        let body = v.strip_prefix('v').unwrap_or(v);
        let core_end = body.find(['-', '+']).unwrap_or(body.len());
        let (core, rest) = body.split_at(core_end);
        let (pre, metadata) = match rest.strip_prefix('-') {
            Some(r) => match r.split_once('+') {
                Some((p, m)) => (p, Some(m)),
                None => (r, None),
            },
            None => ("", rest.strip_prefix('+')),
        };
        if rest.starts_with('-') && !dotted_idents(pre) {
            return Err(invalid());
        }
        if let Some(m) = metadata
            && !dotted_idents(m)
        {
            return Err(invalid());
        }
        let parts: Vec<&str> = core.split('.').collect();
        if parts.len() > 3
            || parts
                .iter()
                .any(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()))
        {
            return Err(invalid());
        }
        let mut nums = [0u64; 3];
        for (slot, p) in nums.iter_mut().zip(&parts) {
            *slot = parse_u64(p)?;
        }
        // validatePrerelease: numeric identifiers must not have leading zeros.
        if !pre.is_empty()
            && pre
                .split('.')
                .any(|p| p.len() > 1 && p.starts_with('0') && p.bytes().all(|b| b.is_ascii_digit()))
        {
            return Err(SemverError("Version segment starts with 0".into()));
        }
        Ok(Version {
            major: nums[0],
            minor: nums[1],
            patch: nums[2],
            pre: pre.to_string(),
            metadata: metadata.unwrap_or("").to_string(),
            original: v.to_string(),
        })
    }

    /// `Major()`.
    pub fn major(&self) -> u64 {
        self.major
    }

    /// `Minor()`.
    pub fn minor(&self) -> u64 {
        self.minor
    }

    /// `Patch()`.
    pub fn patch(&self) -> u64 {
        self.patch
    }

    /// `Prerelease()`: the part after `-`, empty when none.
    pub fn prerelease(&self) -> &str {
        &self.pre
    }

    /// `Metadata()`: the part after `+`, empty when none.
    pub fn metadata(&self) -> &str {
        &self.metadata
    }

    /// `Original()`: the text the version was parsed from.
    pub fn original(&self) -> &str {
        &self.original
    }

    /// Masterminds' `Compare`: numeric core, then prerelease (a release sorts after its
    /// prereleases); metadata is ignored.
    pub fn compare(&self, o: &Version) -> Ordering {
        (self.major, self.minor, self.patch)
            .cmp(&(o.major, o.minor, o.patch))
            .then_with(|| match (self.pre.is_empty(), o.pre.is_empty()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                (false, false) => compare_prerelease(&self.pre, &o.pre),
            })
    }
}

impl fmt::Display for Version {
    /// Masterminds' `String()`: normalised `MAJOR.MINOR.PATCH[-pre][+meta]`, no `v`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        if !self.pre.is_empty() {
            write!(f, "-{}", self.pre)?;
        }
        if !self.metadata.is_empty() {
            write!(f, "+{}", self.metadata)?;
        }
        Ok(())
    }
}

impl std::str::FromStr for Version {
    type Err = SemverError;
    fn from_str(s: &str) -> Result<Version, SemverError> {
        Version::parse(s)
    }
}

impl PartialEq for Version {
    fn eq(&self, o: &Version) -> bool {
        self.compare(o) == Ordering::Equal
    }
}

impl Eq for Version {}

impl PartialOrd for Version {
    fn partial_cmp(&self, o: &Version) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

impl Ord for Version {
    fn cmp(&self, o: &Version) -> Ordering {
        self.compare(o)
    }
}

/// Prerelease identifiers compared pairwise; a missing identifier sorts first, numbers
/// before words, numbers numerically, words bytewise.
fn compare_prerelease(a: &str, b: &str) -> Ordering {
    let mut ai = a.split('.');
    let mut bi = b.split('.');
    loop {
        let (x, y) = match (ai.next(), bi.next()) {
            (None, None) => return Ordering::Equal,
            (x, y) => (x.unwrap_or(""), y.unwrap_or("")),
        };
        let c = compare_pre_part(x, y);
        if c != Ordering::Equal {
            return c;
        }
    }
}

fn compare_pre_part(x: &str, y: &str) -> Ordering {
    if x == y {
        return Ordering::Equal;
    }
    if x.is_empty() {
        return Ordering::Less;
    }
    if y.is_empty() {
        return Ordering::Greater;
    }
    match (x.parse::<u64>(), y.parse::<u64>()) {
        (Ok(p), Ok(q)) => p.cmp(&q).then(Ordering::Less),
        (Ok(_), Err(_)) => Ordering::Less,
        (Err(_), Ok(_)) => Ordering::Greater,
        (Err(_), Err(_)) => x.cmp(y),
    }
}

/// The comparison operators Masterminds accepts, longest spellings first.
const OPS: &str = r"!=|>=|=>|<=|=<|~>|=|>|<|~|\^";
/// Go RE2's `\s` (ASCII whitespace only).
const WS: &str = r"[\t\n\f\r ]";

/// A constraint's version pattern: wildcard-capable numeric parts, prerelease, metadata.
/// `names` names the parts for [`parse_term`].
fn version_pattern(names: bool) -> String {
    let g = |n: &str| {
        if names {
            format!("?P<{n}>")
        } else {
            "?:".into()
        }
    };
    let part = r"[0-9xX*|]+";
    let ids = r"[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*";
    format!(
        r"v?({maj}{part})({min}\.{part})?({pat}\.{part})?(?:-({pre}{ids}))?(?:\+{ids})?",
        maj = g("major"),
        min = g("minor"),
        pat = g("patch"),
        pre = g("pre"),
    )
}

static RANGE_RE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    let v = version_pattern(false);
    Regex::new(&format!("{WS}*({v}){WS}+-{WS}+({v}){WS}*")).ok()
});

static VALID_RE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    let v = version_pattern(false);
    Regex::new(&format!(r"^(?:{WS}*(?:{OPS})?{WS}*{v}{WS}*,?)+$")).ok()
});

static FIND_RE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    let v = version_pattern(true);
    Regex::new(&format!(r"(?P<op>{OPS})?{WS}*(?P<ver>{v})")).ok()
});

fn regexes() -> Result<(&'static Regex, &'static Regex, &'static Regex), SemverError> {
    match (&*RANGE_RE, &*VALID_RE, &*FIND_RE) {
        (Some(r), Some(v), Some(f)) => Ok((r, v, f)),
        _ => Err(SemverError("constraint Parser Error".into())),
    }
}

/// The operator of one constraint term.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// `=` or none.
    Eq,
    Ne,
    Gt,
    Lt,
    Ge,
    Le,
    Tilde,
    Caret,
}

/// One term (`>=1.2`), with which parts were wildcards or missing.
#[derive(Debug, Clone)]
struct Term {
    op: Op,
    con: Version,
    dirty: bool,
    minor_dirty: bool,
    patch_dirty: bool,
}

/// A parsed constraint such as `>= 1.2, < 2 || 3.x`: OR of AND groups (Masterminds'
/// `*semver.Constraints`).
#[derive(Debug, Clone)]
pub struct Constraints {
    groups: Vec<Vec<Term>>,
}

fn is_x(s: &str) -> bool {
    matches!(s, "x" | "X" | "*")
}

fn parse_term(m: &regex::Captures<'_>) -> Result<Term, SemverError> {
    let op = match m.name("op").map_or("", |o| o.as_str()) {
        "" | "=" => Op::Eq,
        "!=" => Op::Ne,
        ">" => Op::Gt,
        "<" => Op::Lt,
        ">=" | "=>" => Op::Ge,
        "<=" | "=<" => Op::Le,
        "~" | "~>" => Op::Tilde,
        _ => Op::Caret,
    };
    let whole = m.name("ver").map_or("", |v| v.as_str());
    let major = m.name("major").map_or("", |v| v.as_str());
    let minor = m.name("minor").map_or("", |v| v.as_str());
    let patch = m.name("patch").map_or("", |v| v.as_str());
    let pre = m
        .name("pre")
        .map_or(String::new(), |p| format!("-{}", p.as_str()));
    let (mut dirty, mut minor_dirty, mut patch_dirty) = (false, false, false);
    let ver = if is_x(major) {
        dirty = true;
        "0.0.0".to_string()
    } else if minor.is_empty() || is_x(minor.trim_start_matches('.')) {
        dirty = true;
        minor_dirty = true;
        format!("{major}.0.0{pre}")
    } else if patch.is_empty() || is_x(patch.trim_start_matches('.')) {
        dirty = true;
        patch_dirty = true;
        format!("{major}{minor}.0{pre}")
    } else {
        whole.to_string()
    };
    let con = Version::parse(&ver).map_err(|_| SemverError("constraint Parser Error".into()))?;
    Ok(Term {
        op,
        con,
        dirty,
        minor_dirty,
        patch_dirty,
    })
}

impl Constraints {
    /// Masterminds' `NewConstraint`.
    pub fn parse(c: &str) -> Result<Constraints, SemverError> {
        let (range, valid, find) = regexes()?;
        // Hyphen ranges become `>= a, <= b`, each replacing its first occurrence.
        let mut text = c.to_string();
        for m in range.captures_iter(c) {
            if let (Some(all), Some(a), Some(b)) = (m.get(0), m.get(1), m.get(2)) {
                let with = format!(">= {}, <= {}", a.as_str(), b.as_str());
                text = text.replacen(all.as_str(), &with, 1);
            }
        }
        let mut groups = Vec::new();
        for alt in text.split("||") {
            if !valid.is_match(alt) {
                return Err(SemverError(format!("improper constraint: {alt}")));
            }
            let terms = find
                .captures_iter(alt)
                .map(|m| parse_term(&m))
                .collect::<Result<Vec<_>, _>>()?;
            groups.push(terms);
        }
        Ok(Constraints { groups })
    }

    /// Masterminds' `Check`: whether any OR group has all its terms satisfied.
    pub fn check(&self, v: &Version) -> bool {
        self.groups
            .iter()
            .any(|g| g.iter().all(|t| check_term(t, v)))
    }
}

impl std::str::FromStr for Constraints {
    type Err = SemverError;
    fn from_str(s: &str) -> Result<Constraints, SemverError> {
        Constraints::parse(s)
    }
}

fn check_term(c: &Term, v: &Version) -> bool {
    let con = &c.con;
    // A prerelease only satisfies a term that names a prerelease (not checked by exact `!=`).
    let pre_blocked = !v.pre.is_empty() && con.pre.is_empty();
    if pre_blocked && (c.op != Op::Ne || c.dirty) {
        return false;
    }
    let cmp = v.compare(con);
    match c.op {
        Op::Eq => {
            if c.dirty {
                tilde(c, v)
            } else {
                cmp == Ordering::Equal
            }
        }
        Op::Ne => {
            if c.dirty {
                if con.major != v.major {
                    return true;
                }
                if c.minor_dirty {
                    return false;
                }
                if con.minor != v.minor {
                    return true;
                }
                if c.patch_dirty {
                    return (!v.pre.is_empty() || !con.pre.is_empty())
                        && compare_prerelease(&v.pre, &con.pre) != Ordering::Equal;
                }
                if con.patch != v.patch {
                    return true;
                }
            }
            cmp != Ordering::Equal
        }
        Op::Gt => {
            if !c.dirty {
                return cmp == Ordering::Greater;
            }
            if v.major != con.major {
                return v.major > con.major;
            }
            if c.minor_dirty {
                return false;
            }
            if c.patch_dirty {
                return v.minor > con.minor;
            }
            cmp == Ordering::Greater
        }
        Op::Lt => cmp == Ordering::Less,
        Op::Ge => cmp != Ordering::Less,
        Op::Le => {
            if !c.dirty {
                return cmp != Ordering::Greater;
            }
            !(v.major > con.major
                || (v.major == con.major && v.minor > con.minor && !c.minor_dirty))
        }
        Op::Tilde => tilde(c, v),
        Op::Caret => {
            if cmp == Ordering::Less {
                return false;
            }
            if con.major > 0 || c.minor_dirty {
                return v.major == con.major;
            }
            if v.major > 0 {
                return false;
            }
            if con.minor > 0 || c.patch_dirty {
                return v.minor == con.minor;
            }
            v.patch == con.patch
        }
    }
}

fn tilde(c: &Term, v: &Version) -> bool {
    let con = &c.con;
    if v.compare(con) == Ordering::Less {
        return false;
    }
    if con.major == 0 && con.minor == 0 && con.patch == 0 && !c.minor_dirty && !c.patch_dirty {
        return true;
    }
    v.major == con.major && (c.minor_dirty || v.minor == con.minor)
}

/// sprig's `semverCompare`: the constraint is parsed first, so its error wins.
pub fn semver_compare(constraint: &str, version: &str) -> Result<bool, SemverError> {
    let c = Constraints::parse(constraint)?;
    let v = Version::parse(version)?;
    Ok(c.check(&v))
}

/// Helm's `chartutil.IsCompatibleRange`: false when either side does not parse.
pub fn is_compatible_range(constraint: &str, version: &str) -> bool {
    semver_compare(constraint, version).unwrap_or(false)
}
