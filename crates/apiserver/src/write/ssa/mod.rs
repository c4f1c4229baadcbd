//! Server-side apply and field ownership (`metadata.managedFields`), with the semantics of
//! kube-apiserver's structured-merge-diff: every write records which manager set which fields;
//! an apply merges the applied configuration by the type's list semantics, removes the fields the
//! manager stopped applying (unless someone else still owns them) and refuses to change fields
//! another manager owns unless forced. Controllers that share objects rely on exactly this to
//! avoid fighting over fields.

pub mod fieldpath;
pub mod schema;
pub mod typed;

use serde_json::{Map, Value, json};

use crate::storage::errors::{ApiError, ApiResult, Cause, Details};
use crate::storage::objects::now;
use crate::storage::registry::ResourceInfo;
use fieldpath::{Set, display_path};
use schema::Ty;

/// Manager recorded for fields an object had before its first apply (kube's name for it).
const BEFORE_FIRST_APPLY: &str = "before-first-apply";

/// Which write an entry records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// A server-side apply.
    Apply,
    /// Any other write (create, update, patch).
    Update,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// One `managedFields` entry, decoded.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// `manager`.
    pub manager: String,
    /// `operation`.
    pub operation: Operation,
    /// `apiVersion` the fields were written with.
    pub api_version: String,
    /// `time` of the last change of this entry's fields.
    pub time: Option<String>,
    /// `subresource` (`status`, `scale`) or empty.
    pub subresource: String,
    /// `fieldsV1`.
    pub set: Set,
    /// Index, in the live object's `managedFields`, of the entry whose `fieldsV1` JSON is
    /// exactly the encoding of `set` (while `set` is unchanged): that JSON is written back as it
    /// is, since most writes change no entry's fields and re-encoding every entry on every
    /// write was a measurable part of the write path.
    source: Option<usize>,
    /// `set` was not decoded (it is left empty): this write provably cannot change it, and
    /// `source` locates its JSON.
    lazy: bool,
}

impl Entry {
    /// Whether two entries are the same manager: one entry per manager name, operation and
    /// subresource, and per apiVersion for updates (appliers keep one entry across versions).
    fn same_manager(&self, other: &Entry) -> bool {
        self.manager == other.manager
            && self.operation == other.operation
            && self.subresource == other.subresource
            && (self.operation == Operation::Apply || self.api_version == other.api_version)
    }

    /// The manager as kube-apiserver prints it in conflict messages.
    fn describe(&self) -> String {
        let mut s = format!("{:?}", self.manager);
        if !self.subresource.is_empty() {
            s = format!("{s} with subresource {:?}", self.subresource);
        }
        if self.operation == Operation::Update {
            s = format!("{s} using {}", self.api_version);
        }
        s
    }

    /// The entry's JSON; `source` is the live `managedFields` list [`Entry::source`] indexes.
    /// With `owned` (a list equal to `source` that the caller discards) the kept `fieldsV1` is
    /// moved out of it instead of copied from `source`.
    fn into_json(self, source: Option<&[Value]>, owned: Option<&mut [Value]>) -> Value {
        let mut m = Map::with_capacity(7);
        m.insert("manager".into(), Value::String(self.manager));
        m.insert("operation".into(), json!(self.operation.as_str()));
        m.insert("apiVersion".into(), Value::String(self.api_version));
        if let Some(t) = self.time {
            m.insert("time".into(), Value::String(t));
        }
        m.insert("fieldsType".into(), json!("FieldsV1"));
        let taken = self
            .source
            .zip(owned)
            .and_then(|(i, list)| list.get_mut(i)?.get_mut("fieldsV1"))
            .map(Value::take);
        let kept = || {
            self.source
                .zip(source)
                .and_then(|(i, list)| list.get(i)?.get("fieldsV1"))
                .cloned()
        };
        let fields = match taken.or_else(kept) {
            Some(f) => f,
            None => self.set.into_fields_v1(),
        };
        m.insert("fieldsV1".into(), fields);
        if !self.subresource.is_empty() {
            m.insert("subresource".into(), Value::String(self.subresource));
        }
        Value::Object(m)
    }

