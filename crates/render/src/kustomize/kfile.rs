//! Reading and validating a kustomization file.
//!
//! Parsed with YAML 1.1 rules (as `sigs.k8s.io/yaml` does), strictly: an unknown field, a
//! wrongly typed value, or a field we do not implement is an error naming the file, line
//! and field, never silently ignored.

use super::yamlin::{self, Node, Schema, YVal};
use super::{FileSource, KUSTOMIZATION_FILE_NAMES, KustomizeError};
use std::path::{Path, PathBuf};

/// A string from the kustomization with the line it came from.
#[derive(Debug, Clone)]
pub struct Located {
    pub value: String,
    pub line: usize,
}

/// `group`/`version`/`kind`/`name`/`namespace` + selectors of a patch target.
#[derive(Debug, Clone, Default)]
pub struct Selector {
    pub group: Option<String>,
    pub version: Option<String>,
    pub kind: Option<String>,
    pub name: Option<String>,
    pub namespace: Option<String>,
    pub label_selector: Option<String>,
    pub annotation_selector: Option<String>,
}

/// One entry of `patches` / `patchesJson6902`.
#[derive(Debug, Clone)]
pub struct PatchSpec {
    pub path: Option<String>,
    pub patch: Option<String>,
    pub target: Option<Selector>,
    pub allow_name_change: bool,
    pub allow_kind_change: bool,
    pub line: usize,
}

/// One entry of `images`.
#[derive(Debug, Clone)]
pub struct ImageSpec {
    pub name: String,
    pub new_name: String,
    pub new_tag: String,
    pub digest: String,
}

/// One entry of `labels`.
#[derive(Debug, Clone)]
pub struct LabelSpec {
    pub pairs: Vec<(String, String)>,
    pub include_selectors: bool,
    pub fields: Vec<super::fieldspec::FieldSpec>,
}

/// `generatorOptions` or a generator's `options`.
#[derive(Debug, Clone, Default)]
pub struct GenOptions {
    pub labels: Vec<(String, String)>,
    pub annotations: Vec<(String, String)>,
    pub disable_name_suffix_hash: bool,
    pub immutable: bool,
}

/// One `configMapGenerator` / `secretGenerator` entry.
#[derive(Debug, Clone)]
pub struct GenArgs {
    pub name: String,
    pub namespace: String,
    pub behavior: String,
    pub literals: Vec<String>,
    pub files: Vec<String>,
    pub envs: Vec<String>,
    pub options: Option<GenOptions>,
    pub secret_type: String,
    pub line: usize,
}

/// A parsed kustomization.
#[derive(Debug, Clone)]
pub struct Kustomization {
    pub file: PathBuf,
    pub dir: PathBuf,
    pub is_component: bool,
    pub resources: Vec<Located>,
    pub components: Vec<Located>,
    pub crds: Vec<Located>,
    pub namespace: Option<String>,
    pub name_prefix: String,
    pub name_suffix: String,
    pub common_labels: Vec<(String, String)>,
    pub labels: Vec<LabelSpec>,
    pub common_annotations: Vec<(String, String)>,
    /// Each entry: a file path or an inline patch document.
    pub patches_strategic_merge: Vec<Located>,
    pub patches_json6902: Vec<PatchSpec>,
    pub patches: Vec<PatchSpec>,
    pub images: Vec<ImageSpec>,
    pub replicas: Vec<(String, i64, usize)>,
    pub config_map_generator: Vec<GenArgs>,
    pub secret_generator: Vec<GenArgs>,
    pub generator_options: Option<GenOptions>,
}

/// Finds and parses the kustomization file in `dir`.
pub fn load(fs: &dyn FileSource, dir: &Path) -> Result<Kustomization, KustomizeError> {
    let found: Vec<PathBuf> = KUSTOMIZATION_FILE_NAMES
        .iter()
        .map(|n| dir.join(n))
        .filter(|p| fs.is_file(p))
        .collect();
    let file = match found.as_slice() {
        [] => {
            return Err(KustomizeError::new(format!(
                "unable to find one of 'kustomization.yaml', 'kustomization.yml' or 'Kustomization' in directory '{}'",
                dir.display()
            )));
        }
        [one] => one.clone(),
        _ => {
            return Err(KustomizeError::new(format!(
                "found multiple kustomization files under: {}",
                dir.display()
            )));
        }
    };
    let bytes = fs
        .read(&file)
        .map_err(|e| KustomizeError::in_file(&file, format!("cannot read: {e}")))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| KustomizeError::in_file(&file, "file is not valid UTF-8"))?;
    parse(&file, dir, &text)
}

