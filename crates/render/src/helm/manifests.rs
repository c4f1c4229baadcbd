//! Turning rendered template files into `helm template` output: Helm's document splitting,
//! hook detection, install order by kind, and the `# Source:` annotations.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;

use super::values::parse_yaml_raw;

/// Helm's `InstallOrder`.
pub const INSTALL_ORDER: &[&str] = &[
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodSecurityPolicy",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "SecretList",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleList",
    "ClusterRoleBinding",
    "ClusterRoleBindingList",
    "Role",
    "RoleList",
    "RoleBinding",
    "RoleBindingList",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicationController",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "Ingress",
    "APIService",
];

const HOOK_EVENTS: &[&str] = &[
    "pre-install",
    "post-install",
    "pre-delete",
    "post-delete",
    "pre-upgrade",
    "post-upgrade",
    "pre-rollback",
    "post-rollback",
    "test",
    "test-success",
];

/// One YAML document of a rendered file.
#[derive(Debug, Clone)]
pub struct Manifest {
    /// Template path it came from.
    pub path: String,
    /// The document text (trimmed).
    pub content: String,
    /// Its `kind`.
    pub kind: String,
}

/// Helm's `SplitManifests`: splits on `---` lines (its exact regex), trims each document and
/// drops empty ones.
pub fn split_manifests(big: &str) -> Vec<String> {
    static SEP: OnceLock<regex::Regex> = OnceLock::new();
    let sep = SEP.get_or_init(|| {
        regex::Regex::new(r"(?:^|[\t\n\x0C\r ]*\n)---[\t\n\x0C\r ]*")
            .expect("constant regex is valid")
    });
    let trimmed = go_trim_space(big);
    sep.split(trimmed)
        .filter(|d| !d.is_empty())
        .map(|d| go_trim_space(d).to_string())
        .collect()
}

/// Go's `strings.TrimSpace`.
pub fn go_trim_space(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace())
}

/// The part of a document Helm reads to classify it (its `SimpleHead`).
struct Head {
    kind: String,
    annotations: Option<serde_json::Map<String, Value>>,
}

fn kind_word(v: &gotmpl::Value) -> &'static str {
    use gotmpl::Value as T;
    match v {
        T::Nil => "null",
        T::Bool(_) => "bool",
        T::Int(_) | T::Float(_) => "number",
        T::String(_) => "string",
        T::List(_) => "array",
        _ => "object",
    }
}

fn type_err(v: &gotmpl::Value, field: &str, want: &str) -> String {
    format!(
        "error unmarshaling JSON: json: cannot unmarshal {} into Go struct field {field} of type {want}",
        kind_word(v)
    )
}

/// A scalar as sigs.k8s.io/yaml puts it into a Go string field.
fn string_field(v: Option<&gotmpl::Value>, field: &str) -> Result<String, String> {
    use gotmpl::Value as T;
    match v {
        None | Some(T::Nil) => Ok(String::new()),
        Some(T::String(s)) => Ok(s.to_string()),
        Some(T::Bool(b)) => Ok(b.to_string()),
        Some(T::Int(i)) => Ok(i.to_string()),
        Some(T::Float(f)) => Ok(gotmpl::gofmt::format_float(*f, 'g', -1, 32)),
        Some(v) => Err(type_err(v, field, "string")),
    }
}

fn parse_head(doc: &str, path: &str) -> Result<Head, String> {
    use gotmpl::Value as T;
    let wrap = |e: String| format!("YAML parse error on {path}: {e}");
    let v = match gotmpl::yaml::from_yaml(doc) {
        Ok(v) => v,
        Err(_) => {
            // Error path only: reparse for a go-yaml style message with the line number.
            let e = match parse_yaml_raw(doc, "") {
                Err(e) => e.0.strip_prefix(": ").unwrap_or(&e.0).to_string(),
                Ok(_) => "error converting YAML to JSON: yaml: invalid document".to_string(),
            };
            return Err(wrap(e));
        }
    };
    let obj = match &v {
        T::Nil => {
            return Ok(Head {
                kind: String::new(),
                annotations: None,
            });
        }
        T::Map(o) => o,
        other => {
            return Err(wrap(format!(
                "error unmarshaling JSON: json: cannot unmarshal {} into Go value of type releaseutil.SimpleHead",
                kind_word(other)
            )));
        }
    };
    string_field(obj.get("apiVersion"), "SimpleHead.apiVersion").map_err(wrap)?;
    let kind = string_field(obj.get("kind"), "SimpleHead.kind").map_err(wrap)?;
    let mut annotations = None;
    match obj.get("metadata") {
        None | Some(T::Nil) => {}
        Some(T::Map(md)) => {
            string_field(md.get("name"), ".metadata.name").map_err(wrap)?;
            match md.get("annotations") {
                None | Some(T::Nil) => {}
                Some(T::Map(a)) => {
                    let mut out = serde_json::Map::new();
                    for (k, v) in a.iter() {
                        let s = string_field(Some(v), ".metadata.annotations").map_err(wrap)?;
                        out.insert(k.clone(), Value::String(s));
                    }
                    annotations = Some(out);
                }
                Some(other) => {
                    return Err(wrap(type_err(
                        other,
                        ".metadata.annotations",
                        "map[string]string",
                    )));
                }
            }
        }
        Some(other) => {
            return Err(wrap(type_err(
                other,
                "SimpleHead.metadata",
                "struct { Name string \"json:\\\"name\\\"\"; Annotations map[string]string \"json:\\\"annotations\\\"\" }",
            )));
        }
    }
    Ok(Head { kind, annotations })
}