    /// The set was changed: its original encoding no longer applies.
    fn set_changed(&mut self) {
        self.source = None;
    }

    /// Decodes an entry; `index` (its position in the list) is kept as [`Entry::source`] when
    /// its `fieldsV1` is canonical. With `lazy` (the writer's entry, and the top-level path
    /// elements a write changes or removes), an entry of another manager that owns nothing
    /// under those elements is not decoded: its fields cannot change.
    fn from_json(
        v: &Value,
        index: Option<usize>,
        lazy: Option<(&Entry, &[&str])>,
    ) -> Result<Entry, String> {
        let m = v
            .as_object()
            .ok_or("a managedFields entry must be an object")?;
        let s = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let operation = match s("operation").as_str() {
            "Apply" => Operation::Apply,
            "Update" => Operation::Update,
            "" if m.is_empty() => Operation::Update,
            other => return Err(format!("unknown operation {other:?}")),
        };
        let ft = s("fieldsType");
        if !ft.is_empty() && ft != "FieldsV1" {
            return Err(format!("unsupported fieldsType {ft:?}"));
        }
        let mut entry = Entry {
            manager: s("manager"),
            operation,
            api_version: s("apiVersion"),
            time: m.get("time").and_then(Value::as_str).map(str::to_string),
            subresource: s("subresource"),
            set: Set::new(),
            source: None,
            lazy: false,
        };
        if let (Some(i), Some((me, touched)), Some(Value::Object(f))) =
            (index, lazy, m.get("fieldsV1"))
            && !f.is_empty()
            && !entry.same_manager(me)
            && !f.keys().any(|k| touched.contains(&k.as_str()))
            && m.get("fieldsV1").is_some_and(Set::is_canonical_fields_v1)
        {
            entry.source = Some(i);
            entry.lazy = true;
            return Ok(entry);
        }
        let (set, source) = match m.get("fieldsV1") {
            Some(f) if !f.is_null() => {
                let (set, canonical) =
                    Set::from_fields_v1_canonical(f).map_err(|e| e.to_string())?;
                (set, index.filter(|_| canonical))
            }
            _ => (Set::new(), None),
        };
        entry.set = set;
        entry.source = source;
        Ok(entry)
    }
}

/// Decodes `metadata.managedFields`; `None` when absent, empty or malformed (kube-apiserver
/// then falls back to the live object's entries, or resets them).
pub fn decode_managed(obj: &Value) -> Option<Vec<Entry>> {
    decode_managed_keep(obj, false, None)
}

/// [`decode_managed`]; `keep` records where each entry's canonical `fieldsV1` JSON is
/// ([`Entry::source`]), to write it back.
fn decode_managed_keep(
    obj: &Value,
    keep: bool,
    lazy: Option<(&Entry, &[&str])>,
) -> Option<Vec<Entry>> {
    let list = crate::storage::objects::meta_get(obj, "managedFields")?.as_array()?;
    if list.is_empty() {
        return None;
    }
    list.iter()
        .enumerate()
        .map(|(i, e)| Entry::from_json(e, keep.then_some(i), lazy).ok())
        .collect()
}

/// At most this many `Update` entries are kept; older ones are merged (kube-apiserver's cap), so
/// that many one-off writers (every distinct User-Agent) cannot grow an object without bound.
const MAX_UPDATE_MANAGERS: usize = 10;

/// Manager name of the bucket older update entries are merged into.
const ANCIENT_CHANGES: &str = "ancient-changes";

