//! Strategic merge patch: Kubernetes' patch format that merges lists of objects by a merge key.
//!
//! Behaviour follows `k8s.io/apimachinery/pkg/util/strategicpatch` (what kube-apiserver applies for
//! `application/strategic-merge-patch+json` and what kubectl computes for `kubectl apply`):
//! maps merge recursively and `null` deletes; lists whose field carries `patchStrategy: merge` merge by
//! their `patchMergeKey` (primitive lists become a union); other lists are replaced; the directives
//! `$patch: replace|delete|merge`, `$setElementOrder/<field>`, `$deleteFromPrimitiveList/<field>` and
//! `$retainKeys` are honoured; merged lists are ordered like kube-apiserver orders them.
//!
//! One deliberate refinement: when several live items share a merge key value (e.g. port 53 over TCP and
//! UDP, kubernetes/kubernetes#108255), items are told apart by the field's `x-kubernetes-list-map-keys`
//! instead of merging into the first one. With unique merge key values the result equals upstream's.

use serde_json::{Map, Value};

use crate::PatchError;
use crate::table::{KINDS, NO_TYPE, Shape, TYPES};
use crate::value::{Path, Positions, ident_key, json_eq, kind_name, same_kind, sort_string};
use std::collections::{HashMap, HashSet};

const PATCH: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const SET_ORDER_PREFIX: &str = "$setElementOrder/";
const DELETE_PRIMITIVE_PREFIX: &str = "$deleteFromPrimitiveList/";

/// Patch metadata for one type (a handle into the generated table); copying it is free, so callers pass
/// it by value down the recursion.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Schema {
    node: Node,
    /// kustomize (kyaml) list ordering and `$patch: delete` semantics, see [`apply_kustomize`].
    kustomize: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Node {
    /// No metadata: lists are replaced, maps merged (custom resources, unknown fields).
    Untyped,
    /// A type of the generated table.
    Struct(u16),
    /// A map whose every value is of the given type.
    MapOf(u16),
}

impl std::fmt::Debug for Schema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.node {
            Node::Untyped => write!(f, "Schema(untyped)"),
            Node::Struct(i) => write!(f, "Schema({})", type_name(i)),
            Node::MapOf(i) => write!(f, "Schema(map of {})", type_name(i)),
        }
    }
}

fn type_name(i: u16) -> &'static str {
    TYPES.get(usize::from(i)).map_or("?", |t| t.name)
}

impl Schema {
    /// A schema without metadata, for custom resources: lists are replaced, maps merged, and `$patch`
    /// directives still honoured (what kustomize does for strategic patches on CRs).
    pub const fn none() -> Schema {
        Schema {
            node: Node::Untyped,
            kustomize: false,
        }
    }

    /// Whether this schema carries Kubernetes metadata (false for [`Schema::none`]).
    pub fn is_typed(&self) -> bool {
        !matches!(self.node, Node::Untyped)
    }

    /// The OpenAPI definition name behind this schema (e.g. `io.k8s.api.apps.v1.Deployment`), for
    /// diagnostics.
    pub fn type_name(&self) -> Option<&'static str> {
        match self.node {
            Node::Untyped => None,
            Node::Struct(i) | Node::MapOf(i) => Some(type_name(i)),
        }
    }

    /// How field `name` of this type is merged: its sub-schema, whether its patch strategy is `merge`,
    /// its merge key and `x-kubernetes-list-map-keys`. Server-side apply derives list semantics
    /// (associative, set, atomic) from exactly this metadata, so it is exposed read-only.
    pub fn field_info(self, name: &str) -> FieldInfo {
        let f = self.field_meta(name);
        FieldInfo {
            schema: f.sub,
            merge: f.merge,
            merge_key: f.merge_key,
            list_map_keys: f.map_keys,
        }
    }

    fn of(idx: u16) -> Schema {
        if idx == NO_TYPE || usize::from(idx) >= TYPES.len() {
            Schema::none()
        } else {
            Schema {
                node: Node::Struct(idx),
                kustomize: false,
            }
        }
    }

    /// Metadata of field `name` of this type (sub-schemas inherit the flavour).
    fn field(self, name: &str) -> Field {
        let mut f = self.field_meta(name);
        f.sub.kustomize = self.kustomize;
        f
    }

    fn field_meta(self, name: &str) -> Field {
        match self.node {
            Node::Untyped => Field::UNTYPED,
            Node::MapOf(i) => Field {
                sub: Schema::of(i),
                ..Field::UNTYPED
            },
            Node::Struct(i) => {
                let Some(t) = TYPES.get(usize::from(i)) else {
                    return Field::UNTYPED;
                };
                let Ok(pos) = t.fields.binary_search_by(|f| f.name.cmp(name)) else {
                    return Field::UNTYPED;
                };
                let Some(fd) = t.fields.get(pos) else {
                    return Field::UNTYPED;
                };
                let sub = match fd.shape {
                    Shape::Object | Shape::List => Schema::of(fd.elem),
                    Shape::Map if fd.elem != NO_TYPE => Schema {
                        node: Node::MapOf(fd.elem),
                        kustomize: false,
                    },
                    Shape::Map | Shape::Scalar => Schema::none(),
                };
                Field {
                    sub,
                    merge: fd.merge,
                    retain_keys: fd.retain_keys,
                    replace: fd.replace,
                    merge_key: fd.merge_key,
                    map_keys: fd.list_map_keys,
                }
            }
        }
    }
}

