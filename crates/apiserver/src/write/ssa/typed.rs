//! The value-level algorithms of server-side apply, driven by [`Ty`]: the field set a value
//! sets, the merge of an applied configuration into a live object, the leaves two objects
//! disagree on, and the removal of fields nobody owns any more.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::fieldpath::{Set, display_path, field_pe, key_pe, value_pe};
use super::schema::{ListKind, Ty};

/// How deep values may nest before they are refused (bodies are size-limited, but a deep value
/// must not exhaust the stack either).
const MAX_DEPTH: usize = 200;

/// An applied configuration that cannot be interpreted with its type: the message names the
/// field path, as kube-apiserver's `.spec.x: ...` errors do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeError(pub String);

/// Key elements of every item of an associative list, or why the list cannot be keyed
/// (an item that is not an object, a missing key field, a duplicate).
fn list_keys(items: &[Value], kind: &ListKind) -> Result<Vec<String>, String> {
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let pe = match kind {
            ListKind::Set => {
                if item.is_object() || item.is_array() {
                    return Err("a set may only hold scalar values".into());
                }
                value_pe(item)
            }
            ListKind::Map(keys) => {
                let Value::Object(m) = item else {
                    return Err("an associative list may only hold objects".into());
                };
                let mut fields = Vec::with_capacity(keys.len());
                for k in keys {
                    match m.get(k) {
                        Some(v) if !v.is_null() => fields.push((k.clone(), v.clone())),
                        // The only key field with a default in the built-in schemas.
                        _ if k == "protocol" => fields.push((k.clone(), Value::from("TCP"))),
                        _ => {
                            return Err(format!(
                                "associative list with keys has an element that omits key field {k:?} (and doesn't have default value)"
                            ));
                        }
                    }
                }
                key_pe(&fields)
            }
            ListKind::Atomic => return Err("atomic list".into()),
        };
        if !seen.insert(pe.clone()) {
            return Err(format!("duplicate entries for key {pe}"));
        }
        out.push(pe);
    }
    Ok(out)
}

/// One element of the path a walk is at, for error messages: a field borrows its name from the
/// value walked (no string is made for it unless an error is reported), a list item holds its
/// element as built for the field set.
enum PathEl<'a> {
    Field(&'a str),
    Elem(String),
}

