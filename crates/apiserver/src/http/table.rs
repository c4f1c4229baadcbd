//! `meta.k8s.io/v1 Table` output for clients that ask for it (`Accept: ...;as=Table;...`, which
//! `kubectl get` sends): the built-in kinds' own columns (see [`crate::http::printers`]), or Name, the
//! CRD's additionalPrinterColumns and Age, with row objects as `PartialObjectMetadata` unless
//! `includeObject` says otherwise.

use axum::http::HeaderMap;
use serde_json::{Value, json};

use crate::storage::registry::ResourceInfo;

/// What a Table row carries as its `object` (`includeObject` query parameter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IncludeObject {
    /// No object.
    None,
    /// `PartialObjectMetadata` (the default).
    Metadata,
    /// The full object.
    Object,
}

impl IncludeObject {
    /// Parses the query parameter (default Metadata).
    pub fn parse(raw: Option<&str>) -> IncludeObject {
        let v = raw.and_then(|q| {
            form_urlencoded::parse(q.as_bytes())
                .find(|(k, _)| k == "includeObject")
                .map(|(_, v)| v.into_owned())
        });
        match v.as_deref() {
            Some("None") => IncludeObject::None,
            Some("Object") => IncludeObject::Object,
            _ => IncludeObject::Metadata,
        }
    }
}

/// Whether the client prefers a Table (the first acceptable media type asks for one).
pub fn wants_table(headers: &HeaderMap) -> bool {
    let accept = headers
        .get(axum::http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    accept.split(',').next().is_some_and(|first| {
        let params: Vec<&str> = first.split(';').map(str::trim).collect();
        params.contains(&"as=Table")
            && params.contains(&"g=meta.k8s.io")
            && params.contains(&"v=v1")
    })
}

/// Column definitions for a resource.
pub fn columns(info: &ResourceInfo) -> Value {
    if let Some(p) = builtin_printer(info) {
        return crate::http::printers::column_definitions(p);
    }
    let mut cols = vec![
        json!({"name": "Name", "type": "string", "format": "name", "description": "Name must be unique within a namespace.", "priority": 0}),
    ];
    let mut has_age = false;
    for c in &info.printer_columns {
        if c.name.eq_ignore_ascii_case("age") {
            has_age = true;
        }
        cols.push(json!({"name": c.name, "type": if c.kind == "date" { "date" } else { c.kind.as_str() }, "format": "", "description": "", "priority": 0}));
    }
    if !has_age {
        cols.push(json!({"name": "Age", "type": "date", "format": "", "description": "CreationTimestamp is a timestamp representing the server time when this object was created.", "priority": 0}));
    }
    Value::Array(cols)
}

/// Evaluates the JSONPath subset printer columns use (`.a.b`, `.a[0].b`, and equality filters
/// such as `.status.conditions[?(@.type=="Ready")].message`, which every Fleet kind's Status
/// column uses; the first matching element is taken). Wildcards yield nothing.
pub fn json_path<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = obj;
    let p = path
        .trim()
        .trim_start_matches('{')
        .trim_end_matches('}')
        .trim_start_matches('.');
    let mut rest = p;
    while !rest.is_empty() {
        rest = rest.strip_prefix('.').unwrap_or(rest);
        let end = rest.find(['.', '[']).unwrap_or(rest.len());
        let name = &rest[..end];
        if !name.is_empty() {
            cur = cur.get(name)?;
        }
        rest = &rest[end..];
        if let Some(r) = rest.strip_prefix('[') {
            let close = r.find(']')?;
            let idx = &r[..close];
            rest = &r[close + 1..];
            cur = match idx.strip_prefix("?(@.").and_then(|f| f.strip_suffix(')')) {
                Some(filter) => {
                    let (key, want) = filter.split_once("==")?;
                    let want = want.trim().trim_matches(|c| c == '"' || c == '\'');
                    cur.as_array()?.iter().find(|e| {
                        json_path(e, key.trim()).is_some_and(|v| match v {
                            Value::String(s) => s == want,
                            other => serde_json::from_str::<Value>(want).is_ok_and(|w| w == *other),
                        })
                    })?
                }
                None => cur.get(idx.parse::<usize>().ok()?)?,
            };
        }
    }
    Some(cur)
}

/// Kubernetes' short human duration (`5s`, `3m2s`, `4h`, `2d5h`, `3y`).
pub fn human_duration(secs: i64) -> String {
    if secs < -1 {
        return "<invalid>".into();
    }
    let s = secs.max(0);
    let (m, h, d) = (s / 60, s / 3600, s / 86400);
    if s < 120 {
        format!("{s}s")
    } else if m < 10 {
        if s % 60 == 0 {
            format!("{m}m")
        } else {
            format!("{m}m{}s", s % 60)
        }
    } else if h < 3 {
        format!("{m}m")
    } else if h < 8 {
        if m % 60 == 0 {
            format!("{h}h")
        } else {
            format!("{h}h{}m", m % 60)
        }
    } else if h < 48 {
        format!("{h}h")
    } else if h < 24 * 8 {
        if h % 24 == 0 {
            format!("{d}d")
        } else {
            format!("{d}d{}h", h % 24)
        }
    } else if d < 365 * 2 {
        format!("{d}d")
    } else if d < 365 * 8 {
        let y = d / 365;
        if d % 365 == 0 {
            format!("{y}y")
        } else {
            format!("{y}y{}d", d % 365)
        }
    } else {
        format!("{}y", d / 365)
    }
}

