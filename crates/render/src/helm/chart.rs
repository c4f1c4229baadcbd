//! A loaded Helm chart and its loader (directory or `.tgz`), following Helm's `loader` package:
//! which file goes where (templates, values, schema, CRDs, subcharts, `.Files`), `.helmignore`,
//! and Chart.yaml validation with Helm's error messages.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::ignore::Rules;
use super::values::{
    Values, go_json_kind, go_yaml_scalar_string, parse_values_yaml, parse_yaml_raw,
};

message_error! {
    /// A chart that cannot be loaded (missing or malformed `Chart.yaml`, archive, file), worded as
    /// Helm words it, since users compare the two tools' output.
    ChartError
}

/// A file inside a chart (`/`-separated name relative to the chart root).
#[derive(Debug, Clone)]
pub struct File {
    /// Path relative to the chart root.
    pub name: String,
    /// Raw content (UTF-8 BOM stripped, as Helm does); shared, so cloning a chart is cheap.
    pub data: Arc<[u8]>,
}

/// A chart maintainer (`maintainers:` in Chart.yaml).
#[derive(Debug, Clone, Default)]
pub struct Maintainer {
    /// `name`.
    pub name: String,
    /// `email`.
    pub email: String,
    /// `url`.
    pub url: String,
}

/// One Chart.yaml `dependencies:` entry.
#[derive(Debug, Clone, Default)]
pub struct Dependency {
    /// `name` (replaced by `alias` once dependencies are processed, as Helm does).
    pub name: String,
    /// `version` constraint.
    pub version: String,
    /// `repository`.
    pub repository: String,
    /// `condition`: comma-separated value paths.
    pub condition: String,
    /// `tags`.
    pub tags: Vec<String>,
    /// `enabled` (computed while processing conditions and tags).
    pub enabled: bool,
    /// `import-values`: strings or `{child, parent}` maps.
    pub import_values: Vec<Value>,
    /// `alias`.
    pub alias: String,
}

/// Chart.yaml (Helm's `chart.Metadata`), what templates see as `.Chart`.
#[derive(Debug, Clone, Default)]
pub struct Metadata {
    /// `name`.
    pub name: String,
    /// `home`.
    pub home: String,
    /// `sources`.
    pub sources: Vec<String>,
    /// `version`.
    pub version: String,
    /// `description`.
    pub description: String,
    /// `keywords`.
    pub keywords: Vec<String>,
    /// `maintainers`.
    pub maintainers: Vec<Maintainer>,
    /// `icon`.
    pub icon: String,
    /// `apiVersion` (`v1` when absent, as Helm assumes).
    pub api_version: String,
    /// `condition`.
    pub condition: String,
    /// `tags`.
    pub tags: String,
    /// `appVersion`.
    pub app_version: String,
    /// `deprecated`.
    pub deprecated: bool,
    /// `annotations`.
    pub annotations: BTreeMap<String, String>,
    /// `kubeVersion` constraint.
    pub kube_version: String,
    /// `dependencies`.
    pub dependencies: Vec<Dependency>,
    /// `type`: application or library.
    pub chart_type: String,
}

/// A loaded chart with its subcharts.
#[derive(Debug, Clone, Default)]
pub struct Chart {
    /// Chart.yaml.
    pub metadata: Metadata,
    /// Whether `dependencies:` was given at all (Helm distinguishes nil from empty).
    pub has_dependencies_field: bool,
    /// Files under `templates/`.
    pub templates: Vec<File>,
    /// values.yaml.
    pub values: Values,
    /// values.schema.json.
    pub schema: Option<Vec<u8>>,
    /// Every other file (what `.Files` serves), including `crds/`.
    pub files: Vec<File>,
    /// Subcharts from `charts/`.
    pub dependencies: Vec<Chart>,
    /// Parsed template sets of this loaded chart, keyed by the template names rendered (which
    /// depend on enabled subcharts and aliases); shared by clones so repeated renders of one
    /// chart parse its templates once.
    pub parse_cache: ParseCache,
    /// Memo of rendered-document classification (see [`super::manifests::HeadCache`]).
    pub head_cache: super::manifests::HeadCache,
}

