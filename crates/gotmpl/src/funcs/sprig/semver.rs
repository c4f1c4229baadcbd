//! Masterminds/semver v3 versions and constraints (`semver`, `semverCompare`).

use std::cmp::Ordering;
use std::sync::Arc;

use super::super::{Map, Ty, reg, s};
use crate::value::{Object, Value};

/// A parsed version, exposed to templates like Go's *semver.Version.
#[derive(Debug, Clone)]
pub(crate) struct Version {
    major: u64,
    minor: u64,
    patch: u64,
    pre: String,
    meta: String,
    original: String,
}

impl Object for Version {
    fn field(&self, name: &str) -> Option<Value> {
        self.call(name, &[]).and_then(|r| r.ok())
    }
    fn call(&self, method: &str, args: &[Value]) -> Option<Result<Value, String>> {
        let v = match method {
            "Major" => Value::Int(self.major as i64),
            "Minor" => Value::Int(self.minor as i64),
            "Patch" => Value::Int(self.patch as i64),
            "Prerelease" => Value::from(self.pre.clone()),
            "Metadata" => Value::from(self.meta.clone()),
            "Original" => Value::from(self.original.clone()),
            "String" => Value::from(self.display()),
            "Compare" | "LessThan" | "GreaterThan" | "Equal" => {
                let other = match args.first() {
                    Some(Value::Object(o)) => match parse_version(&o.display()) {
                        Ok(v) => v,
                        Err(e) => return Some(Err(e)),
                    },
                    _ => {
                        return Some(Err(format!(
                            "wrong number of args for {method}: want 1 got {}",
                            args.len()
                        )));
                    }
                };
                let c = self.compare(&other);
                match method {
                    "Compare" => Value::Int(c as i64),
                    "LessThan" => Value::Bool(c == Ordering::Less),
                    "GreaterThan" => Value::Bool(c == Ordering::Greater),
                    _ => Value::Bool(c == Ordering::Equal),
                }
            }
            _ => return None,
        };
        Some(Ok(v))
    }
    fn display(&self) -> String {
        let mut s = format!("{}.{}.{}", self.major, self.minor, self.patch);
        if !self.pre.is_empty() {
            s.push('-');
            s.push_str(&self.pre);
        }
        if !self.meta.is_empty() {
            s.push('+');
            s.push_str(&self.meta);
        }
        s
    }
    fn type_name(&self) -> String {
        "*semver.Version".into()
    }
}

fn ident_ok(s: &str) -> bool {
    !s.is_empty()
        && s.split('.')
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
}

/// semver.NewVersion (loose: optional v, missing minor/patch).
pub(crate) fn parse_version(v: &str) -> Result<Version, String> {
    let err = || "Invalid Semantic Version".to_string();
    let body = v.strip_prefix('v').unwrap_or(v);
    let (body, meta) = match body.split_once('+') {
        Some((b, m)) => {
            if !ident_ok(m) {
                return Err(err());
            }
            (b, m)
        }
        None => (body, ""),
    };
    let (core, pre) = match body.split_once('-') {
        Some((c, p)) => {
            if !ident_ok(p) {
                return Err(err());
            }
            (c, p)
        }
        None => (body, ""),
    };
    let parts: Vec<&str> = core.split('.').collect();
    if parts.is_empty() || parts.len() > 3 {
        return Err(err());
    }
    let mut nums = [0u64; 3];
    for (k, p) in parts.iter().enumerate() {
        if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
            return Err(err());
        }
        nums[k] = p.parse().map_err(|_| err())?;
    }
    Ok(Version {
        major: nums[0],
        minor: nums[1],
        patch: nums[2],
        pre: pre.to_string(),
        meta: meta.to_string(),
        original: v.to_string(),
    })
}

fn cmp_pre(a: &str, b: &str) -> Ordering {
    match (a.is_empty(), b.is_empty()) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Greater,
        (false, true) => return Ordering::Less,
        _ => {}
    }
    let ap: Vec<&str> = a.split('.').collect();
    let bp: Vec<&str> = b.split('.').collect();
    for k in 0..ap.len().max(bp.len()) {
        let (Some(x), Some(y)) = (ap.get(k), bp.get(k)) else {
            return ap.len().cmp(&bp.len());
        };
        let xn = x.parse::<u64>().ok();
        let yn = y.parse::<u64>().ok();
        let c = match (xn, yn) {
            (Some(p), Some(q)) => p.cmp(&q),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => x.cmp(y),
        };
        if c != Ordering::Equal {
            return c;
        }
    }
    Ordering::Equal
}

