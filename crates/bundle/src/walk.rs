//! Directory walking for resource collection: hidden entries, `.fleetignore` rules and the files
//! `fleet apply` itself consumes are left out; every other regular file becomes a resource.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::BundleError;
use crate::gomatch;

/// `.fleetignore` rules of one directory, keyed by the directory's path relative to the root.
struct IgnoreRules {
    by_dir: BTreeMap<PathBuf, Vec<String>>,
}

impl IgnoreRules {
    fn add_dir(&mut self, abs: &Path, rel: &Path) -> Result<(), BundleError> {
        let file = abs.join(".fleetignore");
        let text = match std::fs::read_to_string(&file) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(BundleError::io(file, e)),
        };
        let mut rules = Vec::new();
        for line in text.lines() {
            let line = trim_unescaped_trailing_space(line);
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            rules.push(line.to_string());
        }
        if !rules.is_empty() {
            self.by_dir.insert(rel.to_path_buf(), rules);
        }
        Ok(())
    }

    /// Rules of every ancestor directory of `rel` (and of `rel`'s parent) apply.
    fn is_ignored(&self, rel: &Path, is_dir: bool, file: &Path) -> Result<bool, BundleError> {
        let base = rel
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut anc = rel.parent();
        while let Some(dir) = anc {
            if let Some(rules) = self.by_dir.get(dir) {
                for r in rules {
                    if let Some(d) = dir_pattern(r) {
                        if is_dir && d == base {
                            return Ok(true);
                        }
                    } else {
                        let m = gomatch::matches(r, &base).map_err(|_| BundleError::Invalid {
                            file: file.join(dir).join(".fleetignore"),
                            key: r.clone(),
                            message: "syntax error in pattern".into(),
                        })?;
                        if m {
                            return Ok(true);
                        }
                    }
                }
            }
            anc = dir.parent();
        }
        Ok(false)
    }
}

/// `name/*` ignores directories called `name` (Go: `^.+/\*`).
fn dir_pattern(r: &str) -> Option<&str> {
    // Go checks `^.+/\*` then trims one `/*` suffix.
    match r.get(1..).map(|rest| rest.contains("/*")) {
        Some(true) => Some(r.strip_suffix("/*").unwrap_or(r)),
        _ => None,
    }
}

/// Go: `([^\\])\s+$` → `$1`.
fn trim_unescaped_trailing_space(line: &str) -> &str {
    let trimmed = line.trim_end();
    if trimmed.len() == line.len() {
        return line;
    }
    if trimmed.ends_with('\\') {
        // keep one escaped whitespace character
        let extra = line[trimmed.len()..]
            .chars()
            .next()
            .map(|c| c.len_utf8())
            .unwrap_or(0);
        return &line[..trimmed.len() + extra];
    }
    if trimmed.is_empty() {
        // a line of only whitespace: Go's regex needs a preceding char, so it stays as is
        return line;
    }
    trimmed
}

/// Reads every file below `root` as upstream's `GetContent` does. `skip_names` are paths
/// (relative, `/`-separated) that `fleet apply` consumes itself (fleet.yaml, values files).
pub fn collect_files(
    root: &Path,
    skip_names: &[String],
) -> Result<BTreeMap<String, Vec<u8>>, BundleError> {
    let mut files = BTreeMap::new();
    let mut rules = IgnoreRules {
        by_dir: BTreeMap::new(),
    };
    rules.add_dir(root, Path::new(""))?;
    let canon_root = std::fs::canonicalize(root).map_err(|e| BundleError::io(root, e))?;
    walk(
        root,
        Path::new(""),
        &canon_root,
        skip_names,
        &mut rules,
        &mut files,
    )?;
    Ok(files)
}

fn walk(
    root: &Path,
    rel_dir: &Path,
    canon_root: &Path,
    skip_names: &[String],
    rules: &mut IgnoreRules,
    files: &mut BTreeMap<String, Vec<u8>>,
) -> Result<(), BundleError> {
    let abs_dir = root.join(rel_dir);
    let mut entries: Vec<_> = std::fs::read_dir(&abs_dir)
        .map_err(|e| BundleError::io(&abs_dir, e))?
        .collect::<Result<_, _>>()
        .map_err(|e| BundleError::io(&abs_dir, e))?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let rel = rel_dir.join(&name);
        let rel_s = slash(&rel);
        let ft = entry
            .file_type()
            .map_err(|e| BundleError::io(entry.path(), e))?;
        let is_dir = ft.is_dir();
        let ignored = rules.is_ignored(&rel, is_dir, root)?;
        if skip_names.contains(&rel_s) {
            if is_dir {
                // Upstream only skips the entry itself; its contents are still walked.
                rules.add_dir(&entry.path(), &rel)?;
                walk(root, &rel, canon_root, skip_names, rules, files)?;
            }
            continue;
        }
        if is_dir {
            if ignored || name.starts_with('.') {
                continue;
            }
            rules.add_dir(&entry.path(), &rel)?;
            walk(root, &rel, canon_root, skip_names, rules, files)?;
            continue;
        }
        if ignored || name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        if ft.is_symlink() {
            let resolved = std::fs::canonicalize(&path).map_err(|e| BundleError::io(&path, e))?;
            if !resolved.starts_with(canon_root) {
                return Err(BundleError::Invalid {
                    file: path,
                    key: rel_s,
                    message: "symlink target escapes bundle directory".into(),
                });
            }
        }
        let data = std::fs::read(&path).map_err(|e| BundleError::io(&path, e))?;
        files.insert(rel_s, data);
    }
    Ok(())
}

/// A relative path with `/` separators, as resource names use.
pub fn slash(p: &Path) -> String {
    p.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailing_space_rules() {
        assert_eq!(trim_unescaped_trailing_space("a.yaml   "), "a.yaml");
        assert_eq!(trim_unescaped_trailing_space("a\\ "), "a\\ ");
        assert_eq!(trim_unescaped_trailing_space("abc"), "abc");
    }

    #[test]
    fn dir_patterns() {
        assert_eq!(dir_pattern("overlays/*"), Some("overlays"));
        assert_eq!(dir_pattern("*.yaml"), None);
        assert_eq!(dir_pattern("/*"), None);
    }
}
