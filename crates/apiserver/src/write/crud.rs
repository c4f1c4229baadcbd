//! The write path shared by HTTP handlers and background controllers: create, guaranteed update
//! (read-modify-write with retry on conflict), delete with finalizers and propagation policies.
//! Every object-level rule (server-set metadata, generation, status subresource, CRD schemas,
//! finalizers) lives here so that no caller can bypass it.

use serde_json::{Value, json};

use crate::state::ApiServer;
use crate::storage::errors::{ApiError, ApiResult, Cause};
use crate::storage::objects::{
    finalizers, meta_mut, meta_str, now, random_suffix, same_object, spec_changed,
};
use crate::storage::registry::ResourceInfo;
use crate::storage::store::{Obj, Rev, StoreError};
use crate::storage::validation::validate_metadata;
use crate::write::strategy;

/// Lost races after which a read-modify-write gives the other writers a turn before it reads
/// again. Without a client precondition it retries until it wins, as Kubernetes'
/// GuaranteedUpdate does: each conflict means another write landed, so the system progresses,
/// and a bounded retry count turned contention (many clients patching one object while the
/// collector marks it) into a 409 the client never asked for.
const YIELD_AFTER: usize = 4;

/// Waits before the next attempt of a read-modify-write that lost `lost` races in a row.
async fn after_lost_race(lost: usize) {
    if lost >= YIELD_AFTER {
        tokio::task::yield_now().await;
    }
}

/// Finalizer the garbage collector uses for foreground deletion.
pub const FOREGROUND: &str = "foregroundDeletion";
/// Finalizer the garbage collector uses for orphaning dependents.
pub const ORPHAN: &str = "orphan";

/// The result of a write: the stored object, or (dry run / no-op / deleted) its JSON.
#[derive(Debug)]
pub enum Written {
    /// The object as stored (or as it was at deletion).
    Stored(Obj),
    /// A value that was not stored (dry run).
    Unstored(Value),
}

impl Written {
    /// The JSON body to answer with.
    pub fn into_bytes(self) -> bytes::Bytes {
        match self {
            Written::Stored(o) => o.json(),
            Written::Unstored(v) => bytes::Bytes::from(serde_json::to_vec(&v).unwrap_or_default()),
        }
    }
}

/// How a DELETE treats dependents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Propagation {
    /// Delete the owner now, dependents afterwards (default).
    Background,
    /// Delete dependents first, then the owner.
    Foreground,
    /// Keep dependents, removing their owner reference.
    Orphan,
}

/// Options of a DELETE (query and `DeleteOptions` body).
#[derive(Clone, Debug)]
pub struct DeleteOpts {
    /// Propagation policy.
    pub propagation: Propagation,
    /// `preconditions.uid`.
    pub uid: Option<String>,
    /// `preconditions.resourceVersion`.
    pub resource_version: Option<Rev>,
    /// `dryRun=All`.
    pub dry_run: bool,
}

impl Default for DeleteOpts {
    fn default() -> DeleteOpts {
        DeleteOpts {
            propagation: Propagation::Background,
            uid: None,
            resource_version: None,
            dry_run: false,
        }
    }
}

/// Parses a resourceVersion string; a malformed one is a 400.
pub fn parse_rv(s: &str) -> ApiResult<Rev> {
    s.parse::<Rev>().map_err(|_| {
        ApiError::bad_request(format!("invalid resourceVersion {s:?}: must be an integer"))
    })
}

fn decode(obj: &Obj) -> ApiResult<Value> {
    serde_json::from_slice(&obj.json())
        .map_err(|e| ApiError::internal(format!("stored object is not JSON: {e}")))
}