/// Parses kustomization text (the file path is used for errors and relative paths).
pub fn parse(file: &Path, dir: &Path, text: &str) -> Result<Kustomization, KustomizeError> {
    // kustomize renames the deprecated `imageTags:` textually before parsing.
    let text = text.replace("imageTags:", "images:");
    let docs = yamlin::parse_documents(&text, Schema::V11)
        .map_err(|e| KustomizeError::at(file, e.line, None, e.msg))?;
    let mut k = Kustomization {
        file: file.to_path_buf(),
        dir: dir.to_path_buf(),
        is_component: false,
        resources: vec![],
        components: vec![],
        crds: vec![],
        namespace: None,
        name_prefix: String::new(),
        name_suffix: String::new(),
        common_labels: vec![],
        labels: vec![],
        common_annotations: vec![],
        patches_strategic_merge: vec![],
        patches_json6902: vec![],
        patches: vec![],
        images: vec![],
        replicas: vec![],
        config_map_generator: vec![],
        secret_generator: vec![],
        generator_options: None,
    };
    let Some(root) = docs.first() else {
        return Ok(k); // empty kustomization
    };
    if docs.len() > 1 {
        return Err(KustomizeError::at(
            file,
            docs[1].line,
            None,
            "a kustomization file must hold a single YAML document",
        ));
    }
    let YVal::Map(entries) = &root.v else {
        return Err(KustomizeError::at(
            file,
            root.line,
            None,
            format!(
                "expected a mapping at the top level, got {}",
                root.type_name()
            ),
        ));
    };
    let p = P { file };
    let mut bases = vec![];
    for (key, v) in entries {
        let f = key.as_str();
        match f {
            "apiVersion" => {
                let s = p.string(v, f)?;
                if !matches!(
                    s.as_str(),
                    "kustomize.config.k8s.io/v1beta1" | "kustomize.config.k8s.io/v1alpha1"
                ) {
                    return Err(p.err(v, f, format!("unsupported apiVersion {s:?}")));
                }
            }
            "kind" => {
                let s = p.string(v, f)?;
                match s.as_str() {
                    "Kustomization" | "" => {}
                    "Component" => k.is_component = true,
                    _ => {
                        return Err(p.err(
                            v,
                            f,
                            format!("kind should be Kustomization or Component, got {s:?}"),
                        ));
                    }
                }
            }
            "metadata" => {
                p.map(v, f)?;
            }
            "resources" => k.resources = p.located_list(v, f)?,
            "bases" => bases = p.located_list(v, f)?,
            "components" => k.components = p.located_list(v, f)?,
            "crds" => k.crds = p.located_list(v, f)?,
            "openapi" => {
                // Only changes schema lookups for custom types; accepted and ignored.
                p.string_map(v, f)?;
            }
            "namespace" => {
                let s = p.string(v, f)?;
                if !s.is_empty() {
                    k.namespace = Some(s);
                }
            }
            "namePrefix" => k.name_prefix = p.string(v, f)?,
            "nameSuffix" => k.name_suffix = p.string(v, f)?,
            "commonLabels" => k.common_labels = p.string_map(v, f)?,
            "commonAnnotations" => k.common_annotations = p.string_map(v, f)?,
            "labels" => {
                for item in p.list(v, f)? {
                    k.labels.push(p.label(item, f)?);
                }
            }
            "patchesStrategicMerge" => k.patches_strategic_merge = p.located_list(v, f)?,
            "patchesJson6902" => {
                for item in p.list(v, f)? {
                    let ps = p.patch(item, f)?;
                    if ps.target.is_none() {
                        return Err(p.err(item, f, "each entry needs a `target`"));
                    }
                    k.patches_json6902.push(ps);
                }
            }
            "patches" => {
                for item in p.list(v, f)? {
                    if let YVal::Str(s) = &item.v {
                        // Legacy form: a list of file names means patchesStrategicMerge.
                        k.patches_strategic_merge.push(Located {
                            value: s.clone(),
                            line: item.line,
                        });
                    } else {
                        k.patches.push(p.patch(item, f)?);
                    }
                }
            }
            "images" => {
                for item in p.list(v, f)? {
                    k.images.push(p.image(item, f)?);
                }
            }
            "replicas" => {
                for item in p.list(v, f)? {
                    let m = p.map(item, f)?;
                    let mut name = None;
                    let mut count = None;
                    for (rk, rv) in m {
                        match rk.as_str() {
                            "name" => name = Some(p.string(rv, "replicas.name")?),
                            "count" => match &rv.v {
                                YVal::Num(n) if n.as_i64().is_some() => count = n.as_i64(),
                                _ => {
                                    return Err(p.err(rv, "replicas.count", "expected an integer"));
                                }
                            },
                            other => return Err(p.unknown(rv, &format!("replicas.{other}"))),
                        }
                    }
                    let name = name.ok_or_else(|| p.err(item, f, "each entry needs a `name`"))?;
                    k.replicas.push((name, count.unwrap_or(0), item.line));
                }
            }
            "configMapGenerator" | "secretGenerator" => {
                for item in p.list(v, f)? {
                    let g = p.generator(item, f, f == "secretGenerator")?;
                    if f == "secretGenerator" {
                        k.secret_generator.push(g);
                    } else {
                        k.config_map_generator.push(g);
                    }
                }
            }
            "generatorOptions" => k.generator_options = Some(p.gen_options(v, f)?),
            "vars"
            | "replacements"
            | "configurations"
            | "generators"
            | "transformers"
            | "validators"
            | "helmCharts"
            | "helmGlobals"
            | "helmChartInflationGenerator"
            | "inventory"
            | "buildMetadata" => {
                if !is_empty(v) {
                    return Err(p.err(v, f, "is not supported by Fleet's kustomize renderer"));
                }
            }
            other => return Err(p.unknown(v, other)),
        }
    }
    // kustomize appends `bases` after `resources`.
    k.resources.extend(bases);
    Ok(k)
}