/// See [`Chart::parse_cache`].
#[derive(Clone, Default)]
pub struct ParseCache(pub Arc<Mutex<HashMap<String, gotmpl::Templates>>>);

impl std::fmt::Debug for ParseCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ParseCache")
    }
}

impl Chart {
    /// The chart's name.
    pub fn name(&self) -> &str {
        &self.metadata.name
    }

    /// Files under `crds/` with a manifest extension, this chart's then its subcharts'
    /// (Helm's `CRDObjects`).
    pub fn crd_objects(&self) -> Vec<&File> {
        let mut out: Vec<&File> = self
            .files
            .iter()
            .filter(|f| {
                f.name.starts_with("crds/")
                    && (f.name.ends_with(".yaml")
                        || f.name.ends_with(".yml")
                        || f.name.ends_with(".json"))
            })
            .collect();
        for d in &self.dependencies {
            out.extend(d.crd_objects());
        }
        out
    }
}

/// Loads a chart from a directory or a `.tgz` archive.
pub fn load(path: &Path) -> Result<Chart, ChartError> {
    let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if meta.is_dir() {
        load_dir(path)
    } else {
        let data = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        if !(data.len() >= 2 && data[0] == 0x1f && data[1] == 0x8b) {
            // Helm names the file by its cleaned absolute path (filepath.Abs).
            let abs = abs_clean(path);
            let name = abs.display();
            let s = path.to_string_lossy();
            if s.ends_with(".yml") || s.ends_with(".yaml") {
                return Err(format!(
                    "file '{name}' seems to be a YAML file, but expected a gzipped archive"
                )
                .into());
            }
            return Err(format!("file '{name}' does not appear to be a gzipped archive").into());
        }
        load_archive(&data)
    }
}

/// Go's `filepath.Abs`: absolute and lexically cleaned (`.`/`..` removed).
fn abs_clean(path: &Path) -> std::path::PathBuf {
    use std::path::Component;
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = std::path::PathBuf::new();
    for c in abs.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Loads a chart directory, applying its `.helmignore`.
pub fn load_dir(dir: &Path) -> Result<Chart, ChartError> {
    let mut rules = match std::fs::read_to_string(dir.join(".helmignore")) {
        Ok(t) => Rules::parse(&t).map_err(|e| format!("{}/{e}", dir.display()))?,
        Err(_) => Rules::default(),
    };
    rules.add_defaults();
    let mut files = Vec::new();
    walk(dir, "", &rules, &mut files, 0)?;
    load_files(files)
}

fn walk(
    dir: &Path,
    prefix: &str,
    rules: &Rules,
    out: &mut Vec<File>,
    depth: usize,
) -> Result<(), String> {
    if depth > 64 {
        return Err(format!("{}: directory nesting too deep", dir.display()));
    }
    let rd = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut names: Vec<String> = Vec::new();
    for e in rd {
        let e = e.map_err(|e| format!("{}: {e}", dir.display()))?;
        names.push(e.file_name().to_string_lossy().into_owned());
    }
    names.sort();
    for name in names {
        let full = dir.join(&name);
        let rel = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        let md = std::fs::metadata(&full).map_err(|e| format!("{}: {e}", full.display()))?;
        if md.is_dir() {
            if rules.ignore(&rel, true) {
                continue;
            }
            walk(&full, &rel, rules, out, depth + 1)?;
            continue;
        }
        if rules.ignore(&rel, false) {
            continue;
        }
        if !md.is_file() {
            return Err(format!(
                "cannot load irregular file {} as it has file mode type bits set",
                full.display()
            ));
        }
        let data = std::fs::read(&full).map_err(|e| format!("{}: {e}", full.display()))?;
        out.push(File {
            name: rel,
            data: strip_bom(data).into(),
        });
    }
    Ok(())
}

fn strip_bom(mut data: Vec<u8>) -> Vec<u8> {
    if data.starts_with(&[0xEF, 0xBB, 0xBF]) {
        data.drain(..3);
    }
    data
}

/// Loads a chart from `.tgz` bytes (Helm's `LoadArchive`, with its path safety checks).
pub fn load_archive(data: &[u8]) -> Result<Chart, ChartError> {
    let gz = flate2::read::GzDecoder::new(data);
    let mut ar = tar::Archive::new(gz);
    let mut files = Vec::new();
    let entries = ar
        .entries()
        .map_err(|e| format!("invalid chart archive: {e}"))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| format!("invalid chart archive: {e}"))?;
        let kind = entry.header().entry_type();
        if kind.is_dir() || kind.is_pax_global_extensions() || kind.is_pax_local_extensions() {
            continue;
        }
        if !(kind.is_file() || kind == tar::EntryType::Continuous) {
            continue;
        }
        let raw = entry.path_bytes().into_owned();
        let hd_name = String::from_utf8_lossy(&raw).into_owned();
        let delim = if hd_name.contains('\\') { '\\' } else { '/' };
        let parts: Vec<&str> = hd_name.split(delim).collect();
        let n = parts[1.min(parts.len())..].join("/");
        if n.starts_with('/') {
            return Err("chart illegally contains absolute paths".into());
        }
        let n = clean_path(&n);
        if n == "." {
            return Err(format!(
                "chart illegally contains content outside the base directory: {hd_name:?}"
            )
            .into());
        }
        if n.starts_with("..") {
            return Err("chart illegally references parent directory".into());
        }
        let b = n.as_bytes();
        if b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':' {
            return Err("chart contains illegally named files".into());
        }
        if parts.first() == Some(&"Chart.yaml") {
            return Err("chart yaml not in base directory".into());
        }
        let mut buf = Vec::new();
        entry
            .read_to_end(&mut buf)
            .map_err(|e| format!("invalid chart archive: {e}"))?;
        files.push(File {
            name: n,
            data: strip_bom(buf).into(),
        });
    }
    if files.is_empty() {
        return Err("no files in chart archive".into());
    }
    load_files(files)
}

