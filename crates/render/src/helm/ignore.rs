//! `.helmignore` rules and Go's `filepath.Match`, so that exactly the files Helm would load
//! (and expose through `.Files`) are loaded.

message_error! {
    /// A malformed `.helmignore` pattern (Go's `filepath.ErrBadPattern`).
    IgnoreError
}

/// Go's `path.Match`/`filepath.Match` on `/`-separated names: `*` and `?` never match `/`,
/// `[...]` classes support ranges and `^`/`!`... (Go accepts only `^`), `\` escapes.
/// Returns Err for a malformed pattern (Go's `ErrBadPattern`).
pub fn go_match(pattern: &str, name: &str) -> Result<bool, IgnoreError> {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    match_from(&p, &n)
}

fn match_from(p: &[char], n: &[char]) -> Result<bool, IgnoreError> {
    // Iterative matcher with backtracking on the last star (Go's algorithm is equivalent for
    // patterns whose stars cannot cross '/').
    let mut pi = 0;
    let mut ni = 0;
    let mut star: Option<(usize, usize)> = None;
    loop {
        if pi < p.len() {
            match p[pi] {
                '*' => {
                    star = Some((pi, ni));
                    pi += 1;
                    continue;
                }
                c => {
                    if ni < n.len() {
                        let (ok, adv) = match_one(p, pi, n[ni])?;
                        let _ = c;
                        if ok {
                            pi += adv;
                            ni += 1;
                            continue;
                        }
                    } else {
                        // Validate the remaining pattern, as Go reports bad patterns.
                        validate(&p[pi..])?;
                    }
                }
            }
        } else if ni == n.len() {
            return Ok(true);
        }
        // Mismatch: backtrack to the last star if it can absorb one more (non-'/') char.
        match star {
            Some((sp, sn)) if sn < n.len() && n[sn] != '/' => {
                star = Some((sp, sn + 1));
                pi = sp + 1;
                ni = sn + 1;
            }
            _ => {
                validate(&p[pi.min(p.len())..])?;
                return Ok(false);
            }
        }
    }
}

/// Matches one pattern element at `p[pi]` (not `*`) against `c`; returns (matched, pattern
/// characters consumed).
fn match_one(p: &[char], pi: usize, c: char) -> Result<(bool, usize), IgnoreError> {
    match p[pi] {
        '?' => Ok((c != '/', 1)),
        '\\' => match p.get(pi + 1) {
            Some(&e) => Ok((e == c, 2)),
            None => Err("syntax error in pattern".into()),
        },
        '[' => {
            let mut i = pi + 1;
            let negated = p.get(i) == Some(&'^');
            if negated {
                i += 1;
            }
            let mut matched = false;
            let mut first = true;
            loop {
                let ch = *p.get(i).ok_or("syntax error in pattern")?;
                if ch == ']' && !first {
                    i += 1;
                    break;
                }
                first = false;
                let (lo, ni) = class_char(p, i)?;
                i = ni;
                let mut hi = lo;
                if p.get(i) == Some(&'-') {
                    let (h, ni2) = class_char(p, i + 1)?;
                    hi = h;
                    i = ni2;
                }
                if lo <= c && c <= hi {
                    matched = true;
                }
            }
            Ok((matched != negated && c != '/', i - pi))
        }
        lit => Ok((lit == c, 1)),
    }
}

fn class_char(p: &[char], i: usize) -> Result<(char, usize), IgnoreError> {
    match p.get(i) {
        None | Some('-') | Some(']') => Err("syntax error in pattern".into()),
        Some('\\') => p
            .get(i + 1)
            .map(|c| (*c, i + 2))
            .ok_or_else(|| "syntax error in pattern".into()),
        Some(c) => Ok((*c, i + 1)),
    }
}

fn validate(p: &[char]) -> Result<(), IgnoreError> {
    let mut i = 0;
    while i < p.len() {
        match p[i] {
            '*' => i += 1,
            _ => {
                let (_, adv) = match_one(p, i, '\0')?;
                i += adv;
            }
        }
    }
    Ok(())
}

/// One parsed `.helmignore` line.
#[derive(Debug, Clone)]
struct Pattern {
    rule: String,
    negate: bool,
    must_dir: bool,
    kind: Kind,
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Rooted,
    Structural,
    Basename,
}