fn path_string(path: &[PathEl<'_>]) -> String {
    let pes: Vec<String> = path
        .iter()
        .map(|e| match e {
            PathEl::Field(k) => field_pe(k),
            PathEl::Elem(pe) => pe.clone(),
        })
        .collect();
    let p = display_path(&pes);
    if p.is_empty() { ".".into() } else { p }
}

/// Which top-level fields of an object a computation looks at: a write to `/status` only
/// concerns `status`, a write to the main resource of a kind with a status subresource
/// everything but `status`; skipping the rest up front keeps status writes cheap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope<'s> {
    /// Every field.
    All,
    /// Only this top-level field.
    Only(&'s str),
    /// Every top-level field but this one.
    Except(&'s str),
}

impl Scope<'_> {
    fn admits(self, top: bool, key: &str) -> bool {
        match self {
            _ if !top => true,
            Scope::All => true,
            Scope::Only(k) => k == key,
            Scope::Except(k) => k != key,
        }
    }
}

/// The set of fields a value sets. `strict` makes malformed associative lists an error (an
/// applied configuration); otherwise they are owned atomically (objects written by updates,
/// which must never fail because of field tracking).
pub fn to_set(v: &Value, ty: &Ty<'_>, strict: bool) -> Result<Set, TypeError> {
    to_set_scoped(v, ty, strict, Scope::All)
}

/// [`to_set`] restricted to the top-level fields `scope` admits.
pub fn to_set_scoped(
    v: &Value,
    ty: &Ty<'_>,
    strict: bool,
    scope: Scope<'_>,
) -> Result<Set, TypeError> {
    let mut out = Set::new();
    let mut path = Vec::new();
    walk_set(v, ty, true, strict, scope, &mut out, &mut path, 0)?;
    out.member = false;
    Ok(out)
}

/// `path` (for error messages) is only kept in strict mode: a lenient walk reports nothing but
/// excessive depth, and skipping the copies keeps the per-write field tracking cheap.
// The walk's state is these few values; a struct would only rename them.
#[allow(clippy::too_many_arguments)]
fn walk_set<'v>(
    v: &'v Value,
    ty: &Ty<'_>,
    top: bool,
    strict: bool,
    scope: Scope<'_>,
    out: &mut Set,
    path: &mut Vec<PathEl<'v>>,
    depth: usize,
) -> Result<(), TypeError> {
    if depth > MAX_DEPTH {
        return Err(TypeError(format!(
            "{}: nested too deeply",
            path_string(path)
        )));
    }
    match v {
        Value::Object(m) if !ty.atomic_map() => {
            for (k, cv) in m {
                if !scope.admits(top, k) {
                    continue;
                }
                let child = ty.field(k, top);
                if strict {
                    path.push(PathEl::Field(k));
                }
                let node = out.child(field_pe(k));
                walk_set(
                    cv,
                    &child.ty,
                    false,
                    strict,
                    Scope::All,
                    node,
                    path,
                    depth + 1,
                )?;
                if strict {
                    path.pop();
                }
                let empty_map = cv.as_object().is_some_and(Map::is_empty);
                if cv.is_null() || empty_map || !child.declared {
                    node.member = true;
                }
            }
            // A field that owns nothing (an empty set or associative list, or a map of those)
            // leaves a void node; it is no ownership and would encode as a member leaf `{}`.
            out.children.retain(|_, c| !c.is_void());
        }
        Value::Array(items) if ty.list != ListKind::Atomic => match list_keys(items, &ty.list) {
            Ok(keys) => {
                let item_ty = ty.item();
                for (item, pe) in items.iter().zip(keys) {
                    if strict {
                        path.push(PathEl::Elem(pe.clone()));
                    }
                    let node = out.child(pe);
                    if matches!(ty.list, ListKind::Map(_)) {
                        walk_set(
                            item,
                            &item_ty,
                            false,
                            strict,
                            Scope::All,
                            node,
                            path,
                            depth + 1,
                        )?;
                    }
                    node.member = true;
                    if strict {
                        path.pop();
                    }
                }
            }
            Err(e) if strict => return Err(TypeError(format!("{}: {e}", path_string(path)))),
            Err(_) => out.member = true,
        },
        v if strict && ty.list != ListKind::Atomic && !v.is_null() => {
            return Err(TypeError(format!(
                "{}: expected list, got {}",
                path_string(path),
                match v {
                    Value::Object(_) => "map",
                    Value::String(_) => "string",
                    Value::Number(_) => "number",
                    _ => "boolean",
                }
            )));
        }
        _ => out.member = true,
    }
    Ok(())
}

/// What one write changes, in field-set terms, computed in one walk over both values:
/// `(changed, removed)` with `changed` = (`to_set(new)` ∖ `to_set(old)`) ∪ `modified(old, new)`
/// and `removed` = `to_set(old)` ∖ `to_set(new)`, lenient and restricted to `scope`, without
/// void nodes. Every write pays for this, and a typical write changes one leaf: building both
/// whole field sets only to diff them cost more than the rest of field tracking together, so
/// nodes (and their path-element strings) are only built where the two values differ.
/// `Err` when either value nests deeper than [`to_set`] accepts.
pub fn diff_scoped(
    old: &Value,
    new: &Value,
    ty: &Ty<'_>,
    scope: Scope<'_>,
) -> Result<(Set, Set), TypeError> {
    let (mut changed, mut removed) = diff_at(old, new, ty, true, scope, false, false, 0)?;
    changed.member = false;
    removed.member = false;
    Ok((changed, removed))
}

/// Whether a map field is owned itself whatever it holds: `null`, an empty map, or an entry of
/// a map that is not a declared field (see [`walk_set`]).
fn field_member(v: &Value, declared: bool) -> bool {
    v.is_null() || v.as_object().is_some_and(Map::is_empty) || !declared
}