/// Go's `path.Clean` for relative paths.
fn clean_path(p: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if matches!(out.last(), Some(l) if *l != "..") {
                    out.pop();
                } else {
                    out.push("..");
                }
            }
            s => out.push(s),
        }
    }
    if out.is_empty() {
        ".".into()
    } else {
        out.join("/")
    }
}

/// Builds a chart from its files (Helm's `LoadFiles`).
pub fn load_files(files: Vec<File>) -> Result<Chart, ChartError> {
    load_files_with(files, None)
}

/// [`load_files`] for a chart whose metadata is made in code rather than read from a
/// `Chart.yaml` (a bundle of plain manifests): `metadata`, when given, stands for that file.
pub fn load_files_with(files: Vec<File>, metadata: Option<Metadata>) -> Result<Chart, ChartError> {
    let mut c = Chart::default();
    let mut have_meta = false;
    if let Some(md) = metadata {
        c.metadata = md;
        have_meta = true;
    } else if let Some(f) = files.iter().find(|f| f.name == "Chart.yaml") {
        let v = parse_yaml_raw(&String::from_utf8_lossy(&f.data), "Chart.yaml")
            .map_err(|e| format!("cannot load Chart.yaml: {e}"))?;
        let (md, has_deps) =
            metadata_from_json(&v).map_err(|e| format!("cannot load Chart.yaml: {e}"))?;
        c.metadata = md;
        c.has_dependencies_field = has_deps;
        if c.metadata.api_version.is_empty() {
            c.metadata.api_version = "v1".into();
        }
        have_meta = true;
    }
    let mut subcharts: BTreeMap<String, Vec<File>> = BTreeMap::new();
    for f in files {
        match f.name.as_str() {
            "Chart.yaml" => {}
            "Chart.lock" | "requirements.lock" => {
                if f.name == "requirements.lock" && c.metadata.api_version == "v1" {
                    c.files.push(f);
                }
            }
            "values.yaml" => {
                c.values = parse_values_yaml(&String::from_utf8_lossy(&f.data), "values.yaml")
                    .map_err(|e| format!("cannot load values.yaml: {e}"))?;
            }
            "values.schema.json" => c.schema = Some(f.data.to_vec()),
            "requirements.yaml" => {
                let v = parse_yaml_raw(&String::from_utf8_lossy(&f.data), "requirements.yaml")
                    .map_err(|e| format!("cannot load requirements.yaml: {e}"))?;
                if let Some(deps) = v.get("dependencies") {
                    c.metadata.dependencies = dependencies_from_json(deps)
                        .map_err(|e| format!("cannot load requirements.yaml: {e}"))?;
                    c.has_dependencies_field = true;
                }
                if c.metadata.api_version == "v1" {
                    c.files.push(f);
                }
            }
            n if n.starts_with("templates/") => c.templates.push(f),
            n if n.starts_with("charts/") => {
                if n.ends_with(".prov") {
                    c.files.push(f);
                    continue;
                }
                let fname = &n["charts/".len()..];
                let cname = fname.split('/').next().unwrap_or(fname).to_string();
                subcharts.entry(cname).or_default().push(File {
                    name: fname.to_string(),
                    data: f.data,
                });
            }
            _ => c.files.push(f),
        }
    }
    if !have_meta {
        return Err("Chart.yaml file is missing".into());
    }
    validate_metadata(&mut c.metadata)?;
    for (n, files) in subcharts {
        if n.starts_with('_') || n.starts_with('.') {
            continue;
        }
        let sc = if n.ends_with(".tgz") {
            let file = &files[0];
            if file.name != n {
                return Err(format!(
                    "error unpacking tar in {}: expected {n}, got {}",
                    c.name(),
                    file.name
                )
                .into());
            }
            load_archive(&file.data)
        } else {
            let buff: Vec<File> = files
                .into_iter()
                .filter_map(|f| {
                    f.name.split_once('/').map(|(_, rest)| File {
                        name: rest.to_string(),
                        data: f.data,
                    })
                })
                .collect();
            load_files(buff)
        };
        let sc = sc.map_err(|e| format!("error unpacking {n} in {}: {e}", c.name()))?;
        c.dependencies.push(sc);
    }
    Ok(c)
}