/// Merges the oldest `Update` entries into one `ancient-changes` entry per apiVersion until at
/// most [`MAX_UPDATE_MANAGERS`] remain.
fn cap_update_managers(entries: &mut Vec<Entry>) {
    let count = |es: &Vec<Entry>| {
        es.iter()
            .filter(|e| e.operation == Operation::Update)
            .count()
    };
    while count(entries) > MAX_UPDATE_MANAGERS {
        // The oldest update entry that is not already a bucket, by time then name.
        let oldest = entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.operation == Operation::Update && e.manager != ANCIENT_CHANGES)
            .min_by(|(_, a), (_, b)| (&a.time, &a.manager).cmp(&(&b.time, &b.manager)))
            .map(|(i, _)| i);
        let Some(i) = oldest else { return };
        let old = entries.remove(i);
        match entries.iter_mut().find(|e| {
            e.manager == ANCIENT_CHANGES
                && e.operation == Operation::Update
                && e.api_version == old.api_version
        }) {
            Some(bucket) => {
                bucket.set.union_with(&old.set);
                bucket.set_changed();
                if old.time > bucket.time {
                    bucket.time = old.time;
                }
            }
            None => entries.push(Entry {
                manager: ANCIENT_CHANGES.into(),
                subresource: String::new(),
                ..old
            }),
        }
    }
}

/// Writes `entries` as `metadata.managedFields`; `source` is the live list their
/// [`Entry::source`] indexes. With `owned`, a list equal to `source` that is no longer needed
/// (the entries a client sent back unchanged), kept encodings are moved out of it, not copied.
fn set_managed(
    obj: &mut Value,
    entries: Vec<Entry>,
    source: Option<&[Value]>,
    mut owned: Option<Vec<Value>>,
) {
    // A body that is not an object, or whose metadata is not one, is left for validation to
    // refuse rather than repaired here.
    let Some(root) = obj.as_object() else { return };
    if root.get("metadata").is_some_and(|m| !m.is_object()) {
        return;
    }
    let m = crate::storage::objects::meta_mut(obj);
    if entries.is_empty() {
        m.remove("managedFields");
    } else {
        m.insert(
            "managedFields".into(),
            Value::Array(
                entries
                    .into_iter()
                    .map(|e| e.into_json(source, owned.as_deref_mut()))
                    .collect(),
            ),
        );
    }
}

/// Drops the fields no manager may own: identity and server-set metadata, and the part of the
/// object the written endpoint ignores (status on the main resource of kinds with a status
/// subresource, everything but status on `/status`).
fn strip(set: &mut Set, info: &ResourceInfo, sub: Option<&str>) {
    set.remove("f:apiVersion");
    set.remove("f:kind");
    if let Some(meta) = set.children.get_mut("f:metadata") {
        meta.member = false;
        for pe in [
            "f:name",
            "f:namespace",
            "f:creationTimestamp",
            "f:selfLink",
            "f:uid",
            "f:clusterName",
            "f:generation",
            "f:managedFields",
            "f:resourceVersion",
            "f:deletionTimestamp",
            "f:deletionGracePeriodSeconds",
        ] {
            meta.remove(pe);
        }
    }
    match sub {
        Some("status") => set.children.retain(|k, _| k == "f:status"),
        None if info.status => set.remove("f:status"),
        _ => {}
    }
    set.prune();
}

/// A comparison of two objects in owned-field terms.
struct Comparison {
    /// Paths set in the new object only, or whose value changed.
    changed: Set,
    /// Paths set in the old object only.
    removed: Set,
}

fn compare(
    old: &Value,
    new: &Value,
    ty: &Ty<'_>,
    info: &ResourceInfo,
    sub: Option<&str>,
) -> Comparison {
    compare_with(old, new, ty, info, sub, false)
}

