//! RBAC authorization with Kubernetes semantics (`rbac.authorization.k8s.io/v1`).
//!
//! [`Authorizer`] keeps an in-memory copy of every Role, ClusterRole, RoleBinding and
//! ClusterRoleBinding, fed by [`Authorizer::apply`] / [`Authorizer::remove`] from the store's watch
//! events, and indexed by subject so that a request's decision costs a few hash lookups for the
//! user's name and groups, never a scan of all bindings. It knows nothing of the store or HTTP:
//! the REST layer turns a request into [`Attributes`] and a Status from a [`Decision`].
//!
//! Steps 1-3 below are wired into request handling by `controllers::rbac_policy`,
//! `http::authorize` and `write::rbac_escalation` (plus `http::impersonate` and
//! `http::reviews`). The plan:
//! 1. `ApiServer` holds the authorizer behind a lock; on first start it creates
//!    [`bootstrap_objects`], then lists and watches roles, clusterroles, rolebindings and
//!    clusterrolebindings, feeding added/modified events to `apply` and deleted ones to `remove`.
//! 2. After authentication every request becomes [`Attributes`] (GET one → `get`, GET collection →
//!    `list`, `?watch` → `watch`, POST → `create`, PUT → `update`, PATCH → `patch`, DELETE one →
//!    `delete`, DELETE collection → `deletecollection`; non-resource paths → lower-cased method +
//!    path); a denial is a 403 Status with reason `Forbidden` and `Attributes::forbidden_message`.
//! 3. Writes of RBAC objects call [`validate`] (422) and then `check_role_write` /
//!    `check_binding_write` (403 naming the missing rules).
//! 4. `auth.rs` sends three-part bearer tokens to `satoken::SigningKey::authenticate` (uid lookups
//!    through the store) before the static admin token; `serviceaccounts/NAME/token` answers with
//!    `satoken::token_request_status`; Secrets of type `kubernetes.io/service-account-token` get
//!    `data.token` from `sign_legacy`.

mod bootstrap;
mod rule;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use serde_json::Value;

pub use bootstrap::bootstrap_objects;
pub use rule::{ALL, PolicyRule, uncovered};

use crate::security::auth::UserInfo;
use crate::storage::selectors::{LabelReq, LabelSelector};

/// The RBAC API group.
pub const GROUP: &str = "rbac.authorization.k8s.io";
/// Members of this group are allowed everything, whatever the bindings say (as kube-apiserver).
pub const MASTERS_GROUP: &str = "system:masters";
/// The user-name prefix of service accounts: `system:serviceaccount:NS:NAME`.
pub const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// The user name a service account authenticates as.
pub fn service_account_user(namespace: &str, name: &str) -> String {
    format!("{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}")
}

/// What a request wants to do, as kube-apiserver's `authorizer.Attributes` (minus the user,
/// which is passed separately so one `Attributes` can be checked for several users).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Attributes {
    /// The verb: `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`,
    /// `deletecollection`, or a special verb (`bind`, `escalate`, `impersonate`, `use`); for
    /// non-resource requests the lower-cased HTTP method (`get`, `post`, ...).
    pub verb: String,
    /// The API group (`""` for the core group). Empty for non-resource requests.
    pub api_group: String,
    /// The resource (plural), e.g. `bundledeployments`. Empty means a non-resource request.
    pub resource: String,
    /// The subresource, e.g. `status`, or empty.
    pub subresource: String,
    /// The namespace, or empty for cluster-scoped resources and cluster-wide lists.
    pub namespace: String,
    /// The object name, or empty for lists and creates without a name.
    pub name: String,
    /// The URL path of a non-resource request (`/healthz`).
    pub path: String,
}

impl Attributes {
    /// A resource request.
    pub fn resource(verb: &str, api_group: &str, resource: &str) -> Attributes {
        Attributes {
            verb: verb.into(),
            api_group: api_group.into(),
            resource: resource.into(),
            ..Default::default()
        }
    }

    /// A non-resource request for `path`.
    pub fn non_resource(verb: &str, path: &str) -> Attributes {
        Attributes {
            verb: verb.into(),
            path: path.into(),
            ..Default::default()
        }
    }

    /// Sets the subresource.
    pub fn subresource(mut self, subresource: &str) -> Attributes {
        self.subresource = subresource.into();
        self
    }

    /// Sets the namespace.
    pub fn namespace(mut self, namespace: &str) -> Attributes {
        self.namespace = namespace.into();
        self
    }

    /// Sets the object name.
    pub fn name(mut self, name: &str) -> Attributes {
        self.name = name.into();
        self
    }

    /// Whether this is a request for an API resource (rather than a URL like `/healthz`).
    pub fn is_resource_request(&self) -> bool {
        !self.resource.is_empty()
    }

    /// kube-apiserver's forbidden message (`User "u" cannot get resource "pods" in API group ""
    /// in the namespace "default"`), for the 403 Status body.
    pub fn forbidden_message(&self, user: &str) -> String {
        if !self.is_resource_request() {
            return format!("User {user:?} cannot {} path {:?}", self.verb, self.path);
        }
        let resource = if self.subresource.is_empty() {
            format!("resource {:?}", self.resource)
        } else {
            format!("resource \"{}/{}\"", self.resource, self.subresource)
        };
        let scope = if self.namespace.is_empty() {
            "at the cluster scope".to_string()
        } else {
            format!("in the namespace {:?}", self.namespace)
        };
        format!(
            "User {user:?} cannot {} {resource} in API group {:?} {scope}",
            self.verb, self.api_group
        )
    }
}

/// The outcome of an authorization check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// Whether the request may proceed.
    pub allowed: bool,
    /// Why: which binding and role allowed it, or why it was denied (for audit and 403 bodies).
    pub reason: String,
}

impl Decision {
    fn allow(reason: String) -> Decision {
        Decision {
            allowed: true,
            reason,
        }
    }

    fn deny(reason: String) -> Decision {
        Decision {
            allowed: false,
            reason,
        }
    }
}

