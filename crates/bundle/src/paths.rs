//! Go `path/filepath` semantics for the relative paths `fleet apply` works with: `Clean`, `Join`
//! and `Glob`. Bundle names are derived from these strings, so they must match Go exactly.

use std::path::Path;

use crate::error::BundleError;
use crate::gomatch;

pub use fleet_api::paths::clean;

/// Go's `filepath.Join`: joins non-empty elements and cleans the result.
pub fn join(parts: &[&str]) -> String {
    let v: Vec<&str> = parts.iter().copied().filter(|p| !p.is_empty()).collect();
    if v.is_empty() {
        return String::new();
    }
    clean(&v.join("/"))
}

/// Go's `filepath.Glob` relative to `cwd`, keeping only directories (upstream's `globDirs`).
pub fn glob_dirs(cwd: &Path, pattern: &str) -> Result<Vec<String>, BundleError> {
    let pattern = pattern.trim_start_matches('/');
    let matches = glob(cwd, pattern)?;
    Ok(matches
        .into_iter()
        .filter(|m| cwd.join(m).is_dir())
        .collect())
}

fn glob(cwd: &Path, pattern: &str) -> Result<Vec<String>, BundleError> {
    let bad = || {
        BundleError::Other(format!(
            "invalid path glob {pattern}: syntax error in pattern"
        ))
    };
    // Validate the pattern once (Go reports ErrBadPattern).
    gomatch::matches(pattern, "").map_err(|_| bad())?;
    if !gomatch::has_meta(pattern) {
        let exists = !pattern.is_empty() && std::fs::symlink_metadata(cwd.join(pattern)).is_ok();
        return Ok(if exists {
            vec![pattern.to_string()]
        } else {
            vec![]
        });
    }
    let (dir, file) = match pattern.rfind('/') {
        Some(i) => (&pattern[..=i], &pattern[i + 1..]),
        None => ("", pattern),
    };
    let dir = clean_glob_dir(dir);
    let dirs = if gomatch::has_meta(&dir) {
        glob(cwd, &dir)?
    } else {
        vec![dir]
    };
    let mut out = Vec::new();
    for d in dirs {
        let abs = if d.is_empty() {
            cwd.to_path_buf()
        } else {
            cwd.join(&d)
        };
        let Ok(rd) = std::fs::read_dir(&abs) else {
            continue;
        };
        let mut names: Vec<String> = rd
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        for n in names {
            if gomatch::matches(file, &n).map_err(|_| bad())? {
                out.push(if d.is_empty() { n } else { join(&[&d, &n]) });
            }
        }
    }
    Ok(out)
}

fn clean_glob_dir(dir: &str) -> String {
    match dir {
        "" => String::new(),
        "/" => "/".into(),
        d => d[..d.len() - 1].to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_cleans() {
        // `clean` itself is tested in fleet_api::paths.
        assert_eq!(join(&["test", "."]), "test");
        assert_eq!(join(&["test", "./simple/"]), "test/simple");
        assert_eq!(join(&["test", "a", "fleetDev"]), "test/a/fleetDev");
    }

    #[test]
    fn glob_finds_directories() {
        let t = tempfile::tempdir().unwrap();
        for d in ["a1", "a2", "b", "a1/x"] {
            std::fs::create_dir_all(t.path().join(d)).unwrap();
        }
        std::fs::write(t.path().join("a3"), "file").unwrap();
        assert_eq!(glob_dirs(t.path(), "a*").unwrap(), ["a1", "a2"]);
        assert_eq!(glob_dirs(t.path(), "/a*/x").unwrap(), ["a1/x"]);
        assert_eq!(glob_dirs(t.path(), ".").unwrap(), ["."]);
        assert_eq!(
            glob_dirs(t.path(), "missing").unwrap(),
            Vec::<String>::new()
        );
        assert!(glob_dirs(t.path(), "[").is_err());
    }
}