/// A `.helmignore` rule set (Helm's `ignore.Rules`).
#[derive(Debug, Clone, Default)]
pub struct Rules {
    patterns: Vec<Pattern>,
}

impl Rules {
    /// Parses `.helmignore` content; `source` names the file for errors.
    pub fn parse(text: &str) -> Result<Rules, IgnoreError> {
        let mut r = Rules::default();
        for (i, line) in text.lines().enumerate() {
            r.add(line)
                .map_err(|e| format!(".helmignore:{}: {e}", i + 1))?;
        }
        Ok(r)
    }

    /// Adds Helm's default rule: dot files under `templates/` are ignored.
    pub fn add_defaults(&mut self) {
        let _ = self.add("templates/.?*");
    }

    fn add(&mut self, rule: &str) -> Result<(), IgnoreError> {
        let rule = rule.trim();
        if rule.is_empty() || rule.starts_with('#') {
            return Ok(());
        }
        if rule.contains("**") {
            return Err("double-star (**) syntax is not supported".into());
        }
        go_match(rule, "abc")?;
        let mut rule = rule;
        let negate = rule.starts_with('!');
        if negate {
            rule = &rule[1..];
        }
        let must_dir = rule.ends_with('/');
        if must_dir {
            rule = &rule[..rule.len() - 1];
        }
        let (kind, rule) = if let Some(r) = rule.strip_prefix('/') {
            (Kind::Rooted, r)
        } else if rule.contains('/') {
            (Kind::Structural, rule)
        } else {
            (Kind::Basename, rule)
        };
        self.patterns.push(Pattern {
            rule: rule.to_string(),
            negate,
            must_dir,
            kind,
        });
        Ok(())
    }

    /// Whether `path` (relative, `/`-separated) is ignored.
    pub fn ignore(&self, path: &str, is_dir: bool) -> bool {
        if path.is_empty() || path == "." || path == "./" {
            return false;
        }
        for p in &self.patterns {
            let matched = || {
                let target = match p.kind {
                    Kind::Rooted | Kind::Structural => path,
                    Kind::Basename => path.rsplit('/').next().unwrap_or(path),
                };
                go_match(&p.rule, target).unwrap_or(false)
            };
            if p.negate {
                if p.must_dir && !is_dir {
                    return true;
                }
                if !matched() {
                    return true;
                }
                continue;
            }
            if p.must_dir && !is_dir {
                continue;
            }
            if matched() {
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_match_basics() {
        assert!(go_match("*.yaml", "a.yaml").unwrap());
        assert!(!go_match("*.yaml", "d/a.yaml").unwrap());
        assert!(go_match("d/*.yaml", "d/a.yaml").unwrap());
        assert!(go_match("a?c", "abc").unwrap());
        assert!(!go_match("a?c", "a/c").unwrap());
        assert!(go_match("[a-c]x", "bx").unwrap());
        assert!(go_match("[^a-c]x", "dx").unwrap());
        assert!(!go_match("[^a-c]x", "ax").unwrap());
        assert!(go_match("\\*", "*").unwrap());
        assert!(go_match("*", "").unwrap());
        assert!(go_match("a*b*c", "axxbyyc").unwrap());
        assert!(go_match("[", "a").is_err());
        assert!(go_match(".*", ".git").unwrap());
    }

    #[test]
    fn helmignore_rules() {
        let mut r = Rules::parse("# c\n.git/\n*.tmp\n/top.txt\nsub/*.md\n").unwrap();
        r.add_defaults();
        assert!(r.ignore(".git", true));
        assert!(!r.ignore(".git", false));
        assert!(r.ignore("x/y.tmp", false));
        assert!(r.ignore("top.txt", false));
        assert!(r.ignore("sub/a.md", false));
        assert!(!r.ignore("other/a.md", false));
        // Helm quirk: a negated rule ignores every path it does not match.
        let n = Rules::parse("*.tmp\n!keep.tmp\n").unwrap();
        assert!(n.ignore("other/a.md", false));
        assert!(n.ignore("keep.tmp", false));
        assert!(r.ignore("templates/.hidden", false));
        assert!(Rules::parse("a/**/b").is_err());
    }
}
