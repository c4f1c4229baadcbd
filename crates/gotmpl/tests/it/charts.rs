//! Parity on real public charts (../shared/data/charts, read at test time, never copied):
//! every template must parse, every non-partial template must execute with the chart's default
//! values, and — when the real helm binary is installed — each template's rendered documents
//! must equal what `helm template --show-only` prints for it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use fleet_testkit::tools;
use gotmpl::{MissingKey, Object, Templates, Value, helm, map_of};

fn s(x: &str) -> Value {
    Value::str(x)
}

fn shared_charts() -> Option<PathBuf> {
    tools::shared_data().map(|d| d.join("charts"))
}

/// A minimal `.Files` (Get/Glob) over the chart directory, enough for the charts used here.
#[derive(Debug)]
struct Files {
    root: PathBuf,
}

fn glob_match(pat: &str, path: &str) -> bool {
    let pp: Vec<&str> = pat.split('/').collect();
    let sp: Vec<&str> = path.split('/').collect();
    pp.len() == sp.len()
        && pp
            .iter()
            .zip(&sp)
            .all(|(p, s)| seg_match(p.as_bytes(), s.as_bytes()))
}

fn seg_match(p: &[u8], s: &[u8]) -> bool {
    match p.first() {
        None => s.is_empty(),
        Some(b'*') => (0..=s.len()).any(|k| seg_match(&p[1..], &s[k..])),
        Some(c) => s.first() == Some(c) && seg_match(&p[1..], &s[1..]),
    }
}

fn walk(dir: &Path, base: &Path, out: &mut Vec<String>) {
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, base, out);
            } else if let Ok(rel) = p.strip_prefix(base) {
                out.push(rel.to_string_lossy().to_string());
            }
        }
    }
}

impl Object for Files {
    fn field(&self, _name: &str) -> Option<Value> {
        None
    }
    fn call(&self, method: &str, args: &[Value]) -> Option<Result<Value, String>> {
        let arg = args.first().and_then(|a| a.as_str()).unwrap_or("");
        match method {
            "Get" => Some(Ok(Value::from(
                std::fs::read_to_string(self.root.join(arg)).unwrap_or_default(),
            ))),
            "Glob" => {
                let mut all = Vec::new();
                walk(&self.root, &self.root, &mut all);
                let m: BTreeMap<String, Value> = all
                    .into_iter()
                    .filter(|p| glob_match(arg, p))
                    .map(|p| {
                        let c = std::fs::read_to_string(self.root.join(&p)).unwrap_or_default();
                        (p, Value::from(c))
                    })
                    .collect();
                Some(Ok(Value::Map(Arc::new(m))))
            }
            _ => None,
        }
    }
    fn display(&self) -> String {
        "map[]".into()
    }
}

#[derive(Debug)]
struct ApiVersions;

impl Object for ApiVersions {
    fn field(&self, _name: &str) -> Option<Value> {
        None
    }
    fn call(&self, method: &str, args: &[Value]) -> Option<Result<Value, String>> {
        match method {
            "Has" => {
                let a = args.first().and_then(|a| a.as_str()).unwrap_or("");
                Some(Ok(Value::Bool(matches!(
                    a,
                    "v1" | "apps/v1" | "batch/v1" | "policy/v1beta1" | "networking.k8s.io/v1"
                ))))
            }
            _ => None,
        }
    }
    fn display(&self) -> String {
        "[v1 apps/v1]".into()
    }
}

fn chart_meta(chart: &Path) -> Value {
    let text = std::fs::read_to_string(chart.join("Chart.yaml")).expect("Chart.yaml");
    let v = gotmpl::yaml::from_yaml(&text).expect("Chart.yaml parses");
    let mut m = BTreeMap::new();
    if let Value::Map(src) = v {
        for (k, val) in src.iter() {
            // Helm exposes chart.Metadata with Go field names.
            let key = match k.as_str() {
                "apiVersion" => "APIVersion".to_string(),
                "appVersion" => "AppVersion".to_string(),
                "kubeVersion" => "KubeVersion".to_string(),
                other => {
                    let mut c = other.chars();
                    c.next()
                        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
                        .unwrap_or_default()
                }
            };
            m.insert(key, val.clone());
        }
    }
    Value::Map(Arc::new(m))
}