/// A Role/ClusterRole/binding object that could not be read, naming the object and field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} {name:?}: {field}: {message}")]
pub struct RbacError {
    /// The object's kind.
    pub kind: String,
    /// The object's `namespace/name` (or name).
    pub name: String,
    /// The JSON path of the offending field.
    pub field: String,
    /// What is wrong with it.
    pub message: String,
}

/// The four RBAC kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Namespaced rules.
    Role,
    /// Cluster-wide rules (or an aggregation of other ClusterRoles).
    ClusterRole,
    /// Grants a Role or ClusterRole within one namespace.
    RoleBinding,
    /// Grants a ClusterRole everywhere.
    ClusterRoleBinding,
}

impl Kind {
    /// Parses a `kind` field.
    pub fn parse(kind: &str) -> Option<Kind> {
        match kind {
            "Role" => Some(Kind::Role),
            "ClusterRole" => Some(Kind::ClusterRole),
            "RoleBinding" => Some(Kind::RoleBinding),
            "ClusterRoleBinding" => Some(Kind::ClusterRoleBinding),
            _ => None,
        }
    }

    /// The `kind` string.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Role => "Role",
            Kind::ClusterRole => "ClusterRole",
            Kind::RoleBinding => "RoleBinding",
            Kind::ClusterRoleBinding => "ClusterRoleBinding",
        }
    }

    /// The REST resource name (`roles`, ...), as used in `bind`/`escalate` checks.
    pub fn resource(self) -> &'static str {
        match self {
            Kind::Role => "roles",
            Kind::ClusterRole => "clusterroles",
            Kind::RoleBinding => "rolebindings",
            Kind::ClusterRoleBinding => "clusterrolebindings",
        }
    }

    fn namespaced(self) -> bool {
        matches!(self, Kind::Role | Kind::RoleBinding)
    }
}

/// A binding's subject in the form requests are matched by: service accounts become their user
/// names, so one user index serves both.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Subject {
    User(String),
    Group(String),
}

/// A borrowed [`Subject`], handed to index visitors without allocating.
#[derive(Clone, Copy, Debug)]
enum SubjectRef<'a> {
    User(&'a str),
    Group(&'a str),
}

impl SubjectRef<'_> {
    fn describe(self) -> String {
        match self {
            SubjectRef::User(u) => format!("User {u:?}"),
            SubjectRef::Group(g) => format!("Group {g:?}"),
        }
    }
}

#[derive(Clone, Debug)]
struct Binding {
    /// `Role` or `ClusterRole`.
    role_kind: Kind,
    role_name: String,
    subjects: Vec<Subject>,
    /// For a RoleBinding whose Role grants only named objects (every rule has `resourceNames`,
    /// or the Role does not exist yet): those names, under which it is indexed in
    /// `Authorizer::named` instead of the subject index. `None` for every other binding.
    named: Option<Box<[String]>>,
}

impl Binding {
    /// The subject of this binding that `user` is (its name first, then its groups in order).
    fn subject_of<'u>(&self, user: &'u UserInfo) -> Option<SubjectRef<'u>> {
        let by_name = self
            .subjects
            .iter()
            .any(|s| matches!(s, Subject::User(u) if *u == user.name));
        if by_name {
            return Some(SubjectRef::User(&user.name));
        }
        user.groups
            .iter()
            .find(|g| {
                self.subjects
                    .iter()
                    .any(|s| matches!(s, Subject::Group(x) if x == *g))
            })
            .map(|g| SubjectRef::Group(g))
    }
}

/// The object names a Role's rules are limited to, if every rule is limited to names: a binding
/// of such a Role can only allow requests for those objects. A missing Role grants nothing, so
/// it is limited to no names at all.
fn named_only(rules: Option<&[PolicyRule]>) -> Option<Box<[String]>> {
    let Some(rules) = rules else {
        return Some(Box::new([]));
    };
    if rules.iter().any(|r| r.resource_names.is_empty()) {
        return None;
    }
    let names: BTreeSet<&String> = rules.iter().flat_map(|r| &r.resource_names).collect();
    Some(names.into_iter().cloned().collect())
}

#[derive(Clone, Debug)]
struct ClusterRoleEntry {
    labels: BTreeMap<String, String>,
    rules: Arc<[PolicyRule]>,
    /// `aggregationRule.clusterRoleSelectors`; a match on any selector aggregates that role.
    aggregation: Option<Vec<LabelSelector>>,
    /// The rules in force: `rules`, or for aggregated roles the union of the selected roles'.
    effective: Arc<[PolicyRule]>,
}

/// A set of binding names, in byte order, as a sorted list.
///
/// Why not a `BTreeSet<String>`: almost every set in the indexes holds one name (a manager has a
/// few bindings per registered cluster, each for its own subject, object or Role), and a
/// one-element `BTreeSet` allocates a whole node (~300 bytes) besides the name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct NameSet(Vec<Box<str>>);

impl NameSet {
    fn insert(&mut self, name: &str) {
        if let Err(at) = self.0.binary_search_by(|n| (**n).cmp(name)) {
            self.0.insert(at, name.into());
        }
    }

    fn remove(&mut self, name: &str) {
        if let Ok(at) = self.0.binary_search_by(|n| (**n).cmp(name)) {
            self.0.remove(at);
        }
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn iter(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|n| &**n)
    }
}

impl<'a> IntoIterator for &'a NameSet {
    type Item = &'a str;
    type IntoIter = std::iter::Map<std::slice::Iter<'a, Box<str>>, fn(&'a Box<str>) -> &'a str>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|n| &**n)
    }
}

/// Binding names per subject, split by subject kind so lookups borrow `&str` without allocating.
#[derive(Clone, Debug, Default)]
struct SubjectIndex {
    users: HashMap<String, NameSet>,
    groups: HashMap<String, NameSet>,
}

impl SubjectIndex {
    fn insert(&mut self, subject: &Subject, binding: &str) {
        let (map, key) = match subject {
            Subject::User(u) => (&mut self.users, u),
            Subject::Group(g) => (&mut self.groups, g),
        };
        map.entry(key.clone()).or_default().insert(binding);
    }