/// Patch metadata of a built-in kind, e.g. `("apps/v1", "Deployment")`; `None` when Kubernetes has no
/// strategic-merge metadata for it (custom resources), in which case callers use [`Schema::none`] or a
/// JSON merge patch.
pub fn schema_for(api_version: &str, kind: &str) -> Option<Schema> {
    KINDS
        .binary_search_by(|(v, k, _)| (*v, *k).cmp(&(api_version, kind)))
        .ok()
        .and_then(|i| KINDS.get(i))
        .map(|(_, _, t)| Schema::of(*t))
}

/// Public view of one field's merge metadata (see [`Schema::field_info`]).
#[derive(Clone, Copy, Debug)]
pub struct FieldInfo {
    /// Schema of the field's value (of its items, for lists).
    pub schema: Schema,
    /// `x-kubernetes-patch-strategy` contains `merge`.
    pub merge: bool,
    /// `x-kubernetes-patch-merge-key` (`""` when none).
    pub merge_key: &'static str,
    /// `x-kubernetes-list-map-keys` (empty when none).
    pub list_map_keys: &'static [&'static str],
}

/// Metadata of one field as the algorithms need it.
#[derive(Clone, Copy)]
struct Field {
    sub: Schema,
    merge: bool,
    retain_keys: bool,
    replace: bool,
    merge_key: &'static str,
    map_keys: &'static [&'static str],
}

impl Field {
    const UNTYPED: Field = Field {
        sub: Schema::none(),
        merge: false,
        retain_keys: false,
        replace: false,
        merge_key: "",
        map_keys: &[],
    };
}

fn invalid(path: &Path<'_>, reason: impl Into<String>) -> PatchError {
    PatchError::Invalid {
        path: path.to_string(),
        reason: reason.into(),
    }
}

fn object_or_empty<'v>(
    v: &'v Value,
    what: &str,
) -> Result<std::borrow::Cow<'v, Map<String, Value>>, PatchError> {
    match v {
        Value::Object(m) => Ok(std::borrow::Cow::Borrowed(m)),
        Value::Null => Ok(std::borrow::Cow::Owned(Map::new())),
        other => Err(invalid(
            &Path::root(),
            format!(
                "the {what} must be a JSON object, got a {}",
                kind_name(other)
            ),
        )),
    }
}

// ---------------------------------------------------------------------------------------------------
// apply
// ---------------------------------------------------------------------------------------------------

/// Applies a strategic merge patch (with all directives) to `original`, as kube-apiserver does for a
/// PATCH with `application/strategic-merge-patch+json`.
pub fn apply(original: &Value, patch: &Value, schema: Schema) -> Result<Value, PatchError> {
    if !patch.is_object() {
        return apply_owned(Value::Null, patch, schema);
    }
    let original = object_or_empty(original, "original object")?.into_owned();
    apply_owned(Value::Object(original), patch, schema)
}

/// Like [`apply`] but consumes `original`, saving a deep copy when the caller no longer needs it (the API
/// server's PATCH path owns the object it read from storage).
pub fn apply_owned(original: Value, patch: &Value, schema: Schema) -> Result<Value, PatchError> {
    let Value::Object(patch) = patch else {
        return Err(invalid(
            &Path::root(),
            format!(
                "a strategic merge patch must be a JSON object, got a {}",
                kind_name(patch)
            ),
        ));
    };
    let original = match original {
        Value::Object(m) => m,
        Value::Null => Map::new(),
        other => {
            return Err(invalid(
                &Path::root(),
                format!(
                    "the original object must be a JSON object, got a {}",
                    kind_name(&other)
                ),
            ));
        }
    };
    merge_map(original, patch, schema, &Path::root()).map(Value::Object)
}

/// Applies a strategic merge patch without type metadata (custom resources): lists are replaced, maps
/// merged and `$patch` directives honoured. Same as `apply(original, patch, Schema::none())`.
pub fn apply_untyped(original: &Value, patch: &Value) -> Result<Value, PatchError> {
    apply(original, patch, Schema::none())
}

/// Applies a strategic merge patch the way `kustomize build` (v4, kyaml) applies `patchesStrategicMerge`
/// and `patches`: same merge keys and directives, but a merged list puts the patch's items first (in
/// patch order) followed by the original's other items, and `$patch: delete` on a map removes the field
/// instead of emptying it. kube-apiserver semantics are [`apply`]'s; use this one only for kustomize
/// parity.
pub fn apply_kustomize(
    original: &Value,
    patch: &Value,
    schema: Schema,
) -> Result<Value, PatchError> {
    apply(
        original,
        patch,
        Schema {
            kustomize: true,
            ..schema
        },
    )
}