/// The field set of a value present on one side only, as [`walk_set`] builds it, with `member`
/// the flag its parent imposes, and without void nodes.
fn one_side(v: &Value, ty: &Ty<'_>, member: bool, depth: usize) -> Result<Set, TypeError> {
    let mut node = Set::new();
    walk_set(
        v,
        ty,
        false,
        false,
        Scope::All,
        &mut node,
        &mut Vec::new(),
        depth,
    )?;
    node.member |= member;
    node.prune();
    Ok(node)
}

/// One position of [`diff_scoped`], present in both values; `old_member`/`new_member` are the
/// member flags the parent imposes on each side (`null`, empty map, undeclared field, list
/// item). Returns the `(changed, removed)` nodes of this position, possibly void.
// The walk's state is these few values; a struct would only rename them.
#[allow(clippy::too_many_arguments)]
fn diff_at(
    old: &Value,
    new: &Value,
    ty: &Ty<'_>,
    top: bool,
    scope: Scope<'_>,
    old_member: bool,
    new_member: bool,
    depth: usize,
) -> Result<(Set, Set), TypeError> {
    if depth > MAX_DEPTH {
        return Err(TypeError("nested too deeply".into()));
    }
    let mut changed = Set::new();
    let mut removed = Set::new();
    match (old, new) {
        // Both granular maps: children matched by field name; neither side is owned by itself.
        (Value::Object(a), Value::Object(b)) if !ty.atomic_map() => {
            for (k, bv) in b {
                if !scope.admits(top, k) {
                    continue;
                }
                let child = ty.field(k, top);
                let nm = field_member(bv, child.declared);
                let (c, r) = match a.get(k) {
                    Some(av) => {
                        let om = field_member(av, child.declared);
                        diff_at(av, bv, &child.ty, false, Scope::All, om, nm, depth + 1)?
                    }
                    None => (one_side(bv, &child.ty, nm, depth + 1)?, Set::new()),
                };
                if !c.is_void() {
                    changed.children.insert(field_pe(k), c);
                }
                if !r.is_void() {
                    removed.children.insert(field_pe(k), r);
                }
            }
            for (k, av) in a {
                if !scope.admits(top, k) || b.contains_key(k) {
                    continue;
                }
                let child = ty.field(k, top);
                let r = one_side(av, &child.ty, field_member(av, child.declared), depth + 1)?;
                if !r.is_void() {
                    removed.children.insert(field_pe(k), r);
                }
            }
            changed.member = new_member && !old_member;
            removed.member = old_member && !new_member;
            return Ok((changed, removed));
        }
        // Both keyable lists: items matched by key; items are always owned themselves.
        (Value::Array(a), Value::Array(b)) if ty.list != ListKind::Atomic => {
            if let (Ok(ak), Ok(bk)) = (list_keys(a, &ty.list), list_keys(b, &ty.list)) {
                let by_key: HashMap<&str, usize> = ak
                    .iter()
                    .enumerate()
                    .map(|(i, k)| (k.as_str(), i))
                    .collect();
                let mut matched = vec![false; a.len()];
                let granular = matches!(ty.list, ListKind::Map(_));
                let item_ty = ty.item();
                // An item on one side only: its whole field set, or just itself for a set item.
                let only = |v: &Value| -> Result<Set, TypeError> {
                    if granular {
                        one_side(v, &item_ty, true, depth + 1)
                    } else {
                        Ok(Set {
                            member: true,
                            ..Set::new()
                        })
                    }
                };
                for (bv, k) in b.iter().zip(bk) {
                    match by_key.get(k.as_str()) {
                        Some(&i) => {
                            if let Some(m) = matched.get_mut(i) {
                                *m = true;
                            }
                            // A set item is a leaf owned on both sides: nothing to record.
                            if !granular {
                                continue;
                            }
                            let av = a.get(i).unwrap_or(&Value::Null);
                            let (c, r) = diff_at(
                                av,
                                bv,
                                &item_ty,
                                false,
                                Scope::All,
                                true,
                                true,
                                depth + 1,
                            )?;
                            if !r.is_void() {
                                removed.children.insert(k.clone(), r);
                            }
                            if !c.is_void() {
                                changed.children.insert(k, c);
                            }
                        }
                        None => {
                            changed.children.insert(k, only(bv)?);
                        }
                    }
                }
                for ((av, k), m) in a.iter().zip(ak).zip(matched) {
                    if m {
                        continue;
                    }
                    removed.children.insert(k, only(av)?);
                }
                changed.member = new_member && !old_member;
                removed.member = old_member && !new_member;
                return Ok((changed, removed));
            }
        }
        _ => {}
    }
    // Any other pair (leaves, atomic values, lists that cannot be keyed, a type change): the
    // position differs as a whole when the values do, and the children of the two sides (if
    // any) cannot overlap, so each side's own field set is the diff below this position.
    // Equal values of these shapes have no children: nothing can differ and nothing nests.
    if old == new {
        return Ok((changed, removed));
    }
    let mut path = Vec::new();
    walk_set(old, ty, top, false, scope, &mut removed, &mut path, depth)?;
    walk_set(new, ty, top, false, scope, &mut changed, &mut path, depth)?;
    let om = old_member || removed.member;
    let nm = new_member || changed.member;
    changed.member = true;
    removed.member = om && !nm;
    changed.prune();
    removed.prune();
    Ok((changed, removed))
}