    fn remove(&mut self, subject: &Subject, binding: &str) {
        let (map, key) = match subject {
            Subject::User(u) => (&mut self.users, u),
            Subject::Group(g) => (&mut self.groups, g),
        };
        if let Some(set) = map.get_mut(key) {
            set.remove(binding);
            if set.is_empty() {
                map.remove(key);
            }
        }
    }

    fn is_empty(&self) -> bool {
        self.users.is_empty() && self.groups.is_empty()
    }

    /// Calls `f(binding name, matched subject)` for every binding naming the user or a group;
    /// stops early when `f` returns true.
    fn visit<'u>(
        &self,
        user: &'u UserInfo,
        mut f: impl FnMut(&str, SubjectRef<'u>) -> bool,
    ) -> bool {
        if let Some(names) = self.users.get(user.name.as_str()) {
            for n in names {
                if f(n, SubjectRef::User(&user.name)) {
                    return true;
                }
            }
        }
        for g in &user.groups {
            if let Some(names) = self.groups.get(g.as_str()) {
                for n in names {
                    if f(n, SubjectRef::Group(g)) {
                        return true;
                    }
                }
            }
        }
        false
    }
}

/// The in-memory RBAC policy and its subject index. Wrap it in a lock in the server: reads
/// (`authorize`) are frequent and cheap, writes (`apply`/`remove`) come from watch events.
#[derive(Clone, Debug, Default)]
pub struct Authorizer {
    roles: HashMap<String, HashMap<String, Arc<[PolicyRule]>>>,
    cluster_roles: HashMap<String, ClusterRoleEntry>,
    role_bindings: HashMap<String, HashMap<String, Binding>>,
    cluster_role_bindings: HashMap<String, Binding>,
    cluster_index: SubjectIndex,
    /// Per namespace, the RoleBindings by subject, except those in `named`.
    namespace_index: HashMap<String, SubjectIndex>,
    /// Per namespace, object name -> the RoleBindings of Roles that grant only named objects.
    ///
    /// Why: registration gives one shared service account a Role and RoleBinding per cluster,
    /// each granting `get` on one Secret; through the subject index every credential poll would
    /// walk all of them, which made registering N clusters cost O(N²).
    named: HashMap<String, HashMap<String, NameSet>>,
    /// Per namespace, Role name -> the RoleBindings referring to it, re-indexed when it changes.
    role_refs: HashMap<String, HashMap<String, NameSet>>,
}

/// Rule lists, interned process-wide.
///
/// Why: every server of a process holds the same bootstrap roles (and the aggregated `admin`,
/// `edit` and `view` built from them), and a manager holds one Role per cluster namespace with
/// the same rules; the rules' strings were most of an idle in-memory server's heap. Entries are
/// weak, so a rule list no authorizer holds any more is freed; dead entries are swept when
/// the table has doubled since the last sweep.
struct RuleInterner {
    /// Rule-list hash -> the live lists with that hash.
    by_hash: HashMap<u64, Vec<std::sync::Weak<[PolicyRule]>>>,
    /// Sweep when `entries` reaches this: twice the live entries after the last sweep, at
    /// least 128.
    sweep_at: usize,
    /// Entries in `by_hash`, dead ones included.
    entries: usize,
}

/// The shared copy of `rules`: an existing equal list if one is alive, else a new one.
fn intern(rules: Vec<PolicyRule>) -> Arc<[PolicyRule]> {
    use std::hash::{BuildHasher, BuildHasherDefault};
    static TABLE: parking_lot::Mutex<Option<RuleInterner>> = parking_lot::Mutex::new(None);
    let hash =
        BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default().hash_one(&rules);
    let mut guard = TABLE.lock();
    let table = guard.get_or_insert_with(|| RuleInterner {
        by_hash: HashMap::new(),
        sweep_at: 128,
        entries: 0,
    });
    let bucket = table.by_hash.entry(hash).or_default();
    let before = bucket.len();
    bucket.retain(|w| w.strong_count() > 0);
    let mut found = None;
    for w in bucket.iter() {
        if let Some(a) = w.upgrade()
            && *a == *rules
        {
            found = Some(a);
            break;
        }
    }
    let after = bucket.len();
    let shared = match found {
        Some(a) => a,
        None => {
            let a: Arc<[PolicyRule]> = Arc::from(rules);
            bucket.push(Arc::downgrade(&a));
            a
        }
    };
    let now = bucket.len();
    table.entries = table.entries.saturating_sub(before - after) + (now - after);
    if table.entries >= table.sweep_at {
        table.by_hash.retain(|_, b| {
            b.retain(|w| w.strong_count() > 0);
            !b.is_empty()
        });
        table.entries = table.by_hash.values().map(Vec::len).sum();
        table.sweep_at = (table.entries * 2).max(128);
    }
    shared
}

/// Reads an RBAC object into its parts, validating as kube-apiserver does.
struct Parsed {
    kind: Kind,
    namespace: String,
    name: String,
    body: ParsedBody,
}

enum ParsedBody {
    Role(Arc<[PolicyRule]>),
    ClusterRole(ClusterRoleEntry),
    Binding(Binding),
}

