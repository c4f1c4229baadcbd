//! Name and label validation with kube-apiserver's rules and messages, so bad metadata is refused
//! with a 422 naming the field instead of being stored and breaking clients later.

use serde_json::Value;

use crate::storage::errors::Cause;

const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";

message_error! {
    /// A name, label or annotation kube-apiserver would refuse, with its message (the 422's cause).
    ValidationError
}

/// RFC 1123 label (namespaces, most name prefixes): `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, max 63.
pub fn dns1123_label(s: &str) -> Result<(), ValidationError> {
    if s.is_empty() || s.len() > 63 {
        return Err(format!(
            "must be no more than 63 characters and non-empty ({DNS1123_LABEL_MSG})"
        )
        .into());
    }
    let b = s.as_bytes();
    let ok_mid = b
        .iter()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-');
    let alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    if !ok_mid || !alnum(b[0]) || !alnum(b[b.len() - 1]) {
        return Err(DNS1123_LABEL_MSG.into());
    }
    Ok(())
}

/// RFC 1123 subdomain (most object names): dot-separated labels, max 253.
pub fn dns1123_subdomain(s: &str) -> Result<(), ValidationError> {
    if s.is_empty() || s.len() > 253 {
        return Err(format!(
            "must be no more than 253 characters and non-empty ({DNS1123_SUBDOMAIN_MSG})"
        )
        .into());
    }
    for part in s.split('.') {
        if dns1123_label(part).is_err() {
            return Err(DNS1123_SUBDOMAIN_MSG.into());
        }
    }
    Ok(())
}

/// Path-segment name rule used for kinds with looser names (e.g. RBAC roles): no `/`, `%`,
/// and not `.` or `..`.
pub fn path_segment_name(s: &str) -> Result<(), ValidationError> {
    if s.is_empty() {
        return Err("name must not be empty".into());
    }
    if s == "." || s == ".." {
        return Err(format!("may not be '{s}'").into());
    }
    if s.contains('/') || s.contains('%') {
        return Err("may not contain '/' or '%'".into());
    }
    Ok(())
}

fn name_part(s: &str) -> bool {
    if s.is_empty() || s.len() > 63 {
        return false;
    }
    let b = s.as_bytes();
    let alnum = |c: u8| c.is_ascii_alphanumeric();
    alnum(b[0])
        && alnum(b[b.len() - 1])
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// A qualified name (label/annotation key): optional DNS-subdomain prefix and `/`, then a name
/// of at most 63 characters of `[A-Za-z0-9-_.]` starting and ending alphanumeric.
pub fn qualified_name(s: &str) -> Result<(), ValidationError> {
    const MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    let (prefix, name) = match s.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, s),
    };
    if let Some(p) = prefix {
        if p.is_empty() {
            return Err("prefix part must be non-empty".into());
        }
        dns1123_subdomain(p).map_err(|e| format!("prefix part {e}"))?;
    }
    if name.len() > 63 {
        return Err("name part must be no more than 63 characters".into());
    }
    if !name_part(name) {
        return Err(MSG.into());
    }
    Ok(())
}

/// A label value: empty, or at most 63 characters of `[A-Za-z0-9-_.]` starting and ending
/// alphanumeric.
pub fn label_value(s: &str) -> Result<(), ValidationError> {
    if s.is_empty() {
        return Ok(());
    }
    if s.len() > 63 {
        return Err("must be no more than 63 characters".into());
    }
    if !name_part(s) {
        return Err("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')".into());
    }
    Ok(())
}

/// Validates `metadata` of an object about to be stored; returns every problem found.
/// `name_rule` is the rule for `metadata.name` of this kind.
pub fn validate_metadata(
    obj: &Value,
    name_rule: fn(&str) -> Result<(), ValidationError>,
) -> Vec<Cause> {
    let mut causes = Vec::new();
    let meta = obj.get("metadata");
    match meta.and_then(|m| m.get("name")).and_then(Value::as_str) {
        Some(n) if !n.is_empty() => {
            if let Err(e) = name_rule(n) {
                causes.push(Cause::invalid(
                    "metadata.name",
                    format!("Invalid value: {n:?}: {e}"),
                ));
            }
        }
        _ => causes.push(Cause::required("metadata.name")),
    }
    for field in ["labels", "annotations"] {
        let Some(v) = meta.and_then(|m| m.get(field)) else {
            continue;
        };
        if v.is_null() {
            continue;
        }
        let Some(map) = v.as_object() else {
            causes.push(Cause::invalid(
                format!("metadata.{field}"),
                "must be a map of strings",
            ));
            continue;
        };
        for (k, val) in map {
            if let Err(e) = qualified_name(k) {
                causes.push(Cause::invalid(
                    format!("metadata.{field}"),
                    format!("Invalid value: {k:?}: {e}"),
                ));
            }
            match val.as_str() {
                Some(s) if field == "labels" => {
                    if let Err(e) = label_value(s) {
                        causes.push(Cause::invalid(
                            "metadata.labels".to_string(),
                            format!("Invalid value: {s:?}: {e}"),
                        ));
                    }
                }
                Some(_) => {}
                None => causes.push(Cause::invalid(
                    format!("metadata.{field}.{k}"),
                    "must be a string",
                )),
            }
        }
    }
    if let Some(f) = meta
        .and_then(|m| m.get("finalizers"))
        .filter(|f| !f.is_null())
    {
        match f.as_array() {
            Some(items) => {
                for (i, it) in items.iter().enumerate() {
                    let ok = it
                        .as_str()
                        .map(|s| qualified_name(s).is_ok())
                        .unwrap_or(false);
                    if !ok {
                        causes.push(Cause::invalid(
                            format!("metadata.finalizers[{i}]"),
                            format!("Invalid value: {it}: must be a qualified name"),
                        ));
                    }
                }
            }
            None => causes.push(Cause::invalid(
                "metadata.finalizers",
                "must be a list of strings",
            )),
        }
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names() {
        assert!(dns1123_subdomain("a.b-c.d").is_ok());
        assert!(dns1123_subdomain("A").is_err());
        assert!(dns1123_subdomain("-a").is_err());
        assert!(dns1123_label("a.b").is_err());
        assert!(qualified_name("app.kubernetes.io/name").is_ok());
        assert!(qualified_name("/x").is_err());
        assert!(qualified_name("a/b/c").is_err());
        assert!(label_value("").is_ok());
        assert!(label_value("a b").is_err());
    }

    #[test]
    fn metadata_causes() {
        let o = json!({"metadata": {"name": "Bad_Name", "labels": {"ok": "no spaces allowed"}}});
        let c = validate_metadata(&o, dns1123_subdomain);
        assert_eq!(c.len(), 2);
        let o = json!({"metadata": {}});
        assert_eq!(
            validate_metadata(&o, dns1123_subdomain)[0].reason,
            "FieldValueRequired"
        );
    }
}
