//! Go's `filepath.Match` (used by `.fleetignore` and path globs): `*`, `?`, `[...]` classes with
//! `^` negation and ranges, `\` escapes; `*` and `?` never match `/`.

/// Error for malformed patterns (Go's `ErrBadPattern`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadPattern;

/// Reports whether `name` matches the shell `pattern`, exactly as Go's `filepath.Match`.
pub fn matches(pattern: &str, name: &str) -> Result<bool, BadPattern> {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    // Validate the whole pattern first, as Go reports bad patterns even after a mismatch.
    validate(&p)?;
    Ok(match_here(&p, &n))
}

fn validate(p: &[char]) -> Result<(), BadPattern> {
    let mut i = 0;
    while i < p.len() {
        match p[i] {
            '\\' => {
                if i + 1 >= p.len() {
                    return Err(BadPattern);
                }
                i += 2;
            }
            '[' => {
                let (_, next) = parse_class(p, i, None)?;
                i = next;
            }
            _ => i += 1,
        }
    }
    Ok(())
}

/// Parses a class starting at `p[start] == '['`; if `c` is given, reports whether it matches.
/// Returns (matched, index after `]`).
fn parse_class(p: &[char], start: usize, c: Option<char>) -> Result<(bool, usize), BadPattern> {
    let mut i = start + 1;
    let mut negated = false;
    if i < p.len() && p[i] == '^' {
        negated = true;
        i += 1;
    }
    let mut matched = false;
    let mut nrange = 0;
    loop {
        if i >= p.len() {
            return Err(BadPattern);
        }
        if p[i] == ']' && nrange > 0 {
            i += 1;
            break;
        }
        let (lo, ni) = class_char(p, i)?;
        i = ni;
        let mut hi = lo;
        if i < p.len() && p[i] == '-' {
            let (h, ni) = class_char(p, i + 1)?;
            hi = h;
            i = ni;
        }
        if let Some(c) = c
            && lo <= c
            && c <= hi
        {
            matched = true;
        }
        nrange += 1;
    }
    Ok((matched != negated, i))
}

fn class_char(p: &[char], i: usize) -> Result<(char, usize), BadPattern> {
    match p.get(i) {
        None | Some('-') | Some(']') => Err(BadPattern),
        Some('\\') => p.get(i + 1).map(|c| (*c, i + 2)).ok_or(BadPattern),
        Some(c) => Ok((*c, i + 1)),
    }
}

fn match_here(p: &[char], n: &[char]) -> bool {
    if p.is_empty() {
        return n.is_empty();
    }
    match p[0] {
        '*' => {
            let rest = &p[1..];
            for k in 0..=n.len() {
                if match_here(rest, &n[k..]) {
                    return true;
                }
                if k < n.len() && n[k] == '/' {
                    return false;
                }
            }
            false
        }
        '?' => !n.is_empty() && n[0] != '/' && match_here(&p[1..], &n[1..]),
        '[' => {
            if n.is_empty() || n[0] == '/' {
                return false;
            }
            match parse_class(p, 0, Some(n[0])) {
                Ok((true, next)) => match_here(&p[next..], &n[1..]),
                _ => false,
            }
        }
        '\\' => p.len() > 1 && !n.is_empty() && p[1] == n[0] && match_here(&p[2..], &n[1..]),
        c => !n.is_empty() && n[0] == c && match_here(&p[1..], &n[1..]),
    }
}

/// True if the pattern has glob metacharacters (Go's `hasMeta`).
pub fn has_meta(s: &str) -> bool {
    s.contains(['*', '?', '[', '\\'])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table() {
        let cases = [
            ("abc", "abc", true),
            ("*", "abc", true),
            ("*c", "abc", true),
            ("a*", "a", true),
            ("a*", "abc", true),
            ("a*", "ab/c", false),
            ("a*/b", "abc/b", true),
            ("a*b*c*d*e*/f", "axbxcxdxe/f", true),
            ("a*b?c*x", "abxbbxdbxebxczzx", true),
            ("a*b?c*x", "abxbbxdbxebxczzy", false),
            ("ab[c]", "abc", true),
            ("ab[b-d]", "abc", true),
            ("ab[e-g]", "abc", false),
            ("ab[^c]", "abc", false),
            ("ab[^b-d]", "abc", false),
            ("ab[^e-g]", "abc", true),
            ("a\\*b", "a*b", true),
            ("a\\*b", "ab", false),
            ("a?b", "a☺b", true),
            ("a[^a]b", "a☺b", true),
            ("*.yaml", "values.yaml", true),
            ("*.yaml", "values.yml", false),
            ("*x", "xxx", true),
        ];
        for (p, n, want) in cases {
            assert_eq!(matches(p, n), Ok(want), "{p} vs {n}");
        }
        for bad in ["[", "[^", "a[", "[]a]", "[-]", "[x-]", "\\", "[a-b-c]"] {
            assert_eq!(matches(bad, "x"), Err(BadPattern), "{bad}");
        }
    }

    proptest::proptest! {
        #[test]
        fn never_panics(p in "[a-c*?\\[\\]\\^\\-\\\\/]{0,12}", n in "[a-c/]{0,12}") {
            let _ = matches(&p, &n);
        }

        #[test]
        fn literal_matches_itself(n in "[a-z0-9._-]{0,20}") {
            proptest::prop_assert_eq!(matches(&n, &n), Ok(true));
        }
    }
}
