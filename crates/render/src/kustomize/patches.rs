//! `patchesStrategicMerge`, `patches` and `patchesJson6902`, with kustomize's target
//! selection (patch id or selector with regex names, label and annotation selectors).

use super::kfile::{Kustomization, PatchSpec, Selector};
use super::resource::{Res, ResId, ResMap, str_at};
use super::yamlin::{self, Schema};
use super::{FileSource, KustomizeError, normalize};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A patch document with where it came from.
struct Loaded {
    doc: Value,
    origin: PathBuf,
    line: usize,
}

fn load_text(
    fs: &dyn FileSource,
    k: &Kustomization,
    field: &str,
    line: usize,
    value: &str,
    inline_allowed: bool,
) -> Result<(String, PathBuf), KustomizeError> {
    // kustomize first tries the string as inline YAML content, then as a file path.
    if inline_allowed && value.contains('\n') {
        return Ok((value.to_string(), k.file.clone()));
    }
    let path = normalize(&k.dir, Path::new(value));
    if !fs.is_file(&path) {
        if inline_allowed && looks_inline(value) {
            return Ok((value.to_string(), k.file.clone()));
        }
        return Err(KustomizeError::at(
            &k.file,
            line,
            Some(field),
            format!("{value:?}: no such file ({})", path.display()),
        ));
    }
    super::kfile::check_within(&k.file, line, field, &k.dir, &path)?;
    let bytes = fs
        .read(&path)
        .map_err(|e| KustomizeError::at(&k.file, line, Some(field), format!("{value:?}: {e}")))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| KustomizeError::in_file(&path, "file is not valid UTF-8").field(field))?;
    Ok((text, path))
}

fn looks_inline(s: &str) -> bool {
    s.trim_start().starts_with('{') || s.contains(": ")
}

fn parse_docs(
    text: &str,
    origin: &Path,
    field: &str,
    base_line: usize,
) -> Result<Vec<Loaded>, KustomizeError> {
    let docs = yamlin::parse_documents(text, Schema::V3)
        .map_err(|e| KustomizeError::at(origin, e.line, Some(field), e.msg))?;
    Ok(docs
        .into_iter()
        .map(|d| Loaded {
            line: if base_line > 0 { base_line } else { d.line },
            doc: d.into_json(),
            origin: origin.to_path_buf(),
        })
        .collect())
}

/// `patchesStrategicMerge`: each document patches the resource with its id.
pub fn strategic_merge(
    fs: &dyn FileSource,
    k: &Kustomization,
    acc: &mut ResMap,
) -> Result<(), KustomizeError> {
    let field = "patchesStrategicMerge";
    for entry in &k.patches_strategic_merge {
        let (text, origin) = load_text(fs, k, field, entry.line, &entry.value, true)?;
        let base_line = if origin == k.file { entry.line } else { 0 };
        let docs = parse_docs(&text, &origin, field, base_line)?;
        if docs.is_empty() {
            return Err(KustomizeError::at(
                &k.file,
                entry.line,
                Some(field),
                format!("patch {:?} is empty", entry.value),
            ));
        }
        for p in docs {
            let target = find_by_patch_id(acc, &p, field)?;
            apply_sm(acc, &[target], &p, field, false, false, true)?;
        }
    }
    Ok(())
}

