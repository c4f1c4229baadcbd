//! Golden parity with real `helm template` (v3.6.2): each directory under tests/golden holds a
//! tiny chart (templates/ + values.yaml) and the output helm produced for it
//! (regenerate with scripts/regen-gotmpl-goldens). The chart is rendered here through gotmpl
//! with the same data shape Helm passes (.Values/.Release/.Chart/.Capabilities/.Template),
//! applying Helm's post-processing (`<no value>` removal, document split, error cleanup).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use gotmpl::{MissingKey, Object, Templates, Value, helm, map_of};

/// Helm's `files` (`map[string][]byte` with methods) for the chart files a case keeps under
/// `files/` (copied to the chart root by the regen script): enough of `.Files` to prove that
/// gotmpl treats a map-like object as the Go map it is.
#[derive(Debug)]
struct Files(BTreeMap<String, Vec<u8>>);

fn bytes(b: &[u8]) -> Value {
    Value::from(
        b.iter()
            .map(|x| Value::Int(i64::from(*x)))
            .collect::<Vec<_>>(),
    )
}

impl Object for Files {
    fn field(&self, _name: &str) -> Option<Value> {
        None
    }
    fn call(&self, method: &str, args: &[Value]) -> Option<Result<Value, String>> {
        match (method, args) {
            ("Get", [Value::String(k)]) => Some(Ok(Value::from(
                String::from_utf8_lossy(self.0.get(&**k).map(|b| &b[..]).unwrap_or(&[]))
                    .into_owned(),
            ))),
            _ => None,
        }
    }
    fn display(&self) -> String {
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|(k, v)| format!("{k}:{}", bytes(v).to_go_string()))
            .collect();
        format!("map[{}]", parts.join(" "))
    }
    fn type_name(&self) -> String {
        "engine.files".into()
    }
    fn entries(&self) -> Option<Vec<(String, Value)>> {
        Some(self.0.iter().map(|(k, v)| (k.clone(), bytes(v))).collect())
    }
    fn entry_count(&self) -> Option<usize> {
        Some(self.0.len())
    }
}

fn collect_files(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd {
        let p = e.expect("entry").path();
        if p.is_dir() {
            collect_files(root, &p, out);
        } else {
            let rel = p
                .strip_prefix(root)
                .expect("prefix")
                .to_string_lossy()
                .replace('\\', "/");
            out.insert(rel, std::fs::read(&p).expect("file"));
        }
    }
}

/// Applies a case's `set.txt` (one `--set` per line, as the regen script passes them) the way
/// Helm's strvals types simple scalars: integers are int64, true/false bools, null nil.
fn apply_sets(values: Value, text: &str) -> Value {
    let Value::Map(m) = values else {
        return values;
    };
    let mut root: BTreeMap<String, Value> = (*m).clone();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let (key, raw) = line.split_once('=').expect("key=value in set.txt");
        let v = match raw {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            "null" => Value::Nil,
            r => r
                .parse::<i64>()
                .map(Value::int64)
                .unwrap_or_else(|_| Value::str(r)),
        };
        let parts: Vec<&str> = key.split('.').collect();
        set_path(&mut root, &parts, v);
    }
    Value::from(root)
}

fn set_path(m: &mut BTreeMap<String, Value>, parts: &[&str], v: Value) {
    match parts {
        [] => {}
        [last] => {
            m.insert((*last).to_string(), v);
        }
        [first, rest @ ..] => {
            let mut inner = match m.get(*first) {
                Some(Value::Map(x)) => (**x).clone(),
                _ => BTreeMap::new(),
            };
            set_path(&mut inner, rest, v);
            m.insert((*first).to_string(), Value::from(inner));
        }
    }
}

fn s(x: &str) -> Value {
    Value::str(x)
}

fn data(values: Value, files: &Value, template: &str) -> Value {
    map_of([
        ("Values".into(), values),
        ("Files".into(), files.clone()),
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
    let values = match std::fs::read_to_string(dir.join("set.txt")) {
        Ok(text) => apply_sets(values, &text),
        Err(_) => values,
    };
    let mut chart_files = BTreeMap::new();
    collect_files(&dir.join("files"), &dir.join("files"), &mut chart_files);
    let chart = Value::Object(Arc::new(Files(chart_files)));
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
        match t.execute(name, &data(values.clone(), &chart, name)) {
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