fn merge_map(
    mut orig: Map<String, Value>,
    patch: &Map<String, Value>,
    schema: Schema,
    path: &Path<'_>,
) -> Result<Map<String, Value>, PatchError> {
    path.check_depth()?;
    if let Some(d) = patch.get(PATCH) {
        match d.as_str() {
            Some("replace") => {
                let mut rest = patch.clone();
                rest.shift_remove(PATCH);
                return merge_map(Map::new(), &rest, schema, path);
            }
            Some("delete") => return Ok(Map::new()),
            Some("merge") => {}
            _ => {
                return Err(PatchError::UnknownDirective {
                    path: path.to_string(),
                    value: d.to_string(),
                });
            }
        }
    }

    if let Some(rk) = patch.get(RETAIN_KEYS) {
        apply_retain_keys(&mut orig, patch, rk, path)?;
    }

    // $setElementOrder lists are processed first, together with the list they order.
    let mut ordered: Vec<&str> = Vec::new();
    for (k, order) in patch {
        let Some(name) = k.strip_prefix(SET_ORDER_PREFIX) else {
            continue;
        };
        let dpath = path.key(k);
        let Value::Array(order) = order else {
            return Err(PatchError::ElementOrder {
                path: dpath.to_string(),
                reason: format!("must be a list, got a {}", kind_name(order)),
            });
        };
        let f = schema.field(name);
        let patch_list: &[Value] = match patch.get(name) {
            None => &[],
            Some(Value::Array(a)) => a,
            // A null or non-list value replaces the field; the order directive has nothing to order.
            Some(_) => continue,
        };
        if !f.merge {
            continue;
        }
        let fpath = path.key(name);
        validate_order(patch_list, order, f, &fpath, &dpath)?;
        let current = match orig.get_mut(name) {
            Some(Value::Array(a)) => std::mem::take(a),
            _ => Vec::new(),
        };
        if current.is_empty() && patch_list.is_empty() {
            ordered.push(name);
            continue;
        }
        let merged = merge_list(current, patch_list, f, &fpath, Some(order))?;
        orig.insert(name.to_string(), Value::Array(merged));
        ordered.push(name);
    }

    let mut deletes: Vec<(&str, &String, &Value)> = Vec::new();
    for (k, pv) in patch {
        if k == PATCH || k == RETAIN_KEYS || k.starts_with(SET_ORDER_PREFIX) {
            continue;
        }
        if let Some(name) = k.strip_prefix(DELETE_PRIMITIVE_PREFIX) {
            deletes.push((name, k, pv));
            continue;
        }
        if ordered.contains(&k.as_str()) {
            continue;
        }
        let kpath = path.key(k);
        if pv.is_null()
            || (schema.kustomize && pv.get(PATCH).and_then(Value::as_str) == Some("delete"))
        {
            orig.shift_remove(k);
            continue;
        }
        let f = schema.field(k);
        let new = match orig.get_mut(k) {
            Some(ov) if same_kind(ov, pv) => match (ov, pv) {
                (Value::Object(om), Value::Object(pm)) => {
                    if f.replace {
                        clean(pv, f, &kpath)?
                    } else {
                        Value::Object(merge_map(std::mem::take(om), pm, f.sub, &kpath)?)
                    }
                }
                (Value::Array(oa), Value::Array(pa)) => {
                    if f.merge {
                        Value::Array(merge_list(std::mem::take(oa), pa, f, &kpath, None)?)
                    } else {
                        clean(pv, f, &kpath)?
                    }
                }
                _ => pv.clone(),
            },
            _ => clean(pv, f, &kpath)?,
        };
        orig.insert(k.clone(), new);
    }

    for (name, key, pv) in deletes {
        let Value::Array(remove) = pv else {
            return Err(invalid(
                &path.key(key),
                format!("must be a list, got a {}", kind_name(pv)),
            ));
        };
        if let Some(Value::Array(items)) = orig.get_mut(name) {
            let remove: HashSet<String> = remove.iter().map(ident_key).collect();
            items.retain(|x| !remove.contains(&ident_key(x)));
        }
    }
    Ok(orig)
}

/// `$retainKeys`: drops every original field not listed, after checking the patch sets only listed fields.
fn apply_retain_keys(
    orig: &mut Map<String, Value>,
    patch: &Map<String, Value>,
    rk: &Value,
    path: &Path<'_>,
) -> Result<(), PatchError> {
    let err = |reason: String| PatchError::RetainKeys {
        path: path.key(RETAIN_KEYS).to_string(),
        reason,
    };
    let Value::Array(list) = rk else {
        return Err(err(format!(
            "must be a list of field names, got a {}",
            kind_name(rk)
        )));
    };
    let mut keep: Vec<&str> = Vec::with_capacity(list.len());
    for v in list {
        match v.as_str() {
            Some(s) => keep.push(s),
            None => {
                return Err(err(format!(
                    "must be a list of field names, found {}",
                    kind_name(v)
                )));
            }
        }
    }
    for (k, v) in patch {
        if v.is_null() || k.starts_with('$') {
            continue;
        }
        if !keep.contains(&k.as_str()) {
            return Err(err(format!(
                "the patch sets field {k:?}, which is not in the list"
            )));
        }
    }
    orig.retain(|k, _| keep.contains(&k.as_str()));
    Ok(())
}

/// Checks that the patch list's items appear in `$setElementOrder` in the same relative order.
fn validate_order(
    patch_list: &[Value],
    order: &[Value],
    f: Field,
    fpath: &Path<'_>,
    dpath: &Path<'_>,
) -> Result<(), PatchError> {
    let key = (!f.merge_key.is_empty()).then_some(f.merge_key);
    if let Some(key) = key {
        for (i, o) in order.iter().enumerate() {
            if o.get(key).is_none() {
                return Err(PatchError::MissingMergeKey {
                    path: dpath.index(i).to_string(),
                    key: key.to_string(),
                });
            }
        }
    }
    let order_pos = Positions::build(order.iter().map(|o| ident_of(o, key)));
    let mut last: Option<usize> = None;
    for (i, item) in patch_list.iter().enumerate() {
        if item.get(PATCH).is_some() {
            continue;
        }
        let Some(pos) = ident_of(item, key).and_then(|id| order_pos.first(id)) else {
            return Err(PatchError::ElementOrder {
                path: dpath.to_string(),
                reason: format!(
                    "item {} of {fpath} is missing from the order list",
                    ident_of(item, key).map_or_else(|| "?".to_string(), |v| v.to_string())
                ),
            });
        };
        if last.is_some_and(|l| pos < l) {
            return Err(PatchError::ElementOrder {
                path: dpath.to_string(),
                reason: format!("item {i} of {fpath} is out of the order the list gives"),
            });
        }
        last = Some(pos);
    }
    Ok(())
}

