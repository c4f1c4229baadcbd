//! Authorization wired into request handling: the live RBAC policy of a server, the middleware
//! that turns every authenticated request into [`Attributes`] and refuses it with a 403 `Status`
//! worded as kube-apiserver words it, and escalation prevention on writes of RBAC objects.
//!
//! Why a watch-fed copy instead of reading roles from the store per request: a decision must cost
//! a few hash lookups in the subject index ([`Authorizer`]), not a list of bindings. The copy is
//! loaded before the server answers its first request and then follows the store's watch events,
//! so a binding created by one request grants access to the next within milliseconds (the same
//! "informer lag" clients of kube-apiserver already tolerate).

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use parking_lot::RwLock;
use serde_json::Value;

use crate::app::ApiServer;
use crate::auth::UserInfo;
use crate::errors::{ApiError, ApiResult, Cause, Details};
use crate::rbac::{self, Attributes, Authorizer, Decision, Kind};
use crate::registry::{ResourceInfo, split_key};
use crate::store::{EventKind, Rev};

/// Storage-key prefix of every RBAC object (all four kinds).
const RBAC_PREFIX: &str = "/rbac.authorization.k8s.io/";
/// URL prefix of RBAC writes: only these requests need the caller's identity inside the write
/// path (for escalation checks), so only these pay for carrying it there.
const RBAC_URL_PREFIX: &str = "/apis/rbac.authorization.k8s.io/";

/// The live RBAC policy of one server and the store revision it reflects.
#[derive(Default)]
pub struct Policy {
    authorizer: RwLock<Authorizer>,
    rev: AtomicI64,
}

impl Policy {
    /// Read access to the current policy (held only for the length of one decision).
    pub fn read(&self) -> parking_lot::RwLockReadGuard<'_, Authorizer> {
        self.authorizer.read()
    }

    /// The store revision the policy has caught up with (for tests and diagnostics).
    pub fn revision(&self) -> Rev {
        self.rev.load(Ordering::Acquire)
    }
}

tokio::task_local! {
    /// The (possibly impersonated) user of the request being handled, for checks deep in the
    /// write path that the handler signatures do not carry (escalation prevention). Unset for
    /// background controllers and in-process callers, which are trusted.
    static CURRENT_USER: UserInfo;
}

/// The user of the request this task is handling, if it came through the authorization layer.
pub fn current_user() -> Option<UserInfo> {
    CURRENT_USER.try_with(UserInfo::clone).ok()
}

/// Creates every missing default role and binding (as kube-apiserver's RBAC bootstrap does;
/// existing ones, possibly edited by an admin, are left alone), then loads the whole policy
/// synchronously so the first request is already judged by it, and starts following changes.
pub(crate) async fn start(srv: &ApiServer) -> Result<(), crate::app::Error> {
    for obj in rbac::bootstrap_objects() {
        let kind = obj
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let Some(info) = srv.registry().by_kind(rbac::GROUP, "v1", &kind) else {
            return Err(crate::app::Error::Bootstrap(format!(
                "{kind} is not a registered resource"
            )));
        };
        if srv.store().get(&info.key(None, &name)).is_some() {
            continue;
        }
        match srv.create(&info, None, obj, false).await {
            Ok(_) => {}
            Err(e) if e.code == 409 => {}
            Err(e) => {
                return Err(crate::app::Error::Bootstrap(format!(
                    "RBAC default {kind} {name:?}: {e}"
                )));
            }
        }
    }
    let rev = load(srv).map_err(|e| crate::app::Error::Bootstrap(format!("RBAC policy: {e}")))?;
    let follower = srv.clone();
    tokio::spawn(async move { follow(follower, rev).await });
    Ok(())
}

/// Replaces the policy with the store's current RBAC objects; returns the revision read.
fn load(srv: &ApiServer) -> Result<Rev, crate::store::StoreError> {
    let page = srv
        .store()
        .list(RBAC_PREFIX, None, None, None, &|_, _| true)?;
    let mut fresh = Authorizer::new();
    for (key, obj) in &page.items {
        match serde_json::from_slice::<Value>(&obj.json) {
            Ok(v) => {
                if let Err(e) = fresh.apply(&v) {
                    tracing::warn!(%key, error = %e, "RBAC object ignored");
                }
            }
            Err(e) => tracing::warn!(%key, error = %e, "RBAC object is not JSON"),
        }
    }
    let policy = &srv.inner.authz;
    *policy.authorizer.write() = fresh;
    policy.rev.store(page.rev, Ordering::Release);
    Ok(page.rev)
}

