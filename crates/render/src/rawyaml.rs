//! Raw-YAML bundles (no Chart.yaml, no kustomization): `yaml.overlays`, the split into Helm
//! templates (`templates/`) and plain manifests, and decoding of the plain manifests after
//! rendering — what upstream Fleet's agent does before and after running Helm.
//!
//! Overlays (`fleet.yaml` → `yaml.overlays: [name, ...]`), applied in order: a file
//! `overlays/<name>/<path>` replaces `<path>`; a file `overlays/<name>/<dir>/<x>_patch.<ext>`
//! patches `<dir>/<x>.<ext>` (JSON patch when the patch is a list, strategic merge for
//! built-in kinds, JSON merge patch otherwise). Everything under `overlays/` is dropped.

use crate::kustomize::yamlin::{self, Schema};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;

const OVERLAY_PREFIX: &str = "overlays/";

/// A raw-YAML processing failure naming the file at fault.
#[derive(Debug, Clone, PartialEq)]
pub struct RawYamlError {
    /// Bundle-relative path of the file at fault.
    pub file: String,
    /// 1-based line, 0 if unknown.
    pub line: usize,
    /// What went wrong.
    pub msg: String,
}

impl fmt::Display for RawYamlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(f, "{}:{}: {}", self.file, self.line, self.msg)
        } else {
            write!(f, "{}: {}", self.file, self.msg)
        }
    }
}

impl std::error::Error for RawYamlError {}

fn err(file: &str, line: usize, msg: impl Into<String>) -> RawYamlError {
    RawYamlError {
        file: file.to_string(),
        line,
        msg: msg.into(),
    }
}

/// Applies `overlays` to the bundle files (path → content) and drops `overlays/`.
///
/// Within one overlay, replacement files are applied before `_patch` files (in path order)
/// so the result does not depend on iteration order.
pub fn apply_overlays(
    files: &BTreeMap<String, Vec<u8>>,
    overlays: &[String],
) -> Result<BTreeMap<String, Vec<u8>>, RawYamlError> {
    let mut content = files.clone();
    for overlay in overlays {
        let prefix = format!("{OVERLAY_PREFIX}{overlay}/");
        let entries: Vec<(String, Vec<u8>)> = content
            .iter()
            .filter(|(k, _)| k.starts_with(&prefix))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let (patches, replacements): (Vec<_>, Vec<_>) = entries
            .into_iter()
            .partition(|(name, _)| patch_target(&name[prefix.len()..]).is_some());
        for (name, bytes) in replacements {
            content.insert(name[prefix.len()..].to_string(), bytes);
        }
        for (name, bytes) in patches {
            let rel = &name[prefix.len()..];
            let Some(target) = patch_target(rel) else {
                continue;
            };
            let Some(orig) = content.get(&target) else {
                return Err(err(
                    &name,
                    0,
                    format!("failed to find base file {target} to patch"),
                ));
            };
            let orig = to_json(&target, orig)?;
            let patch = to_json(&name, &bytes)?;
            let patched = apply_patch(&orig, &patch)
                .map_err(|e| err(&name, 0, format!("failed to patch {target}: {e}")))?;
            let out = serde_json::to_vec(&patched)
                .map_err(|e| err(&target, 0, format!("encoding patched file: {e}")))?;
            content.insert(target, out);
        }
    }
    content.retain(|k, _| !k.starts_with(OVERLAY_PREFIX));
    Ok(content)
}

/// For `dir/x_patch.yaml` returns `dir/x.yaml` (the first `_patch.` in the base name).
fn patch_target(rel: &str) -> Option<String> {
    let (dir, base) = match rel.rsplit_once('/') {
        Some((d, b)) => (Some(d), b),
        None => (None, rel),
    };
    if !base.contains("_patch.") {
        return None;
    }
    let target = base.replacen("_patch.", ".", 1);
    Some(match dir {
        Some(d) => format!("{d}/{target}"),
        None => target,
    })
}

/// Reads a YAML/JSON file's first document as JSON (as Fleet's overlay code does).
fn to_json(name: &str, bytes: &[u8]) -> Result<Value, RawYamlError> {
    let text = std::str::from_utf8(bytes).map_err(|_| err(name, 0, "file is not valid UTF-8"))?;
    let docs = yamlin::parse_documents(text, Schema::V3).map_err(|e| err(name, e.line, e.msg))?;
    Ok(docs
        .first()
        .map(|d| d.to_json())
        .unwrap_or(Value::Object(Default::default())))
}

/// wrangler's patch style selection: a list is a JSON patch; built-in kinds get a strategic
/// merge patch; anything else a JSON merge patch.
fn apply_patch(orig: &Value, patch: &Value) -> Result<Value, fleet_patch::PatchError> {
    if patch.is_array() {
        return fleet_patch::json::apply(orig, patch);
    }
    let api = orig.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = orig.get("kind").and_then(Value::as_str).unwrap_or("");
    match fleet_patch::strategic::schema_for(api, kind) {
        Some(schema) => fleet_patch::strategic::apply(orig, patch, schema),
        None => fleet_patch::merge::apply(orig, patch),
    }
}

fn is_fleet_yaml(name: &str) -> bool {
    name == "fleet.yaml" || name == "fleet.yml"
}

/// How a raw-YAML bundle becomes a chart: templates are rendered by Helm, raw files are
/// decoded as-is after rendering.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RawYamlChart {
    /// Files under `templates/` (kept with that path), rendered as Helm templates.
    pub templates: Vec<(String, Vec<u8>)>,
    /// Other manifests (`raw-yaml/<path>`), not templated.
    pub raw_files: Vec<(String, Vec<u8>)>,
}

