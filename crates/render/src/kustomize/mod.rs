//! `kustomize build` reimplemented: the subset of kustomize v4.5.4 Fleet users write,
//! with output byte-identical to the real binary.
//!
//! Fleet's agent renders kustomize bundles itself (no plugins, files only from the bundle),
//! so this module reads through a [`FileSource`]: the disk for `fleet kustomize DIR`, or an
//! in-memory bundle on the agent (see [`MemFs`]).
//!
//! Pipeline per kustomization (as kustomize's `KustTarget`): resources and bases, then
//! components, generators, then transformers in kustomize's fixed order (strategic patches,
//! `patches`, namespace, prefix, suffix, labels, annotations, JSON 6902 patches, replicas,
//! images). At the top: hash suffixes, name-reference fixing, legacy ordering.

mod block_yaml;
pub mod goyaml;
pub mod yamlin;

mod fieldspec;
mod generators;
mod kfile;
mod namerefs;
mod patches;
mod resource;
mod transform;

pub use resource::Res;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Component, Path, PathBuf};

/// A kustomize build failure, naming the file (and line/field when known).
#[derive(Debug, Clone, PartialEq)]
pub struct KustomizeError {
    /// The file at fault (kustomization or resource), if known.
    pub file: Option<PathBuf>,
    /// 1-based line in `file`, 0 if unknown.
    pub line: usize,
    /// The kustomization field involved (`resources`, `patchesStrategicMerge`, ...), if any.
    pub field: Option<String>,
    /// What went wrong.
    pub msg: String,
}

impl KustomizeError {
    pub(crate) fn new(msg: impl Into<String>) -> Self {
        KustomizeError {
            file: None,
            line: 0,
            field: None,
            msg: msg.into(),
        }
    }

    pub(crate) fn at(
        file: &Path,
        line: usize,
        field: Option<&str>,
        msg: impl Into<String>,
    ) -> Self {
        KustomizeError {
            file: Some(file.to_path_buf()),
            line,
            field: field.map(str::to_string),
            msg: msg.into(),
        }
    }

    pub(crate) fn in_file(file: &Path, msg: impl Into<String>) -> Self {
        Self::at(file, 0, None, msg)
    }

    pub(crate) fn field(mut self, field: &str) -> Self {
        if self.field.is_none() {
            self.field = Some(field.to_string());
        }
        self
    }

    pub(crate) fn file_if_none(mut self, file: &Path) -> Self {
        if self.file.is_none() {
            self.file = Some(file.to_path_buf());
        }
        self
    }
}

impl fmt::Display for KustomizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{}", file.display())?;
            if self.line > 0 {
                write!(f, ":{}", self.line)?;
            }
            write!(f, ": ")?;
        }
        if let Some(field) = &self.field {
            write!(f, "field `{field}`: ")?;
        }
        write!(f, "{}", self.msg)
    }
}

impl std::error::Error for KustomizeError {}

/// Where kustomize reads files from. Paths given are lexically normalised and absolute
/// (or rooted at the bundle root for in-memory sources).
pub trait FileSource {
    /// Contents of a regular file.
    fn read(&self, path: &Path) -> std::io::Result<Vec<u8>>;
    /// Whether `path` is a directory.
    fn is_dir(&self, path: &Path) -> bool;
    /// Whether `path` is a regular file.
    fn is_file(&self, path: &Path) -> bool;
}

/// The local filesystem, for `fleet kustomize DIR`.
#[derive(Debug, Default, Clone, Copy)]
pub struct DiskFs;

impl FileSource for DiskFs {
    fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        std::fs::read(path)
    }
    fn is_dir(&self, path: &Path) -> bool {
        path.is_dir()
    }
    fn is_file(&self, path: &Path) -> bool {
        path.is_file()
    }
}

/// Files held in memory (a bundle's resources on the agent), keyed by normalised path.
#[derive(Debug, Default, Clone)]
pub struct MemFs {
    files: BTreeMap<PathBuf, Vec<u8>>,
}

impl MemFs {
    /// An empty in-memory tree.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) a file; `path` is normalised lexically.
    pub fn insert(&mut self, path: impl AsRef<Path>, content: impl Into<Vec<u8>>) {
        self.files
            .insert(normalize(Path::new("/"), path.as_ref()), content.into());
    }
}

impl FileSource for MemFs {
    fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        self.files
            .get(path)
            .cloned()
            .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"))
    }
    fn is_dir(&self, path: &Path) -> bool {
        self.files.keys().any(|p| p != path && p.starts_with(path))
    }
    fn is_file(&self, path: &Path) -> bool {
        self.files.contains_key(path)
    }
}