fn str_field<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn parse(obj: &Value) -> Result<Parsed, RbacError> {
    let kind_str = str_field(obj, "kind").unwrap_or("");
    let meta = obj.get("metadata");
    let name = meta.and_then(|m| str_field(m, "name")).unwrap_or("");
    let namespace = meta.and_then(|m| str_field(m, "namespace")).unwrap_or("");
    let err = |field: &str, message: String| RbacError {
        kind: if kind_str.is_empty() {
            "object".into()
        } else {
            kind_str.into()
        },
        name: if namespace.is_empty() {
            name.into()
        } else {
            format!("{namespace}/{name}")
        },
        field: field.into(),
        message,
    };
    let Some(kind) = Kind::parse(kind_str) else {
        return Err(err(
            "kind",
            format!(
                "not an RBAC kind (want Role, ClusterRole, RoleBinding or ClusterRoleBinding), got {kind_str:?}"
            ),
        ));
    };
    if let Some(api_version) = str_field(obj, "apiVersion")
        && api_version.split('/').next() != Some(GROUP)
    {
        return Err(err(
            "apiVersion",
            format!("want {GROUP}/v1, got {api_version:?}"),
        ));
    }
    if name.is_empty() {
        return Err(err("metadata.name", "Required value".into()));
    }
    if kind.namespaced() && namespace.is_empty() {
        return Err(err("metadata.namespace", "Required value".into()));
    }
    let namespace = if kind.namespaced() { namespace } else { "" };
    let rules = || -> Result<Arc<[PolicyRule]>, RbacError> {
        let Some(raw) = obj.get("rules") else {
            return Ok(intern(Vec::new()));
        };
        if raw.is_null() {
            return Ok(intern(Vec::new()));
        }
        let Some(items) = raw.as_array() else {
            return Err(err("rules", "must be a list".into()));
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let rule: PolicyRule = serde_json::from_value(item.clone())
                .map_err(|e| err(&format!("rules[{i}]"), e.to_string()))?;
            rule.validate(kind.namespaced())
                .map_err(|m| match m.0.split_once(": ") {
                    Some((f, rest)) => err(&format!("rules[{i}].{f}"), rest.to_string()),
                    None => err(&format!("rules[{i}]"), m.0),
                })?;
            out.push(rule);
        }
        Ok(intern(out))
    };
    let body = match kind {
        Kind::Role => ParsedBody::Role(rules()?),
        Kind::ClusterRole => {
            let labels = meta
                .and_then(|m| m.get("labels"))
                .and_then(Value::as_object)
                .map(|l| {
                    l.iter()
                        .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                        .collect()
                })
                .unwrap_or_default();
            let aggregation = match obj.get("aggregationRule") {
                None | Some(Value::Null) => None,
                Some(agg) => {
                    let sels = match agg.get("clusterRoleSelectors") {
                        None | Some(Value::Null) => Vec::new(),
                        Some(Value::Array(a)) => a.clone(),
                        Some(_) => {
                            return Err(err(
                                "aggregationRule.clusterRoleSelectors",
                                "must be a list".into(),
                            ));
                        }
                    };
                    let mut out = Vec::with_capacity(sels.len());
                    for (i, s) in sels.iter().enumerate() {
                        out.push(label_selector(s).map_err(|(f, m)| {
                            err(&format!("aggregationRule.clusterRoleSelectors[{i}]{f}"), m)
                        })?);
                    }
                    Some(out)
                }
            };
            let rules = rules()?;
            ClusterRoleEntry {
                labels,
                effective: rules.clone(),
                rules,
                aggregation,
            }
            .into_body()
        }
        Kind::RoleBinding | Kind::ClusterRoleBinding => {
            let role_ref = obj
                .get("roleRef")
                .ok_or_else(|| err("roleRef", "Required value".into()))?;
            let ref_kind = str_field(role_ref, "kind").unwrap_or("");
            let role_kind = match ref_kind {
                "Role" if kind == Kind::RoleBinding => Kind::Role,
                "ClusterRole" => Kind::ClusterRole,
                _ => {
                    let want = if kind == Kind::RoleBinding {
                        "\"Role\" or \"ClusterRole\""
                    } else {
                        "\"ClusterRole\""
                    };
                    return Err(err(
                        "roleRef.kind",
                        format!("Unsupported value: {ref_kind:?}: supported values: {want}"),
                    ));
                }
            };
            let role_name = str_field(role_ref, "name").unwrap_or("");
            if role_name.is_empty() {
                return Err(err("roleRef.name", "Required value".into()));
            }
            let subjects = match obj.get("subjects") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(a)) => {
                    let mut out = Vec::with_capacity(a.len());
                    for (i, s) in a.iter().enumerate() {
                        let f = |x: &str| format!("subjects[{i}].{x}");
                        let sname = str_field(s, "name").unwrap_or("");
                        if sname.is_empty() {
                            return Err(err(&f("name"), "Required value".into()));
                        }
                        let subject = match str_field(s, "kind").unwrap_or("") {
                            "User" => Subject::User(sname.into()),
                            "Group" => Subject::Group(sname.into()),
                            "ServiceAccount" => {
                                let sa_ns = match str_field(s, "namespace") {
                                    Some(ns) if !ns.is_empty() => ns,
                                    _ if !namespace.is_empty() => namespace,
                                    _ => {
                                        return Err(err(&f("namespace"), "Required value".into()));
                                    }
                                };
                                Subject::User(service_account_user(sa_ns, sname))
                            }
                            other => {
                                return Err(err(
                                    &f("kind"),
                                    format!(
                                        "Unsupported value: {other:?}: supported values: \"ServiceAccount\", \"User\", \"Group\""
                                    ),
                                ));
                            }
                        };
                        out.push(subject);
                    }
                    out
                }
                Some(_) => return Err(err("subjects", "must be a list".into())),
            };
            ParsedBody::Binding(Binding {
                role_kind,
                role_name: role_name.into(),
                subjects,
                named: None,
            })
        }
    };
    Ok(Parsed {
        kind,
        namespace: namespace.into(),
        name: name.into(),
        body,
    })
}

impl ClusterRoleEntry {
    fn into_body(self) -> ParsedBody {
        ParsedBody::ClusterRole(self)
    }
}