/// Merges an applied configuration into a live value: maps field by field, associative lists and
/// sets item by item (live order kept, new items appended), everything else replaced. A `null`
/// in the configuration removes the field.
pub fn merge(live: &Value, config: &Value, ty: &Ty<'_>) -> Result<Value, TypeError> {
    let mut path = Vec::new();
    merge_at(live, config, ty, true, &mut path)
}

fn merge_at<'c>(
    live: &Value,
    config: &'c Value,
    ty: &Ty<'_>,
    top: bool,
    path: &mut Vec<PathEl<'c>>,
) -> Result<Value, TypeError> {
    if path.len() > MAX_DEPTH {
        return Err(TypeError(format!(
            "{}: nested too deeply",
            path_string(path)
        )));
    }
    match (live, config) {
        (Value::Object(l), Value::Object(c)) if !ty.atomic_map() => {
            // The live fields the configuration names are replaced or removed below: they get a
            // placeholder instead of a deep copy (same key order as cloning `l`).
            let mut out: Map<String, Value> = l
                .iter()
                .map(|(k, v)| {
                    let v = if c.contains_key(k) {
                        Value::Null
                    } else {
                        v.clone()
                    };
                    (k.clone(), v)
                })
                .collect();
            for (k, cv) in c {
                if cv.is_null() {
                    out.remove(k);
                    continue;
                }
                let child = ty.field(k, top);
                let merged = match l.get(k) {
                    Some(lv) => {
                        path.push(PathEl::Field(k));
                        let r = merge_at(lv, cv, &child.ty, false, path)?;
                        path.pop();
                        r
                    }
                    None => strip_nulls(cv),
                };
                out.insert(k.clone(), merged);
            }
            Ok(Value::Object(out))
        }
        (Value::Array(l), Value::Array(c)) if ty.list != ListKind::Atomic => {
            let ckeys = list_keys(c, &ty.list)
                .map_err(|e| TypeError(format!("{}: {e}", path_string(path))))?;
            // A live list that cannot be keyed (written before by a client that ignored the
            // schema) is replaced, as an atomic list would be.
            let Ok(lkeys) = list_keys(l, &ty.list) else {
                return Ok(strip_nulls(config));
            };
            let by_key: HashMap<&str, usize> = ckeys
                .iter()
                .enumerate()
                .map(|(i, k)| (k.as_str(), i))
                .collect();
            let item_ty = ty.item();
            let mut used = vec![false; c.len()];
            let mut out = Vec::with_capacity(l.len() + c.len());
            for (li, lk) in l.iter().zip(&lkeys) {
                match by_key.get(lk.as_str()) {
                    Some(&ci) => {
                        if let Some(u) = used.get_mut(ci) {
                            *u = true;
                        }
                        let cv = c.get(ci).unwrap_or(&Value::Null);
                        path.push(PathEl::Elem(lk.clone()));
                        let m = merge_at(li, cv, &item_ty, false, path)?;
                        path.pop();
                        out.push(m);
                    }
                    None => out.push(li.clone()),
                }
            }
            for (ci, cv) in c.iter().enumerate() {
                if !used.get(ci).copied().unwrap_or(true) {
                    out.push(strip_nulls(cv));
                }
            }
            Ok(Value::Array(out))
        }
        (_, Value::Array(c)) if ty.list != ListKind::Atomic => {
            list_keys(c, &ty.list).map_err(|e| TypeError(format!("{}: {e}", path_string(path))))?;
            Ok(strip_nulls(config))
        }
        _ => Ok(strip_nulls(config)),
    }
}

