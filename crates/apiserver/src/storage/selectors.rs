//! Label and field selectors: parsing (with kube-apiserver's syntax and error messages) and
//! matching. Lists and watches filter with these, so a bad selector must be a 400, never a panic.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::storage::validation::{label_value, qualified_name};

message_error! {
    /// A label or field selector kube-apiserver would refuse, with its message (the 400's text).
    SelectorError
}

/// One label requirement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LabelReq {
    /// `key=value` / `key==value`.
    Eq(String, String),
    /// `key!=value` (also matches objects without the key).
    NotEq(String, String),
    /// `key in (a,b)`.
    In(String, Vec<String>),
    /// `key notin (a,b)` (also matches objects without the key).
    NotIn(String, Vec<String>),
    /// `key`.
    Exists(String),
    /// `!key`.
    NotExists(String),
    /// `key>n` (integer comparison).
    Gt(String, i64),
    /// `key<n`.
    Lt(String, i64),
}

/// A parsed label selector: the AND of its requirements. Empty matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector {
    /// Requirements, all of which must hold.
    pub reqs: Vec<LabelReq>,
}

impl LabelSelector {
    /// Parses the `labelSelector` query parameter.
    pub fn parse(s: &str) -> Result<LabelSelector, SelectorError> {
        let mut reqs = Vec::new();
        for part in split_top_level(s)? {
            let part = part.trim();
            if part.is_empty() {
                if s.trim().is_empty() {
                    continue;
                }
                return Err(
                    format!("unable to parse requirement: empty requirement in {s:?}").into(),
                );
            }
            reqs.push(parse_req(part)?);
        }
        Ok(LabelSelector { reqs })
    }

    /// Whether a label set satisfies every requirement.
    pub fn matches(&self, labels: &(impl LabelSet + ?Sized)) -> bool {
        let has = |vs: &[String], x: &str| vs.iter().any(|v| v == x);
        self.reqs.iter().all(|r| match r {
            LabelReq::Eq(k, v) => labels.label(k) == Some(v.as_str()),
            LabelReq::NotEq(k, v) => labels.label(k) != Some(v.as_str()),
            LabelReq::In(k, vs) => labels.label(k).is_some_and(|x| has(vs, x)),
            LabelReq::NotIn(k, vs) => labels.label(k).is_none_or(|x| !has(vs, x)),
            LabelReq::Exists(k) => labels.label(k).is_some(),
            LabelReq::NotExists(k) => labels.label(k).is_none(),
            LabelReq::Gt(k, n) => labels
                .label(k)
                .and_then(|x| x.parse::<i64>().ok())
                .is_some_and(|x| x > *n),
            LabelReq::Lt(k, n) => labels
                .label(k)
                .and_then(|x| x.parse::<i64>().ok())
                .is_some_and(|x| x < *n),
        })
    }
}

/// What a label selector reads: labels by key (a map, or the store's packed
/// [`Labels`](crate::storage::store::Labels)).
pub trait LabelSet {
    /// The value of label `key`, if set.
    fn label(&self, key: &str) -> Option<&str>;
}

impl LabelSet for BTreeMap<String, String> {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

impl LabelSet for crate::storage::store::Labels {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key)
    }
}

/// Splits on commas that are not inside parentheses.
fn split_top_level(s: &str) -> Result<Vec<&str>, SelectorError> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => {
                depth += 1;
                if depth > 1 {
                    return Err(format!("unable to parse requirement: nested '(' in {s:?}").into());
                }
            }
            ')' => {
                depth -= 1;
                if depth < 0 {
                    return Err(
                        format!("unable to parse requirement: unexpected ')' in {s:?}").into(),
                    );
                }
            }
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(format!("unable to parse requirement: unclosed '(' in {s:?}").into());
    }
    out.push(&s[start..]);
    Ok(out)
}

fn check_key(k: &str) -> Result<String, SelectorError> {
    let k = k.trim();
    qualified_name(k)
        .map_err(|e| format!("unable to parse requirement: invalid label key {k:?}: {e}"))?;
    Ok(k.to_string())
}

fn check_value(v: &str) -> Result<String, SelectorError> {
    let v = v.trim();
    label_value(v)
        .map_err(|e| format!("unable to parse requirement: invalid label value: {v:?}: {e}"))?;
    Ok(v.to_string())
}

fn parse_set(rest: &str) -> Result<Vec<String>, SelectorError> {
    let rest = rest.trim();
    let inner = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| format!("unable to parse requirement: expected '(' ... ')' after set operator, found {rest:?}"))?;
    let mut vals = Vec::new();
    for v in inner.split(',') {
        vals.push(check_value(v)?);
    }
    Ok(vals)
}