/// `patches`: strategic merge or JSON 6902, by id or by `target` selector.
pub fn patches(
    fs: &dyn FileSource,
    k: &Kustomization,
    acc: &mut ResMap,
) -> Result<(), KustomizeError> {
    let field = "patches";
    for ps in &k.patches {
        let (text, origin, base_line) = patch_text(fs, k, ps, field)?;
        let docs = parse_docs(&text, &origin, field, base_line)?;
        let is_json = docs.len() == 1 && docs[0].doc.is_array();
        if is_json {
            let Some(target) = &ps.target else {
                return Err(KustomizeError::at(
                    &k.file,
                    ps.line,
                    Some(field),
                    "a JSON 6902 patch must specify a `target`",
                ));
            };
            apply_json6902(k, acc, target, &docs[0].doc, ps.line, field)?;
            continue;
        }
        if docs.is_empty() {
            return Err(KustomizeError::at(
                &k.file,
                ps.line,
                Some(field),
                "unable to parse SM or JSON patch from empty patch",
            ));
        }
        if docs.len() > 1 && ps.target.is_none() {
            // kustomize accepts exactly one strategic-merge document per `patches` entry.
            return Err(KustomizeError::at(
                &k.file,
                ps.line,
                Some(field),
                "a `patches` entry must hold exactly one strategic merge patch document",
            ));
        }
        for p in docs {
            if !p.doc.is_object() {
                return Err(KustomizeError::at(
                    &p.origin,
                    p.line,
                    Some(field),
                    "unable to parse SM or JSON patch: expected a mapping or a list of operations",
                ));
            }
            match &ps.target {
                None => {
                    let t = find_by_patch_id(acc, &p, field)?;
                    // Without a target kustomize patches the resource directly (no metadata copy).
                    apply_sm(
                        acc,
                        &[t],
                        &p,
                        field,
                        ps.allow_name_change,
                        ps.allow_kind_change,
                        false,
                    )?;
                }
                Some(sel) => {
                    let targets = select(acc, sel)
                        .map_err(|m| KustomizeError::at(&k.file, ps.line, Some(field), m))?;
                    apply_sm(
                        acc,
                        &targets,
                        &p,
                        field,
                        ps.allow_name_change,
                        ps.allow_kind_change,
                        true,
                    )?;
                }
            }
        }
    }
    Ok(())
}

/// `patchesJson6902`: RFC 6902 operations (JSON or YAML) applied to the selected targets.
pub fn json6902(
    fs: &dyn FileSource,
    k: &Kustomization,
    acc: &mut ResMap,
) -> Result<(), KustomizeError> {
    let field = "patchesJson6902";
    for ps in &k.patches_json6902 {
        let (text, origin, base_line) = patch_text(fs, k, ps, field)?;
        let docs = parse_docs(&text, &origin, field, base_line)?;
        let ops = match docs.as_slice() {
            [one] if one.doc.is_array() => one.doc.clone(),
            _ => {
                return Err(KustomizeError::at(
                    &origin,
                    base_line,
                    Some(field),
                    "expected a list of JSON patch operations",
                ));
            }
        };
        let Some(target) = &ps.target else {
            return Err(KustomizeError::at(
                &k.file,
                ps.line,
                Some(field),
                "each entry needs a `target`",
            ));
        };
        apply_json6902(k, acc, target, &ops, ps.line, field)?;
    }
    Ok(())
}

fn patch_text(
    fs: &dyn FileSource,
    k: &Kustomization,
    ps: &PatchSpec,
    field: &str,
) -> Result<(String, PathBuf, usize), KustomizeError> {
    if let Some(inline) = &ps.patch {
        return Ok((inline.clone(), k.file.clone(), ps.line));
    }
    let path = ps.path.clone().unwrap_or_default();
    let (text, origin) = load_text(fs, k, field, ps.line, &path, false)?;
    Ok((text, origin, 0))
}

fn apply_json6902(
    k: &Kustomization,
    acc: &mut ResMap,
    target: &Selector,
    ops: &Value,
    line: usize,
    field: &str,
) -> Result<(), KustomizeError> {
    let targets =
        select(acc, target).map_err(|m| KustomizeError::at(&k.file, line, Some(field), m))?;
    for i in targets {
        let r = &mut acc.list[i];
        let id = r.id();
        let patched = fleet_patch::json::apply(&r.obj, ops).map_err(|e| {
            KustomizeError::at(
                &k.file,
                line,
                Some(field),
                format!("applying JSON patch to {}: {e}", id.display()),
            )
        })?;
        r.obj = patched;
    }
    Ok(())
}

fn patch_id(doc: &Value) -> ResId {
    ResId::of(doc)
}

fn find_by_patch_id(acc: &ResMap, p: &Loaded, field: &str) -> Result<usize, KustomizeError> {
    let id = patch_id(&p.doc);
    if id.kind.is_empty() || id.name.is_empty() {
        return Err(KustomizeError::at(
            &p.origin,
            p.line,
            Some(field),
            "a strategic merge patch needs `kind` and `metadata.name` to find its target",
        ));
    }
    let matches: Vec<usize> = acc
        .list
        .iter()
        .enumerate()
        .filter(|(_, r)| r.id().same(&id) || r.prev_ids.iter().any(|x| x.same(&id)))
        .map(|(i, _)| i)
        .collect();
    match matches.as_slice() {
        [one] => Ok(*one),
        [] => Err(KustomizeError::at(
            &p.origin,
            p.line,
            Some(field),
            format!(
                "no matches for Id {}; failed to find unique target for patch {}",
                id.display(),
                id.display()
            ),
        )),
        _ => Err(KustomizeError::at(
            &p.origin,
            p.line,
            Some(field),
            format!(
                "multiple matches for Id {}; failed to find unique target for patch",
                id.display()
            ),
        )),
    }
}

