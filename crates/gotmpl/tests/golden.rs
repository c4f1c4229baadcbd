//! Golden parity with real `helm template` (v3.6.2): each directory under tests/golden holds a
//! tiny chart (templates/ + values.yaml) and the output helm produced for it
//! (regenerate with scripts/regen-gotmpl-goldens). The chart is rendered here through gotmpl
//! with the same data shape Helm passes (.Values/.Release/.Chart/.Capabilities/.Template),
//! applying Helm's post-processing (`<no value>` removal, document split, error cleanup).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use gotmpl::{MissingKey, Templates, Value, helm, map_of};

fn s(x: &str) -> Value {
    Value::str(x)
}

fn data(values: Value, template: &str) -> Value {
    map_of([
        ("Values".into(), values),
        (
            "Release".into(),
            map_of([
                ("Name".into(), s("r")),
                ("Namespace".into(), s("default")),
                ("Service".into(), s("Helm")),
                ("IsInstall".into(), Value::Bool(true)),
                ("IsUpgrade".into(), Value::Bool(false)),
                ("Revision".into(), Value::Int(1)),
            ]),
        ),
        (
            "Chart".into(),
            map_of([
                ("Name".into(), s("c")),
                ("Version".into(), s("0.1.0")),
                ("APIVersion".into(), s("v2")),
            ]),
        ),
        (
            "Capabilities".into(),
            map_of([(
                "KubeVersion".into(),
                map_of([
                    ("Version".into(), s("v1.20.0")),
                    ("GitVersion".into(), s("v1.20.0")),
                    ("Major".into(), s("1")),
                    ("Minor".into(), s("20")),
                ]),
            )]),
        ),
        (
            "Template".into(),
            map_of([
                ("Name".into(), s(template)),
                ("BasePath".into(), s("c/templates")),
            ]),
        ),
    ])
}

/// Renders one golden case the way `helm template` would print it.
fn render_case(dir: &Path) -> String {
    let values = match std::fs::read_to_string(dir.join("values.yaml")) {
        Ok(text) if !text.trim().is_empty() => gotmpl::yaml::from_yaml(&text).expect("values.yaml"),
        _ => Value::Map(Default::default()),
    };
    let mut files: Vec<(String, String)> = std::fs::read_dir(dir.join("templates"))
        .expect("templates dir")
        .map(|e| {
            let e = e.expect("entry");
            let name = format!("c/templates/{}", e.file_name().to_string_lossy());
            (name, std::fs::read_to_string(e.path()).expect("template"))
        })
        .collect();
    // Helm parses longest paths first.
    files.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(&b.0)));
    let mut t = Templates::new();
    t.missing_key(MissingKey::Zero);
    for (name, text) in &files {
        if let Err(e) = t.parse(name, text) {
            return format!("Error: {}", helm::cleanup_parse_error(name, &e));
        }
    }
    let mut rendered: BTreeMap<String, String> = BTreeMap::new();
    for (name, _) in &files {
        if name.rsplit('/').next().unwrap_or("").starts_with('_') {
            continue;
        }
        match t.execute(name, &data(values.clone(), name)) {
            Ok(out) => {
                rendered.insert(name.clone(), out.replace("<no value>", ""));
            }
            Err(e) => return format!("Error: {}", helm::cleanup_exec_error(name, &e)),
        }
    }
    let sep = regex::Regex::new(r"(?:^|\s*\n)---\s*").expect("regex");
    let mut out = String::new();
    for (name, content) in rendered {
        for doc in sep.split(content.trim()) {
            if doc.is_empty() {
                continue;
            }
            out.push_str(&format!("---\n# Source: {name}\n{}\n", doc.trim()));
        }
    }
    out
}

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

#[test]
fn golden_parity_with_helm() {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(golden_dir())
        .expect("golden dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    let only = std::env::var("GOLDEN").ok();
    let mut failures = Vec::new();
    let mut count = 0;
    for dir in &dirs {
        let name = dir
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        if only.as_ref().is_some_and(|o| *o != name) {
            continue;
        }
        count += 1;
        let expected = std::fs::read_to_string(dir.join("expected.txt")).expect("expected.txt");
        let got = render_case(dir);
        let (e, g) = if expected.starts_with("Error: ") {
            (
                expected.lines().next().unwrap_or("").to_string(),
                got.lines().next().unwrap_or("").to_string(),
            )
        } else {
            (expected.trim_end().to_string(), got.trim_end().to_string())
        };
        if e != g {
            failures.push(format!(
                "=== {name}\n--- expected (helm)\n{e}\n--- got (gotmpl)\n{g}\n"
            ));
        }
    }
    println!("golden cases: {count}, failures: {}", failures.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