/// Whether a stored object has `metadata.deletionTimestamp`, without building a `Value` of it:
/// every create checks its namespace this way, so it must not cost a full decode.
fn being_deleted(obj: &Obj) -> ApiResult<bool> {
    #[derive(serde::Deserialize)]
    struct Meta {
        #[serde(rename = "deletionTimestamp", default)]
        deletion_timestamp: Option<serde::de::IgnoredAny>,
    }
    #[derive(serde::Deserialize)]
    struct Partial {
        #[serde(default)]
        metadata: Option<Meta>,
    }
    let p: Partial = serde_json::from_slice(&obj.json())
        .map_err(|e| ApiError::internal(format!("stored object is not JSON: {e}")))?;
    Ok(p.metadata.is_some_and(|m| m.deletion_timestamp.is_some()))
}

/// Checks `apiVersion`/`kind` of a body against the endpoint, filling them in when absent.
pub fn check_type(info: &ResourceInfo, obj: &mut Value) -> ApiResult<()> {
    let want_av = info.api_version();
    let av = obj.get("apiVersion").and_then(Value::as_str);
    let kind = obj.get("kind").and_then(Value::as_str);
    if let Some(av) = av.filter(|s| !s.is_empty()) {
        // Any served version of the same group is accepted and converted (no schema changes
        // between CRD versions: the "None" conversion strategy).
        let group = av.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
        if group != info.group {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({av}) does not match the expected API version ({want_av})"
            )));
        }
    }
    if let Some(k) = kind.filter(|s| !s.is_empty())
        && k != info.kind
    {
        return Err(ApiError::bad_request(format!(
            "the kind in the data ({k}) does not match the expected kind ({})",
            info.kind
        )));
    }
    // The usual body already names exactly this type: nothing to rewrite.
    if av == Some(want_av.as_str()) && kind == Some(info.kind.as_str()) {
        return Ok(());
    }
    if let Some(m) = obj.as_object_mut() {
        m.insert("apiVersion".into(), json!(want_av));
        m.insert("kind".into(), json!(info.kind));
    }
    Ok(())
}

impl ApiServer {
    /// Whether `ns` exists and is not terminating: 404 NotFound / 403 Forbidden otherwise.
    pub(crate) fn check_namespace(&self, ns: &str) -> ApiResult<()> {
        let key = format!("/core/namespaces//{ns}");
        let Some(obj) = self.store().get(&key) else {
            return Err(ApiError::not_found("", "namespaces", ns));
        };
        if being_deleted(&obj)? {
            return Err(ApiError::forbidden(format!(
                "unable to create new content in namespace {ns} because it is being terminated"
            ))
            .with_details("", "namespaces", ns));
        }
        Ok(())
    }