fn data(chart: &Path, name: &str, values: &Value, template: &str) -> Value {
    map_of([
        ("Values".into(), values.clone()),
        ("Chart".into(), chart_meta(chart)),
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
            "Capabilities".into(),
            map_of([
                (
                    "KubeVersion".into(),
                    map_of([
                        ("Version".into(), s("v1.30.0")),
                        ("GitVersion".into(), s("v1.30.0")),
                        ("Major".into(), s("1")),
                        ("Minor".into(), s("30")),
                    ]),
                ),
                ("APIVersions".into(), Value::Object(Arc::new(ApiVersions))),
            ]),
        ),
        (
            "Files".into(),
            Value::Object(Arc::new(Files {
                root: chart.to_path_buf(),
            })),
        ),
        (
            "Template".into(),
            map_of([
                ("Name".into(), s(template)),
                ("BasePath".into(), s(&format!("{name}/templates"))),
            ]),
        ),
    ])
}

fn docs(text: &str) -> Vec<String> {
    let sep = regex::Regex::new(r"(?:^|\s*\n)---\s*").expect("regex");
    let mut v: Vec<String> = sep
        .split(text.trim())
        .map(|d| d.trim().to_string())
        .filter(|d| !d.is_empty())
        // helm template prefixes "# Source:" lines; drop them for comparison
        .map(|d| {
            d.lines()
                .filter(|l| !l.starts_with("# Source: "))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .map(|d| d.trim().to_string())
        .filter(|d| !d.is_empty())
        .collect();
    v.sort();
    v
}

#[test]
fn real_charts_render_like_helm() {
    let Some(root) = shared_charts() else { return };
    let helm = tools::helm();
    let mut charts: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("charts")
        .flatten()
        .map(|e| e.path())
        .collect();
    charts.sort();
    let (mut parsed, mut rendered, mut compared) = (0, 0, 0);
    let mut failures = Vec::new();
    for chart in charts.iter().filter(|c| c.join("Chart.yaml").is_file()) {
        let name = chart_meta(chart)
            .as_str()
            .map(|x| x.to_string())
            .unwrap_or_else(|| match chart_meta(chart) {
                Value::Map(m) => m
                    .get("Name")
                    .and_then(|n| n.as_str())
                    .unwrap_or("chart")
                    .to_string(),
                _ => "chart".into(),
            });
        let values_text = std::fs::read_to_string(chart.join("values.yaml")).unwrap_or_default();
        let values = gotmpl::yaml::from_yaml(&values_text).expect("values parse");
        let mut files = Vec::new();
        walk(&chart.join("templates"), chart, &mut files);
        files.retain(|f| !f.ends_with(".txt") && !f.contains("/tests/"));
        files.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
        let mut t = Templates::new();
        t.missing_key(MissingKey::Zero);
        for f in &files {
            let text = std::fs::read_to_string(chart.join(f)).expect("template");
            let tname = format!("{name}/{f}");
            match t.parse(&tname, &text) {
                Ok(()) => parsed += 1,
                Err(e) => failures.push(helm::cleanup_parse_error(&tname, &e)),
            }
        }
        for f in &files {
            if f.rsplit('/').next().unwrap_or("").starts_with('_') {
                continue;
            }
            let tname = format!("{name}/{f}");
            let out = match t.execute(&tname, &data(chart, &name, &values, &tname)) {
                Ok(o) => o.replace("<no value>", ""),
                Err(e) => {
                    failures.push(helm::cleanup_exec_error(&tname, &e));
                    continue;
                }
            };
            rendered += 1;
            let Some(helm) = &helm else { continue };
            let o = Command::new(helm)
                .args([
                    "template",
                    "r",
                    &chart.to_string_lossy(),
                    "--show-only",
                    f,
                    "--kube-version",
                    "v1.30.0",
                ])
                .output()
                .expect("helm runs");
            let stdout = String::from_utf8_lossy(&o.stdout).to_string();
            if !o.status.success() {
                // helm refuses to --show-only a template that rendered empty
                if docs(&out).is_empty() {
                    compared += 1;
                } else {
                    failures.push(format!(
                        "{tname}: helm failed: {}",
                        String::from_utf8_lossy(&o.stderr)
                    ));
                }
                continue;
            }
            compared += 1;
            let (want, got) = (docs(&stdout), docs(&out));
            if want != got {
                failures.push(format!(
                    "{tname}: differs\n--- helm\n{}\n--- gotmpl\n{}",
                    want.join("\n---\n"),
                    got.join("\n---\n")
                ));
            }
        }
    }
    println!(
        "real charts: parsed {parsed} templates, rendered {rendered}, compared with helm {compared}"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