/// Helm's `SortManifests`: files in path order, documents in file order, split into hooks and
/// ordinary manifests, each list stably sorted by install order of kind.
pub fn sort_manifests(
    files: &[(String, String)],
) -> Result<(Vec<Manifest>, Vec<Manifest>), String> {
    sort_manifests_cached(files, None)
}

/// How a document is classified: its kind and whether it is an ordinary manifest, a hook, or
/// an unknown hook (dropped).
#[derive(Clone, Debug)]
pub struct HeadClass {
    kind: String,
    class: Class,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Class {
    Generic,
    Hook,
    UnknownHook,
}

/// Memo of document text → classification: classifying means parsing the YAML document, and a
/// chart rendered again with the same values yields the same documents.
#[derive(Clone, Default)]
pub struct HeadCache(pub Arc<Mutex<HashMap<Box<str>, HeadClass>>>);

impl std::fmt::Debug for HeadCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HeadCache")
    }
}

/// Entries kept before the memo is cleared (bounds memory for ever-changing values).
const HEAD_CACHE_MAX: usize = 4096;

/// A plain scalar that go-yaml v2 resolves to a string (not a number, bool or null).
fn plain_is_string(v: &str) -> bool {
    let Some(first) = v.chars().next() else {
        return false;
    };
    if !first.is_ascii_alphabetic() {
        return false;
    }
    !matches!(
        v.to_ascii_lowercase().as_str(),
        "y" | "yes" | "n" | "no" | "on" | "off" | "true" | "false" | "null"
    )
}

fn plain_is_null(v: &str) -> bool {
    matches!(v, "" | "~" | "null" | "Null" | "NULL")
}

