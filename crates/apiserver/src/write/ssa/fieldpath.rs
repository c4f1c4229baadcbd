//! Field sets as server-side apply tracks them, and their `FieldsV1` wire encoding.
//!
//! A set is a tree keyed by path elements in their `FieldsV1` spelling (`f:name`,
//! `k:{"name":"x"}`, `v:"a"`, `i:0`); a node is a *member* when the path leading to it is itself
//! owned (`.` in `FieldsV1`, or an empty object for a leaf). Keeping the wire spelling as the key
//! makes encoding a straight walk and keeps element comparison a string comparison, which only
//! works because every key is canonicalised on the way in (sorted, compact JSON).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// A set of field paths (the owned fields of one manager, or a diff between two objects).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Set {
    /// Whether the path leading to this node is itself in the set.
    pub member: bool,
    /// Children by path element (`f:`/`k:`/`v:`/`i:` spelling).
    pub children: BTreeMap<String, Set>,
}

/// A `FieldsV1` document that is not a valid field set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldsError(pub String);

impl std::fmt::Display for FieldsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// JSON with object keys sorted at every level, compact: the one spelling of a value used in
/// `k:` and `v:` elements so that equal values give equal keys.
pub fn canonical_json(v: &Value) -> String {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                let mut out = Map::new();
                for k in keys {
                    if let Some(x) = m.get(k) {
                        out.insert(k.clone(), sorted(x));
                    }
                }
                Value::Object(out)
            }
            Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    serde_json::to_string(&sorted(v)).unwrap_or_default()
}

/// The path element of a struct/map field.
pub fn field_pe(name: &str) -> String {
    format!("f:{name}")
}

/// The path element of an associative-list item with the given key fields (sorted by name).
pub fn key_pe(fields: &[(String, Value)]) -> String {
    let mut sorted: Vec<&(String, Value)> = fields.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    // Written directly (this runs for every list item of every write); only nested values need
    // the general canonical form.
    let mut out = String::from("k:{");
    for (i, (k, v)) in sorted.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&serde_json::to_string(k).unwrap_or_default());
        out.push(':');
        match v {
            Value::Object(_) | Value::Array(_) => out.push_str(&canonical_json(v)),
            scalar => out.push_str(&serde_json::to_string(scalar).unwrap_or_default()),
        }
    }
    out.push('}');
    out
}

/// The path element of a set item.
pub fn value_pe(v: &Value) -> String {
    match v {
        Value::Object(_) | Value::Array(_) => format!("v:{}", canonical_json(v)),
        scalar => format!("v:{}", serde_json::to_string(scalar).unwrap_or_default()),
    }
}

/// Validates one `FieldsV1` key and returns its canonical spelling.
fn canonical_pe(k: &str) -> Result<String, FieldsError> {
    let bad = |why: &str| FieldsError(format!("invalid path element {k:?}: {why}"));
    let (prefix, rest) = k
        .split_once(':')
        .ok_or_else(|| bad("expected a prefix f:, k:, v: or i:"))?;
    match prefix {
        "f" => Ok(k.to_string()),
        "k" => match serde_json::from_str::<Value>(rest) {
            Ok(Value::Object(m)) if !m.is_empty() => {
                let fields: Vec<(String, Value)> = m.into_iter().collect();
                Ok(key_pe(&fields))
            }
            _ => Err(bad("a key must be a non-empty JSON object")),
        },
        "v" => serde_json::from_str::<Value>(rest)
            .map(|v| value_pe(&v))
            .map_err(|e| bad(&format!("not JSON: {e}"))),
        "i" => rest
            .parse::<u64>()
            .map(|i| format!("i:{i}"))
            .map_err(|_| bad("an index must be a non-negative integer")),
        _ => Err(bad("expected a prefix f:, k:, v: or i:")),
    }
}

/// Renders one path element as kube-apiserver does in conflict messages (`.name`,
/// `[name="x"]`, `[="v"]`, `[0]`).
pub fn display_pe(pe: &str) -> String {
    let Some((prefix, rest)) = pe.split_once(':') else {
        return pe.to_string();
    };
    match prefix {
        "f" => format!(".{rest}"),
        "k" => match serde_json::from_str::<Value>(rest) {
            Ok(Value::Object(m)) => {
                let parts: Vec<String> = m
                    .iter()
                    .map(|(k, v)| format!("{k}={}", canonical_json(v)))
                    .collect();
                format!("[{}]", parts.join(","))
            }
            _ => format!("[{rest}]"),
        },
        "v" => format!("[={rest}]"),
        _ => format!("[{rest}]"),
    }
}