/// Errors if `path` (a file the kustomization loads) is outside the kustomization root,
/// as kustomize's default `LoadRestrictionsRootOnly` does.
pub fn check_within(
    kfile: &Path,
    line: usize,
    field: &str,
    root: &Path,
    path: &Path,
) -> Result<(), KustomizeError> {
    if path.starts_with(root) {
        Ok(())
    } else {
        Err(KustomizeError::at(
            kfile,
            line,
            Some(field),
            format!(
                "security; file '{}' is not in or below '{}'",
                path.display(),
                root.display()
            ),
        ))
    }
}

fn is_empty(v: &Node) -> bool {
    match &v.v {
        YVal::Null => true,
        YVal::Seq(s) => s.is_empty(),
        YVal::Map(m) => m.is_empty(),
        YVal::Str(s) => s.is_empty(),
        _ => false,
    }
}

struct P<'a> {
    file: &'a Path,
}

impl P<'_> {
    fn err(&self, n: &Node, field: &str, msg: impl Into<String>) -> KustomizeError {
        KustomizeError::at(self.file, n.line, Some(field), msg)
    }

    fn unknown(&self, n: &Node, field: &str) -> KustomizeError {
        KustomizeError::at(self.file, n.line, Some(field), "unknown field")
    }

    fn string(&self, n: &Node, field: &str) -> Result<String, KustomizeError> {
        match &n.v {
            YVal::Str(s) => Ok(s.clone()),
            YVal::Null => Ok(String::new()),
            _ => Err(self.err(
                n,
                field,
                format!("expected a string, got {}", n.type_name()),
            )),
        }
    }

    fn bool(&self, n: &Node, field: &str) -> Result<bool, KustomizeError> {
        match &n.v {
            YVal::Bool(b) => Ok(*b),
            YVal::Null => Ok(false),
            _ => Err(self.err(
                n,
                field,
                format!("expected a boolean, got {}", n.type_name()),
            )),
        }
    }

    fn list<'n>(&self, n: &'n Node, field: &str) -> Result<&'n [Node], KustomizeError> {
        match &n.v {
            YVal::Seq(s) => Ok(s),
            YVal::Null => Ok(&[]),
            _ => Err(self.err(n, field, format!("expected a list, got {}", n.type_name()))),
        }
    }

    fn map<'n>(&self, n: &'n Node, field: &str) -> Result<&'n [(String, Node)], KustomizeError> {
        match &n.v {
            YVal::Map(m) => Ok(m),
            YVal::Null => Ok(&[]),
            _ => Err(self.err(
                n,
                field,
                format!("expected a mapping, got {}", n.type_name()),
            )),
        }
    }

    fn located_list(&self, n: &Node, field: &str) -> Result<Vec<Located>, KustomizeError> {
        self.list(n, field)?
            .iter()
            .map(|item| {
                Ok(Located {
                    value: self.string(item, field)?,
                    line: item.line,
                })
            })
            .collect()
    }

    fn string_list(&self, n: &Node, field: &str) -> Result<Vec<String>, KustomizeError> {
        Ok(self
            .located_list(n, field)?
            .into_iter()
            .map(|l| l.value)
            .collect())
    }

    fn string_map(&self, n: &Node, field: &str) -> Result<Vec<(String, String)>, KustomizeError> {
        self.map(n, field)?
            .iter()
            .map(|(k, v)| match &v.v {
                YVal::Str(s) => Ok((k.clone(), s.clone())),
                YVal::Null => Ok((k.clone(), String::new())),
                _ => Err(self.err(
                    v,
                    &format!("{field}.{k}"),
                    format!("expected a string, got {} (quote the value)", v.type_name()),
                )),
            })
            .collect()
    }

    /// A string field where kustomize's struct decoding turns numbers into strings.
    fn lenient_string(&self, n: &Node, field: &str) -> Result<String, KustomizeError> {
        match &n.v {
            YVal::Num(x) => Ok(x.to_string()),
            _ => self.string(n, field),
        }
    }

    fn selector(&self, n: &Node, field: &str) -> Result<Selector, KustomizeError> {
        let mut s = Selector::default();
        for (k, v) in self.map(n, field)? {
            let f = format!("{field}.{k}");
            let val = Some(self.string(v, &f)?).filter(|x| !x.is_empty());
            match k.as_str() {
                "group" => s.group = val,
                "version" => s.version = val,
                "kind" => s.kind = val,
                "name" => s.name = val,
                "namespace" => s.namespace = val,
                "labelSelector" => s.label_selector = val,
                "annotationSelector" => s.annotation_selector = val,
                _ => return Err(self.unknown(v, &f)),
            }
        }
        Ok(s)
    }

    fn patch(&self, n: &Node, field: &str) -> Result<PatchSpec, KustomizeError> {
        let mut ps = PatchSpec {
            path: None,
            patch: None,
            target: None,
            allow_name_change: false,
            allow_kind_change: false,
            line: n.line,
        };
        for (k, v) in self.map(n, field)? {
            let f = format!("{field}.{k}");
            match k.as_str() {
                "path" => ps.path = Some(self.string(v, &f)?),
                "patch" => ps.patch = Some(self.string(v, &f)?),
                "target" => ps.target = Some(self.selector(v, &f)?),
                "options" => {
                    for (ok, ov) in self.map(v, &f)? {
                        let of = format!("{f}.{ok}");
                        match ok.as_str() {
                            "allowNameChange" => ps.allow_name_change = self.bool(ov, &of)?,
                            "allowKindChange" => ps.allow_kind_change = self.bool(ov, &of)?,
                            _ => return Err(self.unknown(ov, &of)),
                        }
                    }
                }
                _ => return Err(self.unknown(v, &f)),
            }
        }
        match (&ps.path, &ps.patch) {
            (Some(_), Some(_)) => {
                Err(self.err(n, field, "patch and path can't be set at the same time"))
            }
            (None, None) => Err(self.err(n, field, "must specify one of patch and path")),
            _ => Ok(ps),
        }
    }

    fn image(&self, n: &Node, field: &str) -> Result<ImageSpec, KustomizeError> {
        let mut im = ImageSpec {
            name: String::new(),
            new_name: String::new(),
            new_tag: String::new(),
            digest: String::new(),
        };
        for (k, v) in self.map(n, field)? {
            let f = format!("{field}.{k}");
            match k.as_str() {
                "name" => im.name = self.lenient_string(v, &f)?,
                "newName" => im.new_name = self.lenient_string(v, &f)?,
                "newTag" => im.new_tag = self.lenient_string(v, &f)?,
                "digest" => im.digest = self.lenient_string(v, &f)?,
                _ => return Err(self.unknown(v, &f)),
            }
        }
        if im.name.is_empty() {
            return Err(self.err(n, field, "each image needs a `name`"));
        }
        Ok(im)
    }

    fn label(&self, n: &Node, field: &str) -> Result<LabelSpec, KustomizeError> {
        let mut l = LabelSpec {
            pairs: vec![],
            include_selectors: false,
            fields: vec![],
        };
        for (k, v) in self.map(n, field)? {
            let f = format!("{field}.{k}");
            match k.as_str() {
                "pairs" => l.pairs = self.string_map(v, &f)?,
                "includeSelectors" => l.include_selectors = self.bool(v, &f)?,
                "fields" => {
                    for item in self.list(v, &f)? {
                        l.fields.push(self.field_spec(item, &f)?);
                    }
                }
                _ => return Err(self.unknown(v, &f)),
            }
        }
        Ok(l)
    }

    fn field_spec(
        &self,
        n: &Node,
        field: &str,
    ) -> Result<super::fieldspec::FieldSpec, KustomizeError> {
        let mut fs = super::fieldspec::FieldSpec::default();
        for (k, v) in self.map(n, field)? {
            let f = format!("{field}.{k}");
            match k.as_str() {
                "path" => fs.path = self.string(v, &f)?,
                "create" => fs.create = self.bool(v, &f)?,
                "group" => fs.group = self.string(v, &f)?,
                "version" => fs.version = self.string(v, &f)?,
                "kind" => fs.kind = self.string(v, &f)?,
                _ => return Err(self.unknown(v, &f)),
            }
        }
        Ok(fs)
    }

    fn gen_options(&self, n: &Node, field: &str) -> Result<GenOptions, KustomizeError> {
        let mut o = GenOptions::default();
        for (k, v) in self.map(n, field)? {
            let f = format!("{field}.{k}");
            match k.as_str() {
                "labels" => o.labels = self.string_map(v, &f)?,
                "annotations" => o.annotations = self.string_map(v, &f)?,
                "disableNameSuffixHash" => o.disable_name_suffix_hash = self.bool(v, &f)?,
                "immutable" => o.immutable = self.bool(v, &f)?,
                _ => return Err(self.unknown(v, &f)),
            }
        }
        Ok(o)
    }

    fn generator(&self, n: &Node, field: &str, secret: bool) -> Result<GenArgs, KustomizeError> {
        let mut g = GenArgs {
            name: String::new(),
            namespace: String::new(),
            behavior: String::new(),
            literals: vec![],
            files: vec![],
            envs: vec![],
            options: None,
            secret_type: String::new(),
            line: n.line,
        };
        let mut env = None;
        for (k, v) in self.map(n, field)? {
            let f = format!("{field}.{k}");
            match k.as_str() {
                "name" => g.name = self.string(v, &f)?,
                "namespace" => g.namespace = self.string(v, &f)?,
                "behavior" => {
                    g.behavior = self.string(v, &f)?;
                    if !matches!(g.behavior.as_str(), "" | "create" | "merge" | "replace") {
                        return Err(self.err(
                            v,
                            &f,
                            format!(
                                "unknown behavior {:?} (want create, merge or replace)",
                                g.behavior
                            ),
                        ));
                    }
                }
                "literals" => g.literals = self.string_list(v, &f)?,
                "files" => g.files = self.string_list(v, &f)?,
                "envs" => g.envs = self.string_list(v, &f)?,
                "env" => env = Some(self.string(v, &f)?).filter(|s| !s.is_empty()),
                "options" => g.options = Some(self.gen_options(v, &f)?),
                "type" if secret => g.secret_type = self.string(v, &f)?,
                _ => return Err(self.unknown(v, &f)),
            }
        }
        if let Some(e) = env {
            g.envs.push(e);
        }
        if g.name.is_empty() {
            return Err(self.err(n, field, "each generator needs a `name`"));
        }
        Ok(g)
    }
}