/// Classifies a document from parser events alone, without building its value; None when the
/// document is anything but a plain manifest (anchors, tags, merge keys, odd types, errors), in
/// which case the full parse decides (and reports errors as Helm does).
fn fast_classify(doc: &str) -> Option<HeadClass> {
    use granit_parser::{Event, Parser, ScalarStyle};
    struct Frame {
        is_map: bool,
        key: Option<String>,
        expecting_key: bool,
    }
    enum Node {
        Scalar(String, bool),
        Map,
        Seq,
    }
    let mut p = Parser::new_from_str(doc);
    let mut stack: Vec<Frame> = Vec::new();
    let mut kind = String::new();
    let mut hook: Option<String> = None;
    let mut docs = 0;
    let mut top_seen = false;
    while let Some(ev) = p.next_event() {
        let (ev, _) = ev.ok()?;
        let node = match ev {
            Event::StreamStart | Event::StreamEnd | Event::DocumentEnd => continue,
            Event::DocumentStart(..) => {
                docs += 1;
                if docs > 1 {
                    return None;
                }
                continue;
            }
            Event::Scalar(v, style, anchor, tag) => {
                if anchor != 0 || tag.is_some() {
                    return None;
                }
                Node::Scalar(v.into_owned(), style == ScalarStyle::Plain)
            }
            Event::MappingStart(_, anchor, tag) => {
                if anchor != 0 || tag.is_some() {
                    return None;
                }
                Node::Map
            }
            Event::SequenceStart(_, anchor, tag) => {
                if anchor != 0 || tag.is_some() {
                    return None;
                }
                Node::Seq
            }
            Event::MappingEnd | Event::SequenceEnd => {
                stack.pop();
                if let Some(f) = stack.last_mut()
                    && f.is_map
                {
                    f.expecting_key = true;
                }
                continue;
            }
            Event::Alias(..) | Event::Anchor(..) | Event::UnresolvedAlias(..) => return None,
            // Comments (when the parser reports them) carry no data.
            #[allow(unreachable_patterns)]
            _ => continue,
        };
        let Some(frame) = stack.last_mut() else {
            // The document's root.
            if top_seen {
                return None;
            }
            top_seen = true;
            match node {
                Node::Map => stack.push(Frame {
                    is_map: true,
                    key: None,
                    expecting_key: true,
                }),
                Node::Scalar(v, true) if plain_is_null(&v) => {}
                _ => return None,
            }
            continue;
        };
        if frame.is_map && frame.expecting_key {
            match node {
                Node::Scalar(k, plain) => {
                    if plain && k == "<<" {
                        return None;
                    }
                    frame.key = Some(k);
                    frame.expecting_key = false;
                }
                _ => return None,
            }
            continue;
        }
        // A value (in a map) or an item (in a sequence).
        let depth = stack.len();
        let path: Vec<&str> = stack
            .iter()
            .map(|f| f.key.as_deref().unwrap_or(""))
            .collect();
        let in_map = stack.last().is_some_and(|f| f.is_map);
        let relevant = in_map
            && matches!(
                (depth, path.as_slice()),
                (1, ["kind" | "apiVersion" | "metadata"])
                    | (2, ["metadata", "name" | "annotations"])
                    | (3, ["metadata", "annotations", _])
            );
        if relevant {
            let key = path.last().copied().unwrap_or("");
            match (&node, depth, key) {
                (Node::Map, 1, "metadata") | (Node::Map, 2, "annotations") => {}
                (Node::Scalar(v, true), 1, "metadata")
                | (Node::Scalar(v, true), 2, "annotations")
                    if plain_is_null(v) => {}
                (Node::Scalar(v, plain), 1, "kind") => {
                    if *plain && !plain_is_string(v) {
                        return None;
                    }
                    kind = v.clone();
                }
                (Node::Scalar(v, plain), 3, _) => {
                    if key == "helm.sh/hook" {
                        if *plain && !plain_is_string(v) {
                            return None;
                        }
                        hook = Some(v.clone());
                    }
                }
                (Node::Scalar(..), _, _) => {}
                _ => return None,
            }
        }
        match node {
            Node::Map => stack.push(Frame {
                is_map: true,
                key: None,
                expecting_key: true,
            }),
            Node::Seq => stack.push(Frame {
                is_map: false,
                key: None,
                expecting_key: false,
            }),
            Node::Scalar(..) => {
                if let Some(f) = stack.last_mut()
                    && f.is_map
                {
                    f.expecting_key = true;
                }
            }
        }
    }
    let class = match hook {
        None => Class::Generic,
        Some(types) => {
            let known = types
                .split(',')
                .all(|t| HOOK_EVENTS.contains(&t.trim().to_lowercase().as_str()));
            if known {
                Class::Hook
            } else {
                Class::UnknownHook
            }
        }
    };
    Some(HeadClass { kind, class })
}

fn classify(doc: &str, path: &str) -> Result<HeadClass, String> {
    if let Some(hc) = fast_classify(doc) {
        return Ok(hc);
    }
    classify_full(doc, path)
}

/// Whether the event-only classifier, when it answers, agrees with the full parse (a testing
/// aid for the property tests): Some(true/false) when it answered, None when it deferred.
pub fn fast_path_agrees(doc: &str) -> Option<bool> {
    let fast = fast_classify(doc)?;
    Some(match classify_full(doc, "x") {
        Ok(full) => full.kind == fast.kind && full.class == fast.class,
        Err(_) => false,
    })
}

fn classify_full(doc: &str, path: &str) -> Result<HeadClass, String> {
    let head = parse_head(doc, path)?;
    let hook = head
        .annotations
        .as_ref()
        .filter(|a| !a.is_empty())
        .and_then(|a| a.get("helm.sh/hook"))
        .and_then(|v| v.as_str());
    let class = match hook {
        None => Class::Generic,
        Some(types) => {
            let known = types
                .split(',')
                .all(|t| HOOK_EVENTS.contains(&t.trim().to_lowercase().as_str()));
            if known {
                Class::Hook
            } else {
                Class::UnknownHook
            }
        }
    };
    Ok(HeadClass {
        kind: head.kind,
        class,
    })
}

