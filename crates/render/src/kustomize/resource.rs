//! Resources as kustomize tracks them: the object plus the names it had before prefixes,
//! suffixes, namespaces and hashes changed it (needed to fix references afterwards).

use super::yamlin::{self, Schema};
use super::{FileSource, KustomizeError};
use serde_json::Value;
use std::cmp::Ordering;
use std::path::{Path, PathBuf};

/// Group/version/kind + name/namespace of a resource.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResId {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub name: String,
    pub namespace: String,
    /// Cached [`is_cluster_scoped`] of group/kind (hot in name-reference matching).
    cluster_scoped: bool,
}

impl ResId {
    /// The id of an object as it is now.
    pub fn of(obj: &Value) -> ResId {
        let api = str_at(obj, &["apiVersion"]);
        let (group, version) = match api.split_once('/') {
            Some((g, v)) => (g.to_string(), v.to_string()),
            None => (String::new(), api.to_string()),
        };
        let kind = str_at(obj, &["kind"]).to_string();
        ResId {
            cluster_scoped: is_cluster_scoped(&group, &kind),
            group,
            version,
            kind,
            name: str_at(obj, &["metadata", "name"]).to_string(),
            namespace: str_at(obj, &["metadata", "namespace"]).to_string(),
        }
    }

    /// Whether the kind is cluster-scoped per the built-in Kubernetes API.
    pub fn is_cluster_scoped(&self) -> bool {
        self.cluster_scoped
    }

    /// Identity key for duplicate detection (kustomize's `ResId.Equals`).
    fn key(&self) -> (String, String, String, String, String) {
        (
            self.group.clone(),
            self.version.clone(),
            self.kind.clone(),
            self.name.clone(),
            self.effective_namespace().to_string(),
        )
    }

    /// The namespace used for equality: "" means "default"; cluster-scoped ids have none.
    pub fn effective_namespace(&self) -> &str {
        if self.is_cluster_scoped() {
            "_non_namespaceable_"
        } else if self.namespace.is_empty() {
            "default"
        } else {
            &self.namespace
        }
    }

    /// kustomize's `ResId.Equals`.
    pub fn same(&self, o: &ResId) -> bool {
        self.group == o.group
            && self.version == o.version
            && self.kind == o.kind
            && self.name == o.name
            && self.effective_namespace() == o.effective_namespace()
    }

    /// Like kustomize's `ResId.String()`, for messages.
    pub fn display(&self) -> String {
        let or = |s: &str, d: &str| {
            if s.is_empty() {
                d.to_string()
            } else {
                s.to_string()
            }
        };
        format!(
            "{}.{}.{}/{}.{}",
            or(&self.kind, "[noKind]"),
            or(&self.version, "[noVer]"),
            or(&self.group, "[noGrp]"),
            or(&self.name, "[noName]"),
            or(&self.namespace, "[noNs]")
        )
    }
}

/// Kinds the Kubernetes API serves cluster-wide (kustomize reads this from OpenAPI data).
pub fn is_cluster_scoped(group: &str, kind: &str) -> bool {
    matches!(
        (group, kind),
        ("", "Namespace")
            | ("", "Node")
            | ("", "PersistentVolume")
            | ("", "ComponentStatus")
            | ("rbac.authorization.k8s.io", "ClusterRole")
            | ("rbac.authorization.k8s.io", "ClusterRoleBinding")
            | ("apiextensions.k8s.io", "CustomResourceDefinition")
            | ("storage.k8s.io", "StorageClass")
            | ("storage.k8s.io", "CSIDriver")
            | ("storage.k8s.io", "CSINode")
            | ("storage.k8s.io", "VolumeAttachment")
            | ("scheduling.k8s.io", "PriorityClass")
            | ("apiregistration.k8s.io", "APIService")
            | (
                "admissionregistration.k8s.io",
                "MutatingWebhookConfiguration"
            )
            | (
                "admissionregistration.k8s.io",
                "ValidatingWebhookConfiguration"
            )
            | ("policy", "PodSecurityPolicy")
            | ("extensions", "PodSecurityPolicy")
            | ("networking.k8s.io", "IngressClass")
            | ("node.k8s.io", "RuntimeClass")
            | ("certificates.k8s.io", "CertificateSigningRequest")
            | ("flowcontrol.apiserver.k8s.io", "FlowSchema")
            | ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration")
            | ("authentication.k8s.io", "TokenReview")
            | ("authorization.k8s.io", "SelfSubjectAccessReview")
            | ("authorization.k8s.io", "SelfSubjectRulesReview")
            | ("authorization.k8s.io", "SubjectAccessReview")
    )
}

pub(crate) fn str_at<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    let mut cur = v;
    for p in path {
        match cur.get(p) {
            Some(n) => cur = n,
            None => return "",
        }
    }
    cur.as_str().unwrap_or("")
}