fn parse_req(p: &str) -> Result<LabelReq, SelectorError> {
    if let Some(k) = p.strip_prefix('!') {
        return Ok(LabelReq::NotExists(check_key(k)?));
    }
    if let Some(i) = p.find("!=") {
        return Ok(LabelReq::NotEq(
            check_key(&p[..i])?,
            check_value(&p[i + 2..])?,
        ));
    }
    if let Some(i) = p.find("==") {
        return Ok(LabelReq::Eq(check_key(&p[..i])?, check_value(&p[i + 2..])?));
    }
    if let Some(i) = p.find('=') {
        return Ok(LabelReq::Eq(check_key(&p[..i])?, check_value(&p[i + 1..])?));
    }
    for (op, gt) in [('>', true), ('<', false)] {
        if let Some(i) = p.find(op) {
            let k = check_key(&p[..i])?;
            let n: i64 = p[i + 1..].trim().parse().map_err(|_| {
                format!("unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an integer, found {:?}", &p[i + 1..])
            })?;
            return Ok(if gt {
                LabelReq::Gt(k, n)
            } else {
                LabelReq::Lt(k, n)
            });
        }
    }
    // `key in (...)`, `key notin (...)`, or `key`.
    let mut it = p.splitn(2, char::is_whitespace);
    let key = it.next().unwrap_or("");
    let rest = it.next().unwrap_or("").trim_start();
    if rest.is_empty() {
        if key.contains('(') || key.contains(')') {
            return Err(format!("unable to parse requirement: {p:?}").into());
        }
        return Ok(LabelReq::Exists(check_key(key)?));
    }
    if let Some(r) = rest.strip_prefix("notin") {
        return Ok(LabelReq::NotIn(check_key(key)?, parse_set(r)?));
    }
    if let Some(r) = rest.strip_prefix("in") {
        return Ok(LabelReq::In(check_key(key)?, parse_set(r)?));
    }
    Err(format!(
        "unable to parse requirement: found '{rest}', expected: in, notin, =, ==, !=, gt, lt"
    )
    .into())
}

/// One field requirement: `field=value` or `field!=value`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldReq {
    /// Dotted field path, e.g. `metadata.name`.
    pub field: String,
    /// Value compared with the field's string form.
    pub value: String,
    /// `!=` instead of `=`.
    pub negate: bool,
}

/// A parsed field selector (AND of requirements).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSelector {
    /// Requirements, all of which must hold.
    pub reqs: Vec<FieldReq>,
}

/// Field selector labels kube-apiserver accepts for a kind, besides `metadata.name` and
/// `metadata.namespace` which every kind supports.
pub fn kind_fields(group: &str, kind: &str) -> &'static [&'static str] {
    match (group, kind) {
        ("", "Secret") => &["type"],
        ("", "Pod") => &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ],
        ("", "Event") => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
        ("", "Namespace") => &["status.phase"],
        ("", "Node") => &["spec.unschedulable"],
        ("", "ReplicationController") | ("apps", "ReplicaSet") => &["status.replicas"],
        ("batch", "Job") => &["status.successful"],
        ("certificates.k8s.io", "CertificateSigningRequest") => &["spec.signerName"],
        _ => &[],
    }
}

impl FieldSelector {
    /// Parses a field selector; `allowed` are the kind's extra fields (see [`kind_fields`]).
    pub fn parse(s: &str, allowed: &[&str]) -> Result<FieldSelector, SelectorError> {
        let mut reqs = Vec::new();
        if s.trim().is_empty() {
            return Ok(FieldSelector { reqs });
        }
        for part in split_unescaped(s, ',') {
            let (field, value, negate) = if let Some((f, v)) = split_op(&part, "!=") {
                (f, v, true)
            } else if let Some((f, v)) = split_op(&part, "==") {
                (f, v, false)
            } else if let Some((f, v)) = split_op(&part, "=") {
                (f, v, false)
            } else {
                return Err(format!("invalid selector: '{s}'; can't understand '{part}'").into());
            };
            let field = field.trim().to_string();
            if field != "metadata.name"
                && field != "metadata.namespace"
                && !allowed.contains(&field.as_str())
            {
                return Err(format!("field label not supported: {field}").into());
            }
            reqs.push(FieldReq {
                field,
                value: unescape(&value),
                negate,
            });
        }
        Ok(FieldSelector { reqs })
    }

    /// Whether the selector has no requirements.
    pub fn is_empty(&self) -> bool {
        self.reqs.is_empty()
    }

    /// Whether every requirement only needs name/namespace (answerable from the storage key).
    pub fn only_meta(&self) -> bool {
        self.reqs
            .iter()
            .all(|r| r.field == "metadata.name" || r.field == "metadata.namespace")
    }