    /// Creates an object (POST, or apply on a missing object).
    pub async fn create(
        &self,
        info: &ResourceInfo,
        ns: Option<&str>,
        mut obj: Value,
        dry_run: bool,
    ) -> ApiResult<Written> {
        check_type(info, &mut obj)?;
        let body_ns = meta_str(&obj, "namespace").map(str::to_string);
        let ns = if info.namespaced {
            let ns = match (ns, body_ns.as_deref()) {
                (Some(p), Some(b)) if !b.is_empty() && p != b => {
                    return Err(ApiError::bad_request(
                        "the namespace of the provided object does not match the namespace sent on the request",
                    ));
                }
                (Some(p), _) => p.to_string(),
                (None, Some(b)) if !b.is_empty() => b.to_string(),
                _ => {
                    return Err(ApiError::bad_request(
                        "a namespace is required to create a namespaced object",
                    ));
                }
            };
            Some(ns)
        } else {
            None
        };
        if info.kind == "CustomResourceDefinition" {
            // Creating instances of a CRD that is being deleted is refused by kube-apiserver too.
        } else if !info.builtin && self.crd_terminating(info) {
            return Err(ApiError::method_not_allowed(format!(
                "create not allowed while custom resource definition is terminating ({})",
                info.group_resource()
            )));
        }
        {
            let m = meta_mut(&mut obj);
            match &ns {
                Some(n) => {
                    m.insert("namespace".into(), json!(n));
                }
                None => {
                    m.remove("namespace");
                }
            }
            for f in [
                "resourceVersion",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "selfLink",
            ] {
                m.remove(f);
            }
            m.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
            m.insert("creationTimestamp".into(), json!(now()));
            if crate::storage::objects::tracks_generation(info) {
                m.insert("generation".into(), json!(1));
            } else {
                m.remove("generation");
            }
        }
        let generate = meta_str(&obj, "generateName")
            .map(str::to_string)
            .filter(|_| meta_str(&obj, "name").is_none_or(str::is_empty));
        if let Some(prefix) = &generate {
            meta_mut(&mut obj).insert("name".into(), json!(format!("{prefix}{}", random_suffix())));
        }
        if info.status
            && !info.builtin
            && let Some(m) = obj.as_object_mut()
        {
            m.remove("status");
        }
        strategy::prepare_create(info, &mut obj)?;
        self.validate(info, &mut obj, false)?;
        if let Some(n) = &ns {
            self.check_namespace(n)?;
        }
        if dry_run {
            return Ok(Written::Unstored(obj));
        }
        let mut attempts = 0;
        loop {
            let name = meta_str(&obj, "name").unwrap_or("").to_string();
            let key = info.key(ns.as_deref(), &name);
            // The object is only needed again to retry a generated name.
            let value = if generate.is_some() {
                obj.clone()
            } else {
                std::mem::take(&mut obj)
            };
            match self.store().create(&key, value).await {
                Ok(o) => {
                    strategy::after_write(self, info, &o, false);
                    return Ok(Written::Stored(o));
                }
                Err(StoreError::AlreadyExists(_)) if generate.is_some() && attempts < 5 => {
                    attempts += 1;
                    let prefix = generate.clone().unwrap_or_default();
                    meta_mut(&mut obj)
                        .insert("name".into(), json!(format!("{prefix}{}", random_suffix())));
                }
                Err(e) => return Err(ApiError::from_store(e, &info.group, &info.plural, &name)),
            }
        }
    }

    /// Metadata validation plus the CRD schema (prune, default, validate) for custom resources.
    /// `status_only`: a write of the status subresource, whose other fields are the stored
    /// object's (only its status goes through the CRD schema).
    fn validate(&self, info: &ResourceInfo, obj: &mut Value, status_only: bool) -> ApiResult<()> {
        let rule = strategy::name_rule(info);
        let mut causes: Vec<Cause> = validate_metadata(obj, rule);
        if let Some(schema) = &info.schema {
            causes.extend(if status_only {
                schema.process_status(obj)
            } else {
                schema.process(obj)
            });
        }
        causes.extend(strategy::validate(info, obj));
        if causes.is_empty() {
            crate::write::rbac_escalation::check_rbac_write(self, info, obj)
        } else {
            let name = meta_str(obj, "name").unwrap_or("").to_string();
            Err(ApiError::invalid(&info.group, &info.kind, &name, causes))
        }
    }

    fn crd_terminating(&self, info: &ResourceInfo) -> bool {
        let key = format!(
            "/apiextensions.k8s.io/customresourcedefinitions//{}.{}",
            info.plural, info.group
        );
        let Some(crd) = self.store().get(&key) else {
            return false;
        };
        let memo = &self.inner.crd_terminating;
        if let Some(&(rev, terminating)) = memo.lock().ok().as_ref().and_then(|m| m.get(&key))
            && rev == crd.rev
        {
            return terminating;
        }
        let terminating = being_deleted(&crd).unwrap_or(false);
        if let Ok(mut m) = memo.lock() {
            m.insert(key, (crd.rev, terminating));
        }
        terminating
    }