/// Cleans a value the patch introduces wholesale: nulls vanish and nested directives are processed, as if
/// merged into an empty value.
fn clean(v: &Value, f: Field, path: &Path<'_>) -> Result<Value, PatchError> {
    path.check_depth()?;
    match v {
        Value::Object(m) => Ok(Value::Object(merge_map(Map::new(), m, f.sub, path)?)),
        Value::Array(a) if f.merge => {
            // A list new to the original is taken as sent (upstream does the same): items are not
            // merged with each other, only directive elements are dropped.
            let mut out = Vec::with_capacity(a.len());
            for (i, item) in a.iter().enumerate() {
                match item {
                    Value::Object(m) => match m.get(PATCH).and_then(Value::as_str) {
                        Some("delete") | Some("replace") => {}
                        _ => out.push(Value::Object(merge_map(
                            Map::new(),
                            m,
                            f.sub,
                            &path.index(i),
                        )?)),
                    },
                    other => out.push(other.clone()),
                }
            }
            Ok(Value::Array(out))
        }
        Value::Array(a) => a
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::Object(m) => {
                    merge_map(Map::new(), m, f.sub, &path.index(i)).map(Value::Object)
                }
                other => Ok(other.clone()),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        other => Ok(other.clone()),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ElemKind {
    Scalar,
    Map,
}

/// The kind of a list's elements; strategic merge needs every element of both lists to agree.
fn element_kind(a: &[Value], b: &[Value], path: &Path<'_>) -> Result<ElemKind, PatchError> {
    let mut kind: Option<ElemKind> = None;
    for v in a.iter().chain(b) {
        let k = match v {
            Value::Object(_) => ElemKind::Map,
            Value::Array(_) => return Err(invalid(path, "lists of lists cannot be merged")),
            _ => ElemKind::Scalar,
        };
        match kind {
            None => kind = Some(k),
            Some(prev) if prev != k => {
                return Err(invalid(
                    path,
                    "list mixes objects and plain values, so it cannot be merged",
                ));
            }
            Some(_) => {}
        }
    }
    Ok(kind.unwrap_or(ElemKind::Scalar))
}

fn ident_of<'v>(v: &'v Value, key: Option<&str>) -> Option<&'v Value> {
    match key {
        None => Some(v),
        Some(k) => v.get(k),
    }
}

/// Whether `candidate` conflicts with `item` on any of the list-map keys besides the merge key (both set,
/// different values).
fn conflicts_on_map_keys(candidate: &Value, item: &Map<String, Value>, f: Field) -> bool {
    f.map_keys.iter().filter(|k| **k != f.merge_key).any(|k| {
        match (candidate.get(*k), item.get(*k)) {
            (Some(a), Some(b)) => !json_eq(a, b),
            _ => false,
        }
    })
}

