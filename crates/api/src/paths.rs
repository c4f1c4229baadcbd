//! Go's `path/filepath.Clean` for `/`-separated paths. Bundle names and resource names are
//! derived from cleaned paths, both when `fleet apply` reads a repository and when the agent
//! renders a bundle, so both sides use this one function.

/// Go's `filepath.Clean`: drops empty and `.` elements, resolves `..` against the element before
/// it (a rooted path cannot climb above `/`), and answers `.` for an empty result.
pub fn clean(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let rooted = p.starts_with('/');
    let mut out: Vec<&str> = Vec::new();
    for part in p.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if out.last().is_some_and(|l| *l != "..") {
                    out.pop();
                } else if !rooted {
                    out.push("..");
                }
            }
            x => out.push(x),
        }
    }
    let body = out.join("/");
    match (rooted, body.is_empty()) {
        (true, _) => format!("/{body}"),
        (false, true) => ".".into(),
        (false, false) => body,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_like_go() {
        for (i, o) in [
            ("", "."),
            (".", "."),
            ("/", "/"),
            ("./a", "a"),
            ("a/../b", "b"),
            ("../a", "../a"),
            ("a//b/", "a/b"),
            ("/../a", "/a"),
            ("a/b/../..", "."),
            ("../../a/..", "../.."),
        ] {
            assert_eq!(clean(i), o, "{i}");
        }
    }
}