    /// Read-modify-write of one object. `mutate` gets the current object and returns the desired
    /// one (`None` = leave unchanged). `precondition` pins the revision (client-supplied
    /// resourceVersion: a mismatch is 409 Conflict); without it, conflicts are retried.
    /// `sub` is the subresource being written (`status`, `finalize`), which limits what changes.
    pub async fn guaranteed_update<F>(
        &self,
        info: &ResourceInfo,
        ns: Option<&str>,
        name: &str,
        sub: Option<&str>,
        dry_run: bool,
        mut mutate: F,
    ) -> ApiResult<Written>
    where
        F: FnMut(&Value) -> ApiResult<Option<Value>>,
    {
        let key = info.key(ns, name);
        let mut lost = 0;
        loop {
            let Some(cur) = self.store().get(&key) else {
                return Err(ApiError::not_found(&info.group, &info.plural, name));
            };
            let mut old = decode(&cur)?;
            // The callback sees the object without its resourceVersion, so that only a version
            // the client itself supplied acts as a precondition. Nothing below reads the old
            // resourceVersion (`cur.rev` is the precondition), so `old` itself is that view.
            meta_mut(&mut old).remove("resourceVersion");
            let Some(mut new) = mutate(&old)? else {
                return Ok(Written::Stored(cur));
            };
            // A resourceVersion in the desired object is a precondition.
            let precondition = match meta_str(&new, "resourceVersion").filter(|s| !s.is_empty()) {
                Some(rv) => Some(parse_rv(rv)?),
                None => None,
            };
            if let Some(p) = precondition
                && p != cur.rev
            {
                return Err(ApiError::conflict(&info.group, &info.plural, name));
            }
            self.prepare_update(info, &old, &mut new, sub)?;
            if dry_run {
                return Ok(Written::Unstored(new));
            }
            if same_object(&old, &new) {
                return Ok(Written::Stored(cur));
            }
            let deleting = crate::storage::objects::meta_get(&new, "deletionTimestamp").is_some();
            let remove =
                deleting && finalizers(&new).is_empty() && !strategy::blocks_deletion(info, &new);
            let result = if remove {
                self.store().delete(&key, Some(cur.rev)).await
            } else {
                self.store().update(&key, Some(cur.rev), new).await
            };
            match result {
                Ok(o) => {
                    strategy::after_write(self, info, &o, remove);
                    if deleting {
                        self.inner.gc_kick.notify_one();
                    }
                    return Ok(Written::Stored(o));
                }
                Err(StoreError::Conflict { .. }) if precondition.is_none() => {
                    lost += 1;
                    after_lost_race(lost).await;
                }
                Err(e) => return Err(ApiError::from_store(e, &info.group, &info.plural, name)),
            }
        }
    }