/// Whether `candidate` carries exactly `item`'s values (present or absent alike) for the list-map keys
/// besides the merge key.
fn same_map_keys(candidate: &Value, item: &Map<String, Value>, f: Field) -> bool {
    f.map_keys.iter().filter(|k| **k != f.merge_key).all(|k| {
        match (candidate.get(*k), item.get(*k)) {
            (Some(a), Some(b)) => json_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    })
}

/// Finds the list item `item` merges into among `candidates` (the positions holding its merge key
/// value, ascending): with one candidate that one; with several, the first with identical list-map keys,
/// else the first not conflicting on them, else the first.
fn find_match(
    list: &[Value],
    candidates: &[usize],
    skip: Option<&[bool]>,
    item: &Map<String, Value>,
    f: Field,
) -> Option<usize> {
    let mut first = None;
    let mut count = 0;
    let mut exact = None;
    let mut compatible = None;
    for &j in candidates {
        if skip.is_some_and(|s| s.get(j).copied().unwrap_or(false)) {
            continue;
        }
        let Some(o) = list.get(j) else { continue };
        count += 1;
        first.get_or_insert(j);
        if exact.is_none() && same_map_keys(o, item, f) {
            exact = Some(j);
        }
        if compatible.is_none() && !conflicts_on_map_keys(o, item, f) {
            compatible = Some(j);
        }
    }
    if count > 1 {
        exact.or(compatible).or(first)
    } else {
        first
    }
}

/// Whether two items of a list share a merge key value. Such lists are legal (two env vars of one
/// name, one port over TCP and UDP) but a merge by key cannot reproduce them reliably, so diffs send
/// them whole.
fn has_ambiguous_items(list: &[Value], f: Field) -> bool {
    let mut seen = HashSet::with_capacity(list.len());
    list.iter()
        .filter_map(|a| a.get(f.merge_key))
        .any(|k| !seen.insert(ident_key(k)))
}

fn merge_list(
    orig: Vec<Value>,
    patch: &[Value],
    f: Field,
    path: &Path<'_>,
    order: Option<&[Value]>,
) -> Result<Vec<Value>, PatchError> {
    path.check_depth()?;
    if orig.is_empty() && patch.is_empty() {
        return Ok(orig);
    }
    match element_kind(&orig, patch, path)? {
        ElemKind::Scalar => {
            let server = Positions::build(orig.iter().map(Some));
            let mut seen = HashSet::with_capacity(orig.len() + patch.len());
            let mut merged: Vec<Value> = Vec::with_capacity(orig.len() + patch.len());
            for v in orig.into_iter().chain(patch.iter().cloned()) {
                if seen.insert(ident_key(&v)) {
                    merged.push(v);
                }
            }
            if f.sub.kustomize && order.is_none() {
                return Ok(patch_first(merged, patch, None));
            }
            Ok(normalize_order(
                merged,
                order.unwrap_or(patch),
                &server,
                None,
            ))
        }
        ElemKind::Map => {
            if f.merge_key.is_empty() {
                return Err(invalid(
                    path,
                    "cannot merge a list of objects that has no merge key",
                ));
            }
            let key = f.merge_key;
            let mut orig = orig;
            let mut plain: Vec<(usize, &Map<String, Value>)> = Vec::with_capacity(patch.len());
            let mut deletes: HashMap<String, Vec<&Map<String, Value>>> = HashMap::new();
            let mut replace = false;
            for (i, item) in patch.iter().enumerate() {
                let Value::Object(m) = item else { continue };
                match m.get(PATCH) {
                    None => plain.push((i, m)),
                    Some(d) if d.as_str() == Some("merge") => plain.push((i, m)),
                    Some(d) => match d.as_str() {
                        Some("delete") => {
                            let Some(kv) = m.get(key) else {
                                return Err(PatchError::MissingMergeKey {
                                    path: path.index(i).to_string(),
                                    key: key.to_string(),
                                });
                            };
                            deletes.entry(ident_key(kv)).or_default().push(m);
                        }
                        Some("replace") => replace = true,
                        _ => {
                            return Err(PatchError::UnknownDirective {
                                path: path.index(i).to_string(),
                                value: d.to_string(),
                            });
                        }
                    },
                }
            }
            if !deletes.is_empty() {
                orig.retain(|o| {
                    let Some(ds) = o.get(key).and_then(|kv| deletes.get(&ident_key(kv))) else {
                        return true;
                    };
                    ds.iter().all(|d| conflicts_on_map_keys(o, d, f))
                });
            }
            if replace {
                let items = plain
                    .iter()
                    .map(|(i, m)| {
                        merge_map(Map::new(), m, f.sub, &path.index(*i)).map(Value::Object)
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                // Like upstream, the replacement list is then ordered by each key's first position,
                // which groups items sharing a merge key value.
                let server = Positions::build(items.iter().map(|v| v.get(key)));
                return Ok(normalize_order(
                    items,
                    order.unwrap_or(&[]),
                    &server,
                    Some(key),
                ));
            }
            let server = Positions::build(orig.iter().map(|v| v.get(key)));
            let mut current = Positions::build(orig.iter().map(|v| v.get(key)));
            // kyaml identifies items by all list-map keys: a live item whose keys the patch does not
            // name exactly (e.g. the patch omits `protocol`) keeps its original content in kustomize.
            let kyaml_keys = f.sub.kustomize && f.map_keys.len() > 1;
            let pristine: Vec<Option<Value>> = if kyaml_keys {
                orig.iter()
                    .map(|o| {
                        let named = plain.iter().any(|(_, m)| {
                            f.map_keys.iter().all(|k| match (o.get(*k), m.get(*k)) {
                                (Some(a), Some(b)) => json_eq(a, b),
                                (None, None) => true,
                                _ => false,
                            })
                        });
                        (!named).then(|| o.clone())
                    })
                    .collect()
            } else {
                Vec::new()
            };
            for (i, m) in plain {
                let ipath = path.index(i);
                let Some(kv) = m.get(key) else {
                    return Err(PatchError::MissingMergeKey {
                        path: ipath.to_string(),
                        key: key.to_string(),
                    });
                };
                match find_match(&orig, current.all(kv), None, m, f) {
                    Some(j) => {
                        let slot = orig.get_mut(j).map(std::mem::take);
                        let merged = match slot {
                            Some(Value::Object(om)) => merge_map(om, m, f.sub, &ipath)?,
                            _ => merge_map(Map::new(), m, f.sub, &ipath)?,
                        };
                        if let Some(s) = orig.get_mut(j) {
                            *s = Value::Object(merged);
                        }
                    }
                    None => {
                        current.push(kv, orig.len());
                        orig.push(Value::Object(merge_map(Map::new(), m, f.sub, &ipath)?));
                    }
                }
            }
            for (slot, p) in orig.iter_mut().zip(pristine) {
                if let Some(p) = p {
                    *slot = p;
                }
            }
            if f.sub.kustomize && order.is_none() {
                return Ok(patch_first(orig, patch, Some(key)));
            }
            Ok(normalize_order(
                orig,
                order.unwrap_or(patch),
                &server,
                Some(key),
            ))
        }
    }
}

/// kustomize's order for a merged list: the items the patch names, in patch order, then the other
/// items in their original order.
fn patch_first(merged: Vec<Value>, patch: &[Value], key: Option<&str>) -> Vec<Value> {
    let pos = Positions::build(patch.iter().map(|p| ident_of(p, key)));
    let mut named: Vec<(usize, Value)> = Vec::new();
    let mut rest: Vec<Value> = Vec::new();
    for v in merged {
        match ident_of(&v, key).and_then(|id| pos.first(id)) {
            Some(p) => named.push((p, v)),
            None => rest.push(v),
        }
    }
    named.sort_by_key(|(p, _)| *p);
    named.into_iter().map(|(_, v)| v).chain(rest).collect()
}

/// Orders a merged list like kube-apiserver: items named by the patch (or its `$setElementOrder`) follow
/// that order, the other (server-only) items keep their live order, and the two sequences interleave by
/// their live positions. `server` indexes the live list's identities (merge key values, or the values).
fn normalize_order(
    merged: Vec<Value>,
    order: &[Value],
    server: &Positions,
    key: Option<&str>,
) -> Vec<Value> {
    let order_pos = Positions::build(order.iter().map(|o| ident_of(o, key)));
    let mut patch_items: Vec<(usize, Option<usize>, Value)> = Vec::new();
    let mut server_only: Vec<(usize, Option<usize>, Value)> = Vec::new();
    for v in merged {
        let id = ident_of(&v, key);
        let sp = id.and_then(|id| server.first(id));
        match id.and_then(|id| order_pos.first(id)) {
            Some(p) => patch_items.push((p, sp, v)),
            None => server_only.push((sp.unwrap_or(usize::MAX), sp, v)),
        }
    }
    patch_items.sort_by_key(|(p, _, _)| *p);
    server_only.sort_by_key(|(p, _, _)| *p);
    let mut out = Vec::with_capacity(patch_items.len() + server_only.len());
    let mut left = server_only.into_iter().peekable();
    let mut right = patch_items.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some((_, l, _)), Some((_, r, _))) => matches!((l, r), (Some(l), Some(r)) if l < r),
        };
        let next = if take_left { left.next() } else { right.next() };
        if let Some((_, _, v)) = next {
            out.push(v);
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------------
// diff
// ---------------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Default)]
struct DiffOpts {
    ignore_deletions: bool,
    ignore_changes: bool,
    set_element_order: bool,
    build_retain_keys: bool,
}

/// Computes the strategic merge patch that turns `original` into `modified` (kubectl's
/// `CreateTwoWayMergePatch`); `apply(original, diff(original, modified))` yields `modified`.
pub fn diff(original: &Value, modified: &Value, schema: Schema) -> Result<Value, PatchError> {
    let o = object_or_empty(original, "original object")?;
    let m = object_or_empty(modified, "modified object")?;
    let opts = DiffOpts {
        set_element_order: true,
        ..DiffOpts::default()
    };
    diff_maps(&o, &m, schema, opts, &Path::root()).map(Value::Object)
}

fn diff_maps(
    orig: &Map<String, Value>,
    modi: &Map<String, Value>,
    schema: Schema,
    opts: DiffOpts,
    path: &Path<'_>,
) -> Result<Map<String, Value>, PatchError> {
    path.check_depth()?;
    let mut patch = Map::new();
    let mut retain: Vec<&String> = Vec::new();
    for (k, mv) in modi {
        if opts.build_retain_keys && !mv.is_null() {
            retain.push(k);
        }
        let Some(ov) = orig.get(k) else {
            if !opts.ignore_changes {
                patch.insert(k.clone(), mv.clone());
            }
            continue;
        };
        if !same_kind(ov, mv) {
            if !opts.ignore_changes {
                patch.insert(k.clone(), mv.clone());
            }
            continue;
        }
        let kpath = path.key(k);
        match (ov, mv) {
            (Value::Object(om), Value::Object(mm)) => {
                let f = schema.field(k);
                if f.replace {
                    if !opts.ignore_changes && !json_eq(ov, mv) {
                        patch.insert(k.clone(), mv.clone());
                    }
                } else {
                    let sub_opts = DiffOpts {
                        build_retain_keys: f.retain_keys,
                        ..opts
                    };
                    let sub = diff_maps(om, mm, f.sub, sub_opts, &kpath)?;
                    if !sub.is_empty() {
                        patch.insert(k.clone(), Value::Object(sub));
                    }
                }
            }
            (Value::Array(oa), Value::Array(ma)) => {
                let f = schema.field(k);
                if f.merge {
                    let sub_opts = DiffOpts {
                        build_retain_keys: f.retain_keys,
                        ..opts
                    };
                    let (add, del, order) = diff_lists(oa, ma, f, sub_opts, &kpath)?;
                    if !add.is_empty() {
                        patch.insert(k.clone(), Value::Array(add));
                    }
                    if !del.is_empty() {
                        patch.insert(format!("{DELETE_PRIMITIVE_PREFIX}{k}"), Value::Array(del));
                    }
                    if !order.is_empty() {
                        patch.insert(format!("{SET_ORDER_PREFIX}{k}"), Value::Array(order));
                    }
                } else if !opts.ignore_changes && !json_eq(ov, mv) {
                    patch.insert(k.clone(), mv.clone());
                }
            }
            _ => {
                if !opts.ignore_changes && !json_eq(ov, mv) {
                    patch.insert(k.clone(), mv.clone());
                }
            }
        }
    }
    if !opts.ignore_deletions {
        for k in orig.keys() {
            if !modi.contains_key(k) {
                patch.insert(k.clone(), Value::Null);
            }
        }
    }
    if !retain.is_empty() && (!patch.is_empty() || has_additional_field(orig, modi)) {
        retain.sort();
        patch.insert(
            RETAIN_KEYS.to_string(),
            Value::Array(
                retain
                    .into_iter()
                    .map(|k| Value::String(k.clone()))
                    .collect(),
            ),
        );
    }
    Ok(patch)
}

/// Whether `orig` has a non-null field `modi` lacks (then `$retainKeys` is needed to clear it).
fn has_additional_field(orig: &Map<String, Value>, modi: &Map<String, Value>) -> bool {
    orig.iter()
        .any(|(k, v)| !v.is_null() && !modi.contains_key(k))
}

type ListDiff = (Vec<Value>, Vec<Value>, Vec<Value>);

/// Diffs a merge-strategy list: returns (patch list, primitive deletions, `$setElementOrder` list).
fn diff_lists(
    orig: &[Value],
    modi: &[Value],
    f: Field,
    opts: DiffOpts,
    path: &Path<'_>,
) -> Result<ListDiff, PatchError> {
    if orig.is_empty() {
        if modi.is_empty() || opts.ignore_changes {
            return Ok((Vec::new(), Vec::new(), Vec::new()));
        }
        if !f.merge_key.is_empty() && has_ambiguous_items(modi, f) {
            return Ok((replace_list(modi), Vec::new(), Vec::new()));
        }
        return Ok((modi.to_vec(), Vec::new(), Vec::new()));
    }
    match element_kind(orig, modi, path)? {
        ElemKind::Map => {
            let key = f.merge_key;
            if key.is_empty() {
                return Err(invalid(
                    path,
                    "cannot diff a list of objects that has no merge key",
                ));
            }
            let mut orig_keys: Vec<&Value> = Vec::with_capacity(orig.len());
            for (i, o) in orig.iter().enumerate() {
                match o.get(key) {
                    Some(v) => orig_keys.push(v),
                    None => {
                        return Err(PatchError::MissingMergeKey {
                            path: path.index(i).to_string(),
                            key: key.to_string(),
                        });
                    }
                }
            }
            // Items that cannot be told apart (e.g. two env vars of one name) cannot be merged item by
            // item: send the whole list with `$patch: replace` so applying reproduces `modi` exactly.
            if has_ambiguous_items(orig, f) || has_ambiguous_items(modi, f) {
                if orig.len() == modi.len() && orig.iter().zip(modi).all(|(a, b)| json_eq(a, b)) {
                    return Ok((Vec::new(), Vec::new(), Vec::new()));
                }
                return Ok((replace_list(modi), Vec::new(), Vec::new()));
            }
            let orig_pos = Positions::build(orig_keys.iter().map(|k| Some(*k)));
            let mut used = vec![false; orig.len()];
            let mut patch_list = Vec::new();
            for (i, mitem) in modi.iter().enumerate() {
                let Value::Object(mm) = mitem else { continue };
                let Some(kv) = mm.get(key) else {
                    return Err(PatchError::MissingMergeKey {
                        path: path.index(i).to_string(),
                        key: key.to_string(),
                    });
                };
                match find_match(orig, orig_pos.all(kv), Some(&used), mm, f) {
                    Some(j) => {
                        if let Some(u) = used.get_mut(j) {
                            *u = true;
                        }
                        let Some(Value::Object(om)) = orig.get(j) else {
                            continue;
                        };
                        let mut sub = diff_maps(om, mm, f.sub, opts, &path.index(i))?;
                        if !sub.is_empty() {
                            sub.shift_insert(0, key.to_string(), kv.clone());
                            patch_list.push(Value::Object(sub));
                        }
                    }
                    None => {
                        if !opts.ignore_changes {
                            patch_list.push(mitem.clone());
                        }
                    }
                }
            }
            let mut deletions: Vec<(String, Value)> = Vec::new();
            if !opts.ignore_deletions {
                for (j, kv) in orig_keys.iter().enumerate() {
                    if used.get(j).copied().unwrap_or(true) {
                        continue;
                    }
                    let mut d = Map::new();
                    d.insert(key.to_string(), (*kv).clone());
                    d.insert(PATCH.to_string(), Value::String("delete".to_string()));
                    deletions.push((sort_string(kv), Value::Object(d)));
                }
            }
            deletions.sort_by(|a, b| a.0.cmp(&b.0));
            let order_same = orig.len() == modi.len()
                && orig
                    .iter()
                    .zip(modi)
                    .all(|(a, b)| match (a.get(key), b.get(key)) {
                        (Some(x), Some(y)) => json_eq(x, y),
                        _ => false,
                    });
            patch_list.extend(deletions.into_iter().map(|(_, v)| v));
            let mut order = Vec::new();
            if opts.set_element_order
                && ((!opts.ignore_changes && (!patch_list.is_empty() || !order_same))
                    || (!opts.ignore_deletions && !patch_list.is_empty()))
            {
                order = modi
                    .iter()
                    .map(|m| {
                        let mut e = Map::new();
                        e.insert(key.to_string(), m.get(key).cloned().unwrap_or(Value::Null));
                        Value::Object(e)
                    })
                    .collect();
            }
            Ok((patch_list, Vec::new(), order))
        }
        ElemKind::Scalar => {
            let in_orig: HashSet<String> = orig.iter().map(ident_key).collect();
            let in_modi: HashSet<String> = modi.iter().map(ident_key).collect();
            let mut adds = Vec::new();
            if !opts.ignore_changes {
                let mut seen = HashSet::new();
                for m in modi {
                    let k = ident_key(m);
                    if !in_orig.contains(&k) && seen.insert(k) {
                        adds.push(m.clone());
                    }
                }
            }
            let mut dels: Vec<Value> = Vec::new();
            if !opts.ignore_deletions {
                let mut seen = HashSet::new();
                for o in orig {
                    let k = ident_key(o);
                    if !in_modi.contains(&k) && seen.insert(k) {
                        dels.push(o.clone());
                    }
                }
                dels.sort_by_key(sort_string);
            }
            let same =
                orig.len() == modi.len() && orig.iter().zip(modi).all(|(a, b)| json_eq(a, b));
            let order = if opts.set_element_order
                && ((!opts.ignore_deletions && !dels.is_empty()) || (!opts.ignore_changes && !same))
            {
                modi.to_vec()
            } else {
                Vec::new()
            };
            Ok((adds, dels, order))
        }
    }
}

/// `[{"$patch": "replace"}, items...]`: a list patch that sets the list to exactly `items`.
fn replace_list(items: &[Value]) -> Vec<Value> {
    let mut list = Vec::with_capacity(items.len() + 1);
    let mut marker = Map::new();
    marker.insert(PATCH.to_string(), Value::String("replace".to_string()));
    list.push(Value::Object(marker));
    list.extend(items.iter().cloned());
    list
}

// ---------------------------------------------------------------------------------------------------
// three-way
// ---------------------------------------------------------------------------------------------------

/// kubectl's `CreateThreeWayMergePatch(original=last-applied, modified=new config, current=live)`: the
/// patch sets what `modified` changes relative to `current`, and deletes only what `original` (the last
/// applied configuration) had and `modified` dropped, so fields set by others (defaults, controllers)
/// survive. `original = None` means no last-applied configuration (nothing is deleted).
pub fn three_way(
    original: Option<&Value>,
    modified: &Value,
    current: &Value,
    schema: Schema,
) -> Result<Value, PatchError> {
    let empty = Value::Object(Map::new());
    let o = object_or_empty(original.unwrap_or(&empty), "original (last-applied) object")?;
    let m = object_or_empty(modified, "modified object")?;
    let c = object_or_empty(current, "current (live) object")?;
    let root = Path::root();
    let delta = diff_maps(
        &c,
        &m,
        schema,
        DiffOpts {
            ignore_deletions: true,
            set_element_order: true,
            ..DiffOpts::default()
        },
        &root,
    )?;
    let deletions = diff_maps(
        &o,
        &m,
        schema,
        DiffOpts {
            ignore_changes: true,
            set_element_order: true,
            ..DiffOpts::default()
        },
        &root,
    )?;
    merge_patches(deletions, &delta, schema, &root).map(Value::Object)
}

/// Combines two patches into one that has the effect of both (`over` wins where they disagree).
fn merge_patches(
    mut base: Map<String, Value>,
    over: &Map<String, Value>,
    schema: Schema,
    path: &Path<'_>,
) -> Result<Map<String, Value>, PatchError> {
    path.check_depth()?;
    for (k, ov) in over {
        let kpath = path.key(k);
        let directive = k.starts_with('$');
        match base.get_mut(k) {
            Some(bv) if !directive => {
                let f = schema.field(k);
                let new = match (&mut *bv, ov) {
                    (Value::Object(bm), Value::Object(om)) if !f.replace => {
                        Value::Object(merge_patches(std::mem::take(bm), om, f.sub, &kpath)?)
                    }
                    (Value::Array(ba), Value::Array(oa)) if f.merge => {
                        Value::Array(merge_patch_lists(std::mem::take(ba), oa, f, &kpath)?)
                    }
                    _ => ov.clone(),
                };
                *bv = new;
            }
            _ => {
                base.insert(k.clone(), ov.clone());
            }
        }
    }
    align_with_element_order(&mut base, schema);
    Ok(base)
}

/// After two patches are combined, puts each merged list's items in the order its `$setElementOrder`
/// names (deletion directives last), so the combined patch passes the order check on apply. Upstream
/// leaves the lists in combination order, which kube-apiserver then rejects ("doesn't match
/// $setElementOrder list") when an item with deletions moves.
fn align_with_element_order(patch: &mut Map<String, Value>, schema: Schema) {
    let names: Vec<String> = patch
        .keys()
        .filter_map(|k| k.strip_prefix(SET_ORDER_PREFIX).map(str::to_string))
        .collect();
    for name in names {
        let f = schema.field(&name);
        let key = (!f.merge_key.is_empty()).then_some(f.merge_key);
        let order = match patch.get(&format!("{SET_ORDER_PREFIX}{name}")) {
            Some(Value::Array(o)) => o.clone(),
            _ => continue,
        };
        let order_pos = Positions::build(order.iter().map(|o| ident_of(o, key)));
        if let Some(Value::Array(list)) = patch.get_mut(&name) {
            let mut items: Vec<(usize, Value)> = std::mem::take(list)
                .into_iter()
                .map(|v| {
                    let pos = if v.get(PATCH).is_some() {
                        usize::MAX
                    } else {
                        ident_of(&v, key)
                            .and_then(|id| order_pos.first(id))
                            .unwrap_or(usize::MAX)
                    };
                    (pos, v)
                })
                .collect();
            items.sort_by_key(|(p, _)| *p);
            *list = items.into_iter().map(|(_, v)| v).collect();
        }
    }
}

fn merge_patch_lists(
    base: Vec<Value>,
    over: &[Value],
    f: Field,
    path: &Path<'_>,
) -> Result<Vec<Value>, PatchError> {
    // A list sent whole (`$patch: replace`) already holds the complete target list.
    let is_replace = |l: &[Value]| {
        l.iter()
            .any(|v| v.get(PATCH).and_then(Value::as_str) == Some("replace"))
    };
    if is_replace(over) {
        return Ok(over.to_vec());
    }
    if is_replace(&base) {
        return Ok(base);
    }
    match element_kind(&base, over, path)? {
        ElemKind::Scalar => {
            let server = Positions::build(base.iter().map(Some));
            let mut seen: HashSet<String> = base.iter().map(ident_key).collect();
            let mut merged = base;
            for v in over {
                if seen.insert(ident_key(v)) {
                    merged.push(v.clone());
                }
            }
            Ok(normalize_order(merged, over, &server, None))
        }
        ElemKind::Map => {
            let key = f.merge_key;
            if key.is_empty() {
                return Ok(over.to_vec());
            }
            let server = Positions::build(base.iter().map(|v| v.get(key)));
            let mut current = Positions::build(base.iter().map(|v| v.get(key)));
            let mut merged = base;
            for (i, item) in over.iter().enumerate() {
                let Value::Object(om) = item else { continue };
                let found = om
                    .get(key)
                    .and_then(|kv| find_match(&merged, current.all(kv), None, om, f));
                match found.and_then(|j| merged.get_mut(j)) {
                    Some(slot) => {
                        let new = match std::mem::take(slot) {
                            Value::Object(bm) => {
                                Value::Object(merge_patches(bm, om, f.sub, &path.index(i))?)
                            }
                            _ => item.clone(),
                        };
                        *slot = new;
                    }
                    None => {
                        if let Some(kv) = om.get(key) {
                            current.push(kv, merged.len());
                        }
                        merged.push(item.clone());
                    }
                }
            }
            Ok(normalize_order(merged, over, &server, Some(key)))
        }
    }
}