impl Version {
    fn compare(&self, o: &Version) -> Ordering {
        (self.major, self.minor, self.patch)
            .cmp(&(o.major, o.minor, o.patch))
            .then_with(|| cmp_pre(&self.pre, &o.pre))
    }
}

struct Constraint {
    op: String,
    con: Version,
    dirty: bool,
    minor_dirty: bool,
    patch_dirty: bool,
}

fn parse_constraint(c: &str) -> Result<Constraint, String> {
    let improper = || format!("improper constraint: {c}");
    let t = c.trim();
    let ops = ["!=", ">=", "=>", "<=", "=<", "~>", "=", ">", "<", "~", "^"];
    let mut op = "";
    let mut rest = t;
    for o in ops {
        if let Some(r) = t.strip_prefix(o) {
            op = o;
            rest = r.trim_start();
            break;
        }
    }
    let rest = rest.strip_prefix('v').unwrap_or(rest);
    let (core, tail) = match rest.find(['-', '+']) {
        Some(k) => (&rest[..k], &rest[k..]),
        None => (rest, ""),
    };
    let parts: Vec<&str> = core.split('.').collect();
    if core.is_empty() || parts.len() > 3 {
        return Err(improper());
    }
    let wild = |p: &str| matches!(p, "x" | "X" | "*");
    let mut nums = Vec::new();
    let mut dirty = [false; 3];
    for (k, p) in parts.iter().enumerate() {
        if wild(p) {
            dirty[k] = true;
            nums.push("0".to_string());
        } else if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) {
            nums.push(p.to_string());
        } else {
            return Err(improper());
        }
    }
    let mut minor_dirty = dirty[0] || dirty[1];
    let mut patch_dirty = minor_dirty || dirty[2];
    if parts.len() < 2 {
        minor_dirty = true;
        patch_dirty = true;
    } else if parts.len() < 3 {
        patch_dirty = true;
    }
    // a wildcard major makes everything match
    if dirty[0] {
        op = if op.is_empty() { "*" } else { op };
    }
    while nums.len() < 3 {
        nums.push("0".into());
    }
    let vs = format!("{}.{}.{}{}", nums[0], nums[1], nums[2], tail);
    let con = parse_version(&vs).map_err(|_| improper())?;
    Ok(Constraint {
        op: op.to_string(),
        con,
        dirty: minor_dirty || patch_dirty,
        minor_dirty,
        patch_dirty,
    })
}

fn check(v: &Version, c: &Constraint) -> bool {
    let pre_blocked = !v.pre.is_empty() && c.con.pre.is_empty();
    let cmp = v.compare(&c.con);
    let con = &c.con;
    match c.op.as_str() {
        "*" => !pre_blocked,
        "" | "=" => {
            if pre_blocked && c.dirty {
                return false;
            }
            if c.dirty {
                tilde(v, c)
            } else {
                cmp == Ordering::Equal
            }
        }
        "!=" => {
            if c.dirty {
                if pre_blocked {
                    return false;
                }
                if c.minor_dirty {
                    return v.major != con.major;
                }
                return !(v.major == con.major && v.minor == con.minor);
            }
            cmp != Ordering::Equal
        }
        ">" => {
            if pre_blocked {
                return false;
            }
            if !c.dirty {
                return cmp == Ordering::Greater;
            }
            if v.major > con.major {
                true
            } else if v.major < con.major || c.minor_dirty {
                false
            } else if c.patch_dirty {
                v.minor > con.minor
            } else {
                cmp == Ordering::Greater
            }
        }
        "<" => {
            if pre_blocked {
                return false;
            }
            cmp == Ordering::Less
        }
        ">=" | "=>" => {
            if pre_blocked {
                return false;
            }
            cmp != Ordering::Less
        }
        "<=" | "=<" => {
            if pre_blocked {
                return false;
            }
            if !c.dirty {
                return cmp != Ordering::Greater;
            }
            if v.major > con.major {
                false
            } else {
                !(v.major == con.major && v.minor > con.minor && !c.minor_dirty)
            }
        }
        "~" | "~>" => {
            if pre_blocked {
                return false;
            }
            tilde(v, c)
        }
        "^" => {
            if pre_blocked || cmp == Ordering::Less {
                return false;
            }
            if con.major > 0 || c.minor_dirty {
                return v.major == con.major;
            }
            if con.minor > 0 || c.patch_dirty {
                return v.major == con.major && v.minor == con.minor;
            }
            v.major == con.major && v.minor == con.minor && v.patch == con.patch
        }
        _ => false,
    }
}

