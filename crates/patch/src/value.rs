//! Small helpers shared by the patch flavours: error paths and JSON equality with Go's number semantics.

use serde_json::Value;

/// Deepest nesting any patch operation recurses into; deeper input is rejected instead of risking the
/// stack. serde_json refuses to parse deeper documents anyway (its recursion limit is 128).
pub(crate) const MAX_DEPTH: usize = 128;

/// One step of a JSON path, kept on the stack while recursing and rendered only when an error is built.
#[derive(Clone, Copy)]
pub(crate) enum Seg<'a> {
    Root,
    Key(&'a str),
    Index(usize),
}

/// A JSON path as a linked list through the recursion's stack frames (no allocation on the happy path).
#[derive(Clone, Copy)]
pub(crate) struct Path<'a> {
    parent: Option<&'a Path<'a>>,
    seg: Seg<'a>,
    depth: usize,
}

impl<'a> Path<'a> {
    /// The document root.
    pub(crate) fn root() -> Path<'static> {
        Path {
            parent: None,
            seg: Seg::Root,
            depth: 0,
        }
    }

    /// The child at object key `key`.
    pub(crate) fn key(&'a self, key: &'a str) -> Path<'a> {
        Path {
            parent: Some(self),
            seg: Seg::Key(key),
            depth: self.depth + 1,
        }
    }

    /// The child at list index `i`.
    pub(crate) fn index(&'a self, i: usize) -> Path<'a> {
        Path {
            parent: Some(self),
            seg: Seg::Index(i),
            depth: self.depth + 1,
        }
    }

    /// Fails once recursion went deeper than [`MAX_DEPTH`].
    pub(crate) fn check_depth(&self) -> Result<(), crate::PatchError> {
        if self.depth > MAX_DEPTH {
            return Err(crate::PatchError::TooDeep {
                path: self.to_string(),
                limit: MAX_DEPTH,
            });
        }
        Ok(())
    }
}

impl std::fmt::Display for Path<'_> {
    /// Renders as a JSON pointer (RFC 6901), e.g. `/spec/template/spec/containers/0`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut segs = Vec::with_capacity(self.depth);
        let mut cur = Some(self);
        while let Some(p) = cur {
            segs.push(p.seg);
            cur = p.parent;
        }
        for seg in segs.iter().rev() {
            match seg {
                Seg::Root => {}
                Seg::Key(k) => write!(f, "/{}", k.replace('~', "~0").replace('/', "~1"))?,
                Seg::Index(i) => write!(f, "/{i}")?,
            }
        }
        Ok(())
    }
}

/// Deep equality where numbers compare by value (Go decodes all JSON numbers to float64, so `1` and `1.0`
/// are the same value to kubectl and kube-apiserver).
pub(crate) fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if x == y {
                return true;
            }
            match (x.as_f64(), y.as_f64()) {
                (Some(x), Some(y)) => x == y,
                _ => false,
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

/// Whether two values have the same JSON type (Go's `reflect.TypeOf` comparison in strategicpatch).
pub(crate) fn same_kind(a: &Value, b: &Value) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b)
}

/// Human name of a JSON value's type, for error messages.
pub(crate) fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "object",
    }
}

/// Go's `fmt.Sprintf("%v", v)` rendering of a scalar, used where strategicpatch sorts by it.
pub(crate) fn sort_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "<nil>".to_string(),
        other => other.to_string(),
    }
}

/// Hashable identity of a JSON value, equal for values [`json_eq`] calls equal (numbers by value), so
/// list merges index items instead of comparing every pair.
pub(crate) fn ident_key(v: &Value) -> String {
    match v {
        Value::Null => "n".to_string(),
        Value::Bool(b) => format!("b:{b}"),
        Value::Number(n) => match n.as_f64() {
            Some(f) => format!("d:{f}"),
            None => format!("d:{n}"),
        },
        Value::String(s) => {
            let mut k = String::with_capacity(s.len() + 2);
            k.push_str("s:");
            k.push_str(s);
            k
        }
        Value::Array(a) => {
            let parts: Vec<String> = a.iter().map(ident_key).collect();
            format!("a:[{}]", parts.join(","))
        }
        Value::Object(m) => {
            let mut parts: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{k:?}={}", ident_key(v)))
                .collect();
            parts.sort();
            format!("o:{{{}}}", parts.join(","))
        }
    }
}

/// Positions of values in a list, by identity.
#[derive(Default)]
pub(crate) struct Positions {
    map: std::collections::HashMap<String, Vec<usize>>,
}

impl Positions {
    /// Indexes `items`; `None` entries (items without an identity) are skipped.
    pub(crate) fn build<'a>(items: impl Iterator<Item = Option<&'a Value>>) -> Positions {
        let mut p = Positions::default();
        for (i, v) in items.enumerate() {
            if let Some(v) = v {
                p.push(v, i);
            }
        }
        p
    }

    /// Records that position `pos` holds `v`.
    pub(crate) fn push(&mut self, v: &Value, pos: usize) {
        self.map.entry(ident_key(v)).or_default().push(pos);
    }

    /// All positions holding `v`, ascending.
    pub(crate) fn all(&self, v: &Value) -> &[usize] {
        self.map.get(&ident_key(v)).map_or(&[], Vec::as_slice)
    }

    /// The first position holding `v`.
    pub(crate) fn first(&self, v: &Value) -> Option<usize> {
        self.all(v).first().copied()
    }
}