/// [`compare`]; `reference` computes it from whole field sets (what the joint walk must equal).
fn compare_with(
    old: &Value,
    new: &Value,
    ty: &Ty<'_>,
    info: &ResourceInfo,
    sub: Option<&str>,
    reference: bool,
) -> Comparison {
    let scope = match sub {
        Some("status") => typed::Scope::Only("status"),
        None if info.status => typed::Scope::Except("status"),
        _ => typed::Scope::All,
    };
    let joint = if reference {
        Err(typed::TypeError("reference computation".into()))
    } else {
        typed::diff_scoped(old, new, ty, scope)
    };
    let (mut changed, mut removed) = match joint {
        Ok(d) => d,
        // Nested too deeply for the joint walk: the whole-set computation, which treats a side
        // it cannot walk as empty.
        Err(_) => compare_sets(old, new, ty, scope),
    };
    strip(&mut changed, info, sub);
    strip(&mut removed, info, sub);
    Comparison { changed, removed }
}

/// `(changed, removed)` of two objects from their whole field sets: the definition
/// [`typed::diff_scoped`] computes faster, and its fallback for values it cannot walk.
fn compare_sets(old: &Value, new: &Value, ty: &Ty<'_>, scope: typed::Scope<'_>) -> (Set, Set) {
    let os = typed::to_set_scoped(old, ty, false, scope).unwrap_or_default();
    let ns = typed::to_set_scoped(new, ty, false, scope).unwrap_or_default();
    let mut changed = ns.difference(&os);
    changed.union_with(&typed::modified_scoped(old, new, ty, scope));
    let removed = os.difference(&ns);
    (changed, removed)
}

/// Records a create, update or patch by `manager`: the fields it changed become its own (and are
/// taken from whoever owned them), removed fields are dropped from every manager. Never fails:
/// field tracking must not turn a valid write into an error. `live` is `None` for a create.
pub fn track_update(
    info: &ResourceInfo,
    live: Option<&Value>,
    new: Value,
    manager: &str,
    sub: Option<&str>,
) -> Value {
    track_update_with(info, live, new, manager, sub, now, false)
}