fn apply_sm(
    acc: &mut ResMap,
    targets: &[usize],
    p: &Loaded,
    field: &str,
    allow_name_change: bool,
    allow_kind_change: bool,
    copy_meta: bool,
) -> Result<(), KustomizeError> {
    let mut deleted = Vec::new();
    for &i in targets {
        let Some(r) = acc.list.get_mut(i) else {
            continue;
        };
        let (name, ns, kind) = (
            r.name().to_string(),
            r.namespace().to_string(),
            str_at(&r.obj, &["kind"]).to_string(),
        );
        if allow_name_change || allow_kind_change {
            r.store_previous_id();
        }
        let mut patch = p.doc.clone();
        if copy_meta {
            stringify_patch_meta(&mut patch);
        }
        // The patch takes the target's group/version (kustomize's `SetGvk`).
        if let (Value::Object(pm), Some(api)) = (&mut patch, r.obj.get("apiVersion").cloned()) {
            pm.insert("apiVersion".into(), api);
        }
        let api = str_at(&r.obj, &["apiVersion"]).to_string();
        let schema = fleet_patch::strategic::schema_for(&api, &kind)
            .unwrap_or(fleet_patch::strategic::Schema::none());
        let out = fleet_patch::strategic::apply(&r.obj, &patch, schema).map_err(|e| {
            KustomizeError::at(
                &p.origin,
                p.line,
                Some(field),
                format!("applying patch to {}: {e}", r.id().display()),
            )
        })?;
        let empty = match &out {
            Value::Null => true,
            Value::Object(m) => m.is_empty(),
            _ => false,
        };
        if empty {
            deleted.push(i);
            continue;
        }
        r.obj = out;
        if !allow_kind_change && let Value::Object(m) = &mut r.obj {
            m.insert("kind".into(), Value::String(kind.clone()));
        }
        if !allow_name_change {
            r.set_name(&name);
        }
        if ns.is_empty() {
            if let Some(Value::Object(meta)) = r.obj.get_mut("metadata") {
                meta.remove("namespace");
            }
        } else {
            r.set_namespace(&ns);
        }
    }
    deleted.sort_unstable();
    for i in deleted.into_iter().rev() {
        acc.list.remove(i);
    }
    Ok(())
}

/// For `patchesStrategicMerge` and targeted `patches`, kustomize copies a patch's labels and
/// annotations through a `map[string]string` before applying it, so `null` becomes `""` (it sets, not deletes) and scalars become strings.
fn stringify_patch_meta(patch: &mut Value) {
    let Some(Value::Object(meta)) = patch.get_mut("metadata") else {
        return;
    };
    for field in ["labels", "annotations"] {
        if let Some(Value::Object(m)) = meta.get_mut(field) {
            for v in m.values_mut() {
                let s = match v {
                    Value::Null => String::new(),
                    Value::Bool(b) => b.to_string(),
                    Value::Number(n) => super::goyaml::number_text(n),
                    Value::String(_) | Value::Array(_) | Value::Object(_) => continue,
                };
                *v = Value::String(s);
            }
        }
    }
}