    /// Turns a client's desired object into what gets stored: immutable metadata kept, status
    /// or spec frozen depending on the subresource, generation bumped on spec changes, schema
    /// and metadata validated.
    fn prepare_update(
        &self,
        info: &ResourceInfo,
        old: &Value,
        new: &mut Value,
        sub: Option<&str>,
    ) -> ApiResult<()> {
        check_type(info, new)?;
        check_name_matches(new, meta_str(old, "name").unwrap_or(""))?;
        if info.namespaced
            && let (Some(a), Some(b)) = (meta_str(old, "namespace"), meta_str(new, "namespace"))
            && !b.is_empty()
            && a != b
        {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        // Field ownership is recorded on every write, subresources included: a subresource write
        // replaces the object with the old one, so its managedFields are carried over.
        let managed = match sub {
            // Taken rather than cloned where `new` may be replaced by a copy of `old` below; the
            // key stays where it is, so a `new` that is kept keeps `old`'s order of fields.
            Some("status" | "finalize") => new
                .get_mut("metadata")
                .and_then(Value::as_object_mut)
                .and_then(|m| m.get_mut("managedFields"))
                .map(Value::take),
            Some(_) => crate::storage::objects::meta_get(new, "managedFields").cloned(),
            None => None,
        };
        match sub {
            // Most status writes (a merge patch of `status`, a read-modify-write) change nothing
            // else: `new` is then already what the copy of `old` would be.
            Some("status") if same_but_status(old, new) => {
                // A resourceVersion the client sent was its precondition (checked above), and
                // `old` has none: removed in place, the remaining fields keep `old`'s order.
                meta_mut(new).shift_remove("resourceVersion");
            }
            Some("status") => {
                let status = new.as_object_mut().and_then(|m| m.remove("status"));
                let mut merged = old.clone();
                if let Some(m) = merged.as_object_mut() {
                    match status {
                        Some(s) => m.insert("status".into(), s),
                        None => m.remove("status"),
                    };
                }
                *new = merged;
            }
            Some("finalize") => {
                let fin = new.pointer("/spec/finalizers").cloned();
                let mut merged = old.clone();
                crate::storage::objects::set_path(
                    &mut merged,
                    "spec.finalizers",
                    fin.unwrap_or(json!([])),
                );
                *new = merged;
            }
            _ => {
                if info.status
                    && let Some(m) = new.as_object_mut()
                {
                    match old.get("status") {
                        Some(s) => m.insert("status".into(), s.clone()),
                        None => m.remove("status"),
                    };
                }
            }
        }
        if sub.is_some() {
            let m = meta_mut(new);
            match managed {
                Some(mf) => m.insert("managedFields".into(), mf),
                None => m.remove("managedFields"),
            };
        }
        let no_meta = Value::Object(Default::default());
        let old_meta = old.get("metadata").unwrap_or(&no_meta);
        let bump = sub.is_none() && spec_changed(old, new);
        {
            let m = meta_mut(new);
            m.remove("resourceVersion");
            m.remove("selfLink");
            for f in [
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "namespace",
                "name",
                "generation",
            ] {
                match old_meta.get(f) {
                    Some(v) => m.insert(f.into(), v.clone()),
                    None => m.remove(f),
                };
            }
            if crate::storage::objects::tracks_generation(info) {
                let generation = old_meta
                    .get("generation")
                    .and_then(Value::as_i64)
                    .unwrap_or(1);
                m.insert(
                    "generation".into(),
                    json!(if bump { generation + 1 } else { generation }),
                );
            }
        }
        if crate::storage::objects::meta_get(old, "deletionTimestamp").is_some() {
            // New finalizers may not be added to an object being deleted.
            let before = finalizers(old);
            let added: Vec<String> = finalizers(new)
                .into_iter()
                .filter(|f| !before.contains(f))
                .collect();
            if !added.is_empty() {
                return Err(ApiError::forbidden(format!(
                    "no new finalizers can be added if the object is being deleted, found new finalizers {added:?}"
                )));
            }
        }
        strategy::prepare_update(info, old, new)?;
        self.validate(info, new, sub == Some("status"))
    }

    /// Deletes an object: immediately when nothing blocks it, otherwise by setting
    /// `deletionTimestamp` and leaving finalizers (and the garbage collector) to finish.
    pub async fn delete(
        &self,
        info: &ResourceInfo,
        ns: Option<&str>,
        name: &str,
        opts: &DeleteOpts,
    ) -> ApiResult<Written> {
        if info.builtin
            && info.kind == "Namespace"
            && ["default", "kube-system", "kube-public"].contains(&name)
        {
            return Err(ApiError::forbidden(format!(
                "namespaces \"{name}\" is forbidden: this namespace may not be deleted"
            ))
            .with_details("", "namespaces", name));
        }
        let key = info.key(ns, name);
        let mut lost = 0;
        loop {
            let Some(cur) = self.store().get(&key) else {
                return Err(ApiError::not_found(&info.group, &info.plural, name));
            };
            let mut obj = decode(&cur)?;
            if let Some(uid) = &opts.uid
                && meta_str(&obj, "uid") != Some(uid.as_str())
            {
                return Err(ApiError::conflict(&info.group, &info.plural, name));
            }
            if let Some(rv) = opts.resource_version
                && rv != cur.rev
            {
                return Err(ApiError::conflict(&info.group, &info.plural, name));
            }
            let mut fins = finalizers(&obj);
            let extra = match opts.propagation {
                Propagation::Foreground => Some(FOREGROUND),
                Propagation::Orphan => Some(ORPHAN),
                Propagation::Background => None,
            };
            if let Some(f) = extra
                && !fins.iter().any(|x| x == f)
            {
                fins.push(f.to_string());
            }
            let blocked = !fins.is_empty() || strategy::blocks_deletion(info, &obj);
            if opts.dry_run {
                return Ok(Written::Unstored(obj));
            }
            let result = if blocked {
                let already =
                    crate::storage::objects::meta_get(&obj, "deletionTimestamp").is_some();
                if already && fins == finalizers(&obj) {
                    return Ok(Written::Stored(cur));
                }
                {
                    let m = meta_mut(&mut obj);
                    if !already {
                        m.insert("deletionTimestamp".into(), json!(now()));
                        m.insert("deletionGracePeriodSeconds".into(), json!(0));
                    }
                    m.insert("finalizers".into(), json!(fins));
                    m.remove("resourceVersion");
                }
                strategy::on_delete_marked(info, &mut obj);
                self.store().update(&key, Some(cur.rev), obj).await
            } else {
                self.store().delete(&key, Some(cur.rev)).await
            };
            match result {
                Ok(o) => {
                    strategy::after_write(self, info, &o, !blocked);
                    self.inner.gc_kick.notify_one();
                    return Ok(Written::Stored(o));
                }
                Err(StoreError::Conflict { .. }) if opts.resource_version.is_none() => {
                    lost += 1;
                    after_lost_race(lost).await;
                }
                Err(e) => return Err(ApiError::from_store(e, &info.group, &info.plural, name)),
            }
        }
    }
}

/// Whether a status write's `new` object is `old` but for its status, field for field and in
/// the same order (the values of `metadata.managedFields` aside: the write's own are set
/// afterwards), so that keeping `new` stores exactly what replacing `old`'s status would. A
/// status `old` lacks may come last in `new`, where inserting it into a copy of `old` puts it.
fn same_but_status(old: &Value, new: &Value) -> bool {
    let (Some(o), Some(n)) = (old.as_object(), new.as_object()) else {
        return false;
    };
    let added = !o.contains_key("status") && n.keys().next_back().is_some_and(|k| k == "status");
    if o.len() + usize::from(added) != n.len() {
        return false;
    }
    o.iter().zip(n.iter()).all(|((ko, vo), (kn, vn))| {
        ko == kn
            && match ko.as_str() {
                "status" => true,
                "metadata" => same_meta(vo, vn),
                _ => ordered_eq(vo, vn),
            }
    })
}

/// [`ordered_eq`] for two `metadata` objects, whatever their `managedFields` hold, and with
/// the `resourceVersion` a client sends in `new` (`old` has none) left out.
fn same_meta(old: &Value, new: &Value) -> bool {
    let (Some(o), Some(n)) = (old.as_object(), new.as_object()) else {
        return false;
    };
    let rv = o.contains_key("resourceVersion");
    let n = || n.iter().filter(|(k, _)| rv || *k != "resourceVersion");
    o.len() == n().count()
        && o.iter()
            .zip(n())
            .all(|((ko, vo), (kn, vn))| ko == kn && (ko == "managedFields" || ordered_eq(vo, vn)))
}

/// Equality that also requires every object's fields in the same order (`Value`'s own `==`
/// ignores the order, which is kept in what is stored).
fn ordered_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y.iter())
                    .all(|((kx, vx), (ky, vy))| kx == ky && ordered_eq(vx, vy))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| ordered_eq(p, q))
        }
        _ => a == b,
    }
}

/// A body naming another object than the URL is a 400, checked before the object is looked up
/// (kube-apiserver answers BadRequest even when the URL's object does not exist).
pub fn check_name_matches(obj: &Value, url_name: &str) -> ApiResult<()> {
    match meta_str(obj, "name").filter(|n| !n.is_empty()) {
        Some(n) if n != url_name => Err(ApiError::bad_request(format!(
            "the name of the object ({n}) does not match the name on the URL ({url_name})"
        ))),
        _ => Ok(()),
    }
}