/// A `metav1.LabelSelector` (matchLabels + matchExpressions) as the crate's selector type.
/// Errors are `(field suffix, message)`.
fn label_selector(v: &Value) -> Result<LabelSelector, (String, String)> {
    let mut reqs = Vec::new();
    if let Some(ml) = v.get("matchLabels").filter(|m| !m.is_null()) {
        let Some(ml) = ml.as_object() else {
            return Err((".matchLabels".into(), "must be a map".into()));
        };
        for (k, val) in ml {
            let Some(val) = val.as_str() else {
                return Err((format!(".matchLabels.{k}"), "must be a string".into()));
            };
            reqs.push(LabelReq::Eq(k.clone(), val.into()));
        }
    }
    if let Some(me) = v.get("matchExpressions").filter(|m| !m.is_null()) {
        let Some(me) = me.as_array() else {
            return Err((".matchExpressions".into(), "must be a list".into()));
        };
        for (i, e) in me.iter().enumerate() {
            let key = str_field(e, "key").unwrap_or("").to_string();
            if key.is_empty() {
                return Err((
                    format!(".matchExpressions[{i}].key"),
                    "Required value".into(),
                ));
            }
            let values: Vec<String> = e
                .get("values")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            let req = match str_field(e, "operator").unwrap_or("") {
                "In" => LabelReq::In(key, values),
                "NotIn" => LabelReq::NotIn(key, values),
                "Exists" => LabelReq::Exists(key),
                "DoesNotExist" => LabelReq::NotExists(key),
                op => {
                    return Err((
                        format!(".matchExpressions[{i}].operator"),
                        format!(
                            "Unsupported value: {op:?}: supported values: \"In\", \"NotIn\", \"Exists\", \"DoesNotExist\""
                        ),
                    ));
                }
            };
            reqs.push(req);
        }
    }
    Ok(LabelSelector { reqs })
}

/// Checks that an RBAC object is well-formed (the REST layer calls this before storing one), with
/// an error naming the field at fault.
pub fn validate(obj: &Value) -> Result<(), RbacError> {
    parse(obj).map(|_| ())
}

/// The rules a request's subject would be granted, for SelfSubjectRulesReview.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuleSet {
    /// Every rule from the bindings that apply (duplicates removed, order of discovery kept).
    pub rules: Vec<PolicyRule>,
    /// Bindings whose role does not exist (upstream reports these as evaluation errors and sets
    /// `incomplete`).
    pub missing_roles: Vec<String>,
}

impl RuleSet {
    /// The `status` of a SelfSubjectRulesReview (`resourceRules`, `nonResourceRules`,
    /// `incomplete`, `evaluationError`) with the upstream field names.
    pub fn review_status(&self) -> Value {
        let mut resource = Vec::new();
        let mut non_resource = Vec::new();
        for r in &self.rules {
            if r.non_resource_urls.is_empty() {
                resource.push(serde_json::json!({
                    "verbs": r.verbs,
                    "apiGroups": r.api_groups,
                    "resources": r.resources,
                    "resourceNames": r.resource_names,
                }));
            } else {
                non_resource.push(serde_json::json!({
                    "verbs": r.verbs,
                    "nonResourceURLs": r.non_resource_urls,
                }));
            }
        }
        let mut status = serde_json::json!({
            "resourceRules": resource,
            "nonResourceRules": non_resource,
            "incomplete": !self.missing_roles.is_empty(),
        });
        if !self.missing_roles.is_empty()
            && let Some(obj) = status.as_object_mut()
        {
            obj.insert(
                "evaluationError".into(),
                Value::String(self.missing_roles.join(", ")),
            );
        }
        status
    }
}

/// The rules of `cluster-admin`, which members of `system:masters` hold regardless of bindings.
fn full_authority() -> Vec<PolicyRule> {
    vec![
        PolicyRule::resource(&[ALL], &[ALL], &[ALL]),
        PolicyRule::non_resource(&[ALL], &[ALL]),
    ]
}

impl Authorizer {
    /// An empty policy (everything denied except `system:masters`).
    pub fn new() -> Authorizer {
        Authorizer::default()
    }

    /// Adds or replaces one Role, ClusterRole, RoleBinding or ClusterRoleBinding (the object as
    /// stored). Replacing re-indexes its subjects; changing a ClusterRole recomputes aggregation.
    pub fn apply(&mut self, obj: &Value) -> Result<(), RbacError> {
        let p = parse(obj)?;
        match p.body {
            ParsedBody::Role(rules) => {
                self.roles
                    .entry(p.namespace.clone())
                    .or_default()
                    .insert(p.name.clone(), rules);
                self.reindex_role(&p.namespace, &p.name);
            }
            ParsedBody::ClusterRole(entry) => {
                let relevant = entry.aggregation.is_some() || self.feeds_aggregation(&entry.labels);
                let old = self.cluster_roles.insert(p.name, entry);
                if relevant
                    || old.is_some_and(|o| {
                        o.aggregation.is_some() || self.feeds_aggregation(&o.labels)
                    })
                {
                    self.aggregate();
                }
            }
            ParsedBody::Binding(b) => {
                self.remove_binding(p.kind, &p.namespace, &p.name);
                if p.kind == Kind::RoleBinding {
                    if b.role_kind == Kind::Role {
                        self.role_refs
                            .entry(p.namespace.clone())
                            .or_default()
                            .entry(b.role_name.clone())
                            .or_default()
                            .insert(&p.name);
                    }
                    self.role_bindings
                        .entry(p.namespace.clone())
                        .or_default()
                        .insert(p.name.clone(), b);
                    self.index_role_binding(&p.namespace, &p.name);
                } else {
                    for s in &b.subjects {
                        self.cluster_index.insert(s, &p.name);
                    }
                    self.cluster_role_bindings.insert(p.name, b);
                }
            }
        }
        Ok(())
    }

    /// Removes one object (a deleted watch event). `namespace` is ignored for cluster kinds.
    /// Removing an object that is not there is not an error.
    pub fn remove(&mut self, kind: Kind, namespace: &str, name: &str) {
        match kind {
            Kind::Role => {
                if let Some(m) = self.roles.get_mut(namespace) {
                    m.remove(name);
                    if m.is_empty() {
                        self.roles.remove(namespace);
                    }
                }
                self.reindex_role(namespace, name);
            }
            Kind::ClusterRole => {
                if let Some(o) = self.cluster_roles.remove(name)
                    && (o.aggregation.is_some() || self.feeds_aggregation(&o.labels))
                {
                    self.aggregate();
                }
            }
            Kind::RoleBinding | Kind::ClusterRoleBinding => {
                self.remove_binding(kind, namespace, name);
            }
        }
    }