/// Renders a whole path (`.spec.template.spec.containers[name="app"].image`).
pub fn display_path(path: &[String]) -> String {
    path.iter().map(|p| display_pe(p)).collect()
}

impl Set {
    /// An empty set.
    pub fn new() -> Set {
        Set::default()
    }

    /// Whether the set holds no path (the root's own member flag is meaningless).
    pub fn is_empty(&self) -> bool {
        self.children.is_empty()
    }

    /// Whether the node holds nothing: no member here and no path below (encoded it would
    /// wrongly read as a member leaf, `{}`).
    pub(crate) fn is_void(&self) -> bool {
        !self.member && self.children.is_empty()
    }

    /// The child node for `pe`, created when absent.
    pub fn child(&mut self, pe: String) -> &mut Set {
        self.children.entry(pe).or_default()
    }

    /// Inserts a path as a member.
    pub fn insert(&mut self, path: &[&str]) {
        let mut cur = self;
        for pe in path {
            cur = cur.child((*pe).to_string());
        }
        cur.member = true;
    }

    /// Whether `path` is a member.
    pub fn has(&self, path: &[&str]) -> bool {
        let mut cur = self;
        for pe in path {
            match cur.children.get(*pe) {
                Some(c) => cur = c,
                None => return false,
            }
        }
        cur.member
    }

    /// The node at `pe`, if any path goes through it.
    pub fn get(&self, pe: &str) -> Option<&Set> {
        self.children.get(pe)
    }

    /// Adds every path of `other`.
    pub fn union_with(&mut self, other: &Set) {
        self.member |= other.member;
        for (k, c) in &other.children {
            self.child(k.clone()).union_with(c);
        }
    }

    /// The paths of `self` that are not in `other`.
    pub fn difference(&self, other: &Set) -> Set {
        let mut out = Set {
            member: self.member && !other.member,
            children: BTreeMap::new(),
        };
        for (k, c) in &self.children {
            let d = match other.children.get(k) {
                Some(o) => c.difference(o),
                None => c.clone(),
            };
            if !d.is_void() {
                out.children.insert(k.clone(), d);
            }
        }
        out
    }

    /// The paths in both sets.
    pub fn intersection(&self, other: &Set) -> Set {
        let mut out = Set {
            member: self.member && other.member,
            children: BTreeMap::new(),
        };
        for (k, c) in &self.children {
            if let Some(o) = other.children.get(k) {
                let i = c.intersection(o);
                if !i.is_void() {
                    out.children.insert(k.clone(), i);
                }
            }
        }
        out
    }

    /// Every member path, in the order kube-apiserver lists them (at each level the members
    /// first, then the paths below, each in element order).
    pub fn paths(&self) -> Vec<Vec<String>> {
        fn walk(s: &Set, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
            for (k, c) in &s.children {
                if c.member {
                    prefix.push(k.clone());
                    out.push(prefix.clone());
                    prefix.pop();
                }
            }
            for (k, c) in &s.children {
                if !c.children.is_empty() {
                    prefix.push(k.clone());
                    walk(c, prefix, out);
                    prefix.pop();
                }
            }
        }
        let mut out = Vec::new();
        walk(self, &mut Vec::new(), &mut out);
        out
    }

    /// Removes a subtree (`pe` under this node) entirely.
    pub fn remove(&mut self, pe: &str) {
        self.children.remove(pe);
    }

    /// Drops nodes that hold no member below them.
    pub fn prune(&mut self) {
        for c in self.children.values_mut() {
            c.prune();
        }
        self.children.retain(|_, c| !c.is_void());
    }

    /// The `FieldsV1` JSON of this set.
    pub fn to_fields_v1(&self) -> Value {
        self.clone().into_fields_v1()
    }

    /// [`Set::to_fields_v1`] of a set no longer needed: its path elements become the keys as
    /// they are (every write encodes at least one entry, and a create one of the whole object).
    pub fn into_fields_v1(self) -> Value {
        let mut m = Map::with_capacity(self.children.len() + 1);
        if self.member && !self.children.is_empty() {
            m.insert(".".into(), Value::Object(Map::new()));
        }
        for (k, c) in self.children {
            m.insert(k, c.into_fields_v1());
        }
        Value::Object(m)
    }

