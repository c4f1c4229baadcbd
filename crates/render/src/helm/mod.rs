//! Helm chart rendering: what `helm template` (helm v3.6.2) prints, byte for byte.
//!
//! The pipeline mirrors Helm's: load the chart ([`chart`]), merge user values (`-f`, `--set`,
//! [`strvals`]), process dependencies ([`deps`]: conditions, tags, aliases, import-values),
//! coalesce values and validate them against `values.schema.json` ([`schema`]), render every
//! template with the Go template engine (`gotmpl`), then split, classify and order the output
//! ([`manifests`]).

pub mod chart;
pub mod deps;
pub mod engine;
pub mod ignore;
pub mod manifests;
pub mod objects;
pub mod schema;
pub mod strvals;
pub mod values;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use gotmpl::Value as TValue;

pub use chart::{Chart, load, load_archive, load_dir};
pub use values::Values;

use objects::{Capabilities, KubeVersion};

/// A Helm failure, worded like Helm's own message (without the `Error: ` prefix).
#[derive(Debug, Clone, PartialEq)]
pub struct HelmError {
    /// The message.
    pub message: String,
    /// True when Helm would add "Use --debug flag to render out invalid YAML" (the error
    /// happened while rendering, after the release was created).
    pub during_render: bool,
}

impl HelmError {
    fn new(message: impl Into<String>) -> HelmError {
        HelmError {
            message: message.into(),
            during_render: false,
        }
    }

    fn render(message: impl Into<String>) -> HelmError {
        HelmError {
            message: message.into(),
            during_render: true,
        }
    }
}

impl std::fmt::Display for HelmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for HelmError {}

/// User-supplied values, in Helm's precedence order: `-f` files, then `--set`, then
/// `--set-string`, then `--set-file`.
#[derive(Debug, Clone, Default)]
pub struct ValueOptions {
    /// `-f/--values` files (`-` reads stdin).
    pub value_files: Vec<PathBuf>,
    /// `--set`.
    pub values: Vec<String>,
    /// `--set-string`.
    pub string_values: Vec<String>,
    /// `--set-file`.
    pub file_values: Vec<String>,
}

fn read_input(path: &str) -> Result<Vec<u8>, String> {
    if path.trim() == "-" {
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut buf).map_err(|e| e.to_string())?;
        return Ok(buf);
    }
    std::fs::read(path).map_err(|e| format!("open {path}: {e}"))
}

impl ValueOptions {
    /// Helm's `MergeValues`.
    pub fn merge(&self) -> Result<Values, HelmError> {
        let mut base = Values::new();
        for f in &self.value_files {
            let name = f.to_string_lossy().into_owned();
            let bytes = read_input(&name).map_err(HelmError::new)?;
            let text = String::from_utf8_lossy(&bytes);
            let current = values::parse_values_yaml(&text, &name)
                .map_err(|e| HelmError::new(format!("failed to parse {e}")))?;
            base = values::merge_maps(base, current);
        }
        for v in &self.values {
            strvals::parse_into(v, &mut base)
                .map_err(|e| HelmError::new(format!("failed parsing --set data: {e}")))?;
        }
        for v in &self.string_values {
            strvals::parse_into_string(v, &mut base)
                .map_err(|e| HelmError::new(format!("failed parsing --set-string data: {e}")))?;
        }
        for v in &self.file_values {
            let mut read =
                |p: &str| read_input(p).map(|b| String::from_utf8_lossy(&b).into_owned());
            strvals::parse_into_file(v, &mut base, &mut read)
                .map_err(|e| HelmError::new(format!("failed parsing --set-file data: {e}")))?;
        }
        Ok(base)
    }
}

/// Options of `helm template`.
#[derive(Debug, Clone)]
pub struct TemplateOptions {
    /// Release name (`.Release.Name`).
    pub release_name: String,
    /// Namespace (`.Release.Namespace`).
    pub namespace: String,
    /// `--kube-version`; Helm 3.6.2 defaults to v1.20.0.
    pub kube_version: Option<String>,
    /// `--api-versions`, appended to Helm's built-in list.
    pub api_versions: Vec<String>,
    /// `--include-crds`.
    pub include_crds: bool,
    /// `--is-upgrade`.
    pub is_upgrade: bool,
}