    fn remove_binding(&mut self, kind: Kind, namespace: &str, name: &str) {
        if kind == Kind::RoleBinding {
            self.unindex_role_binding(namespace, name);
            let Some(m) = self.role_bindings.get_mut(namespace) else {
                return;
            };
            let Some(old) = m.remove(name) else {
                return;
            };
            if m.is_empty() {
                self.role_bindings.remove(namespace);
            }
            if old.role_kind == Kind::Role
                && let Some(refs) = self.role_refs.get_mut(namespace)
            {
                if let Some(set) = refs.get_mut(&old.role_name) {
                    set.remove(name);
                    if set.is_empty() {
                        refs.remove(&old.role_name);
                    }
                }
                if refs.is_empty() {
                    self.role_refs.remove(namespace);
                }
            }
        } else if let Some(old) = self.cluster_role_bindings.remove(name) {
            for s in &old.subjects {
                self.cluster_index.remove(s, name);
            }
        }
    }

    /// Indexes a stored RoleBinding: under the object names its Role is limited to, or else by
    /// subject; records which in the binding so [`Self::unindex_role_binding`] can undo it.
    fn index_role_binding(&mut self, namespace: &str, name: &str) {
        let Some(b) = self.role_bindings.get(namespace).and_then(|m| m.get(name)) else {
            return;
        };
        let named = match b.role_kind {
            Kind::Role => named_only(self.role_rules(namespace, &b.role_name)),
            _ => None,
        };
        match &named {
            Some(objects) if !objects.is_empty() => {
                let idx = self.named.entry(namespace.to_string()).or_default();
                for o in objects.iter() {
                    idx.entry(o.clone()).or_default().insert(name);
                }
            }
            Some(_) => {}
            None => {
                let idx = self
                    .namespace_index
                    .entry(namespace.to_string())
                    .or_default();
                for s in &b.subjects {
                    idx.insert(s, name);
                }
            }
        }
        if let Some(b) = self
            .role_bindings
            .get_mut(namespace)
            .and_then(|m| m.get_mut(name))
        {
            b.named = named;
        }
    }

    /// Takes a stored RoleBinding out of whichever index [`Self::index_role_binding`] put it in.
    fn unindex_role_binding(&mut self, namespace: &str, name: &str) {
        let Some(b) = self.role_bindings.get(namespace).and_then(|m| m.get(name)) else {
            return;
        };
        match &b.named {
            Some(objects) => {
                if let Some(idx) = self.named.get_mut(namespace) {
                    for o in objects.iter() {
                        if let Some(set) = idx.get_mut(o) {
                            set.remove(name);
                            if set.is_empty() {
                                idx.remove(o);
                            }
                        }
                    }
                    if idx.is_empty() {
                        self.named.remove(namespace);
                    }
                }
            }
            None => {
                if let Some(idx) = self.namespace_index.get_mut(namespace) {
                    for s in &b.subjects {
                        idx.remove(s, name);
                    }
                    if idx.is_empty() {
                        self.namespace_index.remove(namespace);
                    }
                }
            }
        }
    }

    /// Re-indexes the RoleBindings of a Role that was added, changed or removed: whether they
    /// grant only named objects, and which, follows the Role's rules.
    fn reindex_role(&mut self, namespace: &str, role: &str) {
        let Some(bindings) = self.role_refs.get(namespace).and_then(|m| m.get(role)) else {
            return;
        };
        let bindings: Vec<String> = bindings.iter().map(str::to_string).collect();
        for b in &bindings {
            self.unindex_role_binding(namespace, b);
            self.index_role_binding(namespace, b);
        }
    }

    /// Calls `f(binding name, binding, matched subject)` for the RoleBindings in `namespace`
    /// limited to named objects that name `object` and the user or one of its groups; stops
    /// early when `f` returns true.
    fn visit_named<'u>(
        &self,
        namespace: &str,
        object: &str,
        user: &'u UserInfo,
        mut f: impl FnMut(&str, &Binding, SubjectRef<'u>) -> bool,
    ) -> bool {
        let (Some(idx), Some(bindings)) =
            (self.named.get(namespace), self.role_bindings.get(namespace))
        else {
            return false;
        };
        let Some(names) = idx.get(object) else {
            return false;
        };
        for name in names {
            if let Some(b) = bindings.get(name)
                && let Some(subject) = b.subject_of(user)
                && f(name, b, subject)
            {
                return true;
            }
        }
        false
    }

    /// Whether a ClusterRole with these labels is selected by some aggregated ClusterRole, so a
    /// change to it must recompute aggregation (other ClusterRole changes skip that work).
    fn feeds_aggregation(&self, labels: &BTreeMap<String, String>) -> bool {
        self.cluster_roles.values().any(|e| {
            e.aggregation
                .as_ref()
                .is_some_and(|sels| sels.iter().any(|s| s.matches(labels)))
        })
    }