    /// Parses `FieldsV1` JSON (the root object of `fieldsV1`).
    pub fn from_fields_v1(v: &Value) -> Result<Set, FieldsError> {
        Set::from_fields_v1_canonical(v).map(|(s, _)| s)
    }

    /// [`Set::from_fields_v1`], also telling whether `v` is exactly [`Set::to_fields_v1`] of
    /// the result (every key in its canonical spelling, keys in encoding order, `.` only
    /// beside children): such a value can be written back as it is instead of re-encoded.
    pub fn from_fields_v1_canonical(v: &Value) -> Result<(Set, bool), FieldsError> {
        fn node(v: &Value, depth: usize, canonical: &mut bool) -> Result<Set, FieldsError> {
            if depth > 256 {
                return Err(FieldsError("fieldsV1 is nested too deeply".into()));
            }
            let Value::Object(m) = v else {
                return Err(FieldsError(format!(
                    "every fieldsV1 node must be a JSON object, got {v}"
                )));
            };
            let mut s = Set {
                member: m.is_empty(),
                children: BTreeMap::new(),
            };
            let mut prev: Option<&str> = None;
            for (k, c) in m {
                // The encoder writes `.` first and children in element order.
                if prev.is_some_and(|p| p >= k.as_str()) {
                    *canonical = false;
                }
                prev = Some(k);
                if k == "." {
                    if c.as_object().is_none_or(|o| !o.is_empty()) {
                        return Err(FieldsError("\".\" must map to an empty object".into()));
                    }
                    if m.len() == 1 {
                        // A member leaf is written `{}`.
                        *canonical = false;
                    }
                    s.member = true;
                    continue;
                }
                let pe = canonical_pe(k)?;
                if pe != *k {
                    *canonical = false;
                }
                let child = node(c, depth + 1, canonical)?;
                s.child(pe).union_with(&child);
            }
            Ok(s)
        }
        let mut canonical = true;
        let mut s = node(v, 0, &mut canonical)?;
        if s.member && !s.children.is_empty() {
            // The root is never a member: its `.` is not written back.
            canonical = false;
        }
        s.member = false;
        Ok((s, canonical))
    }

    /// Whether `v` is valid `FieldsV1` that [`Set::from_fields_v1_canonical`] would call
    /// canonical, checked without building the set: an entry a write cannot affect is then
    /// written back without being decoded at all.
    pub fn is_canonical_fields_v1(v: &Value) -> bool {
        fn node(v: &Value, depth: usize, root: bool) -> bool {
            let Value::Object(m) = v else { return false };
            if depth > 256 {
                return false;
            }
            let mut prev: Option<&str> = None;
            for (k, c) in m {
                if prev.is_some_and(|p| p >= k.as_str()) {
                    return false;
                }
                prev = Some(k);
                if k == "." {
                    // Never on the root, never alone (a member leaf is `{}`).
                    if root || m.len() == 1 || c.as_object().is_none_or(|o| !o.is_empty()) {
                        return false;
                    }
                    continue;
                }
                // `f:` elements are canonical as they are; the others are re-spelled.
                let same = k.starts_with("f:") || canonical_pe(k).is_ok_and(|pe| pe == *k);
                if !same || !node(c, depth + 1, false) {
                    return false;
                }
            }
            true
        }
        node(v, 0, true)
    }

    /// Whether some path is a member of both sets (at or below this node), i.e. whether
    /// `self.difference(other)` removes anything.
    pub fn shares_member(&self, other: &Set) -> bool {
        (self.member && other.member)
            || self
                .children
                .iter()
                .any(|(k, c)| other.children.get(k).is_some_and(|o| c.shares_member(o)))
    }