impl Default for TemplateOptions {
    fn default() -> Self {
        TemplateOptions {
            release_name: "RELEASE-NAME".into(),
            namespace: "default".into(),
            kube_version: None,
            api_versions: Vec::new(),
            include_crds: false,
            is_upgrade: false,
        }
    }
}

/// Loads the chart at `path` and renders it like `helm template`.
pub fn template_path(
    path: &Path,
    vals: &Values,
    opts: &TemplateOptions,
) -> Result<String, HelmError> {
    let chart = load(path).map_err(|e| HelmError::new(e.0))?;
    template(&chart, vals, opts)
}

/// Renders a loaded chart like `helm template` with user values `vals`.
pub fn template(chart: &Chart, vals: &Values, opts: &TemplateOptions) -> Result<String, HelmError> {
    let kube_version = match &opts.kube_version {
        Some(v) => KubeVersion::parse(v).map_err(|e| HelmError::new(e.0))?,
        None => KubeVersion::default_version(),
    };
    match chart.metadata.chart_type.as_str() {
        "" | "application" => {}
        t => return Err(HelmError::new(format!("{t} charts are not installable"))),
    }
    if chart.has_dependencies_field {
        let missing: Vec<&str> = chart
            .metadata
            .dependencies
            .iter()
            .filter(|r| !chart.dependencies.iter().any(|d| d.name() == r.name))
            .map(|r| r.name.as_str())
            .collect();
        if !missing.is_empty() {
            return Err(HelmError::new(format!(
                "found in Chart.yaml, but missing in charts/ directory: {}",
                missing.join(", ")
            )));
        }
    }
    let mut chart = chart.clone();
    deps::process_dependencies(&mut chart, vals).map_err(|e| HelmError::new(e.0))?;
    let caps = Arc::new(Capabilities::new(kube_version, &opts.api_versions));
    let values = deps::coalesce_values(&chart, vals).map_err(|e| HelmError::new(e.0))?;
    schema::validate(&chart, &values).map_err(|e| {
        HelmError::new(format!(
            "values don't meet the specifications of the schema(s) in the following chart(s):\n{e}"
        ))
    })?;

    if !chart.metadata.kube_version.is_empty()
        && !gotmpl::semver::is_compatible_range(
            &chart.metadata.kube_version,
            &caps.kube_version.version,
        )
    {
        return Err(HelmError::render(format!(
            "chart requires kubeVersion: {} which is incompatible with Kubernetes {}",
            chart.metadata.kube_version, caps.kube_version.version
        )));
    }

    let mut release = BTreeMap::new();
    release.insert("Name".to_string(), TValue::from(opts.release_name.as_str()));
    release.insert(
        "Namespace".to_string(),
        TValue::from(opts.namespace.as_str()),
    );
    release.insert("IsUpgrade".to_string(), TValue::Bool(opts.is_upgrade));
    release.insert("IsInstall".to_string(), TValue::Bool(!opts.is_upgrade));
    release.insert("Revision".to_string(), TValue::Int(1));
    release.insert("Service".to_string(), TValue::from("Helm"));
    let release = TValue::Map(Arc::new(release));

    let tpls = engine::all_templates(&chart, &values, &release, &caps);
    let rendered = engine::render(&tpls, &chart.parse_cache).map_err(HelmError::render)?;
    let files: Vec<(String, String)> = rendered
        .into_iter()
        .filter(|(k, _)| !k.ends_with("NOTES.txt"))
        .collect();
    let (hooks, manifests) = manifests::sort_manifests_cached(&files, Some(&chart.head_cache))
        .map_err(HelmError::render)?;

    let mut b = String::new();
    if opts.include_crds {
        for crd in chart.crd_objects() {
            b.push_str("---\n# Source: ");
            b.push_str(&crd.name);
            b.push('\n');
            b.push_str(&String::from_utf8_lossy(&crd.data));
            b.push('\n');
        }
    }
    for m in &manifests {
        push_doc(&mut b, &m.path, &m.content);
    }
    let mut out = String::with_capacity(b.len() + 64);
    out.push_str(manifests::go_trim_space(&b));
    out.push('\n');
    for h in &hooks {
        push_doc(&mut out, &h.path, &h.content);
    }
    Ok(out)
}

fn push_doc(b: &mut String, path: &str, content: &str) {
    b.push_str("---\n# Source: ");
    b.push_str(path);
    b.push('\n');
    b.push_str(content);
    b.push('\n');
}
