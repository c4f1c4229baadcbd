//! The crate's layering holds: no module imports from a layer above its own (see `src/lib.rs`).
//! Reads the sources and checks every `crate::` path, so a new upward import fails here rather
//! than growing back into an import cycle.

use std::path::{Path, PathBuf};

/// Layers, lowest first; a top-level module may import from its own layer and those below.
const LAYERS: &[&[&str]] = &[
    &["storage"],
    &["security"],
    &["state"],
    &["write"],
    &["controllers"],
    &["http"],
    &["app", "server", "lib"],
];

fn rank(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Removes `//` comments (doc links are not imports).
fn strip_comments(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) if !l[..i].contains('"') => &l[..i],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The top-level modules named after `crate::`, including inside `crate::{a, b::c}`.
fn crate_targets(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().last();
        rest = &rest[i + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let mut item = String::new();
            let mut at_start = true;
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    ',' if depth == 1 => {
                        at_start = true;
                        continue;
                    }
                    _ => {}
                }
                if depth == 1 && at_start {
                    if c.is_alphanumeric() || c == '_' {
                        item.push(c);
                    } else if !item.is_empty() {
                        out.push(std::mem::take(&mut item));
                        at_start = false;
                    }
                }
            }
            if !item.is_empty() {
                out.push(item);
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            out.push(name);
        }
    }
    out
}

#[test]
fn no_module_imports_from_a_higher_layer() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    assert!(
        files.len() > 30,
        "sources not found under {}",
        src.display()
    );
    let mut upward = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&src).expect("under src");
        let first = rel
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .unwrap_or("");
        let module = first.trim_end_matches(".rs");
        let Some(mine) = rank(module) else {
            panic!("{} is in no layer; add it to LAYERS", rel.display());
        };
        let text = std::fs::read_to_string(f).expect("read source");
        for target in crate_targets(&strip_comments(&text)) {
            if let Some(theirs) = rank(&target)
                && theirs > mine
            {
                upward.push(format!("{} imports crate::{target}", rel.display()));
            }
        }
    }
    upward.sort();
    upward.dedup();
    assert!(
        upward.is_empty(),
        "imports from a higher layer:\n{}",
        upward.join("\n")
    );
}

#[test]
fn the_checker_sees_grouped_and_plain_paths() {
    let t =
        crate_targets("use crate::{http::x, state::{A, B}};\nfn f() { crate::write::crud::g() }");
    assert_eq!(t, ["http", "state", "write"]);
}