/// Selects the manifests of a raw-YAML bundle: `*.yaml|*.yml|*.json` files, except
/// `fleet.yaml` and files under a directory holding a nested `fleet.yaml` or `Chart.yaml`;
/// other files (README, scripts, ...) are not deployed.
pub fn chart_layout(files: &BTreeMap<String, Vec<u8>>) -> RawYamlChart {
    let ignore: Vec<String> = files
        .keys()
        .filter(|n| {
            n.ends_with("/fleet.yaml") || n.ends_with("/fleet.yml") || n.ends_with("/Chart.yaml")
        })
        .filter_map(|n| n.rsplit_once('/').map(|(d, _)| format!("{d}/")))
        .collect();
    let mut out = RawYamlChart::default();
    for (name, bytes) in files {
        if is_fleet_yaml(name) {
            continue;
        }
        if !(name.ends_with(".yaml") || name.ends_with(".json") || name.ends_with(".yml")) {
            continue;
        }
        if ignore.iter().any(|p| name.starts_with(p)) {
            continue;
        }
        if name.starts_with("templates/") {
            out.templates.push((name.clone(), bytes.clone()));
        } else {
            out.raw_files
                .push((format!("raw-yaml/{name}"), bytes.clone()));
        }
    }
    out
}

/// Decodes the raw (untemplated) manifests into objects, in file order; documents without
/// `apiVersion` or `kind` are skipped, as upstream does.
pub fn raw_objects(chart: &RawYamlChart) -> Result<Vec<Value>, RawYamlError> {
    let mut out = Vec::new();
    for (name, bytes) in &chart.raw_files {
        let text =
            std::str::from_utf8(bytes).map_err(|_| err(name, 0, "file is not valid UTF-8"))?;
        // Kubernetes' YAML decoder (go-yaml v2 rules).
        let docs =
            yamlin::parse_documents(text, Schema::V11).map_err(|e| err(name, e.line, e.msg))?;
        for d in docs {
            push_objects(d.into_json(), &mut out);
        }
    }
    Ok(out)
}

fn push_objects(v: Value, out: &mut Vec<Value>) {
    let api = v.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = v.get("kind").and_then(Value::as_str).unwrap_or("");
    if api.is_empty() || kind.is_empty() {
        return;
    }
    if kind.ends_with("List")
        && let Some(Value::Array(items)) = v.get("items")
    {
        for it in items.clone() {
            push_objects(it, out);
        }
        return;
    }
    out.push(v);
}

/// Overlays + layout in one step, for a bundle rendered in raw-YAML style.
pub fn prepare(
    files: &BTreeMap<String, Vec<u8>>,
    overlays: &[String],
) -> Result<RawYamlChart, RawYamlError> {
    Ok(chart_layout(&apply_overlays(files, overlays)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn files(list: &[(&str, &str)]) -> BTreeMap<String, Vec<u8>> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
            .collect()
    }

    #[test]
    fn overlays_replace_and_patch() {
        let f = files(&[
            (
                "svc.yaml",
                "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\nspec:\n  ports:\n  - port: 80\n    name: http\n",
            ),
            (
                "cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: '1'\n",
            ),
            (
                "overlays/prod/svc_patch.yaml",
                "spec:\n  type: LoadBalancer\n  ports:\n  - port: 443\n    name: https\n",
            ),
            (
                "overlays/prod/cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: '2'\n",
            ),
            (
                "overlays/test/cm_patch.yaml",
                "- op: add\n  path: /data/b\n  value: x\n",
            ),
            ("README.md", "docs"),
        ]);
        let out = apply_overlays(&f, &["prod".into(), "test".into()]).unwrap();
        assert_eq!(
            out.keys().collect::<Vec<_>>(),
            vec!["README.md", "cm.yaml", "svc.yaml"]
        );
        let svc: Value = serde_json::from_slice(&out["svc.yaml"]).unwrap();
        assert_eq!(svc["spec"]["type"], json!("LoadBalancer"));
        // Strategic merge: ports merged by port number.
        assert_eq!(svc["spec"]["ports"].as_array().unwrap().len(), 2);
        let cm: Value = serde_json::from_slice(&out["cm.yaml"]).unwrap();
        assert_eq!(cm["data"], json!({"a": "2", "b": "x"}));
    }

    #[test]
    fn missing_patch_base_is_an_error() {
        let f = files(&[("overlays/o/x_patch.yaml", "a: 1\n")]);
        let e = apply_overlays(&f, &["o".into()]).unwrap_err();
        assert_eq!(e.file, "overlays/o/x_patch.yaml");
        assert!(e.msg.contains("x.yaml"), "{e}");
    }

    #[test]
    fn layout_and_decoding() {
        let f = files(&[
            ("fleet.yaml", "defaultNamespace: x\n"),
            (
                "templates/cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n",
            ),
            (
                "app/deploy.yaml",
                "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n---\nfoo: bar\n",
            ),
            ("sub/fleet.yaml", "x: 1\n"),
            (
                "sub/other.yaml",
                "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n",
            ),
            ("notes.txt", "hi"),
            (
                "values.json",
                "{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"j\"}, \"data\": {\"on\": \"yes\"}}",
            ),
        ]);
        let chart = chart_layout(&f);
        assert_eq!(chart.templates.len(), 1);
        let names: Vec<&str> = chart.raw_files.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            vec!["raw-yaml/app/deploy.yaml", "raw-yaml/values.json"]
        );
        let objs = raw_objects(&chart).unwrap();
        assert_eq!(objs.len(), 2, "doc without kind skipped");
        assert_eq!(objs[1]["data"]["on"], json!("yes"));
    }
}