/// Indices of resources matching a patch target (kustomize's `ResMap.Select`).
fn select(acc: &ResMap, s: &Selector) -> Result<Vec<usize>, String> {
    let re = |p: &Option<String>| -> Result<Option<regex::Regex>, String> {
        match p {
            None => Ok(None),
            Some(x) => regex::Regex::new(&format!("^(?:{x})$"))
                .map(Some)
                .map_err(|e| format!("invalid target pattern {x:?}: {e}")),
        }
    };
    let (g, v, kd, n, ns) = (
        re(&s.group)?,
        re(&s.version)?,
        re(&s.kind)?,
        re(&s.name)?,
        re(&s.namespace)?,
    );
    let labels = s
        .label_selector
        .as_deref()
        .map(parse_selector)
        .transpose()?;
    let annotations = s
        .annotation_selector
        .as_deref()
        .map(parse_selector)
        .transpose()?;
    let m = |r: &Option<regex::Regex>, val: &str| r.as_ref().is_none_or(|r| r.is_match(val));
    let mut out = Vec::new();
    for (i, r) in acc.list.iter().enumerate() {
        let cur = r.id();
        let org = r.org_id();
        if !m(&ns, org.effective_namespace()) && !m(&ns, cur.effective_namespace()) {
            continue;
        }
        if !m(&n, &org.name) && !m(&n, &cur.name) {
            continue;
        }
        if !m(&g, &cur.group) || !m(&v, &cur.version) || !m(&kd, &cur.kind) {
            continue;
        }
        if let Some(req) = &labels
            && !matches_selector(req, r, "labels")
        {
            continue;
        }
        if let Some(req) = &annotations
            && !matches_selector(req, r, "annotations")
        {
            continue;
        }
        out.push(i);
    }
    Ok(out)
}

#[derive(Debug, PartialEq)]
enum Req {
    Eq(String, String),
    Ne(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

/// Parses a Kubernetes label selector (`a=b,c!=d,e in (x,y),!f,g`).
fn parse_selector(s: &str) -> Result<Vec<Req>, String> {
    let mut parts = Vec::new();
    let mut depth = 0;
    let mut cur = String::new();
    for c in s.chars() {
        match c {
            '(' => {
                depth += 1;
                cur.push(c);
            }
            ')' => {
                depth -= 1;
                cur.push(c);
            }
            ',' if depth == 0 => parts.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    parts.push(cur);
    let mut out = Vec::new();
    for p in parts {
        let p = p.trim();
        if p.is_empty() {
            continue;
        }
        let set = |rest: &str| -> Result<Vec<String>, String> {
            let rest = rest.trim();
            let inner = rest
                .strip_prefix('(')
                .and_then(|r| r.strip_suffix(')'))
                .ok_or_else(|| format!("invalid selector {s:?}"))?;
            Ok(inner.split(',').map(|x| x.trim().to_string()).collect())
        };
        if let Some(k) = p.strip_prefix('!') {
            out.push(Req::NotExists(k.trim().to_string()));
        } else if let Some((k, v)) = p.split_once("!=") {
            out.push(Req::Ne(k.trim().into(), v.trim().into()));
        } else if let Some((k, v)) = p.split_once("==") {
            out.push(Req::Eq(k.trim().into(), v.trim().into()));
        } else if let Some((k, v)) = p.split_once('=') {
            out.push(Req::Eq(k.trim().into(), v.trim().into()));
        } else if let Some((k, rest)) = p.split_once(" notin ") {
            out.push(Req::NotIn(k.trim().into(), set(rest)?));
        } else if let Some((k, rest)) = p.split_once(" in ") {
            out.push(Req::In(k.trim().into(), set(rest)?));
        } else if p
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
        {
            out.push(Req::Exists(p.to_string()));
        } else {
            return Err(format!("invalid selector {s:?}"));
        }
    }
    Ok(out)
}

fn matches_selector(reqs: &[Req], r: &Res, field: &str) -> bool {
    let map = r
        .obj
        .get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_object);
    let get = |k: &str| map.and_then(|m| m.get(k)).and_then(Value::as_str);
    reqs.iter().all(|q| match q {
        Req::Eq(k, v) => get(k) == Some(v.as_str()),
        Req::Ne(k, v) => get(k) != Some(v.as_str()),
        Req::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
        Req::NotIn(k, vs) => get(k).is_none_or(|x| !vs.iter().any(|v| v == x)),
        Req::Exists(k) => get(k).is_some(),
        Req::NotExists(k) => get(k).is_none(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selector_parsing() {
        assert_eq!(
            parse_selector("a=b, c!=d,e in (x, y),!f,g").unwrap(),
            vec![
                Req::Eq("a".into(), "b".into()),
                Req::Ne("c".into(), "d".into()),
                Req::In("e".into(), vec!["x".into(), "y".into()]),
                Req::NotExists("f".into()),
                Req::Exists("g".into()),
            ]
        );
    }
}