fn sanitize(s: &str) -> String {
    s.chars()
        .filter_map(|c| {
            if c.is_whitespace() {
                Some(' ')
            } else if c.is_control() {
                None
            } else {
                Some(c)
            }
        })
        .collect()
}

fn validate_metadata(md: &mut Metadata) -> Result<(), ChartError> {
    md.name = sanitize(&md.name);
    md.description = sanitize(&md.description);
    md.home = sanitize(&md.home);
    md.icon = sanitize(&md.icon);
    md.condition = sanitize(&md.condition);
    md.tags = sanitize(&md.tags);
    md.app_version = sanitize(&md.app_version);
    md.kube_version = sanitize(&md.kube_version);
    for s in md.sources.iter_mut().chain(md.keywords.iter_mut()) {
        *s = sanitize(s);
    }
    if md.api_version.is_empty() {
        return Err("validation: chart.metadata.apiVersion is required".into());
    }
    if md.name.is_empty() {
        return Err("validation: chart.metadata.name is required".into());
    }
    if md.version.is_empty() {
        return Err("validation: chart.metadata.version is required".into());
    }
    if gotmpl::semver::Version::parse(&md.version).is_err() {
        return Err(format!(
            "validation: chart.metadata.version {:?} is invalid",
            md.version
        )
        .into());
    }
    if !matches!(md.chart_type.as_str(), "" | "application" | "library") {
        return Err("validation: chart.metadata.type must be application or library".into());
    }
    for m in &mut md.maintainers {
        m.name = sanitize(&m.name);
        m.email = sanitize(&m.email);
        m.url = sanitize(&m.url);
    }
    for d in &mut md.dependencies {
        d.name = sanitize(&d.name);
        d.version = sanitize(&d.version);
        d.repository = sanitize(&d.repository);
        d.condition = sanitize(&d.condition);
        for t in &mut d.tags {
            *t = sanitize(t);
        }
        if !d.alias.is_empty()
            && !d
                .alias
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(format!(
                "validation: dependency {:?} has disallowed characters in the alias",
                d.name
            )
            .into());
        }
    }
    Ok(())
}

