//! YAML reading with Go/Kubernetes semantics (legacy octal numbers) and errors that carry the
//! file, line, column and key path.

use std::path::Path;

use serde::de::DeserializeOwned;

use crate::error::BundleError;

fn options() -> serde_saphyr::Options {
    serde_saphyr::options! { legacy_octal_numbers: true }
}

/// Parses one YAML document into `T`; an empty document yields `T::default()`.
pub fn from_str<T: DeserializeOwned + Default>(file: &Path, text: &str) -> Result<T, BundleError> {
    from_str_impl(file, text, None)
}

fn from_str_impl<T: DeserializeOwned + Default>(
    file: &Path,
    text: &str,
    schema: Option<serde_json::Value>,
) -> Result<T, BundleError> {
    let mut track = serde_path_to_error::Track::new();
    let res = serde_saphyr::with_deserializer_from_str_with_options(text, options(), |de| {
        let de = serde_path_to_error::Deserializer::new(de, &mut track);
        <Option<T> as serde::Deserialize>::deserialize(de)
    });
    match res {
        Ok(v) => Ok(v.unwrap_or_default()),
        Err(e) => {
            let (mut line, mut column) = e
                .location()
                .map(|l| (l.line(), l.column()))
                .unwrap_or((0, 0));
            let mut key = track.path().to_string();
            let mut message = first_line(&e.to_string());
            if key == "?" || key == "." || key.is_empty() {
                key = "(document)".to_string();
                // Serde loses the path inside flattened structs: find it with the schema.
                if let (Some(schema), Ok(value)) = (
                    schema,
                    serde_saphyr::from_str_with_options::<serde_json::Value>(text, options()),
                ) && let Some((p, expected)) = find_type_error(&value, &schema, "")
                {
                    if let Some(l) = locate(text, &p) {
                        line = l;
                        column = 0;
                    }
                    message = format!("expected {expected}");
                    key = p;
                }
            }
            Err(BundleError::Yaml {
                file: file.to_path_buf(),
                line,
                column,
                key,
                message,
            })
        }
    }
}

/// Like [`from_str`], with a schema used to name the key of a type error.
pub fn from_str_with_schema<T: DeserializeOwned + Default>(
    file: &Path,
    text: &str,
    schema: serde_json::Value,
) -> Result<T, BundleError> {
    from_str_impl(file, text, Some(schema))
}

/// Parses every document of a multi-document YAML stream (empty documents dropped).
pub fn from_multiple<T: DeserializeOwned>(file: &Path, text: &str) -> Result<Vec<T>, BundleError> {
    serde_saphyr::from_multiple_with_options(text, options()).map_err(|e| {
        let (line, column) = e
            .location()
            .map(|l| (l.line(), l.column()))
            .unwrap_or((0, 0));
        BundleError::Yaml {
            file: file.to_path_buf(),
            line,
            column,
            key: "(document)".into(),
            message: first_line(&e.to_string()),
        }
    })
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").to_string()
}

/// Finds the first place where `value` does not fit `schema` (an inlined OpenAPI v3 schema):
/// returns the key path and what was expected. Used to name the key of a type error, which
/// serde loses inside flattened structs.
pub fn find_type_error(
    value: &serde_json::Value,
    schema: &serde_json::Value,
    path: &str,
) -> Option<(String, String)> {
    use serde_json::Value as V;
    if value.is_null() {
        return None;
    }
    if schema.get("x-kubernetes-int-or-string").is_some() {
        return (!(value.is_string() || value.is_i64() || value.is_u64()))
            .then(|| (path.to_string(), "an integer or a string".into()));
    }
    if schema.get("x-kubernetes-preserve-unknown-fields").is_some()
        && schema.get("properties").is_none()
    {
        return None;
    }
    let ty = schema.get("type").and_then(V::as_str);
    let ok = match ty {
        Some("integer") => value.is_i64() || value.is_u64(),
        Some("number") => value.is_number(),
        Some("boolean") => value.is_boolean(),
        Some("string") => value.is_string(),
        Some("array") => value.is_array(),
        Some("object") => value.is_object(),
        _ => true,
    };
    if !ok {
        return Some((
            path.to_string(),
            format!("a value of type {}", ty.unwrap_or("?")),
        ));
    }
    match value {
        V::Object(m) => {
            let props = schema.get("properties").and_then(V::as_object);
            let extra = schema.get("additionalProperties").filter(|a| a.is_object());
            for (k, v) in m {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                let sub = props.and_then(|pr| pr.get(k)).or(extra);
                if let Some(sub) = sub
                    && let Some(e) = find_type_error(v, sub, &p)
                {
                    return Some(e);
                }
            }
            None
        }
        V::Array(a) => {
            let items = schema.get("items")?;
            a.iter()
                .enumerate()
                .find_map(|(i, v)| find_type_error(v, items, &format!("{path}[{i}]")))
        }
        _ => None,
    }
}