/// The AGE cell: time since `ts` (RFC 3339), or `<unknown>`.
pub(crate) fn age(ts: Option<&str>) -> String {
    let Some(ts) = ts else {
        return "<unknown>".into();
    };
    match ts.parse::<jiff::Timestamp>() {
        Ok(t) => human_duration(jiff::Timestamp::now().as_second() - t.as_second()),
        Err(_) => "<unknown>".into(),
    }
}

fn cell(v: Option<&Value>, kind: &str) -> Value {
    match (v, kind) {
        (None, _) | (Some(Value::Null), _) => Value::Null,
        (Some(Value::String(s)), "date") => json!(age(Some(s))),
        (Some(Value::String(s)), _) => json!(s),
        (Some(Value::Array(a)), _) => json!(
            a.iter()
                .map(|x| x
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| x.to_string()))
                .collect::<Vec<_>>()
                .join(",")
        ),
        (Some(Value::Object(_)), _) => json!(v.map(Value::to_string).unwrap_or_default()),
        (Some(other), _) => other.clone(),
    }
}

fn builtin_printer(info: &ResourceInfo) -> Option<&'static crate::http::printers::Printer> {
    if info.builtin {
        crate::http::printers::builtin(&info.group, &info.plural)
    } else {
        None
    }
}

/// One Table row for an object.
pub fn row(info: &ResourceInfo, obj: &Value, include: IncludeObject) -> Value {
    let meta = obj.get("metadata").cloned().unwrap_or(json!({}));
    let cells = match builtin_printer(info) {
        Some(p) => (p.cells)(obj),
        None => generic_cells(info, obj, &meta),
    };
    let mut r = json!({"cells": cells});
    match include {
        IncludeObject::None => {}
        IncludeObject::Metadata => {
            r["object"] = json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta});
        }
        IncludeObject::Object => r["object"] = obj.clone(),
    }
    r
}

/// Name, the CRD's printer columns, and Age (unless a printer column is already called Age).
fn generic_cells(info: &ResourceInfo, obj: &Value, meta: &Value) -> Vec<Value> {
    let mut cells = vec![json!(
        meta.get("name").and_then(Value::as_str).unwrap_or("")
    )];
    let mut has_age = false;
    for c in &info.printer_columns {
        if c.name.eq_ignore_ascii_case("age") {
            has_age = true;
        }
        cells.push(cell(json_path(obj, &c.json_path), &c.kind));
    }
    if !has_age {
        cells.push(json!(age(meta
            .get("creationTimestamp")
            .and_then(Value::as_str))));
    }
    cells
}

/// A whole Table.
pub fn table(
    info: &ResourceInfo,
    list_meta: Value,
    objs: &[Value],
    include: IncludeObject,
    with_columns: bool,
) -> Value {
    let rows: Vec<Value> = objs.iter().map(|o| row(info, o, include)).collect();
    let mut t = json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": list_meta, "rows": rows});
    if with_columns {
        t["columnDefinitions"] = columns(info);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(human_duration(5), "5s");
        assert_eq!(human_duration(150), "2m30s");
        assert_eq!(human_duration(3600 * 5 + 60), "5h1m");
        assert_eq!(human_duration(86400 * 3), "3d");
        assert_eq!(human_duration(-10), "<invalid>");
    }

    #[test]
    fn paths() {
        let o = json!({"spec": {"a": [{"b": 1}]}, "status": {"x": "y"}});
        assert_eq!(json_path(&o, ".spec.a[0].b"), Some(&json!(1)));
        assert_eq!(json_path(&o, ".status.x"), Some(&json!("y")));
        assert_eq!(json_path(&o, ".status.missing"), None);
        assert_eq!(json_path(&o, ".spec.a[?(@.b==1)].b"), Some(&json!(1)));
        assert_eq!(json_path(&o, ".spec.a[?(@.b==2)]"), None);
        let c = json!({"status": {"conditions": [
            {"type": "Accepted", "message": "a"}, {"type": "Ready", "message": "r"}]}});
        assert_eq!(
            json_path(&c, ".status.conditions[?(@.type==\"Ready\")].message"),
            Some(&json!("r"))
        );
    }

    #[test]
    fn accept_header() {
        let mut h = HeaderMap::new();
        h.insert(
            axum::http::header::ACCEPT,
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
                .parse()
                .unwrap(),
        );
        assert!(wants_table(&h));
        h.insert(
            axum::http::header::ACCEPT,
            "application/json".parse().unwrap(),
        );
        assert!(!wants_table(&h));
    }
}