/// [`track_update`] with the clock given (`now` is called once, when an entry is written) and,
/// with `reference`, computed the straightforward way: whole field sets diffed and every entry
/// re-encoded. Tests hold the fast path to the reference one.
fn track_update_with(
    info: &ResourceInfo,
    live: Option<&Value>,
    mut new: Value,
    manager: &str,
    sub: Option<&str>,
    now: impl FnOnce() -> String,
    reference: bool,
) -> Value {
    let ty = Ty::root(info);
    // Entries the client sent back unchanged (a read-modify-write) are not a request to set them.
    let live_mf = live.and_then(|l| crate::storage::objects::meta_get(l, "managedFields"));
    let new_mf = crate::storage::objects::meta_get(&new, "managedFields");
    // The common read-modify-write: the entries come back as they were.
    let sent_back = new_mf.is_some() && new_mf == live_mf;
    let requested = if sub.is_none() && new_mf.is_some() && !sent_back {
        decode_managed(&new)
    } else {
        None
    };
    // A client that sends entries which are all empty (`[{}]`) asks for them to be cleared.
    if requested
        .as_ref()
        .is_some_and(|r| r.iter().all(|e| e.set.is_empty()))
    {
        set_managed(&mut new, Vec::new(), None, None);
        return new;
    }
    // managedFields themselves are compared too (an atomic leaf, cheap) and then stripped, so
    // the objects need no copy without them.
    let empty = json!({});
    let old = live.unwrap_or(&empty);
    let cmp = if reference {
        compare_with(old, &new, &ty, info, sub, true)
    } else {
        compare(old, &new, &ty, info, sub)
    };
    if cmp.changed.is_empty() && cmp.removed.is_empty() && requested.is_none() {
        // Nothing this write changed is tracked: the live entries stand as they are (and
        // when they came back unchanged, they are in place already).
        if let Some(l) = live.filter(|_| !sent_back) {
            match crate::storage::objects::meta_get(l, "managedFields") {
                Some(mf) => {
                    if let Some(m) = new.get_mut("metadata").and_then(Value::as_object_mut) {
                        m.insert("managedFields".into(), mf.clone());
                    }
                }
                None => {
                    if let Some(m) = new.get_mut("metadata").and_then(Value::as_object_mut) {
                        m.remove("managedFields");
                    }
                }
            }
        }
        return new;
    }
    let me = Entry {
        manager: manager.to_string(),
        operation: Operation::Update,
        api_version: info.api_version(),
        time: Some(now()),
        subresource: sub.unwrap_or("").to_string(),
        set: Set::new(),
        source: None,
        lazy: false,
    };
    // Every path this write changes or removes lies under one of these top-level elements.
    let touched: Vec<&str> = cmp
        .changed
        .children
        .keys()
        .chain(cmp.removed.children.keys())
        .map(String::as_str)
        .collect();
    let lazy = (!reference).then_some((&me, touched.as_slice()));
    let live_list = live
        .and_then(|l| crate::storage::objects::meta_get(l, "managedFields"))
        .and_then(Value::as_array)
        .map(Vec::as_slice);
    let mut entries = requested
        .or_else(|| live.and_then(|l| decode_managed_keep(l, !reference, lazy)))
        .unwrap_or_default();
    for e in entries
        .iter_mut()
        .filter(|e| !e.lazy && !e.same_manager(&me))
    {
        // Most entries own nothing this write touched: they stay as decoded (and encoded).
        if reference || e.set.shares_member(&cmp.changed) || e.set.shares_member(&cmp.removed) {
            e.set = e.set.difference(&cmp.changed).difference(&cmp.removed);
            e.set_changed();
        }
    }
    match entries.iter_mut().find(|e| e.same_manager(&me)) {
        Some(e) => {
            // The entry's time is that of the last write that changed something through it.
            if !cmp.changed.is_empty() {
                e.time = me.time.clone();
            }
            // A manager rewriting fields it owns already (the common update) changes no set.
            if reference || e.set.shares_member(&cmp.removed) || !e.set.covers(&cmp.changed) {
                e.set = e.set.difference(&cmp.removed);
                e.set.union_with(&cmp.changed);
                e.set_changed();
            }
        }
        None => {
            if !cmp.changed.is_empty() {
                entries.push(Entry {
                    set: cmp.changed,
                    ..me
                });
            }
        }
    }
    // An entry left undecoded has a non-empty canonical `fieldsV1`: its set is not empty.
    entries.retain(|e| e.lazy || !e.set.is_empty());
    if entries
        .iter()
        .filter(|e| e.operation == Operation::Update)
        .count()
        > MAX_UPDATE_MANAGERS
    {
        // Capping merges sets: every entry needs its own.
        for e in entries.iter_mut().filter(|e| e.lazy) {
            let raw = e
                .source
                .zip(live_list)
                .and_then(|(i, list)| list.get(i)?.get("fieldsV1"));
            if let Some(Ok(set)) = raw.map(Set::from_fields_v1) {
                e.set = set;
            }
            e.lazy = false;
        }
    }
    cap_update_managers(&mut entries);
    let owned = if sent_back && !reference {
        crate::storage::objects::meta_mut(&mut new)
            .get_mut("managedFields")
            .and_then(Value::as_array_mut)
            .map(std::mem::take)
    } else {
        None
    };
    set_managed(&mut new, entries, live_list, owned);
    new
}

fn conflict_error(conflicts: &[(String, Vec<String>)]) -> ApiError {
    let total: usize = conflicts.iter().map(|(_, p)| p.len()).sum();
    let causes: Vec<Cause> = conflicts
        .iter()
        .flat_map(|(m, paths)| {
            paths.iter().map(move |p| Cause {
                field: p.clone(),
                reason: "FieldManagerConflict",
                message: format!("conflict with {m}"),
            })
        })
        .collect();
    let message = if let [(m, paths)] = conflicts
        && let [p] = paths.as_slice()
    {
        format!("Apply failed with 1 conflict: conflict with {m}: {p}")
    } else {
        let mut sorted: Vec<&(String, Vec<String>)> = conflicts.iter().collect();
        sorted.sort_by(|a, b| a.0.cmp(&b.0));
        let mut lines = Vec::new();
        for (m, paths) in sorted {
            lines.push(format!("conflicts with {m}:"));
            lines.extend(paths.iter().map(|p| format!("- {p}")));
        }
        format!("Apply failed with {total} conflicts: {}", lines.join("\n"))
    };
    let mut e = ApiError::new(409, "Conflict", message);
    e.details = Some(Box::new(Details {
        causes,
        ..Details::default()
    }));
    e
}