/// Follows RBAC changes from `rev` until the server shuts down; relists when the watch is cut
/// off (fell behind, or history compacted past it).
async fn follow(srv: ApiServer, mut rev: Rev) {
    loop {
        if srv.inner.gc_stop.load(Ordering::Relaxed) {
            return;
        }
        let mut watch = match srv.store().watch(RBAC_PREFIX, rev) {
            Ok(w) => w,
            Err(_) => match load(&srv) {
                Ok(r) => {
                    rev = r;
                    continue;
                }
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                }
            },
        };
        while let Some(ev) = watch.next().await {
            let mut guard = srv.inner.authz.authorizer.write();
            apply_event(&mut guard, ev.kind, &ev.key, &ev.obj.json);
            // Apply what is already queued under the same lock.
            while let Some(Some(ev)) = futures::FutureExt::now_or_never(watch.next()) {
                apply_event(&mut guard, ev.kind, &ev.key, &ev.obj.json);
            }
            drop(guard);
            rev = watch.last_rev();
            srv.inner.authz.rev.store(rev, Ordering::Release);
        }
        if srv.inner.gc_stop.load(Ordering::Relaxed) {
            return;
        }
        // The watch ended (cut off): start over from a fresh list.
        match load(&srv) {
            Ok(r) => rev = r,
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// The RBAC kind a storage key (`/rbac.authorization.k8s.io/rolebindings/ns/name`) holds.
fn kind_of_key(key: &str) -> Option<Kind> {
    let rest = key.strip_prefix(RBAC_PREFIX)?;
    match rest.split('/').next()? {
        "roles" => Some(Kind::Role),
        "clusterroles" => Some(Kind::ClusterRole),
        "rolebindings" => Some(Kind::RoleBinding),
        "clusterrolebindings" => Some(Kind::ClusterRoleBinding),
        _ => None,
    }
}

fn apply_event(a: &mut Authorizer, kind: EventKind, key: &str, json: &[u8]) {
    let Some(k) = kind_of_key(key) else { return };
    let (ns, name) = split_key(key);
    if matches!(kind, EventKind::Deleted) {
        a.remove(k, ns, name);
        return;
    }
    let parsed = serde_json::from_slice::<Value>(json)
        .map_err(|e| e.to_string())
        .and_then(|v| a.apply(&v).map_err(|e| e.to_string()));
    if let Err(e) = parsed {
        // An object that no longer parses must not keep granting what its old version did.
        tracing::warn!(%key, error = %e, "RBAC object ignored");
        a.remove(k, ns, name);
    }
}

fn decode_segment(s: &str) -> String {
    if !s.contains('%') {
        return s.to_string();
    }
    form_urlencoded::parse(format!("x={}", s.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

/// Whether the query asks for a watch, decided exactly as the REST layer's `Query::parse` does
/// (the last `watch` parameter wins; an empty value means true), so the verb authorized is the
/// operation performed.
fn query_watch(query: Option<&str>) -> bool {
    let Some(q) = query else { return false };
    if !q.contains("watch") {
        return false;
    }
    let mut watch = false;
    for (k, v) in form_urlencoded::parse(q.as_bytes()) {
        if k == "watch" {
            watch = matches!(v.as_ref(), "true" | "1" | "True" | "TRUE" | "");
        }
    }
    watch
}

/// `metadata.name=X` from a field selector, which kube-apiserver uses as the object name of a
/// list or watch (so `resourceNames` rules can allow `kubectl get x NAME -w`).
fn field_selector_name(query: Option<&str>) -> Option<String> {
    let q = query?;
    if !q.contains("fieldSelector") {
        return None;
    }
    let mut name = None;
    for (k, v) in form_urlencoded::parse(q.as_bytes()) {
        if k != "fieldSelector" {
            continue;
        }
        name = None;
        let mut terms = v.split(',');
        if let (Some(term), None) = (terms.next(), terms.next()) {
            let value = term
                .strip_prefix("metadata.name==")
                .or_else(|| term.strip_prefix("metadata.name="));
            if let Some(value) = value
                && !value.is_empty()
                && crate::validation::path_segment_name(value).is_ok()
            {
                name = Some(value.to_string());
            }
        }
    }
    name
}

/// What a request wants to do, derived as kube-apiserver's `RequestInfoFactory` does:
/// `/api/v1/...` and `/apis/G/V/...` paths with a resource are resource requests (verb from the
/// method, `list`/`watch` for collection reads, `deletecollection` for collection deletes, the
/// namespace from `namespaces/NS/...`, then resource/name/subresource); everything else,
/// including `/api`, `/apis/G` and `/apis/G/V`, is a non-resource request for the path with the
/// lower-cased method as the verb.
pub fn request_attributes(method: &Method, path: &str, query: Option<&str>) -> Attributes {
    let non_resource = || Attributes::non_resource(&method.as_str().to_ascii_lowercase(), path);
    let trimmed = path.trim_matches('/');
    let mut parts: Vec<&str> = trimmed.split('/').collect();
    if parts.len() < 3 {
        return non_resource();
    }
    let group = match parts[0] {
        "api" => {
            parts.drain(..1);
            ""
        }
        "apis" => {
            if parts.len() < 4 {
                return non_resource();
            }
            let g = parts[1];
            parts.drain(..2);
            g
        }
        _ => return non_resource(),
    };
    // parts: version, then the rest.
    parts.drain(..1);
    let mut attrs = Attributes {
        api_group: group.to_string(),
        ..Default::default()
    };
    let mut verb = match *method {
        Method::POST => "create",
        Method::GET | Method::HEAD => "get",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE => "delete",
        _ => "",
    };
    if matches!(parts.first(), Some(&"watch") | Some(&"proxy")) {
        if parts.len() < 2 {
            return non_resource();
        }
        verb = if parts[0] == "watch" {
            "watch"
        } else {
            "proxy"
        };
        parts.drain(..1);
    }
    if parts.first() == Some(&"namespaces")
        && let Some(ns) = parts.get(1)
    {
        attrs.namespace = decode_segment(ns);
        if parts
            .get(2)
            .is_some_and(|p| !matches!(*p, "status" | "finalize"))
        {
            parts.drain(..2);
        }
    }
    if let Some(r) = parts.first() {
        attrs.resource = decode_segment(r);
    }
    if let Some(n) = parts.get(1) {
        attrs.name = decode_segment(n);
    }
    if verb != "proxy"
        && let Some(s) = parts.get(2)
    {
        attrs.subresource = decode_segment(s);
    }
    if attrs.name.is_empty() && verb == "get" {
        verb = if query_watch(query) { "watch" } else { "list" };
    }
    if attrs.name.is_empty()
        && matches!(verb, "list" | "watch")
        && let Some(n) = field_selector_name(query)
    {
        attrs.name = n;
    }
    if attrs.name.is_empty() && verb == "delete" {
        verb = "deletecollection";
    }
    attrs.verb = verb.to_string();
    attrs
}

/// The 403 kube-apiserver answers a refused request with: `<resource>[.<group>] ["<name>"] is
/// forbidden: User "u" cannot <verb> resource "<r>" in API group "<g>" ...` (or `forbidden: User
/// "u" cannot get path "/x"`), `details` naming the group, resource and object.
pub fn forbidden(attrs: &Attributes, user: &str, reason: &str) -> ApiError {
    let mut why = attrs.forbidden_message(user);
    if !reason.is_empty() {
        why.push_str(": ");
        why.push_str(reason);
    }
    forbidden_status(&attrs.api_group, &attrs.resource, &attrs.name, &why)
}

/// kube-apiserver's `NewForbidden(groupResource, name, err)`: the message prefix and `details`.
pub fn forbidden_status(group: &str, resource: &str, name: &str, why: &str) -> ApiError {
    let message = if resource.is_empty() {
        format!("forbidden: {why}")
    } else {
        let qualified = if group.is_empty() {
            resource.to_string()
        } else {
            format!("{resource}.{group}")
        };
        if name.is_empty() {
            format!("{qualified} is forbidden: {why}")
        } else {
            format!("{qualified} {name:?} is forbidden: {why}")
        }
    };
    let mut e = ApiError::forbidden(message);
    let some = |s: &str| (!s.is_empty()).then(|| s.to_string());
    e.details = Some(Box::new(Details {
        name: some(name),
        group: some(group),
        kind: some(resource),
        causes: Vec::new(),
    }));
    e
}

/// Decides one request for `user` against the live policy.
pub fn decide(srv: &ApiServer, user: &UserInfo, attrs: &Attributes) -> Decision {
    srv.inner.authz.read().authorize(user, attrs)
}

/// axum middleware (installed by [`ApiServer::router`] inside authentication): applies
/// impersonation headers, authorizes the request, and answers 403 when RBAC does not allow it.
///
/// A request without a [`UserInfo`] did not come through authentication at all: it is an
/// in-process caller of the bare router (tests, embedding code), which is trusted, exactly as
/// the router was before authorization existed. The served HTTPS port always authenticates
/// first, so every request there carries a user.
pub async fn authorize(State(srv): State<ApiServer>, mut req: Request, next: Next) -> Response {
    let Some(authenticated) = req.extensions().get::<UserInfo>() else {
        return next.run(req).await;
    };
    let user = match crate::impersonate::impersonate(&srv, authenticated, req.headers()) {
        Ok(None) => None,
        Ok(Some(u)) => Some(u),
        Err(e) => return e.into_response(),
    };
    if let Some(u) = user {
        crate::impersonate::strip_headers(req.headers_mut());
        req.extensions_mut().insert(u);
    }
    let Some(user) = req.extensions().get::<UserInfo>() else {
        return next.run(req).await;
    };
    if !user.in_group(rbac::MASTERS_GROUP) {
        let attrs = request_attributes(req.method(), req.uri().path(), req.uri().query());
        if !srv.inner.authz.read().allows(user, &attrs) {
            tracing::debug!(user = %user.name, verb = %attrs.verb, resource = %attrs.resource, path = %attrs.path, "forbidden");
            return forbidden(&attrs, &user.name, "").into_response();
        }
    }
    if req.uri().path().starts_with(RBAC_URL_PREFIX) {
        let user = user.clone();
        return CURRENT_USER.scope(user, next.run(req)).await;
    }
    next.run(req).await
}

/// Escalation prevention and validation for writes of Roles, ClusterRoles, RoleBindings and
/// ClusterRoleBindings, called by the write path after metadata validation: malformed rules or
/// subjects are 422; granting (or binding a role with) permissions the writer does not hold is
/// 403 unless the writer may `escalate`/`bind`, as kube-apiserver's RBAC storage decides.
pub(crate) fn check_rbac_write(srv: &ApiServer, info: &ResourceInfo, obj: &Value) -> ApiResult<()> {
    if !info.builtin || info.group != rbac::GROUP {
        return Ok(());
    }
    let Some(kind) = Kind::parse(&info.kind) else {
        return Ok(());
    };
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    if let Err(e) = rbac::validate(obj) {
        let cause = if e.message == "Required value" {
            Cause::required(e.field)
        } else {
            Cause::invalid(e.field, e.message)
        };
        return Err(ApiError::invalid(
            &info.group,
            &info.kind,
            name,
            vec![cause],
        ));
    }
    let Some(user) = current_user() else {
        return Ok(());
    };
    let policy = srv.inner.authz.read();
    let decision = match kind {
        Kind::Role | Kind::ClusterRole => policy.check_role_write(&user, obj),
        Kind::RoleBinding | Kind::ClusterRoleBinding => policy.check_binding_write(&user, obj),
    };
    match decision {
        Ok(d) if d.allowed => Ok(()),
        Ok(d) => Err(forbidden_status(&info.group, &info.plural, name, &d.reason)),
        Err(e) => Err(ApiError::invalid(
            &info.group,
            &info.kind,
            name,
            vec![Cause::invalid(e.field, e.message)],
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(method: Method, path: &str, query: Option<&str>) -> Attributes {
        request_attributes(&method, path, query)
    }

    #[test]
    fn resource_verbs() {
        let ns = "/api/v1/namespaces/a/pods";
        assert_eq!(
            a(Method::GET, ns, None),
            Attributes::resource("list", "", "pods").namespace("a")
        );
        assert_eq!(
            a(Method::GET, ns, Some("watch=true")),
            Attributes::resource("watch", "", "pods").namespace("a")
        );
        assert_eq!(a(Method::GET, ns, Some("watch=1")).verb, "watch");
        assert_eq!(a(Method::GET, ns, Some("watch")).verb, "watch");
        assert_eq!(a(Method::GET, ns, Some("watch=false")).verb, "list");
        assert_eq!(a(Method::GET, ns, Some("watch=1&watch=0")).verb, "list");
        assert_eq!(
            a(Method::GET, &format!("{ns}/p"), None),
            Attributes::resource("get", "", "pods")
                .namespace("a")
                .name("p")
        );
        assert_eq!(a(Method::HEAD, &format!("{ns}/p"), None).verb, "get");
        assert_eq!(a(Method::POST, ns, None).verb, "create");
        assert_eq!(a(Method::PUT, &format!("{ns}/p"), None).verb, "update");
        assert_eq!(a(Method::PATCH, &format!("{ns}/p"), None).verb, "patch");
        assert_eq!(a(Method::DELETE, &format!("{ns}/p"), None).verb, "delete");
        assert_eq!(a(Method::DELETE, ns, None).verb, "deletecollection");
        assert_eq!(
            a(
                Method::PUT,
                "/apis/fleet.cattle.io/v1alpha1/namespaces/a/bundledeployments/x/status",
                None
            ),
            Attributes::resource("update", "fleet.cattle.io", "bundledeployments")
                .namespace("a")
                .name("x")
                .subresource("status")
        );
        assert_eq!(
            a(
                Method::GET,
                "/apis/rbac.authorization.k8s.io/v1/clusterroles",
                None
            ),
            Attributes::resource("list", "rbac.authorization.k8s.io", "clusterroles")
        );
        assert_eq!(
            a(Method::GET, "/api/v1/watch/namespaces/a/pods", None),
            Attributes::resource("watch", "", "pods").namespace("a")
        );
        assert_eq!(
            a(
                Method::POST,
                "/api/v1/namespaces/a/serviceaccounts/sa/token",
                None
            ),
            Attributes::resource("create", "", "serviceaccounts")
                .namespace("a")
                .name("sa")
                .subresource("token")
        );
    }

    #[test]
    fn namespaces_and_their_subresources() {
        assert_eq!(
            a(Method::GET, "/api/v1/namespaces/a", None),
            Attributes::resource("get", "", "namespaces")
                .namespace("a")
                .name("a")
        );
        assert_eq!(
            a(Method::PUT, "/api/v1/namespaces/a/finalize", None),
            Attributes::resource("update", "", "namespaces")
                .namespace("a")
                .name("a")
                .subresource("finalize")
        );
        assert_eq!(
            a(Method::GET, "/api/v1/namespaces", None),
            Attributes::resource("list", "", "namespaces")
        );
    }

    #[test]
    fn field_selector_names_the_object() {
        let q = Some("fieldSelector=metadata.name%3Dweb&watch=true");
        assert_eq!(
            a(Method::GET, "/api/v1/namespaces/a/pods", q),
            Attributes::resource("watch", "", "pods")
                .namespace("a")
                .name("web")
        );
        let q = Some("fieldSelector=metadata.name%3Dweb%2Cspec.x%3Dy");
        assert_eq!(a(Method::GET, "/api/v1/pods", q).name, "");
    }

    #[test]
    fn non_resource_paths() {
        for (m, p, verb) in [
            (Method::GET, "/api", "get"),
            (Method::GET, "/api/v1", "get"),
            (Method::GET, "/apis", "get"),
            (Method::GET, "/apis/apps", "get"),
            (Method::GET, "/apis/apps/v1", "get"),
            (Method::GET, "/healthz", "get"),
            (Method::GET, "/openapi/v2", "get"),
            (Method::POST, "/foo/bar/baz", "post"),
            (Method::GET, "/version/", "get"),
        ] {
            assert_eq!(a(m, p, None), Attributes::non_resource(verb, p), "{p}");
        }
    }

    #[test]
    fn forbidden_wording() {
        let attrs = Attributes::resource("list", "", "pods").namespace("a");
        let s = forbidden(&attrs, "bob", "").to_status();
        assert_eq!(
            s["message"],
            "pods is forbidden: User \"bob\" cannot list resource \"pods\" in API group \"\" in the namespace \"a\""
        );
        assert_eq!(s["code"], 403);
        assert_eq!(s["reason"], "Forbidden");
        assert_eq!(s["details"], serde_json::json!({"kind": "pods"}));
        let attrs = Attributes::resource("update", "fleet.cattle.io", "bundledeployments")
            .namespace("a")
            .name("x");
        let s = forbidden(&attrs, "sa", "").to_status();
        assert_eq!(
            s["message"],
            "bundledeployments.fleet.cattle.io \"x\" is forbidden: User \"sa\" cannot update resource \"bundledeployments\" in API group \"fleet.cattle.io\" in the namespace \"a\""
        );
        assert_eq!(
            s["details"],
            serde_json::json!({"kind": "bundledeployments", "group": "fleet.cattle.io", "name": "x"})
        );
        let s = forbidden(&Attributes::non_resource("get", "/foo"), "bob", "").to_status();
        assert_eq!(
            s["message"],
            "forbidden: User \"bob\" cannot get path \"/foo\""
        );
    }

    #[test]
    fn keys_name_their_kind() {
        assert_eq!(
            kind_of_key("/rbac.authorization.k8s.io/rolebindings/a/b"),
            Some(Kind::RoleBinding)
        );
        assert_eq!(
            kind_of_key("/rbac.authorization.k8s.io/clusterroles//x"),
            Some(Kind::ClusterRole)
        );
        assert_eq!(kind_of_key("/core/pods/a/b"), None);
    }

    proptest::proptest! {
        #[test]
        fn attributes_never_panic(p in "(/[a-z0-9%.+-]{0,8}){0,9}", q in ".{0,40}") {
            let _ = request_attributes(&Method::GET, &p, Some(&q));
            let _ = request_attributes(&Method::DELETE, &p, None);
        }
    }
}