    /// Matches using the object's namespace/name and, for other fields, a lookup function.
    pub fn matches_with(&self, ns: &str, name: &str, mut get: impl FnMut(&str) -> String) -> bool {
        self.reqs.iter().all(|r| {
            let v = match r.field.as_str() {
                "metadata.name" => name.to_string(),
                "metadata.namespace" => ns.to_string(),
                f => get(f),
            };
            (v == r.value) != r.negate
        })
    }
}

/// The string form of a dotted field in an object, as field selectors compare it.
pub fn field_value(obj: &Value, path: &str) -> String {
    let mut cur = obj;
    for seg in path.split('.') {
        match cur.get(seg) {
            Some(v) => cur = v,
            None => return String::new(),
        }
    }
    match cur {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        // `source` on core Events is an object; kube-apiserver compares `source.component`.
        Value::Object(m) => m
            .get("component")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        Value::Array(_) => String::new(),
    }
}

fn split_unescaped(s: &str, sep: char) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut esc = false;
    for c in s.chars() {
        if esc {
            cur.push('\\');
            cur.push(c);
            esc = false;
        } else if c == '\\' {
            esc = true;
        } else if c == sep {
            out.push(std::mem::take(&mut cur));
        } else {
            cur.push(c);
        }
    }
    if esc {
        cur.push('\\');
    }
    out.push(cur);
    out
}

fn split_op(s: &str, op: &str) -> Option<(String, String)> {
    // Find the first unescaped occurrence of op.
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            i += 2;
            continue;
        }
        if s.get(i..).is_some_and(|r| r.starts_with(op)) {
            // Don't treat the `=` of `!=` or `==` as a bare `=`.
            if op == "=" && (i > 0 && b[i - 1] == b'!') {
                i += 1;
                continue;
            }
            return Some((s.get(..i)?.to_string(), s.get(i + op.len()..)?.to_string()));
        }
        i += 1;
    }
    None
}

fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut esc = false;
    for c in s.chars() {
        if esc {
            out.push(c);
            esc = false;
        } else if c == '\\' {
            esc = true;
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn labels(p: &[(&str, &str)]) -> BTreeMap<String, String> {
        p.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn label_ops() {
        let l = labels(&[("app", "web"), ("tier", "front"), ("n", "5")]);
        let m = |s: &str| LabelSelector::parse(s).map(|x| x.matches(&l));
        assert_eq!(m("app=web"), Ok(true));
        assert_eq!(m("app==web,tier=front"), Ok(true));
        assert_eq!(m("app!=web"), Ok(false));
        assert_eq!(m("missing!=x"), Ok(true));
        assert_eq!(m("tier in (front, back)"), Ok(true));
        assert_eq!(m("tier notin (front)"), Ok(false));
        assert_eq!(m("app,!missing"), Ok(true));
        assert_eq!(m("!app"), Ok(false));
        assert_eq!(m("n>4,n<6"), Ok(true));
        assert_eq!(m(""), Ok(true));
        assert!(LabelSelector::parse("app in (a").is_err());
        assert!(LabelSelector::parse("a b c").is_err());
        assert!(LabelSelector::parse("app=has space").is_err());
        assert!(LabelSelector::parse("bad key=x").is_err());
        assert!(LabelSelector::parse("a,,b").is_err());
    }

    #[test]
    fn field_ops() {
        let f = FieldSelector::parse("metadata.name=demo,metadata.namespace!=kube-system", &[])
            .unwrap();
        assert!(f.matches_with("default", "demo", |_| String::new()));
        assert!(!f.matches_with("kube-system", "demo", |_| String::new()));
        assert!(FieldSelector::parse("spec.foo=x", &[]).is_err());
        let s = FieldSelector::parse("type==kubernetes.io/tls", kind_fields("", "Secret")).unwrap();
        let obj = serde_json::json!({"type": "kubernetes.io/tls"});
        assert!(s.matches_with("a", "b", |p| field_value(&obj, p)));
        assert!(FieldSelector::parse("nonsense", &[]).is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn label_parse_never_panics(s in ".{0,64}") {
            let _ = LabelSelector::parse(&s);
        }

        #[test]
        fn label_parse_structured(s in "[a-z!=(), ]{0,40}") {
            if let Ok(sel) = LabelSelector::parse(&s) {
                let _ = sel.matches(&BTreeMap::new());
            }
        }

        #[test]
        fn field_parse_never_panics(s in ".{0,64}") {
            let _ = FieldSelector::parse(&s, kind_fields("", "Pod"));
        }

        #[test]
        fn eq_selector_roundtrip(k in "[a-z][a-z0-9]{0,10}", v in "[a-z0-9]{0,10}") {
            let sel = LabelSelector::parse(&format!("{k}={v}")).unwrap();
            let mut l = BTreeMap::new();
            l.insert(k.clone(), v.clone());
            prop_assert!(sel.matches(&l));
            l.insert(k, format!("{v}x"));
            prop_assert!(!sel.matches(&l));
        }
    }
}