fn tilde(v: &Version, c: &Constraint) -> bool {
    let con = &c.con;
    if v.compare(con) == Ordering::Less {
        return false;
    }
    if con.major == 0 && con.minor == 0 && con.patch == 0 && !c.minor_dirty && !c.patch_dirty {
        return true;
    }
    if v.major != con.major {
        return false;
    }
    if v.minor != con.minor && !c.minor_dirty {
        return false;
    }
    true
}

/// semver.NewConstraint(c).Check(v).
pub(crate) fn semver_compare(constraint: &str, version: &str) -> Result<bool, String> {
    // parse everything first (errors win over results, like Masterminds)
    let mut groups: Vec<Vec<Constraint>> = Vec::new();
    for or in constraint.split("||") {
        let or = or.trim();
        // hyphen ranges "a - b"
        let mut ands = Vec::new();
        let tokens: Vec<&str> = split_and(or);
        let mut k = 0;
        while k < tokens.len() {
            if k + 2 < tokens.len() && tokens[k + 1] == "-" {
                ands.push(parse_constraint(&format!(">={}", tokens[k]))?);
                ands.push(parse_constraint(&format!("<={}", tokens[k + 2]))?);
                k += 3;
                continue;
            }
            ands.push(parse_constraint(tokens[k])?);
            k += 1;
        }
        if ands.is_empty() {
            return Err(format!("improper constraint: {constraint}"));
        }
        groups.push(ands);
    }
    let v = parse_version(version)?;
    Ok(groups.iter().any(|g| g.iter().all(|c| check(&v, c))))
}

/// Splits an AND group on commas and whitespace, keeping operators attached to versions.
fn split_and(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut pending_op: Option<usize> = None;
    let bytes = s.as_bytes();
    let mut k = 0;
    while k < bytes.len() {
        while k < bytes.len() && (bytes[k] == b',' || bytes[k] == b' ' || bytes[k] == b'\t') {
            k += 1;
        }
        if k >= bytes.len() {
            break;
        }
        let st = pending_op.take().unwrap_or(k);
        let mut e = k;
        while e < bytes.len() && !(bytes[e] == b',' || bytes[e] == b' ' || bytes[e] == b'\t') {
            e += 1;
        }
        let tok = &s[k..e];
        if tok.chars().all(|c| "<>=!~^".contains(c)) && tok != "-" {
            pending_op = Some(st);
            k = e;
            continue;
        }
        out.push(&s[st..e]);
        k = e;
    }
    out
}

pub(crate) fn register(m: &mut Map) {
    use Ty::*;
    reg(m, "semver", &[Str], None, |_, a| {
        let v = parse_version(s(&a[0]))?;
        Ok(Value::Object(Arc::new(v)))
    });
    reg(m, "semverCompare", &[Str, Str], None, |_, a| {
        Ok(Value::Bool(semver_compare(s(&a[0]), s(&a[1]))?))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constraints() {
        let t = |c: &str, v: &str| semver_compare(c, v).unwrap();
        assert!(t(">=1.19-0", "v1.20.0-gke.1"));
        assert!(t(">=1.19-0", "1.30.0"));
        assert!(!t(">=1.19", "1.20.0-rc.1"));
        assert!(t("^1.2.3", "1.9.0"));
        assert!(!t("^1.2.3", "2.0.0"));
        assert!(t("~1.2.3", "1.2.9"));
        assert!(!t("~1.2.3", "1.3.0"));
        assert!(t("1.x", "1.4.0"));
        assert!(t(">1.0 <2.0", "1.5.0"));
        assert!(t("<1.0 || >=3", "3.1.0"));
        assert!(t("1.2 - 1.4.5", "1.3.0"));
        assert!(!t("!=1.2.3", "1.2.3"));
        assert!(semver_compare(">=x.y", "1.0.0").is_err());
        assert!(semver_compare(">=1.0", "nope").is_err());
    }
}