    /// Whether `self.union_with(other)` would leave `self` as it is.
    pub fn covers(&self, other: &Set) -> bool {
        (self.member || !other.member)
            && other
                .children
                .iter()
                .all(|(k, o)| self.children.get(k).is_some_and(|c| c.covers(o)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn encodes_like_kubernetes() {
        let mut s = Set::new();
        s.insert(&["f:metadata", "f:labels", "f:app"]);
        let item = key_pe(&[("name".into(), json!("nginx"))]);
        s.insert(&["f:spec", "f:containers", &item]);
        s.insert(&["f:spec", "f:containers", &item, "f:image"]);
        s.insert(&["f:spec", "f:finalizers", &value_pe(&json!("a"))]);
        assert_eq!(
            s.to_fields_v1(),
            json!({
                "f:metadata": {"f:labels": {"f:app": {}}},
                "f:spec": {
                    "f:containers": {"k:{\"name\":\"nginx\"}": {".": {}, "f:image": {}}},
                    "f:finalizers": {"v:\"a\"": {}}
                }
            })
        );
        assert_eq!(
            display_path(&[
                "f:spec".into(),
                "f:containers".into(),
                item,
                "f:image".into()
            ]),
            ".spec.containers[name=\"nginx\"].image"
        );
    }

    #[test]
    fn key_fields_are_sorted_and_compact() {
        let a = key_pe(&[
            ("protocol".into(), json!("TCP")),
            ("containerPort".into(), json!(80)),
        ]);
        assert_eq!(a, "k:{\"containerPort\":80,\"protocol\":\"TCP\"}");
        let parsed =
            Set::from_fields_v1(&json!({"k:{ \"protocol\": \"TCP\", \"containerPort\": 80 }": {}}))
                .expect("valid");
        assert!(parsed.has(&[&a]));
    }

    #[test]
    fn malformed_fields_v1_is_an_error() {
        for bad in [
            json!([]),
            json!({"x": {}}),
            json!({"f:a": 1}),
            json!({"k:[1]": {}}),
            json!({"k:{}": {}}),
            json!({"i:-1": {}}),
            json!({"v:{": {}}),
            json!({".": {"f:a": {}}}),
        ] {
            assert!(Set::from_fields_v1(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn set_algebra() {
        let mut a = Set::new();
        a.insert(&["f:a", "f:b"]);
        a.insert(&["f:a", "f:c"]);
        let mut b = Set::new();
        b.insert(&["f:a", "f:c"]);
        b.insert(&["f:d"]);
        let d = a.difference(&b);
        assert_eq!(d.paths(), vec![vec!["f:a".to_string(), "f:b".to_string()]]);
        let i = a.intersection(&b);
        assert_eq!(i.paths(), vec![vec!["f:a".to_string(), "f:c".to_string()]]);
        let mut u = a.clone();
        u.union_with(&b);
        assert_eq!(u.paths().len(), 3);
        assert!(a.difference(&a).is_empty());
    }

    fn arb_pe() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-zA-Z.:{}\"]{1,6}".prop_map(|s| field_pe(&s)),
            ("[a-z]{1,4}", any::<i32>()).prop_map(|(k, v)| key_pe(&[(k, json!(v))])),
            "[a-z\"\\\\ ]{0,5}".prop_map(|s| value_pe(&json!(s))),
            (0u32..50).prop_map(|i| format!("i:{i}")),
        ]
    }

    fn arb_set() -> impl Strategy<Value = Set> {
        let leaf = Just(Set {
            member: true,
            children: BTreeMap::new(),
        });
        leaf.prop_recursive(4, 40, 5, |inner| {
            (
                any::<bool>(),
                proptest::collection::btree_map(arb_pe(), inner, 1..5),
            )
                .prop_map(|(member, children)| Set { member, children })
        })
    }

    proptest! {
        /// Encoding then decoding gives the same set, and the encoding is stable.
        #[test]
        fn fields_v1_roundtrip(s in arb_set()) {
            let mut s = s;
            s.member = false;
            s.prune();
            let enc = s.to_fields_v1();
            let back = Set::from_fields_v1(&enc).expect("own encoding parses");
            prop_assert_eq!(&back, &s);
            prop_assert_eq!(back.to_fields_v1(), enc);
        }

        /// Arbitrary JSON never panics the decoder.
        #[test]
        fn fields_v1_decoder_total(raw in "[{}\":a-z.,\\[\\]0-9 ]{0,40}") {
            if let Ok(v) = serde_json::from_str::<Value>(&raw) {
                let _ = Set::from_fields_v1(&v);
            }
        }

        /// (a ∖ b) ∪ (a ∩ b) = a on member paths.
        #[test]
        fn difference_and_intersection_partition(a in arb_set(), b in arb_set()) {
            let (mut a, mut b) = (a, b);
            a.member = false; b.member = false; a.prune(); b.prune();
            let mut u = a.difference(&b);
            u.union_with(&a.intersection(&b));
            u.prune();
            prop_assert_eq!(u.paths(), a.paths());
        }
    }
}