    /// Recomputes the effective rules of every aggregated ClusterRole: the union of the rules of
    /// the ClusterRoles its selectors match (which may themselves be aggregated, so this runs to a
    /// fixed point, as the upstream aggregation controller converges).
    fn aggregate(&mut self) {
        let aggregated: Vec<String> = self
            .cluster_roles
            .iter()
            .filter(|(_, e)| e.aggregation.is_some())
            .map(|(n, _)| n.clone())
            .collect();
        if aggregated.is_empty() {
            return;
        }
        let mut names: Vec<&String> = self.cluster_roles.keys().collect();
        names.sort();
        let names: Vec<String> = names.into_iter().cloned().collect();
        // Start from the own rules, then propagate; each round can only add rules, and chains
        // are at most `aggregated.len()` long.
        let mut effective: HashMap<String, Vec<PolicyRule>> = HashMap::new();
        for n in &aggregated {
            effective.insert(n.clone(), Vec::new());
        }
        for _ in 0..=aggregated.len() {
            let mut changed = false;
            for target in &aggregated {
                let Some(entry) = self.cluster_roles.get(target) else {
                    continue;
                };
                let Some(selectors) = &entry.aggregation else {
                    continue;
                };
                let mut rules: Vec<PolicyRule> = Vec::new();
                for source in &names {
                    if source == target {
                        continue;
                    }
                    let Some(src) = self.cluster_roles.get(source) else {
                        continue;
                    };
                    if !selectors.iter().any(|s| s.matches(&src.labels)) {
                        continue;
                    }
                    let src_rules: &[PolicyRule] = match effective.get(source) {
                        Some(r) => r,
                        None => &src.rules,
                    };
                    for r in src_rules {
                        if !rules.contains(r) {
                            rules.push(r.clone());
                        }
                    }
                }
                if effective.get(target) != Some(&rules) {
                    effective.insert(target.clone(), rules);
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        for (name, rules) in effective {
            if let Some(e) = self.cluster_roles.get_mut(&name) {
                e.effective = intern(rules);
            }
        }
    }

    /// The effective rules of a ClusterRole (after aggregation), if it exists.
    pub fn cluster_role_rules(&self, name: &str) -> Option<&[PolicyRule]> {
        self.cluster_roles.get(name).map(|e| &*e.effective)
    }

    /// The rules of a Role, if it exists.
    pub fn role_rules(&self, namespace: &str, name: &str) -> Option<&[PolicyRule]> {
        self.roles.get(namespace)?.get(name).map(|r| &**r)
    }

    fn binding_rules(&self, namespace: &str, b: &Binding) -> Option<&[PolicyRule]> {
        match b.role_kind {
            Kind::Role => self.role_rules(namespace, &b.role_name),
            _ => self.cluster_role_rules(&b.role_name),
        }
    }

    /// Whether `user` may do `attrs`: the decision of [`Authorizer::authorize`] without building
    /// its reason, for the per-request path where only yes/no matters (a refusal's 403 message
    /// comes from the attributes).
    pub fn allows(&self, user: &UserInfo, attrs: &Attributes) -> bool {
        if user.in_group(MASTERS_GROUP) {
            return true;
        }
        let grants = |namespace: &str, b: &Binding| {
            self.binding_rules(namespace, b)
                .is_some_and(|rules| rules.iter().any(|r| r.allows(attrs)))
        };
        let cluster = self.cluster_index.visit(user, |name, _| {
            self.cluster_role_bindings
                .get(name)
                .is_some_and(|b| grants("", b))
        });
        if cluster || attrs.namespace.is_empty() {
            return cluster;
        }
        let ns = attrs.namespace.as_str();
        let Some(bindings) = self.role_bindings.get(ns) else {
            return false;
        };
        let wide = self.namespace_index.get(ns).is_some_and(|idx| {
            idx.visit(user, |name, _| {
                bindings.get(name).is_some_and(|b| grants(ns, b))
            })
        });
        wide || self.visit_named(ns, &attrs.name, user, |_, b, _| grants(ns, b))
    }

    /// Decides whether `user` may do `attrs`: `system:masters` always may; otherwise the rules of
    /// the ClusterRoleBindings naming the user or one of its groups, then (for namespaced
    /// requests) those of the RoleBindings in the request's namespace. Cost is proportional to
    /// the bindings naming this user's subjects, not to the number of bindings.
    pub fn authorize(&self, user: &UserInfo, attrs: &Attributes) -> Decision {
        if user.in_group(MASTERS_GROUP) {
            return Decision::allow(format!("RBAC: allowed by group {MASTERS_GROUP:?}"));
        }
        let mut reason = None;
        self.cluster_index.visit(user, |name, subject| {
            let Some(b) = self.cluster_role_bindings.get(name) else {
                return false;
            };
            let Some(rules) = self.binding_rules("", b) else {
                return false;
            };
            if rules.iter().any(|r| r.allows(attrs)) {
                reason = Some(format!(
                    "RBAC: allowed by ClusterRoleBinding {name:?} of ClusterRole {:?} to {}",
                    b.role_name,
                    subject.describe()
                ));
                return true;
            }
            false
        });
        if reason.is_none()
            && !attrs.namespace.is_empty()
            && let Some(bindings) = self.role_bindings.get(attrs.namespace.as_str())
        {
            let ns = attrs.namespace.as_str();
            let mut check = |name: &str, b: &Binding, subject: SubjectRef<'_>| {
                let Some(rules) = self.binding_rules(ns, b) else {
                    return false;
                };
                if rules.iter().any(|r| r.allows(attrs)) {
                    reason = Some(format!(
                        "RBAC: allowed by RoleBinding \"{name}/{ns}\" of {} {:?} to {}",
                        b.role_kind.as_str(),
                        b.role_name,
                        subject.describe()
                    ));
                    return true;
                }
                false
            };
            let wide = self.namespace_index.get(ns).is_some_and(|idx| {
                idx.visit(user, |name, subject| {
                    bindings.get(name).is_some_and(|b| check(name, b, subject))
                })
            });
            if !wide {
                self.visit_named(ns, &attrs.name, user, check);
            }
        }
        match reason {
            Some(r) => Decision::allow(r),
            None => Decision::deny(format!(
                "RBAC: no rule allows it: {}",
                attrs.forbidden_message(&user.name)
            )),
        }
    }

    /// The rules `user` holds in `namespace` (cluster-wide ones included; `""` gives only the
    /// cluster-wide ones), for SelfSubjectRulesReview and escalation checks.
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> RuleSet {
        let mut set = RuleSet::default();
        if user.in_group(MASTERS_GROUP) {
            set.rules = full_authority();
        }
        let add = |set: &mut RuleSet, rules: Option<&[PolicyRule]>, what: String| match rules {
            Some(rules) => {
                for r in rules {
                    if !set.rules.contains(r) {
                        set.rules.push(r.clone());
                    }
                }
            }
            None => set.missing_roles.push(what),
        };
        self.cluster_index.visit(user, |name, _| {
            if let Some(b) = self.cluster_role_bindings.get(name) {
                add(
                    &mut set,
                    self.binding_rules("", b),
                    format!(
                        "clusterrole.rbac.authorization.k8s.io {:?} not found (ClusterRoleBinding {name:?})",
                        b.role_name
                    ),
                );
            }
            false
        });
        if !namespace.is_empty()
            && let Some(bindings) = self.role_bindings.get(namespace)
        {
            let add_binding = |set: &mut RuleSet, name: &str, b: &Binding| {
                add(
                    set,
                    self.binding_rules(namespace, b),
                    format!(
                        "{}.rbac.authorization.k8s.io {:?} not found (RoleBinding \"{namespace}/{name}\")",
                        b.role_kind.as_str().to_lowercase(),
                        b.role_name
                    ),
                );
            };
            if let Some(idx) = self.namespace_index.get(namespace) {
                idx.visit(user, |name, _| {
                    if let Some(b) = bindings.get(name) {
                        add_binding(&mut set, name, b);
                    }
                    false
                });
            }
            // Bindings limited to named objects are not in the subject index; this review is
            // rare, so it scans them.
            let mut named: Vec<(&String, &Binding)> = bindings
                .iter()
                .filter(|(_, b)| b.named.is_some() && b.subject_of(user).is_some())
                .collect();
            named.sort_by(|a, b| a.0.cmp(b.0));
            for (name, b) in named {
                add_binding(&mut set, name, b);
            }
        }
        set
    }

    /// Escalation prevention, the coverage part (upstream `ConfirmNoEscalation`): `user` may grant
    /// `rules` in `namespace` (`""` for cluster-wide) only if it already holds every one of them
    /// there. The denial names each permission the user lacks.
    pub fn can_grant(&self, user: &UserInfo, rules: &[PolicyRule], namespace: &str) -> Decision {
        if user.in_group(MASTERS_GROUP) {
            return Decision::allow(format!(
                "RBAC: escalation allowed for group {MASTERS_GROUP:?}"
            ));
        }
        let held = self.rules_for(user, namespace);
        let missing = uncovered(&held.rules, rules);
        if missing.is_empty() {
            return Decision::allow("RBAC: every granted rule is held by the user".into());
        }
        let list: Vec<String> = missing.iter().map(PolicyRule::compact).collect();
        Decision::deny(format!(
            "user {:?} (groups={:?}) is attempting to grant RBAC permissions not currently held:\n{}",
            user.name,
            user.groups,
            list.join("\n")
        ))
    }

    /// Whether `user` may create or update the Role/ClusterRole `obj` (upstream's role storage
    /// check): allowed with `escalate` on the role, or when every rule is already held; an
    /// `aggregationRule` can gather anything, so it needs `escalate` or full authority.
    pub fn check_role_write(&self, user: &UserInfo, obj: &Value) -> Result<Decision, RbacError> {
        let p = parse(obj)?;
        if !matches!(p.kind, Kind::Role | Kind::ClusterRole) {
            return Err(RbacError {
                kind: p.kind.as_str().into(),
                name: p.name,
                field: "kind".into(),
                message: "want Role or ClusterRole".into(),
            });
        }
        let escalate = Attributes::resource("escalate", GROUP, p.kind.resource())
            .namespace(&p.namespace)
            .name(&p.name);
        let d = self.authorize(user, &escalate);
        if d.allowed {
            return Ok(d);
        }
        let (rules, aggregation) = match &p.body {
            ParsedBody::Role(r) => (r.clone(), false),
            ParsedBody::ClusterRole(e) => (e.rules.clone(), e.aggregation.is_some()),
            ParsedBody::Binding(_) => (Arc::from(Vec::new()), false),
        };
        let d = self.can_grant(user, &rules, &p.namespace);
        if !d.allowed {
            return Ok(d);
        }
        if aggregation {
            let full = self.can_grant(user, &full_authority(), "");
            if !full.allowed {
                return Ok(Decision::deny(
                    "must have cluster-admin privileges to use the aggregationRule".into(),
                ));
            }
        }
        Ok(d)
    }

    /// Whether `user` may create or update the RoleBinding/ClusterRoleBinding `obj` (upstream's
    /// binding storage check): allowed with `bind` on the referenced role, or when the user
    /// already holds every rule of that role in the binding's namespace.
    pub fn check_binding_write(&self, user: &UserInfo, obj: &Value) -> Result<Decision, RbacError> {
        let p = parse(obj)?;
        let ParsedBody::Binding(b) = &p.body else {
            return Err(RbacError {
                kind: p.kind.as_str().into(),
                name: p.name,
                field: "kind".into(),
                message: "want RoleBinding or ClusterRoleBinding".into(),
            });
        };
        let bind = Attributes::resource("bind", GROUP, b.role_kind.resource())
            .namespace(&p.namespace)
            .name(&b.role_name);
        let d = self.authorize(user, &bind);
        if d.allowed {
            return Ok(d);
        }
        let Some(rules) = self.binding_rules(&p.namespace, b) else {
            return Ok(Decision::deny(format!(
                "{}.rbac.authorization.k8s.io {:?} not found",
                b.role_kind.as_str().to_lowercase(),
                b.role_name
            )));
        };
        Ok(self.can_grant(user, rules, &p.namespace))
    }

    /// How many bindings are indexed (for metrics and tests).
    pub fn binding_count(&self) -> usize {
        self.cluster_role_bindings.len()
            + self.role_bindings.values().map(HashMap::len).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::NameSet;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    proptest! {
        /// Any sequence of inserts and removes leaves a `NameSet` holding what a `BTreeSet`
        /// would, in the same order.
        #[test]
        fn a_name_set_answers_as_a_btree_set(
            ops in proptest::collection::vec((any::<bool>(), "[a-c]{0,3}"), 0..64)
        ) {
            let (mut set, mut model) = (NameSet::default(), BTreeSet::new());
            for (insert, name) in &ops {
                if *insert {
                    set.insert(name);
                    model.insert(name.clone());
                } else {
                    set.remove(name);
                    model.remove(name);
                }
                prop_assert_eq!(set.is_empty(), model.is_empty());
            }
            let got: Vec<&str> = set.iter().collect();
            let want: Vec<&str> = model.iter().map(String::as_str).collect();
            prop_assert_eq!(&got, &want);
            prop_assert_eq!((&set).into_iter().collect::<Vec<_>>(), want);
        }
    }
}