/// A configuration value without its `null` fields (they mean "absent").
fn strip_nulls(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, x)| !x.is_null())
                .map(|(k, x)| (k.clone(), strip_nulls(x)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip_nulls).collect()),
        other => other.clone(),
    }
}

/// The leaves present in both values whose contents differ (`Modified` of a comparison; added
/// and removed fields are set differences of [`to_set`]).
pub fn modified(old: &Value, new: &Value, ty: &Ty<'_>) -> Set {
    modified_scoped(old, new, ty, Scope::All)
}

/// [`modified`] restricted to the top-level fields `scope` admits.
pub fn modified_scoped(old: &Value, new: &Value, ty: &Ty<'_>, scope: Scope<'_>) -> Set {
    let mut out = Set::new();
    modified_at(old, new, ty, true, scope, &mut out, 0);
    out.member = false;
    out
}

fn modified_at(
    old: &Value,
    new: &Value,
    ty: &Ty<'_>,
    top: bool,
    scope: Scope<'_>,
    out: &mut Set,
    depth: usize,
) {
    if depth > MAX_DEPTH {
        return;
    }
    match (old, new) {
        (Value::Object(a), Value::Object(b)) if !ty.atomic_map() => {
            for (k, bv) in b {
                if !scope.admits(top, k) {
                    continue;
                }
                if let Some(av) = a.get(k) {
                    let child = ty.field(k, top);
                    let node = out.child(field_pe(k));
                    modified_at(av, bv, &child.ty, false, Scope::All, node, depth + 1);
                }
            }
            out.prune();
        }
        (Value::Array(a), Value::Array(b)) if ty.list != ListKind::Atomic => {
            match (list_keys(a, &ty.list), list_keys(b, &ty.list)) {
                (Ok(ak), Ok(bk)) => {
                    if matches!(ty.list, ListKind::Map(_)) {
                        let olds: HashMap<&str, &Value> =
                            ak.iter().map(String::as_str).zip(a.iter()).collect();
                        let item_ty = ty.item();
                        for (bv, k) in b.iter().zip(&bk) {
                            if let Some(av) = olds.get(k.as_str()) {
                                let node = out.child(k.clone());
                                modified_at(av, bv, &item_ty, false, Scope::All, node, depth + 1);
                            }
                        }
                        out.prune();
                    }
                }
                _ => {
                    if old != new {
                        out.member = true;
                    }
                }
            }
        }
        _ => {
            if old != new {
                out.member = true;
            }
        }
    }
}

/// Removes from `v` every member path of `remove`; a map or list emptied by that and in which
/// `keep` owns nothing is removed as well, so a dropped field leaves no empty parent behind.
pub fn remove_paths(v: &mut Value, remove: &Set, keep: &Set, ty: &Ty<'_>) {
    remove_at(v, remove, Some(keep), ty, true, 0);
}