/// One resource in a build.
#[derive(Debug, Clone)]
pub struct Res {
    /// The object.
    pub obj: Value,
    /// Ids it had before renames (oldest first); kustomize's `PrevIds`.
    pub(crate) prev_ids: Vec<ResId>,
    /// Name prefixes/suffixes applied by each kustomization layer (kustomize's `ResCtx`).
    pub(crate) prefixes: Vec<String>,
    pub(crate) suffixes: Vec<String>,
    /// Generated ConfigMap/Secret that gets a content hash appended at the end.
    pub(crate) needs_hash: bool,
    /// Generator behavior (`create`/`merge`/`replace`), for generated resources.
    pub(crate) behavior: String,
    /// File the resource was read from (for errors).
    pub(crate) source: PathBuf,
}

impl Res {
    /// Wraps an object read from `source`.
    pub fn new(obj: Value, source: &Path) -> Res {
        Res {
            obj,
            prev_ids: Vec::new(),
            prefixes: Vec::new(),
            suffixes: Vec::new(),
            needs_hash: false,
            behavior: String::new(),
            source: source.to_path_buf(),
        }
    }

    /// Current id.
    pub fn id(&self) -> ResId {
        ResId::of(&self.obj)
    }

    /// The id the resource was created with.
    pub fn org_id(&self) -> ResId {
        self.prev_ids.first().cloned().unwrap_or_else(|| self.id())
    }

    /// Records the current id before a rename.
    pub(crate) fn store_previous_id(&mut self) {
        self.prev_ids.push(self.id());
    }

    pub(crate) fn name(&self) -> &str {
        str_at(&self.obj, &["metadata", "name"])
    }

    pub(crate) fn namespace(&self) -> &str {
        str_at(&self.obj, &["metadata", "namespace"])
    }

    pub(crate) fn set_name(&mut self, name: &str) {
        set_meta(&mut self.obj, "name", name);
    }

    pub(crate) fn set_namespace(&mut self, ns: &str) {
        set_meta(&mut self.obj, "namespace", ns);
    }
}

fn set_meta(obj: &mut Value, key: &str, val: &str) {
    if let Value::Object(m) = obj {
        let meta = m
            .entry("metadata")
            .or_insert_with(|| Value::Object(Default::default()));
        if !meta.is_object() {
            *meta = Value::Object(Default::default());
        }
        if let Value::Object(mm) = meta {
            mm.insert(key.to_string(), Value::String(val.to_string()));
        }
    }
}

/// An ordered list of resources with unique ids (kustomize's `ResMap`).
#[derive(Debug, Default, Clone)]
pub struct ResMap {
    pub(crate) list: Vec<Res>,
}

/// An error without file context yet.
#[derive(Debug)]
pub struct ResMapError {
    pub msg: String,
}

impl ResMap {
    /// Appends, refusing a second resource with the same current id.
    pub fn append(&mut self, r: Res) -> Result<(), ResMapError> {
        let id = r.id();
        if self.list.iter().any(|x| x.id().same(&id)) {
            return Err(ResMapError {
                msg: format!(
                    "may not add resource with an already registered id: {}",
                    id.display()
                ),
            });
        }
        self.list.push(r);
        Ok(())
    }

    /// Appends every resource of another map (one pass over existing ids, not one per item).
    pub fn absorb(&mut self, other: ResMap) -> Result<(), ResMapError> {
        self.append_all(other.list)
    }

    /// Errors if two resources share an id (after a transformation renamed them).
    pub fn check_unique(&self) -> Result<(), ResMapError> {
        let mut seen = std::collections::HashSet::new();
        for r in &self.list {
            let id = r.id();
            if !seen.insert(id.key()) {
                return Err(ResMapError {
                    msg: format!("duplicate id {}", id.display()),
                });
            }
        }
        Ok(())
    }

    /// Appends resources, refusing any whose id is already present (or repeated).
    pub fn append_all(&mut self, items: Vec<Res>) -> Result<(), ResMapError> {
        let mut seen: std::collections::HashSet<_> =
            self.list.iter().map(|r| r.id().key()).collect();
        for r in items {
            let id = r.id();
            if !seen.insert(id.key()) {
                return Err(ResMapError {
                    msg: format!(
                        "may not add resource with an already registered id: {}",
                        id.display()
                    ),
                });
            }
            self.list.push(r);
        }
        Ok(())
    }

    /// The resources, consuming the map.
    pub fn into_vec(self) -> Vec<Res> {
        self.list
    }
}

/// Reads every object in a YAML (or JSON) file; `List` kinds are expanded as kustomize does.
pub fn load_resources(fs: &dyn FileSource, path: &Path) -> Result<Vec<Res>, KustomizeError> {
    let bytes = fs
        .read(path)
        .map_err(|e| KustomizeError::in_file(path, format!("cannot read: {e}")))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| KustomizeError::in_file(path, "file is not valid UTF-8"))?;
    parse_resources(path, &text)
}

