//! Small file-tree fixtures: copying a fixture directory into a temporary one and writing files
//! at relative paths.

use std::path::Path;

/// Recursively copies `src` into `dst` (hidden files included); the copies are fresh, writable
/// files whatever the source's permissions.
pub fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap_or_else(|e| panic!("creating {}: {e}", dst.display()));
    let entries =
        std::fs::read_dir(src).unwrap_or_else(|e| panic!("reading {}: {e}", src.display()));
    for e in entries {
        let e = e.unwrap_or_else(|e| panic!("reading {}: {e}", src.display()));
        let to = dst.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &to);
        } else {
            let data = std::fs::read(e.path())
                .unwrap_or_else(|err| panic!("reading {}: {err}", e.path().display()));
            std::fs::write(&to, data).unwrap_or_else(|e| panic!("writing {}: {e}", to.display()));
        }
    }
}

/// Writes `content` to `root/rel`, creating the parent directories.
pub fn write(root: &Path, rel: &str, content: &str) {
    let p = root.join(rel);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent)
            .unwrap_or_else(|e| panic!("creating {}: {e}", parent.display()));
    }
    std::fs::write(&p, content).unwrap_or_else(|e| panic!("writing {}: {e}", p.display()));
}