/// Checks an applied configuration before anything is merged: an object with the endpoint's
/// `apiVersion` and `kind`, the URL's name (required when the apply creates the object; an
/// existing object keeps its name through the merge, as in kube-apiserver), and no
/// `managedFields`.
fn check_config(info: &ResourceInfo, config: &Value, name: &str, creating: bool) -> ApiResult<()> {
    let Value::Object(m) = config else {
        return Err(ApiError::bad_request(format!(
            "error decoding YAML: an apply patch must be an object, got {}",
            kind_of(config)
        )));
    };
    let av = m.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if av != info.api_version() {
        return Err(ApiError::bad_request(format!(
            "Incorrect version specified in apply patch. Specified patch version: {av}, expected: {}",
            info.api_version()
        )));
    }
    match m.get("kind").and_then(Value::as_str) {
        None | Some("") => {
            return Err(ApiError::bad_request(format!(
                "Object 'Kind' is missing in '{}'",
                serde_json::to_string(config).unwrap_or_default()
            )));
        }
        Some(k) if k != info.kind => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({k}) does not match the expected kind ({})",
                info.kind
            )));
        }
        Some(_) => {}
    }
    let meta = match m.get("metadata") {
        Some(Value::Object(meta)) => meta,
        None => &Map::new(),
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "error decoding YAML: metadata must be an object, got {}",
                kind_of(other)
            )));
        }
    };
    match meta.get("name") {
        Some(Value::String(n)) if !n.is_empty() => {
            if n != name {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({n}) does not match the name on the URL ({name})"
                )));
            }
        }
        Some(Value::String(_)) | None | Some(Value::Null) if !creating => {}
        Some(Value::String(_)) | None | Some(Value::Null) => {
            return Err(ApiError::invalid(
                &info.group,
                &info.kind,
                name,
                vec![Cause {
                    field: "metadata.name".into(),
                    reason: "FieldValueRequired",
                    message: "Required value: name is required".into(),
                }],
            ));
        }
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "error decoding YAML: metadata.name must be a string, got {}",
                kind_of(other)
            )));
        }
    }
    if meta.get("managedFields").is_some_and(|v| !v.is_null()) {
        return Err(ApiError::bad_request("metadata.managedFields must be nil"));
    }
    Ok(())
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Server-side apply of `config` by `manager` to `live` (`None`: the object does not exist yet).
/// Returns the object to store, with its `managedFields`; a change to a field another manager
/// owns is a 409 naming every conflicting field unless `force`.
pub fn apply(
    info: &ResourceInfo,
    live: Option<&Value>,
    config: &Value,
    name: &str,
    manager: &str,
    force: bool,
    sub: Option<&str>,
) -> ApiResult<Value> {
    check_config(info, config, name, live.is_none())?;
    let ty = Ty::root(info);
    let invalid = |e: typed::TypeError| {
        let (field, msg) = match e.0.split_once(": ") {
            Some((f, m)) => (f.trim_start_matches('.').to_string(), m.to_string()),
            None => (String::new(), e.0.clone()),
        };
        ApiError::invalid(
            &info.group,
            &info.kind,
            name,
            vec![Cause::invalid(field, msg)],
        )
    };
    let mut config_set = typed::to_set(config, &ty, true).map_err(invalid)?;
    strip(&mut config_set, info, sub);
    let empty = json!({});
    let live_bare = live.unwrap_or(&empty);
    let mut entries = match live {
        Some(l) => decode_managed(l).unwrap_or_default(),
        None => Vec::new(),
    };
    if live.is_some() && entries.is_empty() {
        // Fields that predate the first apply belong to a placeholder manager, so the first
        // applier does not silently take them over.
        let mut s = typed::to_set(live_bare, &ty, false).unwrap_or_default();
        strip(&mut s, info, sub);
        if !s.is_empty() {
            entries.push(Entry {
                manager: BEFORE_FIRST_APPLY.into(),
                operation: Operation::Update,
                api_version: info.api_version(),
                time: Some(now()),
                subresource: String::new(),
                set: s,
                source: None,
                lazy: false,
            });
        }
    }
    let merged = typed::merge(live_bare, config, &ty).map_err(invalid)?;
    let mut me = Entry {
        manager: manager.to_string(),
        operation: Operation::Apply,
        api_version: info.api_version(),
        time: Some(now()),
        subresource: sub.unwrap_or("").to_string(),
        set: config_set,
        source: None,
        lazy: false,
    };
    // What the apply changes matters only to the other managers' fields: with none (a create,
    // or an object only this manager applies) the walks over both objects are skipped.
    let others = entries.iter().any(|e| !e.same_manager(&me));
    let mut conflicts = Vec::new();
    let mut cmp = None;
    if others {
        let changed = &cmp
            .insert(compare(live_bare, &merged, &ty, info, sub))
            .changed;
        for e in entries.iter_mut().filter(|e| !e.same_manager(&me)) {
            let c = e.set.intersection(changed);
            if !c.is_empty() {
                let paths = c.paths().iter().map(|p| display_path(p)).collect();
                conflicts.push((e.describe(), paths));
                if force {
                    e.set = e.set.difference(&c);
                }
            }
        }
    }
    if !conflicts.is_empty() && !force {
        return Err(conflict_error(&conflicts));
    }
    // Fields the manager applied last time and no longer applies go, unless someone else
    // (or the new configuration) still owns them.
    // (last − (mine ∪ others') taken one set at a time, so that no union is built unless
    // something is to go; a create has no last.)
    let gone = match entries.iter().find(|e| e.same_manager(&me)) {
        None => Set::new(),
        Some(last) => {
            let mut gone = last.set.difference(&me.set);
            for e in entries.iter().filter(|e| !e.same_manager(&me)) {
                if gone.is_empty() {
                    break;
                }
                gone = gone.difference(&e.set);
            }
            gone
        }
    };
    let mut result = merged;
    if !gone.is_empty() {
        let mut owned = me.set.clone();
        for e in entries.iter().filter(|e| !e.same_manager(&me)) {
            owned.union_with(&e.set);
        }
        typed::remove_paths(&mut result, &gone, &owned, &ty);
    }
    if others {
        // Nothing removed: the result is the merged object, whose comparison is at hand.
        let after = match cmp.filter(|_| gone.is_empty()) {
            Some(c) => c,
            None => compare(live_bare, &result, &ty, info, sub),
        };
        for e in entries.iter_mut().filter(|e| !e.same_manager(&me)) {
            e.set = e.set.difference(&after.removed);
        }
    }
    match entries.iter_mut().find(|e| e.same_manager(&me)) {
        Some(e) => {
            // A no-op apply keeps the entry as it was (and so the object unwritten).
            if e.set != me.set || e.api_version != me.api_version || &result != live_bare {
                e.time = me.time.take();
            }
            e.set = me.set;
            e.api_version = me.api_version;
        }
        None => entries.push(me),
    }
    entries.retain(|e| !e.set.is_empty());
    cap_update_managers(&mut entries);
    set_managed(&mut result, entries, None, None);
    if let Some(m) = result.get_mut("metadata").and_then(Value::as_object_mut)
        && !m.contains_key("name")
    {
        m.insert("name".into(), json!(name));
    }
    Ok(result)
}

#[cfg(test)]
mod diff_tests;
#[cfg(test)]
mod tests;