/// Joins `rel` onto `base` and removes `.`/`..` lexically (kustomize works on cleaned paths).
pub fn normalize(base: &Path, rel: &Path) -> PathBuf {
    let joined = if rel.is_absolute() {
        rel.to_path_buf()
    } else {
        base.join(rel)
    };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Builds the kustomization in `dir` from disk and returns the resources in output order.
pub fn build(dir: &Path) -> Result<Vec<serde_json::Value>, KustomizeError> {
    let abs = if dir.is_absolute() {
        dir.to_path_buf()
    } else {
        std::env::current_dir()
            .map_err(|e| KustomizeError::new(format!("current directory: {e}")))?
            .join(dir)
    };
    build_with(&DiskFs, &normalize(Path::new("/"), &abs))
}

/// Builds the kustomization in `dir` and prints it exactly as `kustomize build` would.
pub fn build_yaml(dir: &Path) -> Result<String, KustomizeError> {
    Ok(goyaml::to_yaml_stream(build(dir)?.iter()))
}

/// Builds the kustomization at `dir` (normalised) read through `fs`, in kustomize's
/// legacy output order (what `kustomize build` prints).
pub fn build_with(
    fs: &dyn FileSource,
    dir: &Path,
) -> Result<Vec<serde_json::Value>, KustomizeError> {
    build_inner(fs, dir, true)
}

fn build_inner(
    fs: &dyn FileSource,
    dir: &Path,
    legacy_order: bool,
) -> Result<Vec<serde_json::Value>, KustomizeError> {
    let mut stack = Vec::new();
    let mut acc = resource::ResMap::default();
    accumulate_target(fs, dir, &mut acc, &mut stack, false)?;
    generators::add_hash_suffixes(&mut acc)?;
    namerefs::fix_back_references(&mut acc)?;
    let mut res = acc.into_vec();
    if legacy_order {
        resource::legacy_sort(&mut res);
    }
    res.into_iter().map(printable).collect()
}

/// A built resource as kustomize prints it: its JSON is read back by go-yaml v2
/// (`sigs.k8s.io/yaml.JSONToYAML`), which folds U+0085 in strings and fails on keys
/// holding one (see [`gotmpl::json_reread`]).
fn printable(r: resource::Res) -> Result<serde_json::Value, KustomizeError> {
    let id = r.id();
    let mut obj = r.obj;
    gotmpl::json_reread::reread_json(&mut obj)
        .map_err(|e| KustomizeError::in_file(&r.source, format!("{} {}: {e}", id.kind, id.name)))?;
    Ok(obj)
}

/// The file Fleet injects Helm's output as before running kustomize over a bundle.
pub const FLEET_MANIFESTS: &str = "fleet-manifests.yaml";

/// Fleet's kustomize post-render of Helm output on the agent.
///
/// `files` are the bundle's files (relative path → content), `dir` the `kustomize.dir`
/// option ("" = bundle root) and `helm_output` the rendered chart. Returns `None` when
/// `<dir>/kustomization.yaml` does not exist (nothing to do). Otherwise the Helm output is
/// written to `<dir>/fleet-manifests.yaml`, prepended to the kustomization's `resources`
/// (when it holds any object), and the kustomization is built with kustomize's default
/// plugin-less, root-only loading. Objects come back in accumulation order, as Fleet's
/// embedded krusty (no legacy sort) returns them.
pub fn post_render(
    files: &BTreeMap<String, Vec<u8>>,
    dir: &str,
    helm_output: &str,
) -> Result<Option<Vec<serde_json::Value>>, KustomizeError> {
    let root = Path::new("/bundle");
    let dir = if dir.is_empty() { "." } else { dir };
    let kdir = normalize(root, Path::new(dir));
    let mut fs = MemFs::new();
    for (name, content) in files {
        if !name.is_empty() {
            fs.insert(root.join(name), content.clone());
        }
    }
    fs.insert(kdir.join(FLEET_MANIFESTS), helm_output.as_bytes().to_vec());
    let kfile = kdir.join("kustomization.yaml");
    let Ok(kbytes) = fs.read(&kfile) else {
        return Ok(None);
    };
    let has_objects = resource::parse_resources(&kdir.join(FLEET_MANIFESTS), helm_output)
        .map(|r| !r.is_empty())
        .unwrap_or(true);
    if has_objects {
        let text = String::from_utf8(kbytes)
            .map_err(|_| KustomizeError::in_file(&kfile, "file is not valid UTF-8"))?;
        let docs = yamlin::parse_documents(&text, yamlin::Schema::V11)
            .map_err(|e| KustomizeError::at(&kfile, e.line, None, e.msg))?;
        let mut data = docs
            .first()
            .map(|d| d.to_json())
            .unwrap_or_else(|| serde_json::Value::Object(Default::default()));
        let Some(obj) = data.as_object_mut() else {
            return Err(KustomizeError::in_file(&kfile, "expected a mapping"));
        };
        let mut resources: Vec<serde_json::Value> = match obj.get("resources") {
            Some(serde_json::Value::Array(a)) => a.clone(),
            _ => Vec::new(),
        };
        if !resources
            .iter()
            .any(|r| r.as_str() == Some(FLEET_MANIFESTS))
        {
            resources.insert(0, serde_json::Value::String(FLEET_MANIFESTS.into()));
            obj.insert("resources".into(), serde_json::Value::Array(resources));
        }
        fs.insert(&kfile, goyaml::to_yaml(&data).into_bytes());
    }
    build_inner(&fs, &kdir, false).map(Some)
}

/// Loads one kustomization directory into `acc` (a fresh accumulator for kustomizations,
/// the parent's for components), applying its generators and transformers.
fn accumulate_target(
    fs: &dyn FileSource,
    dir: &Path,
    acc: &mut resource::ResMap,
    stack: &mut Vec<PathBuf>,
    is_component: bool,
) -> Result<(), KustomizeError> {
    if stack.iter().any(|p| p == dir) {
        let chain: Vec<String> = stack
            .iter()
            .chain(std::iter::once(&dir.to_path_buf()))
            .map(|p| p.display().to_string())
            .collect();
        return Err(KustomizeError::new(format!(
            "cycle detected: {}",
            chain.join(" -> ")
        )));
    }
    let k = kfile::load(fs, dir)?;
    if is_component && !k.is_component {
        return Err(KustomizeError::in_file(
            &k.file,
            format!("expected kind 'Component' for path '{}'", dir.display()),
        )
        .field("components"));
    }
    if !is_component && k.is_component {
        return Err(KustomizeError::in_file(
            &k.file,
            format!(
                "expected kind != 'Component' for path '{}' (components go under `components:`)",
                dir.display()
            ),
        )
        .field("kind"));
    }
    stack.push(dir.to_path_buf());
    let r = accumulate_loaded(fs, &k, acc, stack);
    stack.pop();
    r
}

fn accumulate_loaded(
    fs: &dyn FileSource,
    k: &kfile::Kustomization,
    acc: &mut resource::ResMap,
    stack: &mut Vec<PathBuf>,
) -> Result<(), KustomizeError> {
    let dir = k.dir.clone();
    for entry in &k.resources {
        let path = normalize(&dir, Path::new(&entry.value));
        if is_remote(&entry.value) {
            return Err(KustomizeError::at(
                &k.file,
                entry.line,
                Some("resources"),
                format!(
                    "remote resource {:?} is not supported: Fleet renders from the bundle's files only",
                    entry.value
                ),
            ));
        }
        if fs.is_file(&path) {
            kfile::check_within(&k.file, entry.line, "resources", &dir, &path)?;
            let docs = resource::load_resources(fs, &path)?;
            acc.append_all(docs)
                .map_err(|e| KustomizeError::at(&k.file, entry.line, Some("resources"), e.msg))?;
        } else if fs.is_dir(&path) {
            let mut sub = resource::ResMap::default();
            accumulate_target(fs, &path, &mut sub, stack, false).map_err(|e| {
                if e.file.is_some() {
                    e
                } else {
                    KustomizeError::at(&k.file, entry.line, Some("resources"), e.msg)
                }
            })?;
            acc.absorb(sub)
                .map_err(|e| KustomizeError::at(&k.file, entry.line, Some("resources"), e.msg))?;
        } else {
            return Err(KustomizeError::at(
                &k.file,
                entry.line,
                Some("resources"),
                format!(
                    "{:?}: no such file or directory ({})",
                    entry.value,
                    path.display()
                ),
            ));
        }
    }
    for entry in &k.components {
        let path = normalize(&dir, Path::new(&entry.value));
        if !fs.is_dir(&path) {
            return Err(KustomizeError::at(
                &k.file,
                entry.line,
                Some("components"),
                format!("{:?}: component directory not found", entry.value),
            ));
        }
        accumulate_target(fs, &path, acc, stack, true)?;
    }
    for entry in &k.crds {
        // CRD files only teach kustomize about name references inside custom resources;
        // we check they exist and otherwise ignore them.
        let path = normalize(&dir, Path::new(&entry.value));
        if !fs.is_file(&path) {
            return Err(KustomizeError::at(
                &k.file,
                entry.line,
                Some("crds"),
                format!("{:?}: no such file", entry.value),
            ));
        }
    }
    generators::run(fs, k, acc)?;
    transform::run(fs, k, acc)?;
    Ok(())
}

fn is_remote(s: &str) -> bool {
    s.starts_with("http://")
        || s.starts_with("https://")
        || s.starts_with("git@")
        || s.starts_with("git::")
        || s.starts_with("ssh://")
        || s.starts_with("github.com/")
        || s.starts_with("gitlab.com/")
        || s.starts_with("bitbucket.org/")
}

/// Names of kustomization files kustomize recognises, in its lookup order.
pub const KUSTOMIZATION_FILE_NAMES: [&str; 3] =
    ["kustomization.yaml", "kustomization.yml", "Kustomization"];

/// Whether `dir` holds a kustomization file.
pub fn has_kustomization(fs: &dyn FileSource, dir: &Path) -> bool {
    KUSTOMIZATION_FILE_NAMES
        .iter()
        .any(|n| fs.is_file(&dir.join(n)))
}