/// Best-effort line (1-based) of a key path such as `helm.values` or `targets[1].name` in
/// block-style YAML.
pub fn locate(text: &str, path: &str) -> Option<u64> {
    let lines: Vec<&str> = text.lines().collect();
    let mut start = 0usize;
    let mut min_indent: isize = -1;
    for seg in path.split('.') {
        let (key, indexes) = match seg.find('[') {
            Some(i) => (
                &seg[..i],
                seg[i..]
                    .trim_matches(|c| c == '[' || c == ']')
                    .split("][")
                    .filter_map(|x| x.parse::<usize>().ok())
                    .collect::<Vec<_>>(),
            ),
            None => (seg, vec![]),
        };
        let mut found = None;
        for (i, l) in lines.iter().enumerate().skip(start) {
            let body = l.trim_start();
            let indent = (l.len() - body.len()) as isize;
            let body2 = body.strip_prefix("- ").unwrap_or(body);
            let indent2 = indent + (body.len() - body2.len()) as isize;
            if indent2 <= min_indent && !body.is_empty() && !body.starts_with('#') && i > start {
                break;
            }
            if body2.starts_with(&format!("{key}:")) || body2.starts_with(&format!("\"{key}\":")) {
                found = Some((i, indent2));
                break;
            }
        }
        let (line, indent) = found?;
        start = line;
        min_indent = indent;
        for idx in indexes {
            let mut count = 0usize;
            let mut hit = None;
            for (i, l) in lines.iter().enumerate().skip(start + 1) {
                let body = l.trim_start();
                let ind = (l.len() - body.len()) as isize;
                if body.is_empty() || body.starts_with('#') {
                    continue;
                }
                if ind < indent || (ind == indent && !body.starts_with("- ")) {
                    break;
                }
                if body.starts_with("- ") && (ind == indent || ind == indent + 2) {
                    if count == idx {
                        hit = Some(i);
                        break;
                    }
                    count += 1;
                }
            }
            start = hit?;
            min_indent = indent;
        }
    }
    Some(start as u64 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleet_api::fleetyaml::FleetYaml;

    #[test]
    fn locate_paths() {
        let t = "a: 1\nhelm:\n  values:\n    x: 1\ntargets:\n- name: a\n- name: b\n  helm:\n    maxHistory: x\n";
        assert_eq!(locate(t, "helm.values"), Some(3));
        assert_eq!(locate(t, "targets[1].helm.maxHistory"), Some(9));
        assert_eq!(locate(t, "nope"), None);
    }

    #[test]
    fn error_names_file_line_and_key() {
        let text = "defaultNamespace: x\nhelm:\n  timeoutSeconds: notanumber\n";
        let err = crate::fleet_yaml(Path::new("dir/fleet.yaml"), text).unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("dir/fleet.yaml:3:"), "{msg}");
        assert!(msg.contains("helm.timeoutSeconds"), "{msg}");
    }

    #[test]
    fn empty_and_comment_only_documents_are_default() {
        let y = from_str::<FleetYaml>(Path::new("f"), "").unwrap();
        assert_eq!(y, FleetYaml::default());
        let y = from_str::<FleetYaml>(Path::new("f"), "# just a comment\n").unwrap();
        assert_eq!(y, FleetYaml::default());
    }

    #[test]
    fn legacy_octal() {
        let v: serde_json::Value = from_str(Path::new("f"), "mode: 0644\n").unwrap();
        assert_eq!(v["mode"], 420);
    }

    proptest::proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,200}") {
            let _ = from_str::<FleetYaml>(Path::new("f"), &s);
        }
    }
}