/// Parses resources from text; `path` names the source in errors.
pub fn parse_resources(path: &Path, text: &str) -> Result<Vec<Res>, KustomizeError> {
    let docs = yamlin::parse_documents(text, Schema::V3)
        .map_err(|e| KustomizeError::at(path, e.line, None, e.msg))?;
    let mut out = Vec::new();
    for d in docs {
        let line = d.line;
        let v = d.into_json();
        push_object(path, line, v, &mut out)?;
    }
    Ok(out)
}

fn push_object(
    path: &Path,
    line: usize,
    v: Value,
    out: &mut Vec<Res>,
) -> Result<(), KustomizeError> {
    let Value::Object(ref m) = v else {
        return Err(KustomizeError::at(
            path,
            line,
            None,
            "expected a Kubernetes object (a mapping)",
        ));
    };
    if m.is_empty() {
        return Ok(()); // kustomize drops empty documents
    }
    let kind = m.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind.ends_with("List") && m.get("items").is_some_and(Value::is_array) {
        if let Some(Value::Array(items)) = m.get("items") {
            for it in items.clone() {
                push_object(path, line, it, out)?;
            }
        }
        return Ok(());
    }
    if kind.is_empty() {
        return Err(KustomizeError::at(
            path,
            line,
            Some("kind"),
            "missing kind in object",
        ));
    }
    if str_at(&v, &["metadata", "name"]).is_empty() {
        return Err(KustomizeError::at(
            path,
            line,
            Some("metadata.name"),
            format!("missing metadata.name in {kind} object"),
        ));
    }
    out.push(Res::new(v, path));
    Ok(())
}

const ORDER_FIRST: [&str; 22] = [
    "Namespace",
    "ResourceQuota",
    "StorageClass",
    "CustomResourceDefinition",
    "ServiceAccount",
    "PodSecurityPolicy",
    "Role",
    "ClusterRole",
    "RoleBinding",
    "ClusterRoleBinding",
    "ConfigMap",
    "Secret",
    "Endpoints",
    "Service",
    "LimitRange",
    "PriorityClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "Deployment",
    "StatefulSet",
    "CronJob",
    "PodDisruptionBudget",
];
const ORDER_LAST: [&str; 2] = [
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
];

fn type_order(kind: &str) -> i64 {
    if let Some(i) = ORDER_FIRST.iter().position(|k| *k == kind) {
        return i as i64 - ORDER_FIRST.len() as i64;
    }
    if let Some(i) = ORDER_LAST.iter().position(|k| *k == kind) {
        return 1 + i as i64;
    }
    0
}

fn or_tilde(s: &str, d: &'static str) -> String {
    if s.is_empty() {
        d.to_string()
    } else {
        s.to_string()
    }
}

fn gvk_legacy(id: &ResId) -> String {
    format!(
        "{}_{}_{}",
        or_tilde(&id.group, "~G"),
        or_tilde(&id.version, "~V"),
        or_tilde(&id.kind, "~K")
    )
}

fn gvk_string(id: &ResId) -> String {
    format!(
        "{}.{}.{}",
        or_tilde(&id.kind, "[noKind]"),
        or_tilde(&id.version, "[noVer]"),
        or_tilde(&id.group, "[noGrp]")
    )
}

fn id_legacy(id: &ResId) -> String {
    format!(
        "{}|{}|{}",
        gvk_string(id),
        or_tilde(&id.namespace, "~X"),
        or_tilde(&id.name, "~N")
    )
}

/// kustomize's legacy output order: well-known kinds first (Namespace, ..., Deployment),
/// webhooks last, everything else in between, then by group/version/kind, namespace, name.
pub fn legacy_sort(list: &mut [Res]) {
    let mut keyed: Vec<(ResId, usize)> =
        list.iter().enumerate().map(|(i, r)| (r.id(), i)).collect();
    keyed.sort_by(|(a, _), (b, _)| legacy_cmp(a, b));
    let order: Vec<usize> = keyed.into_iter().map(|(_, i)| i).collect();
    let mut taken: Vec<Option<Res>> = list.iter().cloned().map(Some).collect();
    for (slot, idx) in order.into_iter().enumerate() {
        if let Some(r) = taken.get_mut(idx).and_then(Option::take) {
            list[slot] = r;
        }
    }
}

fn legacy_cmp(a: &ResId, b: &ResId) -> Ordering {
    let same_gvk = a.group == b.group && a.version == b.version && a.kind == b.kind;
    if !same_gvk {
        let (ia, ib) = (type_order(&a.kind), type_order(&b.kind));
        if ia != ib {
            return ia.cmp(&ib);
        }
        return gvk_legacy(a).cmp(&gvk_legacy(b));
    }
    id_legacy(a).cmp(&id_legacy(b))
}