fn type_err(v: &Value, strukt: &str, field: &str, want: &str) -> ChartError {
    ChartError(format!(
        "error unmarshaling JSON: json: cannot unmarshal {} into Go struct field {strukt}.{field} of type {want}",
        go_json_kind(v)
    ))
}

fn get_string(
    obj: &serde_json::Map<String, Value>,
    strukt: &str,
    key: &str,
) -> Result<String, ChartError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(v) => go_yaml_scalar_string(v).ok_or_else(|| type_err(v, strukt, key, "string")),
    }
}

fn get_strings(
    obj: &serde_json::Map<String, Value>,
    strukt: &str,
    key: &str,
) -> Result<Vec<String>, ChartError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .map(|x| match x {
                Value::Null => Ok(String::new()),
                v => go_yaml_scalar_string(v).ok_or_else(|| type_err(v, strukt, key, "string")),
            })
            .collect(),
        Some(v) => Err(type_err(v, strukt, key, "[]string")),
    }
}

fn get_bool(
    obj: &serde_json::Map<String, Value>,
    strukt: &str,
    key: &str,
) -> Result<bool, ChartError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(v) => Err(type_err(v, strukt, key, "bool")),
    }
}

/// Converts parsed Chart.yaml JSON into [`Metadata`], with Go's type errors; also reports
/// whether `dependencies` was present.
pub fn metadata_from_json(v: &Value) -> Result<(Metadata, bool), ChartError> {
    let obj = match v {
        Value::Object(m) => m,
        Value::Null => return Ok((Metadata::default(), false)),
        other => {
            return Err(format!(
                "error unmarshaling JSON: json: cannot unmarshal {} into Go value of type chart.Metadata",
                go_json_kind(other)
            ).into());
        }
    };
    let s = "Metadata";
    let mut md = Metadata {
        name: get_string(obj, s, "name")?,
        home: get_string(obj, s, "home")?,
        sources: get_strings(obj, s, "sources")?,
        version: get_string(obj, s, "version")?,
        description: get_string(obj, s, "description")?,
        keywords: get_strings(obj, s, "keywords")?,
        icon: get_string(obj, s, "icon")?,
        api_version: get_string(obj, s, "apiVersion")?,
        condition: get_string(obj, s, "condition")?,
        tags: get_string(obj, s, "tags")?,
        app_version: get_string(obj, s, "appVersion")?,
        deprecated: get_bool(obj, s, "deprecated")?,
        kube_version: get_string(obj, s, "kubeVersion")?,
        chart_type: get_string(obj, s, "type")?,
        ..Default::default()
    };
    match obj.get("maintainers") {
        None | Some(Value::Null) => {}
        Some(Value::Array(a)) => {
            for m in a {
                match m {
                    Value::Object(mo) => md.maintainers.push(Maintainer {
                        name: get_string(mo, "Maintainer", "name")?,
                        email: get_string(mo, "Maintainer", "email")?,
                        url: get_string(mo, "Maintainer", "url")?,
                    }),
                    Value::Null => md.maintainers.push(Maintainer::default()),
                    v => return Err(type_err(v, s, "maintainers", "chart.Maintainer")),
                }
            }
        }
        Some(v) => return Err(type_err(v, s, "maintainers", "[]*chart.Maintainer")),
    }
    match obj.get("annotations") {
        None | Some(Value::Null) => {}
        Some(Value::Object(a)) => {
            for (k, v) in a {
                let x = match v {
                    Value::Null => String::new(),
                    v => go_yaml_scalar_string(v)
                        .ok_or_else(|| type_err(v, s, "annotations", "string"))?,
                };
                md.annotations.insert(k.clone(), x);
            }
        }
        Some(v) => return Err(type_err(v, s, "annotations", "map[string]string")),
    }
    let has_deps = matches!(obj.get("dependencies"), Some(Value::Array(_)));
    if let Some(d) = obj.get("dependencies") {
        md.dependencies = dependencies_from_json(d)?;
    }
    Ok((md, has_deps))
}