/// [`sort_manifests`] with an optional classification memo.
pub fn sort_manifests_cached(
    files: &[(String, String)],
    cache: Option<&HeadCache>,
) -> Result<(Vec<Manifest>, Vec<Manifest>), String> {
    let mut sorted: Vec<&(String, String)> = files.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut hooks = Vec::new();
    let mut generic = Vec::new();
    for (path, content) in sorted {
        let base = path.rsplit('/').next().unwrap_or(path);
        if base.starts_with('_') || go_trim_space(content).is_empty() {
            continue;
        }
        for doc in split_manifests(content) {
            let memo = cache.and_then(|c| c.0.lock().ok()?.get(doc.as_str()).cloned());
            let hc = match memo {
                Some(hc) => hc,
                None => {
                    let hc = classify(&doc, path)?;
                    if let Some(c) = cache
                        && let Ok(mut m) = c.0.lock()
                    {
                        if m.len() >= HEAD_CACHE_MAX {
                            m.clear();
                        }
                        m.insert(doc.as_str().into(), hc.clone());
                    }
                    hc
                }
            };
            let m = Manifest {
                path: path.clone(),
                content: doc,
                kind: hc.kind,
            };
            match hc.class {
                Class::Generic => generic.push(m),
                Class::Hook => hooks.push(m),
                // Unknown hooks are skipped, as Helm does (it only logs them).
                Class::UnknownHook => {}
            }
        }
    }
    sort_by_kind(&mut hooks);
    sort_by_kind(&mut generic);
    Ok((hooks, generic))
}

fn sort_by_kind(ms: &mut [Manifest]) {
    let rank = |k: &str| INSTALL_ORDER.iter().position(|x| *x == k);
    ms.sort_by(|a, b| {
        use std::cmp::Ordering;
        match (rank(&a.kind), rank(&b.kind)) {
            (Some(x), Some(y)) => x.cmp(&y),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => a.kind.cmp(&b.kind),
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_like_helm() {
        assert_eq!(split_manifests("a: 1\n---\nb: 2\n"), vec!["a: 1", "b: 2"]);
        assert_eq!(
            split_manifests("---\na: 1\n---  \n\n---\nb: 2"),
            vec!["a: 1", "---\nb: 2"]
        );
        // Go's regex eats the blank lines after a separator, so a directly following `---`
        // stays in a document of its own; Helm prints it as is.
        assert_eq!(
            split_manifests("---\na: 1\n---  \n\n---\n"),
            vec!["a: 1", "---"]
        );
        assert_eq!(split_manifests("a: '---'\n"), vec!["a: '---'"]);
        assert!(split_manifests("  \n").is_empty());
    }

    #[test]
    fn orders_by_kind_then_keeps_file_order() {
        let files = vec![
            ("c/templates/b.yaml".to_string(), "kind: Deployment\nmetadata: {name: d}\n---\nkind: Zed\n---\nkind: Alpha\n".to_string()),
            ("c/templates/a.yaml".to_string(), "kind: Service\n---\nkind: Namespace\n".to_string()),
            ("c/templates/h.yaml".to_string(), "kind: Pod\nmetadata:\n  annotations:\n    helm.sh/hook: test\n    helm.sh/hook-weight: 5\n".to_string()),
            ("c/templates/u.yaml".to_string(), "kind: Pod\nmetadata:\n  annotations:\n    helm.sh/hook: bogus\n".to_string()),
            ("c/templates/_p.tpl".to_string(), "kind: Secret\n".to_string()),
        ];
        let (hooks, m) = sort_manifests(&files).unwrap();
        let kinds: Vec<&str> = m.iter().map(|x| x.kind.as_str()).collect();
        assert_eq!(
            kinds,
            vec!["Namespace", "Service", "Deployment", "Alpha", "Zed"]
        );
        assert_eq!(hooks.len(), 1);
    }

    #[test]
    fn fast_classifier_agrees_with_full_parse() {
        let docs = [
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n  annotations:\n    helm.sh/hook: test\n",
            "kind: \"Service\"\nmetadata: {name: a, annotations: {\"helm.sh/hook\": 'pre-install, post-install'}}\n",
            "# only a comment",
            "kind: Deployment\nspec:\n  template:\n    metadata:\n      annotations:\n        helm.sh/hook: test\n",
            "kind: ConfigMap\nmetadata:\n  annotations:\n    helm.sh/hook: nope\n",
            "kind: X\nmetadata:\n  annotations: ~\n",
            "list:\n- kind: Inner\nkind: Outer\n",
        ];
        for d in docs {
            assert_eq!(fast_path_agrees(d), Some(true), "{d}");
        }
        for d in [
            "kind: X\nmetadata:\n  annotations:\n    other: [1]\n",
            "kind: &a X\n",
            "kind: 1.0\n",
            "<<: {kind: X}\n",
            "kind: !!str X\n",
            "- a\n",
        ] {
            assert_eq!(fast_path_agrees(d), None, "{d}");
        }
    }

    #[test]
    fn yaml_errors_name_the_file() {
        let files = vec![("c/templates/x.yaml".to_string(), "a: [\n".to_string())];
        let e = sort_manifests(&files).unwrap_err();
        assert!(
            e.starts_with("YAML parse error on c/templates/x.yaml"),
            "{e}"
        );
        let files = vec![(
            "c/templates/x.yaml".to_string(),
            "just a string\n".to_string(),
        )];
        assert!(sort_manifests(&files).is_err());
    }
}
