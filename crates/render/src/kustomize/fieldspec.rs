//! kustomize "field specs": a GVK filter plus a slash-separated path into the object, used
//! by every built-in transformer to say which fields it touches.

use super::resource::ResId;
use serde_json::{Map, Value};

/// Where a transformer applies: resources matching group/version/kind (empty = any), at
/// `path` (`/`-separated, `\/` escapes a slash, `[]` marks a list; lists met along the
/// way are traversed element by element), optionally creating missing fields.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSpec {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub path: String,
    pub create: bool,
}

impl FieldSpec {
    /// A spec for any kind.
    pub fn any(path: &str, create: bool) -> FieldSpec {
        FieldSpec {
            path: path.into(),
            create,
            ..Default::default()
        }
    }

    /// A spec for one group/kind (version left open).
    pub fn gk(group: &str, kind: &str, path: &str, create: bool) -> FieldSpec {
        FieldSpec {
            group: group.into(),
            kind: kind.into(),
            path: path.into(),
            create,
            ..Default::default()
        }
    }

    /// A spec for one group/version/kind.
    pub fn gvk(group: &str, version: &str, kind: &str, path: &str, create: bool) -> FieldSpec {
        FieldSpec {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            path: path.into(),
            create,
        }
    }

    /// Whether this spec selects a resource with id `id` (kustomize's `Gvk.IsSelected`).
    pub fn selects(&self, id: &ResId) -> bool {
        (self.group.is_empty() || self.group == id.group)
            && (self.version.is_empty() || self.version == id.version)
            && (self.kind.is_empty() || self.kind == id.kind)
    }
}

/// Splits a field-spec path into segments, honouring `\/` escapes.
pub fn split_path(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = path.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' && chars.peek() == Some(&'/') {
            cur.push('/');
            chars.next();
        } else if c == '/' {
            out.push(std::mem::take(&mut cur));
        } else {
            cur.push(c);
        }
    }
    out.push(cur);
    out.retain(|s| !s.is_empty());
    out
}

/// What to create at a missing final field.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CreateKind {
    Map,
    Scalar,
}

/// Calls `f` on every value found at `path` within `obj` (creating it when allowed).
/// `f` returns an error message to abort.
pub fn apply<F>(
    obj: &mut Value,
    path: &str,
    create: bool,
    kind: CreateKind,
    f: &mut F,
) -> Result<(), String>
where
    F: FnMut(&mut Value) -> Result<(), String>,
{
    let segs = split_path(path);
    walk(obj, &segs, create, kind, f)
}

fn walk<F>(
    node: &mut Value,
    segs: &[String],
    create: bool,
    kind: CreateKind,
    f: &mut F,
) -> Result<(), String>
where
    F: FnMut(&mut Value) -> Result<(), String>,
{
    let Some((first, rest)) = segs.split_first() else {
        return f(node);
    };
    if let Value::Array(items) = node {
        for it in items {
            walk(it, segs, create, kind, f)?;
        }
        return Ok(());
    }
    let (name, is_list) = match first.strip_suffix("[]") {
        Some(n) => (n, true),
        None => (first.as_str(), false),
    };
    let Value::Object(m) = node else {
        return Ok(());
    };
    let missing = m.get(name).is_none_or(|v| v.is_null());
    if missing {
        if !create {
            return Ok(());
        }
        let fresh = if is_list {
            Value::Array(vec![])
        } else if rest.is_empty() {
            match kind {
                CreateKind::Map => Value::Object(Map::new()),
                CreateKind::Scalar => Value::String(String::new()),
            }
        } else {
            Value::Object(Map::new())
        };
        m.insert(name.to_string(), fresh);
    }
    let Some(child) = m.get_mut(name) else {
        return Ok(());
    };
    if rest.is_empty() {
        if let Value::Array(items) = child
            && is_list
        {
            for it in items {
                f(it)?;
            }
            return Ok(());
        }
        return f(child);
    }
    walk(child, rest, create, kind, f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn walks_lists_and_creates() {
        let mut v = json!({"spec": {"containers": [{"image": "a"}, {"image": "b"}]}});
        let mut seen = vec![];
        apply(
            &mut v,
            "spec/containers[]/image",
            false,
            CreateKind::Scalar,
            &mut |x| {
                seen.push(x.as_str().unwrap_or("").to_string());
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(seen, vec!["a", "b"]);
        let mut v = json!({"kind": "Service"});
        apply(&mut v, "spec/selector", true, CreateKind::Map, &mut |x| {
            x.as_object_mut().unwrap().insert("a".into(), json!("b"));
            Ok(())
        })
        .unwrap();
        assert_eq!(
            v,
            json!({"kind": "Service", "spec": {"selector": {"a": "b"}}})
        );
    }

    #[test]
    fn escaped_slash() {
        assert_eq!(
            split_path("metadata/annotations/a.io\\/b"),
            vec!["metadata", "annotations", "a.io/b"]
        );
    }
}