fn dependencies_from_json(v: &Value) -> Result<Vec<Dependency>, ChartError> {
    let s = "Dependency";
    match v {
        Value::Null => Ok(Vec::new()),
        Value::Array(a) => a
            .iter()
            .map(|d| match d {
                Value::Object(o) => Ok(Dependency {
                    name: get_string(o, s, "name")?,
                    version: get_string(o, s, "version")?,
                    repository: get_string(o, s, "repository")?,
                    condition: get_string(o, s, "condition")?,
                    tags: get_strings(o, s, "tags")?,
                    enabled: get_bool(o, s, "enabled")?,
                    import_values: match o.get("import-values") {
                        None | Some(Value::Null) => Vec::new(),
                        Some(Value::Array(a)) => a.clone(),
                        Some(v) => {
                            return Err(type_err(v, s, "import-values", "[]interface {}"));
                        }
                    },
                    alias: get_string(o, s, "alias")?,
                }),
                Value::Null => Ok(Dependency::default()),
                v => Err(type_err(v, "Metadata", "dependencies", "chart.Dependency")),
            })
            .collect(),
        v => Err(type_err(
            v,
            "Metadata",
            "dependencies",
            "[]*chart.Dependency",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(name: &str, data: &str) -> File {
        File {
            name: name.into(),
            data: data.as_bytes().into(),
        }
    }

    #[test]
    fn sorts_files_into_parts() {
        let c = load_files(vec![
            f("Chart.yaml", "name: a\nversion: 1.0.0\n"),
            f("values.yaml", "x: 1\n"),
            f("templates/a.yaml", "a"),
            f("crds/c.yaml", "c"),
            f("README.md", "r"),
            f(
                "charts/sub/Chart.yaml",
                "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
            ),
            f("charts/sub/templates/s.yaml", "s"),
        ])
        .unwrap();
        assert_eq!(c.metadata.api_version, "v1");
        assert_eq!(c.templates.len(), 1);
        assert_eq!(c.files.len(), 2);
        assert_eq!(c.dependencies.len(), 1);
        assert_eq!(c.dependencies[0].templates[0].name, "templates/s.yaml");
        assert_eq!(c.crd_objects().len(), 1);
    }

    #[test]
    fn chart_yaml_errors_are_helms() {
        let e = load_files(vec![f("values.yaml", "")]).unwrap_err();
        assert_eq!(e, "Chart.yaml file is missing".into());
        let e = load_files(vec![f("Chart.yaml", "name: a\n")]).unwrap_err();
        assert!(e.0.contains("chart.metadata.version is required"), "{e}");
        let e = load_files(vec![f("Chart.yaml", "name: a\nversion: x\n")]).unwrap_err();
        assert!(e.0.contains("is invalid"), "{e}");
        let e = load_files(vec![f(
            "Chart.yaml",
            "name: a\nversion: 1.0.0\nappVersion: [1]\n",
        )])
        .unwrap_err();
        assert!(e.0.contains("Metadata.appVersion of type string"), "{e}");
        // Scalars in string fields are stringified like sigs.k8s.io/yaml does.
        let c = load_files(vec![f(
            "Chart.yaml",
            "name: a\nversion: 1.0\nappVersion: 1.10\n",
        )])
        .unwrap();
        assert_eq!(
            (c.metadata.version.as_str(), c.metadata.app_version.as_str()),
            ("1", "1.1")
        );
    }

    #[test]
    fn clean_paths() {
        assert_eq!(clean_path("a/./b//c"), "a/b/c");
        assert_eq!(clean_path("a/../.."), "..");
        assert_eq!(clean_path(""), ".");
    }
}