fn emptied(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

fn remove_at(
    v: &mut Value,
    remove: &Set,
    keep: Option<&Set>,
    ty: &Ty<'_>,
    top: bool,
    depth: usize,
) {
    if depth > MAX_DEPTH {
        return;
    }
    match v {
        Value::Object(m) => {
            for (pe, r) in &remove.children {
                let Some(name) = pe.strip_prefix("f:") else {
                    continue;
                };
                if r.member {
                    m.remove(name);
                    continue;
                }
                let child_keep = keep.and_then(|k| k.get(pe));
                let drop = match m.get_mut(name) {
                    Some(cv) => {
                        let was_empty = emptied(cv);
                        let child = ty.field(name, top);
                        remove_at(cv, r, child_keep, &child.ty, false, depth + 1);
                        !was_empty && emptied(cv) && child_keep.is_none()
                    }
                    None => false,
                };
                if drop {
                    m.remove(name);
                }
            }
        }
        Value::Array(items) => {
            let Ok(keys) = list_keys(items, &ty.list) else {
                return;
            };
            let item_ty = ty.item();
            let mut out = Vec::with_capacity(items.len());
            for (mut item, k) in std::mem::take(items).into_iter().zip(keys) {
                match remove.get(&k) {
                    Some(r) if r.member => {}
                    Some(r) => {
                        let child_keep = keep.and_then(|x| x.get(&k));
                        remove_at(&mut item, r, child_keep, &item_ty, false, depth + 1);
                        out.push(item);
                    }
                    None => out.push(item),
                }
            }
            *items = out;
        }
        _ => {}
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::storage::registry::ResourceInfo;
    use proptest::prelude::*;
    use serde_json::json;

    fn deployment() -> ResourceInfo {
        crate::storage::builtin::builtin_resources()
            .into_iter()
            .find(|r| r.kind == "Deployment")
            .expect("built in")
    }

    fn deploy(containers: Value) -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "labels": {"app": "x"}},
            "spec": {"replicas": 1, "template": {"spec": {"containers": containers}}}
        })
    }

    #[test]
    fn field_set_of_a_deployment() {
        let info = deployment();
        let ty = Ty::root(&info);
        let v = deploy(json!([{"name": "a", "image": "i", "args": ["x"],
            "ports": [{"containerPort": 80}]}]));
        let s = to_set(&v, &ty, true).expect("typed");
        let fv = s.to_fields_v1();
        let c = &fv["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"a\"}"];
        assert_eq!(c["."], json!({}));
        assert_eq!(c["f:args"], json!({}));
        assert_eq!(
            c["f:ports"]["k:{\"containerPort\":80,\"protocol\":\"TCP\"}"],
            json!({".": {}, "f:containerPort": {}})
        );
        assert_eq!(fv["f:metadata"]["f:labels"]["f:app"], json!({}));
    }

    /// An empty set-like list owns nothing: no void node is left in the field set (found by
    /// `removing_everything_owned_empties`; a void node would encode as a member leaf).
    #[test]
    fn empty_lists_leave_no_void_nodes() {
        let info = deployment();
        let ty = Ty::root(&info);
        let v = json!({"metadata": {"finalizers": []}});
        let s = to_set(&v, &ty, false).expect("lenient");
        assert!(s.is_empty(), "{:?}", s.to_fields_v1());
        let v = json!({"metadata": {"finalizers": [], "name": "x"}});
        let s = to_set(&v, &ty, false).expect("lenient");
        assert_eq!(s.to_fields_v1(), json!({"f:metadata": {"f:name": {}}}));
    }

    #[test]
    fn malformed_associative_lists_are_refused_when_strict() {
        let info = deployment();
        let ty = Ty::root(&info);
        for bad in [
            json!(["not an object"]),
            json!([{"image": "no name"}]),
            json!([{"name": "a"}, {"name": "a"}]),
        ] {
            let err = to_set(&deploy(bad.clone()), &ty, true).expect_err("strict");
            assert!(
                err.0.starts_with(".spec.template.spec.containers: "),
                "{err:?}"
            );
            // Lenient: owned atomically instead.
            let s = to_set(&deploy(bad), &ty, false).expect("lenient");
            assert!(s.has(&["f:spec", "f:template", "f:spec", "f:containers"]));
        }
    }

    #[test]
    fn merge_is_per_key_for_associative_lists_and_atomic_otherwise() {
        let info = deployment();
        let ty = Ty::root(&info);
        let live = deploy(json!([{"name": "a", "image": "1", "args": ["x", "y"]},
            {"name": "b", "image": "2"}]));
        let cfg = deploy(json!([{"name": "c", "image": "3"},
            {"name": "a", "image": "9", "args": ["z"]}]));
        let m = merge(&live, &cfg, &ty).expect("merge");
        assert_eq!(
            m["spec"]["template"]["spec"]["containers"],
            json!([{"name": "a", "image": "9", "args": ["z"]}, {"name": "b", "image": "2"},
                {"name": "c", "image": "3"}])
        );
        let md = modified(&live, &m, &ty);
        let paths: Vec<String> = md.paths().iter().map(|p| display_path(p)).collect();
        assert_eq!(
            paths,
            vec![
                ".spec.template.spec.containers[name=\"a\"].args",
                ".spec.template.spec.containers[name=\"a\"].image"
            ]
        );
    }

    #[test]
    fn removal_drops_emptied_parents_nobody_owns() {
        let info = deployment();
        let ty = Ty::root(&info);
        let mut v =
            deploy(json!([{"name": "a", "image": "1", "env": [{"name": "E", "value": "v"}]}]));
        let mut rm = Set::new();
        let a = key_pe(&[("name".into(), json!("a"))]);
        let e = key_pe(&[("name".into(), json!("E"))]);
        rm.insert(&[
            "f:spec",
            "f:template",
            "f:spec",
            "f:containers",
            &a,
            "f:env",
            &e,
        ]);
        rm.insert(&["f:metadata", "f:labels", "f:app"]);
        let mut keep = Set::new();
        keep.insert(&[
            "f:spec",
            "f:template",
            "f:spec",
            "f:containers",
            &a,
            "f:image",
        ]);
        remove_paths(&mut v, &rm, &keep, &ty);
        assert_eq!(
            v["spec"]["template"]["spec"]["containers"],
            json!([{"name": "a", "image": "1"}])
        );
        assert!(v["metadata"].get("labels").is_none(), "{v}");
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        arb_json_with(&[
            "name",
            "containers",
            "spec",
            "template",
            "metadata",
            "finalizers",
        ])
    }

    /// Arbitrary JSON whose object keys are mostly from `keys` (so that values hit typed
    /// fields), otherwise short random names.
    pub(in crate::write::ssa) fn arb_json_with(
        keys: &'static [&'static str],
    ) -> impl Strategy<Value = Value> {
        let key = prop_oneof![
            keys.len().max(1) as u32 => proptest::sample::select(keys).prop_map(str::to_string),
            1 => "[a-z]{1,3}",
        ];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            "[a-z]{0,3}".prop_map(Value::from),
        ];
        leaf.prop_recursive(5, 48, 4, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map(key.clone(), inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// No input panics; a merged result always holds what the configuration sets, and the
        /// configuration's own fields are a subset of the result's.
        #[test]
        fn merge_contains_the_configuration(live in arb_json(), cfg in arb_json()) {
            let info = deployment();
            let ty = Ty::root(&info);
            let _ = to_set(&live, &ty, false);
            if let (Ok(cs), Ok(m)) = (to_set(&cfg, &ty, true), merge(&live, &cfg, &ty)) {
                let ms = to_set(&m, &ty, false).expect("lenient never fails");
                // Only `null` fields are owned but absent.
                let absent_ok = cs
                    .difference(&ms)
                    .paths()
                    .iter()
                    .all(|p| p.last().is_some_and(|l| l.starts_with("f:")));
                prop_assert!(absent_ok);
                // Merging the configuration again changes nothing.
                let again = merge(&m, &cfg, &ty).expect("merges once, merges twice");
                prop_assert_eq!(again, m);
            }
        }

        /// Removing a value's own field set leaves nothing owned behind.
        #[test]
        fn removing_everything_owned_empties(v in arb_json()) {
            let info = deployment();
            let ty = Ty::root(&info);
            let s = to_set(&v, &ty, false).expect("lenient");
            let mut w = v.clone();
            remove_paths(&mut w, &s, &Set::new(), &ty);
            let left = to_set(&w, &ty, false).expect("lenient");
            prop_assert!(left.is_empty() || !v.is_object(), "left {:?} of {}", left.paths(), v);
        }
    }
}
